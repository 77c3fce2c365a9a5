// Debezium's typed column encodings (typed.hpp). The texts parsed here are those the sources
// print: PostgreSQL's output functions under the session settings of pg_conn.cpp (DateStyle
// ISO, TimeZone UTC, IntervalStyle postgres, bytea_output hex, lc_monetary C), and the MySQL
// source's row_decoder.hpp forms (the text protocol's, binary strings and BIT as "\x" + hex,
// TIMESTAMP in UTC).

#include "codec/debezium/typed.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "core/json_write.hpp"

namespace cppcdc::debezium {
namespace {

namespace json = boost::json;
using detail::json_lit;
using detail::json_sint;
using detail::json_str;

constexpr std::int64_t kMicrosPerSecond = 1'000'000;
constexpr std::int64_t kMicrosPerDay = 86'400 * kMicrosPerSecond;
// Debezium's MicroDuration counts a month as 365.25 / 12 = 30.4375 days: 2,629,800 seconds.
constexpr std::int64_t kMicrosPerMonth = 2'629'800 * kMicrosPerSecond;
// Past PostgreSQL's last date (5874897 AD) nothing is a date here.
constexpr std::uint64_t kMaxYear = 6'000'000;
// Day numbers the decoder turns into dates: kMaxYear years either way.
constexpr std::int64_t kMaxDays = 2'200'000'000;

// What Debezium's PostgreSQL connector writes for the infinite dates and timestamps (the JDBC
// driver's sentinels carried through its conversions; observed from Debezium 3.6.1).
constexpr std::int64_t kDatePlusInfinity = -2147472692;
constexpr std::int64_t kDateMinusInfinity = -2147472691;
constexpr std::int64_t kMillisPlusInfinity = 9223372036825200;
constexpr std::int64_t kMillisMinusInfinity = -9223372036832400;

Status bad(const std::string& what) { return fail(Error::invalid_data(what)); }

// ---- small parsers ---------------------------------------------------------------------------

std::optional<std::int64_t> parse_int(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  std::uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// "YYYY-MM-DD" (a year of four or more digits) as days since the epoch; `bc` makes the year
/// BC (1 BC is astronomical year 0).
std::optional<std::int64_t> parse_date(std::string_view s, bool bc) {
  const auto dash = s.find('-');
  if (dash == std::string_view::npos || dash < 4 || s.size() != dash + 6) return std::nullopt;
  if (s[dash + 3] != '-') return std::nullopt;
  const auto y = parse_uint(s.substr(0, dash));
  const auto m = parse_uint(s.substr(dash + 1, 2));
  const auto d = parse_uint(s.substr(dash + 4, 2));
  if (!y || !m || !d || !all_digits(s.substr(dash + 1, 2)) || !all_digits(s.substr(dash + 4, 2)))
    return std::nullopt;
  if (*m < 1 || *m > 12 || *d < 1 || *d > 31 || *y > kMaxYear) return std::nullopt;
  const std::int64_t year = bc ? 1 - static_cast<std::int64_t>(*y) : static_cast<std::int64_t>(*y);
  return days_from_civil(year, static_cast<unsigned>(*m), static_cast<unsigned>(*d));
}

/// "H+:MM:SS[.fffffffff]" as microseconds (fraction digits past six are dropped).
std::optional<std::int64_t> parse_clock(std::string_view s) {
  const auto c1 = s.find(':');
  if (c1 == std::string_view::npos || c1 == 0 || s.size() < c1 + 6) return std::nullopt;
  if (s[c1 + 3] != ':') return std::nullopt;
  const auto hh = s.substr(0, c1);
  const auto mm = s.substr(c1 + 1, 2);
  const auto ss = s.substr(c1 + 4, 2);
  if (!all_digits(hh) || !all_digits(mm) || !all_digits(ss) || hh.size() > 9) return std::nullopt;
  std::int64_t micros = (static_cast<std::int64_t>(*parse_uint(hh)) * 3600 +
                         static_cast<std::int64_t>(*parse_uint(mm)) * 60 +
                         static_cast<std::int64_t>(*parse_uint(ss))) *
                        kMicrosPerSecond;
  auto rest = s.substr(c1 + 6);
  if (!rest.empty()) {
    if (rest.front() != '.' || rest.size() < 2 || !all_digits(rest.substr(1))) return std::nullopt;
    const auto frac = rest.substr(1);
    std::int64_t f = 0;
    for (std::size_t i = 0; i < 6; ++i) f = f * 10 + (i < frac.size() ? frac[i] - '0' : 0);
    micros += f;
  }
  return micros;
}

/// A zone offset "+HH[:MM[:SS]]" (also "+HHMM") as seconds east of UTC.
std::optional<std::int64_t> parse_offset(std::string_view s) {
  if (s.size() < 3 || (s[0] != '+' && s[0] != '-')) return std::nullopt;
  const std::int64_t sign = s[0] == '-' ? -1 : 1;
  s.remove_prefix(1);
  std::int64_t parts[3] = {0, 0, 0};
  int n = 0;
  while (!s.empty() && n < 3) {
    if (s.size() < 2 || !all_digits(s.substr(0, 2))) return std::nullopt;
    parts[n++] = *parse_uint(s.substr(0, 2));
    s.remove_prefix(2);
    if (!s.empty() && s.front() == ':') s.remove_prefix(1);
  }
  if (!s.empty()) return std::nullopt;
  return sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
}

/// Strips a PostgreSQL " BC" suffix.
bool strip_bc(std::string_view& s) {
  if (s.size() > 3 && s.substr(s.size() - 3) == " BC") {
    s.remove_suffix(3);
    return true;
  }
  return false;
}

/// "YYYY-MM-DD HH:MM:SS[.f][+offset][ BC]" as microseconds since the epoch in UTC.
std::optional<std::int64_t> parse_timestamp(std::string_view s, bool with_offset) {
  const bool bc = strip_bc(s);
  const auto space = s.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto days = parse_date(s.substr(0, space), bc);
  if (!days) return std::nullopt;
  auto clock = s.substr(space + 1);
  std::int64_t offset = 0;
  if (with_offset) {
    const auto sign = clock.find_first_of("+-");
    if (sign == std::string_view::npos) return std::nullopt;
    const auto o = parse_offset(clock.substr(sign));
    if (!o) return std::nullopt;
    offset = *o;
    clock = clock.substr(0, sign);
  }
  const auto micros = parse_clock(clock);
  if (!micros || *micros > kMicrosPerDay) return std::nullopt;
  std::int64_t at = 0;
  if (__builtin_mul_overflow(*days, kMicrosPerDay, &at) ||
      __builtin_add_overflow(at, *micros - offset * kMicrosPerSecond, &at)) {
    return std::nullopt;
  }
  return at;
}

/// A decimal text "[-]digits[.digits]": its sign, its digits without the point, its scale.
struct DecimalText {
  bool negative = false;
  std::string digits;
  int scale = 0;
};

std::optional<DecimalText> parse_decimal(std::string_view s) {
  DecimalText d;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    d.negative = s.front() == '-';
    s.remove_prefix(1);
  }
  const auto dot = s.find('.');
  const auto whole = s.substr(0, dot);
  const auto frac = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (whole.empty() && frac.empty()) return std::nullopt;
  if ((!whole.empty() && !all_digits(whole)) || (!frac.empty() && !all_digits(frac)))
    return std::nullopt;
  if (dot != std::string_view::npos && frac.empty()) return std::nullopt;
  d.digits = std::string(whole) + std::string(frac);
  d.scale = static_cast<int>(frac.size());
  return d;
}

/// Big-endian two's complement bytes, as short as Java's BigInteger.toByteArray, of the
/// integer the decimal digits spell (negated when `negative`).
std::string unscaled_bytes(std::string_view digits, bool negative) {
  std::vector<std::uint8_t> mag;  // little-endian magnitude
  for (char c : digits) {
    unsigned carry = static_cast<unsigned>(c - '0');
    for (auto& b : mag) {
      const unsigned v = b * 10u + carry;
      b = static_cast<std::uint8_t>(v & 0xff);
      carry = v >> 8;
    }
    while (carry) {
      mag.push_back(static_cast<std::uint8_t>(carry & 0xff));
      carry >>= 8;
    }
  }
  while (!mag.empty() && mag.back() == 0) mag.pop_back();
  if (mag.empty()) return std::string(1, '\0');
  mag.push_back(0);  // room for the sign bit
  if (negative) {
    unsigned carry = 1;
    for (auto& b : mag) {
      const unsigned v = static_cast<unsigned>(static_cast<std::uint8_t>(~b)) + carry;
      b = static_cast<std::uint8_t>(v & 0xff);
      carry = v >> 8;
    }
  }
  // Drop sign-extension bytes the next byte's top bit already says.
  while (mag.size() > 1) {
    const std::uint8_t top = mag.back();
    const std::uint8_t next = mag[mag.size() - 2];
    if ((top == 0 && !(next & 0x80)) || (top == 0xff && (next & 0x80))) {
      mag.pop_back();
    } else {
      break;
    }
  }
  return std::string(mag.rbegin(), mag.rend());
}

/// The decimal digits of big-endian two's complement `bytes`, and whether it is negative.
std::pair<bool, std::string> digits_of(std::string_view bytes) {
  std::vector<std::uint8_t> mag(bytes.begin(), bytes.end());  // big-endian
  const bool negative = !mag.empty() && (mag.front() & 0x80);
  if (negative) {
    unsigned carry = 1;
    for (auto it = mag.rbegin(); it != mag.rend(); ++it) {
      const unsigned v = static_cast<unsigned>(static_cast<std::uint8_t>(~*it)) + carry;
      *it = static_cast<std::uint8_t>(v & 0xff);
      carry = v >> 8;
    }
  }
  std::string digits;
  std::size_t start = 0;
  while (start < mag.size()) {
    unsigned rem = 0;
    for (std::size_t i = start; i < mag.size(); ++i) {
      const unsigned v = (rem << 8) | mag[i];
      mag[i] = static_cast<std::uint8_t>(v / 10);
      rem = v % 10;
    }
    digits.push_back(static_cast<char>('0' + rem));
    while (start < mag.size() && mag[start] == 0) ++start;
  }
  if (digits.empty()) digits = "0";
  std::reverse(digits.begin(), digits.end());
  return {negative, digits};
}

std::string with_scale(bool negative, std::string digits, int scale) {
  if (scale < 0 && digits != "0") digits.append(static_cast<std::size_t>(-scale), '0');
  if (scale > 0) {
    if (digits.size() <= static_cast<std::size_t>(scale)) {
      digits.insert(0, static_cast<std::size_t>(scale) - digits.size() + 1, '0');
    }
    digits.insert(digits.size() - static_cast<std::size_t>(scale), 1, '.');
  }
  const bool zero = digits.find_first_not_of("0.") == std::string::npos;
  return (negative && !zero ? "-" : "") + digits;
}

std::optional<std::string> unhex_bytea(std::string_view s) {
  if (s.size() < 2 || s[0] != '\\' || s[1] != 'x' || s.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve((s.size() - 2) / 2);
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 2; i < s.size(); i += 2) {
    const int hi = nib(s[i]);
    const int lo = nib(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// ---- writing ---------------------------------------------------------------------------------

/// A floating-point number's shortest digits, made to read as a floating-point JSON number
/// ("99999" as "99999.0", as Java's Double.toString writes it), not as an integer.
void write_number(ByteBuffer& out, std::string_view digits) {
  out.raw(digits);
  if (digits.find_first_of(".e") == std::string_view::npos) out.raw(".0");
}

void write_double(ByteBuffer& out, double v) {
  if (std::isnan(v)) {
    json_lit(out, "\"NaN\"");
  } else if (std::isinf(v)) {
    if (v > 0) {
      json_lit(out, "\"Infinity\"");
    } else {
      json_lit(out, "\"-Infinity\"");
    }
  } else {
    char buf[40];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    write_number(out, std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  }
}

void write_float(ByteBuffer& out, float v) {
  if (std::isnan(v) || std::isinf(v)) return write_double(out, v);
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  write_number(out, std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

void append_2(std::string& out, std::int64_t v) {
  out.push_back(static_cast<char>('0' + v / 10));
  out.push_back(static_cast<char>('0' + v % 10));
}

struct Civil {
  std::int64_t y;
  unsigned m;
  unsigned d;
};

Civil civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = floor_div(z, 146097);
  const auto doe = static_cast<std::uint64_t>(z - era * 146097);
  const std::uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const std::uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::uint64_t mp = (5 * doy + 2) / 153;
  const auto d = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  const auto m = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  return {m <= 2 ? y + 1 : y, m, d};
}

/// "HH:MM:SS" plus the fraction: `digits` fixed digits, or (digits < 0) as few as needed.
void append_clock(std::string& out, std::int64_t micros, int digits) {
  const std::int64_t secs = micros / kMicrosPerSecond;
  std::int64_t frac = micros % kMicrosPerSecond;
  const std::int64_t h = secs / 3600;
  if (h < 100) {
    append_2(out, h);
  } else {
    out += std::to_string(h);
  }
  out.push_back(':');
  append_2(out, secs / 60 % 60);
  out.push_back(':');
  append_2(out, secs % 60);
  char f[6];
  for (int i = 5; i >= 0; --i) {
    f[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int n = std::min(digits, 6);
  if (digits < 0) {
    n = 6;
    while (n > 0 && f[n - 1] == '0') --n;
  }
  if (n > 0) {
    out.push_back('.');
    out.append(f, static_cast<std::size_t>(n));
  }
}

/// ISO-8601 "YYYY-MM-DDTHH:MM:SS[.f]Z" of epoch microseconds, as java.time prints a year.
std::string iso_timestamp(std::int64_t micros, int digits) {
  const std::int64_t days = floor_div(micros, kMicrosPerDay);
  const Civil c = civil_from_days(days);
  std::string out;
  out.reserve(32);
  if (c.y >= 0 && c.y <= 9999) {
    append_2(out, c.y / 100);
    append_2(out, c.y % 100);
  } else {
    char y[24];
    std::snprintf(y, sizeof y, c.y > 0 ? "+%lld" : "-%04lld",
                  static_cast<long long>(c.y > 0 ? c.y : -c.y));
    out += y;
  }
  out.push_back('-');
  append_2(out, c.m);
  out.push_back('-');
  append_2(out, c.d);
  out.push_back('T');
  append_clock(out, micros - days * kMicrosPerDay, digits);
  out.push_back('Z');
  return out;
}

const char* binary_type(const TypedOptions& o) {
  return o.binary == TypedOptions::Binary::kBytes ? "bytes" : "string";
}

void write_bytes_as(ByteBuffer& out, const TypedOptions& o, std::string_view bytes) {
  switch (o.binary) {
    case TypedOptions::Binary::kBytes:
    case TypedOptions::Binary::kBase64:
      json_str(out, base64(bytes));
      return;
    case TypedOptions::Binary::kBase64UrlSafe:
      json_str(out, base64(bytes, true));
      return;
    case TypedOptions::Binary::kHex:
      json_str(out, hex(bytes));
      return;
  }
}

/// The little-endian bytes Debezium's PostgreSQL connector writes as io.debezium.data.Bits for
/// a bit string "0101..." (the first character the most significant bit): the bytes of the
/// number the bits spell, as few as hold it (none for zero), least significant first.
std::optional<std::string> bits_bytes(std::string_view bits) {
  std::string out;  // little-endian
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const char c = bits[bits.size() - 1 - i];
    if (c != '0' && c != '1') return std::nullopt;
    if (c == '1') {
      if (out.size() <= i / 8) out.resize(i / 8 + 1, '\0');
      out[i / 8] = static_cast<char>(out[i / 8] | (1 << (i % 8)));
    }
  }
  return out;
}

bool time_is_micro(const ColumnType& t, const TypedOptions& o) {
  if (o.time == TypedOptions::Time::kAdaptiveTimeMicroseconds) return true;
  return t.precision < 0 || t.precision > 3;
}

bool timestamp_is_micro(const ColumnType& t) { return t.precision < 0 || t.precision > 3; }

/// Writes `bytes` as a quoted standard base64 string.
void json_base64(ByteBuffer& out, std::string_view bytes) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out.need((bytes.size() + 2) / 3 * 4 + 2);
  char* p = out.cur();
  *p++ = '"';
  std::size_t i = 0;
  const auto at = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[k]));
  };
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    *p++ = kTable[(v >> 18) & 63];
    *p++ = kTable[(v >> 12) & 63];
    *p++ = kTable[(v >> 6) & 63];
    *p++ = kTable[v & 63];
  }
  if (i < bytes.size()) {
    std::uint32_t v = at(i) << 16;
    if (i + 1 < bytes.size()) v |= at(i + 1) << 8;
    *p++ = kTable[(v >> 18) & 63];
    *p++ = kTable[(v >> 12) & 63];
    *p++ = i + 1 < bytes.size() ? kTable[(v >> 6) & 63] : '=';
    *p++ = '=';
  }
  *p++ = '"';
  out.cur() = p;
}

/// The precise encoding of a decimal whose unscaled value fits 18 digits, without allocating:
/// false (nothing written) for anything else, which the general path then handles.
bool write_small_decimal(ByteBuffer& out, const ColumnType& t, Kind kind, std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  std::int64_t v = 0;
  int digits = 0;
  int scale = 0;
  bool point = false;
  for (char c : s) {
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9' || ++digits > 18) return false;
    v = v * 10 + (c - '0');
    if (point) ++scale;
  }
  if (digits == 0 || (point && scale == 0)) return false;
  if (kind == Kind::kVariableDecimal) {
    json_lit(out, "{\"scale\":");
    json_sint(out, scale);
    json_lit(out, ",\"value\":");
  } else {
    const int want = kind == Kind::kMoney ? 2 : std::max(t.scale, 0);
    if (scale > want || digits + (want - scale) > 18) return false;
    for (; scale < want; ++scale) v *= 10;
  }
  if (negative) v = -v;
  // Big-endian two's complement, without the bytes that only repeat the sign.
  char bytes[8];
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<char>(static_cast<std::uint64_t>(v) >> (8 * (7 - i)) & 0xff);
  }
  int first = 0;
  while (first < 7) {
    const auto b = static_cast<std::uint8_t>(bytes[first]);
    const auto next = static_cast<std::uint8_t>(bytes[first + 1]);
    if ((b == 0 && !(next & 0x80)) || (b == 0xff && (next & 0x80))) {
      ++first;
    } else {
      break;
    }
  }
  json_base64(out, std::string_view(bytes + first, static_cast<std::size_t>(8 - first)));
  if (kind == Kind::kVariableDecimal) out.ch('}');
  return true;
}

/// Writes one scalar value (not an array).
Status write_scalar(ByteBuffer& out, const ColumnType& t, const TypedOptions& o,
                    std::string_view text, Kind kind) {
  switch (kind) {
    case Kind::kString:
      json_str(out, text);
      return ok();
    case Kind::kInt16:
    case Kind::kInt32:
    case Kind::kInt64:
    case Kind::kYear: {
      const auto v = parse_int(text);
      if (!v) {
        // BIGINT UNSIGNED above 2^63 - 1: Debezium's bigint.unsigned.handling.mode = long
        // writes the same 64 bits as a signed number.
        const auto u = parse_uint(text);
        if (!u || kind != Kind::kInt64) return bad("'" + std::string(text) + "' is not an integer");
        json_sint(out, static_cast<std::int64_t>(*u));
        return ok();
      }
      json_sint(out, *v);
      return ok();
    }
    case Kind::kFloat32:
    case Kind::kFloat64: {
      const auto v = parse_double(text);
      if (!v) return bad("'" + std::string(text) + "' is not a floating-point number");
      if (kind == Kind::kFloat32) {
        write_float(out, static_cast<float>(*v));
      } else {
        write_double(out, *v);
      }
      return ok();
    }
    case Kind::kBoolean:
      if (text == "t" || text == "true" || text == "1") {
        json_lit(out, "true");
      } else if (text == "f" || text == "false" || text == "0") {
        json_lit(out, "false");
      } else {
        return bad("'" + std::string(text) + "' is not a boolean");
      }
      return ok();
    case Kind::kBit1: {
      bool v = false;
      if (text == "1" || text == "0") {
        v = text == "1";
      } else if (auto b = unhex_bytea(text); b && !b->empty()) {
        v = ((*b)[b->size() - 1] & 1) != 0;
      } else {
        return bad("'" + std::string(text) + "' is not a bit");
      }
      out.raw(v ? "true" : "false");
      return ok();
    }
    case Kind::kDecimal:
    case Kind::kVariableDecimal:
    case Kind::kMoney: {
      std::string cleaned;
      std::string_view number = text;
      if (kind == Kind::kMoney) {  // "-$1,234.56": drop the symbol and the separators
        for (char c : text) {
          if (c != '$' && c != ',') cleaned.push_back(c);
        }
        number = cleaned;
      }
      if (number == "NaN" || number == "Infinity" || number == "-Infinity") {
        if (o.decimal == TypedOptions::Decimal::kPrecise) {
          json_lit(out, "null");  // as Debezium: the precise encodings cannot hold them
        } else if (o.decimal == TypedOptions::Decimal::kString) {
          json_str(out, number == "NaN" ? std::string_view("NAN") : number);
        } else {
          json_str(out, number);
        }
        return ok();
      }
      if (o.decimal == TypedOptions::Decimal::kPrecise &&
          write_small_decimal(out, t, kind, number)) {
        return ok();
      }
      auto d = parse_decimal(number);
      if (!d) return bad("'" + std::string(text) + "' is not a decimal number");
      if (o.decimal == TypedOptions::Decimal::kString) {
        json_str(out, number);
        return ok();
      }
      if (o.decimal == TypedOptions::Decimal::kDouble) {
        write_double(out, *parse_double(number));
        return ok();
      }
      if (kind == Kind::kVariableDecimal) {
        json_lit(out, "{\"scale\":");
        json_sint(out, d->scale);
        json_lit(out, ",\"value\":");
        json_base64(out, unscaled_bytes(d->digits, d->negative));
        out.ch('}');
        return ok();
      }
      const int scale = kind == Kind::kMoney ? 2 : std::max(t.scale, 0);
      if (d->scale > scale) {
        return bad("'" + std::string(text) + "' has more than " + std::to_string(scale) +
                   " decimals");
      }
      d->digits.append(static_cast<std::size_t>(scale - d->scale), '0');
      json_base64(out, unscaled_bytes(d->digits, d->negative));
      return ok();
    }
    case Kind::kDate: {
      std::int64_t days = 0;
      if (text == "infinity") {
        days = kDatePlusInfinity;
      } else if (text == "-infinity") {
        days = kDateMinusInfinity;
      } else if (!t.postgres && text == "0000-00-00") {
        days = 0;  // MySQL's zero date (a nullable column's is written as null by the caller)
      } else {
        std::string_view s = text;
        const bool bc = strip_bc(s);
        const auto v = parse_date(s, bc);
        if (!v) return bad("'" + std::string(text) + "' is not a date");
        days = *v;
      }
      json_sint(out, days);
      return ok();
    }
    case Kind::kTime: {
      std::string_view s = text;
      bool negative = false;
      if (!t.postgres && !s.empty() && s.front() == '-') {
        negative = true;
        s.remove_prefix(1);
      }
      auto micros = parse_clock(s);
      if (!micros) return bad("'" + std::string(text) + "' is not a time");
      const std::int64_t v = negative ? -*micros : *micros;
      if (o.time != TypedOptions::Time::kConnect && time_is_micro(t, o)) {
        json_sint(out, v);
      } else {
        json_sint(out, floor_div(v, 1000));
      }
      return ok();
    }
    case Kind::kTimestamp: {
      const bool micro = o.time != TypedOptions::Time::kConnect && timestamp_is_micro(t);
      if (text == "infinity" || text == "-infinity") {
        const std::int64_t ms = text == "infinity" ? kMillisPlusInfinity : kMillisMinusInfinity;
        json_sint(out, micro ? ms * 1000 : ms);
        return ok();
      }
      std::optional<std::int64_t> v;
      if (!t.postgres && text.substr(0, 10) == "0000-00-00") {
        v = 0;
      } else {
        v = parse_timestamp(text, false);
      }
      if (!v) return bad("'" + std::string(text) + "' is not a timestamp");
      json_sint(out, micro ? *v : floor_div(*v, 1000));
      return ok();
    }
    case Kind::kZonedTimestamp: {
      if (text == "infinity" || text == "-infinity") {
        json_str(out, text);
        return ok();
      }
      std::optional<std::int64_t> v;
      if (!t.postgres && text.substr(0, 10) == "0000-00-00") {
        v = 0;
      } else {
        v = parse_timestamp(text, t.postgres);
      }
      if (!v) return bad("'" + std::string(text) + "' is not a timestamp");
      // PostgreSQL: as many fraction digits as the column's precision (6 by default);
      // MySQL: as few as the value needs.
      const int digits = t.postgres ? (t.precision < 0 ? 6 : t.precision) : -1;
      json_str(out, iso_timestamp(*v, digits));
      return ok();
    }
    case Kind::kZonedTime: {
      const auto sign = text.find_first_of("+-");
      if (sign == std::string_view::npos) return bad("'" + std::string(text) + "' is not a timetz");
      const auto clock = parse_clock(text.substr(0, sign));
      const auto offset = parse_offset(text.substr(sign));
      if (!clock || !offset) return bad("'" + std::string(text) + "' is not a timetz");
      std::int64_t utc = *clock - *offset * kMicrosPerSecond;
      utc = ((utc % kMicrosPerDay) + kMicrosPerDay) % kMicrosPerDay;
      std::string s;
      append_clock(s, utc, -1);
      s.push_back('Z');
      json_str(out, s);
      return ok();
    }
    case Kind::kInterval: {
      // IntervalStyle postgres: "1 year 2 mons -3 days +04:05:06.789", any part left out.
      std::int64_t months = 0;
      std::int64_t days = 0;
      std::int64_t micros = 0;
      std::string_view s = text;
      while (!s.empty()) {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        if (s.empty()) break;
        auto space = s.find(' ');
        const auto token = s.substr(0, space);
        s = space == std::string_view::npos ? std::string_view() : s.substr(space + 1);
        if (token.find(':') != std::string_view::npos) {
          std::string_view c = token;
          bool negative = false;
          if (c.front() == '-' || c.front() == '+') {
            negative = c.front() == '-';
            c.remove_prefix(1);
          }
          const auto v = parse_clock(c);
          if (!v) return bad("'" + std::string(text) + "' is not an interval");
          micros += negative ? -*v : *v;
          continue;
        }
        const auto n = parse_int(token);
        space = s.find(' ');
        const auto unit = s.substr(0, space);
        s = space == std::string_view::npos ? std::string_view() : s.substr(space + 1);
        if (!n) return bad("'" + std::string(text) + "' is not an interval");
        if (unit == "year" || unit == "years") {
          months += *n * 12;
        } else if (unit == "mon" || unit == "mons") {
          months += *n;
        } else if (unit == "day" || unit == "days") {
          days += *n;
        } else {
          return bad("'" + std::string(text) + "' is not an interval");
        }
      }
      // As Debezium computes it in floating point and casts to long: saturated.
      const __int128 total = static_cast<__int128>(months) * kMicrosPerMonth +
                             static_cast<__int128>(days) * kMicrosPerDay + micros;
      const __int128 lo = std::numeric_limits<std::int64_t>::min();
      const __int128 hi = std::numeric_limits<std::int64_t>::max();
      json_sint(out, static_cast<std::int64_t>(std::clamp(total, lo, hi)));
      return ok();
    }
    case Kind::kBinary: {
      const auto bytes = unhex_bytea(text);
      if (!bytes) return bad("'" + std::string(text) + "' is not \\x-prefixed hex");
      write_bytes_as(out, o, *bytes);
      return ok();
    }
    case Kind::kBits: {
      std::optional<std::string> bytes;
      if (t.postgres) {
        bytes = bits_bytes(text);
      } else if ((bytes = unhex_bytea(text))) {
        std::reverse(bytes->begin(), bytes->end());  // MySQL's bytes are big-endian
        const std::size_t want = t.length > 0 ? (static_cast<std::size_t>(t.length) + 7) / 8 : 0;
        if (want > 0) bytes->resize(want, '\0');
      }
      if (!bytes) return bad("'" + std::string(text) + "' is not a bit string");
      json_str(out, base64(*bytes));
      return ok();
    }
    case Kind::kArray:
      break;
  }
  return bad("unsupported kind");
}

/// The elements of a one-dimensional PostgreSQL array text ("{a,\"b c\",NULL}").
std::optional<std::vector<std::optional<std::string>>> array_elements(std::string_view s) {
  std::vector<std::optional<std::string>> out;
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  if (s.empty()) return out;
  std::size_t i = 0;
  while (true) {
    if (i < s.size() && s[i] == '"') {
      std::string e;
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        e.push_back(s[i++]);
      }
      if (i >= s.size()) return std::nullopt;
      ++i;
      out.emplace_back(std::move(e));
    } else {
      const auto end = s.find(',', i);
      const auto e = s.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
      if (e.empty() || e.find_first_of("{}\"") != std::string_view::npos) return std::nullopt;
      if (e == "NULL") {
        out.emplace_back();
      } else {
        out.emplace_back(std::string(e));
      }
      i = end == std::string_view::npos ? s.size() : end;
    }
    if (i == s.size()) break;
    if (s[i] != ',') return std::nullopt;
    ++i;
  }
  return out;
}

const char* connect_type(Kind k) {
  switch (k) {
    case Kind::kInt16:
      return "int16";
    case Kind::kInt32:
    case Kind::kYear:
      return "int32";
    case Kind::kInt64:
      return "int64";
    case Kind::kFloat32:
      return "float";
    case Kind::kFloat64:
      return "double";
    case Kind::kBoolean:
    case Kind::kBit1:
      return "boolean";
    default:
      return "string";
  }
}

void schema_head(ByteBuffer& out, const char* type, bool optional) {
  json_lit(out, "{\"type\":\"");
  out.raw(type);
  json_lit(out, "\",\"optional\":");
  out.raw(optional ? "true" : "false");
}

void schema_name(ByteBuffer& out, std::string_view name) {
  json_lit(out, ",\"name\":");
  json_str(out, name);
  json_lit(out, ",\"version\":1");
}

void schema_tail(ByteBuffer& out, std::string_view field) {
  json_lit(out, ",\"field\":");
  json_str(out, field);
  out.ch('}');
}

// ---- reading back ----------------------------------------------------------------------------

std::string pg_float_text(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[48];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v),
                                  std::chars_format::scientific)
                  : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const auto e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const bool negative = sci[0] == '-';
  std::string digits;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  // PostgreSQL's float4out/float8out: the shortest digits, in exponent form when the exponent
  // is below -4 or at least the type's precision (FLT_DIG 6, DBL_DIG 15).
  if (exponent < -4 || exponent >= (single ? 6 : 15)) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return (negative ? "-" : "") + m + ex;
  }
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else if (static_cast<int>(digits.size()) <= exponent + 1) {
    out = digits + std::string(static_cast<std::size_t>(exponent + 1) - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
          digits.substr(static_cast<std::size_t>(exponent + 1));
  }
  return (negative ? "-" : "") + out;
}

