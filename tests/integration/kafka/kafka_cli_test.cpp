// `cppcdc run` with a Kafka sink, started the way an operator starts it: a copy of a running
// pipeline's configuration (same replication slot, same transactional_id) stops before its sink
// opens and leaves the running pipeline alone (its transactional producer used to be fenced by
// the copy's init_transactions), and a bootstrap address that is a KRaft controller port stops
// the start at once, naming it (the kafka_topic checkpoint backend used to wait for timeout_ms
// and then report no answer).

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "cppcdc/checkpoint.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Pipeline A (process `a`, logging to `log_a`) runs, the row `insert` adds now is committed
/// (`topic` then holds `rows` records, read_committed), and A's producer was never fenced.
void expect_pipeline_goes_on(pid_t a, const fs::path& log_a, const std::function<void()>& insert,
                             const std::string& bootstrap, const std::string& topic,
                             std::size_t rows) {
  int status = 0;
  ASSERT_EQ(waitpid(a, &status, WNOHANG), 0) << "pipeline A ended\n" << it::log_tail(log_a);
  ASSERT_NO_FATAL_FAILURE(insert());
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == rows; },
                             60s, 500ms))
      << it::log_tail(log_a);
  ASSERT_EQ(waitpid(a, &status, WNOHANG), 0) << "pipeline A ended\n" << it::log_tail(log_a);
  EXPECT_FALSE(has(file_text(log_a), "fenced")) << it::log_tail(log_a);
}

/// A fresh directory for one configuration (short: the control socket cdc.sock lives there).
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-kcli-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// An effectively_once pipeline from `db`'s table t to Kafka `bootstrap`.
/// `dsn` replaces the source's connection string (default: `db` on the test server).
/// `slot` replaces the replication slot (the checkpoint's key; default: `db`).
/// `properties`: lines of [sink.kafka_properties]; `checkpoint_keys`: more lines of
/// [state.offset].
void write_effectively_once_config(const fs::path& dir, const std::string& db,
                                   const std::string& bootstrap, const std::string& name,
                                   const std::string& dsn = "", const std::string& slot = "",
                                   const std::string& properties = "",
                                   const std::string& checkpoint_keys = "") {
  std::ofstream cfg(dir / "cdc.toml");
  cfg << "delivery_contract = \"effectively_once\"\n\n"
      << "[source]\ntype = \"postgres\"\ndsn = \"" << (dsn.empty() ? it::dsn_for(db) : dsn)
      << "\"\n"
      << "slot_name = \"" << (slot.empty() ? db : slot) << "\"\npublication_name = \"" << db
      << "_pub\"\n"
      << "source_name = \"" << name << "\"\ntables = [\"public.t\"]\n\n"
      << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
      << "create_topics = true\ntopic_replication_factor = 1\n"
      << "delivery_mode = \"transactional\"\ntransactional_id = \"" << name << "\"\n\n";
  if (!properties.empty()) cfg << "[sink.kafka_properties]\n" << properties << "\n";
  cfg << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << name << ".checkpoints\"\n"
      << checkpoint_keys << "\n"
      << "[runtime]\nmax_poll_wait_ms = 100\n";
}

// Two pipelines of different source types that keep their checkpoints in one place under the
// same key (the defaults: a PostgreSQL slot_name and a MariaDB source_id both "cppcdc"):
// `cppcdc teardown` of the PostgreSQL one keeps the record, which is the MariaDB pipeline's,
// and says why. A user trial saw it removed, and the MariaDB pipeline took a second full
// snapshot.
TEST(KafkaCli, TeardownKeepsACheckpointThatAnotherSourceTypeWrote) {
  const std::string db = it::test_database("kafka_foreign");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(
      it::save_file_checkpoint(dir / "state", db, "mariadb", "0-1-307", 300002));
  const fs::path cfg = dir / "cdc.toml";
  std::ofstream(cfg) << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db)
                     << "\"\nslot_name = \"" << db << "\"\npublication_name = \"" << db
                     << "_pub\"\ntables = [\"public.t\"]\n\n[sink]\ntype = \"stdout\"\n\n"
                     << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
                     << (dir / "state").string() << "\"\n";
  const auto checked = it::run_cli({"preflight", "--config", cfg.string()}, 60);
  EXPECT_EQ(checked.code, 3) << checked.output;
  EXPECT_NE(checked.output.find("was written by a mariadb source"), std::string::npos)
      << checked.output;
  EXPECT_EQ(checked.output.find("remove the checkpoint to start afresh"), std::string::npos)
      << checked.output;
  const auto torn = it::run_cli({"teardown", "--config", cfg.string(), "--yes"}, 60);
  EXPECT_NE(torn.output.find("it belongs to a mariadb source"), std::string::npos) << torn.output;
  EXPECT_TRUE(fs::exists(FileCheckpoint::path_for(dir / "state", db))) << torn.output;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace

