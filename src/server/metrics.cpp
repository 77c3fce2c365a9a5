#include "server/metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace cppcdc::server {
namespace {

constexpr std::size_t kOps = 7;  // Operation::kInsert .. Operation::kMessage
constexpr Operation kAllOps[kOps] = {
    Operation::kInsert,       Operation::kUpdate,   Operation::kDelete, Operation::kRead,
    Operation::kSchemaChange, Operation::kTruncate, Operation::kMessage};

std::size_t op_index(Operation op) noexcept {
  const auto i = static_cast<std::size_t>(op);
  return i < kOps ? i : kOps - 1;
}

// Seconds from a source commit to the acknowledgement: 5 ms to 10 min.
std::vector<double> latency_bounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

std::uint64_t row_bytes(const Row* row) noexcept {
  if (row == nullptr) return 0;
  std::uint64_t n = 0;
  for (const auto& column : *row) n += column.text ? column.text->size() : 0;
  return n;
}

std::uint64_t load(const std::atomic<std::uint64_t>& a) noexcept {
  return a.load(std::memory_order_relaxed);
}

// Adds on the single writer: no read-modify-write needed.
void bump(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// "gcc 12.2.0", "clang 14.0.6": the compiler of this build, for cppcdc_build_info.
std::string_view compiler_name() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

double age_ms(std::int64_t now_ms, std::int64_t at_ms) {
  return at_ms > 0 && now_ms > at_ms ? static_cast<double>(now_ms - at_ms) : 0.0;
}

}  // namespace

// ---- the text format ------------------------------------------------------------------------

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) return "NaN";
  return std::string(buffer.data(), end);
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  for (char c : help) {  // HELP text escapes backslash and newline only
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void Exposition::sample(std::string_view name, MetricLabels labels, double value) {
  out_ += name;
  if (labels.size() > 0) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, val] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += escape_label_value(val);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void Exposition::sample_with(std::string_view name,
                             std::span<const std::pair<std::string, std::string>> labels,
                             double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += escape_label_value(labels[i].second);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

// ---- histogram --------------------------------------------------------------------------------

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double value, std::uint64_t count) noexcept {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  bump(buckets_[i], count);
  sum_.store(sum_.load(std::memory_order_relaxed) + value * static_cast<double>(count),
             std::memory_order_relaxed);
  bump(count_, count);
}

void Histogram::write(Exposition& out, std::string_view name) const {
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += load(buckets_[i]);
    const std::string le = i < bounds_.size() ? format_metric_value(bounds_[i]) : "+Inf";
    const std::pair<std::string, std::string> label{"le", le};
    out.sample_with(bucket, std::span(&label, 1), static_cast<double>(cumulative));
  }
  out.sample(std::string(name) + "_sum", {}, sum_.load(std::memory_order_relaxed));
  // _count equals the +Inf bucket, which the format requires; the total above is used.
  out.sample(std::string(name) + "_count", {}, static_cast<double>(cumulative));
}

// ---- process figures --------------------------------------------------------------------------

std::optional<ProcessStats> read_process_stats() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return std::nullopt;
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string item; fields >> item;) f.push_back(item);
  // f[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  ProcessStats out;
  out.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
  out.virtual_bytes = std::stod(f[20]);
  out.resident_bytes = std::stod(f[21]) * page;
  // Boot time from /proc/stat's btime, plus the process's start in ticks since boot.
  std::ifstream proc_stat("/proc/stat");
  for (std::string l; std::getline(proc_stat, l);) {
    if (l.rfind("btime ", 0) == 0) {
      out.start_time_seconds = std::stod(l.substr(6)) + std::stod(f[19]) / ticks;
      break;
    }
  }
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    double n = 0;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++n;
    }
    ::closedir(dir);
    out.open_fds = n - 1;  // the directory stream's own descriptor
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) out.max_fds = static_cast<double>(limit.rlim_cur);
  return out;
}

// ---- the pipeline's metrics -------------------------------------------------------------------

struct PipelineMetrics::TableSlot {
  std::string name;  // written before the slot is published, then read-only
  std::array<std::atomic<std::uint64_t>, kOps> delivered{};
  std::array<std::atomic<std::uint64_t>, kOps> committed{};
};

