// COPY TO text rows (copy_text.hpp), the form the blocking snapshot reads tables in: fields
// split at unescaped tabs, \N only when it is the whole field, and every escape COPY writes
// (and the octal and hex forms COPY FROM reads) decoded.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "source/postgres/copy_text.hpp"

namespace cppcdc::pg {
namespace {

// COPY TO's escaping of one value, as PostgreSQL's CopyAttributeOutText does it.
std::string escape(const std::string& v) {
  std::string out;
  for (const char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<std::optional<std::string>> decode(std::string_view line) {
  std::vector<CopyField> fields;
  split_copy_row(line, fields);
  std::vector<std::optional<std::string>> out;
  for (const auto& f : fields) {
    if (f.null) {
      out.emplace_back();
    } else {
      std::string v;
      copy_field_text(f, v);
      out.emplace_back(std::move(v));
    }
  }
  return out;
}

TEST(CopyText, FieldsSplitAtTabsAndNullIsOnlyAWholeBackslashN) {
  const auto row = decode("1\t\\N\t\t\\\\N\tN\n");
  ASSERT_EQ(row.size(), 5u);
  EXPECT_EQ(row[0], "1");
  EXPECT_FALSE(row[1].has_value());
  EXPECT_EQ(row[2], "");      // an empty string is not NULL
  EXPECT_EQ(row[3], "\\N");   // the text backslash-N
  EXPECT_EQ(row[4], "N");
}

TEST(CopyText, EveryValueComesBackFromItsEscapedForm) {
  const std::vector<std::string> values = {
      "plain", "tab\there", "new\nline", "cr\rlf\n", "back\\slash", "\\N", "\\", "\b\f\v",
      "trailing\\", "ünïcödé ✓", std::string("\x01\x1f", 2), "{\"k\": \"v\\n\"}"};
  std::string line;
  for (std::size_t i = 0; i < values.size(); ++i) line += (i ? "\t" : "") + escape(values[i]);
  line += '\n';
  const auto row = decode(line);
  ASSERT_EQ(row.size(), values.size()) << line;
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(row[i], values[i]) << i;
}

TEST(CopyText, OctalHexAndUnknownEscapesDecodeAsCopyFromReadsThem) {
  const auto row = decode("\\101\\x42\\x4\\q\\7\\0101");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0], std::string("AB\x04q\x07") + "\x08" + "1");
}

TEST(CopyText, AnEmptyLineIsOneEmptyFieldAndTheVectorIsReusedWithoutStaleFields) {
  std::vector<CopyField> fields;
  split_copy_row("a\tb\tc\n", fields);
  ASSERT_EQ(fields.size(), 3u);
  split_copy_row("\n", fields);
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].raw, "");
  EXPECT_FALSE(fields[0].null);
  EXPECT_FALSE(fields[0].escaped);
}

}  // namespace
}  // namespace cppcdc::pg
