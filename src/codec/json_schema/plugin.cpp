// `codec = "json_schema"` as a plugin: the ids from `[sink.codec_options.schema_registry]`, or
// fixed `schema_id` and `key_schema_id`.

#include "cppcdc/plugin.hpp"

#include <limits>
#include <mutex>

#include "cppcdc/json_schema.hpp"
#include "cppcdc/registry_codec.hpp"

namespace cppcdc {
namespace {

constexpr const char* kFraming =
    "Confluent (magic byte 0, 4-byte schema id) around the JSON envelope";

class ConfiguredJsonSchemaCodec final : public RegistryBackedCodec {
 public:
  ConfiguredJsonSchemaCodec(std::optional<SchemaRegistryConfig> registry,
                            std::optional<std::int32_t> schema_id,
                            std::optional<std::int32_t> key_schema_id)
      : RegistryBackedCodec(std::move(registry)),
        schema_id_(schema_id),
        key_schema_id_(key_schema_id) {}

  std::string name() const override { return "json_schema"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config()) {
      return {{"framing", kFraming},
              {"schema ids", "fixed: " + std::to_string(*schema_id_) + " (value), " +
                                 std::to_string(*key_schema_id_) + " (key); no schema registry"}};
    }
    auto lines = describe_schema_registry(*registry_config());
    lines.insert(lines.begin(), {"framing", kFraming});
    return lines;
  }

  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_json_schema_encoder(std::move(*options));
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_json_schema_decoder(std::move(*options));
  }

  RegistryCodecSchemas registry_schemas() const override {
    return {"JSON Schema",
            "JSON Schemas",
            SchemaType::kJson,
            std::string(kJsonSchemaEventTitle),
            std::string(json_schema_event_schema()),
            std::string(kJsonSchemaKeyTitle),
            std::string(json_schema_key_schema())};
  }

 private:
  // The codec's one registry client (RegistryBackedCodec), shared by its encoders and
  // decoders; the fixed ids without a registry.
  Result<JsonSchemaCodecOptions> options_() const {
    JsonSchemaCodecOptions options;
    if (!registry_config()) {
      options.schema_id = schema_id_;
      options.key_schema_id = key_schema_id_;
      return options;
    }
    auto client = registry_client();
    if (!client) return fail(std::move(client).error());
    options.registry = std::move(*client);
    options.registry_config = *registry_config();
    return options;
  }

  std::optional<std::int32_t> schema_id_;
  std::optional<std::int32_t> key_schema_id_;
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& s) {
  auto registry = read_schema_registry_settings(s);
  if (!registry) return fail(std::move(registry).error());
  std::optional<std::int32_t> ids[2];
  const char* const keys[2] = {"schema_id", "key_schema_id"};
  for (int i = 0; i < 2; ++i) {
    auto v = s.get_int(keys[i], 0, std::numeric_limits<std::int32_t>::max());
    if (!v) return fail(v.error());
    if (*v) ids[i] = static_cast<std::int32_t>(**v);
  }
  if (*registry && (ids[0] || ids[1])) {
    return fail(s.error(ids[0] ? keys[0] : keys[1],
                        "fixed schema ids and a [schema_registry] table exclude each other: the "
                        "ids come from the registry, or are given here without one"));
  }
  if (!*registry) {
    if (!ids[0] && !ids[1]) {
      return fail(s.missing(
          "schema_registry",
          "(the JSON Schema codec frames each record with a schema id: give the registry's url "
          "in a [schema_registry] table, or fixed schema_id and key_schema_id)"));
    }
    for (int i = 0; i < 2; ++i) {
      if (!ids[i]) {
        return fail(s.missing(keys[i], std::string("(fixed ids come in pairs: ") + keys[1 - i] +
                                           " is set, so this one is needed too)"));
      }
    }
  }
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredJsonSchemaCodec>(std::move(*registry), ids[0], ids[1]));
}

}  // namespace

void register_json_schema_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("json_schema", configure); });
}

}  // namespace cppcdc
