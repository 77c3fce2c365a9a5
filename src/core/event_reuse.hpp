#pragma once
// Reusing delivered events on a source's reader thread (private to src/): the events the
// runtime hands back (Source::recycle, ReaderHandoff::take_recycled) are filled again instead
// of being freed while new ones are allocated, so that decoding a row into an event costs no
// allocation once the strings and rows of the recycled events are large enough.
//
// SpareEvents keeps such batches, up to a bound, and hands them out whole; InPlaceBatch fills
// the events of one in place, one at a time, as the reader's open batch (a transaction).
// reset_for_reuse() brings an event back to the state of a default-constructed Event (every
// field, so that nothing of its previous use leaks into the next), keeping only the memory of
// its short strings and of its row images; long strings are released, so a spare event never
// holds on to an unusually large value. Reader thread only.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cppcdc/event.hpp"

namespace cppcdc::detail {

/// Strings with more capacity than this are released rather than kept by reset_for_reuse().
inline constexpr std::size_t kReusedStringCapacity = 256;

inline void clear_for_reuse(std::string& s) {
  if (s.capacity() > kReusedStringCapacity) {
    std::string().swap(s);
  } else {
    s.clear();
  }
}

/// Row images and key lists keep at most this many entries' worth of memory.
inline constexpr std::size_t kReusedRowColumns = 256;

/// What reset_for_reuse() takes out of an event for the caller to fill and put back: its
/// after image (the columns' strings keep their memory; the contents are stale), its key
/// column names and its row shape. Left as they are when they hold something already.
struct ReusableParts {
  std::optional<Row> row;
  std::optional<std::vector<std::string>> names;
  /// The event's row shape: a reader that fills the next event with the same shape moves it
  /// back instead of copying the pointer again (no reference-count update per event).
  RowShapePtr shape;
};

// A field added to Event changes its size and stops the build here: reset it below, set it in
// full_event() of tests/unit/core/event_reuse_test.cpp, then update the size. (libstdc++ on
// x86-64; other targets skip the check.)
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(Event) == 552,
              "Event changed: make reset_for_reuse() reset the new field, then update this size");
#endif

/// Brings `e` to the state of a default-constructed Event (every field, so that nothing of its
/// previous use leaks into the next), short strings keeping their buffers; its after image and
/// key names go to `parts` (when that has none yet), else they are released.
inline void reset_for_reuse(Event& e, ReusableParts& parts) {
  e.op = Operation::kInsert;
  e.before = BeforeImage();
  if (e.after && !parts.row && e.after->capacity() <= kReusedRowColumns) {
    parts.row = std::move(e.after);
    for (auto& c : *parts.row) {
      clear_for_reuse(c.name);
      if (c.text) clear_for_reuse(*c.text);
    }
  }
  e.after.reset();
  clear_for_reuse(e.source.source_name);
  clear_for_reuse(e.source.offset);
  e.source.timestamp = 0;
  e.ts = 0;
  e.schema.reset();
  clear_for_reuse(e.table);
  if (e.primary_key && !parts.names && e.primary_key->capacity() <= kReusedRowColumns) {
    parts.names = std::move(e.primary_key);
  }
  e.primary_key.reset();
  e.snapshot.reset();
  e.transaction.reset();
  e.envelope_version = kEnvelopeVersion;
  e.unavailable_columns.clear();
  if (!parts.shape) {
    parts.shape = std::move(e.shape);
  } else {
    e.shape.reset();
  }
  clear_for_reuse(e.resume_offset);
  clear_for_reuse(e.resume_state);
  e.log_position = LogPosition();
  clear_for_reuse(e.gtid);
  e.snapshot_edge = SnapshotEdge::kNone;
}

/// Recycled batches whose events are filled again. Holds at most kMaxEvents events.
class SpareEvents {
 public:
  static constexpr std::size_t kMaxEvents = 32768;

