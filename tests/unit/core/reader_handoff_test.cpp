// The reader-thread hand-off on its own: order across batches, back-pressure that holds the
// reader until poll takes, delivered vectors coming back to the reader, the reader's end
// reaching poll after what it queued, and a stop releasing a blocked reader. Every wait is on
// a condition; the timeouts only bound a failing test.

#include "core/reader_handoff.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "unit/core/test_events.hpp"
#include "wait_until.hpp"

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

// Deferred batches (push_deferred): work the reader leaves for the consumer's take().

// Makes events t<first> .. t<first + n - 1> when taken, noting the thread, after `during()`.
class MakeEvents final : public DeferredBatch {
 public:
  MakeEvents(int first, int n, std::thread::id* made_on = nullptr,
             std::function<void()> during = {})
      : first_(first), n_(n), made_on_(made_on), during_(std::move(during)) {}
  Result<std::size_t> produce(std::vector<Event>& out) override {
    if (made_on_) *made_on_ = std::this_thread::get_id();
    if (during_) during_();
    for (auto& e : events(first_, n_)) out.push_back(std::move(e));
    return static_cast<std::size_t>(n_);
  }

 private:
  int first_;
  int n_;
  std::thread::id* made_on_;
  std::function<void()> during_;
};

// Makes one event, then fails: what it made must not reach the consumer.
class FailToMake final : public DeferredBatch {
 public:
  Result<std::size_t> produce(std::vector<Event>& out) override {
    out.push_back(std::move(events(99, 1)[0]));
    return fail(Error::invalid_data("a malformed rows event"));
  }
};

bool defer(ReaderHandoff& h, std::unique_ptr<DeferredBatch> batch, std::size_t estimate) {
  return h.push_deferred(std::move(batch), estimate, estimate * 100, [] { return true; });
}

std::vector<std::string> tables(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.table);
  return out;
}

TEST(ReaderHandoff, ADeferredBatchIsMadeByTheConsumerInItsPlaceAmongTheOthers) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::thread::id made_on;
  std::thread reader([&] {
    auto first = events(0, 3);
    ASSERT_TRUE(h.push(first));
    ASSERT_TRUE(defer(h, std::make_unique<MakeEvents>(3, 4, &made_on), 4));
    auto last = events(7, 2);
    ASSERT_TRUE(h.push(last));
  });
  reader.join();
  const auto got = take_all(h, 9);
  EXPECT_EQ(tables(got),
            (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"}));
  EXPECT_EQ(made_on, std::this_thread::get_id());
  h.close();
}

// Notes where the poll's events are when it is made, and the room left for its own.
class NoteThePoll final : public DeferredBatch {
 public:
  NoteThePoll(int first, int n, const Event** data, std::size_t* room)
      : first_(first), n_(n), data_(data), room_(room) {}
  Result<std::size_t> produce(std::vector<Event>& out) override {
    *room_ = out.capacity() - out.size();
    for (auto& e : events(first_, n_)) out.push_back(std::move(e));
    *data_ = out.data();
    return static_cast<std::size_t>(n_);
  }

 private:
  int first_;
  int n_;
  const Event** data_;
  std::size_t* room_;
};

TEST(ReaderHandoff, APollMadeOfSeveralBatchesGrowsItsVectorOnce) {
  // Each batch appended to a poll used to grow the vector to just what it needed, so that a
  // deferred batch, and each batch after it, moved the events taken before it once more.
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  auto first = events(0, 3);
  first.shrink_to_fit();
  ASSERT_TRUE(h.push(first));
  const Event* data = nullptr;
  std::size_t room = 0;
  ASSERT_TRUE(defer(h, std::make_unique<NoteThePoll>(3, 4, &data, &room), 4));
  auto last = events(7, 2);
  ASSERT_TRUE(h.push(last));
  std::vector<Event> out;
  ASSERT_EQ(h.take(out, 100, 0ms).events, 9u);
  EXPECT_EQ(tables(out),
            (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"}));
  EXPECT_GE(room, 4u);              // the deferred batch found room for its events
  EXPECT_EQ(out.data(), data);      // and nothing moved the poll's events after it
  EXPECT_GE(out.capacity(), 100u);  // room for the whole poll, taken at the first growth
  h.close();
}

TEST(ReaderHandoff, ADeferredBatchCountsAgainstTheQueuesLimitsUntilTaken) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({10, std::size_t{1} << 30}));
  ASSERT_TRUE(defer(h, std::make_unique<MakeEvents>(0, 8), 8));
  // 8 estimated + 3 is over the limit of 10: the reader waits, and gives up here.
  auto more = events(8, 3);
  int waits = 0;
  EXPECT_FALSE(h.push(
      more, nullptr, nullptr, [&] { return ++waits < 2; }, 1ms));
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 100, 0ms).events, 8u);
  EXPECT_TRUE(h.push(more));
  h.close();
}

TEST(ReaderHandoff, ADeferredBatchThatDoesNotFitWaitsForTheNextPoll) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::thread::id made_on;
  auto first = events(0, 3);
  ASSERT_TRUE(h.push(first));
  ASSERT_TRUE(defer(h, std::make_unique<MakeEvents>(3, 5, &made_on), 5));
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 6, 0ms).events, 3u);  // 3 + 5 would be more than 6
  EXPECT_EQ(made_on, std::thread::id());      // not made yet
  std::vector<Event> next;
  EXPECT_EQ(h.take(next, 6, 0ms).events, 5u);  // into an empty poll it is made
  EXPECT_EQ(tables(next), (std::vector<std::string>{"t3", "t4", "t5", "t6", "t7"}));
  h.close();
}

