// At least once into Kafka: `cppcdc run` captures a mixed PostgreSQL workload into a real
// broker while it is killed and restarted again and again: SIGKILL at random moments, and
// every other start dies at a crash point, either right after the Kafka sink's flush returned
// (the batch is in Kafka, its acknowledgement and checkpoint are not: it comes again) or right
// after the checkpoint was saved (a sink that acknowledged records still queued in the
// producer would lose them there). Afterwards an independent
// consumer reads every topic; replaying the records with row_write() (partition by partition,
// in offset order: a row's records share a partition) must give the source tables exactly,
// and every committed transaction must be there. Duplicates are expected (and counted): the
// batches in flight at a kill are delivered again.
//
// Under effectively_once (each batch and its checkpoint record one Kafka transaction) the same
// kills leave a read_committed reader every change exactly once, and a read_uncommitted one the
// aborted attempts. The soak runs (KafkaSoak, scripts/soak.sh) do both contracts with about
// 50,000 row changes, at least 20 kills and two restarts of the broker during the load.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "integration/kafka/kafka_util.hpp"
#include "integration/replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

constexpr int kSeconds = 30;
constexpr int kMinKills = 5;
constexpr std::size_t kMaxBatch = 300;  // [runtime] max_buffer_size of the runs

// What one oracle run does besides the kills.
struct OracleRun {
  bool exactly_once = false;
  int seconds = kSeconds;       ///< the load runs at least this long
  std::size_t min_changes = 0;  ///< and until it changed at least this many rows
  int min_kills = kMinKills;    ///< SIGKILLs the run must have dealt (crash points not counted)
  int broker_restarts = 0;      ///< restarts of `broker`, spread over the kills
  kafka_it::OwnBroker* broker = nullptr;  ///< the run's own broker (null: the shared one)
};

// Starts `cppcdc run` like it::start_cppcdc_process, with crash point `fault_point` armed.
pid_t spawn_armed(const fs::path& dir, const char* fault_point) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("CPPCDC_FAULT_POINT", fault_point, 1);
    const int out = open((dir / "cppcdc.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(out, 2);
    execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", (dir / "cdc.toml").c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// Kills a child a failed assertion left running, so that it does not stream into later tests.
struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) it::stop_cppcdc_process(pid, SIGKILL);
  }
};

// What compaction leaves of `topic`: the last record of each key, the row of its after-image,
// keys whose last record is a delete (or a tombstone) left out.
it::ReplayTable compacted_view(const std::string& bootstrap, const std::string& topic,
                               const std::string& isolation) {
  std::map<std::string, std::optional<std::string>> last;  // record key -> last value
  for (const auto& r : kafka_it::read_topic(bootstrap, topic, isolation)) {
    if (r.key) last[*r.key] = r.value;
  }
  it::ReplayTable view;
  for (const auto& [key, value] : last) {
    if (!value) continue;
    auto e = Event::from_json(*value);
    if (!e) {
      ADD_FAILURE() << e.error().report();
      continue;
    }
    if (e->op == Operation::kDelete || !e->after) continue;
    const auto key_row = e->primary_key_values();
    if (!key_row) {
      ADD_FAILURE() << "no key in the last record of " << key;
      continue;
    }
    it::ReplayRow row;
    for (const auto& c : *e->after) row[c.name] = c.text;
    view[it::key_text(*key_row)] = std::move(row);
  }
  return view;
}

