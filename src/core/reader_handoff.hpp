#pragma once
// The hand-off between a source's reader thread and poll(), for every source that reads its
// log on a thread of its own (the PostgreSQL source; the MySQL binlog reader next).
//
// The reader pushes whole batches (a transaction, a snapshot chunk) into a bounded queue
// (BatchQueue) and waits while it is over its limits in events or bytes; poll() takes them with
// a deadline. A reader busier than its consumer may also queue deferred batches: work whose
// events take() makes on the consumer's thread, in their place in the queue (push_deferred). Events
// the consumer is done with come back (recycle) and are released, or reused, on the reader thread
// that allocated them. The reader ends by finish(): its error, or none, reaches poll() after every
// event queued before it. A stop (request_stop) wakes a reader blocked in push() or in
// wait_readable().
//
// Threading: one reader thread (push, push_deferred, consumer_short, finish, release_recycled,
// take_recycled, wait_readable, wait_drained, set_bulk) and one consumer thread (take, recycle,
// empty); open() and close() while no reader thread runs; request_stop(), wake() and locked()
// from any thread. Costs per push: one lock, no allocation beyond the queue's own bookkeeping,
// no virtual call. take() holds the lock only to take batches off the queue: their events are
// moved, and deferred batches made, after it is released.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/batch_queue.hpp"
#include "core/event_spill.hpp"
#include "cppcdc/error.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

class ReaderHandoff {
 public:
  /// Bounds of the queue. A batch larger than a bound waits for an empty queue.
  struct Limits {
    std::size_t max_events = 100'000;               ///< events queued (at least 1)
    std::size_t max_bytes = std::size_t{32} << 20;  ///< sum of approx_event_bytes
    /// How long take() waits, at most, for a fuller batch while the reader is assembling one
    /// (set_assembling).
    std::chrono::milliseconds assembling_linger{2};
  };

  /// What take() found.
  struct Taken {
    std::size_t events = 0;  ///< events appended to `out`
    /// The reader has ended and everything it queued was taken (events == 0 then).
    bool reader_done = false;
    /// With reader_done: the reader's error, nullopt when it ended without one. Without
    /// reader_done: a deferred batch failed (push_deferred); the reader may still run.
    std::optional<Error> error;
  };

  /// The state locked() shows, under the hand-off's mutex.
  class Locked {
   public:
    bool empty() const noexcept { return h_.queue_.empty(); }
    bool reader_done() const noexcept { return h_.reader_done_; }
    /// Makes a waiting take() return now (with what is queued, possibly nothing) and the next
    /// take() not wait: news for the consumer that is not an event (a fresh position).
    void signal_consumer() noexcept {
      h_.signalled_ = true;
      h_.not_empty_.notify_all();
    }

   private:
    friend class ReaderHandoff;
    explicit Locked(ReaderHandoff& h) : h_(h) {}
    ReaderHandoff& h_;
  };

  ReaderHandoff() = default;
  ~ReaderHandoff();
  ReaderHandoff(const ReaderHandoff&) = delete;
  ReaderHandoff& operator=(const ReaderHandoff&) = delete;

  /// Prepares for a reader thread (before it starts): an empty queue, no error, not done, not
  /// stopping, a wake-up pipe. Errors: internal when the pipe cannot be made.
  Status open(Limits limits);
  /// After the reader thread was joined: closes the wake-up pipe and releases what is left.
  /// recycle() releases at once from now on. Idempotent.
  void close();

  // ---- reader thread ---------------------------------------------------------------------

  /// Queues `events` as one batch; waits while the queue is over its limits, calling
  /// `while_waiting()` (without the lock) every `interval`: when it returns false, push gives
  /// up and returns false. Returns true otherwise, also when stopping (the batch is then
  /// queued without waiting; check stopping()). `known_sizes`: approx_event_bytes of the first
  /// known_sizes->size() events as the caller measured them; the others are measured here.
  /// Empties `events` (keeping capacity) and `known_sizes`. `recycled_out`: receives the
  /// batches the consumer gave back, for the caller to reuse; without it they are released
  /// here, after the lock.
  template <class WhileWaiting>
  bool push(std::vector<Event>& events, std::vector<std::size_t>* known_sizes,
            std::vector<std::vector<Event>>* recycled_out, WhileWaiting&& while_waiting,
            std::chrono::milliseconds interval = std::chrono::milliseconds(100)) {
    const bool pushed = push(events, 0, events.size(), known_sizes, recycled_out,
                             std::forward<WhileWaiting>(while_waiting), interval);
    if (pushed) events.clear();
    return pushed;
  }
  bool push(std::vector<Event>& events, std::vector<std::size_t>* known_sizes = nullptr,
            std::vector<std::vector<Event>>* recycled_out = nullptr) {
    return push(events, known_sizes, recycled_out, [] { return true; });
  }

