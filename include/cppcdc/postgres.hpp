#pragma once
// The PostgreSQL source: logical replication with the pgoutput plugin, protocol version 1,
// over a libpq replication connection (START_REPLICATION ... LOGICAL), plus an ordinary SQL
// connection for catalog look-ups and slot/publication management.
//
// Every connection it opens fixes the session settings that change how values print:
//   DateStyle=ISO, MDY  TimeZone=UTC  IntervalStyle=postgres  extra_float_digits=1
//   bytea_output=hex    lc_monetary=C   client_encoding=UTF8
// so a value is the same text whatever the server's defaults are. They are passed as libpq
// `options` (-c name=value) and apply to the walsender, where pgoutput runs the output
// functions.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/result.hpp"
#include "cppcdc/snapshot.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc::pg {

/// How WAL changes travel from PostgreSQL (architecture document, "WAL transport").
enum class WalTransport {
  /// START_REPLICATION ... LOGICAL over a replication connection: the server pushes changes
  /// as they are written; progress goes back in standby status updates. The default.
  kStreamingReplication,
  /// pg_logical_slot_peek_binary_changes() over ordinary SQL connections, polled. For setups
  /// where a replication connection cannot be made (a pooler in the way). The role still
  /// needs the REPLICATION attribute (PostgreSQL requires it for any slot function). Each
  /// peek re-decodes from the slot's restart_lsn, so it costs more as unconfirmed WAL grows;
  /// the slot is moved on with pg_replication_slot_advance() once a position is checkpointed.
  kSqlPeek,
};

/// The snapshot modes are the same for every source (cppcdc/snapshot.hpp).
using SnapshotMode = cppcdc::SnapshotMode;
using cppcdc::to_string;

