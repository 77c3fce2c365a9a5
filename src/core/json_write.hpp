#pragma once
// Direct JSON writing helpers for the hot path (no JSON tree).

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>

namespace cppcdc {
class Event;  // cppcdc/event.hpp
}

#include "cppcdc/buffer.hpp"

namespace cppcdc::detail {

/// True when some byte of the eight in `w` is a quote, a backslash or below 0x20. A byte is
/// zero in x exactly when (x - 1) borrows into its high bit while x's is clear; a byte below
/// 0x20 likewise for (w - 0x20). Exact as a yes/no answer.
constexpr bool json_word_needs_escape(std::uint64_t w) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  const std::uint64_t quote = w ^ (kOnes * '"');
  const std::uint64_t slash = w ^ (kOnes * '\\');
  return ((((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((w - kOnes * 0x20) & ~w)) &
          kHigh) != 0;
}

/// True when some byte of `s` must be escaped inside a JSON string: a control character
/// (below 0x20), a quote or a backslash. Eight bytes at a time; a false "true" is impossible
/// for bytes that are all plain, and any true hit is confirmed by the escaping path.
inline bool json_needs_escape(std::string_view s) noexcept {
  const char* p = s.data();
  std::size_t n = s.size();
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if (json_word_needs_escape(w)) return true;
    p += 8;
    n -= 8;
  }
  // The tail (and most short values and names) byte by byte, one table look-up each.
  static constexpr auto kEscaped = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[c] = true;
    t['"'] = true;
    t['\\'] = true;
    return t;
  }();
  bool hit = false;
  for (; n > 0; ++p, --n) hit |= kEscaped[static_cast<unsigned char>(*p)];
  return hit;
}

/// Copies the `n` bytes at `src` to `dst` (room for n bytes; the two do not overlap) unless
/// one of them must be escaped in a JSON string: then returns false, having written some
/// prefix of them. Checks and copies eight bytes at a time, the last word overlapping the one
/// before it; never reads or writes outside the n bytes. Strings without escapes (nearly all
/// names and values) cost one pass, no call.
[[gnu::always_inline]] inline bool copy_json_plain(char* dst, const char* src,
                                                   std::size_t n) noexcept {
  if (n >= 8) {
    std::size_t i = 0;
    std::uint64_t w;
    for (; i + 8 <= n; i += 8) {
      std::memcpy(&w, src + i, 8);
      if (json_word_needs_escape(w)) return false;
      std::memcpy(dst + i, &w, 8);
    }
    if (i < n) {
      std::memcpy(&w, src + n - 8, 8);
      if (json_word_needs_escape(w)) return false;
      std::memcpy(dst + n - 8, &w, 8);
    }
    return true;
  }
  if (n >= 4) {
    // Two four-byte words (overlapping when n < 8), each checked with four plain bytes above.
    constexpr std::uint64_t kPlainHigh = 0x6161616100000000ULL;
    std::uint32_t a, z;
    std::memcpy(&a, src, 4);
    std::memcpy(&z, src + n - 4, 4);
    if (json_word_needs_escape(kPlainHigh | a) || json_word_needs_escape(kPlainHigh | z)) {
      return false;
    }
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &z, 4);
    return true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(src[i]);
    if (c < 0x20 || c == '"' || c == '\\') return false;
    dst[i] = src[i];
  }
  return true;
}

/// Writes the escaped body of a JSON string (no quotes) at `p`, which has room for
/// 6 * s.size() bytes; returns the end.
inline char* write_json_escaped(char* p, std::string_view s) noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != '"' && c != '\\') {
      *p++ = ch;
      continue;
    }
    *p++ = '\\';
    switch (c) {
      // clang-format off
      case '"': *p++ = '"'; break;
      case '\\': *p++ = '\\'; break;
      case '\n': *p++ = 'n'; break;
      case '\r': *p++ = 'r'; break;
      case '\t': *p++ = 't'; break;
      case '\b': *p++ = 'b'; break;
      case '\f': *p++ = 'f'; break;
      // clang-format on
      default:
        *p++ = 'u';
        *p++ = '0';
        *p++ = '0';
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 15];
    }
  }
  return p;
}

