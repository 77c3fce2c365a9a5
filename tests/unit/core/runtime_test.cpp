// The runtime's delivery contract, against a scripted source and a recording checkpoint.
// Each invariant of the architecture document has a test named after it.

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <thread>

#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"

using namespace cppcdc;

namespace {

struct Log {
  std::vector<std::string> steps;  // "save:X", "confirm:X", "start:X"
};

class ScriptedSource final : public Source {
 public:
  ScriptedSource(Log& log, std::vector<Event> script) : log_(log), script_(std::move(script)) {}
  std::string type() const override { return "postgres"; }
  std::string source_id() const override { return "slot"; }
  Status start(const std::optional<CheckpointRecord>& resume) override {
    log_.steps.push_back("start:" + (resume ? resume->offset : std::string("-")));
    if (start_errors > 0) {
      --start_errors;
      return fail(Error::source(start_error_kind, "scripted start failure"));
    }
    started_ = true;
    // Replay from the event after the resume boundary, like a log would.
    next_ = 0;
    if (resume) {
      for (std::size_t i = 0; i < script_.size(); ++i) {
        if (script_[i].resume_offset == resume->offset) next_ = i + 1;
      }
    }
    return ok();
  }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    if (!started_) return fail(Error::invalid_state("scripted source is not started"));
    if (poll_errors > 0) {
      --poll_errors;
      return fail(Error::source(poll_error_kind, "scripted poll failure"));
    }
    for (std::size_t n = 0; n < max && next_ < script_.size(); ++n) out.push_back(script_[next_++]);
    return ok();
  }
  Status confirm(std::string_view offset) override {
    log_.steps.push_back("confirm:" + std::string(offset));
    if (on_confirm) on_confirm(offset);
    return ok();
  }
  std::function<void(std::string_view)> on_confirm;
  void close() override { started_ = false; }
  std::optional<std::string> idle_offset() override { return idle; }
  void recycle(std::vector<Event>&& events) override {
    log_.steps.push_back("recycle:" + std::to_string(events.size()));
    events.clear();
  }

  std::optional<std::string> idle;

  int start_errors = 0;
  ErrorKind start_error_kind = ErrorKind::kTransient;
  int poll_errors = 0;
  ErrorKind poll_error_kind = ErrorKind::kTransient;

 private:
  Log& log_;
  std::vector<Event> script_;
  std::size_t next_ = 0;
  bool started_ = false;
};

class RecordingCheckpoint final : public Checkpoint {
 public:
  explicit RecordingCheckpoint(Log& log) : log_(log) {}
  Result<std::optional<CheckpointRecord>> do_load() override {
    if (corrupt) return fail(Error::checkpoint(ErrorKind::kTerminal, "corrupt file /x"));
    return record;
  }
  Status do_save(const CheckpointRecord& r) override {
    log_.steps.push_back("save:" + r.offset);
    record = r;
    return ok();
  }
  std::string name() const override { return "recording"; }
  std::optional<CheckpointRecord> record;
  bool corrupt = false;

 private:
  Log& log_;
};

// Three transactions: sizes 2, 1, 3. Only each transaction's last event is a boundary.
std::vector<Event> script() {
  std::vector<Event> out;
  int n = 0;
  std::uint64_t xid = 100;
  for (int tx : {2, 1, 3}) {
    ++xid;
    for (int i = 0; i < tx; ++i) {
      Event e = EventBuilder("t", Operation::kInsert)
                    .source({"postgres", "0/" + std::to_string(++n), 0})
                    .after({ColumnValue{"id", std::to_string(n), false}})
                    .transaction({xid, static_cast<std::uint64_t>(tx),
                                  static_cast<std::uint64_t>(i)})
                    .build();
      if (i == tx - 1) e.resume_offset = "0/END" + std::to_string(n);
      if (n == 2) e.resume_state = "state-after-first";  // as a snapshot chunk would carry
      out.push_back(std::move(e));
    }
  }
  return out;
}

struct Fixture {
  Log log;
  ScriptedSource* source = nullptr;
  std::shared_ptr<RecordingCheckpoint> checkpoint = std::make_shared<RecordingCheckpoint>(log);
  std::unique_ptr<Runtime> runtime;

  explicit Fixture(std::size_t max_batch = 100, std::optional<CheckpointRecord> saved = {}) {
    checkpoint->record = saved;
    make(max_batch);
  }
  // The source's events (make() reads it).
  std::function<std::vector<Event>()> events = script;
  std::shared_ptr<RuntimeObserver> observer;  // make() passes it on
  void make(std::size_t max_batch) {
    auto src = std::make_unique<ScriptedSource>(log, events());
    source = src.get();
    RuntimeConfig config;
    config.source = std::move(src);
    config.checkpoint = checkpoint;
    config.observer = observer;
    config.options.max_buffer_size = max_batch;
    config.options.max_poll_wait_ms = 1;
    config.options.connection_retry.initial_delay_ms = 1;
    runtime = Runtime::create(std::move(config)).value();
  }
};

}  // namespace