std::string plain_float_text(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[48];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                  : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::optional<std::int64_t> int_of(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) return static_cast<std::int64_t>(v.as_uint64());
  return std::nullopt;
}

std::optional<double> double_of(const json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  if (v.is_string()) {
    const auto& s = v.as_string();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return HUGE_VAL;
    if (s == "-Infinity") return -HUGE_VAL;
  }
  return std::nullopt;
}

std::string date_text(std::int64_t days, bool postgres) {
  if (postgres && days == kDatePlusInfinity) return "infinity";
  if (postgres && days == kDateMinusInfinity) return "-infinity";
  const Civil c = civil_from_days(days);
  const bool bc = postgres && c.y <= 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u%s", static_cast<long long>(bc ? 1 - c.y : c.y),
                c.m, c.d, bc ? " BC" : "");
  return buf;
}

/// PostgreSQL's (or MySQL's) text of epoch microseconds; `zone` adds PostgreSQL's "+00".
std::string timestamp_text(std::int64_t micros, bool postgres, bool zone) {
  const std::int64_t days = floor_div(micros, kMicrosPerDay);
  const Civil c = civil_from_days(days);
  const bool bc = postgres && c.y <= 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u ", static_cast<long long>(bc ? 1 - c.y : c.y),
                c.m, c.d);
  std::string out = buf;
  append_clock(out, micros - days * kMicrosPerDay, -1);
  if (zone) out += "+00";
  if (bc) out += " BC";
  return out;
}

