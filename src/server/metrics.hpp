#pragma once
// The server's Prometheus metrics: a small hand-written registry and the text exposition
// format (version 0.0.4), served by the admin server on /metrics (admin_http.hpp).
//
// Why not a client library: Debian 12 packages prometheus-cpp 1.0, but its development package
// pulls in civetweb and libcurl for HTTP parts we do not use (cpp-httplib serves the
// endpoints), it has no gauges computed at scrape time (the ages, the source lag and the
// process figures all are), and its atomics, like cpp-httplib's, would be invisible to our
// TSan builds. What the server needs is a few counters, one histogram and text output.
//
// Counting: PipelineMetrics is the runtime's RuntimeObserver. It is called once per batch on
// the thread that drives the runtime, which is the only writer; every figure is a relaxed
// atomic that the scrape thread reads. Per event it only compares the table name with the
// previous event's and adds to a counter; no lock, no allocation unless a new table appears.
//
// Bounded labels: `table` takes at most kMaxTableSeries distinct values per metric (the
// tables seen first); later tables are counted under table="_other". `op` has the seven
// operation names. Snapshot progress is labelled by the snapshot's tables (capped the same
// way), transform rules by the configured rules, sink series by the configured sink names;
// nothing else carries a label from data.

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/source.hpp"
#include "cppcdc/transforms.hpp"

namespace cppcdc::server {

/// Most distinct `table` label values a per-table metric keeps (then table="_other").
inline constexpr std::size_t kMaxTableSeries = 256;
/// The `table` label value of the events beyond kMaxTableSeries tables.
inline constexpr std::string_view kOtherTable = "_other";

using MetricLabels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

/// Writes the Prometheus text format. Not thread-safe; one per scrape.
class Exposition {
 public:
  /// `# HELP` and `# TYPE` lines; type is "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view type, std::string_view help);
  /// One sample line: name{labels} value.
  void sample(std::string_view name, MetricLabels labels, double value);
  /// The same with labels built at run time (the histogram's `le`).
  void sample_with(std::string_view name,
                   std::span<const std::pair<std::string, std::string>> labels, double value);
  const std::string& text() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// A label value escaped for the text format (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);
/// A sample value as the text format spells it: integers without a fraction, "+Inf", "-Inf",
/// "NaN", otherwise the shortest text that reads back the same double.
std::string format_metric_value(double value);

/// A histogram with fixed upper bounds. One writer thread; readers on any thread may see a
/// sum and counts from slightly different moments, which the format tolerates.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  /// Adds `count` observations of `value`.
  void observe(double value, std::uint64_t count = 1) noexcept;
  /// The family's `_bucket` (cumulative, with le="+Inf"), `_sum` and `_count` lines.
  void write(Exposition& out, std::string_view name) const;
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // per bucket, not cumulative; +1 +Inf
  std::atomic<double> sum_{0};
  std::atomic<std::uint64_t> count_{0};
};

/// The process figures Prometheus client libraries export under process_*, read from /proc.
struct ProcessStats {
  double cpu_seconds = 0;  ///< user + system time
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;             ///< 0: unknown (not exported)
  double start_time_seconds = 0;  ///< since the Unix epoch
};
/// nullopt where /proc cannot be read (not Linux).
std::optional<ProcessStats> read_process_stats();

/// The counters of one configured sink ([sink], "default" unless it names itself, and every
/// [[sinks]] entry), labelled sink="<name>": names come from the configuration, so the label
/// set is bounded. Written by the CountedSink that wraps the sink, on the pipeline's thread;
/// read by the scrape (relaxed atomics).
struct SinkTally {
  explicit SinkTally(std::string sink_name) : name(std::move(sink_name)) {}
  const std::string name;
  std::atomic<std::uint64_t> events_written{0};  ///< events a write() call took
  std::atomic<std::uint64_t> flushes{0};         ///< flush() (or commit()) calls that succeeded
  std::atomic<std::uint64_t> errors{0};          ///< write/flush/commit/recover calls that failed
  /// The wrapped sink, for Sink::failed_attempts(); set before the tally is published, and it
  /// outlives every scrape (the admin server stops before the sinks close).
  const Sink* sink = nullptr;
  /// Sink::failed_attempts() when the sink counts them, else `errors`.
  std::uint64_t attempt_failures() const;
};

/// `sink` wrapped so that its calls are counted in `tally` (which it points at the sink); a
/// TransactionalSink stays one. The wrapper forwards every call unchanged.
std::unique_ptr<Sink> count_sink(std::unique_ptr<Sink> sink, std::shared_ptr<SinkTally> tally);

/// What a scrape shows besides the observer's own counts.
struct MetricsInputs {
  RuntimeAdminSnapshot snapshot;
  std::optional<SourceLag> lag;
  std::optional<BlockingSnapshotStatus> initial_snapshot;
  std::vector<UnmatchedRule> unmatched_rules;  ///< only while a rule is unmatched
  std::int64_t now_ms = 0;                     ///< wall clock
};

/// The pipeline's counters (a RuntimeObserver) and the rendering of every series.
class PipelineMetrics final : public RuntimeObserver {
 public:
  PipelineMetrics();
  ~PipelineMetrics() override;

