#pragma once
// Small readers over the plugin Settings view (cppcdc/plugin.hpp) that every plugin's settings
// parser needs: an optional key read into a field that keeps its default when the key is
// absent, and quoting for messages.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "cppcdc/plugin.hpp"

namespace cppcdc::detail {

/// `"text"`, for naming a value in a message.
inline std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

/// Reads an optional integer key within [min, max] into `target` (left alone when absent).
template <typename T>
Status assign_int(const Settings& settings, std::string_view key, std::int64_t min,
                  std::int64_t max, T& target) {
  auto value = settings.get_int(key, min, max);
  if (!value) return fail(value.error());
  if (value->has_value()) target = static_cast<T>(**value);
  return ok();
}

/// Reads an optional boolean key into `target` (left alone when absent).
inline Status assign_bool(const Settings& settings, std::string_view key, bool& target) {
  auto value = settings.get_bool(key);
  if (!value) return fail(value.error());
  if (value->has_value()) target = **value;
  return ok();
}

/// Reads an optional string key into `target` (left alone when absent).
inline Status assign_string(const Settings& settings, std::string_view key,
                            std::string& target) {
  auto value = settings.get_string(key);
  if (!value) return fail(value.error());
  if (value->has_value()) target = std::move(**value);
  return ok();
}

}  // namespace cppcdc::detail
