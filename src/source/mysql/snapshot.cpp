// The blocking snapshot (snapshot.hpp).

#include "source/mysql/snapshot.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "core/event_spill.hpp"
#include "core/progress_log.hpp"
#include "core/text_util.hpp"

namespace cppcdc::mysql::detail {
namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void hex(std::string_view bytes, std::string& out) {
  static const char* kDigits = "0123456789abcdef";
  out.assign("\\x");
  out.reserve(2 + bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
}

}  // namespace

bool raw_bytes_column(const ColumnSchema& c) {
  if (c.charset == "binary") return true;
  const std::string& t = c.column_type;
  for (const char* prefix : {"bit", "geometry", "point", "linestring", "polygon", "multipoint",
                             "multilinestring", "multipolygon", "geometrycollection"}) {
    const std::string p(prefix);
    if (t.rfind(p, 0) == 0 && (t.size() == p.size() || t[p.size()] == '(')) return true;
  }
  return false;
}

Row text_row(const TableSchema& t, const std::vector<bool>& as_hex, char** row,
             const unsigned long* lengths) {
  Row after;
  after.reserve(t.columns.size());
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    ColumnValue v;
    v.name = t.columns[i].name;
    v.is_json = t.columns[i].is_json;
    if (row[i] != nullptr) {
      std::string_view bytes(row[i], lengths[i]);
      std::string text;
      if (as_hex[i]) {
        hex(bytes, text);
      } else {
        text.assign(bytes);
      }
      v.text = std::move(text);
    }
    after.push_back(std::move(v));
  }
  return after;
}

Result<SnapshotPlan> begin_snapshot(const MysqlSourceConfig& config, SchemaHistory& history,
                                    const ServerInfo& server) {
  SnapshotPlan plan;
  auto conn = connect(config);
  if (!conn) return fail(conn.error());
  plan.conn = std::move(*conn);
  MYSQL* m = plan.conn.get();
  CPPCDC_TRY(exec(m, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                  "setting the snapshot's isolation level"));
  CPPCDC_TRY(exec(m, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
                  "opening the snapshot's view"));
  if (server.mariadb) {
    auto status = query(m, "SHOW STATUS LIKE 'binlog_snapshot_%'",
                        "reading the binlog coordinate of the snapshot");
    if (!status) return fail(status.error());
    for (const auto& r : status->rows) {
      if (r.size() < 2 || !r[0] || !r[1]) continue;
      if (*r[0] == "Binlog_snapshot_file") plan.stream_start.file = *r[1];
      if (*r[0] == "Binlog_snapshot_position") {
        plan.stream_start.position = cppcdc::detail::parse_decimal(*r[1]).value_or(0);
      }
    }
    if (plan.stream_start.file.empty() || plan.stream_start.position == 0) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "the server reports no Binlog_snapshot_file / _position (binary "
                                "logging off?)"));
    }
    if (server.gtid) {
      auto gtid = query(m,
                        "SELECT BINLOG_GTID_POS(" + quote_literal(plan.stream_start.file) + ", " +
                            std::to_string(plan.stream_start.position) + ")",
                        "reading the GTID position of the snapshot");
      if (!gtid) return fail(gtid.error());
      if (!gtid->rows.empty() && gtid->rows[0][0]) plan.stream_start.gtid = *gtid->rows[0][0];
    }
  } else {
    spdlog::warn(
        "MySQL gives no binlog coordinate of a consistent snapshot: the coordinate is "
        "read just after the view opened; a transaction committing in between may be "
        "delivered twice or missed");
    auto pos = current_position(m, server);
    if (!pos) return fail(pos.error());
    plan.stream_start = *pos;
  }
  CPPCDC_TRY(history.load_catalog(m));
  for (const auto& t : history.captured_tables()) {
    if (!config.snapshot_tables.empty() &&
        std::find(config.snapshot_tables.begin(), config.snapshot_tables.end(),
                  t->database + "." + t->table) == config.snapshot_tables.end()) {
      continue;
    }
    plan.tables.push_back(t);
  }
  // The estimates, for progress reports: read before the first table's rows stream (the
  // connection takes no other query while a result is streamed).
  plan.estimated_rows.assign(plan.tables.size(), 0);
  if (!plan.tables.empty()) {
    std::string databases;
    for (const auto& t : plan.tables) {
      const std::string literal = quote_literal(t->database);
      if (databases.find(literal) == std::string::npos) {
        databases += (databases.empty() ? "" : ", ") + literal;
      }
    }
    auto estimates = query(m,
                           "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS FROM "
                           "information_schema.TABLES WHERE TABLE_SCHEMA IN (" +
                               databases + ")",
                           "reading the row estimates of the snapshot's tables");
    std::map<std::string, double> by_name;
    if (!estimates) {
      // Only the progress reports lose their estimate.
      spdlog::debug("no row estimates for the snapshot: {}", estimates.error().report());
    } else {
      for (const auto& r : estimates->rows) {
        if (r.size() < 3 || !r[0] || !r[1] || !r[2]) continue;
        by_name[*r[0] + "." + *r[1]] =
            static_cast<double>(cppcdc::detail::parse_decimal(*r[2]).value_or(0));
      }
    }
    for (std::size_t i = 0; i < plan.tables.size(); ++i) {
      const auto it = by_name.find(plan.tables[i]->database + "." + plan.tables[i]->table);
      if (it != by_name.end()) plan.estimated_rows[i] = it->second;
    }
  }
  plan.id = config.source_id + "@" + plan.stream_start.offset();
  return plan;
}

