// The Kafka sink (include/cppcdc/kafka.hpp): an idempotent librdkafka producer; a batch is
// acknowledged only after every one of its records got a successful delivery report. In
// delivery_mode "transactional" the producer is transactional: each batch is one Kafka
// transaction, committed (with the checkpoint record, under effectively_once) only after
// every record of it was delivered into the transaction.
//
// How records are accounted: write() produces each record (copied into librdkafka's queue) and
// counts it as outstanding; the delivery report callback, which librdkafka runs on this
// thread inside rd_kafka_poll()/rd_kafka_flush(), counts it down and keeps the first failure.
// flush() returns ok only when nothing is outstanding and nothing failed. Any failure is kept:
// later calls return it, because records written after a lost one may have been delivered and
// acknowledging past the loss would skip it.

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/fault.hpp"
#include "core/json_write.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/kafka.hpp"
#include "sink/kafka/kafka_conf.hpp"
#include "sink/kafka/preflight.hpp"
#include "sink/kafka/record.hpp"
#include "sink/kafka/testing.hpp"
#include "sink/kafka/topic_template.hpp"

namespace cppcdc {
namespace {

using Clock = std::chrono::steady_clock;
using kafka_sink::ConfPtr;

/// Slack flush() allows beyond delivery_timeout_ms before it stops waiting on librdkafka
/// itself (which fails every record at delivery_timeout_ms).
constexpr std::chrono::milliseconds kFlushSlack{10'000};
/// Delivery reports are served every this many produced records during write().
constexpr std::size_t kPollEvery = 1024;
/// The longest a single wait on librdkafka lasts before the sink looks at the stop request
/// again (config.stop); a stop ends every wait within about this long.
constexpr int kWaitSliceMs = 500;
// How long a stop request lets a wait go on before cutting it short (stopping()).
constexpr std::chrono::milliseconds kStopGrace{3'000};
constexpr std::chrono::milliseconds kStopGraceMax{10'000};
/// The longest the reconciliation marker's producer is waited for (flush(), close()).
constexpr std::chrono::milliseconds kMarkerFlush{5'000};
/// A wait shorter than this is business as usual, not worth naming in current_problem().
constexpr std::chrono::seconds kWaitWorthReporting{2};

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// At most `max` bytes of `s`, marked when cut.
std::string shortened(std::string_view s, std::size_t max = 120) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "...";
}

// librdkafka's syslog level 3 (LOG_ERR) is a warning here, on purpose: librdkafka logs at that
// level what it recovers from by itself, such as a failed broker connection and "1/1 brokers
// are down" (facility ERROR) while a broker restarts. cppcdc's error lines are the ones an
// operator must act on (the run stops, "cppcdc stopped: ..."); an outage the sink rides out,
// retrying under the retry policy, is a warning, and the health endpoint reports the sink
// degraded meanwhile. If the outage lasts past the retries, the stop line is the error.
int level_for(int syslog_level) {
  if (syslog_level <= 2) return SPDLOG_LEVEL_ERROR;
  if (syslog_level <= 4) return SPDLOG_LEVEL_WARN;  // 3: a broker connection failed
  if (syslog_level <= 6) return SPDLOG_LEVEL_INFO;
  return SPDLOG_LEVEL_DEBUG;
}

/// How often a producer's connection failures are logged as warnings while a broker stays
/// unreachable; the repeats in between go to the debug level.
constexpr std::chrono::seconds kConnectionWarningEvery{60};

/// Whether a librdkafka log line reports a broker connection failing (it repeats these for as
/// long as the broker is down, one per reconnect attempt and broker thread).
bool is_connection_failure(std::string_view facility, std::string_view message) {
  if (facility != "FAIL" && facility != "ERROR") return false;
  return message.find("Connect to ") != std::string_view::npos ||
         message.find("Disconnected") != std::string_view::npos ||
         message.find("brokers are down") != std::string_view::npos;
}

/// What a sink's log lines start with: "kafka sink" and, for an entry of [[sinks]], its name.
std::string sink_label(const std::string& name) {
  if (name.empty() || name == "default") return "kafka sink";
  return "kafka sink \"" + name + "\"";
}

/// The label a producer's opaque carries (set by KafkaSink::start; see there).
const std::string& label_of(const rd_kafka_t* rk);
// Keeps librdkafka's last connection failure line ("Connect to ipv4#... failed: Connection
// refused") on the sink of `rk`, for the error of a start that no broker answered.
void note_connection_failure(const rd_kafka_t* rk, std::string_view message);

// librdkafka's own log lines, from any of its threads (spdlog is thread-safe). A broker that
// stays down makes librdkafka log a connection failure on every reconnect attempt: the first
// of them per producer and minute is a warning, the others are debug lines (the health
// verdict and the delivery errors carry the news meanwhile).
// The level of a librdkafka line, lowered where the sink reports the matter itself.
spdlog::level::level_enum level_of_line(int level, std::string_view facility,
                                        std::string_view message) {
  auto spd_level = static_cast<spdlog::level::level_enum>(level_for(level));
  if (spd_level < spdlog::level::warn) return spd_level;
  // A producer id request that librdkafka retries on its own is progress, not a problem: a
  // broker that just started is still loading its coordinator, or (CONCURRENT_TRANSACTIONS,
  // "another concurrent operation") the coordinator is still aborting the transaction an
  // earlier producer with the same transactional.id left open, which init_transactions waits
  // for; the sink says so itself once the producer is ready (is_previous_transaction_line).
  if (facility == "GETPID" && message.ends_with(": retrying")) return spdlog::level::debug;
  // A fatal (transaction) error reaches the error callback too, which logs it once, and the
  // sink then says what it does about it (a new producer, or a stop with the remedy).
  if (facility == "FATAL" || facility == "TXNERR") return spdlog::level::info;
  return spd_level;
}

/// Whether a librdkafka line says that init_transactions waits for the coordinator to abort a
/// transaction an earlier producer with the same transactional.id left open.
bool is_previous_transaction_line(std::string_view facility, std::string_view message) {
  return facility == "GETPID" && message.find("concurrent operation") != std::string_view::npos;
}
// Notes that on the sink of `rk` (see KafkaSink::start).
void note_previous_transaction(const rd_kafka_t* rk);

void log_callback(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  auto spd_level = level_of_line(level, facility, message);
  if (is_connection_failure(facility, message)) note_connection_failure(rk, message);
  if (is_previous_transaction_line(facility, message)) note_previous_transaction(rk);
  if (spd_level >= spdlog::level::warn && is_connection_failure(facility, message)) {
    static std::mutex mutex;
    static std::unordered_map<std::string, std::chrono::steady_clock::time_point> last_warned;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex);
    auto& at = last_warned[rk != nullptr ? rd_kafka_name(rk) : ""];
    if (at.time_since_epoch().count() != 0 && now - at < kConnectionWarningEvery) {
      spd_level = spdlog::level::debug;
    } else {
      at = now;
    }
  }
  spdlog::log(spd_level, "{}: librdkafka {}: {}", label_of(rk), facility, message);
}

// The reconciliation marker's producer (diagnostic only) fails its connections together with
// the sink's own producer: its connection failures are debug lines.
void marker_log_callback(const rd_kafka_t* rk, int level, const char* facility,
                         const char* message) {
  auto spd_level = level_of_line(level, facility, message);
  if (is_connection_failure(facility, message)) spd_level = spdlog::level::debug;
  spdlog::log(spd_level, "{}: marker producer: librdkafka {}: {}", label_of(rk), facility, message);
}

class KafkaSink final : public TransactionalSink {
 public:
  KafkaSink(KafkaSinkConfig config, kafka_sink::TopicTemplate topic,
            std::unique_ptr<Encoder> encoder, std::optional<InSinkCheckpoint> checkpoint)
      : config_(std::move(config)),
        topic_(std::move(topic)),
        encoder_(std::move(encoder)),
        checkpoint_(std::move(checkpoint)),
        transactional_(config_.delivery_mode == KafkaDeliveryMode::kTransactional),
        label_(sink_label(config_.name)) {}

  /// "kafka sink" or `kafka sink "<name>"` (immutable: read by librdkafka's threads).
  const std::string& label() const { return label_; }

  /// From librdkafka's log callback (any thread).
  void note_previous_transaction() {
    previous_transaction_open_.store(true, std::memory_order_relaxed);
  }

  /// From librdkafka's log callback (any thread).
  void note_connection_failure(std::string_view message) {
    // Without librdkafka's thread tag ("[thrd:host:port/bootstrap]: ").
    if (message.starts_with("[thrd:")) {
      if (const auto end = message.find("]: "); end != std::string_view::npos) {
        message.remove_prefix(end + 3);
      }
    }
    std::lock_guard lock(mutex_);
    last_connection_failure_.assign(message);
  }

  ~KafkaSink() override { destroy(/*purge=*/true); }
  KafkaSink(const KafkaSink&) = delete;
  KafkaSink& operator=(const KafkaSink&) = delete;

  Status start(ConfPtr conf) {
    rd_kafka_conf_set_opaque(conf.get(), this);
    rd_kafka_conf_set_dr_msg_cb(conf.get(), &KafkaSink::on_delivery);
    rd_kafka_conf_set_error_cb(conf.get(), &KafkaSink::on_error);
    rd_kafka_conf_set_log_cb(conf.get(), &log_callback);
    char err[512];
    // rd_kafka_new takes the configuration over only on success.
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), err, sizeof err);
    if (rk_ == nullptr) {
      return fail(Error::sink(ErrorKind::kConfiguration,
                              std::string("librdkafka cannot create the producer: ") + err));
    }
    (void)conf.release();
    CPPCDC_TRY(await_first_answer());
    if (!transactional_) return ok();
    // Fences a producer of an earlier run with the same transactional.id and aborts the
    // transaction it left open, so that its records never become visible.
    previous_transaction_open_.store(false, std::memory_order_relaxed);
    if (auto st = call_transactional(
            "initializing the transactional producer",
            [this](int timeout) { return rd_kafka_init_transactions(rk_, timeout); });
        !st) {
      return st;
    }
    if (previous_transaction_open_.load(std::memory_order_relaxed)) {
      // librdkafka's GETPID lines about it ("another concurrent operation") went to debug.
      spdlog::info(
          "{}: an earlier producer of transactional_id {} had left a transaction open (a run "
          "stopped or killed in the middle of a batch, or the producer this one replaces); "
          "init_transactions waited until the broker aborted it, so none of its records become "
          "visible",
          label_, in_quotes(config_.transactional_id));
    }
    if (checkpoint_) {
      checkpoint_rkt_ = rd_kafka_topic_new(rk_, checkpoint_->location.c_str(), nullptr);
      if (checkpoint_rkt_ == nullptr) {
        return fail(
            Error::sink(ErrorKind::kConfiguration, "librdkafka refuses the checkpoint topic " +
                                                       in_quotes(checkpoint_->location) + ": " +
                                                       rd_kafka_err2str(rd_kafka_last_error())));
      }
    }
    if (checkpoint_) CPPCDC_TRY(start_marker_producer());
    spdlog::info("{}: transactional producer {} ready on {}", label_,
                 in_quotes(config_.transactional_id), in_quotes(config_.bootstrap_servers));
    return ok();
  }

  /// Waits (KafkaSinkConfig::startup_timeout_ms) until a broker of bootstrap_servers answers a
  /// metadata request, so that an address no broker answers is reported at open, before the
  /// source reads anything, instead of at the first batch's delivery timeout.
  Status await_first_answer() {
    if (config_.startup_timeout_ms <= 0) return ok();
    const auto deadline = Clock::now() + std::chrono::milliseconds(config_.startup_timeout_ms);
    const WaitNote note(*this, "a first answer from the brokers");
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      const rd_kafka_metadata_t* md = nullptr;
      const rd_kafka_resp_err_t err = rd_kafka_metadata(
          rk_, 0, nullptr, &md, static_cast<int>(std::clamp<std::int64_t>(left, 1, kWaitSliceMs)));
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_metadata_destroy(md);
        return ok();
      }
      if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
        return fail(not_a_broker("the first metadata request", rd_kafka_err2str(err)));
      }
      if (auto fatal = fatal_error(); fatal) return fail(std::move(*fatal));
      // Nothing is in flight yet, so no grace (stopping()) for acknowledgements: a broker
      // address that does not answer (dropped SYNs: librdkafka reports nothing until its
      // connection set-up times out) must not hold a stop up.
      if (config_.stop != nullptr && config_.stop->load(std::memory_order_relaxed)) {
        return fail(stopped("waiting for a first answer from the brokers"));
      }
      if (err != RD_KAFKA_RESP_ERR__TIMED_OUT) {
        // An answer that came at once (a refused connection): wait a moment before asking
        // again, instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      if (Clock::now() >= deadline) {
        std::string last;
        {
          std::lock_guard lock(mutex_);
          last = !last_connection_failure_.empty() ? last_connection_failure_ : last_broker_error_;
        }
        if (last.empty()) last = rd_kafka_err2str(err);
        return fail(
            Error::sink(ErrorKind::kTransient,
                        "no broker of bootstrap_servers " + in_quotes(config_.bootstrap_servers) +
                            " answered within " + std::to_string(config_.startup_timeout_ms) +
                            " ms (last error from librdkafka: " + last +
                            "); nothing was read from the source. Check that bootstrap_servers "
                            "names the brokers' listener (host and port) and that they run "
                            "(`cppcdc preflight --config <file>` checks them); "
                            "startup_timeout_ms sets how long the start waits")
                .for_setting(SettingOwner::kSink, "bootstrap_servers"));
      }
    }
  }

  // ---- transactions (delivery_mode = "transactional") --------------------------------------

  Status begin() override {
    CPPCDC_TRY(usable());
    if (!transactional_) {
      return fail(Error::invalid_state("the Kafka sink " + in_quotes(config_.bootstrap_servers) +
                                       " is not transactional (delivery_mode = \"idempotent\")"));
    }
    if (in_txn_) return fail(Error::invalid_state("a Kafka transaction is already open"));
    if (abort_pending_) CPPCDC_TRY(abort());
    if (rd_kafka_error_t* error = rd_kafka_begin_transaction(rk_); error != nullptr) {
      return poison(transaction_error("beginning a transaction", error));
    }
    in_txn_ = true;
    txn_began_ = Clock::now();
    return ok();
  }

  Status commit(const std::optional<CheckpointRecord>& record) override {
    CPPCDC_TRY(usable());
    if (!in_txn_) return fail(Error::invalid_state("no Kafka transaction is open to commit"));
    if (record) {
      if (!checkpoint_rkt_) {
        return fail(Error::internal(
            "the Kafka sink was asked to commit a checkpoint record but was opened without a "
            "checkpoint topic"));
      }
      const std::string value = FileCheckpoint::encode(*record);
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk_, RD_KAFKA_V_RKT(checkpoint_rkt_), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(checkpoint_->key.data(), checkpoint_->key.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          // Which transactional_id commits this key: the backend's load() refuses a start
          // while another live key carries the same one (two pipelines sharing it).
          RD_KAFKA_V_HEADER(kCheckpointTransactionalIdHeader, config_.transactional_id.data(),
                            static_cast<ssize_t>(config_.transactional_id.size())),
          RD_KAFKA_V_END);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return poison(record_error(err, checkpoint_->location, "the checkpoint", record->offset,
                                   value.size(), ""));
      }
      ++outstanding_;
    }
    CPPCDC_FAULT_POINT("kafka_sink.before_commit");
    auto committed = call_transactional(
        "committing the transaction",
        [this](int timeout) { return rd_kafka_commit_transaction(rk_, timeout); },
        /*is_commit=*/true);
    if (!committed) return committed;
    if (troubled_.load(std::memory_order_relaxed)) clear_trouble();
    in_txn_ = false;
    txn_began_.reset();
    outstanding_ = 0;
    CPPCDC_FAULT_POINT("kafka_sink.after_commit");
    if (marker_rk_ != nullptr && marker_set_) clear_marker();
    return ok();
  }

  Status abort() override {
    if (!transactional_ || rk_ == nullptr || (!in_txn_ && !abort_pending_)) return ok();
    in_txn_ = false;
    // When stopping, one short try, and none that waits while the brokers are unreachable: a
    // transaction left open is aborted by the next start's init_transactions (or the broker's
    // transaction.timeout.ms).
    const int wait = !stopping() ? timeout_ms() : unreachable() ? 0 : 2 * kWaitSliceMs;
    rd_kafka_error_t* error = rd_kafka_abort_transaction(rk_, wait);
    // The aborted records' delivery reports (purged) are no failure of anything delivered.
    rd_kafka_poll(rk_, 0);
    outstanding_ = 0;
    produced_since_poll_ = 0;
    delivery_error_.reset();
    if (error != nullptr) {
      // An abort that timed out (the coordinator unreachable) is resumed by calling it again:
      // the next begin() or recover() does, before anything else.
      abort_pending_ = rd_kafka_error_is_retriable(error) && !rd_kafka_error_is_fatal(error);
      Error e = transaction_error("aborting the transaction", error);
      if (abort_pending_) return fail(std::move(e));
      return poison(std::move(e));
    }
    abort_pending_ = false;
    txn_began_.reset();
    // Nothing of the failed attempt can become visible: the sink may go on.
    if (!fatal_) failed_.reset();
    return ok();
  }

  Status write(std::span<const Event> events) override {
    if (auto st = usable(); !st) return st;
    if (transactional_ && !in_txn_) {
      return fail(
          Error::invalid_state("write() outside a transaction of the transactional Kafka "
                               "sink (call begin() first)"));
    }
    if (marker_rk_ != nullptr && !marker_set_ && !events.empty()) {
      write_marker(events.front(), events.size());
    }
    for (const Event& event : events) {
      auto rkt = topic_for(event);
      if (!rkt) return poison(std::move(rkt).error());
      Topic& topic = **rkt;
      auto keyed = encode_key(topic, event, key_);
      if (!keyed) return poison(std::move(keyed).error());
      if (*keyed && kafka_sink::key_moved(event)) {
        // The update moved its row to another key. Under the old key the row is gone: send
        // a delete there (and its tombstone), or a compacted topic keeps the old row for ever.
        const Event deleted = kafka_sink::deletion_of_previous_key(event);
        auto previous = encode_key(topic, deleted, previous_key_);
        if (!previous) return poison(std::move(previous).error());
        if (*previous && previous_key_.view() != key_.view()) {
          const bool creates = encoder_->key_change_creates();
          // Debezium's format: each of the two records names the other key in a header.
          if (creates) {
            key_change_header_ =
                RecordHeader{kafka_sink::kHeaderDebeziumNewKey, std::string(key_.view())};
          }
          Status sent = send(topic, deleted, &previous_key_);
          key_change_header_.reset();
          if (!sent) return sent;
          if (creates) {
            // The codec calls the row under its new key a creation (Debezium: `c`).
            const Event created = kafka_sink::creation_under_new_key(event);
            key_change_header_ =
                RecordHeader{kafka_sink::kHeaderDebeziumOldKey, std::string(previous_key_.view())};
            sent = send(topic, created, &key_);
            key_change_header_.reset();
            if (!sent) return sent;
            continue;
          }
        }
      }
      if (auto st = send(topic, event, *keyed ? &key_ : nullptr); !st) return st;
    }
    rd_kafka_poll(rk_, 0);
    if (delivery_error_) return poison(*delivery_error_);
    return ok();
  }

  Status flush() override {
    if (auto st = usable(); !st) return st;
    // The reconciliation marker goes out before the batch can commit (diagnostic only: a
    // marker that did not make it is no loss, so its failure fails nothing).
    if (marker_rk_ != nullptr && marker_set_) flush_marker();
    const auto timeout = std::chrono::milliseconds(config_.delivery_timeout_ms) + kFlushSlack;
    const auto deadline = Clock::now() + timeout;
    std::optional<WaitNote> note;
    if (outstanding_ > 0) {
      note.emplace(*this, "the delivery reports of " + std::to_string(outstanding_) + " records");
    }
    const auto flush_started = Clock::now();
    bool told = false;  // the slow wait was logged
    while (outstanding_ > 0 && !delivery_error_) {
      if (stopping()) {
        return poison(stopped("waiting for the delivery reports of " +
                              std::to_string(outstanding_) + " records"));
      }
      // Serves delivery reports; also sends what linger.ms would still hold back.
      rd_kafka_flush(rk_, 200);
      if (!told && outstanding_ > 0 && Clock::now() - flush_started >= slow_wait()) {
        // Long before the batch fails (delivery_timeout_ms), say that it is stuck, and why.
        told = true;
        spdlog::warn(
            "{}: {} records to {} have no delivery report after {} ms{}; waiting up to "
            "delivery_timeout_ms ({} ms) before the batch fails and is delivered again",
            label_, outstanding_, in_quotes(config_.bootstrap_servers),
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - flush_started)
                .count(),
            last_broker_error_suffix(), config_.delivery_timeout_ms);
      }
      if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
      if (outstanding_ > 0 && Clock::now() >= deadline) {
        return poison(Error::sink(
            ErrorKind::kTransient,
            std::to_string(outstanding_) + " records to " + in_quotes(config_.bootstrap_servers) +
                " got no delivery report within " + std::to_string(timeout.count()) + " ms" +
                last_broker_error_suffix()));
      }
    }
    if (delivery_error_) {
      // A record refused because the producer hit a fatal error: the fatal error says why.
      if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
      return poison(*delivery_error_);
    }
    CPPCDC_FAULT_POINT("kafka_sink.after_flush");
    return ok();
  }

  Status close() override {
    if (closed_) return ok();
    // While the brokers are unreachable a stop waits for nothing: no record, abort or marker
    // can be acknowledged now, and the checkpoint did not pass what is still queued.
    if (stopping() && (unreachable() || in_txn_ || abort_pending_ || outstanding_ > 0 || failed_)) {
      // The program stops with a batch that was not acknowledged: waiting for it would hold
      // up the stop, and it is delivered again after the restart anyway.
      spdlog::debug(
          "{}: stopping before {} confirmed the batch in flight ({} records without a "
          "delivery report{}); it was not acknowledged and is delivered again after "
          "a restart",
          label_, in_quotes(config_.bootstrap_servers), outstanding_,
          in_txn_ ? ", its transaction aborted" : "");
      if (in_txn_ || abort_pending_) (void)abort();
      destroy(/*purge=*/true);
      closed_ = true;
      return ok();
    }
    Status st = ok();
    if (in_txn_) {
      // An open transaction is dropped: its batch was never acknowledged.
      (void)abort();
      if (failed_) st = fail(*failed_);
    } else if (failed_) {
      st = fail(*failed_);
    } else {
      st = flush();
    }
    destroy(/*purge=*/!st);
    closed_ = true;
    return st;
  }

  std::string name() const override { return "kafka:" + config_.bootstrap_servers; }

  /// Tests only (sink/kafka/testing.hpp): makes librdkafka raise the fatal error `err` on this
  /// producer, as it does on its own after some broker failures.
  bool raise_fatal_error(rd_kafka_resp_err_t err) {
    return rk_ != nullptr &&
           rd_kafka_test_fatal_error(rk_, err, "raised by a test") == RD_KAFKA_RESP_ERR_NO_ERROR;
  }

  /// Before the runtime delivers a failed batch again: what the failed attempt still has
  /// queued is dropped, what is in flight is waited for (its outcome no longer matters: the
  /// whole batch is written again), and the sink takes writes again. A fatal producer error
  /// cannot be recovered from: it is returned (terminal).
  Status recover() override {
    if (closed_) {
      return fail(Error::invalid_state("the Kafka sink " + in_quotes(config_.bootstrap_servers) +
                                       " is closed"));
    }
    if (transactional_) {
      if (needs_restart_) return restart_producer();
      Status aborted = (in_txn_ || abort_pending_) ? abort() : ok();
      if (auto fatal = fatal_error(); fatal && !failed_) failed_ = std::move(*fatal);
      if (fatal_) {
        // librdkafka 2.0.2 can turn an abort after a broker outage into a fatal
        // INVALID_TXN_STATE (its issues #3297, #4849). No batch of this producer is committed
        // but unacknowledged, so a new producer may take over: its init_transactions aborts
        // what the old one left open. Not after a fence (another instance owns the id now),
        // an authorization failure, or a commit whose outcome is unknown.
        if (!restartable()) {
          return fail(failed_
                          ? *failed_
                          : Error::sink(ErrorKind::kTerminal, "the producer hit a fatal error"));
        }
        needs_restart_ = true;
        return restart_producer();
      }
      if (!aborted) return aborted;
    } else {
      if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
      if (fatal_ && failed_) return fail(*failed_);
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE);
      const auto deadline =
          Clock::now() + std::chrono::milliseconds(config_.delivery_timeout_ms) + kFlushSlack;
      while (outstanding_ > 0 && Clock::now() < deadline) {
        if (stopping()) return poison(stopped("recovering from a failed delivery"));
        rd_kafka_flush(rk_, 200);
        if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
      }
    }
    outstanding_ = 0;
    produced_since_poll_ = 0;
    delivery_error_.reset();
    failed_.reset();
    // With create_topics, every topic is looked up (and created if gone) again: a record that
    // timed out may have been waiting for a topic deleted meanwhile.
    if (forget_topics_ || config_.create_topics) {
      for (auto& [name, topic] : topics_) rd_kafka_topic_destroy(topic.rkt);
      topics_.clear();
      last_ = nullptr;
      forget_topics_ = false;
    }
    return ok();
  }

 private:
  /// "<source>/<table>\n<topic>" pairs whose "goes to topic" line was logged (at info once).
  std::set<std::string> announced_;
  struct Topic {
    rd_kafka_topic_t* rkt = nullptr;
    std::string name;
    std::string first_table;  // table_of() the first event sent here
    std::string raw_name;     // its name before characters Kafka refuses became '_'
  };

  static std::string table_of(const Event& e) {
    return e.schema ? *e.schema + "." + e.table : e.table;
  }

  /// Whether librdkafka reports the brokers unreachable (no record delivered since).
  bool unreachable() const { return troubled_.load(std::memory_order_relaxed); }

  /// Whether a stop request cuts the current wait short. At once while librdkafka reports the
  /// brokers unreachable; otherwise a cluster that answers gets time to acknowledge the batch
  /// in flight (so a routine restart delivers nothing twice): kStopGrace after the request,
  /// longer as long as delivery reports keep arriving (none for kStopGrace ends it), and
  /// kStopGraceMax at most.
  bool stopping() const {
    if (config_.stop == nullptr || !config_.stop->load(std::memory_order_relaxed)) return false;
    if (unreachable()) return true;
    const std::int64_t now = steady_ms();
    std::int64_t seen = stop_seen_ms_.load(std::memory_order_relaxed);
    if (seen == 0) {
      stop_seen_ms_.compare_exchange_strong(seen, now, std::memory_order_relaxed);
      seen = stop_seen_ms_.load(std::memory_order_relaxed);
    }
    if (now - seen >= kStopGraceMax.count()) return true;
    const std::int64_t progress = std::max(seen, last_report_ms_.load(std::memory_order_relaxed));
    return now - progress >= kStopGrace.count();
  }

  /// How long a wait on the cluster goes on before it is logged as slow: a quarter of
  /// delivery_timeout_ms, at most 10 s.
  std::chrono::milliseconds slow_wait() const {
    return std::min<std::chrono::milliseconds>(
        std::chrono::seconds(10), std::chrono::milliseconds(config_.delivery_timeout_ms / 4));
  }

  static std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  /// The error of a wait the stop request ended (transient: nothing was acknowledged).
  Error stopped(const std::string& during) const {
    return Error::sink(ErrorKind::kTransient,
                       "stopping: " + during + " on " + in_quotes(config_.bootstrap_servers) +
                           " was cut short by the stop request (nothing of the batch in flight "
                           "is acknowledged)");
  }

  /// Names what a call of the sink waits for while it lives (current_problem()).
  class WaitNote {
   public:
    WaitNote(const KafkaSink& sink, std::string what) : sink_(sink) {
      std::lock_guard lock(sink_.mutex_);
      sink_.waiting_.emplace(std::move(what), Clock::now());
    }
    ~WaitNote() {
      std::lock_guard lock(sink_.mutex_);
      sink_.waiting_.reset();
    }
    WaitNote(const WaitNote&) = delete;
    WaitNote& operator=(const WaitNote&) = delete;

   private:
    const KafkaSink& sink_;
  };

  Status usable() const {
    if (closed_) {
      return fail(Error::invalid_state("the Kafka sink " + in_quotes(config_.bootstrap_servers) +
                                       " is closed"));
    }
    if (failed_) {
      return fail(failed_->context("the Kafka sink failed earlier and must be reopened"));
    }
    return ok();
  }

  Status poison(Error error) {
    if (!failed_) failed_ = error;
    return fail(std::move(error));
  }

  /// Runs a blocking transactional call (init, commit) with librdkafka's error semantics:
  /// retriable errors are retried until delivery_timeout_ms ran out; an error that requires an
  /// abort aborts the transaction and is transient (the batch is delivered again); a fatal one
  /// (fenced, unauthorized) stops the sink for good.
  template <typename Call>
  Status call_transactional(const std::string& what, Call call, bool is_commit = false) {
    // A commit that does not complete is resumed (librdkafka's rule: call it again), for as
    // long as the broker may still hold the transaction open; giving up earlier would leave
    // its outcome unknown.
    const std::int64_t bound =
        is_commit ? std::max(config_.delivery_timeout_ms, transaction_timeout_ms()) + 10'000
                  : config_.delivery_timeout_ms;
    const auto deadline = Clock::now() + std::chrono::milliseconds(bound);
    // In slices (librdkafka resumes a call that timed out when it is made again), so that a
    // stop request is seen; a slice that merely timed out is no news.
    std::string last_retried;
    const WaitNote note(*this, "the transaction coordinator (" + what + ")");
    for (;;) {
      rd_kafka_error_t* error = call(std::min(timeout_ms(), 2 * kWaitSliceMs));
      if (error == nullptr) return ok();
      const bool retriable = rd_kafka_error_is_retriable(error) && !rd_kafka_error_is_fatal(error);
      if (retriable && stopping()) {
        rd_kafka_error_destroy(error);
        if (is_commit) {
          // Only the next start can tell whether it took effect (see below).
          fatal_ = true;
          unknown_outcome_ = true;
          return poison(stopped(what + " (whether it took effect is settled by the next start, "
                                       "which resumes from the checkpoint committed last)"));
        }
        return poison(stopped(what));
      }
      if (retriable && Clock::now() < deadline) {
        const std::string text = rd_kafka_error_string(error);
        const bool timed_out = rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR__TIMED_OUT;
        spdlog::log(timed_out || text == last_retried ? spdlog::level::debug : spdlog::level::warn,
                    "{}: {} is retried: {}", label_, what, text);
        last_retried = text;
        rd_kafka_error_destroy(error);
        continue;
      }
      if (retriable && is_commit) {
        // Committed or not, nobody can tell now: only the next start can (its
        // init_transactions completes or aborts the transaction, and the checkpoint read then
        // says where to resume), so the sink stops.
        fatal_ = true;
        unknown_outcome_ = true;
        Error e = transaction_error(what, error);
        return poison(Error::sink(ErrorKind::kTerminal,
                                  e.message() + "; the commit did not complete within " +
                                      std::to_string(bound) +
                                      " ms, so whether it took effect is unknown: restart, and "
                                      "the start resolves it and resumes from the checkpoint "
                                      "committed last"));
      }
      if (rd_kafka_error_txn_requires_abort(error)) {
        Error e = transaction_error(what, error);
        (void)abort();
        return fail(std::move(e));
      }
      return poison(transaction_error(what, error));
    }
  }

  /// Whether a fatal error of the transactional producer allows a new producer (recover()).
  bool restartable() const {
    if (unknown_outcome_) return false;
    char reason[512];
    switch (rd_kafka_fatal_error(rk_, reason, sizeof reason)) {
      case RD_KAFKA_RESP_ERR__FENCED:
      case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
      case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
      case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
      case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return false;
      default:
        return true;
    }
  }

  /// Replaces the transactional producer after a fatal error that left nothing committed
  /// unacknowledged (see recover()).
  Status restart_producer() {
    // The producer's own fatal error says what happened; failed_ may be an earlier failure
    // of the same batch (a delivery timeout during the outage).
    std::string why = failed_ ? failed_->message() : std::string("unknown");
    if (rk_ != nullptr) {
      char reason[512];
      if (const rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk_, reason, sizeof reason);
          err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        why = std::string(rd_kafka_err2name(err)) + ": " + reason;
      }
    }
    spdlog::warn(
        "{}: the transactional producer {} hit a fatal error ({}) with no batch "
        "committed unacknowledged; starting a new one, whose init_transactions aborts "
        "what the old one left open, and delivering the batch again",
        label_, in_quotes(config_.transactional_id), why);
    destroy(/*purge=*/true);
    in_txn_ = false;
    txn_began_.reset();
    abort_pending_ = false;
    marker_set_ = false;
    outstanding_ = 0;
    produced_since_poll_ = 0;
    delivery_error_.reset();
    auto conf = kafka_sink::build_conf(config_);
    if (!conf) return fail(std::move(conf).error());
    CPPCDC_TRY(start(std::move(*conf)));  // transient while the brokers are away: tried again
    needs_restart_ = false;
    fatal_ = false;
    failed_.reset();
    return ok();
  }

  /// The error for a failed transactional call; takes `error` over.
  Error transaction_error(const std::string& what, rd_kafka_error_t* error) {
    const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    const bool fatal = rd_kafka_error_is_fatal(error) != 0;
    const bool abortable = rd_kafka_error_txn_requires_abort(error) != 0;
    std::string text =
        std::string(rd_kafka_error_name(error)) + ": " + rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
    if (fatal) {
      char reason[512];
      if (rd_kafka_fatal_error(rk_, reason, sizeof reason) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        text = reason;
      }
    }
    const std::string where = what + " of transactional_id " + in_quotes(config_.transactional_id) +
                              " on " + in_quotes(config_.bootstrap_servers) + " failed (" + text +
                              ")";
    if (fatal) {
      fatal_ = true;
      if (code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) return not_a_broker(what, text);
      if (is_fencing(code) || text.find("fenced") != std::string::npos) return fenced(where, where);
      if (code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
          code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED) {
        return Error::sink(ErrorKind::kConfiguration,
                           where +
                               "; grant the sink's principal WRITE and DESCRIBE on the "
                               "transactional id and IDEMPOTENT_WRITE on the cluster")
            .for_setting(SettingOwner::kSink, "transactional_id");
      }
      return Error::sink(ErrorKind::kTerminal,
                         where +
                             "; nothing of the open batch became visible, restart to "
                             "deliver it again");
    }
    if (abortable) {
      return Error::sink(ErrorKind::kTransient,
                         where +
                             "; the transaction was aborted, so nothing of the batch is "
                             "visible to read_committed consumers, and the batch is "
                             "delivered again" +
                             last_broker_error_suffix());
    }
    return Error::sink(ErrorKind::kTransient, where + last_broker_error_suffix());
  }

  /// The error codes librdkafka 2.0.2 gives when the broker refuses this producer's epoch:
  /// _FENCED (its own, for the fatal error it raises then), PRODUCER_FENCED and
  /// INVALID_PRODUCER_EPOCH (the broker's). The broker bumps the epoch in two cases, and the
  /// codes do not tell them apart (against Kafka 4.4 both give _FENCED, "Producer attempted
  /// an operation with an old epoch" on a produce, "Failed to end transaction" on a commit):
  /// another producer with the same transactional.id initialized (a fence), and the broker's
  /// abort of a transaction open longer than transaction.timeout.ms. (INVALID_TXN_STATE and
  /// the local _TIMED_OUT/_TIMED_OUT_QUEUE are neither: the first is librdkafka's own state
  /// machine, the others a request that got no answer in time.)
  static bool is_fencing(rd_kafka_resp_err_t code) {
    return code == RD_KAFKA_RESP_ERR__FENCED || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
           code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
  }

  /// The producer's epoch was refused (is_fencing()). When the transaction had been open
  /// longer than transaction.timeout.ms, the broker's timeout is what ended it; otherwise
  /// another process started a producer with the same transactional.id. `subject`: what failed,
  /// naming the transactional_id, `fenced_where` the same said as a fence.
  Error fenced(const std::string& subject, const std::string& fenced_where) const {
    const std::int64_t limit = transaction_timeout_ms();
    if (txn_began_) {
      const std::int64_t open_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *txn_began_).count();
      if (open_ms >= limit) {
        return Error::sink(
                   ErrorKind::kTerminal,
                   subject + ": the transaction had been open for " + std::to_string(open_ms) +
                       " ms, longer than transaction.timeout.ms (" + std::to_string(limit) +
                       " ms), so the broker aborted it (librdkafka reports that as a fence). "
                       "Nothing of it is visible to read_committed consumers, and a restart "
                       "delivers it again from the checkpoint. A stretch without a position (the "
                       "snapshot of a table without a primary key, a MariaDB/MySQL snapshot) is "
                       "one transaction under effectively_once: raise transaction.timeout.ms in "
                       "[sink.kafka_properties] and the broker's transaction.max.timeout.ms, "
                       "which caps it (15 minutes by default), or snapshot fewer rows at once "
                       "([source.snapshot] tables or table_conditions, then incremental "
                       "snapshots)")
            .for_setting(SettingOwner::kSink, "kafka_properties.transaction.timeout.ms");
      }
    }
    return Error::sink(ErrorKind::kTerminal,
                       fenced_where +
                           ": another process uses this transactional_id now (a producer "
                           "with the same transactional_id started and took over); two "
                           "pipelines must not share a transactional_id (give each its own, "
                           "and its own slot_name), and a replaced run must stop")
        .for_setting(SettingOwner::kSink, "transactional_id");
  }

  std::string last_broker_error_suffix() const {
    std::lock_guard lock(mutex_);
    if (last_broker_error_.empty()) return "";
    return "; last error from librdkafka: " + last_broker_error_;
  }

  /// _UNSUPPORTED_FEATURE ("requires Apache Kafka broker version >= 0.11.0"): bootstrap_servers
  /// names something that answers the Kafka protocol but is no broker (a KRaft controller).
  Error not_a_broker(const std::string& what, const std::string& detail) const {
    return Error::sink(ErrorKind::kConfiguration,
                       what + " on " + in_quotes(config_.bootstrap_servers) + " failed (" + detail +
                           "): bootstrap_servers answers, but not as a Kafka broker; " +
                           kafka_sink::unsupported_feature_hint(config_.bootstrap_servers))
        .for_setting(SettingOwner::kSink, "bootstrap_servers");
  }

  std::optional<Error> fatal_error() {
    char reason[512];
    const rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk_, reason, sizeof reason);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
    fatal_ = true;
    if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
      return not_a_broker("the producer", reason);
    }
    if (transactional_ && is_fencing(err)) {
      const std::string subject = std::string("the transactional producer of transactional_id ") +
                                  in_quotes(config_.transactional_id) + " on " +
                                  in_quotes(config_.bootstrap_servers);
      const std::string detail = std::string(" (") + rd_kafka_err2name(err) + ": " + reason + ")";
      return fenced(subject + " was refused" + detail, subject + " was fenced" + detail);
    }
    return Error::sink(ErrorKind::kTerminal,
                       std::string("the producer hit a fatal error and stopped (") +
                           rd_kafka_err2name(err) + "): " + reason +
                           "; nothing after the last acknowledged batch was acknowledged, "
                           "restart to deliver it again");
  }

  // ---- the reconciliation marker (effectively_once) ----------------------------------------
  //
  // A plain record beside the checkpoint, key "<checkpoint key>.reconciliation": written (not
  // transactionally) when a batch's first events are written, replaced by a tombstone once its
  // transaction committed. One that is still there at the next start says that the previous run
  // stopped in the middle of a batch (the kafka_topic backend reports it when it loads). The
  // transaction, not the marker, keeps the data right: the marker is only a diagnostic.

  Status start_marker_producer() {
    KafkaSinkConfig plain = config_;
    plain.delivery_mode = KafkaDeliveryMode::kIdempotent;
    plain.transactional_id.clear();
    auto conf = kafka_sink::build_conf(plain);
    if (!conf) return fail(std::move(conf).error());
    rd_kafka_conf_set_log_cb(conf->get(), &marker_log_callback);
    rd_kafka_conf_set_opaque(conf->get(), this);  // for the label of its log lines only
    char err[512];
    marker_rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf->get(), err, sizeof err);
    if (marker_rk_ == nullptr) {
      return fail(Error::sink(ErrorKind::kConfiguration,
                              std::string("librdkafka cannot create the marker producer: ") + err));
    }
    (void)conf->release();
    marker_key_ = checkpoint_->key + ".reconciliation";
    return ok();
  }

  /// Waits (up to kMarkerFlush) until the marker producer delivered what it holds. Diagnostic
  /// only, so the wait ends at once while the brokers are unreachable or a stop is requested:
  /// a marker that did not make it loses nothing.
  void flush_marker() {
    const auto deadline = Clock::now() + kMarkerFlush;
    while (rd_kafka_outq_len(marker_rk_) > 0 && Clock::now() < deadline) {
      if (unreachable() || stopping()) return;  // it goes out when the brokers are back
      (void)rd_kafka_flush(marker_rk_, 100);
    }
  }

  void write_marker(const Event& first, std::size_t events) {
    std::string value = "{\"transactional_id\":";
    detail::append_json_string(value, config_.transactional_id);
    value += ",\"first_offset\":";
    detail::append_json_string(value, first.source.offset);
    value += ",\"events_in_first_write\":" + std::to_string(events) + ",\"written_at_ms\":" +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()) +
             "}";
    send_marker(value.data(), value.size());
    marker_set_ = true;
  }

  void clear_marker() {
    send_marker(nullptr, 0);
    marker_set_ = false;
  }

  void send_marker(const char* value, std::size_t size) {
    const rd_kafka_resp_err_t err =
        rd_kafka_producev(marker_rk_, RD_KAFKA_V_TOPIC(checkpoint_->location.c_str()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_KEY(marker_key_.data(), marker_key_.size()),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value), size), RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::debug("{}: the reconciliation marker was not sent: {}", label_,
                    rd_kafka_err2str(err));
    }
    rd_kafka_poll(marker_rk_, 0);
  }

  // ---- topics ----------------------------------------------------------------------------

  /// The topic handle for `event`, looked up (and checked on first use) by name.
  Result<Topic*> topic_for(const Event& event) {
    if (last_ != nullptr && last_source_ == event.source.source_name &&
        last_table_ == event.table && last_schema_ == event.schema) {
      return last_;
    }
    bool sanitized = false;
    std::string raw_name;
    auto name = topic_.render(event, &sanitized, &raw_name);
    if (!name) return fail(std::move(name).error().context("choosing the topic"));
    auto it = topics_.find(*name);
    if (it == topics_.end()) {
      if (sanitized) {
        spdlog::warn(
            "{}: the topic for {} is \"{}\": characters Kafka does not allow "
            "in topic names became '_'",
            label_, table_of(event), *name);
      }
      auto prepared = prepare_topic(*name, event);
      if (!prepared) return fail(std::move(prepared).error());
      prepared->first_table = table_of(event);
      prepared->raw_name = std::move(raw_name);
      it = topics_.emplace(*name, std::move(*prepared)).first;
    } else if (it->second.raw_name != raw_name) {
      // Two tables whose names differ only in characters Kafka refuses would share a topic
      // and their keys: a compacted topic, or a consumer that upserts by key, would keep one
      // row of the two. Refused before anything of the second is sent.
      return fail(Error::sink(ErrorKind::kConfiguration,
                              "tables " + in_quotes(it->second.first_table) + " and " +
                                  in_quotes(table_of(event)) + " both map to topic " +
                                  in_quotes(*name) +
                                  " once characters Kafka does not allow became '_', and "
                                  "their keys would mix; give one of them its own topic "
                                  "(a [[pipeline.routes]] rule with its own sink, or a "
                                  "route transform that renames the table)")
                      .for_setting(SettingOwner::kSink, "topic"));
    }
    last_ = &it->second;
    last_source_ = event.source.source_name;
    last_table_ = event.table;
    last_schema_ = event.schema;
    return last_;
  }

  /// The producer's transaction.timeout.ms (kafka_conf.hpp).
  std::int64_t transaction_timeout_ms() const {
    return kafka_sink::transaction_timeout_ms(config_);
  }

  int timeout_ms() const {
    return static_cast<int>(std::min<std::int64_t>(config_.delivery_timeout_ms, 1 << 30));
  }

  /// Makes the handle and checks that the topic exists and that this client may see it (one
  /// metadata round trip); a missing topic is created first when create_topics asks for it.
  /// The look-up comes first so that a broker that cannot be reached is never sent a
  /// CreateTopics request (librdkafka 2.0.2 retries an admin request's connection in a busy
  /// loop while the broker is down), and an existing topic is never "created".
  Result<Topic> prepare_topic(const std::string& name, const Event& event) {
    const std::string raw = event.source.source_name + "/" + table_of(event);
    Topic topic;
    topic.name = name;
    topic.rkt = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
    if (topic.rkt == nullptr) {
      return fail(Error::sink(ErrorKind::kConfiguration,
                              "librdkafka refuses the topic " + in_quotes(name) + ": " +
                                  rd_kafka_err2str(rd_kafka_last_error())));
    }
    struct Guard {
      Topic& t;
      bool keep = false;
      ~Guard() {
        if (!keep && t.rkt) rd_kafka_topic_destroy(t.rkt);
      }
    } guard{topic};
    const auto deadline = Clock::now() + std::chrono::milliseconds(config_.delivery_timeout_ms);
    const WaitNote note(*this, "the metadata of topic " + in_quotes(name) + " from " +
                                   in_quotes(config_.bootstrap_servers));
    bool created = false;
    for (;;) {
      if (stopping()) return fail(stopped("looking up topic " + in_quotes(name)));
      const rd_kafka_metadata_t* md = nullptr;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      const int wait = static_cast<int>(std::clamp<std::int64_t>(left, 1, 2 * kWaitSliceMs));
      const rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 0, topic.rkt, &md, wait);
      if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
        return fail(not_a_broker("looking up topic " + in_quotes(name), rd_kafka_err2str(err)));
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (Clock::now() < deadline) {
          // Not answered yet (or no broker connected): ask again, without spinning.
          if (err != RD_KAFKA_RESP_ERR__TIMED_OUT) rd_kafka_poll(rk_, 100);
          continue;
        }
        return fail(Error::sink(ErrorKind::kTransient,
                                "cannot reach the Kafka brokers " +
                                    in_quotes(config_.bootstrap_servers) + " to look up topic " +
                                    in_quotes(name) + " within delivery_timeout_ms (" +
                                    std::to_string(config_.delivery_timeout_ms) +
                                    " ms): " + rd_kafka_err2str(err) + last_broker_error_suffix()));
      }
      rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      int partitions = 0;
      for (int i = 0; i < md->topic_cnt; ++i) {
        if (name == md->topics[i].topic) {
          topic_err = md->topics[i].err;
          partitions = md->topics[i].partition_cnt;
        }
      }
      rd_kafka_metadata_destroy(md);
      if (topic_err == RD_KAFKA_RESP_ERR_NO_ERROR ||
          topic_err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE) {
        // Said once per table and topic: the topics are looked up again after every failed
        // batch under create_topics, and a retried batch would repeat it.
        const bool first = announced_.insert(raw + '\n' + name).second;
        spdlog::log(first ? spdlog::level::info : spdlog::level::debug,
                    "{}: {} goes to topic \"{}\" ({} partition{})", label_, raw, name, partitions,
                    partitions == 1 ? "" : "s");
        guard.keep = true;
        return topic;
      }
      if (topic_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART && config_.create_topics) {
        if (!created) {
          CPPCDC_TRY(create_topic(name, deadline));
          created = true;
          continue;
        }
        // A topic created a moment ago may not be known to every broker yet.
        if (Clock::now() < deadline) {
          rd_kafka_poll(rk_, 100);
          continue;
        }
      }
      return fail(topic_error(name, topic_err, raw));
    }
  }

  Error topic_error(const std::string& name, rd_kafka_resp_err_t err,
                    const std::string& raw) const {
    const std::string where = "topic " + in_quotes(name) + " (for " + raw + ") on " +
                              in_quotes(config_.bootstrap_servers);
    switch (err) {
      case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        return Error::sink(ErrorKind::kConfiguration,
                           where +
                               " does not exist; create it, or set create_topics = true "
                               "so that the sink creates missing topics")
            .for_setting(SettingOwner::kSink, "topic");
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        return Error::sink(ErrorKind::kConfiguration,
                           "not authorized to access " + where +
                               "; grant the sink's principal DESCRIBE and WRITE on it (and "
                               "IDEMPOTENT_WRITE on the cluster)");
      case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        return Error::sink(ErrorKind::kConfiguration,
                           "the broker refuses the name of " + where + "; change topic")
            .for_setting(SettingOwner::kSink, "topic");
      default:
        return Error::sink(ErrorKind::kTransient,
                           "looking up " + where + ": " + rd_kafka_err2str(err));
    }
  }

  Status create_topic(const std::string& name, Clock::time_point deadline) {
    char err[512];
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(
        name.c_str(), config_.topic_partitions, config_.topic_replication_factor, err, sizeof err);
    if (nt == nullptr) {
      return fail(Error::sink(ErrorKind::kConfiguration,
                              "cannot create topic " + in_quotes(name) + ": " + err)
                      .for_setting(SettingOwner::kSink, "topic_partitions"));
    }
    for (const auto& [config_name, value] : config_.topic_config) {
      if (rd_kafka_resp_err_t e =
              rd_kafka_NewTopic_set_config(nt, config_name.c_str(), value.c_str());
          e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_NewTopic_destroy(nt);
        return fail(Error::sink(ErrorKind::kConfiguration,
                                "cannot create topic " + in_quotes(name) + " with topic config " +
                                    in_quotes(config_name) + ": " + rd_kafka_err2str(e))
                        .for_setting(SettingOwner::kSink, "topic_config." + config_name));
      }
    }
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk_);
    rd_kafka_AdminOptions_t* options =
        rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    const int left = static_cast<int>(std::clamp<std::int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count(),
        1'000, timeout_ms()));
    (void)rd_kafka_AdminOptions_set_request_timeout(options, left, err, sizeof err);
    (void)rd_kafka_AdminOptions_set_operation_timeout(options, left, err, sizeof err);
    rd_kafka_CreateTopics(rk_, &nt, 1, options, queue);
    const WaitNote note(*this, "the brokers " + in_quotes(config_.bootstrap_servers) +
                                   " to create topic " + in_quotes(name));
    rd_kafka_event_t* ev = nullptr;
    Status st = ok();
    const std::string where =
        "creating topic " + in_quotes(name) + " on " + in_quotes(config_.bootstrap_servers);
    while (ev == nullptr && Clock::now() < deadline + std::chrono::seconds(5)) {
      if (stopping()) {
        st = fail(stopped("creating topic " + in_quotes(name)));
        break;
      }
      ev = rd_kafka_queue_poll(queue, kWaitSliceMs);
    }
    if (!st) {
      // Stopped: nothing more to say.
    } else if (ev == nullptr) {
      st =
          fail(Error::sink(ErrorKind::kTransient, where + ": no answer within delivery_timeout_ms" +
                                                      last_broker_error_suffix()));
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = fail(Error::sink(ErrorKind::kTransient, where + ": " + rd_kafka_event_error_string(ev) +
                                                       last_broker_error_suffix()));
    } else {
      const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(ev);
      std::size_t n = 0;
      const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &n);
      for (std::size_t i = 0; i < n && st; ++i) {
        const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(topics[i]);
        const char* msg = rd_kafka_topic_result_error_string(topics[i]);
        const std::string detail =
            std::string(rd_kafka_err2name(e)) + (msg ? ": " + std::string(msg) : "");
        switch (e) {
          case RD_KAFKA_RESP_ERR_NO_ERROR:
            spdlog::info("{}: created topic \"{}\"", label_, name);
            break;
          case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS:
            break;
          case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
          case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
            st = fail(Error::sink(ErrorKind::kConfiguration,
                                  where + ": not authorized (" + detail +
                                      "); grant the sink's principal CREATE, or create the topic "
                                      "beforehand")
                          .for_setting(SettingOwner::kSink, "create_topics"));
            break;
          case RD_KAFKA_RESP_ERR_INVALID_PARTITIONS:
            st = fail(Error::sink(ErrorKind::kConfiguration, where + ": " + detail)
                          .for_setting(SettingOwner::kSink, "topic_partitions"));
            break;
          case RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR:
            st = fail(Error::sink(ErrorKind::kConfiguration, where + ": " + detail)
                          .for_setting(SettingOwner::kSink, "topic_replication_factor"));
            break;
          case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
          case RD_KAFKA_RESP_ERR_POLICY_VIOLATION: {
            // The broker's message names the config it refused, when it was one of ours.
            std::string setting = config_.topic_config.empty() ? "topic" : "topic_config";
            for (const auto& [config_name, value] : config_.topic_config) {
              if (detail.find(config_name) != std::string::npos) {
                setting = "topic_config." + config_name;
                break;
              }
            }
            st = fail(Error::sink(ErrorKind::kConfiguration, where + ": " + detail)
                          .for_setting(SettingOwner::kSink, setting));
            break;
          }
          default:
            st = fail(Error::sink(ErrorKind::kTransient, where + ": " + detail));
        }
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_queue_destroy(queue);
    rd_kafka_NewTopic_destroy(nt);
    return st;
  }

  // ---- producing -------------------------------------------------------------------------

  // The record key of `event` by the encoder (the three outcomes of Encoder::encode_key_to):
  // true with the key in `out`, false for a keyless event, or the encoder's error.
  Result<bool> encode_key(const Topic& topic, const Event& event, ByteBuffer& out) {
    out.clear();
    auto keyed = encoder_->encode_key_to(topic.name, event, out);
    if (!keyed) {
      return fail(keyed.error().context("encoding the record key of the " +
                                        std::string(to_string(event.op)) + " of " +
                                        table_of(event) + " at source offset " +
                                        event.source.offset + " with " + encoder_->name()));
    }
    if (!*keyed) out.clear();
    return *keyed;
  }

  // Encodes `event` and produces it under `key` (nullptr: keyless), followed by a tombstone
  // for a keyed delete when tombstones_on_delete is set.
  Status send(Topic& topic, const Event& event, const ByteBuffer* key) {
    value_.clear();
    if (auto encoded = encoder_->encode_to(topic.name, event, value_); !encoded) {
      return poison(encoded.error().context("encoding the " + std::string(to_string(event.op)) +
                                            " of " + table_of(event) + " at source offset " +
                                            event.source.offset + " with " + encoder_->name()));
    }
    extra_headers_.clear();
    if (encoder_->record_headers()) {
      if (auto st = encoder_->append_headers(HeaderBinding::kKafka, event, extra_headers_); !st) {
        return poison(st.error().context("encoding the headers of the " +
                                         std::string(to_string(event.op)) + " of " +
                                         table_of(event) + " with " + encoder_->name()));
      }
    }
    if (key_change_header_) extra_headers_.push_back(*key_change_header_);
    if (auto st = produce(topic, event, key, value_.view(), false); !st) return st;
    extra_headers_.clear();  // a tombstone is no event: none of the codec's headers
    // but the delete of a key change keeps its new key there, as Debezium's tombstone does
    if (key_change_header_) extra_headers_.push_back(*key_change_header_);
    if (config_.tombstones_on_delete && key != nullptr && event.op == Operation::kDelete) {
      if (auto st = produce(topic, event, key, {}, true); !st) return st;
    }
    return ok();
  }

  Status produce(Topic& topic, const Event& event, const ByteBuffer* key, std::string_view value,
                 bool tombstone) {
    const std::string_view op = to_string(event.op);
    char version[8];
    const int version_len =
        std::snprintf(version, sizeof version, "%u", static_cast<unsigned>(event.envelope_version));
    const char* const key_data = key != nullptr ? key->data() : nullptr;
    const std::size_t key_size = key != nullptr ? key->size() : 0;
    const auto started = Clock::now();
    for (;;) {
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
      if (extra_headers_.empty()) {
        err = rd_kafka_producev(
            rk_, RD_KAFKA_V_RKT(topic.rkt), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key_data, key_size),
            RD_KAFKA_V_VALUE(tombstone ? nullptr : const_cast<char*>(value.data()),
                             tombstone ? 0 : value.size()),
            RD_KAFKA_V_HEADER(kafka_sink::kHeaderOp, op.data(), static_cast<ssize_t>(op.size())),
            RD_KAFKA_V_HEADER(kafka_sink::kHeaderSourceOffset, event.source.offset.data(),
                              static_cast<ssize_t>(event.source.offset.size())),
            RD_KAFKA_V_HEADER(kafka_sink::kHeaderEnvelopeVersion, version,
                              static_cast<ssize_t>(version_len)),
            RD_KAFKA_V_END);
      } else {
        // The codec's headers too: a header list, which the producer owns once it took the
        // record (and which is ours to free when it did not).
        rd_kafka_headers_t* headers = rd_kafka_headers_new(3 + extra_headers_.size());
        rd_kafka_header_add(headers, kafka_sink::kHeaderOp, -1, op.data(),
                            static_cast<ssize_t>(op.size()));
        rd_kafka_header_add(headers, kafka_sink::kHeaderSourceOffset, -1,
                            event.source.offset.data(),
                            static_cast<ssize_t>(event.source.offset.size()));
        rd_kafka_header_add(headers, kafka_sink::kHeaderEnvelopeVersion, -1, version,
                            static_cast<ssize_t>(version_len));
        for (const auto& h : extra_headers_) {
          rd_kafka_header_add(headers, h.name.data(), static_cast<ssize_t>(h.name.size()),
                              h.value.data(), static_cast<ssize_t>(h.value.size()));
        }
        err = rd_kafka_producev(
            rk_, RD_KAFKA_V_RKT(topic.rkt), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key_data, key_size),
            RD_KAFKA_V_VALUE(tombstone ? nullptr : const_cast<char*>(value.data()),
                             tombstone ? 0 : value.size()),
            RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_headers_destroy(headers);
      }
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        // Wait for deliveries to make room (their reports are served here).
        if (stopping()) return poison(stopped("waiting for room in the producer's queue"));
        rd_kafka_poll(rk_, 50);
        if (delivery_error_) return poison(*delivery_error_);
        if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
        if (Clock::now() - started > std::chrono::milliseconds(config_.delivery_timeout_ms)) {
          return poison(Error::sink(ErrorKind::kTransient,
                                    "the producer's queue stayed full for delivery_timeout_ms (" +
                                        std::to_string(config_.delivery_timeout_ms) +
                                        " ms): the brokers " +
                                        in_quotes(config_.bootstrap_servers) +
                                        " do not take records" + last_broker_error_suffix()));
        }
        continue;
      }
      if (err == RD_KAFKA_RESP_ERR__FATAL) {
        if (auto fatal = fatal_error(); fatal) return poison(std::move(*fatal));
      }
      return poison(record_error(err, topic.name, table_of(event), event.source.offset,
                                 tombstone ? 0 : value.size(), ""));
    }
    ++outstanding_;
    if (++produced_since_poll_ >= kPollEvery) {
      produced_since_poll_ = 0;
      rd_kafka_poll(rk_, 0);
      if (delivery_error_) return poison(*delivery_error_);
    }
    return ok();
  }

  /// The error for a record the producer or the broker refused.
  Error record_error(rd_kafka_resp_err_t err, const std::string& topic, const std::string& table,
                     const std::string& offset, std::size_t bytes, const std::string& partition,
                     bool keyless = false) const {
    const std::string record = "the record of " + table + " at source offset " + offset + " (" +
                               std::to_string(bytes) + " bytes) for topic " + in_quotes(topic) +
                               partition;
    std::string code =
        std::string(" (") + rd_kafka_err2name(err) + ": " + rd_kafka_err2str(err) + ")";
    if (err == RD_KAFKA_RESP_ERR__FATAL && rk_ != nullptr) {
      // "Local: Fatal error" says nothing: name the error that made the producer fatal.
      char reason[512];
      const rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(rk_, reason, sizeof reason);
      if (fatal != RD_KAFKA_RESP_ERR_NO_ERROR) {
        code = std::string(" (the producer hit a fatal error, ") + rd_kafka_err2name(fatal) + ": " +
               reason + ")";
      }
    }
    switch (err) {
      case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
      case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        return Error::sink(ErrorKind::kTerminal,
                           record + " is larger than the producer or the topic accepts" + code +
                               "; raise the topic's max.message.bytes and the sink's "
                               "kafka_properties message.max.bytes, or keep such rows out of "
                               "the pipeline (a filter transform); [runtime] max_event_bytes "
                               "set below those limits stops the pipeline at such a row, "
                               "naming its table, before it reaches Kafka");
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
      case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return Error::sink(ErrorKind::kConfiguration,
                           record + " was refused: not authorized" + code +
                               "; grant the sink's principal WRITE on the topic and "
                               "IDEMPOTENT_WRITE on the cluster");
      case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        if (config_.create_topics) {
          // It existed when the sink first used it: deleted since. The retry creates it again.
          forget_topics_ = true;
          return Error::sink(ErrorKind::kTransient,
                             record +
                                 " was refused: the topic no longer exists (deleted while "
                                 "the pipeline ran?)" +
                                 code +
                                 "; with create_topics = true the sink creates it again when "
                                 "the batch is delivered again");
        }
        return Error::sink(ErrorKind::kConfiguration,
                           record + " was refused: the topic does not exist" + code +
                               "; create it, or set create_topics = true")
            .for_setting(SettingOwner::kSink, "topic");
      case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
        return Error::sink(ErrorKind::kTransient, record + " was not acknowledged by " +
                                                      in_quotes(config_.bootstrap_servers) +
                                                      " within delivery_timeout_ms (" +
                                                      std::to_string(config_.delivery_timeout_ms) +
                                                      " ms)" + last_broker_error_suffix());
      case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        if (keyless) {
          // What a compacted topic answers to a record without a key.
          return Error::sink(ErrorKind::kConfiguration,
                             record + " was refused by the broker" + code +
                                 ": it has no key (its table has no primary key), and a "
                                 "compacted topic (cleanup.policy=compact) takes only keyed "
                                 "records; give the table a primary key, route it to a topic "
                                 "that is not compacted, or key it with a key_shaping transform")
              .for_setting(SettingOwner::kSink, "topic");
        }
        return Error::sink(ErrorKind::kTerminal, record + " was refused by the broker" + code);
      case RD_KAFKA_RESP_ERR_INVALID_MSG:
      case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
      case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        return Error::sink(ErrorKind::kTerminal, record + " was refused by the broker" + code);
      default:
        return Error::sink(ErrorKind::kTransient,
                           record + " was not delivered" + code + last_broker_error_suffix());
    }
  }

  static std::string header_text(const rd_kafka_message_t* m, const char* name) {
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return "?";
    const void* value = nullptr;
    std::size_t size = 0;
    if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        value == nullptr) {
      return "?";
    }
    return std::string(static_cast<const char*>(value), size);
  }

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaSink*>(opaque);
    if (self->outstanding_ > 0) --self->outstanding_;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->last_report_ms_.store(steady_ms(), std::memory_order_relaxed);
      if (self->troubled_.load(std::memory_order_relaxed)) self->clear_trouble();
      return;
    }
    if (self->delivery_error_) return;
    const std::string topic = rd_kafka_topic_name(m->rkt);
    std::string what = "the " + header_text(m, kafka_sink::kHeaderOp);
    if (m->key != nullptr) {
      what +=
          " with key " + shortened(std::string_view(static_cast<const char*>(m->key), m->key_len));
    }
    self->delivery_error_ = self->record_error(
        m->err, topic, what, header_text(m, kafka_sink::kHeaderSourceOffset), m->len,
        m->partition >= 0 ? " partition " + std::to_string(m->partition) : "", m->key == nullptr);
  }

  static void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
    auto* self = static_cast<KafkaSink*>(opaque);
    const std::string text =
        std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " + reason;
    {
      std::lock_guard lock(self->mutex_);
      if (is_broker_trouble(err) && !self->trouble_since_) {
        self->trouble_since_ = Clock::now();
        self->troubled_.store(true, std::memory_order_relaxed);
      }
      if (text == self->last_broker_error_) return;  // librdkafka repeats itself while down
      self->last_broker_error_ = text;
    }
    // librdkafka logs connection failures itself (log_callback, rate-limited); "all brokers
    // are down" follows from them (and often arrives late, as a broker comes back). The rest
    // is news.
    if (err != RD_KAFKA_RESP_ERR__TRANSPORT && err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
      spdlog::warn("{}: {}", self->label_, text);
    }
  }

  /// Errors that mean the brokers cannot be reached (as opposed to a refused record).
  static bool is_broker_trouble(int err) {
    switch (static_cast<rd_kafka_resp_err_t>(err)) {
      case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
      case RD_KAFKA_RESP_ERR__TRANSPORT:
      case RD_KAFKA_RESP_ERR__RESOLVE:
      case RD_KAFKA_RESP_ERR__AUTHENTICATION:
      case RD_KAFKA_RESP_ERR__SSL:
      case RD_KAFKA_RESP_ERR__TIMED_OUT:
        return true;
      default:
        return false;
    }
  }

  /// A record was delivered (or a transaction committed): the brokers take records again.
  void clear_trouble() {
    std::lock_guard lock(mutex_);
    if (!trouble_since_) return;
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - *trouble_since_).count();
    // A connection dropped and made again within a second (an idle connection the broker
    // closed) is no outage worth a line.
    spdlog::log(seconds >= 1 ? spdlog::level::info : spdlog::level::debug,
                "{}: {} takes records again, {} s after librdkafka reported it unreachable "
                "(last error: {})",
                label_, in_quotes(config_.bootstrap_servers), seconds, last_broker_error_);
    trouble_since_.reset();
    troubled_.store(false, std::memory_order_relaxed);
  }

 public:
  std::string current_problem() const override {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    std::string out;
    if (waiting_ && now - waiting_->second >= kWaitWorthReporting) {
      out = "waiting " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(now - waiting_->second).count()) +
            " s for " + waiting_->first;
    }
    if (trouble_since_) {
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(now - *trouble_since_).count();
      if (!out.empty()) out += "; ";
      out += "no record delivered to " + in_quotes(config_.bootstrap_servers) +
             " since librdkafka reported a broker problem " + std::to_string(seconds) +
             " s ago; last error: " + last_broker_error_;
    }
    if (!out.empty() && label_ != "kafka sink") out = label_ + ": " + out;
    return out;
  }

 private:
  void destroy(bool purge) {
    if (marker_rk_ != nullptr) {
      if (!purge) flush_marker();
      // What is left is dropped (a marker is diagnostic only), without librdkafka's warning
      // about messages still queued at rd_kafka_destroy().
      if (rd_kafka_outq_len(marker_rk_) > 0) {
        spdlog::debug("{}: the reconciliation marker's last update was not delivered", label_);
        rd_kafka_purge(marker_rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(marker_rk_, 0);
      }
      rd_kafka_destroy(marker_rk_);
      marker_rk_ = nullptr;
    }
    if (rk_ == nullptr) return;
    if (checkpoint_rkt_ != nullptr) {
      rd_kafka_topic_destroy(checkpoint_rkt_);
      checkpoint_rkt_ = nullptr;
    }
    if (purge) {
      // Records not delivered yet are dropped: their batch was never acknowledged.
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_poll(rk_, 0);
    }
    for (auto& [name, topic] : topics_) rd_kafka_topic_destroy(topic.rkt);
    topics_.clear();
    last_ = nullptr;
    rd_kafka_destroy(rk_);
    rk_ = nullptr;
  }

  KafkaSinkConfig config_;
  kafka_sink::TopicTemplate topic_;
  std::unique_ptr<Encoder> encoder_;
  std::optional<InSinkCheckpoint> checkpoint_;  // where commit() writes the record
  const bool transactional_;
  const std::string label_;  // sink_label(config_.name)
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_topic_t* checkpoint_rkt_ = nullptr;
  bool closed_ = false;
  rd_kafka_t* marker_rk_ = nullptr;  // effectively_once: the reconciliation marker's producer
  std::string marker_key_;
  bool marker_set_ = false;  // a marker was written and no commit cleared it yet
  bool in_txn_ = false;      // begin() succeeded and no commit() or abort() ended it
  // When the transaction begin() opened began; reset when a commit or abort ended it (an
  // error about it may come after in_txn_ was cleared: fenced() reads it).
  std::optional<Clock::time_point> txn_began_;
  bool abort_pending_ = false;    // an abort timed out: it is resumed before the next begin()
  bool unknown_outcome_ = false;  // a commit gave up undecided: only a restart may go on
  bool needs_restart_ = false;    // recover() replaces the producer (a start failed so far)
  bool fatal_ = false;  // the producer hit a fatal error: no abort() makes it usable again

  std::unordered_map<std::string, Topic> topics_;
  Topic* last_ = nullptr;  // the topic of the previous event, and what chose it
  std::string last_source_;
  std::string last_table_;
  std::optional<std::string> last_schema_;

  ByteBuffer key_;
  ByteBuffer previous_key_;  ///< the old key of an update that changed its key
  ByteBuffer value_;
  std::size_t outstanding_ = 0;  // produced, no delivery report yet
  std::size_t produced_since_poll_ = 0;
  std::optional<Error> delivery_error_;  // the first failed delivery report
  std::optional<Error> failed_;          // the first failure of any call: sticky

  // A record found its topic gone (create_topics): recover() drops the topic handles, so that
  // the next write looks each topic up (and creates it) again.
  mutable bool forget_topics_ = false;
  mutable std::mutex mutex_;             // guards last_broker_error_, trouble_since_ and waiting_
  std::string last_broker_error_;        // the last distinct error librdkafka reported
  std::string last_connection_failure_;  // librdkafka's last "Connect to ... failed" line
  std::vector<RecordHeader> extra_headers_;  // the codec's headers of the record being sent
  // While write() sends the two records of a key change in Debezium's format: the header
  // naming the other key (kHeaderDebeziumNewKey / kHeaderDebeziumOldKey).
  std::optional<RecordHeader> key_change_header_;
  // Since when librdkafka reports the brokers unreachable with no delivery since (for
  // current_problem()); troubled_ mirrors whether it is set, read without the lock.
  std::optional<Clock::time_point> trouble_since_;
  std::atomic<bool> troubled_{false};
  // librdkafka said that init_transactions waits for an earlier producer's open transaction
  // to be aborted (set by its log callback, read by start()).
  std::atomic<bool> previous_transaction_open_{false};
  // When stopping() first saw the stop request (Clock milliseconds; 0: not yet).
  mutable std::atomic<std::int64_t> stop_seen_ms_{0};
  // When the last successful delivery report arrived (steady_ms(); 0: none yet).
  std::atomic<std::int64_t> last_report_ms_{0};
  // What a call of the sink waits for right now, and since when (for current_problem());
  // guarded by mutex_.
  mutable std::optional<std::pair<std::string, Clock::time_point>> waiting_;
};

