// The blocking snapshot's hand-off to poll() (cppcdc/blocking_snapshot.hpp).

#include "cppcdc/blocking_snapshot.hpp"

#include <spdlog/spdlog.h>

#include <deque>
#include <string>

#include "core/reader_handoff.hpp"

namespace cppcdc {
namespace {

// Delivered batches kept for the next rows.
constexpr std::size_t kReusableBatches = 2;

}  // namespace

bool run_blocking_snapshot(detail::ReaderHandoff& handoff, std::string_view what,
                           const std::function<Status(const SnapshotEmit&)>& read) {
  handoff.set_bulk(true);
  std::deque<std::vector<Event>> reusable;  // delivered batches, for the next rows
  const SnapshotEmit emit = [&handoff, &reusable](std::vector<Event>& events,
                                                  std::vector<std::size_t>& sizes) {
    std::vector<std::vector<Event>> done;
    if (!handoff.push(events, &sizes, &done)) return false;
    // Delivered batches come back whole: the next rows are written over their events (no
    // allocation, no event moved). A few wait for their turn; the rest are released here, on
    // the thread that allocated them.
    for (auto& batch : done) {
      if (reusable.size() < kReusableBatches && !batch.empty()) {
        reusable.push_back(std::move(batch));
      }
    }
    if (!reusable.empty()) {
      events.swap(reusable.front());
      reusable.pop_front();
    }
    return !handoff.stopping();
  };
  auto st = read(emit);
  handoff.set_bulk(false);
  if (!st) {
    Error error = st.error().context(std::string(what));
    spdlog::debug("reader stopped: {}", error.report());
    handoff.finish(std::move(error));
    return false;
  }
  if (handoff.stopping()) {
    handoff.finish(std::nullopt);
    return false;
  }
  return true;
}

}  // namespace cppcdc
