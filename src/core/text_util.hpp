#pragma once
// Small helpers shared by modules (private to src/).

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cppcdc::detail {

/// Levenshtein distance between two short names (for "did you mean" hints).
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min(std::min(row[j] + 1, row[j - 1] + 1), replace);
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The name of `candidates` closest to `name` when it is close enough to be a likely typo of
/// it: at most `max_edits` edits (by default 1 for names of up to 4 characters, else 2); ""
/// otherwise.
template <class Name>
std::string closest_name(std::string_view name, const std::vector<Name>& candidates,
                         std::optional<std::size_t> max_edits = std::nullopt) {
  std::string best;
  std::size_t best_distance = max_edits ? *max_edits + 1 : (name.size() <= 4 ? 2 : 3);
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(std::string_view(c), name);
    if (d < best_distance && std::string_view(c) != name) {
      best = std::string(c);
      best_distance = d;
    }
  }
  return best;
}

/// The names in double quotes, as alternatives for a message: "a", "b" or "c".
template <class Name>
std::string quoted_alternatives(const std::vector<Name>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += '"';
    out += names[i];
    out += '"';
  }
  return out;
}

/// Lower-case hex SHA-256 of `data` (64 characters), or nullopt if OpenSSL fails.
inline std::optional<std::string> sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return std::nullopt;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

/// Parses a whole string of decimal digits: no sign, no blanks, no overflow.
/// "1 row", "2 rows": `count` and the noun, plural unless the count is one. `plural`
/// defaults to the noun with an "s".
inline std::string counted(std::uint64_t count, std::string_view noun,
                           std::string_view plural = {}) {
  std::string out = std::to_string(count) + " ";
  if (count == 1) return out.append(noun);
  if (!plural.empty()) return out.append(plural);
  return out.append(noun).append("s");
}

inline std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Strict UTF-8 check (no overlong forms, no surrogates, nothing above U+10FFFF).
inline bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t extra = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the first continuation byte
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c == 0xe0) {
      extra = 2, lo = 0xa0;
    } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
      extra = 2;
    } else if (c == 0xed) {
      extra = 2, hi = 0x9f;
    } else if (c == 0xf0) {
      extra = 3, lo = 0x90;
    } else if (c >= 0xf1 && c <= 0xf3) {
      extra = 3;
    } else if (c == 0xf4) {
      extra = 3, hi = 0x8f;
    } else {
      return false;
    }
    if (n - i - 1 < extra) return false;
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (std::size_t k = 2; k <= extra; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

/// `bytes` in bytea hex output form: "\\x" and two lower-case hex digits per byte.
inline std::string bytea_hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace cppcdc::detail
