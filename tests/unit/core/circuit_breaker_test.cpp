// The circuit breaker (core concepts, "Circuit breaker"): its state machine on its own, then
// the runtime retrying a failing sink and a failing source under it, on a fake clock.

#include "core/circuit_breaker.hpp"

#include <gtest/gtest.h>

#include "fake_runtime.hpp"

using namespace cppcdc;
using cppcdc::test::FakeRuntime;
using cppcdc::test::FlakySink;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ConnectionRetryPolicy backoff(std::uint32_t initial, std::uint32_t max,
                              std::optional<std::uint32_t> retries = std::nullopt) {
  ConnectionRetryPolicy p;
  p.max_retries = retries;
  p.initial_delay_ms = initial;
  p.max_delay_ms = max;
  return p;
}

}  // namespace

TEST(CircuitBreaker, DefaultsAreTheSpecifiedOnes) {
  CircuitBreakerPolicy p;
  EXPECT_EQ(p.consecutive_threshold, 10u);
  EXPECT_EQ(p.cooldown_ms, 30'000u);
  EXPECT_EQ(p.max_open_cycles, 3u);
}

TEST(CircuitBreaker, BacksOffWhileClosedThenOpensProbesAndEscalates) {
  detail::CircuitBreaker b(backoff(100, 300), CircuitBreakerPolicy{3, 1'000, 2});
  EXPECT_EQ(b.state(), BreakerState::kClosed);
  auto n = b.on_failure();
  EXPECT_FALSE(n.give_up);
  EXPECT_EQ(n.wait.count(), 100);
  n = b.on_failure();
  EXPECT_EQ(n.wait.count(), 200);
  EXPECT_EQ(b.state(), BreakerState::kClosed);
  n = b.on_failure();  // the third in a row: open
  EXPECT_EQ(b.state(), BreakerState::kOpen);
  EXPECT_EQ(n.wait.count(), 1'000);
  b.before_attempt();
  EXPECT_EQ(b.state(), BreakerState::kHalfOpen);
  n = b.on_failure();  // the probe failed: open again, second cycle
  EXPECT_EQ(b.state(), BreakerState::kOpen);
  EXPECT_FALSE(n.give_up);
  EXPECT_EQ(n.wait.count(), 1'000);
  b.before_attempt();
  n = b.on_failure();  // the probe of the last cycle failed too
  EXPECT_TRUE(n.give_up);
  EXPECT_EQ(b.state(), BreakerState::kError);
  EXPECT_TRUE(has(n.note, "recoverable_error_breaker_max_open_cycles")) << n.note;
  EXPECT_EQ(b.recoverable_errors(), 5u);
  b.on_success();  // terminal
  EXPECT_EQ(b.state(), BreakerState::kError);
}

TEST(CircuitBreaker, ASuccessfulProbeClosesItAndResetsTheCounts) {
  detail::CircuitBreaker b(backoff(10, 1'000), CircuitBreakerPolicy{2, 500, 1});
  (void)b.on_failure();
  (void)b.on_failure();
  ASSERT_EQ(b.state(), BreakerState::kOpen);
  b.before_attempt();
  b.on_success();
  EXPECT_EQ(b.state(), BreakerState::kClosed);
  EXPECT_EQ(b.consecutive(), 0u);
  // A fresh run of failures starts from the initial back-off and may open again.
  EXPECT_EQ(b.on_failure().wait.count(), 10);
  EXPECT_EQ(b.on_failure().wait.count(), 500);
  EXPECT_EQ(b.state(), BreakerState::kOpen);
  EXPECT_EQ(b.recoverable_errors(), 4u);
}

TEST(CircuitBreaker, BackOffDoublesUpToTheCap) {
  detail::CircuitBreaker b(backoff(100, 5'000), CircuitBreakerPolicy{100, 1, 1});
  std::vector<long> waits;
  for (int i = 0; i < 9; ++i) waits.push_back(static_cast<long>(b.on_failure().wait.count()));
  EXPECT_EQ(waits, (std::vector<long>{100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000}));
}

TEST(CircuitBreaker, TheRetryBudgetEndsItBeforeTheBreakerWould) {
  detail::CircuitBreaker b(backoff(1, 1, 2), CircuitBreakerPolicy{10, 1, 3});
  EXPECT_FALSE(b.on_failure().give_up);
  EXPECT_FALSE(b.on_failure().give_up);
  auto n = b.on_failure();
  EXPECT_TRUE(n.give_up);
  EXPECT_TRUE(has(n.note, "gave up after 2 retries")) << n.note;
  EXPECT_TRUE(has(n.note, "connection_retry_max_retries")) << n.note;
  EXPECT_EQ(b.state(), BreakerState::kError);
}

TEST(RuntimeBreaker, ARecoverableSinkFailureRedeliversTheSameBatchAndLosesNothing) {
  FakeRuntime f;
  f.source->add(5);
  f.source->finish_when_empty = true;
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  sink.failures = 3;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 5u);
  EXPECT_EQ(sink.writes, 4);      // three refusals, then the same batch again
  EXPECT_EQ(sink.recoveries, 3);  // the sink was told before each new attempt
  EXPECT_EQ(sink.received, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(f.clock.slept, 100 + 200 + 400);  // the back-off, never a real sleep
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.recoverable_errors, 3u);
  EXPECT_EQ(s.breaker_state, BreakerState::kClosed);
  EXPECT_EQ(s.events_committed, 5u);
  EXPECT_EQ(f.checkpoint->record->offset, "5");
  EXPECT_FALSE(s.health.is_alertable()) << s.health.reason;  // the commit cleared the failure
}

namespace {
// A transactional sink whose flush (delivery inside the open transaction) is refused a given
// number of times; what it commits is what a reader of committed data would see.
class FlakyTransactionalSink final : public TransactionalSink {
 public:
  Status begin() override {
    steps.push_back("begin");
    pending.clear();
    return ok();
  }
  Status write(std::span<const Event> events) override {
    steps.push_back("write");
    for (const auto& e : events) pending.push_back(e.source.offset);
    return ok();
  }
  Status flush() override {
    steps.push_back("flush");
    if (failures > 0) {
      --failures;
      return fail(Error::sink(ErrorKind::kTransient, "a record was refused"));
    }
    return ok();
  }
  Status commit(const std::optional<CheckpointRecord>& record) override {
    steps.push_back("commit");
    if (commit_failures > 0) {
      --commit_failures;
      return fail(Error::sink(ErrorKind::kTransient, "the coordinator timed out"));
    }
    committed.insert(committed.end(), pending.begin(), pending.end());
    pending.clear();
    if (record) last_record = record;
    return ok();
  }
  Status abort() override {
    steps.push_back("abort");
    pending.clear();
    return ok();
  }
  Status recover() override {
    steps.push_back("recover");
    return ok();
  }
  Status close() override { return ok(); }
  std::string name() const override { return "flaky-tx"; }

  int failures = 0;
  int commit_failures = 0;
  std::vector<std::string> steps;
  std::vector<std::string> pending;
  std::vector<std::string> committed;
  std::optional<CheckpointRecord> last_record;
};
}  // namespace

TEST(RuntimeBreaker, ARefusedDeliveryInsideATransactionAbortsItAndRetriesTheSameBatch) {
  FakeRuntime f;
  f.source->add(3);
  f.source->finish_when_empty = true;
  ASSERT_TRUE(f.runtime->start());
  FlakyTransactionalSink sink;
  sink.failures = 2;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 3u);
  // Each refused attempt is aborted, so nothing of it is ever committed; the third commits.
  // Each retry recovers the sink first (Sink::recover()).
  const std::vector<std::string> expected = {"begin", "write", "flush", "abort", "recover",
                                             "begin", "write", "flush", "abort", "recover",
                                             "begin", "write", "flush", "commit"};
  EXPECT_EQ(sink.steps, expected);
  EXPECT_EQ(sink.committed, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(f.clock.slept, 100 + 200);  // the back-off, never a real sleep
  ASSERT_TRUE(sink.last_record);
  EXPECT_EQ(sink.last_record->offset, "3");
  // The record went with the data, not through the checkpoint backend.
  EXPECT_FALSE(f.checkpoint->record);
  EXPECT_EQ(f.runtime->admin_snapshot().recoverable_errors, 2u);
}

TEST(RuntimeBreaker, ARefusedTransactionalCommitIsRetriedWithTheWholeBatch) {
  FakeRuntime f;
  f.source->add(3);
  f.source->finish_when_empty = true;
  ASSERT_TRUE(f.runtime->start());
  FlakyTransactionalSink sink;
  sink.commit_failures = 1;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 3u);
  // The refused commit aborted the transaction; the batch was written and committed again.
  const std::vector<std::string> expected = {"begin",   "write", "flush", "commit", "abort",
                                             "recover", "begin", "write", "flush",  "commit"};
  EXPECT_EQ(sink.steps, expected);
  EXPECT_EQ(sink.committed, (std::vector<std::string>{"1", "2", "3"}));
  ASSERT_TRUE(sink.last_record);
  EXPECT_EQ(sink.last_record->offset, "3");
  EXPECT_EQ(f.clock.slept, 100);
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed, 3u);
  EXPECT_EQ(s.checkpoint_offset, "3");
  EXPECT_FALSE(f.checkpoint->record);  // never through the backend
}

TEST(RuntimeBreaker, ASinkThatCannotRecoverEndsTheRetriesWithItsError) {
  FakeRuntime f;
  f.source->add(2);
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  sink.failures = 5;
  sink.recover_error = Error::sink(ErrorKind::kTerminal, "the producer was fenced");
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  EXPECT_TRUE(has(delivered.error().report(), "the producer was fenced"))
      << delivered.error().report();
  EXPECT_EQ(sink.writes, 1);  // no attempt after the sink said it cannot take one
  EXPECT_EQ(sink.recoveries, 1);
  EXPECT_EQ(f.runtime->admin_snapshot().events_committed, 0u);
}

TEST(RuntimeBreaker, ASinkThatKeepsFailingOpensTheBreakerAndEscalatesToTheErrorState) {
  FakeRuntime f;  // threshold 4, cooldown 1 s, 2 open cycles
  f.source->add(2);
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  sink.fail_forever = true;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  const std::string report = delivered.error().report();
  EXPECT_TRUE(has(report, "recoverable_error_breaker_max_open_cycles")) << report;
  EXPECT_TRUE(has(report, "the destination is unavailable")) << report;
  EXPECT_TRUE(has(report, "flaky")) << report;
  // 4 closed attempts, then a failed probe after each of the 2 cooldowns.
  EXPECT_EQ(sink.writes, 6);
  EXPECT_EQ(f.clock.slept, 100 + 200 + 400 + 1'000 + 1'000);
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.breaker_state, BreakerState::kError);
  EXPECT_EQ(s.recoverable_errors, 6u);
  EXPECT_EQ(s.events_committed, 0u);
  // The run failed: not running (never "healthy") at once, and once the failures outlast the
  // threshold the verdict blames the destination, not the loop.
  EXPECT_EQ(s.health.kind, HealthVerdict::Kind::kNotRunning) << s.health.reason;
  EXPECT_TRUE(has(s.health.reason, "runtime failed after 6 failed delivery attempts"))
      << s.health.reason;
  f.clock.advance(30'000);
  EXPECT_EQ(f.health().cause, StallCause::kDeliveryFailing) << f.health().reason;
  EXPECT_TRUE(has(f.health().reason, "flaky")) << f.health().reason;
}

TEST(RuntimeBreaker, ConfigurationErrorsOfASinkAreNeverRetried) {
  FakeRuntime f;
  f.source->add(1);
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  sink.fail_forever = true;
  sink.error = Error::sink(ErrorKind::kConfiguration, "topic name is empty");
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  EXPECT_EQ(delivered.error().kind(), ErrorKind::kConfiguration);
  EXPECT_EQ(sink.writes, 1);
  EXPECT_EQ(f.clock.slept, 0);
  EXPECT_EQ(f.runtime->admin_snapshot().recoverable_errors, 0u);
}

TEST(RuntimeBreaker, AnEventOverMaxEventBytesEndsTheRunWithoutRetryNamingTableSizeAndKey) {
  auto options = FakeRuntime::defaults();
  options.max_event_bytes = 64;
  FakeRuntime f(options);
  f.source->add(1);
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  const std::string report = delivered.error().report();
  EXPECT_EQ(delivered.error().kind(), ErrorKind::kInvalidData);
  EXPECT_TRUE(has(report, "public.t")) << report;
  EXPECT_TRUE(has(report, "max_event_bytes")) << report;
  EXPECT_TRUE(has(report, " bytes")) << report;
  EXPECT_EQ(sink.writes, 0);
  EXPECT_EQ(f.runtime->admin_snapshot().recoverable_errors, 0u);
}

TEST(RuntimeBreaker, EventsWithinMaxEventBytesPass) {
  auto options = FakeRuntime::defaults();
  options.max_event_bytes = 1'000'000;
  FakeRuntime f(options);
  f.source->add(3);
  f.source->finish_when_empty = true;
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 3u);
}

TEST(RuntimeBreaker, ASourceThatStaysDownOpensTheSameBreakerAndFailsTheRuntime) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->poll_errors.push_back(Error::source(ErrorKind::kTransient, "connection reset"));
  f.source->start_errors.push_back(Error::source(ErrorKind::kTransient, "connection refused"));
  f.source->start_errors_forever = true;
  FlakySink sink;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  const std::string report = delivered.error().report();
  EXPECT_TRUE(has(report, "recoverable_error_breaker_max_open_cycles")) << report;
  EXPECT_TRUE(has(report, "connection refused")) << report;
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.state, RuntimeState::kFailed);
  EXPECT_EQ(s.breaker_state, BreakerState::kError);
  EXPECT_EQ(s.recoverable_errors, 6u);  // the broken poll, then five failed reconnections
  EXPECT_EQ(f.source->starts, 1 + 5);
}

TEST(RuntimeBreaker, ASourceThatComesBackClosesTheBreaker) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(2);
  f.source->finish_when_empty = true;
  f.source->poll_errors.push_back(Error::source(ErrorKind::kTransient, "connection reset"));
  for (int i = 0; i < 4; ++i) {  // long enough to open the breaker once
    f.source->start_errors.push_back(Error::source(ErrorKind::kTransient, "refused"));
  }
  FlakySink sink;
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 2u);
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.breaker_state, BreakerState::kClosed);
  EXPECT_EQ(s.recoverable_errors, 5u);
  EXPECT_EQ(f.clock.slept, 100 + 200 + 400 + 1'000 + 1'000);
}

