// SQL Server checkpoint offsets: ordered by their commit LSN.

#include <cctype>
#include <compare>
#include <optional>
#include <string>

#include "cppcdc/sqlserver.hpp"

namespace cppcdc::sqlserver {
namespace {

// The commit LSN's hex digits in lower case without leading zeros, so that (length, text)
// orders values numerically; nullopt when it is not hex.
std::optional<std::string> normalized_commit_lsn(std::string_view offset) {
  std::string_view lsn = offset.substr(0, offset.find(':'));
  if (lsn.size() >= 2 && lsn[0] == '0' && (lsn[1] == 'x' || lsn[1] == 'X')) lsn.remove_prefix(2);
  if (lsn.empty()) return std::nullopt;
  std::string digits;
  digits.reserve(lsn.size());
  for (const char c : lsn) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
    if (digits.empty() && c == '0') continue;
    digits.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return digits;
}

class OffsetOrder final : public PositionOrder {
 public:
  Status parse(std::string_view offset) const override {
    if (!normalized_commit_lsn(offset)) {
      return fail(Error::invalid_data("'" + std::string(offset) +
                                      "' is not a SQL Server offset (expected a hex commit LSN "
                                      "such as 0000002A000001F00003)"));
    }
    return ok();
  }

  Result<std::partial_ordering> compare(std::string_view a, std::string_view b) const override {
    const auto x = normalized_commit_lsn(a);
    const auto y = normalized_commit_lsn(b);
    if (!x) return fail(parse(a).error());
    if (!y) return fail(parse(b).error());
    if (x->size() != y->size()) return std::partial_ordering(x->size() <=> y->size());
    return std::partial_ordering(x->compare(*y) <=> 0);
  }

  Status check_replace(std::string_view previous, std::string_view next) const override {
    auto order = compare(previous, next);
    // Offsets this order cannot read are not second-guessed (as before the registry).
    if (order && *order == std::partial_ordering::greater) {
      return fail(Error::invalid_data("the commit LSN moves backwards"));
    }
    return ok();
  }
};

}  // namespace

std::shared_ptr<const PositionOrder> offset_order() {
  static const auto order = std::make_shared<const OffsetOrder>();
  return order;
}

void register_positions() { register_position_order("sqlserver", offset_order()); }

}  // namespace cppcdc::sqlserver
