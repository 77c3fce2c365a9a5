#include "cppcdc/pg_lsn.hpp"

#include <charconv>
#include <cstdio>

namespace cppcdc::pg {

std::string Lsn::to_string() const {
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%X/%X", static_cast<unsigned>(value_ >> 32),
                              static_cast<unsigned>(value_ & 0xffffffffu));
  return std::string(buf, static_cast<std::size_t>(n));
}

Result<Lsn> Lsn::parse(std::string_view text) {
  const auto bad = [&] {
    return fail(Error::invalid_data("'" + std::string(text) +
                                    "' is not an LSN (expected two hex numbers as in 0/16B2E48)"));
  };
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash > 8 || text.size() - slash - 1 == 0 ||
      text.size() - slash - 1 > 8) {
    return bad();
  }
  std::uint32_t hi = 0, lo = 0;
  const char* b = text.data();
  auto r1 = std::from_chars(b, b + slash, hi, 16);
  if (r1.ec != std::errc() || r1.ptr != b + slash) return bad();
  auto r2 = std::from_chars(b + slash + 1, b + text.size(), lo, 16);
  if (r2.ec != std::errc() || r2.ptr != b + text.size()) return bad();
  return Lsn((static_cast<std::uint64_t>(hi) << 32) | lo);
}

}  // namespace cppcdc::pg
