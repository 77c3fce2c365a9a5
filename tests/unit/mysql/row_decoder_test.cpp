// Row image decoding: every column type at its extremes, NULL and absent columns, FULL,
// MINIMAL and NOBLOB images, malformed images. Values are built from the server's published
// storage formats and compared with the text the server's text protocol prints.

#include "source/mysql/row_decoder.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "source/mysql/json_binary.hpp"
#include "unit/mysql/binlog_bytes.hpp"

namespace cppcdc::mysql {
namespace {

using test::Bytes;
using test::Wire;
using ::testing::HasSubstr;

struct Col {
  std::uint8_t type;
  Bytes meta;
  ColumnSchema schema;
};

ColumnSchema cs(std::string name, std::string column_type = "", std::string charset = "",
                bool is_unsigned = false, std::vector<std::string> elements = {}) {
  ColumnSchema c;
  c.name = std::move(name);
  c.column_type = std::move(column_type);
  c.charset = std::move(charset);
  c.is_unsigned = is_unsigned;
  c.elements = std::move(elements);
  return c;
}

// A table map and one rows event over `cols`, decoded; rows are read with RowReader.
class Table {
 public:
  Table(std::vector<Col> cols, Flavor flavor = Flavor::kMariaDb) : flavor_(flavor) {
    std::vector<test::Column> tc;
    for (auto& c : cols) {
      tc.push_back({c.type, c.meta});
      schema_.columns.push_back(c.schema);
    }
    schema_.database = "app";
    schema_.table = "t";
    auto fd = decoder_.decode(test::format_description());
    EXPECT_TRUE(fd);
    tm_bytes_ = test::event(19, test::table_map_body(42, "app", "t", tc));
    auto tm = decoder_.decode(tm_bytes_);
    EXPECT_TRUE(tm) << tm.error().report();
    map_ = *tm->table_map;
  }

  // Reads every row of a rows event of `type` (23 write, 24 update, 25 delete).
  Result<std::vector<DecodedRow>> rows(std::uint8_t type, const Bytes& present, const Bytes& images,
                                       const Bytes* after = nullptr) {
    rows_bytes_ =
        test::event(type, test::rows_body(42, schema_.columns.size(), present, after, images));
    auto ev = decoder_.decode(rows_bytes_);
    if (!ev) return fail(ev.error());
    rows_ = *ev->rows;
    RowReader reader(map_, schema_, rows_, flavor_);
    std::vector<DecodedRow> out;
    DecodedRow row;
    while (true) {
      auto more = reader.next(row);
      if (!more) return fail(more.error());
      if (!*more) break;
      out.push_back(row);
    }
    return out;
  }

  // One inserted row of every column present: "name=value" joined by " | " (NULL: name=NULL).
  std::string insert(const Bytes& image) {
    auto r = rows(23, test::all_bits(schema_.columns.size()), image);
    if (!r) return "ERROR " + r.error().message();
    if (r->size() != 1) return "ROWS " + std::to_string(r->size());
    return text(*(*r)[0].after);
  }

  static std::string text(const Row& row) {
    std::string s;
    for (const auto& c : row) {
      if (!s.empty()) s += " | ";
      s += c.name + "=" + (c.text ? *c.text : "NULL");
    }
    return s;
  }

  TableSchema& schema() { return schema_; }

