// The health verdict (API guide, "Health verdict"): every verdict and stall cause driven by a
// fake clock, the order of the checks, and the change key.

#include "core/health.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_runtime.hpp"

using namespace cppcdc;
using cppcdc::test::FakeRuntime;

namespace {

constexpr std::int64_t kThreshold = 30'000;  // max_poll_wait_ms 500 x 6 is below the floor

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Error lost_slot() {
  return Error::source(ErrorKind::kTerminal, "replication slot s was invalidated")
      .with_condition(ErrorCondition::kSourcePositionLost);
}

}  // namespace

TEST(HealthThreshold, IsSixPollWaitsWithAThirtySecondFloor) {
  EXPECT_EQ(detail::stall_threshold_ms(500), 30'000);
  EXPECT_EQ(detail::stall_threshold_ms(0), 30'000);
  EXPECT_EQ(detail::stall_threshold_ms(10'000), 60'000);
}

TEST(Health, NotRunningBeforeStartAndAfterStop) {
  FakeRuntime f;
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kNotRunning);
  EXPECT_FALSE(f.health().is_alertable());
  ASSERT_TRUE(f.runtime->start());
  ASSERT_TRUE(f.runtime->stop());
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kNotRunning);
  EXPECT_EQ(f.health().change_key(), "not_running");
}

TEST(Health, AQuietSourceIsIdleForAsLongAsPollsReturn) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  for (int i = 0; i < 100; ++i) {  // 100 minutes of empty polls, one every minute
    f.clock.advance(kThreshold / 2);
    auto batch = f.runtime->poll_event_batch();
    ASSERT_TRUE(batch && batch->empty());
    f.clock.advance(kThreshold / 2);
    EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kIdle) << f.health().reason;
  }
}

TEST(Health, HealthyWhileEventsFlowThenIdleWhenTheSourceGoesQuiet) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(3);
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 3u);
  EXPECT_EQ(f.runtime->admin_snapshot().last_delivery_at_ms, f.clock.now);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kHealthy) << f.health().reason;
  EXPECT_EQ(f.health().change_key(), "healthy");
  // A quiet afternoon: empty polls keep the loop fresh, the delivery goes stale.
  for (int i = 0; i < 4; ++i) {
    f.clock.advance(kThreshold / 2);
    ASSERT_TRUE(f.runtime->poll_event_batch());
  }
  const auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.health.kind, HealthVerdict::Kind::kIdle) << s.health.reason;
  EXPECT_EQ(s.last_poll_at_ms, f.clock.now);
  EXPECT_LT(s.last_delivery_at_ms, f.clock.now - kThreshold);
}

TEST(Health, PollLoopNotTurningOnceNoPollReturnedForTheThreshold) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  ASSERT_TRUE(f.runtime->poll_event_batch());
  f.clock.advance(kThreshold);
  EXPECT_FALSE(f.health().is_alertable()) << "at the threshold itself: " << f.health().reason;
  f.clock.advance(1);
  const auto v = f.health();
  ASSERT_EQ(v.kind, HealthVerdict::Kind::kStalled);
  EXPECT_EQ(v.cause, StallCause::kPollLoopNotTurning);
  EXPECT_TRUE(v.is_alertable());
  EXPECT_TRUE(has(v.reason, "30001ms")) << v.reason;
  // The next returned poll clears it.
  ASSERT_TRUE(f.runtime->poll_event_batch());
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kIdle);
}

TEST(Health, PollLoopNotTurningCountsFromTheStartWhenNothingEverPolled) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.clock.advance(kThreshold + 5);
  EXPECT_EQ(f.health().cause, StallCause::kPollLoopNotTurning);
}

TEST(Health, TheThresholdFollowsALongPollWait) {
  auto options = FakeRuntime::defaults();
  options.max_poll_wait_ms = 10'000;  // threshold 60 s
  FakeRuntime f(options);
  ASSERT_TRUE(f.runtime->start());
  ASSERT_TRUE(f.runtime->poll_event_batch());
  f.clock.advance(59'000);
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kIdle);
  f.clock.advance(2'000);
  EXPECT_EQ(f.health().cause, StallCause::kPollLoopNotTurning);
}

TEST(Health, ConsumerNotAcknowledgingWhenAHandedOutBatchIsNeverCommitted) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(2);
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  f.clock.advance(kThreshold - 1);
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kHealthy);
  f.clock.advance(2);
  const auto v = f.health();
  EXPECT_EQ(v.cause, StallCause::kConsumerNotAcknowledging) << v.reason;
  EXPECT_TRUE(has(v.reason, "2 events")) << v.reason;
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_FALSE(f.health().is_alertable());
}

