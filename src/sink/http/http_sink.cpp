// The HTTP sink: one POST per flushed batch (or per slice of it), retried on transient
// failures, acknowledged only after a 2xx.
//
// Records are encoded at write() into one buffer, each followed by '\n', with the end offset of
// every record kept; flush() cuts them into requests (batch_max_events / batch_max_bytes),
// frames each request's body (a JSON array, or the lines as they are), and sends it until the
// receiver takes it. A request that was taken is never sent again by a later flush() of the
// same sink: a flush that fails part way continues after the requests already delivered.

#include "cppcdc/http_sink.hpp"

#include <spdlog/spdlog.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/http_client.hpp"
#include "retry.hpp"
#include "webhook.hpp"

namespace cppcdc {
namespace {

using namespace std::chrono_literals;

// The sink's own headers; the user's `headers` may not set them.
constexpr std::string_view kReservedHeaders[] = {
    "content-type", "content-encoding", "content-length",    "transfer-encoding", "host",
    "expect",       "webhook-id",       "webhook-timestamp", "webhook-signature"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_token(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool has_line_break(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// The first bytes of a response body as they may appear in one log line: control characters
// become '?', and a longer body ends in "...".
std::string printable_prefix(std::string_view body, std::size_t limit = 256) {
  std::string out;
  for (char c : body.substr(0, limit)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  if (body.size() > limit) out += "...";
  return out;
}

Status gzip(std::string_view in, std::string& out) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return fail(Error::sink(ErrorKind::kInternal, "zlib cannot start a gzip stream"));
  }
  out.resize(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const std::size_t produced = out.size() - zs.avail_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return fail(Error::sink(ErrorKind::kInternal, "gzip compression failed"));
  }
  out.resize(produced);
  return ok();
}

std::string binary_needs_one_event(const std::string& codec) {
  return "codec \"" + codec + "\"" +
         " puts each event's attributes into the request's headers, so a request can carry only "
         "one event: set batch_max_events = 1 (or, for cloudevents, codec_options.mode = "
         "\"structured\", whose batches are JSON arrays)";
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class HttpSink final : public Sink {
 public:
  HttpSink(HttpSinkOptions options, std::unique_ptr<Encoder> encoder, std::vector<std::string> keys,
           std::unique_ptr<http::Client> client)
      : options_(std::move(options)),
        encoder_(std::move(encoder)),
        keys_(std::move(keys)),
        client_(std::move(client)),
        shown_url_(http::redact_url(options_.url)),
        rng_(std::random_device{}()) {
    // One record with headers per request: the record's own type. Otherwise the framing's.
    single_ = encoder_->record_headers();
    fixed_headers_.push_back("Content-Type: " +
                             std::string(single_ ? encoder_->content_type()
                                         : options_.format == HttpBodyFormat::kJsonLines
                                             ? std::string_view("application/x-ndjson")
                                             : encoder_->array_content_type()));
    if (options_.compression == HttpCompression::kGzip) {
      fixed_headers_.push_back("Content-Encoding: gzip");
    }
    fixed_headers_.push_back("Expect:");  // no 100-continue round trip before large bodies
    for (const auto& [name, value] : options_.headers) {
      fixed_headers_.push_back(name + ": " + value);
    }
    switch (options_.auth.kind) {
      case HttpAuth::Kind::kNone:
        break;
      case HttpAuth::Kind::kBearer:
        fixed_headers_.push_back("Authorization: Bearer " + options_.auth.token);
        break;
      case HttpAuth::Kind::kBasic:
        fixed_headers_.push_back(
            "Authorization: Basic " +
            http::base64_encode(options_.auth.username + ":" + options_.auth.password));
        break;
    }
  }

  Status write(std::span<const Event> events) override {
    if (closed_) return fail(Error::invalid_state("http sink '" + shown_url_ + "' is closed"));
    const std::size_t bytes_before = records_.size();
    const std::size_t count_before = ends_.size();
    const std::size_t ids_before = identities_.size();
    for (const Event& event : events) {
      Status st = encoder_->encode(event, records_);
      if (st && single_) {
        header_scratch_.clear();
        st = encoder_->append_headers(HeaderBinding::kHttp, event, header_scratch_);
        if (st) {
          auto& lines = record_headers_.emplace_back();
          for (const auto& h : header_scratch_) lines.push_back(h.name + ": " + h.value);
        }
      }
      if (!st) {
        records_.cur() -= records_.size() - bytes_before;
        ends_.resize(count_before);
        identities_.resize(ids_before);
        identity_ends_.resize(count_before);
        if (single_) record_headers_.resize(count_before);
        return fail(
            st.error().context("encoding an event of " + event.table + " as " + encoder_->name()));
      }
      records_.ch('\n');
      ends_.push_back(records_.size());
      http::append_event_identity(event, identities_);
      identity_ends_.push_back(identities_.size());
    }
    if (options_.on_rejected) kept_.insert(kept_.end(), events.begin(), events.end());
    return ok();
  }

  Status flush() override {
    if (closed_) return fail(Error::invalid_state("http sink '" + shown_url_ + "' is closed"));
    while (next_ < ends_.size()) {
      const std::size_t end = slice_end(next_);
      auto st = deliver(next_, end);
      if (!st) {
        failed_ = true;
        return st;
      }
      next_ = end;
    }
    drop_pending();
    return ok();
  }

  /// Before the runtime writes a failed batch again, whole: the records of the failed attempt
  /// go, so they are sent once more rather than once per attempt. Requests the receiver took
  /// before the failure are sent again with the batch (the same events and so the same
  /// webhook-id when the slicing is the same, for a receiver that removes duplicates).
  Status recover() override {
    if (closed_) return fail(Error::invalid_state("http sink '" + shown_url_ + "' is closed"));
    drop_pending();
    return ok();
  }

  Status close() override {
    if (closed_) return ok();
    Status st = ok();
    if (next_ < ends_.size()) {
      if (!failed_) {
        st = flush();
      } else {
        // The last flush already used its retries: trying again here would hold up a stop.
        // These events were never acknowledged, so they are delivered again after a restart.
        const std::size_t left = ends_.size() - next_;
        st = fail(Error::sink(ErrorKind::kTransient,
                              std::to_string(left) + (left == 1 ? " event" : " events") +
                                  " written to " + name() +
                                  " were not delivered (the last flush failed); they were not "
                                  "acknowledged and come again after a restart"));
      }
    }
    closed_ = true;
    client_.reset();
    drop_pending();
    return st;
  }

  std::string name() const override { return "http:" + shown_url_; }

  std::optional<std::uint64_t> failed_attempts() const override {
    return failed_total_.load(std::memory_order_relaxed);
  }

  std::string current_problem() const override {
    std::lock_guard lock(problem_mutex_);
    if (!failing_since_) return {};
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::steady_clock::now() - *failing_since_)
                             .count();
    return "retrying one request for " + std::to_string(seconds) + " s (" +
           std::to_string(failed_attempts_) + " failed attempts); last: " + last_failure_;
  }

 private:
  // Forgets the records written since the last successful flush (kept memory is reused).
  void drop_pending() {
    records_.clear();
    ends_.clear();
    identities_.clear();
    identity_ends_.clear();
    record_headers_.clear();
    kept_.clear();
    next_ = 0;
    failed_ = false;
  }

  // What current_problem() reports: the request being retried, while it is.
  void note_failure(const Error& error) {
    failed_total_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(problem_mutex_);
    if (!failing_since_) failing_since_ = std::chrono::steady_clock::now();
    ++failed_attempts_;
    last_failure_ = error.report();
  }
  void clear_failure() {
    std::lock_guard lock(problem_mutex_);
    failing_since_.reset();
    failed_attempts_ = 0;
    last_failure_.clear();
  }
  mutable std::mutex problem_mutex_;
  std::optional<std::chrono::steady_clock::time_point> failing_since_;
  std::uint64_t failed_attempts_ = 0;
  std::string last_failure_;
  std::atomic<std::uint64_t> failed_total_{0};  // every failed request, over the sink's life
  // A Retry-After that reached beyond retry.max_elapsed_ms: no request before then.
  std::optional<std::chrono::steady_clock::time_point> not_before_;

  std::size_t start_of(std::size_t i) const { return i == 0 ? 0 : ends_[i - 1]; }

  // One past the last event of the request that starts at event `first`.
  std::size_t slice_end(std::size_t first) const {
    std::size_t end = first + 1;
    const std::size_t max_events = options_.batch_max_events;
    const std::size_t max_bytes = options_.batch_max_bytes;
    while (end < ends_.size()) {
      if (max_events != 0 && end - first >= max_events) break;
      // Body size if event `end` joined: the records with their separators, plus the '['
      // of an array.
      const std::size_t bytes = ends_[end] - start_of(first) + 1;
      if (max_bytes != 0 && bytes > max_bytes) break;
      ++end;
    }
    return end;
  }

  // The request body for events [first, end): a view of the lines, or `array_` framed.
  std::string_view body_of(std::size_t first, std::size_t end) {
    const std::string_view lines(records_.data() + start_of(first),
                                 ends_[end - 1] - start_of(first));
    if (options_.format == HttpBodyFormat::kJsonLines) return lines;
    // A record with headers goes alone and as it is (CloudEvents' binary mode).
    if (single_) return lines.substr(0, lines.size() - 1);
    array_.clear();
    array_.reserve(lines.size() + 1);
    array_ += '[';
    std::size_t at = 0;
    for (std::size_t i = first; i < end; ++i) {
      const std::size_t len = ends_[i] - start_of(i) - 1;  // without its '\n'
      if (i != first) array_ += ',';
      array_.append(lines.data() + at, len);
      at += len + 1;
    }
    array_ += ']';
    return array_;
  }

  bool stop_requested() const {
    return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed);
  }

  // Sleeps `ms`, waking early on a stop request. False when stopped.
  bool wait(std::uint64_t ms) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!stop_requested()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) return true;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, 50ms));
    }
    return false;
  }

  Status deliver(std::size_t first, std::size_t end) {
    const std::size_t count = end - first;
    const std::string_view body = body_of(first, end);
    // From the events' positions, tables and keys, not from the body: the body holds each
    // event's read time `ts`, which differs when a restart reads the batch again.
    const std::size_t ids_from = first == 0 ? 0 : identity_ends_[first - 1];
    const std::string id = http::message_id(
        std::string_view(identities_).substr(ids_from, identity_ends_[end - 1] - ids_from));
    std::string_view wire = body;
    if (options_.compression == HttpCompression::kGzip) {
      CPPCDC_TRY(gzip(body, gzipped_));
      wire = gzipped_;
    }
    const std::string what = "a batch of " + std::to_string(count) +
                             (count == 1 ? " event" : " events") + " (webhook-id " + id + ")";
    std::vector<std::string> headers = fixed_headers_;
    if (single_) {
      for (const auto& line : record_headers_[first]) headers.push_back(line);
    }
    headers.push_back("webhook-id: " + id);
    const std::size_t dynamic_at = headers.size();
    if (not_before_) {
      // The receiver asked (Retry-After) for a pause longer than the last flush waited.
      const auto now = std::chrono::steady_clock::now();
      const auto left =
          *not_before_ > now
              ? std::chrono::duration_cast<std::chrono::milliseconds>(*not_before_ - now).count()
              : 0;
      if (left > 0 && !wait(static_cast<std::uint64_t>(left))) {
        return fail(Error::sink(ErrorKind::kTransient,
                                "stopping while waiting for the Retry-After of " + shown_url_ +
                                    " (the batch is not acknowledged and comes again after a "
                                    "restart)"));
      }
      not_before_.reset();
    }
    // The round's clock starts with its first request: a receiver that hangs until the request
    // times out ends the round after one request, not after several timeouts.
    const auto round_start = std::chrono::steady_clock::now();
    for (std::int64_t attempt = 0;; ++attempt) {
      const std::int64_t ts = unix_seconds();
      headers.resize(dynamic_at);
      headers.push_back("webhook-timestamp: " + std::to_string(ts));
      if (!keys_.empty()) {
        headers.push_back("webhook-signature: " + http::signature_header(keys_, id, ts, body));
      }
      const http::Response response = client_->post(headers, wire);

      std::optional<Error> error;
      std::optional<std::uint64_t> retry_after;
      if (response.status == 0) {
        std::string message =
            "cannot deliver " + what + " to " + shown_url_ + ": " + response.transport_error;
        if (response.transport_permanent) {
          return fail(
              Error::sink(ErrorKind::kConfiguration, message + "; check url and the tls settings"));
        }
        error = Error::sink(ErrorKind::kTransient, std::move(message));
      } else {
        const http::Outcome outcome = http::classify_status(response.status);
        if (outcome == http::Outcome::kDelivered) {
          clear_failure();
          return ok();
        }
        std::string message = "the receiver at " + shown_url_ + " answered HTTP " +
                              std::to_string(response.status) + " to " + what;
        if (!response.body_prefix.empty()) {
          message += "; response body: " + printable_prefix(response.body_prefix);
        }
        if (outcome == http::Outcome::kPermanent) {
          if (response.status == 413) {
            message += " (the body was " + std::to_string(wire.size()) +
                       " bytes; a lower batch_max_bytes or batch_max_events keeps requests "
                       "smaller)";
          } else if (response.status >= 300 && response.status < 400) {
            message += " (redirects are not followed: set url to the final address)";
          }
          Error refused =
              Error::sink(ErrorKind::kTerminal, message + "; a refused batch is not retried");
          if (options_.on_rejected) return skip(first, end, refused);
          return fail(std::move(refused));
        }
        if (response.retry_after) {
          retry_after =
              http::parse_retry_after(*response.retry_after, std::chrono::system_clock::now());
        }
        error = Error::sink(ErrorKind::kTransient, std::move(message));
      }

      note_failure(*error);
      const auto& policy = options_.retry;
      const auto now = std::chrono::steady_clock::now();
      if (policy.max_retries >= 0 && attempt >= policy.max_retries) {
        clear_failure();
        return fail(error->context("gave up after " + std::to_string(attempt) +
                                   (attempt == 1 ? " retry" : " retries") +
                                   " (retry.max_retries)"));
      }
      const std::uint64_t delay =
          http::backoff_ms(static_cast<std::uint32_t>(std::min<std::int64_t>(attempt, 64)),
                           policy.initial_backoff_ms, policy.max_backoff_ms, retry_after,
                           kHttpMaxRetryAfterMs, rng_);
      if (policy.max_elapsed_ms > 0) {
        // A retry round is short: past it, the runtime owns the next attempt (its back-off, the
        // circuit breaker), so an outage of the receiver is seen there like one of the source.
        const auto elapsed =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - round_start).count();
        if (static_cast<std::uint64_t>(elapsed) + delay > policy.max_elapsed_ms) {
          clear_failure();
          std::string note = "gave up after " + std::to_string(attempt) +
                             (attempt == 1 ? " retry" : " retries") + " in " +
                             std::to_string(elapsed) + " ms (retry.max_elapsed_ms " +
                             std::to_string(policy.max_elapsed_ms) + ")";
          if (retry_after && delay > policy.max_elapsed_ms) {
            // The receiver asked for a longer pause: the next flush() keeps to it.
            not_before_ = now + std::chrono::milliseconds(delay);
            note += "; the receiver asked to wait " + std::to_string(delay) +
                    " ms (Retry-After), which the next attempt keeps to";
          }
          return fail(error->context(note));
        }
      }
      const auto stopping = [&] {
        clear_failure();
        return fail(
            error->context("stopping: no further retry (the batch is not acknowledged "
                           "and comes again after a restart)"));
      };
      if (stop_requested()) return stopping();
      spdlog::warn("http sink: {}; retry {} in {} ms", error->report(), attempt + 1, delay);
      if (!wait(delay)) return stopping();
    }
  }

  Status skip(std::size_t first, std::size_t end, const Error& refused) {
    const std::span<const Event> events(kept_.data() + first, end - first);
    if (auto st = options_.on_rejected(events, refused); !st) {
      return fail(st.error().context("handing a refused batch on (" + refused.message() + ")"));
    }
    spdlog::warn("http sink: {}; the batch was handed to the dead-letter destination",
                 refused.report());
    return ok();
  }

  HttpSinkOptions options_;
  std::unique_ptr<Encoder> encoder_;
  // The encoder's records carry headers: one event per request (batch_max_events = 1), each
  // request with its event's headers ("Name: value" lines, parallel to ends_).
  bool single_ = false;
  std::vector<std::vector<std::string>> record_headers_;
  std::vector<RecordHeader> header_scratch_;
  std::vector<std::string> keys_;  // decoded signing keys
  std::unique_ptr<http::Client> client_;
  std::string shown_url_;
  std::vector<std::string> fixed_headers_;
  std::mt19937_64 rng_;

  ByteBuffer records_;             // every record followed by '\n'
  std::vector<std::size_t> ends_;  // end offset (past the '\n') of each record
  // What identifies each record's event across restarts (http::append_event_identity), one
  // line each, and the end offset of each line: a request's webhook-id hashes its lines.
  std::string identities_;
  std::vector<std::size_t> identity_ends_;
  std::vector<Event> kept_;        // the events, only when on_rejected is set
  std::size_t next_ = 0;           // first event not delivered yet
  bool failed_ = false;            // the last flush() failed
  bool closed_ = false;
  std::string array_;    // a JSON array body
  std::string gzipped_;  // a compressed body
};

