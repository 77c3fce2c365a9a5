// What the runtime does to a batch between the source and the consumer: duplicate suppression
// (RuntimeOptions::idempotency) and the transaction boundary policy
// (RuntimeOptions::transaction_boundary), against a source the test feeds by hand.

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/tx_boundary.hpp"
#include "cppcdc/runtime.hpp"

using namespace cppcdc;

namespace {

// Hands out whatever the test fed it, up to the poll's limit. Never replays by itself: a test
// feeds an event again to play a source that re-reads it.
class FeedSource final : public Source {
 public:
  std::string type() const override { return "custom"; }
  std::string source_id() const override { return "feed"; }
  Status start(const std::optional<CheckpointRecord>&) override { return ok(); }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    ++polls;
    for (std::size_t n = 0; n < max && !pending.empty(); ++n) {
      out.push_back(std::move(pending.front()));
      pending.pop_front();
    }
    return ok();
  }
  Status confirm(std::string_view offset) override {
    confirmed.emplace_back(offset);
    return ok();
  }
  std::optional<std::string> idle_offset() override { return idle; }
  bool finished() override { return done; }
  void close() override {}

  void feed(const std::vector<Event>& events) {
    for (const auto& e : events) pending.push_back(e);
  }

  std::deque<Event> pending;
  std::vector<std::string> confirmed;
  std::optional<std::string> idle;
  bool done = false;
  int polls = 0;
};

class MemoryCheckpoint final : public Checkpoint {
 public:
  Result<std::optional<CheckpointRecord>> do_load() override { return record; }
  Status do_save(const CheckpointRecord& r) override {
    record = r;
    ++saves;
    return ok();
  }
  std::string name() const override { return "memory-test"; }
  std::optional<CheckpointRecord> record;
  int saves = 0;
};

// Event `index` of `total` in transaction `xid`; the last one is a resumable boundary.
Event tx_event(std::uint64_t xid, std::uint64_t index, std::uint64_t total) {
  const std::string id = std::to_string(xid) + "." + std::to_string(index);
  Event e = EventBuilder("t", Operation::kInsert)
                .source({"custom", "pos-" + id, 0})
                .after({ColumnValue{"id", id, false}})
                .transaction({xid, total, index})
                .build();
  if (index + 1 == total) e.resume_offset = "end-" + std::to_string(xid);
  return e;
}

std::vector<Event> tx(std::uint64_t xid, std::uint64_t total) {
  std::vector<Event> out;
  for (std::uint64_t i = 0; i < total; ++i) out.push_back(tx_event(xid, i, total));
  return out;
}

// A snapshot-style row: no transaction metadata, a key, its own resumable position.
Event keyed_row(int id, std::string resume) {
  Event e = EventBuilder("t", Operation::kRead)
                .source({"custom", "snap", 0})
                .primary_key({"id"})
                .after({ColumnValue{"id", std::to_string(id), false}})
                .build();
  e.resume_offset = std::move(resume);
  return e;
}

// A row of a keyless table outside any transaction.
Event keyless_row(std::string resume) {
  Event e = EventBuilder("pings", Operation::kInsert)
                .source({"custom", "same", 0})
                .after({ColumnValue{"status", "ok", false}})
                .build();
  e.resume_offset = std::move(resume);
  return e;
}

std::vector<std::string> ids(const EventBatch& batch) {
  std::vector<std::string> out;
  for (const auto& e : batch.events()) out.push_back(*(*e.after)[0].text);
  return out;
}

struct Rig {
  FeedSource* source = nullptr;
  std::shared_ptr<MemoryCheckpoint> checkpoint = std::make_shared<MemoryCheckpoint>();
  std::unique_ptr<Runtime> runtime;

  explicit Rig(RuntimeOptions options = {}) {
    auto src = std::make_unique<FeedSource>();
    source = src.get();
    RuntimeConfig config;
    config.source = std::move(src);
    config.checkpoint = checkpoint;
    options.max_poll_wait_ms = 1;
    config.options = options;
    runtime = Runtime::create(std::move(config)).value();
    EXPECT_TRUE(runtime->start());
  }
  EventBatch poll() { return runtime->poll_event_batch().value(); }
  void ack(const EventBatch& batch) { ASSERT_TRUE(runtime->commit_ack(batch.ack_mode())); }
  std::string checkpointed() const {
    return checkpoint->record ? checkpoint->record->offset : std::string("(none)");
  }
};

RuntimeOptions preserving(std::size_t max) {
  RuntimeOptions o;
  o.max_buffer_size = max;
  o.transaction_boundary = TransactionBoundaryPolicy::kPreserveTransactions;
  return o;
}

}  // namespace

