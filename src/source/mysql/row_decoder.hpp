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
// Character sets: ColumnSchema::charset when set; else the TABLE_MAP's optional metadata
// collation; else binary when the column type is BINARY/VARBINARY/*BLOB (information_schema
// leaves their charset NULL), utf8mb4 otherwise. utf8/utf8mb3/utf8mb4/ascii are copied,
// latin1 (MySQL's cp1252 variant) is converted by table, others with iconv.
// MariaDB INET6 and UUID (STRING/binary 16 bytes on the wire, recognised by column_type
// "inet6"/"uuid") print as the server prints them. GEOMETRY prints as "\x" + the hex of the
// server's internal value (4-byte SRID, then WKB): the same bytes as HEX(col).
// FLOAT and DOUBLE print like the server's text protocol (shortest form, 6 significant digits
// for FLOAT, switching to 1e20-style exponents outside 1e-15..1e15); FLOAT(M,D) and
// DOUBLE(M,D) with D fixed decimals.
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
  std::string charset;  ///< "utf8mb4", "latin1", "binary"; "" for non-character columns
  std::vector<std::string> elements;  ///< ENUM / SET labels in declaration order
  bool is_json = false;  ///< MySQL JSON, or MariaDB JSON (LONGTEXT with a json_valid check)
  bool nullable = true;
};

/// A table's shape at one point of the binlog.
struct TableSchema {
  std::string database;
  std::string table;
  std::vector<ColumnSchema> columns;     ///< ordinal order
  std::vector<std::string> primary_key;  ///< key order; empty when the table has none
  RowShapePtr shape;                     ///< the canonical shape built from the above
};

/// One row of a rows event. `before` is set for update and delete, `after` for write and
/// update; each holds the present columns only.
struct DecodedRow {
  std::optional<Row> before;
  std::optional<Row> after;
};

namespace detail {
/// How one column is decoded, worked out once per rows event.
struct ColumnPlan {
  std::uint8_t type = 0;  ///< real binlog type (STRING's hidden ENUM/SET/CHAR resolved)
  std::uint16_t meta = 0;
  std::uint32_t length = 0;   ///< STRING: max bytes; ENUM/SET: pack length; BLOB: length bytes
  std::uint8_t kind = 0;      ///< row_decoder.cpp's Kind
  std::uint8_t charset = 0;   ///< row_decoder.cpp's Charset
  std::int8_t decimals = -1;  ///< FLOAT/DOUBLE(M,D): D; -1 when not fixed
  bool is_unsigned = false;
  bool is_json = false;
  const std::string* name = nullptr;
  const std::vector<std::string>* labels = nullptr;  ///< ENUM/SET
  std::string iconv_name;                            ///< for Charset::kIconv
};
}  // namespace detail

/// Reads the rows of `rows` one at a time. `map` and `schema` must describe the same table
/// (column count checked: a mismatch is an error naming both counts).
class RowReader {
 public:
  RowReader(const TableMapEvent& map, const TableSchema& schema, const RowsEvent& rows,
            Flavor flavor);
  /// False once every row was read; an error for a malformed image. `out`'s rows are reused
  /// (their strings keep their capacity), so pass the same DecodedRow for every row.
  Result<bool> next(DecodedRow& out);
  /// Every row was read: next() would return false (not an error).
  bool at_end() const noexcept { return !setup_error_ && offset_ >= rows_.rows.size(); }

 private:
  Status read_image(std::size_t& offset, const Bitmap& present, std::size_t count,
                    std::optional<Row>& row);
  Status read_value(const detail::ColumnPlan& plan, std::span<const std::uint8_t> bytes,
                    std::size_t& pos, std::string& out);
  Error value_error(const detail::ColumnPlan& plan, std::size_t at, std::string_view what) const;

  std::vector<detail::ColumnPlan> plan_;
  std::optional<Error> setup_error_;
  std::size_t present_count_ = 0;
  std::size_t present_after_count_ = 0;
  const TableMapEvent& map_;
  const TableSchema& schema_;
  const RowsEvent& rows_;
  Flavor flavor_;
  std::size_t offset_ = 0;
};

}  // namespace cppcdc::mysql
