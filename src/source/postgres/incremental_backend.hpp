#pragma once
// The PostgreSQL half of the incremental snapshot (cppcdc/incremental_snapshot.hpp).
//
// Watermarks are pg_current_wal_insert_lsn(); the in-flight set is pg_current_snapshot(), and an
// event is inside a chunk's bracket when its transaction committed at or after the low
// watermark and before the high one, or when that snapshot did not see its transaction
// (xid >= xmax, or xid in xip): a commit record can be in the WAL before its transaction is
// visible to new snapshots, so the position alone would let a stale chunk row win. Events
// carry the commit record's LSN in Event::log_position. Chunks are keyset queries on their own
// connection in autocommit, outside any transaction, rendered through the same assembler path
// as streamed rows. Needs SELECT on the tables; nothing is written to the source.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/pg_lsn.hpp"

namespace cppcdc::pg {

/// What the backend needs from the PostgreSQL source it belongs to.
struct IncrementalHooks {
  /// The WAL position up to which every committed transaction has been handed over by
  /// poll(), while nothing is queued; nullopt otherwise.
  std::function<std::optional<Lsn>()> drained_through;
  /// Asks the reader for a fresh position soon (a keepalive).
  std::function<void()> request_progress;
  /// Whether "schema.table" is captured by the source.
  std::function<bool(const std::string&)> captured;
};

struct IncrementalBackendConfig {
  std::string dsn;
  std::string publication;
  std::string source_name = "postgres";
  /// Optional SQL condition per "schema.table" restricting the rows read.
  std::map<std::string, std::string> table_conditions;
};

std::unique_ptr<IncrementalSnapshotBackend> make_incremental_backend(
    IncrementalBackendConfig config, IncrementalHooks hooks);

/// pg_current_snapshot() text ("xmin:xmax:xip,...") decides whether transaction `xid` (the
/// 32-bit xid of pgoutput's Begin) was invisible to it: xid >= xmax, or xid in xip. Compared
/// modulo 2^32 as PostgreSQL compares xids. False for text that does not parse.
bool invisible_to_snapshot(std::string_view snapshot, std::uint32_t xid);

}  // namespace cppcdc::pg
