// The PostgreSQL source: its lifecycle (start-up checks, publication and slot, the reader
// thread), poll / confirm through the core's reader hand-off, and the blocking snapshot phase
// before the stream. The checks are in server_checks.cpp, the slot in slot.cpp, the two WAL
// transports behind WalReader in streaming_reader.cpp and peek_reader.cpp.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "core/event_spill.hpp"
#include "core/fault.hpp"
#include "core/lag_sampler.hpp"
#include "core/reader_handoff.hpp"
#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/postgres.hpp"
#include "source/postgres/assembler.hpp"
#include "source/postgres/incremental_backend.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/server_checks.hpp"
#include "source/postgres/slot.hpp"
#include "source/postgres/snapshot.hpp"
#include "source/postgres/sql_catalog.hpp"
#include "source/postgres/wal_reader.hpp"

namespace cppcdc::pg {
namespace {

using detail::ConnPtr;
using detail::exec;
using detail::get;
using detail::get_lsn;
using detail::quote_ident;
using detail::split_table;
using detail::TableName;

class PostgresSource final : public Source {
 public:
  explicit PostgresSource(PostgresSourceConfig config) : config_(std::move(config)) {
    for (const auto& t : config_.tables) tables_.insert(split_table(t));
  }
  ~PostgresSource() override { close(); }

  std::string type() const override { return "postgres"; }
  std::shared_ptr<const BlockingSnapshotTracker> blocking_snapshot_tracker() const override {
    return tracker_;
  }
  std::string source_id() const override { return config_.slot_name; }
  // Not while a first start's snapshot is pending: a checkpoint at the slot's position comes
  // with no source state, and a restart from it would stream and skip the snapshot (a crash
  // before its first chunk was acknowledged lost the rows). Its events carry the positions.
  std::optional<std::string> initial_offset() const override {
    if (slot_confirmed_.is_zero() || snapshot_first_start_) return std::nullopt;
    return slot_confirmed_.to_string();
  }

