#include "cppcdc/schema_registry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "cppcdc/http_client.hpp"
#include "registry_http.hpp"

namespace cppcdc {

std::string_view to_string(SchemaType type) noexcept {
  switch (type) {
    case SchemaType::kAvro:
      return "AVRO";
    case SchemaType::kJson:
      return "JSON";
    case SchemaType::kProtobuf:
      return "PROTOBUF";
  }
  return "?";
}

std::string_view to_string(SubjectNameStrategy strategy) noexcept {
  switch (strategy) {
    case SubjectNameStrategy::kTopicName:
      return "topic_name";
    case SubjectNameStrategy::kRecordName:
      return "record_name";
    case SubjectNameStrategy::kTopicRecordName:
      return "topic_record_name";
  }
  return "?";
}

Result<SubjectNameStrategy> parse_subject_name_strategy(std::string_view text) {
  for (auto s : {SubjectNameStrategy::kTopicName, SubjectNameStrategy::kRecordName,
                 SubjectNameStrategy::kTopicRecordName}) {
    if (text == to_string(s)) return s;
  }
  return fail(Error::configuration("unknown subject name strategy \"" + std::string(text) +
                                   "\": use \"topic_name\", \"record_name\" or "
                                   "\"topic_record_name\""));
}

std::string subject_name(SubjectNameStrategy strategy, std::string_view topic,
                         std::string_view record_name, bool is_key) {
  switch (strategy) {
    case SubjectNameStrategy::kTopicName:
      return std::string(topic) + (is_key ? "-key" : "-value");
    case SubjectNameStrategy::kRecordName:
      return std::string(record_name);
    case SubjectNameStrategy::kTopicRecordName:
      return std::string(topic) + "-" + std::string(record_name);
  }
  return std::string(topic);
}

std::string_view to_string(SchemaRegistryType type) noexcept {
  switch (type) {
    case SchemaRegistryType::kConfluent:
      return "confluent";
    case SchemaRegistryType::kApicurio:
      return "apicurio";
  }
  return "?";
}

Result<SchemaRegistryType> parse_schema_registry_type(std::string_view text) {
  for (auto t : {SchemaRegistryType::kConfluent, SchemaRegistryType::kApicurio}) {
    if (text == to_string(t)) return t;
  }
  return fail(Error::configuration("unknown schema registry type \"" + std::string(text) +
                                   "\": use \"confluent\" (the Confluent REST API, also "
                                   "Apicurio's /apis/ccompat/v7) or \"apicurio\" (Apicurio "
                                   "Registry 3's native API)"));
}

namespace {

// The url's path without a trailing slash ("" for a bare host).
std::string url_path(const std::string& url) {
  const auto scheme_end = url.find("://");
  const auto slash = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (slash == std::string::npos) return "";
  std::string path = url.substr(slash, url.find_first_of("?#", slash) - slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

Status validate(const SchemaRegistryConfig& config) {
  const auto bad = [](const std::string& setting, const std::string& what) {
    return fail(Error::configuration("schema registry " + setting + ": " + what));
  };
  const bool apicurio = config.type == SchemaRegistryType::kApicurio;
  if (config.url.substr(0, config.url.find_first_of("?#")).find(',') != std::string::npos) {
    // Confluent's own clients take a comma-separated list and fail over; this client talks
    // to one address, and would otherwise send requests to a URL with a comma in its port.
    return bad("url", "\"" + http::redact_url(config.url) +
                          "\" is a list of registry addresses; cppcdc talks to one: give one "
                          "url (for several registry instances, the address of a load "
                          "balancer in front of them)");
  }
  if (config.url.rfind("http://", 0) != 0 && config.url.rfind("https://", 0) != 0) {
    return bad("url", "\"" + http::redact_url(config.url) + "\" is not an http:// or https:// " +
                          (apicurio ? "address of the Apicurio server's root"
                                    : "address of the registry's API root (the one that serves "
                                      "/subjects)"));
  }
  const std::string path = url_path(config.url);
  const auto ends_with = [&](std::string_view tail) {
    return path.size() >= tail.size() &&
           path.compare(path.size() - tail.size(), tail.size(), tail.data(), tail.size()) == 0;
  };
  const bool native_path = path.find("/apis/registry/") != std::string::npos;
  if (apicurio && (native_path || path.find("/apis/ccompat") != std::string::npos)) {
    return bad("url", "\"" + http::redact_url(config.url) + "\" names an API path, but with type " +
                          "= \"apicurio\" url is the Apicurio server's root (the client " +
                          "appends /apis/registry/v3 itself): " +
                          (native_path ? "drop the /apis/registry/... part"
                                       : "drop the /apis/ccompat/... part, or keep it and set "
                                         "type = \"confluent\" to use Apicurio's "
                                         "Confluent-compatible API"));
  }
  if (!apicurio && (ends_with("/apis/registry/v3") || ends_with("/apis/registry/v2"))) {
    return bad("url", "\"" + http::redact_url(config.url) +
                          "\" is Apicurio's native API, which the Confluent client does not " +
                          "speak: set type = \"apicurio\" with the server's root as url, or " +
                          "use Apicurio's Confluent-compatible API (.../apis/ccompat/v7)");
  }
  if (apicurio && config.group.empty()) return bad("group", "must not be empty");
  if (apicurio && config.normalize_schemas) {
    return bad("normalize_schemas",
               "is a parameter of the Confluent API; Apicurio's native API has none (its client "
               "always compares schemas in Apicurio's canonical form): remove it, or use type = "
               "\"confluent\"");
  }
  if (config.username.has_value() != config.password.has_value()) {
    return bad(config.username ? "password" : "username",
               "basic authentication needs both username and password");
  }
  if (config.username && config.bearer_token) {
    return bad("bearer_token", "give either basic authentication or a bearer token, not both");
  }
  if (config.cert_file.empty() != config.key_file.empty()) {
    return bad(config.cert_file.empty() ? "cert_file" : "key_file",
               "a client certificate needs both cert_file and key_file");
  }
  if (config.max_cache_entries == 0) return bad("max_cache_entries", "must be at least 1");
  if (config.connect_timeout_ms == 0 || config.request_timeout_ms == 0) {
    return bad(config.connect_timeout_ms == 0 ? "connect_timeout_ms" : "request_timeout_ms",
               "must be at least 1");
  }
  return ok();
}

std::array<char, kConfluentHeaderSize> confluent_header(std::int32_t schema_id) noexcept {
  const auto id = static_cast<std::uint32_t>(schema_id);
  return {'\0', static_cast<char>((id >> 24) & 0xff), static_cast<char>((id >> 16) & 0xff),
          static_cast<char>((id >> 8) & 0xff), static_cast<char>(id & 0xff)};
}

void append_confluent_header(std::int32_t schema_id, std::string& out) {
  const auto header = confluent_header(schema_id);
  out.append(header.data(), header.size());
}

void append_confluent_header(std::int32_t schema_id, ByteBuffer& out) {
  const auto header = confluent_header(schema_id);
  out.raw(std::string_view(header.data(), header.size()));
}

Result<std::pair<std::int32_t, std::string_view>> split_confluent_frame(std::string_view record) {
  if (record.size() < kConfluentHeaderSize) {
    return fail(Error::invalid_data("a record of " + std::to_string(record.size()) +
                                    " bytes is too short for the Confluent framing (magic byte "
                                    "and 4-byte schema id)"));
  }
  if (record[0] != '\0') {
    return fail(Error::invalid_data(
        "the record does not start with the Confluent magic byte 0 (it starts with " +
        std::to_string(static_cast<unsigned char>(record[0])) +
        "): not written in the Confluent wire format"));
  }
  std::uint32_t id = 0;
  for (std::size_t i = 1; i < kConfluentHeaderSize; ++i) {
    id = (id << 8) | static_cast<unsigned char>(record[i]);
  }
  return std::pair<std::int32_t, std::string_view>(static_cast<std::int32_t>(id),
                                                   record.substr(kConfluentHeaderSize));
}

namespace {

namespace json = boost::json;
using registry_detail::percent_encode;

constexpr const char* kContentType = "application/vnd.schemaregistry.v1+json";
// Confluent's error codes for "not there".
constexpr std::int64_t kSubjectNotFound = 40401;
constexpr std::int64_t kVersionNotFound = 40402;
constexpr std::int64_t kSchemaNotFound = 40403;

Result<SchemaType> parse_schema_type(std::string_view text) {
  for (auto t : {SchemaType::kAvro, SchemaType::kJson, SchemaType::kProtobuf}) {
    if (text == to_string(t)) return t;
  }
  return fail(Error::terminal("the registry answered with an unknown schemaType \"" +
                              std::string(text) + "\""));
}

// The request body of register, lookup and compatibility: {"schema": ..., "schemaType": ...}
// (schemaType left out for Avro, as Confluent's own clients do, for old registries).
std::string schema_body(SchemaType type, const std::string& schema) {
  json::object body;
  body["schema"] = schema;
  if (type != SchemaType::kAvro) body["schemaType"] = to_string(type);
  return json::serialize(body);
}

// What an answer's body says, for messages: Confluent's {"error_code":..., "message":...}
// when present, else the first bytes.
struct ErrorBody {
  std::int64_t code = 0;
  std::string message;
};

ErrorBody error_body(const std::string& body) {
  ErrorBody out;
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    if (const auto* c = o.if_contains("error_code"); c != nullptr && c->is_int64()) {
      out.code = c->as_int64();
    }
    if (const auto* m = o.if_contains("message"); m != nullptr && m->is_string()) {
      out.message = std::string(m->as_string());
    }
  }
  if (out.message.empty()) out.message = body.substr(0, 300);
  return out;
}

class ConfluentClient final : public SchemaRegistryClient {
 public:
  ConfluentClient(SchemaRegistryConfig config, std::unique_ptr<http::Client> client)
      : config_(std::move(config)),
        client_(std::move(client)),
        shown_(http::redact_url(config_.url)),
        rng_(std::random_device{}()) {
    while (!config_.url.empty() && config_.url.back() == '/') config_.url.pop_back();
    headers_.push_back(std::string("Accept: ") + kContentType + ", application/json");
    headers_.push_back(std::string("Content-Type: ") + kContentType);
    if (auto auth = registry_detail::authorization_header(config_)) headers_.push_back(*auth);
  }

  std::string describe() const override { return "schema registry " + shown_; }

  Result<std::int32_t> register_schema(const std::string& subject, SchemaType type,
                                       const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = ids_.find({subject, type, schema}); hit != ids_.end()) return hit->second;
    auto answer = call("registering a schema under subject \"" + subject + "\"",
                       "/subjects/" + percent_encode(subject) + "/versions" + normalize_query(),
                       schema_body(type, schema));
    if (!answer) return fail(std::move(answer).error());
    auto id = read_id(*answer, "registering under subject \"" + subject + "\"");
    if (id) ids_[{subject, type, schema}] = *id;
    return id;
  }

  Result<std::int32_t> lookup_schema(const std::string& subject, SchemaType type,
                                     const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = ids_.find({subject, type, schema}); hit != ids_.end()) return hit->second;
    auto answer =
        call("looking up the schema of subject \"" + subject + "\"",
             "/subjects/" + percent_encode(subject) + normalize_query(), schema_body(type, schema));
    if (!answer) return fail(std::move(answer).error());
    auto id = read_id(*answer, "looking up subject \"" + subject + "\"");
    if (id) ids_[{subject, type, schema}] = *id;
    return id;
  }

  Result<RegisteredSchema> schema_by_id(std::int32_t id) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = by_id_.find(id); hit != by_id_.end()) return hit->second;
    auto answer = call("reading the schema with id " + std::to_string(id),
                       "/schemas/ids/" + std::to_string(id), std::nullopt);
    if (!answer) return fail(std::move(answer).error());
    auto schema = read_schema(*answer, "the schema with id " + std::to_string(id));
    if (!schema) return schema;
    schema->id = id;
    remember(*schema);
    return schema;
  }