/// Epoch microseconds of an ISO-8601 "[+-]YYYY-MM-DDTHH:MM:SS[.f]Z".
std::optional<std::int64_t> parse_iso(std::string_view s) {
  if (s.empty() || s.back() != 'Z') return std::nullopt;
  s.remove_suffix(1);
  bool negative_year = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative_year = s.front() == '-';
    s.remove_prefix(1);
  }
  const auto t = s.find('T');
  if (t == std::string_view::npos) return std::nullopt;
  const auto date = s.substr(0, t);
  const auto dash = date.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto y = parse_uint(date.substr(0, dash));
  if (!y || *y > kMaxYear) return std::nullopt;
  // Through parse_date with a positive year, then moved to the right one.
  const auto d = parse_date("2000" + std::string(date.substr(dash)), false);
  const auto clock = parse_clock(s.substr(t + 1));
  if (!d || !clock) return std::nullopt;
  const Civil c = civil_from_days(*d);
  const std::int64_t year =
      negative_year ? -static_cast<std::int64_t>(*y) : static_cast<std::int64_t>(*y);
  std::int64_t at = 0;
  if (__builtin_mul_overflow(days_from_civil(year, c.m, c.d), kMicrosPerDay, &at) ||
      __builtin_add_overflow(at, *clock, &at)) {
    return std::nullopt;
  }
  return at;
}

