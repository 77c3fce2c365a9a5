// `cppcdc run` with [[sinks]], [[pipeline.routes]], a fanout and [dead_letter], against a real
// PostgreSQL: tables reach the file sinks their routes name and the rest the default sink; a
// route that never matched is logged at stop; a transform error under "skip" ends in the
// dead-letter file; and SIGKILL at random moments loses nothing in any sink.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;

namespace {

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name)
      : path(fs::temp_directory_path() / ("cppcdc-it-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
};

std::string source_section(const std::string& db, const std::string& slot,
                           const std::vector<std::string>& tables) {
  std::string out = "[source]\ntype = \"postgres\"\ndsn = \"" + it::dsn_for(db) + "\"\n" +
                    "slot_name = \"" + slot + "\"\npublication_name = \"" + slot + "_pub\"\n" +
                    "tables = [";
  for (std::size_t i = 0; i < tables.size(); ++i) {
    out += (i ? ", \"public." : "\"public.") + tables[i] + "\"";
  }
  return out + "]\n[source.snapshot]\nmode = \"never\"\n";
}

std::multiset<std::string> tables_in(const fs::path& file) {
  std::multiset<std::string> out;
  for (const auto& e : it::read_sink(file.string())) out.insert(e.table);
  return out;
}

std::size_t lines_with(const fs::path& file, const std::string& needle) {
  std::ifstream in(file);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

// Kills a still-running child when a failed assertion leaves the test early.
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

TEST(CliRoutes, TablesReachTheSinksTheirRoutesNameAndTheRestTheDefaultSink) {
  const std::string db = it::test_database("routes");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table invoice (id int primary key, total numeric)");
  s.query("create table invoice_line (id int primary key, invoice int)");
  s.query("create table payment (id int primary key, amount numeric)");
  s.query("create table refund (id int primary key, amount numeric)");
  s.query("create table orders (id int primary key, note text)");
  Dir dir("routes");
  std::ofstream(dir.path / "cdc.toml")
      << source_section(db, "routes_slot",
                        {"invoice", "invoice_line", "payment", "refund", "orders"})
      << R"(
[sink]
type = "file"
path = "out/default.jsonl"

[[sinks]]
name = "billing"
type = "file"
path = "out/billing.jsonl"
batch_max_events = 2

[[sinks]]
name = "payments"
type = "file"
path = "out/payments.jsonl"
sink_flush_interval_events = 1

[[sinks]]
name = "money"
type = "fanout"
sinks = ["billing", "payments"]

[state.offset]
backend = "local_fs"
dir = "state"

[runtime]
max_poll_wait_ms = 100

[[pipeline.routes]]
tables = ["public.invoice*"]
sink = "billing"

[[pipeline.routes]]
tables = ["payment"]
sink = "payments"

[[pipeline.routes]]
tables = ["refund"]
sink = "money"

[[pipeline.routes]]
tables = ["public.invoices_archive"]
sink = "billing"
)";

  auto check = it::run_cli({"check-config", "--config", (dir.path / "cdc.toml").string()});
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_NE(check.output.find("    1. tables=public.invoice* -> \"billing\""), std::string::npos)
      << check.output;
  EXPECT_NE(check.output.find("sinks.money:        fanout to \"billing\", \"payments\""),
            std::string::npos)
      << check.output;

  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "routes_slot");
  s.query(
      "begin; insert into invoice values (1, 10); insert into orders values (1, 'a'); "
      "insert into invoice_line values (1, 1); insert into payment values (1, 10); "
      "insert into refund values (1, 3); insert into orders values (2, 'b'); commit");
  s.query("update invoice set total = 11 where id = 1");
  s.query("insert into orders values (99, 'sentinel')");
  const fs::path out = dir.path / "out";
  ASSERT_TRUE(wait_until([&] { return lines_with(out / "default.jsonl", "sentinel") == 1; }, 30s))
      << log_tail(dir.path / "cppcdc.log");
  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_tail(dir.path / "cppcdc.log");

  EXPECT_EQ(tables_in(out / "billing.jsonl"),
            (std::multiset<std::string>{"invoice", "invoice", "invoice_line", "refund"}));
  EXPECT_EQ(tables_in(out / "payments.jsonl"), (std::multiset<std::string>{"payment", "refund"}));
  EXPECT_EQ(tables_in(out / "default.jsonl"),
            (std::multiset<std::string>{"orders", "orders", "orders"}));
  // In source order within each sink.
  const auto billing = it::read_sink((out / "billing.jsonl").string());
  ASSERT_EQ(billing.size(), 4u);
  EXPECT_EQ(billing[0].table, "invoice");
  EXPECT_EQ(billing[1].table, "invoice_line");
  EXPECT_EQ(billing[2].table, "refund");
  EXPECT_EQ(billing[3].op, Operation::kUpdate);

  const std::string log = log_tail(dir.path / "cppcdc.log");
  EXPECT_NE(log.find("a route matched none of "), std::string::npos) << log;
  EXPECT_NE(log.find("events this run: route 4 (tables=public.invoices_archive) to \"billing\"; "
                     "if its globs are misspelt"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("went to the default sink \"default\""), std::string::npos) << log;
  EXPECT_EQ(log.find("route 1 ("), std::string::npos) << "route 1 matched: " << log;
  it::drop_slots(db);
  fs::remove_all(dir.path);
}

TEST(CliRoutes, ATransformErrorUnderSkipEndsDurablyInTheDeadLetterFile) {
  const std::string db = it::test_database("deadletter");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table card (id int primary key, token text)");
  Dir dir("deadletter");
  std::ofstream(dir.path / "cdc.toml") << source_section(db, "dl_slot", {"card"}) << R"(
[sink]
type = "file"
path = "events.jsonl"

[state.offset]
backend = "local_fs"
dir = "state"

[runtime]
max_poll_wait_ms = 100
transform_error_policy = "skip"

[dead_letter]
path = "dead/letters.jsonl"

[[pipeline.transforms]]
name = "detokenize"
  [[pipeline.transforms.actions]]
  type = "mask"
  rules = { "token" = { decrypt = { secret_env = "CPPCDC_IT_DETOKENIZE_KEY" } } }
)";
  ::setenv("CPPCDC_IT_DETOKENIZE_KEY", "it-key", 1);  // the child inherits it
  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "dl_slot");
  s.query("insert into card values (1, 'not a ciphertext')");
  s.query("insert into card values (2, null)");
  const fs::path letters = dir.path / "dead" / "letters.jsonl";
  ASSERT_TRUE(
      wait_until([&] { return lines_with(dir.path / "events.jsonl", "\"id\":\"2\"") == 1; }, 30s))
      << log_tail(dir.path / "cppcdc.log");
  // The batch holding row 1 was acknowledged (row 2 came after it), so its dead letter was
  // durable by then: read it while cppcdc still runs.
  std::ifstream in(letters);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << log_tail(dir.path / "cppcdc.log");
  const auto record = boost::json::parse(line).as_object();
  EXPECT_EQ(record.at("stage").as_string(), "detokenize");
  EXPECT_EQ(record.at("error_kind").as_string(), "invalid_data");
  EXPECT_NE(std::string(record.at("error").as_string().c_str()).find("enc:v1:"), std::string::npos)
      << line;
  auto event = Event::from_json(boost::json::serialize(record.at("event")));
  ASSERT_TRUE(event) << event.error().report();
  EXPECT_EQ(event->table, "card");
  EXPECT_EQ(*(*event->after)[1].text, "not a ciphertext");
  EXPECT_FALSE(std::getline(in, line)) << "one dead letter only";
  struct stat st {};
  ASSERT_EQ(::stat(letters.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_tail(dir.path / "cppcdc.log");
  EXPECT_EQ(tables_in(dir.path / "events.jsonl"), (std::multiset<std::string>{"card"}));
  const std::string log = log_tail(dir.path / "cppcdc.log");
  EXPECT_NE(log.find("transform_error_policy = skip: dropping the event"), std::string::npos)
      << log;
  EXPECT_NE(log.find("1 event was written to the dead-letter file"), std::string::npos) << log;
  it::drop_slots(db);
  fs::remove_all(dir.path);
}

// One routed sink keeps failing (a file on /dev/full: ENOSPC is transient, so the batch is
// retried in the process): the default sink and the dead-letter file must hold each event once,
// however many retry rounds the failing sink costs (fresh-user trial of issue 14: they grew by
// one copy per round).
TEST(CliRoutes, RetriesForOneFailingSinkAddNoCopiesToTheOthersOrTheDeadLetterFile) {
  const std::string db = it::test_database("retryonly");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table r1t (id int primary key, v text)");
  s.query("create table r2t (id int primary key, v text)");
  Dir dir("retryonly");
  std::ofstream(dir.path / "cdc.toml") << source_section(db, "ro_slot", {"r1t", "r2t"}) << R"(
[sink]
type = "file"
path = "default.jsonl"

[[sinks]]
name = "full"
type = "file"
path = "/dev/full"

[[pipeline.routes]]
tables = ["r2t"]
sink = "full"

[state.offset]
backend = "local_fs"
dir = "state"

[runtime]
max_poll_wait_ms = 100
transform_error_policy = "skip"
recoverable_error_backoff_initial_ms = 10
recoverable_error_backoff_max_ms = 50
recoverable_error_breaker_consecutive_threshold = 1000

[dead_letter]
path = "dead.jsonl"

[[pipeline.transforms]]
name = "detokenize"
  [pipeline.transforms.when]
  tables = ["r1t"]
  [[pipeline.transforms.actions]]
  type = "mask"
  rules = { "v" = { decrypt = { secret_env = "CPPCDC_IT_DETOKENIZE_KEY" } } }
)";
  ::setenv("CPPCDC_IT_DETOKENIZE_KEY", "it-key", 1);
  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "ro_slot");
  // One transaction: r1t row 1 fails the decrypt (dead letter), row 2 is NULL (passes), r2t
  // row 3 goes to the failing sink.
  s.query("begin; insert into r1t values (1, 'plain'), (2, null); "
          "insert into r2t values (3, 'x'); commit");
  const fs::path log = dir.path / "cppcdc.log";
  ASSERT_TRUE(wait_until([&] { return lines_with(log, "delivering the same batch again") >= 5; },
                         60s))
      << log_tail(log);
  EXPECT_EQ(lines_with(dir.path / "default.jsonl", "\"table\":\"r1t\""), 1u)
      << "the healthy sink got the batch once per retry round";
  EXPECT_EQ(lines_with(dir.path / "dead.jsonl", "\"stage\":\"detokenize\""), 1u)
      << "the dead-letter file got the failed event once per retry round";
  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status)) << log_tail(log);
  it::drop_slots(db);
  fs::remove_all(dir.path);
}