TEST(Invariant1, NoCheckpointAdvancesWithoutAnExplicitAck) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 6u);
  EXPECT_FALSE(f.checkpoint->record);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
}

TEST(Invariant2, SourceIsConfirmedOnlyAfterTheCheckpointIsSaved) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  ASSERT_GE(f.log.steps.size(), 3u);
  EXPECT_EQ(f.log.steps[1], "save:0/END6");
  EXPECT_EQ(f.log.steps[2], "confirm:0/END6");
}

TEST(Invariant3, RestartBeginsFromThePersistedCheckpoint) {
  Fixture f(100, CheckpointRecord{"postgres", "slot", "0/END3", 3, 0, 0, "", 0});
  ASSERT_TRUE(f.runtime->start());
  EXPECT_EQ(f.log.steps[0], "start:0/END3");
  auto batch = f.runtime->poll_event_batch();
  ASSERT_EQ(batch->size(), 3u);
  EXPECT_EQ(batch->events()[0].source.offset, "0/4");
}

TEST(Invariant4, UnacknowledgedTailIsRedeliveredAndCheckpointStopsAtLastBoundary) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_EQ(batch->size(), 6u);
  auto token = batch->ack_mode().token->accept_prefix(4);  // mid third transaction
  ASSERT_TRUE(token);
  ASSERT_TRUE(f.runtime->commit_ack(*token));
  // Event 4 is not a boundary: the checkpoint is the end of the second transaction.
  EXPECT_EQ(f.checkpoint->record->offset, "0/END3");
  auto again = f.runtime->poll_event_batch();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ(again->events()[0].source.offset, "0/5");
  ASSERT_TRUE(f.runtime->commit_ack(again->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
}

// The admin counters of a restarted pipeline: delivered and committed count this process's
// events alike, so in_flight is their difference; the checkpoint's count (earlier runs too) is
// events_committed_lifetime. Before, events_committed started at the checkpoint's count and an
// outstanding batch showed as 0 in flight.
TEST(AdminSnapshot, AfterARestartDeliveredAndCommittedCountThisProcessAndTotalTheWholePipeline) {
  Fixture f(100, CheckpointRecord{"postgres", "slot", "0/END3", 3, 0, 0, "", 0});
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 3u);
  auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_delivered, 3u);
  EXPECT_EQ(s.events_committed, 0u);
  EXPECT_EQ(s.in_flight, 3u);
  EXPECT_EQ(s.events_committed_lifetime, 3u);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed, 3u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.events_committed_lifetime, 6u);
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
}

TEST(Invariant5, LifecycleTransitionsAreValidated) {
  Fixture f;
  EXPECT_EQ(f.runtime->poll_event_batch().error().kind(), ErrorKind::kInvalidState);
  ASSERT_TRUE(f.runtime->start());
  EXPECT_EQ(f.runtime->start().error().kind(), ErrorKind::kInvalidState);
  auto batch = f.runtime->poll_event_batch();
  // A second poll before the ack is refused; stop with events in flight is refused.
  EXPECT_EQ(f.runtime->poll_event_batch().error().kind(), ErrorKind::kInvalidState);
  auto stopped = f.runtime->stop();
  ASSERT_FALSE(stopped);
  EXPECT_NE(stopped.error().message().find("not acknowledged"), std::string::npos);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_TRUE(f.runtime->stop());
  EXPECT_EQ(f.runtime->state(), RuntimeState::kStopped);
}

TEST(AckToken, SecondCommitOfAnyCopyIsRefused) {
  Fixture f(2);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  AckMode a = batch->ack_mode();
  AckMode b = batch->ack_mode();
  ASSERT_TRUE(f.runtime->commit_ack(a));
  auto again = f.runtime->commit_ack(b);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind(), ErrorKind::kInvalidState);
  EXPECT_EQ(f.checkpoint->record->committed_events, 2u);
}

TEST(AckToken, AcceptPrefixBeyondSizeOrAfterUseIsRefused) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  auto token = *batch->ack_mode().token;
  EXPECT_FALSE(token.accept_prefix(7));
  ASSERT_TRUE(f.runtime->commit_ack(token));
  EXPECT_FALSE(token.accept_prefix(1));
}

TEST(AckToken, EmptyBatchNeedsNoAck) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  auto all = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(all->ack_mode()));
  auto empty = f.runtime->poll_event_batch();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(empty->ack_mode().required());
  EXPECT_TRUE(f.runtime->commit_ack(empty->ack_mode()));
}

TEST(CommitBarrier, NoSaveWhenAckedPrefixReachesNoBoundary) {
  Fixture f(1);
  ASSERT_TRUE(f.runtime->start());
  auto first = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(first->ack_mode()));
  EXPECT_FALSE(f.checkpoint->record);
  auto second = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(second->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END2");
}

