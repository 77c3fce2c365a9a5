#include "source/postgres/snapshot.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <span>

#include "core/event_spill.hpp"
#include "core/progress_log.hpp"
#include "core/said_once.hpp"
#include "core/text_util.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/sql_catalog.hpp"

namespace cppcdc::pg {
namespace {

using detail::exec;
using detail::get;
using detail::quote_ident;

Error bad_state(const std::string& what) {
  return Error::checkpoint(ErrorKind::kTerminal,
                           "the checkpoint's snapshot progress is unreadable (" + what +
                               "); move the checkpoint file away to snapshot again from the start");
}

// Rows of COPY ... TO STDOUT as libpq hands them over (one buffer per row), owned until the
// chunk they belong to is built.
class CopyLines {
 public:
  CopyLines() = default;
  CopyLines(const CopyLines&) = delete;
  CopyLines& operator=(const CopyLines&) = delete;
  ~CopyLines() { drop_first(lines_.size()); }

  std::size_t size() const noexcept { return lines_.size(); }
  void push(char* line, std::size_t len) {
    try {
      lines_.emplace_back(line, len);
    } catch (...) {
      PQfreemem(line);
      throw;
    }
  }
  std::span<const std::string_view> first(std::size_t k) const noexcept {
    return std::span<const std::string_view>(lines_.data(), k);
  }
  void drop_first(std::size_t k) noexcept {
    for (std::size_t i = 0; i < k; ++i) PQfreemem(const_cast<char*>(lines_[i].data()));
    lines_.erase(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(k));
  }

