// The "kafka_topic" checkpoint backend (include/cppcdc/kafka.hpp): one record per checkpoint id
// in a compacted topic, keyed by the id, its value FileCheckpoint::encode(record).
//
// Reading: a consumer with isolation.level = read_committed, assigned every partition from the
// start (no consumer group: nothing is committed for it), reads until each partition's end as
// it was when load() began; the last value for the key wins, a tombstone clears it. A
// transaction still open on the topic (another pipeline's, or one the broker has not aborted
// yet) holds read_committed readers back, so load() waits for it up to load_timeout_ms.
//
// Writing (save(), used under at_least_once; under effectively_once the Kafka sink writes the
// same record inside its own transaction): a transactional producer with transactional.id
// "cppcdc-checkpoint.<id>", created at the first save. Its init_transactions fences the
// producer of any other instance that saved for the same id before, so the newest writer wins
// and an older one's next save fails naming that transactional id.

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/settings_read.hpp"
#include "core/stop_request.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/kafka.hpp"
#include "cppcdc/plugin.hpp"

namespace cppcdc {
namespace {

using Clock = std::chrono::steady_clock;

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// Largest record the topic takes (set when the backend creates it) and the producer sends:
/// a MySQL source's schema history travels in the record.
constexpr const char* kMaxRecordBytes = "16777216";

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

/// Where librdkafka's warnings go while `cppcdc preflight` runs: kept (the last one explains a
/// broker that does not answer) instead of logged between the checklist's lines.
struct LogTail {
  std::mutex mutex;
  std::string last;
};

void quiet_log(const rd_kafka_t* rk, int level, const char* facility, const char* message) {
  if (level > 4) return;
  if (auto* tail = static_cast<LogTail*>(rd_kafka_opaque(rk)); tail != nullptr) {
    std::lock_guard lock(tail->mutex);
    tail->last = message;
    return;
  }
  spdlog::warn("kafka_topic checkpoint: librdkafka {}: {}", facility, message);
}

/// How long `cppcdc preflight` waits for the brokers' first answer, and for each later call.
constexpr int kPreflightConnectMs = 7'000;
constexpr int kPreflightCallMs = 5'000;

/// Which clients take each librdkafka property: 'P' producers only, 'C' consumers only, '*'
/// both, as librdkafka's own property table says (rd_kafka_conf_properties_show).
const std::map<std::string, char>& property_scopes() {
  static const std::map<std::string, char> scopes = [] {
    std::map<std::string, char> out;
    char* text = nullptr;
    std::size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    if (f == nullptr) return out;
    rd_kafka_conf_properties_show(f);
    std::fclose(f);
    // Rows: "name | C/P | range | default | importance | description".
    std::string_view all(text, size);
    while (!all.empty()) {
      const auto eol = all.find('\n');
      std::string_view line = all.substr(0, eol);
      all = eol == std::string_view::npos ? std::string_view() : all.substr(eol + 1);
      const auto bar = line.find('|');
      if (bar == std::string_view::npos) continue;
      const auto trim = [](std::string_view v) {
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
        return v;
      };
      const std::string_view name = trim(line.substr(0, bar));
      const std::string_view rest = line.substr(bar + 1);
      const std::string_view scope = trim(rest.substr(0, rest.find('|')));
      if (scope.size() == 1 && (scope[0] == 'P' || scope[0] == 'C' || scope[0] == '*')) {
        out.emplace(std::string(name), scope[0]);
      }
    }
    std::free(text);
    return out;
  }();
  return scopes;
}

/// Whether a client of `type` takes `property` (an unknown one: yes, librdkafka judges it).
bool takes_property(rd_kafka_type_t type, const std::string& property) {
  const auto& scopes = property_scopes();
  const auto it = scopes.find(property);
  if (it == scopes.end()) return true;
  return it->second == '*' || it->second == (type == RD_KAFKA_CONSUMER ? 'C' : 'P');
}

/// `error` about the backend's setting `path` ("bootstrap_servers", "kafka_properties.<name>"),
/// named where the user wrote it: [sink]'s key when the backend took the value from the sink.
Error at_setting(const KafkaTopicCheckpointConfig& config, Error error, const std::string& path) {
  const bool from_sink = path.starts_with("kafka_properties")
                             ? config.properties_from_sink
                             : path == "bootstrap_servers" && config.bootstrap_servers_from_sink;
  if (!from_sink) return std::move(error).for_setting(SettingOwner::kCheckpoint, path);
  Error out(error.kind(), error.category(),
            error.message() + " (the kafka_topic checkpoint backend takes it from [sink])");
  return std::move(out).for_setting(SettingOwner::kSink, path);
}

/// The remedy for librdkafka's _UNSUPPORTED_FEATURE on a Kafka 4 cluster: a controller port.
std::string unsupported_feature_hint(const std::string& servers) {
  return "librdkafka says the server lacks a feature every broker since Kafka 0.11 has, which "
         "is what a KRaft controller port (or another listener that is not a broker's) gives: "
         "check that bootstrap_servers (\"" +
         servers +
         "\") names a broker listener (the broker's listeners / advertised.listeners, not "
         "controller.listener.names)";
}

/// Whether the batch a reconciliation marker was left for committed (see read_topic()).
enum class MarkerVerdict { kAborted, kCommitted, kUnknown };

struct FoundMarker {
  std::string value;  ///< the marker's JSON, as the sink wrote it
  MarkerVerdict verdict = MarkerVerdict::kAborted;
  std::string checkpoint;  ///< the offset of the checkpoint read with it ("" when none)
};

class KafkaTopicCheckpoint final : public Checkpoint {
 public:
  KafkaTopicCheckpoint(KafkaTopicCheckpointConfig config, std::string id)
      : config_(std::move(config)),
        id_(std::move(id)),
        transactional_id_("cppcdc-checkpoint." + id_) {}

  ~KafkaTopicCheckpoint() override {
    if (producer_rkt_ != nullptr) rd_kafka_topic_destroy(producer_rkt_);
  }

  std::string name() const override { return "kafka_topic"; }