TEST(RuntimeBreaker, ACancelledRunStopsWaitingAndLeavesTheBatchUnacknowledged) {
  FakeRuntime f;
  f.source->add(1);
  ASSERT_TRUE(f.runtime->start());
  FlakySink sink;
  sink.fail_forever = true;
  std::atomic<bool> cancel{false};
  f.cancel_on_wait = &cancel;  // SIGTERM while the breaker waits
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 0u);
  EXPECT_EQ(sink.writes, 1);
  EXPECT_LE(f.clock.slept, 100);
  EXPECT_FALSE(f.runtime->stop());  // the batch is in flight: a forced stop replays it
  f.runtime->force_stop();
}

TEST(RuntimeBreaker, TheLibraryDefaultKeepsTheRetryBudgetOfTheConnectionRetryPolicy) {
  auto options = FakeRuntime::defaults();
  options.connection_retry = ConnectionRetryPolicy{};  // 5 retries
  options.connection_retry.initial_delay_ms = 1;
  options.breaker = CircuitBreakerPolicy{};  // 10 in a row before it opens
  FakeRuntime f(options);
  f.source->start_errors.push_back(Error::source(ErrorKind::kTransient, "refused"));
  f.source->start_errors_forever = true;
  auto st = f.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_TRUE(has(st.error().report(), "gave up after 5 retries")) << st.error().report();
  EXPECT_EQ(f.source->starts, 6);
  EXPECT_EQ(f.clock.slept, 1 + 2 + 4 + 8 + 16);
}