TEST(ReaderHandoff, EventsMadeBeyondAPollWaitAtTheFrontForTheNext) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  ASSERT_TRUE(defer(h, std::make_unique<MakeEvents>(0, 10), 3));  // estimated low
  auto after = events(10, 2);
  ASSERT_TRUE(h.push(after));
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 5, 0ms).events, 5u);
  EXPECT_EQ(tables(out), (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"}));
  std::vector<Event> rest;
  EXPECT_EQ(h.take(rest, 100, 0ms).events, 7u);
  EXPECT_EQ(tables(rest), (std::vector<std::string>{"t5", "t6", "t7", "t8", "t9", "t10", "t11"}));
  EXPECT_TRUE(h.empty());
  h.close();
}

TEST(ReaderHandoff, AFailedDeferredBatchEndsThePollAndTheNextReportsIt) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  auto first = events(0, 2);
  ASSERT_TRUE(h.push(first));
  ASSERT_TRUE(defer(h, std::make_unique<FailToMake>(), 1));
  auto after = events(2, 1);
  ASSERT_TRUE(h.push(after));
  std::vector<Event> out;
  const auto taken = h.take(out, 100, 0ms);
  EXPECT_EQ(taken.events, 2u);
  EXPECT_FALSE(taken.error);
  EXPECT_EQ(tables(out), (std::vector<std::string>{"t0", "t1"}));  // not what it made
  std::vector<Event> next;
  const auto failed = h.take(next, 100, 0ms);
  EXPECT_EQ(failed.events, 0u);
  EXPECT_FALSE(failed.reader_done);
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->message(), "a malformed rows event");
  EXPECT_TRUE(next.empty());
  h.close();
}

TEST(ReaderHandoff, AFailedDeferredBatchAtTheFrontFailsThatPoll) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  ASSERT_TRUE(defer(h, std::make_unique<FailToMake>(), 1));
  std::vector<Event> out;
  const auto failed = h.take(out, 100, 0ms);
  EXPECT_EQ(failed.events, 0u);
  ASSERT_TRUE(failed.error);
  EXPECT_TRUE(out.empty());
  h.close();
}

TEST(ReaderHandoff, TheReaderPushesWhileTheConsumerMakesADeferredBatch) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::atomic<bool> making{false};
  std::atomic<bool> pushed{false};
  // The batch is made only once the reader queued another behind it: a take() that held the
  // lock while making it would keep the reader out, and the wait would time out.
  ASSERT_TRUE(defer(h,
                    std::make_unique<MakeEvents>(0, 2, nullptr,
                                                 [&] {
                                                   making = true;
                                                   EXPECT_TRUE(wait_until(
                                                       [&] { return pushed.load(); }, 30s, 1ms));
                                                 }),
                    2));
  std::thread reader([&] {
    ASSERT_TRUE(wait_until([&] { return making.load(); }, 30s, 1ms));
    auto behind = events(2, 1);
    ASSERT_TRUE(h.push(behind));
    pushed = true;
  });
  std::vector<Event> out;
  h.take(out, 100, 1s);
  reader.join();
  EXPECT_TRUE(pushed);
  // The batch pushed meanwhile comes after the deferred one, in this poll or the next.
  const auto rest = take_all(h, 3 - out.size());
  for (const auto& e : rest) out.push_back(e);
  EXPECT_EQ(tables(out), (std::vector<std::string>{"t0", "t1", "t2"}));
  h.close();
}

TEST(ReaderHandoff, TheConsumerIsShortWhileLessThanAPollIsQueued) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  EXPECT_TRUE(h.consumer_short());  // nothing queued
  auto five = events(0, 5);
  ASSERT_TRUE(h.push(five));
  EXPECT_FALSE(h.consumer_short());  // no poll yet: only an empty queue counts as short
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 8, 0ms).events, 5u);
  EXPECT_TRUE(h.consumer_short());
  auto more = events(5, 5);
  ASSERT_TRUE(h.push(more));
  EXPECT_TRUE(h.consumer_short());  // 5 of a poll of 8
  ASSERT_TRUE(defer(h, std::make_unique<MakeEvents>(10, 3), 3));
  EXPECT_FALSE(h.consumer_short());  // 8 with the deferred batch's estimate
  h.close();
}

TEST(ReaderHandoff, TheConsumerIsNotShortWithHalfTheByteLimitQueued) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, 100}));  // at most 100 bytes: fewer events than a poll fit
  std::vector<Event> out;
  EXPECT_EQ(h.take(out, 10, 0ms).events, 0u);  // a poll of 10
  auto two = events(0, 2);
  std::vector<std::size_t> sizes{30, 20};
  ASSERT_TRUE(h.push(two, &sizes));
  // 2 events of a poll of 10, but 50 of the 100 bytes: deferring more work to the consumer
  // would only wait behind them.
  EXPECT_FALSE(h.consumer_short());
  EXPECT_EQ(h.take(out, 10, 0ms).events, 2u);
  auto one = events(2, 1);
  std::vector<std::size_t> size{49};
  ASSERT_TRUE(h.push(one, &size));
  EXPECT_TRUE(h.consumer_short());  // 49 bytes
  h.close();
}

}  // namespace
}  // namespace cppcdc::detail