TEST(KafkaCli, ACopiedConfigurationStopsBeforeItsSinkOpensAndTheRunningPipelineGoesOn) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_copy");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const std::string name = kafka_it::unique_topic("copy");
  const std::string topic = name + ".public.t";
  // The same configuration in two directories: two control sockets, one slot, one
  // transactional_id.
  const fs::path dir_a = fresh_dir(db + "_a");
  const fs::path dir_b = fresh_dir(db + "_b");
  write_effectively_once_config(dir_a, db, bootstrap, name);
  fs::copy_file(dir_a / "cdc.toml", dir_b / "cdc.toml");

  pid_t a = -1;
  it::start_cppcdc_process(a, dir_a, it::admin_dsn(), db, 120);
  it::KillAtExit guard{a};
  const fs::path log_a = dir_a / "cppcdc.log";
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 1; },
                             60s, 500ms))
      << it::log_tail(log_a);

  // preflight of the copy says what its start would do (it said "all checks passed" before).
  const auto pre = it::run_cli({"preflight", "--config", (dir_b / "cdc.toml").string()}, 60);
  EXPECT_EQ(pre.code, 3) << pre.output;
  EXPECT_TRUE(has(pre.output, "replication slot " + db + " is in use by process ")) << pre.output;
  EXPECT_TRUE(has(pre.output, "would stop at once (exit status 2)")) << pre.output;

  const auto t0 = std::chrono::steady_clock::now();
  const auto b = it::run_cli({"run", "--config", (dir_b / "cdc.toml").string()}, 60);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << b.output;
  EXPECT_EQ(b.code, 2) << b.output;
  EXPECT_TRUE(has(b.output, "replication slot " + db + " is in use: it is active for PID "))
      << b.output;
  EXPECT_TRUE(has(b.output, "(application_name cppcdc, client ")) << b.output;
  EXPECT_TRUE(has(b.output, "another cppcdc runs this pipeline")) << b.output;
  EXPECT_TRUE(has(b.output, "its own slot_name")) << b.output;
  EXPECT_TRUE(has(b.output, "transactional_id")) << b.output;
  EXPECT_FALSE(has(b.output, "transactional producer")) << "the copy's sink opened\n" << b.output;

  // A goes on: still running, and a row inserted after B ended arrives.
  ASSERT_NO_FATAL_FAILURE(expect_pipeline_goes_on(
      a, log_a, [&] { s.query("insert into t values (2)"); }, bootstrap, topic, 2));
  EXPECT_EQ(it::stop_cppcdc_process(a, SIGTERM), 0) << it::log_tail(log_a);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) {
    fs::remove_all(dir_a);
    fs::remove_all(dir_b);
  }
}

// Two pipelines with different source ids (slots: different keys in one checkpoint topic)
// but one [sink] transactional_id: the second is refused at start, before its sink opens,
// naming both keys, the transactional_id and the remedies, and the first goes on. Before,
// each start's init_transactions fenced the other's producer, back and forth. preflight
// reports it as a FAIL. Renaming the source id on purpose: once the old pipeline's record is
// gone (teardown of the old configuration), the renamed one starts.
TEST(KafkaCli, AnotherSourceIdWithTheSameTransactionalIdIsRefusedAndTheRunningPipelineGoesOn) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_txid");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const std::string name = kafka_it::unique_topic("txid");
  const std::string topic = name + ".public.t";
  const std::string slot_b = db + "_b";
  const fs::path dir_a = fresh_dir(db + "_a");
  const fs::path dir_b = fresh_dir(db + "_b");
  write_effectively_once_config(dir_a, db, bootstrap, name);
  write_effectively_once_config(dir_b, db, bootstrap, name, "", slot_b);

  pid_t a = -1;
  it::start_cppcdc_process(a, dir_a, it::admin_dsn(), db, 120);
  it::KillAtExit guard{a};
  const fs::path log_a = dir_a / "cppcdc.log";
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 1; },
                             60s, 500ms))
      << it::log_tail(log_a);

  const std::string names_a = "under key \"" + db + "\"";
  const std::string names_txid = "committed with transactional_id \"" + name + "\"";
  const std::string names_b = "whose key is \"" + slot_b + "\"";
  const auto pre = it::run_cli({"preflight", "--config", (dir_b / "cdc.toml").string()}, 90);
  EXPECT_EQ(pre.code, 3) << pre.output;
  EXPECT_TRUE(has(pre.output, "FAIL")) << pre.output;
  EXPECT_TRUE(has(pre.output, names_txid)) << pre.output;

  const auto b = it::run_cli({"run", "--config", (dir_b / "cdc.toml").string()}, 90);
  EXPECT_EQ(b.code, 2) << b.output;
  EXPECT_TRUE(has(b.output, names_a)) << b.output;
  EXPECT_TRUE(has(b.output, names_b)) << b.output;
  EXPECT_TRUE(has(b.output, names_txid)) << b.output;
  EXPECT_TRUE(has(b.output, "Give each pipeline its own [sink] transactional_id")) << b.output;
  EXPECT_TRUE(has(b.output, "cppcdc teardown --config")) << b.output;
  EXPECT_TRUE(has(b.output, "tombstone for key \"" + db + "\"")) << b.output;
  EXPECT_TRUE(has(b.output, "cppcdc migrate-state")) << b.output;
  EXPECT_FALSE(has(b.output, "transactional producer")) << "B's sink opened\n" << b.output;

  // B's teardown changes nothing and says why, as a step that cannot be carried out (exit 3;
  // a trial saw exit 1 and "make the backend reachable", of a backend that answered).
  const auto b_down =
      it::run_cli({"teardown", "--config", (dir_b / "cdc.toml").string(), "--yes"}, 90);
  EXPECT_EQ(b_down.code, 3) << b_down.output;
  EXPECT_TRUE(has(b_down.output, names_txid)) << b_down.output;
  EXPECT_TRUE(has(b_down.output, "nothing was changed")) << b_down.output;
  EXPECT_FALSE(has(b_down.output, "reachable")) << b_down.output;

  // A goes on, never fenced.
  ASSERT_NO_FATAL_FAILURE(expect_pipeline_goes_on(
      a, log_a, [&] { s.query("insert into t values (2)"); }, bootstrap, topic, 2));
  EXPECT_EQ(it::stop_cppcdc_process(a, SIGTERM), 0) << it::log_tail(log_a);

  // The slot was renamed on purpose: the old pipeline's teardown removes its record (and slot),
  // and the renamed pipeline starts.
  const auto torn =
      it::run_cli({"teardown", "--config", (dir_a / "cdc.toml").string(), "--yes"}, 90);
  EXPECT_EQ(torn.code, 0) << torn.output;
  pid_t b2 = -1;
  it::start_cppcdc_process(b2, dir_b, it::admin_dsn(), slot_b, 120);
  it::KillAtExit guard_b{b2};
  EXPECT_EQ(it::stop_cppcdc_process(b2, SIGTERM), 0) << it::log_tail(dir_b / "cppcdc.log");
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) {
    fs::remove_all(dir_a);
    fs::remove_all(dir_b);
  }
}