Status read_snapshot(SnapshotPlan& plan, const MysqlSourceConfig& config,
                     const SchemaHistory& history, const SnapshotEmit& emit,
                     const std::atomic<bool>& stop, const std::string& state,
                     BlockingSnapshotTracker* tracker) {
  (void)history;
  MYSQL* m = plan.conn.get();
  std::map<std::string, std::string> conditions;
  for (const auto& [table, condition] : config.snapshot_table_conditions) {
    conditions[table] = condition;
  }
  const std::size_t chunk = std::max<std::uint32_t>(1, config.snapshot_chunk_size);
  const std::string position =
      plan.stream_start.file + ":" + std::to_string(plan.stream_start.position);
  const std::string source_name =
      config.source_name.empty() ? std::string(to_string(config.flavor)) : config.source_name;
  std::vector<Event> batch;
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  bool first_marked = false;  // the snapshot's first row was marked (Event::snapshot_edge)
  for (std::size_t ti = 0; ti < plan.tables.size(); ++ti) {
    const TableSchema& t = *plan.tables[ti];
    const bool last_table = ti + 1 == plan.tables.size();
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      sql += (i ? ", " : "") + quote_ident(t.columns[i].name);
    }
    sql += " FROM " + quote_ident(t.database) + "." + quote_ident(t.table);
    if (auto c = conditions.find(t.database + "." + t.table); c != conditions.end()) {
      sql += " WHERE (" + c->second + ")";
    }
    if (!t.primary_key.empty()) {
      sql += " ORDER BY ";
      for (std::size_t i = 0; i < t.primary_key.size(); ++i) {
        sql += (i ? ", " : "") + quote_ident(t.primary_key[i]);
      }
    }
    const std::string what = "reading " + t.database + "." + t.table + " for the snapshot";
    if (mysql_real_query(m, sql.data(), sql.size()) != 0) return fail(error_from(m, what));
    MYSQL_RES* res = mysql_use_result(m);
    if (!res) return fail(error_from(m, what));
    std::vector<bool> as_hex;
    for (const auto& c : t.columns) as_hex.push_back(raw_bytes_column(c));
    std::uint64_t chunk_no = 0;
    std::uint64_t table_rows = 0;  // rows of this table handed over
    const double estimate = ti < plan.estimated_rows.size() ? plan.estimated_rows[ti] : 0;
    cppcdc::detail::ProgressLog log(t.database + "." + t.table, estimate, 0);
    if (tracker != nullptr) tracker->table_started(ti, estimate);
    std::vector<Event> pending;  // the current chunk
    auto flush = [&](bool last_chunk) -> bool {
      if (!pending.empty() && chunk_no == 0) {
        mark_snapshot_edge(pending.front(),
                           first_marked ? SnapshotEdge::kFirstInTable : SnapshotEdge::kFirst);
        first_marked = true;
      }
      if (!pending.empty() && last_chunk) {
        mark_snapshot_edge(pending.back(),
                           last_table ? SnapshotEdge::kLast : SnapshotEdge::kLastInTable);
      }
      for (auto& e : pending) {
        e.snapshot->is_last_chunk = last_chunk;
        sizes.push_back(cppcdc::detail::approx_event_bytes(e));
        batch.push_back(std::move(e));
      }
      table_rows += pending.size();
      pending.clear();
      ++chunk_no;
      if (tracker != nullptr) tracker->table_progress(ti, table_rows, last_chunk);
      log.update(table_rows, last_chunk);
      const bool emitted = emit(batch, sizes);
      batch.clear();
      sizes.clear();
      return emitted;
    };
    bool stopped = false;
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
      if (pending.size() >= chunk) {
        if (!flush(false) || stop.load()) {
          stopped = true;
          break;
        }
      }
      const unsigned long* lengths = mysql_fetch_lengths(res);
      Event e;
      e.op = Operation::kRead;
      e.source.source_name = source_name;
      e.source.offset = position;
      e.source.timestamp = now_ms();
      e.ts = e.source.timestamp;
      e.schema = t.database;
      e.table = t.table;
      e.primary_key = t.primary_key;
      e.shape = t.shape;
      e.snapshot = SnapshotMetadata{plan.id, chunk_no, false};
      e.after = text_row(t, as_hex, row, lengths);
      pending.push_back(std::move(e));
      ++total;
    }
    if (stopped) {
      mysql_free_result(res);
      return ok();
    }
    if (mysql_errno(m) != 0) {
      Error e = error_from(m, what);
      mysql_free_result(res);
      return fail(std::move(e));
    }
    mysql_free_result(res);
    if (last_table && !pending.empty()) {
      // The snapshot's last event: once it is durable, the stream resumes after the view.
      pending.back().resume_offset = plan.stream_start.offset();
      pending.back().resume_state = state;
    }
    if (pending.empty()) {
      if (tracker != nullptr) tracker->table_progress(ti, table_rows, true);
      log.update(table_rows, true);
    } else if (!flush(true)) {
      return ok();
    }
    if (stop.load()) return ok();
  }
  CPPCDC_TRY(exec(m, "COMMIT", "ending the snapshot transaction"));
  spdlog::info("snapshot {}: {} of {} read", plan.id, cppcdc::detail::counted(total, "row"),
               cppcdc::detail::counted(plan.tables.size(), "table"));
  plan.conn.reset();
  return ok();
}

}  // namespace cppcdc::mysql::detail