  /// Keeps the events of `batches` (up to the bound; the rest are released) and empties it.
  void keep(std::vector<std::vector<Event>>& batches) {
    for (auto& b : batches) {
      if (b.empty() || count_ >= kMaxEvents) continue;
      if (count_ + b.size() > kMaxEvents) b.resize(kMaxEvents - count_);
      count_ += b.size();
      batches_.push_back(std::move(b));
    }
    batches.clear();
  }

  /// Swaps the newest spare batch (its events as they were delivered; reset them before
  /// use) into the empty `out`; false, leaving `out` as it is, when there is none.
  bool take_batch(std::vector<Event>& out) {
    if (!out.empty()) return false;
    while (!batches_.empty() && batches_.back().empty()) batches_.pop_back();
    if (batches_.empty()) return false;
    out.swap(batches_.back());
    count_ -= out.size();
    batches_.pop_back();
    return true;
  }

  std::size_t size() const noexcept { return count_; }

 private:
  std::vector<std::vector<Event>> batches_;
  std::size_t count_ = 0;
};

/// The reader's open batch (a transaction's events), filled in place in a recycled batch,
/// and the batches it finished (commit()) but has not handed over yet. events_ holds, in
/// [handed_, begin_), the held batches; in [begin_, end_), the open batch; after end_,
/// recycled events not filled again yet (append() resets each by reset_for_reuse() as it
/// hands it out); before handed_, events that were moved out by an earlier hand-over,
/// released with the vector. So an event is neither moved nor freed to be reused, and held
/// batches that fill a vector change hands with it, without moving their events. Reader
/// thread only.
class InPlaceBatch {
 public:
  /// Events of the open batch.
  std::size_t size() const noexcept { return end_ - begin_; }
  bool empty() const noexcept { return end_ == begin_; }
  Event& operator[](std::size_t i) noexcept { return events_[begin_ + i]; }
  Event& back() noexcept { return events_[end_ - 1]; }
  Event* begin() noexcept { return events_.data() + begin_; }
  Event* end() noexcept { return events_.data() + end_; }
  /// Events the vector holds: handed over, held, open and recycled ones (for tests).
  std::size_t slots() const noexcept { return events_.size(); }
  /// Events of the finished batches not handed over yet (commit()).
  std::size_t held() const noexcept { return begin_ - handed_; }

  /// Whether the next append() would have to move the held batches (the vector is full):
  /// hand them over first. Without held batches, false.
  bool must_hand_over() const noexcept {
    return end_ == events_.size() && events_.size() == events_.capacity() && begin_ > handed_;
  }

  /// Appends an event and returns it: the next recycled one, reset by reset_for_reuse() into
  /// `parts`; once those run out, one from `spares` (with no batch held, at the start of a
  /// batch) or a new one.
  Event& append(SpareEvents& spares, ReusableParts& parts) {
    if (end_ == events_.size()) {
      if (begin_ == handed_) make_room(spares);
      if (end_ == events_.size()) return events_.emplace_back(), events_[end_++];
    }
    Event& e = events_[end_++];
    reset_for_reuse(e, parts);
    return e;
  }

  /// Appends `e` (moved into a recycled slot, or at the end).
  void append(Event&& e, SpareEvents& spares) {
    if (end_ == events_.size() && begin_ == handed_) make_room(spares);
    if (end_ == events_.size()) {
      events_.push_back(std::move(e));
    } else {
      events_[end_] = std::move(e);
    }
    ++end_;
  }

  /// Drops the event append() returned last: its slot is refilled (reset again) later.
  void pop_back() noexcept { --end_; }

  /// The open batch is finished: it is held, after those held before it, until hand_over();
  /// the next batch opens after it.
  void commit() noexcept { begin_ = end_; }

