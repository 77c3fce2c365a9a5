#pragma once
// The PostgreSQL source's replication slot: found or made (optionally with an exported
// snapshot for the blocking snapshot to read), checked against the checkpoint, advanced by SQL
// (the sql_peek transport), and set aside when a when_needed checkpoint cannot be resumed.

#include <libpq-fe.h>

#include <optional>
#include <string>

#include "cppcdc/error.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/result.hpp"
#include "source/postgres/pg_conn.hpp"

namespace cppcdc::pg::detail {

/// Another process streams from replication slot `slot`: `refusal` is the server's error for
/// START_REPLICATION, which gets what to do as context; without one, the start-up check saw
/// the slot active for PID `active_pid`. Either way it is retried (it may be the walsender of
/// a previous run that has not noticed its client is gone), but if it persists an operator has
/// to act.
Error slot_in_use_error(const std::string& slot, std::optional<Error> refusal,
                        const std::string& active_pid = "?");

/// The slot as ensure_slot() found or made it.
struct SlotState {
  Lsn confirmed;  ///< its confirmed_flush_lsn; a new slot's starting point
  /// Made with an exported snapshot: the replication connection that holds the snapshot (open
  /// and idle until the snapshot has been read; START_REPLICATION then reuses it) and the
  /// snapshot's name. Otherwise null and empty.
  ConnPtr repl;
  std::string exported_snapshot;
};

/// Finds config.slot_name on `sql` (in `database`) and checks it against `checkpoint` (zero:
/// none), or creates it when allowed; with `export_snapshot` a new slot is created over a
/// replication connection with an exported snapshot. `snapshot_first`: the stream starts only
/// after a snapshot, so a slot another process streams from is refused now.
Result<SlotState> ensure_slot(PGconn* sql, const PostgresSourceConfig& config,
                              const std::string& database, Lsn checkpoint, bool snapshot_first,
                              bool export_snapshot);

/// when_needed: why the checkpoint at `checkpoint` cannot be resumed ("" when it can). A slot
/// that was invalidated is dropped here, so that it is made again with a snapshot.
Result<std::string> checkpoint_usable(PGconn* sql, const PostgresSourceConfig& config,
                                      Lsn checkpoint);

/// pg_replication_slot_advance(slot, to).
Status advance_slot(PGconn* sql, const std::string& slot, Lsn to);

// The pipeline's claim on its database: a session-level advisory lock whose key is derived
// from the slot name (the first 64 bits of md5("cppcdc pipeline " + slot_name), computed by
// the server), which a running source holds on its SQL connection from before its snapshot
// to its close. The slot alone does not show that a pipeline runs: it is inactive while the
// initial snapshot is read, and a copy of the configuration started then would pass the slot
// check and open its sinks (a transactional Kafka sink's start fences the running
// producer). Advisory locks need no privilege and end with their session, also when the
// holding process is killed.

/// Who holds the pipeline lock of `slot` in `sql`'s database, other than `sql`'s own
/// session: "PID n (application_name a, client c)" as far as the server shows it, or nullopt
/// when no other session holds it. Changes nothing.
Result<std::optional<std::string>> pipeline_lock_holder(PGconn* sql, const std::string& slot);

/// Takes the pipeline lock of `slot` on `sql` (held until `sql` closes), waiting up to 3 s for
/// a holder that is ending. Errors: another session keeps holding it (transient: it may be
/// the session of this pipeline's previous connection that the server has not yet seen
/// close; the message names the holder and says what to do if it persists), or the
/// statement fails.
Status hold_pipeline_lock(PGconn* sql, const std::string& slot);

}  // namespace cppcdc::pg::detail
