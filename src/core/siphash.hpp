#pragma once
// SipHash-2-4 (Aumasson and Bernstein), 64- and 128-bit outputs, keyed with 16 bytes. Used by
// the transient event fingerprint (idempotency.hpp); pure, no allocation.

#include <array>
#include <cstdint>
#include <string_view>

namespace cppcdc::detail {

struct SipKey {
  std::uint64_t k0 = 0;  ///< key bytes 0..7, little-endian
  std::uint64_t k1 = 0;  ///< key bytes 8..15, little-endian
};

std::uint64_t siphash24_64(const SipKey& key, std::string_view data) noexcept;
/// The 128-bit variant: [0] from output bytes 0..7, [1] from bytes 8..15 (little-endian).
std::array<std::uint64_t, 2> siphash24_128(const SipKey& key, std::string_view data) noexcept;

}  // namespace cppcdc::detail
