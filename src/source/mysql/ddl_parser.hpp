#pragma once
// A parser for the DDL statements that change the shape of tables, as they arrive in QUERY
// events of the binlog: CREATE TABLE (with columns, or LIKE), ALTER TABLE (ADD / DROP /
// MODIFY / CHANGE / RENAME COLUMN, ADD / DROP PRIMARY KEY, RENAME, CONVERT TO CHARACTER SET,
// DEFAULT CHARACTER SET; index, constraint, partition and table-option clauses are
// recognised and have no effect on the shape), RENAME TABLE, DROP TABLE, TRUNCATE, CREATE /
// ALTER / DROP DATABASE, DROP INDEX `PRIMARY`. Everything else is kOther.
//
// Pure functions on text: no catalog. Type names are normalised as the server prints
// COLUMN_TYPE in information_schema (MariaDB: "int(11)", "tinyint(3) unsigned",
// "decimal(10,0)", "year(4)", JSON as "longtext"; MySQL 8: "int", "int unsigned").
//
// Errors: never; a statement about tables that is not understood is kUnsupported with `what`
// saying which part, so the caller decides (terminal for a captured table).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "source/mysql/row_decoder.hpp"

namespace cppcdc::mysql::detail {

struct TableRef {
  std::string database;  ///< empty: the statement's default database
  std::string table;
  friend bool operator==(const TableRef&, const TableRef&) = default;
};

/// A column definition as written. `column.charset` is set only for binary types ("binary")
/// and when the definition names a charset or collation; the schema history fills in the
/// table's default for other character columns.
struct ColumnDef {
  ColumnSchema column;
  bool character = false;    ///< a character type (char, varchar, text, enum, set)
  bool primary_key = false;  ///< PRIMARY KEY attribute
  enum class Position { kLast, kFirst, kAfter } position = Position::kLast;
  std::string after;  ///< kAfter: the column it follows
};

struct AlterOp {
  enum class Kind {
    kAddColumn,      ///< def
    kDropColumn,     ///< name
    kModifyColumn,   ///< def (name = def.column.name)
    kChangeColumn,   ///< name (old) -> def
    kRenameColumn,   ///< name -> new_name
    kAddPrimaryKey,  ///< key
    kDropPrimaryKey,
    kRenameTable,     ///< new_table
    kConvertCharset,  ///< charset: every character column and the table default
    kDefaultCharset,  ///< charset: the table default only
    kNoShapeChange,   ///< an index, constraint, option or partition clause
  };
  Kind kind = Kind::kNoShapeChange;
  ColumnDef def;
  std::string name;
  std::string new_name;
  std::vector<std::string> key;
  TableRef new_table;
  std::string charset;
  bool if_exists = false;
};

struct DdlStatement {
  enum class Kind {
    kOther,            ///< not about table shapes (DML, GRANT, views, BEGIN ...)
    kCreateTable,      ///< table, columns, primary_key, default_charset
    kCreateTableLike,  ///< table, like
    kAlterTable,       ///< table, ops
    kRenameTables,     ///< renames
    kDropTables,       ///< tables
    kTruncate,         ///< table
    kCreateDatabase,   ///< database, default_charset (may be empty)
    kAlterDatabase,    ///< database, default_charset
    kDropDatabase,     ///< database
    kUnsupported,      ///< about `tables` (or `table`), but `what` was not understood
  };
  Kind kind = Kind::kOther;
  TableRef table;
  TableRef like;
  std::vector<ColumnDef> columns;
  std::vector<std::string> primary_key;
  std::string default_charset;
  std::vector<AlterOp> ops;
  std::vector<std::pair<TableRef, TableRef>> renames;
  std::vector<TableRef> tables;
  std::string database;
  bool if_not_exists = false;
  bool or_replace = false;
  bool temporary = false;
  std::string what;
};

/// Parses one statement. `mysql8`: normalise integer types as MySQL 8 prints them (no
/// display width).
DdlStatement parse_ddl(std::string_view sql, bool mysql8 = false);

/// The charset a collation belongs to ("utf8mb4_unicode_ci" -> "utf8mb4", "binary" -> "binary").
std::string charset_of_collation(std::string_view collation);

/// Normalises a column type as the server prints COLUMN_TYPE (see above), from its parts: the
/// lower-cased type name, its arguments as written, and the attributes.
std::string normalize_column_type(std::string_view name, const std::vector<std::string>& args,
                                  bool is_unsigned, bool zerofill, bool mysql8);

/// The ENUM / SET labels of a COLUMN_TYPE such as "enum('a','it''s')".
std::vector<std::string> parse_elements(std::string_view column_type);

}  // namespace cppcdc::mysql::detail
