// MySQL / MariaDB checkpoint offsets: binlog coordinates are ordered, GTID sets are not.

#include <compare>
#include <string>

#include "core/text_util.hpp"
#include "cppcdc/mysql.hpp"

namespace cppcdc::mysql {
namespace {

class OffsetOrder final : public PositionOrder {
 public:
  Status parse(std::string_view offset) const override {
    // A coordinate, or anything that may be a GTID set: the GTID grammar is the binlog
    // connector's to check when it reads the offset.
    if (offset.empty()) {
      return fail(Error::invalid_data(
          "an empty MySQL offset (expected a binlog coordinate such as mysql-bin.000012:4567, "
          "or a GTID set)"));
    }
    return ok();
  }

  Result<std::partial_ordering> compare(std::string_view a, std::string_view b) const override {
    CPPCDC_TRY(parse(a));
    CPPCDC_TRY(parse(b));
    const auto x = parse_binlog_coordinate(a);
    const auto y = parse_binlog_coordinate(b);
    // Sequence numbers of differently named binlogs (log_bin changed) share no scale.
    if (!x || !y || x->basename != y->basename) return std::partial_ordering::unordered;
    if (x->sequence != y->sequence) return std::partial_ordering(x->sequence <=> y->sequence);
    return std::partial_ordering(x->position <=> y->position);
  }

  Status check_replace(std::string_view previous, std::string_view next) const override {
    auto order = compare(previous, next);
    if (!order || *order != std::partial_ordering::greater) return ok();
    const auto x = parse_binlog_coordinate(previous);
    const auto y = parse_binlog_coordinate(next);
    if (x && y && y->sequence < x->sequence) {
      return fail(Error::invalid_data("the binlog file sequence moves backwards"));
    }
    return fail(Error::invalid_data("the position within the same binlog file moves backwards"));
  }
};

}  // namespace

std::optional<BinlogCoordinate> parse_binlog_coordinate(std::string_view offset) {
  if (offset.find(',') != std::string_view::npos) return std::nullopt;
  const auto colon = offset.find(':');
  if (colon == std::string_view::npos || colon != offset.rfind(':')) return std::nullopt;
  const std::string_view file = offset.substr(0, colon);
  const auto position = detail::parse_decimal(offset.substr(colon + 1));
  if (!position) return std::nullopt;
  const auto dot = file.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  const auto sequence = detail::parse_decimal(file.substr(dot + 1));
  if (!sequence) return std::nullopt;
  return BinlogCoordinate{file.substr(0, dot), *sequence, *position};
}

std::shared_ptr<const PositionOrder> offset_order() {
  static const auto order = std::make_shared<const OffsetOrder>();
  return order;
}

void register_positions() {
  register_position_order("mysql", offset_order());
  register_position_order("mariadb", offset_order());
}

}  // namespace cppcdc::mysql