namespace {

/// Pipeline A (table t, effectively_once into Kafka) running with one row committed, and a
/// copy of its configuration in dir_b whose source connects differently (same slot or
/// source_id, same transactional_id).
struct RunningAndCopy {
  std::string db;
  std::string bootstrap;
  std::string topic;
  fs::path dir_a;
  fs::path dir_b;
  pid_t a = -1;
  pid_t b = -1;
  std::unique_ptr<it::PgSession> s;  // PostgreSQL
  std::string maria_port;            // MariaDB: its SQL goes through Debian's mariadb client
  std::string checkpoint_topic;      // MariaDB

  ~RunningAndCopy() {
    if (b > 0) it::stop_cppcdc_process(b, SIGKILL);
    if (a > 0) it::stop_cppcdc_process(a, SIGKILL);
  }

  void maria_sql(const std::string& text) {
    const auto o = kafka_it::run_command("mariadb -h 127.0.0.1 -P " + maria_port +
                                         " -u root -N -e \"" + text + "\" 2>&1");
    ASSERT_EQ(o.code, 0) << text << "\n" << o.output;
  }

  void insert(int id) {
    if (s) {
      s->query("insert into t values (" + std::to_string(id) + ")");
    } else {
      maria_sql("INSERT INTO " + db + ".t VALUES (" + std::to_string(id) + ")");
    }
  }

  void set_up(const std::string& bootstrap_in, const std::string& test) {
    bootstrap = bootstrap_in;
    db = it::test_database(test);
    dir_a = fresh_dir(db + "_a");
    dir_b = fresh_dir(db + "_b");
  }