// The oracle run, under at_least_once (`exactly_once` false: duplicates expected, none lost)
// or effectively_once (each batch and its checkpoint one Kafka transaction: a read_committed
// reader sees every change exactly once).
void run_oracle(const std::string& bootstrap, const OracleRun& run) {
  const bool exactly_once = run.exactly_once;
  const std::string db = it::test_database(exactly_once ? "kafka_eos" : "kafka_oracle");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Topics are named after the source: unique per run, so earlier runs' records stay out.
  const std::string source = kafka_it::unique_topic("oracle");
  it::PgSession s(it::dsn_for(db));
  s.query(R"(
    create table acct (id int primary key, balance bigint not null, note text);
    create table item (k1 int, k2 text, qty int, primary key (k1, k2));
    create table marker (id int primary key);
  )");
  const std::vector<std::pair<std::string, std::vector<std::string>>> tables = {
      {"acct", {"id"}}, {"item", {"k1", "k2"}}};
  {
    std::ofstream cfg(dir / "cdc.toml");
    if (exactly_once) cfg << "delivery_contract = \"effectively_once\"\n\n";
    cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\n"
        << "tables = [\"public.acct\", \"public.item\", \"public.marker\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ntopic_partitions = 3\ntopic_replication_factor = 1\n"
        << "delivery_timeout_ms = " << (run.broker_restarts > 0 ? 10000 : 60000) << "\n";
    if (exactly_once) {
      cfg << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
          << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
          << ".checkpoints\"\n\n";
    } else {
      cfg << "\n[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n";
    }
    cfg << "[runtime]\nmax_buffer_size = " << kMaxBatch << "\nmax_poll_wait_ms = 100\n"
        << "connection_retry_max_retries = 100\nconnection_retry_initial_delay_ms = 50\n"
        << "connection_retry_max_delay_ms = 500\n";
    if (run.broker_restarts > 0) {  // a broker outage is retried, however long it lasts
      cfg << "recoverable_error_breaker_consecutive_threshold = 100000\n";
    }
  }
  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);

  // The workload: transactions of one to four statements, each starting with an upsert, so
  // that every committed transaction has a change and must show up in Kafka.
  std::atomic<bool> done{false};
  std::vector<std::uint64_t> committed;    // xids (32 bits, as pgoutput carries them)
  std::atomic<std::size_t> changes{0};     // rows the workload changed
  std::atomic<bool> enough_faults{false};  // the kills and broker restarts asked for are done
  std::atomic<bool> quit{false};           // a failed assertion ends the load early
  std::thread load([&] {
    it::PgSession m(it::dsn_for(db));
    std::mt19937 rng(1515);
    const auto t0 = std::chrono::steady_clock::now();
    int step = 0;
    while (!quit.load() &&
           (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(run.seconds) ||
            changes.load() < run.min_changes || !enough_faults.load())) {
      ++step;
      m.query("begin");
      const std::string id = std::to_string(rng() % 400);
      std::size_t changed =
          m.query("insert into acct values (" + id + ", 1, 'n" + std::to_string(step) +
                  "') on conflict (id) do update set balance = acct.balance + 1, note = "
                  "excluded.note returning 1")
              .size();
      const int more = static_cast<int>(rng() % 4);
      for (int i = 0; i < more; ++i) {
        const std::string k1 = std::to_string(rng() % 60);
        const std::string k2 = "'k" + std::to_string(rng() % 4) + "'";
        switch (rng() % 7) {
          case 6: {
            // Moves a row to another key (pgoutput sends the old key columns): the sink must
            // delete the row under its old key, or a compacted topic keeps it there.
            const std::string to = std::to_string(rng() % 800);
            changed +=
                m.query("update acct set id = " + to +
                        " where id = " + std::to_string(rng() % 800) +
                        " and not exists (select from acct where id = " + to + ") returning 1")
                    .size();
            break;
          }
          case 0:
            changed += m.query("delete from acct where id = " + std::to_string(rng() % 400) +
                               " returning 1")
                           .size();
            break;
          case 1:
            changed += m.query("update acct set balance = balance * 2, note = null where id = " +
                               std::to_string(rng() % 400) + " returning 1")
                           .size();
            break;
          case 2:
          case 3:
            changed +=
                m.query("insert into item values (" + k1 + ", " + k2 + ", " + std::to_string(step) +
                        ") on conflict (k1, k2) do update set qty = excluded.qty "
                        "returning 1")
                    .size();
            break;
          case 4:
            changed +=
                m.query("update item set qty = qty + 1 where k1 = " + k1 + " returning 1").size();
            break;
          default:
            changed +=
                m.query("delete from item where k1 = " + k1 + " and k2 = " + k2 + " returning 1")
                    .size();
        }
      }
      const std::string xid = m.scalar("select txid_current() % 4294967296");
      m.query("commit");
      if (xid.empty()) break;  // the server went away: the failure is reported already
      committed.push_back(std::stoull(xid));
      changes.fetch_add(changed);
      // Pacing, not waiting: the load spreads over the whole run.
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    done.store(true);
  });
  struct Joiner {  // a failed assertion returns early: the load thread still ends
    std::atomic<bool>& quit;
    std::thread& thread;
    ~Joiner() {
      quit.store(true);
      if (thread.joinable()) thread.join();
    }
  } joiner{quit, load};

  // SIGKILL at random moments (random gaps on purpose, not waits for anything); every other
  // restart is armed to die at one of the crash points, in turn.
  // Under effectively_once: before the batch's transaction commits (with the checkpoint
  // record already in it, or not yet), and after it committed but before the source heard.
  const std::vector<const char*> crash_points =
      exactly_once
          ? std::vector<const char*>{"runtime.before_checkpoint", "kafka_sink.before_commit",
                                     "runtime.after_checkpoint"}
          : std::vector<const char*>{"kafka_sink.after_flush", "runtime.after_checkpoint"};
  std::mt19937 rng(99);
  int kills = 0;
  int crashes = 0;
  int restarts = 0;
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng() % 3500));
    if (done.load()) break;
    it::stop_cppcdc_process(child, SIGKILL);
    ++kills;
    if (kills % 2 == 0) {
      child =
          spawn_armed(dir, crash_points[static_cast<std::size_t>(crashes) % crash_points.size()]);
      int status = 0;
      ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
          << it::log_tail(dir / "cppcdc.log");
      child = -1;
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << "the armed cppcdc did not die at its crash point: "
          << it::log_tail(dir / "cppcdc.log");
      ++crashes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
    it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
    // The broker's restarts, spread over the kills: it goes away under the running pipeline,
    // which notices (librdkafka's refused connections in its log) and retries while the load
    // goes on, and comes back.
    if (run.broker != nullptr && restarts < run.broker_restarts &&
        kills >= (restarts + 1) * run.min_kills / (run.broker_restarts + 1)) {
      const std::size_t refused_before =
          kafka_it::count_in_file(dir / "cppcdc.log", "Connection refused");
      ASSERT_TRUE(run.broker->stop());
      ASSERT_TRUE(it::wait_until(
          [&] {
            return kafka_it::count_in_file(dir / "cppcdc.log", "Connection refused") >
                   refused_before;
          },
          120s))
          << it::log_tail(dir / "cppcdc.log");
      ASSERT_TRUE(run.broker->start());
      ++restarts;
    }
    if (kills >= run.min_kills && restarts >= run.broker_restarts) enough_faults.store(true);
  }
  load.join();
  EXPECT_GE(kills, run.min_kills);
  EXPECT_EQ(restarts, run.broker_restarts);
  EXPECT_GE(changes.load(), run.min_changes);

  // Everything up to a final marker arrived: stop cleanly.
  s.query("insert into marker values (1)");
  const std::string marker_topic = source + ".public.marker";
  ASSERT_TRUE(it::wait_until(
      [&] {
        return kafka_it::partition_count(bootstrap, marker_topic) > 0 &&
               !kafka_it::read_topic(bootstrap, marker_topic).empty();
      },
      300s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");

  it::Replay replay;
  std::set<std::uint64_t> seen_xids;
  // (table, xid, event index, op): an update that moved its row to another key is two records
  // of one change, a delete under the old key and the update under the new one.
  std::map<std::tuple<std::string, std::uint64_t, std::uint64_t, Operation>, int> copies;
  std::size_t records = 0;
  for (const auto& [table, key] : tables) {
    const std::string topic = source + ".public." + table;
    // read_topic gives partition after partition, each in offset order.
    for (const auto& r : kafka_it::read_topic(
             bootstrap, topic, exactly_once ? "read_committed" : "read_uncommitted")) {
      ++records;
      ASSERT_TRUE(r.value) << "a record without a value in " << topic;
      auto e = Event::from_json(*r.value);
      ASSERT_TRUE(e) << e.error().report();
      EXPECT_EQ(r.header("op"), std::string(to_string(e->op)));
      EXPECT_EQ(r.header("source.offset"), e->source.offset);
      ASSERT_TRUE(e->transaction);
      seen_xids.insert(e->transaction->tx_id);
      ++copies[{table, e->transaction->tx_id, e->transaction->event_index, e->op}];
      // Records of different keys sit in different partitions, read one after the other, so
      // their order is lost here: an update that moved its row must not remove the old key
      // (a later row there may have been read already). The delete the sink sent under the old
      // key does that, in that key's own order; without it the old row stays and the
      // comparison below fails.
      if (e->op == Operation::kUpdate) e->before = BeforeImage{};
      replay.apply(*e);
    }
  }
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  std::size_t rows = 0;
  for (const auto& [table, key] : tables) {
    const auto rows_now = it::source_rows(s, table, key);
    rows += rows_now.size();
    EXPECT_EQ(it::diff_tables(replay.tables["public." + table], rows_now), "") << table;
    EXPECT_EQ(it::diff_tables(compacted_view(bootstrap, source + ".public." + table,
                                             exactly_once ? "read_committed" : "read_uncommitted"),
                              rows_now),
              "")
        << "what a compacted " << table << " topic keeps (the last record of each key)";
  }
  std::size_t missing = 0;
  for (const auto xid : committed) {
    if (!seen_xids.count(xid) && missing++ < 5)
      ADD_FAILURE() << "transaction " << xid << " is not in Kafka";
  }
  EXPECT_EQ(missing, 0u);
  std::size_t duplicates = 0;
  for (const auto& [id, n] : copies) duplicates += static_cast<std::size_t>(n - 1);
  std::size_t aborted = 0;
  if (exactly_once) {
    EXPECT_EQ(duplicates, 0u) << "a read_committed reader saw a change twice";
    // The same topics read uncommitted hold the aborted attempts: the transactions are real.
    std::size_t uncommitted = 0;
    for (const auto& [table, key] : tables) {
      uncommitted += kafka_it::read_topic(bootstrap, source + ".public." + table).size();
    }
    aborted = uncommitted - records;
    EXPECT_GT(aborted, 0u) << "no aborted record: the kills missed every open transaction";
    // The crash points inside a batch left the reconciliation marker, reported on the next
    // start.
    std::ifstream log(dir / "cppcdc.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("the previous run stopped in the middle of a batch"), std::string::npos)
        << "no start reported the reconciliation marker";
  } else {
    // The crashes after a flush left whole batches in Kafka without their acknowledgement.
    EXPECT_GT(duplicates, 0u) << "no batch was delivered twice: the kills missed the window";
    // Duplicates come only from batches in flight: at most one batch per kill, crash and
    // retried delivery (a broker outage delivers the batch it failed again).
    const std::size_t retried =
        kafka_it::count_in_file(dir / "cppcdc.log", "delivering the same batch again");
    EXPECT_LE(duplicates, (static_cast<std::size_t>(kills + crashes) + retried) * kMaxBatch)
        << retried << " retried deliveries";
  }
  std::cout << aborted << " aborted records; " << kills << " kills and " << crashes
            << " crashes at crash points, " << restarts << " broker restarts, " << committed.size()
            << " transactions changing " << changes.load() << " rows, " << records << " records ("
            << duplicates << " duplicates) replayed into " << rows << " rows" << std::endl;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A first start whose first batch the sink refuses (its topic is missing) stops before any
// checkpoint: the log says that the next start begins over, that the replication slot it made
// stays for that start, and which command removes it; and it does not show the library's
// wording of the forced stop. `cppcdc teardown` then removes the slot.
TEST(KafkaCli, AFirstStartThatFailsBeforeItsFirstCheckpointSaysWhatItLeftOnTheServer) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kafka_first");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key); insert into t values (1)");
  const fs::path cfg = dir / "cdc.toml";
  {
    std::ofstream out(cfg);
    out << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << kafka_it::unique_topic("first") << "\"\n"
        << "tables = [\"public.t\"]\n\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \""
        << bootstrap << "\"\n\n[state.offset]\nbackend = \"local_fs\"\ndir = \""
        << (dir / "state").string() << "\"\n";
  }
  const auto run = it::run_cli({"run", "--config", cfg.string()}, 120);
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("does not exist"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("no checkpoint was saved"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("cppcdc teardown --config " + cfg.string()), std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("force_stop()"), std::string::npos) << run.output;
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db + "'"),
            "1");
  const auto teardown = it::run_cli({"teardown", "--config", cfg.string(), "--yes"}, 60);
  EXPECT_EQ(teardown.code, 0) << teardown.output;
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db + "'"),
            "0")
      << teardown.output;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A keyless table routed to a [[sinks]] entry whose topic is compacted: the broker refuses the
