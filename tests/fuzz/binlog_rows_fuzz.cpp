// libFuzzer target for the row image decoder (source/mysql/row_decoder.cpp) over a fuzzed
// table map and rows event. Input layout:
//   byte 0        column count n (taken modulo 40)
//   n bytes       column types (as logged)
//   2n bytes      column metadata (big-endian 16 bits, the TableMapEvent encoding)
//   n bytes       per column: bits 0-2 charset choice, bit 3 unsigned, bit 4 JSON text,
//                 bit 5 inet6, bit 6 uuid
//   1 byte        rows kind (modulo 3: write, update, delete)
//   2 x ceil(n/8) present bitmaps (before/after)
//   rest          the rows data
// Every row must decode or yield an invalid_data error naming the table; a decoded image holds
// exactly the present columns, in ordinal order, named after the schema.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "source/mysql/row_decoder.hpp"

using namespace cppcdc::mysql;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t pos = 0;
  auto take = [&](std::size_t n) -> const std::uint8_t* {
    if (size - pos < n) return nullptr;
    const std::uint8_t* p = data + pos;
    pos += n;
    return p;
  };
  const std::uint8_t* head = take(1);
  if (head == nullptr) return 0;
  const std::size_t n = head[0] % 40;
  const std::uint8_t* types = take(n);
  const std::uint8_t* meta = take(2 * n);
  const std::uint8_t* flags = take(n);
  const std::uint8_t* kind = take(1);
  const std::size_t bm = (n + 7) / 8;
  const std::uint8_t* present = take(bm);
  const std::uint8_t* after = take(bm);
  if (types == nullptr || meta == nullptr || flags == nullptr || kind == nullptr ||
      present == nullptr || after == nullptr) {
    return 0;
  }
  static const char* const kCharsets[] = {"utf8mb4", "latin1", "binary", "cp1251",
                                          "utf16",   "",       "sjis",   "nonesuch"};
  TableMapEvent map;
  TableSchema schema;
  schema.database = "db";
  schema.table = "t";
  RowsEvent rows;
  rows.kind = static_cast<RowsKind>(kind[0] % 3);
  rows.column_count = n;
  rows.present.bits = rows.present_after.bits = n;
  rows.present.bytes.assign(present, present + bm);
  rows.present_after.bytes.assign(after, after + bm);
  rows.rows = std::span<const std::uint8_t>(data + pos, size - pos);
  for (std::size_t i = 0; i < n; ++i) {
    map.column_types.push_back(types[i]);
    map.column_meta.push_back(static_cast<std::uint16_t>(meta[2 * i] << 8 | meta[2 * i + 1]));
    ColumnSchema c;
    c.name = "c" + std::to_string(i);
    c.charset = kCharsets[flags[i] & 7];
    c.is_unsigned = flags[i] & 8;
    c.is_json = flags[i] & 16;
    if (flags[i] & 32) c.column_type = "inet6";
    if (flags[i] & 64) c.column_type = "uuid";
    c.elements = {"a", "\xc3\xa4", ""};
    schema.columns.push_back(std::move(c));
  }
  RowReader reader(map, schema, rows, Flavor::kMariaDb);
  DecodedRow row;
  for (int i = 0; i < 10000; ++i) {
    auto more = reader.next(row);
    if (!more) {
      CPPCDC_FUZZ_CHECK(more.error().kind() == cppcdc::ErrorKind::kInvalidData);
      CPPCDC_FUZZ_CHECK(more.error().message().find("db.t") != std::string::npos);
      break;
    }
    if (!*more) break;
    for (const auto* image : {&row.before, &row.after}) {
      if (!*image) continue;
      const auto& r = **image;
      const auto& bits = (image == &row.after && rows.kind == RowsKind::kUpdate)
                             ? rows.present_after
                             : rows.present;
      CPPCDC_FUZZ_CHECK(r.size() == bits.count());
      std::size_t k = 0;
      for (std::size_t c = 0; c < n; ++c) {
        if (!bits.test(c)) continue;
        CPPCDC_FUZZ_CHECK(r[k].name == schema.columns[c].name);
        ++k;
      }
    }
  }
  return 0;
}