  void start_a(const fs::path& log_a) {
    it::start_cppcdc_process(a, dir_a, it::admin_dsn(), db, s ? 120 : 0);
    if (s) insert(1);
    ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 1; },
                               60s, 500ms))
        << it::log_tail(log_a);
  }

  /// PostgreSQL: the copy's DSN is A's followed by `copy_dsn_suffix`.
  void start_postgres(const std::string& bootstrap_in, const std::string& test,
                      const std::string& copy_dsn_suffix) {
    set_up(bootstrap_in, test);
    it::fresh_database(db);
    s = std::make_unique<it::PgSession>(it::dsn_for(db));
    s->query("create table t (id int primary key)");
    const std::string name = kafka_it::unique_topic(test);
    topic = name + ".public.t";
    write_effectively_once_config(dir_a, db, bootstrap, name);
    write_effectively_once_config(dir_b, db, bootstrap, name, it::dsn_for(db) + copy_dsn_suffix);
    start_a(dir_a / "cppcdc.log");
  }

  /// MariaDB (CPPCDC_TEST_MARIADB_PORT): A logs in as a user of its own with its password; the
  /// copy's [source] has `copy_port` and `copy_password` instead.
  /// With `rows` > 1, t starts with that many rows and batches are small, so that the initial
  /// snapshot (one Kafka transaction) takes a while; A is then not waited for.
  void start_mariadb(const std::string& bootstrap_in, const std::string& port,
                     const std::string& test, const std::string& copy_port,
                     const std::string& copy_password, int rows = 1) {
    set_up(bootstrap_in, test);
    maria_port = port;
    const std::string user = db;
    ASSERT_NO_FATAL_FAILURE(maria_sql(
        "DROP DATABASE IF EXISTS " + db + "; CREATE DATABASE " + db + "; CREATE TABLE " + db +
        ".t (id int primary key); INSERT INTO " + db + ".t SELECT seq FROM " + db + ".seq_1_to_" +
        std::to_string(rows) + "; DROP USER IF EXISTS '" + user + "'@'127.0.0.1'; CREATE USER '" +
        user +
        "'@'127.0.0.1' IDENTIFIED BY 'right-one'; GRANT SELECT, RELOAD, REPLICATION SLAVE, "
        "BINLOG MONITOR ON *.* TO '" +
        user + "'@'127.0.0.1'"));
    const std::string name = kafka_it::unique_topic(test);
    topic = name + "." + db + ".t";
    const auto write = [&](const fs::path& dir, const std::string& p, const std::string& pw) {
      std::ofstream(dir / "cdc.toml")
          << "delivery_contract = \"effectively_once\"\n\n[source]\ntype = \"mariadb\"\n"
          << "host = \"127.0.0.1\"\nport = " << p << "\nuser = \"" << user << "\"\npassword = \""
          << pw << "\"\nserver_id = " << 7000 + getpid() % 1000 << "\nsource_id = \"" << db
          << "\"\nsource_name = \"" << name << "\"\ntables = [\"" << db << ".t\"]\n"
          << "heartbeat_interval_ms = 200\n\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \""
          << bootstrap << "\"\ncreate_topics = true\ntopic_replication_factor = 1\n"
          << "delivery_mode = \"transactional\"\ntransactional_id = \"" << name << "\"\n\n"
          << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << name
          << ".checkpoints\"\n\n[runtime]\nmax_poll_wait_ms = 100\n"
          << (rows > 1 ? "max_buffer_size = 20\n" : "");
    };
    checkpoint_topic = name + ".checkpoints";
    write(dir_a, port, "right-one");
    write(dir_b, copy_port, copy_password);
    if (rows > 1) {
      it::start_cppcdc_process(a, dir_a, "", "", 0);
    } else {
      start_a(dir_a / "cppcdc.log");
    }
  }

  /// The value of the last record of the reconciliation marker on the checkpoint topic
  /// (nullopt: none, or a tombstone).
  std::optional<std::string> marker() {
    std::optional<std::string> last;
    if (kafka_it::partition_count(bootstrap, checkpoint_topic) <= 0) return last;
    for (const auto& r : kafka_it::read_topic(bootstrap, checkpoint_topic)) {
      if (r.key && r.key->ends_with(".reconciliation")) last = r.value;
    }
    return last;
  }

  /// A runs, a row inserted now is committed, and A's producer was never fenced.
  void expect_a_goes_on(int id, std::size_t rows) {
    expect_pipeline_goes_on(
        a, dir_a / "cppcdc.log", [&] { insert(id); }, bootstrap, topic, rows);
  }

  void finish() {
    EXPECT_EQ(it::stop_cppcdc_process(a, SIGTERM), 0) << it::log_tail(dir_a / "cppcdc.log");
    if (s) {
      it::drop_slots(db);
    } else {
      maria_sql("DROP DATABASE IF EXISTS " + db + "; DROP USER IF EXISTS '" + db + "'@'127.0.0.1'");
    }
    if (!::testing::Test::HasFailure()) {
      fs::remove_all(dir_a);
      fs::remove_all(dir_b);
    }
  }

  /// The copy, refused at its login, stopped before its sink opened: exit status 3, the
  /// source's error with `remedy`.
  void expect_copy_refused(const std::string& source_type, const std::string& refusal,
                           const std::string& remedy) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = it::run_cli({"run", "--config", (dir_b / "cdc.toml").string()}, 60);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << out.output;
    EXPECT_EQ(out.code, 3) << out.output;
    EXPECT_TRUE(has(out.output, "checking the " + source_type + " source")) << out.output;
    EXPECT_TRUE(has(out.output, "before any sink opens")) << out.output;
    EXPECT_TRUE(has(out.output, refusal)) << out.output;
    EXPECT_TRUE(has(out.output, remedy)) << out.output;
    EXPECT_FALSE(has(out.output, "wrong-one")) << out.output;
    EXPECT_FALSE(has(out.output, "transactional producer")) << "the copy's sink opened\n"
                                                            << out.output;
  }

  /// The copy waits for its unreachable database (saying so, retrying) while A delivers;
  /// SIGTERM ends it at once with exit status 0, its sink never opened.
  void expect_copy_waits(const std::string& source_type, const std::string& address) {
    const fs::path log_b = dir_b / "cppcdc.log";
    it::start_cppcdc_process(b, dir_b, "", "", 0);
    const std::string line = "waiting for the " + source_type + " source before opening the sinks";
    ASSERT_TRUE(it::wait_until([&] { return kafka_it::count_in_file(log_b, line) >= 2; }, 60s))
        << it::log_tail(log_b);
    EXPECT_TRUE(has(file_text(log_b), address)) << it::log_tail(log_b);
    ASSERT_NO_FATAL_FAILURE(expect_a_goes_on(2, 2));
    int status = 0;
    ASSERT_EQ(waitpid(b, &status, WNOHANG), 0) << "the copy ended\n" << it::log_tail(log_b);
    const auto t0 = std::chrono::steady_clock::now();
    const int b_status = it::stop_cppcdc_process(b, SIGTERM);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << it::log_tail(log_b);
    EXPECT_TRUE(WIFEXITED(b_status) && WEXITSTATUS(b_status) == 0) << b_status << "\n"
                                                                   << it::log_tail(log_b);
    EXPECT_TRUE(has(file_text(log_b), "cppcdc stopped by signal")) << it::log_tail(log_b);
    EXPECT_FALSE(has(file_text(log_b), "transactional producer")) << "the copy's sink opened\n"
                                                                  << it::log_tail(log_b);
  }
};

}  // namespace

// A copy whose login the server refuses (a wrong or rotated password) stops at the check,
// naming the source and the remedy, before its sink opens. It used to pass the check (which
// could not connect), open its transactional producer with the running pipeline's
// transactional_id (fencing it: the running pipeline stopped with exit status 3), and only
// then fail on the source.
TEST(KafkaCli, ACopyWhoseLoginIsRefusedStopsBeforeItsSinkOpensAndTheRunningPipelineGoesOn) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  it::PgSession admin(it::admin_dsn());
  // pg.sh makes cppcdc_pw authenticate with a password (scram).
  admin.try_exec("create role cppcdc_pw login replication password 'right-one'");
  RunningAndCopy run;
  ASSERT_NO_FATAL_FAILURE(
      run.start_postgres(bootstrap, "kcli_copy_pw", " user=cppcdc_pw password=wrong-one"));
  run.expect_copy_refused("postgres", "password authentication failed for user \"cppcdc_pw\"",
                          "fix the user or the password");
  ASSERT_NO_FATAL_FAILURE(run.expect_a_goes_on(2, 2));
  run.finish();
}

// A copy whose database cannot be reached waits for it (under the retry policy, saying so)
// before its sink opens; SIGTERM ends the wait at once, and the running pipeline goes on
// throughout. It used to pass the check and fence the running pipeline.
TEST(KafkaCli, ACopyThatCannotReachTheDatabaseWaitsBeforeItsSinkOpensAndStopsOnSigterm) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RunningAndCopy run;
  // Nothing listens on port 1: every connection attempt is refused at once.
  ASSERT_NO_FATAL_FAILURE(
      run.start_postgres(bootstrap, "kcli_copy_down", " host=127.0.0.1 port=1"));
  ASSERT_NO_FATAL_FAILURE(run.expect_copy_waits("postgres", "127.0.0.1:1"));
  ASSERT_NO_FATAL_FAILURE(run.expect_a_goes_on(3, 3));
  run.finish();
}

