#pragma once
// The runtime's duplicate window (batch_shaper.hpp): the identities of the last `capacity`
// events acknowledged in this process, optionally forgotten `ttl_ms` after they were
// remembered, with the window semantics of EventIdempotencyGuard (idempotency.hpp): a full
// window forgets its oldest event for each new one (counted in evictions()), an event already
// in it is not remembered twice, and aged-out events are not counted as evictions.
//
// What differs is the storage. An identity here is a key and an index (event_identity.hpp):
// the events of one transaction at one place (for MariaDB and MySQL, the rows of one rows
// event; a PostgreSQL change has a place of its own) share the key, and their indices count
// up. The window keeps runs (a key and a range of consecutive indices) rather than one entry
// per event, so a rows event of a hundred rows costs one index entry and one hash probe rather
// than a hundred of each; an event that is identified by its whole encoding (no transaction
// metadata) is a run of one. The result is the same as remembering each event on its own:
// contains() is true exactly for the (key, index) pairs remembered and neither evicted nor
// aged out. Cost: a look-up reads every run of its key, and the events of a key remembered out
// of index order make a run each; sources produce them in order.
//
// Time: the caller passes the time (ms, monotonic) to expire() and remember(); events
// remembered with the same time may share a run, so one acknowledged batch ages out together.
//
// Threading: none; one thread at a time (the one driving the runtime).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/event_identity.hpp"
#include "cppcdc/idempotency.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

class DuplicateWindow {
 public:
  /// A window with the options' capacity (events) and age limit (0: none). Error kind
  /// configuration for the capacities EventIdempotencyGuard::create refuses.
  static Result<DuplicateWindow> create(const IdempotencyOptions& options);

  /// Forgets the runs remembered `ttl_ms` or more before `now_ms` (no effect without an age
  /// limit).
  void expire(std::int64_t now_ms);
  /// Whether `id` was remembered and is still in the window.
  bool contains(const EventIdentity& id);
  /// Remembers `id` at `now_ms` unless it is in the window already. A full window forgets its
  /// oldest event first.
  void remember(const EventIdentity& id, std::int64_t now_ms);

  /// Hints for a caller about to look up or remember many identities (no effect on the
  /// window): prefetch() starts loading the index slot of `key`; prefetch_eviction() that of
  /// the run a full window of runs of one event drops `ahead` insertions from now (nothing
  /// while the oldest run outlives them).
  void prefetch(const TransientFingerprint& key) const noexcept;
  void prefetch_eviction(std::size_t ahead) const noexcept;

  /// Events pushed out of a full window (not those that aged out).
  std::uint64_t evictions() const noexcept { return evictions_; }
  /// Events in the window now.
  std::size_t size() const noexcept { return count_; }
  /// Runs in the window now (at most size()).
  std::size_t runs() const noexcept { return runs_.size(); }

 private:
  DuplicateWindow(std::size_t capacity, std::uint64_t ttl_ms)
      : capacity_(capacity), ttl_ms_(ttl_ms) {}

  struct Run {
    TransientFingerprint key;
    std::uint64_t first = 0;  // index of its oldest event still in the window
    std::uint64_t count = 0;  // events from `first` on
    std::int64_t at_ms = 0;   // when its events were remembered (0 without an age limit)
  };

  // Runs are numbered in the order they were added (32 bits, wrapping: fewer than 2^32 are
  // ever in the window); the run numbered s sits at runs_[s - head_seq_].
  Run& run(std::uint32_t seq) noexcept {
    return runs_[static_cast<std::uint32_t>(seq - head_seq_)];
  }
  // The numbers of the runs of `key` (cached for the last key asked about).
  const std::vector<std::uint32_t>& runs_of(const TransientFingerprint& key);
  void index(std::uint32_t seq);
  void unindex(std::uint32_t seq);
  void drop_head_run();
  void grow_table();

  std::size_t capacity_;
  std::uint64_t ttl_ms_;
  std::size_t count_ = 0;  // events in the window
  std::uint64_t evictions_ = 0;
  std::deque<Run> runs_;  // oldest first
  std::uint32_t head_seq_ = 0;
  // Open addressing, linear probing: 0 for a free slot, else a tag in the high half (the low
  // 31 bits of the run's key.lo, which give its home slot, and the top bit set) and the run's
  // number in the low half.
  std::vector<std::uint64_t> slots_;
  // runs_of()'s cache: valid until a run of that key leaves the window.
  bool cache_valid_ = false;
  TransientFingerprint cache_key_;
  std::vector<std::uint32_t> cache_runs_;
};

}  // namespace cppcdc::detail
