// `codec = "avro"` with `[sink.codec_options.schema_registry] type = "glue"`: the avro codec's
// datums in AWS Glue's framing, schemas registered in a Glue registry. Plugged into the avro
// codec with register_avro_registry_framing (cppcdc/avro.hpp).

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/settings_read.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/glue.hpp"

namespace cppcdc {
namespace {

struct GlueCodecSettings {
  AwsGlueRegistryConfig registry;
  GlueAvroConfig codec;
};

// A validate() message "Glue <field>: <what>" as an error about that key of the table.
Error keyed(const Settings& table, const Error& e, std::string_view fallback_key) {
  const std::string& m = e.message();
  const std::string prefix = "Glue ";
  const auto colon = m.find(": ");
  if (m.rfind(prefix, 0) == 0 && colon != std::string::npos) {
    return table.error(m.substr(prefix.size(), colon - prefix.size()), m.substr(colon + 2));
  }
  return table.error(fallback_key, m);
}

Result<GlueCodecSettings> read_settings(const Settings& r) {
  // Keys of the Confluent-style registry that mean nothing here: refused with the reason,
  // before the generic "unknown key".
  static constexpr std::pair<const char*, const char*> kNotForGlue[] = {
      {"url", "Glue is addressed by region (and endpoint for a VPC endpoint or a test double)"},
      {"subject_name_strategy",
       "Glue names schemas by schema_name (and key_schema_name), not by subject"},
      {"username", "Glue requests are signed with the AWS_* credentials of the environment"},
      {"password", "Glue requests are signed with the AWS_* credentials of the environment"},
      {"bearer_token", "Glue requests are signed with the AWS_* credentials of the environment"},
      {"normalize_schemas", "Glue has no such option"},
  };
  for (const auto& [key, why] : kNotForGlue) {
    if (r.has(key)) {
      return fail(r.error(key, std::string("not a setting of type = \"glue\": ") + why));
    }
  }
  auto auto_register = r.get_bool("auto_register");
  if (!auto_register) return fail(auto_register.error());
  if (*auto_register && !**auto_register) {
    return fail(r.error(
        "auto_register",
        "type = \"glue\" always registers (Glue keeps the existing version of identical content, "
        "so a registered schema is not written twice); there is no lookup-only mode to switch "
        "to, and accepting false while registering anyway would be worse: remove the key, or "
        "give the producer a principal allowed glue:RegisterSchemaVersion and "
        "glue:CreateSchema"));
  }

  GlueCodecSettings s;
  auto registry_name = r.get_string("registry_name");
  if (!registry_name) return fail(registry_name.error());
  if (!*registry_name) return fail(r.missing("registry_name", "(the Glue registry's name)"));
  s.registry.registry_name = **registry_name;
  auto region = r.get_string("region");
  if (!region) return fail(region.error());
  if (!*region) return fail(r.missing("region", "(the AWS region, e.g. \"eu-west-1\")"));
  s.registry.region = **region;
  auto schema_name = r.get_string("schema_name");
  if (!schema_name) return fail(schema_name.error());
  if (!*schema_name) {
    return fail(r.missing("schema_name",
                          "(the Glue schema the envelope schema is registered as; "
                          "keys go to \"<schema_name>-key\")"));
  }
  s.codec.schema_name = **schema_name;
  auto key_schema_name = r.get_string("key_schema_name");
  if (!key_schema_name) return fail(key_schema_name.error());
  s.codec.key_schema_name = *key_schema_name;
  std::string compression = "none";
  CPPCDC_TRY(detail::assign_string(r, "compression", compression));
  auto parsed = parse_glue_compression(compression);
  if (!parsed) return fail(r.error("compression", parsed.error().message()));
  s.codec.compression = *parsed;
  CPPCDC_TRY(detail::assign_string(r, "endpoint", s.registry.endpoint));
  auto ca_file = r.get_path("ca_file");
  if (!ca_file) return fail(ca_file.error());
  if (*ca_file) s.registry.ca_file = (*ca_file)->string();
  CPPCDC_TRY(detail::assign_bool(r, "verify_tls", s.registry.verify_tls));
  CPPCDC_TRY(
      detail::assign_int(r, "connect_timeout_ms", 1, 3'600'000, s.registry.connect_timeout_ms));
  CPPCDC_TRY(
      detail::assign_int(r, "request_timeout_ms", 1, 3'600'000, s.registry.request_timeout_ms));
  CPPCDC_TRY(detail::assign_int(r, "max_retries", 0, 100, s.registry.max_retries));
  if (auto st = validate(s.registry); !st) return fail(keyed(r, st.error(), "registry_name"));
  if (auto st = validate(s.codec); !st) return fail(keyed(r, st.error(), "schema_name"));
  return s;
}

class ConfiguredGlueAvroCodec final : public ConfiguredCodec {
 public:
  explicit ConfiguredGlueAvroCodec(GlueCodecSettings settings) : settings_(std::move(settings)) {}

