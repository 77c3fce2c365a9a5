// The control protocol's commands against a stand-in snapshot handle, the status table, and
// `snapshot forget`'s edit of the checkpoint's source_state.

#include "server/snapshot_control.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <mutex>
#include <thread>

#include "wait_until.hpp"

namespace cppcdc::server {
namespace {

using namespace std::chrono_literals;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// Applies commands at once, like a driver that polls continuously. `refuse_all` makes every
// request time out the way a pipeline that is not polling does.
class FakeControl final : public IncrementalSnapshotControl {
 public:
  Status request(const std::vector<std::string>& tables,
                 std::chrono::milliseconds timeout) override {
    if (refuse_all) {
      // A pipeline that is not polling holds the request for the whole slice: the time has to
      // pass, so this sleep stands in for it.
      std::this_thread::sleep_for(timeout);
      ++timeouts;
      return fail(Error::invalid_state("the request was not taken"));
    }
    std::lock_guard lock(mutex_);
    for (const auto& t : tables) {
      if (t == "public.nope") {
        return fail(Error::configuration("table public.nope is not captured: add it to [source] "
                                         "tables")
                        .context("incremental snapshot request for " + t));
      }
    }
    ++state_.generation;
    state_.stopped = false;
    if (state_.snapshot_id.empty()) state_.snapshot_id = "slot-incremental-1";
    for (const auto& t : tables) {
      IncrementalSnapshotTableState s;
      s.table = t;
      s.key_columns = {"id"};
      s.generation = state_.generation;
      s.estimated_rows = 200;
      state_.tables.push_back(s);
    }
    return ok();
  }
  void pause() override {
    std::lock_guard lock(mutex_);
    state_.paused = true;
  }
  void resume() override {
    std::lock_guard lock(mutex_);
    state_.paused = false;
  }
  void stop() override {
    std::lock_guard lock(mutex_);
    state_.tables.clear();
    ++state_.generation;
    state_.stopped = true;
    state_.paused = false;
  }
  IncrementalSnapshotState state() const override {
    std::lock_guard lock(mutex_);
    return state_;
  }
  void complete_all() {
    std::lock_guard lock(mutex_);
    for (auto& t : state_.tables) {
      t.complete = true;
      t.rows = 200;
      t.chunks = 1;
    }
  }

  bool refuse_all = false;
  std::atomic<int> timeouts{0};

 private:
  mutable std::mutex mutex_;
  IncrementalSnapshotState state_;
};

boost::json::object answer(const std::string& line) {
  boost::system::error_code ec;
  auto v = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << line;
  EXPECT_TRUE(v.is_object()) << line;
  return v.is_object() ? v.as_object() : boost::json::object{};
}

class SnapshotControl : public ::testing::Test {
 protected:
  SnapshotControl() {
    context_.snapshot = fake_;
    context_.config = "/etc/cppcdc/cdc.toml";
  }
  boost::json::object send(const std::string& request) {
    return answer(handle_control_request(request, context_, stopping_));
  }
  static std::string status_of(const boost::json::object& a) {
    return std::string(a.at("state").as_object().at("status").as_string());
  }
  static std::string error_of(const boost::json::object& a) {
    EXPECT_FALSE(a.at("ok").as_bool());
    return a.contains("error") ? std::string(a.at("error").as_string()) : "";
  }