  Status start(const std::optional<CheckpointRecord>& checkpoint) override {
    close();
    shared_.confirmed.store(0);
    std::optional<CheckpointRecord> resume = checkpoint;
    Lsn start_lsn;
    if (resume) {
      auto parsed = Lsn::parse(resume->offset);
      if (!parsed) {
        return fail(Error::checkpoint(ErrorKind::kTerminal,
                                      "checkpoint offset '" + resume->offset +
                                          "' is not an LSN: " + parsed.error().message()));
      }
      start_lsn = *parsed;
    }
    {
      // The spill directory is checked now, not when the first huge transaction arrives.
      const std::filesystem::path dir = config_.spill_dir.empty()
                                            ? cppcdc::detail::default_spill_dir()
                                            : std::filesystem::path(config_.spill_dir);
      auto probe = cppcdc::detail::EventSpill::create(dir);
      if (!probe) {
        return fail(Error::configuration(probe.error().message())
                        .for_setting(SettingOwner::kSource, "spill_dir"));
      }
    }
    auto sql = detail::connect(config_.dsn, false);
    if (!sql) return fail(sql.error());
    sql_ = std::move(*sql);
    CPPCDC_TRY(detail::check_server(sql_.get(), config_, database_));
    // The claim on the pipeline, from before its snapshot to close() (slot.hpp). initial_only
    // uses no slot, and two such runs of one database do not meet.
    if (config_.snapshot_mode != SnapshotMode::kInitialOnly) {
      CPPCDC_TRY(detail::hold_pipeline_lock(sql_.get(), config_.slot_name));
    }
    CPPCDC_TRY(detail::check_tables(sql_.get(), tables_, database_));
    if (config_.snapshot_mode != SnapshotMode::kNever || resume) {
      // A condition that does not parse is found now, before a publication or a slot is
      // made for nothing.
      for (const auto& [table, condition] : config_.snapshot_table_conditions) {
        const TableName t = split_table(table);
        auto probe = exec(sql_.get(),
                          "select 1 from " + quote_ident(t.schema) + "." + quote_ident(t.table) +
                              " where (" + condition + ") limit 0",
                          "checking the snapshot condition of " + t.text());
        if (!probe) {
          return fail(Error::configuration("the condition for " + t.text() + " (\"" + condition +
                                           "\"): " + probe.error().message())
                          .for_setting(SettingOwner::kSource, "snapshot.table_conditions"));
        }
      }
    }
    // initial_only never streams: it needs neither a publication nor a slot.
    if (config_.snapshot_mode != SnapshotMode::kInitialOnly) {
      CPPCDC_TRY(detail::ensure_publication(sql_.get(), config_, tables_));
    }
    if (resume && config_.snapshot_mode == SnapshotMode::kWhenNeeded) {
      auto usable = detail::checkpoint_usable(sql_.get(), config_, start_lsn);
      if (!usable) return fail(usable.error());
      if (!usable->empty()) {
        spdlog::warn(
            "the checkpoint at {} cannot be resumed: {}; snapshot mode when_needed: "
            "setting it aside and taking a new snapshot",
            resume->offset, *usable);
        resume.reset();
        start_lsn = Lsn();
      }
    }
    // The snapshot: one in progress in the checkpoint goes on; without a checkpoint the mode
    // decides. initial_only needs no slot and never streams.
    snapshot_.reset();
    finished_.store(false);
    ReadVisibility visibility;
    if (resume) {
      auto filter = ReadVisibility::from_state(resume->source_state);
      if (!filter) return fail(filter.error());
      visibility = std::move(*filter);
    }
    if (resume) {
      auto pending = SnapshotProgress::from_state(resume->source_state);
      if (!pending) return fail(pending.error());
      snapshot_ = std::move(*pending);
      // The checkpoint may have moved past where the snapshot's stream was to start (an
      // idle position saved after its last chunk): the stream resumes at the checkpoint.
      if (snapshot_ && snapshot_->stream_start < start_lsn) snapshot_->stream_start = start_lsn;
    } else if (config_.snapshot_mode != SnapshotMode::kNever &&
               config_.snapshot_mode != SnapshotMode::kIncremental) {
      SnapshotProgress p;
      p.tables = config_.snapshot_tables.empty() ? config_.tables : config_.snapshot_tables;
      for (auto& t : p.tables) t = split_table(t).text();
      auto leaves = snapshot_leaf_tables(p.tables);
      if (!leaves) return fail(leaves.error());
      p.tables = std::move(*leaves);
      p.started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
      snapshot_ = std::move(p);
    }
    const bool only = config_.snapshot_mode == SnapshotMode::kInitialOnly;
    if (only && !snapshot_) {
      spdlog::info("snapshot_mode initial_only: the snapshot was completed before; nothing to do");
      finished_.store(true);
    }
    if (only) {
      if (snapshot_ && !resume) {
        auto lsn = exec(sql_.get(), "select pg_current_wal_lsn()", "reading the WAL position");
        if (!lsn) return fail(lsn.error());
        auto start = get_lsn(lsn->get(), 0, 0, "pg_current_wal_lsn()");
        if (!start) return fail(start.error());
        snapshot_->stream_start = *start;
      }
    } else {
      const bool export_snapshot =
          snapshot_ && !resume && config_.transport == WalTransport::kStreamingReplication;
      auto slot = detail::ensure_slot(sql_.get(), config_, database_, start_lsn,
                                      snapshot_.has_value(), export_snapshot);
      if (!slot) return fail(slot.error());
      slot_confirmed_ = slot->confirmed;
      if (!slot->exported_snapshot.empty()) {
        snapshot_->exported_snapshot = slot->exported_snapshot;
        snapshot_->stream_start = slot->confirmed;
      }
      if (snapshot_ && !resume) {
        // Without an exported snapshot (the slot already existed, or sql_peek) the stream
        // starts at the slot's position, before the snapshot's view.
        if (snapshot_->stream_start.is_zero()) snapshot_->stream_start = slot_confirmed_;
        start_lsn = snapshot_->stream_start;
      }
      if (snapshot_ && snapshot_->id.empty()) {
        snapshot_->id = config_.slot_name + "@" + snapshot_->stream_start.to_string();
      }
      if (config_.transport == WalTransport::kSqlPeek) {
        wal_ = detail::make_peek_reader(shared_, sql_.get(), slot_confirmed_);
        CPPCDC_TRY(wal_->start(start_lsn));
      } else {
        wal_ = detail::make_streaming_reader(shared_, std::move(slot->repl));
        if (!snapshot_) {
          CPPCDC_TRY(wal_->start(start_lsn));
        } else {
          shared_.confirmed.store(start_lsn.value());  // streaming starts after the snapshot
        }
      }
    }
    if (only && snapshot_ && snapshot_->id.empty()) {
      snapshot_->id = config_.slot_name + "@" + snapshot_->stream_start.to_string();
    }
    snapshot_first_start_ = snapshot_.has_value() && !resume;
    if (snapshot_) {
      tracker_->set_pending(snapshot_->id, snapshot_->tables, snapshot_->table_index,
                            resume.has_value(), snapshot_->started_ms);
    } else {
      tracker_->set_none();
    }
    catalog_ = std::make_unique<SqlCatalog>(sql_.get());
    assembler_ = std::make_unique<TransactionAssembler>(
        config_.source_name,
        [this](const std::string& s, const std::string& t) { return is_captured(s, t); },
        *catalog_);
    assembler_->capture_messages = config_.capture_logical_messages;
    assembler_->visibility = std::move(visibility);
    assembler_->compare_keys =
        [this](const std::vector<std::string>& types, const std::vector<std::string>& a,
               const std::vector<std::string>& b) { return compare_keys(types, a, b); };
    assembler_->spill_threshold_bytes = config_.spill_threshold_bytes;
    if (!config_.spill_dir.empty()) assembler_->spill_dir = config_.spill_dir;
    CPPCDC_TRY(handoff_.open({config_.max_queued_events, config_.max_queued_bytes}));
    handoff_.locked([&](auto&) { shared_.idle_lsn = 0; });
    reader_ = std::thread([this] {
      if (snapshot_ && snapshot_phase_ends_reader()) return;
      if (finished_.load()) return shared_.finish(std::nullopt);
      wal_->run(*assembler_);
    });
    return ok();
  }