// record (INVALID_RECORD), and the error names that entry's topic setting, not [sink]'s.
// `cppcdc teardown` of an effectively_once pipeline whose last run died in the middle of a
// batch: the checkpoint topic keeps no record of the pipeline afterwards, neither the
// checkpoint nor the reconciliation marker the sink had left (both keys end in a tombstone).
// And a teardown that cannot reach the checkpoint's cluster changes nothing: the slot stays,
// since dropping it while the checkpoint stays would leave a checkpoint no start can resume.
TEST(KafkaCli,
     TeardownRemovesTheReconciliationMarkerAndChangesNothingWhenTheCheckpointIsOutOfReach) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kafka_teardown");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key); insert into t select generate_series(1, 3000)");
  const std::string source = kafka_it::unique_topic("teardown");
  const auto write_config = [&](const std::string& checkpoint_servers) {
    std::ofstream out(dir / "cdc.toml");
    out << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\ntables = [\"public.t\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ndelivery_mode = \"transactional\"\ntransactional_id = \""
        << source << "\"\n\n[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
        << ".checkpoints\"\nbootstrap_servers = \"" << checkpoint_servers
        << "\"\ntimeout_ms = 3000\n\n[runtime]\nmax_buffer_size = 500\n";
  };
  write_config(bootstrap);
  pid_t child = spawn_armed(dir, "kafka_sink.after_flush@3");
  ChildGuard guard{child};
  int status = 0;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
      << it::log_tail(dir / "cppcdc.log");
  child = -1;
  ASSERT_TRUE(WIFSIGNALED(status)) << it::log_tail(dir / "cppcdc.log");
  const std::string slot_count =
      "select count(*) from pg_replication_slots where slot_name = '" + db + "'";
  ASSERT_EQ(s.scalar(slot_count), "1");
  const fs::path cfg = dir / "cdc.toml";

  // The checkpoint's cluster out of reach (a port nothing listens on): nothing is changed.
  // (The loader wants the sink and the backend on one cluster under effectively_once only.)
  {
    std::string text;
    {
      std::ifstream in(cfg);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    text.replace(0, text.find("[source]"), "");
    const auto at = text.find("bootstrap_servers = \"" + bootstrap + "\"\ntimeout_ms");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, ("bootstrap_servers = \"" + bootstrap + "\"").size(),
                 "bootstrap_servers = \"127.0.0.1:1\"");
    std::ofstream(dir / "unreachable.toml") << text;
  }
  auto torn =
      it::run_cli({"teardown", "--config", (dir / "unreachable.toml").string(), "--yes"}, 120);
  EXPECT_NE(torn.code, 0) << torn.output;
  EXPECT_NE(torn.output.find("nothing was changed"), std::string::npos) << torn.output;
  EXPECT_EQ(s.scalar(slot_count), "1") << "the slot was dropped: " << torn.output;

  torn = it::run_cli({"teardown", "--config", cfg.string(), "--yes"}, 120);
  EXPECT_EQ(torn.code, 0) << torn.output;
  EXPECT_EQ(s.scalar(slot_count), "0") << torn.output;
  std::map<std::string, std::optional<std::string>> last;  // key -> its last value
  for (const auto& r : kafka_it::read_topic(bootstrap, source + ".checkpoints", "read_committed")) {
    if (r.key) last[*r.key] = r.value;
  }
  ASSERT_TRUE(last.count(db)) << "no checkpoint record was ever written";
  EXPECT_FALSE(last[db].has_value()) << "the checkpoint is still there: " << *last[db];
  ASSERT_TRUE(last.count(db + ".reconciliation")) << "the crash left no reconciliation marker";
  EXPECT_FALSE(last[db + ".reconciliation"].has_value())
      << "the reconciliation marker is still there: " << *last[db + ".reconciliation"];
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(KafkaCli, ARefusalByARoutedSinksTopicNamesThatSinksEntry) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kafka_label");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table t (id int primary key); create table nokey (id int, v text); "
      "alter table nokey replica identity full; insert into nokey values (1, 'a')");
  const std::string compacted = kafka_it::unique_topic("label") + ".compacted";
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, compacted, 1, {"cleanup.policy=compact"}));
  const fs::path cfg = dir / "cdc.toml";
  {
    std::ofstream out(cfg);
    out << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << kafka_it::unique_topic("label") << "\"\n"
        << "tables = [\"public.t\", \"public.nokey\"]\n\n[sink]\ntype = \"kafka\"\n"
        << "bootstrap_servers = \"" << bootstrap << "\"\ncreate_topics = true\n\n"
        << "[[sinks]]\nname = \"audit\"\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
        << "\"\ntopic = \"" << compacted << "\"\n\n"
        << "[[pipeline.routes]]\ntables = [\"public.nokey\"]\nsink = \"audit\"\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"" << (dir / "state").string() << "\"\n";
  }
  const auto run = it::run_cli({"run", "--config", cfg.string()}, 120);
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("INVALID_RECORD"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[[sinks]] \"audit\" topic: "), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("[sink] topic"), std::string::npos) << run.output;
  it::run_cli({"teardown", "--config", cfg.string(), "--yes"}, 60);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(KafkaReplayOracle, KillsMidStreamLoseNoChangeAndTheTopicsReplayToTheSourceTables) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  run_oracle(bootstrap, OracleRun{});
}

