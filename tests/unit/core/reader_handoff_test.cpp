// The reader-thread hand-off on its own: order across batches, back-pressure that holds the
// reader until poll takes, delivered vectors coming back to the reader, the reader's end
// reaching poll after what it queued, and a stop releasing a blocked reader. Every wait is on
// a condition; the timeouts only bound a failing test.

#include "core/reader_handoff.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "wait_until.hpp"
#include "unit/core/test_events.hpp"

namespace cppcdc::detail {
namespace {

using namespace std::chrono_literals;
using test::wait_until;

using test::events;

std::vector<Event> take_all(ReaderHandoff& h, std::size_t n) {
  std::vector<Event> out;
  EXPECT_TRUE(wait_until(
      [&] {
        h.take(out, n - out.size(), 10ms);
        return out.size() >= n;
      },
      30s, 1ms));
  return out;
}

TEST(ReaderHandoff, EventsReachTheConsumerInTheOrderTheReaderPushedThem) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::thread reader([&] {
    for (int b = 0; b < 20; ++b) {
      auto batch = events(b * 7, 7);
      ASSERT_TRUE(h.push(batch));
      EXPECT_TRUE(batch.empty());
    }
  });
  const auto got = take_all(h, 140);
  reader.join();
  ASSERT_EQ(got.size(), 140u);
  for (int i = 0; i < 140; ++i) EXPECT_EQ(got[i].table, "t" + std::to_string(i));
  h.close();
}

// A poll on a thread of its own while the reader is assembling, with events t0 to t9 queued
// and a linger long enough (60 s) that a test never races it. A failing test stops the
// hand-off, which ends the poll's wait, before the thread is joined.
struct LingeringPoll {
  ReaderHandoff h;
  std::vector<Event> out;
  std::atomic<bool> returned{false};
  std::thread consumer;

  LingeringPoll() {
    ReaderHandoff::Limits limits{1000, std::size_t{1} << 30};
    limits.assembling_linger = 60s;
    EXPECT_TRUE(h.open(limits));
    h.set_assembling(true);
    auto a = events(0, 10);
    EXPECT_TRUE(h.push(a));
    consumer = std::thread([this] {
      h.take(out, 100, 10s);
      returned = true;
    });
  }
  ~LingeringPoll() {
    if (consumer.joinable()) {
      h.request_stop();
      consumer.join();
    }
    h.close();
  }
  bool has_begun_waiting() {
    return wait_until([&] { return h.assembling_lingers() == 1; }, 30s, 1ms);
  }
};

// While the reader is inside a transaction (assembling), a poll finding little queued waits for
// more: what the reader pushes meanwhile joins the same poll, and the wait ends once half a
// poll is queued.
TEST(ReaderHandoff, APollWaitsForTheRestWhileTheReaderIsAssemblingABatch) {
  LingeringPoll poll;
  ASSERT_TRUE(poll.has_begun_waiting());
  auto b = events(10, 10);
  ASSERT_TRUE(poll.h.push(b));  // 20 queued, under half a poll: the poll keeps waiting
  auto c = events(20, 35);
  ASSERT_TRUE(poll.h.push(c));  // 55: over half a poll, the wait ends
  poll.consumer.join();
  ASSERT_EQ(poll.out.size(), 55u);
  for (int i = 0; i < 55; ++i) EXPECT_EQ(poll.out[i].table, "t" + std::to_string(i));
  EXPECT_EQ(poll.h.assembling_lingers(), 1u);
}

// Clearing the flag ends a wait at the reader's next push: the stream's last transaction before
// a pause is not held back for the linger.
TEST(ReaderHandoff, TheLastPushOfAnAssemblingReaderEndsThePollsWait) {
  LingeringPoll poll;
  ASSERT_TRUE(poll.has_begun_waiting());
  poll.h.set_assembling(false);
  auto b = events(10, 5);
  ASSERT_TRUE(poll.h.push(b));
  // Long before the linger's 60 s: the poll returns with what was queued when it woke (the
  // second push joins this poll or the next one).
  ASSERT_TRUE(wait_until([&] { return poll.returned.load(); }, 30s, 1ms));
  poll.consumer.join();
  EXPECT_GE(poll.out.size(), 10u);
  std::vector<Event> rest;
  poll.h.take(rest, 100, 0ms);
  EXPECT_EQ(poll.out.size() + rest.size(), 15u);
}

// A reader that is not assembling anything has its events taken at once, and one that keeps
// assembling does not hold back half a poll or more.
TEST(ReaderHandoff, NoWaitWhenTheReaderIsNotAssemblingOrHalfAPollIsQueued) {
  ReaderHandoff h;
  ReaderHandoff::Limits limits{1000, std::size_t{1} << 30};
  limits.assembling_linger = 60s;
  ASSERT_TRUE(h.open(limits));
  auto a = events(0, 3);
  ASSERT_TRUE(h.push(a));
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 100, 10s).events, 3u);
  h.set_assembling(true);
  auto b = events(3, 50);
  ASSERT_TRUE(h.push(b));
  out.clear();
  EXPECT_EQ(h.take(out, 100, 10s).events, 50u);
  EXPECT_EQ(h.assembling_lingers(), 0u);
  h.close();
}

