#pragma once
// What the registry clients of this directory (Confluent's REST API, Apicurio's native API)
// share below their APIs: the HTTP client made from a SchemaRegistryConfig, the
// Authorization header, path encoding, and one call under the retry policy.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/http_client.hpp"
#include "cppcdc/schema_registry.hpp"

namespace cppcdc::registry_detail {

/// An HTTP client with the config's timeouts and TLS settings.
Result<std::unique_ptr<http::Client>> make_http_client(const SchemaRegistryConfig& config);

/// "Authorization: Basic ..." or "Authorization: Bearer ..."; nullopt without credentials.
std::optional<std::string> authorization_header(const SchemaRegistryConfig& config);

/// `text` percent-encoded for one path segment or query value (unreserved characters kept).
std::string percent_encode(std::string_view text);

/// One request under `policy`: sent again after a transport failure that may heal, HTTP 429
/// and 5xx, waiting the jittered back-off (at least what Retry-After asks, up to the cap).
/// Returns the last answer: a 2xx, one `is_answer` accepts, one that is not retried, or the
/// last retried one when the attempts ran out (`retriable` then says so).
struct Attempted {
  http::Response response;
  bool retriable = false;  ///< the answer was of a retriable kind (attempts ran out)
};
Attempted send_with_retries(http::Client& client, const std::string& url,
                            const std::vector<std::string>& headers,
                            const std::optional<std::string>& body,
                            const RegistryRetryPolicy& policy, std::mt19937_64& rng,
                            const std::function<bool(const http::Response&)>& is_answer = {},
                            const std::atomic<bool>* stop = nullptr);

/// The error of a call that got no verdict from the registry: for a transport failure
/// (`r.status == 0`) a configuration error when it cannot work (URL, TLS) or a transient one
/// after the attempts; for a status that was retried until the attempts ran out, a transient
/// error with `status` (the caller's description of it). nullopt when neither applies. `where`
/// starts the message ("<registry>: <what> failed: ").
std::optional<Error> unanswered_error(const std::string& where, const http::Response& r,
                                      bool retriable, std::uint32_t max_retries,
                                      const std::function<std::string()>& status);

/// The Apicurio Registry 3 native API client (apicurio_client.cpp), for
/// make_schema_registry_client; `config` is validated.
std::unique_ptr<SchemaRegistryClient> make_apicurio_client(const SchemaRegistryConfig& config,
                                                           std::unique_ptr<http::Client> client);

}  // namespace cppcdc::registry_detail
