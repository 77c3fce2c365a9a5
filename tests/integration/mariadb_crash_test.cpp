// Crash safety of `cppcdc run` on the MariaDB source: SIGKILL at random moments while a mixed
// workload of multi-statement transactions runs (inserts, updates, deletes, two tables, one with
// a composite key), a restart after each kill from the binlog position in the checkpoint, then
// the replay oracle: the sink's events applied with row_write() must give the source tables
// exactly, every committed transaction (by its GTID sequence number) must be in the sink, and
// duplicates may only come from the batches in flight at a kill.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "integration/mariadb_util.hpp"
#include "integration/pg_util.hpp"
#include "integration/replay.hpp"

namespace cppcdc::it::maria {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kSeconds = 25;
constexpr int kMinKills = 6;
constexpr int kMaxBatch = 300;

// The table as the server has it, keyed like the replay (every value as its text).
ReplayTable server_rows(Session& s, const std::string& table,
                        const std::vector<std::string>& columns,
                        const std::vector<std::string>& key_columns) {
  std::string list;
  for (const auto& c : columns) list += (list.empty() ? "" : ", ") + c;
  ReplayTable out;
  for (const auto& r : s.rows("SELECT " + list + " FROM " + table)) {
    ReplayRow row;
    for (std::size_t i = 0; i < columns.size(); ++i) row[columns[i]] = r[i];
    Row key;
    for (const auto& k : key_columns) key.push_back(ColumnValue{k, row[k], false});
    out[key_text(key)] = std::move(row);
  }
  return out;
}

struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) stop_cppcdc_process(pid, SIGKILL);
  }
};