  Result<std::vector<std::string>> subjects() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto answer = call("listing the subjects", "/subjects", std::nullopt);
    if (!answer) return fail(std::move(answer).error());
    boost::system::error_code ec;
    const json::value v = json::parse(answer->body_prefix, ec);
    if (ec || !v.is_array()) {
      return fail(Error::terminal(describe() + ": the subject list is not a JSON array: " +
                                  answer->body_prefix.substr(0, 200)));
    }
    std::vector<std::string> out;
    for (const auto& name : v.as_array()) {
      if (name.is_string()) out.emplace_back(name.as_string());
    }
    return out;
  }

  Result<RegisteredSchema> latest_schema(const std::string& subject) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto answer = call("reading the latest version of subject \"" + subject + "\"",
                       "/subjects/" + percent_encode(subject) + "/versions/latest", std::nullopt);
    if (!answer) return fail(std::move(answer).error());
    return read_schema(*answer, "the latest version of subject \"" + subject + "\"");
  }

  Result<std::optional<bool>> is_compatible(const std::string& subject, SchemaType type,
                                            const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto answer = call("checking compatibility with subject \"" + subject + "\"",
                       "/compatibility/subjects/" + percent_encode(subject) + "/versions/latest",
                       schema_body(type, schema), /*absent_is_answer=*/true);
    if (!answer) return fail(std::move(answer).error());
    if (answer->status == 404) {
      const ErrorBody e = error_body(answer->body_prefix);
      // A subject (or version) not there yet: anything may be registered first.
      if (e.code == kSubjectNotFound || e.code == kVersionNotFound)
        return std::optional<bool>(true);
      return std::optional<bool>();  // the registry has no such endpoint
    }
    auto body = parse_object(*answer, "the compatibility answer for subject \"" + subject + "\"");
    if (!body) return fail(std::move(body).error());
    const auto* verdict = body->if_contains("is_compatible");
    if (verdict == nullptr || !verdict->is_bool()) {
      return fail(Error::terminal(describe() + ": the compatibility answer for subject \"" +
                                  subject + "\" has no is_compatible"));
    }
    return std::optional<bool>(verdict->as_bool());
  }

 private:
  using IdKey = std::tuple<std::string, SchemaType, std::string>;

  std::string normalize_query() const { return config_.normalize_schemas ? "?normalize=true" : ""; }

  // One call with the retry policy. `absent_is_answer`: a 404 is returned to the caller
  // instead of becoming an error.
  Result<http::Response> call(const std::string& what, const std::string& path,
                              const std::optional<std::string>& body,
                              bool absent_is_answer = false) {
    auto sent = registry_detail::send_with_retries(
        *client_, config_.url + path, headers_, body, config_.retry, rng_,
        [&](const http::Response& r) { return absent_is_answer && r.status == 404; },
        config_.stop);
    const http::Response& r = sent.response;
    if ((r.status >= 200 && r.status <= 299) || (r.status == 404 && absent_is_answer)) {
      return std::move(sent.response);
    }
    return fail(error_for(what, r, sent.retriable));
  }

  Error error_for(const std::string& what, const http::Response& r, bool retriable) const {
    const std::string where = describe() + ": " + what + " failed: ";
    if (r.status == 0) {
      return *registry_detail::unanswered_error(where, r, false, config_.retry.max_retries, {});
    }
    const ErrorBody e = error_body(r.body_prefix);
    const std::string status = "HTTP " + std::to_string(r.status) +
                               (e.code != 0 ? " (error_code " + std::to_string(e.code) + ")" : "") +
                               ": " + e.message;
    if (auto unanswered = registry_detail::unanswered_error(
            where, r, retriable, config_.retry.max_retries, [&] { return status; })) {
      return *unanswered;
    }
    std::string remedy;
    if (r.status == 401 || r.status == 403) {
      remedy =
          "; check the registry credentials (username and password, or bearer_token) and "
          "the principal's permissions on the subject";
    } else if (r.status == 404) {
      if (e.code == kSubjectNotFound || e.code == kSchemaNotFound || e.code == kVersionNotFound) {
        remedy = config_.auto_register
                     ? "; the registry does not have it"
                     : "; auto_register is false, so cppcdc never registers: register the schema "
                       "under that subject, or set auto_register = true";
      } else {
        remedy =
            "; is url the API root that serves /subjects (for Apicurio: "
            ".../apis/ccompat/v7)?";
      }
    } else if (r.status == 409) {
      remedy =
          "; the schema is incompatible with the subject's compatibility rule: change the "
          "rule or the subject";
    } else if (r.status == 422) {
      remedy = "; the registry refuses the schema as invalid";
    }
    return Error::terminal(where + status + remedy);
  }

  Result<json::object> parse_object(const http::Response& r, const std::string& what) const {
    boost::system::error_code ec;
    json::value v = json::parse(r.body_prefix, ec);
    if (ec || !v.is_object()) {
      return fail(Error::terminal(describe() + ": " + what +
                                  " is not a JSON object: " + r.body_prefix.substr(0, 200)));
    }
    return std::move(v.as_object());
  }

  Result<std::int32_t> read_id(const http::Response& r, const std::string& what) const {
    auto body = parse_object(r, "the answer to " + what);
    if (!body) return fail(std::move(body).error());
    const auto* id = body->if_contains("id");
    if (id == nullptr || !id->is_int64() || id->as_int64() < 0 ||
        id->as_int64() > std::numeric_limits<std::int32_t>::max()) {
      return fail(Error::terminal(describe() + ": the answer to " + what +
                                  " has no schema id: " + r.body_prefix.substr(0, 200)));
    }
    return static_cast<std::int32_t>(id->as_int64());
  }

  Result<RegisteredSchema> read_schema(const http::Response& r, const std::string& what) const {
    auto body = parse_object(r, what);
    if (!body) return fail(std::move(body).error());
    RegisteredSchema out;
    const auto* schema = body->if_contains("schema");
    if (schema == nullptr || !schema->is_string()) {
      return fail(Error::terminal(describe() + ": " + what + " has no schema text"));
    }
    out.schema = std::string(schema->as_string());
    if (const auto* type = body->if_contains("schemaType"); type != nullptr && type->is_string()) {
      auto parsed = parse_schema_type(type->as_string());
      if (!parsed) return fail(std::move(parsed).error());
      out.type = *parsed;
    }
    if (const auto* id = body->if_contains("id"); id != nullptr && id->is_int64()) {
      out.id = static_cast<std::int32_t>(id->as_int64());
    }
    if (const auto* s = body->if_contains("subject"); s != nullptr && s->is_string()) {
      out.subject = std::string(s->as_string());
    }
    if (const auto* v = body->if_contains("version"); v != nullptr && v->is_int64()) {
      out.version = static_cast<std::int32_t>(v->as_int64());
    }
    return out;
  }

  void remember(const RegisteredSchema& schema) {
    if (by_id_.size() >= config_.max_cache_entries && !order_.empty()) {
      by_id_.erase(order_.front());
      order_.pop_front();
    }
    if (by_id_.emplace(schema.id, schema).second) order_.push_back(schema.id);
  }

  SchemaRegistryConfig config_;
  std::unique_ptr<http::Client> client_;
  std::string shown_;
  std::vector<std::string> headers_;
  std::mt19937_64 rng_;
  std::mutex mutex_;
  std::map<std::int32_t, RegisteredSchema> by_id_;  // ids never change meaning
  std::deque<std::int32_t> order_;                  // by_id_'s keys, oldest first
  std::map<IdKey, std::int32_t> ids_;  // (subject, type, schema) -> id, as registered or found
};

}  // namespace

