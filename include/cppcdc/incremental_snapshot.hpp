#pragma once
// Incremental snapshots (the DBLog watermark algorithm; architecture document, "Incremental
// snapshot (DBLog watermarks)", API guide, "Incremental Snapshot API" and "Incremental snapshot
// for a custom source").
//
// Existing rows are read in keyset chunks by primary key while the stream keeps flowing. For
// each chunk the driver reads a low watermark (the log position), the set of transactions
// still in flight, the chunk itself (outside any transaction), then a high watermark. Stream
// events that the chunk's read may not have seen (inside the bracket) suppress the chunk's row
// for their key, so the newer stream value always wins; once the stream has passed the high
// watermark the rest of the chunk is handed over, ahead of every later event.
//
// The algorithm lives once, in the driver (make_incremental_snapshot_source). A connector
// supplies the database-specific half as an IncrementalSnapshotBackend. The driver is itself
// a Source wrapping the connector's own, so the runtime is unchanged: chunk rows are ordinary
// events of op `read`, and the snapshot's progress rides in the checkpoint's source_state
// (key "incremental"), saved in the same record as the stream position.
//
// Threading: the driver runs on the thread that drives the runtime. IncrementalSnapshotControl
// may be used from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc {

/// Where a stream event lies relative to a chunk's watermark bracket.
enum class BracketPosition {
  kBefore,  ///< the chunk's read saw it (or an older state of the row): passes through
  kInside,  ///< the chunk's read may not have seen it: its key's chunk row is suppressed
  kAfter,   ///< committed after the read ended: the chunk goes out before it
};

/// A log position read as a watermark. `position` is on the scale of Event::log_position and
/// ordered by the backend (compare_positions); `detail` is backend-specific (unused by
/// PostgreSQL). A backend whose watermark only becomes a position once the stream brings it
/// back (MariaDB: a write to its signal table, identified by GTID in `detail`) may leave
/// `position` empty, provided it overrides event_in_bracket and stream_reached to resolve it;
/// the driver itself never reads `position`.
struct Watermark {
  LogPosition position;
  std::string detail;
};

/// What the driver needs to know about a table before reading it.
struct SnapshotTableInfo {
  std::string table;                ///< "schema.table"
  std::vector<std::string> key;     ///< primary-key columns in key order (never empty)
  double estimated_rows = 0;        ///< planner estimate (pg_class.reltuples); <= 0: unknown
};

/// The database-specific half of an incremental snapshot. Calls never overlap: the driver
/// makes them one at a time, from its own thread, except that a chunk's read (current_position,
/// in_flight, fetch_chunk, current_position) may run on a read-ahead thread while the previous
/// chunk is delivered; the driver waits for it before any other call. Errors keep their kind: transient ones make the runtime reconnect (the
/// chunk in progress is read again), terminal ones stop the pipeline.
class IncrementalSnapshotBackend {
 public:
  virtual ~IncrementalSnapshotBackend() = default;

  /// Connects; called from the driver's start(), after the wrapped source started.
  virtual Status open() = 0;
  /// Disconnects. Idempotent.
  virtual void close() = 0;

  /// The tables a request for `table` means ("schema.table"; a partitioned table may expand
  /// to its partitions). Error kind configuration for a table that is not captured.
  virtual Result<std::vector<std::string>> resolve(const std::string& table) {
    return std::vector<std::string>{table};
  }
  /// Describes a table. A table without a primary key is refused (kind configuration, naming
  /// the table): keyset chunks cannot resume without one.
  virtual Result<SnapshotTableInfo> describe_table(const std::string& table) = 0;
  /// The log's current position; read twice per chunk, so keep it cheap.
  virtual Result<Watermark> current_position() = 0;
  /// The transactions in flight, read between the low watermark and the chunk (PostgreSQL:
  /// pg_current_snapshot() as text). Empty when the backend needs none.
  virtual Result<std::string> in_flight() { return std::string(); }
  /// Up to `limit` rows of `table` with a key above `cursor` (text key values, key order;
  /// nullopt: from the start), ordered by key, read outside any transaction, as events of op
  /// `read` carrying exactly the values and shape the stream would emit for the same row.
  virtual Result<std::vector<Event>> fetch_chunk(
      const SnapshotTableInfo& table, const std::optional<std::vector<std::string>>& cursor,
      std::size_t limit) = 0;
  /// The log position of a live event on the scale of Watermark::position; nullopt when it
  /// has none (it is then treated as before the bracket). The default is Event::log_position
  /// when it is set.
  virtual std::optional<LogPosition> position_of_event(const Event& event) const {
    if (event.log_position.empty()) return std::nullopt;
    return event.log_position;
  }
  /// Orders two log positions of this source. The default is byte-wise
  /// (LogPosition::compare_bytes), right for big-endian encodings such as from_u64.
  virtual std::weak_ordering compare_positions(const LogPosition& a,
                                               const LogPosition& b) const {
    return LogPosition::compare_bytes(a, b);
  }
  /// Classifies an event against a bracket. The default is the ordinal test on
  /// compare_positions: inside when low < position <= high, after when position > high.
  /// Override it when the log position leads visibility (PostgreSQL does, with the in-flight
  /// set).
  virtual BracketPosition event_in_bracket(const Event& event, const LogPosition& position,
                                           const Watermark& low, const std::string& in_flight,
                                           const Watermark& high) const;
  /// Whether the transaction of an event already handed over could still be reported as in
  /// flight by an in-flight set read after `in_flight` (PostgreSQL: its xid is not below that
  /// set's xmin). The driver remembers such events of tables it is snapshotting, because a
  /// commit can reach the log (and the stream) before it is visible: when a later chunk's
  /// in-flight set still lists the transaction, its rows' chunk copies are stale and are
  /// suppressed. Default false (no in-flight set: nothing to remember).
  virtual bool may_be_in_flight_later(const Event& /*event*/,
                                      const std::string& /*in_flight*/) const {
    return false;
  }
  /// Whether the wrapped source's own state (`source_state`: the checkpoint's or the last
  /// event's resume_state without the driver's part) shows a blocking snapshot still reading
  /// tables; requests are refused meanwhile, since it reads the tables whole anyway. Must not
  /// use the backend's connection: it may be called at any time. Default false.
  virtual bool blocking_snapshot_running(std::string_view /*source_state*/) const {
    return false;
  }
  /// True when every event at or before `high` has already been handed over by the wrapped
  /// source's poll(). May ask the source for fresh progress; must not block long.
  virtual bool stream_reached(const Watermark& high) = 0;
};