  // For the incremental snapshot backend: see IncrementalHooks.
  std::optional<Lsn> drained_through() {
    return handoff_.locked([&](const auto& h) -> std::optional<Lsn> {
      if (!h.empty() || h.reader_done() || shared_.idle_lsn == 0) return std::nullopt;
      return Lsn(shared_.idle_lsn);
    });
  }
  void request_progress() {
    if (config_.transport != WalTransport::kStreamingReplication) return;  // peeks come anyway
    // The keepalive that answers wakes a poll() waiting for events, so that a chunk waiting
    // for its high watermark learns of the position within the round trip rather than at the
    // end of the poll's wait.
    handoff_.locked([&](auto&) { shared_.progress_wanted = true; });
    shared_.ping_now.store(true);
    handoff_.wake();
  }
  // Only the configured names (a partition is captured through its configured parent); no
  // catalog query, since the SQL connection belongs to the reader thread.
  bool captured(const std::string& qualified) const {
    return tables_.count(split_table(qualified)) > 0;
  }
  const PostgresSourceConfig& config() const { return config_; }

  bool finished() override {
    if (!finished_.load()) return false;
    return handoff_.empty();
  }

 private:
  Status poll(std::vector<Event>& out, std::size_t max_events,
              std::chrono::milliseconds wait) override {
    if (!reader_.joinable()) return fail(Error::invalid_state("postgres source is not started"));
    auto taken = handoff_.take(out, max_events, wait);
    if (taken.events > 0 || !taken.reader_done) return ok();
    if (taken.error) return fail(std::move(*taken.error));
    if (finished_.load()) return ok();
    return fail(Error::source(ErrorKind::kTransient, "the replication stream ended"));
  }