struct PostgresSourceConfig {
  /// libpq connection string or URI ("host=... dbname=... user=..."). `replication=database`
  /// is added for the replication connection.
  std::string dsn;
  std::string slot_name = "cppcdc";
  std::string publication_name = "cppcdc_pub";
  /// Captured tables as "schema.table". Changes to other tables of the publication are
  /// dropped. Must not be empty.
  std::vector<std::string> tables;
  /// Create the slot (pgoutput) when it does not exist.
  bool create_slot = true;
  /// Create the publication FOR TABLE `tables` when it does not exist.
  bool create_publication = true;
  /// At start, a slot whose confirmed_flush_lsn is past the checkpoint means PostgreSQL
  /// already released changes this pipeline never acknowledged (a restored or copied
  /// checkpoint, or another consumer on the slot). That is refused unless this is true, in
  /// which case the changes in between are skipped knowingly and a warning is logged.
  bool accept_slot_ahead_of_checkpoint = false;
  /// Where the source records a replication slot it created when it cannot say so on the
  /// publication (one cppcdc did not create, which it may not comment on): the file
  /// `created-slot-<slot_name>` (mode 0600), which `cppcdc teardown` reads so that it drops
  /// such a slot without being told. Empty: no such record (teardown then keeps that slot
  /// unless told to include it). The server sets the checkpoint's directory.
  std::filesystem::path state_dir;
  /// Deliver logical decoding messages written with pg_logical_emit_message() as events of
  /// op `message` on the synthetic table "<prefix>__messages" (no schema, no primary key,
  /// `after` = {prefix, content, transactional}). Asks pgoutput for them with the
  /// `messages` option (PostgreSQL 14 or later). Transactional messages arrive inside their
  /// transaction, in WAL order with its changes; non-transactional ones on their own.
  bool capture_logical_messages = false;
  /// Ask pgoutput to stream large transactions while they are still in progress (protocol
  /// version 2, option `streaming`; PostgreSQL 14 or later, streaming_replication transport
  /// only). Without it the server's walsender holds each transaction until its commit and
  /// writes the part over logical_decoding_work_mem to spill files under pg_replslot on the
  /// database host; with it the walsender hands that part over at once and cppcdc keeps it
  /// (in memory up to spill_threshold_bytes, then in its own spill file) until the commit.
  /// Events, their order, and checkpoints are the same either way: nothing is delivered
  /// before its commit, an aborted transaction delivers nothing, and an aborted
  /// subtransaction's changes are dropped. Measured on a 1,000,000-row transaction: the
  /// walsender's CPU time falls by about 40 % (bench/README.md).
  bool stream_in_progress = false;
  /// The WAL transport. Both give identical events (offsets included), so a checkpoint made
  /// with one resumes with the other.
  WalTransport transport = WalTransport::kStreamingReplication;
  /// kSqlPeek: pause between peeks that found nothing new, ms.
  std::uint32_t peek_interval_ms = 200;
  /// kSqlPeek: server-side statement_timeout of each peek, ms. A peek that runs over it is
  /// cancelled by the server and the next one asks for half as many changes; when even a
  /// peek of one transaction runs over it, that is an error naming this setting. Each peek
  /// decodes from the slot's restart_lsn, so an old open transaction that holds restart_lsn
  /// back makes every peek slower.
  std::uint32_t peek_statement_timeout_ms = 30'000;
  /// kSqlPeek: changes asked for per peek (upto_nchanges; PostgreSQL always finishes the
  /// transaction it is in, so a peek returns whole transactions).
  std::uint32_t peek_max_changes = 10'000;
  /// Snapshot of existing rows (op `read`) before the stream: see SnapshotMode. An
  /// interrupted snapshot resumes from the checkpoint whatever the mode.
  SnapshotMode snapshot_mode = SnapshotMode::kInitial;
  /// Rows per snapshot chunk (one keyset query; progress is saved after each chunk), for the
  /// blocking and the incremental snapshot.
  std::uint32_t snapshot_chunk_size = 1024;
  /// Tables to snapshot as "schema.table" (default: all of `tables`); each must be captured.
  std::vector<std::string> snapshot_tables;
  /// Optional SQL condition per "schema.table" restricting its snapshot rows.
  std::vector<std::pair<std::string, std::string>> snapshot_table_conditions;
  /// source.source_name in the envelope.
  std::string source_name = "postgres";
  /// Standby status update interval while idle, ms.
  std::uint32_t status_interval_ms = 10'000;
  /// The replication connection is presumed dead, and the source fails with a transient
  /// error (the runtime reconnects), when nothing has arrived on it for this long, ms. A
  /// keepalive is requested every second, so a live server answers well within it unless it
  /// is busy decoding: it then answers after half its wal_sender_timeout at the latest (30 s
  /// by default), so keep this above that. 0: wait forever.
  std::uint32_t wal_receiver_timeout_ms = 60'000;
  /// Most events decoded ahead of the consumer (backpressure bound).
  std::size_t max_queued_events = 100'000;
  /// Most bytes of events (estimated in-memory size) decoded ahead of the consumer. A
  /// transaction held in memory is handed over whole, so the queue may exceed this by at
  /// most one transaction of up to spill_threshold_bytes.
  std::size_t max_queued_bytes = std::size_t{32} << 20;
  /// A transaction whose events take more memory than this (bytes, estimated) while waiting
  /// for its commit is spilled to a temporary file and read back in pieces after the commit,
  /// so one huge transaction does not need its size in memory. 0 spills every transaction.
  std::size_t spill_threshold_bytes = std::size_t{32} << 20;
  /// Directory of the spill files; empty means the system's temporary directory ($TMPDIR or
  /// /tmp). Spill files are unlinked as soon as they are created: they vanish when done, and
  /// also when the process is killed.
  std::string spill_dir;
};

/// The session settings listed above, as libpq `options` text.
std::string session_options();

/// `dsn` with every secret replaced by "****": the `password=` and `sslpassword=` keywords of
/// a key=value connection string (quoted or not), and the user-info password and `password` /
/// `sslpassword` query parameters of a postgres:// or postgresql:// URI. Safe to log.
std::string redact_dsn(std::string_view dsn);

/// Registers source type "postgres" (cppcdc/plugin.hpp): its settings are the fields of
/// PostgresSourceConfig under the same names, except `wal_transport` (transport) and the
/// nested `snapshot` section (`mode`, `chunk_size`, `tables`, `table_conditions`). Idempotent.
void register_plugin();

/// Validates the config (error kind configuration naming the field) and builds the source.
/// Nothing connects until Source::start(). Unless the mode is kInitialOnly, the source runs
/// incremental snapshots on request (Source::incremental_snapshot_control(), or
/// Runtime::incremental_snapshot_control()), and in mode kIncremental from the start.
Result<std::unique_ptr<Source>> make_postgres_source(PostgresSourceConfig config);

}  // namespace cppcdc::pg