  /// Writes a tombstone for the id: compaction then drops its record.
  /// Tombstones for the record and for the Kafka sink's reconciliation marker beside it
  /// ("<id>.reconciliation"), so that nothing of the pipeline stays in the topic.
  Status write_tombstone() {
    auto producer = new_handle(RD_KAFKA_PRODUCER, false);
    if (!producer) return fail(producer.error());
    const std::string marker = id_ + ".reconciliation";
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (const std::string& key : std::vector<std::string>{id_, marker}) {
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        e = rd_kafka_producev(producer->get(), RD_KAFKA_V_TOPIC(config_.topic.c_str()),
                              RD_KAFKA_V_KEY(key.data(), key.size()), RD_KAFKA_V_VALUE(nullptr, 0),
                              RD_KAFKA_V_END);
      }
    }
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = rd_kafka_flush(producer->get(), timeout_ms());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return fail(Error::checkpoint(
          ErrorKind::kTransient,
          "cannot write the tombstone for " + location() + ": " + rd_kafka_err2str(e)));
    }
    return ok();
  }

  /// `cppcdc preflight`: the brokers answer, the topic is compacted or missing (a start
  /// creates it), and the record is read; nothing is created or written. At most
  /// kPreflightConnectMs for the brokers' first answer, kPreflightCallMs per look-up, and
  /// kPreflightConnectMs for reading the topic to its end.
  CheckpointPreflight preflight(const std::string& where_described) {
    using Outcome = PreflightCheck::Outcome;
    preflight_ = true;
    marker_reported_ = true;  // a line below instead of a log line
    CheckpointPreflight out;
    auto admin = new_handle(RD_KAFKA_PRODUCER, false);
    if (!admin) {
      out.checks.push_back(preflight_failure("the checkpoint topic's client", admin.error()));
      return out;
    }
    const std::string servers = in_quotes(config_.bootstrap_servers);
    const rd_kafka_metadata_t* md = nullptr;
    const auto started = Clock::now();
    const rd_kafka_resp_err_t err =
        rd_kafka_metadata(admin->get(), 0, nullptr, &md,
                          std::min(kPreflightConnectMs, static_cast<int>(config_.timeout_ms)));
    if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE && config_.bootstrap_servers_from_sink) {
      // The sink's own check (below) fails for the same address: one FAIL for one mistake.
      out.checks.push_back({Outcome::kWarn,
                            "the checkpoint topic was not checked: its brokers are [sink] "
                            "bootstrap_servers " +
                                servers +
                                ", which answers, but not as a Kafka broker (see the "
                                "sink's check)",
                            ""});
      return out;
    }
    if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
      out.checks.push_back({Outcome::kFail,
                            "[state.offset] bootstrap_servers " + servers +
                                " answers, but not as a Kafka broker (" + rd_kafka_err2name(err) +
                                ": " + rd_kafka_err2str(err) + ")",
                            unsupported_feature_hint(config_.bootstrap_servers)});
      return out;
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const auto took =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
      std::string last;
      {
        std::lock_guard lock(tail_.mutex);
        last = tail_.last;
      }
      out.checks.push_back(
          {Outcome::kFail,
           "the brokers of the checkpoint topic, " + servers + ", did not answer within " +
               std::to_string(took.count() / 1000) + " s (" + rd_kafka_err2name(err) + ": " +
               rd_kafka_err2str(err) + ")" +
               (last.empty() ? std::string() : "; librdkafka: " + last),
           "check [state.offset] bootstrap_servers (by default the Kafka sink's): host:port of a "
           "broker listener, brokers running and reachable from here; a start would retry and "
           "then stop",
           /*unreachable=*/true});
      return out;
    }
    rd_kafka_metadata_destroy(md);
    out.checks.push_back(
        {Outcome::kPass, "the brokers of the checkpoint topic, " + servers + ", answer", ""});
    auto policy = cleanup_policy(admin->get());
    if (!policy) {
      out.checks.push_back(preflight_failure(
          "the checkpoint topic " + where() + " cannot be looked up", policy.error()));
      return out;
    }
    if (!*policy) {
      out.checks.push_back({Outcome::kPass,
                            "the checkpoint topic " + in_quotes(config_.topic) +
                                " does not exist yet: the first start creates it (compacted); "
                                "no checkpoint yet (" +
                                where_described + "): a first start",
                            ""});
      return out;
    }
    if (policy->value().find("compact") == std::string::npos) {
      out.checks.push_back({Outcome::kFail,
                            "the checkpoint topic " + where() + " has cleanup.policy=" +
                                policy->value() + ": Kafka would delete checkpoints by age",
                            "set the topic's cleanup.policy to compact "
                            "(kafka-configs.sh --alter --entity-type topics --entity-name " +
                                config_.topic +
                                " --add-config cleanup.policy=compact), or set [state.offset] "
                                "topic to another topic"});
      return out;
    }
    out.checks.push_back({Outcome::kPass,
                          "the checkpoint topic " + in_quotes(config_.topic) +
                              " exists and is compacted (cleanup.policy=" + policy->value() + ")",
                          ""});
    admin->reset();
    auto loaded = read_topic();
    if (!loaded) {
      out.checks.push_back(preflight_failure(
          "the checkpoint (" + where_described + ") cannot be read", loaded.error()));
      return out;
    }
    if (!*loaded) {
      out.checks.push_back(
          {Outcome::kPass, "no checkpoint yet (" + where_described + "): a first start", ""});
    } else {
      out.record = **loaded;
      out.checks.push_back({Outcome::kPass,
                            "checkpoint at " + out.record->offset + " (" + where_described + ")",
                            ""});
    }
    if (marker_found_) {
      out.in_flight_check = out.checks.size();
      out.in_flight = "reconciliation marker " + in_quotes(id_ + ".reconciliation") + " (" +
                      marker_found_->value + ")";
      out.checks.push_back(
          {Outcome::kWarn, describe_marker(*marker_found_),
           "nothing to do, unless a cppcdc of this pipeline is running now (then the marker "
           "is its batch in flight)"});
    }
    return out;
  }

  /// Creates the topic (compacted) when missing; refuses one that is not compacted.
  /// At open, before the sinks open: read the topic once (read_uncommitted, so that a
  /// transaction a killed run left open does not hold it up), so that a start whose [sink]
  /// transactional_id another live key carries stops before its producer fences that other
  /// pipeline's (load(), read_committed, refuses it too). Nothing to do without a
  /// transactional_id.
  Status check_transactional_id() {
    if (config_.transactional_id.empty()) return ok();
    std::lock_guard lock(mutex_);
    auto read = read_topic(/*committed=*/false);
    if (!read) return fail(read.error());
    return ok();
  }

  Status ensure_topic() {
    auto admin = new_handle(RD_KAFKA_PRODUCER, false);
    if (!admin) return fail(admin.error());
    rd_kafka_t* rk = admin->get();
    // A metadata request first: a KRaft controller port refuses it at once (_UNSUPPORTED_FEATURE),
    // while the admin requests below would wait for a controller broker until timeout_ms.
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t merr = metadata(rk, nullptr, &md, "looking up the checkpoint topic");
    if (merr == RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_metadata_destroy(md);
    } else if (stopping()) {
      return fail(stopped("looking up the checkpoint topic"));
    } else if (merr == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
      return fail(not_a_broker("looking up the checkpoint topic", rd_kafka_err2str(merr)));
    } else {
      return fail(unreachable("looking up the checkpoint topic", rd_kafka_err2str(merr), true));
    }
    auto policy = cleanup_policy(rk);
    if (!policy) return fail(policy.error());
    if (!*policy) {
      CPPCDC_TRY(create_topic(rk));
      return ok();
    }
    if (policy->value().find("compact") == std::string::npos) {
      return fail(Error::checkpoint(ErrorKind::kConfiguration,
                                    "the checkpoint topic " + where() +
                                        " has cleanup.policy=" + policy->value() +
                                        ", so Kafka would delete checkpoints by age; set its "
                                        "cleanup.policy to compact, or name another topic")
                      .for_setting(SettingOwner::kCheckpoint, "topic"));
    }
    return ok();
  }

  bool takes_over() const override { return true; }

  // The producer's init_transactions (start_producer()) fences an earlier producer of this
  // checkpoint's transactional id and aborts the save it left open, which load() would
  // otherwise wait for until the broker's transaction timeout ended it.
  Status take_over() override {
    std::lock_guard lock(mutex_);
    if (!producer_) CPPCDC_TRY(start_producer());
    return ok();
  }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override {
    std::lock_guard lock(mutex_);
    cache_valid_ = false;
    auto loaded = read_topic();
    if (!loaded) return loaded;
    cached_ = *loaded;
    cache_valid_ = true;
    return loaded;
  }

  Result<std::optional<CheckpointRecord>> current_record() override {
    {
      std::lock_guard lock(mutex_);
      if (cache_valid_) return cached_;
    }
    return do_load();
  }

  Status do_save(const CheckpointRecord& record) override {
    std::lock_guard lock(mutex_);
    if (!producer_) CPPCDC_TRY(start_producer());
    const std::string value = FileCheckpoint::encode(record);
    rd_kafka_t* rk = producer_.get();
    if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk); e != nullptr) {
      return fail(txn_error("beginning the checkpoint transaction", e));
    }
    // The Kafka sink's transactional_id as a header, as the sink writes it (see read_topic()).
    rd_kafka_headers_t* headers = nullptr;
    if (!config_.transactional_id.empty()) {
      headers = rd_kafka_headers_new(1);
      rd_kafka_header_add(headers, kCheckpointTransactionalIdHeader, -1,
                          config_.transactional_id.data(),
                          static_cast<ssize_t>(config_.transactional_id.size()));
    }
    // No header list (nullptr) is a record without headers to librdkafka.
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_RKT(producer_rkt_), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(id_.data(), id_.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR && headers != nullptr) {
      rd_kafka_headers_destroy(headers);  // owned by the producer only once it took the record
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      (void)rd_kafka_abort_transaction(rk, timeout_ms());
      cache_valid_ = false;
      return fail(Error::checkpoint(
          ErrorKind::kTransient, "cannot send the checkpoint at " + record.offset + " (" +
                                     std::to_string(value.size()) + " bytes) to " + where() + ": " +
                                     rd_kafka_err2str(err)));
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(config_.timeout_ms);
    for (;;) {
      // In slices (a timed-out commit is resumed by calling it again), to see a stop request.
      rd_kafka_error_t* e = rd_kafka_commit_transaction(rk, slice_ms());
      if (e == nullptr) break;
      if (rd_kafka_error_is_retriable(e) && stopping()) {
        rd_kafka_error_destroy(e);
        cache_valid_ = false;
        // Whether it committed is for the next load() to read.
        return fail(stopped("committing the checkpoint at " + record.offset));
      }
      if (rd_kafka_error_is_retriable(e) && Clock::now() < deadline) {
        rd_kafka_error_destroy(e);
        continue;
      }
      const bool abortable = rd_kafka_error_txn_requires_abort(e) != 0;
      Error error = txn_error("committing the checkpoint at " + record.offset, e);
      if (abortable) (void)rd_kafka_abort_transaction(rk, timeout_ms());
      cache_valid_ = false;
      return fail(std::move(error));
    }
    cached_ = record;
    cache_valid_ = true;
    return ok();
  }

 private:
  bool stopping() const {
    return config_.stop != nullptr && config_.stop->load(std::memory_order_relaxed);
  }
  Error stopped(const std::string& what) const {
    return Error::checkpoint(ErrorKind::kTransient, "stopping: " + what + " " + where() +
                                                        " was cut short by the stop request");
  }
  /// One wait of a transactional call: at most a second, so that a stop request is seen.
  int slice_ms() const { return std::min(timeout_ms(), 1'000); }

  /// The answer to an admin request on `queue`, waited for up to timeout_ms (and 5 s more) in
  /// slices; nullptr when none came or a stop request ended the wait.
  rd_kafka_event_t* poll_answer(rd_kafka_queue_t* queue) const {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms() + 5'000);
    while (!stopping() && Clock::now() < deadline) {
      if (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 500)) return ev;
    }
    return nullptr;
  }

  /// Errors of a metadata request that mean "no broker answered (yet)": waited out until the
  /// deadline. librdkafka reports a refused connection at once (_TRANSPORT, then
  /// _ALL_BROKERS_DOWN), long before a broker that restarts is back.
  static bool no_broker_yet(rd_kafka_resp_err_t err) {
    return err == RD_KAFKA_RESP_ERR__TIMED_OUT || err == RD_KAFKA_RESP_ERR__TRANSPORT ||
           err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__RESOLVE;
  }

  /// rd_kafka_metadata for `rkt`, retried up to timeout_ms while no broker answers (a stop
  /// request ends the wait: then the last error). `what` names the step in the one log line
  /// that says the wait began.
  rd_kafka_resp_err_t metadata(rd_kafka_t* rk, rd_kafka_topic_t* rkt,
                               const rd_kafka_metadata_t** md, const std::string& what) const {
    const auto started = Clock::now();
    const auto deadline = started + std::chrono::milliseconds(timeout_ms());
    bool told = false;
    for (;;) {
      const auto slice_end =
          std::min(deadline, Clock::now() + std::chrono::milliseconds(slice_ms()));
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(slice_end - Clock::now()).count();
      const rd_kafka_resp_err_t err = rd_kafka_metadata(
          rk, 0, rkt, md, static_cast<int>(std::clamp<std::int64_t>(left, 1, 1'000)));
      if (!no_broker_yet(err) || stopping() || Clock::now() >= deadline) return err;
      if (!told && !preflight_) {
        told = true;
        spdlog::warn(
            "kafka_topic checkpoint: {} {}: no broker answers yet ({}); waiting up to "
            "timeout_ms ({} ms) for one",
            what, where(), rd_kafka_err2str(err), config_.timeout_ms);
      }
      // A refused connection comes back at once: the rest of the slice is waited out here
      // (in short steps, to see a stop request), not spent in a busy loop.
      while (!stopping() && Clock::now() < slice_end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }

  std::string where() const {
    return in_quotes(config_.topic) + " on " + in_quotes(config_.bootstrap_servers);
  }
  std::string location() const { return "topic " + where() + ", key " + in_quotes(id_); }
  int timeout_ms() const {
    return preflight_ ? std::min(kPreflightCallMs, static_cast<int>(config_.timeout_ms))
                      : static_cast<int>(config_.timeout_ms);
  }
  std::int64_t load_timeout_ms() const {
    return preflight_ ? std::min<std::int64_t>(kPreflightConnectMs, config_.load_timeout_ms)
                      : config_.load_timeout_ms;
  }

  Result<Handle> new_handle(rd_kafka_type_t type, bool read_committed,
                            bool transactional = false) const {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    const auto set = [&](const std::string& name, const std::string& value) -> Status {
      if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) ==
          RD_KAFKA_CONF_OK) {
        return ok();
      }
      const std::string shown =
          is_secret_kafka_property(name) ? std::string("(redacted)") : in_quotes(value);
      return fail(at_setting(
          config_,
          Error::checkpoint(ErrorKind::kConfiguration,
                            "librdkafka refuses " + name + " = " + shown + ": " + err),
          name == "bootstrap.servers" ? "bootstrap_servers" : "kafka_properties." + name));
    };
    Status st = set("bootstrap.servers", config_.bootstrap_servers);
    if (st) st = set("client.id", "cppcdc-checkpoint");
    for (const auto& [name, value] : config_.properties) {
      // Only what this client takes: librdkafka warns (CONFWARN) at every start about a
      // producer's property given to the reader, and [sink]'s properties are a producer's.
      if (st && takes_property(type, name)) st = set(name, value);
    }
    if (type == RD_KAFKA_CONSUMER) {
      if (st) st = set("isolation.level", read_committed ? "read_committed" : "read_uncommitted");
      if (st) st = set("enable.partition.eof", "true");
      if (st) st = set("enable.auto.commit", "false");
      if (st) st = set("group.id", "cppcdc-checkpoint-reader");  // assign() only: never joins
      if (st) st = set("fetch.message.max.bytes", kMaxRecordBytes);
    } else {
      if (st) st = set("message.max.bytes", kMaxRecordBytes);
      if (st) st = set("acks", "all");
      if (st) st = set("message.timeout.ms", std::to_string(config_.timeout_ms));
      if (transactional && st) st = set("transactional.id", transactional_id_);
    }
    if (!st) {
      rd_kafka_conf_destroy(conf);
      return fail(st.error());
    }
    rd_kafka_conf_set_log_cb(conf, &quiet_log);
    if (preflight_) rd_kafka_conf_set_opaque(conf, static_cast<void*>(&tail_));
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return fail(Error::checkpoint(ErrorKind::kConfiguration,
                                    std::string("librdkafka cannot create a client for the "
                                                "checkpoint topic: ") +
                                        err));
    }
    return Handle(rk);
  }

  /// The topic's cleanup.policy, or nullopt when the topic does not exist.
  Result<std::optional<std::string>> cleanup_policy(rd_kafka_t* rk) const {
    rd_kafka_ConfigResource_t* resource =
        rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, config_.topic.c_str());
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t* options =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    char err[256];
    (void)rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms(), err, sizeof err);
    rd_kafka_DescribeConfigs(rk, &resource, 1, options, queue);
    rd_kafka_event_t* ev = poll_answer(queue);
    Result<std::optional<std::string>> out = std::optional<std::string>{};
    if (ev == nullptr) {
      out = fail(stopping() ? stopped("looking up the checkpoint topic")
                            : unreachable("looking up the checkpoint topic"));
    } else if (rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
      out = fail(not_a_broker("looking up the checkpoint topic", rd_kafka_event_error_string(ev)));
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      out = fail(unreachable("looking up the checkpoint topic", rd_kafka_event_error_string(ev)));
    } else {
      const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(ev);
      std::size_t n = 0;
      const rd_kafka_ConfigResource_t** resources =
          rd_kafka_DescribeConfigs_result_resources(result, &n);
      for (std::size_t i = 0; i < n; ++i) {
        const rd_kafka_resp_err_t e = rd_kafka_ConfigResource_error(resources[i]);
        if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) break;  // missing: nullopt
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
          const char* msg = rd_kafka_ConfigResource_error_string(resources[i]);
          out = fail(Error::checkpoint(
              e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ? ErrorKind::kConfiguration
                                                                : ErrorKind::kTransient,
              "looking up the checkpoint topic " + where() + ": " + rd_kafka_err2name(e) +
                  (msg ? ": " + std::string(msg) : std::string())));
          break;
        }
        std::size_t m = 0;
        const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(resources[i], &m);
        std::string policy = "delete";
        for (std::size_t j = 0; j < m; ++j) {
          if (std::string_view(rd_kafka_ConfigEntry_name(entries[j])) == "cleanup.policy" &&
              rd_kafka_ConfigEntry_value(entries[j]) != nullptr) {
            policy = rd_kafka_ConfigEntry_value(entries[j]);
          }
        }
        out = std::optional<std::string>(policy);
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(resource);
    return out;
  }

  Status create_topic(rd_kafka_t* rk) const {
    char err[512];
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(config_.topic.c_str(), 1,
                                                    config_.replication_factor, err, sizeof err);
    if (nt == nullptr) {
      return fail(Error::checkpoint(ErrorKind::kConfiguration,
                                    "cannot create the checkpoint topic " + where() + ": " + err)
                      .for_setting(SettingOwner::kCheckpoint, "topic"));
    }
    (void)rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    (void)rd_kafka_NewTopic_set_config(nt, "max.message.bytes", kMaxRecordBytes);
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t* options =
        rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    (void)rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms(), err, sizeof err);
    (void)rd_kafka_AdminOptions_set_operation_timeout(options, timeout_ms(), err, sizeof err);
    rd_kafka_CreateTopics(rk, &nt, 1, options, queue);
    rd_kafka_event_t* ev = poll_answer(queue);
    Status st = ok();
    if (ev == nullptr) {
      st = fail(stopping() ? stopped("creating the checkpoint topic")
                           : unreachable("creating the checkpoint topic"));
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      st = fail(unreachable("creating the checkpoint topic", rd_kafka_event_error_string(ev)));
    } else {
      std::size_t n = 0;
      const rd_kafka_topic_result_t** topics =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      for (std::size_t i = 0; i < n && st; ++i) {
        const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(topics[i]);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
          spdlog::info("created the compacted checkpoint topic {}", where());
        } else if (e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          const char* msg = rd_kafka_topic_result_error_string(topics[i]);
          st = fail(Error::checkpoint(ErrorKind::kConfiguration,
                                      "cannot create the checkpoint topic " + where() + " (" +
                                          rd_kafka_err2name(e) +
                                          (msg ? ": " + std::string(msg) : std::string()) +
                                          "); create it with cleanup.policy=compact, or grant "
                                          "CREATE to cppcdc's principal")
                        .for_setting(SettingOwner::kCheckpoint, "topic"));
        }
      }
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_queue_destroy(queue);
    rd_kafka_NewTopic_destroy(nt);
    return st;
  }

  /// _UNSUPPORTED_FEATURE: bootstrap_servers answers but is no broker (a KRaft controller).
  Error not_a_broker(const std::string& what, const std::string& detail) const {
    Error e = Error::checkpoint(ErrorKind::kConfiguration,
                                what + " " + where() + " failed (" + detail +
                                    "): bootstrap_servers answers, but not as a Kafka broker; " +
                                    unsupported_feature_hint(config_.bootstrap_servers));
    return at_setting(config_, std::move(e), "bootstrap_servers");
  }

  /// `what`: the call ("looking up the checkpoint topic"); `detail`: librdkafka's error text;
  /// `retried`: metadata() kept asking until timeout_ms was over.
  Error unreachable(const std::string& what, const std::string& detail = {},
                    bool retried = false) const {
    const std::string ms = std::to_string(timeout_ms()) + " ms";
    std::string text = what + " " + where() +
                       (retried ? " waited timeout_ms (" + ms +
                                      ") for a broker of bootstrap_servers to answer; none did"
                                : " got no answer from the brokers within timeout_ms (" + ms + ")");
    if (!detail.empty()) text += " (librdkafka, last: " + detail + ")";
    return Error::checkpoint(
        ErrorKind::kTransient,
        text +
            "; check that the brokers run and that bootstrap_servers names their listener "
            "(host and port; by default the Kafka sink's)");
  }

  /// Where partition `p` of the topic starts and ends (`low`, `high`). A partition that has
  /// no leader yet, as right after the topic was created (or during a leader election), is
  /// asked again every 100 ms until timeout_ms has passed or a stop is requested; any other
  /// error is returned at once.
  rd_kafka_resp_err_t query_end(rd_kafka_t* rk, std::int32_t p, std::int64_t& low,
                                std::int64_t& high) const {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms());
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
          rk, config_.topic.c_str(), p, &low, &high,
          static_cast<int>(std::max<std::int64_t>(left.count(), 1)));
      const bool no_leader_yet = e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                                 e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                                 e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      if (!no_leader_yet || stopping() ||
          Clock::now() + std::chrono::milliseconds(100) >= deadline) {
        return e;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  /// Reads the topic to its end (see the top of this file). `committed` false: read_uncommitted,
  /// only for the transactional_id check at open (it must not wait for a transaction a killed
  /// run left open on the topic: the sink's init_transactions, after open, aborts it); the
  /// record is then neither decoded nor returned, and the marker is left alone.
  Result<std::optional<CheckpointRecord>> read_topic(bool committed = true) {
    auto consumer = new_handle(RD_KAFKA_CONSUMER, committed);
    if (!consumer) return fail(consumer.error());
    auto probe = new_handle(RD_KAFKA_CONSUMER, false);
    if (!probe) return fail(probe.error());
    rd_kafka_t* rk = consumer->get();
    rd_kafka_poll_set_consumer(rk);

    // The partitions, and where each ends now (uncommitted records included).
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, config_.topic.c_str(), nullptr);
    const rd_kafka_resp_err_t merr = metadata(rk, rkt, &md, "reading the checkpoint topic");
    rd_kafka_topic_destroy(rkt);
    if (merr != RD_KAFKA_RESP_ERR_NO_ERROR && stopping()) {
      return fail(stopped("reading the checkpoint topic"));
    }
    if (merr == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
      return fail(not_a_broker("reading the checkpoint topic", rd_kafka_err2str(merr)));
    }
    if (merr != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return fail(unreachable("reading the checkpoint topic", rd_kafka_err2str(merr), true));
    }
    std::vector<std::int32_t> partitions;
    rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (config_.topic != md->topics[i].topic) continue;
      topic_err = md->topics[i].err;
      for (int p = 0; p < md->topics[i].partition_cnt; ++p) {
        partitions.push_back(md->topics[i].partitions[p].id);
      }
    }
    rd_kafka_metadata_destroy(md);
    if (topic_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) return std::nullopt;  // no records
    if (topic_err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return fail(Error::checkpoint(
          ErrorKind::kTransient,
          "cannot read the checkpoint topic " + where() + ": " + rd_kafka_err2str(topic_err)));
    }
    std::map<std::int32_t, std::int64_t> target;  // partition -> end to reach
    rd_kafka_topic_partition_list_t* assignment =
        rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
    for (const std::int32_t p : partitions) {
      std::int64_t low = 0;
      std::int64_t high = 0;
      const rd_kafka_resp_err_t e = query_end(probe->get(), p, low, high);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && stopping()) {
        rd_kafka_topic_partition_list_destroy(assignment);
        return fail(stopped("finding the end of the checkpoint topic"));
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_topic_partition_list_destroy(assignment);
        return fail(unreachable("finding the end of the checkpoint topic", rd_kafka_err2str(e)));
      }
      if (high > low) {
        target[p] = high;
        rd_kafka_topic_partition_list_add(assignment, config_.topic.c_str(), p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
      }
    }
    probe->reset();
    if (target.empty()) {
      rd_kafka_topic_partition_list_destroy(assignment);
      return std::nullopt;
    }
    rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, assignment);
    rd_kafka_topic_partition_list_destroy(assignment);
    if (aerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return fail(Error::checkpoint(
          ErrorKind::kTransient,
          std::string("cannot read the checkpoint topic: ") + rd_kafka_err2str(aerr)));
    }

    std::optional<std::string> latest;  // the last value for the key (nullopt: tombstone/none)
    std::optional<std::string> marker;  // the Kafka sink's reconciliation marker, if set
    const std::string marker_key = id_ + ".reconciliation";
    std::string latest_at;
    // Where in the topic (partition, offset) the last marker and the last committed checkpoint
    // record were read.
    std::pair<std::int32_t, std::int64_t> marker_pos{-1, -1};
    std::pair<std::int32_t, std::int64_t> latest_pos{-1, -1};
    // Other keys whose last record carries a transactional_id header: key -> (id, partition,
    // offset). Only read when this pipeline's sink has a transactional_id.
    struct Named {
      std::string transactional_id;
      std::int32_t partition = 0;
      std::int64_t offset = 0;
    };
    std::map<std::string, Named> others;
    const auto started = Clock::now();
    const auto deadline = started + std::chrono::milliseconds(load_timeout_ms());
    bool waiting_logged = false;
    Status st = ok();
    while (!target.empty()) {
      if (stopping()) {
        st = fail(stopped("reading the checkpoint topic"));
        break;
      }
      if (Clock::now() >= deadline) {
        st = fail(Error::checkpoint(
            ErrorKind::kTransient,
            "the checkpoint topic " + where() +
                " could not be read to its end within "
                "load_timeout_ms (" +
                std::to_string(load_timeout_ms()) +
                " ms): a transaction still open on it holds back readers of committed data (the "
                "broker aborts it after its producer's transaction.timeout.ms); try again, or "
                "raise "
                "load_timeout_ms"));
        break;
      }
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
      if (m == nullptr) {
        if (!waiting_logged && Clock::now() - started > std::chrono::seconds(5)) {
          waiting_logged = true;
          spdlog::warn(
              "kafka_topic checkpoint: waiting for an open transaction on {} to end before "
              "reading the checkpoint (up to load_timeout_ms, {} ms): another pipeline's "
              "transaction on a shared topic, or a producer that is not this pipeline's; the "
              "broker aborts an abandoned one after its producer's transaction timeout (60 s "
              "by default) and its clean-up interval (up to 10 s)",
              where(), load_timeout_ms());
        }
        continue;
      }
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        auto it = target.find(m->partition);
        if (it != target.end() && m->offset >= it->second) target.erase(it);
      } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const std::string text = rd_kafka_message_errstr(m);
        if (m->err != RD_KAFKA_RESP_ERR__TRANSPORT &&
            m->err != RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
          st = fail(Error::checkpoint(ErrorKind::kTransient,
                                      "reading the checkpoint topic " + where() + ": " + text));
          rd_kafka_message_destroy(m);
          break;
        }
      } else {
        const std::string_view key =
            m->key != nullptr ? std::string_view(static_cast<const char*>(m->key), m->key_len)
                              : std::string_view();
        if (key == marker_key) {
          if (m->payload == nullptr) {
            marker.reset();
          } else {
            marker.emplace(static_cast<const char*>(m->payload), m->len);
          }
          marker_pos = {m->partition, m->offset};
        }
        if (m->key != nullptr && key != id_ && !config_.transactional_id.empty()) {
          // Per other key, the transactional_id its last record names (none: not kept).
          std::optional<std::string> named;
          rd_kafka_headers_t* headers = nullptr;
          const void* value = nullptr;
          std::size_t size = 0;
          if (m->payload != nullptr &&
              rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
              rd_kafka_header_get_last(headers, kCheckpointTransactionalIdHeader, &value, &size) ==
                  RD_KAFKA_RESP_ERR_NO_ERROR &&
              value != nullptr) {
            named.emplace(static_cast<const char*>(value), size);
          }
          if (named) {
            others[std::string(key)] = {std::move(*named), m->partition, m->offset};
          } else {
            others.erase(std::string(key));
          }
        }
        if (m->key != nullptr && key == id_) {
          if (m->payload == nullptr) {
            latest.reset();
          } else {
            latest.emplace(static_cast<const char*>(m->payload), m->len);
          }
          latest_at =
              "partition " + std::to_string(m->partition) + " offset " + std::to_string(m->offset);
          latest_pos = {m->partition, m->offset};
        }
        auto it = target.find(m->partition);
        if (it != target.end() && m->offset + 1 >= it->second) target.erase(it);
      }
      rd_kafka_message_destroy(m);
    }
    (void)rd_kafka_consumer_close(rk);
    if (!st) return fail(st.error());
    for (const auto& [key, named] : others) {
      if (named.transactional_id != config_.transactional_id) continue;
      return fail(shared_transactional_id(key, "partition " + std::to_string(named.partition) +
                                                   " offset " + std::to_string(named.offset)));
    }
    if (!committed) return std::nullopt;
    std::optional<CheckpointRecord> record;
    if (latest) {
      auto decoded = FileCheckpoint::decode_stored(
          *latest, "checkpoint record in " + location() + " (" + latest_at + ")",
          "something other than cppcdc wrote this key; find what did, then write the last good "
          "record back, or remove the key (a tombstone) to start over from the source's own "
          "position");
      if (!decoded) return fail(decoded.error());
      record = std::move(*decoded);
    }
    marker_found_.reset();
    if (marker) {
      // The sink's marker goes out (and is acknowledged) before its batch's transaction writes
      // the checkpoint record, and the topic keeps both in one partition (the backend creates
      // it with one): a committed checkpoint record after the marker means that transaction
      // (or a later one) committed. Kafka's own offsets are compared, not source positions,
      // which are opaque here.
      MarkerVerdict verdict = MarkerVerdict::kAborted;
      if (latest && latest_pos.first == marker_pos.first) {
        if (latest_pos.second > marker_pos.second) verdict = MarkerVerdict::kCommitted;
      } else if (latest) {
        verdict = MarkerVerdict::kUnknown;  // a topic of several partitions: no order
      }
      marker_found_ = FoundMarker{*marker, verdict, record ? record->offset : std::string()};
    }
    if (marker_found_ && !marker_reported_) {
      marker_reported_ = true;
      spdlog::warn("kafka_topic checkpoint: {}", describe_marker(*marker_found_));
    }
    if (!record) return std::nullopt;
    return std::optional<CheckpointRecord>(std::move(*record));
  }

  /// Another live key `other` (its last record at `at`) was committed under this pipeline's
  /// transactional_id.
  Error shared_transactional_id(const std::string& other, const std::string& at) const {
    const std::string tid = in_quotes(config_.transactional_id);
    return Error::checkpoint(
               ErrorKind::kConfiguration,
               "the checkpoint topic " + where() + " holds a checkpoint under key " +
                   in_quotes(other) + " (" + at + ") committed with transactional_id " + tid +
                   ", the same [sink] transactional_id as this pipeline, whose key is " +
                   in_quotes(id_) +
                   ": two pipelines sharing a transactional_id fence each other's Kafka "
                   "producers, so this one does not start. Give each pipeline its own [sink] "
                   "transactional_id. If key " +
                   in_quotes(other) +
                   " is this pipeline's former id ([source] slot_name or source_id, renamed on "
                   "purpose), its record is left over: remove it once no cppcdc runs with it, "
                   "with `cppcdc teardown --config <the old configuration>` (for PostgreSQL "
                   "that also drops the old replication slot) or by writing a tombstone for key " +
                   in_quotes(other) + " to topic " + in_quotes(config_.topic) +
                   " (docs/kafka.md, \"The kafka_topic checkpoint backend\"); `cppcdc "
                   "migrate-state` moves a record between backends under one key and does not "
                   "rename it")
        .for_setting(SettingOwner::kSink, "transactional_id");
  }

  /// What the reconciliation marker found by the last read says about the batch it was
  /// written for.
  std::string describe_marker(const FoundMarker& found) const {
    const std::string head =
        "(reconciliation marker " + in_quotes(id_ + ".reconciliation") + ": " + found.value + ")";
    switch (found.verdict) {
      case MarkerVerdict::kCommitted:
        return "the previous run stopped after a batch's transaction committed but before it "
               "cleared " +
               head + "; the checkpoint, at " + found.checkpoint +
               ", was committed after the marker, so read_committed consumers have that batch "
               "and nothing of it is delivered again";
      case MarkerVerdict::kUnknown:
        return "the previous run stopped in the middle of a batch or right after its commit " +
               head + "; the checkpoint topic has several partitions, so which cannot be told: " +
               "if aborted, read_committed consumers saw none of it and it is delivered again "
               "from the checkpoint (at " +
               found.checkpoint + "); if committed, the checkpoint includes it";
      case MarkerVerdict::kAborted:
        break;
    }
    return "the previous run stopped in the middle of a batch " + head +
           "; its transaction was aborted, so read_committed consumers saw none of it, and it "
           "is delivered again from the checkpoint" +
           (found.checkpoint.empty() ? std::string(" (none yet: from the start)")
                                     : " (at " + found.checkpoint + ")");
  }

  Status start_producer() {
    auto producer = new_handle(RD_KAFKA_PRODUCER, false, true);
    if (!producer) return fail(producer.error());
    rd_kafka_t* rk = producer->get();
    // Fences an older instance that saved for the same id.
    const auto deadline = Clock::now() + std::chrono::milliseconds(config_.timeout_ms);
    for (;;) {
      rd_kafka_error_t* e = rd_kafka_init_transactions(rk, slice_ms());
      if (e == nullptr) break;
      if (rd_kafka_error_is_retriable(e) && stopping()) {
        rd_kafka_error_destroy(e);
        return fail(stopped("initializing the checkpoint writer"));
      }
      if (rd_kafka_error_is_retriable(e) && Clock::now() < deadline) {
        rd_kafka_error_destroy(e);
        continue;
      }
      return fail(txn_error("initializing the checkpoint writer", e));
    }
    producer_rkt_ = rd_kafka_topic_new(rk, config_.topic.c_str(), nullptr);
    producer_ = std::move(*producer);
    return ok();
  }

  /// Takes `e` over.
  Error txn_error(const std::string& what, rd_kafka_error_t* e) {
    const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    const bool fatal = rd_kafka_error_is_fatal(e) != 0;
    std::string text = std::string(rd_kafka_error_name(e)) + ": " + rd_kafka_error_string(e);
    rd_kafka_error_destroy(e);
    if (fatal && producer_) {
      char reason[512];
      if (rd_kafka_fatal_error(producer_.get(), reason, sizeof reason) !=
          RD_KAFKA_RESP_ERR_NO_ERROR) {
        text = reason;
      }
    }
    if (code == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) return not_a_broker(what + " in", text);
    const std::string head = what + " in " + where() + " failed (" + text + ")";
    if (code == RD_KAFKA_RESP_ERR__FENCED || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
        code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH ||
        text.find("fenced") != std::string::npos) {
      return Error::checkpoint(ErrorKind::kTerminal,
                               head + ": another writer of checkpoint " + in_quotes(id_) +
                                   " started (transactional id " + in_quotes(transactional_id_) +
                                   ") and took over; only the newest writer may save, so this "
                                   "one stops");
    }
    if (code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
        code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
        code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED) {
      return Error::checkpoint(ErrorKind::kConfiguration,
                               head +
                                   "; grant cppcdc's principal WRITE on the topic and on "
                                   "transactional id " +
                                   in_quotes(transactional_id_));
    }
    if (fatal) return Error::checkpoint(ErrorKind::kTerminal, head);
    return Error::checkpoint(ErrorKind::kTransient, head);
  }

  KafkaTopicCheckpointConfig config_;
  std::string id_;
  std::string transactional_id_;
  std::mutex mutex_;
  Handle producer_;  // created by the first save
  rd_kafka_topic_t* producer_rkt_ = nullptr;
  bool marker_reported_ = false;             // the reconciliation marker was logged once already
  std::optional<FoundMarker> marker_found_;  // the marker the last read found
  bool preflight_ = false;    // `cppcdc preflight`: short timeouts, librdkafka's log kept in tail_
  mutable LogTail tail_;      // librdkafka's last warning (preflight only)
  bool cache_valid_ = false;  // cached_ is what the topic holds as far as this instance knows
  std::optional<CheckpointRecord> cached_;
};

