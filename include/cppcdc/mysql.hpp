#pragma once
// The MySQL and MariaDB source: a replication client that reads the binary log (ROW format)
// as a replica would, over MariaDB Connector/C, and turns its row events into change events;
// plus the notation and order of its checkpoint offsets.
//
// Offsets. A checkpoint offset is either a binlog coordinate "<basename>.<sequence>:<position>"
// (e.g. "mysql-bin.000012:4567", the end of the last delivered transaction), or a GTID
// position (MariaDB "0-1-100" or "0-1-100,1-2-7", one entry per replication domain; MySQL
// "uuid:1-5,uuid:7"). Coordinates of one basename are ordered by (sequence, position); GTID
// positions, coordinates of different basenames, and a coordinate against a GTID position are
// not ordered. Each event's source.offset is the coordinate where its binlog event begins.
//
// What the server needs (checked at start(), each failure a terminal error with its remedy):
// log_bin on, binlog_format ROW, a user with REPLICATION SLAVE (MariaDB 10.5+: also BINLOG
// MONITOR; MySQL: REPLICATION CLIENT) and SELECT on the captured tables. binlog_row_image
// other than FULL is accepted with a warning: update and delete events then carry the columns
// the server logged only (the rest are listed as unavailable).
//
// Values are text, as the server's text protocol prints them for `SELECT col` with time_zone
// '+00:00' (binary strings and BIT as "\x" and lower-case hex; JSON as JSON).
//
// Threading: a source is driven by one thread (Source's rules); it reads the binlog on a
// thread of its own. Ownership: the source owns its connections and closes them in close().

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/position.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/snapshot.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc::mysql {

/// Which server the source talks to. The wire protocol is shared; GTIDs, the replica
/// handshake and some event types differ.
enum class ServerFlavor { kMySql, kMariaDb };

/// Whether checkpoints hold GTID positions or binlog coordinates.
enum class GtidMode {
  /// MariaDB: on (GTIDs always exist there). MySQL: on when the server's gtid_mode is ON.
  kAuto,
  /// Resume by GTID position; a server without GTIDs is a configuration error.
  kOn,
  /// Resume by binlog file and position.
  kOff,
};

/// TLS on the connections (SQL and replication alike).
enum class SslMode {
  kDisabled,        ///< plain TCP
  kPreferred,       ///< TLS when the server offers it, without verifying the certificate
  kRequired,        ///< TLS or fail, without verifying the certificate
  kVerifyCa,        ///< TLS, certificate signed by ssl_ca
  kVerifyIdentity,  ///< kVerifyCa and the certificate names `host`
};

struct MysqlSourceConfig {
  ServerFlavor flavor = ServerFlavor::kMariaDb;
  std::string host = "127.0.0.1";
  std::uint16_t port = 3306;
  std::string user;
  /// Never logged nor described.
  std::string password;
  /// Captured tables as "database.table"; either part may use the globs `*` (any run of
  /// characters) and `?` (one character), e.g. "shop.*". Matching is case-sensitive. At least
  /// one entry.
  std::vector<std::string> tables;
  /// The replica server id this client announces; it must differ from every server and
  /// replica of the replication topology (two clients with one id disconnect each other).
  /// 0: derived from source_id (a stable number in 1000000..1999999).
  std::uint32_t server_id = 0;
  GtidMode gtid_mode = GtidMode::kAuto;
  SslMode ssl_mode = SslMode::kPreferred;
  std::string ssl_ca;    ///< PEM file of the trusted CA(s) (kVerifyCa, kVerifyIdentity)
  std::string ssl_cert;  ///< client certificate PEM file (optional)
  std::string ssl_key;   ///< its private key PEM file (optional)
  /// The server sends a heartbeat after this long without events, ms: an idle server still
  /// reports its position (so a quiet pipeline's checkpoint moves) and a dead connection is
  /// noticed. 1 .. 3,600,000.
  std::uint32_t heartbeat_interval_ms = 1000;
  /// Connecting (TCP and handshake) gives up after this long, ms.
  std::uint32_t connect_timeout_ms = 10'000;
  /// The replication connection is presumed dead when nothing (not even a heartbeat) arrived
  /// for this long, ms; the source then fails with a transient error and the runtime
  /// reconnects. 0: wait forever. Must exceed heartbeat_interval_ms.
  std::uint32_t receive_timeout_ms = 60'000;
  /// A transaction whose events (as held in memory, roughly) outgrow this many bytes before its
  /// commit is moved to a temporary file and handed over in pieces after the commit, so one
  /// huge transaction does not need its size in memory. 0 spills every transaction.
  std::size_t spill_threshold_bytes = std::size_t{32} << 20;
  /// Lets poll() decode some transactions' rows on the consumer's thread while it has little
  /// queued, so that the reader and the consumer share the decoding (a transaction of up to
  /// 1 MiB of rows events, and at most spill_threshold_bytes / 16, with no statement in it;
  /// the others are decoded by the reader).
  /// Order, positions and events are the same either way. false: the reader decodes all.
  bool share_decoding = true;
  /// Directory of the spill files; empty means the system's temporary directory ($TMPDIR or
  /// /tmp). The files are unlinked as soon as they are made: nothing stays behind.
  std::string spill_dir;
  /// Snapshot of existing rows (op `read`) before the stream: see SnapshotMode. kIncremental
  /// (MariaDB only; with MySQL a configuration error) streams from the current position and
  /// reads the snapshot tables in chunks alongside (cppcdc/incremental_snapshot.hpp); it needs
  /// snapshot_signal_table.
  SnapshotMode snapshot_mode = SnapshotMode::kInitial;
  /// "database.table" of the watermark table that incremental snapshots write to (MariaDB).
  /// Around each chunk's read the source writes one row there (its key is source_id) and
  /// recognises that write when the binlog brings it back, which brackets the read exactly
  /// in binlog order. Created when missing (columns id, type, data, as a Debezium signal
  /// table has them); the user needs INSERT, UPDATE (and CREATE, unless it exists) on it.
  /// Its own changes are never emitted. Empty: no incremental snapshots (a request fails,
  /// naming this setting).
  std::string snapshot_signal_table;
  /// Rows per snapshot chunk (one keyset query; progress is saved after each chunk).
  std::uint32_t snapshot_chunk_size = 1024;
  /// Tables to snapshot as "database.table" (default: every captured table).
  std::vector<std::string> snapshot_tables;
  /// Optional SQL condition per "database.table" restricting its snapshot rows.
  std::vector<std::pair<std::string, std::string>> snapshot_table_conditions;
  /// source.source_name in the envelope; empty: "mysql" or "mariadb" after the flavor.
  std::string source_name;
  /// The identity checkpoints are kept under (Source::source_id()): one per pipeline reading
  /// this server.
  std::string source_id = "cppcdc";
  /// Most events and bytes (estimated) decoded ahead of the consumer (backpressure bounds).
  std::size_t max_queued_events = 100'000;
  std::size_t max_queued_bytes = std::size_t{32} << 20;
};

/// The type name of a flavor: "mysql" or "mariadb" (also the Source::type()).
std::string_view to_string(ServerFlavor flavor) noexcept;

/// The server id used for `config` (server_id, or the one derived from source_id).
std::uint32_t effective_server_id(const MysqlSourceConfig& config);

/// Validates the config (error kind configuration naming the setting) and builds the source.
/// Nothing connects until Source::start().
Result<std::unique_ptr<Source>> make_mysql_source(MysqlSourceConfig config);

/// A parsed binlog coordinate; `basename` points into the parsed text.
struct BinlogCoordinate {
  std::string_view basename;
  std::uint64_t sequence = 0;
  std::uint64_t position = 0;
};

/// nullopt for anything that is not exactly "<basename>.<decimal>:<decimal>".
std::optional<BinlogCoordinate> parse_binlog_coordinate(std::string_view offset);

/// The order of MySQL and MariaDB checkpoint offsets described above.
std::shared_ptr<const PositionOrder> offset_order();

/// Registers offset_order() for source types "mysql" and "mariadb" (idempotent, thread-safe).
void register_positions();

/// Registers source types "mysql" and "mariadb" (cppcdc/plugin.hpp; the type sets the
/// flavor): their settings are the fields of MysqlSourceConfig under the same names, except
/// `password_env` (the name of an environment variable holding the password, instead of
/// `password`) and the nested `snapshot` section (`mode`, `chunk_size`, `tables`,
/// `table_conditions`, `signal_table`); flavor comes from the type. Idempotent.
void register_plugin();

}  // namespace cppcdc::mysql
