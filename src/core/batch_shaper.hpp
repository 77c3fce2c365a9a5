#pragma once
// What the runtime does to a batch between reading it from the source and handing it out, and
// undoes when it is acknowledged (runtime.hpp, RuntimeOptions::transaction_boundary and
// RuntimeOptions::idempotency):
//   - under kPreserveTransactions, a trailing transaction that has not ended yet is held back
//     and put in front of the next batch;
//   - with the idempotency guard (a DuplicateWindow: the semantics of EventIdempotencyGuard,
//     kept as runs of events that share a place and a transaction), events acknowledged before in
//     this process are taken out of the batch handed to the consumer. The acknowledgement still
//     covers them: the commit barrier plans over the batch as the source produced it, so the
//     checkpoint moves past a suppressed event as if it had been delivered.
// The guard remembers an event only when it is acknowledged, never when it is handed out, so
// an unacknowledged tail redelivered after accept_prefix, or a batch read again after a
// reconnect, is never mistaken for a duplicate.
//
// Owned by the runtime; one thread (the one driving the runtime) except the counters, which
// admin_snapshot() reads from any thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/duplicate_window.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/idempotency.hpp"
#include "cppcdc/runtime.hpp"

namespace cppcdc::detail {

class BatchShaper {
 public:
  /// Error kind configuration for an idempotency capacity of 0.
  Status configure(const RuntimeOptions& options);

  // --- transaction boundaries -----------------------------------------------------------
  /// Appends held-back events to `events` while it holds fewer than `max`.
  void take_held(std::vector<Event>& events, std::size_t max);
  /// Under kPreserveTransactions, moves the trailing open transaction of `events` into the
  /// held-back queue. Keeps it when it fills the whole batch (too large for max_buffer_size:
  /// delivered split, with a warning once per transaction) or when `source_finished` (nothing
  /// more will come to end it).
  void hold_back_open_transaction(std::vector<Event>& events, std::size_t max,
                                  bool source_finished);
  /// Events read from the source and neither handed out nor acknowledged yet. While there are
  /// any, the source's idle position must not be checkpointed (it lies past them).
  bool holds_events() const noexcept { return !held_.empty(); }
  /// Forgets the held-back events (the source sends them again after a reconnect).
  void drop_held() { held_.clear(); }

  // --- duplicate suppression ------------------------------------------------------------
  /// Takes out of `events` those acknowledged before. When any are taken out, the batch as
  /// the source produced it is kept here until acknowledge(). Returns how many were taken out.
  std::size_t suppress(std::vector<Event>& events);
  /// The batch as the source produced it: the one kept by suppress(), else `delivered`.
  const std::vector<Event>& produced(const std::vector<Event>& delivered) const noexcept {
    return produced_ ? *produced_ : delivered;
  }
  /// How many events of produced() an acknowledgement of the first `delivered_count` handed
  /// out events covers: up to the next handed-out event, so suppressed events right after
  /// the last acknowledged one are covered too (they were acknowledged before).
  std::size_t produced_prefix(std::size_t delivered_count) const noexcept;
  /// The first `produced_count` events of produced() are acknowledged: the guard remembers
  /// them. Ends the batch.
  void acknowledge(std::size_t produced_count);
  /// Ends the batch without acknowledging anything (forced stop, reconnect).
  void end_batch() noexcept;

  std::uint64_t evictions() const noexcept { return evictions_.load(std::memory_order_relaxed); }
  std::uint64_t unidentifiable() const noexcept {
    return unidentifiable_.load(std::memory_order_relaxed);
  }
  std::uint64_t suppressed() const noexcept { return suppressed_.load(std::memory_order_relaxed); }

 private:
  void prefetch_ahead(std::size_t i) const noexcept;

  TransactionBoundaryPolicy policy_ = TransactionBoundaryPolicy::kSplit;
  std::deque<Event> held_;
  std::optional<std::uint64_t> warned_tx_;  // the oversized transaction last warned about

  std::optional<DuplicateWindow> window_;
  // The outstanding batch: its events' identities (nullopt: unidentifiable), and when events
  // were suppressed, the batch as produced and the produced index of each handed-out event.
  std::vector<std::optional<EventIdentity>> identities_;
  std::optional<std::vector<Event>> produced_;
  std::vector<std::size_t> handed_out_at_;

  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> unidentifiable_{0};
  std::atomic<std::uint64_t> suppressed_{0};
};

}  // namespace cppcdc::detail
