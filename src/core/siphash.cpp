#include "core/siphash.hpp"

#include <bit>
#include <cstring>

namespace cppcdc::detail {
namespace {

struct SipState {
  std::uint64_t v0, v1, v2, v3;

  void round() noexcept {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }
  void absorb(std::uint64_t m) noexcept {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  std::uint64_t squeeze() noexcept {
    round();
    round();
    round();
    round();
    return v0 ^ v1 ^ v2 ^ v3;
  }
};

// One 8-byte word, little-endian: a single load where the machine is little-endian (the
// byte-by-byte loop this replaced cost about as much as the rounds themselves).
std::uint64_t load_le(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

SipState absorb_all(const SipKey& key, std::string_view data, bool wide) noexcept {
  SipState s{0x736f6d6570736575ULL ^ key.k0, 0x646f72616e646f6dULL ^ key.k1,
             0x6c7967656e657261ULL ^ key.k0, 0x7465646279746573ULL ^ key.k1};
  if (wide) s.v1 ^= 0xee;
  const std::size_t whole = data.size() & ~static_cast<std::size_t>(7);
  for (std::size_t i = 0; i < whole; i += 8) s.absorb(load_le(data.data() + i));
  std::uint64_t last = static_cast<std::uint64_t>(data.size()) << 56;
  for (std::size_t i = whole; i < data.size(); ++i) {
    last |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[i])) << (8 * (i - whole));
  }
  s.absorb(last);
  s.v2 ^= wide ? 0xee : 0xff;
  return s;
}

}  // namespace

std::uint64_t siphash24_64(const SipKey& key, std::string_view data) noexcept {
  SipState s = absorb_all(key, data, false);
  return s.squeeze();
}

std::array<std::uint64_t, 2> siphash24_128(const SipKey& key, std::string_view data) noexcept {
  SipState s = absorb_all(key, data, true);
  const std::uint64_t first = s.squeeze();
  s.v1 ^= 0xdd;
  return {first, s.squeeze()};
}

}  // namespace cppcdc::detail
