#include "cppcdc/row_shape.hpp"

#include <openssl/evp.h>

#include <cstdio>

namespace cppcdc {
namespace {

// Length-prefixed fields make the hashed description unambiguous.
void put(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

std::string sha256_hex_prefix(const std::string& data, std::size_t bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(bytes * 2);
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < bytes && i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
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
  content_id_ = sha256_hex_prefix(desc, 16);
}

std::optional<std::size_t> RowShape::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return i;
  }
  return std::nullopt;
}

}  // namespace cppcdc