 private:
  Flavor flavor_;
  EventDecoder decoder_{Flavor::kMariaDb};
  TableSchema schema_;
  Bytes tm_bytes_, rows_bytes_;
  TableMapEvent map_;
  RowsEvent rows_;
};

Bytes null_bits(std::size_t n, std::initializer_list<std::size_t> nulls = {}) {
  return test::bitmap(n, nulls);
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(RowDecoder, IntegersSignedAndUnsignedAtTheirExtremes) {
  Table t({{1, {}, cs("ti")},
           {1, {}, cs("tu", "", "", true)},
           {2, {}, cs("si")},
           {2, {}, cs("su", "", "", true)},
           {9, {}, cs("mi")},
           {9, {}, cs("mu", "", "", true)},
           {3, {}, cs("li")},
           {3, {}, cs("lu", "", "", true)},
           {8, {}, cs("bi")},
           {8, {}, cs("bu", "", "", true)}});
  Wire w;
  w.raw(null_bits(10))
      .u8(0x80)
      .u8(0xff)
      .u16(0x8000)
      .u16(0xffff)
      .u24(0x800000)
      .u24(0xffffff)
      .u32(0x80000000)
      .u32(0xffffffff)
      .u64(0x8000000000000000ull)
      .u64(~0ull);
  EXPECT_EQ(t.insert(w.bytes()),
            "ti=-128 | tu=255 | si=-32768 | su=65535 | mi=-8388608 | mu=16777215 | "
            "li=-2147483648 | lu=4294967295 | bi=-9223372036854775808 | "
            "bu=18446744073709551615");
  Wire w2;
  w2.raw(null_bits(10))
      .u8(0x7f)
      .u8(0)
      .u16(0x7fff)
      .u16(0)
      .u24(0x7fffff)
      .u24(0)
      .u32(0x7fffffff)
      .u32(0)
      .u64(0x7fffffffffffffffull)
      .u64(0);
  EXPECT_EQ(t.insert(w2.bytes()),
            "ti=127 | tu=0 | si=32767 | su=0 | mi=8388607 | mu=0 | li=2147483647 | lu=0 | "
            "bi=9223372036854775807 | bu=0");
}

// NEWDECIMAL's binary form, written from the format description: 9 digits per 4 bytes.
Bytes encode_decimal(std::string v, int precision, int scale) {
  static const int kBytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
  bool neg = !v.empty() && v[0] == '-';
  if (neg) v.erase(0, 1);
  std::string ip = v.substr(0, v.find('.'));
  std::string fp = v.find('.') == std::string::npos ? "" : v.substr(v.find('.') + 1);
  const int intg = precision - scale;
  ip = std::string(static_cast<std::size_t>(intg) - ip.size(), '0') + ip;
  fp += std::string(static_cast<std::size_t>(scale) - fp.size(), '0');
  Wire w;
  auto put = [&](const std::string& digits, int n) {
    w.be(std::stoull(digits.empty() ? "0" : digits), n);
  };
  const int lead = intg % 9;
  std::size_t pos = 0;
  if (lead) {
    put(ip.substr(0, static_cast<std::size_t>(lead)), kBytes[lead]);
    pos = lead;
  }
  for (; pos < ip.size(); pos += 9) put(ip.substr(pos, 9), 4);
  std::size_t f = 0;
  for (; f + 9 <= fp.size(); f += 9) put(fp.substr(f, 9), 4);
  if (scale % 9) put(fp.substr(f), kBytes[scale % 9]);
  Bytes b = w.bytes();
  b[0] ^= 0x80;
  if (neg)
    for (auto& x : b) x = static_cast<std::uint8_t>(~x);
  return b;
}

TEST(RowDecoder, DecimalNegativeWideAndScaleZero) {
  Table t({{246, {10, 4}, cs("a")},
           {246, {65, 30}, cs("b")},
           {246, {5, 0}, cs("c")},
           {246, {5, 2}, cs("d")},
           {246, {18, 9}, cs("e")}});
  EXPECT_EQ(encode_decimal("-1234.5600", 10, 4), (Bytes{0x7f, 0xfb, 0x2d, 0xea, 0x1f}));
  const std::string wide = "12345678901234567890123456789012345.123456789012345678901234567890";
  auto image = cat({null_bits(5), encode_decimal("-1234.5600", 10, 4), encode_decimal(wide, 65, 30),
                    encode_decimal("-12345", 5, 0), encode_decimal("0.00", 5, 2),
                    encode_decimal("-0.000000001", 18, 9)});
  EXPECT_EQ(t.insert(image), "a=-1234.5600 | b=" + wide + " | c=-12345 | d=0.00 | e=-0.000000001");
  auto image2 = cat({null_bits(5), encode_decimal("999999.9999", 10, 4),
                     encode_decimal("-" + wide, 65, 30), encode_decimal("99999", 5, 0),
                     encode_decimal("-999.99", 5, 2), encode_decimal("1", 18, 9)});
  EXPECT_EQ(t.insert(image2),
            "a=999999.9999 | b=-" + wide + " | c=99999 | d=-999.99 | e=1.000000000");
}

// Every precision and scale, digits drawn at random with runs of 0s and 9s (group edges), on
// both sides of the 18-digit line where decoding switches from 64-bit numbers to digit groups:
// the text is the canonical form of the number encoded.
TEST(RowDecoder, DecimalEveryPrecisionAndScaleRoundTrips) {
  std::mt19937_64 rng(20261205);
  auto digits = [&](int n) {
    std::string d;
    const int mode = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      d += mode == 0   ? '9'
           : mode == 1 ? static_cast<char>('0' + (i % 3 == 0 ? 0 : rng() % 10))
                       : static_cast<char>('0' + rng() % 10);
    }
    return d;
  };
  for (int precision = 1; precision <= 65; ++precision) {
    for (int scale = 0; scale <= std::min(precision, 30); ++scale) {
      for (int round = 0; round < 6; ++round) {
        const int intg = precision - scale;
        std::string ip = digits(intg), fp = digits(scale);
        const bool negative = rng() % 2 == 0;
        std::string text = (negative ? "-" : "") + ip + (scale > 0 ? "." + fp : "");
        const Bytes b = encode_decimal(text, precision, scale);
        // The canonical text: no leading zeros before the point, no sign on zero.
        ip.erase(0, std::min(ip.find_first_not_of('0'), ip.size()));
        if (ip.empty()) ip = "0";
        const bool zero = ip == "0" && fp.find_first_not_of('0') == std::string::npos;
        const std::string want = (negative && !zero ? "-" : "") + ip + (scale > 0 ? "." + fp : "");
        std::string got = "x";
        ASSERT_TRUE(detail::decode_decimal(b.data(), b.size(), precision, scale, got))
            << precision << "," << scale;
        EXPECT_EQ(got, "x" + want) << "DECIMAL(" << precision << "," << scale << ") " << text;
      }
    }
  }
}

Bytes f32(float f) {
  Bytes b(4);
  std::memcpy(b.data(), &f, 4);
  return b;
}
Bytes f64(double d) {
  Bytes b(8);
  std::memcpy(b.data(), &d, 8);
  return b;
}

std::string one_float(float f, std::string column_type = "float") {
  Table t({{4, {4}, cs("f", column_type)}});
  return t.insert(cat({null_bits(1), f32(f)})).substr(2);
}
std::string one_double(double d, std::string column_type = "double") {
  Table t({{5, {8}, cs("d", column_type)}});
  return t.insert(cat({null_bits(1), f64(d)})).substr(2);
}

TEST(RowDecoder, FloatPrintsSixSignificantDigitsLikeTheServer) {
  EXPECT_EQ(one_float(3.14f), "3.14");
  EXPECT_EQ(one_float(-1.5f), "-1.5");
  EXPECT_EQ(one_float(0.0f), "0");
  EXPECT_EQ(one_float(123456789.0f), "123457000");
  EXPECT_EQ(one_float(1e20f), "1e20");
  EXPECT_EQ(one_float(0.0001f), "0.0001");
  EXPECT_EQ(one_float(1e-20f), "1e-20");
  EXPECT_EQ(one_float(3.4028235e38f), "3.40282e38");
  EXPECT_EQ(one_float(-1.17549435e-38f), "-1.17549e-38");
  EXPECT_EQ(one_float(2.5f, "float(7,3)"), "2.500");
}

TEST(RowDecoder, DoublePrintsTheShortestRoundTrip) {
  EXPECT_EQ(one_double(3.141592653589793), "3.141592653589793");
  EXPECT_EQ(one_double(0.1), "0.1");
  EXPECT_EQ(one_double(-2.5), "-2.5");
  EXPECT_EQ(one_double(1e100), "1e100");
  EXPECT_EQ(one_double(1e15), "1e15");
  EXPECT_EQ(one_double(1e14), "100000000000000");
  EXPECT_EQ(one_double(123456789012345680.0), "1.2345678901234568e17");
  EXPECT_EQ(one_double(1e-15), "0.000000000000001");
  EXPECT_EQ(one_double(1e-16), "1e-16");
  EXPECT_EQ(one_double(1.7976931348623157e308), "1.7976931348623157e308");
  EXPECT_EQ(one_double(-2.2250738585072014e-308), "-2.2250738585072014e-308");
  EXPECT_EQ(one_double(1.005, "double(10,2)"), "1.00");
}

TEST(RowDecoder, BitYearDate) {
  Table t({{16, Wire().u8(2).u8(1).bytes(), cs("b10")},
           {16, Wire().u8(1).u8(0).bytes(), cs("b1")},
           {16, Wire().u8(0).u8(8).bytes(), cs("b64")},
           {13, {}, cs("y0")},
           {13, {}, cs("y")},
           {10, {}, cs("d0")},
           {10, {}, cs("dp")},
           {10, {}, cs("dmax")}});
  Wire w;
  w.raw(null_bits(8))
      .u8(0x03)
      .u8(0xff)
      .u8(0x01)
      .u64(~0ull)
      .u8(0)
      .u8(155)
      .u24(0)
      .u24(2020u << 9)
      .u24(9999u << 9 | 12u << 5 | 31u);
  EXPECT_EQ(t.insert(w.bytes()),
            "b10=\\x03ff | b1=\\x01 | b64=\\xffffffffffffffff | y0=0000 | y=2055 | "
            "d0=0000-00-00 | dp=2020-00-00 | dmax=9999-12-31");
}

// TIME2 as the server packs it: (hms << 24) + microseconds, negated for negative values.
Bytes time2(bool neg, unsigned h, unsigned m, unsigned s, unsigned micros, int fsp) {
  const std::int64_t hms = (static_cast<std::int64_t>(h) << 12) | (m << 6) | s;
  std::int64_t packed = (hms << 24) + micros;
  if (neg) packed = -packed;
  Wire w;
  const std::int64_t intpart = packed >> 24;       // floor
  const std::int64_t frac = packed % (1LL << 24);  // sign of packed
  switch (fsp) {
    case 0:
      w.be(static_cast<std::uint64_t>(intpart + 0x800000), 3);
      break;
    case 1:
    case 2:
      w.be(static_cast<std::uint64_t>(intpart + 0x800000), 3)
          .be(static_cast<std::uint64_t>(frac / 10000), 1);
      break;
    case 3:
    case 4:
      w.be(static_cast<std::uint64_t>(intpart + 0x800000), 3)
          .be(static_cast<std::uint64_t>(frac / 100), 2);
      break;
    default:
      w.be(static_cast<std::uint64_t>(packed + 0x800000000000LL), 6);
  }
  return w.bytes();
}

TEST(RowDecoder, Time2NegativeOver24HoursWithFractions) {
  Table t({{19, {0}, cs("t0")},
           {19, {0}, cs("tmin")},
           {19, {2}, cs("t2")},
           {19, {3}, cs("t3")},
           {19, {6}, cs("t6")},
           {19, {6}, cs("t6n")},
           {19, {1}, cs("t1")}});
  auto image = cat({null_bits(7), time2(false, 838, 59, 59, 0, 0), time2(true, 838, 59, 59, 0, 0),
                    time2(true, 0, 0, 1, 500000, 2), time2(true, 12, 34, 56, 789000, 3),
                    time2(false, 100, 0, 0, 1, 6), time2(true, 0, 0, 0, 1, 6),
                    time2(false, 25, 0, 0, 900000, 1)});
  EXPECT_EQ(t.insert(image),
            "t0=838:59:59 | tmin=-838:59:59 | t2=-00:00:01.50 | t3=-12:34:56.789 | "
            "t6=100:00:00.000001 | t6n=-00:00:00.000001 | t1=25:00:00.9");
}

Bytes datetime2(unsigned y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned s,
                unsigned micros, int fsp) {
  const std::uint64_t ymd = ((static_cast<std::uint64_t>(y) * 13 + mo) << 5) | d;
  const std::uint64_t hms = (h << 12) | (mi << 6) | s;
  Wire w;
  w.be(((ymd << 17) | hms) + 0x8000000000ull, 5);
  const int fb = (fsp + 1) / 2;
  if (fb == 1) w.be(micros / 10000, 1);
  if (fb == 2) w.be(micros / 100, 2);
  if (fb == 3) w.be(micros, 3);
  return w.bytes();
}

TEST(RowDecoder, DateTime2AndTimestamp2WithFsp) {
  Table t({{18, {0}, cs("dt0")},
           {18, {6}, cs("dtmax")},
           {18, {3}, cs("dtz")},
           {17, {0}, cs("ts")},
           {17, {3}, cs("ts3")},
           {17, {6}, cs("ts0")},
           {18, {1}, cs("dt1")}});
  Wire ts;
  ts.be(1700000000, 4).be(1700000000, 4).be(1230, 2).be(0, 4).be(0, 3);
  auto image =
      cat({null_bits(7), datetime2(1000, 1, 1, 0, 0, 0, 0, 0),
           datetime2(9999, 12, 31, 23, 59, 59, 999999, 6), datetime2(0, 0, 0, 0, 0, 0, 0, 3),
           ts.bytes(), datetime2(2020, 2, 29, 12, 0, 0, 500000, 1)});
  EXPECT_EQ(t.insert(image),
            "dt0=1000-01-01 00:00:00 | dtmax=9999-12-31 23:59:59.999999 | "
            "dtz=0000-00-00 00:00:00.000 | ts=2023-11-14 22:13:20 | "
            "ts3=2023-11-14 22:13:20.123 | ts0=0000-00-00 00:00:00.000000 | "
            "dt1=2020-02-29 12:00:00.5");
}

TEST(RowDecoder, OldTemporalFormats) {
  Table t({{11, {}, cs("t")},
           {11, {}, cs("tn")},
           {12, {}, cs("dt")},
           {12, {}, cs("dt0")},
           {7, {}, cs("ts")}});
  Wire w;
  w.raw(null_bits(5))
      .u24(8385959)
      .u24(static_cast<std::uint32_t>(-123456) & 0xffffff)
      .u64(20201231235958ull)
      .u64(0)
      .u32(86400);
  EXPECT_EQ(t.insert(w.bytes()),
            "t=838:59:59 | tn=-12:34:56 | dt=2020-12-31 23:59:58 | dt0=0000-00-00 00:00:00 | "
            "ts=1970-01-02 00:00:00");
}

TEST(RowDecoder, OldFractionalTemporalFormatIsAnErrorWithRemedy) {
  Table t({{12, {}, cs("dt", "datetime(3)")}});
  EXPECT_THAT(t.insert(cat({null_bits(1), Bytes(8, 0)})), HasSubstr("mysql56_temporal_format"));
}

TEST(RowDecoder, StringsCharsetsAndBinary) {
  Table t({{15, Wire().u16(40).bytes(), cs("v", "varchar(10)", "utf8mb4")},
           {15, Wire().u16(1200).bytes(), cs("vlong", "varchar(300)", "utf8mb4")},
           {254, {0xfe, 40}, cs("c", "char(10)", "utf8mb4")},
           {254, {0xce, 0xfc}, cs("c255", "char(255)", "utf8mb4")},
           {15, Wire().u16(10).bytes(), cs("l1", "varchar(10)", "latin1")},
           {254, {0xfe, 4}, cs("bin", "binary(4)", "")},
           {15, Wire().u16(8).bytes(), cs("vb", "varbinary(8)", "")},
           {252, {2}, cs("txt", "text", "utf8mb4")},
           {252, {2}, cs("blb", "blob", "")},
           {252, {1}, cs("g2", "tinytext", "cp1251")}});
  const std::string long_s(300, 'z');
  Wire w;
  w.raw(null_bits(10))
      .u8(6)
      .raw("w\xc3\xb6rld")
      .u16(300)
      .raw(long_s)
      .u8(3)
      .raw("abc")
      .u16(3)
      .raw("xyz")
      .u8(6)
      .raw("w\xf6rld\x80")
      .u8(2)
      .raw("ab")
      .u8(3)
      .raw(std::string("\0\1\xff", 3))
      .u16(5)
      .raw("hello")
      .u16(2)
      .raw("\xde\xad")
      .u8(3)
      .raw("\xcf\xf0\xe8");
  EXPECT_EQ(
      t.insert(w.bytes()),
      "v=w\xc3\xb6rld | vlong=" + long_s +
          " | c=abc | c255=xyz | l1=w\xc3\xb6rld\xe2\x82\xac | "
          "bin=\\x61620000 | vb=\\x0001ff | txt=hello | blb=\\xdead | g2=\xd0\x9f\xd1\x80\xd0\xb8");
}

TEST(RowDecoder, EnumAndSetWithMultiByteLabelsAndTheEmptyValue) {
  Table t({{254, {0xf7, 1}, cs("e", "enum('ä','b')", "utf8mb4", false, {"\xc3\xa4", "b"})},
           {254, {0xf7, 1}, cs("e0", "enum('a')", "utf8mb4", false, {"a"})},
           {254,
            {0xf7, 2},
            cs("e2", "enum(...)", "utf8mb4", false, std::vector<std::string>(300, "x"))},
           {254, {0xf8, 1}, cs("s", "set('ö','b','c')", "utf8mb4", false, {"\xc3\xb6", "b", "c"})},
           {254, {0xf8, 1}, cs("s0", "set('a')", "utf8mb4", false, {"a"})}});
  Wire w;
  w.raw(null_bits(5)).u8(1).u8(0).u16(300).u8(0b101).u8(0);
  EXPECT_EQ(t.insert(w.bytes()), "e=\xc3\xa4 | e0= | e2=x | s=\xc3\xb6,c | s0=");
  Wire bad;
  bad.raw(null_bits(5)).u8(3).u8(0).u16(1).u8(0).u8(0);
  EXPECT_THAT(t.insert(bad.bytes()), HasSubstr("column e: ENUM index 3 has no label"));
}

TEST(RowDecoder, Inet6UuidGeometryAndJsonText) {
  Table t({{254, {0xfe, 16}, cs("ip", "inet6")},
           {254, {0xfe, 16}, cs("ip4", "inet6")},
           {254, {0xfe, 16}, cs("ip0", "inet6")},
           {254, {0xfe, 16}, cs("u", "uuid")},
           {255, {4}, cs("g", "point")},
           {252, {4}, cs("j", "longtext", "utf8mb4")}});
  t.schema().columns[5].is_json = true;
  const Bytes v6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const Bytes v4 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4};
  const Bytes uuid = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12,
                      0xd3, 0xa4, 0x56, 0x42, 0x66, 0x55, 0x44};  // trailing 00 00 not logged
  const Bytes point = {0, 0, 0,    0,    1, 1, 0, 0, 0, 0, 0, 0,   0,
                       0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40};
  Wire w;
  w.raw(null_bits(6))
      .u8(16)
      .raw(v6)
      .u8(16)
      .raw(v4)
      .u8(0)
      .u8(uuid.size())
      .raw(uuid)
      .u32(point.size())
      .raw(point)
      .u32(7)
      .raw("{\"a\":1}");
  EXPECT_EQ(t.insert(w.bytes()),
            "ip=2001:db8::1 | ip4=::ffff:1.2.3.4 | ip0=:: | "
            "u=123e4567-e89b-12d3-a456-426655440000 | "
            "g=\\x000000000101000000000000000000f03f0000000000000040 | j={\"a\":1}");
}

