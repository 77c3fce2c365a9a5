// `cppcdc` with a [source] of type "mariadb": check-config shows it without the password, and
// `cppcdc run` snapshots a table and streams its changes into the file sink, end to end.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cppcdc/checkpoint.hpp"
#include "integration/mariadb_util.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc::it::maria {
namespace {

namespace fs = std::filesystem;

class MariaDbCli : public ::testing::Test {
 protected:
  void SetUp() override {
    MARIADB_OR_SKIP();
    db_ = database_for_test("cli");
    dir_ = fs::temp_directory_path() / ("cppcdc-" + db_ + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    session_.exec("DROP DATABASE IF EXISTS " + db_);
    session_.exec("CREATE DATABASE " + db_);
    session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v varchar(20))");
    session_.exec("INSERT INTO " + db_ + ".t VALUES (1, 'before')");
    session_.exec("DROP USER IF EXISTS 'cdc_cli'@'127.0.0.1'");
    session_.exec("CREATE USER 'cdc_cli'@'127.0.0.1' IDENTIFIED BY 'cli-s3cret'");
    session_.exec(
        "GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO "
        "'cdc_cli'@'127.0.0.1'");
  }
  void TearDown() override {
    stop_cppcdc_process(child_, SIGTERM);
    if (!db_.empty()) {
      session_.exec("DROP DATABASE IF EXISTS " + db_);
      session_.exec("DROP USER IF EXISTS 'cdc_cli'@'127.0.0.1'");
      fs::remove_all(dir_);
    }
  }
  fs::path write_config() { return write_config(dir_); }
  // The configuration in `dir`, writing its events and its checkpoint there: the same
  // pipeline (same source_id) wherever it is written.
  fs::path write_config(const fs::path& dir) {
    const fs::path p = dir / "cdc.toml";
    std::ofstream(p) << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = " << *port()
                     << "\nuser = \"cdc_cli\"\npassword_env = \"CLI_TEST_PW\"\n"
                     << "tables = [\"" << db_ << ".*\"]\nsource_id = \"" << db_ << "\"\n"
                     << "heartbeat_interval_ms = 200\n\n[sink]\ntype = \"file\"\npath = \""
                     << (dir / "events.jsonl").string() << "\"\n\n[state.offset]\n"
                     << "backend = \"local_fs\"\ndir = \"" << (dir / "state").string() << "\"\n";
    return p;
  }
  std::string output() const { return output(dir_); }
  std::string output(const fs::path& dir) const {
    std::ifstream in(dir / "events.jsonl");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Starts `cppcdc run` on write_config() in dir_ and waits until the snapshot's row is in
  // its sink.
  void start_and_wait_for_the_snapshot() {
    setenv("CLI_TEST_PW", "cli-s3cret", 1);
    write_config();
    start_cppcdc_process(child_, dir_, "", "", 0);
    ASSERT_TRUE(cppcdc::test::wait_until(
        [&] { return output().find("\"before\"") != std::string::npos; }, std::chrono::seconds(60)))
        << log_tail(dir_ / "cppcdc.log");
  }
  // A copy of dir_'s configuration in dir_/copy with a control socket of its own (as from
  // another machine): the same pipeline, the same checkpoint.
  fs::path write_copy_with_its_own_socket() {
    const fs::path copy = dir_ / "copy" / "cdc.toml";
    fs::create_directories(copy.parent_path());
    std::ifstream in(dir_ / "cdc.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(copy) << text.str() << "\n[runtime]\ncontrol_socket = \""
                        << (copy.parent_path() / "copy.sock").string() << "\"\n";
    return copy;
  }

  void copy_stops_while_the_first_runs(int stop_signal) {
    setenv("CLI_TEST_PW", "cli-s3cret", 1);
    write_config();
    const fs::path dir_b = dir_ / "copy";
    fs::create_directories(dir_b);
    write_config(dir_b);
    start_cppcdc_process(child_, dir_, "", "", 0);
    const fs::path log_a = dir_ / "cppcdc.log";
    ASSERT_TRUE(cppcdc::test::wait_until(
        [&] { return output().find("\"before\"") != std::string::npos; }, std::chrono::seconds(60)))
        << log_tail(log_a);

    const auto t0 = std::chrono::steady_clock::now();
    const auto b = run_cli({"run", "--config", (dir_b / "cdc.toml").string()}, 60);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << b.output;
    EXPECT_EQ(b.code, 2) << b.output;
    EXPECT_NE(b.output.find("source_id " + db_ + " is in use on 127.0.0.1:"), std::string::npos)
        << b.output;
    EXPECT_NE(
        b.output.find("the server's named lock \"cppcdc:" + db_ + "\" is held by connection "),
        std::string::npos)
        << b.output;
    EXPECT_NE(b.output.find("(user cdc_cli from 127.0.0.1:"), std::string::npos) << b.output;
    EXPECT_NE(b.output.find("another cppcdc runs this pipeline"), std::string::npos) << b.output;
    EXPECT_NE(b.output.find("its own source_id"), std::string::npos) << b.output;
    EXPECT_NE(b.output.find("Nothing was opened or changed"), std::string::npos) << b.output;
    EXPECT_FALSE(fs::exists(dir_b / "events.jsonl")) << "the copy's sink opened\n" << b.output;

    // The first one goes on: still running, and a row written after the copy ended arrives.
    int status = 0;
    ASSERT_EQ(waitpid(child_, &status, WNOHANG), 0) << "the first pipeline ended\n"
                                                    << log_tail(log_a);
    session_.exec("INSERT INTO " + db_ + ".t VALUES (2, 'streamed')");
    ASSERT_TRUE(
        cppcdc::test::wait_until([&] { return output().find("\"streamed\"") != std::string::npos; },
                                 std::chrono::seconds(60)))
        << log_tail(log_a);
    ASSERT_EQ(waitpid(child_, &status, WNOHANG), 0) << "the first pipeline ended\n"
                                                    << log_tail(log_a);

    // Once it has ended, the copy starts (its own checkpoint: a snapshot of both rows).
    stop_cppcdc_process(child_, stop_signal);
    pid_t copy = -1;
    start_cppcdc_process(copy, dir_b, "", "", 0);
    const bool started = cppcdc::test::wait_until(
        [&] { return output(dir_b).find("\"streamed\"") != std::string::npos; },
        std::chrono::seconds(60));
    const int copy_status = stop_cppcdc_process(copy, SIGTERM);
    EXPECT_TRUE(started) << log_tail(dir_b / "cppcdc.log");
    EXPECT_TRUE(WIFEXITED(copy_status) && WEXITSTATUS(copy_status) == 0)
        << log_tail(dir_b / "cppcdc.log");
  }

  Session session_;
  std::string db_;
  fs::path dir_;
  pid_t child_ = -1;
};

TEST_F(MariaDbCli, CheckConfigDescribesTheSourceWithoutItsPassword) {
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  auto o = run_cli({"check-config", "--config", write_config().string()});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("mariadb"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("cli-s3cret"), std::string::npos) << o.output;
}

// A wrong password is refused at once with where the password comes from, not retried.
TEST_F(MariaDbCli, AWrongPasswordNamesWhereThePasswordComesFrom) {
  setenv("CLI_TEST_PW", "not-the-password", 1);
  auto o = run_cli({"run", "--config", write_config().string()});
  EXPECT_NE(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("the server refused user cdc_cli with the password given ([source] "
                          "password, or the variable password_env names)"),
            std::string::npos)
      << o.output;
  EXPECT_EQ(o.output.find("not-the-password"), std::string::npos) << o.output;
  // Refused before any sink opens (and before the start line, whose wording
  // RunSnapshotsAndStreamsIntoTheFileSink checks).
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("before any sink opens"), std::string::npos) << o.output;
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
}

TEST_F(MariaDbCli, RunSnapshotsAndStreamsIntoTheFileSink) {
  start_and_wait_for_the_snapshot();
  session_.exec("INSERT INTO " + db_ + ".t VALUES (2, 'streamed')");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] { return output().find("\"streamed\"") != std::string::npos; }, std::chrono::seconds(60)))
      << log_tail(dir_ / "cppcdc.log");
  const std::string out = output();
  EXPECT_NE(out.find("\"op\":\"read\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"op\":\"insert\""), std::string::npos) << out;
  // `snapshot status` reports the initial snapshot though this source runs no incremental ones.
  auto status = run_cli({"snapshot", "status", "--config", (dir_ / "cdc.toml").string()});
  EXPECT_EQ(status.code, 0) << status.output;
  EXPECT_NE(status.output.find(": complete: 1 row from 1 table read in "), std::string::npos)
      << status.output;
  EXPECT_NE(status.output.find(db_ + ".t"), std::string::npos) << status.output;
  EXPECT_EQ(status.output.find("incremental snapshot"), std::string::npos) << status.output;
  EXPECT_EQ(stop_cppcdc_process(child_, SIGTERM) & 0x7f, 0);
  std::ifstream log(dir_ / "cppcdc.log");
  std::stringstream ls;
  ls << log.rdbuf();
  EXPECT_EQ(ls.str().find("cli-s3cret"), std::string::npos);
  // The start line names the source type once ("source=mariadb cdc_cli@...").
  EXPECT_EQ(ls.str().find("source=mariadb mariadb"), std::string::npos) << ls.str();
  EXPECT_NE(ls.str().find("source=mariadb cdc_cli@127.0.0.1"), std::string::npos) << ls.str();
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The blocking snapshot reports its progress per table as the PostgreSQL one does: a log line
// for each table it completes (and one every 5 s while a table is read), and the server's row
// estimate beside the rows read in `snapshot status`. Before, it logged nothing per table and
// the estimate was unknown.
TEST_F(MariaDbCli, TheSnapshotLogsItsProgressPerTableWithTheServersEstimate) {
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  session_.exec("CREATE TABLE " + db_ + ".u (id int primary key)");
  session_.exec("INSERT INTO " + db_ + ".u VALUES (1), (2), (3)");
  session_.exec("ANALYZE TABLE " + db_ + ".u");  // an exact TABLE_ROWS
  ASSERT_EQ(session_.value("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE "
                           "TABLE_SCHEMA = '" +
                           db_ + "' AND TABLE_NAME = 'u'"),
            "3");
  const fs::path cfg = write_config();
  start_cppcdc_process(child_, dir_, "", "", 0);
  const fs::path log = dir_ / "cppcdc.log";
  const std::string u_done = "snapshot of " + db_ + ".u: 3 rows of about 3 read, complete";
  const std::string t_done = "snapshot of " + db_ + ".t: 1 row";
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        const std::string text = file_text(log);
        return text.find(u_done) != std::string::npos && text.find(t_done) != std::string::npos;
      },
      std::chrono::seconds(60)))
      << log_tail(log);
  EXPECT_NE(file_text(log).find("read, complete", file_text(log).find(t_done)), std::string::npos)
      << log_tail(log);
  std::string status;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        auto o = run_cli({"snapshot", "status", "--json", "--config", cfg.string()});
        status = o.output;
        return o.code == 0 && status.find("\"phase\":\"complete\"") != std::string::npos;
      },
      std::chrono::seconds(60)))
      << status;
  EXPECT_NE(status.find("\"table\":\"" + db_ + ".u\",\"rows_read\":3,\"estimated_rows\":3"),
            std::string::npos)
      << status;
}

