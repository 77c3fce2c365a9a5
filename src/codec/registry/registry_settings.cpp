// The `schema_registry` table of a codec's codec_options, shared by the codecs that frame their
// records with a registry's schema ids (avro, json_schema).

#include <cstdlib>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/settings_read.hpp"
#include "core/stop_request.hpp"
#include "cppcdc/http_client.hpp"
#include "cppcdc/plugin.hpp"
#include "cppcdc/schema_registry.hpp"

namespace cppcdc {

namespace {

// The user name in the user part of `url` (scheme://user:password@host/...), if it has one.
std::optional<std::string> url_user(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::nullopt;
  const std::string_view rest = url.substr(scheme + 3);
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view user = authority.substr(0, at);
  return std::string(user.substr(0, user.find(':')));
}

}  // namespace

Result<std::optional<SchemaRegistryConfig>> read_schema_registry_settings(
    const Settings& codec_options) {
  auto section = codec_options.get_section("schema_registry");
  if (!section) return fail(section.error());
  const Settings& r = **section;
  if (!r.present()) return std::optional<SchemaRegistryConfig>();
  SchemaRegistryConfig c;
  // A registry that does not answer must not hold up a stop (SIGTERM) for minutes.
  c.stop = &detail::g_process_stop_requested;
  std::string type = "confluent";
  CPPCDC_TRY(detail::assign_string(r, "type", type));
  auto parsed_type = parse_schema_registry_type(type);
  if (!parsed_type) return fail(r.error("type", parsed_type.error().message()));
  c.type = *parsed_type;
  auto url = r.get_string("url");
  if (!url) return fail(url.error());
  if (!*url) {
    return fail(r.missing("url", c.type == SchemaRegistryType::kApicurio
                                     ? "(the Apicurio server's root, http://host:8080)"
                                     : "(the registry's API root that serves /subjects)"));
  }
  c.url = **url;
  auto group = r.get_string("group");
  if (!group) return fail(group.error());
  if (*group && c.type != SchemaRegistryType::kApicurio) {
    return fail(r.error("group",
                        "is the artifact group of type = \"apicurio\"; the Confluent "
                        "API has no groups: remove it, or set type = \"apicurio\""));
  }
  if (*group) c.group = **group;
  for (auto [key, target] :
       {std::pair<const char*, std::optional<std::string>*>{"username", &c.username},
        {"password", &c.password},
        {"bearer_token", &c.bearer_token}}) {
    auto v = r.get_string(key);
    if (!v) return fail(v.error());
    *target = std::move(*v);
  }
  // The secrets may come from the environment instead of the file (as the source's
  // password_env): the key names the variable.
  for (auto [key, file_key, target] :
       {std::tuple<const char*, const char*, std::optional<std::string>*>{"password_env",
                                                                          "password", &c.password},
        {"bearer_token_env", "bearer_token", &c.bearer_token}}) {
    auto env = r.get_string(key);
    if (!env) return fail(env.error());
    if (!*env) continue;
    if (target->has_value()) {
      return fail(
          r.error(key, std::string("set either ") + file_key + " or " + key + ", not both"));
    }
    const char* value = (*env)->empty() ? nullptr : std::getenv((*env)->c_str());
    if (value == nullptr || *value == '\0') {
      return fail(r.error(key, "the environment variable " + detail::in_quotes(**env) +
                                   " is not set (or is empty)"));
    }
    *target = std::string(value);
    (key == std::string_view("password_env") ? c.password_env : c.bearer_token_env) = **env;
  }
  if ((c.username || c.bearer_token) && url_user(c.url)) {
    // Which would win is libcurl's business; the configuration must not leave it open.
    return fail(r.error("url", "carries a user part (user@host), which is sent as basic "
                               "authentication, and " +
                                   std::string(c.username ? "username" : "bearer_token") +
                                   " sets the authentication too: keep one of them (remove "
                                   "the user part from url, or the key)"));
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
  return std::optional<SchemaRegistryConfig>(std::move(c));
}

std::vector<std::pair<std::string, std::string>> describe_schema_registry(
    const SchemaRegistryConfig& c) {
  std::string where = http::redact_url(c.url);
  if (c.type == SchemaRegistryType::kApicurio) {
    where += " (Apicurio Registry 3 native API, group \"" + c.group + "\")";
  }
  std::string auth = "none";
  if (c.username) {
    auth = "basic, user " + detail::in_quotes(*c.username) + ", password " +
           (c.password_env.empty()
                ? std::string("(redacted)")
                : "from the environment variable " + detail::in_quotes(c.password_env));
  } else if (c.bearer_token) {
    auth = "bearer token " +
           (c.bearer_token_env.empty()
                ? std::string("(redacted)")
                : "from the environment variable " + detail::in_quotes(c.bearer_token_env));
  } else if (auto user = url_user(c.url)) {
    // libcurl sends a user part of the url as basic authentication.
    auth = "basic, from the url's user part (user " + detail::in_quotes(*user) +
           ", password redacted)";
  }
  return {{"schema registry", where},
          {"registry authentication", auth},
          {"subjects", std::string(to_string(c.subject_name_strategy)) +
                           (c.auto_register ? ", registered when missing (auto_register)"
                                            : ", looked up only (auto_register = false)")}};
}

}  // namespace cppcdc
