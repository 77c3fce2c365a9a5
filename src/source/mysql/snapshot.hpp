#pragma once
// The blocking snapshot of the MySQL / MariaDB source: every captured table read in one
// consistent view, with the exact binlog coordinate of that view, so the stream starts where
// the snapshot's rows end (no change lost, none twice).
//
// The view is a START TRANSACTION WITH CONSISTENT SNAPSHOT on a connection of its own; on
// MariaDB the status variables Binlog_snapshot_file / Binlog_snapshot_position give the
// binlog coordinate of that view (no global read lock needed). MySQL has no such variables:
// there the coordinate is read right after the view is opened, which is exact only when no
// transaction commits in between (a warning says so).
//
// Rows are read by one ordered SELECT per table (mysql_use_result, streamed), handed over in
// chunks of snapshot_chunk_size rows as op `read` events. An interrupted snapshot is not
// resumed: its events carry no resume position, so a restart takes the snapshot again; the
// last event of the snapshot carries the stream's start as its resume position.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/mysql.hpp"
#include "source/mysql/binlog_client.hpp"
#include "source/mysql/schema_history.hpp"

namespace cppcdc::mysql::detail {

struct SnapshotPlan {
  std::string id;            ///< "<source_id>@<stream start offset>"
  StreamStart stream_start;  ///< where the stream resumes after the snapshot
  MysqlPtr conn;             ///< holds the consistent-snapshot transaction
  std::vector<TableSchemaPtr> tables;
  /// The server's estimate of each table's rows (information_schema.TABLES.TABLE_ROWS), in
  /// the order of `tables`; 0 when unknown. For progress reports only.
  std::vector<double> estimated_rows;
};

/// Whether the text protocol sends the values of `c` as raw bytes (binary strings, BIT,
/// spatial types); those are printed as "\x" and lower-case hex, as the row decoder does.
bool raw_bytes_column(const ColumnSchema& c);

/// One fetched text-protocol row of `t` (`row`/`lengths` as mysql_fetch_row and
/// mysql_fetch_lengths give them; `as_hex[i]` = raw_bytes_column of column i) as the values
/// the stream carries for the same row: the blocking and the incremental snapshot share it.
Row text_row(const TableSchema& t, const std::vector<bool>& as_hex, char** row,
             const unsigned long* lengths);

/// Opens the snapshot's view, reads its binlog coordinate, and loads `history` from the
/// catalog. Errors: transient (connection) or terminal (privileges, unknown tables).
Result<SnapshotPlan> begin_snapshot(const MysqlSourceConfig& config, SchemaHistory& history,
                                    const ServerInfo& server);

/// Reads every table of `plan` and emits its rows (see above). `state` is the resume_state
/// of the last event. Returns ok() after a stop too (stop flag set). `tracker` (may be null)
/// is told of each table's start and of the rows read after each chunk. Progress is logged
/// per table as the PostgreSQL snapshot logs it (core/progress_log.hpp).
Status read_snapshot(SnapshotPlan& plan, const MysqlSourceConfig& config,
                     const SchemaHistory& history, const SnapshotEmit& emit,
                     const std::atomic<bool>& stop, const std::string& state,
                     BlockingSnapshotTracker* tracker = nullptr);

}  // namespace cppcdc::mysql::detail
