#include "source/postgres/slot.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "core/stop_request.hpp"
#include "source/postgres/server_checks.hpp"
#include "source/postgres/settings.hpp"

namespace cppcdc::pg::detail {
namespace {

Result<SlotState> create_slot_exporting(const PostgresSourceConfig& config) {
  SlotState slot;
  auto repl = detail::connect(config.dsn, true);
  if (!repl) return fail(repl.error());
  slot.repl = std::move(*repl);
  // PostgreSQL 15 introduced the option list; before it the snapshot is asked for with a
  // keyword (which 15 and later still accept, but may drop one day).
  const bool option_list = PQserverVersion(slot.repl.get()) >= 150000;
  const std::string cmd = "CREATE_REPLICATION_SLOT " + quote_ident(config.slot_name) +
                          " LOGICAL pgoutput " +
                          (option_list ? "(SNAPSHOT 'export')" : "EXPORT_SNAPSHOT");
  detail::PgResultPtr res(PQexec(slot.repl.get(), cmd.c_str()));
  if (!res || PQresultStatus(res.get()) != PGRES_TUPLES_OK || PQntuples(res.get()) != 1) {
    return fail(detail::error_from_result(res.get(), slot.repl.get(),
                                          "creating replication slot " + config.slot_name +
                                              " with an exported snapshot"));
  }
  auto lsn = get_lsn(res.get(), 0, 1, "the consistent point of new replication slot " +
                                          config.slot_name);
  if (!lsn) return fail(lsn.error());
  slot.exported_snapshot = get(res.get(), 0, 2).value_or("");
  slot.confirmed = *lsn;
  spdlog::info("created replication slot {} (pgoutput) at {} with exported snapshot {}",
               config.slot_name, lsn->to_string(), slot.exported_snapshot);
  return slot;
}

/// The pipeline lock's key for the slot name in $1, as an SQL expression (bigint).
constexpr const char* kPipelineLockKey =
    "('x' || left(md5('cppcdc pipeline ' || $1::text), 16))::bit(64)::bigint";

/// A backend as row `row` of `res` shows it (columns: pid, application_name, client address;
/// empty text when unknown): "PID n (application_name a, client c)".
std::string describe_backend(const PGresult* res, int row) {
  const std::string app = get(res, row, 1).value_or("");
  const std::string client = get(res, row, 2).value_or("");
  std::string who = "PID " + get(res, row, 0).value_or("?");
  if (!app.empty() || !client.empty()) {
    who += " (";
    if (!app.empty()) who += "application_name " + app;
    if (!client.empty()) who += std::string(app.empty() ? "" : ", ") + "client " + client;
    who += ")";
  }
  return who;
}

}  // namespace

Result<std::optional<std::string>> pipeline_lock_holder(PGconn* sql, const std::string& slot) {
  auto res =
      exec(sql,
           std::string("select l.pid::text, coalesce(a.application_name, ''), "
                       "coalesce(host(a.client_addr), '') from (select ") +
               kPipelineLockKey +
               " as k) key join pg_locks l on l.locktype = 'advisory' and l.granted and "
               "l.objsubid = 1 and l.classid = ((key.k >> 32) & 4294967295)::text::oid and "
               "l.objid = (key.k & 4294967295)::text::oid and l.database = (select oid from "
               "pg_database where datname = current_database()) and l.pid <> pg_backend_pid() "
               "left join pg_stat_activity a on a.pid = l.pid",
           "looking up who holds the pipeline lock of replication slot " + slot, {slot});
  if (!res) return fail(res.error());
  if (PQntuples(res->get()) == 0) return std::optional<std::string>();
  return std::optional<std::string>(describe_backend(res->get(), 0));
}

Status hold_pipeline_lock(PGconn* sql, const std::string& slot) {
  using Clock = std::chrono::steady_clock;
  const auto grace_end = Clock::now() + std::chrono::seconds(3);
  for (;;) {
    auto res = exec(sql, std::string("select pg_try_advisory_lock(") + kPipelineLockKey + ")",
                    "taking the pipeline lock of replication slot " + slot, {slot});
    if (!res) return fail(res.error());
    if (get(res->get(), 0, 0).value_or("") == "t") return ok();
    if (Clock::now() >= grace_end || ::cppcdc::detail::g_process_stop_requested.load()) {
      auto holder = pipeline_lock_holder(sql, slot);
      const std::string who =
          holder && *holder ? **holder : std::string("a session the server does not show");
      return fail(Error::source(ErrorKind::kTransient,
                                "the pipeline of replication slot " + slot + " is held by " + who +
                                    ": another cppcdc runs it, or this one's previous session "
                                    "has not ended yet; if it persists, stop the other "
                                    "process or give this configuration its own slot_name")
                      .for_setting(SettingOwner::kSource, "slot_name"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Error slot_in_use_error(const std::string& slot, std::optional<Error> refusal,
                        const std::string& active_pid) {
  const std::string remedy = "another process is streaming from replication slot " + slot +
                             "; stop it (see pg_stat_replication) or choose another slot_name";
  if (refusal) return std::move(*refusal).context(remedy);
  return Error::source(ErrorKind::kTransient,
                       "replication slot " + slot + " is active for PID " + active_pid + ": " +
                           remedy);
}

Result<SlotState> ensure_slot(PGconn* sql, const PostgresSourceConfig& config,
                              const std::string& database, Lsn checkpoint, bool snapshot_first,
                              bool export_snapshot) {
  SlotState slot;
  auto res = exec(sql,
                  std::string("select plugin, database, slot_type, confirmed_flush_lsn, ") +
                      wal_status_column(sql) + ", active_pid from pg_replication_slots "
                      "where slot_name = $1",
                  "looking up replication slot " + config.slot_name, {config.slot_name});
  if (!res) return fail(res.error());
  if (PQntuples(res->get()) == 0) {
    if (!checkpoint.is_zero()) {
      // A new slot starts at the current end of WAL: everything since the checkpoint would
      // silently be skipped.
      const std::string what = "replication slot " + config.slot_name +
                               " does not exist, but the checkpoint expects to resume it at " +
                               checkpoint.to_string();
      if (!config.accept_slot_ahead_of_checkpoint) {
        return fail(
            Error::source(
                ErrorKind::kTerminal,
                what + "; a new slot would start at the current end of WAL and the changes in "
                       "between would be lost. Restore the slot, use the checkpoint that belongs "
                       "to it, take a new snapshot (snapshot mode when_needed), or set "
                       "accept_slot_ahead_of_checkpoint to create a new slot and continue without "
                       "them")
                .for_setting(SettingOwner::kSource, "accept_slot_ahead_of_checkpoint")
                .with_condition(ErrorCondition::kSourcePositionLost));
      }
      if (!config.create_slot) {
        return fail(Error::source(ErrorKind::kTerminal,
                                  what + " and create_slot = false; create the slot or set "
                                         "create_slot = true"));
      }
      spdlog::warn("{}; creating a new slot and continuing without the changes in between "
                   "(accept_slot_ahead_of_checkpoint = true)",
                   what);
    }
    if (!config.create_slot) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "replication slot " + config.slot_name +
                                    " does not exist and create_slot = false; create it "
                                    "(pg_create_logical_replication_slot('" +
                                    config.slot_name + "', 'pgoutput')) or set "
                                    "create_slot = true"));
    }
    if (export_snapshot) {
      auto made = create_slot_exporting(config);
      if (made) mark_created(sql, config, true);
      return made;
    }
    auto created = exec(sql,
                        "select lsn from pg_create_logical_replication_slot($1, 'pgoutput')",
                        "creating replication slot " + config.slot_name,
                        {config.slot_name});
    if (!created) return fail(created.error());
    auto lsn = get_lsn(created->get(), 0, 0,
                       "the LSN of new replication slot " + config.slot_name);
    if (!lsn) return fail(lsn.error());
    spdlog::info("created replication slot {} (pgoutput) at {}", config.slot_name,
                 lsn->to_string());
    mark_created(sql, config, true);
    slot.confirmed = *lsn;
    return slot;
  }
  const auto plugin = get(res->get(), 0, 0).value_or("");
  auto confirmed = get_lsn(res->get(), 0, 3,
                           "confirmed_flush_lsn of replication slot " + config.slot_name);
  if (!confirmed) {
    return fail(confirmed.error().context(
        "drop the slot (select pg_drop_replication_slot('" + config.slot_name +
        "')) to start it afresh, or name another slot")
        .for_setting(SettingOwner::kSource, "slot_name"));
  }
  slot.confirmed = *confirmed;
  if (snapshot_first && get(res->get(), 0, 5)) {
    // With a snapshot first, START_REPLICATION comes only after it: check now that nobody
    // else streams from the slot (retried: it may be the walsender of a previous run).
    return fail(slot_in_use_error(config.slot_name, std::nullopt,
                                  get(res->get(), 0, 5).value_or("?")));
  }
  if (get(res->get(), 0, 4).value_or("") == "lost") {
    return fail(Error::source(
        ErrorKind::kTerminal,
        "source position lost: replication slot " + config.slot_name +
            " was invalidated (wal_status 'lost'; max_slot_wal_keep_size let PostgreSQL "
            "remove WAL it still needed), so changes are missing; drop the slot, let cppcdc "
            "create a new one, and reload the tables from a snapshot")
                    .with_condition(ErrorCondition::kSourcePositionLost));
  }
  if (!checkpoint.is_zero() && slot.confirmed > checkpoint) {
    const std::string what = "replication slot " + config.slot_name +
                             " has confirmed_flush_lsn " + slot.confirmed.to_string() +
                             ", past the checkpoint at " + checkpoint.to_string() +
                             ": PostgreSQL already released the changes in between";
    if (!config.accept_slot_ahead_of_checkpoint) {
      return fail(Error::source(
          ErrorKind::kTerminal,
          what + " (was the checkpoint restored from a backup, or another consumer using "
                 "the slot?); they cannot be delivered. Set "
                 "accept_slot_ahead_of_checkpoint to continue without them")
                 .for_setting(SettingOwner::kSource, "accept_slot_ahead_of_checkpoint"));
    }
    spdlog::warn("{}; continuing without them (accept_slot_ahead_of_checkpoint = true)", what);
  }
  const auto db = get(res->get(), 0, 1).value_or("");
  if (get(res->get(), 0, 2).value_or("") != "logical" || plugin != "pgoutput") {
    return fail(Error::source(ErrorKind::kTerminal,
                              "replication slot " + config.slot_name + " uses plugin '" +
                                  plugin + "', not pgoutput; choose another slot_name or "
                                  "drop that slot"));
  }
  if (db != database) {
    return fail(Error::source(ErrorKind::kTerminal,
                              "replication slot " + config.slot_name + " belongs to "
                              "database " + db + ", not " + database +
                                  "; choose another slot_name"));
  }
  return slot;
}

Result<std::string> checkpoint_usable(PGconn* sql, const PostgresSourceConfig& config,
                                      Lsn checkpoint) {
  auto res = exec(sql,
                  std::string("select confirmed_flush_lsn, ") + wal_status_column(sql) +
                      ", active_pid from pg_replication_slots where slot_name = $1",
                  "looking up replication slot " + config.slot_name, {config.slot_name});
  if (!res) return fail(res.error());
  if (PQntuples(res->get()) == 0) {
    return std::string("replication slot " + config.slot_name + " does not exist");
  }
  if (get(res->get(), 0, 1).value_or("") == "lost") {
    if (get(res->get(), 0, 2)) {
      return fail(Error::source(ErrorKind::kTransient,
                                "replication slot " + config.slot_name +
                                    " was invalidated but is still held by PID " +
                                    get(res->get(), 0, 2).value_or("?")));
    }
    auto dropped = exec(sql, "select pg_drop_replication_slot($1)",
                        "dropping the invalidated replication slot " + config.slot_name,
                        {config.slot_name});
    if (!dropped) return fail(dropped.error());
    return std::string("replication slot " + config.slot_name +
                       " was invalidated (wal_status lost); it was dropped and is made again");
  }
  auto slot_lsn = get_lsn(res->get(), 0, 0,
                          "confirmed_flush_lsn of replication slot " + config.slot_name);
  if (!slot_lsn) return fail(slot_lsn.error());
  const Lsn confirmed = *slot_lsn;
  if (!checkpoint.is_zero() && confirmed > checkpoint) {
    return std::string("replication slot " + config.slot_name + " is at " +
                       confirmed.to_string() + ", past it: changes in between were released");
  }
  return std::string();
}

Status advance_slot(PGconn* sql, const std::string& slot, Lsn to) {
  auto res = exec(sql, "select pg_replication_slot_advance($1, $2::pg_lsn)",
                  "advancing replication slot " + slot + " to " + to.to_string(),
                  {slot, to.to_string()});
  if (!res) return fail(res.error());
  return ok();
}

}  // namespace cppcdc::pg::detail

namespace cppcdc::pg {

Status check_slot_not_in_use(const PostgresSourceConfig& config) {
  // The connections the source will open are tried first: one that the server refuses
  // (password, role, pg_hba.conf, REPLICATION attribute, TLS) fails the same way when the
  // source starts, and that is after the sinks opened (a transactional Kafka sink's start
  // fences the running pipeline's producer). So is a server that cannot be reached: the
  // caller waits for it.
  const std::string before = "connecting as the source will, before any sink opens";
  auto conn = detail::connect(config.dsn, false);
  if (!conn) return fail(conn.error().context(before));
  const bool streams = config.snapshot_mode != SnapshotMode::kInitialOnly &&
                       config.transport == WalTransport::kStreamingReplication;
  if (streams) {
    auto replication = detail::connect(config.dsn, true);
    if (!replication) return fail(replication.error().context(before));
  }
  if (config.snapshot_mode == SnapshotMode::kInitialOnly) return ok();  // no slot is used
  // The walsender of a process that just ended may hold the slot a moment longer (until it
  // notices that its client is gone): a slot that stays active this long is in use.
  using Clock = std::chrono::steady_clock;
  const auto grace_end = Clock::now() + std::chrono::seconds(3);
  for (;;) {
    auto res =
        detail::exec(conn->get(),
                     "select s.active_pid::text, coalesce(a.application_name, ''), "
                     "coalesce(host(a.client_addr), '') from pg_replication_slots s left join "
                     "pg_stat_activity a on a.pid = s.active_pid where s.slot_name = $1 and "
                     "s.active",
                     "looking up whether replication slot " + config.slot_name + " is in use",
                     {config.slot_name});
    if (!res) {
      return fail(res.error());
    }
    if (PQntuples(res->get()) == 0) {
      // An inactive slot may still belong to a running pipeline: one reading its initial
      // snapshot (the slot is used only once the stream starts). Its source holds the
      // pipeline lock meanwhile.
      auto holder = detail::pipeline_lock_holder(conn->get(), config.slot_name);
      if (!holder) return fail(holder.error());
      if (!*holder) return ok();
      if (Clock::now() < grace_end && !::cppcdc::detail::g_process_stop_requested.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      return fail(Error::source(ErrorKind::kConfiguration,
                                "the pipeline of replication slot " + config.slot_name +
                                    " is running: " + **holder +
                                    " holds its lock (replication slot " + config.slot_name +
                                    " is not streaming yet: that pipeline is reading its "
                                    "snapshot, or starting); stop it, or give this "
                                    "configuration its own slot_name (and, with a "
                                    "transactional Kafka sink, its own transactional_id). "
                                    "Nothing was opened or changed")
                      .for_setting(SettingOwner::kSource, "slot_name"));
    }
    if (Clock::now() >= grace_end || ::cppcdc::detail::g_process_stop_requested.load()) {
      const std::string app = detail::get(res->get(), 0, 1).value_or("");
      const std::string who = detail::describe_backend(res->get(), 0);
      const std::string holder =
          app == "cppcdc" ? "another cppcdc runs this pipeline"
                          : "another process streams from it (if it is a cppcdc, it runs this "
                            "pipeline)";
      return fail(Error::source(ErrorKind::kConfiguration,
                                "replication slot " + config.slot_name +
                                    " is in use: it is active for " + who + ", so " + holder +
                                    "; stop it, or give this configuration its own slot_name "
                                    "(and, with a transactional Kafka sink, its own "
                                    "transactional_id). Nothing was opened or changed")
                      .for_setting(SettingOwner::kSource, "slot_name"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace cppcdc::pg
