#include "cppcdc/row_shape.hpp"

#include "core/text_util.hpp"

namespace cppcdc {
namespace {

// Length-prefixed fields make the hashed description unambiguous.
void put(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

}  // namespace

RowShape::RowShape(std::optional<std::string> schema, std::string table,
                   std::vector<ColumnShape> columns, std::vector<std::string> primary_key)
    : schema_(std::move(schema)),
      table_(std::move(table)),
      columns_(std::move(columns)),
      primary_key_(std::move(primary_key)) {
  std::string desc;
  put(desc, schema_ ? *schema_ : std::string("\x01"));
  put(desc, table_);
  for (const auto& c : columns_) {
    put(desc, c.name);
    put(desc, c.data_type ? *c.data_type : std::string("\x01"));
    desc += c.nullable ? 'n' : 'N';
    desc += c.primary_key ? 'k' : '-';
    desc += std::to_string(c.type_oid) + "," + std::to_string(c.type_modifier) + ";";
  }
  desc += '|';
  for (const auto& k : primary_key_) put(desc, k);
  content_id_ = detail::sha256_hex(desc).value_or("").substr(0, 32);  // first 16 bytes
}

std::optional<std::size_t> RowShape::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return i;
  }
  return std::nullopt;
}

}  // namespace cppcdc