TEST(RowDecoder, NullsAndAbsentColumns) {
  Table t({{3, {}, cs("id")}, {15, Wire().u16(40).bytes(), cs("name")}, {252, {2}, cs("body")}});
  // FULL image with NULL name: the NULL bitmap covers all three present columns.
  Wire full;
  full.raw(null_bits(3, {1})).u32(7).u16(2).raw("hi");
  EXPECT_EQ(t.insert(full.bytes()), "id=7 | name=NULL | body=hi");
  // NOBLOB-style image: body absent; the NULL bitmap covers id and name only.
  Wire noblob;
  noblob.raw(null_bits(2, {1})).u32(8);
  auto r = t.rows(23, test::bitmap(3, {0, 1}), noblob.bytes());
  ASSERT_TRUE(r) << r.error().report();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(Table::text(*(*r)[0].after), "id=8 | name=NULL");
  EXPECT_FALSE((*r)[0].before);
}

TEST(RowDecoder, MinimalUpdateAndDeleteImages) {
  Table t({{3, {}, cs("id")}, {15, Wire().u16(40).bytes(), cs("name")}, {3, {}, cs("n")}});
  // MINIMAL update: before = key only, after = the changed columns (id, n).
  const Bytes after_bits = test::bitmap(3, {0, 2});
  Wire images;
  images.raw(null_bits(1))
      .u32(1)  // before: id=1
      .raw(null_bits(2, {1}))
      .u32(1);  // after: id=1, n=NULL
  images.raw(null_bits(1)).u32(2).raw(null_bits(2)).u32(2).u32(5);
  auto r = t.rows(24, test::bitmap(3, {0}), images.bytes(), &after_bits);
  ASSERT_TRUE(r) << r.error().report();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(Table::text(*(*r)[0].before), "id=1");
  EXPECT_EQ(Table::text(*(*r)[0].after), "id=1 | n=NULL");
  EXPECT_EQ(Table::text(*(*r)[1].before), "id=2");
  EXPECT_EQ(Table::text(*(*r)[1].after), "id=2 | n=5");
  // MINIMAL delete: key only.
  Wire del;
  del.raw(null_bits(1)).u32(9);
  r = t.rows(25, test::bitmap(3, {0}), del.bytes());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(Table::text(*(*r)[0].before), "id=9");
  EXPECT_FALSE((*r)[0].after);
}

