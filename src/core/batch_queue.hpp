#pragma once
// The hand-over between a source's reader thread and poll(): events are queued in the
// reader's own batches (a transaction, a snapshot chunk), not one by one, so queueing an
// event costs no allocation of its own, and a batch that makes up a whole poll changes hands
// by swapping vectors. Small batches (transactions of a few rows) queued while poll() is busy
// are gathered, on the reader's side, into the last queued batch that poll() has not started,
// up to the size of the last poll: the next poll then takes them by a swap as well, instead of
// moving them one by one on its own (often the busier) thread. Deferred batches (DeferredBatch)
// hold a place in the order without events; the owner makes them after popping them.
// Not synchronised: the owner guards it with its mutex.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

/// A batch whose events are made on the consumer's thread, when take() reaches it: a reader
/// with more to do than the consumer queues some of its work undone (a transaction's rows
/// still encoded), so that the two threads share it. Queued in order with the events.
class DeferredBatch {
 public:
  virtual ~DeferredBatch() = default;
  /// Appends the batch's events to `out` and returns how many, or an error (then `out` may
  /// hold some of them: the caller drops them). Called once, on the consumer's thread.
  virtual Result<std::size_t> produce(std::vector<Event>& out) = 0;
};

class BatchQueue {
 public:
  /// A batch of this many events is never gathered with others: push() does not append it to
  /// the last batch, and take() returns it alone, by a swap (a poll that took events already
  /// stops before it). It spreads a sink's flush and a checkpoint's save over enough events
  /// already, and moving its events into a larger vector for a larger poll costs more than
  /// the flush it saves. (Measured: with max_buffer_size 50,000 and a MariaDB reader handing
  /// over 7,000 to 10,000 events at a time, polls gathered from such batches made a run about
  /// 1.6 times slower than with the default 10,000.)
  static constexpr std::size_t kWholeBatch = 4096;

  bool empty() const noexcept { return events_ == 0; }
  /// Events queued.
  std::size_t size() const noexcept { return events_; }
  /// Sum of the queued events' measures (detail::approx_event_bytes), in bytes.
  std::size_t bytes() const noexcept { return bytes_; }

  /// Events moved to a larger vector while batches were gathered (push()), since creation.
  std::uint64_t moved_growing() const noexcept { return moved_growing_; }

  /// What take() remembers as the size of a poll (for gathering), when a poll took in parts.
  void set_poll_size(std::size_t max_events) noexcept { gather_ = max_events; }

  /// The estimated event count of the deferred batch at the front, 0 when the front is not
  /// one (or nothing is queued).
  std::size_t front_deferred() const noexcept {
    return !batches_.empty() && batches_.front().deferred ? batches_.front().estimate : 0;
  }

  /// Queues `batch`, counted as `events` events of `bytes` bytes (estimates) until taken.
  void push_deferred(std::unique_ptr<DeferredBatch> batch, std::size_t events, std::size_t bytes) {
    Batch b;
    b.deferred = std::move(batch);
    b.estimate = std::max<std::size_t>(events, 1);
    b.bytes = bytes;
    events_ += b.estimate;
    bytes_ += bytes;
    batches_.push_back(std::move(b));
  }

  /// Queues `events` (with their measures `sizes`) at the front, before everything queued:
  /// the part of a deferred batch's events that did not fit into the poll that made them.
  void push_front(std::vector<Event>&& events, std::vector<std::size_t>&& sizes) {
    if (events.empty()) return;
    Batch b;
    for (const std::size_t s : sizes) b.bytes += s;
    events_ += events.size();
    bytes_ += b.bytes;
    b.events = std::move(events);
    b.sizes = std::move(sizes);
    batches_.push_front(std::move(b));
  }

  /// Removes the deferred batch at the front (front_deferred() > 0) and returns it.
  std::unique_ptr<DeferredBatch> pop_deferred() {
    Batch& b = batches_.front();
    auto out = std::move(b.deferred);
    events_ -= std::min(events_, b.estimate);
    bytes_ -= std::min(bytes_, b.bytes);
    batches_.pop_front();
    return out;
  }

  void clear() noexcept {
    batches_.clear();
    events_ = 0;
    bytes_ = 0;
  }

