// `cppcdc teardown` for PostgreSQL: drops the replication slot (which holds WAL on the server
// for as long as it exists) and the publication, when cppcdc made them (server_checks.hpp,
// CreatedMarks) or when told to include objects that were there before.

#include <libpq-fe.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/plugin.hpp"
#include "cppcdc/postgres.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/server_checks.hpp"
#include "source/postgres/settings.hpp"
#include "source/postgres/slot.hpp"

namespace cppcdc::pg {
namespace {

using detail::exec;
using detail::get;
using Outcome = TeardownStep::Outcome;

std::string error_line(const Error& error) {
  std::string line;
  for (const auto& layer : error.chain()) line += layer + ": ";
  return line + error.message();
}

}  // namespace

Result<std::vector<TeardownStep>> run_teardown(const PostgresSourceConfig& config, bool dry_run,
                                               bool include_preexisting) {
  auto conn = detail::connect(config.dsn, false);
  if (!conn) return fail(conn.error());
  PGconn* sql = conn->get();
  auto marks = detail::read_created_marks(sql, config);
  if (!marks) return fail(marks.error());

  std::vector<TeardownStep> steps;
  const std::string keep_hint = "; pass --include-preexisting to drop it anyway";

  // The slot first: it is what holds WAL, and dropping it makes the publication unused.
  TeardownStep slot{Outcome::kAbsent, "replication slot " + config.slot_name, "", true};
  auto found = exec(sql,
                    "select active, coalesce(active_pid::text, ''), pg_size_pretty("
                    "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) from "
                    "pg_replication_slots where slot_name = $1",
                    "looking up replication slot " + config.slot_name, {config.slot_name});
  if (!found) return fail(found.error());
  const bool active = PQntuples(found->get()) > 0 && get(found->get(), 0, 0).value_or("f") == "t";
  // A running pipeline holds its pipeline lock from start to close, also while its slot is
  // not active (the initial snapshot, sql_peek): dropping the slot then would pull it from
  // under that pipeline.
  std::optional<std::string> lock_holder;
  if (!active) {
    auto holder = detail::pipeline_lock_holder(sql, config.slot_name);
    if (!holder) return fail(holder.error());
    lock_holder = std::move(*holder);
  }
  const std::string held_by_pipeline =
      lock_holder
          ? "in use by " + *lock_holder +
                ", a cppcdc that holds the pipeline lock of this slot (a pipeline in its initial "
                "snapshot, or reading with wal_transport = \"sql_peek\", leaves the "
                "slot inactive): stop that pipeline first"
          : std::string();
  if (PQntuples(found->get()) > 0) {
    // NULL when the slot holds no WAL position (never reserved, or invalidated): the phrase
    // is then left out rather than printed with an unknown size.
    const std::optional<std::string> held = get(found->get(), 0, 2);
    const auto wal = [&held](std::string_view verb) {
      return held ? "; " + std::string(verb) + " " + *held + " of WAL" : std::string();
    };
    // Why it goes: cppcdc's own record of making it, or the flag.
    const std::string why = marks->slot
                                ? "cppcdc created it"
                                : "not made by cppcdc, dropped as --include-preexisting asks";
    if (!marks->slot && !include_preexisting) {
      slot.outcome = Outcome::kKept;
      slot.detail = "cppcdc has no record of creating it" +
                    (held ? " (it holds " + *held + " of WAL)" : std::string()) + keep_hint;
    } else if (active) {
      slot.outcome = Outcome::kFailed;
      slot.detail = "in use by process " + get(found->get(), 0, 1).value_or("?") +
                    ": stop that consumer first";
    } else if (lock_holder) {
      slot.outcome = Outcome::kFailed;
      slot.detail = held_by_pipeline;
    } else if (dry_run) {
      slot.outcome = Outcome::kWouldDrop;
      slot.detail = why + wal("releases");
    } else {
      auto dropped = exec(sql, "select pg_drop_replication_slot($1)",
                          "dropping replication slot " + config.slot_name, {config.slot_name});
      slot.outcome = dropped ? Outcome::kDropped : Outcome::kFailed;
      slot.detail = dropped ? why + wal("released") : error_line(dropped.error());
    }
  }
  if (slot.outcome == Outcome::kAbsent && lock_holder) {
    // No slot yet, but a pipeline runs that is about to make it (its checkpoint stays too).
    slot.outcome = Outcome::kFailed;
    slot.detail = held_by_pipeline;
  }
  if (!dry_run && slot.outcome != Outcome::kKept && slot.outcome != Outcome::kFailed) {
    // The slot is gone: its record beside the checkpoint goes too.
    if (const auto mark = detail::slot_mark_file(config); !mark.empty()) {
      std::error_code ec;
      std::filesystem::remove(mark, ec);
    }
  }
  steps.push_back(std::move(slot));

  TeardownStep publication{Outcome::kAbsent, "publication " + config.publication_name, ""};
  auto pub = exec(sql, "select 1 from pg_publication where pubname = $1",
                  "looking up publication " + config.publication_name,
                  {config.publication_name});
  if (!pub) return fail(pub.error());
  // Other pgoutput slots of this database may read the publication: a slot does not record
  // which publication its consumer names, so any of them may be another pipeline's.
  auto others = exec(sql,
                     "select slot_name from pg_replication_slots where database = "
                     "current_database() and plugin = 'pgoutput' and slot_name <> $1 order by 1",
                     "listing the other replication slots", {config.slot_name});
  if (!others) return fail(others.error());
  std::string sharing;
  for (int r = 0; r < PQntuples(others->get()); ++r) {
    const std::string name = get(others->get(), r, 0).value_or("?");
    const bool cppcdc = std::find(marks->marked_slots.begin(), marks->marked_slots.end(), name) !=
                        marks->marked_slots.end();
    sharing += (sharing.empty() ? "" : ", ") + name +
               (cppcdc ? " (made by cppcdc for this publication)" : "");
  }
  if (PQntuples(pub->get()) > 0) {
    if (!marks->publication && !include_preexisting) {
      publication.outcome = Outcome::kKept;
      publication.detail = "cppcdc did not create it" + keep_hint;
    } else if (!sharing.empty()) {
      publication.outcome = Outcome::kKept;
      publication.detail =
          "other replication slots of this database may still read it: " + sharing +
          " (a slot does not record which publication its consumer uses, so it stays); once "
          "no pipeline uses it, drop it by hand: DROP PUBLICATION " +
          detail::quote_ident(config.publication_name);
    } else if (dry_run) {
      publication.outcome = Outcome::kWouldDrop;
    } else {
      auto dropped = exec(sql, "DROP PUBLICATION " + detail::quote_ident(config.publication_name),
                          "dropping publication " + config.publication_name);
      publication.outcome = dropped ? Outcome::kDropped : Outcome::kFailed;
      if (!dropped) publication.detail = error_line(dropped.error());
    }
  }
  steps.push_back(std::move(publication));
  return steps;
}

}  // namespace cppcdc::pg
