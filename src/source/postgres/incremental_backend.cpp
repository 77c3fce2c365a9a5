#include "source/postgres/incremental_backend.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "source/postgres/assembler.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/snapshot.hpp"
#include "source/postgres/sql_catalog.hpp"

namespace cppcdc::pg {

InFlightSet InFlightSet::parse(std::string_view snapshot) {
  auto number = [](std::string_view s, std::uint64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  InFlightSet set;
  const auto c1 = snapshot.find(':');
  if (c1 == std::string_view::npos) return set;
  const auto c2 = snapshot.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return set;
  std::uint64_t xmin = 0, xmax = 0;
  if (!number(snapshot.substr(0, c1), xmin) ||
      !number(snapshot.substr(c1 + 1, c2 - c1 - 1), xmax)) {
    return set;
  }
  // xid8 values: the low 32 bits are the xid.
  set.xmin = static_cast<std::uint32_t>(xmin);
  set.xmax = static_cast<std::uint32_t>(xmax);
  std::string_view xip = snapshot.substr(c2 + 1);
  while (!xip.empty()) {
    const auto comma = xip.find(',');
    std::uint64_t v = 0;
    if (number(xip.substr(0, comma), v)) set.xip.push_back(static_cast<std::uint32_t>(v));
    if (comma == std::string_view::npos) break;
    xip.remove_prefix(comma + 1);
  }
  set.valid = true;
  return set;
}

// Compared as PostgreSQL compares xids, modulo 2^32.
bool InFlightSet::invisible(std::uint32_t xid) const {
  if (!valid) return false;
  if (static_cast<std::int32_t>(xid - xmax) >= 0) return true;
  return std::find(xip.begin(), xip.end(), xid) != xip.end();
}

bool InFlightSet::may_be_listed_later(std::uint32_t xid) const {
  return !valid || static_cast<std::int32_t>(xid - xmin) >= 0;  // keep when unsure
}

bool invisible_to_snapshot(std::string_view snapshot, std::uint32_t xid) {
  return InFlightSet::parse(snapshot).invisible(xid);
}

namespace {

using detail::exec;
using detail::get;

class PgIncrementalBackend final : public IncrementalSnapshotBackend {
 public:
  PgIncrementalBackend(IncrementalBackendConfig config, IncrementalHooks hooks)
      : config_(std::move(config)), hooks_(std::move(hooks)) {}

  // Connects on first use: a pipeline that never snapshots incrementally opens no extra
  // connection.
  Status open() override {
    close();
    return ok();
  }

  Status connect() {
    if (conn_) return ok();
    auto conn = detail::connect(config_.dsn, false);
    if (!conn) return fail(conn.error().context("connecting for incremental snapshot chunks"));
    conn_ = std::move(*conn);
    auto sizes = exec(conn_.get(),
                      "select current_setting('wal_block_size')::int8, "
                      "pg_size_bytes(current_setting('wal_segment_size'))",
                      "reading the WAL page and segment sizes");
    if (!sizes) return fail(sizes.error());
    wal_page_ = std::stoull(get(sizes->get(), 0, 0).value_or("8192"));
    wal_segment_ = std::stoull(get(sizes->get(), 0, 1).value_or("16777216"));
    catalog_ = std::make_unique<SqlCatalog>(conn_.get());
    assembler_ = std::make_unique<TransactionAssembler>(
        config_.source_name, [](const std::string&, const std::string&) { return true; },
        *catalog_);
    return ok();
  }

  void close() override {
    descriptions_.clear();
    assembler_.reset();
    catalog_.reset();
    conn_.reset();
  }

  Result<std::vector<std::string>> resolve(const std::string& table) override {
    CPPCDC_TRY(connect());
    const auto dot = table.find('.');
    const std::string name = dot == std::string::npos ? "public." + table : table;
    if (!hooks_.captured(name)) {
      return fail(Error::configuration("table " + name +
                                       " is not captured: add it to the captured tables (and "
                                       "so to the publication) before snapshotting it")
                      .for_setting(SettingOwner::kSource, "tables"));
    }
    return leaf_tables(conn_.get(), config_.publication, {name});
  }

  Result<SnapshotTableInfo> describe_table(const std::string& table) override {
    CPPCDC_TRY(connect());
    auto d = describe_snapshot_table(conn_.get(), table);
    if (!d) return fail(d.error());
    CPPCDC_TRY(assembler_->observe_relation(d->relation));
    SnapshotTableInfo info{table, d->key, d->estimated_rows};
    descriptions_[table] = std::move(*d);
    return info;
  }

  Result<Watermark> current_position() override {
    CPPCDC_TRY(connect());
    // The insert position, not pg_current_wal_lsn() (the write position): that one moves in
    // whole pages under load, which would keep every chunk waiting for the page to fill.
    auto r = exec(conn_.get(), "select pg_current_wal_insert_lsn()", "reading the WAL position");
    if (!r) return fail(r.error());
    auto lsn = detail::get_lsn(r->get(), 0, 0, "pg_current_wal_insert_lsn()");
    if (!lsn) return fail(lsn.error());
    return Watermark{to_log_position(*lsn), {}};
  }

  Result<std::string> in_flight() override {
    CPPCDC_TRY(connect());
    // pg_current_snapshot() came with PostgreSQL 13; 12 has the same value, in the same text
    // form (64-bit xids, "xmin:xmax:xip,..."), as txid_current_snapshot().
    const char* sql = PQserverVersion(conn_.get()) >= 130000
                          ? "select pg_current_snapshot()::text"
                          : "select txid_current_snapshot()::text";
    auto r = exec(conn_.get(), sql, "reading the transactions in flight");
    if (!r) return fail(r.error());
    return get(r->get(), 0, 0).value_or("");
  }

  Result<std::vector<Event>> fetch_chunk(const SnapshotTableInfo& table,
                                         const std::optional<std::vector<std::string>>& cursor,
                                         std::size_t limit) override {
    CPPCDC_TRY(connect());
    auto it = descriptions_.find(table.table);
    if (it == descriptions_.end()) {
      CPPCDC_TRY(describe_table(table.table));
      it = descriptions_.find(table.table);
    }
    const TableDescription& d = it->second;
    std::string where;
    if (auto c = config_.table_conditions.find(table.table); c != config_.table_conditions.end()) {
      where = "(" + c->second + ")";
    }
    std::vector<std::optional<std::string>> params;
    if (cursor) params.assign(cursor->begin(), cursor->end());
    auto res = exec(conn_.get(), keyset_chunk_query(d, where, cursor.has_value(), limit),
                    "reading an incremental snapshot chunk of " + table.table, params);
    if (!res) {
      if (res.error().message().find("42501") != std::string::npos) {
        return fail(res.error().context("GRANT SELECT on " + table.table +
                                        " to the role the connection string names"));
      }
      return fail(res.error());
    }
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    std::vector<Event> rows;
    rows.reserve(static_cast<std::size_t>(PQntuples(res->get())));
    for (int r = 0; r < PQntuples(res->get()); ++r) {
      auto e = assembler_->make_read(d.relation.relation_id, tuple_of(res->get(), r), Lsn(), now);
      if (!e) return fail(e.error().context("incremental snapshot of " + table.table));
      rows.push_back(std::move(*e));
    }
    return rows;
  }

  BracketPosition event_in_bracket(const Event& event, const LogPosition& at,
                                   const Watermark& low, const std::string& in_flight,
                                   const Watermark& high) const override {
    // Every position here was made by to_log_position: compared as LSNs.
    const std::uint64_t position = lsn_of(at).value_or(Lsn()).value();
    const std::uint64_t low_position = lsn_of(low.position).value_or(Lsn()).value();
    const std::uint64_t high_position = lsn_of(high.position).value_or(Lsn()).value();
    // Positions are commit-record start LSNs; a watermark is the WAL insert position, so a
    // commit record inserted before it starts below it, and one inserted after it (a
    // transaction that committed after the read) starts at or above it.
    if (position >= high_position) return BracketPosition::kAfter;
    if (position >= low_position) return BracketPosition::kInside;
    if (event.transaction &&
        parsed(in_flight).invisible(static_cast<std::uint32_t>(event.transaction->tx_id))) {
      return BracketPosition::kInside;
    }
    return BracketPosition::kBefore;
  }

  bool may_be_in_flight_later(const Event& event, const std::string& in_flight) const override {
    return event.transaction &&
           parsed(in_flight).may_be_listed_later(
               static_cast<std::uint32_t>(event.transaction->tx_id));
  }

  // The source keeps its blocking snapshot's progress in its state (SnapshotProgress).
  bool blocking_snapshot_running(std::string_view source_state) const override {
    return SnapshotProgress::in_state(source_state);
  }

  bool stream_reached(const Watermark& high) override {
    // The insert position right after a page header names the page's first record; the
    // stream's position is the end of the last record, before that header. No record starts
    // in between, so reaching the header's start is reaching the watermark.
    std::uint64_t target = lsn_of(high.position).value_or(Lsn()).value();
    if (wal_segment_ > 0 && target % wal_segment_ == kLongPageHeader) {
      target -= kLongPageHeader;
    } else if (wal_page_ > 0 && target % wal_page_ == kShortPageHeader) {
      target -= kShortPageHeader;
    }
    if (auto through = hooks_.drained_through(); through && through->value() >= target) {
      return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ask_ >= std::chrono::milliseconds(2)) {
      last_ask_ = now;
      hooks_.request_progress();
    }
    return false;
  }

 private:
  IncrementalBackendConfig config_;
  IncrementalHooks hooks_;
  detail::ConnPtr conn_;
  std::unique_ptr<SqlCatalog> catalog_;
  std::unique_ptr<TransactionAssembler> assembler_;
  std::map<std::string, TableDescription> descriptions_;
  std::chrono::steady_clock::time_point last_ask_;
  // The in-flight set parsed once per chunk, not once per event placed against it.
  const InFlightSet& parsed(const std::string& in_flight) const {
    if (in_flight != parsed_text_) {
      parsed_ = InFlightSet::parse(in_flight);
      parsed_text_ = in_flight;
    }
    return parsed_;
  }
  mutable std::string parsed_text_ = "\x01";  // never a real set, so the first call parses
  mutable InFlightSet parsed_;
  // WAL page headers (SizeOfXLogShortPHD, SizeOfXLogLongPHD on 64-bit builds).
  static constexpr std::uint64_t kShortPageHeader = 24;
  static constexpr std::uint64_t kLongPageHeader = 40;
  std::uint64_t wal_page_ = 8192;
  std::uint64_t wal_segment_ = 16u << 20;
};

}  // namespace

std::unique_ptr<IncrementalSnapshotBackend> make_incremental_backend(
    IncrementalBackendConfig config, IncrementalHooks hooks) {
  return std::make_unique<PgIncrementalBackend>(std::move(config), std::move(hooks));
}

}  // namespace cppcdc::pg