TEST(KafkaReplayOracle, EffectivelyOnceKillsMidStreamGiveReadCommittedReadersEveryChangeOnce) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  run_oracle(bootstrap, OracleRun{.exactly_once = true});
}

// How often a read_committed reader of `topic` finds each value of `column` in the records'
// after-images (`check` also sees each event), and the expectation that each of `rows` values
// came exactly once.
std::map<std::string, int> committed_values(const std::string& bootstrap, const std::string& topic,
                                            const char* column,
                                            const std::function<void(const Event&)>& check) {
  std::map<std::string, int> seen;
  for (const auto& r : kafka_it::read_topic(bootstrap, topic, "read_committed")) {
    auto e =
        r.value ? Event::from_json(*r.value) : Result<Event>(fail(Error::invalid_data("no value")));
    if (!e || !e->after) {
      ADD_FAILURE() << "not an event with an after-image in " << topic;
      continue;
    }
    check(*e);
    for (const auto& c : *e->after) {
      if (c.name == column) ++seen[c.text.value_or("NULL")];
    }
  }
  return seen;
}

void expect_each_once(const std::map<std::string, int>& seen, int rows, const std::string& table) {
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(rows)) << table << ": rows missing";
  int twice = 0;
  for (const auto& [v, n] : seen) twice += n > 1 ? 1 : 0;
  EXPECT_EQ(twice, 0) << table << ": rows a read_committed reader sees more than once";
}