  std::optional<std::string> idle_offset() override {
    return handoff_.locked([&](const auto& h) -> std::optional<std::string> {
      if (!h.empty() || h.reader_done() || shared_.idle_lsn <= shared_.confirmed.load())
        return std::nullopt;
      return Lsn(shared_.idle_lsn).to_string();
    });
  }

  Status confirm(std::string_view offset) override {
    auto lsn = Lsn::parse(offset);
    if (!lsn) return fail(lsn.error().context("confirming a position to PostgreSQL"));
    std::uint64_t prev = shared_.confirmed.load();
    while (lsn->value() > prev && !shared_.confirmed.compare_exchange_weak(prev, lsn->value())) {
    }
    handoff_.wake();
    return ok();
  }

  // Delivered events come back here and are released by the reader thread, which allocated
  // them (see push): freeing them on the consumer's thread made both threads contend for the
  // reader's malloc arena.
  void recycle(std::vector<Event>&& events) override { handoff_.recycle(std::move(events)); }

  // The slot's figures from pg_replication_slots, on a connection of its own (never the
  // reader's), at most every kLagRefresh; after a failure no new attempt for kLagBackoff, so
  // that scrapes while the server is down do not each wait for a connection timeout (a
  // connection attempt may take up to the DSN's connect_timeout, 10 s by default: it delays
  // that one scrape, never the pipeline). The connection lives until the source is destroyed.
  std::optional<SourceLag> lag() const override {
    return lag_sampler_.get([this]() -> Result<std::optional<SourceLag>> {
      if (!lag_conn_) {
        auto conn = detail::connect(config_.dsn, false);
        if (!conn) return fail(conn.error());
        lag_conn_ = std::move(*conn);
        if (auto limited =
                exec(lag_conn_.get(), "set statement_timeout = 2000", "limiting lag queries");
            !limited) {
          lag_conn_.reset();
          return fail(limited.error());
        }
      }
      // The slot name is validated ([a-z0-9_]), so it can be written as a literal.
      auto result = exec(lag_conn_.get(),
                         "select pg_current_wal_lsn() - restart_lsn, "
                         "pg_current_wal_lsn() - confirmed_flush_lsn "
                         "from pg_replication_slots where slot_name = '" +
                             config_.slot_name + "'",
                         "reading the slot's lag");
      if (!result) {
        lag_conn_.reset();
        return fail(result.error());
      }
      PGresult* res = result->get();
      if (PQntuples(res) != 1) return std::optional<SourceLag>();  // no slot (yet)
      const auto bytes = [res](int column) -> std::optional<std::uint64_t> {
        if (PQgetisnull(res, 0, column)) return std::nullopt;
        const double v = std::strtod(PQgetvalue(res, 0, column), nullptr);
        return v > 0 ? static_cast<std::uint64_t>(v) : 0;
      };
      return std::optional<SourceLag>(SourceLag{bytes(0), bytes(1)});
    });
  }

  // The lag connection is left alone (it is the caller's of lag(), which may hold its lock
  // while connecting): closing must never wait for a monitoring query.
  void close() override {
    if (reader_.joinable()) {
      handoff_.request_stop();
      reader_.join();
    }
    handoff_.close();
    if (wal_) wal_->close();
    wal_.reset();
    assembler_.reset();
    catalog_.reset();
    sql_.reset();
  }

 private:
  // Whether changes of relation schema.table become events: a configured table, or a
  // partition of one (a publication without publish_via_partition_root sends partitions under
  // their own names). Looked up once per relation; a failed look-up captures rather than
  // risking a silent skip.
  bool is_captured(const std::string& schema, const std::string& table) {
    if (tables_.count(TableName{schema, table}) > 0) return true;
    auto res =
        exec(sql_.get(),
             "select n.nspname, c.relname from pg_partition_ancestors(format('%I.%I', "
             "$1::text, $2::text)::regclass) a join pg_class c on c.oid = a.relid join "
             "pg_namespace n on n.oid = c.relnamespace",
             "looking up the partition ancestors of " + schema + "." + table, {schema, table});
    if (!res) {
      spdlog::warn("{}; capturing {}.{} to be safe", res.error().report(), schema, table);
      return true;
    }
    for (int r = 0; r < PQntuples(res->get()); ++r) {
      const TableName ancestor{get(res->get(), r, 0).value_or(""),
                               get(res->get(), r, 1).value_or("")};
      if (tables_.count(ancestor) > 0) {
        // pgoutput also describes a partition whose changes it sends under the root's name.
        auto via_root = publishes_via_root(sql_.get(), config_.publication_name);
        spdlog::info("{}", partition_capture_note(schema + "." + table, ancestor.text(),
                                                  config_.publication_name,
                                                  via_root.value_or(std::nullopt)));
        return true;
      }
    }
    return false;
  }

