// `codec = "avro"` as a plugin: bare Avro, or the Confluent framing when
// `[sink.codec_options.schema_registry]` is set.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/avro.hpp"
#include "cppcdc/registry_codec.hpp"

namespace cppcdc {
namespace {

class ConfiguredAvroCodec final : public RegistryBackedCodec {
 public:
  explicit ConfiguredAvroCodec(std::optional<SchemaRegistryConfig> registry)
      : RegistryBackedCodec(std::move(registry)) {}

  std::string name() const override { return "avro"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config()) return {{"framing", "bare Avro (no schema registry)"}};
    auto lines = describe_schema_registry(*registry_config());
    lines.insert(lines.begin(), {"framing", "Confluent (magic byte 0, 4-byte schema id)"});
    return lines;
  }

  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_avro_encoder(std::move(*options));
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_avro_decoder(std::move(*options));
  }

  RegistryCodecSchemas registry_schemas() const override {
    return {"Avro",
            "Avro schemas",
            SchemaType::kAvro,
            std::string(kAvroEventRecordName),
            std::string(avro_event_schema()),
            std::string(kAvroKeyRecordName),
            std::string(avro_key_schema())};
  }

 private:
  // The codec's one registry client (RegistryBackedCodec), shared by its encoders and decoders.
  Result<AvroCodecOptions> options_() const {
    AvroCodecOptions options;
    if (!registry_config()) return options;
    auto client = registry_client();
    if (!client) return fail(std::move(client).error());
    options.registry = std::move(*client);
    options.registry_config = *registry_config();
    return options;
  }
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& options) {
  auto registry = read_schema_registry_settings(options);
  if (!registry) return fail(std::move(registry).error());
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredAvroCodec>(std::move(*registry)));
}

}  // namespace

void register_avro_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("avro", configure); });
}

}  // namespace cppcdc