PipelineMetrics::PipelineMetrics()
    : slots_(std::make_unique<TableSlot[]>(kMaxTableSeries + 1)), latency_(latency_bounds()) {
  slots_[kMaxTableSeries].name = std::string(kOtherTable);
}

PipelineMetrics::~PipelineMetrics() = default;

std::size_t PipelineMetrics::slot_for(const Event& event) {
  const std::string_view schema = event.schema ? std::string_view(*event.schema) : "";
  if (has_last_ && event.table == last_table_ && schema == last_schema_) return last_slot_;
  // "schema.table" (or "table") compared in place: no allocation unless the table is new.
  const std::string_view table = event.table;
  const auto names = [&](const std::string& name) {
    if (schema.empty()) return name == table;
    return name.size() == schema.size() + 1 + table.size() && name.starts_with(schema) &&
           name[schema.size()] == '.' && name.ends_with(table);
  };
  const std::size_t published = slot_count_.load(std::memory_order_relaxed);
  std::size_t slot = kMaxTableSeries;
  for (std::size_t i = 0; i < published; ++i) {  // only on a change of table
    if (names(slots_[i].name)) {
      slot = i;
      break;
    }
  }
  if (slot == kMaxTableSeries && published < kMaxTableSeries) {
    slots_[published].name =
        schema.empty() ? std::string(table) : std::string(schema) + "." + std::string(table);
    slot_count_.store(published + 1, std::memory_order_release);
    slot = published;
  }
  last_schema_.assign(schema);
  last_table_ = event.table;
  last_slot_ = slot;
  has_last_ = true;
  return slot;
}

// One pass over a batch does all of a hook's counting: the events of a batch of thousands
// are not in the cache any more when a second pass reaches them.
void PipelineMetrics::on_delivered(std::span<const Event> events) {
  std::uint64_t bytes = 0;
  delivered_runs_.clear();
  std::size_t i = 0;
  while (i < events.size()) {
    const Event& first = events[i];
    const std::size_t slot = slot_for(first);
    std::size_t j = i;
    do {
      const Event& e = events[j];
      bytes += row_bytes(e.after ? &*e.after : nullptr) + row_bytes(e.before.row());
      ++j;
    } while (j < events.size() && events[j].op == first.op && events[j].table == first.table &&
             events[j].schema == first.schema);
    bump(slots_[slot].delivered[op_index(first.op)], j - i);
    delivered_runs_.push_back(Run{slot, first.op, j});
    i = j;
  }
  bump(bytes_delivered_, bytes);
  bump(batches_delivered_, 1);
  last_delivered_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count(),
                           std::memory_order_relaxed);
}

template <typename Count>
void PipelineMetrics::for_each_run(std::span<const Event> events, Count count) {
  // The acknowledged events are a prefix of the last delivered batch: counted from its runs.
  // Anything else (an observer driven otherwise) is counted event by event.
  const bool prefix = !delivered_runs_.empty() && events.size() <= delivered_runs_.back().end;
  if (prefix) {
    std::size_t start = 0;
    for (const Run& run : delivered_runs_) {
      if (start >= events.size()) break;
      const std::size_t end = std::min(run.end, events.size());
      count(run.slot, run.op, end - start);
      start = end;
    }
    return;
  }
  std::size_t i = 0;
  while (i < events.size()) {
    const Event& first = events[i];
    const std::size_t slot = slot_for(first);
    std::size_t j = i + 1;
    while (j < events.size() && events[j].op == first.op && events[j].table == first.table &&
           events[j].schema == first.schema) {
      ++j;
    }
    count(slot, first.op, j - i);
    i = j;
  }
}

template <typename Observe>
void PipelineMetrics::for_each_commit_time(std::span<const Event> events, Observe observe) {
  // One latency observation per run of events with the same commit time (a transaction);
  // snapshot rows carry no commit time of their own and are left out.
  std::size_t i = 0;
  while (i < events.size()) {
    const std::int64_t ts = events[i].source.timestamp;
    std::size_t j = i;
    std::uint64_t n = 0;
    do {
      n += events[j].op != Operation::kRead;
      ++j;
    } while (j < events.size() && events[j].source.timestamp == ts);
    if (ts > 0 && n > 0) observe(ts, n);
    i = j;
  }
}

