// MySQL binary JSON to text: small and large layouts, every scalar type, opaque values,
// escaping, malformed documents. Documents are built by the encoder below, written from
// MySQL's published layout (json_binary.h).

#include "source/mysql/json_binary.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "unit/mysql/binlog_bytes.hpp"

namespace cppcdc::mysql {
namespace {

using test::Bytes;
using test::Wire;
using ::testing::HasSubstr;

struct J {
  enum Kind { kObj, kArr, kInt, kUInt64, kDbl, kStr, kLit, kOpaque } kind = kLit;
  std::vector<std::pair<std::string, J>> obj;
  std::vector<J> arr;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  std::string s;
  std::uint8_t lit = 0;  // 0 null, 1 true, 2 false
  std::uint8_t opaque_type = 0;
  Bytes opaque;
};

J obj(std::vector<std::pair<std::string, J>> m) {
  J j;
  j.kind = J::kObj;
  j.obj = std::move(m);
  return j;
}
J arr(std::vector<J> a) {
  J j;
  j.kind = J::kArr;
  j.arr = std::move(a);
  return j;
}
J num(std::int64_t v) {
  J j;
  j.kind = J::kInt;
  j.i = v;
  return j;
}
J unum(std::uint64_t v) {
  J j;
  j.kind = J::kUInt64;
  j.u = v;
  return j;
}
J dbl(double v) {
  J j;
  j.kind = J::kDbl;
  j.d = v;
  return j;
}
J str(std::string v) {
  J j;
  j.kind = J::kStr;
  j.s = std::move(v);
  return j;
}
J lit(std::uint8_t v) {
  J j;
  j.kind = J::kLit;
  j.lit = v;
  return j;
}
J opaque(std::uint8_t type, Bytes b) {
  J j;
  j.kind = J::kOpaque;
  j.opaque_type = type;
  j.opaque = std::move(b);
  return j;
}

std::uint8_t type_of(const J& j, bool large) {
  switch (j.kind) {
    case J::kObj:
      return large ? 0x01 : 0x00;
    case J::kArr:
      return large ? 0x03 : 0x02;
    case J::kInt:
      if (j.i >= -32768 && j.i <= 32767) return 0x05;
      if (j.i >= INT32_MIN && j.i <= INT32_MAX) return 0x07;
      return 0x09;
    case J::kUInt64:
      return 0x0a;
    case J::kDbl:
      return 0x0b;
    case J::kStr:
      return 0x0c;
    case J::kLit:
      return 0x04;
    case J::kOpaque:
      return 0x0f;
  }
  return 0;
}

void varlen(Wire& w, std::size_t n) {
  do {
    std::uint8_t b = n & 0x7f;
    n >>= 7;
    if (n) b |= 0x80;
    w.u8(b);
  } while (n);
}

Bytes scalar(const J& j) {
  Wire w;
  switch (j.kind) {
    case J::kInt: {
      const auto t = type_of(j, true);
      w.le(static_cast<std::uint64_t>(j.i), t == 0x05 ? 2 : t == 0x07 ? 4 : 8);
      break;
    }
    case J::kUInt64:
      w.u64(j.u);
      break;
    case J::kDbl: {
      std::uint64_t b;
      std::memcpy(&b, &j.d, 8);
      w.u64(b);
      break;
    }
    case J::kStr:
      varlen(w, j.s.size());
      w.raw(j.s);
      break;
    case J::kLit:
      w.u8(j.lit);
      break;
    case J::kOpaque:
      w.u8(j.opaque_type);
      varlen(w, j.opaque.size());
      w.raw(j.opaque);
      break;
    default:
      break;
  }
  return w.bytes();
}

Bytes container(const J& j, bool large);

Bytes value_data(const J& j, bool large) {
  if (j.kind == J::kObj || j.kind == J::kArr) return container(j, large);
  return scalar(j);
}

Bytes container(const J& j, bool large) {
  const int w = large ? 4 : 2;
  const bool is_obj = j.kind == J::kObj;
  const std::size_t n = is_obj ? j.obj.size() : j.arr.size();
  const std::size_t header = 2 * w + n * ((is_obj ? w + 2 : 0) + 1 + w);
  Bytes tail;
  std::vector<std::size_t> key_off;
  if (is_obj) {
    for (const auto& [k, v] : j.obj) {
      key_off.push_back(header + tail.size());
      tail.insert(tail.end(), k.begin(), k.end());
    }
  }
  Wire entries;
  for (std::size_t i = 0; i < n; ++i) {
    const J& v = is_obj ? j.obj[i].second : j.arr[i];
    const auto t = type_of(v, large);
    entries.u8(t);
    if (t == 0x04 || t == 0x05 || (large && t == 0x07)) {
      if (t == 0x04)
        entries.le(v.lit, w);
      else
        entries.le(static_cast<std::uint64_t>(v.i) & (t == 0x05 ? 0xffff : 0xffffffff), w);
      continue;
    }
    entries.le(header + tail.size(), w);
    const Bytes data = value_data(v, large);
    tail.insert(tail.end(), data.begin(), data.end());
  }
  Wire out;
  out.le(n, w).le(header + tail.size(), w);
  if (is_obj) {
    for (std::size_t i = 0; i < n; ++i) out.le(key_off[i], w).u16(j.obj[i].first.size());
  }
  out.raw(entries.bytes()).raw(tail);
  return out.bytes();
}

Bytes doc(const J& j, bool large = false) {
  Bytes b{type_of(j, large)};
  const Bytes d = value_data(j, large);
  b.insert(b.end(), d.begin(), d.end());
  return b;
}

std::string text(const Bytes& b) {
  std::string out;
  auto st = json_binary_to_text(b, out);
  if (!st) return "ERROR " + st.error().message();
  return out;
}

TEST(JsonBinary, SmallObjectInMySqlPrintingStyle) {
  const J j = obj({{"a", num(1)}, {"b", arr({num(1), num(2)})}});
  const Bytes b = doc(j);
  // Hand-checked bytes of the small layout.
  EXPECT_EQ(b, (Bytes{0x00, 2,   0, 30, 0,               // count 2, size 30
                      18,   0,   1, 0,  19, 0, 1,    0,  // keys at 18 and 19, length 1
                      0x05, 1,   0,                      // "a": int16 1 inline
                      0x02, 20,  0,                      // "b": small array at 20
                      'a',  'b', 2, 0,  10, 0, 0x05, 1, 0, 0x05, 2, 0}));
  EXPECT_EQ(text(b), R"({"a": 1, "b": [1, 2]})");
}

TEST(JsonBinary, LargeLayoutGivesTheSameText) {
  const J j =
      obj({{"k", arr({num(70000), num(-5), str("x"), lit(0), lit(1), lit(2)})}, {"n", obj({})}});
  EXPECT_EQ(text(doc(j, true)), R"({"k": [70000, -5, "x", null, true, false], "n": {}})");
  EXPECT_EQ(text(doc(j, false)), text(doc(j, true)));
}

TEST(JsonBinary, LargeDocumentOverSixtyFourKilobytes) {
  std::vector<J> items;
  for (int i = 0; i < 5000; ++i)
    items.push_back(str(std::string(20, static_cast<char>('a' + i % 26))));
  const J j = arr(std::move(items));
  const std::string t = text(doc(j, true));
  ASSERT_EQ(t.substr(0, 26), R"(["aaaaaaaaaaaaaaaaaaaa", ")");
  EXPECT_EQ(t.size(), 2 + 5000 * 22 + 4999 * 2);
}

TEST(JsonBinary, ScalarsAtTheTopLevel) {
  EXPECT_EQ(text(doc(num(-32768))), "-32768");
  EXPECT_EQ(text(doc(num(2147483647))), "2147483647");
  EXPECT_EQ(text(doc(num(std::numeric_limits<std::int64_t>::min()))), "-9223372036854775808");
  EXPECT_EQ(text(doc(unum(18446744073709551615ull))), "18446744073709551615");
  EXPECT_EQ(text(doc(dbl(2.5))), "2.5");
  EXPECT_EQ(text(doc(dbl(3.0))), "3.0");
  EXPECT_EQ(text(doc(dbl(-0.1))), "-0.1");
  EXPECT_EQ(text(doc(dbl(1e300))), "1e300");
  EXPECT_EQ(text(doc(str("tab\there \"q\" \\ \x01 \xc3\xa9"))),
            "\"tab\\there \\\"q\\\" \\\\ \\u0001 \xc3\xa9\"");
  EXPECT_EQ(text(doc(lit(1))), "true");
  EXPECT_EQ(text({}), "null");
}

TEST(JsonBinary, OpaqueDecimalDateTimeAndOthers) {
  // DECIMAL(5,2) -123.45: precision, scale, then the binary decimal.
  EXPECT_EQ(text(doc(opaque(246, {5, 2, 0x7f, 0x84, 0xd2}))), "-123.45");
  const std::uint64_t ymd = ((2015ull * 13 + 1) << 5) | 15;
  const std::uint64_t hms = (23ull << 12) | (24 << 6) | 25;
  const std::uint64_t dt = (((ymd << 17) | hms) << 24) + 500000;
  EXPECT_EQ(text(doc(opaque(12, Wire().u64(dt).bytes()))), "\"2015-01-15 23:24:25.500000\"");
  EXPECT_EQ(text(doc(opaque(10, Wire().u64((ymd << 17) << 24).bytes()))), "\"2015-01-15\"");
  const std::int64_t t = -static_cast<std::int64_t>((((1ull << 12) | (2 << 6) | 3) << 24) + 4);
  EXPECT_EQ(text(doc(opaque(11, Wire().u64(static_cast<std::uint64_t>(t)).bytes()))),
            "\"-01:02:03.000004\"");
  EXPECT_EQ(text(doc(opaque(252, {'h', 'i', '!'}))), "\"base64:type252:aGkh\"");
}

TEST(JsonBinary, MalformedDocumentsAreErrors) {
  EXPECT_THAT(text({0x00, 2, 0}), HasSubstr("ERROR"));
  EXPECT_THAT(text({0x42}), HasSubstr("unknown JSON value type"));
  EXPECT_THAT(text({0x04, 7}), HasSubstr("unknown JSON literal"));
  // A value offset pointing outside the object.
  EXPECT_THAT(text({0x02, 1, 0, 7, 0, 0x0c, 200, 0}), HasSubstr("outside its container"));
  // Every truncation of a valid document.
  const Bytes b = doc(obj({{"a", arr({str("xyz"), dbl(1.5), num(100000)})}, {"b", lit(2)}}));
  EXPECT_EQ(text(b), R"({"a": ["xyz", 1.5, 100000], "b": false})");
  for (std::size_t cut = 1; cut < b.size(); ++cut) {
    EXPECT_THAT(text(Bytes(b.begin(), b.begin() + cut)), HasSubstr("ERROR")) << cut;
  }
}

TEST(JsonBinary, DeepNestingIsAnErrorNotAStackOverflow) {
  // 200 nested arrays, built from the inside out.
  J j = num(1);
  for (int i = 0; i < 200; ++i) j = arr({j});
  EXPECT_THAT(text(doc(j, true)), HasSubstr("deeper than 100"));
}

}  // namespace
}  // namespace cppcdc::mysql
