// The circuit breaker against real parts: a PostgreSQL server that is stopped and stays down
// (through the library runtime and through `cppcdc run`), and a sink that refuses a few batches
// and recovers, where nothing may be lost and only the refused batch may come twice.
// The stopped server is the test's own (own_server.hpp, port offset 109).

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "own_server.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Records every event it is given (as "table:id"), and fails the first `failures` writes after
// taking their events, as a destination that half-applied a batch and then broke would.
class RecordingSink final : public Sink {
 public:
  Status write(std::span<const Event> events) override {
    std::lock_guard lock(mutex_);
    for (const auto& e : events) {
      std::string id = e.table + ":";
      if (e.after) {
        for (const auto& c : *e.after) {
          if (c.name == "id" && c.text) id += *c.text;
        }
      }
      received_.push_back(id);
      if (writes_ == 0) first_batch_.push_back(id);
    }
    ++writes_;
    if (failures_ > 0) {
      --failures_;
      return fail(Error::sink(ErrorKind::kTransient, "the destination is briefly unavailable"));
    }
    return ok();
  }
  Status flush() override { return ok(); }
  Status close() override { return ok(); }
  std::string name() const override { return "recording"; }

  void fail_next(int n) {
    std::lock_guard lock(mutex_);
    failures_ = n;
  }
  std::vector<std::string> received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::vector<std::string> first_batch() const {
    std::lock_guard lock(mutex_);
    return first_batch_;
  }
  int writes() const {
    std::lock_guard lock(mutex_);
    return writes_;
  }

 private:
  mutable std::mutex mutex_;
  int failures_ = 0;
  int writes_ = 0;
  std::vector<std::string> received_;
  std::vector<std::string> first_batch_;
};

class PgBreaker : public it::OwnServerTest {
 protected:
  int port_offset(const std::string&) const override { return 109; }

 public:
  using it::OwnServerTest::start_server;  // for the Restart guard below

 protected:
  // Small numbers: three failures in a row open it, 300 ms of cooldown, two cycles.
  static constexpr const char* kBreakerKeys =
      "recoverable_error_breaker_consecutive_threshold = 3\n"
      "recoverable_error_breaker_cooldown_ms = 300\n"
      "recoverable_error_breaker_max_open_cycles = 2\n";
};

}  // namespace

