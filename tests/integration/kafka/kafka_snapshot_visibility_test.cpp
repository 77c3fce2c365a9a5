// Under effectively_once, a PostgreSQL snapshot killed midway and read on in new transactions
// while an application keeps writing: a read_committed consumer of the topics replays them to
// the source tables, each row read once and never again as the stream's insert (the stream
// leaves out what the later reads already hold; snapshot visibility, docs/postgres.md).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/kafka/kafka_util.hpp"
#include "integration/snapshot_visibility_oracle.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

pid_t spawn(const fs::path& dir, const char* fault_point) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (fault_point != nullptr) setenv("CPPCDC_FAULT_POINT", fault_point, 1);
    const int out = open((dir / "cppcdc.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(out, 2);
    execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", (dir / "cdc.toml").c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

struct ChildGuard {
  pid_t& pid;
  ~ChildGuard() {
    if (pid > 0) it::stop_cppcdc_process(pid, SIGKILL);
  }
};

std::vector<Event> committed_events(const std::string& bootstrap, const std::string& topic) {
  std::vector<Event> out;
  for (const auto& r : kafka_it::read_topic(bootstrap, topic, "read_committed")) {
    if (!r.value) continue;
    auto e = Event::from_json(*r.value);
    if (!e) {
      ADD_FAILURE() << topic << ": " << e.error().report();
      continue;
    }
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace

TEST(KafkaSnapshotVisibility, EffectivelyOnceKillsMidSnapshotWhileWritingReplayToTheSource) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kafka_snapvis");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = kafka_it::unique_topic("snapvis");
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table acct (id int primary key, n int, note text); "
      "create table bag (v int, note text); alter table bag replica identity full; "
      "insert into acct select g, 0, 'a' || g from generate_series(1, " +
      std::to_string(it::kKeyed) + ") g; insert into bag select g, 'b' || g from " +
      "generate_series(1, " + std::to_string(it::kKeyless) + ") g;");
  {
    // One partition per topic: the replay needs each table's events in order.
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\n"
        << "tables = [\"public.acct\", \"public.bag\"]\n"
        << "[source.snapshot]\nchunk_size = 200\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ntopic_partitions = 1\ntopic_replication_factor = 1\n"
        << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source << ".checkpoints\"\n\n"
        << "[runtime]\nmax_buffer_size = 200\nmax_poll_wait_ms = 100\n";
  }
  it::VisibilityWriter writer(db);
  pid_t child = -1;
  ChildGuard guard{child};
  // Two runs die inside acct's read (at the 5th batch flushed into a transaction: at most
  // 1,000 of its 12,000 rows each); the application writes meanwhile and between them.
  for (const char* point : {"kafka_sink.after_flush@5", "kafka_sink.after_flush@5"}) {
    child = spawn(dir, point);
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
  child = spawn(dir, nullptr);
  {
    std::thread busy([&] { writer.transactions(60); });
    // The third run streams once its snapshot is read: every change committed after that
    // snapshot was taken comes through the stream.
    const bool taken = it::wait_until([&] { return s.scalar(it::streaming_sql(db)) == "1"; }, 120s);
    busy.join();
    ASSERT_TRUE(taken) << it::log_tail(dir / "cppcdc.log");
  }
  s.query("insert into acct values (2000000000, 0, 'the end')");
  const std::string acct_topic = source + ".public.acct";
  ASSERT_TRUE(it::wait_until(
      [&] {
        for (const auto& e : committed_events(bootstrap, acct_topic)) {
          if (e.op == Operation::kInsert && e.after && it::value(&*e.after, "note") == "the end") {
            return true;
          }
        }
        return false;
      },
      180s, 1s))
      << it::log_tail(dir / "cppcdc.log");
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(dir / "cppcdc.log");

  std::vector<Event> events = committed_events(bootstrap, acct_topic);
  const std::size_t acct_events = events.size();
  for (auto& e : committed_events(bootstrap, source + ".public.bag"))
    events.push_back(std::move(e));
  it::expect_replay_equals_source(events, s);
  // The killed runs' aborted batches are in the log, but no read_committed reader sees them.
  EXPECT_GT(kafka_it::read_topic(bootstrap, acct_topic).size(), acct_events);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