// `cppcdc preflight` on MariaDB: a ready server passes and reports where a first start reads
// from; a user without the replication grants and a checkpoint whose binlog is gone fail,
// each with its remedy, and the exit code says a start would fail.
TEST_F(MariaDbCli, PreflightPassesOnAReadyServerAndNamesWhatIsMissing) {
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  session_.exec("CREATE TABLE " + db_ + ".nokey (a int)");
  auto o = run_cli({"preflight", "--config", write_config().string()});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("ok    connected to 127.0.0.1"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("2 tables match the captured tables"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("warn  table " + db_ + ".nokey has no primary key"), std::string::npos)
      << o.output;
  // The cdc user has only SELECT on the tables, and still sees t's primary key.
  EXPECT_EQ(o.output.find("table " + db_ + ".t has no primary key"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("no checkpoint: a first start reads from"), std::string::npos)
      << o.output;
  EXPECT_EQ(o.output.find("cli-s3cret"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(dir_ / "state"));

  session_.exec("REVOKE REPLICATION SLAVE ON *.* FROM 'cdc_cli'@'127.0.0.1'");
  o = run_cli({"preflight", "--config", write_config().string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("FAIL"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("REPLICATION SLAVE"), std::string::npos) << o.output;
}

// A PostgreSQL pipeline's record under this pipeline's key (both keys left at their default
// "cppcdc", one checkpoint directory): preflight fails saying another pipeline shares the key
// and to give this one its own source_id, never to remove the record, and teardown keeps it.
// Before, preflight tried the LSN as a binlog position.
TEST_F(MariaDbCli, PreflightFailsOnACheckpointThatAPostgresPipelineWroteUnderTheSameKey) {
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  const fs::path cfg = write_config();
  ASSERT_NO_FATAL_FAILURE(save_file_checkpoint(dir_ / "state", db_, "postgres", "0/16B3748", 42));
  auto o = run_cli({"preflight", "--config", cfg.string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("FAIL  the checkpoint stored under this pipeline's key (" + db_ +
                          ") was written by a postgres source ('" + db_ +
                          "', at 0/16B3748): another pipeline shares the key"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("give this pipeline its own source_id"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("remove the checkpoint"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("cppcdc teardown"), std::string::npos) << o.output;
  const auto torn = run_cli({"teardown", "--config", cfg.string(), "--yes"});
  EXPECT_NE(torn.output.find("it belongs to a postgres source"), std::string::npos) << torn.output;
  EXPECT_TRUE(fs::exists(FileCheckpoint::path_for(dir_ / "state", db_))) << torn.output;
}

// teardown of a configuration whose pipeline runs with another control socket (on another
// machine, or a copy of the file elsewhere) finds the pipeline's named lock held and changes
// nothing, naming the holder; before, it removed the checkpoint from under the running
// pipeline. Once that pipeline stopped, the same teardown removes the checkpoint.
TEST_F(MariaDbCli, TeardownRefusesWhileThePipelineRunsElsewhere) {
  start_and_wait_for_the_snapshot();
  // The copy shares the checkpoint directory, not the control socket.
  const fs::path copy = write_copy_with_its_own_socket();
  const fs::path checkpoint = FileCheckpoint::path_for(dir_ / "state", db_);
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return fs::exists(checkpoint); }, std::chrono::seconds(30)));
  auto o = run_cli({"teardown", "--config", copy.string(), "--yes"});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("the named lock \"cppcdc:" + db_ + "\""), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("held by connection "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("stop that pipeline first"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("nothing was changed"), std::string::npos) << o.output;
  EXPECT_TRUE(fs::exists(checkpoint)) << o.output;
  int status = 0;
  EXPECT_EQ(waitpid(child_, &status, WNOHANG), 0) << "the pipeline ended\n"
                                                  << log_tail(dir_ / "cppcdc.log");

  EXPECT_EQ(stop_cppcdc_process(child_, SIGTERM) & 0x7f, 0);
  o = run_cli({"teardown", "--config", copy.string(), "--yes"});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_FALSE(fs::exists(checkpoint)) << o.output;
}

// migrate-state from a copy of a running pipeline's configuration (another directory, so
// another control socket) is refused, exit 5, while the source shows the pipeline in use (its
// named lock): the checkpoint would move on under the copy (trial 10, M3: it reported
// "migrated" with a stale position). Once the pipeline stopped, the same command migrates.
TEST_F(MariaDbCli, MigrateStateRefusesWhileThePipelineRunsElsewhere) {
  start_and_wait_for_the_snapshot();
  const fs::path copy = write_copy_with_its_own_socket();
  const fs::path target = dir_ / "target" / "cdc.toml";
  fs::create_directories(target.parent_path());
  std::string moved = file_text(dir_ / "cdc.toml");
  const std::string from_dir = (dir_ / "state").string();
  moved.replace(moved.find(from_dir), from_dir.size(), (dir_ / "target" / "state").string());
  std::ofstream(target) << moved;
  auto o = run_cli({"migrate-state", "--config", copy.string(), "--to", target.string()});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("runs elsewhere"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("the server's named lock \"cppcdc:" + db_ + "\""), std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(FileCheckpoint::path_for(dir_ / "target" / "state", db_))) << o.output;

  EXPECT_EQ(stop_cppcdc_process(child_, SIGTERM) & 0x7f, 0);
  o = run_cli({"migrate-state", "--config", copy.string(), "--to", target.string()});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(fs::exists(FileCheckpoint::path_for(dir_ / "target" / "state", db_))) << o.output;
}

// With a Kafka sink, preflight asks MariaDB which captured tables have no primary key: one
// bound for a compacted topic is a FAIL naming it (the broker would refuse its keyless records).
TEST_F(MariaDbCli, PreflightFailsAKeylessTableBoundForACompactedKafkaTopic) {
  const char* bootstrap = std::getenv("CPPCDC_TEST_KAFKA_BOOTSTRAP");
  if (bootstrap == nullptr || *bootstrap == '\0') {
    GTEST_SKIP() << "CPPCDC_TEST_KAFKA_BOOTSTRAP is not set: no Kafka broker (scripts/test.sh "
                    "starts one)";
  }
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  session_.exec("CREATE TABLE " + db_ + ".nokey (a int)");
  const std::string topic = db_ + "-" + std::to_string(getpid()) + ".compacted";
  const auto write = [&](const std::string& tables) {
    const fs::path p = dir_ / "kafka.toml";
    std::ofstream(p) << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = " << *port()
                     << "\nuser = \"cdc_cli\"\npassword_env = \"CLI_TEST_PW\"\n"
                     << "tables = [" << tables << "]\nsource_id = \"" << db_ << "\"\n\n"
                     << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                     << "\"\ntopic = \"" << topic
                     << "\"\ncreate_topics = true\n[sink.topic_config]\n"
                        "\"cleanup.policy\" = \"compact\"\n\n[state.offset]\n"
                     << "backend = \"local_fs\"\ndir = \"" << (dir_ / "state").string() << "\"\n";
    return p;
  };
  auto o = run_cli(
      {"preflight", "--config", write("\"" + db_ + ".t\", \"" + db_ + ".nokey\"").string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("FAIL  topic \"" + topic + "\" (for " + db_ + ".t, " + db_ +
                          ".nokey) will be compacted (cleanup.policy=compact), but " + db_ +
                          ".nokey has no key"),
            std::string::npos)
      << o.output;
  o = run_cli({"preflight", "--config", write("\"" + db_ + ".t\"").string()});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("will be compacted (cleanup.policy=compact), and every table going "
                          "there has a key"),
            std::string::npos)
      << o.output;
}

// Under effectively_once the whole blocking snapshot has a resume position only after its last
// row, so one Kafka transaction holds all of it: preflight warns, naming the snapshot's tables,
// the producer's effective transaction.timeout.ms and the remedy.
TEST_F(MariaDbCli, PreflightWarnsThatTheSnapshotIsOneKafkaTransactionUnderEffectivelyOnce) {
  const char* bootstrap = std::getenv("CPPCDC_TEST_KAFKA_BOOTSTRAP");
  if (bootstrap == nullptr || *bootstrap == '\0') {
    GTEST_SKIP() << "CPPCDC_TEST_KAFKA_BOOTSTRAP is not set: no Kafka broker (scripts/test.sh "
                    "starts one)";
  }
  setenv("CLI_TEST_PW", "cli-s3cret", 1);
  session_.exec("CREATE TABLE " + db_ + ".u (id int primary key)");
  const std::string tag = db_ + "-" + std::to_string(getpid());
  const fs::path cfg = dir_ / "kafka.toml";
  std::ofstream(cfg) << "delivery_contract = \"effectively_once\"\n\n[source]\ntype = "
                        "\"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                     << *port() << "\nuser = \"cdc_cli\"\npassword_env = \"CLI_TEST_PW\"\n"
                     << "tables = [\"" << db_ << ".*\"]\nsource_id = \"" << db_ << "\"\n\n"
                     << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                     << "\"\ncreate_topics = true\ndelivery_mode = \"transactional\"\n"
                     << "transactional_id = \"" << tag << "\"\n"
                     << "[sink.kafka_properties]\n\"transaction.timeout.ms\" = \"180000\"\n\n"
                     << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << tag
                     << ".checkpoints\"\n";
  auto o = run_cli({"preflight", "--config", cfg.string()});
  EXPECT_NE(o.output.find("warn  effectively_once: the MariaDB snapshot (2 tables: " + db_ +
                          ".t, " + db_ +
                          ".u) has a resume position only after its last row, so all of it is "
                          "delivered in one Kafka transaction, which must commit within the "
                          "sink's transaction.timeout.ms (180000 ms) or the broker aborts it"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("remedy: if reading these tables takes longer, raise "
                          "[sink.kafka_properties] \"transaction.timeout.ms\""),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("take the rest with incremental snapshots"), std::string::npos)
      << o.output;
}

// A copy of a running pipeline's configuration in another directory (its own control socket,
// sink and checkpoint; the same source_id) stops before its sink opens, naming the connection
// that holds the pipeline's lock, and the running pipeline goes on. Once the first one ends
// (stopped, or killed), the copy starts. Before, the copy started: with a transactional Kafka
// sink its start fenced the running pipeline's producer, which stopped.
TEST_F(MariaDbCli, ACopiedConfigurationStopsWhileTheFirstRunsAndStartsAfterItsStop) {
  copy_stops_while_the_first_runs(SIGTERM);
}

TEST_F(MariaDbCli, ACopiedConfigurationStopsWhileTheFirstRunsAndStartsAfterItIsKilled) {
  copy_stops_while_the_first_runs(SIGKILL);
}

}  // namespace
}  // namespace cppcdc::it::maria