void PipelineMetrics::on_committed(std::span<const Event> events, std::int64_t acked_at_ms) {
  std::int64_t newest_ts = 0;
  const auto latency = [&](std::int64_t ts, std::uint64_t n) {
    latency_.observe(static_cast<double>(std::max<std::int64_t>(0, acked_at_ms - ts)) / 1000.0, n);
    newest_ts = std::max(newest_ts, ts);
  };
  // The batches the transaction carried are committed with this one.
  for (const CarriedRun& run : carried_runs_) bump(slots_[run.slot].committed[run.op], run.n);
  for (const auto& [ts, n] : carried_times_) latency(ts, n);
  bump(batches_committed_, carried_batches_ + 1);
  carried_runs_.clear();
  carried_times_.clear();
  carried_batches_ = 0;
  for_each_run(events, [&](std::size_t slot, Operation op, std::size_t n) {
    bump(slots_[slot].committed[op_index(op)], n);
  });
  for_each_commit_time(events, latency);
  if (newest_ts > 0) {
    commit_lag_ms_.store(std::max<std::int64_t>(0, acked_at_ms - newest_ts),
                         std::memory_order_relaxed);
  }
}

void PipelineMetrics::on_carried(std::span<const Event> events, std::int64_t /*acked_at_ms*/) {
  // Kept as runs (one per table and operation in a row), counted when the transaction commits.
  for_each_run(events, [&](std::size_t slot, Operation op, std::size_t n) {
    const std::size_t index = op_index(op);
    if (!carried_runs_.empty() && carried_runs_.back().slot == slot &&
        carried_runs_.back().op == index) {
      carried_runs_.back().n += n;
    } else {
      carried_runs_.push_back(CarriedRun{slot, index, n});
    }
  });
  for_each_commit_time(events, [&](std::int64_t ts, std::uint64_t n) {
    if (!carried_times_.empty() && carried_times_.back().first == ts) {
      carried_times_.back().second += n;
    } else {
      carried_times_.emplace_back(ts, n);
    }
  });
  ++carried_batches_;
}

void PipelineMetrics::on_carried_aborted() {
  carried_runs_.clear();
  carried_times_.clear();
  carried_batches_ = 0;
}

void PipelineMetrics::on_checkpoint(const CheckpointRecord& record) {
  checkpoint_saved_ms_.store(record.saved_at_ms, std::memory_order_relaxed);
  bump(checkpoints_saved_, 1);
}

std::uint64_t PipelineMetrics::committed(std::string_view table, Operation op) const {
  const std::size_t published = slot_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < published; ++i) {
    if (slots_[i].name == table) return load(slots_[i].committed[op_index(op)]);
  }
  return table == kOtherTable ? load(slots_[kMaxTableSeries].committed[op_index(op)]) : 0;
}

// ---- sinks ------------------------------------------------------------------------------------

std::uint64_t SinkTally::attempt_failures() const {
  if (sink != nullptr) {
    if (const auto own = sink->failed_attempts()) return *own;
  }
  return load(errors);
}

namespace {

// Forwards every call to the sink and counts it in the tally. Base is Sink or
// TransactionalSink; the latter's calls forward to the inner sink as one.
template <typename Base>
class CountedSink : public Base {
 public:
  CountedSink(std::unique_ptr<Sink> inner, std::shared_ptr<SinkTally> tally)
      : inner_(std::move(inner)), tally_(std::move(tally)) {
    tally_->sink = inner_.get();
  }
  Status write(std::span<const Event> events) override {
    return count(inner_->write(events), events.size());
  }
  Status flush() override {
    Status st = count(inner_->flush());
    if (st && !transactional()) bump(tally_->flushes, 1);
    return st;
  }
  Status close() override { return inner_->close(); }
  std::string name() const override { return inner_->name(); }
  std::chrono::milliseconds batch_delay() const override { return inner_->batch_delay(); }
  Status recover() override { return count(inner_->recover()); }
  std::string current_problem() const override { return inner_->current_problem(); }
  std::optional<std::uint64_t> failed_attempts() const override {
    return inner_->failed_attempts();
  }