// --- duplicate suppression -----------------------------------------------------------------

TEST(RuntimeIdempotency, AnAcknowledgedEventReadAgainIsNotHandedOutButIsAcknowledged) {
  Rig rig;
  rig.source->feed(tx(1, 2));
  auto first = rig.poll();
  ASSERT_EQ(first.size(), 2u);
  rig.ack(first);
  // The source reads transaction 1 again, then transaction 2.
  rig.source->feed(tx(1, 2));
  rig.source->feed(tx(2, 1));
  auto second = rig.poll();
  EXPECT_EQ(ids(second), (std::vector<std::string>{"2.0"}));
  rig.ack(second);
  EXPECT_EQ(rig.checkpointed(), "end-2");
  const auto snap = rig.runtime->admin_snapshot();
  EXPECT_EQ(snap.idempotency_suppressed, 2u);
  EXPECT_EQ(snap.events_committed, 5u);  // the suppressed two are acknowledged too
  EXPECT_EQ(snap.in_flight, 0u);
  EXPECT_EQ(snap.idempotency_unidentifiable_passthrough, 0u);
}

TEST(RuntimeIdempotency, APollOfOnlyDuplicatesCheckpointsPastThemAndReadsOn) {
  Rig rig;
  rig.source->feed({keyed_row(1, "cursor-1")});
  auto first = rig.poll();
  rig.ack(first);
  EXPECT_EQ(rig.checkpointed(), "cursor-1");
  // A chunk re-read: the same row, now carrying a later resumable position, and nothing else
  // yet. Nothing is handed out, and the checkpoint still moves past it, as if delivered.
  rig.source->feed({keyed_row(1, "cursor-1b")});
  auto none = rig.poll();
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.ack_mode().required());
  EXPECT_EQ(rig.checkpointed(), "cursor-1b");
  EXPECT_EQ(rig.source->confirmed.back(), "cursor-1b");
  // Duplicates followed by new events in later reads: the poll reads on to the new ones.
  rig.source->feed({keyed_row(1, "cursor-1c")});
  auto next = rig.poll();
  EXPECT_TRUE(next.empty());
  rig.source->feed({keyed_row(2, "cursor-2")});
  next = rig.poll();
  EXPECT_EQ(ids(next), (std::vector<std::string>{"2"}));
  rig.ack(next);
  EXPECT_EQ(rig.checkpointed(), "cursor-2");
  EXPECT_EQ(rig.runtime->admin_snapshot().idempotency_suppressed, 2u);
}

TEST(RuntimeIdempotency, ATailLeftByAcceptPrefixIsRedeliveredNotSuppressed) {
  Rig rig;
  rig.source->feed(tx(1, 1));
  rig.ack(rig.poll());
  // Transaction 1 read again in front of three new transactions.
  rig.source->feed(tx(1, 1));
  rig.source->feed(tx(2, 1));
  rig.source->feed(tx(3, 1));
  rig.source->feed(tx(4, 1));
  auto batch = rig.poll();
  ASSERT_EQ(ids(batch), (std::vector<std::string>{"2.0", "3.0", "4.0"}));
  // The consumer wrote only the first handed-out event.
  auto head = batch.ack_mode().token->accept_prefix(1).value();
  ASSERT_TRUE(rig.runtime->commit_ack(head));
  EXPECT_EQ(rig.checkpointed(), "end-2");
  // The tail comes again in full: it was handed out, never acknowledged.
  auto tail = rig.poll();
  EXPECT_EQ(ids(tail), (std::vector<std::string>{"3.0", "4.0"}));
  // Nothing acknowledged yet: handing it out once more (accept nothing) still suppresses none.
  auto nothing = tail.ack_mode().token->accept_prefix(0).value();
  ASSERT_TRUE(rig.runtime->commit_ack(nothing));
  auto again = rig.poll();
  EXPECT_EQ(ids(again), (std::vector<std::string>{"3.0", "4.0"}));
  rig.ack(again);
  EXPECT_EQ(rig.checkpointed(), "end-4");
  EXPECT_EQ(rig.runtime->admin_snapshot().idempotency_suppressed, 1u);
}

TEST(RuntimeIdempotency, AcceptingNothingStillCoversADuplicateInFrontOfTheFirstHandedOut) {
  Rig rig;
  rig.source->feed({keyed_row(1, "c1")});
  rig.ack(rig.poll());
  rig.source->feed({keyed_row(1, "c1-again")});
  rig.source->feed({keyed_row(2, "c2")});
  auto batch = rig.poll();
  ASSERT_EQ(ids(batch), (std::vector<std::string>{"2"}));
  ASSERT_TRUE(rig.runtime->commit_ack(batch.ack_mode().token->accept_prefix(0).value()));
  // The duplicate was acknowledged before: the checkpoint may pass it; row 2 comes again.
  EXPECT_EQ(rig.checkpointed(), "c1-again");
  auto again = rig.poll();
  EXPECT_EQ(ids(again), (std::vector<std::string>{"2"}));
}