TEST(ReaderHandoff, AFullQueueHoldsTheReaderUntilTheConsumerTakes) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({4, std::size_t{1} << 30}));
  auto first = events(0, 4);
  ASSERT_TRUE(h.push(first));  // fills the queue
  std::atomic<bool> pushed{false};
  std::atomic<int> waits{0};
  std::thread reader([&] {
    auto second = events(4, 2);
    EXPECT_TRUE(h.push(second, nullptr, nullptr, [&] {
      ++waits;
      return true;
    }, 1ms));
    pushed = true;
  });
  // The reader is waiting for room, and keeps calling back while it waits.
  ASSERT_TRUE(wait_until([&] { return waits.load() >= 3; }, 30s, 1ms));
  EXPECT_FALSE(pushed.load());
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 4, 0ms).events, 4u);
  ASSERT_TRUE(wait_until([&] { return pushed.load(); }, 30s, 1ms));
  reader.join();
  out.clear();
  EXPECT_EQ(h.take(out, 10, 0ms).events, 2u);
  EXPECT_EQ(out[0].table, "t4");
  h.close();
}

TEST(ReaderHandoff, ByteLimitHoldsTheReaderToo) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, 100}));
  auto first = events(0, 1);
  std::vector<std::size_t> sizes{80};
  ASSERT_TRUE(h.push(first, &sizes));
  std::atomic<bool> pushed{false};
  std::thread reader([&] {
    auto second = events(1, 1);
    std::vector<std::size_t> s{50};
    EXPECT_TRUE(h.push(second, &s));
    pushed = true;
  });
  std::vector<Event> out;
  // 80 + 50 bytes are over the limit of 100: the second waits until the first is taken.
  EXPECT_EQ(h.take(out, 1, 0ms).events, 1u);
  ASSERT_TRUE(wait_until([&] { return pushed.load(); }, 30s, 1ms));
  reader.join();
  EXPECT_EQ(h.take(out, 1, 0ms).events, 1u);
  h.close();
}

TEST(ReaderHandoff, AWaitingReaderThatGivesUpReturnsFalse) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1, std::size_t{1} << 30}));
  auto first = events(0, 1);
  ASSERT_TRUE(h.push(first));
  auto second = events(1, 1);
  EXPECT_FALSE(h.push(second, nullptr, nullptr, [] { return false; }, 1ms));
  h.close();
}

TEST(ReaderHandoff, RecycledVectorsReturnToTheReader) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  auto batch = events(0, 3);
  ASSERT_TRUE(h.push(batch));
  std::vector<Event> out;
  ASSERT_EQ(h.take(out, 3, 0ms).events, 3u);
  const Event* storage = out.data();
  h.recycle(std::move(out));
  auto next = events(3, 1);
  std::vector<std::vector<Event>> back;
  ASSERT_TRUE(h.push(next, nullptr, &back));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].data(), storage);  // the very vector, not a copy
  EXPECT_EQ(back[0].size(), 3u);
  // Once taken back, a second push gets nothing.
  auto more = events(4, 1);
  back.clear();
  ASSERT_TRUE(h.push(more, nullptr, &back));
  EXPECT_TRUE(back.empty());
  h.close();
}