TEST(Retry, TransientPollFailureReconnectsFromTheCheckpoint) {
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  f.source->poll_errors = 2;
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch) << batch.error().report();
  EXPECT_EQ(batch->size(), 6u);
  EXPECT_EQ(std::count(f.log.steps.begin(), f.log.steps.end(), "start:-"), 3);
}

TEST(Retry, ReconnectKeepsRetryingWhileTheSourceIsStillDown) {
  // A server restart: the stream breaks, then the first reconnection attempts fail too.
  Fixture f;
  ASSERT_TRUE(f.runtime->start());
  f.source->poll_errors = 1;
  f.source->start_errors = 2;
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch) << batch.error().report();
  EXPECT_EQ(batch->size(), 6u);
  EXPECT_EQ(std::count(f.log.steps.begin(), f.log.steps.end(), "start:-"), 4);
}

TEST(Retry, TerminalFailureIsNotRetried) {
  Fixture f;
  f.source->start_errors = 1;
  f.source->start_error_kind = ErrorKind::kTerminal;
  auto st = f.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_EQ(f.log.steps.size(), 1u);
}

TEST(Retry, TransientStartFailureGivesUpAfterMaxRetries) {
  Fixture f;
  f.source->start_errors = 100;
  auto st = f.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(f.log.steps.size(), 6u);  // first try + 5 retries
}

TEST(Checkpoint, UnreadableCheckpointFailsStartInsteadOfStartingFresh) {
  Fixture f;
  f.checkpoint->corrupt = true;
  auto st = f.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_TRUE(f.log.steps.empty());  // the source was never started
}

// The admin endpoint reads admin_snapshot() on its own thread while the run loop starts the
// runtime; under ThreadSanitizer this fails if start() changes the state without the lock
// admin_snapshot() takes (the failed-checkpoint path is the one that did).
TEST(AdminSnapshot, IsReadableFromAnotherThreadWhileStartFails) {
  Fixture f;
  f.checkpoint->corrupt = true;
  std::atomic<bool> started{false};
  std::thread reader([&] {
    (void)f.runtime->admin_snapshot();  // at least one read that overlaps start()
    while (!started.load()) (void)f.runtime->admin_snapshot();
  });
  auto st = f.runtime->start();
  started = true;
  reader.join();
  ASSERT_FALSE(st);
  EXPECT_EQ(f.runtime->admin_snapshot().state, RuntimeState::kFailed);
}

TEST(Checkpoint, RecordOfAnotherSlotIsRefused) {
  Fixture f(100, CheckpointRecord{"postgres", "other_slot", "0/END3", 3, 0, 0, "", 0});
  auto st = f.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("other_slot"), std::string::npos);
}

