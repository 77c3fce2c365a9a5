// `cppcdc snapshot ...` against the real binary: a running `cppcdc run` takes request, pause,
// resume, stop and status on its control socket; `snapshot forget` edits the checkpoint while
// cppcdc is stopped and refuses while it runs; without a running cppcdc the commands say so.

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/incremental_snapshot.hpp"
#include "pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::CliOutcome;
using cppcdc::it::run_cli;
using namespace std::chrono_literals;

namespace {

class CliSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("clisnap");
    it::fresh_database(db_);
    dir_ = fs::temp_directory_path() /
           ("cppcdc-it-snap-" + std::to_string(getpid()) + "-" + std::to_string(++counter_));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    it::stop_cppcdc_process(child_, SIGKILL);
    it::drop_slots(db_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Captures `tables`, streams only (mode never unless told), writes events to
  // <dir>/events.jsonl.
  void write_config(const std::string& tables, int chunk_size,
                    const std::string& mode = "never") {
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ndsn = \"" << it::dsn_for(db_) << "\"\nslot_name = \"" << db_
        << "\"\npublication_name = \"" << db_ << "_pub\"\ntables = [" << tables << "]\n"
        << "[source.snapshot]\nmode = \"" << mode << "\"\nchunk_size = " << chunk_size << "\n"
        << "[sink]\ntype = \"file\"\npath = \"events.jsonl\"\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n"
        << "[runtime]\nmax_poll_wait_ms = 100\n";
  }
  std::string config() const { return (dir_ / "cdc.toml").string(); }
  fs::path socket() const { return dir_ / "state" / "cdc.sock"; }
  fs::path checkpoint_file() const { return dir_ / "state" / ("checkpoint-" + db_ + ".ckpt"); }

  void start() { it::start_cppcdc_process(child_, dir_, it::admin_dsn(), db_); }

  // `cppcdc snapshot <args...> --config <file>`.
  CliOutcome snapshot(std::vector<std::string> args) {
    args.insert(args.begin(), "snapshot");
    args.push_back("--config");
    args.push_back(config());
    return run_cli(args);
  }

  // The raw state `snapshot status --json` prints (an empty object when it fails).
  boost::json::object status_json() {
    auto o = snapshot({"status", "--json"});
    EXPECT_EQ(o.code, 0) << o.output;
    boost::system::error_code ec;
    auto v = boost::json::parse(o.output, ec);
    if (ec || !v.is_object()) {
      ADD_FAILURE() << "not a JSON object: " << o.output;
      return {};
    }
    const auto* incremental = v.as_object().if_contains("incremental_snapshot");
    if (incremental == nullptr || !incremental->is_object()) {
      ADD_FAILURE() << "no incremental_snapshot object: " << o.output;
      return {};
    }
    return incremental->as_object();
  }
  std::string status() {
    auto s = status_json();
    return s.contains("status") ? std::string(s.at("status").as_string()) : "";
  }

  // Distinct primary keys of op "read" events of `table` in the sink file.
  std::set<std::string> read_keys(const std::string& table) {
    std::set<std::string> keys;
    for_each_event(table, [&](const boost::json::object& e) {
      if (e.at("op").as_string() == "read") {
        keys.insert(boost::json::serialize(e.at("after").at("id")));
      }
    });
    return keys;
  }

  // The ops of the events of `table` in the sink file whose new row has id `id`.
  std::multiset<std::string> ops_of(const std::string& table, const std::string& id) {
    std::multiset<std::string> ops;
    for_each_event(table, [&](const boost::json::object& e) {
      const auto* after = e.if_contains("after");
      const auto* value =
          after && after->is_object() ? after->as_object().if_contains("id") : nullptr;
      if (value && value->is_string() && value->as_string() == id) {
        ops.insert(std::string(e.at("op").as_string()));
      }
    });
    return ops;
  }

  // Calls `f` with every complete event of `table` in the sink file, in order.
  void for_each_event(const std::string& table,
                      const std::function<void(const boost::json::object&)>& f) {
    std::ifstream in(dir_ / "events.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      boost::system::error_code ec;
      auto v = boost::json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const auto& e = v.as_object();
      if (e.at("table").as_string() == table) f(e);
    }
  }

  // The incremental snapshot state saved in the checkpoint file (nullopt when there is none).
  std::optional<std::pair<CheckpointRecord, IncrementalSnapshotState>> saved() const {
    std::ifstream in(checkpoint_file(), std::ios::binary);
    if (!in) return std::nullopt;
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    auto record = FileCheckpoint::decode(bytes, checkpoint_file().string());
    if (!record || record->source_state.empty()) return std::nullopt;
    boost::system::error_code ec;
    auto v = boost::json::parse(record->source_state, ec);
    if (ec || !v.is_object() || !v.as_object().contains("incremental")) return std::nullopt;
    auto state = IncrementalSnapshotState::from_json(boost::json::serialize(v.at("incremental")));
    if (!state) return std::nullopt;
    return std::pair{*record, *state};
  }

  static std::vector<std::string> names(const IncrementalSnapshotState& s) {
    std::vector<std::string> out;
    for (const auto& t : s.tables) out.push_back(t.table);
    return out;
  }

  std::string db_;
  fs::path dir_;
  pid_t child_ = -1;
  static inline int counter_ = 0;
};

}  // namespace

