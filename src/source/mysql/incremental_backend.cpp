// The MariaDB incremental snapshot backend (incremental_backend.hpp).

#include "source/mysql/incremental_backend.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/text_util.hpp"
#include "source/mysql/mysql_conn.hpp"
#include "source/mysql/schema_history.hpp"
#include "source/mysql/snapshot.hpp"

namespace cppcdc::mysql::detail {

LogPosition encode_coordinate(std::uint64_t sequence, std::uint64_t position) {
  std::string bytes(16, '\0');
  for (int i = 7; i >= 0; --i) {
    bytes[static_cast<std::size_t>(i)] = static_cast<char>(sequence & 0xff);
    bytes[static_cast<std::size_t>(8 + i)] = static_cast<char>(position & 0xff);
    sequence >>= 8;
    position >>= 8;
  }
  return *LogPosition::from_bytes(bytes);
}

void WatermarkLog::seen(std::string gtid, LogPosition start) {
  std::lock_guard lock(mutex_);
  entries_.emplace_back(std::move(gtid), start);
  while (entries_.size() > kLimit) entries_.pop_front();
}

std::optional<LogPosition> WatermarkLog::find(std::string_view gtid) const {
  if (gtid.empty()) return std::nullopt;
  std::lock_guard lock(mutex_);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->first == gtid) return it->second;
  }
  return std::nullopt;
}

void WatermarkLog::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

