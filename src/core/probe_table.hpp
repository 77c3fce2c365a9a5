#pragma once
// Open-addressing tables of 64-bit slots with linear probing, where 0 is a free slot and each
// entry can name its home slot from its own bits: the idempotency guard's index and the
// duplicate window's (idempotency.cpp, duplicate_window.cpp).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cppcdc::detail {

/// Frees `slots[hole]` (the table's size a power of two) by backward-shift deletion: each later
/// entry of its probe run moves into the hole unless its home, `home(value)`, lies between the
/// hole and itself, so every entry stays reachable from its home without tombstones.
template <class Home>
void erase_probed(std::vector<std::uint64_t>& slots, std::size_t hole, Home home) noexcept {
  const std::size_t mask = slots.size() - 1;
  slots[hole] = 0;
  for (std::size_t j = (hole + 1) & mask; slots[j] != 0; j = (j + 1) & mask) {
    const std::size_t h = home(slots[j]) & mask;
    const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots[hole] = slots[j];
    slots[j] = 0;
    hole = j;
  }
}

}  // namespace cppcdc::detail
