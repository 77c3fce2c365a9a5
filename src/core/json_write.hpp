#pragma once
// Direct JSON writing helpers for the hot path (no JSON tree).

#include <cstdint>
#include <string>
#include <string_view>

namespace cppcdc::detail {

/// Escaping path of append_json_string.
inline void append_json_string_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

/// Appends `s` as a JSON string literal (quotes included). Control characters, quote and
/// backslash are escaped; other bytes are copied as they are (the source's text is UTF-8).
/// Most values need no escaping: they are copied in one pass after a single resize.
inline void append_json_string(std::string& out, std::string_view s) {
  const std::size_t old = out.size();
  out.resize(old + s.size() + 2);
  char* p = out.data() + old;
  *p++ = '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') {
      out.resize(old);
      append_json_string_escaped(out, s);
      return;
    }
    p[i] = static_cast<char>(c);
  }
  p[s.size()] = '"';
}

inline void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out.append(p, static_cast<std::size_t>(buf + sizeof buf - p));
}

inline void append_int(std::string& out, std::int64_t v) {
  if (v < 0) {
    out += '-';
    append_uint(out, static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(v));
  } else {
    append_uint(out, static_cast<std::uint64_t>(v));
  }
}

}  // namespace cppcdc::detail