Error bad(std::string_view setting, std::string message) {
  return Error::sink(ErrorKind::kConfiguration, std::move(message))
      .for_setting(SettingOwner::kSink, std::string(setting));
}

Status check_file(const std::filesystem::path& path, std::string_view setting) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return fail(bad(setting, "'" + path.string() + "' is not a readable file" +
                                 (ec ? ": " + ec.message() : std::string())));
  }
  return ok();
}

Status check_options(const HttpSinkOptions& o) {
  const std::string scheme = lower(o.url.substr(0, o.url.find("://")));
  const auto after = o.url.find("://");
  if (after == std::string::npos || (scheme != "http" && scheme != "https")) {
    return fail(bad("url", "expected an http:// or https:// address, found \"" +
                               http::redact_url(o.url) + "\""));
  }
  const std::string rest = o.url.substr(after + 3);
  if (rest.empty() || rest[0] == '/' || rest[0] == '?' || rest[0] == '#') {
    return fail(bad("url", "the address has no host: \"" + http::redact_url(o.url) + "\""));
  }
  for (char c : o.url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return fail(bad("url", "the address contains a space or a control character"));
    }
  }
  for (const auto& [name, value] : o.headers) {
    if (!is_token(name)) {
      return fail(bad("headers", "\"" + name + "\" is not a header name"));
    }
    const std::string l = lower(name);
    for (const auto reserved : kReservedHeaders) {
      if (l == reserved) {
        return fail(bad("headers", "\"" + name + "\" is set by the sink itself"));
      }
    }
    if (l == "authorization" && o.auth.kind != HttpAuth::Kind::kNone) {
      return fail(bad("headers", "\"" + name + "\" and auth cannot both be set"));
    }
    if (has_line_break(value)) {
      return fail(bad("headers", "the value of \"" + name + "\" contains a line break"));
    }
  }
  switch (o.auth.kind) {
    case HttpAuth::Kind::kNone:
      break;
    case HttpAuth::Kind::kBearer:
      if (o.auth.token.empty()) return fail(bad("auth.token", "the bearer token is empty"));
      if (has_line_break(o.auth.token)) {
        return fail(bad("auth.token", "the bearer token contains a line break"));
      }
      break;
    case HttpAuth::Kind::kBasic:
      if (o.auth.username.empty()) return fail(bad("auth.username", "the user name is empty"));
      if (o.auth.username.find(':') != std::string::npos) {
        return fail(bad("auth.username", "a basic-auth user name cannot contain ':'"));
      }
      break;
  }
  if (o.connect_timeout_ms == 0) {
    return fail(bad("connect_timeout_ms", "expected at least 1 ms, found 0"));
  }
  if (o.request_timeout_ms == 0) {
    return fail(bad("request_timeout_ms", "expected at least 1 ms, found 0"));
  }
  if (o.retry.max_retries < -1) {
    return fail(bad("retry.max_retries", "expected -1 (no end) or a count of at least 0"));
  }
  if (o.retry.max_backoff_ms < o.retry.initial_backoff_ms) {
    return fail(bad("retry.max_backoff_ms", "is below retry.initial_backoff_ms (" +
                                                std::to_string(o.retry.initial_backoff_ms) +
                                                " ms)"));
  }
  const bool https = scheme == "https";
  const auto& tls = o.tls;
  for (const auto& [path, setting] :
       {std::pair{&tls.ca_file, "tls.ca_file"}, std::pair{&tls.client_cert, "tls.client_cert"},
        std::pair{&tls.client_key, "tls.client_key"}}) {
    if (path->empty()) continue;
    if (!https) {
      return fail(bad(setting, "is set but url is http://: TLS settings need an https:// url"));
    }
    CPPCDC_TRY(check_file(*path, setting));
  }
  if (tls.client_cert.empty() != tls.client_key.empty()) {
    return fail(bad(tls.client_cert.empty() ? "tls.client_cert" : "tls.client_key",
                    "tls.client_cert and tls.client_key go together: set both or neither"));
  }
  return ok();
}

}  // namespace