  /// Queues events[from, to) as one batch, as push() above, for a reader that fills recycled
  /// events in place (detail::InPlaceBatch): afterwards `events` is either empty (it changed
  /// hands) or keeps its size, with moved-from events in [from, to) (BatchQueue::push).
  template <class WhileWaiting>
  bool push(std::vector<Event>& events, std::size_t from, std::size_t to,
            std::vector<std::size_t>* known_sizes, std::vector<std::vector<Event>>* recycled_out,
            WhileWaiting&& while_waiting,
            std::chrono::milliseconds interval = std::chrono::milliseconds(100)) {
    std::vector<std::size_t> measured;
    std::vector<std::size_t>& sizes = known_sizes ? *known_sizes : measured;
    const std::size_t count = to - from;
    sizes.reserve(count);
    for (std::size_t i = sizes.size(); i < count; ++i) {
      sizes.push_back(approx_event_bytes(events[from + i]));
    }
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < count; ++i) bytes += sizes[i];
    std::vector<std::vector<Event>> recycled;  // released here, after the lock, on this thread
    std::unique_lock lock(mutex_);
    if (!wait_for_room(lock, count, bytes, while_waiting, interval)) return false;
    queue_.push(events, from, to, sizes, bytes);
    publish_queued();
    not_empty_.notify_all();
    recycled.swap(recycled_);
    recycled_events_ = 0;
    lock.unlock();
    if (recycled_out) recycled_out->swap(recycled);
    return true;
  }

  /// Queues `batch`, whose events take() makes on the consumer's thread (DeferredBatch), in
  /// order with the batches pushed before and after it: for a reader that is busier than the
  /// consumer (see consumer_short()). `events` and `bytes` estimate what it will make, for
  /// the queue's limits; waits as push() does. Returns false when `while_waiting()` gave up.
  template <class WhileWaiting>
  bool push_deferred(std::unique_ptr<DeferredBatch> batch, std::size_t events, std::size_t bytes,
                     WhileWaiting&& while_waiting,
                     std::chrono::milliseconds interval = std::chrono::milliseconds(100)) {
    std::unique_lock lock(mutex_);
    if (!wait_for_room(lock, events, bytes, while_waiting, interval)) return false;
    queue_.push_deferred(std::move(batch), events, bytes);
    publish_queued();
    not_empty_.notify_all();
    return true;
  }

  /// Whether the consumer has less than a poll queued (by the largest take() so far; before
  /// the first, whether nothing is queued), and less than half of Limits::max_bytes: work
  /// deferred to it now (push_deferred) would be made soon rather than wait behind a queue.
  /// (By events alone, a byte limit smaller than a poll's events would keep it short for
  /// ever, and the reader would leave all its work to the consumer.) Lock-free; a hint, read
  /// by the reader to share its work.
  bool consumer_short() const noexcept {
    const std::size_t queued = queued_.load(std::memory_order_relaxed);
    return queued == 0 || (queued < last_take_.load(std::memory_order_relaxed) &&
                           queued_bytes_.load(std::memory_order_relaxed) < limits_.max_bytes / 2);
  }

  /// The largest number of events a take() asked for so far (0 before the first): a reader
  /// that holds finished batches back to hand them over together hands over about this many
  /// at a time, which take() then swaps into a poll whole. Lock-free.
  std::size_t poll_size() const noexcept { return last_take_.load(std::memory_order_relaxed); }

  /// The reader has ended, with `error` or without; take() reports it once the queue is
  /// empty. Call once per open().
  void finish(std::optional<Error> error);

  /// Releases the events given back by recycle(); call where the reader waits, so they do
  /// not pile up while it has nothing to push.
  void release_recycled();
  /// Instead of releasing them: appends the batches given back by recycle() to `out`, for a
  /// reader that fills recycled events again (their strings and rows keep their memory).
  /// Never waits: while the consumer holds the lock it takes nothing (a later call will).
  void take_recycled(std::vector<std::vector<Event>>& out);

  /// Waits up to `timeout` for the consumer to take everything queued (or a stop).
  void wait_drained(std::chrono::milliseconds timeout);

  /// The reader is assembling a batch it will push shortly (a transaction whose events it is
  /// decoding now, more of which it has read). While it is, take() finding fewer than half a
  /// poll's events queued waits up to Limits::assembling_linger (2 ms) for more, so that a
  /// stream of transactions arriving back to back is delivered in larger batches (fewer
  /// flushes and checkpoints) instead of one poll per transaction. A reader clears it before it
  /// pushes the last batch it has, so an idle stream's events are not held back. Any thread;
  /// lock-free.
  void set_assembling(bool on) noexcept { assembling_.store(on, std::memory_order_relaxed); }

  /// While a bulk reader (a blocking snapshot) runs, take() waits up to kBulkLinger for a
  /// fuller batch (half a poll, or half the queue's limits) before it returns.
  void set_bulk(bool on);

  /// Waits up to `timeout_ms` for `fd` to become readable or for a wake() (whose byte is
  /// drained); returns whether `fd` is readable. A negative `fd` waits for a wake() alone. A
  /// signal ends the wait early; poll(2) failing otherwise is a transient error.
  Result<bool> wait_readable(int fd, int timeout_ms);
  /// wait_readable(-1, ms), ignoring errors: a pause that a wake() ends.
  void nap(int ms);

  bool stopping() const noexcept { return stop_.load(); }
  /// The flag request_stop() sets, for code that takes an std::atomic<bool> to watch.
  const std::atomic<bool>& stop_flag() const noexcept { return stop_; }

  // ---- consumer thread -------------------------------------------------------------------

  /// Appends up to `max_events` queued events to `out`, in order, waiting up to `wait` for
  /// the first (or for the reader's end, or a signal_consumer()). Deferred batches are made
  /// here, without the lock; one whose estimate exceeds the room left is made only into an
  /// empty poll, and events it makes beyond `max_events` are queued again at the front.
  /// A deferred batch that fails ends the take: with the events before it, the error is
  /// reported by the next take() (Taken::error without reader_done).
  Taken take(std::vector<Event>& out, std::size_t max_events, std::chrono::milliseconds wait);

  /// Takes back delivered events for release on the reader thread (release_recycled, push);
  /// beyond kMaxRecycled waiting events, or when no reader runs, they are released here.
  void recycle(std::vector<Event>&& events);

  /// Nothing is queued.
  bool empty();

  // ---- any thread --------------------------------------------------------------------------

  /// Asks the reader to stop: stopping() turns true, a blocked push() returns, a
  /// wait_readable() ends.
  void request_stop();
  /// Ends the reader's current wait_readable() (or its next one) early.
  void wake() noexcept;

  /// Runs `f(Locked&)` under the hand-off's mutex: for state of the source that must change
  /// together with what is queued (a position that holds once the queue is drained).
  template <class F>
  decltype(auto) locked(F&& f) {
    std::lock_guard lock(mutex_);
    Locked l(*this);
    return std::forward<F>(f)(l);
  }

  /// take() lingers this long for a fuller batch while a bulk reader runs.
  static constexpr std::chrono::milliseconds kBulkLinger{50};
  /// How many times take() has waited for a fuller batch while the reader was assembling one
  /// (for tests).
  std::size_t assembling_lingers() {
    std::lock_guard lock(mutex_);
    return lingers_;
  }
  static constexpr std::size_t kMaxRecycled = 32768;

 private:
  // The queue's size and bytes for consumer_short() (mutex_ held).
  void publish_queued() noexcept {
    queued_.store(queue_.size(), std::memory_order_relaxed);
    queued_bytes_.store(queue_.bytes(), std::memory_order_relaxed);
  }

  // Waits (lock held by the caller, released while waiting) while `events` and `bytes` more
  // would put a non-empty queue over its limits, calling `while_waiting()` without the lock
  // every `interval`; false when it gave up. A stop ends the wait (true).
  template <class WhileWaiting>
  bool wait_for_room(std::unique_lock<std::mutex>& lock, std::size_t events, std::size_t bytes,
                     WhileWaiting& while_waiting, std::chrono::milliseconds interval) {
    while (!stop_.load() && !queue_.empty() &&
           (queue_.size() + events > limits_.max_events ||
            queue_.bytes() + bytes > limits_.max_bytes)) {
      not_full_.wait_for(lock, interval);
      lock.unlock();
      if (!while_waiting()) return false;
      lock.lock();
    }
    return true;
  }

  // With something queued but fewer than `fill` events and half the byte limit: waits up to
  // `linger` (lock held by the caller, released while waiting) until that much is queued, the
  // reader ends, or `more()` turns false. `waits`, when given, is counted up as a wait begins.
  template <class More>
  void linger_for_more(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds linger,
                       std::size_t fill, More&& more, std::size_t* waits = nullptr) {
    const std::size_t fill_bytes = limits_.max_bytes / 2;
    auto enough = [&] {
      return queue_.size() >= fill || queue_.bytes() >= fill_bytes || reader_done_ || !more();
    };
    // Work deferred to this thread is at the front: it starts on that instead of waiting.
    if (queue_.empty() || enough() || queue_.front_deferred() > 0) return;
    if (waits) ++*waits;
    not_empty_.wait_for(lock, linger, enough);
  }

  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  Limits limits_;                             // set by open() only, before a reader thread starts
  BatchQueue queue_;                          // guarded by mutex_
  std::vector<std::vector<Event>> recycled_;  // guarded by mutex_; see recycle()
  std::size_t recycled_events_ = 0;           // guarded by mutex_
  std::optional<Error> error_;                // guarded by mutex_
  bool reader_done_ = false;                  // guarded by mutex_
  bool signalled_ = false;                    // guarded by mutex_
  bool open_ = false;                         // guarded by mutex_
  std::size_t lingers_ = 0;                   // guarded by mutex_
  std::optional<Error> deferred_error_;       // consumer thread only: a failed DeferredBatch
  std::atomic<std::size_t> queued_{0};        // queue_.size(), for consumer_short()
  std::atomic<std::size_t> queued_bytes_{0};  // queue_.bytes(), for consumer_short()
  std::atomic<std::size_t> last_take_{0};     // the last take()'s max_events
  std::atomic<bool> stop_{false};
  std::atomic<bool> bulk_{false};
  std::atomic<bool> assembling_{false};
  int wake_[2] = {-1, -1};
};

}  // namespace cppcdc::detail