TEST(RuntimeBreaker, AStopSignalEndsTheRetriesOfAStartThatCannotConnect) {
  FakeRuntime f;
  f.source->start_errors.push_back(Error::source(ErrorKind::kTransient, "connection refused"));
  f.source->start_errors_forever = true;
  std::atomic<bool> cancel{false};
  f.cancel_on_wait = &cancel;  // SIGTERM during the first back-off
  auto st = f.runtime->start(cancel);
  ASSERT_FALSE(st);
  EXPECT_TRUE(has(st.error().report(), "stopped while waiting to retry")) << st.error().report();
  EXPECT_TRUE(has(st.error().report(), "connection refused")) << st.error().report();
  EXPECT_EQ(f.source->starts, 1);
  EXPECT_LE(f.clock.slept, 100);
}

// A process started while its database is down (ops trial, M4): the check it makes before the
// start (cppcdc run: is the source in use by another process?) goes through the runtime's
// retry policy and breaker like a reconnect in the middle of a run: each failure is a
// recoverable error of the source side, the breaker opens, half-opens and escalates with the
// same settings, and the admin snapshot says so while it happens.
TEST(RuntimeBreaker, ACheckBeforeTheStartAgainstADatabaseThatStaysDownEscalatesTheSameBreaker) {
  FakeRuntime f;  // threshold 4, cooldown 1 s, 2 open cycles
  std::vector<RuntimeAdminSnapshot> seen;
  f.on_wait = [&] { seen.push_back(f.runtime->admin_snapshot()); };
  int attempts = 0;
  std::atomic<bool> cancel{false};
  auto st = f.runtime->await_before_start(
      [&]() -> Status {
        ++attempts;
        return fail(Error::source(ErrorKind::kTransient, "connection refused"));
      },
      "waiting for the fake source", cancel);
  ASSERT_FALSE(st);
  const std::string report = st.error().report();
  EXPECT_TRUE(has(report, "recoverable_error_breaker_max_open_cycles")) << report;
  EXPECT_TRUE(has(report, "connection refused")) << report;
  EXPECT_EQ(attempts, 4 + 2);  // four closed attempts, then one probe per open cycle
  EXPECT_EQ(f.clock.slept, 100 + 200 + 400 + 1'000 + 1'000);
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.state, RuntimeState::kFailed);
  EXPECT_EQ(s.breaker_state, BreakerState::kError);
  EXPECT_EQ(s.recoverable_errors, 6u);
  EXPECT_EQ(s.retrying, "source");
  EXPECT_TRUE(has(s.last_recoverable_error, "connection refused")) << s.last_recoverable_error;
  EXPECT_FALSE(s.source_connected);
  // While it waited: not running, connecting, the breaker's states in turn.
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().breaker_state, BreakerState::kClosed);
  EXPECT_EQ(seen.front().recoverable_errors, 1u);
  EXPECT_EQ(seen.front().state, RuntimeState::kCreated);
  EXPECT_EQ(seen.front().health.kind, HealthVerdict::Kind::kNotRunning);
  EXPECT_TRUE(has(seen.front().health.reason, "connecting to the source (1 failed attempts"))
      << seen.front().health.reason;
  // Waiting out the two cooldowns: open, after the fourth and after the fifth failure.
  std::vector<std::uint64_t> open_after;
  for (const auto& w : seen) {
    if (w.breaker_state == BreakerState::kOpen &&
        (open_after.empty() || open_after.back() != w.recoverable_errors)) {
      open_after.push_back(w.recoverable_errors);
    }
  }
  EXPECT_EQ(open_after, (std::vector<std::uint64_t>{4, 5}));
  // A runtime whose breaker escalated does not start.
  EXPECT_FALSE(f.runtime->start());
  EXPECT_EQ(f.source->starts, 0);
}