#define MARIADB_PORT_OR_SKIP(var)                                                              \
  const char* var = std::getenv("CPPCDC_TEST_MARIADB_PORT");                                   \
  if (var == nullptr || *var == '\0') {                                                        \
    GTEST_SKIP() << "CPPCDC_TEST_MARIADB_PORT is not set: no MariaDB (scripts/test.sh starts " \
                    "one)";                                                                    \
  }

// The same two for a MariaDB source: its check (the pipeline's named lock) needs a login too.
TEST(KafkaCli, AMariaDbCopyWhoseLoginIsRefusedStopsBeforeItsSinkOpensAndTheRunningPipelineGoesOn) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  MARIADB_PORT_OR_SKIP(port);
  RunningAndCopy run;
  ASSERT_NO_FATAL_FAILURE(run.start_mariadb(bootstrap, port, "kcli_mcopy_pw", port, "wrong-one"));
  run.expect_copy_refused("mariadb", "Access denied for user", "with the password given");
  ASSERT_NO_FATAL_FAILURE(run.expect_a_goes_on(2, 2));
  run.finish();
}

TEST(KafkaCli, AMariaDbCopyThatCannotReachTheDatabaseWaitsBeforeItsSinkOpensAndStopsOnSigterm) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  MARIADB_PORT_OR_SKIP(port);
  RunningAndCopy run;
  ASSERT_NO_FATAL_FAILURE(run.start_mariadb(bootstrap, port, "kcli_mcopy_down", "1", "right-one"));
  ASSERT_NO_FATAL_FAILURE(run.expect_copy_waits("mariadb", "127.0.0.1:1"));
  ASSERT_NO_FATAL_FAILURE(run.expect_a_goes_on(3, 3));
  run.finish();
}

// `cppcdc preflight` of a copy of a running MariaDB pipeline's configuration fails on the
// pipeline's named lock, naming the connection that holds it and the remedy (a start would
// stop there), and the reconciliation marker of the running pipeline's batch in flight (its
// snapshot, one open Kafka transaction) is reported as that pipeline's. Before, every check
// passed, and the marker was reported as a batch that a stopped run had left aborted.
TEST(KafkaCli, PreflightOfACopyOfARunningMariaDbPipelineFailsOnItsLockAndOwnsItsMarker) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  MARIADB_PORT_OR_SKIP(port);
  RunningAndCopy run;
  ASSERT_NO_FATAL_FAILURE(
      run.start_mariadb(bootstrap, port, "kcli_mpre", port, "right-one", 200000));
  const fs::path log_a = run.dir_a / "cppcdc.log";
  // The snapshot's transaction is open and its marker is out: A is held there (stopped, its
  // lock's connection open) while the copy is checked.
  ASSERT_TRUE(it::wait_until([&] { return run.marker().has_value(); }, 120s, 200ms))
      << it::log_tail(log_a);
  ASSERT_EQ(kill(run.a, SIGSTOP), 0);
  ASSERT_TRUE(run.marker().has_value()) << "the snapshot committed first\n" << it::log_tail(log_a);
  const auto o = it::run_cli({"preflight", "--config", (run.dir_b / "cdc.toml").string()}, 120);
  ASSERT_EQ(kill(run.a, SIGCONT), 0);
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_TRUE(has(o.output, "FAIL  source_id " + run.db +
                                " is in use: the server's named lock \"cppcdc:" + run.db +
                                "\" is held by connection "))
      << o.output;
  EXPECT_TRUE(has(o.output, "(user " + run.db + " from 127.0.0.1:")) << o.output;
  EXPECT_TRUE(has(o.output, "so a cppcdc runs this pipeline now")) << o.output;
  EXPECT_TRUE(has(o.output,
                  "stop the running pipeline first, or give this configuration its "
                  "own source_id"))
      << o.output;
  EXPECT_TRUE(has(o.output, "end it with KILL ")) << o.output;
  EXPECT_TRUE(has(
      o.output, "reconciliation marker \"" + run.db + ".reconciliation\" ({\"transactional_id\":"))
      << o.output;
  EXPECT_TRUE(has(o.output, "belongs to the pipeline that runs now: it is its batch in flight"))
      << o.output;
  EXPECT_FALSE(has(o.output, "stopped in the middle of a batch")) << o.output;
  int status = 0;
  ASSERT_EQ(waitpid(run.a, &status, WNOHANG), 0) << "pipeline A ended\n" << it::log_tail(log_a);
  EXPECT_FALSE(has(file_text(log_a), "fenced")) << it::log_tail(log_a);
  run.finish();
}

