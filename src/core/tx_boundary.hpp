#pragma once
// Where a batch may end under TransactionBoundaryPolicy::kPreserveTransactions (runtime.hpp).
// Pure: the runtime decides what to do with the answer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "cppcdc/event.hpp"

namespace cppcdc::detail {

/// The transaction still open at the end of a batch, if any.
struct OpenTransaction {
  std::size_t start = 0;  ///< index of its first event in the batch
  std::uint64_t tx_id = 0;
};

/// Reads `events` in order and returns the transaction that has not ended by the last event,
/// or nullopt when the batch ends on a boundary. A transaction ends at the event that says it
/// is its last (event_index + 1 == total_events) or where an event of another transaction
/// follows; nothing else counts as an end. Events without transaction metadata do not end an
/// open transaction: when they come after its start they are held back with it.
std::optional<OpenTransaction> trailing_open_transaction(std::span<const Event> events) noexcept;

}  // namespace cppcdc::detail
