// The reader-to-poll hand-over queue: order, counts and byte measures across batches taken
// in pieces, the whole-batch swap, and the capacity a reader keeps.

#include "core/batch_queue.hpp"

#include <gtest/gtest.h>

#include "unit/core/test_events.hpp"

namespace cppcdc::detail {
namespace {

using test::events;

std::vector<std::size_t> sizes(int n, std::size_t each) {
  return std::vector<std::size_t>(n, each);
}

TEST(BatchQueue, TakesInOrderAcrossBatchesWithCountsAndBytesKept) {
  BatchQueue q;
  auto a = events(0, 3);
  auto as = sizes(3, 10);
  q.push(a, as, 30);
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(as.empty());
  auto b = events(3, 4);
  auto bs = sizes(4, 100);
  q.push(b, bs, 400);
  EXPECT_EQ(q.size(), 7u);
  EXPECT_EQ(q.bytes(), 430u);

  std::vector<Event> out;
  EXPECT_EQ(q.take(out, 2), 2u);  // part of the first batch
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.bytes(), 410u);
  EXPECT_EQ(q.take(out, 3), 3u);  // the rest of the first and the start of the second
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.bytes(), 200u);
  EXPECT_EQ(q.take(out, 100), 2u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
  ASSERT_EQ(out.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(out[i].table, "t" + std::to_string(i));
  EXPECT_EQ(q.take(out, 5), 0u);
}

TEST(BatchQueue, AWholeBatchChangesHandsWithoutMovingItsEvents) {
  BatchQueue q;
  auto a = events(0, 5);
  const Event* storage = a.data();
  auto as = sizes(5, 1);
  q.push(a, as, 5);
  std::vector<Event> out;
  EXPECT_EQ(q.take(out, 5), 5u);
  EXPECT_EQ(out.data(), storage);
  EXPECT_EQ(out[4].table, "t4");
}

TEST(BatchQueue, ABigFirstBatchChangesHandsWholeAndSmallOnesAreGathered) {
  BatchQueue q;
  auto big = events(0, 6);
  const Event* storage = big.data();
  auto bigs = sizes(6, 1);
  q.push(big, bigs, 6);
  auto next = events(6, 4);
  auto nexts = sizes(4, 1);
  q.push(next, nexts, 4);
  std::vector<Event> out;
  // 6 of the 10 asked for: at least half, so the batch is swapped in and returned alone.
  EXPECT_EQ(q.take(out, 10), 6u);
  EXPECT_EQ(out.data(), storage);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.bytes(), 4u);

  out.clear();
  for (int i = 0; i < 3; ++i) {
    auto small = events(10 + i, 1);
    auto smalls = sizes(1, 1);
    q.push(small, smalls, 1);
  }
  // 4 + 1 + 1 + 1 queued, 20 asked for: the first batch is under half of 20, so all are
  // gathered.
  EXPECT_EQ(q.take(out, 20), 7u);
  ASSERT_EQ(out.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(out[i].table, "t" + std::to_string(6 + i));
  EXPECT_TRUE(q.empty());
}

TEST(BatchQueue, SmallBatchesQueuedWhilePollIsBusyAreGatheredUpToThePollsSize) {
  BatchQueue q;
  std::vector<Event> out;
  EXPECT_EQ(q.take(out, 10), 0u);  // a poll of up to 10 events, with nothing queued yet
  auto first = events(0, 3);
  auto firsts = sizes(3, 1);
  q.push(first, firsts, 3);
  // Three more batches of 3 while nobody polls: two join the first (9 events), the third
  // would make 12 > 10 and starts a batch of its own.
  for (int i = 1; i < 4; ++i) {
    std::vector<Event> b;
    b.reserve(8);
    for (auto& e : events(3 * i, 3)) b.push_back(std::move(e));
    auto bs = sizes(3, 10);
    q.push(b, bs, 30);
    EXPECT_TRUE(b.empty());
    EXPECT_TRUE(bs.empty());
    if (i < 3) {
      EXPECT_GE(b.capacity(), 8u) << "a gathered batch leaves the reader its vector";
    }
  }
  EXPECT_EQ(q.size(), 12u);
  EXPECT_EQ(q.bytes(), 93u);
  // The gathered 9 are at least half of 10: they change hands whole, by a swap, alone.
  EXPECT_EQ(q.take(out, 10), 9u);
  ASSERT_EQ(out.size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out[i].table, "t" + std::to_string(i));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.bytes(), 30u);

  // A batch that take() has started is not added to: its rest comes first, then the new one.
  out.clear();
  EXPECT_EQ(q.take(out, 2), 2u);
  auto late = events(12, 1);
  auto lates = sizes(1, 5);
  q.push(late, lates, 5);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.bytes(), 15u);
  EXPECT_EQ(q.take(out, 2), 2u);
  ASSERT_EQ(out.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i].table, "t" + std::to_string(9 + i));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
}

