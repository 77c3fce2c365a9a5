// The Apicurio Registry 3 native API (/apis/registry/v3) behind SchemaRegistryClient.
//
// How the interface maps onto it: a subject is an artifact id in the configured group; the id
// a record carries is the global id of the version holding the schema (a number that fits the
// 4 bytes of the Confluent framing). The calls:
//   register_schema  POST /groups/{g}/artifacts?ifExists=FIND_OR_CREATE_VERSION&canonical=true
//                    (an existing version with the same canonical content keeps its global id)
//   lookup_schema    POST /search/versions?groupId&artifactId&canonical=true&artifactType, the
//                    schema as the body (reads only); when nothing matches, GET
//                    /groups/{g}/artifacts/{a} tells a missing artifact from one whose
//                    versions hold another schema
//   schema_by_id     GET /search/versions?globalId (the type) and GET /ids/globalIds/{id}
//   latest_schema    GET /groups/{g}/artifacts/{a}/versions/branch=latest, then the content
//   is_compatible    POST /groups/{g}/artifacts/{a}/versions?dryRun=true: the artifact's rules
//                    run and nothing is stored; a missing artifact accepts anything
//   subjects         GET /groups/{g}/artifacts, page by page
// Errors come as problem details ({"status","title","detail","name"}); `name` (the server's
// exception) tells "not found" apart from a wrong url, and a rule violation from other 400s.

#include <boost/json.hpp>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "cppcdc/http_client.hpp"
#include "registry_http.hpp"

namespace cppcdc::registry_detail {
namespace {

namespace json = boost::json;

constexpr const char* kApiPath = "/apis/registry/v3";

std::string_view content_type_of(SchemaType type) {
  return type == SchemaType::kProtobuf ? "application/x-protobuf" : "application/json";
}

// What an error answer says: the problem details' name, title and detail (or the older
// {"error_code","message"}), else the first bytes.
struct Problem {
  std::string name;
  std::string text;
};

Problem problem_of(const std::string& body) {
  Problem out;
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    const auto str = [&](const char* key) {
      const auto* f = o.if_contains(key);
      return f != nullptr && f->is_string() ? std::string(f->as_string()) : std::string();
    };
    out.name = str("name");
    for (const char* key : {"detail", "title", "message"}) {
      if (out.text.empty()) out.text = str(key);
    }
  }
  if (out.text.empty()) out.text = body.substr(0, 300);
  return out;
}

bool is_absent(const Problem& p) {
  return p.name == "ArtifactNotFoundException" || p.name == "GroupNotFoundException" ||
         p.name == "VersionNotFoundException" || p.name == "ContentNotFoundException" ||
         p.name == "BranchNotFoundException";
}

class ApicurioClient final : public SchemaRegistryClient {
 public:
  ApicurioClient(SchemaRegistryConfig config, std::unique_ptr<http::Client> client)
      : config_(std::move(config)), client_(std::move(client)), rng_(std::random_device{}()) {
    while (!config_.url.empty() && config_.url.back() == '/') config_.url.pop_back();
    shown_ = http::redact_url(config_.url);
    base_ = config_.url + kApiPath;
    group_path_ = "/groups/" + percent_encode(config_.group) + "/artifacts";
    auth_ = authorization_header(config_);
  }

  std::string describe() const override {
    return "schema registry " + shown_ + " (Apicurio native API, group \"" + config_.group + "\")";
  }

  Result<std::int32_t> register_schema(const std::string& subject, SchemaType type,
                                       const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = ids_.find({subject, type, schema}); hit != ids_.end()) return hit->second;
    json::object body;
    body["artifactId"] = subject;
    body["artifactType"] = to_string(type);
    body["firstVersion"] = json::object{{"content", content_object(type, schema)}};
    const std::string what = "registering a schema as " + artifact(subject);
    auto answer = call(what, group_path_ + "?ifExists=FIND_OR_CREATE_VERSION&canonical=true",
                       json::serialize(body), "application/json");
    if (!answer) return fail(std::move(answer).error());
    auto parsed = parse_object(*answer, "the answer to " + what);
    if (!parsed) return fail(std::move(parsed).error());
    const auto* version = parsed->if_contains("version");
    if (version == nullptr || !version->is_object()) {
      return fail(Error::terminal(describe() + ": the answer to " + what +
                                  " has no version: " + answer->body_prefix.substr(0, 200)));
    }
    auto id = global_id(version->as_object(), what);
    if (id) ids_[{subject, type, schema}] = *id;
    return id;
  }