  std::string name() const override { return "avro"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    const auto& c = settings_.codec;
    const auto& r = settings_.registry;
    return {
        {"framing", "AWS Glue (header version 3, compression " +
                        std::string(to_string(c.compression)) + ", 16-byte schema version UUID)"},
        {"schema registry", "AWS Glue registry \"" + r.registry_name + "\" (" + r.region +
                                (r.endpoint.empty() ? "" : ", endpoint " + r.endpoint) + ")"},
        {"schemas", "\"" + c.schema_name + "\" (value), \"" + c.effective_key_schema_name() +
                        "\" (key), registered when missing (Glue has no lookup-only mode)"},
    };
  }

  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    auto registry = registry_();
    if (!registry) return fail(std::move(registry).error());
    auto encoder = GlueAvroEncoder::create(*registry, settings_.codec);
    if (!encoder) return fail(std::move(encoder).error());
    return std::unique_ptr<Encoder>(std::move(*encoder));
  }

  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    auto registry = registry_();
    if (!registry) return fail(std::move(registry).error());
    return std::unique_ptr<Decoder>(std::make_unique<GlueAvroDecoder>(*registry));
  }

  // Read-only: registering is a write, so the preflight checks what it can without one (the
  // credentials and the client) and says when the schemas are checked.
  std::vector<PreflightCheck> preflight(const std::vector<std::string>&) const override {
    using Outcome = PreflightCheck::Outcome;
    auto registry = registry_();
    if (!registry) return {preflight_failure("the AWS Glue registry", registry.error())};
    return {{Outcome::kWarn,
             (*registry)->describe() + ": not contacted by preflight (registering the schemas "
                                       "is a write)",
             "the schemas are registered (or found) when the first record is written"}};
  }

 private:
  // One client per configured codec, made on first use (credentials are read then), shared by
  // its encoders and decoders behind the cache.
  Result<std::shared_ptr<GlueSchemaRegistry>> registry_() const {
    std::lock_guard lock(mutex_);
    if (!registry_cache_) {
      auto client = make_aws_glue_schema_registry(settings_.registry);
      if (!client) return fail(std::move(client).error());
      registry_cache_ = std::make_shared<CachedGlueSchemaRegistry>(std::move(*client));
    }
    return registry_cache_;
  }

  GlueCodecSettings settings_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<GlueSchemaRegistry> registry_cache_;
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& codec_options) {
  auto section = codec_options.get_section("schema_registry");
  if (!section) return fail(section.error());
  auto settings = read_settings(**section);
  if (!settings) return fail(std::move(settings).error());
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredGlueAvroCodec>(std::move(*settings)));
}

}  // namespace

void register_glue_avro_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_avro_codec_plugin();
    (void)register_avro_registry_framing("glue", configure);
  });
}

}  // namespace cppcdc
