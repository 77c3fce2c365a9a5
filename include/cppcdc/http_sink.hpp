#pragma once
// The HTTP sink: every flushed batch goes to a receiver as one POST (or several, when the batch
// is larger than batch_max_events / batch_max_bytes), as a JSON array or as JSON lines, signed
// the Standard Webhooks way when signing secrets are given. flush() returns only after the
// receiver answered 2xx for every request of the batch, so a batch is acknowledged only once
// the receiver took it (at-least-once: a batch in flight at a crash is sent again, with the same
// webhook-id when it is cut the same way, so a receiver can drop the repeat).
//
// Failures: transport errors (refused, reset, timed out), 408, 429 and 5xx are retried with
// jittered exponential back-off (a Retry-After that asks for longer wins), for a short while
// only (retry.max_elapsed_ms, 5 s by default): a blip is ridden out inside flush(), an outage
// is not. When the retries are used up flush() fails with kind transient, and the runtime
// delivers the batch again after its own back-off, where every such failure counts for the
// circuit breaker like a failed source read. Every failed request is counted
// (failed_attempts()) as it happens. Every other answer (3xx, other 4xx) is
// permanent: flush() fails with kind terminal, the error carrying the status and the first
// bytes of the response body, unless `on_rejected` takes the batch (then it counts as
// delivered). TLS verification failures and unusable certificate files are configuration
// errors.
//
// Secrets (signing secrets, the bearer token, the basic password) never appear in name(),
// errors or logs; the URL is shown without its password and query.
//
// Threading: like every sink, used from one thread. `stop` may be set from any thread.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/codec.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/http_client.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {

/// How a request body frames the records.
enum class HttpBodyFormat {
  kJsonArray,  ///< `[r1,r2,...]`, Content-Type the encoder's array_content_type() (the
               ///< default; application/json, CloudEvents' batch type for that codec)
  kJsonLines,  ///< every record followed by "\n", Content-Type application/x-ndjson
};

enum class HttpCompression {
  kNone,
  kGzip,  ///< the body is gzip-compressed (Content-Encoding: gzip)
};

/// Authentication sent with every request (an Authorization header).
struct HttpAuth {
  enum class Kind { kNone, kBearer, kBasic };
  Kind kind = Kind::kNone;
  std::string token;     ///< kBearer
  std::string username;  ///< kBasic
  std::string password;  ///< kBasic
};

/// Retries of one request. The n-th wait (n from 0) is drawn at random between half and all of
/// min(max_backoff_ms, initial_backoff_ms * 2^n); a Retry-After (seconds or HTTP date) that
/// asks for longer is honoured up to kHttpMaxRetryAfterMs.
struct HttpRetryPolicy {
  /// Attempts after the first one; -1: no count limit (max_elapsed_ms and a stop request
  /// still end the retries).
  std::int64_t max_retries = 10;
  std::uint32_t initial_backoff_ms = 500;
  std::uint32_t max_backoff_ms = 2'000;
  /// No retry starts once its wait would end later than this many ms after the request was
  /// first sent (a request that hangs until request_timeout_ms can take longer): flush() fails
  /// (transient) and the runtime owns the next attempt, under its back-off and circuit breaker. A
  /// Retry-After beyond it is not waited for in this flush(); the next flush() sends no request
  /// before that time. 0: no time limit (the retries of one flush() may then hide an outage from
  /// the runtime for a long time).
  std::uint32_t max_elapsed_ms = 5'000;
};

/// The longest wait a Retry-After header can ask for (5 minutes).
inline constexpr std::uint32_t kHttpMaxRetryAfterMs = 300'000;

/// Receives a batch the receiver refused for good (a permanent answer): the events of that
/// request and the error (status and the first bytes of the body). It must store them durably
/// before returning ok; the batch then counts as delivered. An error from it fails flush().
using HttpRejectedBatchHook =
    std::function<Status(std::span<const Event> events, const Error& error)>;

struct HttpSinkOptions {
  /// http:// or https:// address the batches are POSTed to. Redirects are not followed.
  std::string url;
  HttpBodyFormat format = HttpBodyFormat::kJsonArray;
  HttpCompression compression = HttpCompression::kNone;
  /// Extra request headers, sent as given. Headers the sink sets itself (Content-Type,
  /// Content-Encoding, Content-Length, Authorization with `auth`, webhook-*) are refused.
  std::vector<std::pair<std::string, std::string>> headers;
  HttpAuth auth;
  /// Standard Webhooks secrets ("whsec_" + base64 of the key; the prefix may be left out).
  /// Empty: requests are not signed. Several: one signature each, for key rotation.
  std::vector<std::string> signing_secrets;
  /// Longest wait for a connection (TCP and TLS handshake), in ms.
  std::uint32_t connect_timeout_ms = 10'000;
  /// Longest one request may take from start to the end of the answer, in ms.
  std::uint32_t request_timeout_ms = 30'000;
  HttpTlsOptions tls;
  HttpRetryPolicy retry;
  /// Most events in one request; 0: no limit (one request per flush).
  std::size_t batch_max_events = 0;
  /// Most body bytes (before compression) in one request; an event larger than this goes
  /// alone. 0: no limit.
  std::size_t batch_max_bytes = 0;
  /// When set and true, no retry starts any more (the request in flight still ends within its
  /// timeouts) and flush() fails with kind transient; the batch is not acknowledged.
  const std::atomic<bool>* stop = nullptr;
  /// Null: a permanent answer fails flush() (the pipeline stops, "halt"). Set: the refused
  /// batch goes to this hook ("skip" to a dead-letter destination).
  HttpRejectedBatchHook on_rejected;
};

/// Checks `options` and prepares the sink; nothing connects before the first flush().
/// `encoder`: nullptr gives the JSON envelope; records must be JSON texts. An encoder whose
/// records carry headers (Encoder::record_headers, CloudEvents' binary mode) needs
/// batch_max_events = 1: each request is then one record as it is (not framed), with
/// Content-Type the encoder's content_type() and the record's headers. Errors: kind
/// configuration, naming the setting (url, headers, signing_secret, tls.ca_file,
/// batch_max_events, ...).
Result<std::unique_ptr<Sink>> make_http_sink(HttpSinkOptions options,
                                             std::unique_ptr<Encoder> encoder = nullptr);

/// Registers `type = "http"` with the plugin registry (cppcdc/plugin.hpp). Idempotent.
void register_http_sink_plugin();

}  // namespace cppcdc
