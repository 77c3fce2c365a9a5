#pragma once
// The blocking snapshot's hand-off, for connectors built into cppcdc that read on a thread of
// their own through the core's reader hand-off (src/core/reader_handoff.hpp): the connector
// reads the rows (PostgreSQL: COPY in keyset order) and emits them in batches; this part,
// shared by every such connector, queues the batches for poll(), lets poll() gather large
// batches while the snapshot runs, gives delivered batches back to the reader so that the next
// rows are written over their events, and reports how the snapshot ended.
//
// BlockingSnapshotTracker publishes where that snapshot stands (`cppcdc snapshot status`):
// the connector updates it while it reads; anyone may read it.
//
// Threading: run_blocking_snapshot runs on the reader thread; poll() takes the batches on the
// consumer's thread. BlockingSnapshotTracker may be used from any thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

namespace detail {
class ReaderHandoff;
}

/// Hands one batch of snapshot rows over: `events` with `sizes[i]` the
/// detail::approx_event_bytes of events[i]. Leaves in `events` a delivered batch whose memory
/// the next rows may reuse (or nothing) and empties `sizes`. Returns false when the source is
/// stopping: the reader then stops reading.
using SnapshotEmit = std::function<bool(std::vector<Event>&, std::vector<std::size_t>&)>;

class BlockingSnapshotTracker;

/// Runs `read(emit)` on the reader thread with `handoff` in bulk mode (poll() waits briefly for
/// fuller batches). Returns true when `read` succeeded and no stop was asked for: the reader
/// goes on (to the stream, or to its end). Otherwise the reader's end has been reported to
/// poll() through `handoff` (the error of `read` with `what` as context, or none after a stop)
/// and the reader thread is to end. `tracker`, when given, is set running before `read` and
/// complete, failed or stopped after it (the per-table progress is the connector's to report).
bool run_blocking_snapshot(detail::ReaderHandoff& handoff, std::string_view what,
                           const std::function<Status(const SnapshotEmit&)>& read,
                           BlockingSnapshotTracker* tracker = nullptr);

/// One table of a blocking snapshot.
struct BlockingSnapshotTable {
  std::string table;            ///< "schema.table" (MySQL: "database.table")
  /// Rows read and handed to the pipeline. A table an earlier process began counts the rows
  /// that process read too; one it completed shows 0 (its count is not kept).
  std::uint64_t rows_read = 0;
  double estimated_rows = 0;    ///< the server's estimate once reading began; <= 0: unknown
  bool started = false;         ///< reading began (in this process or an earlier one)
  bool complete = false;        ///< every row read (in this process or an earlier one)
  bool earlier = false;         ///< completed by an earlier process (rows_read is then 0)
};

/// Where the blocking (initial) snapshot of a source stands. Rows are counted when read and
/// handed over, not when acknowledged: a snapshot is durable only once the checkpoint that
/// follows its last row is (the stream then starts).
struct BlockingSnapshotStatus {
  enum class Phase {
    kNone,     ///< no blocking snapshot in this run: the mode takes none, or the checkpoint
               ///< holds no snapshot in progress (one completed before, or none was needed)
    kPending,  ///< to be read once the source has started
    kRunning,  ///< rows are being read
    kComplete, ///< every row read; the stream follows (or, for initial_only, the end)
    kFailed,   ///< the read stopped on an error (`error` says which)
    kStopped,  ///< cppcdc is stopping before the snapshot completed; a restart continues it
  };
  Phase phase = Phase::kNone;
  std::string snapshot_id;
  std::string mode;        ///< the snapshot mode (to_string(SnapshotMode)), for messages
  bool resumed = false;    ///< continues a snapshot an earlier process began
  std::int64_t started_ms = 0;   ///< wall clock, ms since the Unix epoch; 0: not started
  std::int64_t finished_ms = 0;  ///< when it completed, failed or stopped; 0: not yet
  std::string error;       ///< kFailed: the error's report
  std::vector<BlockingSnapshotTable> tables;  ///< in reading order

  std::uint64_t rows_read() const noexcept;
  std::size_t tables_complete() const noexcept;
  /// "none", "pending", "running", "complete", "failed" or "stopped".
  static std::string_view phase_name(Phase phase) noexcept;
  /// A JSON object: {"phase", "snapshot_id", "mode", "resumed", "started_ms", "finished_ms",
  /// "error", "rows_read", "tables": [{"table", "rows_read", "estimated_rows" (null when
  /// unknown), "started",
  /// "complete"}]}.
  std::string to_json() const;
  /// The inverse of to_json(); an error names what is missing or malformed.
  static Result<BlockingSnapshotStatus> from_json(std::string_view json);
};

/// The published status of one source's blocking snapshot. A connector owns one (shared with
/// readers through Source::blocking_snapshot_tracker()) and reports its steps; every method is
/// thread-safe and cheap (one mutex; row counts are set, not added per row).
class BlockingSnapshotTracker {
 public:
  explicit BlockingSnapshotTracker(std::string mode = {});

  /// No snapshot this run (phase none); `mode` as in the status.
  void set_none();
  /// A snapshot of `tables` (in reading order) will be read; the first `complete_before` of
  /// them were completed by an earlier process (resumed when > 0 or `resumed`).
  void set_pending(std::string snapshot_id, const std::vector<std::string>& tables,
                   std::size_t complete_before, bool resumed, std::int64_t started_ms);
  /// Reading began (phase running).
  void set_running();
  /// Table `index` (of set_pending's list) is being read; its estimate, if the server has one.
  void table_started(std::size_t index, double estimated_rows);
  /// `rows` rows of table `index` read so far (see BlockingSnapshotTable::rows_read);
  /// `complete` once all are.
  void table_progress(std::size_t index, std::uint64_t rows, bool complete);
  /// The snapshot ended: complete, failed with `error`, or stopped.
  void set_complete();
  void set_failed(std::string error);
  void set_stopped();

  BlockingSnapshotStatus status() const;

 private:
  mutable std::mutex mutex_;
  BlockingSnapshotStatus status_;
};

}  // namespace cppcdc
