// The hot-path JSON string writer against a plain byte-by-byte reference, over strings that
// put every special byte at every position of the eight-byte blocks and of the tail.

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "core/json_write.hpp"

namespace cppcdc::detail {
namespace {

std::string reference(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string written(std::string_view s) {
  ByteBuffer b;
  json_str(b, s);
  return std::string(b.view());
}

TEST(JsonWrite, EverySpecialByteAtEveryPositionIsEscapedAndNothingElseIs) {
  const std::string specials = std::string("\"\\\n\r\t\b\f\x01\x1f", 9) + std::string(1, '\0');
  for (std::size_t len = 1; len <= 20; ++len) {
    for (std::size_t pos = 0; pos < len; ++pos) {
      for (const char sp : specials) {
        std::string s(len, 'a');
        s[pos] = sp;
        SCOPED_TRACE(testing::Message() << "len " << len << " pos " << pos << " byte "
                                        << static_cast<int>(static_cast<unsigned char>(sp)));
        EXPECT_TRUE(json_needs_escape(s));
        EXPECT_EQ(written(s), reference(s));
        std::string via_string;
        append_json_string(via_string, s);
        EXPECT_EQ(via_string, reference(s));
      }
    }
  }
}

TEST(JsonWrite, PlainTextIncludingUtf8AndHighBytesIsCopiedAsItIs) {
  for (const std::string& s : {std::string(), std::string("x"), std::string("2026-01-01 00:00:01+00"),
                              std::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac 0123456789"),
                              std::string(40, '\x7f'), std::string(33, ' '), std::string(17, '\xff')}) {
    EXPECT_FALSE(json_needs_escape(s)) << s;
    EXPECT_EQ(written(s), "\"" + s + "\"");
  }
}

TEST(JsonWrite, RandomBytesMatchTheReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255);
  for (int i = 0; i < 5000; ++i) {
    std::string s(static_cast<std::size_t>(len(rng)), ' ');
    for (char& c : s) c = static_cast<char>(byte(rng) % 3 == 0 ? byte(rng) % 0x30 : byte(rng));
    ASSERT_EQ(written(s), reference(s)) << i;
  }
}

}  // namespace
}  // namespace cppcdc::detail

namespace cppcdc::detail {
namespace {

TEST(JsonWrite, IntegersOfEveryLengthMatchToString) {
  std::vector<std::uint64_t> values = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000,
                                       1796060748664ULL, 18446744073709551615ULL};
  for (std::uint64_t p = 1; p < 10000000000000000000ULL; p *= 10) {
    values.push_back(p - 1);
    values.push_back(p);
    values.push_back(p + 1);
  }
  for (const std::uint64_t v : values) {
    std::string out;
    append_uint(out, v);
    EXPECT_EQ(out, std::to_string(v));
    const auto s = static_cast<std::int64_t>(v);
    std::string signed_out;
    append_int(signed_out, s);
    EXPECT_EQ(signed_out, std::to_string(s));
  }
  std::string min_out;
  append_int(min_out, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(min_out, std::to_string(std::numeric_limits<std::int64_t>::min()));
}

}  // namespace
}  // namespace cppcdc::detail
