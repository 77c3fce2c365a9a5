// The registry of position orders and PositionOrder's default invariant 6 rule.

#include "cppcdc/position.hpp"

#include <map>
#include <mutex>
#include <shared_mutex>

namespace cppcdc {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<std::string, std::shared_ptr<const PositionOrder>, std::less<>> orders;
};

Registry& registry() {
  static Registry r;  // never destroyed before its last user: function-local, constructed first
  return r;
}

}  // namespace

Status PositionOrder::check_replace(std::string_view previous, std::string_view next) const {
  if (auto parsed = parse(next); !parsed) {
    return fail(Error::invalid_data("the new position does not parse: " +
                                    parsed.error().message()));
  }
  if (!parse(previous)) return ok();  // nothing to compare against
  auto order = compare(previous, next);
  if (!order) return fail(order.error());
  if (*order == std::partial_ordering::greater) {
    return fail(Error::invalid_data("the new position lies before the saved one"));
  }
  return ok();
}

void register_position_order(std::string source_type,
                             std::shared_ptr<const PositionOrder> order) {
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  r.orders[std::move(source_type)] = std::move(order);
}

std::shared_ptr<const PositionOrder> find_position_order(std::string_view source_type) {
  auto& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.orders.find(source_type);
  return it == r.orders.end() ? nullptr : it->second;
}

}  // namespace cppcdc