TEST(Health, ReportedDeliveryFailuresNameTheDestinationOnlyOnceOlderThanTheThreshold) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(1);
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  // A consumer that holds the batch and retries it, reporting each failed attempt.
  for (int i = 0; i < 6; ++i) {
    f.runtime->record_delivery_failure(
        Error::sink(ErrorKind::kTransient, "broker said no #" + std::to_string(i)),
        "kafka orders");
    if (i < 5) {
      f.clock.advance(kThreshold / 5 - 1);
      // Younger than the threshold: neither a stall nor mistaken for a dead loop.
      EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kHealthy) << f.health().reason;
      EXPECT_TRUE(has(f.health().reason, "waiting to deliver a batch again to kafka orders after " +
                                             std::to_string(i + 1) + " failed attempts"))
          << f.health().reason;
    }
  }
  f.clock.advance(10);
  const auto v = f.health();
  ASSERT_EQ(v.cause, StallCause::kDeliveryFailing) << v.reason;
  EXPECT_TRUE(has(v.reason, "kafka orders")) << v.reason;
  EXPECT_TRUE(has(v.reason, "broker said no #5")) << v.reason;
  EXPECT_TRUE(has(v.reason, "6 failed attempts")) << v.reason;
  // The consumer's loop stops polling meanwhile; that is not what the verdict blames.
  f.clock.advance(10 * kThreshold);
  EXPECT_EQ(f.health().cause, StallCause::kDeliveryFailing);
  // The destination takes it: the next commit clears the failure.
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kIdle) << f.health().reason;
  EXPECT_EQ(f.runtime->admin_snapshot().last_commit_at_ms, f.clock.now);
}

TEST(Health, SourcePositionLostOutranksNotRunningAndStaysForTheRun) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->poll_errors.push_back(lost_slot());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().condition(), ErrorCondition::kSourcePositionLost);
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  const auto v = f.health();
  ASSERT_EQ(v.kind, HealthVerdict::Kind::kStalled);
  EXPECT_EQ(v.cause, StallCause::kSourcePositionLost);
  EXPECT_TRUE(has(v.reason, "invalidated")) << v.reason;
  f.runtime->force_stop();
  f.clock.advance(100 * kThreshold);
  EXPECT_EQ(f.health().cause, StallCause::kSourcePositionLost);
  EXPECT_EQ(f.runtime->admin_snapshot().breaker_state, BreakerState::kClosed)
      << "a lost position is terminal, never retried";
  EXPECT_EQ(f.source->starts, 1);
}

TEST(Health, SourcePositionLostAtStart) {
  FakeRuntime f;
  f.source->start_errors.push_back(
      lost_slot().context("starting from the checkpoint"));  // context keeps the condition
  ASSERT_FALSE(f.runtime->start());
  EXPECT_EQ(f.health().cause, StallCause::kSourcePositionLost);
  EXPECT_EQ(f.health().change_key(), "stalled:source_position_lost");
}

TEST(Health, UnconfirmedSourcePositionUntilTheSourceTakesTheConfirmation) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(2);
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  f.source->confirm_errors.push_back(
      Error::source(ErrorKind::kTransient, "standby status update not sent"));
  // Durable at the checkpoint: the commit succeeds, only the release is pending.
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "2");
  EXPECT_TRUE(f.source->confirmed.empty());
  auto v = f.health();
  ASSERT_EQ(v.cause, StallCause::kUnconfirmedSourcePosition) << v.reason;
  EXPECT_TRUE(has(v.reason, "position 2")) << v.reason;
  EXPECT_TRUE(has(v.reason, "standby status update not sent")) << v.reason;
  // The next poll asks again, and the source takes it.
  ASSERT_TRUE(f.runtime->poll_event_batch());
  EXPECT_EQ(f.source->confirmed, "2");
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kHealthy);
}