// `snapshot status` reports the initial (blocking) snapshot: complete with its row count once
// read, and, after a restart that resumes from the checkpoint, that none runs in this process.
TEST_F(CliSnapshot, StatusReportsTheInitialSnapshot) {
  it::PgSession s(it::dsn_for(db_));
  s.query("create table orders (id int primary key, note text)");
  s.query("create table customers (id int primary key)");
  s.query("insert into orders select g, 'n' || g from generate_series(1, 1500) g");
  s.query("insert into customers select g from generate_series(1, 20) g");
  s.query("analyze orders");
  write_config("\"public.orders\", \"public.customers\"", 100, "initial");
  start();
  boost::json::object initial;
  const bool complete = it::wait_until(
      [&] {
        auto o = snapshot({"status", "--json"});
        if (o.code != 0) return false;
        boost::system::error_code ec;
        auto v = boost::json::parse(o.output, ec);
        if (ec || !v.is_object() || !v.as_object().at("initial_snapshot").is_object()) {
          return false;
        }
        EXPECT_TRUE(v.as_object().at("incremental_snapshot").is_object()) << o.output;
        initial = v.as_object().at("initial_snapshot").as_object();
        return initial.at("phase").as_string() == "complete";
      },
      60s);
  ASSERT_TRUE(complete) << boost::json::serialize(initial);
  EXPECT_EQ(initial.at("rows_read").as_int64(), 1520) << boost::json::serialize(initial);
  EXPECT_EQ(initial.at("mode").as_string(), "initial");
  const auto& tables = initial.at("tables").as_array();
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].at("table").as_string(), "public.orders");  // in the configured order
  EXPECT_EQ(tables[0].at("rows_read").as_int64(), 1500);
  EXPECT_EQ(tables[0].at("estimated_rows").to_number<double>(), 1500.0);  // analysed
  EXPECT_EQ(tables[1].at("table").as_string(), "public.customers");
  EXPECT_EQ(tables[1].at("rows_read").as_int64(), 20);
  auto o = snapshot({"status"});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find(": complete: 1520 rows from 2 tables read in "), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("; streaming changes since"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("public.orders     1500       1500       yes"), std::string::npos)
      << o.output;
  // The incremental part still prints after it.
  EXPECT_NE(o.output.find("incremental snapshot"), std::string::npos) << o.output;
  ASSERT_TRUE(it::wait_until([&] { return read_keys("orders").size() == 1500; }, 60s));

  // A restart resumes from the checkpoint: no snapshot runs, and status says why.
  it::stop_cppcdc_process(child_, SIGTERM);
  start();
  ASSERT_TRUE(it::wait_until([&] { return snapshot({"status"}).code == 0; }, 30s));
  o = snapshot({"status"});
  EXPECT_NE(o.output.find("initial snapshot: none in this run (snapshot mode initial): the "
                          "checkpoint it resumed from holds no snapshot in progress"),
            std::string::npos)
      << o.output;
}

