// Crash safety of `cppcdc run`: SIGKILL at random moments during a mixed workload, restart
// each time, then prove with the replay oracle that the sink holds exactly the source's rows
// and that every duplicate was in flight (written, not yet acknowledged) at a kill.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "cppcdc/checkpoint.hpp"
#include "replay.hpp"

using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kMaxBatch = 400;
constexpr int kRowTarget = 50'000;
constexpr int kMinKills = 20;

struct Work {
  fs::path dir;
  fs::path config;
  fs::path sink;
  fs::path state;
  fs::path log;
};

Work make_work(const std::string& db, const std::string& name) {
  Work w;
  w.dir = fs::temp_directory_path() / ("cppcdc-it-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(w.dir);
  fs::create_directories(w.dir);
  w.config = w.dir / "cdc.toml";
  w.sink = w.dir / "events.jsonl";
  w.state = w.dir / "state";
  w.log = w.dir / "cppcdc.log";
  std::ofstream(w.config) << "[source]\n"
                          << "type = \"postgres\"\n"
                          << "dsn = \"" << it::dsn_for(db) << "\"\n"
                          << "slot_name = \"" << name << "_slot\"\n"
                          << "publication_name = \"" << name << "_pub\"\n"
                          << "tables = [\"public.acct\", \"public.item\", \"public.marker\"]\n"
                          << "\n[sink]\ntype = \"file\"\npath = \"" << w.sink.string() << "\"\n"
                          << "\n[state.offset]\nbackend = \"local_fs\"\ndir = \""
                          << w.state.string() << "\"\n"
                          << "\n[runtime]\nmax_buffer_size = " << kMaxBatch << "\n"
                          << "max_poll_wait_ms = 100\n"
                          << "connection_retry_max_retries = 100\n"
                          << "connection_retry_initial_delay_ms = 50\n"
                          << "connection_retry_max_delay_ms = 500\n";
  return w;
}

pid_t spawn(const Work& w, const char* fault_point = nullptr) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (fault_point != nullptr) setenv("CPPCDC_FAULT_POINT", fault_point, 1);
    const int out = open(w.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(out, 2);
    execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", w.config.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::size_t complete_lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::size_t n = 0;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    n += static_cast<std::size_t>(std::count(buf, buf + in.gcount(), '\n'));
  }
  return n;
}

// Kills a still-running child when a failed assertion leaves the test early, so no orphaned
// cppcdc keeps streaming into later tests.
struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

std::string identity(const Event& e) {
  return e.source.offset + "/" + std::to_string(e.transaction ? e.transaction->tx_id : 0) + "/" +
         std::to_string(e.transaction ? e.transaction->event_index : 0);
}

// Mixed inserts, updates, deletes and multi-row transactions, paced to last several seconds.
void run_workload(const std::string& db, std::atomic<bool>& done, std::atomic<int>& rows) {
  it::PgSession s(it::dsn_for(db));
  std::mt19937 rng(12345);
  std::vector<int> acct_ids, item_ids;
  int next_acct = 1, next_item = 1;
  while (rows.load() < kRowTarget) {
    std::string sql = "begin;";
    const int statements = 1 + static_cast<int>(rng() % 25);
    for (int i = 0; i < statements; ++i) {
      const int pick = static_cast<int>(rng() % 100);
      if (pick < 40 || acct_ids.size() < 20) {
        const int id = next_acct++;
        acct_ids.push_back(id);
        sql += "insert into acct values (" + std::to_string(id) + ", " +
               std::to_string(rng() % 100000) + ", 'n" + std::to_string(rng()) + "');";
        rows++;
      } else if (pick < 55) {
        const int id = next_item++;
        item_ids.push_back(id);
        sql += "insert into item values (" + std::to_string(id) + ", 'it''em " +
               std::to_string(id) + "', " + std::to_string(rng() % 50) + ", '{a,\"b c\",NULL}');";
        rows++;
      } else if (pick < 80) {
        const int id = acct_ids[rng() % acct_ids.size()];
        sql += "update acct set balance = balance + " + std::to_string(rng() % 100) +
               ", note = 'u" + std::to_string(rng()) + "' where id = " + std::to_string(id) + ";";
        rows++;
      } else if (pick < 88 && !item_ids.empty()) {
        const int from = item_ids[rng() % item_ids.size()];
        sql += "update item set qty = qty + 1 where id between " + std::to_string(from) +
               " and " + std::to_string(from + 10) + ";";
        rows += 5;
      } else if (pick < 96) {
        const std::size_t at = rng() % acct_ids.size();
        sql += "delete from acct where id = " + std::to_string(acct_ids[at]) + ";";
        acct_ids.erase(acct_ids.begin() + static_cast<long>(at));
        rows++;
      } else if (!item_ids.empty()) {
        const std::size_t at = rng() % item_ids.size();
        sql += "delete from item where id = " + std::to_string(item_ids[at]) + ";";
        item_ids.erase(item_ids.begin() + static_cast<long>(at));
        rows++;
      }
    }
    sql += "commit;";
    s.query(sql);
    // Pacing, not waiting: a steady load that the kills land in.
    std::this_thread::sleep_for(std::chrono::microseconds(1500));
  }
  done = true;
}

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("crash");
    it::fresh_database(db_);
    it::PgSession s(it::dsn_for(db_));
    s.query(R"(
      create table acct (id int primary key, balance bigint not null, note text);
      create table item (id bigint primary key, name text, qty int, tags text[]);
      create table marker (id int primary key);
    )");
  }
  void TearDown() override { it::drop_slots(db_); }
  std::string db_;
};

}  // namespace