TEST(RowDecoder, FullUpdateHasBothImages) {
  Table t({{3, {}, cs("id")}, {15, Wire().u16(40).bytes(), cs("name")}});
  const Bytes all = test::all_bits(2);
  Wire images;
  images.raw(null_bits(2)).u32(1).u8(1).raw("a").raw(null_bits(2)).u32(1).u8(1).raw("b");
  auto r = t.rows(24, all, images.bytes(), &all);
  ASSERT_TRUE(r) << r.error().report();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(Table::text(*(*r)[0].before), "id=1 | name=a");
  EXPECT_EQ(Table::text(*(*r)[0].after), "id=1 | name=b");
}

TEST(RowDecoder, UnsignedFromTableMapMetadata) {
  // No schema unsignedness: the TABLE_MAP's signedness field decides.
  EventDecoder d(Flavor::kMySql);
  ASSERT_TRUE(d.decode(test::format_description("8.0.36")));
  Wire opt;
  opt.u8(1).packed(1).u8(0x80);
  const Bytes tm_bytes =
      test::event(19, test::table_map_body(42, "app", "t", {{3, {}}}, opt.bytes()));
  auto tm = d.decode(tm_bytes);
  ASSERT_TRUE(tm) << tm.error().report();
  TableSchema schema;
  schema.columns.push_back(cs("u"));
  Wire image;
  image.raw(null_bits(1)).u32(0xffffffff);
  const Bytes rows_bytes =
      test::event(23, test::rows_body(42, 1, test::all_bits(1), nullptr, image.bytes()));
  auto ev = d.decode(rows_bytes);
  ASSERT_TRUE(ev);
  RowReader reader(*tm->table_map, schema, *ev->rows, Flavor::kMySql);
  DecodedRow row;
  ASSERT_TRUE(*reader.next(row));
  EXPECT_EQ(*(*row.after)[0].text, "4294967295");
}

