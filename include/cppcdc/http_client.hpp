#pragma once
// A small HTTP/1.1 (or HTTP/2) client on one libcurl easy handle that keeps its connection
// open between requests: what the HTTP sink posts batches with and what the schema registry
// client talks to its registry with. No retries here: the caller decides (core/http_retry.hpp
// has the waits). Never throws.
//
// Threading: one thread at a time per Client (callers that share one serialize their calls).
// Ownership: create() returns the client; it owns its libcurl handle.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/result.hpp"

namespace cppcdc {

struct HttpTlsOptions {
  /// Verify the server's certificate chain and host name. Turning it off is for tests only.
  bool verify = true;
  /// PEM file of the CAs to trust; empty: the system's store.
  std::filesystem::path ca_file;
  /// PEM client certificate and its key, for servers that ask for one (both or neither).
  std::filesystem::path client_cert;
  std::filesystem::path client_key;
};

namespace http {

struct ClientOptions {
  std::string url;  ///< where post() sends; send() takes its own
  std::uint32_t connect_timeout_ms = 10'000;
  std::uint32_t request_timeout_ms = 30'000;  ///< one request, connect included
  HttpTlsOptions tls;
  /// How much of a response body is kept (the rest is read and dropped).
  std::size_t max_body = 512;
  /// Optional, not owned, must outlive the client: when it becomes true, a request in flight
  /// ends within about a second (libcurl's progress callback reads it) with a transport error
  /// saying it was stopped (retryable), instead of waiting out request_timeout_ms for a
  /// server that does not answer.
  const std::atomic<bool>* stop = nullptr;
};

/// What one request came to.
struct Response {
  /// The HTTP status; 0 when no answer arrived (then `transport_error` says why).
  long status = 0;
  /// Set when the request failed below HTTP (connect, TLS, timeout, reset).
  std::string transport_error;
  /// The transport failure cannot heal by retrying (TLS verification, a certificate file
  /// that cannot be used, an unsupported scheme): a configuration problem.
  bool transport_permanent = false;
  /// The first bytes of the response body (at most ClientOptions::max_body).
  std::string body_prefix;
  /// The Retry-After header's value, when the answer had one.
  std::optional<std::string> retry_after;
};

/// How much of a body the HTTP sink keeps for its error messages.
inline constexpr std::size_t kBodyPrefix = 512;

class Client {
 public:
  /// Prepares a handle for `options` (URL, timeouts, TLS). Error kind configuration when
  /// libcurl refuses an option (an unsupported scheme, say).
  static Result<std::unique_ptr<Client>> create(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// POSTs `body` with `headers` ("Name: value" lines) to the configured url. Blocks for at
  /// most the connect plus request timeouts. Returns the answer.
  Response post(const std::vector<std::string>& headers, std::string_view body);
  /// A GET (`body` nullopt) or a POST of `body` to `url`, on the same connection when the
  /// host is the same.
  Response send(const std::string& url, const std::vector<std::string>& headers,
                const std::optional<std::string>& body);

 private:
  Client() = default;
  Response perform(const std::string& url, const std::vector<std::string>& headers,
                   const std::string_view* body);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `url` as it may be shown: without a password in the user part and without the query.
std::string redact_url(std::string_view url);

}  // namespace http
}  // namespace cppcdc