const std::string& label_of(const rd_kafka_t* rk) {
  static const std::string plain = "kafka sink";
  const void* opaque = rk != nullptr ? rd_kafka_opaque(rk) : nullptr;
  return opaque != nullptr ? static_cast<const KafkaSink*>(opaque)->label() : plain;
}

void note_previous_transaction(const rd_kafka_t* rk) {
  void* opaque = rk != nullptr ? rd_kafka_opaque(rk) : nullptr;
  if (opaque != nullptr) static_cast<KafkaSink*>(opaque)->note_previous_transaction();
}

void note_connection_failure(const rd_kafka_t* rk, std::string_view message) {
  void* opaque = rk != nullptr ? rd_kafka_opaque(rk) : nullptr;
  if (opaque != nullptr) static_cast<KafkaSink*>(opaque)->note_connection_failure(message);
}

/// The Kafka sink as a plain Sink, for the runtime's at-least-once path: idempotent, it is the
/// sink itself; transactional without a checkpoint topic, each batch is still one transaction
/// (begun by the first write(), committed by flush()), so a consumer reading committed data
/// sees whole batches, while the checkpoint is saved by its own backend after the flush.
class KafkaBatchSink final : public Sink {
 public:
  explicit KafkaBatchSink(std::unique_ptr<KafkaSink> sink, bool transactional)
      : sink_(std::move(sink)), transactional_(transactional) {}

