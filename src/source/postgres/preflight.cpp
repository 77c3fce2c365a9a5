// `cppcdc preflight` for PostgreSQL: every check the source's start() makes, and the ones it
// makes only by failing (privileges, free slots and WAL senders), run read-only. Nothing is
// created, altered or dropped; a check that cannot run because an earlier one failed is left
// out rather than reported as a second failure.

#include <libpq-fe.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cppcdc/plugin.hpp"
#include "cppcdc/postgres.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/server_checks.hpp"
#include "source/postgres/settings.hpp"
#include "source/postgres/slot.hpp"
#include "source/postgres/snapshot.hpp"

namespace cppcdc::pg {
namespace {

using detail::exec;
using detail::get;
using detail::TableName;
using Outcome = PreflightCheck::Outcome;

PreflightCheck pass(std::string what) { return {Outcome::kPass, std::move(what), ""}; }
PreflightCheck warn(std::string what, std::string remedy) {
  return {Outcome::kWarn, std::move(what), std::move(remedy)};
}
PreflightCheck failed(std::string what, std::string remedy) {
  return {Outcome::kFail, std::move(what), std::move(remedy)};
}
/// A failed check whose error message already says what to do.
PreflightCheck failed(const Error& error) {
  std::string line;
  for (const auto& layer : error.chain()) line += layer + ": ";
  return {Outcome::kFail, line + error.message(), ""};
}

/// One row of a query, or the error as a failed line (appended to `out`).
std::optional<detail::PgResultPtr> query(
    PGconn* sql, std::vector<PreflightCheck>& out, const std::string& text, const std::string& what,
    const std::vector<std::optional<std::string>>& params = {}) {
  auto res = exec(sql, text, what, params);
  if (!res) {
    out.push_back(failed(res.error()));
    return std::nullopt;
  }
  return std::move(*res);
}

bool is_true(const PGresult* res, int row, int col) {
  return get(res, row, col).value_or("f") == "t";
}

void check_role(PGconn* sql, std::vector<PreflightCheck>& out, std::string& role_out) {
  auto res = query(sql, out,
                   "select current_user, rolreplication, rolsuper from pg_roles where rolname = "
                   "current_user",
                   "reading the role's attributes");
  if (!res || PQntuples(res->get()) == 0) return;
  const std::string role = get(res->get(), 0, 0).value_or("?");
  role_out = role;
  if (is_true(res->get(), 0, 2)) {
    out.push_back(pass("role " + role + " is a superuser"));
  } else if (is_true(res->get(), 0, 1)) {
    out.push_back(pass("role " + role + " has the REPLICATION attribute"));
  } else {
    out.push_back(failed("role " + role + " has neither REPLICATION nor SUPERUSER",
                         "ALTER ROLE " + detail::quote_ident(role) + " REPLICATION"));
  }
}

// `existing`: the tables that exist (the publication checks look at those); `no_identity`:
// those without a usable replica identity, with the error saying so.
void check_tables(PGconn* sql, const PostgresSourceConfig& config,
                  const std::set<TableName>& tables, const std::string& database,
                  const std::string& role, std::vector<PreflightCheck>& out,
                  std::set<TableName>& existing, std::map<TableName, Error>& no_identity) {
  for (const auto& t : tables) {
    if (auto st = detail::check_tables(sql, {t}, database); !st) {
      out.push_back(failed(st.error()));
      continue;
    }
    existing.insert(t);
    auto res = query(sql, out,
                     "select has_table_privilege(format('%I.%I', $1::text, $2::text), "
                     "'SELECT')",
                     "checking the SELECT privilege on " + t.text(), {t.schema, t.table});
    if (!res) continue;
    if (!is_true(res->get(), 0, 0)) {
      out.push_back(failed("table " + t.text() + ": the role may not SELECT from it",
                           "GRANT SELECT ON " + t.text() + " TO " + detail::quote_ident(role)));
      continue;
    }
    // Whether a missing replica identity stops a start depends on the publication (see
    // check_publication); it is reported there.
    if (auto st = detail::check_replica_identities(sql, config, {t}); !st) {
      no_identity.emplace(t, st.error());
      out.push_back(pass("table " + t.text() + " exists and is readable"));
      continue;
    }
    out.push_back(pass("table " + t.text() + " exists, is readable and has a replica identity"));
  }
}

// The publication: it exists and includes every table, or the role may create it. A table
// without a replica identity stops a start only when cppcdc would create the publication (it
// refuses to, since PostgreSQL would then refuse the application's UPDATE and DELETE on it);
// in a publication that exists already, that harm is done, and it is a warning.
void check_publication(PGconn* sql, const PostgresSourceConfig& config,
                       const std::set<TableName>& tables,
                       const std::map<TableName, Error>& no_identity,
                       std::vector<PreflightCheck>& out) {
  const std::string& name = config.publication_name;
  auto res = query(sql, out,
                   "select puballtables, pubupdate or pubdelete from pg_publication where "
                   "pubname = $1",
                   "looking up publication " + name, {name});
  if (!res) return;
  if (PQntuples(res->get()) == 0) {
    if (!config.create_publication) {
      out.push_back(failed(
          "publication " + name + " does not exist (create_publication = false)",
          "CREATE PUBLICATION " + name + " FOR TABLE ..., or set create_publication = true"));
      return;
    }
    for (const auto& [table, error] : no_identity) out.push_back(failed(error));
    // CREATE PUBLICATION ... FOR TABLE needs ownership of every table (or superuser).
    bool all_owned = true;
    for (const auto& t : tables) {
      auto owner = query(sql, out,
                         "select pg_has_role(c.relowner, 'USAGE') from pg_class c join "
                         "pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and "
                         "c.relname = $2",
                         "checking who owns " + t.text(), {t.schema, t.table});
      if (!owner || PQntuples(owner->get()) == 0) continue;
      if (!is_true(owner->get(), 0, 0)) {
        all_owned = false;
        out.push_back(failed("publication " + name +
                                 " does not exist, and the role does not own table " + t.text() +
                                 ", so it cannot create it",
                             "create the publication as the owner (CREATE PUBLICATION " + name +
                                 " FOR TABLE ...) and set create_publication = false"));
      }
    }
    if (all_owned && no_identity.empty()) {
      out.push_back(pass("publication " + name +
                         " does not exist yet; the role may create it (create_publication)"));
    }
    return;
  }
  const bool publishes_changes = is_true(res->get(), 0, 1);
  // Only tables the publication holds: `outside` lists those it does not.
  const auto warn_identities = [&](const std::vector<std::string>& outside) {
    if (!publishes_changes) return;
    for (const auto& [table, error] : no_identity) {
      if (std::find(outside.begin(), outside.end(), table.text()) != outside.end()) continue;
      out.push_back(
          warn("table " + table.text() + " has no replica identity, and publication " + name +
                   " publishes updates and deletes: PostgreSQL refuses the "
                   "application's UPDATE and DELETE on it (cppcdc captures its "
                   "inserts)",
               "add a primary key, or ALTER TABLE " + table.text() + " REPLICA IDENTITY FULL"));
    }
  };
  if (is_true(res->get(), 0, 0)) {
    out.push_back(pass("publication " + name + " exists and publishes all tables"));
    warn_identities({});
    return;
  }
  std::vector<std::string> missing;
  for (const auto& t : tables) {
    auto member = query(sql, out,
                        "select 1 from pg_publication_rel pr join pg_publication p on p.oid = "
                        "pr.prpubid where p.pubname = $1 and pr.prrelid = format('%I.%I', "
                        "$2::text, $3::text)::regclass union all select 1 from "
                        "pg_publication_tables where pubname = $1 and schemaname = $2 and "
                        "tablename = $3",
                        "checking whether publication " + name + " includes " + t.text(),
                        {name, t.schema, t.table});
    if (member && PQntuples(member->get()) == 0) missing.push_back(t.text());
  }
  if (missing.empty()) {
    out.push_back(pass("publication " + name + " exists and includes every captured table" +
                       (tables.size() < config.tables.size() ? " that exists" : "")));
    warn_identities({});
    return;
  }
  std::string list;
  for (const auto& t : missing) list += (list.empty() ? "" : ", ") + t;
  std::string remedy = "ALTER PUBLICATION " + name + " ADD TABLE " + list;
  for (const auto& t : missing) {
    if (no_identity.count(detail::split_table(t)) != 0 && publishes_changes) {
      remedy += " (first give " + t +
                " a primary key or REPLICA IDENTITY FULL: in the publication without one, its "
                "UPDATE and DELETE fail)";
    }
  }
  out.push_back(failed("publication " + name + " does not include " + list, remedy));
  warn_identities(missing);
}

void check_slot(PGconn* sql, const PostgresSourceConfig& config, const std::string& database,
                const std::optional<CheckpointRecord>& checkpoint,
                std::vector<PreflightCheck>& out) {
  const std::string& name = config.slot_name;
  if (auto foreign = foreign_checkpoint_check(checkpoint, "postgres", name, "slot_name")) {
    out.push_back(std::move(*foreign));
    return;
  }
  if (config.snapshot_mode == SnapshotMode::kInitialOnly) {
    out.push_back(pass("snapshot mode initial_only: no replication slot is used"));
    return;
  }
  // A pipeline reading its initial snapshot leaves its slot inactive, but holds its lock:
  // true when that is so (a failed check is added), or when the look-up failed.
  const auto held_by_a_running_pipeline = [&]() {
    auto holder = detail::pipeline_lock_holder(sql, name);
    if (!holder) {
      out.push_back(failed(holder.error()));
      return true;
    }
    if (!*holder) return false;
    out.push_back(failed("the pipeline of replication slot " + name + " is running: " + **holder +
                             " holds its lock: a start of this configuration would stop at "
                             "once (exit status 2)",
                         "if a cppcdc runs this pipeline already (it may be reading its "
                         "snapshot), leave it alone; a copy of its configuration needs its own "
                         "slot_name, checkpoint and transactional_id"));
    return true;
  };
  auto res = query(sql, out,
                   std::string("select plugin, database, active, active_pid, "
                               "confirmed_flush_lsn, coalesce(") +
                       detail::wal_status_column(sql) +
                       ", ''), pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), "
                       "confirmed_flush_lsn)) from pg_replication_slots where slot_name = $1",
                   "looking up replication slot " + name, {name});
  if (!res) return;
  if (PQntuples(res->get()) == 0) {
    if (held_by_a_running_pipeline()) return;
    if (checkpoint && config.snapshot_mode == SnapshotMode::kWhenNeeded) {
      out.push_back(warn("replication slot " + name + " does not exist, but a checkpoint at " +
                             checkpoint->offset + " does",
                         "snapshot mode when_needed makes a new slot and reads the tables "
                         "again"));
      return;
    }
    if (checkpoint) {
      out.push_back(
          failed("replication slot " + name + " does not exist, but a checkpoint at " +
                     checkpoint->offset + " does: the changes since then are gone",
                 "remove the checkpoint to start afresh (cppcdc teardown), or restore the slot"));
      return;
    }
    if (!config.create_slot) {
      out.push_back(failed("replication slot " + name + " does not exist (create_slot = false)",
                           "SELECT pg_create_logical_replication_slot('" + name +
                               "', 'pgoutput'), or set create_slot = true"));
      return;
    }
    auto free = query(sql, out,
                      "select current_setting('max_replication_slots')::int - (select count(*) "
                      "from pg_replication_slots)",
                      "counting free replication slots");
    if (!free) return;
    const int n = std::stoi(get(free->get(), 0, 0).value_or("0"));
    if (n <= 0) {
      out.push_back(failed("replication slot " + name +
                               " does not exist and every replication slot is taken "
                               "(max_replication_slots)",
                           "drop an unused slot, or raise max_replication_slots and restart "
                           "PostgreSQL"));
    } else {
      out.push_back(pass("replication slot " + name + " does not exist yet; " + std::to_string(n) +
                         " free slot(s) to create it in"));
    }
    return;
  }
  const PGresult* r = res->get();
  const std::string plugin = get(r, 0, 0).value_or("");
  const std::string slot_db = get(r, 0, 1).value_or("");
  if (plugin != "pgoutput" || slot_db != database) {
    out.push_back(failed("replication slot " + name + " belongs to plugin '" + plugin +
                             "' in database '" + slot_db + "'",
                         "give this pipeline a slot of its own (slot_name)"));
    return;
  }
  if (get(r, 0, 5).value_or("") == "lost") {
    out.push_back(failed("replication slot " + name +
                             " was invalidated (wal_status lost): the WAL it needed is gone",
                         "drop the slot and start again with a snapshot (snapshot mode "
                         "initial or when_needed)"));
    return;
  }
  const std::string lag = get(r, 0, 6).value_or("?");
  if (is_true(r, 0, 2)) {
    // A start of this configuration would stop at once (exit 2), as MariaDB's preflight says
    // of its held lock: a failed check, so that preflight's exit status tells the truth.
    out.push_back(failed("replication slot " + name + " is in use by process " +
                             get(r, 0, 3).value_or("?") + " (lag " + lag +
                             "): a start of this configuration would stop at once (exit status 2)",
                         "if a cppcdc runs this pipeline already, leave it alone (a copy of its "
                         "configuration needs its own slot_name, checkpoint and "
                         "transactional_id); otherwise stop the other consumer first"));
    // The slot's consumer moves it on while this reads: comparing it with the checkpoint
    // read a moment before would report released changes that are not (and suggest removing
    // a live pipeline's checkpoint).
    return;
  } else if (held_by_a_running_pipeline()) {
    return;
  } else {
    out.push_back(pass("replication slot " + name + " exists and is free (lag " + lag + ")"));
  }
  if (!checkpoint) return;
  auto confirmed = detail::get_lsn(r, 0, 4, "confirmed_flush_lsn");
  auto at = Lsn::parse(checkpoint->offset);
  if (!confirmed || !at) return;
  if (*confirmed > *at && config.snapshot_mode == SnapshotMode::kWhenNeeded) {
    out.push_back(warn("the checkpoint is at " + at->to_string() + " but slot " + name +
                           " has moved on to " + confirmed->to_string(),
                       "snapshot mode when_needed reads the tables again"));
  } else if (*confirmed > *at) {
    out.push_back(failed("the checkpoint is at " + at->to_string() + " but slot " + name +
                             " has moved on to " + confirmed->to_string() +
                             ": the changes in between were released",
                         "snapshot mode when_needed re-reads the tables; or remove the "
                         "checkpoint and start afresh"));
  } else {
    out.push_back(pass("the checkpoint (" + at->to_string() + ") can resume on slot " + name));
  }
}

void check_wal_senders(PGconn* sql, std::vector<PreflightCheck>& out) {
  auto res = query(sql, out,
                   "select current_setting('max_wal_senders')::int - (select count(*) from "
                   "pg_stat_replication)",
                   "counting free WAL senders");
  if (!res) return;
  const int n = std::stoi(get(res->get(), 0, 0).value_or("0"));
  if (n <= 0) {
    out.push_back(failed("every WAL sender is busy (max_wal_senders)",
                         "raise max_wal_senders and restart PostgreSQL"));
  } else {
    out.push_back(pass(std::to_string(n) + " free WAL sender(s)"));
  }
}

}  // namespace

std::vector<PreflightCheck> run_preflight(const PostgresSourceConfig& config,
                                          const std::optional<CheckpointRecord>& checkpoint) {
  std::vector<PreflightCheck> out;
  auto conn = detail::connect(config.dsn, false);
  if (!conn) {
    out.push_back(failed(conn.error()));
    return out;
  }
  PGconn* sql = conn->get();
  out.push_back(pass("connected to " + redact_dsn(config.dsn)));

  std::string database;
  if (auto st = detail::check_server(sql, config, database); !st) {
    out.push_back(failed(st.error()));
  } else {
    out.push_back(pass("wal_level is logical and the server supports the settings asked for"));
  }
  std::string role = "<the cdc role>";
  check_role(sql, out, role);

  // The streaming transport opens a replication connection: pg_hba.conf must allow it.
  if (config.transport == WalTransport::kStreamingReplication) {
    auto repl = detail::connect(config.dsn, true);
    if (!repl) {
      out.push_back(failed(repl.error()));
    } else {
      out.push_back(pass("a replication connection is allowed (pg_hba.conf)"));
    }
  }

  std::set<TableName> tables;
  for (const auto& name : config.tables) tables.insert(detail::split_table(name));
  std::set<TableName> existing;
  std::map<TableName, Error> no_identity;
  check_tables(sql, config, tables, database, role, out, existing, no_identity);
  check_publication(sql, config, existing, no_identity, out);
  check_slot(sql, config, database, checkpoint, out);
  if (config.transport == WalTransport::kStreamingReplication) check_wal_senders(sql, out);
  return out;
}

std::optional<std::vector<std::string>> read_keyless_tables(const PostgresSourceConfig& config) {
  auto conn = detail::connect(config.dsn, false);
  if (!conn) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& name : config.tables) {
    const TableName t = detail::split_table(name);
    // The same rule as the assembler's key (assembler.cpp): the primary key under DEFAULT and
    // FULL, the identity index under USING INDEX, nothing under NOTHING.
    auto res = exec(conn->get(),
                    "select c.relreplident, "
                    "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                    "i.indisprimary), "
                    "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                    "i.indisreplident) "
                    "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
                    "where n.nspname = $1 and c.relname = $2",
                    "reading the key of " + t.text(), {t.schema, t.table});
    if (!res) return std::nullopt;
    if (PQntuples(res->get()) == 0) continue;  // a missing table: preflight says so
    const char ident = get(res->get(), 0, 0).value_or("d")[0];
    const bool pk = get(res->get(), 0, 1).value_or("f") == "t";
    const bool index = get(res->get(), 0, 2).value_or("f") == "t";
    const bool keyed = ident == 'i' ? index : ident != 'n' && pk;
    if (!keyed) out.push_back(name);
  }
  return out;
}

