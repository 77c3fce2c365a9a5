// Row images of rows events (row_decoder.hpp): one value at a time, printed the way the
// server's text protocol prints it. Layouts follow the server's Field::pack formats
// (libbinlogevents' value decoding, MariaDB log_event.cc).

#include "source/mysql/row_decoder.hpp"

#include <arpa/inet.h>
#include <iconv.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "source/mysql/byte_reader.hpp"
#include "source/mysql/field_type.hpp"
#include "source/mysql/json_binary.hpp"

namespace cppcdc::mysql {
namespace {

using detail::ByteReader;
using detail::ColumnPlan;

enum Kind : std::uint8_t {
  kKindInt,
  kKindFloat,
  kKindDouble,
  kKindDecimal,
  kKindBit,
  kKindYear,
  kKindDate,
  kKindTimeOld,
  kKindTime2,
  kKindDateTimeOld,
  kKindDateTime2,
  kKindTimestampOld,
  kKindTimestamp2,
  kKindVarString,
  kKindFixedString,
  kKindBlob,
  kKindEnum,
  kKindSet,
  kKindJsonBinary,
  kKindGeometry,
  kKindInet6,
  kKindUuid,
  kKindNull,
  kKindUnsupported,
};

enum Charset : std::uint8_t { kUtf8, kBinary, kLatin1, kIconv };

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, const std::uint8_t* p, std::size_t n) {
  const std::size_t at = out.size();
  out.resize(at + 2 + 2 * n);
  char* d = out.data() + at;
  *d++ = '\\';
  *d++ = 'x';
  for (std::size_t i = 0; i < n; ++i) {
    *d++ = kHex[p[i] >> 4];
    *d++ = kHex[p[i] & 15];
  }
}

template <class T>
void append_int(std::string& out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

// Zero-padded decimal of exactly `width` digits (value < 10^width).
// "00" to "99", for the two-digit fields of dates and times.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Writes v % 100 as two digits.
inline char* put2(char* p, std::uint64_t v) {
  std::memcpy(p, kDigitPairs + 2 * (v % 100), 2);
  return p + 2;
}

// v's last `width` digits, zero-padded, two at a time.
char* put_padded(char* p, std::uint64_t v, int width) {
  char* end = p + width;
  char* q = end;
  for (; q - p >= 2; v /= 100) {
    q -= 2;
    std::memcpy(q, kDigitPairs + 2 * (v % 100), 2);
  }
  if (q > p) *p = static_cast<char>('0' + v % 10);
  return end;
}

// The fraction of `micros` (0 to 999,999) to `fsp` digits, after a '.': nothing for fsp 0.
char* write_frac(char* p, std::uint64_t micros, int fsp) {
  if (fsp <= 0) return p;
  static constexpr std::uint32_t kDiv[] = {1000000, 100000, 10000, 1000, 100, 10, 1};
  *p++ = '.';
  return put_padded(p, micros / kDiv[fsp], fsp);
}

// YYYY-MM-DD, each field zero-padded (the year to four digits).
char* write_date(char* p, std::uint64_t y, std::uint64_t m, std::uint64_t d) {
  p = put2(put2(p, y / 100), y);
  *p++ = '-';
  p = put2(p, m);
  *p++ = '-';
  return put2(p, d);
}

// HH:MM:SS with at least two digits of hours (TIME reaches 838).
char* write_hms(char* p, std::uint64_t h, std::uint64_t mi, std::uint64_t s) {
  if (h >= 100) {
    const std::uint64_t hundreds = h / 100;
    if (hundreds >= 10) *p++ = static_cast<char>('0' + hundreds / 10 % 10);
    *p++ = static_cast<char>('0' + hundreds % 10);
  }
  p = put2(p, h);
  *p++ = ':';
  p = put2(p, mi);
  *p++ = ':';
  return put2(p, s);
}

// Appends what `write(char*)` writes at the end of `out` (at most `most` characters; it returns
// the end of what it wrote), in place: a text composed in a stack buffer and then appended
// measured about 25 % slower end to end (bench/README.md, 2026-12-05 evening).
template <class Write>
void append_written(std::string& out, std::size_t most, Write&& write) {
  const std::size_t at = out.size();
  out.resize(at + most);
  char* const start = out.data() + at;
  char* const end = std::forward<Write>(write)(start);
  out.resize(at + static_cast<std::size_t>(end - start));
}

// Up to 4 digits of hours, then :MM:SS.
constexpr std::size_t kHmsMost = 10;
// A '.' and up to 6 digits.
constexpr std::size_t kFracMost = 7;

void append_date(std::string& out, std::uint64_t y, std::uint64_t m, std::uint64_t d) {
  append_written(out, 10, [&](char* p) { return write_date(p, y, m, d); });
}

void append_hms(std::string& out, std::uint64_t h, std::uint64_t mi, std::uint64_t s) {
  append_written(out, kHmsMost, [&](char* p) { return write_hms(p, h, mi, s); });
}

// "date time[.fraction]".
void append_date_time(std::string& out, std::uint64_t y, std::uint64_t m, std::uint64_t d,
                      std::uint64_t h, std::uint64_t mi, std::uint64_t s, std::uint64_t micros,
                      int fsp) {
  append_written(out, 10 + 1 + kHmsMost + kFracMost, [&](char* p) {
    p = write_date(p, y, m, d);
    *p++ = ' ';
    return write_frac(write_hms(p, h, mi, s), micros, fsp);
  });
}

// Days since 1970-01-01 to a civil date (proleptic Gregorian).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

void append_timestamp(std::string& out, std::uint64_t secs, std::uint64_t micros, int fsp) {
  if (secs == 0 && micros == 0) {
    out.append("0000-00-00 00:00:00");
    if (fsp > 0) {
      out += '.';
      out.append(static_cast<std::size_t>(fsp), '0');
    }
    return;
  }
  std::int64_t y;
  unsigned m, d;
  civil_from_days(static_cast<std::int64_t>(secs / 86400), y, m, d);
  const std::uint64_t sod = secs % 86400;
  append_date_time(out, static_cast<std::uint64_t>(y), m, d, sod / 3600, sod / 60 % 60, sod % 60,
                   micros, fsp);
}

// The server's my_gcvt() layout for a value given as significant digits and the decimal
// point position (digits "314", decpt 1 = 3.14) in a field of `width` characters: fixed
// notation when it fits and decpt is in -14..15 (or the digits run past the point), else
// d.ddde[-]N. (The server would re-round to fewer digits where even that does not fit; no
// width used here makes that happen for a double's 17 digits.)
void append_gcvt(std::string& out, bool negative, std::string_view digits, int decpt, int width) {
  if (digits.empty() || (digits.size() == 1 && digits[0] == '0')) {
    out += '0';
    return;
  }
  const int len = static_cast<int>(digits.size());
  const int w = width - (negative ? 1 : 0);
  const bool have_space = (decpt <= 0 ? len - decpt + 2 : decpt < len ? len + 1 : decpt) <= w;
  const int exp_len = 1 + (decpt >= 101 || decpt <= -99) + (decpt >= 11 || decpt <= -9);
  const bool force_e = decpt <= 0 && w <= 2 - decpt && w >= 3 + exp_len;
  const bool use_f =
      (have_space ||
       ((decpt <= w && (decpt >= -1 || (decpt == -2 && (len > 1 || !force_e)))) && !force_e)) &&
      (!have_space || (decpt >= -14 && (decpt <= 15 || len > decpt)));
  if (negative) out += '-';
  if (use_f) {
    if (decpt <= 0) {
      out.append("0.");
      out.append(static_cast<std::size_t>(-decpt), '0');
      out.append(digits);
    } else if (decpt < len) {
      out.append(digits.substr(0, static_cast<std::size_t>(decpt)));
      out += '.';
      out.append(digits.substr(static_cast<std::size_t>(decpt)));
    } else {
      out.append(digits);
      out.append(static_cast<std::size_t>(decpt - len), '0');
    }
  } else {
    out += digits[0];
    if (len > 1) {
      out += '.';
      out.append(digits.substr(1));
    }
    out += 'e';
    int e = decpt - 1;
    if (e < 0) {
      out += '-';
      e = -e;
    }
    append_int(out, e);
  }
}

constexpr int kUnlimitedWidth = 1000;

// Splits "d.ddde±XX" (printf %e or to_chars scientific) into digits without trailing zeros
// and the decimal point position.
void append_scientific(std::string& out, const char* s, std::size_t n, int width) {
  bool negative = false;
  std::size_t i = 0;
  if (i < n && s[i] == '-') {
    negative = true;
    ++i;
  }
  char digits[40];
  std::size_t nd = 0;
  for (; i < n && s[i] != 'e' && nd < sizeof digits; ++i) {
    if (s[i] != '.') digits[nd++] = s[i];
  }
  int exp = 0;
  if (i < n && s[i] == 'e') {
    ++i;
    if (i < n && s[i] == '+') ++i;
    std::from_chars(s + i, s + n, exp);
  }
  while (nd > 1 && digits[nd - 1] == '0') --nd;
  append_gcvt(out, negative, std::string_view(digits, nd), exp + 1, width);
}

void append_double(std::string& out, double v, int decimals) {
  if (!std::isfinite(v)) {  // cannot be stored; print what the server would never send
    out.append(std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf"));
    return;
  }
  char buf[400];
  if (decimals >= 0) {
    const int n = std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    out.append(buf, static_cast<std::size_t>(std::max(n, 0)));
    return;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  (void)ec;
  append_scientific(out, buf, static_cast<std::size_t>(end - buf), kUnlimitedWidth);
}

void append_float(std::string& out, float f, int decimals) {
  const double v = f;
  if (!std::isfinite(v) || decimals >= 0) {
    append_double(out, v, decimals);
    return;
  }
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.5e", v);  // 6 significant digits
  append_scientific(out, buf, static_cast<std::size_t>(std::max(n, 0)), kUnlimitedWidth);
}

// NEWDECIMAL: groups of 9 digits in 4 bytes, big-endian, the leading and trailing partial
// groups in fewer bytes; the sign bit is inverted and negative values are stored inverted.
constexpr int kDigitBytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

std::size_t decimal_size(int precision, int scale) {
  const int intg = precision - scale;
  return static_cast<std::size_t>((intg / 9) * 4 + kDigitBytes[intg % 9] + (scale / 9) * 4 +
                                  kDigitBytes[scale % 9]);
}

}  // namespace

void detail::append_double_gcvt(std::string& out, double v, int width) {
  if (!std::isfinite(v)) {
    append_double(out, v, -1);
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  (void)ec;
  append_scientific(out, buf, static_cast<std::size_t>(end - buf), width);
}

bool detail::decode_decimal(const std::uint8_t* p, std::size_t size, int precision, int scale,
                            std::string& out) {
  if (precision < 1 || precision > 65 || scale < 0 || scale > 30 || scale > precision ||
      size != decimal_size(precision, scale)) {
    return false;
  }
  std::uint8_t buf[40];
  std::memcpy(buf, p, size);
  const bool negative = (buf[0] & 0x80) == 0;
  buf[0] ^= 0x80;
  if (negative) {
    for (std::size_t i = 0; i < size; ++i) buf[i] = static_cast<std::uint8_t>(~buf[i]);
  }
  const int intg = precision - scale;
  const int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
  if (intg <= 18 && scale <= 18) {
    // Up to 18 digits on each side of the point: each side is one 64-bit number. A group
    // outside its digits (bytes no server writes) takes the general path below, which prints
    // it as it always did.
    static constexpr std::uint64_t kPow10[10] = {1,      10,      100,      1000,      10000,
                                                 100000, 1000000, 10000000, 100000000, 1000000000};
    std::size_t at = 0;
    bool digits_fit = true;
    auto group = [&](int bytes, int width, std::uint64_t& acc) {
      const std::uint64_t v = ByteReader::load_be(buf + at, static_cast<std::size_t>(bytes));
      at += static_cast<std::size_t>(bytes);
      digits_fit = digits_fit && v < kPow10[width];
      acc = acc * kPow10[width] + v;
    };
    std::uint64_t int_part = 0, frac_part = 0;
    if (intg0x) group(kDigitBytes[intg0x], intg0x, int_part);
    for (int i = 0; i < intg0; ++i) group(4, 9, int_part);
    for (int i = 0; i < frac0; ++i) group(4, 9, frac_part);
    if (frac0x) group(kDigitBytes[frac0x], frac0x, frac_part);
    if (digits_fit) {
      // A sign, 18 digits, a point and 18 more.
      append_written(out, 38, [&](char* q) {
        if (negative && (int_part | frac_part) != 0) *q++ = '-';
        q = std::to_chars(q, q + 18, int_part).ptr;
        if (scale > 0) {
          *q++ = '.';
          q = put_padded(q, frac_part, scale);
        }
        return q;
      });
      return true;
    }
  }
  // The groups of 9 (or fewer, for the partial ones) digits, most significant first.
  std::uint32_t groups[16];
  int widths[16];
  int n = 0;
  std::size_t pos = 0;
  auto group = [&](int bytes, int width) {
    const auto v = static_cast<std::uint32_t>(ByteReader::load_be(buf + pos, bytes));
    pos += static_cast<std::size_t>(bytes);
    groups[n] = v % 1000000000u;
    widths[n++] = width;
  };
  if (intg0x) group(kDigitBytes[intg0x], intg0x);
  for (int i = 0; i < intg0; ++i) group(4, 9);
  const int int_groups = n;
  for (int i = 0; i < frac0; ++i) group(4, 9);
  if (frac0x) group(kDigitBytes[frac0x], frac0x);
  bool zero = true;
  for (int i = 0; i < n; ++i) zero = zero && groups[i] == 0;

  char text[96];
  char* q = text;
  if (negative && !zero) *q++ = '-';
  auto padded = [&](std::uint32_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
      q[i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    q += width;
  };
  int first = 0;
  while (first < int_groups && groups[first] == 0) ++first;
  if (first == int_groups) {
    *q++ = '0';
  } else {
    q = std::to_chars(q, text + sizeof text, groups[first]).ptr;
    for (int i = first + 1; i < int_groups; ++i) padded(groups[i], 9);
  }
  if (scale > 0) {
    *q++ = '.';
    for (int i = int_groups; i < n; ++i) padded(groups[i], widths[i]);
  }
  out.append(text, static_cast<std::size_t>(q - text));
  return true;
}

namespace {

// MySQL's latin1 is Windows-1252 with the five holes mapped to the C1 controls.
constexpr std::uint16_t kCp1252High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void append_latin1(std::string& out, const std::uint8_t* p, std::size_t n) {
  out.reserve(out.size() + n + n / 4);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t c = p[i];
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0xA0) {
      append_utf8(out, kCp1252High[c - 0x80]);
    } else {
      append_utf8(out, c);
    }
  }
}

// MySQL charset names to iconv's; nullptr when iconv has no equivalent.
const char* iconv_charset(std::string_view cs) {
  static const std::pair<std::string_view, const char*> kMap[] = {{"latin2", "ISO-8859-2"},
                                                                  {"latin5", "ISO-8859-9"},
                                                                  {"latin7", "ISO-8859-13"},
                                                                  {"greek", "ISO-8859-7"},
                                                                  {"hebrew", "ISO-8859-8"},
                                                                  {"cp1250", "CP1250"},
                                                                  {"cp1251", "CP1251"},
                                                                  {"cp1256", "CP1256"},
                                                                  {"cp1257", "CP1257"},
                                                                  {"cp850", "CP850"},
                                                                  {"cp852", "CP852"},
                                                                  {"cp866", "CP866"},
                                                                  {"koi8r", "KOI8-R"},
                                                                  {"koi8u", "KOI8-U"},
                                                                  {"sjis", "SHIFT_JIS"},
                                                                  {"cp932", "CP932"},
                                                                  {"ujis", "EUC-JP"},
                                                                  {"eucjpms", "EUC-JP-MS"},
                                                                  {"gbk", "GBK"},
                                                                  {"gb2312", "GB2312"},
                                                                  {"gb18030", "GB18030"},
                                                                  {"big5", "BIG5"},
                                                                  {"euckr", "EUC-KR"},
                                                                  {"ucs2", "UCS-2BE"},
                                                                  {"utf16", "UTF-16BE"},
                                                                  {"utf16le", "UTF-16LE"},
                                                                  {"utf32", "UTF-32BE"},
                                                                  {"tis620", "TIS-620"},
                                                                  {"armscii8", "ARMSCII-8"},
                                                                  {"macroman", "MACINTOSH"},
                                                                  {"macce", "MAC-CENTRALEUROPE"},
                                                                  {"geostd8", "GEORGIAN-PS"},
                                                                  {"keybcs2", "KEYBCS2"},
                                                                  {"hp8", "HP-ROMAN8"},
                                                                  {"dec8", "DEC-MCS"},
                                                                  {"cp1252", "CP1252"}};
  for (const auto& [name, ic] : kMap) {
    if (name == cs) return ic;
  }
  return nullptr;
}

// Collation ids (TABLE_MAP optional metadata) to charset names, for the common ones.
std::string_view collation_charset(std::uint32_t id) {
  switch (id) {
    case 63:
      return "binary";
    case 5:
    case 8:
    case 15:
    case 31:
    case 47:
    case 48:
    case 49:
    case 94:
      return "latin1";
    case 11:
    case 65:
      return "ascii";
    case 33:
    case 83:
    case 76:
      return "utf8mb3";
    case 45:
    case 46:
      return "utf8mb4";
    case 9:
    case 21:
    case 27:
    case 77:
      return "latin2";
    case 1:
    case 84:
      return "big5";
    case 13:
    case 88:
      return "sjis";
    case 95:
    case 96:
      return "cp932";
    case 12:
    case 91:
      return "ujis";
    case 28:
    case 87:
      return "gbk";
    case 24:
    case 86:
      return "gb2312";
    case 19:
    case 85:
      return "euckr";
    case 51:
    case 14:
    case 23:
    case 50:
    case 52:
      return "cp1251";
    case 26:
    case 34:
    case 44:
    case 66:
    case 99:
      return "cp1250";
    case 35:
    case 90:
      return "ucs2";
    case 54:
    case 55:
      return "utf16";
    case 56:
    case 62:
      return "utf16le";
    case 60:
    case 61:
      return "utf32";
    case 7:
    case 74:
      return "koi8r";
    case 22:
    case 75:
      return "koi8u";
    case 25:
    case 70:
      return "greek";
    case 16:
    case 71:
      return "hebrew";
    case 30:
    case 78:
      return "latin5";
    case 57:
    case 67:
      return "cp1256";
    default:
      break;
  }
  if ((id >= 192 && id <= 215) || id == 223 || (id >= 576 && id <= 671)) return "utf8mb3";
  if ((id >= 224 && id <= 247) || (id >= 255 && id <= 323) || (id >= 2048 && id <= 2400)) {
    return "utf8mb4";
  }
  if (id >= 128 && id <= 151) return "ucs2";
  if (id >= 160 && id <= 183) return "utf32";
  if (id >= 101 && id <= 124) return "utf16";
  return {};
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool binary_column_type(std::string_view t) {
  return starts_with(t, "binary") || starts_with(t, "varbinary") || starts_with(t, "blob") ||
         starts_with(t, "tinyblob") || starts_with(t, "mediumblob") || starts_with(t, "longblob");
}

// Converts with iconv; one converter per charset and thread, kept for the thread's life
// (closed when the thread ends). A charset iconv does not know is remembered as such.
class IconvCache {
 public:
  ~IconvCache() {
    for (auto& [name, cd] : converters_) {
      if (cd != kNone) iconv_close(cd);
    }
  }
  iconv_t get(const std::string& from) {
    auto it = converters_.find(from);
    if (it == converters_.end()) {
      it = converters_.emplace(from, iconv_open("UTF-8", from.c_str())).first;
    }
    return it->second;
  }
  static inline const iconv_t kNone = reinterpret_cast<iconv_t>(-1);

 private:
  std::unordered_map<std::string, iconv_t> converters_;
};

bool append_iconv(std::string& out, const std::string& from, const std::uint8_t* p, std::size_t n) {
  thread_local IconvCache cache;
  iconv_t cd = cache.get(from);
  if (cd == IconvCache::kNone) return false;
  iconv(cd, nullptr, nullptr, nullptr, nullptr);
  char* in = const_cast<char*>(reinterpret_cast<const char*>(p));
  std::size_t in_left = n;
  const std::size_t at = out.size();
  out.resize(at + n * 4 + 16);
  char* dst = out.data() + at;
  std::size_t out_left = n * 4 + 16;
  while (in_left > 0) {
    const std::size_t rc = iconv(cd, &in, &in_left, &dst, &out_left);
    if (rc == static_cast<std::size_t>(-1)) {
      if (errno == E2BIG) {
        const std::size_t used = static_cast<std::size_t>(dst - out.data());
        out.resize(out.size() + n * 2 + 16);
        dst = out.data() + used;
        out_left = out.size() - used;
        continue;
      }
      out.resize(at);
      return false;
    }
  }
  out.resize(static_cast<std::size_t>(dst - out.data()));
  return true;
}

// "float(7,3)" / "double(10,2)" -> 3 / 2; -1 without fixed decimals.
std::int8_t declared_decimals(std::string_view column_type) {
  const auto comma = column_type.find(',');
  const auto close = column_type.find(')');
  if (comma == std::string_view::npos || close == std::string_view::npos || close < comma) {
    return -1;
  }
  int d = -1;
  std::from_chars(column_type.data() + comma + 1, column_type.data() + close, d);
  return d >= 0 && d < 31 ? static_cast<std::int8_t>(d) : -1;
}

}  // namespace

RowReader::RowReader(const TableMapEvent& map, const TableSchema& schema, const RowsEvent& rows,
                     Flavor flavor)
    : map_(map), schema_(schema), rows_(rows), flavor_(flavor) {
  const std::size_t n = map.column_types.size();
  if (schema.columns.size() != n || rows.column_count != n || map.column_meta.size() != n) {
    setup_error_ = Error::invalid_data(
        "table " + schema.database + "." + schema.table + ": the binlog's table map has " +
        std::to_string(n) + " columns (rows event: " + std::to_string(rows.column_count) +
        "), the schema history " + std::to_string(schema.columns.size()) +
        ": the schema history does not match this point of the binlog");
    return;
  }
  present_count_ = rows.present.count();
  present_after_count_ = rows.present_after.count();
  plan_.resize(n);
  const auto& md = map.metadata;
  std::size_t numeric_i = 0, char_i = 0, enum_set_i = 0, enum_i = 0, set_i = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto& p = plan_[i];
    const auto& col = schema.columns[i];
    p.name = &col.name;
    p.meta = map.column_meta[i];
    std::uint8_t t = map.column_types[i];
    if (t == kString && p.meta >= 256) {
      const std::uint8_t b0 = static_cast<std::uint8_t>(p.meta >> 8);
      const std::uint8_t b1 = static_cast<std::uint8_t>(p.meta & 0xff);
      if ((b0 & 0x30) != 0x30) {
        t = static_cast<std::uint8_t>(b0 | 0x30);
        p.length = b1 | (static_cast<std::uint32_t>((b0 & 0x30) ^ 0x30) << 4);
      } else {
        t = b0;
        p.length = b1;
      }
    } else if (t == kString) {
      p.length = p.meta & 0xff;
    }
    p.type = t;
    bool numeric = false, character = false;
    switch (t) {
      case kTiny:
      case kShort:
      case kInt24:
      case kLong:
      case kLongLong:
        p.kind = kKindInt;
        numeric = true;
        break;
      case kFloat:
        p.kind = kKindFloat;
        numeric = true;
        break;
      case kDouble:
        p.kind = kKindDouble;
        numeric = true;
        break;
      case kNewDecimal:
        p.kind = kKindDecimal;
        numeric = true;
        break;
      case kBit:
        p.kind = kKindBit;
        break;
      case kYear:
        p.kind = kKindYear;
        break;
      case kDate:
      case kNewDate:
        p.kind = kKindDate;
        break;
      case kTime:
        p.kind = kKindTimeOld;
        break;
      case kTime2:
        p.kind = kKindTime2;
        break;
      case kDateTime:
        p.kind = kKindDateTimeOld;
        break;
      case kDateTime2:
        p.kind = kKindDateTime2;
        break;
      case kTimestamp:
        p.kind = kKindTimestampOld;
        break;
      case kTimestamp2:
        p.kind = kKindTimestamp2;
        break;
      case kVarchar:
      case kVarString:
        p.kind = kKindVarString;
        p.length = p.meta;
        character = true;
        break;
      case kString:
        p.kind = kKindFixedString;
        character = true;
        break;
      case kBlob:
      case kTinyBlob:
      case kMediumBlob:
      case kLongBlob:
        p.kind = kKindBlob;
        p.length = p.meta;
        character = true;
        break;
      case kVector:
        p.kind = kKindBlob;
        p.length = p.meta;
        p.charset = kBinary;
        break;
      case kEnum:
        p.kind = kKindEnum;
        break;
      case kSet:
        p.kind = kKindSet;
        break;
      case kJson:
        p.kind = kKindJsonBinary;
        p.length = p.meta;
        p.is_json = true;
        break;
      case kGeometry:
        p.kind = kKindGeometry;
        p.length = p.meta;
        break;
      case kNull:
        p.kind = kKindNull;
        break;
      default:
        p.kind = kKindUnsupported;
        break;
    }
    if ((t == kTime || t == kDateTime || t == kTimestamp) &&
        col.column_type.find('(') != std::string::npos &&
        col.column_type.find("(0)") == std::string::npos) {
      // MariaDB's pre-10.1 fractional temporal format (mysql56_temporal_format=OFF) logs
      // TIME(n)/DATETIME(n)/TIMESTAMP(n) under the old type codes without their precision.
      setup_error_ = Error::invalid_data(
          "table " + schema.database + "." + schema.table + ", column " + col.name + " (" +
          col.column_type +
          "): logged in MariaDB's old fractional-seconds temporal format, "
          "which cannot be decoded; remedy: SET GLOBAL mysql56_temporal_format = ON and "
          "rebuild the table (ALTER TABLE ... FORCE)");
      return;
    }
    if (numeric) {
      p.is_unsigned =
          col.is_unsigned || (numeric_i < md.is_unsigned.size() && md.is_unsigned[numeric_i]);
      ++numeric_i;
      if (t == kFloat || t == kDouble) p.decimals = declared_decimals(col.column_type);
    }
    if (character) {
      std::string_view cs = col.charset;
      if (cs.empty() && char_i < md.charsets.size()) cs = collation_charset(md.charsets[char_i]);
      if (cs.empty()) cs = binary_column_type(col.column_type) ? "binary" : "utf8mb4";
      ++char_i;
      if (cs == "binary") {
        p.charset = kBinary;
      } else if (cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8" || cs == "ascii") {
        p.charset = kUtf8;
      } else if (cs == "latin1") {
        p.charset = kLatin1;
      } else if (const char* ic = iconv_charset(cs)) {
        p.charset = kIconv;
        p.iconv_name = ic;
      } else {
        p.charset = kIconv;
        p.iconv_name.assign(cs);  // iconv may still know it; else the value is an error
      }
      if (p.kind == kKindBlob && col.is_json) {
        p.is_json = true;  // MariaDB JSON: LONGTEXT holding JSON text
      }
      if (p.kind == kKindFixedString) {
        // MariaDB's INET6 and UUID travel as BINARY(16); information_schema names them.
        if (col.column_type == "inet6") p.kind = kKindInet6;
        if (col.column_type == "uuid") p.kind = kKindUuid;
      }
    }
    if (t == kEnum || t == kSet) {
      ++enum_set_i;
      if (!col.elements.empty()) {
        p.labels = &col.elements;
      } else if (t == kEnum && enum_i < md.enum_values.size()) {
        p.labels = &md.enum_values[enum_i];
      } else if (t == kSet && set_i < md.set_values.size()) {
        p.labels = &md.set_values[set_i];
      }
      (t == kEnum ? enum_i : set_i)++;
    }
  }
}

Error RowReader::value_error(const ColumnPlan& plan, std::size_t at, std::string_view what) const {
  return Error::invalid_data("table " + schema_.database + "." + schema_.table + ", column " +
                             *plan.name + ": " + std::string(what) + " at offset " +
                             std::to_string(at) + " of the rows data");
}

Result<bool> RowReader::next(DecodedRow& out) {
  if (setup_error_) return fail(*setup_error_);
  if (offset_ >= rows_.rows.size()) return false;
  const std::size_t start = offset_;
  switch (rows_.kind) {
    case RowsKind::kWrite:
      out.before.reset();
      CPPCDC_TRY(read_image(offset_, rows_.present, present_count_, out.after));
      break;
    case RowsKind::kDelete:
      out.after.reset();
      CPPCDC_TRY(read_image(offset_, rows_.present, present_count_, out.before));
      break;
    case RowsKind::kUpdate:
      CPPCDC_TRY(read_image(offset_, rows_.present, present_count_, out.before));
      if (offset_ >= rows_.rows.size() && present_after_count_ > 0) {
        return fail(Error::invalid_data("table " + schema_.database + "." + schema_.table +
                                        ": an update's after image is missing"));
      }
      CPPCDC_TRY(read_image(offset_, rows_.present_after, present_after_count_, out.after));
      break;
  }
  if (offset_ == start) {
    // Images of no columns take no bytes: the rows data left over could never be read.
    return fail(Error::invalid_data("table " + schema_.database + "." + schema_.table + ": " +
                                    std::to_string(rows_.rows.size() - offset_) +
                                    " bytes of rows data follow images with no columns"));
  }
  return true;
}

Status RowReader::read_image(std::size_t& offset, const Bitmap& present, std::size_t count,
                             std::optional<Row>& row) {
  const auto bytes = rows_.rows;
  const std::size_t null_bytes = (count + 7) / 8;
  if (null_bytes > bytes.size() - offset) {
    return fail(Error::invalid_data("table " + schema_.database + "." + schema_.table +
                                    ": the NULL bitmap of a row runs past the end of the " +
                                    std::to_string(bytes.size()) + "-byte rows data"));
  }
  const std::uint8_t* nulls = bytes.data() + offset;
  std::size_t pos = offset + null_bytes;
  if (!row) row.emplace();
  row->resize(count);
  std::size_t k = 0;
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    if (!present.test(i)) continue;
    const auto& plan = plan_[i];
    auto& cv = (*row)[k];
    cv.name.assign(*plan.name);
    cv.is_json = plan.is_json;
    if ((nulls[k / 8] >> (k % 8)) & 1) {
      cv.text.reset();
    } else {
      if (!cv.text) cv.text.emplace();
      cv.text->clear();
      CPPCDC_TRY(read_value(plan, bytes, pos, *cv.text));
    }
    ++k;
  }
  offset = pos;
  return ok();
}

Status RowReader::read_value(const ColumnPlan& plan, std::span<const std::uint8_t> bytes,
                             std::size_t& pos, std::string& out) {
  const std::size_t left = bytes.size() - pos;
  const std::uint8_t* p = bytes.data() + pos;
  auto need = [&](std::size_t n) -> bool { return n <= left; };
  auto short_value = [&](std::size_t n) {
    return fail(value_error(
        plan, pos,
        "the value needs " + std::to_string(n) + " bytes, " + std::to_string(left) + " are left"));
  };
  // Reads a little-endian length of `n` bytes, then that many bytes: the string's span.
  auto length_prefixed = [&](std::size_t n, const std::uint8_t*& data, std::size_t& len) -> Status {
    if (!need(n)) return short_value(n);
    len = static_cast<std::size_t>(ByteReader::load_le(p, n));
    if (len > left - n) return short_value(n + len);
    data = p + n;
    pos += n + len;
    return ok();
  };
  auto append_text = [&](const std::uint8_t* data, std::size_t len) -> Status {
    switch (static_cast<Charset>(plan.charset)) {
      case kUtf8:
        out.append(reinterpret_cast<const char*>(data), len);
        break;
      case kBinary:
        append_hex(out, data, len);
        break;
      case kLatin1:
        append_latin1(out, data, len);
        break;
      case kIconv:
        if (!append_iconv(out, plan.iconv_name, data, len)) {
          return fail(
              value_error(plan, pos - len,
                          "the value cannot be converted from " + plan.iconv_name + " to UTF-8"));
        }
        break;
    }
    return ok();
  };

  switch (static_cast<Kind>(plan.kind)) {
    case kKindInt: {
      std::size_t n = 0;
      switch (plan.type) {
        case kTiny:
          n = 1;
          break;
        case kShort:
          n = 2;
          break;
        case kInt24:
          n = 3;
          break;
        case kLong:
          n = 4;
          break;
        default:
          n = 8;
          break;
      }
      if (!need(n)) return short_value(n);
      const std::uint64_t raw = ByteReader::load_le(p, n);
      pos += n;
      if (plan.is_unsigned) {
        append_int(out, raw);
      } else {
        const unsigned shift = static_cast<unsigned>(64 - 8 * n);
        append_int(out, static_cast<std::int64_t>(raw << shift) >> shift);
      }
      return ok();
    }
    case kKindFloat: {
      if (!need(4)) return short_value(4);
      float f;
      std::memcpy(&f, p, 4);
      pos += 4;
      append_float(out, f, plan.decimals);
      return ok();
    }
    case kKindDouble: {
      if (!need(8)) return short_value(8);
      double d;
      std::memcpy(&d, p, 8);
      pos += 8;
      append_double(out, d, plan.decimals);
      return ok();
    }
    case kKindDecimal: {
      const int precision = plan.meta >> 8, scale = plan.meta & 0xff;
      if (precision < 1 || precision > 65 || scale > precision || scale > 30) {
        return fail(value_error(plan, pos,
                                "the table map gives DECIMAL(" + std::to_string(precision) + "," +
                                    std::to_string(scale) + ")"));
      }
      const std::size_t n = decimal_size(precision, scale);
      if (!need(n)) return short_value(n);
      detail::decode_decimal(p, n, precision, scale, out);
      pos += n;
      return ok();
    }
    case kKindBit: {
      const std::size_t n = (plan.meta >> 8) + ((plan.meta & 0xff) != 0 ? 1 : 0);
      if (!need(n)) return short_value(n);
      append_hex(out, p, n);
      pos += n;
      return ok();
    }
    case kKindYear: {
      if (!need(1)) return short_value(1);
      const unsigned y = p[0];
      pos += 1;
      if (y == 0) {
        out.append("0000");
      } else {
        append_int(out, 1900 + y);
      }
      return ok();
    }
    case kKindDate: {
      if (!need(3)) return short_value(3);
      const auto v = static_cast<std::uint32_t>(ByteReader::load_le(p, 3));
      pos += 3;
      append_date(out, v >> 9, (v >> 5) & 15, v & 31);
      return ok();
    }
    case kKindTimeOld: {
      if (!need(3)) return short_value(3);
      auto raw = static_cast<std::uint32_t>(ByteReader::load_le(p, 3));
      pos += 3;
      std::int32_t v = static_cast<std::int32_t>(raw << 8) >> 8;
      if (v < 0) {
        out += '-';
        v = -v;
      }
      const auto u = static_cast<std::uint32_t>(v);
      append_hms(out, u / 10000, u / 100 % 100, u % 100);
      return ok();
    }
    case kKindTime2: {
      const int fsp = plan.meta;
      if (fsp > 6) return fail(value_error(plan, pos, "TIME2 has fsp " + std::to_string(fsp)));
      const std::size_t n = 3 + static_cast<std::size_t>((fsp + 1) / 2);
      if (!need(n)) return short_value(n);
      std::int64_t packed = 0;
      // The integer part (hours, minutes, seconds) in 3 bytes offset by 0x800000; the
      // fraction in 0-3 more bytes, borrowed from the integer part for negative values.
      std::int64_t intpart = static_cast<std::int64_t>(ByteReader::load_be(p, 3)) - 0x800000;
      std::int64_t frac = 0;
      switch (fsp) {
        case 0:
          break;
        case 1:
        case 2:
          frac = p[3];  // unsigned: for negative values it counts back from 0x100
          if (intpart < 0 && frac != 0) {
            intpart++;
            frac -= 0x100;
          }
          frac *= 10000;
          break;
        case 3:
        case 4:
          frac = static_cast<std::int64_t>(ByteReader::load_be(p + 3, 2));
          if (intpart < 0 && frac != 0) {
            intpart++;
            frac -= 0x10000;
          }
          frac *= 100;
          break;
        default:
          intpart = 0;
          packed = static_cast<std::int64_t>(ByteReader::load_be(p, 6)) - 0x800000000000LL;
          break;
      }
      if (fsp < 5) packed = intpart * (1LL << 24) + frac;
      pos += n;
      if (packed < 0) {
        out += '-';
        packed = -packed;
      }
      const auto u = static_cast<std::uint64_t>(packed);
      const std::uint64_t hms = u >> 24;
      append_written(out, kHmsMost + kFracMost, [&](char* q) {
        return write_frac(write_hms(q, (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64),
                          u % (1 << 24), fsp);
      });
      return ok();
    }
    case kKindDateTimeOld: {
      if (!need(8)) return short_value(8);
      const std::uint64_t v = ByteReader::load_le(p, 8);
      pos += 8;
      const std::uint64_t date = v / 1000000, time = v % 1000000;
      append_date_time(out, date / 10000, date / 100 % 100, date % 100, time / 10000,
                       time / 100 % 100, time % 100, 0, 0);
      return ok();
    }
    case kKindDateTime2: {
      const int fsp = plan.meta;
      if (fsp > 6) {
        return fail(value_error(plan, pos, "DATETIME2 has fsp " + std::to_string(fsp)));
      }
      const std::size_t fb = static_cast<std::size_t>((fsp + 1) / 2);
      if (!need(5 + fb)) return short_value(5 + fb);
      std::int64_t intpart = static_cast<std::int64_t>(ByteReader::load_be(p, 5)) - 0x8000000000LL;
      const std::uint64_t frac_raw = ByteReader::load_be(p + 5, fb);
      pos += 5 + fb;
      if (intpart < 0) intpart = -intpart;  // cannot be stored; print its magnitude
      const auto ymdhms = static_cast<std::uint64_t>(intpart);
      const std::uint64_t ymd = ymdhms >> 17, ym = ymd >> 5, hms = ymdhms % (1 << 17);
      const std::uint64_t micros = fb == 1 ? frac_raw * 10000 : fb == 2 ? frac_raw * 100 : frac_raw;
      append_date_time(out, ym / 13, ym % 13, ymd % 32, hms >> 12, (hms >> 6) % 64, hms % 64,
                       micros, fsp);
      return ok();
    }
    case kKindTimestampOld: {
      if (!need(4)) return short_value(4);
      const std::uint64_t secs = ByteReader::load_le(p, 4);
      pos += 4;
      append_timestamp(out, secs, 0, 0);
      return ok();
    }
    case kKindTimestamp2: {
      const int fsp = plan.meta;
      if (fsp > 6) {
        return fail(value_error(plan, pos, "TIMESTAMP2 has fsp " + std::to_string(fsp)));
      }
      const std::size_t fb = static_cast<std::size_t>((fsp + 1) / 2);
      if (!need(4 + fb)) return short_value(4 + fb);
      const std::uint64_t secs = ByteReader::load_be(p, 4);
      const std::uint64_t frac_raw = ByteReader::load_be(p + 4, fb);
      pos += 4 + fb;
      const std::uint64_t micros = fb == 1 ? frac_raw * 10000 : fb == 2 ? frac_raw * 100 : frac_raw;
      append_timestamp(out, secs, micros, fsp);
      return ok();
    }
    case kKindVarString: {
      const std::uint8_t* data;
      std::size_t len;
      CPPCDC_TRY(length_prefixed(plan.length < 256 ? 1 : 2, data, len));
      return append_text(data, len);
    }
    case kKindFixedString: {
      const std::uint8_t* data;
      std::size_t len;
      CPPCDC_TRY(length_prefixed(plan.length < 256 ? 1 : 2, data, len));
      if (plan.charset == kBinary && len < plan.length) {
        // BINARY(n) is logged without its trailing zero bytes; the value has them.
        append_hex(out, data, len);
        out.reserve(out.size() + 2 * (plan.length - len));
        for (std::size_t i = len; i < plan.length; ++i) out.append("00");
        return ok();
      }
      return append_text(data, len);
    }
    case kKindInet6:
    case kKindUuid: {
      const std::uint8_t* data;
      std::size_t len;
      CPPCDC_TRY(length_prefixed(1, data, len));
      if (len > 16) return fail(value_error(plan, pos - len, "the value is over 16 bytes"));
      std::uint8_t v[16] = {};
      std::memcpy(v, data, len);  // logged without trailing zero bytes
      if (plan.kind == kKindUuid) {
        for (int i = 0; i < 16; ++i) {
          if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
          out += kHex[v[i] >> 4];
          out += kHex[v[i] & 15];
        }
      } else {
        char buf[INET6_ADDRSTRLEN];
        if (inet_ntop(AF_INET6, v, buf, sizeof buf) == nullptr) {
          return fail(value_error(plan, pos - len, "not an IPv6 address"));
        }
        out.append(buf);
      }
      return ok();
    }
    case kKindBlob:
    case kKindGeometry:
    case kKindJsonBinary: {
      if (plan.length < 1 || plan.length > 4) {
        return fail(value_error(
            plan, pos, "the table map gives " + std::to_string(plan.length) + " length bytes"));
      }
      const std::uint8_t* data;
      std::size_t len;
      CPPCDC_TRY(length_prefixed(plan.length, data, len));
      if (plan.kind == kKindGeometry) {
        append_hex(out, data, len);
        return ok();
      }
      if (plan.kind == kKindJsonBinary) {
        auto st = json_binary_to_text(std::span<const std::uint8_t>(data, len), out);
        if (!st) {
          return fail(value_error(plan, pos - len, "binary JSON: " + st.error().message()));
        }
        return ok();
      }
      return append_text(data, len);
    }
    case kKindEnum: {
      const std::size_t n = plan.length;
      if (n != 1 && n != 2) {
        return fail(value_error(plan, pos, "ENUM with a pack length of " + std::to_string(n)));
      }
      if (!need(n)) return short_value(n);
      const std::size_t index = static_cast<std::size_t>(ByteReader::load_le(p, n));
      pos += n;
      if (index == 0) return ok();  // the empty (invalid) value
      if (plan.labels == nullptr || index > plan.labels->size()) {
        return fail(value_error(plan, pos - n,
                                "ENUM index " + std::to_string(index) + " has no label (" +
                                    std::to_string(plan.labels ? plan.labels->size() : 0) +
                                    " known)"));
      }
      out.append((*plan.labels)[index - 1]);
      return ok();
    }
    case kKindSet: {
      const std::size_t n = plan.length;
      if (n < 1 || n > 8) {
        return fail(value_error(plan, pos, "SET with a pack length of " + std::to_string(n)));
      }
      if (!need(n)) return short_value(n);
      const std::uint64_t bits = ByteReader::load_le(p, n);
      pos += n;
      const std::size_t known = plan.labels ? plan.labels->size() : 0;
      bool first = true;
      for (std::size_t i = 0; i < 64; ++i) {
        if (((bits >> i) & 1) == 0) continue;
        if (i >= known) {
          return fail(value_error(plan, pos - n,
                                  "SET member " + std::to_string(i + 1) + " has no label (" +
                                      std::to_string(known) + " known)"));
        }
        if (!first) out += ',';
        out.append((*plan.labels)[i]);
        first = false;
      }
      return ok();
    }
    case kKindNull:
      return ok();
    case kKindUnsupported:
      break;
  }
  return fail(
      value_error(plan, pos, "the binlog type " + std::to_string(plan.type) + " is not supported"));
}

}  // namespace cppcdc::mysql
