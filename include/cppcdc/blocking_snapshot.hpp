#pragma once
// The blocking snapshot's hand-off, for connectors built into cppcdc that read on a thread of
// their own through the core's reader hand-off (src/core/reader_handoff.hpp): the connector
// reads the rows (PostgreSQL: COPY in keyset order) and emits them in batches; this part,
// shared by every such connector, queues the batches for poll(), lets poll() gather large
// batches while the snapshot runs, gives delivered batches back to the reader so that the next
// rows are written over their events, and reports how the snapshot ended.
//
// Threading: run_blocking_snapshot runs on the reader thread; poll() takes the batches on the
// consumer's thread.

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

namespace detail {
class ReaderHandoff;
}

/// Hands one batch of snapshot rows over: `events` with `sizes[i]` the
/// detail::approx_event_bytes of events[i]. Leaves in `events` a delivered batch whose memory
/// the next rows may reuse (or nothing) and empties `sizes`. Returns false when the source is
/// stopping: the reader then stops reading.
using SnapshotEmit = std::function<bool(std::vector<Event>&, std::vector<std::size_t>&)>;

/// Runs `read(emit)` on the reader thread with `handoff` in bulk mode (poll() waits briefly for
/// fuller batches). Returns true when `read` succeeded and no stop was asked for: the reader
/// goes on (to the stream, or to its end). Otherwise the reader's end has been reported to
/// poll() through `handoff` (the error of `read` with `what` as context, or none after a stop)
/// and the reader thread is to end.
bool run_blocking_snapshot(detail::ReaderHandoff& handoff, std::string_view what,
                           const std::function<Status(const SnapshotEmit&)>& read);

}  // namespace cppcdc