  // Orders two keys of the given types on the server, for the stream's visibility filter
  // (keys other than integers). On the reader thread's connection, like the catalog.
  Result<int> compare_keys(const std::vector<std::string>& types, const std::vector<std::string>& a,
                           const std::vector<std::string>& b) {
    std::string lhs = "row(", rhs = "row(";
    std::vector<std::optional<std::string>> params;
    for (std::size_t k = 0; k < types.size(); ++k) {
      if (k) lhs += ", ", rhs += ", ";
      lhs += "$" + std::to_string(k + 1) + "::" + types[k];
      rhs += "$" + std::to_string(types.size() + k + 1) + "::" + types[k];
    }
    lhs += ")", rhs += ")";
    params.insert(params.end(), a.begin(), a.end());
    params.insert(params.end(), b.begin(), b.end());
    auto res = exec(sql_.get(),
                    "select case when " + lhs + " < " + rhs + " then -1 when " + lhs + " = " + rhs +
                        " then 0 else 1 end",
                    "comparing keys for the snapshot's visibility filter", params);
    if (!res) return fail(res.error());
    return std::stoi(get(res->get(), 0, 0).value_or("1"));
  }

  // ---- snapshot --------------------------------------------------------------------------

  // The tables the snapshot reads, named as the stream names their rows. Called after
  // ensure_publication().
  Result<std::vector<std::string>> snapshot_leaf_tables(const std::vector<std::string>& tables) {
    return leaf_tables(sql_.get(), config_.publication_name, tables);
  }

  // Runs the snapshot on a connection of its own, then (unless initial_only) starts the
  // stream where it ends. Returns true when the reader thread is to end here (error, stop or
  // initial_only; finish() was called), false when it goes on to stream.
  bool snapshot_phase_ends_reader() {
    auto conn = detail::connect(config_.dsn, false);
    if (!conn) {
      shared_.finish(conn.error());
      return true;
    }
    SnapshotOptions options;
    options.chunk_size = config_.snapshot_chunk_size;
    options.tracker = tracker_.get();
    for (const auto& [table, condition] : config_.snapshot_table_conditions) {
      options.table_conditions[split_table(table).text()] = condition;
    }
    const bool only = config_.snapshot_mode == SnapshotMode::kInitialOnly;
    options.stream_follows = !only;
    spdlog::info("snapshot {}: reading {} table(s) in chunks of {} rows{}", snapshot_->id,
                 snapshot_->tables.size() - snapshot_->table_index, options.chunk_size,
                 only ? std::string(" (initial_only: cppcdc stops when it is done)")
                      : " before streaming from " + snapshot_->stream_start.to_string());
    const bool read = run_blocking_snapshot(
        handoff_, "snapshot " + snapshot_->id,
        [&](const SnapshotEmit& emit) {
          auto st = run_snapshot(conn->get(), sql_.get(), *assembler_, *snapshot_, options, emit,
                                 handoff_.stop_flag());
          conn->reset();
          return st;
        },
        tracker_.get());
    if (!read) return true;  // failed or stopped: the end was reported
    if (config_.snapshot_mode == SnapshotMode::kInitialOnly) {
      finished_.store(true);
      shared_.finish(std::nullopt);
      return true;
    }
    if (config_.transport == WalTransport::kSqlPeek) return false;
    if (auto started = wal_->start(snapshot_->stream_start); !started) {
      shared_.finish(started.error());
      return true;
    }
    return false;
  }