std::string interval_text(std::int64_t micros) {
  // Months cannot be told from days any more: days and a clock.
  const bool negative = micros < 0;
  const std::uint64_t m =
      negative ? 0 - static_cast<std::uint64_t>(micros) : static_cast<std::uint64_t>(micros);
  const std::uint64_t days = m / static_cast<std::uint64_t>(kMicrosPerDay);
  const auto rest = static_cast<std::int64_t>(m % static_cast<std::uint64_t>(kMicrosPerDay));
  std::string out;
  if (days != 0) {
    out += (negative ? "-" : "") + std::to_string(days) + (days == 1 ? " day" : " days");
  }
  if (rest != 0 || days == 0) {
    if (!out.empty()) out.push_back(' ');
    if (negative && rest != 0) out.push_back('-');
    append_clock(out, rest, -1);
  }
  return out;
}

std::string pg_array_element(std::string_view e) {
  const bool plain =
      !e.empty() && e != "NULL" && e.find_first_of("{},\"\\ \t\n") == std::string_view::npos;
  if (plain) return std::string(e);
  std::string out = "\"";
  for (char c : e) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

const json::string* string_field(const json::object* o, const char* key) {
  if (o == nullptr) return nullptr;
  const auto* v = o->if_contains(key);
  return v != nullptr && v->is_string() ? &v->as_string() : nullptr;
}

std::optional<int> int_parameter(const json::object* schema, const char* key) {
  if (schema == nullptr) return std::nullopt;
  const auto* p = schema->if_contains("parameters");
  if (p == nullptr || !p->is_object()) return std::nullopt;
  const auto* v = string_field(&p->as_object(), key);
  if (v == nullptr) return std::nullopt;
  const auto n = parse_int(std::string_view(v->data(), v->size()));
  return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
}

Result<std::string> scalar_text(const json::value& v, const json::object* schema, bool postgres,
                                bool& is_json);

// PostgreSQL's numeric keeps at most 16383 digits after the point.
constexpr int kMaxScale = 16383;

Error unreadable(const json::value& v, std::string_view what) {
  return Error::invalid_data("the value " + json::serialize(v) + " is not " + std::string(what));
}

Result<std::string> scalar_text(const json::value& v, const json::object* schema, bool postgres,
                                bool& is_json) {
  const json::string* type = string_field(schema, "type");
  const json::string* name = string_field(schema, "name");
  const std::string_view t = type ? std::string_view(type->data(), type->size()) : "";
  const std::string_view n = name ? std::string_view(name->data(), name->size()) : "";
  if (schema == nullptr) {
    // No schema: the value's own JSON decides.
    if (v.is_string()) return std::string(v.as_string());
    if (v.is_bool())
      return std::string(v.as_bool() ? (postgres ? "t" : "1") : (postgres ? "f" : "0"));
    if (v.is_int64() || v.is_uint64()) return json::serialize(v);
    if (v.is_double()) return (postgres ? pg_float_text : plain_float_text)(v.as_double(), false);
    is_json = true;
    return json::serialize(v);
  }
  if (n == "io.debezium.data.Json") {
    if (!v.is_string()) return fail(unreadable(v, "a JSON text"));
    is_json = true;
    return std::string(v.as_string());
  }
  if (n == "org.apache.kafka.connect.data.Decimal") {
    if (!v.is_string()) return fail(unreadable(v, "base64 bytes"));
    const auto bytes = unbase64(v.as_string());
    if (!bytes) return fail(unreadable(v, "base64 bytes"));
    const int scale = int_parameter(schema, "scale").value_or(0);
    if (scale < -kMaxScale || scale > kMaxScale) return fail(unreadable(v, "a decimal's scale"));
    const auto [negative, digits] = digits_of(*bytes);
    return with_scale(negative, digits, scale);
  }
  if (n == "io.debezium.data.VariableScaleDecimal") {
    if (!v.is_object()) return fail(unreadable(v, "a {scale, value} struct"));
    const auto* scale = v.as_object().if_contains("scale");
    const auto* value = v.as_object().if_contains("value");
    const auto s = scale ? int_of(*scale) : std::nullopt;
    const auto bytes = value && value->is_string() ? unbase64(value->as_string()) : std::nullopt;
    if (!s || !bytes || *s < -kMaxScale || *s > kMaxScale)
      return fail(unreadable(v, "a {scale, value} struct"));
    const auto [negative, digits] = digits_of(*bytes);
    return with_scale(negative, digits, static_cast<int>(*s));
  }
  if (n == "io.debezium.time.Date" || n == "org.apache.kafka.connect.data.Date") {
    const auto days = int_of(v);
    if (!days || *days < -kMaxDays || *days > kMaxDays) return fail(unreadable(v, "a day number"));
    return date_text(*days, postgres);
  }
  if (n == "io.debezium.time.Time" || n == "io.debezium.time.MicroTime" ||
      n == "io.debezium.time.NanoTime" || n == "org.apache.kafka.connect.data.Time") {
    const auto x = int_of(v);
    if (!x) return fail(unreadable(v, "a time"));
    std::int64_t micros = *x;
    if ((n == "io.debezium.time.Time" || n == "org.apache.kafka.connect.data.Time") &&
        __builtin_mul_overflow(*x, 1000, &micros)) {
      return fail(unreadable(v, "a time"));
    }
    if (n == "io.debezium.time.NanoTime") micros /= 1000;
    if (micros == std::numeric_limits<std::int64_t>::min()) return fail(unreadable(v, "a time"));
    std::string out;
    if (micros < 0) {
      out.push_back('-');
      micros = -micros;
    }
    append_clock(out, micros, -1);
    return out;
  }
  if (n == "io.debezium.time.Timestamp" || n == "io.debezium.time.MicroTimestamp" ||
      n == "io.debezium.time.NanoTimestamp" || n == "org.apache.kafka.connect.data.Timestamp") {
    const auto x = int_of(v);
    if (!x) return fail(unreadable(v, "a timestamp"));
    const bool millis =
        n == "io.debezium.time.Timestamp" || n == "org.apache.kafka.connect.data.Timestamp";
    if (postgres && millis && (*x == kMillisPlusInfinity || *x == kMillisMinusInfinity)) {
      return std::string(*x > 0 ? "infinity" : "-infinity");
    }
    if (postgres && n == "io.debezium.time.MicroTimestamp" &&
        (*x == kMillisPlusInfinity * 1000 || *x == kMillisMinusInfinity * 1000)) {
      return std::string(*x > 0 ? "infinity" : "-infinity");
    }
    std::int64_t micros = *x;
    if (millis && __builtin_mul_overflow(*x, 1000, &micros)) {
      return fail(unreadable(v, "a timestamp"));
    }
    if (n == "io.debezium.time.NanoTimestamp") micros = floor_div(micros, 1000);
    return timestamp_text(micros, postgres, false);
  }
  if (n == "io.debezium.time.ZonedTimestamp") {
    if (!v.is_string()) return fail(unreadable(v, "an ISO-8601 timestamp"));
    const std::string_view s(v.as_string().data(), v.as_string().size());
    if (s == "infinity" || s == "-infinity") return std::string(s);
    const auto micros = parse_iso(s);
    if (!micros) return fail(unreadable(v, "an ISO-8601 timestamp"));
    return timestamp_text(*micros, postgres, postgres);
  }
  if (n == "io.debezium.time.ZonedTime") {
    if (!v.is_string() || v.as_string().empty() || v.as_string().back() != 'Z')
      return fail(unreadable(v, "an ISO-8601 time"));
    const std::string_view s(v.as_string().data(), v.as_string().size() - 1);
    const auto micros = parse_clock(s);
    if (!micros) return fail(unreadable(v, "an ISO-8601 time"));
    std::string out;
    append_clock(out, *micros, -1);
    out += "+00";
    return out;
  }
  if (n == "io.debezium.time.MicroDuration") {
    const auto x = int_of(v);
    if (!x) return fail(unreadable(v, "a duration"));
    return interval_text(*x);
  }
  if (n == "io.debezium.data.Bits") {
    if (!v.is_string()) return fail(unreadable(v, "base64 bytes"));
    auto bytes = unbase64(v.as_string());
    if (!bytes) return fail(unreadable(v, "base64 bytes"));
    int length = int_parameter(schema, "length").value_or(static_cast<int>(bytes->size() * 8));
    if (length < 0 || length > (1 << 24)) length = 2147483647;  // not a bit(n): the bytes' bits
    if (!postgres) {
      std::reverse(bytes->begin(), bytes->end());
      return "\\x" + hex(*bytes);
    }
    // bit(n): n bits; a varbit without a length: as many as the bytes hold.
    const auto bits = static_cast<std::size_t>(
        length < 2147483647 ? length : static_cast<std::int64_t>(bytes->size()) * 8);
    std::string out(bits, '0');
    for (std::size_t i = 0; i < bits && i / 8 < bytes->size(); ++i) {
      if (((*bytes)[i / 8] >> (i % 8)) & 1) out[bits - 1 - i] = '1';
    }
    return out;
  }
  if (t == "boolean") {
    if (!v.is_bool()) return fail(unreadable(v, "a boolean"));
    if (postgres) return std::string(v.as_bool() ? "t" : "f");
    return std::string(v.as_bool() ? "\\x01" : "\\x00");
  }
  if (t == "int8" || t == "int16" || t == "int32" || t == "int64") {
    const auto x = int_of(v);
    if (!x) return fail(unreadable(v, "an integer"));
    return std::to_string(*x);
  }
  if (t == "float" || t == "double") {
    const auto x = double_of(v);
    if (!x) return fail(unreadable(v, "a number"));
    return (postgres ? pg_float_text : plain_float_text)(*x, t == "float");
  }
  if (t == "bytes") {
    if (!v.is_string()) return fail(unreadable(v, "base64 bytes"));
    const auto bytes = unbase64(v.as_string());
    if (!bytes) return fail(unreadable(v, "base64 bytes"));
    return "\\x" + hex(*bytes);
  }
  if (v.is_string()) return std::string(v.as_string());
  is_json = true;
  return json::serialize(v);
}

}  // namespace