TEST_F(CrashTest, SigkillAtRandomMomentsLosesNothingAndDuplicatesOnlyInFlightBatches) {
  Work w = make_work(db_, "crash");
  it::PgSession s(it::dsn_for(db_));
  pid_t child = spawn(w);
  ChildGuard guard{child};
  // Wait until a walsender streams from the slot; before that its creation may still be
  // waiting for a consistent point, and changes committed meanwhile are not in its stream.
  ASSERT_TRUE(wait_until([&] {
    return s.scalar(it::streaming_sql("crash_slot")) == "1";
  }, 30s)) << log_tail(w.log);

  std::atomic<bool> done{false};
  std::atomic<int> rows{0};
  std::thread workload(run_workload, db_, std::ref(done), std::ref(rows));

  struct Kill {
    std::size_t lines;      // complete lines in the sink at the kill
    std::uint64_t acked;    // events acknowledged per the checkpoint at the kill
  };
  std::vector<Kill> kills;
  std::mt19937 rng(777);
  // Most kills come at random moments. Every third run also arms a crash point, so that some
  // kills certainly land with a batch written but not acknowledged, or with a torn line.
  static const char* const kFaults[] = {"runtime.before_ack", "file_sink.mid_write",
                                        "runtime.after_checkpoint"};
  bool armed = false;
  while (!done.load() || static_cast<int>(kills.size()) < kMinKills) {
    if (armed) {
      // Give the armed process time to reach its crash point on its own (else it is killed
      // below like the others).
      int status = 0;
      if (wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 2s)) {
        child = -1;
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << log_tail(w.log);
      }
    } else {
      // A random moment on purpose: the kill lands wherever the pipeline happens to be.
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 500));
    }
    if (child > 0) {
      kill(child, SIGKILL);
      ASSERT_EQ(wait_exit(child), 128 + SIGKILL) << log_tail(w.log);
    }
    auto ckpt = FileCheckpoint::open(w.state, "crash_slot");
    ASSERT_TRUE(ckpt);
    auto record = (*ckpt)->load();
    ASSERT_TRUE(record) << record.error().report();
    kills.push_back({complete_lines(w.sink), *record ? (*record)->committed_events : 0});
    ckpt->reset();  // its writer lock would refuse the next cppcdc
    armed = kills.size() % 3 == 0;
    child = spawn(w, armed ? kFaults[(kills.size() / 3) % 3] : nullptr);
  }
  workload.join();
  if (armed) {
    // The last run must not die at a crash point while catching up: replace it.
    kill(child, SIGKILL);
    wait_exit(child);
    auto ckpt = FileCheckpoint::open(w.state, "crash_slot");
    ASSERT_TRUE(ckpt);
    auto record = (*ckpt)->load();
    ASSERT_TRUE(record) << record.error().report();
    kills.push_back({complete_lines(w.sink), *record ? (*record)->committed_events : 0});
    ckpt->reset();  // its writer lock would refuse the next cppcdc
    child = spawn(w);
  }
  s.query("insert into marker values (1)");
  const bool caught_up = wait_until([&] {
    std::ifstream in(w.sink);
    std::string line;
    std::string last;
    while (std::getline(in, line)) last = line;
    return last.find("\"table\":\"marker\"") != std::string::npos;
  }, 120s);
  kill(child, SIGTERM);
  const int code = wait_exit(child);
  child = -1;
  ASSERT_TRUE(caught_up) << log_tail(w.log);
  EXPECT_EQ(code, 0) << log_tail(w.log);
  EXPECT_GE(static_cast<int>(kills.size()), kMinKills);
  EXPECT_GE(rows.load(), kRowTarget);

  const auto events = it::read_sink(w.sink);
  ASSERT_FALSE(events.empty());

  // Lines that were written but never acknowledged stay in the file; the acknowledged count
  // covers their redelivered copies instead. So the lines unacknowledged at kill k are the
  // growth of (lines - acked) since the previous kill, and they are the last lines before the
  // kill: [lines_k - window_k, lines_k). Each such window is at most one batch, and every
  // duplicate's previous copy lies in the window of a kill that happened before it.
  struct Window {
    std::size_t begin, end;
  };
  std::vector<Window> windows;
  std::size_t unacked_before = 0;
  for (const auto& k : kills) {
    ASSERT_LE(k.acked, k.lines);
    const std::size_t unacked = k.lines - k.acked;
    ASSERT_GE(unacked, unacked_before) << "acknowledged lines disappeared";
    const std::size_t window = unacked - unacked_before;
    unacked_before = unacked;
    EXPECT_LE(window, static_cast<std::size_t>(kMaxBatch));
    windows.push_back({k.lines - window, k.lines});
  }
  std::unordered_map<std::string, std::size_t> last_seen;
  std::size_t duplicates = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string id = identity(events[i]);
    auto it = last_seen.find(id);
    if (it != last_seen.end()) {
      ++duplicates;
      const std::size_t j = it->second;
      bool explained = false;
      for (const auto& win : windows) {
        if (win.begin <= j && j < win.end && win.end <= i) explained = true;
      }
      EXPECT_TRUE(explained) << "line " << i + 1 << " repeats line " << j + 1 << " (" << id
                             << "), which was not in flight at any kill";
    }
    last_seen[id] = i;
  }
  std::size_t window_total = 0;
  for (const auto& win : windows) window_total += win.end - win.begin;
  EXPECT_LE(duplicates, window_total);

  it::Replay replay;
  for (const auto& e : events) replay.apply(e);
  for (const auto& p : replay.problems) ADD_FAILURE() << p;
  for (const std::string t : {"acct", "item"}) {
    const auto source = it::source_rows(s, "public." + t, {"id"});
    EXPECT_EQ(it::diff_tables(replay.tables["public." + t], source), "") << "table " << t;
    EXPECT_EQ(replay.tables["public." + t].size(), source.size());
  }
  std::cout << "[crash] " << kills.size() << " kills, " << events.size() << " lines, "
            << duplicates << " duplicates (in-flight windows total " << window_total << ")\n";
  if (HasFailure()) {
    std::cout << "[crash] keeping " << w.dir << " for inspection\n";
  } else {
    fs::remove_all(w.dir);
  }
}

