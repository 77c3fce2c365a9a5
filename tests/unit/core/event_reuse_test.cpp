// Reusing delivered events on the reader thread: a reset event is a default Event whatever it
// held before (nothing of its previous use leaks into the next), its after image and key names
// are handed to the caller with their memory, long strings are released, and the spare store
// stays within its bound.

#include "core/event_reuse.hpp"

#include <gtest/gtest.h>

#include "core/batch_queue.hpp"
#include "core/reader_handoff.hpp"

namespace cppcdc::detail {
namespace {

Event full_event() {
  Event e;
  e.op = Operation::kUpdate;
  e.before = BeforeFull{Row{ColumnValue{"id", "1", false}}, {"blob"}};
  e.after = Row{ColumnValue{"id", "1", false}, ColumnValue{"doc", "{\"a\":1}", true},
                ColumnValue{"note", std::string(1000, 'x'), false}};
  e.source = SourceMetadata{"mariadb", "mysql-bin.000001:12345", 17};
  e.ts = 42;
  e.schema = "db";
  e.table = "t";
  e.primary_key = std::vector<std::string>{"id"};
  e.shape = std::make_shared<const RowShape>("db", "t", std::vector<ColumnShape>{},
                                             std::vector<std::string>{"id"});
  e.snapshot = SnapshotMetadata{"snap", 3, true};
  e.transaction = TransactionMetadata{9, 2, 1};
  e.envelope_version = 7;
  e.unavailable_columns = {"blob"};
  e.resume_offset = "0-1-9";
  e.resume_state = std::string(5000, 's');
  e.log_position = LogPosition::from_bytes("pos").value();
  e.gtid = "0-1-9";
  e.snapshot_edge = SnapshotEdge::kLast;
  return e;
}

TEST(EventReuse, AResetEventEqualsADefaultEventAndHandsOverItsRowAndKeyNames) {
  Event e = full_event();
  ReusableParts parts;
  reset_for_reuse(e, parts);
  EXPECT_EQ(e, Event());
  EXPECT_TRUE(e.resume_state.empty());
  EXPECT_EQ(e.resume_state.capacity(), std::string().capacity());  // a long string is released
  // Outside operator==: checked one by one.
  EXPECT_TRUE(e.resume_offset.empty());
  EXPECT_TRUE(e.log_position.empty());
  EXPECT_TRUE(e.gtid.empty());
  EXPECT_EQ(e.snapshot_edge, SnapshotEdge::kNone);
  ASSERT_TRUE(parts.row.has_value());
  ASSERT_EQ(parts.row->size(), 3u);  // the columns stay, with empty strings, for the decoder
  for (const auto& c : *parts.row) {
    EXPECT_TRUE(c.name.empty());
    if (c.text) {
      EXPECT_TRUE(c.text->empty());
    }
  }
  EXPECT_EQ((*parts.row)[2].text->capacity(), std::string().capacity());
  ASSERT_TRUE(parts.names.has_value());
  EXPECT_EQ(*parts.names, std::vector<std::string>{"id"});
  EXPECT_NE(parts.shape, nullptr);  // handed over, not dropped
}

TEST(EventReuse, PartsAlreadyHeldAreKeptAndTheEventsOwnAreReleased) {
  ReusableParts parts;
  parts.row = Row{ColumnValue{"keep", "me", false}};
  parts.names = std::vector<std::string>{"k"};
  Event e = full_event();
  reset_for_reuse(e, parts);
  EXPECT_EQ(e, Event());
  EXPECT_EQ(parts.row->size(), 1u);
  EXPECT_NE(parts.shape, nullptr);  // none held before: the event's shape was handed over
  // A shape already held stays; the next event's own is released.
  const RowShapePtr held = parts.shape;
  Event second = full_event();
  reset_for_reuse(second, parts);
  EXPECT_EQ(second, Event());
  EXPECT_EQ(second.shape, nullptr);
  EXPECT_EQ(parts.shape, held);
  EXPECT_EQ((*parts.row)[0].name, "keep");
  EXPECT_EQ(*parts.names, std::vector<std::string>{"k"});
}

// Every field outside operator== as well: nothing of a recycled event's previous use is left.
void expect_fresh(const Event& e, const std::string& what) {
  EXPECT_EQ(e, Event()) << what;
  EXPECT_TRUE(e.resume_offset.empty()) << what;
  EXPECT_TRUE(e.resume_state.empty()) << what;
  EXPECT_TRUE(e.log_position.empty()) << what;
  EXPECT_TRUE(e.gtid.empty()) << what;
  EXPECT_TRUE(e.unavailable_columns.empty()) << what;
  EXPECT_FALSE(e.before.row()) << what;
  EXPECT_FALSE(e.after) << what;
  EXPECT_FALSE(e.transaction) << what;
  EXPECT_EQ(e.snapshot_edge, SnapshotEdge::kNone) << what;
}

std::vector<std::vector<Event>> full_batches(std::vector<std::size_t> sizes) {
  std::vector<std::vector<Event>> out;
  for (auto n : sizes) {
    auto& b = out.emplace_back();
    for (std::size_t i = 0; i < n; ++i) b.push_back(full_event());
  }
  return out;
}

// What a reader filling recycled events in place holds: spares of one batch of `n` full
// events (`recycled` points at its first), its open batch and the parts of a reset event.
struct ReaderSide {
  explicit ReaderSide(std::size_t n) {
    auto batches = full_batches({n});
    recycled = batches[0].data();
    spares.keep(batches);
  }
  SpareEvents spares;
  const Event* recycled = nullptr;
  InPlaceBatch tx;
  ReusableParts parts;
};

// A push for InPlaceBatch::hand_over into `q`, each event measured 1 byte; counts the pushes
// in `*pushes` when given.
auto pusher(BatchQueue& q, int* pushes = nullptr) {
  return [&q, pushes](std::vector<Event>& events, std::size_t from, std::size_t to) {
    if (pushes) ++*pushes;
    std::vector<std::size_t> sizes(to - from, 1);
    q.push(events, from, to, sizes, to - from);
    return true;
  };
}

TEST(EventReuse, SpareEventsHandsOutWholeBatchesAndStaysWithinItsBound) {
  SpareEvents spares;
  auto batches = full_batches({1, 2});
  spares.keep(batches);
  EXPECT_TRUE(batches.empty());
  EXPECT_EQ(spares.size(), 3u);
  std::vector<Event> out;
  ASSERT_TRUE(spares.take_batch(out));
  EXPECT_EQ(out.size(), 2u);  // the newest first
  EXPECT_EQ(spares.size(), 1u);
  EXPECT_FALSE(spares.take_batch(out)) << "only into an empty vector";
  out.clear();
  ASSERT_TRUE(spares.take_batch(out));
  EXPECT_EQ(out.size(), 1u);
  out.clear();
  EXPECT_FALSE(spares.take_batch(out));
  EXPECT_EQ(spares.size(), 0u);

  std::vector<std::vector<Event>> many(1);
  many[0].resize(SpareEvents::kMaxEvents + 10);
  many.emplace_back(5);
  spares.keep(many);
  EXPECT_EQ(spares.size(), SpareEvents::kMaxEvents);
}

TEST(EventReuse, AnInPlaceBatchFillsRecycledEventsWhereTheyAreWithNothingStale) {
  SpareEvents spares;
  auto batches = full_batches({3});
  const Event* recycled = batches[0].data();
  spares.keep(batches);
  InPlaceBatch tx;
  ReusableParts parts;
  for (int i = 0; i < 3; ++i) {
    Event& e = tx.append(spares, parts);
    EXPECT_EQ(&e, recycled + i) << "filled in place, not moved";
    expect_fresh(e, "recycled event " + std::to_string(i));
    // The after image and key names come to the caller, for the decoder to fill.
    ASSERT_TRUE(parts.row) << i;
    ASSERT_TRUE(parts.names) << i;
    e.table = "t" + std::to_string(i);
    e.after = std::move(parts.row);
    e.primary_key = std::move(parts.names);
    parts = ReusableParts();
  }
  Event& fresh = tx.append(spares, parts);  // the recycled ones are used up: a new one
  expect_fresh(fresh, "new event");
  EXPECT_FALSE(parts.row);
  tx.pop_back();
  EXPECT_EQ(tx.size(), 3u);
  EXPECT_EQ(tx[2].table, "t2");
  EXPECT_EQ(tx.back().table, "t2");

  // Dropped events are reset again when handed out again.
  tx.clear();
  EXPECT_TRUE(tx.empty());
  expect_fresh(tx.append(spares, parts), "dropped and handed out again");
}

TEST(EventReuse, AHandedOverBatchIsMovedOutAndTheNextFillsTheRecycledEventsAfterIt) {
  BatchQueue q;
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 100), 0u);  // a poll of 100: batches are gathered from now on
  ReaderSide r(5);
  auto& [spares, recycled, tx, parts] = r;
  auto push = pusher(q);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 2; ++i) {
      Event& e = tx.append(spares, parts);
      EXPECT_EQ(&e, recycled + 2 * round + i);
      expect_fresh(e, "round " + std::to_string(round));
      e.table = "t" + std::to_string(2 * round + i);
      e.gtid = "0-1-" + std::to_string(round);
      parts = ReusableParts();
    }
    tx.commit();
    EXPECT_TRUE(tx.hand_over(push, spares));
    EXPECT_TRUE(tx.empty());
  }
  EXPECT_EQ(q.size(), 4u);
  // The fifth recycled event, then (the vector used up) new ones in a vector of their own.
  Event& fifth = tx.append(spares, parts);
  EXPECT_EQ(&fifth, recycled + 4);
  expect_fresh(fifth, "fifth");
  fifth.table = "t4";
  tx.commit();
  EXPECT_TRUE(tx.hand_over(push, spares));
  Event& sixth = tx.append(spares, parts);
  expect_fresh(sixth, "sixth");
  sixth.table = "t5";
  tx.commit();
  EXPECT_TRUE(tx.hand_over(push, spares));

  polled.clear();
  EXPECT_EQ(q.take(polled, 100), 6u);
  ASSERT_EQ(polled.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(polled[i].table, "t" + std::to_string(i));
  EXPECT_EQ(polled[3].gtid, "0-1-1");
}