TEST(Health, ATerminalConfirmationRefusalStillFailsTheRuntime) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(1);
  auto batch = f.runtime->poll_event_batch();
  f.source->confirm_errors.push_back(Error::source(ErrorKind::kTerminal, "slot dropped"));
  ASSERT_FALSE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ(f.health().kind, HealthVerdict::Kind::kNotRunning);
}

// Pure checks of the order: when several conditions hold, the earlier cause wins.
TEST(HealthOrder, EachCauseOutranksTheOnesAfterIt) {
  detail::HealthInputs in;
  in.state = RuntimeState::kRunning;
  in.now_ms = 1'000'000;
  in.max_poll_wait_ms = 500;
  in.started_at_ms = 1;
  in.outstanding_since_ms = 1;  // consumer not acknowledging for ~1000 s
  in.outstanding_events = 5;
  EXPECT_EQ(detail::evaluate_health(in).cause, StallCause::kConsumerNotAcknowledging);
  in.outstanding_since_ms = 0;  // nothing handed out, no poll for ~1000 s
  EXPECT_EQ(detail::evaluate_health(in).cause, StallCause::kPollLoopNotTurning);
  in.delivery_failure = detail::DeliveryFailure{"sink", "refused", 1, 2, 3};
  EXPECT_EQ(detail::evaluate_health(in).cause, StallCause::kDeliveryFailing);
  in.unconfirmed = detail::UnconfirmedPosition{"0/10", "refused", 5};
  EXPECT_EQ(detail::evaluate_health(in).cause, StallCause::kUnconfirmedSourcePosition);
  in.state = RuntimeState::kStopped;
  EXPECT_EQ(detail::evaluate_health(in).kind, HealthVerdict::Kind::kNotRunning);
  in.position_lost = "slot invalidated";
  EXPECT_EQ(detail::evaluate_health(in).cause, StallCause::kSourcePositionLost);
}

TEST(HealthChangeKey, StaysWhileTheConditionDoesAndMovesWhenItChanges) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  ASSERT_TRUE(f.runtime->poll_event_batch());
  f.clock.advance(kThreshold + 1'000);
  const auto first = f.health();
  f.clock.advance(102);
  const auto a_tick_later = f.health();
  ASSERT_EQ(first.cause, StallCause::kPollLoopNotTurning);
  EXPECT_NE(first.reason, a_tick_later.reason);  // the measurement moved
  EXPECT_EQ(first.change_key(), a_tick_later.change_key());
  EXPECT_EQ(first.change_key(), "stalled:poll_loop_not_turning");
  // Another stall is another key.
  f.source->add(1);
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  f.clock.advance(kThreshold + 1);
  EXPECT_EQ(f.health().change_key(), "stalled:consumer_not_acknowledging");
  EXPECT_NE(f.health().change_key(), first.change_key());
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ(f.health().change_key(), "idle");  // delivered longer ago than the threshold
}

TEST(HealthChangeKey, NamesEveryVerdictAndCause) {
  HealthVerdict v;
  EXPECT_EQ(v.change_key(), "not_running");
  v.kind = HealthVerdict::Kind::kIdle;
  EXPECT_EQ(v.change_key(), "idle");
  v.kind = HealthVerdict::Kind::kStalled;
  for (auto [cause, key] : {std::pair{StallCause::kSourcePositionLost, "source_position_lost"},
                            {StallCause::kUnconfirmedSourcePosition, "unconfirmed_source_position"},
                            {StallCause::kDeliveryFailing, "delivery_failing"},
                            {StallCause::kPollLoopNotTurning, "poll_loop_not_turning"},
                            {StallCause::kConsumerNotAcknowledging, "consumer_not_acknowledging"}}) {
    v.cause = cause;
    EXPECT_EQ(v.change_key(), std::string("stalled:") + key);
  }
}