TEST(RowDecoder, ImagesWithoutColumnsCannotLoopForever) {
  Table t({{3, {}, cs("id")}});
  auto r = t.rows(23, test::bitmap(1, {}), {1, 2, 3});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("images with no columns"));
}

TEST(RowDecoder, ColumnCountMismatchNamesBothCounts) {
  Table t({{3, {}, cs("id")}});
  t.schema().columns.push_back(cs("extra"));
  auto r = t.rows(23, test::all_bits(1), cat({null_bits(1), Bytes{1, 0, 0, 0}}));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("table map has 1 columns"));
  EXPECT_THAT(r.error().message(), HasSubstr("schema history 2"));
}

TEST(RowDecoder, TruncatedImagesAreErrorsNamingTheColumn) {
  Table t({{3, {}, cs("id")},
           {15, Wire().u16(40).bytes(), cs("name")},
           {252, {2}, cs("body")},
           {246, {10, 4}, cs("d")},
           {18, {6}, cs("dt")}});
  Wire full;
  full.raw(null_bits(5))
      .u32(7)
      .u8(2)
      .raw("hi")
      .u16(3)
      .raw("abc")
      .raw(encode_decimal("1.5", 10, 4))
      .raw(datetime2(2020, 1, 1, 0, 0, 0, 0, 6));
  EXPECT_EQ(t.insert(full.bytes()),
            "id=7 | name=hi | body=abc | d=1.5000 | dt=2020-01-01 00:00:00.000000");
  const Bytes all = full.bytes();
  for (std::size_t cut = 0; cut < all.size(); ++cut) {
    const std::string got = t.insert(Bytes(all.begin(), all.begin() + cut));
    EXPECT_EQ(got.substr(0, 6), cut == 0 ? "ROWS 0" : "ERROR ") << cut << ": " << got;
  }
  EXPECT_THAT(t.insert(Bytes(all.begin(), all.begin() + 6)), HasSubstr("column name"));
}

TEST(RowDecoder, GarbageImagesNeverCrash) {
  Table t({{3, {}, cs("id")},
           {15, Wire().u16(400).bytes(), cs("name")},
           {252, {4}, cs("body")},
           {246, {65, 30}, cs("d")},
           {19, {6}, cs("t")},
           {245, {4}, cs("j")},
           {254, {0xf8, 8}, cs("s", "", "", false, {"a"})},
           {16, {7, 8}, cs("b")}});
  std::uint32_t x = 12345;
  for (int round = 0; round < 2000; ++round) {
    Bytes b(static_cast<std::size_t>(round % 97));
    for (auto& v : b) {
      x = x * 1103515245 + 12345;
      v = static_cast<std::uint8_t>(x >> 16);
    }
    (void)t.insert(b);
  }
}

}  // namespace
}  // namespace cppcdc::mysql