TEST(EventReuse, AnInPlaceBatchDoesNotGrowWithTheBatchesHandedOverBeforeIt) {
  BatchQueue q;
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 1000000), 0u);  // everything is gathered: the events are moved out
  auto push = pusher(q);
  SpareEvents spares;
  auto batches = full_batches({6, 5});
  spares.keep(batches);
  InPlaceBatch tx;
  ReusableParts parts;
  int n = 0;
  // Batches of 4, each with one more event appended and dropped (as the reader does after a
  // rows event's last row): the 5 recycled events run out in the second batch, which moves
  // to the front of the next spare batch (6 events); that runs out in the third, which moves
  // to the front of its own vector, and new events follow.
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 4; ++i) {
      Event& e = tx.append(spares, parts);
      expect_fresh(e, "event " + std::to_string(n));
      e.table = "t" + std::to_string(n++);
      parts = ReusableParts();
    }
    tx.append(spares, parts);
    tx.pop_back();
    ASSERT_EQ(tx.size(), 4u);
    EXPECT_EQ(tx[0].table, "t" + std::to_string(n - 4));
    EXPECT_EQ(tx.back().table, "t" + std::to_string(n - 1));
    tx.commit();
    tx.hand_over(push, spares);
    EXPECT_LE(tx.slots(), 10u) << "round " << round;
  }
  EXPECT_EQ(q.take(polled, 1000000), 400u);
  for (int i = 0; i < 400; ++i) ASSERT_EQ(polled[i].table, "t" + std::to_string(i));
}

