// `cppcdc run` with [state.offset] backend = "postgresql": the checkpoint row advances as
// transactions are delivered, a second run of the same pipeline is refused by the row's writer
// lock, and a restart resumes from the row without delivering anything twice.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "integration/state_backend_util.hpp"
#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;

namespace {

constexpr auto kWait = std::chrono::seconds(30);

struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

TEST(CliPostgresqlState, TheCheckpointRowAdvancesASecondRunIsRefusedAndARestartResumes) {
  CPPCDC_REQUIRE_SERVER(it::state::pg_unavailable());
  const std::string db = it::test_database("ckpt_state");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key, note text)");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-it-pgstate-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string slot = db + "_slot";
  auto write_config = [&](const fs::path& path, const std::string& control_socket) {
    std::ofstream(path) << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db)
                        << "\"\nslot_name = \"" << slot << "\"\npublication_name = \"" << db
                        << "_pub\"\ntables = [\"public.t\"]\n[source.snapshot]\nmode = "
                        << "\"never\"\n\n[sink]\ntype = \"file\"\npath = \""
                        << (dir / "events.jsonl").string() << "\"\n\n[state.offset]\n"
                        << "backend = \"postgresql\"\ndsn = \"" << it::dsn_for(db)
                        << "\"\nschema = \"cdc_state\"\n\n[runtime]\nmax_poll_wait_ms = 100\n"
                        << "control_socket = \"" << control_socket << "\"\n";
  };
  write_config(dir / "cdc.toml", (dir / "cppcdc.sock").string());
  const auto check = it::run_cli({"check-config", "--config", (dir / "cdc.toml").string()});
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_NE(check.output.find("postgresql row '" + slot +
                              "' of table \"cdc_state\".\"checkpoints\""),
            std::string::npos)
      << check.output;

  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir, it::dsn_for(db), slot);
  const std::string events = (dir / "events.jsonl").string();
  auto row = [&](const std::string& column) {
    return s.scalar("select " + column + " from cdc_state.checkpoints where id = '" + slot + "'");
  };
  auto position_past = [&](const std::string& lsn) {
    return s.scalar("select coalesce((select position::pg_lsn > '" + lsn +
                    "'::pg_lsn from cdc_state.checkpoints where id = '" + slot + "'), false)") ==
           "t";
  };

  std::string before = s.scalar("select pg_current_wal_lsn()");
  s.query("insert into t select i, 'first' from generate_series(1, 3) i");
  ASSERT_TRUE(it::wait_until([&] { return it::read_sink(events).size() == 3; }, kWait))
      << it::log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(it::wait_until([&] { return position_past(before); }, kWait))
      << "the checkpoint row did not pass " << before << ": " << row("position") << "\n"
      << it::log_tail(dir / "cppcdc.log");
  const std::string first_position = row("position");
  const std::string first_generation = row("generation");

  before = s.scalar("select pg_current_wal_lsn()");
  s.query("insert into t select i, 'second' from generate_series(4, 5) i");
  ASSERT_TRUE(it::wait_until([&] { return it::read_sink(events).size() == 5; }, kWait))
      << it::log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(it::wait_until([&] { return position_past(before); }, kWait))
      << "the checkpoint row stayed at " << row("position");
  EXPECT_NE(row("position"), first_position);
  EXPECT_GT(std::stoll(row("generation")), std::stoll(first_generation));
  // The row holds the whole record, and it names the same position.
  EXPECT_NE(s.scalar("select convert_from(record, 'UTF8') from cdc_state.checkpoints where id = '" +
                     slot + "'")
                .find("\"offset\":\"" + row("position") + "\""),
            std::string::npos);

  // A second run of the pipeline (its own control socket, so the checkpoint is what stops it).
  write_config(dir / "second.toml", (dir / "second.sock").string());
  const auto second = it::run_cli({"run", "--config", (dir / "second.toml").string()});
  EXPECT_EQ(second.code, 2) << second.output;
  EXPECT_NE(second.output.find("is in use by another writer"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("cppcdc-checkpoint pid " + std::to_string(child)), std::string::npos)
      << second.output;

  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << it::log_tail(dir / "cppcdc.log");
  const std::string stopped_at = row("position");

  // A restart resumes from the row: only the new transaction arrives.
  it::start_cppcdc_process(child, dir, it::dsn_for(db), slot);
  s.query("insert into t values (6, 'third')");
  ASSERT_TRUE(it::wait_until([&] { return it::read_sink(events).size() >= 6; }, kWait))
      << it::log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(it::wait_until([&] { return position_past(stopped_at); }, kWait))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::read_sink(events).size(), 6u) << "a restart delivered something twice";
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");
  it::drop_slots(db);
  fs::remove_all(dir);
}