  Result<std::int32_t> lookup_schema(const std::string& subject, SchemaType type,
                                     const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = ids_.find({subject, type, schema}); hit != ids_.end()) return hit->second;
    const std::string what = "looking up the schema of " + artifact(subject);
    auto answer = call(what,
                       "/search/versions?groupId=" + percent_encode(config_.group) +
                           "&artifactId=" + percent_encode(subject) +
                           "&canonical=true&artifactType=" + std::string(to_string(type)) +
                           "&orderby=globalId&order=asc&limit=1",
                       schema, content_type_of(type));
    if (!answer) return fail(std::move(answer).error());
    auto versions = parse_versions(*answer, "the answer to " + what);
    if (!versions) return fail(std::move(versions).error());
    if (versions->empty()) return fail(not_registered(subject, type));
    auto id = global_id(versions->front(), what);
    if (id) ids_[{subject, type, schema}] = *id;
    return id;
  }

  Result<RegisteredSchema> schema_by_id(std::int32_t id) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto hit = by_id_.find(id); hit != by_id_.end()) return hit->second;
    const std::string what = "reading the schema with global id " + std::to_string(id);
    auto answer = call(what, "/search/versions?globalId=" + std::to_string(id));
    if (!answer) return fail(std::move(answer).error());
    auto versions = parse_versions(*answer, "the answer to " + what);
    if (!versions) return fail(std::move(versions).error());
    if (versions->empty()) {
      return fail(Error::terminal(describe() + ": " + what +
                                  " failed: the registry has no "
                                  "version with global id " +
                                  std::to_string(id)));
    }
    RegisteredSchema out;
    out.id = id;
    auto type = schema_type(versions->front(), what);
    if (!type) return fail(std::move(type).error());
    out.type = *type;
    auto content = read_content(id, what);
    if (!content) return fail(std::move(content).error());
    out.schema = std::move(*content);
    remember(out);
    return out;
  }

  Result<std::vector<std::string>> subjects() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    constexpr std::size_t kPage = 500;
    for (;;) {
      auto answer = call("listing the artifacts of group \"" + config_.group + "\"",
                         group_path_ + "?limit=" + std::to_string(kPage) +
                             "&offset=" + std::to_string(out.size()));
      if (!answer) return fail(std::move(answer).error());
      auto body = parse_object(*answer, "the artifact list");
      if (!body) return fail(std::move(body).error());
      const auto* artifacts = body->if_contains("artifacts");
      if (artifacts == nullptr || !artifacts->is_array()) {
        return fail(Error::terminal(describe() + ": the artifact list has no artifacts array: " +
                                    answer->body_prefix.substr(0, 200)));
      }
      for (const auto& a : artifacts->as_array()) {
        const auto* name = a.is_object() ? a.as_object().if_contains("artifactId") : nullptr;
        if (name != nullptr && name->is_string()) out.emplace_back(name->as_string());
      }
      const auto* count = body->if_contains("count");
      const std::int64_t total = count != nullptr && count->is_int64() ? count->as_int64() : 0;
      if (artifacts->as_array().size() < kPage || static_cast<std::int64_t>(out.size()) >= total) {
        return out;
      }
    }
  }

  Result<RegisteredSchema> latest_schema(const std::string& subject) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::string what = "reading the latest version of " + artifact(subject);
    auto answer =
        call(what, group_path_ + "/" + percent_encode(subject) + "/versions/branch=latest");
    if (!answer) return fail(std::move(answer).error());
    auto meta = parse_object(*answer, "the answer to " + what);
    if (!meta) return fail(std::move(meta).error());
    RegisteredSchema out;
    auto id = global_id(*meta, what);
    if (!id) return fail(std::move(id).error());
    out.id = *id;
    auto type = schema_type(*meta, what);
    if (!type) return fail(std::move(type).error());
    out.type = *type;
    out.subject = subject;
    if (const auto* v = meta->if_contains("version"); v != nullptr && v->is_string()) {
      const std::string text(v->as_string());
      if (!text.empty() && text.size() < 10 &&
          text.find_first_not_of("0123456789") == std::string::npos) {
        out.version = std::stoi(text);
      }
    }
    auto content = read_content(*id, what);
    if (!content) return fail(std::move(content).error());
    out.schema = std::move(*content);
    return out;
  }

  Result<std::optional<bool>> is_compatible(const std::string& subject, SchemaType type,
                                            const std::string& schema) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::string what = "checking the rules of " + artifact(subject);
    json::object body{{"content", content_object(type, schema)}};
    auto answer = call(what, group_path_ + "/" + percent_encode(subject) + "/versions?dryRun=true",
                       json::serialize(body), "application/json", [](const http::Response& r) {
                         if (r.status == 404) return true;
                         return (r.status == 400 || r.status == 409) &&
                                problem_of(r.body_prefix).name == "RuleViolationException";
                       });
    if (!answer) return fail(std::move(answer).error());
    if (answer->status >= 200 && answer->status <= 299) return std::optional<bool>(true);
    const Problem p = problem_of(answer->body_prefix);
    if (answer->status == 404) {
      // A new artifact (or group) accepts any first version; another 404 means the registry
      // has no dry run here, which is not a verdict.
      if (is_absent(p)) return std::optional<bool>(true);
      return std::optional<bool>();
    }
    return std::optional<bool>(false);  // a rule (compatibility, validity) refuses it
  }

 private:
  using IdKey = std::tuple<std::string, SchemaType, std::string>;

  std::string artifact(const std::string& subject) const {
    return "artifact \"" + subject + "\" in group \"" + config_.group + "\"";
  }

  static json::object content_object(SchemaType type, const std::string& schema) {
    return json::object{{"content", schema}, {"contentType", content_type_of(type)}};
  }

  // One call with the retry policy: a GET without `body`, else a POST of `body` as
  // `content_type`. `is_answer`: an error status handed back instead of becoming an error.
  Result<http::Response> call(const std::string& what, const std::string& path,
                              const std::optional<std::string>& body = std::nullopt,
                              std::string_view content_type = {},
                              const std::function<bool(const http::Response&)>& is_answer = {},
                              std::string_view accept = "application/json") {
    std::vector<std::string> headers{"Accept: " + std::string(accept)};
    if (body) headers.push_back("Content-Type: " + std::string(content_type));
    if (auth_) headers.push_back(*auth_);
    auto sent =
        send_with_retries(*client_, base_ + path, headers, body, config_.retry, rng_, is_answer,
                          config_.stop);
    const http::Response& r = sent.response;
    if ((r.status >= 200 && r.status <= 299) || (is_answer && r.status != 0 && is_answer(r))) {
      return std::move(sent.response);
    }
    return fail(error_for(what, r, sent.retriable));
  }

  Error error_for(const std::string& what, const http::Response& r, bool retriable) const {
    const std::string where = describe() + ": " + what + " failed: ";
    if (r.status == 0) {
      return *registry_detail::unanswered_error(where, r, false, config_.retry.max_retries, {});
    }
    const Problem p = problem_of(r.body_prefix);
    const std::string status = "HTTP " + std::to_string(r.status) +
                               (p.name.empty() ? "" : " (" + p.name + ")") + ": " + p.text;
    if (auto unanswered = registry_detail::unanswered_error(
            where, r, retriable, config_.retry.max_retries, [&] { return status; })) {
      return *unanswered;
    }
    std::string remedy;
    if (r.status == 401 || r.status == 403) {
      remedy =
          "; check the registry credentials (username and password, or bearer_token) and "
          "the principal's permissions on the group";
    } else if (r.status == 404) {
      if (is_absent(p)) {
        remedy = config_.auto_register
                     ? "; the registry does not have it"
                     : "; auto_register is false, so cppcdc never registers: register the schema "
                       "as a version of that artifact, or set auto_register = true";
      } else {
        remedy = "; is url the Apicurio server's root (http://host:8080, the client appends " +
                 std::string(kApiPath) +
                 ")? An Apicurio 2.x server has no v3 API: for it, set type = \"confluent\" "
                 "with url = \"http://host:8080/apis/ccompat/v7\"";
      }
    } else if (p.name == "RuleViolationException") {
      remedy =
          "; the artifact's rules (compatibility or validity) refuse the schema: change the "
          "rules or use another artifact (subject_name_strategy)";
    } else if (r.status == 400 || r.status == 422) {
      remedy = "; the registry refuses the schema or the request as invalid";
    } else if (r.status == 409) {
      remedy = "; the registry reports a conflict with what it holds";
    }
    return Error::terminal(where + status + remedy);
  }

  // The lookup found no version with this content: is the artifact missing, or do its
  // versions hold another schema? Both are terminal and name the artifact.
  Error not_registered(const std::string& subject, SchemaType type) {
    const std::string what = "looking up the schema of " + artifact(subject);
    auto meta = call("reading " + artifact(subject), group_path_ + "/" + percent_encode(subject),
                     std::nullopt, {}, [](const http::Response& r) { return r.status == 404; });
    std::string state;
    if (meta && meta->status == 404) {
      state = "the artifact does not exist";
    } else if (meta) {
      state = "no version of the artifact holds the " + std::string(to_string(type)) +
              " schema cppcdc writes (its versions hold another schema)";
    } else {
      state = "no version holds the schema cppcdc writes";
    }
    const std::string remedy =
        config_.auto_register
            ? "; the registry does not have it"
            : "; auto_register is false, so cppcdc never registers: register this schema as a "
              "version of the artifact, or set auto_register = true";
    return Error::terminal(describe() + ": " + what + " failed: " + state + remedy);
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

  Result<std::vector<json::object>> parse_versions(const http::Response& r,
                                                   const std::string& what) const {
    auto body = parse_object(r, what);
    if (!body) return fail(std::move(body).error());
    const auto* versions = body->if_contains("versions");
    if (versions == nullptr || !versions->is_array()) {
      return fail(Error::terminal(describe() + ": " + what +
                                  " has no versions array: " + r.body_prefix.substr(0, 200)));
    }
    std::vector<json::object> out;
    for (const auto& v : versions->as_array()) {
      if (v.is_object()) out.push_back(v.as_object());
    }
    return out;
  }

  Result<std::int32_t> global_id(const json::object& version, const std::string& what) const {
    const auto* id = version.if_contains("globalId");
    if (id == nullptr || !id->is_int64() || id->as_int64() < 0) {
      return fail(Error::terminal(describe() + ": the answer to " + what +
                                  " has no globalId: " + json::serialize(version).substr(0, 200)));
    }
    if (id->as_int64() > std::numeric_limits<std::int32_t>::max()) {
      return fail(Error::terminal(describe() + ": the global id " + std::to_string(id->as_int64()) +
                                  " of " + what +
                                  " does not fit the 4 bytes of the Confluent framing"));
    }
    return static_cast<std::int32_t>(id->as_int64());
  }

  Result<SchemaType> schema_type(const json::object& version, const std::string& what) const {
    const auto* type = version.if_contains("artifactType");
    const std::string text =
        type != nullptr && type->is_string() ? std::string(type->as_string()) : "";
    for (auto t : {SchemaType::kAvro, SchemaType::kJson, SchemaType::kProtobuf}) {
      if (text == to_string(t)) return t;
    }
    return fail(Error::terminal(describe() + ": " + what + ": the artifact type \"" + text +
                                "\" is not AVRO, JSON or PROTOBUF"));
  }

  Result<std::string> read_content(std::int32_t id, const std::string& what) {
    auto content = call(what, "/ids/globalIds/" + std::to_string(id), std::nullopt, {}, {}, "*/*");
    if (!content) return fail(std::move(content).error());
    return std::move(content->body_prefix);
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
  std::string base_;        // url + /apis/registry/v3
  std::string group_path_;  // /groups/{group}/artifacts
  std::optional<std::string> auth_;
  std::mt19937_64 rng_;
  std::mutex mutex_;
  std::map<std::int32_t, RegisteredSchema> by_id_;  // global ids never change meaning
  std::deque<std::int32_t> order_;                  // by_id_'s keys, oldest first
  std::map<IdKey, std::int32_t> ids_;               // (artifact, type, schema) -> global id
};

}  // namespace

std::unique_ptr<SchemaRegistryClient> make_apicurio_client(const SchemaRegistryConfig& config,
                                                           std::unique_ptr<http::Client> client) {
  return std::make_unique<ApicurioClient>(config, std::move(client));
}

}  // namespace cppcdc::registry_detail