/// Room write_json_string needs for `s`: the quotes and the bytes, six per byte when some
/// byte must be escaped (`escape`, from json_needs_escape).
inline std::size_t json_string_room(std::string_view s, bool escape) noexcept {
  return (escape ? 6 * s.size() : s.size()) + 2;
}

/// Writes `s` as a JSON string literal (quotes included) at `p`, which has
/// json_string_room(s, escape) bytes; returns the end.
inline char* write_json_string(char* p, std::string_view s, bool escape) noexcept {
  *p++ = '"';
  if (escape) {
    p = write_json_escaped(p, s);
  } else {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  *p++ = '"';
  return p;
}

/// Appends `s` as a JSON string literal (quotes included). Control characters, quote and
/// backslash are escaped; other bytes are copied as they are (the source's text is UTF-8).
inline void append_json_string(std::string& out, std::string_view s) {
  const bool escape = json_needs_escape(s);
  const std::size_t old = out.size();
  out.resize(old + json_string_room(s, escape));
  char* end = write_json_string(out.data() + old, s, escape);
  out.resize(static_cast<std::size_t>(end - out.data()));
}

inline char* write_uint(char* p, std::uint64_t v) noexcept {
  // Two digits per division (timestamps in ms have 13).
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char buf[24];
  char* b = buf + sizeof buf;
  while (v >= 100) {
    const auto pair = static_cast<std::size_t>(v % 100) * 2;
    v /= 100;
    *--b = kPairs[pair + 1];
    *--b = kPairs[pair];
  }
  if (v >= 10) {
    const auto pair = static_cast<std::size_t>(v) * 2;
    *--b = kPairs[pair + 1];
    *--b = kPairs[pair];
  } else {
    *--b = static_cast<char>('0' + v);
  }
  const auto n = static_cast<std::size_t>(buf + sizeof buf - b);
  std::memcpy(p, b, n);
  return p + n;
}

inline void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  out.append(buf, static_cast<std::size_t>(write_uint(buf, v) - buf));
}

inline char* write_int(char* p, std::int64_t v) noexcept {
  if (v < 0) {
    *p++ = '-';
    return write_uint(p, static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(v));
  }
  return write_uint(p, static_cast<std::uint64_t>(v));
}

inline void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  out.append(buf, static_cast<std::size_t>(write_int(buf, v) - buf));
}

/// The hot path's JSON is written into a ByteBuffer (buffer.hpp) through these helpers.

template <std::size_t N>
void json_lit(ByteBuffer& b, const char (&s)[N]) {  // a string literal, without its terminator
  b.need(N - 1);
  std::memcpy(b.cur(), s, N - 1);
  b.cur() += N - 1;
}
[[gnu::noinline]] inline void json_str_escaped(ByteBuffer& b, std::string_view s) {
  b.need(json_string_room(s, true));
  b.cur() = write_json_string(b.cur(), s, true);
}
// A JSON string literal. Inlined: a call's register saving cost as much as copying a short
// name or value.
[[gnu::always_inline]] inline void json_str(ByteBuffer& b, std::string_view s) {
  b.need(s.size() + 2);
  char* p = b.cur();
  if (copy_json_plain(p + 1, s.data(), s.size())) [[likely]] {
    p[0] = '"';
    p[s.size() + 1] = '"';
    b.cur() = p + s.size() + 2;
    return;
  }
  json_str_escaped(b, s);
}
inline void json_uint(ByteBuffer& b, std::uint64_t v) {
  b.need(24);
  b.cur() = write_uint(b.cur(), v);
}
inline void json_sint(ByteBuffer& b, std::int64_t v) {
  b.need(24);
  b.cur() = write_int(b.cur(), v);
}

/// Appends `e` as one JSON envelope (no newline) to `b`: what Event::append_json writes, for
/// a sink that serialises a batch into one buffer (event.cpp).
void write_event_json(ByteBuffer& b, const Event& e);

}  // namespace cppcdc::detail
