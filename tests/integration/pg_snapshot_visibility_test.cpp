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

#include "snapshot_visibility_oracle.hpp"

using namespace cppcdc;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

using it::kKeyed;
using it::kKeyless;
using it::value;
using it::VisibilityWriter;

namespace {

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

// How often `what` occurs in the file at `path`.
std::size_t count_in(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t n = 0;
  for (auto at = all.find(what); at != std::string::npos; at = all.find(what, at + 1)) ++n;
  return n;
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
  VisibilityWriter writer(db);
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
    // The third run streams once its snapshot is read: every change committed after that
    // snapshot was taken comes through the stream.
    const bool taken = it::wait_until([&] { return s.scalar(it::streaming_sql(db)) == "1"; }, 120s);
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

  it::expect_replay_equals_source(it::read_sink(sink.string()), s);
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
  VisibilityWriter writer(db);
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
  it::expect_replay_equals_source(events, s);
  it::drop_slots(db);
}

INSTANTIATE_TEST_SUITE_P(Transports, PgSnapshotVisibilityFirstStart,
                         ::testing::Values(pg::WalTransport::kStreamingReplication,
                                           pg::WalTransport::kSqlPeek));
