// MySQL binary JSON to JSON text (json_binary.hpp). The layout is MySQL's published one
// (json_binary.h): a type byte, then the value; objects and arrays hold an element count, their
// size in bytes, entries with offsets relative to the container's start, then the data.

#include "source/mysql/json_binary.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include "source/mysql/byte_reader.hpp"

namespace cppcdc::mysql {
namespace {

using detail::ByteReader;

constexpr int kMaxDepth = 100;
constexpr int kJsonDoubleWidth = 23;  // MySQL's MY_GCVT_MAX_FIELD_WIDTH

enum : std::uint8_t {
  kSmallObject = 0x00,
  kLargeObject = 0x01,
  kSmallArray = 0x02,
  kLargeArray = 0x03,
  kLiteral = 0x04,
  kInt16 = 0x05,
  kUint16 = 0x06,
  kInt32 = 0x07,
  kUint32 = 0x08,
  kInt64 = 0x09,
  kUint64 = 0x0a,
  kDouble = 0x0b,
  kString = 0x0c,
  kOpaque = 0x0f,
};

class JsonPrinter {
 public:
  JsonPrinter(std::span<const std::uint8_t> doc, std::string& out) : doc_(doc), out_(out) {}

  Status document() {
    if (doc_.empty()) {
      out_.append("null");
      return ok();
    }
    return value(doc_[0], 1, doc_.size() - 1, 0);
  }

 private:
  Error bad(std::size_t at, std::string_view what) const {
    return Error::invalid_data(std::string(what) + " at offset " + std::to_string(at));
  }

  // A value of `type` whose data starts at `at` and may extend over `avail` bytes.
  Status value(std::uint8_t type, std::size_t at, std::size_t avail, int depth) {
    switch (type) {
      case kSmallObject:
        return container(at, avail, false, true, depth);
      case kLargeObject:
        return container(at, avail, true, true, depth);
      case kSmallArray:
        return container(at, avail, false, false, depth);
      case kLargeArray:
        return container(at, avail, true, false, depth);
      case kLiteral: {
        if (avail < 1) return fail(bad(at, "a literal is cut short"));
        return literal(doc_[at], at);
      }
      case kInt16:
      case kUint16:
      case kInt32:
      case kUint32:
      case kInt64:
      case kUint64: {
        const std::size_t n = type <= kUint16 ? 2 : type <= kUint32 ? 4 : 8;
        if (avail < n) return fail(bad(at, "a number is cut short"));
        integer(type, ByteReader::load_le(doc_.data() + at, n));
        return ok();
      }
      case kDouble: {
        if (avail < 8) return fail(bad(at, "a double is cut short"));
        double d;
        std::memcpy(&d, doc_.data() + at, 8);
        if (!std::isfinite(d)) return fail(bad(at, "a double that is not finite"));
        print_double(d);
        return ok();
      }
      case kString: {
        std::size_t len = 0, used = 0;
        CPPCDC_TRY(varlen(at, avail, len, used));
        if (len > avail - used) return fail(bad(at, "a string runs past its container"));
        quote(reinterpret_cast<const char*>(doc_.data() + at + used), len);
        return ok();
      }
      case kOpaque: {
        if (avail < 1) return fail(bad(at, "an opaque value is cut short"));
        const std::uint8_t field_type = doc_[at];
        std::size_t len = 0, used = 0;
        CPPCDC_TRY(varlen(at + 1, avail - 1, len, used));
        if (len > avail - 1 - used) return fail(bad(at, "an opaque value runs past its end"));
        return opaque(field_type, doc_.data() + at + 1 + used, len, at);
      }
      default:
        return fail(bad(at, "unknown JSON value type " + std::to_string(type)));
    }
  }

  Status literal(std::uint8_t v, std::size_t at) {
    switch (v) {
      case 0:
        out_.append("null");
        return ok();
      case 1:
        out_.append("true");
        return ok();
      case 2:
        out_.append("false");
        return ok();
      default:
        return fail(bad(at, "unknown JSON literal " + std::to_string(v)));
    }
  }