  Status write(std::span<const Event> events) override {
    if (transactional_ && !open_) {
      CPPCDC_TRY(sink_->begin());
      open_ = true;
    }
    auto st = sink_->write(events);
    if (!st && transactional_) abort_open();
    return st;
  }
  Status flush() override {
    if (!transactional_ || !open_) return sink_->flush();  // refuses after close()
    auto st = sink_->flush();
    if (st) st = sink_->commit(std::nullopt);
    if (!st) abort_open();
    open_ = false;
    return st;
  }
  Status recover() override {
    open_ = false;
    return sink_->recover();
  }
  Status close() override {
    // Like every sink's close(), it makes what was written durable: the open batch commits.
    Status committed = open_ ? flush() : ok();
    auto closed = sink_->close();
    if (!committed) return committed;
    return closed;
  }
  std::string name() const override { return sink_->name(); }
  std::string current_problem() const override { return sink_->current_problem(); }

 private:
  void abort_open() {
    (void)sink_->abort();
    open_ = false;
  }
  std::unique_ptr<KafkaSink> sink_;
  bool transactional_;
  bool open_ = false;
};

Result<std::unique_ptr<KafkaSink>> open_kafka_sink(KafkaSinkConfig config,
                                                   std::unique_ptr<Encoder> encoder,
                                                   std::optional<InSinkCheckpoint> checkpoint) {
  auto conf = kafka_sink::build_conf(config);
  if (!conf) return fail(std::move(conf).error());
  auto topic = kafka_sink::TopicTemplate::parse(config.topic);
  if (!topic) return fail(std::move(topic).error());
  if (!encoder) encoder = make_json_encoder();
  auto sink = std::make_unique<KafkaSink>(std::move(config), std::move(*topic), std::move(encoder),
                                          std::move(checkpoint));
  CPPCDC_TRY(sink->start(std::move(*conf)));
  return sink;
}

}  // namespace

