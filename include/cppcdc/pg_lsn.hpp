#pragma once
// cppcdc::pg::Lsn: a PostgreSQL WAL position (XLogRecPtr), a 64-bit byte offset into the WAL.
// Its text form is two upper-case hex halves "HI/LO" as printed by pg_lsn's output function,
// e.g. "0/16B2E48". Source: PostgreSQL documentation, "pg_lsn Type".

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace cppcdc::pg