class ConfiguredKafkaTopic final : public ConfiguredCheckpoint {
 public:
  explicit ConfiguredKafkaTopic(KafkaTopicCheckpointConfig config) : config_(std::move(config)) {}

  std::string describe(const std::string& checkpoint_id) const override {
    return "kafka_topic " + in_quotes(config_.topic) + " on " +
           in_quotes(config_.bootstrap_servers) + ", key " + in_quotes(checkpoint_id);
  }
  bool durable() const override { return true; }
  Status remove(const std::string& checkpoint_id) const override {
    return remove_kafka_topic_checkpoint(config_, checkpoint_id);
  }
  CheckpointPreflight preflight(const std::string& checkpoint_id) const override {
    if (auto st = validate(config_); !st) {
      CheckpointPreflight out;
      out.checks.push_back(preflight_failure("the checkpoint backend", st.error()));
      return out;
    }
    KafkaTopicCheckpoint checkpoint(config_, checkpoint_id);
    return checkpoint.preflight(describe(checkpoint_id));
  }
  Result<std::shared_ptr<Checkpoint>> open(const std::string& checkpoint_id) const override {
    KafkaTopicCheckpointConfig config = config_;
    // The program's stop request ends waits on brokers that do not answer.
    config.stop = &detail::g_process_stop_requested;
    auto opened = open_kafka_topic_checkpoint(config, checkpoint_id);
    if (!opened) return fail(opened.error());
    return std::shared_ptr<Checkpoint>(std::move(*opened));
  }
  std::optional<InSinkCheckpoint> in_sink(const std::string& checkpoint_id) const override {
    return InSinkCheckpoint{"kafka_topic", config_.bootstrap_servers, config_.topic, checkpoint_id};
  }

