#pragma once
// Column bookkeeping shared by the actions: top-level column edits that keep the unavailable
// lists right (API guide, the four cases), and walking paths inside JSON values.

#include <boost/json.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::transform_detail {

using BeforeVariant = std::variant<BeforeUnavailable, BeforeKeyOnly, BeforeFull>;

/// Mutable access to an event's before-image. BeforeImage hands out only a const view; the
/// event itself is not const here, so writing through it is well defined.
inline BeforeVariant& before_variant(Event& event) {
  return const_cast<BeforeVariant&>(event.before.variant());
}
/// The before-image's row (key-only or full), or nullptr.
Row* before_row(Event& event);
/// The full before-image's unavailable list, or nullptr.
std::vector<std::string>* before_unavailable(Event& event);

ColumnValue* find_column_mut(Row& row, std::string_view name) noexcept;
/// Removes `name` from `row`; false when absent.
bool erase_column(Row& row, std::string_view name);
bool is_listed(const std::vector<std::string>& list, std::string_view name) noexcept;
/// Removes `name` from `list`; false when absent.
bool unlist(std::vector<std::string>& list, std::string_view name);

/// Whether the event carries column `name` anywhere: present in after or before, or listed
/// unavailable in either.
bool carries_column(const Event& event, std::string_view name);

/// Removes a top-level column from both images and drops its markers. True if anything was
/// removed.
bool remove_column(Event& event, std::string_view name);
/// Renames a top-level column in both images and moves its markers. False when the event does
/// not carry `from`. The caller has checked that `to` is free.
bool rename_column(Event& event, std::string_view from, std::string_view to);
/// Sets column `name` of after (appended when absent) and drops its after marker.
void set_after_column(Event& event, std::string_view name, std::optional<std::string> text,
                      bool is_json);

/// The value's text as a column holds it: a string's content, null as nullopt, anything else
/// its JSON text.
std::optional<std::string> json_text(const boost::json::value& value);
/// A column holding `value` (see json_text; objects, arrays, numbers and booleans stay JSON).
ColumnValue column_from_json(std::string name, const boost::json::value& value);
/// The JSON value a column holds: its parsed JSON when is_json, a string otherwise, null for
/// SQL NULL. nullopt when is_json text does not parse.
std::optional<boost::json::value> column_to_json(const ColumnValue& column);

/// Calls fn(value&) for every value `segments` reach below `root` (a `*` segment visits each
/// element of an array and each member of an object). Returns how many were visited.
template <class Fn>
std::size_t for_each_json_match(boost::json::value& root, std::span<const std::string> segments,
                                Fn&& fn) {
  if (segments.empty()) {
    fn(root);
    return 1;
  }
  const std::string& name = segments.front();
  const auto rest = segments.subspan(1);
  std::size_t count = 0;
  if (name == "*") {
    if (auto* array = root.if_array()) {
      for (auto& element : *array) count += for_each_json_match(element, rest, fn);
    } else if (auto* object = root.if_object()) {
      for (auto& member : *object) count += for_each_json_match(member.value(), rest, fn);
    }
    return count;
  }
  if (auto* object = root.if_object()) {
    if (auto* child = object->if_contains(name)) count += for_each_json_match(*child, rest, fn);
  } else if (auto* array = root.if_array()) {
    // A numeric name addresses an array element.
    std::size_t index = 0;
    bool numeric = !name.empty() && name.size() < 10;
    for (char c : name) {
      if (c < '0' || c > '9') numeric = false;
      index = index * 10 + static_cast<std::size_t>(c - '0');
    }
    if (numeric && index < array->size()) {
      count += for_each_json_match((*array)[index], rest, fn);
    }
  }
  return count;
}

/// The qualified name "schema.table" (or "table").
std::string qualified_table(const Event& event);

}  // namespace cppcdc::transform_detail