namespace kafka_sink {

bool raise_fatal_error_for_test(TransactionalSink& sink, int err) {
  auto* kafka = dynamic_cast<KafkaSink*>(&sink);
  return kafka != nullptr && kafka->raise_fatal_error(static_cast<rd_kafka_resp_err_t>(err));
}

}  // namespace kafka_sink

std::string_view to_string(KafkaDeliveryMode mode) noexcept {
  switch (mode) {
    case KafkaDeliveryMode::kIdempotent:
      return "idempotent";
    case KafkaDeliveryMode::kTransactional:
      return "transactional";
  }
  return "?";
}

Status validate(const KafkaSinkConfig& config) {
  auto conf = kafka_sink::build_conf(config);
  if (!conf) return fail(std::move(conf).error());
  return kafka_sink::check_producer(config, conf->get());
}

Result<std::unique_ptr<Sink>> make_kafka_sink(KafkaSinkConfig config,
                                              std::unique_ptr<Encoder> encoder) {
  const bool transactional = config.delivery_mode == KafkaDeliveryMode::kTransactional;
  auto sink = open_kafka_sink(std::move(config), std::move(encoder), std::nullopt);
  if (!sink) return fail(std::move(sink).error());
  return std::unique_ptr<Sink>(std::make_unique<KafkaBatchSink>(std::move(*sink), transactional));
}

Result<std::unique_ptr<TransactionalSink>> make_transactional_kafka_sink(
    KafkaSinkConfig config, InSinkCheckpoint checkpoint, std::unique_ptr<Encoder> encoder) {
  if (config.delivery_mode != KafkaDeliveryMode::kTransactional) {
    return fail(Error::sink(ErrorKind::kConfiguration,
                            "the checkpoint can be committed with the data only by a "
                            "transactional producer; set delivery_mode = \"transactional\" "
                            "and a transactional_id")
                    .for_setting(SettingOwner::kSink, "delivery_mode"));
  }
  auto sink = open_kafka_sink(std::move(config), std::move(encoder), std::move(checkpoint));
  if (!sink) return fail(std::move(sink).error());
  return std::unique_ptr<TransactionalSink>(std::move(*sink));
}

}  // namespace cppcdc