TEST_F(PgBreaker, ADatabaseThatStaysDownOpensTheBreakerAndEscalatesToTheErrorState) {
  // The library: a runtime streaming from the server when it goes away.
  pg::PostgresSourceConfig source;
  source.dsn = dsn(name_);
  source.slot_name = name_;
  source.publication_name = "own_pub";
  source.tables = {"public.acct", "public.marker"};
  source.snapshot_mode = pg::SnapshotMode::kNever;
  auto made = pg::make_postgres_source(std::move(source));
  ASSERT_TRUE(made) << made.error().report();
  RuntimeConfig rc;
  rc.source = std::move(*made);
  rc.checkpoint = std::make_shared<InMemoryCheckpoint>();
  rc.options.max_poll_wait_ms = 100;
  rc.options.connection_retry = ConnectionRetryPolicy{std::nullopt, 50, 200};
  rc.options.breaker = CircuitBreakerPolicy{3, 300, 2};
  auto runtime = Runtime::create(std::move(rc));
  ASSERT_TRUE(runtime) << runtime.error().report();
  Runtime& rt = **runtime;
  ASSERT_TRUE(rt.start());

  RecordingSink sink;
  std::atomic<bool> cancel{false};
  std::atomic<bool> done{false};
  std::set<BreakerState> seen;
  std::mutex seen_mutex;
  std::thread watcher([&] {  // what an admin endpoint would see meanwhile
    while (!done.load()) {
      const auto state = rt.admin_snapshot().breaker_state;
      {
        std::lock_guard lock(seen_mutex);
        seen.insert(state);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  Result<std::uint64_t> run = 0;
  std::thread loop([&] {
    run = rt.run_to_completion(sink, cancel);
    done = true;
  });
  PgSession(dsn(name_)).query("insert into acct values (1, 10, 'before')");
  const bool delivered =
      it::wait_until([&] { return !sink.received().empty(); }, std::chrono::seconds(30));
  EXPECT_TRUE(delivered) << "the row written before the outage never arrived";
  ASSERT_TRUE(stop_server());
  struct Restart {  // however the test ends
    PgBreaker& t;
    ~Restart() { (void)t.start_server(); }  // up again for TearDown, which drops the slot
  } restart{*this};
  const bool ended = it::wait_until([&] { return done.load(); }, std::chrono::seconds(120));
  if (!ended) cancel = true;  // let the threads finish before failing
  loop.join();
  done = true;
  watcher.join();
  ASSERT_TRUE(ended) << "the run went on with the database down";

  ASSERT_FALSE(run) << "the run ended without an error";
  const std::string report = run.error().report();
  EXPECT_TRUE(has(report, "escalated to the error state")) << report;
  EXPECT_TRUE(has(report, "recoverable_error_breaker_max_open_cycles")) << report;
  const auto snapshot = rt.admin_snapshot();
  EXPECT_EQ(snapshot.breaker_state, BreakerState::kError);
  EXPECT_GE(snapshot.recoverable_errors, 5u);  // 3 to open it, then one failed probe per cycle
  EXPECT_EQ(snapshot.state, RuntimeState::kFailed);
  EXPECT_EQ(snapshot.health.kind, HealthVerdict::Kind::kNotRunning);
  {
    std::lock_guard lock(seen_mutex);
    EXPECT_TRUE(seen.count(BreakerState::kOpen) == 1) << "the breaker was never seen open";
  }
  rt.force_stop();

  // The binary: started while the database is still down, it gives up the same way and exits
  // with the error rather than retrying forever.
  write_config(dsn(name_), "", kBreakerKeys);
  start_cppcdc(/*wait_streaming=*/false);
  const auto status = wait_exit(120);
  ASSERT_TRUE(status.has_value()) << "cppcdc run kept running with the database down\n"
                                  << it::log_tail(log_path());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
      << it::describe_wait_status(*status) << "\n"
      << it::log_tail(log_path());
  const std::string text = log();
  EXPECT_TRUE(has(text, "circuit breaker open")) << it::log_tail(log_path());
  EXPECT_TRUE(has(text, "escalated to the error state")) << it::log_tail(log_path());
  EXPECT_TRUE(has(text, "recoverable_error_breaker_max_open_cycles")) << it::log_tail(log_path());
}

// The sink test needs no server of its own: the shared one (CPPCDC_TEST_PG_DSN).
class PgSinkRetry : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("retry");
    it::fresh_database(db_);
    PgSession(it::dsn_for(db_))
        .query(
            "create table acct (id int primary key, balance bigint, note text);"
            "create table marker (id int primary key)");
  }
  void TearDown() override { it::drop_slots(db_); }
  std::string db_;
};

TEST_F(PgSinkRetry, ASinkThatFailsAFewTimesGetsTheSameBatchAgainAndNothingIsLost) {
  pg::PostgresSourceConfig source;
  source.dsn = it::dsn_for(db_);
  source.slot_name = db_;
  source.publication_name = "retry_pub";
  source.tables = {"public.acct", "public.marker"};
  source.snapshot_mode = pg::SnapshotMode::kNever;
  auto made = pg::make_postgres_source(std::move(source));
  ASSERT_TRUE(made) << made.error().report();
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  RuntimeConfig rc;
  rc.source = std::move(*made);
  rc.checkpoint = checkpoint;
  rc.options.max_poll_wait_ms = 100;
  rc.options.connection_retry = ConnectionRetryPolicy{std::nullopt, 50, 200};
  auto runtime = Runtime::create(std::move(rc));
  ASSERT_TRUE(runtime) << runtime.error().report();
  Runtime& rt = **runtime;
  ASSERT_TRUE(rt.start());

  // 20 transactions of 10 rows, written before the run so that the first batch holds several.
  {
    PgSession s(it::dsn_for(db_));
    for (int tx = 0; tx < 20; ++tx) {
      std::string sql = "begin;";
      for (int i = 0; i < 10; ++i) {
        sql += "insert into acct values (" + std::to_string(tx * 10 + i) + ", 1, 'x');";
      }
      s.query(sql + "commit;");
    }
    s.query("insert into marker values (1)");
  }
  RecordingSink sink;
  sink.fail_next(3);
  std::atomic<bool> cancel{false};
  Result<std::uint64_t> run = 0;
  std::thread loop([&] { run = rt.run_to_completion(sink, cancel); });
  const bool all = it::wait_until(
      [&] {
        const auto r = sink.received();
        return std::find(r.begin(), r.end(), "marker:1") != r.end();
      },
      std::chrono::seconds(60));
  cancel = true;
  loop.join();
  ASSERT_TRUE(all) << "the marker row never arrived";
  ASSERT_TRUE(run) << run.error().report();

  const auto received = sink.received();
  const auto first = sink.first_batch();
  ASSERT_FALSE(first.empty());
  std::map<std::string, int> count;
  for (const auto& id : received) ++count[id];
  const std::set<std::string> refused(first.begin(), first.end());
  for (int id = 0; id < 200; ++id) {
    const std::string key = "acct:" + std::to_string(id);
    // The refused batch came four times (three refusals, then accepted); everything else once.
    EXPECT_EQ(count[key], refused.count(key) ? 4 : 1) << key;
  }
  EXPECT_EQ(count["marker:1"], refused.count("marker:1") ? 4 : 1);
  EXPECT_EQ(count.size(), 201u) << "events that were never written arrived";

  const auto snapshot = rt.admin_snapshot();
  EXPECT_EQ(snapshot.recoverable_errors, 3u);
  EXPECT_EQ(snapshot.breaker_state, BreakerState::kClosed);
  EXPECT_EQ(snapshot.events_committed, 201u);
  EXPECT_FALSE(snapshot.health.is_alertable()) << snapshot.health.reason;
  auto saved = checkpoint->load();
  ASSERT_TRUE(saved && saved->has_value());
  ASSERT_TRUE(rt.stop());
}
