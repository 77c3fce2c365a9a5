#pragma once
// One HTTP/1.1 or HTTP/2 client connection (libcurl easy handle) that POSTs bodies to one URL
// and keeps the connection open between requests. No retries here: the sink decides.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/http_sink.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::http {

/// What one request came to.
struct Response {
  /// The HTTP status; 0 when no answer arrived (then `transport_error` says why).
  long status = 0;
  /// Set when the request failed below HTTP (connect, TLS, timeout, reset).
  std::string transport_error;
  /// The transport failure cannot heal by retrying (TLS verification, a certificate file
  /// that cannot be used, an unsupported scheme): a configuration problem.
  bool transport_permanent = false;
  /// The first bytes of the response body (at most kBodyPrefix).
  std::string body_prefix;
  /// The Retry-After header's value, when the answer had one.
  std::optional<std::string> retry_after;
};

inline constexpr std::size_t kBodyPrefix = 512;

class Client {
 public:
  /// Prepares a handle for `options` (URL, timeouts, TLS). Error kind configuration when
  /// libcurl refuses an option (an unsupported scheme, say).
  static Result<std::unique_ptr<Client>> create(const HttpSinkOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// POSTs `body` with `headers` ("Name: value" lines). Blocks for at most the connect plus
  /// request timeouts. Returns the answer; never throws.
  Response post(const std::vector<std::string>& headers, std::string_view body);

 private:
  Client() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `url` as it may be shown: without a password in the user part and without the query.
std::string redact_url(std::string_view url);

}  // namespace cppcdc::http
