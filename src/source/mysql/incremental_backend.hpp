#pragma once
// The MariaDB half of the incremental snapshot (cppcdc/incremental_snapshot.hpp).
//
// Watermarks are writes to the signal table (MysqlSourceConfig::snapshot_signal_table): one
// upsert of the row keyed by source_id, in autocommit, before and after each chunk's read.
// The server hands back the GTID of that write (@@last_gtid); the reader thread notes where
// a transaction touching the signal table starts in the binlog (WatermarkLog), so each
// watermark becomes an exact binlog coordinate once the stream has decoded it.
//
// Why that bracket is exact on MariaDB: transactions become visible in the order the binlog
// holds them (the engines' commit_ordered step runs in binlog order), and a write's OK comes
// after its own commit. So every transaction before the low watermark in the binlog was
// visible to the chunk's read (which starts after that OK), and none after the high
// watermark was (it became visible after its binlog write, which came after the high
// watermark's write, which came after the read ended). A transaction between the two may or
// may not have been seen: its rows suppress the chunk's. No in-flight set is needed.
//
// An event is placed by the coordinate of its binlog event (source.offset). A watermark the
// reader has not decoded yet is later in the binlog than every event handed over so far
// (the reader records it before it hands over anything after it), which answers the
// placement of events taken before it shows up.
//
// Chunks are keyset queries on the primary key, in key order, on a connection of their own,
// each one statement in autocommit, printed by the blocking snapshot's text_row so chunk
// values equal stream values character for character.

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/mysql.hpp"
#include "cppcdc/position.hpp"

namespace cppcdc::mysql::detail {

/// A binlog coordinate as a LogPosition ordered byte-wise: the file's sequence number, then
/// the position, 8 bytes each, big-endian.
LogPosition encode_coordinate(std::uint64_t sequence, std::uint64_t position);

/// Where the transactions that wrote to the signal table start in the binlog, by GTID text
/// ("domain-server-seq"). Filled by the reader thread, read by the backend; thread-safe.
/// Keeps the most recent kLimit entries.
class WatermarkLog {
 public:
  static constexpr std::size_t kLimit = 256;
  void seen(std::string gtid, LogPosition start);
  std::optional<LogPosition> find(std::string_view gtid) const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::deque<std::pair<std::string, LogPosition>> entries_;
};

/// What the backend needs from the source it belongs to.
struct IncrementalHooks {
  std::shared_ptr<WatermarkLog> watermarks;
  /// True while nothing decoded waits in the source's queue (everything the reader decoded
  /// has been taken by poll()).
  std::function<bool()> drained;
  /// Whether the blocking snapshot is reading tables (requests are refused meanwhile).
  std::function<bool()> blocking_snapshot_running;
};

/// The backend for `config` (MariaDB, snapshot_signal_table set).
std::unique_ptr<IncrementalSnapshotBackend> make_incremental_backend(MysqlSourceConfig config,
                                                                     IncrementalHooks hooks);

}  // namespace cppcdc::mysql::detail
