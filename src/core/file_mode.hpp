#pragma once
// The `file_mode` setting of plugins that create files holding captured rows or state (the
// file sink, the local_fs checkpoint): permission bits written as an octal string ("0640" or
// "640"; a string, because a TOML integer 640 would be decimal). Read and write bits only: no
// execute, set-user-id, set-group-id or sticky bits on data files.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/plugin.hpp"

namespace cppcdc::detail {

/// nullopt unless `text` is 1 to 4 octal digits whose value has no bit outside 0666.
inline std::optional<unsigned> parse_file_mode(std::string_view text) {
  if (text.empty() || text.size() > 4) return std::nullopt;
  unsigned mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  if ((mode & ~0666u) != 0) return std::nullopt;
  return mode;
}

/// "0640".
inline std::string format_file_mode(unsigned mode) {
  std::string out = "0000";
  for (int i = 3; i >= 1; --i, mode /= 8) out[static_cast<std::size_t>(i)] =
      static_cast<char>('0' + mode % 8);
  return out;
}

/// Reads `key` (default 0600). Errors name the key and what is accepted.
inline Result<unsigned> get_file_mode(const Settings& settings, std::string_view key) {
  constexpr std::string_view kExpected =
      "expected permission bits in octal without execute or special bits, such as \"0600\" "
      "or \"0640\"";
  if (!settings.has(key)) return 0600u;
  auto text = settings.get_string(key);
  if (!text) return fail(text.error());
  auto mode = parse_file_mode(text->value_or(""));
  if (!mode) {
    return fail(settings.error(key, std::string(kExpected) + ", found \"" +
                                        text->value_or("") + "\""));
  }
  return *mode;
}

}  // namespace cppcdc::detail