  std::shared_ptr<FakeControl> fake_ = std::make_shared<FakeControl>();
  ControlContext context_;
  std::atomic<bool> stopping_{false};
};

TEST_F(SnapshotControl, PingNamesTheProcessAndItsConfiguration) {
  auto a = send(R"({"command":"ping"})");
  EXPECT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(a.at("pid").as_int64(), ::getpid());
  EXPECT_EQ(a.at("config").as_string(), "/etc/cppcdc/cdc.toml");
}

TEST_F(SnapshotControl, StatusRequestPauseResumeStop) {
  auto a = send(R"({"command":"status"})");
  EXPECT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(status_of(a), "idle");

  a = send(R"({"command":"request","tables":["public.orders"]})");
  ASSERT_TRUE(a.at("ok").as_bool()) << boost::json::serialize(a);
  EXPECT_EQ(status_of(a), "running");
  EXPECT_EQ(a.at("state").as_object().at("generation").as_int64(), 1);
  EXPECT_EQ(a.at("state").at("tables").as_array().at(0).at("table").as_string(), "public.orders");

  a = send(R"({"command":"pause"})");
  ASSERT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(status_of(a), "paused");
  EXPECT_CONTAINS(std::string(a.at("message").as_string()), "paused");
  a = send(R"({"command":"pause"})");
  EXPECT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(a.at("message").as_string(), "already paused");

  a = send(R"({"command":"resume"})");
  ASSERT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(status_of(a), "running");
  a = send(R"({"command":"resume"})");
  EXPECT_TRUE(a.at("ok").as_bool());
  EXPECT_CONTAINS(std::string(a.at("message").as_string()), "not paused");

  a = send(R"({"command":"stop"})");
  ASSERT_TRUE(a.at("ok").as_bool());
  EXPECT_EQ(status_of(a), "stopped");
  EXPECT_EQ(a.at("state").as_object().at("generation").as_int64(), 2);
}

TEST_F(SnapshotControl, NothingRunningCannotBePausedOrStopped) {
  EXPECT_CONTAINS(error_of(send(R"({"command":"pause"})")),
                  "no incremental snapshot is running (status idle): nothing to pause");
  EXPECT_CONTAINS(error_of(send(R"({"command":"stop"})")), "nothing to stop");
  ASSERT_TRUE(send(R"({"command":"request","tables":["public.t"]})").at("ok").as_bool());
  fake_->complete_all();
  EXPECT_CONTAINS(error_of(send(R"({"command":"stop"})")), "(status complete): nothing to stop");
}

TEST_F(SnapshotControl, ARefusedRequestCarriesTheReason) {
  const std::string error =
      error_of(send(R"({"command":"request","tables":["public.orders","public.nope"]})"));
  EXPECT_CONTAINS(error, "incremental snapshot request for public.nope");
  EXPECT_CONTAINS(error, "table public.nope is not captured");
  EXPECT_EQ(status_of(send(R"({"command":"status"})")), "idle");
}

TEST_F(SnapshotControl, MalformedRequestsAreRefused) {
  EXPECT_CONTAINS(error_of(send("not json")), "one JSON object");
  EXPECT_CONTAINS(error_of(send(R"({"cmd":"status"})")), "needs \"command\"");
  EXPECT_CONTAINS(error_of(send(R"({"command":"explode"})")), "unknown command \"explode\"");
  EXPECT_CONTAINS(error_of(send(R"({"command":"request"})")), "needs \"tables\"");
  EXPECT_CONTAINS(error_of(send(R"({"command":"request","tables":[]})")), "needs \"tables\"");
  EXPECT_CONTAINS(error_of(send(R"({"command":"request","tables":[1]})")), "must hold");
  EXPECT_CONTAINS(error_of(send(R"({"command":"request","tables":["t"],"timeout_ms":"x"})")),
                  "timeout_ms");
}

TEST_F(SnapshotControl, ARequestThePipelineDoesNotTakeTimesOutOrGivesUpOnShutdown) {
  fake_->refuse_all = true;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_CONTAINS(error_of(send(R"({"command":"request","tables":["public.t"],"timeout_ms":600})")),
                  "did not take the request for public.t within 600 ms");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 550ms);
  EXPECT_GE(fake_->timeouts.load(), 2);  // asked in slices

