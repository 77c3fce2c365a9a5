// `cppcdc run` with [state.offset] backend = "postgresql": the checkpoint row advances as
// transactions are delivered, a second run of the same pipeline is refused by the row's writer
// lock, and a restart resumes from the row without delivering anything twice.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "integration/state_backend_util.hpp"
#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;

namespace {

constexpr auto kWait = std::chrono::seconds(30);
// How long an idle pipeline may take to see the slot's position move (the server's keepalives)
// on a loaded machine.
constexpr auto kIdleWait = std::chrono::seconds(120);

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
  EXPECT_NE(
      check.output.find("postgresql row '" + slot + "' of table \"cdc_state\".\"checkpoints\""),
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

// The checkpoint's server goes away while the pipeline is idle (only tables it does not
// capture change, so the slot's position moves with nothing to deliver): the idle position
// cannot be saved, the run goes on with the previous checkpoint and saves it once the server
// is back, instead of ending (a Redis of the test's own, restarted with its append-only file,
// on CPPCDC_TEST_REDIS_PORT + 2).
TEST(CliRedisState, AnIdlePositionThatCannotBeSavedWhileTheServerIsDownIsSavedWhenItReturns) {
  CPPCDC_REQUIRE_SERVER(it::state::pg_unavailable());
  CPPCDC_REQUIRE_SERVER(it::state::redis_unavailable());
  const int port = it::state::redis_port() + 2;
  const std::string redis_dir = "/tmp/cppcdc-it-redis-" + std::to_string(port);
  const std::string script = std::string(CPPCDC_SOURCE_DIR) + "/scripts/redis.sh";
  auto redis = [&](const std::string& args) {
    return std::system((script + " " + args + " >/dev/null 2>&1").c_str()) == 0;
  };
  (void)redis("stop " + redis_dir + " --purge");
  ASSERT_TRUE(redis("start " + redis_dir + " " + std::to_string(port)));
  struct RedisGuard {
    std::function<bool(const std::string&)> redis;
    std::string dir;
    ~RedisGuard() { (void)redis("stop " + dir + " --purge"); }
  } redis_guard{redis, redis_dir};

  const std::string db = it::test_database("idle_redis");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key); create table other (id serial primary key)");
  // The user's own publication (as the README's quick start makes it): cppcdc cannot record on
  // it that it created the slot, so that mark is a file, beside cdc.toml with this backend.
  s.query("create publication " + db + "_pub for table t");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-it-idle-redis-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string slot = db + "_slot";
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db)
                                  << "\"\nslot_name = \"" << slot << "\"\npublication_name = \""
                                  << db << "_pub\"\ntables = [\"public.t\"]\n"
                                  << "[source.snapshot]\nmode = \"never\"\n\n[sink]\ntype = "
                                  << "\"file\"\npath = \"" << (dir / "events.jsonl").string()
                                  << "\"\n\n[state.offset]\nbackend = \"redis\"\nport = " << port
                                  << "\nconnect_timeout_ms = 1000\ntimeout_ms = 2000\n\n"
                                  << "[runtime]\nmax_poll_wait_ms = 100\ncontrol_socket = \""
                                  << (dir / "cppcdc.sock").string() << "\"\n";
  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir, it::dsn_for(db), slot);
  const std::string events = (dir / "events.jsonl").string();
  const fs::path log = dir / "cppcdc.log";
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until([&] { return it::read_sink(events).size() == 1; }, kWait))
      << it::log_tail(log);

  ASSERT_TRUE(redis("stop " + redis_dir));
  // Changes the pipeline does not capture move the slot's position; saving it fails.
  ASSERT_TRUE(it::wait_until(
      [&] {
        s.query("insert into other default values");
        return it::log_tail(log).find("could not checkpoint the idle position") !=
               std::string::npos;
      },
      kIdleWait, std::chrono::milliseconds(200)))
      << it::log_tail(log);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, WNOHANG), 0) << "cppcdc ended: " << it::log_tail(log);

  ASSERT_TRUE(redis("start " + redis_dir + " " + std::to_string(port)));
  const std::string moved_to = s.scalar("select pg_current_wal_lsn()");
  s.query("insert into t values (2)");
  ASSERT_TRUE(it::wait_until([&] { return it::read_sink(events).size() == 2; }, kIdleWait))
      << it::log_tail(log);
  // The checkpoint follows again: the slot is confirmed past the second insert.
  ASSERT_TRUE(it::wait_until(
      [&] {
        return s.scalar("select confirmed_flush_lsn > '" + moved_to +
                        "'::pg_lsn from pg_replication_slots where slot_name = '" + slot + "'") ==
               "t";
      },
      kIdleWait))
      << it::log_tail(log);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  EXPECT_EQ(it::read_sink(events).size(), 2u);

  // teardown drops the slot cppcdc created (and keeps the user's publication), though the
  // backend keeps nothing on this machine: the slot's mark lives beside cdc.toml then.
  EXPECT_TRUE(fs::exists(dir / ("created-slot-" + slot)));
  const auto down = it::run_cli({"teardown", "--config", (dir / "cdc.toml").string(), "--yes"});
  EXPECT_EQ(down.code, 0) << down.output;
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + slot + "'"),
            "0")
      << down.output;
  EXPECT_EQ(s.scalar("select count(*) from pg_publication where pubname = '" + db + "_pub'"), "1");
  it::drop_slots(db);
  fs::remove_all(dir);
}