TEST(RuntimeBreaker, ACheckBeforeTheStartThatGetsThroughLeavesTheCountAndClosesTheBreaker) {
  FakeRuntime f;
  int attempts = 0;
  std::atomic<bool> cancel{false};
  auto st = f.runtime->await_before_start(
      [&]() -> Status {
        if (++attempts <= 5) return fail(Error::source(ErrorKind::kTransient, "refused"));
        return ok();
      },
      "waiting for the fake source", cancel);
  ASSERT_TRUE(st) << st.error().report();
  auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.breaker_state, BreakerState::kClosed);
  EXPECT_EQ(s.recoverable_errors, 5u);
  EXPECT_EQ(s.consecutive_errors, 0u);
  EXPECT_EQ(s.state, RuntimeState::kCreated);
  ASSERT_TRUE(f.runtime->start());
  s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.recoverable_errors, 5u);  // still counted once streaming
  EXPECT_TRUE(s.source_connected);
}

TEST(RuntimeBreaker, AStopSignalEndsTheWaitOfACheckBeforeTheStart) {
  FakeRuntime f;
  std::atomic<bool> cancel{false};
  f.cancel_on_wait = &cancel;
  auto st = f.runtime->await_before_start(
      [] { return Status(fail(Error::source(ErrorKind::kTransient, "connection refused"))); },
      "waiting", cancel);
  ASSERT_FALSE(st);
  EXPECT_TRUE(has(st.error().report(), "stopped while waiting to retry")) << st.error().report();
  EXPECT_LE(f.clock.slept, 100);
}

