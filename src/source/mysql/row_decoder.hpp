#pragma once
// Decoding row images of a rows event (binlog_event.hpp) into the canonical Row: each value
// is the text the server's own text protocol prints for `SELECT col` in a session with
// time_zone '+00:00' (so snapshot rows and stream rows agree character for character), with
// these exceptions, which are the type mapping table of the README:
//   - binary strings (BINARY, VARBINARY, BLOB and the binary charset) and BIT: "\x" followed
//     by the bytes in lower-case hex (the text protocol would send raw bytes, which are not
//     JSON text); the snapshot reads them the same way;
//   - JSON: JSON text, flagged is_json (MySQL binary JSON is converted; MariaDB's JSON is a
//     LONGTEXT and arrives as text);
//   - character columns in another charset are converted to UTF-8.
// A column outside the image's present bitmap is absent from the Row (never NULL).
//
// Pure functions on bytes, like binlog_event.hpp. Errors: Error::invalid_data naming the
// table, the column and what is wrong (a truncated image, a value that cannot be).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/row_shape.hpp"
#include "source/mysql/binlog_event.hpp"

namespace cppcdc::mysql {

/// One column as the schema history knows it (information_schema.COLUMNS, or the DDL).
struct ColumnSchema {
  std::string name;
  std::string column_type;  ///< COLUMN_TYPE as the server prints it: "int(10) unsigned",
                            ///< "enum('a','b')", "decimal(12,4)", "datetime(6)"
  bool is_unsigned = false;
  std::string charset;      ///< "utf8mb4", "latin1", "binary"; "" for non-character columns
  std::vector<std::string> elements;  ///< ENUM / SET labels in declaration order
  bool is_json = false;     ///< MySQL JSON, or MariaDB JSON (LONGTEXT with a json_valid check)
  bool nullable = true;
};

/// A table's shape at one point of the binlog.
struct TableSchema {
  std::string database;
  std::string table;
  std::vector<ColumnSchema> columns;       ///< ordinal order
  std::vector<std::string> primary_key;    ///< key order; empty when the table has none
  RowShapePtr shape;                       ///< the canonical shape built from the above
};

/// One row of a rows event. `before` is set for update and delete, `after` for write and
/// update; each holds the present columns only.
struct DecodedRow {
  std::optional<Row> before;
  std::optional<Row> after;
};

/// Reads the rows of `rows` one at a time. `map` and `schema` must describe the same table
/// (column count checked: a mismatch is an error naming both counts).
class RowReader {
 public:
  RowReader(const TableMapEvent& map, const TableSchema& schema, const RowsEvent& rows,
            Flavor flavor);
  /// False once every row was read; an error for a malformed image.
  Result<bool> next(DecodedRow& out);

 private:
  const TableMapEvent& map_;
  const TableSchema& schema_;
  const RowsEvent& rows_;
  Flavor flavor_;
  std::size_t offset_ = 0;
};

}  // namespace cppcdc::mysql