TEST_F(CliSnapshot, RequestReadsEveryRowAndStatusReportsComplete) {
  it::PgSession s(it::dsn_for(db_));
  s.query("create table orders (id int primary key, note text)");
  s.query("insert into orders select g, 'n' || g from generate_series(1, 2500) g");
  s.query("create table secret (id int primary key)");
  write_config("\"public.orders\"", 1000);
  start();

  EXPECT_EQ(status(), "idle");
  auto o = snapshot({"request", "public.orders"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("requested public.orders"), std::string::npos) << o.output;

  EXPECT_TRUE(it::wait_until([&] { return read_keys("orders").size() == 2500; }, 60s))
      << read_keys("orders").size() << " rows read\n"
      << it::log_tail(dir_ / "cppcdc.log");
  EXPECT_TRUE(it::wait_until([&] { return status() == "complete"; }, 30s));
  auto state = status_json();
  ASSERT_EQ(state.at("tables").as_array().size(), 1u);
  const auto& table = state.at("tables").as_array()[0].as_object();
  EXPECT_EQ(table.at("table").as_string(), "public.orders");
  EXPECT_EQ(table.at("rows").as_int64(), 2500);
  EXPECT_EQ(table.at("chunks").as_int64(), 3);
  EXPECT_TRUE(table.at("complete").as_bool());

  o = snapshot({"status"});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find(": complete (generation 1)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("public.orders"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("2500"), std::string::npos) << o.output;

  // A table outside [source] tables: the server's reason, a distinct exit code.
  o = snapshot({"request", "public.secret"});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("table public.secret is not captured"), std::string::npos) << o.output;

  // A second cppcdc on the same configuration stops before touching anything.
  o = run_cli({"run", "--config", config()}, 30);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("another cppcdc (pid " + std::to_string(child_)), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find(socket().string()), std::string::npos) << o.output;
  EXPECT_TRUE(fs::is_socket(socket()));
  EXPECT_EQ(status(), "complete");  // the first one still answers

  const int wstatus = it::stop_cppcdc_process(child_, SIGTERM);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << it::log_tail(dir_ / "cppcdc.log");
  EXPECT_FALSE(fs::exists(socket()));
  o = snapshot({"status"});
  EXPECT_EQ(o.code, 4) << o.output;
}