// A table without a primary key has no cursor its snapshot could resume from: a restart reads
// it again from its first row. Under effectively_once its rows must therefore commit in one
// transaction, or the rows committed before a crash would be read again and delivered twice.
// Two starts die in the middle of that table (at the 10th and the 20th flush of a batch into
// the open transaction), the third finishes: a read_committed reader sees every row once.
TEST(KafkaReplayOracle, EffectivelyOnceCrashesInTheSnapshotOfAKeylessTableDeliverEachRowOnce) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kafka_keyless");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = kafka_it::unique_topic("keyless");
  it::PgSession s(it::dsn_for(db));
  constexpr int kKeyed = 2100;  // not a multiple of the batch: one batch ends acct and starts bag
  constexpr int kKeyless = 20000;
  s.query(
      "create table acct (id int primary key, note text); "
      "create table bag (v int, note text); alter table bag replica identity full; "
      "insert into acct select g, 'a' || g from generate_series(1, " +
      std::to_string(kKeyed) +
      ") g; "
      "insert into bag select g, 'b' || g from generate_series(1, " +
      std::to_string(kKeyless) + ") g;");
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\n"
        << "tables = [\"public.acct\", \"public.bag\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ntopic_partitions = 3\ntopic_replication_factor = 1\n"
        << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source << ".checkpoints\"\n\n"
        << "[runtime]\nmax_buffer_size = 500\n";
  }
  pid_t child = -1;
  ChildGuard guard{child};
  for (const char* point : {"kafka_sink.after_flush@10", "kafka_sink.after_flush@20"}) {
    child = spawn_armed(dir, point);
    int status = 0;
    ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
        << it::log_tail(dir / "cppcdc.log");
    child = -1;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "cppcdc did not die at " << point << ": " << it::log_tail(dir / "cppcdc.log");
  }
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  const std::string bag_topic = source + ".public.bag";
  ASSERT_TRUE(it::wait_until(
      [&] {
        return kafka_it::read_topic(bootstrap, bag_topic, "read_committed").size() >= kKeyless;
      },
      180s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");

  for (const auto& [table, column, rows] :
       {std::tuple<std::string, const char*, int>{"acct", "id", kKeyed},
        std::tuple<std::string, const char*, int>{"bag", "v", kKeyless}}) {
    expect_each_once(committed_values(bootstrap, source + ".public." + table, column,
                                      [](const Event& e) { EXPECT_EQ(e.op, Operation::kRead); }),
                     rows, table);
  }
  // The crashes landed inside the keyless table: its aborted attempts are in the log.
  EXPECT_GT(kafka_it::read_topic(bootstrap, bag_topic).size(), static_cast<std::size_t>(kKeyless))
      << "no aborted record in " << bag_topic << ": the crashes missed the table";
  // Each start said, as its snapshot began, that the keyless table is one transaction with a
  // time limit (and not the keyed one).
  {
    std::ifstream in(dir / "cppcdc.log");
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(log.find("effectively_once: table public.bag has no primary key, so the snapshot "
                       "cannot resume inside it and delivers it whole in one Kafka transaction, "
                       "which must commit within the sink's transaction.timeout.ms (120000 ms)"),
              std::string::npos)
        << it::log_tail(dir / "cppcdc.log");
    EXPECT_EQ(log.find("table public.acct has no primary key"), std::string::npos);
  }
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The MariaDB blocking snapshot reads every table in one consistent view and reaches a position
// a restart could resume after only with its last row: under effectively_once the whole
// snapshot is one transaction. Two starts die in its middle; a read_committed reader sees each
// row once. (The server is driven with Debian's `mariadb` client.)
TEST(KafkaReplayOracle, EffectivelyOnceCrashesInAMariaDbSnapshotDeliverEachRowOnce) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const char* port = std::getenv("CPPCDC_TEST_MARIADB_PORT");
  if (port == nullptr || *port == '\0') {
    GTEST_SKIP() << "CPPCDC_TEST_MARIADB_PORT is not set: no MariaDB (scripts/test.sh starts one)";
  }
  const std::string source = kafka_it::unique_topic("mariasnap");
  const std::string db = "kafka_snap_" + std::to_string(getpid());
  const auto sql = [&](const std::string& text) {
    const auto o = kafka_it::run_command("mariadb -h 127.0.0.1 -P " + std::string(port) +
                                         " -u root -N -e \"" + text + "\"");
    EXPECT_EQ(o.code, 0) << text;
    return o.output;
  };
  constexpr int kRows = 12000;
  sql("DROP DATABASE IF EXISTS " + db + "; CREATE DATABASE " + db + "; CREATE TABLE " + db +
      ".acct (id int primary key, note varchar(20)); CREATE TABLE " + db +
      ".bag (v int, note varchar(20)); INSERT INTO " + db +
      ".acct SELECT seq, concat('a', seq) FROM " + db + ".seq_1_to_" + std::to_string(kRows) +
      "; INSERT INTO " + db + ".bag SELECT seq, concat('b', seq) FROM " + db + ".seq_1_to_" +
      std::to_string(kRows));
  ASSERT_FALSE(::testing::Test::HasFailure());
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "cdc.toml")
      << "delivery_contract = \"effectively_once\"\n\n[source]\ntype = \"mariadb\"\n"
      << "host = \"127.0.0.1\"\nport = " << port
      << "\nuser = \"root\"\nserver_id = " << 7000 + getpid() % 1000 << "\nsource_id = \"" << db
      << "\"\nsource_name = \"" << source << "\"\ntables = [\"" << db << ".acct\", \"" << db
      << ".bag\"]\n\n"
      << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
      << "create_topics = true\ntopic_partitions = 3\ntopic_replication_factor = 1\n"
      << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
      << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
      << ".checkpoints\"\n\n[runtime]\nmax_buffer_size = 500\n";
  pid_t child = -1;
  ChildGuard guard{child};
  for (const char* point : {"kafka_sink.after_flush@8", "kafka_sink.after_flush@30"}) {
    child = spawn_armed(dir, point);
    int status = 0;
    ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
        << it::log_tail(dir / "cppcdc.log");
    child = -1;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "cppcdc did not die at " << point << ": " << it::log_tail(dir / "cppcdc.log");
  }
  child = spawn_armed(dir, "");
  const std::string bag_topic = source + "." + db + ".bag";
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::read_topic(bootstrap, bag_topic, "read_committed").size() >= kRows; },
      180s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");
  std::size_t uncommitted = 0;
  for (const auto& [table, column] : {std::pair<std::string, const char*>{"acct", "id"},
                                      std::pair<std::string, const char*>{"bag", "v"}}) {
    const std::string topic = source + "." + db + "." + table;
    expect_each_once(committed_values(bootstrap, topic, column, [](const Event&) {}), kRows, table);
    uncommitted += kafka_it::read_topic(bootstrap, topic).size();
  }
  EXPECT_GT(uncommitted, static_cast<std::size_t>(2 * kRows))
      << "no aborted record: the crashes missed the snapshot";
  // Each start said, as its snapshot began, that all of it is one transaction with a time limit.
  {
    std::ifstream in(dir / "cppcdc.log");
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(log.find("effectively_once: the MariaDB snapshot (2 tables: " + db + ".acct, " + db +
                       ".bag) has a resume position only after its last row, so all of it is "
                       "delivered in one Kafka transaction, which must commit within the sink's "
                       "transaction.timeout.ms (120000 ms)"),
              std::string::npos)
        << it::log_tail(dir / "cppcdc.log");
  }
  sql("DROP DATABASE IF EXISTS " + db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// One MariaDB transaction larger than spill_threshold_bytes is handed over in pieces of which
// only the last carries a resume position. Under effectively_once the runtime carries the
// pieces without a position in the open Kafka transaction until that last one: two starts die
// in the middle of the binlog transaction and a read_committed reader still sees each row once.
TEST(KafkaReplayOracle, EffectivelyOnceCrashesInASpilledMariaDbTransactionDeliverEachRowOnce) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const char* port = std::getenv("CPPCDC_TEST_MARIADB_PORT");
  if (port == nullptr || *port == '\0') {
    GTEST_SKIP() << "CPPCDC_TEST_MARIADB_PORT is not set: no MariaDB (scripts/test.sh starts one)";
  }
  const std::string source = kafka_it::unique_topic("mariatx");
  const std::string db = "kafka_bigtx_" + std::to_string(getpid());
  const auto sql = [&](const std::string& text) {
    const auto o = kafka_it::run_command("mariadb -h 127.0.0.1 -P " + std::string(port) +
                                         " -u root -N -e \"" + text + "\"");
    EXPECT_EQ(o.code, 0) << text;
    return o.output;
  };
  constexpr int kRows = 20000;
  sql("DROP DATABASE IF EXISTS " + db + "; CREATE DATABASE " + db + "; CREATE TABLE " + db +
      ".big (id int primary key, note varchar(40)); CREATE TABLE " + db +
      ".marker (id int primary key)");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A 1 MiB spill threshold: the 20,000 rows spill and come back in two pieces.
  std::ofstream(dir / "cdc.toml")
      << "delivery_contract = \"effectively_once\"\n\n[source]\ntype = \"mariadb\"\n"
      << "host = \"127.0.0.1\"\nport = " << port
      << "\nuser = \"root\"\nserver_id = " << 8000 + getpid() % 1000 << "\nsource_id = \"" << db
      << "\"\nsource_name = \"" << source << "\"\ntables = [\"" << db << ".big\", \"" << db
      << ".marker\"]\n"
      << "heartbeat_interval_ms = 200\nspill_threshold_bytes = 1048576\n"
      << "[source.snapshot]\nmode = \"never\"\n\n"
      << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
      << "create_topics = true\ntopic_partitions = 3\ntopic_replication_factor = 1\n"
      << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
      << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
      << ".checkpoints\"\n\n[runtime]\nmax_buffer_size = 500\n";
  pid_t child = -1;
  ChildGuard guard{child};
  // A first start reads from the server's position when it connects: streaming once a marker
  // row is committed to its topic. Then the large transaction is written while it is down.
  const std::string marker_topic = source + "." + db + ".marker";
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, marker_topic, 3));  // read before anything lands
  child = spawn_armed(dir, "");
  int probe = 0;
  ASSERT_TRUE(it::wait_until(
      [&] {
        sql("INSERT INTO " + db + ".marker VALUES (" + std::to_string(++probe) + ")");
        return !kafka_it::read_topic(bootstrap, marker_topic, "read_committed").empty();
      },
      120s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");
  sql("INSERT INTO " + db + ".big SELECT seq, concat('big row ', seq) FROM " + db + ".seq_1_to_" +
      std::to_string(kRows));
  ASSERT_FALSE(::testing::Test::HasFailure());

  for (const char* point : {"kafka_sink.after_flush@4", "kafka_sink.after_flush@25"}) {
    child = spawn_armed(dir, point);
    int status = 0;
    ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
        << it::log_tail(dir / "cppcdc.log");
    child = -1;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "cppcdc did not die at " << point << ": " << it::log_tail(dir / "cppcdc.log");
  }
  EXPECT_NE(it::log_tail(dir / "cppcdc.log").find("spilling it to a temporary file"),
            std::string::npos)
      << it::log_tail(dir / "cppcdc.log");
  child = spawn_armed(dir, "");
  const std::string big_topic = source + "." + db + ".big";
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::read_topic(bootstrap, big_topic, "read_committed").size() >= kRows; },
      180s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");
  expect_each_once(committed_values(bootstrap, big_topic, "id",
                                    [&](const Event& e) {
                                      ASSERT_TRUE(e.transaction);
                                      EXPECT_EQ(e.transaction->total_events,
                                                static_cast<std::uint64_t>(kRows));
                                    }),
                   kRows, "big");
  EXPECT_GT(kafka_it::read_topic(bootstrap, big_topic).size(), static_cast<std::size_t>(kRows))
      << "no aborted record: the crashes missed the transaction";
  sql("DROP DATABASE IF EXISTS " + db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The soak runs (scripts/soak.sh; skipped unless CPPCDC_SOAK is set): about 50,000 row changes,
// at least 20 SIGKILLs (and as many crashes at the crash points, with a transaction open or
// just committed), and two restarts of the broker, the run's own, during the load.
void soak(const std::string& shared, bool exactly_once) {
  if (std::getenv("CPPCDC_SOAK") == nullptr) {
    GTEST_SKIP() << "a soak run (minutes): scripts/soak.sh runs it (CPPCDC_SOAK=1)";
  }
  kafka_it::OwnBroker broker(shared, exactly_once ? 46 : 44);
  ASSERT_TRUE(broker.started) << "scripts/kafka.sh could not start a broker on port "
                              << broker.port;
  run_oracle(broker.bootstrap, OracleRun{.exactly_once = exactly_once,
                                         .seconds = 60,
                                         .min_changes = 50'000,
                                         .min_kills = 20,
                                         .broker_restarts = 2,
                                         .broker = &broker});
}

TEST(KafkaSoak, EffectivelyOnceFiftyThousandChangesTwentyKillsTwoBrokerRestarts) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  soak(bootstrap, true);
}

TEST(KafkaSoak, AtLeastOnceFiftyThousandChangesTwentyKillsTwoBrokerRestarts) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  soak(bootstrap, false);
}

}  // namespace