TEST(EventReuse, ABatchThatIsAWholeVectorChangesHands) {
  BatchQueue q;  // no poll yet: nothing is gathered
  InPlaceBatch tx;
  SpareEvents spares;
  ReusableParts parts;
  tx.append(spares, parts).table = "a";
  tx.append(spares, parts).table = "b";
  const Event* storage = tx.begin();
  tx.commit();
  tx.hand_over(pusher(q), spares);
  EXPECT_TRUE(tx.empty());
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 4), 2u);
  EXPECT_EQ(polled.data(), storage);
  expect_fresh(tx.append(spares, parts), "after the hand-over");
}

TEST(EventReuse, FinishedBatchesAreHeldAndChangeHandsWithTheirVector) {
  BatchQueue q;
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 4), 0u);  // a poll of 4: a batch of 2 or more is not gathered
  ReaderSide r(6);
  auto& [spares, recycled, tx, parts] = r;
  int pushes = 0;
  auto push = pusher(q, &pushes);
  for (int i = 0; i < 5; ++i) {
    tx.append(spares, parts).table = "t" + std::to_string(i);
    parts = ReusableParts();
    if (i % 2 == 1) tx.commit();  // two transactions of two events; the fifth stays open
  }
  EXPECT_EQ(tx.held(), 4u);
  EXPECT_EQ(tx.size(), 1u);
  EXPECT_EQ(pushes, 0) << "held, not pushed";
  EXPECT_FALSE(tx.must_hand_over());

  // Four held, two after them (the open event, a recycled one): the vector is cut after the
  // held events and changes hands; the open event and the recycled one go on in a vector of
  // their own.
  EXPECT_TRUE(tx.hand_over(push, spares));
  EXPECT_EQ(pushes, 1);
  EXPECT_EQ(tx.held(), 0u);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].table, "t4");
  EXPECT_EQ(tx.slots(), 2u) << "the recycled event after the open one is kept";
  expect_fresh(tx.append(spares, parts), "the kept recycled event");
  polled.clear();
  EXPECT_EQ(q.take(polled, 4), 4u);
  EXPECT_EQ(polled.data(), recycled) << "the held events did not move";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(polled[i].table, "t" + std::to_string(i));

  // Nothing held: nothing is pushed.
  EXPECT_FALSE(tx.hand_over(push, spares));
  EXPECT_EQ(pushes, 1);
}