// Both places that talk to Kafka first at a start: the kafka_topic checkpoint backend (opened
// before the sink) and the sink itself (with a local_fs checkpoint).
TEST(KafkaCli, ARunPointedAtAKraftControllerPortStopsAtOnceNamingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const auto colon = bootstrap.rfind(':');
  // scripts/kafka.sh puts the controller on the broker's port + 1.
  const std::string controller =
      bootstrap.substr(0, colon + 1) + std::to_string(std::stoi(bootstrap.substr(colon + 1)) + 1);
  const std::string db = it::test_database("kcli_ctrl");
  it::fresh_database(db);
  it::PgSession(it::dsn_for(db)).query("create table t (id int primary key)");
  for (const bool kafka_topic : {true, false}) {
    SCOPED_TRACE(kafka_topic ? "kafka_topic checkpoint" : "local_fs checkpoint");
    const fs::path dir = fresh_dir(db + (kafka_topic ? "_kt" : "_fs"));
    {
      std::ofstream cfg(dir / "cdc.toml");
      if (kafka_topic) cfg << "delivery_contract = \"effectively_once\"\n\n";
      cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
          << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
          << "tables = [\"public.t\"]\n\n"
          << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << controller << "\"\n";
      if (kafka_topic) {
        cfg << "delivery_mode = \"transactional\"\ntransactional_id = \"" << db << "\"\n\n"
            << "[state.offset]\nbackend = \"kafka_topic\"\n";
      } else {
        cfg << "\n[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n";
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto run = it::run_cli({"run", "--config", (dir / "cdc.toml").string()}, 60);
    // Without the check, the checkpoint backend waited for its timeout_ms (30 s).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s) << run.output;
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_TRUE(has(run.output, "answers, but not as a Kafka broker")) << run.output;
    EXPECT_TRUE(has(run.output, "KRaft controller port")) << run.output;
    EXPECT_TRUE(has(run.output, "\"" + controller + "\"")) << run.output;
    EXPECT_FALSE(has(run.output, "no answer")) << run.output;
    // The checkpoint backend took the address from [sink]: the error names [sink]'s key.
    EXPECT_TRUE(has(run.output, "[sink] bootstrap_servers")) << run.output;
    EXPECT_FALSE(has(run.output, "[state.offset] bootstrap_servers")) << run.output;
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
  it::PgSession admin(it::admin_dsn());
  EXPECT_EQ(
      admin.scalar("select count(*) from pg_replication_slots where slot_name = '" + db + "'"), "0")
      << "the start created a replication slot";
}

// A run killed with its transaction open (here right after its records were delivered into it): the
// next start's init_transactions waits until the broker aborted that transaction, and librdkafka
// says so in GETPID lines about "another concurrent operation" (CONCURRENT_TRANSACTIONS), retried.
// A user trial saw one at each such restart, unexplained, at the info level. They are debug lines
// now, and the sink says once what happened, in its own words.
TEST(KafkaCli, ARestartAfterAKillInsideATransactionSaysThatItWaitedForItsAbort) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_prevtx");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const std::string name = kafka_it::unique_topic("prevtx");
  const fs::path dir = fresh_dir(db);
  write_effectively_once_config(dir, db, bootstrap, name);
  const fs::path log = dir / "cppcdc.log";

  pid_t child = -1;
  it::KillAtExit guard{child};
  setenv("CPPCDC_FAULT_POINT", "kafka_sink.after_flush", 1);  // the child's copy keeps it
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  unsetenv("CPPCDC_FAULT_POINT");
  s.query("insert into t values (1)");
  int status = 0;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 60s))
      << it::log_tail(log);
  child = -1;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  const std::size_t first_run = file_text(log).size();

  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::committed_records(bootstrap, name + ".public.t") == 1; }, 60s, 500ms))
      << it::log_tail(log);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  const std::string second = file_text(log).substr(first_run);
  EXPECT_TRUE(has(second,
                  "had left a transaction open (a run stopped or killed in the middle "
                  "of a batch"))
      << second;
  EXPECT_TRUE(has(second, "init_transactions waited until the broker aborted it")) << second;
  EXPECT_FALSE(has(second, "librdkafka GETPID")) << second;
  // The marker of the killed batch: its transaction never committed.
  EXPECT_TRUE(has(second, "the previous run stopped in the middle of a batch")) << second;
  EXPECT_TRUE(has(second, "its transaction was aborted")) << second;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A run killed after its transaction wrote to the checkpoint topic leaves that transaction
// open there, and committed reads of the topic stop before it until the broker times it out.
// Here a producer with the pipeline's transactional_id stands for the killed run: it leaves a
// transaction open on the checkpoint topic, with transaction.timeout.ms 300 s. The restart's
// sink aborts it (its init_transactions) before the checkpoint is read. Before, the start read
// the checkpoint first and waited for the broker; with load_timeout_ms 10 s it gave up (a
// trial saw restarts wait about two minutes).
// A producer of `transactional_id` that began a transaction, wrote a record to `topic` and was
// "killed": it is kept alive, never committing or aborting, so the transaction stays open for
// the 300 s of its transaction.timeout.ms. Null (after a test failure) when it cannot be made.
std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> leave_a_transaction_open(
    const std::string& bootstrap, const std::string& transactional_id, const std::string& topic,
    const std::string& key_prefix) {
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> none(nullptr, &rd_kafka_destroy);
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : {std::pair<const char*, std::string>{"bootstrap.servers", bootstrap},
                             {"transactional.id", transactional_id},
                             {"transaction.timeout.ms", "300000"}}) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      ADD_FAILURE() << err;
      rd_kafka_conf_destroy(conf);
      return none;
    }
  }
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> killed(
      rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err), &rd_kafka_destroy);
  if (!killed) {
    ADD_FAILURE() << err;
    return none;
  }
  const auto ok = [](rd_kafka_error_t* e) {
    const std::string text = e != nullptr ? rd_kafka_error_string(e) : "";
    if (e != nullptr) rd_kafka_error_destroy(e);
    return text;
  };
  const std::string init = ok(rd_kafka_init_transactions(killed.get(), 60000));
  const std::string begin = init.empty() ? ok(rd_kafka_begin_transaction(killed.get())) : "";
  if (!init.empty() || !begin.empty()) {
    ADD_FAILURE() << init << begin;
    return none;
  }
  const std::string key = key_prefix + ".unfinished";
  if (rd_kafka_producev(killed.get(), RD_KAFKA_V_TOPIC(topic.c_str()),
                        RD_KAFKA_V_KEY(key.data(), key.size()),
                        RD_KAFKA_V_VALUE(const_cast<char*>("x"), 1),
                        RD_KAFKA_V_END) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      rd_kafka_flush(killed.get(), 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ADD_FAILURE() << "the open transaction's record was not written to " << topic;
    return none;
  }
  return killed;
}