  // A shutdown while the request (default timeout 30 s) is being asked ends it early.
  const int slices_before = fake_->timeouts.load();
  std::thread later([this, slices_before] {
    EXPECT_TRUE(test::wait_until([&] { return fake_->timeouts.load() > slices_before; }, 20s));
    stopping_ = true;
  });
  EXPECT_CONTAINS(error_of(send(R"({"command":"request","tables":["public.t"]})")),
                  "shutting down");
  later.join();
}

TEST_F(SnapshotControl, WithoutIncrementalSupportEveryCommandButPingSaysWhy) {
  ControlContext none;
  none.unavailable_reason = "this pipeline runs no incremental snapshots";
  const std::atomic<bool> stopping{false};
  for (const char* command : {"status", "request", "pause", "resume", "stop"}) {
    auto a = answer(
        handle_control_request(std::string(R"({"command":")") + command + "\"}", none, stopping));
    EXPECT_EQ(error_of(a), "this pipeline runs no incremental snapshots") << command;
  }
  EXPECT_TRUE(
      answer(handle_control_request(R"({"command":"ping"})", none, stopping)).at("ok").as_bool());
}

TEST(SnapshotStatus, TableShowsRowsEstimateChunksAndCompletion) {
  IncrementalSnapshotState s;
  s.snapshot_id = "cppcdc-incremental-3";
  s.generation = 3;
  IncrementalSnapshotTableState a;
  a.table = "public.orders";
  a.rows = 250;
  a.estimated_rows = 1000;
  a.chunks = 3;
  IncrementalSnapshotTableState b;
  b.table = "public.customers";
  b.rows = 40;
  b.chunks = 1;
  b.complete = true;
  s.tables = {a, b};
  const std::string text = format_snapshot_status(s);
  EXPECT_CONTAINS(text, "incremental snapshot cppcdc-incremental-3: running (generation 3)");
  EXPECT_CONTAINS(text, "TABLE             ROWS DONE  ESTIMATED        CHUNKS  COMPLETE");
  EXPECT_CONTAINS(text, "public.orders     250        1000 (25% done)  3       no");
  EXPECT_CONTAINS(text, "public.customers  40         unknown          1       yes");
  EXPECT_CONTAINS(text, "290 rows in all, 1 of 2 tables to go");

  s.paused = true;
  EXPECT_CONTAINS(format_snapshot_status(s), "paused: no new chunk starts");
  EXPECT_CONTAINS(format_snapshot_status(IncrementalSnapshotState{}),
                  "incremental snapshot: idle (generation 0)");
}

TEST_F(SnapshotControl, StatusCarriesTheInitialSnapshotEvenWithoutIncrementalSupport) {
  auto tracker = std::make_shared<BlockingSnapshotTracker>("initial");
  tracker->set_pending("slot@0/16B3748", {"public.a", "public.b"}, 0, false, 0);
  tracker->set_running();
  tracker->table_started(0, 100);
  tracker->table_progress(0, 40, false);
  ControlContext only_initial;
  only_initial.unavailable_reason = "this pipeline runs no incremental snapshots";
  only_initial.initial = tracker;
  const std::atomic<bool> stopping{false};
  auto a = answer(handle_control_request(R"({"command":"status"})", only_initial, stopping));
  ASSERT_TRUE(a.at("ok").as_bool()) << boost::json::serialize(a);
  EXPECT_FALSE(a.contains("state"));
  auto status = BlockingSnapshotStatus::from_json(boost::json::serialize(a.at("initial_snapshot")));
  ASSERT_TRUE(status) << status.error().report();
  EXPECT_EQ(status->phase, BlockingSnapshotStatus::Phase::kRunning);
  EXPECT_EQ(status->rows_read(), 40u);
  // The other commands still need an incremental snapshot handle.
  a = answer(handle_control_request(R"({"command":"pause"})", only_initial, stopping));
  EXPECT_EQ(error_of(a), "this pipeline runs no incremental snapshots");
}

TEST(InitialSnapshotTracker, FollowsTheSnapshotFromPendingToComplete) {
  BlockingSnapshotTracker tracker("initial");
  EXPECT_EQ(tracker.status().phase, BlockingSnapshotStatus::Phase::kNone);
  // Resumed: the first table was completed by an earlier process.
  tracker.set_pending("s@1", {"public.a", "public.b", "public.c"}, 1, true, 1000);
  auto s = tracker.status();
  EXPECT_EQ(s.phase, BlockingSnapshotStatus::Phase::kPending);
  EXPECT_TRUE(s.resumed);
  EXPECT_TRUE(s.tables[0].earlier);
  EXPECT_TRUE(s.tables[0].complete);
  EXPECT_EQ(s.tables_complete(), 1u);
  tracker.set_running();
  tracker.table_started(1, 10);
  tracker.table_progress(1, 10, true);
  tracker.table_started(2, 0);
  tracker.table_progress(2, 3, false);
  s = tracker.status();
  EXPECT_EQ(s.phase, BlockingSnapshotStatus::Phase::kRunning);
  EXPECT_EQ(s.started_ms, 1000);  // kept from the checkpoint, not reset by set_running
  EXPECT_EQ(s.rows_read(), 13u);
  EXPECT_EQ(s.tables_complete(), 2u);
  tracker.set_stopped();
  EXPECT_EQ(tracker.status().phase, BlockingSnapshotStatus::Phase::kStopped);
  tracker.set_complete();
  s = tracker.status();
  EXPECT_EQ(s.phase, BlockingSnapshotStatus::Phase::kComplete);
  EXPECT_EQ(s.tables_complete(), 3u);
  EXPECT_GT(s.finished_ms, 0);
  // A completed snapshot is not turned into a stopped one by the shutdown that follows.
  tracker.set_stopped();
  EXPECT_EQ(tracker.status().phase, BlockingSnapshotStatus::Phase::kComplete);
  tracker.set_failed("boom");
  EXPECT_EQ(tracker.status().error, "boom");
  tracker.set_none();
  s = tracker.status();
  EXPECT_EQ(s.phase, BlockingSnapshotStatus::Phase::kNone);
  EXPECT_TRUE(s.tables.empty());
  EXPECT_EQ(s.mode, "initial");
}

TEST(InitialSnapshotTracker, JsonRoundTripsAndRefusesMalformedInput) {
  BlockingSnapshotTracker tracker("when_needed");
  tracker.set_pending("s@2", {"public.a", "public.b"}, 1, false, 5);
  tracker.set_running();
  tracker.table_started(1, 2.5e6);
  tracker.table_progress(1, 1200, false);
  const auto s = tracker.status();
  auto back = BlockingSnapshotStatus::from_json(s.to_json());
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->to_json(), s.to_json());
  EXPECT_EQ(back->tables[1].estimated_rows, 2.5e6);
  // An unknown estimate is null, not a negative number.
  EXPECT_CONTAINS(s.to_json(), R"("table":"public.a","rows_read":0,"estimated_rows":null)");
  // A known estimate is a row count: an integer, not 2.5E6.
  EXPECT_CONTAINS(s.to_json(), R"("rows_read":1200,"estimated_rows":2500000,)");
  EXPECT_TRUE(back->tables[0].earlier);
  EXPECT_FALSE(BlockingSnapshotStatus::from_json("[]"));
  EXPECT_FALSE(BlockingSnapshotStatus::from_json(R"({"phase":"sleeping"})"));
  auto missing = BlockingSnapshotStatus::from_json(R"({"phase":"running"})");
  ASSERT_FALSE(missing);
  EXPECT_CONTAINS(missing.error().report(), "blocking snapshot status is malformed");
}