 protected:
  bool transactional() const { return std::is_same_v<Base, TransactionalSink>; }
  Status count(Status st, std::size_t events = 0) {
    if (!st) {
      bump(tally_->errors, 1);
    } else {
      bump(tally_->events_written, events);
    }
    return st;
  }
  std::unique_ptr<Sink> inner_;
  std::shared_ptr<SinkTally> tally_;
};

class CountedTransactionalSink final : public CountedSink<TransactionalSink> {
 public:
  CountedTransactionalSink(std::unique_ptr<Sink> inner, std::shared_ptr<SinkTally> tally)
      : CountedSink(std::move(inner), std::move(tally)),
        tx_(static_cast<TransactionalSink*>(inner_.get())) {}
  Status begin() override { return tx_->begin(); }
  Status commit(const std::optional<CheckpointRecord>& record) override {
    Status st = count(tx_->commit(record));
    if (st) bump(tally_->flushes, 1);
    return st;
  }
  Status abort() override { return tx_->abort(); }

 private:
  TransactionalSink* tx_;
};

}  // namespace

std::unique_ptr<Sink> count_sink(std::unique_ptr<Sink> sink, std::shared_ptr<SinkTally> tally) {
  if (dynamic_cast<TransactionalSink*>(sink.get()) != nullptr) {
    return std::make_unique<CountedTransactionalSink>(std::move(sink), std::move(tally));
  }
  return std::make_unique<CountedSink<Sink>>(std::move(sink), std::move(tally));
}

void PipelineMetrics::add_sink(std::shared_ptr<const SinkTally> tally) {
  std::lock_guard lock(sinks_mutex_);
  sinks_.push_back(std::move(tally));
}