std::optional<UnresumableSnapshot> read_unresumable_snapshot(
    const PostgresSourceConfig& config, const std::optional<CheckpointRecord>& checkpoint) {
  if (checkpoint && checkpoint->source_type != "postgres") return std::nullopt;  // not ours
  auto conn = detail::connect(config.dsn, false);
  if (!conn) return std::nullopt;
  // The tables the snapshot would read, as the source's start() decides: one in progress in
  // the checkpoint goes on from its current table; without a checkpoint the mode decides.
  std::vector<std::string> tables;
  if (checkpoint) {
    if (!SnapshotProgress::in_state(checkpoint->source_state)) return std::nullopt;
    auto progress = SnapshotProgress::from_state(checkpoint->source_state);
    if (!progress || !*progress) return std::nullopt;
    const SnapshotProgress& p = **progress;
    tables.assign(p.tables.begin() + static_cast<std::ptrdiff_t>(p.table_index), p.tables.end());
  } else {
    if (config.snapshot_mode == SnapshotMode::kNever ||
        config.snapshot_mode == SnapshotMode::kIncremental) {
      return std::nullopt;
    }
    for (const auto& t : config.snapshot_tables.empty() ? config.tables : config.snapshot_tables) {
      tables.push_back(detail::split_table(t).text());
    }
    auto leaves = leaf_tables(conn->get(), config.publication_name, tables);
    if (!leaves) return std::nullopt;  // a missing table: preflight says so
    tables = std::move(*leaves);
  }
  UnresumableSnapshot out;
  for (const auto& name : tables) {
    const TableName t = detail::split_table(name);
    // The snapshot's rule (describe_snapshot_table): it continues a table after the last key
    // of its primary key, and only of that.
    auto res = exec(conn->get(),
                    "select exists (select 1 from pg_index i where i.indrelid = c.oid and "
                    "i.indisprimary) from pg_class c join pg_namespace n on n.oid = "
                    "c.relnamespace where n.nspname = $1 and c.relname = $2",
                    "reading the primary key of " + t.text(), {t.schema, t.table});
    if (!res) return std::nullopt;
    if (PQntuples(res->get()) == 0) continue;  // a missing table: preflight says so
    if (get(res->get(), 0, 0).value_or("f") != "t") out.tables.push_back(t.text());
  }
  if (out.tables.empty()) return std::nullopt;
  return out;
}

}  // namespace cppcdc::pg