TEST(Invariant4, BatchEndingInsideATransactionIsNotRedeliveredAfterRestart) {
  Fixture f(4);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_EQ(batch->size(), 4u);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END3");
  EXPECT_EQ(f.checkpoint->record->partial_tx_events, 1u);
  EXPECT_EQ(f.checkpoint->record->partial_tx_id, 103u);
  // A restart re-reads the third transaction from its start but drops its acknowledged head.
  f.make(4);
  ASSERT_TRUE(f.runtime->start());
  auto again = f.runtime->poll_event_batch();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ(again->events()[0].source.offset, "0/5");
  ASSERT_TRUE(f.runtime->commit_ack(again->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
  EXPECT_EQ(f.checkpoint->record->partial_tx_events, 0u);
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
}

TEST(Invariant4, PartialCountAccumulatesAcrossBatchesOfOneTransaction) {
  Fixture f(1);
  ASSERT_TRUE(f.runtime->start());
  for (int i = 0; i < 4; ++i) {
    auto b = f.runtime->poll_event_batch();
    ASSERT_TRUE(f.runtime->commit_ack(b->ack_mode()));
  }
  auto b5 = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(b5->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END3");
  EXPECT_EQ(f.checkpoint->record->partial_tx_events, 2u);
  f.make(10);
  ASSERT_TRUE(f.runtime->start());
  auto rest = f.runtime->poll_event_batch();
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ(rest->events()[0].source.offset, "0/6");
}

TEST(Invariant2, IdlePositionIsCheckpointedBeforeItIsConfirmedAndOnlyWhenNothingIsInFlight) {
  Fixture f(4);
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "0/IDLE";
  auto batch = f.runtime->poll_event_batch();  // 4 events out, 2 to go
  ASSERT_EQ(batch->size(), 4u);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  auto rest = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(rest->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
  f.log.steps.clear();
  auto empty = f.runtime->poll_event_batch();
  ASSERT_TRUE(empty && empty->empty());
  ASSERT_EQ(f.log.steps.size(), 2u);
  EXPECT_EQ(f.log.steps[0], "save:0/IDLE");
  EXPECT_EQ(f.log.steps[1], "confirm:0/IDLE");
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
  // Once saved, the same idle position is not saved again.
  f.log.steps.clear();
  ASSERT_TRUE(f.runtime->poll_event_batch());
  EXPECT_TRUE(f.log.steps.empty());
}

TEST(Invariant1, IdlePositionIsIgnoredWhileATransactionIsPartlyAcknowledged) {
  Fixture f(4);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));  // ends inside the third transaction
  ASSERT_EQ(f.checkpoint->record->partial_tx_events, 1u);
  f.source->idle = "0/IDLE";
  f.log.steps.clear();
  auto rest = f.runtime->poll_event_batch();
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_TRUE(f.log.steps.empty());  // events were handed out: no idle save
}

TEST(CommitBarrier, TheBoundaryEventsResumeStateIsSavedWithItsOffset) {
  Fixture f(2);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch && batch->size() == 2u);
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END2");
  EXPECT_EQ(f.checkpoint->record->source_state, "state-after-first");
  // The next boundary has no state: the checkpoint then carries none.
  batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch && batch->size() == 2u);  // the second transaction and one more event
  ASSERT_TRUE(f.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ(f.checkpoint->record->offset, "0/END3");
  EXPECT_EQ(f.checkpoint->record->source_state, "");
}

namespace {
// Writes nothing; cancels the run once `stop_after` events were written.
class CountingSink final : public Sink {
 public:
  CountingSink(std::atomic<bool>& cancel, std::size_t stop_after)
      : cancel_(cancel), stop_after_(stop_after) {}
  Status write(std::span<const Event> events) override {
    written += events.size();
    if (written >= stop_after_) cancel_.store(true);
    return ok();
  }
  Status flush() override { return ok(); }
  Status close() override { return ok(); }
  std::string name() const override { return "counting"; }
  std::size_t written = 0;

 private:
  std::atomic<bool>& cancel_;
  std::size_t stop_after_;
};
}  // namespace

TEST(RunToCompletion, EachBatchGoesBackToTheSourceOnlyAfterItsCheckpointIsSaved) {
  Fixture f(3);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  CountingSink sink(cancel, 6);
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 6u);
  std::size_t recycled = 0;
  std::string last_save;
  for (const auto& step : f.log.steps) {
    if (step.rfind("save:", 0) == 0) last_save = step;
    if (step.rfind("recycle:", 0) == 0) {
      EXPECT_FALSE(last_save.empty()) << "events came back before any checkpoint was saved";
      recycled += std::stoul(step.substr(8));
    }
  }
  EXPECT_EQ(recycled, 6u);
}

namespace {
// A sink that commits each batch together with its checkpoint record, as Kafka does under
// effectively_once. What it committed is what the next start must load: it shares the
// recording checkpoint's record.
class TransactionalTestSink final : public TransactionalSink {
 public:
  TransactionalTestSink(Log& log, RecordingCheckpoint& store, std::atomic<bool>& cancel,
                        std::size_t stop_after)
      : log_(log), store_(store), cancel_(cancel), stop_after_(stop_after) {}
  Status begin() override {
    if (open_) return fail(Error::invalid_state("a transaction is already open"));
    open_ = true;
    pending_ = 0;
    log_.steps.push_back("begin");
    return ok();
  }
  Status write(std::span<const Event> events) override {
    if (!open_) return fail(Error::invalid_state("write outside a transaction"));
    ++writes;
    if (writes == fail_write) {
      log_.steps.push_back("write-failed");
      return fail(Error::sink(ErrorKind::kTransient, "the broker is not answering"));
    }
    if (on_write) on_write();
    pending_ += events.size();
    log_.steps.push_back("write:" + std::to_string(events.size()));
    return ok();
  }
  Status flush() override {
    log_.steps.push_back("flush");
    return ok();
  }
  Status commit(const std::optional<CheckpointRecord>& record) override {
    if (!open_) return fail(Error::invalid_state("commit outside a transaction"));
    if (fail_commits > 0) {
      --fail_commits;
      log_.steps.push_back("commit-failed");
      return fail(
          Error::sink(commit_failure_recoverable ? ErrorKind::kTransient : ErrorKind::kTerminal,
                      "the broker refused the commit"));
    }
    open_ = false;
    log_.steps.push_back("commit:" + (record ? record->offset : std::string("-")));
    if (record) store_.record = record;
    committed += pending_;
    if (committed >= stop_after_) cancel_.store(true);
    return ok();
  }
  Status abort() override {
    open_ = false;
    log_.steps.push_back("abort");
    return ok();
  }
  Status close() override { return ok(); }
  std::string name() const override { return "transactional"; }
  int fail_commits = 0;
  bool commit_failure_recoverable = false;  // fail_commits fail recoverably (else terminal)
  int writes = 0;
  int fail_write = 0;  // the write() call (1-based) that fails recoverably; 0: none
  std::function<void()> on_write;
  std::size_t committed = 0;