TEST(BatchQueue, ABatchOfHalfAPollOrMoreIsNotGatheredIntoTheLastOne) {
  BatchQueue q;
  std::vector<Event> out;
  EXPECT_EQ(q.take(out, 10), 0u);  // a poll of up to 10 events
  auto small = events(0, 2);
  auto smalls = sizes(2, 1);
  q.push(small, smalls, 2);
  auto big = events(2, 5);  // half of 10: take() swaps it in whole, so it is not moved here
  const Event* storage = big.data();
  auto bigs = sizes(5, 1);
  q.push(big, bigs, 5);
  EXPECT_EQ(q.size(), 7u);
  EXPECT_EQ(q.take(out, 2), 2u);
  std::vector<Event> next;
  EXPECT_EQ(q.take(next, 10), 5u);
  EXPECT_EQ(next.data(), storage);
  EXPECT_EQ(next[4].table, "t6");
}

TEST(BatchQueue, NothingIsGatheredBeforeTheFirstPoll) {
  BatchQueue q;
  auto a = events(0, 2);
  auto as = sizes(2, 1);
  const Event* storage = a.data();
  q.push(a, as, 2);
  auto b = events(2, 2);
  auto bs = sizes(2, 1);
  q.push(b, bs, 2);
  std::vector<Event> out;
  // Two batches of 2: the first, half of 4, is swapped in alone (it was not gathered into).
  EXPECT_EQ(q.take(out, 4), 2u);
  EXPECT_EQ(out.data(), storage);
  EXPECT_EQ(q.size(), 2u);
}

TEST(BatchQueue, TheReaderKeepsCapacityForItsNextBatch) {
  BatchQueue q;
  std::vector<Event> a;
  a.reserve(64);
  for (auto& e : events(0, 10)) a.push_back(std::move(e));
  auto as = sizes(10, 1);
  q.push(a, as, 10);
  EXPECT_TRUE(a.empty());
  EXPECT_GE(a.capacity(), 64u);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
}

