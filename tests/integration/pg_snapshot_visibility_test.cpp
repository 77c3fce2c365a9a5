// A snapshot killed midway and read on in a new transaction, while an application keeps
// writing: the rest is read under a later snapshot than the one the stream starts from, and the
// stream must drop exactly the changes that read already holds (visibility.hpp). The real
// `cppcdc run` with the file sink, SIGKILLed by a fault point twice inside a keyed table's read;
// the third run reads the rest of it and a keyless table whole. Replayed, the sink's events
// equal the source tables, and no row arrives both as a read and as the stream's insert.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "replay.hpp"

using namespace cppcdc;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kKeyed = 12000;
constexpr int kKeyless = 3000;

pid_t spawn_armed(const fs::path& dir, const char* fault_point) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (fault_point != nullptr) setenv("CPPCDC_FAULT_POINT", fault_point, 1);
    const std::string log = (dir / "cppcdc.log").string();
    if (!freopen(log.c_str(), "a", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(126);
    execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", (dir / "cdc.toml").c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// The application: transactions of inserts, updates and deletes on both tables. Keys of new
// acct rows are fresh (above every existing one, or negative: before any saved cursor); bag's
// `v` is unique too, so every row has one identity.
class Writer {
 public:
  explicit Writer(const std::string& db) : s_(it::dsn_for(db)), rng_(777) {
    for (int i = 1; i <= kKeyed; ++i) acct_.push_back(i);
    for (int i = 1; i <= kKeyless; ++i) bag_.push_back(i);
  }
  void transactions(int n) {
    for (int t = 0; t < n; ++t) {
      std::string sql = "begin;";
      for (int i = 0; i < 6; ++i) sql += statement();
      s_.query(sql + "commit;");
    }
  }

 private:
  std::string statement() {
    const int pick = static_cast<int>(rng_() % 8);
    const auto any = [&](std::vector<int>& ids) -> std::size_t { return rng_() % ids.size(); };
    switch (pick) {
      case 0: {
        const int id = next_high_++;
        acct_.push_back(id);
        return "insert into acct values (" + std::to_string(id) + ", 0, 'new');";
      }
      case 1: {
        const int id = next_low_--;
        acct_.push_back(id);
        return "insert into acct values (" + std::to_string(id) + ", 0, 'low');";
      }
      case 2:
        return "update acct set n = n + 1, note = 'u" + std::to_string(rng_()) +
               "' where id = " + std::to_string(acct_[any(acct_)]) + ";";
      case 3: {
        const std::size_t at = any(acct_);
        const int id = acct_[at];
        acct_.erase(acct_.begin() + static_cast<long>(at));
        return "delete from acct where id = " + std::to_string(id) + ";";
      }
      case 4: {
        const int v = next_bag_++;
        bag_.push_back(v);
        return "insert into bag values (" + std::to_string(v) + ", 'new');";
      }
      case 5:
      case 6:
        return "update bag set note = 'u" + std::to_string(rng_()) +
               "' where v = " + std::to_string(bag_[any(bag_)]) + ";";
      default: {
        const std::size_t at = any(bag_);
        const int v = bag_[at];
        bag_.erase(bag_.begin() + static_cast<long>(at));
        return "delete from bag where v = " + std::to_string(v) + ";";
      }
    }
  }

  it::PgSession s_;
  std::mt19937 rng_;
  std::vector<int> acct_, bag_;
  int next_high_ = 1'000'000, next_low_ = -1, next_bag_ = 1'000'000;
};

// How often `what` occurs in the file at `path`.
std::size_t count_in(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t n = 0;
  for (auto at = all.find(what); at != std::string::npos; at = all.find(what, at + 1)) ++n;
  return n;
}

std::string value(const Row* row, const char* column) {
  const ColumnValue* c = row ? find_column(*row, column) : nullptr;
  return c && c->text ? *c->text : "";
}

// Replays `events` and compares with the source's acct (keyed, by id) and bag (keyless, by
// its unique v): every row as the source has it, no update or delete of a row not held, and
// no row both read and inserted.
void expect_replay_equals_source(const std::vector<Event>& events, it::PgSession& s) {
  it::Replay replay;
  std::map<std::string, std::optional<std::string>> bag;  // v -> note
  std::set<std::string> read_ids, inserted_ids, read_bag, inserted_bag;
  std::size_t bag_problems = 0;
  for (const auto& e : events) {
    if (e.table == "acct") {
      replay.apply(e);
      if (e.op == Operation::kRead) read_ids.insert(value(e.after ? &*e.after : nullptr, "id"));
      if (e.op == Operation::kInsert) {
        inserted_ids.insert(value(e.after ? &*e.after : nullptr, "id"));
      }
      continue;
    }
    if (e.table != "bag") continue;
    // The keyless table by its unique `v`: a row must not arrive while it is held, an update
    // or delete must find the row its before-image names, with the same values.
    const std::string before_v = value(e.before.row(), "v");
    const std::string after_v = value(e.after ? &*e.after : nullptr, "v");
    const auto held = [&](const std::string& v) {
      auto it = bag.find(v);
      const ColumnValue* note = e.before.row() ? find_column(*e.before.row(), "note") : nullptr;
      if (it == bag.end() || !note || it->second != note->text) {
        if (bag_problems++ < 5) ADD_FAILURE() << "no such row in bag: " << e.to_json();
        return false;
      }
      return true;
    };
    switch (e.op) {
      case Operation::kRead:
      case Operation::kInsert:
        (e.op == Operation::kRead ? read_bag : inserted_bag).insert(after_v);
        if (e.op == Operation::kInsert && bag.count(after_v) && bag_problems++ < 5) {
          ADD_FAILURE() << "a bag row arrived while held: " << e.to_json();
        }
        // A read of a row held already is a re-read (an unacknowledged batch read again).
        bag[after_v] = value(e.after ? &*e.after : nullptr, "note");
        break;
      case Operation::kUpdate:
        if (held(before_v)) {
          bag.erase(before_v);
          bag[after_v] = value(&*e.after, "note");
        }
        break;
      case Operation::kDelete:
        if (held(before_v)) bag.erase(before_v);
        break;
      default:
        break;
    }
  }
  for (const auto& p : replay.problems) ADD_FAILURE() << p;
  const auto acct_source = it::source_rows(s, "public.acct", {"id"});
  EXPECT_EQ(it::diff_tables(replay.tables["public.acct"], acct_source), "");
  std::map<std::string, std::optional<std::string>> bag_source;
  for (const auto& r : s.query("select v, note from bag")) bag_source[r[0].value_or("")] = r[1];
  EXPECT_EQ(bag.size(), bag_source.size());
  EXPECT_TRUE(bag == bag_source) << "the keyless table replays to other rows than the source's";
  EXPECT_EQ(bag_problems, 0u);
  std::vector<std::string> both;
  for (const auto& id : inserted_ids) {
    if (read_ids.count(id)) both.push_back("acct " + id);
  }
  for (const auto& v : inserted_bag) {
    if (read_bag.count(v)) both.push_back("bag " + v);
  }
  EXPECT_TRUE(both.empty()) << both.size() << " rows arrived as a read and as an insert, e.g. "
                            << both.front();
}

}  // namespace

TEST(PgSnapshotVisibility, KillsMidSnapshotWhileWritingReplayToTheSourceWithEachRowOnce) {
  const std::string db = it::test_database("snapvis");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table acct (id int primary key, n int, note text); "
      "create table bag (v int, note text); alter table bag replica identity full; "
      "insert into acct select g, 0, 'a' || g from generate_series(1, " +
      std::to_string(kKeyed) + ") g; insert into bag select g, 'b' || g from " +
      "generate_series(1, " + std::to_string(kKeyless) + ") g;");
  const fs::path sink = dir / "events.jsonl";
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db)
                                  << "\"\nslot_name = \"" << db << "\"\npublication_name = \"" << db
                                  << "_pub\"\ntables = [\"public.acct\", \"public.bag\"]\n"
                                  << "[source.snapshot]\nchunk_size = 200\n"
                                  << "[sink]\ntype = \"file\"\npath = \"" << sink.string()
                                  << "\"\n[state.offset]\nbackend = \"local_fs\"\ndir = \""
                                  << (dir / "state").string() << "\"\n"
                                  << "[runtime]\nmax_buffer_size = 200\nmax_poll_wait_ms = 100\n";
  Writer writer(db);
  pid_t child = -1;
  ChildGuard guard{child};
  // Two runs die inside acct's read (after the 10th batch written: at most 2,000 rows each, of
  // 12,000); between them, and before the third, the application commits changes that the
  // rest's new snapshot sees and the stream, from the first run's slot position, carries too.
  for (const char* point : {"file_sink.after_fsync@10", "file_sink.after_fsync@10"}) {
    child = spawn_armed(dir, point);
    std::thread busy([&] { writer.transactions(20); });
    int status = 0;
    const bool died =
        it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s);
    busy.join();
    ASSERT_TRUE(died) << it::log_tail(dir / "cppcdc.log");
    child = -1;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "cppcdc did not die at " << point << ": " << it::log_tail(dir / "cppcdc.log");
    writer.transactions(30);
  }
  child = spawn_armed(dir, nullptr);
  {
    std::thread busy([&] { writer.transactions(60); });  // during the third run's snapshot
    // Once the third run's snapshot is taken, a last change must come through the stream,
    // after every change before it.
    const bool taken = it::wait_until(
        [&] { return count_in(dir / "cppcdc.log", "in a transaction of its own") >= 2; }, 120s);
    busy.join();
    ASSERT_TRUE(taken) << it::log_tail(dir / "cppcdc.log");
  }
  s.query("insert into acct values (2000000000, 0, 'the end')");
  ASSERT_TRUE(it::wait_until(
      [&] {
        std::ifstream in(sink);
        std::string line;
        while (std::getline(in, line)) {
          if (line.find("the end") != std::string::npos &&
              line.find("\"op\":\"insert\"") != std::string::npos) {
            return true;
          }
        }
        return false;
      },
      180s, 200ms))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");

  expect_replay_equals_source(it::read_sink(sink.string()), s);
  // The kills landed mid-table: the runs after them read on in transactions of their own.
  EXPECT_EQ(count_in(dir / "cppcdc.log", "in a transaction of its own"), 2u)
      << "the second and third runs read on under snapshots of their own";
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Without an exported snapshot at a first start (the slot exists already, or sql_peek) the
// snapshot is read in a transaction of its own while the stream starts at the slot's earlier
// position: the changes committed in between must arrive once.
class PgSnapshotVisibilityFirstStart : public ::testing::TestWithParam<pg::WalTransport> {};