 private:
  Log& log_;
  RecordingCheckpoint& store_;
  std::atomic<bool>& cancel_;
  std::size_t stop_after_;
  bool open_ = false;
  std::size_t pending_ = 0;
};

std::vector<std::string> steps_without(const Log& log, std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& s : log.steps) {
    if (s.rfind(prefix, 0) != 0) out.push_back(s);
  }
  return out;
}
}  // namespace

TEST(TransactionalSink, EachBatchCommitsWithItsRecordAndOnlyThenIsTheSourceConfirmed) {
  Fixture f(3);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 6);
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 6u);
  // Batches of 3 over transactions of 2, 1, 3: the first ends on the boundary 0/END3; the
  // second completes the third transaction. No save through the backend; each batch is
  // flushed inside its transaction before the commit.
  const std::vector<std::string> expected = {
      "start:-", "begin", "write:3", "flush", "commit:0/END3", "confirm:0/END3",
      "begin",   "write:3", "flush", "commit:0/END6", "confirm:0/END6"};
  EXPECT_EQ(steps_without(f.log, "recycle:"), expected);
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
}

TEST(TransactionalSink, ABatchEndingInsideATransactionCommitsItsPartialRecordWithoutConfirming) {
  Fixture f(4);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 4);
  ASSERT_TRUE(f.runtime->run_to_completion(sink, cancel));
  // Four events: two transactions whole (to 0/END3) and one event of the third.
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END3");
  EXPECT_EQ(f.checkpoint->record->partial_tx_events, 1u);
  const std::vector<std::string> expected = {"start:-", "begin",         "write:4",
                                             "flush",   "commit:0/END3", "confirm:0/END3"};
  EXPECT_EQ(steps_without(f.log, "recycle:"), expected);
}

// A commit refused for good (kind terminal; a recoverable refusal is retried with the batch:
// RuntimeBreaker.ARefusedTransactionalCommitIsRetriedWithTheWholeBatch).
TEST(TransactionalSink, ARefusedCommitConfirmsNothingAndTheBatchComesAgainAfterARestart) {
  Fixture f(3);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 6);
  sink.fail_commits = 1;
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().report().find("the broker refused the commit"), std::string::npos)
      << delivered.error().report();
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  EXPECT_FALSE(f.checkpoint->record);
  for (const auto& step : f.log.steps) EXPECT_EQ(step.rfind("confirm:", 0), std::string::npos);
  EXPECT_EQ(f.log.steps.back(), "abort");
  // A new runtime over the same (empty) checkpoint delivers the batch again.
  f.runtime->force_stop();
  f.make(3);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->events()[0].source.offset, "0/1");
}

TEST(TransactionalSink, AnIdlePositionIsCommittedThroughTheSinkBeforeItIsConfirmed) {
  Fixture f(100);
  ASSERT_TRUE(f.runtime->start());
  f.source->idle = "0/IDLE";
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 1000);
  // The first poll delivers the whole script; the second is quiet and reports the idle
  // position. Stop once it was confirmed.
  f.source->on_confirm = [&](std::string_view offset) {
    if (offset == "0/IDLE") cancel.store(true);
  };
  ASSERT_TRUE(f.runtime->run_to_completion(sink, cancel));
  const std::vector<std::string> expected = {
      "start:-",        "begin", "write:6",       "flush",         "commit:0/END6",
      "confirm:0/END6", "begin", "commit:0/IDLE", "confirm:0/IDLE"};
  EXPECT_EQ(steps_without(f.log, "recycle:"), expected);
  EXPECT_EQ(f.checkpoint->record->offset, "0/IDLE");
}

// Five events with no transaction and no position but the last one's, as a blocking
// snapshot without a resumable cursor hands them over (MySQL's, or a table without a key).
std::vector<Event> unresumable_script() {
  std::vector<Event> out;
  for (int n = 1; n <= 5; ++n) {
    Event e = EventBuilder("t", Operation::kRead)
                  .source({"postgres", "0/" + std::to_string(n), 0})
                  .after({ColumnValue{"id", std::to_string(n), false}})
                  .build();
    if (n == 5) e.resume_offset = "0/SNAP";
    out.push_back(std::move(e));
  }
  return out;
}

// Committing a batch that reaches no position would show it to readers while a restart
// delivers it again (duplicates under effectively_once): it stays in the open transaction.
TEST(TransactionalSink, BatchesThatReachNoPositionStayInTheOpenTransactionUntilOneDoes) {
  Fixture f;
  f.events = unresumable_script;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 5u);
  const std::vector<std::string> expected = {"start:-",       "begin",         "write:2", "flush",
                                             "write:2",       "flush",         "write:1", "flush",
                                             "commit:0/SNAP", "confirm:0/SNAP"};
  EXPECT_EQ(steps_without(f.log, "recycle:"), expected);
  EXPECT_EQ(sink.committed, 5u);
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->committed_events, 5u);
}

