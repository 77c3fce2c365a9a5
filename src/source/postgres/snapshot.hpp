#pragma once
// The blocking snapshot of the PostgreSQL source: reads the captured tables' existing rows in
// keyset chunks inside one REPEATABLE READ transaction and hands them over as events of op
// `read`, before the stream starts (architecture document, "Snapshot And Stream Handoff").
// Each table is one COPY (SELECT ...) TO STDOUT in primary key order, from the saved cursor
// on; cppcdc cuts the rows into chunks of chunk_size, and a chunk's last key is the cursor.
// Rows cost the server what COPY costs, with no query, plan or index descent per chunk.
//
// On the first run the transaction imports the snapshot exported by CREATE_REPLICATION_SLOT,
// so the stream starts exactly where the snapshot's view ends. After a restart mid-snapshot
// the exported snapshot is gone (and a first start without one, when the slot existed or under
// sql_peek, never had it): the remaining rows are read in a new transaction while the stream
// still starts at the slot's position. That transaction records its snapshot and the tables
// or key ranges it reads in the assembler's visibility filter (visibility.hpp), which drops
// from the stream the changes the read already holds; the filter rides in the checkpoint's
// source_state until the stream has passed the position read right after the snapshot.
//
// Progress (table, cursor, chunk) is saved in the checkpoint's source_state after each chunk
// is acknowledged, so a restart re-reads at most one chunk (a table without a primary key has
// no cursor and is read again from its start).

#include <libpq-fe.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/result.hpp"
#include "source/postgres/assembler.hpp"
#include "source/postgres/visibility.hpp"

namespace cppcdc::pg {

/// Where a snapshot stands; kept as JSON in CheckpointRecord::source_state.
struct SnapshotProgress {
  std::string id;                   ///< snapshot.snapshot_id of its events
  Lsn stream_start;                 ///< the stream resumes here once the snapshot is done
  std::vector<std::string> tables;  ///< "schema.table", read in this order
  std::size_t table_index = 0;      ///< the table being read
  /// Key values (text) of the last row delivered from that table; nullopt: from its start.
  std::optional<std::vector<std::string>> cursor;
  std::uint64_t chunk = 0;  ///< chunks of that table delivered
  std::uint64_t rows = 0;   ///< rows of that table delivered
  /// The exported snapshot to import (first run only; never saved).
  std::string exported_snapshot;
  std::int64_t started_ms = 0;  ///< wall-clock start, ms since the Unix epoch

  bool done() const noexcept { return table_index >= tables.size(); }
  /// Whether a source_state holds a snapshot in progress (its key), without parsing it.
  static bool in_state(std::string_view state) noexcept;
  /// {"snapshot": {...}}; the empty string once done().
  std::string to_state() const;
  /// With the reads' visibility filter beside it ({"snapshot": {...}, "visibility": [...]};
  /// only the filter once done(); the empty string when both are empty).
  std::string to_state(const ReadVisibility& visibility) const;
  /// Parses a source_state; nullopt for an empty state or one holding only a visibility
  /// filter (ReadVisibility::from_state reads that). Errors (checkpoint, terminal) name
  /// what is wrong.
  static Result<std::optional<SnapshotProgress>> from_state(const std::string& state);
};

/// A table as the snapshot reads it, described from the current catalog.
struct TableDescription {
  RelationMsg relation;                ///< columns as pgoutput publishes them, flagged likewise
  std::vector<std::string> key;        ///< primary key column names, key order
  std::vector<std::string> key_types;  ///< their format_type, for casting cursor values
  double estimated_rows = 0;           ///< pg_class.reltuples (-1 or 0 when never analysed)
};

/// Describes "schema.table" on `conn`. Terminal error when the table does not exist.
Result<TableDescription> describe_snapshot_table(PGconn* conn, const std::string& qualified);

/// SELECT of the table's published columns in key order, at most `limit` rows; with
/// `after_cursor` only keys above the cursor, passed as parameters $1..$k (text, key order).
/// `where` (may be empty) is an extra condition in parentheses.
std::string keyset_chunk_query(const TableDescription& d, const std::string& where,
                               bool after_cursor, std::size_t limit);

/// Row `row` of a text-format result as a pgoutput tuple (NULLs stay null).
TupleData tuple_of(const PGresult* res, int row);

/// COPY (SELECT ...) TO STDOUT of the table's published columns: with a primary key in key
/// order and, with `after`, only keys above it (its values in text, key order, inlined as
/// escaped literals cast to the key types, since COPY takes no parameters); without a key in
/// the table's own order. `where` (may be empty) is an extra condition in parentheses.
std::string snapshot_copy_query(const TableDescription& d, const std::string& where,
                                const std::optional<std::vector<std::string>>& after);

/// The tables a snapshot of `tables` reads, named as the stream names their rows: a
/// partitioned table as itself when `publication` publishes through the root (or does not
/// exist), else as its leaf partitions. Errors from libpq (a table that does not exist).
Result<std::vector<std::string>> leaf_tables(PGconn* conn, const std::string& publication,
                                             const std::vector<std::string>& tables);

struct SnapshotOptions {
  std::uint32_t chunk_size = 1024;
  /// Optional WHERE condition per "schema.table".
  std::map<std::string, std::string> table_conditions;
  /// Told of each table's start and of the rows read after each chunk; may be null.
  BlockingSnapshotTracker* tracker = nullptr;
  /// Whether the stream follows the snapshot (false under initial_only): then a read in a
  /// transaction of its own records its view in the assembler's visibility filter.
  bool stream_follows = true;
};

/// Reads the snapshot described by `progress` on `conn` (a connection of its own). Tables are
/// described on `catalog` (another connection, outside the snapshot, after the tables are
/// locked), so the description matches the table's current definition, which is what the
/// snapshot transaction's queries use even when DDL committed after the snapshot was taken.
/// `emit(events, sizes)` hands over a batch of whole chunks (up to 8,192 events, or one
/// chunk when chunk_size is larger; the last event of each chunk carries the progress after
/// it) with each event's detail::approx_event_bytes, leaves in `events` events the consumer
/// is done with (or nothing), whose memory the next rows reuse, and returns false when the
/// source is stopping. Returns when every table is read (the
/// transaction is committed), when `stop` is set or `emit` returns false (the connection may
/// be left inside a COPY: close it), or on error (kinds from libpq's classification;
/// invalid_data for a row that does not fit its table's description; checkpoint for a cursor
/// that does not fit the table's primary key). The transaction sets statement_timeout to 0
/// for itself, since one statement reads a whole table.
Status run_snapshot(PGconn* conn, PGconn* catalog, TransactionAssembler& assembler,
                    SnapshotProgress progress,
                    const SnapshotOptions& options,
                    const std::function<bool(std::vector<Event>&, std::vector<std::size_t>&)>& emit,
                    const std::atomic<bool>& stop);

}  // namespace cppcdc::pg