 private:
  KafkaTopicCheckpointConfig config_;
};

/// The key under which the server lists the keys of [state.offset] it took from [sink].
constexpr const char* kInheritedKey = "_inherited_from_sink";
/// The key under which the server passes the transactional Kafka [sink]'s transactional_id.
constexpr const char* kSinkTransactionalIdKey = "_sink_transactional_id";

Result<std::unique_ptr<ConfiguredCheckpoint>> configure(const Settings& settings) {
  KafkaTopicCheckpointConfig c;
  auto servers = settings.get_string("bootstrap_servers");
  if (!servers) return fail(servers.error());
  if (!*servers || (*servers)->empty()) {
    return fail(settings.missing("bootstrap_servers",
                                 "when backend = \"kafka_topic\" and [sink] is not a Kafka sink "
                                 "(\"host:port\" of the brokers that keep the checkpoint topic)"));
  }
  c.bootstrap_servers = std::move(**servers);
  // The keys the server copied from [sink] (config.cpp, inherit_sink_cluster).
  auto inherited = settings.get_string_list(kInheritedKey, "key");
  if (!inherited) return fail(inherited.error());
  if (*inherited) {
    for (const std::string& key : **inherited) {
      if (key == "bootstrap_servers") c.bootstrap_servers_from_sink = true;
      if (key == "kafka_properties") c.properties_from_sink = true;
    }
  }
  // The transactional [sink]'s transactional_id (config.cpp, inherit_sink_cluster).
  CPPCDC_TRY(detail::assign_string(settings, kSinkTransactionalIdKey, c.transactional_id));
  CPPCDC_TRY(detail::assign_string(settings, "topic", c.topic));
  if (c.topic.empty()) return fail(settings.error("topic", "expected a topic name, found \"\""));
  std::int64_t replication = c.replication_factor;
  CPPCDC_TRY(detail::assign_int(settings, "replication_factor", -1, 32'767, replication));
  if (replication == 0) {
    return fail(settings.error("replication_factor",
                               "expected -1 (the broker's default) or at least 1, found 0"));
  }
  c.replication_factor = static_cast<std::int32_t>(replication);
  CPPCDC_TRY(detail::assign_int(settings, "timeout_ms", 1, 3'600'000, c.timeout_ms));
  CPPCDC_TRY(detail::assign_int(settings, "load_timeout_ms", 1, 3'600'000, c.load_timeout_ms));
  auto properties =
      settings.get_string_map("kafka_properties", "\"librdkafka property\" = \"value\"");
  if (!properties) return fail(properties.error());
  if (*properties) c.properties = std::move(**properties);
  if (auto st = validate(c); !st) {
    const Error& e = st.error();
    if (!e.setting().empty() && e.setting_owner() == SettingOwner::kCheckpoint) {
      return fail(settings.error(e.setting(), e.message()));
    }
    return fail(e);
  }
  return std::unique_ptr<ConfiguredCheckpoint>(
      std::make_unique<ConfiguredKafkaTopic>(std::move(c)));
}

}  // namespace

Status validate(const KafkaTopicCheckpointConfig& config) {
  static constexpr const char* kOwned[] = {
      "bootstrap.servers", "transactional.id", "isolation.level", "enable.idempotence", "acks",
      "group.id"};
  for (const auto& [name, value] : config.properties) {
    for (const char* owned : kOwned) {
      if (name == owned) {
        return fail(at_setting(
            config,
            Error::checkpoint(ErrorKind::kConfiguration,
                              "the checkpoint backend sets " + name + " itself; remove it"),
            "kafka_properties." + name));
      }
    }
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    const bool accepted =
        rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK;
    rd_kafka_conf_destroy(conf);
    if (!accepted) {
      const std::string shown =
          is_secret_kafka_property(name) ? std::string("(redacted)") : in_quotes(value);
      return fail(
          at_setting(config,
                     Error::checkpoint(ErrorKind::kConfiguration,
                                       "librdkafka refuses " + name + " = " + shown + ": " + err),
                     "kafka_properties." + name));
    }
  }
  return ok();
}

Result<std::unique_ptr<Checkpoint>> open_kafka_topic_checkpoint(
    const KafkaTopicCheckpointConfig& config, const std::string& checkpoint_id) {
  CPPCDC_TRY(validate(config));
  auto checkpoint = std::make_unique<KafkaTopicCheckpoint>(config, checkpoint_id);
  CPPCDC_TRY(checkpoint->ensure_topic());
  CPPCDC_TRY(checkpoint->check_transactional_id());
  return std::unique_ptr<Checkpoint>(std::move(checkpoint));
}

Status remove_kafka_topic_checkpoint(const KafkaTopicCheckpointConfig& config,
                                     const std::string& checkpoint_id) {
  CPPCDC_TRY(validate(config));
  KafkaTopicCheckpoint checkpoint(config, checkpoint_id);
  CPPCDC_TRY(checkpoint.ensure_topic());
  return checkpoint.write_tombstone();
}

void register_kafka_topic_checkpoint_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_checkpoint_backend("kafka_topic", configure); });
}

}  // namespace cppcdc