  /// Hands the held batches to `push(std::vector<Event>& events, from, to)`
  /// (ReaderHandoff::push and BatchQueue::push with a range: they take the whole vector, or
  /// move the events out; `push` must do one or the other) and returns what push returned;
  /// without held batches, calls nothing and returns `R()` (false for a bool). When moving the
  /// events that follow the held ones (the open batch, recycled events) costs less than moving the
  /// held ones, the vector is cut: those go to the front of a spare batch (or of a vector of their
  /// own) and the held events change hands with the vector. `spares`: where the next vector comes
  /// from.
  template <class Push,
            class R = std::invoke_result_t<Push, std::vector<Event>&, std::size_t, std::size_t>>
  R hand_over(Push&& push, SpareEvents& spares) {
    if (begin_ == handed_) return R();
    const std::size_t held = begin_ - handed_;
    const std::size_t open = end_ - begin_;
    const std::size_t after = events_.size() - begin_;  // open and recycled
    if (handed_ == 0 && after <= held) {
      std::vector<Event> next;
      if (spares.take_batch(next)) {
        // The spare batch's own recycled events follow the open ones; ours are dropped.
        if (next.size() < open) next.resize(open);
        std::move(events_.begin() + static_cast<std::ptrdiff_t>(begin_),
                  events_.begin() + static_cast<std::ptrdiff_t>(end_), next.begin());
      } else {
        next.reserve(std::min(events_.capacity(), SpareEvents::kMaxEvents));
        next.insert(next.end(),
                    std::make_move_iterator(events_.begin() + static_cast<std::ptrdiff_t>(begin_)),
                    std::make_move_iterator(events_.end()));
      }
      events_.resize(begin_);
      auto result = std::forward<Push>(push)(events_, std::size_t{0}, begin_);
      events_.clear();  // normally empty already: the vector changed hands
      events_.swap(next);
      handed_ = begin_ = 0;
      end_ = open;
      return result;
    }
    last_capacity_ = events_.capacity();
    auto result = std::forward<Push>(push)(events_, handed_, begin_);
    if (events_.empty()) {
      handed_ = begin_ = end_ = 0;  // the vector changed hands (nothing followed the held)
    } else {
      handed_ = begin_;
    }
    return result;
  }

  /// Releases everything, the recycled events included (the memory goes back). Nothing may
  /// be held.
  void release() {
    events_ = std::vector<Event>();
    handed_ = begin_ = end_ = 0;
  }
  /// Drops the open batch's events (they are reset when handed out again).
  void clear() noexcept { end_ = begin_; }
  /// Drops the open and the held batches (a reader starting again): every event the vector
  /// holds is reset when handed out again.
  void drop_all() noexcept { handed_ = begin_ = end_ = 0; }

 private:
  // The recycled events are used up and nothing is held. With no batch open, the events
  // handed over are dropped and a spare batch, if any, is filled next. With one open, its
  // events move to the front of a spare batch (or, with none, of this vector, dropping the
  // handed-over events before them), so that the vector grows only for want of recycled
  // events.
  void make_room(SpareEvents& spares) {
    if (begin_ == end_) {
      start_over(spares);
      return;
    }
    const std::size_t open = end_ - begin_;
    std::vector<Event> next;
    if (spares.take_batch(next)) {
      if (next.size() < open) next.resize(open);
      std::move(begin(), end(), next.begin());
      events_.swap(next);
    } else if (begin_ > 0) {
      events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(begin_));
    }
    handed_ = begin_ = 0;
    end_ = open;
  }

  void start_over(SpareEvents& spares) {
    if (events_.capacity() > SpareEvents::kMaxEvents) {
      events_ = std::vector<Event>();  // after an unusually large batch: not kept
    } else {
      events_.clear();
    }
    handed_ = begin_ = end_ = 0;
    // With no spare batch, room for as many events as the vector last handed over had (a
    // vector grown one event at a time would move them all at each doubling).
    if (!spares.take_batch(events_) && events_.capacity() == 0) {
      events_.reserve(std::min(last_capacity_, SpareEvents::kMaxEvents));
    }
  }

  std::vector<Event> events_;
  std::size_t handed_ = 0;  // events before it were moved out by a hand-over
  std::size_t begin_ = 0;   // the open batch; held batches before it, from handed_
  std::size_t end_ = 0;
  std::size_t last_capacity_ = 0;  // of the vector the last hand-over gave away
};

}  // namespace cppcdc::detail
