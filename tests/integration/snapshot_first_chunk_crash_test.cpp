// A SIGKILL during a first start's initial snapshot, before its first chunk was acknowledged.
// The first idle poll used to save a checkpoint at the new slot's position with no source
// state; the restart then resumed streaming from it, took no snapshot, and the table's rows
// were never delivered. Under effectively_once the same early checkpoint made the
// snapshot's batch look as if it reached no new position, so the Kafka transaction holding it
// stayed open until the broker aborted it (tests/integration/kafka/
// kafka_copy_during_snapshot_test.cpp).
//
// The snapshot is held before its first row, so the test does not depend on its speed: the
// table condition waits for an advisory lock the test holds.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "integration/pg_util.hpp"
#include "integration/replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

std::set<std::string> delivered_ids(const fs::path& sink) {
  std::set<std::string> ids;
  std::ifstream in(sink);
  std::string line;
  while (it::read_complete_line(in, line)) {
    const auto at = line.find("\"after\":{\"id\":\"");
    if (at == std::string::npos) continue;
    const auto start = at + 15;
    ids.insert(line.substr(start, line.find('"', start) - start));
  }
  return ids;
}

TEST(SnapshotFirstChunk, ACrashBeforeTheFirstChunkWasAcknowledgedTakesTheSnapshotAgain) {
  const std::string db = it::test_database("snapfirst");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  s.query("insert into t select g from generate_series(1, 50) g");
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path sink = dir / "out.jsonl";
  std::ofstream(dir / "cdc.toml")
      << "[source]\ndsn = \"" << it::dsn_for(db) << "\"\nslot_name = \"" << db
      << "\"\npublication_name = \"" << db << "_pub\"\ntables = [\"public.t\"]\n"
      << "[source.snapshot]\ntable_conditions = { \"public.t\" = \"(select count(*) from "
         "(select pg_advisory_xact_lock_shared(4243)) x) = 1\" }\n\n"
      << "[sink]\ntype = \"file\"\npath = \"" << sink.string() << "\"\n\n"
      << "[state.offset]\ndir = \"" << (dir / "state").string()
      << "\"\n\n[runtime]\nmax_poll_wait_ms = 50\n";

  it::PgSession locker(it::dsn_for(db));
  locker.query("select pg_advisory_lock(4243)");
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 0);
  it::KillAtExit guard{child};
  ASSERT_TRUE(it::wait_for_a_lock_waiter(s, db, 90s, 50ms)) << it::log_tail(dir / "cppcdc.log");
  // The old checkpoint came with the first idle polls (every 50 ms here): give it the time
  // of many of them to appear. It must not.
  const fs::path record = FileCheckpoint::path_for(dir / "state", db);
  EXPECT_FALSE(it::wait_until([&] { return fs::exists(record); }, 2s, 50ms))
      << "a checkpoint was saved before any snapshot row was acknowledged";
  it::stop_cppcdc_process(child, SIGKILL);
  locker.query("select pg_advisory_unlock(4243)");

  // The restart takes the snapshot (again) and delivers every row.
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 90);
  ASSERT_TRUE(it::wait_until([&] { return delivered_ids(sink).size() == 50; }, 60s, 100ms))
      << delivered_ids(sink).size() << " of 50 rows\n"
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
