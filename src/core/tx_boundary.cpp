#include "core/tx_boundary.hpp"

namespace cppcdc::detail {

std::optional<OpenTransaction> trailing_open_transaction(std::span<const Event> events) noexcept {
  std::optional<OpenTransaction> open;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& tx = events[i].transaction;
    if (!tx) continue;
    if (!open || open->tx_id != tx->tx_id) open = OpenTransaction{i, tx->tx_id};
    if (tx->event_index + 1 == tx->total_events) open.reset();
  }
  return open;
}

}  // namespace cppcdc::detail