TEST(RuntimeBreaker, ACheckBeforeTheStartThatIsNotRetryableEndsAtOnce) {
  FakeRuntime f;
  std::atomic<bool> cancel{false};
  int attempts = 0;
  auto st = f.runtime->await_before_start(
      [&]() -> Status {
        ++attempts;
        return fail(Error::source(ErrorKind::kTerminal, "password authentication failed"));
      },
      "waiting", cancel);
  ASSERT_FALSE(st);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(f.runtime->admin_snapshot().recoverable_errors, 0u);
}

// The checkpoint's lifetime count and position show before the source is reached: a process
// restarted during an outage does not report 0 events committed over the pipeline's life.
TEST(RuntimeBreaker, TheCheckpointLoadedBeforeTheStartShowsTheLifetimeCountAtOnce) {
  FakeRuntime f;
  CheckpointRecord record;
  record.source_type = "fake";
  record.source_id = "fake-1";
  record.offset = "42";
  record.committed_events = 1234;
  f.checkpoint->record = record;
  ASSERT_TRUE(f.runtime->load_checkpoint());
  auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed_lifetime, 1234u);
  EXPECT_EQ(s.events_committed, 0u);
  EXPECT_EQ(s.checkpoint_offset.value_or(""), "42");
  EXPECT_EQ(s.state, RuntimeState::kCreated);
  ASSERT_TRUE(f.runtime->load_checkpoint());  // again: nothing changes
  ASSERT_TRUE(f.runtime->start());
  s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed_lifetime, 1234u);
  EXPECT_EQ(s.events_committed, 0u);
}