namespace {

/// One blocking call of a test sink: it blocks until the test releases it, and reports a
/// problem until then.
class Gate {
 public:
  void pass() {
    std::unique_lock lock(mutex_);
    entered_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
    ++passes_;
    changed_.notify_all();
  }
  std::string problem(const char* text) const {
    std::lock_guard lock(mutex_);
    return released_ ? std::string() : text;
  }
  void wait_entered() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return entered_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  void wait_passed() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return passes_ > 0; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false;
  bool released_ = false;
  int passes_ = 0;
};

/// A sink whose flush() blocks until the test releases it, like a Kafka producer waiting out
/// delivery_timeout_ms while the broker is down; it reports what it sees meanwhile.
class BlockingSink final : public Sink {
 public:
  Status write(std::span<const Event>) override { return ok(); }
  Status flush() override {
    gate.pass();
    return ok();
  }
  Status close() override { return ok(); }
  std::string name() const override { return "blocking"; }
  std::string current_problem() const override { return gate.problem("all brokers down for 12 s"); }
  Gate gate;
};

}  // namespace

// A sink call that blocks (no error yet) is a delivery that is not getting through: past the
// threshold the verdict is delivery_failing with the stage and the sink's own account, not
// consumer_not_acknowledging (the runtime is the consumer here) and not idle.
TEST(Health, ABlockedSinkCallIsDeliveryFailingOnceItOutlastsTheThreshold) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(2);
  BlockingSink sink;
  std::atomic<bool> cancel{false};
  std::thread loop([&] { (void)f.runtime->run_to_completion(sink, cancel); });
  sink.gate.wait_entered();
  auto v = f.health();
  EXPECT_EQ(v.kind, HealthVerdict::Kind::kHealthy) << v.reason;
  EXPECT_TRUE(has(v.reason, "delivering 2 events to blocking (in flush")) << v.reason;
  EXPECT_TRUE(has(v.reason, "all brokers down")) << v.reason;
  f.clock.advance(kThreshold + 1'000);
  v = f.health();
  EXPECT_EQ(v.cause, StallCause::kDeliveryFailing) << v.reason;
  EXPECT_TRUE(has(v.reason, "has not returned for 31000ms (now in flush")) << v.reason;
  EXPECT_TRUE(has(v.reason, "the sink reports: blocking: all brokers down")) << v.reason;
  sink.gate.release();
  sink.gate.wait_passed();
  cancel.store(true);
  loop.join();
  EXPECT_NE(f.health().cause, StallCause::kDeliveryFailing) << f.health().reason;
  EXPECT_EQ(f.runtime->admin_snapshot().events_committed, 2u);
}

namespace {

/// A sink whose first flush() blocks until released and then fails (a producer that gave up
/// at delivery_timeout_ms), and whose second flush() blocks again (the broker still down).
class FailingThenBlockingSink final : public Sink {
 public:
  Status write(std::span<const Event>) override { return ok(); }
  Status flush() override {
    if (flushes_++ == 0) {
      first.pass();
      return fail(Error::sink(ErrorKind::kTransient, "records timed out"));
    }
    second.pass();
    return ok();
  }
  Status close() override { return ok(); }
  std::string name() const override { return "flaky"; }
  Gate first;
  Gate second;

 private:
  int flushes_ = 0;  // the loop thread's only
};

}  // namespace

// A delivery fails since its first unsuccessful attempt began: when that attempt gives up after
// blocking past the threshold, the retry that follows is still delivery_failing (it used to
// read healthy again, the failure dated from the moment the first attempt returned).
TEST(Health, ADeliveryFailsSinceItsFirstUnsuccessfulAttemptBegan) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->add(2);
  FailingThenBlockingSink sink;
  std::atomic<bool> cancel{false};
  std::thread loop([&] { (void)f.runtime->run_to_completion(sink, cancel); });
  sink.first.wait_entered();
  f.clock.advance(kThreshold + 1'000);
  EXPECT_EQ(f.health().cause, StallCause::kDeliveryFailing) << f.health().reason;
  sink.first.release();
  sink.second.wait_entered();
  const auto v = f.health();
  EXPECT_EQ(v.cause, StallCause::kDeliveryFailing) << v.reason;
  EXPECT_TRUE(has(v.reason, "1 failed attempts")) << v.reason;
  EXPECT_TRUE(has(v.reason, "records timed out")) << v.reason;
  sink.second.release();
  sink.second.wait_passed();
  cancel.store(true);
  loop.join();
  EXPECT_NE(f.health().cause, StallCause::kDeliveryFailing) << f.health().reason;
  EXPECT_EQ(f.runtime->admin_snapshot().events_committed, 2u);
}