 private:
  std::vector<std::string_view> lines_;
};

// Events per batch handed over (at least one chunk).
constexpr std::size_t kBatchEvents = 8192;

}  // namespace

Result<TableDescription> describe_snapshot_table(PGconn* conn, const std::string& qualified) {
  const auto dot = qualified.find('.');
  const std::string schema = qualified.substr(0, dot);
  const std::string table = qualified.substr(dot + 1);
  auto rel = exec(conn,
                  "select c.oid, c.relreplident, c.reltuples from pg_class c join pg_namespace n "
                  "on n.oid = c.relnamespace where n.nspname = $1 and c.relname = $2",
                  "looking up " + qualified + " for the snapshot", {schema, table});
  if (!rel) return fail(rel.error());
  if (PQntuples(rel->get()) == 0) {
    return fail(Error::source(ErrorKind::kTerminal,
                              "table " + qualified + " of the snapshot does not exist"));
  }
  TableDescription d;
  d.relation.relation_id =
      static_cast<std::uint32_t>(std::stoul(get(rel->get(), 0, 0).value_or("0")));
  d.relation.namespace_name = schema;
  d.relation.relation_name = table;
  d.relation.replica_identity = get(rel->get(), 0, 1).value_or("d")[0];
  d.estimated_rows = std::stod(get(rel->get(), 0, 2).value_or("0"));
  // The columns pgoutput publishes: not dropped, not generated, in attribute order; flagged
  // as it flags them (every column under FULL, the identity index's under USING INDEX, the
  // primary key's under DEFAULT).
  auto cols =
      exec(conn,
           "select a.attname, a.atttypid, a.atttypmod, format_type(a.atttypid, "
           "a.atttypmod), array_position(pk.indkey::int2[], a.attnum), "
           "coalesce(a.attnum = any(ri.indkey::int2[]), false), "
           // A collation of the column's own (not its type's default): key values are
           // compared under it, as ORDER BY orders the column.
           "(select ' collate ' || quote_ident(n.nspname) || '.' || "
           "quote_ident(co.collname) from pg_collation co join pg_namespace n on "
           "n.oid = co.collnamespace join pg_type t on t.oid = a.atttypid where co.oid = "
           "a.attcollation and a.attcollation <> 0 and a.attcollation <> 100 and "
           "a.attcollation <> t.typcollation) "
           "from pg_attribute a "
           "left join pg_index pk on pk.indrelid = a.attrelid and pk.indisprimary "
           "left join pg_index ri on ri.indrelid = a.attrelid and ri.indisreplident "
           "where a.attrelid = $1::oid and a.attnum > 0 and not a.attisdropped "
           "and a.attgenerated = '' order by a.attnum",
           "looking up the columns of " + qualified, {std::to_string(d.relation.relation_id)});
  if (!cols) return fail(cols.error());
  std::vector<std::pair<int, std::pair<std::string, std::string>>> key;
  for (int r = 0; r < PQntuples(cols->get()); ++r) {
    RelationColumn c;
    c.name = get(cols->get(), r, 0).value_or("");
    c.type_oid = static_cast<std::uint32_t>(std::stoul(get(cols->get(), r, 1).value_or("0")));
    c.type_modifier = std::stoi(get(cols->get(), r, 2).value_or("-1"));
    const auto pk_pos = get(cols->get(), r, 4);
    const bool in_identity_index = get(cols->get(), r, 5).value_or("f") == "t";
    switch (d.relation.replica_identity) {
      case 'f':
        c.part_of_key = true;
        break;
      case 'i':
        c.part_of_key = in_identity_index;
        break;
      case 'd':
        c.part_of_key = pk_pos.has_value();
        break;
      default:
        c.part_of_key = false;
    }
    if (pk_pos) {
      key.push_back({std::stoi(*pk_pos),
                     {c.name, get(cols->get(), r, 3).value_or("text") +
                                  get(cols->get(), r, 6).value_or("")}});
    }
    d.relation.columns.push_back(std::move(c));
  }
  std::sort(key.begin(), key.end());
  for (auto& [pos, kt] : key) {
    d.key.push_back(kt.first);
    d.key_types.push_back(kt.second);
  }
  return d;
}

namespace {

std::string column_list(const TableDescription& d) {
  std::string out;
  for (std::size_t i = 0; i < d.relation.columns.size(); ++i) {
    if (i) out += ", ";
    out += quote_ident(d.relation.columns[i].name);
  }
  return out;
}

std::string table_ref(const TableDescription& d) {
  return quote_ident(d.relation.namespace_name) + "." + quote_ident(d.relation.relation_name);
}

}  // namespace

std::string keyset_chunk_query(const TableDescription& d, const std::string& where,
                               bool after_cursor, std::size_t limit) {
  std::string sql = "select " + column_list(d) + " from " + table_ref(d);
  std::string conds = where;
  if (after_cursor) {
    std::string lhs = "(", rhs = "(";
    for (std::size_t k = 0; k < d.key.size(); ++k) {
      if (k) lhs += ", ", rhs += ", ";
      lhs += quote_ident(d.key[k]);
      rhs += "$" + std::to_string(k + 1) + "::" + d.key_types[k];
    }
    conds += (conds.empty() ? "" : " and ") + lhs + ") > " + rhs + ")";
  }
  if (!conds.empty()) sql += " where " + conds;
  sql += " order by ";
  for (std::size_t k = 0; k < d.key.size(); ++k) sql += (k ? ", " : "") + quote_ident(d.key[k]);
  sql += " limit " + std::to_string(limit);
  return sql;
}

std::string snapshot_copy_query(const TableDescription& d, const std::string& where,
                                const std::optional<std::vector<std::string>>& after) {
  std::string sql = "copy (select " + column_list(d) + " from " + table_ref(d);
  std::string conds = where;
  if (after && !d.key.empty()) {
    // COPY takes no parameters: the cursor's values go in as escape-string literals (valid
    // whatever standard_conforming_strings says), cast to the key columns' types.
    std::string lhs = "(", rhs = "(";
    for (std::size_t k = 0; k < d.key.size(); ++k) {
      if (k) lhs += ", ", rhs += ", ";
      lhs += quote_ident(d.key[k]);
      rhs += "E'";
      if (k < after->size()) {
        for (const char c : (*after)[k]) {
          if (c == '\\' || c == '\'') rhs += c;
          rhs += c;
        }
      }
      rhs += "'::" + d.key_types[k];
    }
    conds += (conds.empty() ? "" : " and ") + lhs + ") > " + rhs + ")";
  }
  if (!conds.empty()) sql += " where " + conds;
  if (!d.key.empty()) {
    sql += " order by ";
    for (std::size_t k = 0; k < d.key.size(); ++k) sql += (k ? ", " : "") + quote_ident(d.key[k]);
  }
  return sql + ") to stdout";
}

TupleData tuple_of(const PGresult* res, int row) {
  const int ncols = PQnfields(res);
  TupleData tuple(static_cast<std::size_t>(ncols));
  for (int c = 0; c < ncols; ++c) {
    if (!PQgetisnull(res, row, c)) {
      tuple[c].kind = TupleColumn::Kind::kText;
      tuple[c].value.assign(PQgetvalue(res, row, c),
                            static_cast<std::size_t>(PQgetlength(res, row, c)));
    }
  }
  return tuple;
}

Result<std::vector<std::string>> leaf_tables(PGconn* conn, const std::string& publication,
                                             const std::vector<std::string>& tables) {
  auto via = publishes_via_root(conn, publication);
  if (!via) return fail(via.error());
  // No publication (initial_only): read as cppcdc would publish, through the root.
  const bool via_root = via->value_or(true);
  std::vector<std::string> out;
  for (const auto& t : tables) {
    const auto dot = t.find('.');
    const std::string schema = dot == std::string::npos ? "public" : t.substr(0, dot);
    const std::string table = dot == std::string::npos ? t : t.substr(dot + 1);
    auto leaves = exec(conn,
                       "select n.nspname, c.relname from pg_partition_tree(format('%I.%I', "
                       "$1::text, $2::text)::regclass) p join pg_class c on c.oid = p.relid "
                       "join pg_namespace n on n.oid = c.relnamespace where p.isleaf and "
                       "p.level > 0 order by c.relname",
                       "listing the partitions of " + t, {schema, table});
    if (!leaves) return fail(leaves.error());
    if (via_root || PQntuples(leaves->get()) == 0) {
      out.push_back(schema + "." + table);
      continue;
    }
    for (int r = 0; r < PQntuples(leaves->get()); ++r) {
      out.push_back(get(leaves->get(), r, 0).value_or("") + "." +
                    get(leaves->get(), r, 1).value_or(""));
    }
  }
  return out;
}

std::string SnapshotProgress::to_state() const { return to_state(ReadVisibility()); }

std::string SnapshotProgress::to_state(const ReadVisibility& visibility) const {
  if (done()) return visibility.to_state();
  boost::json::object s;
  s["id"] = id;
  s["stream_start"] = stream_start.to_string();
  boost::json::array t;
  for (const auto& name : tables) t.emplace_back(name);
  s["tables"] = std::move(t);
  s["table_index"] = table_index;
  if (cursor) {
    boost::json::array c;
    for (const auto& v : *cursor) c.emplace_back(v);
    s["cursor"] = std::move(c);
  } else {
    s["cursor"] = nullptr;
  }
  s["chunk"] = chunk;
  s["rows"] = rows;
  s["started_ms"] = started_ms;
  boost::json::object root;
  root["snapshot"] = std::move(s);
  if (!visibility.empty()) root["visibility"] = visibility.to_json();
  return boost::json::serialize(root);
}

bool SnapshotProgress::in_state(std::string_view state) noexcept {
  return state.find("\"snapshot\"") != std::string_view::npos;
}

Result<std::optional<SnapshotProgress>> SnapshotProgress::from_state(const std::string& state) {
  if (state.empty()) return std::optional<SnapshotProgress>();
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(state, ec);
  if (ec || !v.is_object()) return fail(bad_state("not a JSON object"));
  const auto* snap = v.as_object().if_contains("snapshot");
  // Only the visibility filter of a finished snapshot's reads (visibility.hpp).
  if (!snap && v.as_object().contains("visibility")) return std::optional<SnapshotProgress>();
  if (!snap || !snap->is_object()) return fail(bad_state("no snapshot object"));
  const auto& o = snap->as_object();
  SnapshotProgress p;
  try {
    p.id = std::string(o.at("id").as_string());
    auto lsn = Lsn::parse(std::string(o.at("stream_start").as_string()));
    if (!lsn) return fail(bad_state("stream_start is not an LSN"));
    p.stream_start = *lsn;
    for (const auto& t : o.at("tables").as_array()) p.tables.emplace_back(t.as_string());
    p.table_index = static_cast<std::size_t>(o.at("table_index").to_number<std::uint64_t>());
    if (!o.at("cursor").is_null()) {
      std::vector<std::string> c;
      for (const auto& k : o.at("cursor").as_array()) c.emplace_back(k.as_string());
      p.cursor = std::move(c);
    }
    p.chunk = o.at("chunk").to_number<std::uint64_t>();
    p.rows = o.at("rows").to_number<std::uint64_t>();
    p.started_ms = o.at("started_ms").to_number<std::int64_t>();
  } catch (const std::exception& e) {
    return fail(bad_state(e.what()));
  }
  if (p.table_index > p.tables.size()) return fail(bad_state("table_index out of range"));
  return std::optional<SnapshotProgress>(std::move(p));
}

Status run_snapshot(PGconn* conn, PGconn* catalog, TransactionAssembler& assembler,
                    SnapshotProgress progress, const SnapshotOptions& options,
                    const std::function<bool(std::vector<Event>&, std::vector<std::size_t>&)>& emit,
                    const std::atomic<bool>& stop) {
  auto begin = exec(conn, "begin isolation level repeatable read read only",
                    "starting the snapshot transaction");
  if (!begin) return fail(begin.error());
  if (!progress.exported_snapshot.empty()) {
    // The snapshot the slot was created with: the stream starts exactly where it ends.
    auto set =
        exec(conn, "set transaction snapshot " + detail::quote_literal(progress.exported_snapshot),
             "importing the slot's exported snapshot");
    if (!set) return fail(set.error());
  }
  // Each table is read by one COPY that runs as long as the table takes: a statement_timeout
  // set for the role would cut it off and fail the snapshot, every time, at the same length.
  auto untimed = exec(conn, "set local statement_timeout = 0",
                      "lifting statement_timeout for the snapshot transaction");
  if (!untimed) return fail(untimed.error());
  if (!progress.done()) {
    // ACCESS SHARE: writes go on, but no ALTER TABLE can change a table while its rows are
    // read (each is described, after this, from the current catalog).
    std::string tables;
    for (std::size_t i = progress.table_index; i < progress.tables.size(); ++i) {
      const auto& t = progress.tables[i];
      const auto dot = t.find('.');
      tables += (tables.empty() ? "" : ", ") + quote_ident(t.substr(0, dot)) + "." +
                quote_ident(t.substr(dot + 1));
    }
    auto locked = exec(conn, "lock table " + tables + " in access share mode",
                       "locking the snapshot's tables against schema changes");
    if (!locked) {
      if (locked.error().message().find("42501") != std::string::npos) {
        return fail(locked.error().context(
            "the snapshot reads the tables: GRANT SELECT on them to the role the connection "
            "string names, or set the snapshot mode to \"never\" to stream changes only"));
      }
      return fail(locked.error());
    }
  }
  // Read in a transaction of its own (not the slot's exported snapshot), the rows include
  // every change committed before this transaction's snapshot, which the stream, starting at
  // the slot's earlier position, also carries: its snapshot and the WAL position right after
  // it tell the stream which of those to drop (visibility.hpp). The tables are locked first
  // (LOCK takes no snapshot), so this is the transaction's first snapshot and the one its
  // reads use.
  Lsn read_position = progress.stream_start;
  const bool own_snapshot =
      options.stream_follows && progress.exported_snapshot.empty() && !progress.done();
  if (own_snapshot) {
    auto taken = exec(conn, "select txid_current_snapshot()::text, pg_current_wal_insert_lsn()",
                      "taking the snapshot transaction's snapshot");
    if (!taken) return fail(taken.error());
    auto xids = XidSnapshot::parse(get(taken->get(), 0, 0).value_or(""));
    if (!xids) {
      return fail(
          Error::source(ErrorKind::kTerminal, "txid_current_snapshot() returned '" +
                                                  get(taken->get(), 0, 0).value_or("") +
                                                  "', which is not a transaction snapshot"));
    }
    auto until = detail::get_lsn(taken->get(), 0, 1, "pg_current_wal_insert_lsn()");
    if (!until) return fail(until.error());
    assembler.visibility.begin_read(*xids, *until);
    // The rows carry the position their view corresponds to, not the slot's.
    read_position = *until;
    spdlog::info(
        "snapshot {}: reading in a transaction of its own (snapshot {}, WAL {}); the stream "
        "from {} drops the changes of the rows read that this snapshot already sees",
        progress.id, xids->to_string(), until->to_string(), progress.stream_start.to_string());
  }
  const std::size_t n = std::max<std::uint32_t>(1, options.chunk_size);
  CopyLines rows;                 // the rows read and not yet handed over (at most n + 1)
  std::vector<CopyField> fields;  // a split row, for the cursor
  // Chunks are handed over a few at a time, as one batch of up to kBatchEvents events (the
  // consumer's batch, which then changes hands without moving its events); batch[0, used) are
  // built, the rest are delivered events emit() handed back for reuse.
  const std::size_t batch_events = std::max(n, kBatchEvents);
  std::vector<Event> batch;
  std::size_t used = 0;
  std::vector<std::size_t> sizes;  // approx_event_bytes of batch[0, used)
  // Whether the next row is the snapshot's first (Event::snapshot_edge): nothing read yet.
  bool first_pending = progress.table_index == 0 && progress.chunk == 0 && progress.rows == 0;
  while (!progress.done()) {
    if (stop.load()) return ok();
    const std::string& name = progress.tables[progress.table_index];
    auto d = describe_snapshot_table(catalog, name);
    if (!d) return fail(d.error());
    // A table without a key is one warning, said here (before the relation's own, which
    // then is a debug line) unless the program said it first (under effectively_once).
    const bool keyless_first = d->key.empty() && ::cppcdc::detail::first_to_say(
                                                     ::cppcdc::detail::keyless_table_fact(name));
    CPPCDC_TRY(assembler.observe_relation(d->relation));
    std::string where;
    if (auto it = options.table_conditions.find(name); it != options.table_conditions.end()) {
      where = "(" + it->second + ")";
    }
    const bool keyed = !d->key.empty();
    if (!keyed) {
      // No key to continue from: the table is read again from its start.
      progress.cursor.reset();
      progress.rows = 0;
      progress.chunk = 0;
      spdlog::log(keyless_first ? spdlog::level::warn : spdlog::level::debug,
                  "table {} has no primary key: its events carry primary_key null, and its "
                  "snapshot cannot resume mid-table, so its rows are acknowledged only once it "
                  "is read whole (under effectively_once: one Kafka transaction) and an "
                  "interrupted read starts again from its first row",
                  name);
    } else if (progress.cursor && progress.cursor->size() != d->key.size()) {
      return fail(bad_state(
          "the cursor of " + name + " has " + std::to_string(progress.cursor->size()) +
          " value(s) but its primary key has " + std::to_string(d->key.size()) + " column(s)"));
    }
    if (own_snapshot) {
      ReadRange range;
      range.table = name;
      range.key = d->key;
      range.key_types = d->key_types;
      if (keyed) range.after = progress.cursor;
      assembler.visibility.add_range(std::move(range));
    }
    std::vector<std::size_t> key_columns;  // positions of the key columns in a row
    for (const auto& k : d->key) {
      const auto& cols = d->relation.columns;
      key_columns.push_back(static_cast<std::size_t>(
          std::find_if(cols.begin(), cols.end(),
                       [&](const RelationColumn& c) { return c.name == k; }) -
          cols.begin()));
    }
    cppcdc::detail::ProgressLog log(name, d->estimated_rows, progress.rows);
    const std::size_t table_index = progress.table_index;
    if (options.tracker != nullptr) {
      options.tracker->table_started(table_index, d->estimated_rows);
      options.tracker->table_progress(table_index, progress.rows, false);
    }
    const std::string what = "reading the snapshot of " + name;
    // One COPY per table, in key order from the cursor, cut into chunks of n rows here: the
    // server streams rows while cppcdc converts and hands over the previous chunk, and pays
    // no query per chunk. Each chunk's last key becomes the cursor a restart continues from.
    detail::PgResultPtr started(
        PQexec(conn, snapshot_copy_query(*d, where, progress.cursor).c_str()));
    if (!started || PQresultStatus(started.get()) != PGRES_COPY_OUT) {
      return fail(detail::error_from_result(started.get(), conn, what));
    }
    started.reset();
    bool ended = false;
    bool table_done = false;
    while (!table_done) {
      // n rows, and one more to know whether this chunk is the table's last.
      while (!ended && rows.size() <= n) {
        char* line = nullptr;
        const int len = PQgetCopyData(conn, &line, 0);
        if (len > 0) {
          rows.push(line, static_cast<std::size_t>(len));
        } else if (len == -1) {
          auto end = detail::receive_result(conn, what);  // COPY's own status
          if (!end) return fail(end.error());
          ended = true;
        } else {
          return fail(detail::error_from_conn(conn, what));
        }
      }
      const std::size_t take = std::min(rows.size(), n);
      table_done = ended && rows.size() <= n;
      const SnapshotMetadata meta{progress.id, progress.chunk, table_done};
      // The progress after this chunk rides on its last event, so it is saved only once the
      // chunk is acknowledged.
      progress.rows += take;
      ++progress.chunk;
      const std::size_t chunk_start = used;
      auto built = assembler.append_reads(d->relation.relation_id, rows.first(take), read_position,
                                          progress.started_ms, meta, batch, used, &sizes);
      if (!built) return fail(built.error().context("snapshot of " + name));
      if (take > 0 && keyed) {
        split_copy_row(rows.first(take).back(), fields);
        std::vector<std::string> cursor(key_columns.size());
        for (std::size_t k = 0; k < key_columns.size(); ++k) {
          copy_field_text(fields[key_columns[k]], cursor[k]);
        }
        progress.cursor = std::move(cursor);
      }
      rows.drop_first(take);
      if (options.tracker != nullptr) {
        options.tracker->table_progress(table_index, progress.rows, table_done);
      }
      if (table_done) {
        ++progress.table_index;
        progress.cursor.reset();
        log.update(progress.rows, true);
        progress.rows = 0;
        progress.chunk = 0;
      } else {
        log.update(progress.rows, false);
      }
      // A table without a key has no cursor to continue from: only its last chunk carries a
      // position, so its rows are acknowledged as a whole (a transactional sink commits them
      // in one transaction) and never delivered twice because a restart reads it again.
      if (used > chunk_start && (keyed || table_done)) {
        batch[used - 1].resume_offset = progress.stream_start.to_string();
        batch[used - 1].resume_state = progress.to_state(assembler.visibility);
      } else if (table_done && used > 0) {
        // A table that gave no rows: the progress past it rides on the last event built (of
        // an earlier table, which carries a position), so a restart does not read it again
        // and take what was written to it meanwhile for rows of the snapshot.
        Event& carrier = batch[used - 1];
        sizes[used - 1] -= ::cppcdc::detail::approx_string_bytes(carrier.resume_state);
        carrier.resume_state = progress.to_state(assembler.visibility);
        sizes[used - 1] += ::cppcdc::detail::approx_string_bytes(carrier.resume_state);
      }
      const bool last = table_done && progress.done();
      if (used > chunk_start) {
        if (meta.chunk == 0) {
          mark_snapshot_edge(batch[chunk_start],
                             first_pending ? SnapshotEdge::kFirst : SnapshotEdge::kFirstInTable);
          first_pending = false;
        }
        if (table_done) {
          mark_snapshot_edge(batch[used - 1],
                             last ? SnapshotEdge::kLast : SnapshotEdge::kLastInTable);
        }
      }
      if ((last && used > 0) || (!last && used > 1 && used + n > batch_events)) {
        // Before the end, the last event built stays for the next batch: tables after it
        // that give no rows need an event to carry their progress (above).
        std::optional<Event> held;
        std::size_t held_size = 0;
        if (!last) {
          held = std::move(batch[used - 1]);
          held_size = sizes[used - 1];
          sizes.pop_back();
          --used;
        }
        batch.resize(used);
        used = 0;
        // Stopping mid-table leaves the COPY unfinished: the caller closes the connection.
        if (!emit(batch, sizes)) return ok();
        if (held) {
          if (batch.empty()) {
            batch.push_back(std::move(*held));
          } else {
            batch[0] = std::move(*held);
          }
          sizes.assign(1, held_size);
          used = 1;
        }
      }
      if (!table_done && stop.load()) return ok();
    }
  }
  auto end = exec(conn, "commit", "ending the snapshot transaction");
  if (!end) return fail(end.error());
  spdlog::info("snapshot {} complete ({})", progress.id,
               cppcdc::detail::counted(progress.tables.size(), "table"));
  return ok();
}

}  // namespace cppcdc::pg
