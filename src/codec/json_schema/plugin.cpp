// `codec = "json_schema"` as a plugin: the ids from `[sink.codec_options.schema_registry]`, or
// fixed `schema_id` and `key_schema_id`.

#include "cppcdc/plugin.hpp"

#include <limits>
#include <mutex>

#include "cppcdc/json_schema.hpp"

namespace cppcdc {
namespace {

constexpr const char* kFraming =
    "Confluent (magic byte 0, 4-byte schema id) around the JSON envelope";

class ConfiguredJsonSchemaCodec final : public ConfiguredCodec {
 public:
  ConfiguredJsonSchemaCodec(std::optional<SchemaRegistryConfig> registry,
                            std::optional<std::int32_t> schema_id,
                            std::optional<std::int32_t> key_schema_id)
      : registry_config_(std::move(registry)),
        schema_id_(schema_id),
        key_schema_id_(key_schema_id) {}

  std::string name() const override { return "json_schema"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config_) {
      return {{"framing", kFraming},
              {"schema ids", "fixed: " + std::to_string(*schema_id_) + " (value), " +
                                 std::to_string(*key_schema_id_) + " (key); no schema registry"}};
    }
    auto lines = describe_schema_registry(*registry_config_);
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

  std::vector<PreflightCheck> preflight(const std::vector<std::string>& topics) const override {
    using Outcome = PreflightCheck::Outcome;
    if (!registry_config_) return {};
    auto options = options_();
    if (!options) return {preflight_failure("the schema registry", options.error())};
    const auto strategy = registry_config_->subject_name_strategy;
    std::vector<std::string> names = topics;
    if (strategy == SubjectNameStrategy::kRecordName) names = {""};
    if (names.empty()) {
      return {{Outcome::kWarn,
               "the JSON Schema codec's registry subjects depend on the topic, which the "
               "template leaves open here",
               "the subjects are checked when the first record of each topic is written"}};
    }
    std::vector<SubjectSchema> subjects;
    for (const auto& topic : names) {
      subjects.push_back({subject_name(strategy, topic, kJsonSchemaEventTitle, false),
                          SchemaType::kJson, std::string(json_schema_event_schema())});
      subjects.push_back({subject_name(strategy, topic, kJsonSchemaKeyTitle, true),
                          SchemaType::kJson, std::string(json_schema_key_schema())});
    }
    const std::string what = options->registry->describe();
    if (auto st = preflight_schema_registry(*options->registry, *registry_config_, subjects); !st) {
      return {preflight_failure(what, st.error())};
    }
    return {{Outcome::kPass,
             what + " holds or accepts the JSON Schemas of " + std::to_string(subjects.size()) +
                 " subjects",
             ""}};
  }

 private:
  // One registry client per configured codec, made on first use and shared by its encoders
  // and decoders.
  Result<JsonSchemaCodecOptions> options_() const {
    JsonSchemaCodecOptions options;
    if (!registry_config_) {
      options.schema_id = schema_id_;
      options.key_schema_id = key_schema_id_;
      return options;
    }
    std::lock_guard lock(mutex_);
    if (!client_) {
      auto client = make_schema_registry_client(*registry_config_);
      if (!client) return fail(std::move(client).error());
      client_ = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
    }
    options.registry = client_;
    options.registry_config = *registry_config_;
    return options;
  }

  std::optional<SchemaRegistryConfig> registry_config_;
  std::optional<std::int32_t> schema_id_;
  std::optional<std::int32_t> key_schema_id_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<SchemaRegistryClient> client_;
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
