// The AWS Glue service as a GlueSchemaRegistry: Glue's JSON 1.1 API over the project's HTTP
// client, each request signed with AWS Signature Version 4 (HMAC-SHA256 from OpenSSL).

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>

#include "codec/glue/sigv4.hpp"
#include "core/http_retry.hpp"
#include "cppcdc/glue.hpp"
#include "cppcdc/http_client.hpp"

namespace cppcdc {

// ---- Signature Version 4 -----------------------------------------------------------------

namespace glue_detail {
namespace {

std::string hex(const unsigned char* data, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 0x0f]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex(digest, sizeof digest);
}

std::string hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::string amz_date(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::vector<std::string> sign_glue_request(const SigV4Request& r) {
  const std::string date = r.amz_date.substr(0, 8);
  // Header names in lower case and sorted; values trimmed (none of ours has inner spaces).
  std::vector<std::pair<std::string, std::string>> headers = {
      {"content-type", "application/x-amz-json-1.1"},
      {"host", r.host},
      {"x-amz-date", r.amz_date},
      {"x-amz-target", "AWSGlue." + r.operation},
  };
  if (!r.session_token.empty()) headers.emplace_back("x-amz-security-token", r.session_token);
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers.empty()) signed_headers += ";";
    signed_headers += name;
  }
  const std::string canonical_request =
      "POST\n/\n\n" + canonical_headers + "\n" + signed_headers + "\n" + sha256_hex(r.body);
  const std::string scope = date + "/" + r.region + "/" + r.service + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + r.amz_date + "\n" + scope + "\n" + sha256_hex(canonical_request);
  const std::string k_date = hmac("AWS4" + r.secret_access_key, date);
  const std::string k_region = hmac(k_date, r.region);
  const std::string k_service = hmac(k_region, r.service);
  const std::string k_signing = hmac(k_service, "aws4_request");
  const std::string mac = hmac(k_signing, string_to_sign);
  const std::string signature = hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());

  std::vector<std::string> out;
  out.push_back("Content-Type: application/x-amz-json-1.1");
  out.push_back("Host: " + r.host);
  out.push_back("X-Amz-Date: " + r.amz_date);
  out.push_back("X-Amz-Target: AWSGlue." + r.operation);
  if (!r.session_token.empty()) out.push_back("X-Amz-Security-Token: " + r.session_token);
  out.push_back("Authorization: AWS4-HMAC-SHA256 Credential=" + r.access_key_id + "/" + scope +
                ", SignedHeaders=" + signed_headers + ", Signature=" + signature);
  out.push_back("Expect:");  // no 100-continue round trip for larger definitions
  return out;
}

}  // namespace glue_detail

// ---- the client ---------------------------------------------------------------------------

namespace {

namespace json = boost::json;

struct Endpoint {
  std::string url;   // what requests go to, ending in "/"
  std::string host;  // the Host header: host, with the port when one is written
};

Result<Endpoint> parse_endpoint(const AwsGlueRegistryConfig& c) {
  if (c.endpoint.empty()) {
    return Endpoint{"https://glue." + c.region + ".amazonaws.com/",
                    "glue." + c.region + ".amazonaws.com"};
  }
  std::string_view e = c.endpoint;
  std::size_t scheme_end = e.find("://");
  const std::string_view scheme =
      scheme_end == std::string_view::npos ? "" : e.substr(0, scheme_end);
  if (scheme != "https" && scheme != "http") {
    return fail(Error::configuration(
        "Glue endpoint: \"" + c.endpoint +
        "\" is not an http:// or https:// URL (leave it out for glue.<region>.amazonaws.com)"));
  }
  std::string_view rest = e.substr(scheme_end + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return fail(Error::configuration("Glue endpoint: \"" + c.endpoint +
                                     "\" must be a scheme, a host and an optional port, with "
                                     "no path, query or user part"));
  }
  return Endpoint{std::string(scheme) + "://" + std::string(rest) + "/", std::string(rest)};
}

bool transient_type(std::string_view type) {
  return type == "ThrottlingException" || type == "ConcurrentModificationException" ||
         type == "InternalServiceException" || type == "ServiceUnavailableException" ||
         type == "RequestTimeoutException" || type == "OperationTimeoutException";
}

// Glue's answer to one call: the parsed body, or Glue's error type and message.
struct Answer {
  json::object body;
  std::string error_type;  // empty on success
  std::string message;
};

class AwsGlueSchemaRegistry final : public GlueSchemaRegistry {
 public:
  AwsGlueSchemaRegistry(AwsGlueRegistryConfig config, Endpoint endpoint,
                        std::unique_ptr<http::Client> client)
      : config_(std::move(config)),
        endpoint_(std::move(endpoint)),
        client_(std::move(client)),
        rng_(std::random_device{}()) {}