// ---- public ----------------------------------------------------------------------------------

std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = floor_div(y, 400);
  const auto yoe = static_cast<std::uint64_t>(y - era * 400);
  const std::uint64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const std::uint64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::string base64(std::string_view bytes, bool url_safe) {
  const char* table = url_safe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (static_cast<std::uint8_t>(bytes[i]) << 16) |
                            (static_cast<std::uint8_t>(bytes[i + 1]) << 8) |
                            static_cast<std::uint8_t>(bytes[i + 2]);
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(table[(v >> 6) & 63]);
    out.push_back(table[v & 63]);
  }
  if (i < bytes.size()) {
    std::uint32_t v = static_cast<std::uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<std::uint8_t>(bytes[i + 1]) << 8;
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> unbase64(std::string_view text) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = val(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

TypedOptions typed_options(const DebeziumJsonOptions& options, bool postgres) {
  TypedOptions o;
  if (options.decimal_handling_mode == "double") o.decimal = TypedOptions::Decimal::kDouble;
  if (options.decimal_handling_mode == "string") o.decimal = TypedOptions::Decimal::kString;
  const std::string& time = options.time_precision_mode;
  if (time == "connect") {
    o.time = TypedOptions::Time::kConnect;
  } else if (time == "adaptive_time_microseconds" || (time.empty() && !postgres)) {
    o.time = TypedOptions::Time::kAdaptiveTimeMicroseconds;
  }
  if (options.binary_handling_mode == "base64") o.binary = TypedOptions::Binary::kBase64;
  if (options.binary_handling_mode == "base64-url-safe")
    o.binary = TypedOptions::Binary::kBase64UrlSafe;
  if (options.binary_handling_mode == "hex") o.binary = TypedOptions::Binary::kHex;
  return o;
}

namespace {

ColumnType postgres_type(const ColumnShape& c) {
  ColumnType t;
  t.postgres = true;
  const std::int32_t mod = c.type_modifier;
  auto scalar = [&](std::uint32_t oid, ColumnType& into) {
    switch (oid) {
      case 16:
        into.kind = Kind::kBoolean;
        return true;
      case 17:
        into.kind = Kind::kBinary;
        return true;
      case 20:
      case 26:  // oid
        into.kind = Kind::kInt64;
        return true;
      case 21:
        into.kind = Kind::kInt16;
        return true;
      case 23:
        into.kind = Kind::kInt32;
        return true;
      case 700:
        into.kind = Kind::kFloat32;
        return true;
      case 701:
        into.kind = Kind::kFloat64;
        return true;
      case 18:    // "char"
      case 25:    // text
      case 1042:  // bpchar
      case 1043:  // varchar
        into.kind = Kind::kString;
        return true;
      default:
        return false;
    }
  };
  if (scalar(c.type_oid, t)) return t;
  switch (c.type_oid) {
    case 114:
    case 3802:
      t.semantic = "io.debezium.data.Json";
      break;
    case 142:
      t.semantic = "io.debezium.data.Xml";
      break;
    case 2950:
      t.semantic = "io.debezium.data.Uuid";
      break;
    case 790:
      t.kind = Kind::kMoney;
      break;
    case 1700:
      if (mod >= 4) {
        t.kind = Kind::kDecimal;
        t.precision = ((mod - 4) >> 16) & 0xffff;
        t.scale = (mod - 4) & 0xffff;
      } else {
        t.kind = Kind::kVariableDecimal;
      }
      break;
    case 1082:
      t.kind = Kind::kDate;
      break;
    case 1083:
      t.kind = Kind::kTime;
      t.precision = mod;
      break;
    case 1114:
      t.kind = Kind::kTimestamp;
      t.precision = mod;
      break;
    case 1184:
      t.kind = Kind::kZonedTimestamp;
      t.precision = mod;
      break;
    case 1266:
      t.kind = Kind::kZonedTime;
      t.precision = mod;
      break;
    case 1186:
      t.kind = Kind::kInterval;
      break;
    case 1560:  // bit(n)
      t.kind = mod == 1 ? Kind::kBit1 : Kind::kBits;
      t.length = mod;
      break;
    case 1562:  // varbit(n)
      t.kind = Kind::kBits;
      t.length = mod > 0 ? mod : 2147483647;
      break;
    case 1000:
    case 1005:
    case 1007:
    case 1016:
    case 1021:
    case 1022:
    case 1009:
    case 1015:
    case 1014: {
      static constexpr std::pair<std::uint32_t, std::uint32_t> kElements[] = {
          {1000, 16},  {1005, 21}, {1007, 23},   {1016, 20},  {1021, 700},
          {1022, 701}, {1009, 25}, {1015, 1043}, {1014, 1042}};
      for (const auto& [array, element] : kElements) {
        if (array != c.type_oid) continue;
        ColumnType e;
        scalar(element, e);
        t.kind = Kind::kArray;
        t.element = e.kind;
      }
      break;
    }
    default:
      break;  // inet, cidr, macaddr, ranges, enums, domains, ...: their text
  }
  return t;
}

/// "decimal(12,4)" -> 12, 4; "enum('a','b')" -> the labels.
std::vector<std::string> type_arguments(std::string_view type) {
  std::vector<std::string> out;
  const auto open = type.find('(');
  const auto close = type.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  const auto args = type.substr(open + 1, close - open - 1);
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const char ch = args[i];
    if (quoted) {
      if (ch == '\'' && i + 1 < args.size() && args[i + 1] == '\'') {
        cur.push_back('\'');
        ++i;
      } else if (ch == '\'') {
        quoted = false;
      } else {
        cur.push_back(ch);
      }
    } else if (ch == '\'') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  out.push_back(cur);
  return out;
}

ColumnType mysql_type(const ColumnShape& c) {
  ColumnType t;
  t.postgres = false;
  if (c.is_json) {
    t.semantic = "io.debezium.data.Json";
    return t;
  }
  if (!c.data_type) return t;
  std::string type = *c.data_type;
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  const auto base_end = type.find_first_of(" (");
  const std::string base = type.substr(0, base_end);
  const bool is_unsigned = type.find(" unsigned") != std::string::npos;
  const auto args = type_arguments(type);
  const auto arg = [&](std::size_t i) {
    return i < args.size() ? static_cast<int>(parse_uint(args[i]).value_or(0)) : -1;
  };
  if (base == "tinyint") {
    t.kind = Kind::kInt16;
  } else if (base == "smallint") {
    t.kind = is_unsigned ? Kind::kInt32 : Kind::kInt16;
  } else if (base == "mediumint") {
    t.kind = Kind::kInt32;
  } else if (base == "int" || base == "integer") {
    t.kind = is_unsigned ? Kind::kInt64 : Kind::kInt32;
  } else if (base == "bigint") {
    t.kind = Kind::kInt64;
  } else if (base == "float") {
    t.kind = args.size() == 2 ? Kind::kFloat64 : Kind::kFloat32;
  } else if (base == "double" || base == "real") {
    t.kind = Kind::kFloat64;
  } else if (base == "decimal" || base == "numeric" || base == "dec" || base == "fixed") {
    t.kind = Kind::kDecimal;
    t.precision = args.empty() ? 10 : arg(0);
    t.scale = args.size() > 1 ? arg(1) : 0;
  } else if (base == "bit") {
    const int n = args.empty() ? 1 : arg(0);
    t.kind = n == 1 ? Kind::kBit1 : Kind::kBits;
    t.length = n;
  } else if (base == "date") {
    t.kind = Kind::kDate;
  } else if (base == "time") {
    t.kind = Kind::kTime;
    t.precision = args.empty() ? 0 : arg(0);
  } else if (base == "datetime") {
    t.kind = Kind::kTimestamp;
    t.precision = args.empty() ? 0 : arg(0);
  } else if (base == "timestamp") {
    t.kind = Kind::kZonedTimestamp;
    t.precision = args.empty() ? 0 : arg(0);
  } else if (base == "year") {
    t.kind = Kind::kYear;
  } else if (base == "binary" || base == "varbinary" || base == "tinyblob" || base == "blob" ||
             base == "mediumblob" || base == "longblob") {
    t.kind = Kind::kBinary;
  } else if (base == "enum" || base == "set") {
    t.semantic = base == "enum" ? "io.debezium.data.Enum" : "io.debezium.data.EnumSet";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i) t.allowed.push_back(',');
      t.allowed += args[i];
    }
  } else if (base == "json") {
    t.semantic = "io.debezium.data.Json";
  }
  return t;
}

}  // namespace