namespace {

std::pair<std::string, std::string> split_name(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return {std::string(), name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// Key column types whose text does not round-trip into a comparison in the order ORDER BY
// uses (ENUM and SET sort by their index, FLOAT and DOUBLE print rounded), or that cannot be
// compared at all.
bool unusable_key_type(const ColumnSchema& c) {
  const std::string& t = c.column_type;
  for (const char* prefix :
       {"enum", "set", "float", "double", "real", "json", "geometry", "point", "linestring",
        "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection"}) {
    const std::string p(prefix);
    if (t.rfind(p, 0) == 0 && (t.size() == p.size() || t[p.size()] == '(' || t[p.size()] == ' ')) {
      return true;
    }
  }
  return c.is_json;
}

class MariaIncrementalBackend final : public IncrementalSnapshotBackend {
 public:
  MariaIncrementalBackend(MysqlSourceConfig config, IncrementalHooks hooks)
      : config_(std::move(config)), hooks_(std::move(hooks)), filter_(config_.tables) {
    for (const auto& [table, condition] : config_.snapshot_table_conditions) {
      conditions_[table] = condition;
    }
    source_name_ =
        config_.source_name.empty() ? std::string(to_string(config_.flavor)) : config_.source_name;
  }

  // Connects on first use: a pipeline that never snapshots incrementally opens no extra
  // connection and writes nothing to the signal table.
  Status open() override {
    close();
    return ok();
  }

  void close() override {
    schemas_.clear();
    history_.reset();
    conn_.reset();
    signal_ready_ = false;
    last_gtid_.clear();
  }

  Result<std::vector<std::string>> resolve(const std::string& table) override {
    auto [db, name] = split_name(table);
    if (db.empty() || !filter_.captured(db, name)) {
      return fail(Error::configuration("table " + table +
                                       " is not captured: add it to [source] tables (as "
                                       "\"database.table\") before snapshotting it")
                      .for_setting(SettingOwner::kSource, "tables"));
    }
    return std::vector<std::string>{table};
  }

  Result<SnapshotTableInfo> describe_table(const std::string& table) override {
    CPPCDC_TRY(connect());
    auto [db, name] = split_name(table);
    history_ = std::make_unique<SchemaHistory>(filter_, false);
    CPPCDC_TRY(history_->load_catalog(conn_.get()));
    TableSchemaPtr schema = history_->find(db, name);
    if (!schema || !filter_.captured(db, name)) {
      return fail(Error::configuration("table " + table +
                                       " does not exist or is not captured (or the user may "
                                       "not see it): check [source] tables and GRANT SELECT"));
    }
    if (schema->primary_key.empty()) {
      return fail(Error::configuration(
          "table " + table +
          " has no primary key: an incremental snapshot reads it in chunks by primary key; "
          "add one (ALTER TABLE " +
          quote_ident(db) + "." + quote_ident(name) +
          " ADD PRIMARY KEY (...)), leave the table out of snapshot.tables, or take a blocking "
          "snapshot (snapshot mode initial), which reads keyless tables too"));
    }
    for (const auto& k : schema->primary_key) {
      for (const auto& c : schema->columns) {
        if (c.name == k && unusable_key_type(c)) {
          return fail(Error::configuration(
              "table " + table + ": its primary-key column " + k + " (" + c.column_type +
              ") cannot carry an incremental snapshot's keyset cursor (its text does not "
              "compare in the order the key sorts); take a blocking snapshot (snapshot mode "
              "initial) of this table instead"));
        }
      }
    }
    double estimate = 0;
    auto rows = query(conn_.get(),
                      "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = " +
                          quote_literal(db) + " AND TABLE_NAME = " + quote_literal(name),
                      "reading the row estimate of " + table);
    if (rows && !rows->rows.empty() && rows->rows[0][0]) {
      estimate = std::strtod(rows->rows[0][0]->c_str(), nullptr);
    }
    schemas_[table] = schema;
    return SnapshotTableInfo{table, schema->primary_key, estimate};
  }

  Result<Watermark> current_position() override {
    CPPCDC_TRY(connect());
    CPPCDC_TRY(ensure_signal_table());
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    // A new value every time: an update that changes nothing would not reach the binlog.
    const std::string data = std::to_string(now) + "-" + std::to_string(++writes_);
    CPPCDC_TRY(exec(conn_.get(),
                    "INSERT INTO " + signal_ + " (id, type, data) VALUES (" +
                        quote_literal(config_.source_id) + ", 'snapshot-watermark', " +
                        quote_literal(data) +
                        ") ON DUPLICATE KEY UPDATE type = VALUES(type), data = VALUES(data)",
                    "writing an incremental snapshot watermark to " +
                        config_.snapshot_signal_table + signal_remedy()));
    auto gtid = query(conn_.get(), "SELECT @@last_gtid", "reading the watermark's GTID");
    if (!gtid) return fail(gtid.error());
    if (gtid->rows.empty() || !gtid->rows[0][0] || gtid->rows[0][0]->empty()) {
      return fail(Error::source(
          ErrorKind::kTerminal,
          "the watermark written to " + config_.snapshot_signal_table +
              " got no GTID (@@last_gtid is empty): is binary logging off for this session "
              "(sql_log_bin = 0), or the table in an engine that is not logged? The "
              "incremental snapshot needs the write in the binlog"));
    }
    if (*gtid->rows[0][0] == last_gtid_) {
      // @@last_gtid did not move: the write was not binlogged, and the stale GTID would
      // resolve to an earlier watermark's place.
      return fail(Error::source(
          ErrorKind::kTerminal,
          "the watermark written to " + config_.snapshot_signal_table +
              " did not reach the binlog (@@last_gtid stayed " + last_gtid_ +
              "): a binlog_do_db / binlog_ignore_db setting or a replication filter leaves "
              "its database out; put the signal table in a database the binlog records"));
    }
    last_gtid_ = *gtid->rows[0][0];
    return Watermark{LogPosition(), last_gtid_};
  }

  Result<std::vector<Event>> fetch_chunk(const SnapshotTableInfo& table,
                                         const std::optional<std::vector<std::string>>& cursor,
                                         std::size_t limit) override {
    CPPCDC_TRY(connect());
    auto it = schemas_.find(table.table);
    if (it == schemas_.end()) {
      CPPCDC_TRY(describe_table(table.table));
      it = schemas_.find(table.table);
    }
    const TableSchema& t = *it->second;
    std::vector<bool> as_hex;
    for (const auto& c : t.columns) as_hex.push_back(raw_bytes_column(c));
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      sql += (i ? ", " : "") + quote_ident(t.columns[i].name);
    }
    sql += " FROM " + quote_ident(t.database) + "." + quote_ident(t.table);
    std::vector<std::string> where;
    if (auto c = conditions_.find(table.table); c != conditions_.end()) {
      where.push_back("(" + c->second + ")");
    }
    if (cursor) {
      if (cursor->size() != t.primary_key.size()) {
        return fail(Error::checkpoint(
            ErrorKind::kTerminal, "the incremental snapshot cursor of " + table.table + " has " +
                                      std::to_string(cursor->size()) + " values for a key of " +
                                      std::to_string(t.primary_key.size()) + " columns"));
      }
      // (k1 > v1) OR (k1 = v1 AND k2 > v2) OR ...: the row comparison spelled out, which
      // the optimizer turns into a range on the key.
      std::string keyset;
      for (std::size_t i = 0; i < t.primary_key.size(); ++i) {
        std::string term;
        for (std::size_t j = 0; j <= i; ++j) {
          const std::string col = quote_ident(t.primary_key[j]);
          const std::string value = literal(t, t.primary_key[j], (*cursor)[j]);
          term += (j ? " AND " : "") + col + (j == i ? " > " : " = ") + value;
        }
        keyset += (i ? " OR (" : "(") + term + ")";
      }
      where.push_back("(" + keyset + ")");
    }
    for (std::size_t i = 0; i < where.size(); ++i) sql += (i ? " AND " : " WHERE ") + where[i];
    sql += " ORDER BY ";
    for (std::size_t i = 0; i < t.primary_key.size(); ++i) {
      sql += (i ? ", " : "") + quote_ident(t.primary_key[i]);
    }
    sql += " LIMIT " + std::to_string(limit);
    const std::string what = "reading an incremental snapshot chunk of " + table.table;
    MYSQL* m = conn_.get();
    if (mysql_real_query(m, sql.data(), sql.size()) != 0) return fail(chunk_error(m, what));
    MYSQL_RES* res = mysql_store_result(m);
    if (!res) return fail(chunk_error(m, what));
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    std::vector<Event> rows;
    rows.reserve(static_cast<std::size_t>(mysql_num_rows(res)));
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      Event e;
      e.op = Operation::kRead;
      e.source.source_name = source_name_;
      e.source.timestamp = now;
      e.ts = now;
      e.schema = t.database;
      e.table = t.table;
      e.primary_key = t.primary_key;
      e.shape = t.shape;
      e.after = text_row(t, as_hex, row, mysql_fetch_lengths(res));
      rows.push_back(std::move(e));
    }
    mysql_free_result(res);
    return rows;
  }

  std::optional<LogPosition> position_of_event(const Event& event) const override {
    auto c = parse_binlog_coordinate(event.source.offset);
    if (!c) return std::nullopt;
    return encode_coordinate(c->sequence, c->position);
  }

  BracketPosition event_in_bracket(const Event& /*event*/, const LogPosition& at,
                                   const Watermark& low, const std::string& /*in_flight*/,
                                   const Watermark& high) const override {
    // A watermark not decoded yet lies after every event handed over (see the header).
    auto lo = hooks_.watermarks->find(low.detail);
    if (!lo || LogPosition::compare_bytes(at, *lo) < 0) return BracketPosition::kBefore;
    auto hi = hooks_.watermarks->find(high.detail);
    if (!hi || LogPosition::compare_bytes(at, *hi) < 0) return BracketPosition::kInside;
    return BracketPosition::kAfter;
  }

  bool blocking_snapshot_running(std::string_view /*source_state*/) const override {
    return hooks_.blocking_snapshot_running && hooks_.blocking_snapshot_running();
  }

  bool stream_reached(const Watermark& high) override {
    // Once the high watermark was decoded, everything before it was queued before it; an
    // empty queue then means all of that has been handed over.
    return hooks_.watermarks->find(high.detail).has_value() && hooks_.drained();
  }

 private:
  Status connect() {
    if (conn_) return ok();
    auto conn = detail::connect(config_);
    if (!conn) return fail(conn.error().context("connecting for incremental snapshot chunks"));
    conn_ = std::move(*conn);
    return ok();
  }

  std::string signal_remedy() const {
    return " (the user needs INSERT and UPDATE on " + config_.snapshot_signal_table +
           ", and CREATE on its database while the table does not exist)";
  }

  Status ensure_signal_table() {
    if (signal_ready_) return ok();
    auto [db, name] = split_name(config_.snapshot_signal_table);
    if (db.empty()) {
      return fail(
          Error::configuration("incremental snapshots on MariaDB write watermarks to a table: set "
                               "[source.snapshot] signal_table = \"database.table\"")
              .for_setting(SettingOwner::kSource, "snapshot.signal_table"));
    }
    signal_ = quote_ident(db) + "." + quote_ident(name);
    auto exists =
        query(conn_.get(),
              "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + quote_literal(db) +
                  " AND TABLE_NAME = " + quote_literal(name),
              "looking for the signal table " + config_.snapshot_signal_table);
    if (!exists) return fail(exists.error());
    if (exists->rows.empty()) {
      CPPCDC_TRY(
          exec(conn_.get(),
               "CREATE TABLE IF NOT EXISTS " + signal_ +
                   " (id VARCHAR(64) NOT NULL PRIMARY KEY, type VARCHAR(32) NOT NULL, "
                   "data VARCHAR(2048) NULL) ENGINE=InnoDB",
               "creating the signal table " + config_.snapshot_signal_table + signal_remedy()));
    }
    signal_ready_ = true;
    return ok();
  }

  // A cursor value as an SQL literal comparing like the column: raw-byte columns (printed
  // "\x<hex>") as hex literals, everything else as a string the server converts.
  static std::string literal(const TableSchema& t, const std::string& column,
                             const std::string& text) {
    for (const auto& c : t.columns) {
      if (c.name == column && raw_bytes_column(c) && text.rfind("\\x", 0) == 0) {
        return text.size() == 2 ? std::string("''") : "X'" + text.substr(2) + "'";
      }
    }
    return quote_literal(text);
  }

  Error chunk_error(MYSQL* m, const std::string& what) const {
    const unsigned int code = mysql_errno(m);
    Error e = error_from(m, what);
    // ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR
    if (code == 1142 || code == 1143) {
      return e.context("GRANT SELECT on the table to the user the source connects as");
    }
    return e;
  }

  MysqlSourceConfig config_;
  IncrementalHooks hooks_;
  TableFilter filter_;
  std::map<std::string, std::string> conditions_;
  std::string source_name_;
  MysqlPtr conn_;
  std::unique_ptr<SchemaHistory> history_;
  std::map<std::string, TableSchemaPtr> schemas_;
  std::string signal_;
  bool signal_ready_ = false;
  std::uint64_t writes_ = 0;
  std::string last_gtid_;  // of the last watermark written on conn_
};

}  // namespace

std::unique_ptr<IncrementalSnapshotBackend> make_incremental_backend(MysqlSourceConfig config,
                                                                     IncrementalHooks hooks) {
  return std::make_unique<MariaIncrementalBackend>(std::move(config), std::move(hooks));
}

}  // namespace cppcdc::mysql::detail