TEST(MariaDbCrash, SigkillAtRandomMomentsLosesNoTransactionAndReplaysToTheSourceTables) {
  MARIADB_OR_SKIP();
  const std::string db = database_for_test("crash");
  Session admin;
  admin.exec("DROP DATABASE IF EXISTS " + db);
  admin.exec("CREATE DATABASE " + db);
  admin.exec("CREATE TABLE " + db +
             ".acct (id int primary key, balance bigint not null, note varchar(40))");
  admin.exec("CREATE TABLE " + db + ".item (k1 int, k2 varchar(8), qty int, primary key (k1, k2))");
  admin.exec("CREATE TABLE " + db + ".marker (id int primary key)");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-it-" + db + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path sink = dir / "events.jsonl";
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                                  << *port() << "\nuser = \"root\"\ntables = [\"" << db
                                  << ".*\"]\nsource_id = \"" << db
                                  << "\"\nheartbeat_interval_ms = 200\n[source.snapshot]\n"
                                  << "mode = \"never\"\n\n[sink]\ntype = \"file\"\npath = \""
                                  << sink.string() << "\"\n\n[state.offset]\nbackend = "
                                  << "\"local_fs\"\ndir = \"" << (dir / "state").string()
                                  << "\"\n\n[runtime]\nmax_buffer_size = " << kMaxBatch
                                  << "\nmax_poll_wait_ms = 100\n";
  pid_t child = -1;
  ChildGuard guard{child};
  // Restarts need no wait: the gaps between kills (1 to 4 s) are far longer than a start.
  const auto start = [&] { start_cppcdc_process(child, dir, "", "", 0); };
  start();
  // A first start with no checkpoint reads from the server's position when it connects: the
  // load begins once a first row shows that it streams.
  int probe = 0;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        admin.exec("INSERT INTO " + db + ".marker VALUES (" + std::to_string(--probe) + ")");
        return !read_sink(sink.string()).empty();
      },
      60s, 200ms))
      << log_tail(dir / "cppcdc.log");

  // The workload: transactions of one to four statements, each starting with an upsert, so
  // that every committed transaction changes a row and must reach the sink.
  std::atomic<bool> done{false};
  std::atomic<bool> quit{false};
  std::vector<std::uint64_t> committed;  // GTID sequence numbers
  std::thread load([&] {
    Session m;
    std::mt19937 rng(2718);
    const auto t0 = std::chrono::steady_clock::now();
    int step = 0;
    while (!quit.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(kSeconds)) {
      ++step;
      m.exec("BEGIN");
      const std::string id = std::to_string(rng() % 400);
      m.exec("INSERT INTO " + db + ".acct VALUES (" + id + ", 1, 'n" + std::to_string(step) +
             "') ON DUPLICATE KEY UPDATE balance = balance + 1, note = VALUES(note)");
      const int more = static_cast<int>(rng() % 4);
      for (int i = 0; i < more; ++i) {
        const std::string k1 = std::to_string(rng() % 60);
        const std::string k2 = "'k" + std::to_string(rng() % 4) + "'";
        switch (rng() % 6) {
          case 0:
            m.exec("DELETE FROM " + db + ".acct WHERE id = " + std::to_string(rng() % 400));
            break;
          case 1:
            m.exec("UPDATE " + db + ".acct SET balance = balance * 2, note = NULL WHERE id = " +
                   std::to_string(rng() % 400));
            break;
          case 2:
          case 3:
            m.exec("INSERT INTO " + db + ".item VALUES (" + k1 + ", " + k2 + ", " +
                   std::to_string(step) + ") ON DUPLICATE KEY UPDATE qty = VALUES(qty)");
            break;
          case 4:
            m.exec("UPDATE " + db + ".item SET qty = qty + 1 WHERE k1 = " + k1);
            break;
          default:
            m.exec("DELETE FROM " + db + ".item WHERE k1 = " + k1 + " AND k2 = " + k2);
        }
      }
      m.exec("COMMIT");
      // "domain-server-sequence" of this session's last transaction.
      const std::string gtid = m.value("SELECT @@last_gtid");
      const auto dash = gtid.rfind('-');
      if (dash == std::string::npos) break;  // the failure is reported already
      committed.push_back(std::stoull(gtid.substr(dash + 1)));
      std::this_thread::sleep_for(3ms);  // pacing: the load spreads over the whole run
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

  // SIGKILL at random moments (random gaps on purpose, not waits for anything).
  std::mt19937 rng(31);
  int kills = 0;
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 3000));
    if (done.load()) break;
    stop_cppcdc_process(child, SIGKILL);
    ++kills;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    start();
  }
  load.join();
  EXPECT_GE(kills, kMinKills);

  // Everything up to a final marker arrived: stop cleanly.
  admin.exec("INSERT INTO " + db + ".marker VALUES (1)");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        for (const auto& e : read_sink(sink.string())) {
          if (e.table == "marker" && e.after && e.after->front().text == "1") return true;
        }
        return false;
      },
      120s, 200ms))
      << log_tail(dir / "cppcdc.log");
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM), 0) << log_tail(dir / "cppcdc.log");

  Replay replay;
  std::set<std::uint64_t> seen;
  std::map<std::tuple<std::string, std::uint64_t, std::uint64_t>, int> copies;
  const auto events = read_sink(sink.string());
  for (const auto& e : events) {
    if (e.table == "marker") continue;
    ASSERT_TRUE(e.transaction) << e.to_json();
    seen.insert(e.transaction->tx_id);
    ++copies[{e.table, e.transaction->tx_id, e.transaction->event_index}];
    replay.apply(e);
  }
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  EXPECT_EQ(diff_tables(replay.tables[db + ".acct"],
                        server_rows(admin, db + ".acct", {"id", "balance", "note"}, {"id"})),
            "");
  EXPECT_EQ(diff_tables(replay.tables[db + ".item"],
                        server_rows(admin, db + ".item", {"k1", "k2", "qty"}, {"k1", "k2"})),
            "");
  std::size_t missing = 0;
  for (const auto seq : committed) {
    if (!seen.count(seq) && missing++ < 5) ADD_FAILURE() << "transaction " << seq << " is lost";
  }
  EXPECT_EQ(missing, 0u);
  std::size_t duplicates = 0;
  for (const auto& [id, n] : copies) duplicates += static_cast<std::size_t>(n - 1);
  // At least once: what was in flight at a kill comes again, at most a batch per kill.
  EXPECT_LE(duplicates, static_cast<std::size_t>(kills) * kMaxBatch);
  std::cout << kills << " kills, " << committed.size() << " transactions, " << events.size()
            << " events (" << duplicates << " duplicates) replayed into "
            << replay.tables[db + ".acct"].size() + replay.tables[db + ".item"].size() << " rows"
            << std::endl;
  admin.exec("DROP DATABASE IF EXISTS " + db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc::it::maria
