#pragma once
// The PostgreSQL half of the incremental snapshot (cppcdc/incremental_snapshot.hpp).
//
// Watermarks are pg_current_wal_insert_lsn(); the in-flight set is pg_current_snapshot()
// (txid_current_snapshot() on PostgreSQL 12), and an event is inside a chunk's bracket when its
// transaction committed at or after the low watermark and before the high one, or when that
// snapshot did not see its transaction
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
#include <string_view>
#include <vector>

#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/postgres/lsn.hpp"

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

/// A pg_current_snapshot() value ("xmin:xmax:xip,..."), reduced to 32-bit xids (the xids of
/// pgoutput's Begin). Comparisons are modulo 2^32, as PostgreSQL compares xids.
struct InFlightSet {
  bool valid = false;  ///< false for text that does not parse
  std::uint32_t xmin = 0;
  std::uint32_t xmax = 0;
  std::vector<std::uint32_t> xip;

  static InFlightSet parse(std::string_view snapshot);
  /// Transaction `xid` was invisible to the snapshot: xid >= xmax, or xid in xip. False when
  /// not valid.
  bool invisible(std::uint32_t xid) const;
  /// A later snapshot could still list `xid` (xid >= xmin); true when not valid.
  bool may_be_listed_later(std::uint32_t xid) const;
};

/// InFlightSet::parse(snapshot).invisible(xid).
bool invisible_to_snapshot(std::string_view snapshot, std::uint32_t xid);

}  // namespace cppcdc::pg