// SIGKILL at random moments (some at crash points between write and acknowledgement) while
// three tables are routed to two file sinks and a fanout over both: after the last restart,
// replaying each sink gives exactly the source rows of the tables routed to it.
TEST(CliRoutes, SigkillMidStreamLosesNothingInAnySink) {
  const std::string db = it::test_database("routekill");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query(R"(
    create table acct (id int primary key, balance bigint not null, note text);
    create table item (id bigint primary key, name text, qty int);
    create table ledger (id int primary key, amount int);
    create table marker (id int primary key);
  )");
  Dir dir("routekill");
  std::ofstream(dir.path / "cdc.toml")
      << source_section(db, "rk_slot", {"acct", "item", "ledger", "marker"}) << R"(
[sink]
type = "file"
path = "default.jsonl"

[[sinks]]
name = "accounts"
type = "file"
path = "accounts.jsonl"
batch_max_events = 7

[[sinks]]
name = "items"
type = "file"
path = "items.jsonl"
sink_flush_interval_events = 13
batch_max_delay_ms = 20

[[sinks]]
name = "both"
type = "fanout"
sinks = ["accounts", "items"]

[[pipeline.routes]]
tables = ["acct"]
sink = "accounts"

[[pipeline.routes]]
tables = ["item"]
sink = "items"

[[pipeline.routes]]
tables = ["ledger"]
sink = "both"

[state.offset]
backend = "local_fs"
dir = "state"

[runtime]
max_buffer_size = 200
max_poll_wait_ms = 100
connection_retry_max_retries = 100
connection_retry_initial_delay_ms = 50
connection_retry_max_delay_ms = 500
)";
  pid_t child = -1;
  ChildGuard guard{child};
  it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "rk_slot");

  constexpr int kRowTarget = 30'000;
  std::atomic<bool> done{false};
  std::thread workload([&] {
    it::PgSession w(it::dsn_for(db));
    std::mt19937 rng(2024);
    std::vector<int> accts, items, ledgers;
    int next = 1;
    int rows = 0;
    while (rows < kRowTarget) {
      std::string sql = "begin;";
      const int statements = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < statements; ++i, ++rows) {
        const int pick = static_cast<int>(rng() % 100);
        const int id = next++;
        if (pick < 30 || accts.size() < 5) {
          accts.push_back(id);
          sql += "insert into acct values (" + std::to_string(id) + ", " +
                 std::to_string(rng() % 1000) + ", 'n" + std::to_string(id) + "');";
        } else if (pick < 50 || items.size() < 5) {
          items.push_back(id);
          sql += "insert into item values (" + std::to_string(id) + ", 'it''em', 1);";
        } else if (pick < 65) {
          ledgers.push_back(id);
          sql += "insert into ledger values (" + std::to_string(id) + ", " +
                 std::to_string(rng() % 100) + ");";
        } else if (pick < 80) {
          sql += "update acct set balance = balance + 1, note = 'u" + std::to_string(id) +
                 "' where id = " + std::to_string(accts[rng() % accts.size()]) + ";";
        } else if (pick < 88) {
          sql += "update item set qty = qty + 1 where id = " +
                 std::to_string(items[rng() % items.size()]) + ";";
        } else if (pick < 94 && !ledgers.empty()) {
          const std::size_t at = rng() % ledgers.size();
          sql += "delete from ledger where id = " + std::to_string(ledgers[at]) + ";";
          ledgers.erase(ledgers.begin() + static_cast<long>(at));
        } else {
          const std::size_t at = rng() % accts.size();
          sql += "delete from acct where id = " + std::to_string(accts[at]) + ";";
          accts.erase(accts.begin() + static_cast<long>(at));
        }
      }
      w.query(sql + "commit;");
      // Pacing, not waiting: a steady load for the kills to land in.
      std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
    done = true;
  });

  static const char* const kFaults[] = {"runtime.before_ack", "file_sink.mid_write", nullptr};
  std::mt19937 rng(99);
  int kills = 0;
  int kills_under_load = 0;
  while (!done.load() || kills < 8) {
    // A random moment on purpose: the kill lands wherever the pipeline happens to be.
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 900));
    it::stop_cppcdc_process(child, SIGKILL);
    ++kills;
    kills_under_load += done.load() ? 0 : 1;
    const char* fault = done.load() ? nullptr : kFaults[kills % 3];
    if (fault != nullptr) ::setenv("CPPCDC_FAULT_POINT", fault, 1);
    it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "rk_slot", 0);
    ::unsetenv("CPPCDC_FAULT_POINT");
    if (fault != nullptr) {
      // Let it reach its crash point (it kills itself there) or run on: either way it is
      // killed or replaced on the next round.
      int status = 0;
      if (wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 3s)) child = -1;
    }
  }
  workload.join();
  it::stop_cppcdc_process(child, SIGKILL);
  it::start_cppcdc_process(child, dir.path, it::admin_dsn(), "rk_slot");
  s.query("insert into marker values (1)");
  ASSERT_TRUE(
      wait_until([&] { return lines_with(dir.path / "default.jsonl", "marker") >= 1; }, 180s))
      << log_tail(dir.path / "cppcdc.log");
  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log_tail(dir.path / "cppcdc.log");

  const std::map<std::string, std::vector<std::string>> routed = {
      {"accounts.jsonl", {"acct", "ledger"}}, {"items.jsonl", {"item", "ledger"}}};
  for (const auto& [file, tables] : routed) {
    it::Replay replay;
    std::size_t events = 0;
    for (const auto& e : it::read_sink((dir.path / file).string())) {
      ++events;
      EXPECT_NE(std::find(tables.begin(), tables.end(), e.table), tables.end())
          << file << " holds an event of " << e.table;
      replay.apply(e);
    }
    EXPECT_TRUE(replay.problems.empty()) << file << ": " << replay.problems.front();
    for (const auto& table : tables) {
      const auto source = it::source_rows(s, table, {"id"});
      EXPECT_FALSE(source.empty()) << table;
      EXPECT_EQ(it::diff_tables(replay.tables["public." + table], source), "")
          << file << " / " << table;
    }
    std::cout << file << ": " << events << " events" << std::endl;
  }
  EXPECT_EQ(tables_in(dir.path / "default.jsonl"), (std::multiset<std::string>{"marker"}));
  EXPECT_GE(kills_under_load, 5) << "the workload ended before most kills";
  std::cout << kills << " kills, " << kills_under_load << " while the workload ran" << std::endl;
  it::drop_slots(db);
  fs::remove_all(dir.path);
}