TEST(EventReuse, HeldEventsFollowedByMoreRecycledOnesAreMovedOut) {
  BatchQueue q;
  ReaderSide r(10);
  auto& [spares, recycled, tx, parts] = r;
  auto push = pusher(q);
  tx.append(spares, parts).table = "a";
  tx.append(spares, parts).table = "b";
  tx.commit();
  // Two held, eight recycled after them: moving the two costs less than cutting the vector.
  EXPECT_TRUE(tx.hand_over(push, spares));
  EXPECT_EQ(tx.slots(), 10u);
  Event& next = tx.append(spares, parts);
  EXPECT_EQ(&next, recycled + 2) << "the next event is filled in place after them";
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 10), 2u);
  EXPECT_EQ(polled[0].table, "a");
  EXPECT_EQ(polled[1].table, "b");
}

TEST(EventReuse, AFullVectorWithHeldEventsAsksForAHandOverBeforeItGrows) {
  BatchQueue q;
  SpareEvents spares;  // none: the vector grows one event at a time
  InPlaceBatch tx;
  ReusableParts parts;
  tx.append(spares, parts).table = "a";
  EXPECT_FALSE(tx.must_hand_over()) << "nothing held";
  tx.commit();
  ASSERT_TRUE(tx.must_hand_over()) << "full: growing it would move the held event";
  const Event* storage = tx.end() - 1;
  tx.hand_over(pusher(q), spares);
  EXPECT_FALSE(tx.must_hand_over());
  std::vector<Event> polled;
  EXPECT_EQ(q.take(polled, 1), 1u);
  EXPECT_EQ(polled.data(), storage);
  EXPECT_EQ(polled[0].table, "a");
}

TEST(EventReuse, TheHandOffGivesRecycledBatchesBackToTheReader) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::vector<Event> delivered(3);
  h.recycle(std::move(delivered));
  std::vector<std::vector<Event>> back;
  h.take_recycled(back);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].size(), 3u);
  back.clear();
  h.take_recycled(back);
  EXPECT_TRUE(back.empty());
  h.close();
}

}  // namespace
}  // namespace cppcdc::detail