namespace {

/// A transactional sink whose commit() blocks until released (a coordinator that does not
/// answer), reporting what it sees meanwhile.
class BlockingCommitSink final : public TransactionalSink {
 public:
  Status begin() override { return ok(); }
  Status write(std::span<const Event>) override { return ok(); }
  Status flush() override { return ok(); }
  Status commit(const std::optional<CheckpointRecord>&) override {
    gate.pass();
    return ok();
  }
  Status abort() override { return ok(); }
  Status close() override { return ok(); }
  std::string name() const override { return "tx"; }
  std::string current_problem() const override { return gate.problem("coordinator unreachable"); }
  Gate gate;
};

}  // namespace

// The transaction that checkpoints an idle position is an attempt too: blocked past the
// threshold it is delivery_failing, not a poll loop that stopped turning.
TEST(Health, ABlockedIdleCheckpointCommitIsDeliveryFailing) {
  FakeRuntime f;
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "7";
  BlockingCommitSink sink;
  std::atomic<bool> cancel{false};
  std::thread loop([&] { (void)f.runtime->run_to_completion(sink, cancel); });
  sink.gate.wait_entered();
  auto v = f.health();
  EXPECT_TRUE(has(v.reason, "in commit of an idle checkpoint")) << v.reason;
  f.clock.advance(kThreshold + 1'000);
  v = f.health();
  EXPECT_EQ(v.cause, StallCause::kDeliveryFailing) << v.reason;
  EXPECT_TRUE(has(v.reason, "the sink reports: coordinator unreachable")) << v.reason;
  sink.gate.release();
  sink.gate.wait_passed();
  cancel.store(true);
  loop.join();
  EXPECT_NE(f.health().cause, StallCause::kDeliveryFailing) << f.health().reason;
}

// F6: while start() retries through a source outage the verdict is NotRunning and its reason
// says what it waits for; source_connected follows the connection (down while a reconnect is
// pending after a failed read, up again once it succeeded), and `retrying` names the side.
// None of it changes the verdict's own semantics: a reconnect shorter than the stall threshold
// leaves it Idle.
TEST(Health, StartSaysItConnectsToTheSourceAndSourceConnectedFollowsTheConnection) {
  FakeRuntime f;
  std::vector<RuntimeAdminSnapshot> seen;
  f.on_wait = [&] { seen.push_back(f.runtime->admin_snapshot()); };
  const Error refused = Error::source(ErrorKind::kTransient, "connection refused");
  f.source->start_errors = {refused, refused};
  EXPECT_EQ(f.health().reason, "runtime created; start() not called yet");
  ASSERT_TRUE(f.runtime->start());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().state, RuntimeState::kCreated);
  EXPECT_FALSE(seen.front().source_connected);
  EXPECT_EQ(seen.front().retrying, "source");
  EXPECT_TRUE(has(seen.front().health.reason, "connecting to the source (1 failed attempts"))
      << seen.front().health.reason;
  EXPECT_TRUE(has(seen.front().health.reason, "connection refused")) << seen.front().health.reason;
  EXPECT_TRUE(has(seen.back().health.reason, "(2 failed attempts")) << seen.back().health.reason;
  auto s = f.runtime->admin_snapshot();
  EXPECT_TRUE(s.source_connected);
  EXPECT_EQ(s.retrying, "");
  EXPECT_EQ(s.consecutive_errors, 0u);

  seen.clear();
  f.source->poll_errors = {Error::source(ErrorKind::kTransient, "server closed the connection")};
  ASSERT_TRUE(f.runtime->poll_event_batch());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().state, RuntimeState::kRunning);
  EXPECT_FALSE(seen.front().source_connected);
  EXPECT_EQ(seen.front().retrying, "source");
  EXPECT_TRUE(has(seen.front().last_recoverable_error, "server closed the connection"));
  EXPECT_FALSE(seen.front().health.is_alertable()) << seen.front().health.reason;
  s = f.runtime->admin_snapshot();
  EXPECT_TRUE(s.source_connected);
  EXPECT_EQ(s.retrying, "");
  EXPECT_EQ(s.health.kind, HealthVerdict::Kind::kIdle) << s.health.reason;

  ASSERT_TRUE(f.runtime->stop());
  EXPECT_FALSE(f.runtime->admin_snapshot().source_connected);
}
