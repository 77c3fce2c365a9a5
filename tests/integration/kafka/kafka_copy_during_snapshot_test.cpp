// A copy of an effectively_once pipeline's configuration started while the running pipeline
// reads its initial snapshot. The replication slot is inactive then (it is used only once the
// stream starts), so the copy's check that the slot is free passed, its transactional Kafka
// producer started, and that fenced the running pipeline's producer (ninth Kafka trial,
// finding 4). The running source now holds the pipeline's advisory lock from before its
// snapshot, and the copy stops on it before its sink opens.
//
// The snapshot is held in place, so that the test does not depend on how fast it goes: its
// table condition waits for an advisory lock that the test holds. (A table lock would not do:
// an ACCESS EXCLUSIVE lock takes a transaction id, which the slot's creation waits out.)

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-kcps-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(KafkaCliCopy, ACopyStartedDuringTheInitialSnapshotStopsBeforeItsSinkOpens) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcps");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  s.query("insert into t select g from generate_series(1, 50) g");
  const std::string name = kafka_it::unique_topic("kcps");
  const std::string topic = name + ".public.t";
  const fs::path dir_a = fresh_dir(db + "_a");
  const fs::path dir_b = fresh_dir(db + "_b");
  std::ofstream(dir_a / "cdc.toml")
      << "delivery_contract = \"effectively_once\"\n\n"
      << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
      << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
      << "source_name = \"" << name << "\"\ntables = [\"public.t\"]\n"
      << "[source.snapshot]\ntable_conditions = { \"public.t\" = \"(select count(*) from "
         "(select pg_advisory_xact_lock_shared(4242)) x) = 1\" }\n\n"
      << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
      << "create_topics = true\ndelivery_mode = \"transactional\"\ntransactional_id = \"" << name
      << "\"\n\n[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << name
      << ".checkpoints\"\n\n[runtime]\nmax_poll_wait_ms = 100\n";
  fs::copy_file(dir_a / "cdc.toml", dir_b / "cdc.toml");

  // The snapshot's read of t waits for this session's advisory lock.
  it::PgSession locker(it::dsn_for(db));
  locker.query("select pg_advisory_lock(4242)");

  pid_t a = -1;
  it::start_cppcdc_process(a, dir_a, it::admin_dsn(), db, 0);
  it::KillAtExit guard{a};
  const fs::path log_a = dir_a / "cppcdc.log";
  ASSERT_TRUE(it::wait_for_a_lock_waiter(s, db, 90s, 100ms))
      << "pipeline A did not reach its snapshot's read of t\n"
      << it::log_tail(log_a);
  // The slot exists and is not in use: only the lock says that A runs.
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db +
                     "' and not active"),
            "1");

  const auto pre = it::run_cli({"preflight", "--config", (dir_b / "cdc.toml").string()}, 60);
  EXPECT_EQ(pre.code, 3) << pre.output;
  EXPECT_TRUE(has(pre.output, "the pipeline of replication slot " + db + " is running: PID "))
      << pre.output;
  EXPECT_TRUE(has(pre.output, "would stop at once (exit status 2)")) << pre.output;

  const auto t0 = std::chrono::steady_clock::now();
  const auto b = it::run_cli({"run", "--config", (dir_b / "cdc.toml").string()}, 60);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << b.output;
  EXPECT_EQ(b.code, 2) << b.output;
  EXPECT_TRUE(has(b.output, "the pipeline of replication slot " + db + " is running: PID "))
      << b.output;
  EXPECT_TRUE(has(b.output, "(application_name cppcdc")) << b.output;
  EXPECT_TRUE(has(b.output, "reading its snapshot")) << b.output;
  EXPECT_TRUE(has(b.output, "transactional_id")) << b.output;
  EXPECT_FALSE(has(b.output, "transactional producer")) << "the copy's sink opened\n" << b.output;

  // A goes on: its snapshot completes once the lock goes, unfenced, and so does the stream.
  locker.query("select pg_advisory_unlock(4242)");
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 50; },
                             90s, 500ms))
      << kafka_it::committed_records(bootstrap, topic) << " rows\n"
      << it::log_tail(log_a);
  s.query("insert into t values (51)");
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 51; },
                             60s, 500ms))
      << it::log_tail(log_a);
  int status = 0;
  ASSERT_EQ(waitpid(a, &status, WNOHANG), 0) << "pipeline A ended\n" << it::log_tail(log_a);
  std::ifstream in(log_a);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_FALSE(has(text, "fenced")) << it::log_tail(log_a);
  EXPECT_EQ(it::stop_cppcdc_process(a, SIGTERM), 0) << it::log_tail(log_a);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) {
    fs::remove_all(dir_a);
    fs::remove_all(dir_b);
  }
}

}  // namespace
