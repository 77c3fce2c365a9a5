#pragma once
// Reusing delivered events on a source's reader thread (private to src/): the events the
// runtime hands back (Source::recycle, ReaderHandoff::take_recycled) are filled again instead
// of being freed while new ones are allocated, so that decoding a row into an event costs no
// allocation once the strings and rows of the recycled events are large enough.
//
// SpareEvents keeps such batches, up to a bound, and hands their events out one at a time.
// reset_for_reuse() brings an event back to the state of a default-constructed Event (every
// field, so that nothing of its previous use leaks into the next), keeping only the memory of
// its short strings and of its row images; long strings are released, so a spare event never
// holds on to an unusually large value. Reader thread only.

#include <cstddef>
#include <optional>
#include <string>
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
/// after image (the columns' strings keep their memory; the contents are stale) and its key
/// column names. Left as they are when they hold something already.
struct ReusableParts {
  std::optional<Row> row;
  std::optional<std::vector<std::string>> names;
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
  e.shape.reset();
  clear_for_reuse(e.resume_offset);
  clear_for_reuse(e.resume_state);
  e.log_position = LogPosition();
  clear_for_reuse(e.gtid);
  e.snapshot_edge = SnapshotEdge::kNone;
}

/// Recycled batches whose events are filled again. Holds at most kMaxEvents events.
class SpareEvents {
 public:
  static constexpr std::size_t kMaxEvents = 16384;

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

  /// Appends an event to `out`: a spare one, reset by reset_for_reuse() into `parts`, or a
  /// new one.
  Event& append_to(std::vector<Event>& out, ReusableParts& parts) {
    while (!batches_.empty() && batches_.back().empty()) batches_.pop_back();
    if (batches_.empty()) return out.emplace_back();
    auto& from = batches_.back();
    Event& e = out.emplace_back(std::move(from.back()));
    from.pop_back();
    --count_;
    reset_for_reuse(e, parts);
    return e;
  }

  std::size_t size() const noexcept { return count_; }

 private:
  std::vector<std::vector<Event>> batches_;
  std::size_t count_ = 0;
};

}  // namespace cppcdc::detail