// An idle position (the source moved on without events for the pipeline) that cannot be
// checkpointed for a while: nothing waits on it, so the runtime keeps running with the
// previous checkpoint and records the position at a later poll, under the shared breaker.
TEST(RuntimeBreaker, AnIdlePositionTheBackendCannotSaveForAWhileIsSavedLaterWithoutFailing) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "5";
  f.checkpoint->save_errors = {Error::checkpoint(ErrorKind::kTransient, "the server went away"),
                               Error::checkpoint(ErrorKind::kTransient, "the server went away")};
  for (int i = 0; i < 2; ++i) {
    auto batch = f.runtime->poll_event_batch();
    ASSERT_TRUE(batch) << batch.error().report();
    EXPECT_TRUE(batch->empty());
    EXPECT_FALSE(f.checkpoint->record);
    EXPECT_EQ(f.source->confirmed, "");  // never confirmed before it is durable
  }
  EXPECT_EQ(f.clock.slept, 100 + 200);  // the breaker's back-off between the attempts
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch) << batch.error().report();
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "5");
  EXPECT_EQ(f.source->confirmed, "5");
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.recoverable_errors, 2u);
  EXPECT_NE(s.state, RuntimeState::kFailed);
}

TEST(RuntimeBreaker, AnIdlePositionThatCanNeverBeSavedEndsTheRunOnceTheBreakerGivesUp) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "5";
  f.checkpoint->save_errors = {Error::checkpoint(ErrorKind::kTransient, "the server went away")};
  f.checkpoint->save_errors_forever = true;
  Status failed = ok();
  for (int i = 0; i < 100 && failed; ++i) {
    auto batch = f.runtime->poll_event_batch();
    if (!batch) failed = fail(batch.error());
  }
  ASSERT_FALSE(failed) << "the breaker never gave up";
  EXPECT_TRUE(has(failed.error().report(), "the server went away")) << failed.error().report();
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  EXPECT_FALSE(f.checkpoint->record);
}

TEST(RuntimeBreaker, AnIdlePositionARefusingBackendCannotTakeEndsTheRunAtOnce) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "5";
  f.checkpoint->save_errors = {Error::checkpoint(ErrorKind::kTerminal, "the record is damaged")};
  auto batch = f.runtime->poll_event_batch();
  ASSERT_FALSE(batch);
  EXPECT_TRUE(has(batch.error().report(), "the record is damaged")) << batch.error().report();
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  EXPECT_EQ(f.clock.slept, 0);  // not retried
}

// The same with the position committed through a transactional sink (effectively_once): the
// refused idle commit is aborted, and the sink recovers before its next transaction.
TEST(RuntimeBreaker, AnIdleCommitATransactionalSinkRefusesIsRetriedAfterTheSinkRecovers) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "5";
  f.source->finish_when_empty = true;  // each run ends at its first empty poll
  FlakyTransactionalSink sink;
  sink.commit_failures = 1;
  std::atomic<bool> cancel{false};
  auto first = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(first) << first.error().report();
  EXPECT_FALSE(sink.last_record);
  EXPECT_EQ(f.runtime->admin_snapshot().recoverable_errors, 1u);
  auto second = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(second) << second.error().report();
  ASSERT_TRUE(sink.last_record);
  EXPECT_EQ(sink.last_record->offset, "5");
  EXPECT_EQ(f.source->confirmed, "5");
  const std::vector<std::string> expected = {"begin",   "commit", "abort",
                                             "recover", "begin",  "commit"};
  EXPECT_EQ(sink.steps, expected);
  EXPECT_FALSE(f.checkpoint->record);  // never through the backend
}