TEST(InitialSnapshotStatus, PrintsEachPhaseInWords) {
  BlockingSnapshotStatus s;
  s.mode = "never";
  EXPECT_EQ(format_initial_snapshot_status(s, 0),
            "initial snapshot: none (snapshot mode never takes none)\n");
  s.mode = "initial";
  EXPECT_CONTAINS(format_initial_snapshot_status(s, 0),
                  "none in this run (snapshot mode initial): the checkpoint it resumed from "
                  "holds no snapshot in progress");

  BlockingSnapshotTracker tracker("initial");
  tracker.set_pending("slot@0/1", {"public.orders", "public.customers", "public.items"}, 1, true,
                      10'000);
  EXPECT_CONTAINS(format_initial_snapshot_status(tracker.status(), 20'000),
                  "initial snapshot slot@0/1: pending");
  tracker.set_running();
  tracker.table_started(1, 1000);
  tracker.table_progress(1, 250, false);
  std::string text = format_initial_snapshot_status(tracker.status(), 40'000);
  EXPECT_CONTAINS(text,
                  "initial snapshot slot@0/1: running: 250 rows read, 1 of 3 tables "
                  "complete, 30 s (resumed)");
  EXPECT_CONTAINS(text, "TABLE             ROWS READ  ESTIMATED        COMPLETE");
  EXPECT_CONTAINS(text, "public.orders     -          unknown          yes (earlier run)");
  EXPECT_CONTAINS(text, "public.customers  250        1000 (25% done)  no");
  EXPECT_CONTAINS(text, "public.items      0          -                no");
  tracker.set_failed("snapshot slot@0/1: permission denied for table items");
  text = format_initial_snapshot_status(tracker.status(), 0);
  EXPECT_CONTAINS(text, "initial snapshot slot@0/1: failed: snapshot slot@0/1: permission denied");

  BlockingSnapshotTracker done("initial_only");
  done.set_pending("x@1", {"app.t"}, 0, false, 0);
  done.set_running();
  done.table_started(0, 0);
  done.table_progress(0, 1, true);
  done.set_complete();
  text = format_initial_snapshot_status(done.status(), 0);
  EXPECT_CONTAINS(text, "initial snapshot x@1: complete: 1 row from 1 table read in 0 s\n");
  EXPECT_EQ(text.find("streaming"), std::string::npos) << text;
}

// A source_state with the blocking snapshot's own member beside the incremental one.
std::string saved_state() {
  IncrementalSnapshotState s;
  s.snapshot_id = "slot-incremental-4";
  s.generation = 4;
  s.paused = true;
  for (const char* name : {"public.orders", "public.customers"}) {
    IncrementalSnapshotTableState t;
    t.table = name;
    t.key_columns = {"id"};
    t.cursor = std::vector<std::string>{"17"};
    t.generation = 4;
    t.chunks = 2;
    t.rows = 34;
    s.tables.push_back(t);
  }
  return R"({"other":{"x":1},"incremental":)" + s.to_json() + "}";
}

IncrementalSnapshotState incremental_of(const std::string& source_state) {
  auto v = boost::json::parse(source_state);
  auto s = IncrementalSnapshotState::from_json(boost::json::serialize(v.at("incremental")));
  EXPECT_TRUE(s) << s.error().report();
  return s ? *s : IncrementalSnapshotState{};
}

TEST(SnapshotForget, RemovesTheNamedTablesAndAdvancesTheGeneration) {
  auto out = forget_incremental_tables(saved_state(), {"orders"}, false, 0);
  ASSERT_TRUE(out) << out.error().report();
  EXPECT_EQ(out->forgotten, std::vector<std::string>{"public.orders"});
  EXPECT_EQ(out->generation, 5u);
  const auto s = incremental_of(out->source_state);
  ASSERT_EQ(s.tables.size(), 1u);
  EXPECT_EQ(s.tables[0].table, "public.customers");
  EXPECT_EQ(s.generation, 5u);
  EXPECT_TRUE(s.paused);  // the rest of the snapshot is as it was
  EXPECT_EQ(boost::json::parse(out->source_state).at("other").at("x").as_int64(), 1);
}

TEST(SnapshotForget, AllEmptiesTheSnapshotAndUnpausesIt) {
  auto out = forget_incremental_tables(saved_state(), {}, true, 0);
  ASSERT_TRUE(out) << out.error().report();
  EXPECT_EQ(out->forgotten, (std::vector<std::string>{"public.orders", "public.customers"}));
  const auto s = incremental_of(out->source_state);
  EXPECT_TRUE(s.tables.empty());
  EXPECT_FALSE(s.paused);
  EXPECT_EQ(s.generation, 5u);
  EXPECT_EQ(s.status(), "idle");
}

TEST(SnapshotForget, AnUnknownTableChangesNothingAndNamesWhatIsThere) {
  auto out = forget_incremental_tables(saved_state(), {"public.orders", "public.gone"}, false, 0);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().kind(), ErrorKind::kInvalidState);
  EXPECT_CONTAINS(out.error().report(), "has no table public.gone");
  EXPECT_CONTAINS(out.error().report(), "(it has public.orders, public.customers)");
}

TEST(SnapshotForget, NoIncrementalStateIsNothingToForget) {
  for (const std::string& state :
       {std::string(), std::string(R"({"other":1})"), std::string("x")}) {
    auto out = forget_incremental_tables(state, {}, true, 0);
    ASSERT_FALSE(out) << state;
    EXPECT_CONTAINS(out.error().report(), "no incremental snapshot state: nothing to forget");
  }
}

TEST(SnapshotForget, AnUnreadableStateIsDroppedWholeOnlyWithAll) {
  const std::string broken = R"({"incremental":{"generation":9,"tables":"oops"}})";
  auto named = forget_incremental_tables(broken, {"public.t"}, false, 0);
  ASSERT_FALSE(named);
  EXPECT_CONTAINS(named.error().report(), "use --all");
  auto all = forget_incremental_tables(broken, {}, true, 0);
  ASSERT_TRUE(all) << all.error().report();
  EXPECT_EQ(all->generation, 10u);
  EXPECT_TRUE(incremental_of(all->source_state).tables.empty());
  // Without a legible generation the new one is above any count a request could reach.
  auto unknown =
      forget_incremental_tables(R"({"incremental":"garbage"})", {}, true, 1'700'000'000'000);
  ASSERT_TRUE(unknown) << unknown.error().report();
  EXPECT_EQ(unknown->generation, 1'700'000'001u);
}

// `cppcdc snapshot request t` implies PostgreSQL's "public."; MySQL and MariaDB have no default
// database, so their names go to the server as written (it names the problem).
TEST(SnapshotControlNames, ABareNameIsQualifiedForPostgresOnly) {
  EXPECT_EQ(qualify_table("orders"), "public.orders");
  EXPECT_EQ(qualify_table("orders", "postgres"), "public.orders");
  EXPECT_EQ(qualify_table("app.orders", "postgres"), "app.orders");
  EXPECT_EQ(qualify_table("orders", "mariadb"), "orders");
  EXPECT_EQ(qualify_table("orders", "mysql"), "orders");
  EXPECT_EQ(qualify_table("app.orders", "mariadb"), "app.orders");
}

}  // namespace
}  // namespace cppcdc::server