  std::string describe() const override {
    return "AWS Glue registry \"" + config_.registry_name + "\" (" + config_.region +
           (config_.endpoint.empty() ? "" : ", endpoint " + http::redact_url(config_.endpoint)) +
           ")";
  }

  Result<GlueSchemaVersionId> register_schema_version(const std::string& schema_name,
                                                      const std::string& definition) override {
    std::lock_guard lock(mutex_);
    json::object id_body{{"SchemaId", json::object{{"RegistryName", config_.registry_name},
                                                   {"SchemaName", schema_name}}},
                         {"SchemaDefinition", definition}};
    // Read first: a version already there needs no write permission.
    auto found = call("GetSchemaByDefinition", id_body);
    if (!found) return fail(std::move(found).error());
    if (found->error_type.empty()) {
      return settle(*found, "Status", "schema \"" + schema_name + "\"");
    }
    if (found->error_type != "EntityNotFoundException")
      return fail(refused("GetSchemaByDefinition", *found));

    auto registered = call("RegisterSchemaVersion", id_body);
    if (!registered) return fail(std::move(registered).error());
    if (registered->error_type == "EntityNotFoundException") {
      // The schema does not exist yet (or the registry does not: CreateSchema says which).
      json::object create{{"RegistryId", json::object{{"RegistryName", config_.registry_name}}},
                          {"SchemaName", schema_name},
                          {"DataFormat", "AVRO"},
                          {"Compatibility", "BACKWARD"},
                          {"SchemaDefinition", definition}};
      auto created = call("CreateSchema", create);
      if (!created) return fail(std::move(created).error());
      if (created->error_type.empty()) {
        return settle(*created, "SchemaVersionStatus", "schema \"" + schema_name + "\"");
      }
      if (created->error_type != "AlreadyExistsException") {
        return fail(refused("CreateSchema", *created));
      }
      registered = call("RegisterSchemaVersion", id_body);  // another writer created it first
      if (!registered) return fail(std::move(registered).error());
    }
    if (!registered->error_type.empty()) return fail(refused("RegisterSchemaVersion", *registered));
    return settle(*registered, "Status", "schema \"" + schema_name + "\"");
  }

  Result<std::string> schema_definition(const GlueSchemaVersionId& id) override {
    std::lock_guard lock(mutex_);
    auto answer = get_version(id);
    if (!answer) return fail(std::move(answer).error());
    const auto* definition = answer->if_contains("SchemaDefinition");
    if (definition == nullptr || !definition->is_string()) {
      return fail(Error::terminal(describe() + ": GetSchemaVersion of " + id.to_string() +
                                  " answered without a SchemaDefinition"));
    }
    return std::string(definition->as_string());
  }

 private:
  Result<json::object> get_version(const GlueSchemaVersionId& id) {
    auto answer = call("GetSchemaVersion", json::object{{"SchemaVersionId", id.to_string()}});
    if (!answer) return fail(std::move(answer).error());
    if (!answer->error_type.empty()) return fail(refused("GetSchemaVersion", *answer));
    return std::move(answer->body);
  }

