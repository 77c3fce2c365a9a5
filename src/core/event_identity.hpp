#pragma once
// The identity the runtime's duplicate window keys on (batch_shaper.hpp). An event with
// transaction metadata is identified by where it sits: source, position, table, op and its
// transaction sequence (a change has one place in one transaction), so its row images are not
// hashed: the place (source, offset, op, schema, table) is hashed on its own, and that hash,
// kept per thread for the last place seen (the rows of one source record share it), is hashed
// again with the transaction's id and size once per group of events sharing them, and each
// event's sequence goes into that base through a bijection (distinct within the group). Any
// other (identifiable) event is identified by its whole canonical encoding, as
// fingerprint_event_transient. All under the process's random key; comparable only within the
// process.

#include "cppcdc/event.hpp"
#include "cppcdc/idempotency.hpp"

namespace cppcdc::detail {

TransientFingerprint event_identity(const Event& event);

}  // namespace cppcdc::detail
