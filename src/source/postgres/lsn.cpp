#include "cppcdc/postgres/lsn.hpp"

#include <charconv>
#include <compare>

namespace cppcdc::pg {

std::string Lsn::to_string() const {
  // "%X/%X" by hand: this runs for every event, and snprintf is a measurable share of it.
  static constexpr char kHex[] = "0123456789ABCDEF";
  char buf[17];
  char* p = buf;
  const auto put = [&p](std::uint32_t v) {
    int shift = 28;
    while (shift > 0 && ((v >> shift) & 0xF) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) *p++ = kHex[(v >> shift) & 0xF];
  };
  put(static_cast<std::uint32_t>(value_ >> 32));
  *p++ = '/';
  put(static_cast<std::uint32_t>(value_ & 0xffffffffu));
  return std::string(buf, static_cast<std::size_t>(p - buf));
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

namespace {

class LsnOrder final : public PositionOrder {
 public:
  Status parse(std::string_view offset) const override {
    auto lsn = Lsn::parse(offset);
    if (!lsn) return fail(lsn.error());
    return ok();
  }

  Result<std::partial_ordering> compare(std::string_view a, std::string_view b) const override {
    auto x = Lsn::parse(a);
    if (!x) return fail(x.error());
    auto y = Lsn::parse(b);
    if (!y) return fail(y.error());
    return std::partial_ordering(*x <=> *y);
  }

  Status check_replace(std::string_view /*previous*/, std::string_view next) const override {
    auto lsn = Lsn::parse(next);
    if (!lsn) return fail(Error::invalid_data("the new position is not a PostgreSQL LSN"));
    if (lsn->is_zero()) {
      return fail(Error::invalid_data(
          "the new position is the zero LSN, which no replication stream can reach"));
    }
    return ok();
  }
};

}  // namespace

std::shared_ptr<const PositionOrder> lsn_order() {
  static const auto order = std::make_shared<const LsnOrder>();
  return order;
}

void register_positions() { register_position_order("postgres", lsn_order()); }

}  // namespace cppcdc::pg