  // The version UUID of a register/create/lookup answer, once its status is AVAILABLE.
  Result<GlueSchemaVersionId> settle(const Answer& answer, const char* status_field,
                                     const std::string& what) {
    const auto* id_text = answer.body.if_contains("SchemaVersionId");
    if (id_text == nullptr || !id_text->is_string()) {
      return fail(
          Error::terminal(describe() + ": the answer about " + what + " has no SchemaVersionId"));
    }
    auto id = GlueSchemaVersionId::parse(id_text->as_string());
    if (!id) {
      return fail(Error::terminal(describe() + ": " + id.error().message()));
    }
    std::string status = string_field(answer.body, status_field);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.pending_timeout_ms);
    for (std::uint32_t poll = 0; status == "PENDING"; ++poll) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return fail(Error::transient(describe() + ": version " + id->to_string() + " of " + what +
                                     " is still PENDING after " +
                                     std::to_string(config_.pending_timeout_ms) + " ms"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(detail::backoff_ms(
          poll, config_.base_backoff_ms, config_.max_backoff_ms, std::nullopt, 0, rng_)));
      auto version = get_version(*id);
      if (!version) return fail(std::move(version).error());
      status = string_field(*version, "Status");
    }
    if (status != "AVAILABLE") {
      return fail(Error::terminal(
          describe() + ": version " + id->to_string() + " of " + what + " is " +
          (status.empty() ? std::string("without a status") : status) +
          (status == "FAILURE" ? " (Glue refused it: is the definition compatible with the "
                                 "schema's compatibility setting?)"
                               : "")));
    }
    return *id;
  }

  static std::string string_field(const json::object& o, const char* name) {
    const auto* v = o.if_contains(name);
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
  }

  Error refused(const std::string& operation, const Answer& a) const {
    std::string remedy;
    if (a.error_type == "AccessDeniedException" || a.error_type == "UnrecognizedClientException" ||
        a.error_type == "InvalidSignatureException" || a.error_type == "ExpiredTokenException") {
      remedy =
          "; check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
          "AWS_SESSION_TOKEN), the region, and the principal's glue:" +
          operation + " permission";
    } else if (a.error_type == "EntityNotFoundException") {
      remedy = operation == "GetSchemaVersion" ? "; the version is not in this registry"
                                               : "; does the registry \"" + config_.registry_name +
                                                     "\" exist in " + config_.region + "?";
    }
    return Error::terminal(describe() + ": " + operation + " failed: " + a.error_type +
                           (a.message.empty() ? "" : ": " + a.message) + remedy);
  }

  // One operation with the retry policy. Glue's own refusals come back as an Answer with
  // error_type set (the caller decides); transient conditions past the retries, and answers
  // that are not Glue's JSON, are errors.
  Result<Answer> call(const std::string& operation, const json::object& request) {
    const std::string body = json::serialize(request);
    for (std::uint32_t attempt = 0;; ++attempt) {
      glue_detail::SigV4Request s;
      s.host = endpoint_.host;
      s.region = config_.region;
      s.operation = operation;
      s.body = body;
      s.access_key_id = config_.access_key_id;
      s.secret_access_key = config_.secret_access_key;
      s.session_token = config_.session_token;
      s.amz_date = glue_detail::amz_date(std::chrono::system_clock::now());
      const http::Response r =
          client_->send(endpoint_.url, glue_detail::sign_glue_request(s), body);
      Answer a;
      bool transient = false;
      std::string problem;
      if (r.status == 0) {
        if (r.transport_permanent) {
          return fail(Error::configuration(describe() + ": " + operation +
                                           " failed: " + r.transport_error +
                                           " (check endpoint, ca_file and verify_tls)"));
        }
        transient = true;
        problem = r.transport_error;
      } else {
        boost::system::error_code ec;
        json::value parsed = json::parse(r.body_prefix, ec);
        if (!ec && parsed.is_object()) a.body = std::move(parsed.as_object());
        if (r.status >= 200 && r.status <= 299) {
          if (ec || !parsed.is_object()) {
            return fail(Error::terminal(describe() + ": " + operation + " answered HTTP " +
                                        std::to_string(r.status) +
                                        " with a body that is not a JSON object"));
          }
          return a;
        }
        std::string type = string_field(a.body, "__type");
        if (const auto hash = type.rfind('#'); hash != std::string::npos) type.erase(0, hash + 1);
        a.error_type = type;
        a.message = string_field(a.body, "message");
        if (a.message.empty()) a.message = string_field(a.body, "Message");
        transient = r.status == 429 || r.status >= 500 || transient_type(type);
        if (!transient && type.empty()) {
          return fail(Error::terminal(
              describe() + ": " + operation + " answered HTTP " + std::to_string(r.status) + ": " +
              r.body_prefix.substr(0, 300) + " (is endpoint the Glue service?)"));
        }
        if (!transient) return a;
        problem = "HTTP " + std::to_string(r.status) + (type.empty() ? "" : " " + type) +
                  (a.message.empty() ? "" : ": " + a.message);
      }
      if (attempt >= config_.max_retries) {
        return fail(Error::transient(describe() + ": " + operation + " failed: " + problem +
                                     " (after " + std::to_string(attempt + 1) + " attempts)"));
      }
      std::optional<std::uint64_t> retry_after;
      if (r.retry_after) {
        retry_after = detail::parse_retry_after(*r.retry_after, std::chrono::system_clock::now());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(
          detail::backoff_ms(attempt, config_.base_backoff_ms, config_.max_backoff_ms, retry_after,
                             config_.max_backoff_ms, rng_)));
    }
  }

