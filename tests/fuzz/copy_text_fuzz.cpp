// libFuzzer target for the COPY text row parser of the blocking snapshot (copy_text.hpp).
// The input is one row as PQgetCopyData returns it. Its fields must lie inside it, decode to
// no more bytes than they hold, and a field without a backslash must decode to itself. Then
// the decoded values are written back the way COPY TO writes them (\N for NULL, the escapes
// of the text format); that row must split into the same number of fields with the same
// values.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "source/postgres/copy_text.hpp"

namespace {

void append_escaped(std::string& out, std::string_view value) {
  for (const char c : value) {
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
}

std::vector<std::optional<std::string>> values_of(std::string_view row,
                                                  std::vector<cppcdc::pg::CopyField>& fields) {
  cppcdc::pg::split_copy_row(row, fields);
  CPPCDC_FUZZ_CHECK(!fields.empty());
  std::vector<std::optional<std::string>> values;
  std::string value;
  for (const auto& f : fields) {
    CPPCDC_FUZZ_CHECK(f.raw.data() >= row.data() &&
                      f.raw.data() + f.raw.size() <= row.data() + row.size());
    if (f.null) {
      CPPCDC_FUZZ_CHECK(f.raw == "\\N" && !f.escaped);
      values.emplace_back();
      continue;
    }
    cppcdc::pg::copy_field_text(f, value);
    CPPCDC_FUZZ_CHECK(value.size() <= f.raw.size());
    if (!f.escaped) {
      CPPCDC_FUZZ_CHECK(f.raw.find('\\') == std::string_view::npos && value == f.raw);
    }
    values.emplace_back(value);
  }
  return values;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<cppcdc::pg::CopyField> fields;
  const auto values = values_of(input, fields);

  std::string row;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) row += '\t';
    if (values[i]) {
      append_escaped(row, *values[i]);
    } else {
      row += "\\N";
    }
  }
  row += '\n';
  // Reusing `fields` also checks that a longer earlier row leaves nothing behind.
  CPPCDC_FUZZ_CHECK(values_of(row, fields) == values);
  return 0;
}