// With a large poll (max_buffer_size 50,000), batches of kWholeBatch events are not gathered:
// each changes hands whole, by a swap, in a poll of its own, though it is less than half a
// poll; small ones before it make a poll of their own, and the big one waits for the next.
TEST(BatchQueue, ABatchOfWholeBatchEventsIsNeitherGatheredNorMovedIntoALargePoll) {
  constexpr std::size_t kPoll = 50000;
  constexpr int kBig = static_cast<int>(BatchQueue::kWholeBatch);
  ASSERT_LT(2 * BatchQueue::kWholeBatch, kPoll);
  BatchQueue q;
  std::vector<Event> out;
  EXPECT_EQ(q.take(out, kPoll), 0u);  // the poll's size, before anything is queued
  auto small = events(0, 10);
  auto smalls = sizes(10, 1);
  q.push(small, smalls, 10);
  auto big = events(10, kBig);
  const Event* big_storage = big.data();
  auto bigs = sizes(kBig, 1);
  q.push(big, bigs, kBig);  // not appended to the small batch
  auto big2 = events(10 + kBig, kBig);
  const Event* big2_storage = big2.data();
  auto big2s = sizes(kBig, 1);
  q.push(big2, big2s, kBig);  // nor to the first big one
  EXPECT_EQ(q.size(), 10u + 2 * BatchQueue::kWholeBatch);

  // The small batch alone: the big one after it is left for the next poll.
  EXPECT_EQ(q.take(out, kPoll), 10u);
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out[9].table, "t9");
  // Each big batch then changes hands whole, by a swap (its events are not moved), alone.
  out.clear();
  EXPECT_EQ(q.take(out, kPoll), BatchQueue::kWholeBatch);
  EXPECT_EQ(out.data(), big_storage);
  EXPECT_EQ(out.front().table, "t10");
  out.clear();
  EXPECT_EQ(q.take(out, kPoll), BatchQueue::kWholeBatch);
  EXPECT_EQ(out.data(), big2_storage);
  EXPECT_EQ(out.back().table, "t" + std::to_string(9 + 2 * kBig));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.moved_growing(), 0u);

  // A caller's own events in `out` (held back until more come) do not make the big batch
  // wait: it is appended to them, or the caller would wait for ever.
  auto big3 = events(100000, kBig);
  auto big3s = sizes(kBig, 1);
  q.push(big3, big3s, kBig);
  out = events(99990, 10);
  EXPECT_EQ(q.take(out, kPoll), BatchQueue::kWholeBatch);
  ASSERT_EQ(out.size(), 10u + BatchQueue::kWholeBatch);
  EXPECT_EQ(out[10].table, "t100000");
  // After events this poll took from a deferred batch (taken_before), it waits.
  auto big4 = events(200000, kBig);
  auto big4s = sizes(kBig, 1);
  q.push(big4, big4s, kBig);
  out = events(199995, 5);  // what the deferred batch made
  EXPECT_EQ(q.take(out, kPoll, nullptr, 5), 0u);
  EXPECT_EQ(out.size(), 5u);
  EXPECT_EQ(q.size(), BatchQueue::kWholeBatch);
}

// A large poll (max_buffer_size 50,000) gathered from many small batches: the events gathered
// so far move to a larger vector only a few times, not once per batch. Room made for each
// batch on its own (vector::reserve is exact) moved them all at every push past the first
// reservation, which made such a configuration several times slower than the default.
TEST(BatchQueue, GatheringManySmallBatchesMovesTheGatheredEventsOnlyAFewTimes) {
  constexpr int kPoll = 40000;
  constexpr int kEach = 100;
  BatchQueue q;
  std::vector<Event> out;
  EXPECT_EQ(q.take(out, kPoll), 0u);  // the poll's size, before anything is queued
  for (int i = 0; i < kPoll / kEach; ++i) {
    auto b = events(i * kEach, kEach);
    auto bs = sizes(kEach, 1);
    q.push(b, bs, kEach);
  }
  EXPECT_EQ(q.size(), static_cast<std::size_t>(kPoll));
  // Doubling moves fewer than twice the events gathered in all (here the first batch's 100,
  // then 16,384 and 32,768); room made per batch moved about 6,600,000.
  EXPECT_LE(q.moved_growing(), static_cast<std::uint64_t>(2 * kPoll));
  EXPECT_EQ(q.take(out, kPoll), static_cast<std::size_t>(kPoll));
  ASSERT_EQ(out.size(), static_cast<std::size_t>(kPoll));
  for (int i = 0; i < kPoll; i += 997) EXPECT_EQ(out[i].table, "t" + std::to_string(i));
}

// The poll's own vector, assembled from several batches (grow_for_poll): it reserves the
// gathering size at once and then doubles, up to the poll's size.
TEST(BatchQueue, APollAssembledFromManyBatchesGrowsItsVectorByDoubling) {
  constexpr std::size_t kPoll = 50000;
  std::vector<Event> out;
  std::size_t growths = 0;
  std::size_t capacity = out.capacity();
  for (std::size_t n = 500; n <= kPoll; n += 500) {
    BatchQueue::grow_for_poll(out, n, kPoll);
    out.resize(n);
    if (out.capacity() != capacity) ++growths;
    capacity = out.capacity();
    EXPECT_LE(out.capacity(), kPoll) << "never more room than a poll holds";
  }
  EXPECT_LE(growths, 3u);
}

}  // namespace
}  // namespace cppcdc::detail