  const AwsGlueRegistryConfig config_;
  const Endpoint endpoint_;
  std::unique_ptr<http::Client> client_;
  std::mutex mutex_;
  std::mt19937_64 rng_;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

Status validate(const AwsGlueRegistryConfig& c) {
  if (c.registry_name.empty() || c.registry_name.size() > 255) {
    return fail(Error::configuration("Glue registry_name: required, 1 to 255 characters"));
  }
  for (const char ch : c.registry_name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '$' || ch == '#' ||
                    ch == '.';
    if (!ok) {
      return fail(Error::configuration("Glue registry_name: \"" + c.registry_name + "\" holds '" +
                                       std::string(1, ch) +
                                       "'; Glue names are letters, digits and - _ $ # ."));
    }
  }
  if (c.region.empty()) {
    return fail(Error::configuration("Glue region: required (the AWS region, e.g. \"eu-west-1\")"));
  }
  for (const char ch : c.region) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-')) {
      return fail(Error::configuration("Glue region: \"" + c.region +
                                       "\" is not an AWS region name (such as \"eu-west-1\")"));
    }
  }
  auto endpoint = parse_endpoint(c);
  if (!endpoint) return fail(std::move(endpoint).error());
  if (c.connect_timeout_ms == 0 || c.request_timeout_ms == 0) {
    return fail(Error::configuration("Glue request_timeout_ms: timeouts are at least 1 ms"));
  }
  return ok();
}

Result<std::shared_ptr<GlueSchemaRegistry>> make_aws_glue_schema_registry(
    const AwsGlueRegistryConfig& config) {
  CPPCDC_TRY(validate(config));
  AwsGlueRegistryConfig c = config;
  if (c.access_key_id.empty() && c.secret_access_key.empty()) {
    c.access_key_id = env("AWS_ACCESS_KEY_ID");
    c.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    if (c.session_token.empty()) c.session_token = env("AWS_SESSION_TOKEN");
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return fail(Error::configuration(
        "the AWS Glue schema registry needs credentials: set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials) in cppcdc's "
        "environment"));
  }
  auto endpoint = parse_endpoint(c);
  if (!endpoint) return fail(std::move(endpoint).error());
  http::ClientOptions options;
  options.url = endpoint->url;
  options.connect_timeout_ms = c.connect_timeout_ms;
  options.request_timeout_ms = c.request_timeout_ms;
  options.tls.verify = c.verify_tls;
  options.tls.ca_file = c.ca_file;
  options.max_body = 4 << 20;  // a definition fits; a runaway body does not
  auto client = http::Client::create(options);
  if (!client) return fail(std::move(client).error().context("creating the AWS Glue client"));
  return std::shared_ptr<GlueSchemaRegistry>(std::make_shared<AwsGlueSchemaRegistry>(
      std::move(c), std::move(*endpoint), std::move(*client)));
}

}  // namespace cppcdc
