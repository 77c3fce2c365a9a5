#pragma once
// RowShape: the shape of a table's rows as the source describes it. Shared and immutable;
// events point at it (std::shared_ptr<const RowShape>) instead of copying it
// (API guide, "The types come from the stream, not from you").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cppcdc {

struct ColumnShape {
  std::string name;
  /// The source's own type name with modifiers, e.g. "numeric(12,4)",
  /// "character varying(20)", "timestamp(3) with time zone". nullopt when unknown.
  std::optional<std::string> data_type;
  /// True unless the column is declared NOT NULL. True when unknown.
  bool nullable = true;
  /// True when the column belongs to the table's primary key (from the catalog).
  bool primary_key = false;
  /// PostgreSQL type oid (0 when not a PostgreSQL column).
  std::uint32_t type_oid = 0;
  /// PostgreSQL atttypmod (-1 = none).
  std::int32_t type_modifier = -1;
  /// True for json/jsonb: the value is JSON text whose structure is kept in the envelope.
  bool is_json = false;
};

class RowShape {
 public:
  /// Builds a shape and computes its content id. `primary_key` lists key column names in key
  /// order (may be empty: the table has no key to report).
  RowShape(std::optional<std::string> schema, std::string table, std::vector<ColumnShape> columns,
           std::vector<std::string> primary_key);

  const std::optional<std::string>& schema() const noexcept { return schema_; }
  const std::string& table() const noexcept { return table_; }
  /// Columns in ordinal order.
  const std::vector<ColumnShape>& columns() const noexcept { return columns_; }
  /// Primary-key column names in key order; empty when the table has none.
  const std::vector<std::string>& primary_key() const noexcept { return primary_key_; }
  /// Hex id derived from everything above (SHA-256, first 16 bytes). Two shapes have the same
  /// id exactly when they describe the same columns, types, nullability and key.
  const std::string& content_id() const noexcept { return content_id_; }

  /// Index of the column called `name`, or nullopt.
  std::optional<std::size_t> find(std::string_view name) const noexcept;

 private:
  std::optional<std::string> schema_;
  std::string table_;
  std::vector<ColumnShape> columns_;
  std::vector<std::string> primary_key_;
  std::string content_id_;
};

using RowShapePtr = std::shared_ptr<const RowShape>;

}  // namespace cppcdc