TEST(RuntimeIdempotency, KeylessRowsWithoutTransactionMetadataAlwaysPassAndAreCounted) {
  Rig rig;
  rig.source->feed({keyless_row("p1"), keyless_row("p2")});  // two real, identical rows
  auto batch = rig.poll();
  EXPECT_EQ(batch.size(), 2u);
  rig.ack(batch);
  rig.source->feed({keyless_row("p3")});
  batch = rig.poll();
  EXPECT_EQ(batch.size(), 1u);
  rig.ack(batch);
  const auto snap = rig.runtime->admin_snapshot();
  EXPECT_EQ(snap.idempotency_unidentifiable_passthrough, 3u);
  EXPECT_EQ(snap.idempotency_suppressed, 0u);
}

TEST(RuntimeIdempotency, EvictionsFromAFullWindowAreCounted) {
  RuntimeOptions options;
  options.idempotency = IdempotencyOptions::create(2).value();
  Rig rig(options);
  rig.source->feed(tx(1, 1));
  rig.source->feed(tx(2, 1));
  rig.source->feed(tx(3, 1));
  rig.ack(rig.poll());
  EXPECT_EQ(rig.runtime->admin_snapshot().idempotency_evictions, 1u);
  // Transaction 1 fell out of the window: read again, it is handed out again.
  rig.source->feed(tx(1, 1));
  rig.source->feed(tx(3, 1));
  auto batch = rig.poll();
  EXPECT_EQ(ids(batch), (std::vector<std::string>{"1.0"}));
}

TEST(RuntimeIdempotency, TurnedOffEveryEventIsHandedOut) {
  RuntimeOptions options;
  options.idempotency.reset();
  Rig rig(options);
  rig.source->feed(tx(1, 1));
  rig.ack(rig.poll());
  rig.source->feed(tx(1, 1));
  EXPECT_EQ(rig.poll().size(), 1u);
  EXPECT_EQ(rig.runtime->admin_snapshot().idempotency_suppressed, 0u);
}

TEST(RuntimeIdempotency, ZeroCapacityIsAConfigurationError) {
  RuntimeConfig config;
  config.source = std::make_unique<FeedSource>();
  config.checkpoint = std::make_shared<MemoryCheckpoint>();
  config.options.idempotency = IdempotencyOptions{0, 0};
  auto created = Runtime::create(std::move(config));
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().kind(), ErrorKind::kConfiguration);
}

// --- transaction boundaries ----------------------------------------------------------------

TEST(TransactionBoundary, SplitIsTheDefaultAndCutsOnSizeAlone) {
  RuntimeOptions options;
  options.max_buffer_size = 4;
  EXPECT_EQ(options.transaction_boundary, TransactionBoundaryPolicy::kSplit);
  Rig rig(options);
  rig.source->feed(tx(1, 2));
  rig.source->feed(tx(2, 3));
  auto batch = rig.poll();
  EXPECT_EQ(ids(batch), (std::vector<std::string>{"1.0", "1.1", "2.0", "2.1"}));
}

TEST(TransactionBoundary, PreserveHoldsATrailingPartialTransactionForTheNextBatch) {
  Rig rig(preserving(4));
  rig.source->feed(tx(1, 2));
  rig.source->feed(tx(2, 1));
  rig.source->feed(tx(3, 3));
  auto first = rig.poll();
  EXPECT_EQ(ids(first), (std::vector<std::string>{"1.0", "1.1", "2.0"}));
  rig.ack(first);
  EXPECT_EQ(rig.checkpointed(), "end-2");
  auto second = rig.poll();
  EXPECT_EQ(ids(second), (std::vector<std::string>{"3.0", "3.1", "3.2"}));
  rig.ack(second);
  EXPECT_EQ(rig.checkpointed(), "end-3");
}

TEST(TransactionBoundary, PreserveWithholdsATransactionWhoseRestIsStillInFlight) {
  Rig rig(preserving(100));
  auto three = tx(7, 3);
  rig.source->idle = "idle-past-everything";
  rig.source->feed({three[0], three[1]});
  auto none = rig.poll();
  EXPECT_TRUE(none.empty());
  // The source's idle position lies past the withheld events: it must not be checkpointed.
  EXPECT_FALSE(rig.checkpoint->record);
  EXPECT_TRUE(rig.source->confirmed.empty());
  rig.source->idle.reset();
  rig.source->feed({three[2]});
  auto whole = rig.poll();
  EXPECT_EQ(ids(whole), (std::vector<std::string>{"7.0", "7.1", "7.2"}));
  rig.ack(whole);
  EXPECT_EQ(rig.checkpointed(), "end-7");
}