  PostgresSourceConfig config_;
  std::set<TableName> tables_;
  std::string database_;
  Lsn slot_confirmed_;  // the slot's confirmed_flush_lsn at start
  // start() began a snapshot without a checkpoint to continue: see initial_offset().
  bool snapshot_first_start_ = false;
  ConnPtr sql_;         // start-up checks; then the reader thread's (catalog, peeks' SQL)
  std::optional<SnapshotProgress> snapshot_;  // to read before streaming
  std::shared_ptr<BlockingSnapshotTracker> tracker_ =
      std::make_shared<BlockingSnapshotTracker>(std::string(to_string(config_.snapshot_mode)));
  std::atomic<bool> finished_{false};  // initial_only: all handed over
  std::unique_ptr<SqlCatalog> catalog_;
  std::unique_ptr<TransactionAssembler> assembler_;

  std::thread reader_;
  cppcdc::detail::ReaderHandoff handoff_;
  detail::ReaderShared shared_{config_, handoff_};
  std::unique_ptr<detail::WalReader> wal_;  // the transport, started before or after a snapshot

  // lag(): its own connection and last answer (any thread).
  // lag(): its throttle, and its connection (used only under the throttle's lock).
  mutable cppcdc::detail::LagSampler lag_sampler_;
  mutable ConnPtr lag_conn_;
};

}  // namespace

Result<std::unique_ptr<Source>> make_postgres_source(PostgresSourceConfig config) {
  register_positions();  // the checkpoint guard orders "postgres" offsets through the registry
  if (config.dsn.empty()) {
    return fail(Error::configuration("required").for_setting(SettingOwner::kSource, "dsn"));
  }
  static const std::regex kSlot("[a-z0-9_]{1,63}");
  if (!std::regex_match(config.slot_name, kSlot)) {
    return fail(Error::configuration("'" + config.slot_name +
                                     "': use 1-63 lower-case letters, digits or underscores")
                    .for_setting(SettingOwner::kSource, "slot_name"));
  }
  if (config.publication_name.empty() || config.publication_name.size() > 63) {
    return fail(Error::configuration("1-63 characters")
                    .for_setting(SettingOwner::kSource, "publication_name"));
  }
  if (config.tables.empty()) {
    return fail(Error::configuration("list at least one \"schema.table\"")
                    .for_setting(SettingOwner::kSource, "tables"));
  }
  if (config.max_queued_events == 0) config.max_queued_events = 1;
  auto source = std::unique_ptr<PostgresSource>(new PostgresSource(std::move(config)));
  const PostgresSourceConfig& c = source->config();
  // initial_only never streams, so it has nothing to interleave chunks with.
  if (c.snapshot_mode == SnapshotMode::kInitialOnly)
    return std::unique_ptr<Source>(std::move(source));
  PostgresSource* raw = source.get();  // owned by the driver, which outlives its backend
  IncrementalBackendConfig backend;
  backend.dsn = c.dsn;
  backend.publication = c.publication_name;
  backend.source_name = c.source_name;
  for (const auto& [table, condition] : c.snapshot_table_conditions) {
    backend.table_conditions[split_table(table).text()] = condition;
  }
  IncrementalHooks hooks;
  hooks.drained_through = [raw] { return raw->drained_through(); };
  hooks.request_progress = [raw] { raw->request_progress(); };
  hooks.captured = [raw](const std::string& t) { return raw->captured(t); };
  IncrementalSnapshotOptions options;
  options.chunk_size = c.snapshot_chunk_size;
  options.id_prefix = c.slot_name;
  if (c.snapshot_mode == SnapshotMode::kIncremental) {
    options.tables = c.snapshot_tables.empty() ? c.tables : c.snapshot_tables;
  }
  return make_incremental_snapshot_source(
      std::move(source), make_incremental_backend(std::move(backend), std::move(hooks)),
      std::move(options));
}

}  // namespace cppcdc::pg
