#pragma once
// The schema history of the MySQL / MariaDB source: the shape of every table the source may
// capture, as of the binlog position the reader has reached. The binlog's row events carry no
// column names, keys or charsets, and the server's catalog tells only the current shape, so
// the history starts from the catalog (information_schema) when capture starts, follows the
// DDL statements of the binlog from there, and is saved with every checkpoint (serialize() /
// restore(), in the checkpoint's source_state): a restart resumes with the shapes the tables
// had at the checkpoint, so rows written before a later ALTER decode with their old shape.
//
// Tracked are the tables of every database that a captured pattern's database part matches
// (so a table renamed into the captured set, as online schema change tools do, is known);
// captured are those that match a pattern.
//
// Threading: used by one thread (the reader thread).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/result.hpp"
#include "source/mysql/ddl_parser.hpp"
#include "source/mysql/row_decoder.hpp"

typedef struct st_mysql MYSQL;

namespace cppcdc::mysql::detail {

/// "*" and "?" glob match (case-sensitive).
bool glob_match(std::string_view pattern, std::string_view text) noexcept;

/// The captured tables: "database.table" patterns.
class TableFilter {
 public:
  explicit TableFilter(std::vector<std::string> patterns);
  bool captured(std::string_view database, std::string_view table) const noexcept;
  /// Some pattern's database part matches `database`.
  bool tracked_database(std::string_view database) const noexcept;
  const std::vector<std::string>& patterns() const noexcept { return patterns_; }

 private:
  std::vector<std::string> patterns_;
  std::vector<std::pair<std::string, std::string>> parts_;
};

using TableSchemaPtr = std::shared_ptr<const TableSchema>;

/// Builds schema.shape from the other fields.
void build_shape(TableSchema& schema);

class SchemaHistory {
 public:
  /// What one DDL statement did to a captured table.
  struct Change {
    enum class Kind { kCreated, kAltered, kDropped, kTruncated, kRenamed };
    Kind kind = Kind::kAltered;
    std::string database;
    std::string table;
    TableSchemaPtr before;  ///< nullptr for kCreated
    TableSchemaPtr after;   ///< nullptr for kDropped, kTruncated
    /// kRenamed: the name it had; a table renamed out of the captured set is kDropped.
    std::string old_table;
  };

  SchemaHistory(TableFilter filter, bool mysql8);

  const TableFilter& filter() const noexcept { return filter_; }

  /// Reads every tracked table from information_schema (replacing what is known). Errors
  /// (kind terminal): a captured pattern without a glob that names no table ("no such
  /// table, or the user may not see it").
  Status load_catalog(MYSQL* conn);

  /// The shape of a tracked table, or nullptr when unknown.
  TableSchemaPtr find(std::string_view database, std::string_view table) const;

  /// The captured tables known now, sorted.
  std::vector<TableSchemaPtr> captured_tables() const;

  /// Applies one statement of a QUERY event with default database `default_db`. Returns the
  /// changes to captured tables (empty when the statement changes none). A statement about a
  /// captured table that is not understood is an error (kind terminal) quoting it; about a
  /// merely tracked table it is logged and the table forgotten.
  Result<std::vector<Change>> apply_ddl(std::string_view default_db, std::string_view sql);

  /// Grows with every change of the history (so a caller can cache what it derives).
  std::uint64_t version() const noexcept { return version_; }

  /// The history as JSON text, for the checkpoint (cached until the next change).
  const std::string& serialize() const;
  /// Replaces the history by one serialize() wrote. Errors: invalid_data naming what is wrong.
  Status restore(std::string_view json);

 private:
  struct Entry {
    TableSchemaPtr schema;
    std::string default_charset;
  };
  using Key = std::pair<std::string, std::string>;

  std::string database_charset(const std::string& database) const;
  Result<std::vector<Change>> apply_parsed(const DdlStatement& st, const std::string& db,
                                           std::string_view sql);
  Status apply_alter(TableSchema& t, std::string& default_charset, const AlterOp& op);
  void changed() {
    cache_.reset();
    ++version_;
  }

  TableFilter filter_;
  bool mysql8_;
  std::map<Key, Entry> tables_;
  std::map<std::string, std::string> databases_;  // default charset per database
  std::string server_charset_ = "utf8mb4";
  mutable std::optional<std::string> cache_;
  std::uint64_t version_ = 0;
};

}  // namespace cppcdc::mysql::detail