Result<std::unique_ptr<SchemaRegistryClient>> make_schema_registry_client(
    const SchemaRegistryConfig& config) {
  CPPCDC_TRY(validate(config));
  auto client = registry_detail::make_http_client(config);
  if (!client) return fail(std::move(client).error());
  if (config.type == SchemaRegistryType::kApicurio) {
    return registry_detail::make_apicurio_client(config, std::move(*client));
  }
  return std::unique_ptr<SchemaRegistryClient>(
      std::make_unique<ConfluentClient>(config, std::move(*client)));
}

Result<std::int32_t> resolve_schema_id(SchemaRegistryClient& client,
                                       const SchemaRegistryConfig& config,
                                       const std::string& subject, SchemaType type,
                                       const std::string& schema) {
  // Once per subject and run (the codecs cache the id): a registry that does not answer holds
  // the batch here, and the log should say where it waits.
  spdlog::info("{} the schema id of subject \"{}\" at {}",
               config.auto_register ? "registering (or finding)" : "looking up", subject,
               client.describe());
  return config.auto_register ? client.register_schema(subject, type, schema)
                              : client.lookup_schema(subject, type, schema);
}

Status preflight_schema_registry(SchemaRegistryClient& client, const SchemaRegistryConfig& config,
                                 std::span<const SubjectSchema> subjects) {
  // Reachable, and the url is an API root (a wrong path answers 404 here).
  auto listed = client.subjects();
  if (!listed) return fail(std::move(listed).error());
  // Under auto_register = false every subject that lacks its schema is named, not only the
  // first (each needs registering before a start); a registry that stops answering ends the
  // check at once.
  std::vector<Error> missing;
  for (const SubjectSchema& s : subjects) {
    if (config.auto_register) {
      auto compatible = client.is_compatible(s.subject, s.type, s.schema);
      if (!compatible) return fail(std::move(compatible).error());
      if (compatible->has_value() && !**compatible) {
        return fail(Error::terminal(
            client.describe() + ": the " + std::string(to_string(s.type)) +
            " schema cppcdc writes is not compatible with subject \"" + s.subject +
            "\" under its compatibility rule, so registering it would fail at the first "
            "record; change the subject's compatibility rule, or use another subject "
            "(subject_name_strategy)"));
      }
    } else {
      auto id = client.lookup_schema(s.subject, s.type, s.schema);
      if (!id && id.error().retryable()) return fail(std::move(id).error());
      if (!id && std::find(listed->begin(), listed->end(), s.subject) != listed->end()) {
        // The subject is there, so the lookup's "not found" is about the schema: say it
        // differs (some registries answer as if the subject were missing).
        missing.push_back(Error::terminal(
            client.describe() + ": subject \"" + s.subject + "\" exists, but its versions " +
            "hold another schema than the " + std::string(to_string(s.type)) +
            " schema cppcdc writes. auto_register is false, so "
            "cppcdc never registers: register cppcdc's schema as a new version of that subject "
            "(if its compatibility rule allows), use another subject (subject_name_strategy), "
            "or set auto_register = true (the registry answered: " +
            id.error().message() + ")"));
        continue;
      }
      if (!id) missing.push_back(std::move(id).error());
    }
  }
  if (missing.size() == 1) return fail(std::move(missing.front()));
  if (!missing.empty()) {
    std::string all = std::to_string(missing.size()) + " subjects cannot be used as they are:";
    for (std::size_t i = 0; i < missing.size(); ++i) {
      all += " (" + std::to_string(i + 1) + ") " + missing[i].message();
    }
    return fail(Error::terminal(std::move(all)));
  }
  return ok();
}

Status warm_schema_cache(SchemaRegistryClient& client, std::span<const std::int32_t> ids) {
  for (std::int32_t id : ids) {
    auto schema = client.schema_by_id(id);
    if (!schema) return fail(std::move(schema).error());
  }
  return ok();
}

}  // namespace cppcdc