ColumnType column_type(const ColumnShape& column, bool postgres) {
  if (postgres) {
    if (column.type_oid == 0) {
      ColumnType t;
      if (column.is_json) t.semantic = "io.debezium.data.Json";
      return t;
    }
    return postgres_type(column);
  }
  return mysql_type(column);
}

Status write_value(ByteBuffer& out, const ColumnType& type, const TypedOptions& options,
                   std::string_view text) {
  if (type.kind != Kind::kArray) return write_scalar(out, type, options, text, type.kind);
  const auto elements = array_elements(text);
  if (!elements) return bad("'" + std::string(text) + "' is not a one-dimensional array");
  out.ch('[');
  bool first = true;
  for (const auto& e : *elements) {
    if (!first) out.ch(',');
    first = false;
    if (!e) {
      json_lit(out, "null");
      continue;
    }
    CPPCDC_TRY(write_scalar(out, type, options, *e, type.element));
  }
  out.ch(']');
  return ok();
}

void write_field_schema(ByteBuffer& out, const ColumnType& t, const TypedOptions& o, bool optional,
                        std::string_view field) {
  using D = TypedOptions::Decimal;
  using T = TypedOptions::Time;
  switch (t.kind) {
    case Kind::kString:
      schema_head(out, "string", optional);
      if (t.semantic != nullptr) {
        schema_name(out, t.semantic);
        if (!t.allowed.empty() || std::string_view(t.semantic) == "io.debezium.data.Enum" ||
            std::string_view(t.semantic) == "io.debezium.data.EnumSet") {
          json_lit(out, ",\"parameters\":{\"allowed\":");
          json_str(out, t.allowed);
          out.ch('}');
        }
      }
      break;
    case Kind::kInt16:
    case Kind::kInt32:
    case Kind::kInt64:
    case Kind::kFloat32:
    case Kind::kFloat64:
    case Kind::kBoolean:
    case Kind::kBit1:
      schema_head(out, connect_type(t.kind), optional);
      break;
    case Kind::kYear:
      schema_head(out, "int32", optional);
      schema_name(out, "io.debezium.time.Year");
      break;
    case Kind::kDecimal:
    case Kind::kMoney:
    case Kind::kVariableDecimal:
      if (o.decimal == D::kDouble) {
        schema_head(out, "double", optional);
      } else if (o.decimal == D::kString) {
        schema_head(out, "string", optional);
      } else if (t.kind == Kind::kVariableDecimal) {
        json_lit(out,
                 "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,"
                 "\"field\":\"scale\"},{\"type\":\"bytes\",\"optional\":false,\"field\":"
                 "\"value\"}],\"optional\":");
        out.raw(optional ? "true" : "false");
        json_lit(out,
                 ",\"name\":\"io.debezium.data.VariableScaleDecimal\",\"version\":1,"
                 "\"doc\":\"Variable scaled decimal\"");
      } else {
        schema_head(out, "bytes", optional);
        schema_name(out, "org.apache.kafka.connect.data.Decimal");
        json_lit(out, ",\"parameters\":{\"scale\":\"");
        json_sint(out, t.kind == Kind::kMoney ? 2 : std::max(t.scale, 0));
        out.ch('"');
        if (t.kind == Kind::kDecimal && t.precision > 0) {
          json_lit(out, ",\"connect.decimal.precision\":\"");
          json_sint(out, t.precision);
          out.ch('"');
        }
        out.ch('}');
      }
      break;
    case Kind::kDate:
      schema_head(out, "int32", optional);
      schema_name(out, o.time == T::kConnect ? "org.apache.kafka.connect.data.Date"
                                             : "io.debezium.time.Date");
      break;
    case Kind::kTime:
      if (o.time == T::kConnect) {
        schema_head(out, "int32", optional);
        schema_name(out, "org.apache.kafka.connect.data.Time");
      } else if (time_is_micro(t, o)) {
        schema_head(out, "int64", optional);
        schema_name(out, "io.debezium.time.MicroTime");
      } else {
        schema_head(out, "int32", optional);
        schema_name(out, "io.debezium.time.Time");
      }
      break;
    case Kind::kTimestamp:
      schema_head(out, "int64", optional);
      if (o.time == T::kConnect) {
        schema_name(out, "org.apache.kafka.connect.data.Timestamp");
      } else {
        schema_name(out, timestamp_is_micro(t) ? "io.debezium.time.MicroTimestamp"
                                               : "io.debezium.time.Timestamp");
      }
      break;
    case Kind::kZonedTimestamp:
      schema_head(out, "string", optional);
      schema_name(out, "io.debezium.time.ZonedTimestamp");
      break;
    case Kind::kZonedTime:
      schema_head(out, "string", optional);
      schema_name(out, "io.debezium.time.ZonedTime");
      break;
    case Kind::kInterval:
      schema_head(out, "int64", optional);
      schema_name(out, "io.debezium.time.MicroDuration");
      break;
    case Kind::kBinary:
      schema_head(out, binary_type(o), optional);
      break;
    case Kind::kBits:
      schema_head(out, "bytes", optional);
      schema_name(out, "io.debezium.data.Bits");
      json_lit(out, ",\"parameters\":{\"length\":\"");
      json_sint(out, t.length);
      json_lit(out, "\"}");
      break;
    case Kind::kArray:
      json_lit(out, "{\"type\":\"array\",\"items\":{\"type\":\"");
      out.raw(connect_type(t.element));
      json_lit(out, "\",\"optional\":true},\"optional\":");
      out.raw(optional ? "true" : "false");
      break;
  }
  schema_tail(out, field);
}

Result<std::string> text_of(const json::value& value, const json::object* schema, bool postgres,
                            bool& is_json) {
  is_json = false;
  const json::string* type = string_field(schema, "type");
  if (type != nullptr && *type == "array") {
    if (!value.is_array()) return fail(unreadable(value, "an array"));
    const auto* items = schema->if_contains("items");
    const json::object* item_schema = items && items->is_object() ? &items->as_object() : nullptr;
    std::string out = "{";
    bool first = true;
    for (const auto& e : value.as_array()) {
      if (!first) out.push_back(',');
      first = false;
      if (e.is_null()) {
        out += "NULL";
        continue;
      }
      bool element_json = false;
      auto text = scalar_text(e, item_schema, postgres, element_json);
      if (!text) return fail(std::move(text).error());
      out += pg_array_element(*text);
    }
    out.push_back('}');
    return out;
  }
  return scalar_text(value, schema, postgres, is_json);
}

}  // namespace cppcdc::debezium
