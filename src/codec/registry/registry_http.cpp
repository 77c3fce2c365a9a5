#include "registry_http.hpp"

#include <openssl/evp.h>

#include <cctype>
#include <chrono>
#include <thread>

#include "core/http_retry.hpp"

namespace cppcdc::registry_detail {

namespace {

std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

Result<std::unique_ptr<http::Client>> make_http_client(const SchemaRegistryConfig& config) {
  http::ClientOptions options;
  options.connect_timeout_ms = config.connect_timeout_ms;
  options.request_timeout_ms = config.request_timeout_ms;
  options.tls.verify = config.verify_tls;
  options.tls.ca_file = config.ca_file;
  options.tls.client_cert = config.cert_file;
  options.tls.client_key = config.key_file;
  options.max_body = 4 << 20;  // a schema (with its references) fits; a runaway body does not
  options.stop = config.stop;
  auto client = http::Client::create(options);
  if (!client) return fail(std::move(client).error().context("creating the registry client"));
  return std::move(*client);
}

std::optional<std::string> authorization_header(const SchemaRegistryConfig& config) {
  if (config.username) {
    return "Authorization: Basic " + base64(*config.username + ":" + *config.password);
  }
  if (config.bearer_token) return "Authorization: Bearer " + *config.bearer_token;
  return std::nullopt;
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

Attempted send_with_retries(http::Client& client, const std::string& url,
                            const std::vector<std::string>& headers,
                            const std::optional<std::string>& body,
                            const RegistryRetryPolicy& policy, std::mt19937_64& rng,
                            const std::function<bool(const http::Response&)>& is_answer,
                            const std::atomic<bool>* stop) {
  const auto stopping = [stop] { return stop != nullptr && stop->load(); };
  for (std::uint32_t attempt = 0;; ++attempt) {
    http::Response r = client.send(url, headers, body);
    if (r.status == 0 && stopping()) return {std::move(r), true};  // no retry while stopping
    const bool retriable = r.status == 0
                               ? !r.transport_permanent
                               : (r.status == 429 || (r.status >= 500 && r.status <= 599));
    if (r.status >= 200 && r.status <= 299) return {std::move(r), false};
    if (is_answer && is_answer(r)) return {std::move(r), false};
    if (!retriable || attempt >= policy.max_retries) return {std::move(r), retriable};
    std::optional<std::uint64_t> retry_after;
    if (r.retry_after) {
      retry_after = detail::parse_retry_after(*r.retry_after, std::chrono::system_clock::now());
    }
    const std::uint64_t wait =
        detail::backoff_ms(attempt, policy.base_backoff_ms, policy.max_backoff_ms, retry_after,
                           policy.max_backoff_ms, rng);
    // In slices, so that a stop request does not wait out the back-off.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait);
    while (std::chrono::steady_clock::now() < until) {
      if (stopping()) return {std::move(r), true};
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50),
                                                        until - std::chrono::steady_clock::now()));
    }
  }
}

std::optional<Error> unanswered_error(const std::string& where, const http::Response& r,
                                      bool retriable, std::uint32_t max_retries,
                                      const std::function<std::string()>& status) {
  const std::string attempts =
      r.transport_error.find("the process is stopping") != std::string::npos
          ? std::string()
          : " (after " + std::to_string(max_retries + 1) + " attempts)";
  if (r.status == 0) {
    const std::string text = where + r.transport_error;
    if (r.transport_permanent) {
      return Error::configuration(text +
                                  " (check url and the TLS settings: ca_file, cert_file, "
                                  "key_file)");
    }
    return Error::transient(text + attempts);
  }
  if (retriable) return Error::transient(where + status() + attempts);
  return std::nullopt;
}

}  // namespace cppcdc::registry_detail