Result<std::unique_ptr<Sink>> make_http_sink(HttpSinkOptions options,
                                             std::unique_ptr<Encoder> encoder) {
  if (!encoder) encoder = make_json_encoder();
  CPPCDC_TRY(check_options(options));
  if (encoder->record_headers() && options.batch_max_events != 1) {
    return fail(bad("batch_max_events", binary_needs_one_event(encoder->name())));
  }
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < options.signing_secrets.size(); ++i) {
    auto key = http::decode_signing_secret(options.signing_secrets[i]);
    if (!key) {
      const std::string which =
          options.signing_secrets.size() == 1 ? "" : "secret " + std::to_string(i + 1) + ": ";
      return fail(bad("signing_secret", which + key.error().message()));
    }
    keys.push_back(std::move(*key));
  }
  http::ClientOptions client_options;
  client_options.url = options.url;
  client_options.connect_timeout_ms = options.connect_timeout_ms;
  client_options.request_timeout_ms = options.request_timeout_ms;
  client_options.tls = options.tls;
  client_options.max_body = http::kBodyPrefix;
  auto client = http::Client::create(client_options);
  if (!client) return fail(client.error().for_setting(SettingOwner::kSink, "url"));
  return std::unique_ptr<Sink>(
      new HttpSink(std::move(options), std::move(encoder), std::move(keys), std::move(*client)));
}

}  // namespace cppcdc