// A batch whose position comes before its last events (a keyed table's last chunk, then the
// first rows of a table without a key) is carried too: committed with that position, its tail
// would be read again after a restart. (A sixth user trial found 4,096 rows twice this way.)
TEST(TransactionalSink, ABatchWhosePositionLeavesItsTailUncoveredIsCarried) {
  Fixture f;
  f.events = [] {
    auto out = unresumable_script();
    out[0].resume_offset = "0/KEYED";  // the keyed table's last row
    return out;
  };
  f.make(3);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  const std::vector<std::string> expected = {"start:-", "begin", "write:3",       "flush",
                                             "write:2", "flush", "commit:0/SNAP", "confirm:0/SNAP"};
  EXPECT_EQ(steps_without(f.log, "recycle:"), expected);
  EXPECT_EQ(sink.committed, 5u);
}

// A failed attempt aborts the carried batches too; retrying only the last batch would lose
// them, so the runtime fails, and a restart reads them all again from the checkpoint.
TEST(TransactionalSink, AFailedAttemptWhileBatchesAreCarriedFailsAndARestartReadsThemAgain) {
  Fixture f;
  f.events = unresumable_script;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  sink.fail_write = 2;  // the second batch's
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered);
  const std::string report = delivered.error().report();
  EXPECT_NE(report.find("the broker is not answering"), std::string::npos) << report;
  EXPECT_NE(report.find("also held 2 events of earlier batches"), std::string::npos) << report;
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  EXPECT_FALSE(f.checkpoint->record);
  EXPECT_EQ(sink.committed, 0u);
  EXPECT_EQ(f.log.steps.back(), "abort");
  f.runtime->force_stop();
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  auto batch = f.runtime->poll_event_batch();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->events()[0].source.offset, "0/1");
}

// Stopped while batches are carried: the transaction is aborted, and the same runtime's next
// delivery starts the source again from the checkpoint instead of going on after them.
TEST(TransactionalSink, AStopWhileBatchesAreCarriedAbortsAndTheNextDeliveryReadsThemAgain) {
  Fixture f;
  f.events = unresumable_script;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  sink.on_write = [&] {
    if (sink.writes == 1) cancel.store(true);
  };
  auto first = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(first) << first.error().report();
  EXPECT_EQ(f.log.steps.back(), "abort");
  EXPECT_EQ(sink.committed, 0u);
  EXPECT_FALSE(f.checkpoint->record);
  cancel.store(false);
  auto second = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(second) << second.error().report();
  EXPECT_EQ(sink.committed, 5u);  // all five, none twice
  EXPECT_EQ(std::count(f.log.steps.begin(), f.log.steps.end(), "start:-"), 2);
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->offset, "0/SNAP");
}

namespace {
// What the runtime told its observer, in order ("committed:N", "carried:N", "aborted").
class RecordingObserver final : public RuntimeObserver {
 public:
  void on_committed(std::span<const Event> events, std::int64_t) override {
    calls.push_back("committed:" + std::to_string(events.size()));
  }
  void on_carried(std::span<const Event> events, std::int64_t) override {
    calls.push_back("carried:" + std::to_string(events.size()));
  }
  void on_carried_aborted() override { calls.push_back("aborted"); }
  std::vector<std::string> calls;
};
}  // namespace

// Batches carried in the open transaction are acknowledged but not committed: the admin
// counters (and the observer, which feeds cppcdc_events_committed_total) count them once the
// transaction that carries them commits. Before, they counted as committed at once, in both.
TEST(TransactionalSink, CarriedEventsCountAsCommittedOnlyOnceTheirTransactionCommits) {
  Fixture f;
  f.events = unresumable_script;
  auto observer = std::make_shared<RecordingObserver>();
  f.observer = observer;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  std::vector<RuntimeAdminSnapshot> seen;  // at each write: before the batch is acknowledged
  sink.on_write = [&] { seen.push_back(f.runtime->admin_snapshot()); };
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  ASSERT_EQ(seen.size(), 3u);
  // The third batch is being written: two batches (4 events) wait in the transaction.
  EXPECT_EQ(seen[2].events_delivered, 5u);
  EXPECT_EQ(seen[2].events_committed, 0u);
  EXPECT_EQ(seen[2].events_committed_lifetime, 0u);
  EXPECT_EQ(seen[2].in_flight, 5u);
  const auto after = f.runtime->admin_snapshot();
  EXPECT_EQ(after.events_committed, 5u);
  EXPECT_EQ(after.events_committed_lifetime, 5u);
  EXPECT_EQ(after.in_flight, 0u);
  EXPECT_EQ(observer->calls, (std::vector<std::string>{"carried:2", "carried:2", "committed:1"}));
  EXPECT_EQ(f.checkpoint->record->committed_events, 5u);
}

