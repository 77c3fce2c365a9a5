// `codec = "avro"` as a plugin: bare Avro, or the Confluent framing when
// `[sink.codec_options.schema_registry]` is set.

#include "cppcdc/plugin.hpp"

#include <map>
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

// Other registries' framings (register_avro_registry_framing), by schema_registry.type.
std::mutex framings_mutex;
std::map<std::string, CodecFactory, std::less<>> framings;

Result<std::optional<CodecFactory>> framing_of(const Settings& options) {
  auto section = options.get_section("schema_registry");
  if (!section) return fail(section.error());
  auto type = (*section)->get_string("type");
  if (!type) return fail(type.error());
  if (!*type) return std::optional<CodecFactory>();
  std::lock_guard lock(framings_mutex);
  if (auto it = framings.find(**type); it != framings.end()) return {it->second};
  // The Confluent framing's own types, which read_schema_registry_settings takes.
  if (**type == "confluent" || **type == "apicurio") return std::optional<CodecFactory>();
  std::string known = "\"confluent\", \"apicurio\"";
  for (const auto& [name, factory] : framings) known += " or \"" + name + "\"";
  return fail((*section)->error("type", "expected " + known + ", found \"" + **type + "\""));
}

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& options) {
  auto framing = framing_of(options);
  if (!framing) return fail(std::move(framing).error());
  if (*framing) return (**framing)(options);
  auto registry = read_schema_registry_settings(options);
  if (!registry) return fail(std::move(registry).error());
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredAvroCodec>(std::move(*registry)));
}

}  // namespace

Status register_avro_registry_framing(std::string type, CodecFactory factory) {
  std::lock_guard lock(framings_mutex);
  if (!factory || type.empty() || type == "confluent" || type == "apicurio" ||
      framings.count(type) != 0) {
    return fail(Error::configuration("schema registry type \"" + type +
                                     "\" cannot be registered with the avro codec (empty, "
                                     "built in, or registered already)"));
  }
  framings.emplace(std::move(type), std::move(factory));
  return ok();
}

void register_avro_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("avro", configure); });
}

}  // namespace cppcdc
