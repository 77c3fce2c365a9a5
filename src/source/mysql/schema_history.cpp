// The schema history: the catalog read, DDL applied to the tracked tables, and its JSON form.

#include "source/mysql/schema_history.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>

#include "source/mysql/mysql_conn.hpp"

namespace cppcdc::mysql::detail {
namespace {

constexpr const char* kSystemDatabases =
    "('mysql', 'information_schema', 'performance_schema', 'sys')";

std::string qualified(std::string_view db, std::string_view table) {
  return std::string(db) + "." + std::string(table);
}

bool is_binary_type(std::string_view data_type) {
  return data_type == "binary" || data_type == "varbinary" || data_type == "tinyblob" ||
         data_type == "blob" || data_type == "mediumblob" || data_type == "longblob";
}

std::string shorten(std::string_view sql) {
  std::string s(sql.substr(0, 300));
  if (sql.size() > 300) s += "...";
  return s;
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) noexcept {
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

TableFilter::TableFilter(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {
  for (const auto& p : patterns_) {
    const auto dot = p.find('.');
    parts_.emplace_back(p.substr(0, dot), dot == std::string::npos ? "*" : p.substr(dot + 1));
  }
}

bool TableFilter::captured(std::string_view database, std::string_view table) const noexcept {
  for (const auto& [d, t] : parts_) {
    if (glob_match(d, database) && glob_match(t, table)) return true;
  }
  return false;
}

bool TableFilter::tracked_database(std::string_view database) const noexcept {
  for (const auto& [d, t] : parts_) {
    if (glob_match(d, database)) return true;
  }
  return false;
}

void build_shape(TableSchema& s) {
  std::vector<ColumnShape> columns;
  columns.reserve(s.columns.size());
  for (const auto& c : s.columns) {
    ColumnShape shape;
    shape.name = c.name;
    shape.data_type = c.column_type;
    shape.nullable = c.nullable;
    shape.primary_key =
        std::find(s.primary_key.begin(), s.primary_key.end(), c.name) != s.primary_key.end();
    shape.is_json = c.is_json;
    columns.push_back(std::move(shape));
  }
  s.shape =
      std::make_shared<const RowShape>(s.database, s.table, std::move(columns), s.primary_key);
}

SchemaHistory::SchemaHistory(TableFilter filter, bool mysql8)
    : filter_(std::move(filter)), mysql8_(mysql8) {}

TableSchemaPtr SchemaHistory::find(std::string_view database, std::string_view table) const {
  auto it = tables_.find(Key{std::string(database), std::string(table)});
  return it == tables_.end() ? nullptr : it->second.schema;
}

std::vector<TableSchemaPtr> SchemaHistory::captured_tables() const {
  std::vector<TableSchemaPtr> out;
  for (const auto& [key, entry] : tables_) {
    if (filter_.captured(key.first, key.second)) out.push_back(entry.schema);
  }
  return out;
}

std::string SchemaHistory::database_charset(const std::string& database) const {
  auto it = databases_.find(database);
  return it == databases_.end() || it->second.empty() ? server_charset_ : it->second;
}

Status SchemaHistory::load_catalog(MYSQL* conn) {
  tables_.clear();
  databases_.clear();
  changed();
  auto server = query(conn, "SELECT @@character_set_server", "reading character_set_server");
  if (!server) return fail(server.error());
  if (!server->rows.empty() && server->rows[0][0]) server_charset_ = *server->rows[0][0];
  auto dbs = query(conn,
                   "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM "
                   "information_schema.SCHEMATA",
                   "reading the databases");
  if (!dbs) return fail(dbs.error());
  for (const auto& r : dbs->rows) {
    if (r[0] && filter_.tracked_database(*r[0])) databases_[*r[0]] = r[1].value_or("");
  }
  auto tables = query(conn,
                      std::string("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM "
                                  "information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
                                  "AND TABLE_SCHEMA NOT IN ") +
                          kSystemDatabases,
                      "reading the tables");
  if (!tables) return fail(tables.error());
  std::map<Key, TableSchema> found;
  for (const auto& r : tables->rows) {
    if (!r[0] || !r[1] || !filter_.tracked_database(*r[0])) continue;
    TableSchema t;
    t.database = *r[0];
    t.table = *r[1];
    tables_[Key{t.database, t.table}].default_charset =
        r[2] ? charset_of_collation(*r[2]) : database_charset(t.database);
    found.emplace(Key{t.database, t.table}, std::move(t));
  }
  auto columns =
      query(conn,
            std::string("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, "
                        "CHARACTER_SET_NAME, IS_NULLABLE, DATA_TYPE FROM "
                        "information_schema.COLUMNS WHERE TABLE_SCHEMA NOT IN ") +
                kSystemDatabases + " ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
            "reading the columns");
  if (!columns) return fail(columns.error());
  for (const auto& r : columns->rows) {
    auto it = found.find(Key{r[0].value_or(""), r[1].value_or("")});
    if (it == found.end()) continue;
    ColumnSchema c;
    c.name = r[2].value_or("");
    c.column_type = r[3].value_or("");
    c.is_unsigned = c.column_type.find(" unsigned") != std::string::npos;
    const std::string data_type = r[6].value_or("");
    c.charset = r[4] ? *r[4] : is_binary_type(data_type) ? "binary" : "";
    if (data_type == "enum" || data_type == "set") c.elements = parse_elements(c.column_type);
    c.is_json = data_type == "json";
    c.nullable = r[5].value_or("YES") == "YES";
    it->second.columns.push_back(std::move(c));
  }
  auto keys = query(conn,
                    std::string("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM "
                                "information_schema.STATISTICS WHERE INDEX_NAME = 'PRIMARY' AND "
                                "TABLE_SCHEMA NOT IN ") +
                        kSystemDatabases + " ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX",
                    "reading the primary keys");
  if (!keys) return fail(keys.error());
  for (const auto& r : keys->rows) {
    auto it = found.find(Key{r[0].value_or(""), r[1].value_or("")});
    if (it != found.end()) it->second.primary_key.push_back(r[2].value_or(""));
  }
  if (!mysql8_) {
    // MariaDB's JSON is a LONGTEXT with a json_valid() check named after the column.
    auto checks = query(conn,
                        "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM "
                        "information_schema.CHECK_CONSTRAINTS WHERE CHECK_CLAUSE LIKE "
                        "'json_valid(%'",
                        "reading the JSON columns");
    if (!checks) return fail(checks.error());
    for (const auto& r : checks->rows) {
      auto it = found.find(Key{r[0].value_or(""), r[1].value_or("")});
      if (it == found.end()) continue;
      const std::string clause = r[3].value_or("");
      const auto open = clause.find('`');
      const auto close = open == std::string::npos ? open : clause.find('`', open + 1);
      if (close == std::string::npos) continue;
      const std::string column = clause.substr(open + 1, close - open - 1);
      for (auto& c : it->second.columns) {
        if (c.name == column) c.is_json = true;
      }
    }
  }
  for (auto& [key, t] : found) {
    build_shape(t);
    tables_[key].schema = std::make_shared<const TableSchema>(std::move(t));
  }
  // A pattern without globs that names nothing is a mistake worth stopping for.
  for (const auto& p : filter_.patterns()) {
    if (p.find_first_of("*?") != std::string::npos) continue;
    const auto dot = p.find('.');
    if (!find(p.substr(0, dot), p.substr(dot + 1))) {
      return fail(
          Error::source(ErrorKind::kTerminal,
                        "captured table " + p +
                            " does not exist, or the user may not see it; create it, "
                            "GRANT SELECT ON it TO the user, or correct the tables setting"));
    }
  }
  return ok();
}

Status SchemaHistory::apply_alter(TableSchema& t, std::string& default_charset, const AlterOp& op) {
  using K = AlterOp::Kind;
  auto index_of = [&](const std::string& name) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      // Column names are case-insensitive.
      if (t.columns[i].name.size() == name.size() &&
          std::equal(name.begin(), name.end(), t.columns[i].name.begin(),
                     [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
        return i;
      }
    }
    return std::nullopt;
  };
  auto resolved = [&](const ColumnDef& def) {
    ColumnSchema c = def.column;
    if (def.character && c.charset.empty()) c.charset = default_charset;
    return c;
  };
  auto place = [&](ColumnSchema c, const ColumnDef& def, std::size_t fallback) -> Status {
    std::size_t at = fallback;
    if (def.position == ColumnDef::Position::kFirst) {
      at = 0;
    } else if (def.position == ColumnDef::Position::kAfter) {
      auto i = index_of(def.after);
      if (!i) return fail(Error::invalid_data("AFTER names unknown column " + def.after));
      at = *i + 1;
    }
    t.columns.insert(t.columns.begin() + static_cast<std::ptrdiff_t>(at), std::move(c));
    return ok();
  };
  auto rename_in_key = [&](const std::string& from, const std::string& to) {
    for (auto& k : t.primary_key) {
      if (index_of(to) && k == from) k = to;
    }
  };
  switch (op.kind) {
    case K::kAddColumn: {
      if (index_of(op.def.column.name)) {
        if (op.if_exists) return ok();
        return fail(Error::invalid_data("column " + op.def.column.name + " exists already"));
      }
      CPPCDC_TRY(place(resolved(op.def), op.def, t.columns.size()));
      if (op.def.primary_key) t.primary_key = {op.def.column.name};
      return ok();
    }
    case K::kDropColumn: {
      auto i = index_of(op.name);
      if (!i) {
        if (op.if_exists) return ok();
        return fail(Error::invalid_data("no column " + op.name));
      }
      const std::string name = t.columns[*i].name;
      t.columns.erase(t.columns.begin() + static_cast<std::ptrdiff_t>(*i));
      std::erase(t.primary_key, name);
      return ok();
    }
    case K::kModifyColumn:
    case K::kChangeColumn: {
      auto i = index_of(op.name);
      if (!i) {
        if (op.if_exists) return ok();
        return fail(Error::invalid_data("no column " + op.name));
      }
      const std::string old_name = t.columns[*i].name;
      ColumnSchema c = resolved(op.def);
      const bool in_key =
          std::find(t.primary_key.begin(), t.primary_key.end(), old_name) != t.primary_key.end();
      if (in_key) c.nullable = false;
      t.columns.erase(t.columns.begin() + static_cast<std::ptrdiff_t>(*i));
      CPPCDC_TRY(place(c, op.def, *i));
      for (auto& k : t.primary_key) {
        if (k == old_name) k = c.name;
      }
      if (op.def.primary_key) t.primary_key = {c.name};
      return ok();
    }
    case K::kRenameColumn: {
      auto i = index_of(op.name);
      if (!i) return fail(Error::invalid_data("no column " + op.name));
      const std::string old_name = t.columns[*i].name;
      t.columns[*i].name = op.new_name;
      rename_in_key(old_name, op.new_name);
      return ok();
    }
    case K::kAddPrimaryKey: {
      std::vector<std::string> key;
      for (const auto& k : op.key) {
        auto i = index_of(k);
        if (!i) return fail(Error::invalid_data("PRIMARY KEY names unknown column " + k));
        t.columns[*i].nullable = false;
        key.push_back(t.columns[*i].name);
      }
      t.primary_key = std::move(key);
      return ok();
    }
    case K::kDropPrimaryKey:
      t.primary_key.clear();
      return ok();
    case K::kConvertCharset:
      for (auto& c : t.columns) {
        if (!c.charset.empty() && c.charset != "binary") c.charset = op.charset;
      }
      default_charset = op.charset;
      return ok();
    case K::kDefaultCharset:
      default_charset = op.charset;
      return ok();
    case K::kRenameTable:
    case K::kNoShapeChange:
      return ok();
  }
  return ok();
}

Result<std::vector<SchemaHistory::Change>> SchemaHistory::apply_ddl(std::string_view default_db,
                                                                    std::string_view sql) {
  const DdlStatement st = parse_ddl(sql, mysql8_);
  if (st.kind == DdlStatement::Kind::kOther) return std::vector<Change>{};
  auto applied = apply_parsed(st, std::string(default_db), sql);
  if (applied) return applied;
  return fail(applied.error());
}

Result<std::vector<SchemaHistory::Change>> SchemaHistory::apply_parsed(const DdlStatement& st,
                                                                       const std::string& db,
                                                                       std::string_view sql) {
  using DK = DdlStatement::Kind;
  std::vector<Change> changes;
  auto db_of = [&](const TableRef& r) { return r.database.empty() ? db : r.database; };
  auto is_captured = [&](const TableRef& r) { return filter_.captured(db_of(r), r.table); };
  auto is_tracked = [&](const TableRef& r) { return filter_.tracked_database(db_of(r)); };
  auto not_understood = [&](const TableRef& r, const std::string& what) -> Status {
    const std::string name = qualified(db_of(r), r.table);
    if (is_captured(r)) {
      return fail(Error::source(
          ErrorKind::kTerminal,
          "a DDL statement on captured table " + name + " is not understood (" + what +
              "), so the shape of its later rows is unknown: \"" + shorten(sql) +
              "\"; take a new snapshot after it, or report the statement"));
    }
    if (tables_.erase(Key{db_of(r), r.table}) > 0) {
      changed();
      spdlog::warn(
          "a DDL statement on {} is not understood ({}); the table is not captured, so "
          "its shape is forgotten: \"{}\"",
          name, what, shorten(sql));
    }
    return ok();
  };
  if (st.temporary) return changes;  // temporary tables have no row events
  switch (st.kind) {
    case DK::kOther:
      return changes;
    case DK::kUnsupported: {
      if (!st.table.table.empty()) CPPCDC_TRY(not_understood(st.table, st.what));
      for (const auto& t : st.tables) CPPCDC_TRY(not_understood(t, st.what));
      if (st.table.table.empty() && st.tables.empty()) {
        spdlog::debug("DDL not understood and naming no table, ignored: {}", shorten(sql));
      }
      return changes;
    }
    case DK::kCreateDatabase:
    case DK::kAlterDatabase: {
      const std::string name = st.database.empty() ? db : st.database;
      if (!filter_.tracked_database(name)) return changes;
      if (!st.default_charset.empty() || st.kind == DK::kCreateDatabase) {
        databases_[name] = st.default_charset;
        changed();
      }
      return changes;
    }
    case DK::kDropDatabase: {
      for (auto it = tables_.begin(); it != tables_.end();) {
        if (it->first.first != st.database) {
          ++it;
          continue;
        }
        if (filter_.captured(it->first.first, it->first.second)) {
          changes.push_back({Change::Kind::kDropped,
                             it->first.first,
                             it->first.second,
                             it->second.schema,
                             nullptr,
                             {}});
        }
        it = tables_.erase(it);
      }
      databases_.erase(st.database);
      changed();
      return changes;
    }
    case DK::kCreateTable:
    case DK::kCreateTableLike: {
      if (!is_tracked(st.table)) return changes;
      const Key key{db_of(st.table), st.table.table};
      auto existing = tables_.find(key);
      if (existing != tables_.end() && st.if_not_exists && !st.or_replace) return changes;
      Entry entry;
      TableSchema t;
      if (st.kind == DK::kCreateTableLike) {
        auto like = find(db_of(st.like), st.like.table);
        if (!like) {
          CPPCDC_TRY(not_understood(st.table, "LIKE a table whose shape is not known"));
          return changes;
        }
        t = *like;
        entry.default_charset = tables_.at(Key{db_of(st.like), st.like.table}).default_charset;
      } else {
        entry.default_charset =
            st.default_charset.empty() ? database_charset(key.first) : st.default_charset;
        for (const auto& def : st.columns) {
          ColumnSchema c = def.column;
          if (def.character && c.charset.empty()) c.charset = entry.default_charset;
          t.columns.push_back(std::move(c));
        }
        t.primary_key = st.primary_key;
      }
      t.database = key.first;
      t.table = key.second;
      build_shape(t);
      TableSchemaPtr before = existing == tables_.end() ? nullptr : existing->second.schema;
      entry.schema = std::make_shared<const TableSchema>(std::move(t));
      if (filter_.captured(key.first, key.second)) {
        changes.push_back({before ? Change::Kind::kAltered : Change::Kind::kCreated,
                           key.first,
                           key.second,
                           before,
                           entry.schema,
                           {}});
      }
      tables_[key] = std::move(entry);
      changed();
      return changes;
    }
    case DK::kAlterTable: {
      if (!is_tracked(st.table)) {
        // Renamed into a tracked database? Its shape is unknown there.
        for (const auto& op : st.ops) {
          if (op.kind == AlterOp::Kind::kRenameTable && is_captured(op.new_table)) {
            CPPCDC_TRY(
                not_understood(op.new_table, "renamed from a table whose shape is not known"));
          }
        }
        return changes;
      }
      const Key key{db_of(st.table), st.table.table};
      auto it = tables_.find(key);
      if (it == tables_.end()) {
        if (is_captured(st.table)) {
          return fail(Error::source(ErrorKind::kTerminal, "ALTER TABLE on captured table " +
                                                              key.first + "." + key.second +
                                                              " whose shape is not known: \"" +
                                                              shorten(sql) + "\""));
        }
        return changes;
      }
      TableSchema t = *it->second.schema;
      std::string charset = it->second.default_charset;
      std::optional<TableRef> renamed;
      for (const auto& op : st.ops) {
        if (op.kind == AlterOp::Kind::kRenameTable) renamed = op.new_table;
        if (auto applied = apply_alter(t, charset, op); !applied) {
          CPPCDC_TRY(not_understood(st.table, applied.error().message()));
          return changes;
        }
      }
      build_shape(t);
      const bool was_captured = filter_.captured(key.first, key.second);
      TableSchemaPtr before = it->second.schema;
      Key new_key = key;
      if (renamed) new_key = Key{db_of(*renamed), renamed->table};
      t.database = new_key.first;
      t.table = new_key.second;
      build_shape(t);
      auto after = std::make_shared<const TableSchema>(std::move(t));
      tables_.erase(it);
      const bool now_captured = filter_.captured(new_key.first, new_key.second);
      if (filter_.tracked_database(new_key.first)) tables_[new_key] = Entry{after, charset};
      changed();
      if (was_captured && (!renamed || new_key == key)) {
        changes.push_back({Change::Kind::kAltered, key.first, key.second, before, after, {}});
      } else {
        if (was_captured) {
          changes.push_back({Change::Kind::kDropped, key.first, key.second, before, nullptr, {}});
        }
        if (now_captured) {
          changes.push_back(
              {Change::Kind::kRenamed, new_key.first, new_key.second, before, after, key.second});
        }
      }
      return changes;
    }
    case DK::kRenameTables: {
      for (const auto& [from, to] : st.renames) {
        const Key fk{db_of(from), from.table};
        const Key tk{db_of(to), to.table};
        auto it = tables_.find(fk);
        if (it == tables_.end()) {
          if (is_captured(to)) {
            CPPCDC_TRY(not_understood(
                to, "renamed from " + fk.first + "." + fk.second + ", whose shape is not known"));
          }
          continue;
        }
        Entry entry = it->second;
        tables_.erase(it);
        TableSchema t = *entry.schema;
        t.database = tk.first;
        t.table = tk.second;
        build_shape(t);
        TableSchemaPtr before = entry.schema;
        entry.schema = std::make_shared<const TableSchema>(std::move(t));
        if (filter_.captured(fk.first, fk.second)) {
          changes.push_back({Change::Kind::kDropped, fk.first, fk.second, before, nullptr, {}});
        }
        if (filter_.captured(tk.first, tk.second)) {
          changes.push_back(
              {Change::Kind::kRenamed, tk.first, tk.second, before, entry.schema, fk.second});
        }
        if (filter_.tracked_database(tk.first)) tables_[tk] = std::move(entry);
      }
      changed();
      return changes;
    }
    case DK::kDropTables: {
      for (const auto& r : st.tables) {
        const Key key{db_of(r), r.table};
        auto it = tables_.find(key);
        if (it == tables_.end()) continue;
        if (filter_.captured(key.first, key.second)) {
          changes.push_back(
              {Change::Kind::kDropped, key.first, key.second, it->second.schema, nullptr, {}});
        }
        tables_.erase(it);
        changed();
      }
      return changes;
    }
    case DK::kTruncate: {
      const Key key{db_of(st.table), st.table.table};
      if (filter_.captured(key.first, key.second)) {
        changes.push_back({Change::Kind::kTruncated,
                           key.first,
                           key.second,
                           find(key.first, key.second),
                           nullptr,
                           {}});
      }
      return changes;
    }
  }
  return changes;
}

// ---- JSON ------------------------------------------------------------------------------

const std::string& SchemaHistory::serialize() const {
  if (cache_) return *cache_;
  namespace json = boost::json;
  json::object root;
  root["version"] = 1;
  root["server_charset"] = server_charset_;
  json::object dbs;
  for (const auto& [name, charset] : databases_) dbs[name] = charset;
  root["databases"] = std::move(dbs);
  json::array tables;
  for (const auto& [key, entry] : tables_) {
    const TableSchema& t = *entry.schema;
    json::object o;
    o["database"] = t.database;
    o["table"] = t.table;
    o["charset"] = entry.default_charset;
    json::array pk;
    for (const auto& k : t.primary_key) pk.emplace_back(k);
    o["primary_key"] = std::move(pk);
    json::array cols;
    for (const auto& c : t.columns) {
      json::object co;
      co["name"] = c.name;
      co["type"] = c.column_type;
      if (c.is_unsigned) co["unsigned"] = true;
      if (!c.charset.empty()) co["charset"] = c.charset;
      if (c.is_json) co["json"] = true;
      if (!c.nullable) co["nullable"] = false;
      if (!c.elements.empty()) {
        json::array el;
        for (const auto& e : c.elements) el.emplace_back(e);
        co["elements"] = std::move(el);
      }
      cols.push_back(std::move(co));
    }
    o["columns"] = std::move(cols);
    tables.push_back(std::move(o));
  }
  root["tables"] = std::move(tables);
  cache_ = json::serialize(root);
  return *cache_;
}

Status SchemaHistory::restore(std::string_view text) {
  namespace json = boost::json;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  auto bad = [](const std::string& what) {
    return fail(Error::invalid_data("the schema history saved with the checkpoint: " + what));
  };
  if (ec || !v.is_object()) return bad("not a JSON object");
  const json::object& root = v.as_object();
  const auto* version = root.if_contains("version");
  if (!version || !version->is_int64() || version->as_int64() != 1) return bad("unknown version");
  auto str = [](const json::object& o, std::string_view k) -> std::optional<std::string> {
    const auto* x = o.if_contains(k);
    if (!x || !x->is_string()) return std::nullopt;
    return std::string(x->as_string());
  };
  auto flag = [](const json::object& o, std::string_view k, bool dflt) {
    const auto* x = o.if_contains(k);
    return x && x->is_bool() ? x->as_bool() : dflt;
  };
  std::map<Key, Entry> tables;
  std::map<std::string, std::string> dbs;
  if (const auto* d = root.if_contains("databases"); d && d->is_object()) {
    for (const auto& [k, val] : d->as_object()) {
      if (val.is_string()) dbs[std::string(k)] = std::string(val.as_string());
    }
  }
  const auto* ts = root.if_contains("tables");
  if (!ts || !ts->is_array()) return bad("no tables");
  for (const auto& tv : ts->as_array()) {
    if (!tv.is_object()) return bad("a table is not an object");
    const auto& o = tv.as_object();
    TableSchema t;
    auto database = str(o, "database");
    auto table = str(o, "table");
    if (!database || !table) return bad("a table without its name");
    t.database = *database;
    t.table = *table;
    if (const auto* pk = o.if_contains("primary_key"); pk && pk->is_array()) {
      for (const auto& k : pk->as_array()) {
        if (!k.is_string()) return bad("a key column that is not a string");
        t.primary_key.emplace_back(k.as_string());
      }
    }
    const auto* cols = o.if_contains("columns");
    if (!cols || !cols->is_array()) return bad("table " + t.table + " without columns");
    for (const auto& cv : cols->as_array()) {
      if (!cv.is_object()) return bad("a column that is not an object");
      const auto& co = cv.as_object();
      ColumnSchema c;
      auto name = str(co, "name");
      auto type = str(co, "type");
      if (!name || !type) return bad("a column of " + t.table + " without name or type");
      c.name = *name;
      c.column_type = *type;
      c.is_unsigned = flag(co, "unsigned", false);
      c.charset = str(co, "charset").value_or("");
      c.is_json = flag(co, "json", false);
      c.nullable = flag(co, "nullable", true);
      if (const auto* el = co.if_contains("elements"); el && el->is_array()) {
        for (const auto& e : el->as_array()) {
          if (e.is_string()) c.elements.emplace_back(e.as_string());
        }
      }
      t.columns.push_back(std::move(c));
    }
    build_shape(t);
    Key key{t.database, t.table};
    tables[key] =
        Entry{std::make_shared<const TableSchema>(std::move(t)), str(o, "charset").value_or("")};
  }
  tables_ = std::move(tables);
  databases_ = std::move(dbs);
  server_charset_ = str(root, "server_charset").value_or("utf8mb4");
  changed();
  return ok();
}

}  // namespace cppcdc::mysql::detail