// Aborted carried batches were never committed: they leave the counters (and the count the
// next checkpoint records) as they were, and are counted when they commit after all.
TEST(TransactionalSink, AbortedCarriedEventsAreNotCountedAndCountOnceWhenDeliveredAgain) {
  Fixture f;
  f.events = unresumable_script;
  auto observer = std::make_shared<RecordingObserver>();
  f.observer = observer;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 5);
  sink.on_write = [&] {
    if (sink.writes == 2) cancel.store(true);
  };
  ASSERT_TRUE(f.runtime->run_to_completion(sink, cancel));
  auto s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed, 0u);
  EXPECT_EQ(s.events_committed_lifetime, 0u);
  cancel.store(false);
  sink.on_write = nullptr;
  ASSERT_TRUE(f.runtime->run_to_completion(sink, cancel));
  s = f.runtime->admin_snapshot();
  EXPECT_EQ(s.events_committed, 5u);
  EXPECT_EQ(s.events_committed_lifetime, 5u);
  ASSERT_TRUE(f.checkpoint->record);
  EXPECT_EQ(f.checkpoint->record->committed_events, 5u);  // not 9: the aborted 4 once
  EXPECT_EQ(observer->calls, (std::vector<std::string>{"carried:2", "carried:2", "aborted",
                                                       "carried:2", "carried:2", "committed:1"}));
}

// A recoverable failure of the commit that would end a carried stretch aborts the carried
// batches with it: retrying only the last batch would commit its position without them (they
// were lost for good, the checkpoint past them). The run fails, and a restart reads them again.
TEST(TransactionalSink, ARecoverableCommitFailureWhileCarryingFailsTheRunInsteadOfSkipping) {
  Fixture f;
  f.events = unresumable_script;
  f.make(2);
  ASSERT_TRUE(f.runtime->start());
  std::atomic<bool> cancel{false};
  // Stops at the first commit: before, the retried last batch committed alone (0/SNAP with
  // one event, the four carried ones lost) and the run went on.
  TransactionalTestSink sink(f.log, *f.checkpoint, cancel, 1);
  sink.fail_commits = 1;
  sink.commit_failure_recoverable = true;
  auto delivered = f.runtime->run_to_completion(sink, cancel);
  ASSERT_FALSE(delivered) << "the run went on after its carried batches were aborted";
  const std::string report = delivered.error().report();
  EXPECT_NE(report.find("the broker refused the commit"), std::string::npos) << report;
  EXPECT_NE(report.find("also held 4 events of earlier batches"), std::string::npos) << report;
  EXPECT_EQ(f.runtime->state(), RuntimeState::kFailed);
  EXPECT_FALSE(f.checkpoint->record);
  EXPECT_EQ(sink.committed, 0u);
  EXPECT_EQ(f.runtime->admin_snapshot().events_committed, 0u);
}

namespace {
// Drops every event for which `drop` says so.
class DropTransform final : public Transform {
 public:
  explicit DropTransform(std::function<bool(const Event&)> drop) : drop_(std::move(drop)) {}
  std::string name() const override { return "drop"; }
  Status apply(std::vector<Event>& events) override {
    std::erase_if(events, drop_);
    return ok();
  }

 private:
  std::function<bool(const Event&)> drop_;
};

// Writes each event twice.
class DoubleTransform final : public Transform {
 public:
  std::string name() const override { return "double"; }
  Status apply(std::vector<Event>& events) override {
    std::vector<Event> out;
    for (auto& e : events) {
      out.push_back(e);
      out.push_back(std::move(e));
    }
    events = std::move(out);
    return ok();
  }
};

// Records what it was given and when it was flushed, in the shared log.
class LoggingSink final : public Sink {
 public:
  LoggingSink(Log& log, std::string name) : log_(log), name_(std::move(name)) {}
  Status write(std::span<const Event> events) override {
    std::string ids;
    for (const auto& e : events) ids += (ids.empty() ? "" : ",") + (*e.after)[0].text.value_or("");
    log_.steps.push_back(name_ + ".write:" + ids);
    return ok();
  }
  Status flush() override {
    log_.steps.push_back(name_ + ".flush");
    if (fail_flush) return fail(Error::sink(ErrorKind::kTransient, name_ + " is full"));
    return ok();
  }
  Status close() override { return ok(); }
  std::string name() const override { return name_; }
  bool fail_flush = false;

 private:
  Log& log_;
  std::string name_;
};

std::vector<std::string> steps_of(const Log& log, std::initializer_list<std::string_view> kinds) {
  std::vector<std::string> out;
  for (const auto& s : log.steps) {
    for (auto k : kinds) {
      if (s.find(k) != std::string::npos) {
        out.push_back(s);
        break;
      }
    }
  }
  return out;
}
}  // namespace