TEST_P(PgSnapshotVisibilityFirstStart, ChangesAfterAnExistingSlotArriveOnce) {
  const std::string db =
      it::test_database(GetParam() == pg::WalTransport::kSqlPeek ? "snapvis_peek" : "snapvis_slot");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table acct (id int primary key, n int, note text); "
      "create table bag (v int, note text); alter table bag replica identity full; "
      "insert into acct select g, 0, 'a' || g from generate_series(1, " +
      std::to_string(kKeyed) + ") g; insert into bag select g, 'b' || g from " +
      "generate_series(1, " + std::to_string(kKeyless) +
      ") g; "
      "create publication vis_pub for table acct, bag;");
  s.query("select pg_create_logical_replication_slot('" + db + "', 'pgoutput')");
  Writer writer(db);
  writer.transactions(40);  // after the slot's position, before the snapshot
  pg::PostgresSourceConfig cfg;
  cfg.slot_name = db;
  cfg.publication_name = "vis_pub";
  cfg.tables = {"public.acct", "public.bag"};
  cfg.snapshot_chunk_size = 1000;
  cfg.transport = GetParam();
  std::vector<Event> events;
  {
    it::Reader r(db, cfg, {.checkpoint = nullptr, .max_buffer_size = 500, .max_retries = 2});
    ASSERT_TRUE(r.runtime->start());
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool read_all = false, ended = false;
    const auto take_until = [&](const bool& done) {
      while (std::chrono::steady_clock::now() < deadline && !done) {
        for (auto& e : r.take(1, 1)) {
          read_all = read_all || (e.table == "bag" && e.snapshot && e.snapshot->is_last_chunk);
          ended = ended || (e.after && value(&*e.after, "note") == "the end");
          events.push_back(std::move(e));
        }
      }
    };
    // Every row read (the snapshot's transaction had its snapshot), then a last change.
    take_until(read_all);
    ASSERT_TRUE(read_all);
    s.query("insert into acct values (2000000000, 0, 'the end')");
    take_until(ended);
    ASSERT_TRUE(ended);
    ASSERT_TRUE(r.runtime->stop());
  }
  expect_replay_equals_source(events, s);
  it::drop_slots(db);
}

INSTANTIATE_TEST_SUITE_P(Transports, PgSnapshotVisibilityFirstStart,
                         ::testing::Values(pg::WalTransport::kStreamingReplication,
                                           pg::WalTransport::kSqlPeek));
