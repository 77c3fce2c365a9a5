#pragma once
// The hand-over between a source's reader thread and poll(): events are queued in the
// reader's own batches (a transaction, a snapshot chunk), not one by one, so queueing an
// event costs no allocation of its own, and a batch that makes up a whole poll changes hands
// by swapping vectors. Small batches (transactions of a few rows) queued while poll() is busy
// are gathered, on the reader's side, into the last queued batch that poll() has not started,
// up to the size of the last poll: the next poll then takes them by a swap as well, instead of
// moving them one by one on its own (often the busier) thread. Not synchronised: the owner
// guards it with its mutex.

#include <algorithm>
#include <cstddef>
#include <deque>
#include <iterator>
#include <vector>

#include "cppcdc/event.hpp"

namespace cppcdc::detail {

class BatchQueue {
 public:
  bool empty() const noexcept { return events_ == 0; }
  /// Events queued.
  std::size_t size() const noexcept { return events_; }
  /// Sum of the queued events' measures (detail::approx_event_bytes), in bytes.
  std::size_t bytes() const noexcept { return bytes_; }

  void clear() noexcept {
    batches_.clear();
    events_ = 0;
    bytes_ = 0;
  }

  /// Queues `events` (with `sizes[i]`, the measure of events[i], and `bytes` their sum) and
  /// leaves both vectors empty, with capacity (up to a bound) kept for the caller's next batch.
  /// They are appended (moved) to the last queued batch when take() has not started that one and
  /// both together hold at most as many events as the last take() asked for; else they are
  /// queued as a batch of their own (the vectors change hands).
  void push(std::vector<Event>& events, std::vector<std::size_t>& sizes, std::size_t bytes) {
    push(events, 0, events.size(), sizes, bytes);
    events.clear();
    if (events.capacity() > kKeptCapacity) {
      std::vector<Event>().swap(events);
      events.reserve(kKeptCapacity);
    }
  }

  /// Queues events[from, to) as push() does, for a reader that fills recycled events in
  /// place (InPlaceBatch): `sizes` holds their measures (sizes[i] for events[from + i]) and
  /// is emptied. When they are the whole of `events` and make a batch of their own, the
  /// vector changes hands and `events` is left empty (capacity reserved again); otherwise
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
      if (last.next == 0 && last.events.size() + count <= gather_) into = &last;
    }
    if (!into && from == 0 && to == events.size()) {
      Batch b;
      const std::size_t capacity = events.capacity();
      b.events = std::move(events);
      b.sizes = std::move(sizes);
      b.bytes = bytes;
      events_ += count;
      bytes_ += bytes;
      batches_.push_back(std::move(b));
      events.clear();
      sizes.clear();
      events.reserve(std::min<std::size_t>(capacity, kKeptCapacity));
      return;
    }
    if (!into) into = &batches_.emplace_back();
    const std::size_t n = into->events.size() + count;
    if (into->events.capacity() < n) {
      // Room for a whole poll at once (up to a bound), so that gathering does not move the
      // events again as the vector grows.
      const std::size_t room = std::max(n, std::min(gather_, kGatherReserve));
      into->events.reserve(room);
      into->sizes.reserve(room);
    }
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
  /// many. Into an empty `out`, a whole first batch of at least half of `max_events` changes
  /// hands by a swap, and only that batch is returned: a big batch (a blocking snapshot's)
  /// moves none of its events, and small ones (transactions) are still gathered.
  std::size_t take(std::vector<Event>& out, std::size_t max_events) {
    gather_ = max_events;
    const std::size_t want = std::min(max_events, events_);
    if (want == 0) return 0;
    Batch& first = batches_.front();
    const std::size_t whole = first.events.size();
    if (out.empty() && first.next == 0 && whole <= want && 2 * whole >= max_events) {
      out.swap(first.events);
      events_ -= whole;
      bytes_ -= std::min(bytes_, first.bytes);
      batches_.pop_front();
      return whole;
    }
    out.reserve(out.size() + want);
    std::size_t n = 0;
    while (n < want) {
      Batch& b = batches_.front();
      const std::size_t k = std::min(want - n, b.events.size() - b.next);
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

 private:
  // A reader's vector keeps at most this many events' worth of capacity after a push: a huge
  // transaction does not pin its memory.
  static constexpr std::size_t kKeptCapacity = 4096;
  // A batch that gathers small ones reserves room for at most this many events at once.
  static constexpr std::size_t kGatherReserve = 16384;

  struct Batch {
    std::vector<Event> events;
    std::vector<std::size_t> sizes;  // one per event
    std::size_t next = 0;            // events before it were taken
    std::size_t bytes = 0;           // measures of the events not yet taken
  };
  std::deque<Batch> batches_;
  std::size_t events_ = 0;
  std::size_t bytes_ = 0;
  std::size_t gather_ = 0;  // max_events of the last take(); 0: none yet, nothing is gathered
};

}  // namespace cppcdc::detail