TEST(Pipeline, ADroppedLastEventOfATransactionIsStillCheckpointedPastIt) {
  Fixture f(100);
  ASSERT_TRUE(f.runtime->start());
  PipelineConfig config;
  // Event 6 is the last of the third transaction and carries its boundary 0/END6.
  config.transforms.push_back(std::make_unique<DropTransform>(
      [](const Event& e) { return (*e.after)[0].text == "6"; }));
  config.routes.push_back({std::make_unique<LoggingSink>(f.log, "a"), nullptr});
  auto pipeline = Pipeline::create(std::move(config)).value();
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->drain_and_stop(*pipeline, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 6u);  // acknowledged: the batch as the source produced it
  EXPECT_EQ(steps_of(f.log, {".write", "save:"}),
            (std::vector<std::string>{"a.write:1,2,3,4,5", "save:0/END6"}));
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
  EXPECT_EQ(f.runtime->state(), RuntimeState::kStopped);
}

TEST(Pipeline, AMultiplyingTransformDoesNotChangeWhatIsAcknowledged) {
  Fixture f(100);
  ASSERT_TRUE(f.runtime->start());
  PipelineConfig config;
  config.transforms.push_back(std::make_unique<DoubleTransform>());
  config.routes.push_back({std::make_unique<LoggingSink>(f.log, "a"), nullptr});
  auto pipeline = Pipeline::create(std::move(config)).value();
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->drain_and_stop(*pipeline, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 6u);
  EXPECT_EQ(steps_of(f.log, {".write"}),
            (std::vector<std::string>{"a.write:1,1,2,2,3,3,4,4,5,5,6,6"}));
  EXPECT_EQ(f.checkpoint->record->committed_events, 6u);
  EXPECT_EQ(f.runtime->admin_snapshot().events_committed, 6u);
}

TEST(Pipeline, ABatchRoutedToTwoSinksIsAcknowledgedOnlyAfterBothFlushed) {
  Fixture f(3);
  ASSERT_TRUE(f.runtime->start());
  PipelineConfig config;
  config.routes.push_back({std::make_unique<LoggingSink>(f.log, "odd"), [](const Event& e) {
                             return std::stoi(*(*e.after)[0].text) % 2 == 1;
                           }});
  config.routes.push_back({std::make_unique<LoggingSink>(f.log, "all"), nullptr});
  auto pipeline = Pipeline::create(std::move(config)).value();
  std::atomic<bool> cancel{false};
  ASSERT_TRUE(f.runtime->drain_and_stop(*pipeline, cancel));
  const std::vector<std::string> expected = {
      "odd.write:1,3",   "all.write:1,2,3", "odd.flush",     "all.flush", "save:0/END3",
      "confirm:0/END3",  "odd.write:5",     "all.write:4,5,6", "odd.flush", "all.flush",
      "save:0/END6",     "confirm:0/END6"};
  EXPECT_EQ(steps_of(f.log, {".write", ".flush", "save:", "confirm:"}), expected);
}

TEST(Pipeline, AFailedFlushOfEitherSinkAcknowledgesNothing) {
  Fixture f(100);
  ASSERT_TRUE(f.runtime->start());
  PipelineConfig config;
  config.routes.push_back({std::make_unique<LoggingSink>(f.log, "a"), nullptr});
  auto second = std::make_unique<LoggingSink>(f.log, "b");
  second->fail_flush = true;
  config.routes.push_back({std::move(second), nullptr});
  auto pipeline = Pipeline::create(std::move(config)).value();
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->run_to_completion(*pipeline, cancel);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().report().find("b is full"), std::string::npos)
      << delivered.error().report();
  EXPECT_FALSE(f.checkpoint->record);
  EXPECT_TRUE(steps_of(f.log, {"save:", "confirm:"}).empty());
}

TEST(Pipeline, ARouteWithoutASinkIsAConfigurationError) {
  PipelineConfig none;
  auto empty = Pipeline::create(std::move(none));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind(), ErrorKind::kConfiguration);
  PipelineConfig config;
  config.routes.push_back({nullptr, nullptr});
  auto bad = Pipeline::create(std::move(config));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().report().find("route 1 has no sink"), std::string::npos);
}

TEST(DrainAndStop, DeliversEverythingThenStopsAndAQuietSourceStopsAtOnce) {
  Fixture f(4);
  ASSERT_TRUE(f.runtime->start());
  LoggingSink sink(f.log, "a");
  auto pipeline = Pipeline::of(sink);
  std::atomic<bool> cancel{false};
  auto delivered = f.runtime->drain_and_stop(*pipeline, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(*delivered, 6u);
  EXPECT_EQ(f.checkpoint->record->offset, "0/END6");
  EXPECT_EQ(f.runtime->state(), RuntimeState::kStopped);
  // Stopped: no more polls.
  EXPECT_FALSE(f.runtime->poll_event_batch());
}