TEST_F(CliSnapshot, PauseResumeAndStopChangeTheStatus) {
  it::PgSession s(it::dsn_for(db_));
  s.query("create table orders (id int primary key)");
  s.query("insert into orders select generate_series(1, 20000)");
  write_config("\"public.orders\"", 10);
  start();

  // Nothing runs yet: nothing to pause or stop.
  auto o = snapshot({"pause"});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("nothing to pause"), std::string::npos) << o.output;

  ASSERT_EQ(snapshot({"request", "orders"}).code, 0);  // "public." is implied
  o = snapshot({"pause"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("paused"), std::string::npos) << o.output;
  auto state = status_json();
  EXPECT_EQ(state.at("status").as_string(), "paused");
  EXPECT_TRUE(state.at("paused").as_bool());
  const auto rows_at_pause = state.at("tables").as_array()[0].at("rows").as_int64();
  EXPECT_LT(rows_at_pause, 20000);
  // Paused: at most the chunk in progress is still handed out. A row inserted now reaching the
  // sink shows the pipeline went on polling after the pause.
  s.query("insert into orders values (0)");
  EXPECT_TRUE(it::wait_until([&] { return ops_of("orders", "0").count("insert") == 1; }, 30s));
  EXPECT_LE(status_json().at("tables").as_array()[0].at("rows").as_int64(), rows_at_pause + 10);
  o = snapshot({"status"});
  EXPECT_NE(o.output.find("paused: no new chunk starts"), std::string::npos) << o.output;

  o = snapshot({"resume"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(status(), "running");
  EXPECT_TRUE(it::wait_until(
      [&] {
        return status_json().at("tables").as_array()[0].at("rows").as_int64() > rows_at_pause + 10;
      },
      30s));

  o = snapshot({"stop"});
  ASSERT_EQ(o.code, 0) << o.output;
  state = status_json();
  EXPECT_EQ(state.at("status").as_string(), "stopped");
  EXPECT_TRUE(state.at("tables").as_array().empty());
  EXPECT_EQ(state.at("generation").as_int64(), 2);
  o = snapshot({"stop"});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("nothing to stop"), std::string::npos) << o.output;
  EXPECT_LT(read_keys("orders").size(), 20000u);
}

TEST_F(CliSnapshot, WithoutARunningCppcdcTheCommandsSaySo) {
  write_config("\"public.orders\"", 10);
  const std::vector<std::vector<std::string>> commands = {
      {"status"}, {"status", "--json"}, {"request", "public.orders"},
      {"pause"},  {"resume"},           {"stop"}};
  for (const auto& args : commands) {
    auto o = snapshot(args);
    EXPECT_EQ(o.code, 4) << args[0] << ": " << o.output;
    EXPECT_NE(o.output.find("is `cppcdc run --config " + config() + "` running?"),
              std::string::npos)
        << o.output;
    EXPECT_NE(o.output.find(socket().string()), std::string::npos) << o.output;
  }
  // A bad configuration is a configuration error, as for `run`.
  auto o = run_cli({"snapshot", "status", "--config", (dir_ / "nope.toml").string()});
  EXPECT_EQ(o.code, 2) << o.output;
  o = run_cli({"snapshot", "forget", "--config", config()});
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--all"), std::string::npos) << o.output;
}

TEST_F(CliSnapshot, ForgetEditsTheSavedCheckpointOnlyWhileCppcdcIsStopped) {
  it::PgSession s(it::dsn_for(db_));
  s.query("create table orders (id int primary key)");
  s.query("create table customers (id int primary key)");
  s.query("create table ticks (id serial primary key)");
  s.query("insert into orders select generate_series(1, 20000)");
  s.query("insert into customers select generate_series(1, 20000)");
  write_config("\"public.orders\", \"public.customers\", \"public.ticks\"", 10);
  start();

  ASSERT_EQ(snapshot({"request", "public.orders", "public.customers"}).code, 0);
  ASSERT_EQ(snapshot({"pause"}).code, 0);
  // Stream events give the checkpoint a position to save the snapshot's state with.
  EXPECT_TRUE(it::wait_until(
      [&] {
        s.query("insert into ticks default values");
        auto saved_state = saved();
        return saved_state && saved_state->second.paused && saved_state->second.tables.size() == 2;
      },
      30s))
      << it::log_tail(dir_ / "cppcdc.log");

  auto o = snapshot({"forget", "public.orders"});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("cppcdc is running"), std::string::npos) << o.output;
  EXPECT_EQ(saved()->second.tables.size(), 2u);  // untouched

  const int wstatus = it::stop_cppcdc_process(child_, SIGTERM);
  ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << it::log_tail(dir_ / "cppcdc.log");
  const auto before = saved();
  ASSERT_TRUE(before);
  EXPECT_EQ(names(before->second), (std::vector<std::string>{"public.orders", "public.customers"}));
  const std::uint64_t generation = before->second.generation;

  o = snapshot({"forget", "public.orders"});
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("forgot public.orders"), std::string::npos) << o.output;
  auto after = saved();
  ASSERT_TRUE(after);
  EXPECT_EQ(names(after->second), std::vector<std::string>{"public.customers"});
  EXPECT_EQ(after->second.generation, generation + 1);
  EXPECT_EQ(after->first.offset, before->first.offset);
  EXPECT_EQ(after->first.committed_events, before->first.committed_events);

  o = snapshot({"forget", "public.orders"});
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("has no table public.orders"), std::string::npos) << o.output;

  o = snapshot({"forget", "--all"});
  ASSERT_EQ(o.code, 0) << o.output;
  after = saved();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->second.tables.empty());
  EXPECT_EQ(after->second.generation, generation + 2);

  // cppcdc starts from the edited checkpoint, and a new request counts on from there.
  start();
  auto state = status_json();
  EXPECT_EQ(state.at("status").as_string(), "idle");
  EXPECT_EQ(state.at("generation").as_int64(), static_cast<std::int64_t>(generation + 2));
  ASSERT_EQ(snapshot({"request", "public.customers"}).code, 0);
  EXPECT_EQ(status_json().at("generation").as_int64(), static_cast<std::int64_t>(generation + 3));
}

// A primary key changed since the saved cursor: `cppcdc run` refuses to start and names the
// remedy with this very config file; after `snapshot forget` it starts again.
TEST_F(CliSnapshot, AChangedPrimaryKeyRefusesTheStartAndNamesForgetWithTheConfig) {
  it::PgSession s(it::dsn_for(db_));
  s.query("create table t (id int primary key, v text not null)");
  s.query("insert into t select g, 'v' || g from generate_series(1, 50000) g");
  write_config("\"public.t\"", 100);
  start();
  auto req = snapshot({"request", "public.t"});
  ASSERT_EQ(req.code, 0) << req.output;
  ASSERT_EQ(snapshot({"pause"}).code, 0);
  ASSERT_TRUE(it::wait_until(
      [&] {
        auto st = saved();
        return st && !st->second.tables.empty() && st->second.tables[0].cursor &&
               !st->second.tables[0].complete;
      },
      30s));
  it::stop_cppcdc_process(child_, SIGTERM);
  s.query("alter table t drop constraint t_pkey, add primary key (id, v)");
  const auto refused = run_cli({"run", "--config", config()}, 60);
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.output.find("primary key of public.t changed"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("snapshot forget --config " + config() + " public.t"),
            std::string::npos)
      << refused.output;
  ASSERT_EQ(snapshot({"forget", "public.t"}).code, 0);
  start();
  EXPECT_EQ(status(), "idle");
}
