#pragma once
// The identity the runtime's duplicate window keys on (batch_shaper.hpp, duplicate_window.hpp):
// a 128-bit key and an index, comparable only within the process (keyed with its random key).
//   - An event with transaction metadata is identified by where it sits: source, position,
//     table, op and its transaction sequence (a change has one place in one transaction), so
//     its row images are not hashed. The key is shared by the events of one place and one
//     transaction (id and event count): the keyed hash of the place's own hash (kept per thread
//     for the last place seen, which the rows of one source record share) with the transaction's
//     id and size. The index is the event's event_index, distinct within the group.
//   - Any other (identifiable) event is identified by its whole canonical encoding: the key is
//     fingerprint_event_transient, the index 0.
// The two kinds of key hash different bytes under different domains, so they do not meet.

#include <cstdint>

#include "cppcdc/event.hpp"
#include "cppcdc/idempotency.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

struct EventIdentity {
  TransientFingerprint key;
  std::uint64_t index = 0;
  friend bool operator==(const EventIdentity&, const EventIdentity&) = default;
};

/// For an identifiable event (is_identifiable).
EventIdentity event_identity(const Event& event);

/// Error kind configuration for a window EventIdempotencyGuard::create would refuse (capacity
/// 0, or too large).
Status check_idempotency_options(const IdempotencyOptions& options);

}  // namespace cppcdc::detail