TEST(TransactionBoundary, PreserveTakesALaterTransactionAsTheEndOfTheOneBefore) {
  Rig rig(preserving(100));
  // A source that does not know a transaction's size (total_events 0).
  Event a0 = tx_event(1, 0, 0), a1 = tx_event(1, 1, 0), b0 = tx_event(2, 0, 0);
  a1.resume_offset = "end-1";
  rig.source->feed({a0, a1});
  EXPECT_TRUE(rig.poll().empty());
  rig.source->feed({b0});
  auto batch = rig.poll();
  EXPECT_EQ(ids(batch), (std::vector<std::string>{"1.0", "1.1"}));
}

TEST(TransactionBoundary, PreserveNeverHoldsBackEventsWithoutTransactionMetadata) {
  Rig rig(preserving(100));
  rig.source->feed({keyed_row(1, "c1"), keyed_row(2, "c2")});
  EXPECT_EQ(rig.poll().size(), 2u);
}

TEST(TransactionBoundary, PreserveHoldsBackUntransactedEventsThatFollowAnOpenTransaction) {
  Rig rig(preserving(100));
  auto two = tx(5, 2);
  rig.source->feed({keyed_row(1, "c1"), two[0], keyed_row(2, "c2")});
  auto first = rig.poll();
  EXPECT_EQ(ids(first), (std::vector<std::string>{"1"}));
  rig.ack(first);
  rig.source->feed({two[1]});
  EXPECT_EQ(ids(rig.poll()), (std::vector<std::string>{"5.0", "2", "5.1"}));
}

TEST(TransactionBoundary, ATransactionLargerThanMaxBufferSizeIsDeliveredSplitWithAWarning) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", ring));
  {
    Rig rig(preserving(2));
    rig.source->feed(tx(42, 5));
    rig.source->feed(tx(43, 1));
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 3; ++i) {
      auto batch = rig.poll();
      sizes.push_back(batch.size());
      rig.ack(batch);
    }
    EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 2, 2}));  // 42.0-1, 42.2-3, 42.4 + 43.0
    EXPECT_EQ(rig.checkpointed(), "end-43");
  }
  spdlog::set_default_logger(previous);
  int warnings = 0;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("[warning]") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(line.find("transaction 42 "), std::string::npos) << line;
    EXPECT_NE(line.find("max_buffer_size (2)"), std::string::npos) << line;
  }
  EXPECT_EQ(warnings, 1);  // once per transaction, not once per batch
}

TEST(TransactionBoundary, AFinishedSourceDeliversItsUnendedLastTransaction) {
  Rig rig(preserving(100));
  auto three = tx(9, 3);
  rig.source->feed({three[0], three[1]});
  rig.source->done = true;
  EXPECT_EQ(rig.poll().size(), 2u);
}

TEST(TransactionBoundary, APartialAcknowledgementUnderPreserveRedeliversTheTailFirst) {
  Rig rig(preserving(4));
  rig.source->feed(tx(1, 1));
  rig.source->feed(tx(2, 2));
  rig.source->feed(tx(3, 2));
  auto first = rig.poll();
  ASSERT_EQ(ids(first), (std::vector<std::string>{"1.0", "2.0", "2.1"}));
  ASSERT_TRUE(rig.runtime->commit_ack(first.ack_mode().token->accept_prefix(1).value()));
  auto second = rig.poll();
  EXPECT_EQ(ids(second), (std::vector<std::string>{"2.0", "2.1", "3.0", "3.1"}));
}

TEST(TransactionBoundary, PolicyNames) {
  EXPECT_EQ(to_string(TransactionBoundaryPolicy::kSplit), "split");
  EXPECT_EQ(to_string(TransactionBoundaryPolicy::kPreserveTransactions), "preserve_transactions");
}

TEST(TransactionBoundary, TrailingOpenTransactionFindsWhereTheHeldBackTailBegins) {
  EXPECT_FALSE(detail::trailing_open_transaction(tx(1, 2)));
  auto events = tx(1, 2);
  auto partial = tx(2, 3);
  events.push_back(partial[0]);
  events.push_back(keyed_row(1, "c"));
  events.push_back(partial[1]);
  auto open = detail::trailing_open_transaction(events);
  ASSERT_TRUE(open);
  EXPECT_EQ(open->start, 2u);
  EXPECT_EQ(open->tx_id, 2u);
}