  /// Queues `events` (with `sizes[i]`, the measure of events[i], and `bytes` their sum) and
  /// leaves both vectors empty, with capacity (up to a bound) kept for the caller's next batch.
  /// They are appended (moved) to the last queued batch when take() has not started that one,
  /// both together hold at most as many events as the last take() asked for, and they are
  /// less than half of that and fewer than kWholeBatch; else they are queued as a batch of
  /// their own (the vectors change hands).
  void push(std::vector<Event>& events, std::vector<std::size_t>& sizes, std::size_t bytes) {
    const std::size_t capacity = events.capacity();
    push(events, 0, events.size(), sizes, bytes);
    events.clear();
    if (events.capacity() == 0) {
      events.reserve(std::min(capacity, kKeptCapacity));  // the vector changed hands
    } else if (events.capacity() > kKeptCapacity) {
      std::vector<Event>().swap(events);
      events.reserve(kKeptCapacity);
    }
  }

  /// Queues events[from, to) as push() does, for a reader that fills recycled events in
  /// place (InPlaceBatch): `sizes` holds their measures (sizes[i] for events[from + i]) and
  /// is emptied. When they are the whole of `events` and make a batch of their own, the
  /// vector changes hands and `events` is left empty, without capacity; otherwise
  /// they are moved out, and `events` keeps its size: moved-from events in [from, to), the
  /// others as they were.
  void push(std::vector<Event>& events, std::size_t from, std::size_t to,
            std::vector<std::size_t>& sizes, std::size_t bytes) {
    if (from >= to) {
      sizes.clear();
      return;
    }
    const std::size_t count = to - from;
    Batch* into = nullptr;
    if (gather_ > 0 && !batches_.empty()) {
      Batch& last = batches_.back();
      // A batch that stands alone is not gathered: take() swaps it whole.
      if (!last.deferred && last.next == 0 && last.events.size() + count <= gather_ &&
          !stands_alone(count, gather_)) {
        into = &last;
      }
    }
    if (!into && from == 0 && to == events.size()) {
      Batch b;
      b.events = std::move(events);
      b.sizes = std::move(sizes);
      b.bytes = bytes;
      events_ += count;
      bytes_ += bytes;
      batches_.push_back(std::move(b));
      events = std::vector<Event>();
      sizes.clear();
      return;
    }
    if (!into) into = &batches_.emplace_back();
    const std::size_t n = into->events.size() + count;
    moved_growing_ += grow_gathering(into->events, n, gather_);
    grow_gathering(into->sizes, n, gather_);
    into->events.insert(into->events.end(),
                        std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(from)),
                        std::make_move_iterator(events.begin() + static_cast<std::ptrdiff_t>(to)));
    into->sizes.insert(into->sizes.end(), sizes.begin(), sizes.end());
    into->bytes += bytes;
    events_ += count;
    bytes_ += bytes;
    sizes.clear();
  }

  /// Moves up to `max_events` of the oldest events to the end of `out`, in order; returns how
  /// many. Into an empty `out`, a whole first batch of at least half of `max_events` (or of
  /// kWholeBatch events) changes hands by a swap, and only that batch is returned: a big batch
  /// (a blocking snapshot's) moves none of its events, and small ones (transactions) are still
  /// gathered. Stops before a deferred batch (front_deferred(), pop_deferred()), and before a
  /// whole batch of kWholeBatch events after events it took (the next take() swaps it in).
  std::size_t take(std::vector<Event>& out, std::size_t max_events) {
    return take(out, max_events, nullptr);
  }

  /// Events of whole batches taken by take() with `detached`: [next, events.size()) of events.
  struct Detached {
    std::vector<Event> events;
    std::size_t next = 0;
  };

  /// As take(), but whole batches that fit are not moved into `out` here: they are appended
  /// to `*detached` (their events come after those of `out`, in order), for the caller to move
  /// them after releasing its lock (append_detached). A batch that fits only in part is moved
  /// here, and only when nothing was detached before it.
  ///
  /// `taken_before`: events this poll took already (from deferred batches, by an earlier call):
  /// with some, a whole batch of kWholeBatch events at the front waits too. Events `out` held
  /// before the poll (a caller's own) do not count: with only those, the batch is taken, so
  /// that a caller who keeps its events until more come is not left waiting for ever.
  std::size_t take(std::vector<Event>& out, std::size_t max_events, std::vector<Detached>* detached,
                   std::size_t taken_before = 0) {
    gather_ = max_events;
    const std::size_t want = std::min(max_events, events_);
    if (want == 0 || batches_.front().deferred) return 0;
    Batch& first = batches_.front();
    const std::size_t whole = first.events.size();
    if (out.empty() && first.next == 0 && whole <= want && stands_alone(whole, max_events)) {
      out.swap(first.events);
      events_ -= whole;
      bytes_ -= std::min(bytes_, first.bytes);
      batches_.pop_front();
      return whole;
    }
    std::size_t n = 0;
    while (n < want && !batches_.empty() && !batches_.front().deferred) {
      Batch& b = batches_.front();
      const std::size_t left = b.events.size() - b.next;
      // A whole batch of kWholeBatch events after others of this poll waits for the next
      // poll, which swaps it in.
      if (n + taken_before > 0 && b.next == 0 && left >= kWholeBatch) break;
      if (detached && left <= want - n) {
        detached->push_back(Detached{std::move(b.events), b.next});
        n += left;
        events_ -= left;
        bytes_ -= std::min(bytes_, b.bytes);
        batches_.pop_front();
        continue;
      }
      if (detached && !detached->empty()) break;
      const std::size_t k = std::min(want - n, left);
      grow_for_poll(out, out.size() + k, max_events);
      for (std::size_t i = 0; i < k; ++i, ++b.next) {
        out.push_back(std::move(b.events[b.next]));
        const std::size_t s = std::min(b.bytes, b.sizes[b.next]);
        b.bytes -= s;
        bytes_ -= std::min(bytes_, s);
      }
      n += k;
      events_ -= k;
      if (b.next == b.events.size()) batches_.pop_front();
    }
    return n;
  }

  /// Makes room in `out` for `n` events. When it must grow, it grows to the poll's size
  /// `max_events` (up to kGatherReserve) at once, and past that by doubling (up to
  /// `max_events`), rather than to `n`: a poll assembled from several batches would otherwise
  /// move the events it holds to a larger vector for each.
  static void grow_for_poll(std::vector<Event>& out, std::size_t n, std::size_t max_events) {
    grow_gathering(out, n, max_events);
  }

  /// Appends the events of `detached` to `out`, in order (the first by a swap into an empty
  /// `out`), and empties it. `max_events` is the poll's: `out` grows (grow_for_poll) at most
  /// once. Needs no lock: the batches left the queue.
  static void append_detached(std::vector<Event>& out, std::vector<Detached>& detached,
                              std::size_t max_events) {
    std::size_t total = out.size();
    for (const auto& d : detached) total += d.events.size() - d.next;
    for (auto& d : detached) {
      if (out.empty() && d.next == 0) {
        out.swap(d.events);  // the next batch, if any, makes room for all of them
        continue;
      }
      grow_for_poll(out, total, max_events);
      out.insert(out.end(),
                 std::make_move_iterator(d.events.begin() + static_cast<std::ptrdiff_t>(d.next)),
                 std::make_move_iterator(d.events.end()));
    }
    detached.clear();
  }

 private:
  // A reader's vector keeps at most this many events' worth of capacity after a push: a huge
  // transaction does not pin its memory.
  static constexpr std::size_t kKeptCapacity = 4096;
  // A batch that gathers small ones reserves room for at most this many events at once.
  static constexpr std::size_t kGatherReserve = 16384;

  // Whether a batch of `events` is delivered on its own in a poll of `poll` events rather
  // than gathered with others: half a poll or more, or kWholeBatch events.
  static bool stands_alone(std::size_t events, std::size_t poll) noexcept {
    return 2 * events >= poll || events >= kWholeBatch;
  }

  // Makes room in `v` (a batch or a poll being gathered) for `n` elements: when it must grow,
  // to the poll's size (up to kGatherReserve) at once, then by doubling up to `poll` (or to `n`
  // if that is more). vector::reserve allocates exactly what it is asked for, so room made
  // for each addition on its own would move every element held at each one (quadratic in the
  // poll's size). Returns how many elements the growth moved (0 when there was room).
  template <class T>
  static std::size_t grow_gathering(std::vector<T>& v, std::size_t n, std::size_t poll) {
    if (v.capacity() >= n) return 0;
    const std::size_t moved = v.size();
    const std::size_t first = std::min(poll, kGatherReserve);
    v.reserve(std::max(n, std::min(poll, std::max(first, 2 * v.capacity()))));
    return moved;
  }

  struct Batch {
    std::vector<Event> events;
    std::vector<std::size_t> sizes;  // one per event
    std::size_t next = 0;            // events before it were taken
    std::size_t bytes = 0;           // measures of the events not yet taken
    std::unique_ptr<DeferredBatch> deferred;  // set: a deferred batch (no events, sizes)
    std::size_t estimate = 0;                 // a deferred batch's estimated event count
  };
  std::deque<Batch> batches_;
  std::size_t events_ = 0;
  std::size_t bytes_ = 0;
  std::size_t gather_ = 0;  // max_events of the last take(); 0: none yet, nothing is gathered
  std::uint64_t moved_growing_ = 0;
};

}  // namespace cppcdc::detail