TEST(ReaderHandoff, TheReadersErrorReachesTheConsumerAfterTheQueuedEvents) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::thread reader([&] {
    auto batch = events(0, 5);
    ASSERT_TRUE(h.push(batch));
    h.finish(Error::source(ErrorKind::kTransient, "the connection broke"));
  });
  reader.join();
  std::vector<Event> out;
  auto first = h.take(out, 3, 0ms);
  EXPECT_EQ(first.events, 3u);
  EXPECT_FALSE(first.reader_done);
  auto second = h.take(out, 3, 0ms);
  EXPECT_EQ(second.events, 2u);
  EXPECT_FALSE(second.reader_done);
  auto end = h.take(out, 3, 0ms);
  EXPECT_EQ(end.events, 0u);
  EXPECT_TRUE(end.reader_done);
  ASSERT_TRUE(end.error.has_value());
  EXPECT_EQ(end.error->message(), "the connection broke");
  EXPECT_EQ(out.size(), 5u);
  h.close();
}

TEST(ReaderHandoff, AFinishWithoutErrorWakesAWaitingConsumer) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::thread reader([&] { h.finish(std::nullopt); });
  std::vector<Event> out;
  ReaderHandoff::Taken taken;
  ASSERT_TRUE(wait_until(
      [&] {
        taken = h.take(out, 10, 1h);
        return taken.reader_done;
      },
      30s, 1ms));
  reader.join();
  EXPECT_FALSE(taken.error.has_value());
  h.close();
}

TEST(ReaderHandoff, AStopReleasesABlockedReader) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1, std::size_t{1} << 30}));
  auto first = events(0, 1);
  ASSERT_TRUE(h.push(first));
  std::atomic<bool> returned{false};
  std::thread reader([&] {
    auto second = events(1, 1);
    EXPECT_TRUE(h.push(second, nullptr, nullptr, [] { return true; }, 1h));
    EXPECT_TRUE(h.stopping());
    returned = true;
  });
  EXPECT_FALSE(returned.load());
  h.request_stop();
  ASSERT_TRUE(wait_until([&] { return returned.load(); }, 30s, 1ms));
  reader.join();
  h.close();
}

TEST(ReaderHandoff, AStopOrWakeEndsTheReadersWaitOnItsSocket) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1, 1}));
  std::atomic<bool> woke{false};
  std::thread reader([&] {
    auto readable = h.wait_readable(-1, -1);  // no socket, no timeout: only a wake ends it
    EXPECT_TRUE(readable.has_value());
    woke = true;
  });
  h.wake();
  ASSERT_TRUE(wait_until([&] { return woke.load(); }, 30s, 1ms));
  reader.join();
  woke = false;
  std::thread again([&] {
    h.nap(-1);
    woke = true;
  });
  h.request_stop();
  ASSERT_TRUE(wait_until([&] { return woke.load(); }, 30s, 1ms));
  again.join();
  h.close();
}

TEST(ReaderHandoff, ASignalEndsTheConsumersWaitWithoutEvents) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  h.locked([](ReaderHandoff::Locked& l) {
    EXPECT_TRUE(l.empty());
    EXPECT_FALSE(l.reader_done());
    l.signal_consumer();
  });
  std::vector<Event> out;
  const auto taken = h.take(out, 10, 1h);  // returns at once: the signal was given
  EXPECT_EQ(taken.events, 0u);
  EXPECT_FALSE(taken.reader_done);
  h.close();
}

TEST(ReaderHandoff, RecycleAfterCloseReleasesAtOnce) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  h.close();
  auto gone = events(0, 2);
  h.recycle(std::move(gone));
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  auto batch = events(2, 1);
  std::vector<std::vector<Event>> back;
  ASSERT_TRUE(h.push(batch, nullptr, &back));
  EXPECT_TRUE(back.empty());
  h.close();
}

}  // namespace
}  // namespace cppcdc::detail