std::string PipelineMetrics::render(const MetricsInputs& in) const {
  Exposition out;
  const RuntimeAdminSnapshot& s = in.snapshot;
  const std::size_t published = slot_count_.load(std::memory_order_acquire);

  const auto per_table = [&](std::string_view name, std::string_view help, bool committed) {
    out.family(name, "counter", help);
    const auto write_slot = [&](const TableSlot& slot) {
      const auto& counters = committed ? slot.committed : slot.delivered;
      for (std::size_t op = 0; op < kOps; ++op) {
        const std::uint64_t v = load(counters[op]);
        if (v == 0) continue;  // a series appears with its first event
        out.sample(name, {{"table", slot.name}, {"op", to_string(kAllOps[op])}},
                   static_cast<double>(v));
      }
    };
    for (std::size_t i = 0; i < published; ++i) write_slot(slots_[i]);
    write_slot(slots_[kMaxTableSeries]);
  };
  per_table("cppcdc_events_delivered_total",
            "Events handed to the pipeline by a poll, by table and operation (redeliveries "
            "count again).",
            false);
  per_table("cppcdc_events_committed_total",
            "Events committed by this process (written, flushed and checkpointed; events a "
            "transactional sink carries in its open transaction count once it commits), by table "
            "and operation.",
            true);
  out.family("cppcdc_events_committed_lifetime", "gauge",
             "Events committed over the pipeline's life, earlier runs included (the checkpoint's "
             "count); not reset by a restart.");
  out.sample("cppcdc_events_committed_lifetime", {},
             static_cast<double>(s.events_committed_lifetime));
  out.family("cppcdc_batches_delivered_total", "counter", "Non-empty batches handed out.");
  out.sample("cppcdc_batches_delivered_total", {}, static_cast<double>(load(batches_delivered_)));
  out.family("cppcdc_batches_committed_total", "counter",
             "Batches committed by this process (a carried batch counts once its transaction "
             "commits).");
  out.sample("cppcdc_batches_committed_total", {}, static_cast<double>(load(batches_committed_)));
  out.family("cppcdc_delivered_bytes_total", "counter",
             "Bytes of column values (their text, before encoding) in the events handed out.");
  out.sample("cppcdc_delivered_bytes_total", {}, static_cast<double>(load(bytes_delivered_)));
  out.family("cppcdc_runtime_events_in_flight", "gauge",
             "Events handed out and not committed yet (the batch in flight, and batches carried "
             "in an open transaction).");
  out.sample("cppcdc_runtime_events_in_flight", {}, static_cast<double>(s.in_flight));

  // Ages: milliseconds since the last poll, delivery, commit and checkpoint save; a series
  // appears once its first moment happened.
  const auto age = [&](std::string_view name, std::string_view help, std::int64_t at_ms) {
    if (at_ms <= 0) return;
    out.family(name, "gauge", help);
    out.sample(name, {}, age_ms(in.now_ms, at_ms));
  };
  age("cppcdc_runtime_poll_age_ms",
      "Milliseconds since a poll of the runtime last returned (empty or not).", s.last_poll_at_ms);
  age("cppcdc_runtime_delivery_age_ms", "Milliseconds since a poll last returned events.",
      std::max(s.last_delivery_at_ms, last_delivered_ms_.load(std::memory_order_relaxed)));
  age("cppcdc_runtime_commit_age_ms", "Milliseconds since a batch was last acknowledged.",
      s.last_commit_at_ms);
  age("cppcdc_checkpoint_age_ms", "Milliseconds since the checkpoint was last saved.",
      checkpoint_saved_ms_.load(std::memory_order_relaxed));
  out.family("cppcdc_checkpoints_saved_total", "counter", "Checkpoint records made durable.");
  out.sample("cppcdc_checkpoints_saved_total", {}, static_cast<double>(load(checkpoints_saved_)));

  out.family("cppcdc_sink_latency_seconds", "histogram",
             "Seconds from an event's commit in the source database to the acknowledgement of "
             "its batch, right after every sink flushed it (snapshot rows excluded).");
  latency_.write(out, "cppcdc_sink_latency_seconds");
  if (const std::int64_t lag = commit_lag_ms_.load(std::memory_order_relaxed); lag >= 0) {
    out.family("cppcdc_commit_lag_ms", "gauge",
               "At the last acknowledged batch: milliseconds from the source commit of its newest "
               "change to the acknowledgement (how far behind the source the pipeline ran, like "
               "Debezium's MilliSecondsBehindSource). It keeps its value while nothing is "
               "committed: read it with cppcdc_runtime_delivery_age_ms.");
    out.sample("cppcdc_commit_lag_ms", {}, static_cast<double>(lag));
  }

  // Per configured sink (names from the configuration; one series each).
  {
    std::vector<std::shared_ptr<const SinkTally>> sinks;
    {
      std::lock_guard lock(sinks_mutex_);
      sinks = sinks_;
    }
    if (!sinks.empty()) {
      const auto per_sink = [&](std::string_view name, std::string_view help, auto value) {
        out.family(name, "counter", help);
        for (const auto& t : sinks) {
          out.sample(name, {{"sink", t->name}}, static_cast<double>(value(*t)));
        }
      };
      per_sink("cppcdc_sink_events_written_total",
               "Events handed to the sink by write() calls that succeeded (a batch delivered "
               "again counts again).",
               [](const SinkTally& t) { return load(t.events_written); });
      per_sink("cppcdc_sink_flushes_total",
               "flush() calls (commit() for a transactional sink) of the sink that succeeded.",
               [](const SinkTally& t) { return load(t.flushes); });
      per_sink("cppcdc_sink_errors_total",
               "Calls of the sink (write, flush, commit, recover) that failed: each is one failed "
               "delivery attempt of the runtime, retried under the circuit breaker when "
               "recoverable.",
               [](const SinkTally& t) { return load(t.errors); });
      per_sink("cppcdc_sink_attempt_failures_total",
               "Attempts to reach the sink's destination that failed, counted as each happens: "
               "for a sink that retries inside a call (http: every failed request), each of its "
               "own attempts; for the others, each failed call.",
               [](const SinkTally& t) { return t.attempt_failures(); });
    }
  }

  // Health and the breaker: one series per possible value, 1 for the current one.
  out.family("cppcdc_build_info", "gauge",
             "Always 1; the labels say which build of cppcdc this is.");
  out.sample("cppcdc_build_info", {{"version", CPPCDC_VERSION}, {"compiler", compiler_name()}}, 1);
  out.family("cppcdc_runtime_up", "gauge", "1 while the runtime is running.");
  out.sample("cppcdc_runtime_up", {}, s.state == RuntimeState::kRunning ? 1 : 0);
  out.family("cppcdc_source_up", "gauge",
             "1 while the runtime runs and its connection to the source is established; 0 while "
             "it starts, reconnects after a failure, or is stopped.");
  out.sample("cppcdc_source_up", {}, s.source_connected ? 1 : 0);
  out.family("cppcdc_health_verdict", "gauge",
             "The runtime's health verdict: 1 for the current one.");
  for (auto kind : {HealthVerdict::Kind::kHealthy, HealthVerdict::Kind::kIdle,
                    HealthVerdict::Kind::kStalled, HealthVerdict::Kind::kNotRunning}) {
    out.sample("cppcdc_health_verdict", {{"verdict", to_string(kind)}},
               s.health.kind == kind ? 1 : 0);
  }
  out.family("cppcdc_health_stall_cause", "gauge",
             "1 for the cause of a stalled verdict, 0 for the others.");
  for (auto cause : {StallCause::kSourcePositionLost, StallCause::kUnconfirmedSourcePosition,
                     StallCause::kDeliveryFailing, StallCause::kPollLoopNotTurning,
                     StallCause::kConsumerNotAcknowledging}) {
    out.sample("cppcdc_health_stall_cause", {{"cause", to_string(cause)}},
               s.health.is_alertable() && s.health.cause == cause ? 1 : 0);
  }
  out.family("cppcdc_breaker_state", "gauge",
             "The recoverable-error circuit breaker: 1 for its current state.");
  for (auto state : {BreakerState::kClosed, BreakerState::kOpen, BreakerState::kHalfOpen,
                     BreakerState::kError}) {
    out.sample("cppcdc_breaker_state", {{"state", to_string(state)}},
               s.breaker_state == state ? 1 : 0);
  }
  out.family("cppcdc_recoverable_errors_total", "counter",
             "Recoverable errors retried (source reads and sink deliveries).");
  out.sample("cppcdc_recoverable_errors_total", {}, static_cast<double>(s.recoverable_errors));
  out.family("cppcdc_idempotency_suppressed_total", "counter",
             "Events the idempotency guard did not hand out because they had been acknowledged "
             "before in this process.");
  out.sample("cppcdc_idempotency_suppressed_total", {},
             static_cast<double>(s.idempotency_suppressed));
  out.family("cppcdc_idempotency_evictions_total", "counter",
             "Entries the idempotency guard pushed out of its full window to remember newer "
             "ones (every event once the window is full).");
  out.sample("cppcdc_idempotency_evictions_total", {},
             static_cast<double>(s.idempotency_evictions));
  out.family("cppcdc_idempotency_unidentifiable_passthrough_total", "counter",
             "Events the idempotency guard let through because nothing identifies them.");
  out.sample("cppcdc_idempotency_unidentifiable_passthrough_total", {},
             static_cast<double>(s.idempotency_unidentifiable_passthrough));

  if (in.lag && in.lag->retained_bytes) {
    out.family("cppcdc_source_retained_bytes", "gauge",
               "Log the source database retains for this pipeline, in bytes (PostgreSQL: WAL "
               "from the slot's restart_lsn).");
    out.sample("cppcdc_source_retained_bytes", {}, static_cast<double>(*in.lag->retained_bytes));
  }
  if (in.lag && in.lag->confirmed_lag_bytes) {
    out.family("cppcdc_source_confirmed_lag_bytes", "gauge",
               "Log written beyond the position this pipeline confirmed, in bytes (PostgreSQL: "
               "from the slot's confirmed_flush_lsn).");
    out.sample("cppcdc_source_confirmed_lag_bytes", {},
               static_cast<double>(*in.lag->confirmed_lag_bytes));
  }

  if (s.incremental_snapshot) {
    const IncrementalSnapshotState& inc = *s.incremental_snapshot;
    out.family("cppcdc_incremental_snapshot_paused", "gauge",
               "1 while incremental snapshots are paused.");
    out.sample("cppcdc_incremental_snapshot_paused", {}, inc.paused ? 1 : 0);
    const std::size_t n = std::min(inc.tables.size(), kMaxTableSeries);
    out.family(
        "cppcdc_incremental_snapshot_rows", "gauge",
        "Rows an incremental snapshot delivered so far, per table (of the current request).");
    for (std::size_t i = 0; i < n; ++i) {
      out.sample("cppcdc_incremental_snapshot_rows", {{"table", inc.tables[i].table}},
                 static_cast<double>(inc.tables[i].rows));
    }
    out.family("cppcdc_incremental_snapshot_estimated_rows", "gauge",
               "The database's estimate of a snapshotted table's rows (absent when unknown).");
    for (std::size_t i = 0; i < n; ++i) {
      if (inc.tables[i].estimated_rows <= 0) continue;
      out.sample("cppcdc_incremental_snapshot_estimated_rows", {{"table", inc.tables[i].table}},
                 inc.tables[i].estimated_rows);
    }
    out.family("cppcdc_incremental_snapshot_table_complete", "gauge",
               "1 once every row of the table was delivered by the incremental snapshot.");
    for (std::size_t i = 0; i < n; ++i) {
      out.sample("cppcdc_incremental_snapshot_table_complete", {{"table", inc.tables[i].table}},
                 inc.tables[i].complete ? 1 : 0);
    }
  }
  if (in.initial_snapshot && in.initial_snapshot->phase != BlockingSnapshotStatus::Phase::kNone) {
    const BlockingSnapshotStatus& init = *in.initial_snapshot;
    // The health verdict knows nothing of the initial snapshot (it is healthy while rows flow);
    // this is what makes /readyz answer 503 meanwhile, for rules that want the same view.
    out.family("cppcdc_initial_snapshot_running", "gauge",
               "1 while the initial (blocking) snapshot is pending or running (the readiness "
               "probe answers 503 initial_snapshot then), 0 once it finished.");
    out.sample("cppcdc_initial_snapshot_running", {},
               init.phase == BlockingSnapshotStatus::Phase::kPending ||
                       init.phase == BlockingSnapshotStatus::Phase::kRunning
                   ? 1
                   : 0);
    const std::size_t n = std::min(init.tables.size(), kMaxTableSeries);
    out.family("cppcdc_initial_snapshot_rows", "gauge",
               "Rows the initial (blocking) snapshot read so far, per table.");
    for (std::size_t i = 0; i < n; ++i) {
      out.sample("cppcdc_initial_snapshot_rows", {{"table", init.tables[i].table}},
                 static_cast<double>(init.tables[i].rows_read));
    }
    out.family("cppcdc_initial_snapshot_estimated_rows", "gauge",
               "The database's estimate of a table's rows in the initial snapshot (absent when "
               "unknown).");
    for (std::size_t i = 0; i < n; ++i) {
      if (init.tables[i].estimated_rows <= 0) continue;
      out.sample("cppcdc_initial_snapshot_estimated_rows", {{"table", init.tables[i].table}},
                 init.tables[i].estimated_rows);
    }
    out.family("cppcdc_initial_snapshot_table_complete", "gauge",
               "1 once the initial snapshot read every row of the table.");
    for (std::size_t i = 0; i < n; ++i) {
      out.sample("cppcdc_initial_snapshot_table_complete", {{"table", init.tables[i].table}},
                 init.tables[i].complete ? 1 : 0);
    }
  }

  if (!in.unmatched_rules.empty()) {
    out.family("cppcdc_transform_rules_unmatched", "gauge",
               "1 for each transform rule that has not matched any event since the start.");
    for (const auto& rule : in.unmatched_rules) {
      out.sample("cppcdc_transform_rules_unmatched",
                 {{"transform", rule.transform}, {"kind", rule.kind}, {"rule", rule.rule}}, 1);
    }
  }

  if (const auto process = read_process_stats()) {
    out.family("process_cpu_seconds_total", "counter", "User and system CPU time, in seconds.");
    out.sample("process_cpu_seconds_total", {}, process->cpu_seconds);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory, in bytes.");
    out.sample("process_resident_memory_bytes", {}, process->resident_bytes);
    out.family("process_virtual_memory_bytes", "gauge", "Virtual memory, in bytes.");
    out.sample("process_virtual_memory_bytes", {}, process->virtual_bytes);
    out.family("process_open_fds", "gauge", "Open file descriptors.");
    out.sample("process_open_fds", {}, process->open_fds);
    if (process->max_fds > 0) {  // a seccomp filter may refuse prlimit64
      out.family("process_max_fds", "gauge", "The limit on open file descriptors.");
      out.sample("process_max_fds", {}, process->max_fds);
    }
    out.family("process_start_time_seconds", "gauge",
               "When the process started, in seconds since the Unix epoch.");
    out.sample("process_start_time_seconds", {}, process->start_time_seconds);
  }
  return out.take();
}

}  // namespace cppcdc::server