// Runs the pipeline configured in `dir` (topic `name`.public.t, checkpoint topic
// `name`.checkpoints) until it delivered a first row, stops it, leaves a transaction of
// `killed_id` open on the checkpoint topic as a run killed in the middle of one would, then
// runs it again until a second row arrives. `second`: the second run's log.
void run_again_past_an_open_checkpoint_transaction(const fs::path& dir, const std::string& db,
                                                   const std::string& bootstrap,
                                                   const std::string& name,
                                                   const std::string& killed_id,
                                                   it::PgSession& s, std::string& second) {
  const std::string topic = name + ".public.t";
  const fs::path log = dir / "cppcdc.log";
  pid_t child = -1;
  it::KillAtExit guard{child};
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 1; },
                             60s, 500ms))
      << it::log_tail(log);
  ASSERT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  const std::size_t first_run = file_text(log).size();

  // The killed run's transaction, open on the checkpoint topic.
  auto killed = leave_a_transaction_open(bootstrap, killed_id, name + ".checkpoints", db);
  ASSERT_TRUE(killed);

  s.query("insert into t values (2)");
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  ASSERT_TRUE(it::wait_until([&] { return kafka_it::committed_records(bootstrap, topic) == 2; },
                             60s, 500ms))
      << it::log_tail(log);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  second = file_text(log).substr(first_run);
}

TEST(KafkaCli, ARestartAbortsTheTransactionAKilledRunLeftOnTheCheckpointTopicBeforeReadingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_opentx");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const std::string name = kafka_it::unique_topic("opentx");
  const fs::path dir = fresh_dir(db);
  write_effectively_once_config(dir, db, bootstrap, name, "", "",
                                "\"transaction.timeout.ms\" = \"300000\"",
                                "load_timeout_ms = 10000");
  std::string second;
  ASSERT_NO_FATAL_FAILURE(
      run_again_past_an_open_checkpoint_transaction(dir, db, bootstrap, name, name, s, second));
  EXPECT_FALSE(has(second, "could not be read to its end")) << second;
  EXPECT_TRUE(has(second, "resuming from checkpoint")) << second;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The same under at_least_once, where the kafka_topic backend's own producer
// ("cppcdc-checkpoint.<key>") writes the record: a run killed during a save left its
// transaction open, and a restart waited for the broker to time it out (a minute; a trial's
// supervisor loop never got past it). The restart's backend producer now ends it first, once
// the source's check said no other instance runs; load_timeout_ms (10 s here) is far below
// the open transaction's 300 s, so only that can let the restart through.
TEST(KafkaCli, AnAtLeastOnceRestartEndsTheSaveAKilledRunLeftOpenBeforeReadingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_aloopen");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const std::string name = kafka_it::unique_topic("aloopen");
  const fs::path dir = fresh_dir(db);
  write_effectively_once_config(dir, db, bootstrap, name, "", "", "", "load_timeout_ms = 10000");
  {
    // The same pipeline under at_least_once, the sink idempotent.
    std::string text = file_text(dir / "cdc.toml");
    text.replace(text.find("effectively_once"), std::string("effectively_once").size(),
                 "at_least_once");
    const std::string txn = "delivery_mode = \"transactional\"\ntransactional_id = \"" + name + "\"\n";
    text.erase(text.find(txn), txn.size());
    std::ofstream(dir / "cdc.toml") << text;
  }
  std::string second;
  ASSERT_NO_FATAL_FAILURE(run_again_past_an_open_checkpoint_transaction(
      dir, db, bootstrap, name, "cppcdc-checkpoint." + db, s, second));
  EXPECT_FALSE(has(second, "could not be read to its end")) << second;
  EXPECT_FALSE(has(second, "waiting for an open transaction")) << second;
  EXPECT_TRUE(has(second, "resuming from checkpoint")) << second;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A run killed after its batch's transaction committed but before the reconciliation marker's
// tombstone: the next start reports the marker as a committed batch, of which nothing is
// delivered again (a trial saw it reported as aborted and "delivered again", though the
// checkpoint it resumed from was past the marker).
TEST(KafkaCli, AMarkerLeftAfterTheCommitIsReportedAsACommittedBatch) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_marker");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key); insert into t select generate_series(1, 5)");
  const std::string name = kafka_it::unique_topic("marker");
  const fs::path dir = fresh_dir(db);
  write_effectively_once_config(dir, db, bootstrap, name);
  const fs::path log = dir / "cppcdc.log";

  pid_t child = -1;
  it::KillAtExit guard{child};
  setenv("CPPCDC_FAULT_POINT", "kafka_sink.after_commit", 1);  // the child's copy keeps it
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 0);
  unsetenv("CPPCDC_FAULT_POINT");
  int status = 0;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 60s))
      << it::log_tail(log);
  child = -1;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  ASSERT_EQ(kafka_it::committed_records(bootstrap, name + ".public.t"), 5u) << it::log_tail(log);
  const std::size_t first_run = file_text(log).size();

  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  s.query("insert into t values (6)");
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::committed_records(bootstrap, name + ".public.t") >= 6; }, 60s, 500ms))
      << it::log_tail(log);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  EXPECT_EQ(kafka_it::committed_records(bootstrap, name + ".public.t"), 6u)
      << "a row was delivered twice";
  const std::string second = file_text(log).substr(first_run);
  EXPECT_TRUE(has(second, "the previous run stopped after a batch's transaction committed"))
      << second;
  EXPECT_TRUE(has(second, "nothing of it is delivered again")) << second;
  EXPECT_FALSE(has(second, "was aborted")) << second;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A SIGTERM while a keyless table's snapshot is carried in one open Kafka transaction (under