/// Progress of one table.
struct IncrementalSnapshotTableState {
  std::string table;                      ///< "schema.table"
  std::vector<std::string> key_columns;   ///< the key the cursor was taken over
  /// Key values (text, key order) of the last row of the last delivered chunk; nullopt: none
  /// delivered yet.
  std::optional<std::vector<std::string>> cursor;
  std::uint64_t generation = 0;  ///< the request this table's rows belong to
  std::uint64_t chunks = 0;      ///< chunks delivered
  std::uint64_t rows = 0;        ///< rows delivered (suppressed rows not counted)
  double estimated_rows = 0;     ///< planner estimate when first described; <= 0: unknown
  bool complete = false;
};

/// The whole incremental snapshot, as saved in the checkpoint and as readable while it runs.
struct IncrementalSnapshotState {
  std::string snapshot_id;       ///< snapshot.snapshot_id of its rows; empty: none yet
  /// The last generation handed out. Advances on every request and on every stop, so a
  /// re-read table's rows never look like a replay of an earlier read.
  std::uint64_t generation = 0;
  bool paused = false;   ///< no new chunk starts until resumed
  bool stopped = false;  ///< the last snapshot was stopped (its tables dropped) before the end
  std::vector<IncrementalSnapshotTableState> tables;

  /// True when there are tables and every one is complete (survives a restart; false while
  /// paused or after a stop).
  bool is_complete() const noexcept;
  std::uint64_t rows_emitted() const noexcept;
  std::size_t tables_remaining() const noexcept;
  /// "idle" (never requested), "running", "paused", "stopped" or "complete".
  std::string status() const;

  /// JSON object (the value stored under "incremental" in the checkpoint's source_state).
  std::string to_json() const;
  /// Parses to_json() output. Error kind checkpoint (terminal) naming what is wrong.
  static Result<IncrementalSnapshotState> from_json(std::string_view json);
};

/// Thread-safe handle for steering a running incremental snapshot (library API; `cppcdc
/// snapshot ...` reaches it through the control socket of `cppcdc run`).
class IncrementalSnapshotControl {
 public:
  virtual ~IncrementalSnapshotControl() = default;
  /// Adds tables ("schema.table") to the running snapshot, or starts one. A table already in
  /// it starts over under a new generation. Waits up to `timeout` for the driver to take the
  /// request (it does so on its next poll). Errors: configuration for a table that is not
  /// captured, has no primary key or does not exist; unavailable when the pipeline is not
  /// polling within `timeout`.
  virtual Status request(const std::vector<std::string>& tables,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30)) = 0;
  /// No new chunk starts until resume(); a chunk in progress completes.
  virtual void pause() = 0;
  virtual void resume() = 0;
  /// Drops every unfinished table; the generation advances. A chunk in progress is discarded.
  virtual void stop() = 0;
  /// The state as of the last poll.
  virtual IncrementalSnapshotState state() const = 0;
};

struct IncrementalSnapshotOptions {
  std::uint32_t chunk_size = 1024;  ///< rows per chunk
  /// Tables to snapshot at start when the checkpoint has no snapshot state (the config's
  /// initial set); unfinished tables in the checkpoint are always adopted.
  std::vector<std::string> tables;
  /// Source name used in the snapshot id ("<source_id>-incremental-<generation>").
  std::string id_prefix;
};

/// Wraps `inner` so that it runs incremental snapshots through `backend`. The result is the
/// Source to hand to the runtime; `control` (when not null) receives its control handle.
std::unique_ptr<Source> make_incremental_snapshot_source(
    std::unique_ptr<Source> inner, std::unique_ptr<IncrementalSnapshotBackend> backend,
    IncrementalSnapshotOptions options,
    std::shared_ptr<IncrementalSnapshotControl>* control = nullptr);

}  // namespace cppcdc