  void integer(std::uint8_t type, std::uint64_t raw) {
    char buf[24];
    std::to_chars_result r{};
    switch (type) {
      case kInt16:
        r = std::to_chars(buf, buf + 24, static_cast<std::int16_t>(raw));
        break;
      case kInt32:
        r = std::to_chars(buf, buf + 24, static_cast<std::int32_t>(raw));
        break;
      case kInt64:
        r = std::to_chars(buf, buf + 24, static_cast<std::int64_t>(raw));
        break;
      default:
        r = std::to_chars(buf, buf + 24, raw);
        break;
    }
    out_.append(buf, r.ptr);
  }

  void print_double(double d) {
    const std::size_t at = out_.size();
    detail::append_double_gcvt(out_, d, kJsonDoubleWidth);
    // An integral double keeps a ".0" so that it reads back as a double.
    if (out_.find_first_of(".e", at) == std::string::npos) out_.append(".0");
  }

  // A variable-length length: 7 bits per byte, low group first, high bit = more (<= 5 bytes).
  Status varlen(std::size_t at, std::size_t avail, std::size_t& len, std::size_t& used) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 5; ++i) {
      if (i >= avail) return fail(bad(at, "a length is cut short"));
      const std::uint8_t b = doc_[at + i];
      v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        if (v > 0xffffffffu) return fail(bad(at, "a length is over 4 GiB"));
        len = static_cast<std::size_t>(v);
        used = i + 1;
        return ok();
      }
    }
    return fail(bad(at, "a length has more than 5 bytes"));
  }

  Status container(std::size_t at, std::size_t avail, bool large, bool object, int depth) {
    if (depth >= kMaxDepth) return fail(bad(at, "JSON nested deeper than 100 levels"));
    const std::size_t w = large ? 4 : 2;
    if (avail < 2 * w) return fail(bad(at, "a container header is cut short"));
    const std::uint8_t* base = doc_.data() + at;
    const auto count = static_cast<std::size_t>(ByteReader::load_le(base, w));
    const auto size = static_cast<std::size_t>(ByteReader::load_le(base + w, w));
    if (size > avail || size < 2 * w) {
      return fail(bad(at, "a container declares " + std::to_string(size) + " bytes, " +
                              std::to_string(avail) + " are there"));
    }
    const std::size_t key_entry = w + 2, value_entry = 1 + w;
    const std::size_t header = 2 * w + count * ((object ? key_entry : 0) + value_entry);
    if (count > size || header > size) {
      return fail(bad(at, "a container's " + std::to_string(count) + " entries do not fit in its " +
                              std::to_string(size) + " bytes"));
    }
    out_ += object ? '{' : '[';
    for (std::size_t i = 0; i < count; ++i) {
      if (i > 0) out_.append(", ");
      if (object) {
        const std::uint8_t* ke = base + 2 * w + i * key_entry;
        const auto koff = static_cast<std::size_t>(ByteReader::load_le(ke, w));
        const auto klen = static_cast<std::size_t>(ByteReader::load_le(ke + w, 2));
        if (koff > size || klen > size - koff) {
          return fail(bad(at + 2 * w + i * key_entry, "a key runs past its object"));
        }
        quote(reinterpret_cast<const char*>(base + koff), klen);
        out_.append(": ");
      }
      const std::size_t ve_off = 2 * w + (object ? count * key_entry : 0) + i * value_entry;
      const std::uint8_t* ve = base + ve_off;
      const std::uint8_t type = ve[0];
      const bool inlined = type == kLiteral || type == kInt16 || type == kUint16 ||
                           (large && (type == kInt32 || type == kUint32));
      if (inlined) {
        if (type == kLiteral) {
          CPPCDC_TRY(literal(ve[1], at + ve_off + 1));
        } else {
          integer(type, ByteReader::load_le(ve + 1, type <= kUint16 ? 2 : 4));
        }
        continue;
      }
      const auto voff = static_cast<std::size_t>(ByteReader::load_le(ve + 1, w));
      if (voff < header || voff >= size) {
        return fail(bad(at + ve_off,
                        "a value offset " + std::to_string(voff) + " lies outside its container"));
      }
      CPPCDC_TRY(value(type, at + voff, size - voff, depth + 1));
    }
    out_ += object ? '}' : ']';
    return ok();
  }

  void quote(const char* s, std::size_t n) {
    static constexpr char kHex[] = "0123456789abcdef";
    out_ += '"';
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      switch (c) {
        case '"':
          out_.append("\\\"");
          break;
        case '\\':
          out_.append("\\\\");
          break;
        case '\b':
          out_.append("\\b");
          break;
        case '\f':
          out_.append("\\f");
          break;
        case '\n':
          out_.append("\\n");
          break;
        case '\r':
          out_.append("\\r");
          break;
        case '\t':
          out_.append("\\t");
          break;
        default:
          if (c < 0x20) {
            out_.append("\\u00");
            out_ += kHex[c >> 4];
            out_ += kHex[c & 15];
          } else {
            out_ += static_cast<char>(c);
          }
      }
    }
    out_ += '"';
  }

  // Opaque: a MySQL field type and its value in the server's internal format.
  Status opaque(std::uint8_t field_type, const std::uint8_t* p, std::size_t n, std::size_t at) {
    switch (field_type) {
      case 246: {  // NEWDECIMAL: precision, scale, binary decimal
        if (n < 2 || !detail::decode_decimal(p + 2, n - 2, p[0], p[1], out_)) {
          return fail(bad(at, "an opaque DECIMAL is malformed"));
        }
        return ok();
      }
      case 10:
      case 11:
      case 12:
      case 7:
      case 14:
      case 17:
      case 18:
      case 19: {
        if (n < 8) return fail(bad(at, "an opaque temporal value is cut short"));
        std::int64_t packed = static_cast<std::int64_t>(ByteReader::load_le(p, 8));
        out_ += '"';
        const bool negative = packed < 0;
        const std::uint64_t u =
            negative ? 0 - static_cast<std::uint64_t>(packed) : static_cast<std::uint64_t>(packed);
        const std::uint64_t frac = u % (1 << 24), intpart = u >> 24;
        char buf[64];
        int len = 0;
        if (field_type == 11 || field_type == 19) {  // TIME
          const std::uint64_t hms = intpart;
          len = std::snprintf(buf, sizeof buf, "%s%02u:%02u:%02u.%06u", negative ? "-" : "",
                              static_cast<unsigned>((hms >> 12) % 1024),
                              static_cast<unsigned>((hms >> 6) % 64),
                              static_cast<unsigned>(hms % 64), static_cast<unsigned>(frac));
        } else {
          const std::uint64_t ymd = intpart >> 17, ym = ymd >> 5, hms = intpart % (1 << 17);
          if (field_type == 10 || field_type == 14) {
            len = std::snprintf(buf, sizeof buf, "%04u-%02u-%02u",
                                static_cast<unsigned>(ym / 13 % 10000),
                                static_cast<unsigned>(ym % 13), static_cast<unsigned>(ymd % 32));
          } else {
            len = std::snprintf(
                buf, sizeof buf, "%04u-%02u-%02u %02u:%02u:%02u.%06u",
                static_cast<unsigned>(ym / 13 % 10000), static_cast<unsigned>(ym % 13),
                static_cast<unsigned>(ymd % 32), static_cast<unsigned>(hms >> 12),
                static_cast<unsigned>((hms >> 6) % 64), static_cast<unsigned>(hms % 64),
                static_cast<unsigned>(frac % 1000000));
          }
        }
        out_.append(buf, static_cast<std::size_t>(len > 0 ? len : 0));
        out_ += '"';
        return ok();
      }
      default: {
        static constexpr char kB64[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        out_.append("\"base64:type");
        out_.append(std::to_string(field_type));
        out_ += ':';
        for (std::size_t i = 0; i < n; i += 3) {
          const std::uint32_t b0 = p[i], b1 = i + 1 < n ? p[i + 1] : 0,
                              b2 = i + 2 < n ? p[i + 2] : 0;
          const std::uint32_t v = b0 << 16 | b1 << 8 | b2;
          out_ += kB64[v >> 18];
          out_ += kB64[(v >> 12) & 63];
          out_ += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
          out_ += i + 2 < n ? kB64[v & 63] : '=';
        }
        out_ += '"';
        return ok();
      }
    }
  }

  std::span<const std::uint8_t> doc_;
  std::string& out_;
};

}  // namespace

Status json_binary_to_text(std::span<const std::uint8_t> bytes, std::string& out) {
  const std::size_t at = out.size();
  JsonPrinter printer(bytes, out);
  auto st = printer.document();
  if (!st) out.resize(at);
  return st;
}

}  // namespace cppcdc::mysql
