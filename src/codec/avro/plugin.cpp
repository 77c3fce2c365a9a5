// `codec = "avro"` as a plugin: bare Avro, or the Confluent framing when
// `[sink.codec_options.schema_registry]` is set.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/settings_read.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/http_client.hpp"

namespace cppcdc {
namespace {

using detail::in_quotes;

class ConfiguredAvroCodec final : public ConfiguredCodec {
 public:
  explicit ConfiguredAvroCodec(std::optional<SchemaRegistryConfig> registry)
      : registry_config_(std::move(registry)) {}

  std::string name() const override { return "avro"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config_) return {{"framing", "bare Avro (no schema registry)"}};
    const auto& c = *registry_config_;
    return {{"framing", "Confluent (magic byte 0, 4-byte schema id)"},
            {"schema registry", http::redact_url(c.url)},
            {"subjects", std::string(to_string(c.subject_name_strategy)) +
                             (c.auto_register ? ", registered when missing (auto_register)"
                                              : ", looked up only (auto_register = false)")}};
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

  std::vector<PreflightCheck> preflight(const std::vector<std::string>& topics) const override {
    using Outcome = PreflightCheck::Outcome;
    if (!registry_config_) return {};
    auto options = options_();
    if (!options) return {preflight_failure("the schema registry", options.error())};
    std::vector<SubjectSchema> subjects;
    const auto strategy = registry_config_->subject_name_strategy;
    std::vector<std::string> names = topics;
    if (strategy == SubjectNameStrategy::kRecordName) names = {""};
    if (names.empty()) {
      return {{Outcome::kWarn,
               "the Avro codec's registry subjects depend on the topic, which the template "
               "leaves open here",
               "the subjects are checked when the first record of each topic is written"}};
    }
    for (const auto& topic : names) {
      subjects.push_back({subject_name(strategy, topic, kAvroEventRecordName, false),
                          SchemaType::kAvro, std::string(avro_event_schema())});
      subjects.push_back({subject_name(strategy, topic, kAvroKeyRecordName, true),
                          SchemaType::kAvro, std::string(avro_key_schema())});
    }
    const std::string what = options->registry->describe();
    if (auto st = preflight_schema_registry(*options->registry, *registry_config_, subjects); !st) {
      return {preflight_failure(what, st.error())};
    }
    return {{Outcome::kPass,
             what + " holds or accepts the Avro schemas of " + std::to_string(subjects.size()) +
                 " subjects",
             ""}};
  }

 private:
  // One client per configured codec, made on first use (it connects lazily anyway) and shared
  // by its encoders and decoders.
  Result<AvroCodecOptions> options_() const {
    AvroCodecOptions options;
    if (!registry_config_) return options;
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
  mutable std::mutex mutex_;
  mutable std::shared_ptr<SchemaRegistryClient> client_;
};

Result<std::optional<std::string>> optional_string(const Settings& s, std::string_view key) {
  return s.get_string(key);
}

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& options) {
  auto section = options.get_section("schema_registry");
  if (!section) return fail(section.error());
  const Settings& r = **section;
  if (!r.present()) {
    return std::unique_ptr<ConfiguredCodec>(std::make_unique<ConfiguredAvroCodec>(std::nullopt));
  }
  SchemaRegistryConfig c;
  auto url = r.get_string("url");
  if (!url) return fail(url.error());
  if (!*url) return fail(r.missing("url", "(the registry's API root that serves /subjects)"));
  c.url = **url;
  for (auto [key, target] :
       {std::pair<const char*, std::optional<std::string>*>{"username", &c.username},
        {"password", &c.password},
        {"bearer_token", &c.bearer_token}}) {
    auto v = optional_string(r, key);
    if (!v) return fail(v.error());
    *target = std::move(*v);
  }
  CPPCDC_TRY(detail::assign_string(r, "ca_file", c.ca_file));
  CPPCDC_TRY(detail::assign_string(r, "cert_file", c.cert_file));
  CPPCDC_TRY(detail::assign_string(r, "key_file", c.key_file));
  CPPCDC_TRY(detail::assign_bool(r, "verify_tls", c.verify_tls));
  CPPCDC_TRY(detail::assign_bool(r, "auto_register", c.auto_register));
  CPPCDC_TRY(detail::assign_bool(r, "normalize_schemas", c.normalize_schemas));
  CPPCDC_TRY(detail::assign_int(r, "connect_timeout_ms", 1, 3'600'000, c.connect_timeout_ms));
  CPPCDC_TRY(detail::assign_int(r, "request_timeout_ms", 1, 3'600'000, c.request_timeout_ms));
  CPPCDC_TRY(detail::assign_int(r, "max_cache_entries", 1, 10'000'000, c.max_cache_entries));
  std::string strategy = "topic_name";
  CPPCDC_TRY(detail::assign_string(r, "subject_name_strategy", strategy));
  auto parsed = parse_subject_name_strategy(strategy);
  if (!parsed) return fail(r.error("subject_name_strategy", parsed.error().message()));
  c.subject_name_strategy = *parsed;
  if (auto st = validate(c); !st) {
    // validate() says "schema registry <setting>: <what>"; name the key where it is written.
    const std::string& m = st.error().message();
    const std::string prefix = "schema registry ";
    const auto colon = m.find(": ");
    if (m.rfind(prefix, 0) == 0 && colon != std::string::npos) {
      return fail(r.error(m.substr(prefix.size(), colon - prefix.size()), m.substr(colon + 2)));
    }
    return fail(r.error("url", m));
  }
  return std::unique_ptr<ConfiguredCodec>(std::make_unique<ConfiguredAvroCodec>(std::move(c)));
}

}  // namespace

void register_avro_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("avro", configure); });
}

}  // namespace cppcdc
