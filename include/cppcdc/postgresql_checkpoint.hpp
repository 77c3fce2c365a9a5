#pragma once
// The "postgresql" checkpoint backend: the record in a row of a PostgreSQL table.
//
// Storage. One row per checkpoint id in `<schema>.<table>` (defaults "cppcdc"."checkpoints";
// both names are used as written, quoted, so "Cppcdc" and "cppcdc" differ):
//
//   id          text PRIMARY KEY   the source's checkpoint id (PostgreSQL: the slot name)
//   record      bytea NOT NULL     FileCheckpoint::encode(record): header line with a SHA-256
//                                  over the JSON body, so damage is detected, never read as
//                                  a fresh start; convert_from(record, 'UTF8') shows it
//   generation  bigint NOT NULL    1 at the first save, +1 at every save (see fencing)
//   position    text NOT NULL      the record's offset, for people and monitoring only: the
//                                  backend never reads it back
//   updated_at  timestamptz        the server's clock at the save
//
// A record can be several MB (a MySQL source keeps its schema history in source_state): it is
// sent and read as binary bytea, no escaping, no size limit of cppcdc's own.
//
// open() connects, takes the writer lock and checks the privileges it will need; it creates
// nothing, so `cppcdc preflight` leaves the database as it was. The first save creates the
// schema and the table when missing (CREATE SCHEMA / TABLE IF NOT EXISTS).
//
// A save is one transaction: an UPDATE of the row (INSERT for the first one) that compares
// the generation, then COMMIT. The row is replaced whole or not at all; the transaction's
// durability is the server's (synchronous_commit).
//
// Fencing a second writer: a session-level advisory lock, pg_try_advisory_lock(k) with k the
// first 8 bytes of a SHA-256 over (schema, table, id), held by the backend's connection for
// the life of the Checkpoint. Chosen because it refuses a second writer at open(), before it
// reads or writes anything, names the holder (pg_locks joined to pg_stat_activity: its pid,
// application_name and client address), and goes with the holder's session: a writer that
// dies releases it at once (only a holder whose host or network vanished keeps it until the
// server notices, or until pg_terminate_backend), so a restart after a crash is not held up.
// A generation check alone would let a second writer start and fail one of the two only at
// some later save. The lock needs a server session of its own: the DSN must reach PostgreSQL
// directly or through a pooler in session mode, never in transaction mode. The generation
// compare-and-set comes on top: should the lock ever be lost (the connection dropped and
// another writer got in before the reconnect), the next save finds the generation moved and
// is refused instead of overwriting the other's record.
//
// Connections: application_name "cppcdc-checkpoint pid <pid> on <host>" (unless the DSN names
// one), connect_timeout 10 s and TCP keepalives unless the DSN sets them, client_encoding
// UTF8, statement_timeout 60 s for the backend's own statements. A connection lost between
// calls is reopened (and the lock taken again) by the next call; one lost during a save is
// reopened once within it, and the stored row tells whether the COMMIT got through (then the
// save succeeded) or nothing changed (then it is written again).
//
// Errors (cppcdc::Error, category "checkpoint error"):
//   - transient: the server cannot be reached or the connection dropped (the message names
//     host and port); the lock held on reopening a dropped connection (the server may not have
//     ended the old session yet);
//   - configuration: a DSN libpq cannot parse, authentication failed, a missing database or
//     role, a TLS set-up that cannot work (about setting `dsn`); permission denied, or a
//     privilege open() found missing (about `schema` or `table`, with the GRANT to run); a
//     second writer at open() (naming the lock and its holder);
//   - terminal: a stored record that does not decode (checksum mismatch, truncated), naming
//     the row; a generation that moved under this writer; any other SQL error.
//
// Threading: as Checkpoint (load and save from any thread; one connection, used under a
// mutex). Not fork-safe beyond what the crash tests do: a forked child must not use the
// instance while the parent does.

#include <memory>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

struct PostgresqlCheckpointOptions {
  /// libpq connection string or postgresql:// URI (may carry a password; never logged).
  std::string dsn;
  /// Schema of the table (created by the first save when missing).
  std::string schema = "cppcdc";
  /// Table holding one row per checkpoint id.
  std::string table = "checkpoints";
};

/// Opens the backend for checkpoint id `checkpoint_id` (Checkpoint::name() is "postgresql"):
/// connects, takes the writer lock, checks privileges. Blocks for at most the connect timeout
/// plus a few statements. Errors: see the header comment.
Result<std::unique_ptr<Checkpoint>> open_postgresql_checkpoint(
    const PostgresqlCheckpointOptions& options, const std::string& checkpoint_id);

/// Where errors say a record lives: "checkpoint row 'ID' of table "SCHEMA"."TABLE"".
std::string postgresql_checkpoint_location(const PostgresqlCheckpointOptions& options,
                                           const std::string& checkpoint_id);

/// Deletes the row of `checkpoint_id` (taking the writer lock first, so never while a writer
/// holds it: configuration error). A missing table or row is not an error; nothing is
/// created.
Status remove_postgresql_checkpoint(const PostgresqlCheckpointOptions& options,
                                    const std::string& checkpoint_id);

/// Registers `[state.offset] backend = "postgresql"` (settings `dsn` or `dsn_env`, `schema`,
/// `table`) with the plugin registry (cppcdc/plugin.hpp). Idempotent.
void register_postgresql_checkpoint_plugin();

}  // namespace cppcdc
