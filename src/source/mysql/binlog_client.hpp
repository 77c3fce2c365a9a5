#pragma once
// The binlog client of the MySQL / MariaDB source: the start-up checks (each failure with a
// one-line remedy), where the stream starts (the server's current position, or a checkpoint
// checked against what the server still has), and the replication session itself: a
// COM_BINLOG_DUMP over Connector/C's replication API (mariadb_rpl_open / mariadb_rpl_fetch)
// from a file and position or, on MariaDB, from a GTID position. Events are handed over as
// their bytes (the event without the protocol's OK byte, checksum included); decoding them is
// the event decoder's (binlog_event.hpp), never Connector/C's.

// clang-format off
#include <mysql.h>  // before mariadb_rpl.h, which uses its types
#include <mariadb_rpl.h>
// clang-format on

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/result.hpp"
#include "source/mysql/mysql_conn.hpp"

namespace cppcdc::mysql::detail {

/// What the start-up checks learnt of the server.
struct ServerInfo {
  std::string version;  ///< @@version
  bool mariadb = false;
  bool gtid = false;           ///< checkpoints hold GTID positions (the effective GTID mode)
  bool full_row_image = true;  ///< binlog_row_image = FULL
  std::string checksum;        ///< @@binlog_checksum ("CRC32", "NONE")
};

/// Checks the server for change capture: the flavor matches, log_bin is on, binlog_format is
/// ROW, the user may read the binlog (REPLICATION SLAVE, and BINLOG MONITOR or REPLICATION
/// CLIENT), the GTID mode asked for is available. binlog_row_image other than FULL is logged
/// as a warning. Errors: terminal or configuration, each naming the remedy.
Result<ServerInfo> check_server(MYSQL* conn, const MysqlSourceConfig& config);

/// A place in the binlog to read from. With `gtid` set (MariaDB), the dump starts after that
/// GTID position and `file` / `position` are informational.
struct StreamStart {
  std::string file;
  std::uint64_t position = 4;
  std::string gtid;

  /// The checkpoint offset text of this place: the GTID position when set, else "file:pos".
  std::string offset() const;
};

/// The server's current end of the binlog: SHOW MASTER STATUS, and (MariaDB) the GTID
/// position of that coordinate.
Result<StreamStart> current_position(MYSQL* conn, const ServerInfo& server);

/// Parses a checkpoint offset into a StreamStart (a coordinate, or a GTID position). An
/// offset of the wrong kind for the GTID mode is accepted: a coordinate resumes by file and
/// position, a GTID position by GTID (MariaDB only). Errors: terminal, naming the offset.
Result<StreamStart> parse_resume_offset(std::string_view offset, const ServerInfo& server);

/// Why the server can no longer resume at `start` (the binlog file was purged, or the GTID
/// position is older than the oldest binlog or unknown to the server); empty when it can.
Result<std::string> resume_problem(MYSQL* conn, const StreamStart& start, const ServerInfo& server);

/// One replication session (COM_BINLOG_DUMP). Used by the reader thread; interrupt() may be
/// called from any thread.
class BinlogStream {
 public:
  /// Opens a connection of its own, declares the replica session (checksum, MariaDB
  /// capabilities, heartbeat period, GTID start) and starts the dump at `start`.
  /// `non_blocking`: the server ends the stream at the end of the binlog (tests, tools).
  static Result<std::unique_ptr<BinlogStream>> open(const MysqlSourceConfig& config,
                                                    const ServerInfo& server,
                                                    const StreamStart& start,
                                                    bool non_blocking = false);
  ~BinlogStream();
  BinlogStream(const BinlogStream&) = delete;
  BinlogStream& operator=(const BinlogStream&) = delete;

  /// The next event's bytes (valid until the next call), or an empty span when the server
  /// ended the stream (non_blocking at the end of the binlog). Errors: transient for a lost
  /// connection or a receive timeout; terminal for the server's replication errors (a purged
  /// binlog, an unknown GTID position) with the remedy.
  Result<std::span<const std::uint8_t>> next();

  /// Whether bytes of the stream are waiting on the connection's socket now (no wait): a
  /// next() called now would not wait for the server, except for the rest of an event that
  /// is still on its way. An event Connector/C has read ahead of the socket is not seen: then
  /// false, although next() would return at once. Reader thread.
  bool readable_now() const noexcept;

  /// Makes a next() that waits return (with a transient error) by shutting the socket down.
  void interrupt() noexcept;

 private:
  BinlogStream() = default;
  Error stream_error(const std::string& what) const;

  MysqlPtr conn_;
  MARIADB_RPL* rpl_ = nullptr;
  MARIADB_RPL_EVENT* event_ = nullptr;
  std::atomic<bool> interrupted_{false};
  std::string where_;  // the start, for messages
};

}  // namespace cppcdc::mysql::detail