// effectively_once): the stop aborts it, and the stop line says how many events that was and
// that the next start reads them again (it said "N events delivered" as if they were). The
// producer's properties of [sink.kafka_properties] are not handed to the checkpoint backend's
// reader either (librdkafka warned with CONFWARN at every start).
TEST(KafkaCli, AStopDuringACarriedStretchSaysItsEventsWereAbortedAndReadAgain) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kcli_carried");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table bag (v int); alter table bag replica identity full; "
      "insert into bag select generate_series(1, 300000)");
  const std::string name = kafka_it::unique_topic("carried");
  const fs::path dir = fresh_dir(db);
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << name << "\"\ntables = [\"public.bag\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ntopic_replication_factor = 1\n"
        << "delivery_mode = \"transactional\"\ntransactional_id = \"" << name << "\"\n\n"
        << "[sink.kafka_properties]\n\"transaction.timeout.ms\" = \"300000\"\n"
        << "\"queue.buffering.max.messages\" = \"200000\"\n\n"
        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << name << ".checkpoints\"\n\n"
        << "[runtime]\nmax_buffer_size = 200\n";
  }
  const fs::path log = dir / "cppcdc.log";
  pid_t child = -1;
  it::KillAtExit guard{child};
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 0);
  const std::string topic = name + ".public.bag";
  // The topic is created with the table's first record: the stretch has begun.
  ASSERT_TRUE(
      it::wait_until([&] { return kafka_it::partition_count(bootstrap, topic) > 0; }, 120s, 100ms))
      << it::log_tail(log);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  const std::string text = file_text(log);
  ASSERT_EQ(kafka_it::committed_records(bootstrap, topic), 0u)
      << "the stretch committed before the stop: " << it::log_tail(log);
  // The keyless table is one warning (the program's, the snapshot's and the stream's
  // relation each said it in their own words: three lines).
  std::size_t keyless_warnings = 0;
  {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      keyless_warnings += has(line, " warning ") && has(line, "public.bag has no primary key");
    }
  }
  EXPECT_EQ(keyless_warnings, 1u) << it::log_tail(log);
  // The stop line counts the aborted events apart, not as delivered.
  EXPECT_TRUE(has(text,
                  "events written into an open transaction were not delivered: the stop "
                  "aborted that transaction, so read_committed consumers saw none of them, and "
                  "the next start reads them again from the checkpoint"))
      << it::log_tail(log);
  EXPECT_TRUE(has(text, "cppcdc stopped by signal: 0 events delivered, checkpoint at "))
      << it::log_tail(log);
  EXPECT_FALSE(has(text, "of them were carried")) << it::log_tail(log);
  EXPECT_FALSE(has(text, "CONFWARN")) << it::log_tail(log);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Settings the kafka_topic checkpoint backend takes from [sink] are named where the file
// writes them: [sink.kafka_properties], not [state.offset.kafka_properties].
TEST(KafkaCli, ARefusedPropertyTheCheckpointBackendTookFromTheSinkNamesTheSinksKey) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const fs::path dir = fresh_dir("kcli_inherit");
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for("postgres") << "\"\n"
        << "slot_name = \"kcli_inherit\"\ntables = [\"public.t\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "delivery_mode = \"transactional\"\ntransactional_id = \"kcli_inherit\"\n\n"
        << "[sink.kafka_properties]\n\"isolation.level\" = \"read_committed\"\n\n"
        << "[state.offset]\nbackend = \"kafka_topic\"\n";
  }
  const auto checked = it::run_cli({"check-config", "--config", (dir / "cdc.toml").string()}, 60);
  EXPECT_EQ(checked.code, 2) << checked.output;
  EXPECT_TRUE(has(checked.output, "[sink.kafka_properties] \"isolation.level\"")) << checked.output;
  EXPECT_FALSE(has(checked.output, "[state.offset")) << checked.output;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Property combinations librdkafka refuses only when it makes the producer (run exited 2 on
// them) are refused by check-config and preflight, naming the key and the remedy (ninth Kafka
// trial, finding 6).
TEST(KafkaCli, CheckConfigRefusesWhatTheProducerWouldRefuseAtRun) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const fs::path dir = fresh_dir("kcli_combos");
  const std::pair<const char*, const char*> cases[] = {
      {"max.in.flight.requests.per.connection", "6"},
      {"retries", "0"},
      {"socket.timeout.ms", "300000"},
  };
  for (const auto& [key, value] : cases) {
    {
      std::ofstream cfg(dir / "cdc.toml");
      cfg << "delivery_contract = \"effectively_once\"\n\n"
          << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for("postgres") << "\"\n"
          << "slot_name = \"kcli_combos\"\ntables = [\"public.t\"]\n\n"
          << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
          << "delivery_mode = \"transactional\"\ntransactional_id = \"kcli_combos\"\n\n"
          << "[sink.kafka_properties]\n\"" << key << "\" = \"" << value << "\"\n\n"
          << "[state.offset]\nbackend = \"kafka_topic\"\n";
    }
    for (const char* command : {"check-config", "preflight"}) {
      const auto out = it::run_cli({command, "--config", (dir / "cdc.toml").string()}, 60);
      EXPECT_EQ(out.code, 2) << command << " " << key << ": " << out.output;
      // (a key with a dot is quoted, as the file must write it)
      const std::string shown = std::string_view(key).find('.') != std::string_view::npos
                                    ? "\"" + std::string(key) + "\""
                                    : std::string(key);
      EXPECT_TRUE(has(out.output, "[sink.kafka_properties] " + shown))
          << command << " " << key << ": " << out.output;
      EXPECT_TRUE(has(out.output, "librdkafka refuses to make the producer"))
          << command << " " << key << ": " << out.output;
    }
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