TEST_F(CrashTest, CleanStopAndRestartOfTheServerDeliversZeroDuplicates) {
  Work w = make_work(db_, "clean");
  it::PgSession s(it::dsn_for(db_));
  for (int round = 0; round < 3; ++round) {
    pid_t child = spawn(w);
    ChildGuard guard{child};
    ASSERT_TRUE(wait_until([&] {
      return s.scalar(it::streaming_sql("clean_slot")) == "1";
    }, 30s)) << log_tail(w.log);
    s.query("begin; insert into marker values (" + std::to_string(round * 10 + 1) +
            "); insert into marker values (" + std::to_string(round * 10 + 2) + "); commit;");
    ASSERT_TRUE(wait_until(
        [&] { return complete_lines(w.sink) == static_cast<std::size_t>(2 * (round + 1)); }, 60s))
        << log_tail(w.log) << "\nslot: "
        << s.scalar("select concat_ws(' ', active_pid, restart_lsn, confirmed_flush_lsn, "
                    "pg_current_wal_lsn()) from pg_replication_slots where slot_name = 'clean_slot'")
        << "\nwalsender: "
        << s.scalar("select concat_ws(' ', state, sent_lsn, write_lsn, flush_lsn) from "
                    "pg_stat_replication where application_name = 'cppcdc'");
    kill(child, SIGTERM);
    EXPECT_EQ(wait_exit(child), 0) << log_tail(w.log);
    child = -1;
  }
  const auto events = it::read_sink(w.sink);
  ASSERT_EQ(events.size(), 6u);
  std::set<std::string> ids;
  for (const auto& e : events) ids.insert(identity(e));
  EXPECT_EQ(ids.size(), 6u);
  fs::remove_all(w.dir);
}