  void on_delivered(std::span<const Event> events) override;
  void on_committed(std::span<const Event> events, std::int64_t acked_at_ms) override;
  void on_carried(std::span<const Event> events, std::int64_t acked_at_ms) override;
  void on_carried_aborted() override;
  void on_checkpoint(const CheckpointRecord& record) override;

  /// The whole exposition: the counters above, the gauges of `inputs` and process_*.
  std::string render(const MetricsInputs& inputs) const;

  /// Shows `tally`'s counters under its sink name from the next scrape on. Thread-safe (the
  /// admin server may scrape while the sinks are opened).
  void add_sink(std::shared_ptr<const SinkTally> tally);

  /// For tests: the count of (table, op) committed, 0 when never seen.
  std::uint64_t committed(std::string_view table, Operation op) const;
  /// Wall clock of the last on_delivered, 0: none yet.
  std::int64_t last_delivered_at_ms() const noexcept {
    return last_delivered_ms_.load(std::memory_order_relaxed);
  }

 private:
  struct TableSlot;
  struct Tally;
  std::size_t slot_for(const Event& event);

  std::unique_ptr<TableSlot[]> slots_;      // kMaxTableSeries + 1 (the last: "_other")
  std::atomic<std::size_t> slot_count_{0};  // named slots published
  // The writer's lookup cache: the previous event's table and its slot.
  std::string last_schema_;
  std::string last_table_;
  std::size_t last_slot_ = 0;
  bool has_last_ = false;
  // The runs of one table and op of the last delivered batch, for on_committed, which gets a
  // prefix of that batch (the runtime has one delivery outstanding at a time): counting from
  // the runs spares a second pass over thousands of events.
  struct Run {
    std::size_t slot;
    Operation op;
    std::size_t end;  ///< one past the run's last event in the batch
  };
  std::vector<Run> delivered_runs_;
  // Calls `count(slot, op, n)` per run of one table and operation in `events`.
  template <typename Count>
  void for_each_run(std::span<const Event> events, Count count);
  // Calls `observe(commit_ms, n)` per run of events with one source commit time.
  template <typename Observe>
  static void for_each_commit_time(std::span<const Event> events, Observe observe);
  // Acknowledged batches a transactional sink carries in its open transaction (on_carried):
  // not committed yet, they are counted by the on_committed() that commits them.
  struct CarriedRun {
    std::size_t slot;
    std::size_t op;  ///< op_index()
    std::uint64_t n;
  };
  std::vector<CarriedRun> carried_runs_;
  std::vector<std::pair<std::int64_t, std::uint64_t>> carried_times_;  // (commit ms, events)
  std::uint64_t carried_batches_ = 0;

  std::atomic<std::uint64_t> batches_delivered_{0};
  std::atomic<std::uint64_t> batches_committed_{0};
  std::atomic<std::uint64_t> bytes_delivered_{0};
  std::atomic<std::int64_t> last_delivered_ms_{0};
  std::atomic<std::int64_t> checkpoint_saved_ms_{0};
  std::atomic<std::int64_t> commit_lag_ms_{-1};  // see cppcdc_commit_lag_ms; -1: none yet
  std::atomic<std::uint64_t> checkpoints_saved_{0};
  Histogram latency_;
  mutable std::mutex sinks_mutex_;
  std::vector<std::shared_ptr<const SinkTally>> sinks_;  // guarded by sinks_mutex_
};

}  // namespace cppcdc::server
