#pragma once
// Source: a capture connector as the runtime drives it. Built-in: PostgreSQL (postgres.hpp).
// A custom source implements this interface and is handed to RuntimeConfig.
//
// Threading: the runtime calls every method from one thread at a time. A source may read its
// log on a thread of its own (the PostgreSQL source does) and hand events over in poll().

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

class BlockingSnapshotTracker;
class IncrementalSnapshotControl;

/// How far the database is ahead of what this pipeline has made durable, for monitoring.
/// Each figure is nullopt when the source cannot tell (yet).
struct SourceLag {
  /// Log the database keeps for this pipeline, in bytes (PostgreSQL: from the slot's
  /// restart_lsn to the server's current WAL position; MariaDB/MySQL: nullopt, their binlogs
  /// expire by the server's own settings).
  std::optional<std::uint64_t> retained_bytes;
  /// Log written on the server beyond the position this pipeline confirmed, in bytes
  /// (PostgreSQL: from the confirmed flush LSN to the end of WAL the server last reported;
  /// MariaDB/MySQL: the binlog bytes after the confirmed coordinate, across files).
  std::optional<std::uint64_t> confirmed_lag_bytes;
};

class Source {
 public:
  virtual ~Source() = default;

  /// Source type recorded in checkpoints ("postgres").
  virtual std::string type() const = 0;
  /// Identity the checkpoint is valid for (PostgreSQL: the slot name).
  virtual std::string source_id() const = 0;

  /// Connects, runs the start-up checks and starts reading at `resume` (the last durable
  /// checkpoint), or at the source's own retained position when nullopt. Errors: transient
  /// (unreachable, retried by the runtime), terminal (authentication, missing table, wrong
  /// wal_level: never retried), configuration.
  virtual Status start(const std::optional<CheckpointRecord>& resume) = 0;

  /// Appends at most `max_events` events to `out`, in log order. Waits up to `wait` for the
  /// first one, then returns what is ready without waiting further. Every event's
  /// resume_offset is either empty or a position a restart may resume from once everything up
  /// to and including that event is durable.
  virtual Status poll(std::vector<Event>& out, std::size_t max_events,
                      std::chrono::milliseconds wait) = 0;

  /// Everything up to `offset` (a resume_offset previously returned) is durably checkpointed:
  /// the source may release log up to there (invariant 2). Called only after the checkpoint
  /// save returned.
  virtual Status confirm(std::string_view offset) = 0;

  /// After a start() without a checkpoint: the resumable position the stream began at (for
  /// PostgreSQL the slot's confirmed flush LSN), so that the first checkpoint can be written
  /// even when the first acknowledgement ends inside a transaction. A checkpoint at it carries
  /// no source state, so it must be a position a restart may stream from: nullopt while a
  /// snapshot that such a restart would skip is pending (the snapshot's events carry their
  /// positions). nullopt when unknown.
  virtual std::optional<std::string> initial_offset() const { return std::nullopt; }

  /// A position that may be checkpointed (and then confirmed) once every event handed out so
  /// far is acknowledged, because nothing the source read lies before it undelivered: for
  /// PostgreSQL, the server's WAL position reported while no transaction is open and nothing
  /// is queued. Lets a quiet pipeline stop pinning log that other tables write. nullopt when
  /// there is no such position beyond what was confirmed.
  virtual std::optional<std::string> idle_offset() { return std::nullopt; }

  /// The source_state to save with idle_offset() (or, when that is nullopt, with the last
  /// checkpointed offset) when it differs from the checkpoint's; nullopt keeps the
  /// checkpoint's. Lets progress that no event carried (an incremental snapshot's table
  /// completing on a quiet stream) become durable.
  virtual std::optional<std::string> idle_state() { return std::nullopt; }

  /// The handle steering this source's incremental snapshots (incremental_snapshot.hpp), or
  /// nullptr when it has none.
  virtual std::shared_ptr<IncrementalSnapshotControl> incremental_snapshot_control() {
    return nullptr;
  }

  /// Where this source's blocking (initial) snapshot stands (blocking_snapshot.hpp), or
  /// nullptr when it takes none. Valid from construction; read from any thread.
  virtual std::shared_ptr<const BlockingSnapshotTracker> blocking_snapshot_tracker() const {
    return nullptr;
  }

  /// True once the source has handed over everything it will ever produce (a snapshot-only
  /// run that is complete) and nothing is left to poll. The runtime's run loop then ends.
  virtual bool finished() { return false; }

  /// Takes back events the consumer is done with (delivered, written and acknowledged), so
  /// that their memory is released, or reused, by the thread that allocated it: a source
  /// whose reader thread builds events avoids freeing every value across threads. The
  /// default releases them here. Called by Runtime::run_to_completion; never required.
  virtual void recycle(std::vector<Event>&& events) { events.clear(); }

  /// The source's lag figures (SourceLag), or nullopt when it reports none (the default).
  /// Unlike the other methods this one may be called from any thread, concurrently with
  /// poll() (an admin endpoint reads it while the runtime runs), and must not block for long:
  /// a source that asks its database does so with a short timeout.
  virtual std::optional<SourceLag> lag() const { return std::nullopt; }

  /// Closes connections and stops any reader thread. Idempotent.
  virtual void close() = 0;
};

}  // namespace cppcdc
