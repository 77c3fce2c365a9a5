#pragma once
// The hand-over between a source's reader thread and poll(): events are queued in the
// reader's own batches (a transaction, a snapshot chunk), not one by one, so queueing an
// event costs no allocation of its own, and a batch that makes up a whole poll changes hands
// by swapping vectors. Not synchronised: the owner guards it with its mutex.

#include <algorithm>
#include <cstddef>
#include <deque>
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

  /// Queues `events` (with `sizes[i]`, the measure of events[i], and `bytes` their sum) as
  /// one batch and leaves both vectors empty, with their capacity kept for the caller's next
  /// batch.
  void push(std::vector<Event>& events, std::vector<std::size_t>& sizes, std::size_t bytes) {
    if (events.empty()) return;
    Batch b;
    const std::size_t capacity = events.capacity();
    b.events = std::move(events);
    b.sizes = std::move(sizes);
    b.bytes = bytes;
    events_ += b.events.size();
    bytes_ += b.bytes;
    batches_.push_back(std::move(b));
    events.clear();
    sizes.clear();
    events.reserve(std::min<std::size_t>(capacity, kKeptCapacity));
  }

  /// Moves up to `max_events` of the oldest events to the end of `out`, in order; returns how
  /// many. Into an empty `out`, a whole first batch of at least half of `max_events` changes
  /// hands by a swap, and only that batch is returned: a big batch (a blocking snapshot's)
  /// moves none of its events, and small ones (transactions) are still gathered.
  std::size_t take(std::vector<Event>& out, std::size_t max_events) {
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

  struct Batch {
    std::vector<Event> events;
    std::vector<std::size_t> sizes;  // one per event
    std::size_t next = 0;            // events before it were taken
    std::size_t bytes = 0;           // measures of the events not yet taken
  };
  std::deque<Batch> batches_;
  std::size_t events_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace cppcdc::detail
