// `codec = "protobuf"` as a plugin: bare messages, or Confluent's Protobuf framing when
// `[sink.codec_options.schema_registry]` is set.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/protobuf.hpp"
#include "cppcdc/registry_codec.hpp"

namespace cppcdc {
namespace {

class ConfiguredProtobufCodec final : public RegistryBackedCodec {
 public:
  explicit ConfiguredProtobufCodec(std::optional<SchemaRegistryConfig> registry)
      : RegistryBackedCodec(std::move(registry)) {}

  std::string name() const override { return "protobuf"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config()) {
      return {{"framing", "bare Protobuf messages " + std::string(protobuf_event_message_name()) +
                              " (no schema registry)"}};
    }
    auto lines = describe_schema_registry(*registry_config());
    lines.insert(lines.begin(),
                 {"framing", "Confluent (magic byte 0, 4-byte schema id, message indexes)"});
    return lines;
  }

  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_protobuf_encoder(std::move(*options));
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_protobuf_decoder(std::move(*options));
  }

  RegistryCodecSchemas registry_schemas() const override {
    return {"Protobuf",
            "Protobuf schemas",
            SchemaType::kProtobuf,
            std::string(protobuf_event_message_name()),
            std::string(protobuf_event_schema()),
            std::string(protobuf_key_message_name()),
            std::string(protobuf_key_schema())};
  }

 private:
  // The codec's one registry client (RegistryBackedCodec), shared by its encoders and decoders.
  Result<ProtobufCodecOptions> options_() const {
    ProtobufCodecOptions options;
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
      std::make_unique<ConfiguredProtobufCodec>(std::move(*registry)));
}

}  // namespace

void register_protobuf_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("protobuf", configure); });
}

}  // namespace cppcdc
