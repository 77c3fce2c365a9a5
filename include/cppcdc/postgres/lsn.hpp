#pragma once
// cppcdc::pg::Lsn: a PostgreSQL WAL position (XLogRecPtr), a 64-bit byte offset into the WAL.
// Its text form is two upper-case hex halves "HI/LO" as printed by pg_lsn's output function,
// e.g. "0/16B2E48". Source: PostgreSQL documentation, "pg_lsn Type".

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include <memory>

#include "cppcdc/position.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg {

class Lsn {
 public:
  constexpr Lsn() = default;
  constexpr explicit Lsn(std::uint64_t value) : value_(value) {}

  constexpr std::uint64_t value() const noexcept { return value_; }
  constexpr bool is_zero() const noexcept { return value_ == 0; }

  /// "HI/LO" in upper-case hex without leading zeros (pg_lsn output).
  std::string to_string() const;
  /// Parses "HI/LO" (hex, either case, 1-8 digits each). Error kind: invalid_data, naming
  /// the text.
  static Result<Lsn> parse(std::string_view text);

  friend constexpr auto operator<=>(Lsn, Lsn) = default;

 private:
  std::uint64_t value_ = 0;
};

/// The order of PostgreSQL checkpoint offsets (LSN text). Invariant 6 refuses only an offset
/// that is not an LSN, or the zero LSN: commit order is not WAL order across interleaved
/// transactions, so a later checkpoint may legitimately name a lower LSN.
std::shared_ptr<const PositionOrder> lsn_order();

/// Registers lsn_order() for source type "postgres" (idempotent, thread-safe). The PostgreSQL
/// source does it when it is made; call it yourself to check or compare PostgreSQL checkpoints
/// without one.
void register_positions();

/// The LogPosition an event or watermark carries for `lsn` (big-endian, so byte order is LSN
/// order), and back; nullopt when `position` was not made here.
constexpr LogPosition to_log_position(Lsn lsn) noexcept { return LogPosition::from_u64(lsn.value()); }
constexpr std::optional<Lsn> lsn_of(const LogPosition& position) noexcept {
  auto v = position.as_u64();
  if (!v) return std::nullopt;
  return Lsn(*v);
}

}  // namespace cppcdc::pg
