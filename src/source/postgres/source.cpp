// The PostgreSQL source: start-up checks, slot and publication management, and the reader
// thread that pulls the CopyBoth stream, decodes it and hands whole transactions to poll().

#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "core/batch_queue.hpp"
#include "core/event_spill.hpp"
#include "core/fault.hpp"
#include "cppcdc/postgres.hpp"
#include "source/postgres/assembler.hpp"
#include "source/postgres/incremental_backend.hpp"
#include "source/postgres/pg_conn.hpp"
#include "source/postgres/pgoutput.hpp"
#include "source/postgres/snapshot.hpp"
#include "source/postgres/sql_catalog.hpp"

namespace cppcdc::pg {
namespace {

using detail::ConnPtr;
using detail::exec;
using detail::get;
using detail::get_lsn;
using detail::quote_ident;
using detail::quote_literal;

PgTimestamp pg_now() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return us - 946684800000000LL;
}

struct TableName {
  std::string schema;
  std::string table;
  std::string text() const { return schema + "." + table; }
  friend bool operator<(const TableName& a, const TableName& b) {
    return std::tie(a.schema, a.table) < std::tie(b.schema, b.table);
  }
};

TableName split_table(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return {"public", name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// Another process streams from replication slot `slot`: `refusal` is the server's error for
// START_REPLICATION, which gets what to do as context; without one, the start-up check saw
// the slot active for PID `active_pid`. Either way it is retried (it may be the walsender of
// a previous run that has not noticed its client is gone), but if it persists an operator
// has to act.
Error slot_in_use_error(const std::string& slot, std::optional<Error> refusal,
                        const std::string& active_pid = "?") {
  const std::string remedy = "another process is streaming from replication slot " + slot +
                             "; stop it (see pg_stat_replication) or choose another slot_name";
  if (refusal) return std::move(*refusal).context(remedy);
  return Error::source(ErrorKind::kTransient,
                       "replication slot " + slot + " is active for PID " + active_pid + ": " +
                           remedy);
}

class PostgresSource final : public Source {
 public:
  explicit PostgresSource(PostgresSourceConfig config) : config_(std::move(config)) {
    for (const auto& t : config_.tables) tables_.insert(split_table(t));
  }
  ~PostgresSource() override { close(); }

  std::string type() const override { return "postgres"; }
  std::string source_id() const override { return config_.slot_name; }
  std::optional<std::string> initial_offset() const override {
    if (slot_confirmed_.is_zero()) return std::nullopt;
    return slot_confirmed_.to_string();
  }

  Status start(const std::optional<CheckpointRecord>& checkpoint) override {
    close();
    confirmed_.store(0);
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
        return fail(Error::configuration("[source] spill_dir: " + probe.error().message()));
      }
    }
    auto sql = detail::connect(config_.dsn, false);
    if (!sql) return fail(sql.error());
    sql_ = std::move(*sql);
    CPPCDC_TRY(check_server());
    CPPCDC_TRY(check_tables());
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
          return fail(Error::configuration("[source.snapshot] table_conditions for " + t.text() +
                                           " (\"" + condition + "\"): " +
                                           probe.error().message()));
        }
      }
    }
    // initial_only never streams: it needs neither a publication nor a slot.
    if (config_.snapshot_mode != SnapshotMode::kInitialOnly) CPPCDC_TRY(ensure_publication());
    if (resume && config_.snapshot_mode == SnapshotMode::kWhenNeeded) {
      auto usable = checkpoint_usable(start_lsn);
      if (!usable) return fail(usable.error());
      if (!usable->empty()) {
        spdlog::warn("the checkpoint at {} cannot be resumed: {}; snapshot mode when_needed: "
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
      const bool export_snapshot = snapshot_ && !resume &&
                                   config_.transport == WalTransport::kStreamingReplication;
      CPPCDC_TRY(ensure_slot(start_lsn, export_snapshot ? &*snapshot_ : nullptr));
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
        CPPCDC_TRY(start_peek(start_lsn));
      } else if (!snapshot_) {
        CPPCDC_TRY(start_streaming(start_lsn));
      } else {
        confirmed_.store(start_lsn.value());  // streaming starts after the snapshot
      }
    }
    if (only && snapshot_ && snapshot_->id.empty()) {
      snapshot_->id = config_.slot_name + "@" + snapshot_->stream_start.to_string();
    }
    catalog_ = std::make_unique<SqlCatalog>(sql_.get());
    assembler_ = std::make_unique<TransactionAssembler>(
        config_.source_name,
        [this](const std::string& s, const std::string& t) { return is_captured(s, t); },
        *catalog_);
    assembler_->capture_messages = config_.capture_logical_messages;
    assembler_->spill_threshold_bytes = config_.spill_threshold_bytes;
    if (!config_.spill_dir.empty()) assembler_->spill_dir = config_.spill_dir;
    if (pipe(wake_) != 0) {
      return fail(Error::internal(std::string("pipe() failed: ") + std::strerror(errno)));
    }
    stop_.store(false);
    {
      std::lock_guard lock(mutex_);
      queue_.clear();
      error_.reset();
      reader_done_ = false;
      idle_lsn_ = 0;
    }
    reader_ = std::thread([this] {
      if (snapshot_ && snapshot_phase_ends_reader()) return;
      if (finished_.load()) return finish(std::nullopt);
      if (config_.transport == WalTransport::kSqlPeek) {
        peek_loop();
      } else {
        read_loop();
      }
    });
    return ok();
  }

  // For the incremental snapshot backend: see IncrementalHooks.
  std::optional<Lsn> drained_through() {
    std::lock_guard lock(mutex_);
    if (!queue_.empty() || reader_done_ || idle_lsn_ == 0) return std::nullopt;
    return Lsn(idle_lsn_);
  }
  void request_progress() {
    if (config_.transport != WalTransport::kStreamingReplication) return;  // peeks come anyway
    {
      // The keepalive that answers wakes a poll() waiting for events, so that a chunk waiting
      // for its high watermark learns of the position within the round trip rather than at
      // the end of the poll's wait.
      std::lock_guard lock(mutex_);
      progress_wanted_ = true;
    }
    ping_now_.store(true);
    wake();
  }
  // Only the configured names (a partition is captured through its configured parent); no
  // catalog query, since the SQL connection belongs to the reader thread.
  bool captured(const std::string& qualified) const {
    return tables_.count(split_table(qualified)) > 0;
  }
  const PostgresSourceConfig& config() const { return config_; }

  bool finished() override {
    if (!finished_.load()) return false;
    std::lock_guard lock(mutex_);
    return queue_.empty();
  }

 private:
  Status start_streaming(Lsn start_lsn) {
    if (!repl_) {  // the connection that created the slot with a snapshot is reused
      auto repl = detail::connect(config_.dsn, true);
      if (!repl) return fail(repl.error());
      repl_ = std::move(*repl);
    }
    const std::string cmd = "START_REPLICATION SLOT " + quote_ident(config_.slot_name) +
                            " LOGICAL " + start_lsn.to_string() +
                            (config_.stream_in_progress ? " (proto_version '2', streaming 'on'"
                                                        : " (proto_version '1'") +
                            ", publication_names " +
                            quote_literal(quote_ident(config_.publication_name)) +
                            (config_.capture_logical_messages ? ", messages 'true'" : "") + ")";
    detail::PgResultPtr res(PQexec(repl_.get(), cmd.c_str()));
    if (!res || PQresultStatus(res.get()) != PGRES_COPY_BOTH) {
      Error e = detail::error_from_result(res.get(), repl_.get(),
                                          "START_REPLICATION on slot " + config_.slot_name);
      if (e.message().find("is active for PID") != std::string::npos) {
        e = slot_in_use_error(config_.slot_name, std::move(e));
      }
      return fail(std::move(e));
    }
    spdlog::info("streaming from slot {} at {} (publication {})", config_.slot_name,
                 start_lsn.is_zero() ? std::string("the slot's confirmed position")
                                     : start_lsn.to_string(),
                 config_.publication_name);
    confirmed_.store(std::max(confirmed_.load(), start_lsn.value()));
    sent_flush_ = 0;
    streaming_ = true;
    return ok();
  }

  // SqlPeek: a connection of its own for the peeks (its results stream row by row while
  // catalog look-ups use sql_), and the start-up repair: a checkpoint ahead of the slot's
  // confirmed_flush_lsn (cppcdc stopped between saving a checkpoint and advancing the slot)
  // moves the slot there, since a peek cannot be told where to start.
  Status start_peek(Lsn start_lsn) {
    auto peek = detail::connect(config_.dsn, false);
    if (!peek) return fail(peek.error());
    peek_ = std::move(*peek);
    auto timeout = exec(peek_.get(),
                        "select set_config('statement_timeout', $1, false)",
                        "setting statement_timeout for the peek connection",
                        {std::to_string(config_.peek_statement_timeout_ms)});
    if (!timeout) return fail(timeout.error());
    if (!start_lsn.is_zero() && start_lsn > slot_confirmed_) {
      CPPCDC_TRY(advance_slot(start_lsn));
      spdlog::info("advanced replication slot {} from {} to the checkpoint at {}",
                   config_.slot_name, slot_confirmed_.to_string(), start_lsn.to_string());
      slot_confirmed_ = start_lsn;
    }
    high_water_ = std::max(start_lsn, slot_confirmed_);
    advanced_ = high_water_.value();
    confirmed_.store(high_water_.value());
    window_ = config_.peek_max_changes;
    spdlog::info("peeking slot {} from {} (publication {}, sql_peek transport)",
                 config_.slot_name, high_water_.to_string(), config_.publication_name);
    return ok();
  }

  Status advance_slot(Lsn to) {
    auto res = exec(sql_.get(), "select pg_replication_slot_advance($1, $2::pg_lsn)",
                    "advancing replication slot " + config_.slot_name + " to " + to.to_string(),
                    {config_.slot_name, to.to_string()});
    if (!res) return fail(res.error());
    return ok();
  }

  Status poll(std::vector<Event>& out, std::size_t max_events,
              std::chrono::milliseconds wait) override {
    std::unique_lock lock(mutex_);
    if (!reader_.joinable()) return fail(Error::invalid_state("postgres source is not started"));
    not_empty_.wait_for(lock, wait,
                        [&] { return !queue_.empty() || reader_done_ || progress_arrived_; });
    progress_arrived_ = false;
    if (bulk_.load() && !queue_.empty()) {
      // The blocking snapshot reads as fast as it can and nobody waits for a single row: let
      // a batch fill (briefly), so the sink's flush and the checkpoint's fsync are paid per
      // large batch rather than per chunk.
      const std::size_t fill = std::min(max_events, config_.max_queued_events / 2);
      const std::size_t fill_bytes = config_.max_queued_bytes / 2;
      not_empty_.wait_for(lock, kBulkLinger, [&] {
        return queue_.size() >= fill || queue_.bytes() >= fill_bytes || reader_done_ ||
               !bulk_.load();
      });
    }
    const std::size_t n = queue_.take(out, max_events);
    if (n > 0) {
      not_full_.notify_all();
      return ok();
    }
    if (reader_done_ && error_) return fail(*error_);
    if (reader_done_ && finished_.load()) return ok();
    if (reader_done_) {
      return fail(Error::source(ErrorKind::kTransient, "the replication stream ended"));
    }
    return ok();
  }

  std::optional<std::string> idle_offset() override {
    std::lock_guard lock(mutex_);
    if (!queue_.empty() || reader_done_ || idle_lsn_ <= confirmed_.load()) return std::nullopt;
    return Lsn(idle_lsn_).to_string();
  }

  Status confirm(std::string_view offset) override {
    auto lsn = Lsn::parse(offset);
    if (!lsn) return fail(lsn.error().context("confirming a position to PostgreSQL"));
    std::uint64_t prev = confirmed_.load();
    while (lsn->value() > prev && !confirmed_.compare_exchange_weak(prev, lsn->value())) {
    }
    wake();
    return ok();
  }

  // Delivered events come back here and are released by the reader thread, which allocated
  // them (see push): freeing them on the consumer's thread made both threads contend for the
  // reader's malloc arena. Beyond kMaxRecycled waiting events they are released at once.
  void recycle(std::vector<Event>&& events) override {
    {
      std::lock_guard lock(mutex_);
      if (reader_.joinable() && !reader_done_ && recycled_events_ < kMaxRecycled) {
        recycled_events_ += events.size();
        recycled_.push_back(std::move(events));
        return;
      }
    }
    events.clear();
  }

  // Releases the events given back by recycle() on the reader thread, which allocated them.
  // Called where the reader waits, so that events recycled while it has nothing to push (an
  // incremental snapshot's rows on a quiet stream) do not pile up.
  void release_recycled() {
    std::vector<std::vector<Event>> done;
    std::lock_guard lock(mutex_);
    take_recycled(done);
  }  // `done` is destroyed after the lock is released

  // Moves the events waiting in recycled_ to `out` (empty). Caller holds mutex_.
  void take_recycled(std::vector<std::vector<Event>>& out) {
    out.swap(recycled_);
    recycled_events_ = 0;
  }

  void close() override {
    if (reader_.joinable()) {
      stop_.store(true);
      wake();
      not_full_.notify_all();
      reader_.join();
    }
    for (int& fd : wake_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
    if (repl_ && streaming_) {
      // Tell the server where we are before leaving, then end the copy politely.
      send_status(false);
      PQputCopyEnd(repl_.get(), nullptr);
      PQflush(repl_.get());
    }
    repl_.reset();
    streaming_ = false;
    peek_.reset();
    skipping_ = false;
    assembler_.reset();
    catalog_.reset();
    sql_.reset();
  }

 private:
  void wake() {
    if (wake_[1] >= 0) {
      const char b = 1;
      [[maybe_unused]] auto r = ::write(wake_[1], &b, 1);
    }
  }

  // Waits up to `timeout_ms` for `fd` to become readable or for a wake() (the wake pipe is
  // drained); whether `fd` is readable. A negative `fd` waits for a wake() alone. A signal
  // ends the wait early; poll() failing otherwise is a transient error.
  Result<bool> wait_readable(int fd, int timeout_ms) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
      return fail(Error::source(ErrorKind::kTransient,
                                std::string("poll() failed: ") + std::strerror(errno)));
    }
    if (fds[1].revents & POLLIN) {
      char drain[64];
      [[maybe_unused]] auto d = ::read(wake_[0], drain, sizeof drain);
    }
    return (fds[0].revents & POLLIN) != 0;
  }

  // Whether changes of relation schema.table become events: a configured table, or a
  // partition of one (a publication without publish_via_partition_root sends partitions under
  // their own names). Looked up once per relation; a failed look-up captures rather than
  // risking a silent skip.
  bool is_captured(const std::string& schema, const std::string& table) {
    if (tables_.count(TableName{schema, table}) > 0) return true;
    auto res = exec(sql_.get(),
                    "select n.nspname, c.relname from pg_partition_ancestors(format('%I.%I', "
                    "$1::text, $2::text)::regclass) a join pg_class c on c.oid = a.relid join "
                    "pg_namespace n on n.oid = c.relnamespace",
                    "looking up the partition ancestors of " + schema + "." + table,
                    {schema, table});
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

  Status check_server() {
    auto res = exec(sql_.get(), "select current_setting('wal_level'), current_database(), "
                                "current_setting('server_version_num')::int",
                    "checking the server settings");
    if (!res) return fail(res.error());
    const auto level = get(res->get(), 0, 0).value_or("");
    database_ = get(res->get(), 0, 1).value_or("");
    if (level != "logical") {
      return fail(Error::source(
          ErrorKind::kTerminal,
          "wal_level is '" + level + "' on the server of database " + database_ +
              "; logical replication needs wal_level = logical: set it in postgresql.conf (or "
              "ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL"));
    }
    const int version = std::stoi(get(res->get(), 0, 2).value_or("0"));
    if (version < 100000) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "PostgreSQL " + std::to_string(version) +
                                    " has no pgoutput; cppcdc needs PostgreSQL 10 or later"));
    }
    if (config_.stream_in_progress && version < 140000) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "stream_in_progress needs PostgreSQL 14 or later (pgoutput "
                                "streams in-progress transactions from 14 on); this server is " +
                                    std::to_string(version) +
                                    ": upgrade it or set stream_in_progress = false"));
    }
    if (config_.capture_logical_messages && version < 140000) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "capture_logical_messages needs PostgreSQL 14 or later (pgoutput "
                                "sends messages from 14 on); this server is " +
                                    std::to_string(version) +
                                    ": upgrade it or set capture_logical_messages = false"));
    }
    return ok();
  }

  Status check_tables() {
    for (const auto& t : tables_) {
      auto res = exec(sql_.get(),
                      "select c.relkind from pg_class c join pg_namespace n on n.oid = "
                      "c.relnamespace where n.nspname = $1 and c.relname = $2",
                      "looking up table " + t.text(), {t.schema, t.table});
      if (!res) return fail(res.error());
      if (PQntuples(res->get()) == 0) {
        return fail(Error::source(ErrorKind::kTerminal,
                                  "table " + t.text() + " does not exist in database " +
                                      database_ +
                                      "; create it, or remove it from [source] tables"));
      }
      const auto kind = get(res->get(), 0, 0).value_or("");
      if (kind != "r" && kind != "p") {
        return fail(Error::source(ErrorKind::kTerminal,
                                  t.text() + " is not a table (relkind '" + kind +
                                      "'); only tables can be captured"));
      }
    }
    return ok();
  }

  Status ensure_publication() {
    auto res = exec(sql_.get(), "select puballtables from pg_publication where pubname = $1",
                    "looking up publication " + config_.publication_name,
                    {config_.publication_name});
    if (!res) return fail(res.error());
    if (PQntuples(res->get()) == 0) {
      if (!config_.create_publication) {
        return fail(Error::source(ErrorKind::kTerminal,
                                  "publication " + config_.publication_name +
                                      " does not exist; create it (CREATE PUBLICATION ... FOR "
                                      "TABLE ...) or set create_publication = true"));
      }
      CPPCDC_TRY(check_replica_identities());
      std::string sql = "CREATE PUBLICATION " + quote_ident(config_.publication_name) +
                        " FOR TABLE ";
      bool first = true;
      for (const auto& t : tables_) {
        if (!first) sql += ", ";
        first = false;
        sql += quote_ident(t.schema) + "." + quote_ident(t.table);
      }
      // Changes to a partitioned table's partitions are published as the table itself, so
      // events carry the name that was configured.
      sql += " WITH (publish_via_partition_root = true)";
      auto created = exec(sql_.get(), sql, "creating publication " + config_.publication_name);
      if (!created) {
        const auto& m = created.error().message();
        if (m.find("42501") != std::string::npos || m.find("must be owner") != std::string::npos) {
          return fail(created.error().context(
              "only the owner of every table may create a publication for them: run cppcdc as "
              "the owner, or create the publication yourself (CREATE PUBLICATION " +
              config_.publication_name + " FOR TABLE ...) and set create_publication = false"));
        }
        return fail(created.error());
      }
      spdlog::info("created publication {} for {} table(s)", config_.publication_name,
                   tables_.size());
      return ok();
    }
    if (get(res->get(), 0, 0).value_or("f") == "t") return ok();
    auto members = exec(sql_.get(),
                        "select schemaname, tablename from pg_publication_tables where "
                        "pubname = $1",
                        "listing the tables of publication " + config_.publication_name,
                        {config_.publication_name});
    if (!members) return fail(members.error());
    std::set<TableName> published;
    for (int r = 0; r < PQntuples(members->get()); ++r) {
      published.insert({get(members->get(), r, 0).value_or(""),
                        get(members->get(), r, 1).value_or("")});
    }
    for (const auto& t : tables_) {
      if (!published.count(t)) {
        // pg_publication_tables lists a partitioned table's partitions instead of the table
        // when the publication does not publish via the root: ask for the table itself.
        auto direct = exec(sql_.get(),
                           "select 1 from pg_publication_rel pr join pg_publication p on p.oid = "
                           "pr.prpubid where p.pubname = $1 and pr.prrelid = format('%I.%I', "
                           "$2::text, $3::text)::regclass",
                           "checking whether publication " + config_.publication_name +
                               " includes " + t.text(),
                           {config_.publication_name, t.schema, t.table});
        if (!direct) return fail(direct.error());
        if (PQntuples(direct->get()) > 0) continue;
        return fail(Error::source(
            ErrorKind::kTerminal,
            "publication " + config_.publication_name + " does not include table " + t.text() +
                "; run ALTER PUBLICATION " + config_.publication_name + " ADD TABLE " +
                t.text() + ", or remove the table from [source] tables"));
      }
    }
    return ok();
  }

  // `exported`: when the slot has to be created, create it over a replication connection
  // with an exported snapshot and record its name and consistent point there (the
  // connection stays open and idle in repl_ until the snapshot has been read).
  // Before cppcdc puts tables into a publication that publishes updates and deletes: a table
  // without a replica identity (no primary key under DEFAULT, NOTHING, or a missing identity
  // index) would then make PostgreSQL refuse the application's own UPDATE and DELETE on it.
  Status check_replica_identities() {
    for (const auto& t : tables_) {
      auto res = exec(sql_.get(),
                      "select c.relkind, c.relreplident, "
                      "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                      "i.indisprimary), "
                      "exists (select 1 from pg_index i where i.indrelid = c.oid and "
                      "i.indisreplident) "
                      "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
                      "where n.nspname = $1 and c.relname = $2",
                      "checking the replica identity of " + t.text(), {t.schema, t.table});
      if (!res) return fail(res.error());
      if (PQntuples(res->get()) == 0) continue;
      if (get(res->get(), 0, 0).value_or("") != "r") continue;
      const char ident = get(res->get(), 0, 1).value_or("d")[0];
      const bool pk = get(res->get(), 0, 2).value_or("f") == "t";
      const bool index = get(res->get(), 0, 3).value_or("f") == "t";
      const bool usable = ident == 'f' || (ident == 'd' && pk) || (ident == 'i' && index);
      if (usable) continue;
      return fail(Error::source(
          ErrorKind::kTerminal,
          "table " + t.text() + " has no replica identity (" +
              (ident == 'n' ? std::string("REPLICA IDENTITY NOTHING")
                            : std::string("no primary key")) +
              "): in a publication that publishes updates and deletes, PostgreSQL would refuse "
              "the application's UPDATE and DELETE on it. Add a primary key, or run ALTER TABLE " +
              t.text() + " REPLICA IDENTITY FULL, or create publication " +
              config_.publication_name +
              " yourself (for example WITH (publish = 'insert, truncate')) and set "
              "create_publication = false"));
    }
    return ok();
  }

  Status ensure_slot(Lsn checkpoint, SnapshotProgress* exported = nullptr) {
    auto res = exec(sql_.get(),
                    "select plugin, database, slot_type, confirmed_flush_lsn, wal_status, "
                    "active_pid from pg_replication_slots "
                    "where slot_name = $1",
                    "looking up replication slot " + config_.slot_name, {config_.slot_name});
    if (!res) return fail(res.error());
    if (PQntuples(res->get()) == 0) {
      if (!checkpoint.is_zero()) {
        // A new slot starts at the current end of WAL: everything since the checkpoint would
        // silently be skipped.
        const std::string what = "replication slot " + config_.slot_name +
                                 " does not exist, but the checkpoint expects to resume it at " +
                                 checkpoint.to_string();
        if (!config_.accept_slot_ahead_of_checkpoint) {
          return fail(Error::source(
              ErrorKind::kTerminal,
              what + "; a new slot would start at the current end of WAL and the changes in "
                     "between would be lost. Restore the slot, point [state.offset] dir at the "
                     "right checkpoint, set [source.snapshot] mode = \"when_needed\" to take a "
                     "new snapshot, or set [source] accept_slot_ahead_of_checkpoint = true "
                     "to create a new slot and continue without them"));
        }
        if (!config_.create_slot) {
          return fail(Error::source(ErrorKind::kTerminal,
                                    what + " and create_slot = false; create the slot or set "
                                           "create_slot = true"));
        }
        spdlog::warn("{}; creating a new slot and continuing without the changes in between "
                     "(accept_slot_ahead_of_checkpoint = true)",
                     what);
      }
      if (!config_.create_slot) {
        return fail(Error::source(ErrorKind::kTerminal,
                                  "replication slot " + config_.slot_name +
                                      " does not exist and create_slot = false; create it "
                                      "(pg_create_logical_replication_slot('" +
                                      config_.slot_name + "', 'pgoutput')) or set "
                                      "create_slot = true"));
      }
      if (exported != nullptr) return create_slot_exporting(*exported);
      auto created = exec(sql_.get(),
                          "select lsn from pg_create_logical_replication_slot($1, 'pgoutput')",
                          "creating replication slot " + config_.slot_name,
                          {config_.slot_name});
      if (!created) return fail(created.error());
      auto lsn = get_lsn(created->get(), 0, 0,
                         "the LSN of new replication slot " + config_.slot_name);
      if (!lsn) return fail(lsn.error());
      spdlog::info("created replication slot {} (pgoutput) at {}", config_.slot_name,
                   lsn->to_string());
      slot_confirmed_ = *lsn;
      return ok();
    }
    const auto plugin = get(res->get(), 0, 0).value_or("");
    auto confirmed = get_lsn(res->get(), 0, 3,
                             "confirmed_flush_lsn of replication slot " + config_.slot_name);
    if (!confirmed) {
      return fail(confirmed.error().context(
          "drop the slot (select pg_drop_replication_slot('" + config_.slot_name +
          "')) to start it afresh, or point [source] slot_name at another slot"));
    }
    slot_confirmed_ = *confirmed;
    if (snapshot_ && get(res->get(), 0, 5)) {
      // With a snapshot first, START_REPLICATION comes only after it: check now that nobody
      // else streams from the slot (retried: it may be the walsender of a previous run).
      return fail(slot_in_use_error(config_.slot_name, std::nullopt,
                                    get(res->get(), 0, 5).value_or("?")));
    }
    if (get(res->get(), 0, 4).value_or("") == "lost") {
      return fail(Error::source(
          ErrorKind::kTerminal,
          "source position lost: replication slot " + config_.slot_name +
              " was invalidated (wal_status 'lost'; max_slot_wal_keep_size let PostgreSQL "
              "remove WAL it still needed), so changes are missing; drop the slot, let cppcdc "
              "create a new one, and reload the tables from a snapshot"));
    }
    if (!checkpoint.is_zero() && slot_confirmed_ > checkpoint) {
      const std::string what = "replication slot " + config_.slot_name +
                               " has confirmed_flush_lsn " + slot_confirmed_.to_string() +
                               ", past the checkpoint at " + checkpoint.to_string() +
                               ": PostgreSQL already released the changes in between";
      if (!config_.accept_slot_ahead_of_checkpoint) {
        return fail(Error::source(
            ErrorKind::kTerminal,
            what + " (was the checkpoint restored from a backup, or another consumer using "
                   "the slot?); they cannot be delivered. Set [source] "
                   "accept_slot_ahead_of_checkpoint = true to continue without them"));
      }
      spdlog::warn("{}; continuing without them (accept_slot_ahead_of_checkpoint = true)", what);
    }
    const auto db = get(res->get(), 0, 1).value_or("");
    if (get(res->get(), 0, 2).value_or("") != "logical" || plugin != "pgoutput") {
      return fail(Error::source(ErrorKind::kTerminal,
                                "replication slot " + config_.slot_name + " uses plugin '" +
                                    plugin + "', not pgoutput; choose another slot_name or "
                                    "drop that slot"));
    }
    if (db != database_) {
      return fail(Error::source(ErrorKind::kTerminal,
                                "replication slot " + config_.slot_name + " belongs to "
                                "database " + db + ", not " + database_ +
                                    "; choose another slot_name"));
    }
    return ok();
  }

  Status create_slot_exporting(SnapshotProgress& snapshot) {
    auto repl = detail::connect(config_.dsn, true);
    if (!repl) return fail(repl.error());
    repl_ = std::move(*repl);
    const std::string cmd = "CREATE_REPLICATION_SLOT " + quote_ident(config_.slot_name) +
                            " LOGICAL pgoutput (SNAPSHOT 'export')";
    detail::PgResultPtr res(PQexec(repl_.get(), cmd.c_str()));
    if (!res || PQresultStatus(res.get()) != PGRES_TUPLES_OK || PQntuples(res.get()) != 1) {
      return fail(detail::error_from_result(res.get(), repl_.get(),
                                            "creating replication slot " + config_.slot_name +
                                                " with an exported snapshot"));
    }
    auto lsn = get_lsn(res.get(), 0, 1, "the consistent point of new replication slot " +
                                            config_.slot_name);
    if (!lsn) return fail(lsn.error());
    snapshot.exported_snapshot = get(res.get(), 0, 2).value_or("");
    snapshot.stream_start = *lsn;
    slot_confirmed_ = snapshot.stream_start;
    spdlog::info("created replication slot {} (pgoutput) at {} with exported snapshot {}",
                 config_.slot_name, lsn->to_string(), snapshot.exported_snapshot);
    return ok();
  }

  bool send_status(bool reply_requested) {
    const Lsn flushed(confirmed_.load());
    const Lsn written(std::max(received_.load(), flushed.value()));
    const std::string msg = encode_standby_status(written, flushed, flushed, pg_now(),
                                                  reply_requested);
    if (PQputCopyData(repl_.get(), msg.data(), static_cast<int>(msg.size())) != 1 ||
        PQflush(repl_.get()) != 0) {
      return false;
    }
    sent_flush_ = flushed.value();
    last_status_ = std::chrono::steady_clock::now();
    return true;
  }

  void finish(std::optional<Error> error) {
    std::lock_guard lock(mutex_);
    if (error) {
      spdlog::debug("reader stopped: {}", error->report());
      error_ = std::move(error);
    }
    reader_done_ = true;
    not_empty_.notify_all();
  }

  // Pushes a whole transaction; waits while the queue is over its bound (a transaction
  // larger than the bound waits for an empty queue). Keeps feedback flowing while waiting.
  // `known_sizes`: detail::approx_event_bytes of the first known_sizes->size() events, as the
  // assembler measured them; the others (snapshot chunks, pieces of a spilled transaction)
  // are measured here. Empties both.
  // `recycled`: receives the events the consumer gave back (recycle()) for the caller to
  // reuse; without it they are released here.
  bool push(std::vector<Event>& events, std::vector<std::size_t>* known_sizes = nullptr,
            std::vector<std::vector<Event>>* recycled_out = nullptr) {
    std::vector<std::size_t> measured;
    std::vector<std::size_t>& sizes = known_sizes ? *known_sizes : measured;
    sizes.reserve(events.size());
    for (std::size_t i = sizes.size(); i < events.size(); ++i) {
      sizes.push_back(cppcdc::detail::approx_event_bytes(events[i]));
    }
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < events.size(); ++i) bytes += sizes[i];
    std::vector<std::vector<Event>> recycled;  // released here, after the lock, on this thread
    std::unique_lock lock(mutex_);
    while (!stop_.load() && !queue_.empty() &&
           (queue_.size() + events.size() > config_.max_queued_events ||
            queue_.bytes() + bytes > config_.max_queued_bytes)) {
      not_full_.wait_for(lock, std::chrono::milliseconds(100));
      if (streaming_ && status_due()) {
        lock.unlock();
        if (!send_status(false)) return false;
        lock.lock();
      }
    }
    queue_.push(events, sizes, bytes);
    not_empty_.notify_all();
    take_recycled(recycled);
    lock.unlock();
    if (recycled_out) recycled_out->swap(recycled);
    return true;
  }

  bool receiver_timed_out() const {
    return config_.wal_receiver_timeout_ms > 0 &&
           std::chrono::steady_clock::now() - last_received_ >
               std::chrono::milliseconds(config_.wal_receiver_timeout_ms);
  }

  bool status_due() const {
    return confirmed_.load() != sent_flush_ ||
           std::chrono::steady_clock::now() - last_status_ >
               std::chrono::milliseconds(config_.status_interval_ms);
  }

  void read_loop() {
    PGconn* conn = repl_.get();
    std::vector<Event> ready;
    std::vector<std::size_t> ready_bytes;  // the assembler's measure of each of `ready`
    last_status_ = std::chrono::steady_clock::now();
    last_received_ = last_status_;
    std::uint32_t frames_since_wait = 0;  // messages taken since the socket was last waited on
    std::size_t bytes_since_wait = 0;     // and their bytes
    while (!stop_.load()) {
      if (status_due() && !send_status(false)) {
        return finish(detail::error_from_conn(conn, "sending a standby status update"));
      }
      const auto now = std::chrono::steady_clock::now();
      const bool asked = ping_now_.exchange(false);  // an incremental snapshot's chunk waits
      if ((!assembler_->in_transaction() || now - last_received_ > std::chrono::seconds(1)) &&
          (asked || now - last_ping_ > std::chrono::seconds(1))) {
        // Ask for a keepalive: its WAL position lets an idle pipeline release WAL, and its
        // arrival shows the connection is alive (also inside a transaction that has gone
        // quiet, e.g. while the walsender skips a long run of unpublished changes).
        last_ping_ = now;
        if (!send_status(true)) {
          return finish(detail::error_from_conn(conn, "sending a standby status update"));
        }
      }
      char* buf = nullptr;
      const int n = PQgetCopyData(conn, &buf, 1);
      if (n > 0) {
        ++frames_since_wait;
        bytes_since_wait += static_cast<std::size_t>(n);
        std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(buf),
                                            static_cast<std::size_t>(n));
        auto st = handle_frame(bytes, ready, ready_bytes);
        PQfreemem(buf);
        if (!st) return finish(st.error());
        if (!ready.empty() && !push(ready, &ready_bytes)) {
          return finish(detail::error_from_conn(conn, "sending a standby status update"));
        }
        // A spilled transaction is handed over in pieces, each waiting for room in the
        // queue, so memory stays bounded however large the transaction is.
        while (assembler_->spilled_ready() && !stop_.load()) {
          auto drained = assembler_->drain_spilled(ready, kSpillPiece);
          if (!drained) return finish(drained.error());
          if (!push(ready, &ready_bytes)) {
            return finish(detail::error_from_conn(conn, "sending a standby status update"));
          }
        }
        // After the frame was handled: time spent on catalog look-ups or waiting for the
        // consumer is not silence of the server.
        last_received_ = std::chrono::steady_clock::now();
        continue;
      }
      if (n == 0) {
        if (frames_since_wait > 0 && frames_since_wait < kTrickleFrames &&
            bytes_since_wait < kTrickleBytes) {
          // The stream trickles in a few small messages per read: then every recv costs more
          // than what it brings (a system call, a wake-up and an ACK per message, on both
          // ends). A 1 ms pause lets the server's messages gather in the socket; it ends at
          // once when the pipeline wakes the reader (an acknowledgement, a stop). Not for
          // larger messages: a pause per read would then cap the stream at what the TCP
          // window holds per millisecond.
          nap(1);
        }
        frames_since_wait = 0;
        bytes_since_wait = 0;
        release_recycled();
        const auto readable = wait_readable(PQsocket(conn), 1000);
        if (!readable) return finish(readable.error());
        if (PQconsumeInput(conn) == 0) {
          return finish(detail::error_from_conn(conn, "reading the replication stream"));
        }
        if (!*readable && receiver_timed_out()) {
          // A connection whose packets go nowhere (a dead route, a firewall dropping them)
          // raises no error while we only write to it: without this, the pipeline would
          // wait forever. The runtime reconnects under its retry policy.
          return finish(Error::source(
              ErrorKind::kTransient,
              "nothing received on the replication connection for " +
                  std::to_string(config_.wal_receiver_timeout_ms) +
                  " ms (wal_receiver_timeout_ms) although a keepalive was requested every "
                  "second; the connection is presumed dead"));
        }
        continue;
      }
      if (n == -1) {
        detail::PgResultPtr res(PQgetResult(conn));
        if (res && PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
          return finish(detail::error_from_result(res.get(), conn, "the replication stream"));
        }
        return finish(Error::source(ErrorKind::kTransient,
                                    "the server ended the replication stream"));
      }
      return finish(detail::error_from_conn(conn, "reading the replication stream"));
    }
    finish(std::nullopt);
  }

  // ---- snapshot --------------------------------------------------------------------------

  // when_needed: why the checkpoint at `checkpoint` cannot be resumed ("" when it can). A
  // slot that was invalidated is dropped here, so that it is made again with a snapshot.
  Result<std::string> checkpoint_usable(Lsn checkpoint) {
    auto res = exec(sql_.get(),
                    "select confirmed_flush_lsn, wal_status, active_pid from "
                    "pg_replication_slots where slot_name = $1",
                    "looking up replication slot " + config_.slot_name, {config_.slot_name});
    if (!res) return fail(res.error());
    if (PQntuples(res->get()) == 0) {
      return std::string("replication slot " + config_.slot_name + " does not exist");
    }
    if (get(res->get(), 0, 1).value_or("") == "lost") {
      if (get(res->get(), 0, 2)) {
        return fail(Error::source(ErrorKind::kTransient,
                                  "replication slot " + config_.slot_name +
                                      " was invalidated but is still held by PID " +
                                      get(res->get(), 0, 2).value_or("?")));
      }
      auto dropped = exec(sql_.get(), "select pg_drop_replication_slot($1)",
                          "dropping the invalidated replication slot " + config_.slot_name,
                          {config_.slot_name});
      if (!dropped) return fail(dropped.error());
      return std::string("replication slot " + config_.slot_name +
                         " was invalidated (wal_status lost); it was dropped and is made again");
    }
    auto slot_lsn = get_lsn(res->get(), 0, 0,
                            "confirmed_flush_lsn of replication slot " + config_.slot_name);
    if (!slot_lsn) return fail(slot_lsn.error());
    const Lsn confirmed = *slot_lsn;
    if (!checkpoint.is_zero() && confirmed > checkpoint) {
      return std::string("replication slot " + config_.slot_name + " is at " +
                         confirmed.to_string() + ", past it: changes in between were released");
    }
    return std::string();
  }

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
      finish(conn.error());
      return true;
    }
    SnapshotOptions options;
    options.chunk_size = config_.snapshot_chunk_size;
    for (const auto& [table, condition] : config_.snapshot_table_conditions) {
      options.table_conditions[split_table(table).text()] = condition;
    }
    const bool only = config_.snapshot_mode == SnapshotMode::kInitialOnly;
    spdlog::info("snapshot {}: reading {} table(s) in chunks of {} rows{}", snapshot_->id,
                 snapshot_->tables.size() - snapshot_->table_index, options.chunk_size,
                 only ? std::string(" (initial_only: cppcdc stops when it is done)")
                      : " before streaming from " + snapshot_->stream_start.to_string());
    bulk_.store(true);
    std::deque<std::vector<Event>> reusable;  // delivered batches, for the next rows
    auto st = run_snapshot(
        conn->get(), sql_.get(), *assembler_, *snapshot_, options,
        [this, &reusable](std::vector<Event>& events, std::vector<std::size_t>& sizes) {
          std::vector<std::vector<Event>> done;
          if (!push(events, &sizes, &done)) return false;
          // Delivered batches come back whole: the next rows are written over their events
          // (no allocation, no event moved). A few wait for their turn; the rest are
          // released here, on the thread that allocated them.
          for (auto& batch : done) {
            if (reusable.size() < kReusableBatches && !batch.empty()) {
              reusable.push_back(std::move(batch));
            }
          }
          if (!reusable.empty()) {
            events.swap(reusable.front());
            reusable.pop_front();
          }
          return !stop_.load();
        },
        stop_);
    {
      bulk_.store(false);
      std::lock_guard lock(mutex_);
      not_empty_.notify_all();
    }
    conn->reset();
    if (!st) {
      finish(st.error().context("snapshot " + snapshot_->id));
      return true;
    }
    if (stop_.load()) {
      finish(std::nullopt);
      return true;
    }
    if (config_.snapshot_mode == SnapshotMode::kInitialOnly) {
      finished_.store(true);
      finish(std::nullopt);
      return true;
    }
    if (config_.transport == WalTransport::kSqlPeek) return false;
    if (auto started = start_streaming(snapshot_->stream_start); !started) {
      finish(started.error());
      return true;
    }
    return false;
  }

  // ---- SqlPeek -------------------------------------------------------------------------

  // Waits up to `ms` for a wake-up (confirm or close).
  void nap(std::uint32_t ms) {
    [[maybe_unused]] auto woken = wait_readable(-1, static_cast<int>(ms));
  }

  void peek_loop() {
    std::vector<Event> ready;
    std::vector<std::size_t> ready_bytes;  // the assembler's measure of each of `ready`
    while (!stop_.load()) {
      release_recycled();
      // The slot follows what is checkpointed (confirm() stores it), before each peek.
      const std::uint64_t confirmed = confirmed_.load();
      if (confirmed > advanced_) {
        if (auto st = advance_slot(Lsn(confirmed)); !st) return finish(st.error());
        advanced_ = confirmed;
      }
      // Everything committed before this position is in the peek unless the window cuts it.
      auto flush = exec(sql_.get(), "select pg_current_wal_flush_lsn()",
                        "reading the server's WAL flush position");
      if (!flush) return finish(flush.error());
      auto flush_lsn = get_lsn(flush->get(), 0, 0, "pg_current_wal_flush_lsn()");
      if (!flush_lsn) return finish(flush_lsn.error());
      const Lsn flushed = *flush_lsn;

      std::uint64_t rows = 0, fresh = 0;
      auto st = peek_once(ready, ready_bytes, rows, fresh);
      if (stop_.load()) break;
      if (!st) {
        if (st.error().message().find("SQLSTATE 57014") == std::string::npos) {
          return finish(st.error());
        }
        // statement_timeout: what was fed of an unfinished transaction is dropped (it comes
        // again whole), and the next peek asks for half as much. Not an idle slot.
        assembler_->reset_transaction();
        skipping_ = false;
        if (window_ <= 1) {
          return finish(Error::source(
              ErrorKind::kTerminal,
              "a single transaction in replication slot " + config_.slot_name +
                  " cannot be decoded within peek_statement_timeout_ms (" +
                  std::to_string(config_.peek_statement_timeout_ms) +
                  " ms); raise [source] peek_statement_timeout_ms or use the "
                  "streaming_replication transport"));
        }
        window_ = std::max<std::uint32_t>(1, window_ / 2);
        spdlog::warn("a peek of slot {} ran over statement_timeout ({} ms); asking for {} "
                     "changes per peek from now on",
                     config_.slot_name, config_.peek_statement_timeout_ms, window_);
        continue;
      }
      if (rows < window_ && !assembler_->in_transaction()) {
        // The peek was not cut short: nothing committed before `flushed` is still to come.
        std::lock_guard lock(mutex_);
        if (flushed > high_water_) high_water_ = flushed;
        idle_lsn_ = std::max(idle_lsn_, high_water_.value());
      }
      if (fresh > 0) {
        window_ = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(config_.peek_max_changes, std::uint64_t{window_} * 2));
        // Let the consumer take what was found before peeking again: a peek re-reads
        // everything the slot has not been advanced past.
        std::unique_lock lock(mutex_);
        not_full_.wait_for(lock, std::chrono::milliseconds(config_.peek_interval_ms),
                           [&] { return stop_.load() || queue_.empty(); });
      } else {
        nap(config_.peek_interval_ms);
      }
    }
    finish(std::nullopt);
  }

  // One peek, fed row by row (single-row mode) into the assembler. `rows`: rows returned;
  // `fresh`: rows that were new (not already handed over by an earlier peek).
  Status peek_once(std::vector<Event>& ready, std::vector<std::size_t>& ready_bytes,
                   std::uint64_t& rows, std::uint64_t& fresh) {
    PGconn* conn = peek_.get();
    std::string sql =
        "select lsn, data from pg_logical_slot_peek_binary_changes($1, NULL, $2::int, "
        "'proto_version', '1', 'publication_names', $3";
    if (config_.capture_logical_messages) sql += ", 'messages', 'true'";
    sql += ")";
    const std::string window = std::to_string(window_);
    const std::string pubs = quote_ident(config_.publication_name);
    const char* values[3] = {config_.slot_name.c_str(), window.c_str(), pubs.c_str()};
    if (PQsendQueryParams(conn, sql.c_str(), 3, nullptr, values, nullptr, nullptr, 1) != 1) {
      return fail(detail::error_from_conn(conn, "peeking replication slot " + config_.slot_name));
    }
    PQsetSingleRowMode(conn);
    std::optional<Error> error;
    bool cancelled = false;
    for (;;) {
      while (PQisBusy(conn)) {
        if (stop_.load() && !cancelled) {
          // close(): cancel the peek rather than wait for it.
          if (PGcancel* c = PQgetCancel(conn)) {
            char buf[256];
            PQcancel(c, buf, sizeof buf);
            PQfreeCancel(c);
          }
          cancelled = true;
        }
        if (auto readable = wait_readable(PQsocket(conn), 1000); !readable) {
          return fail(readable.error());
        }
        if (PQconsumeInput(conn) == 0) {
          return fail(detail::error_from_conn(conn, "reading a peek of slot " + config_.slot_name));
        }
      }
      detail::PgResultPtr res(PQgetResult(conn));
      if (!res) break;
      const auto status = PQresultStatus(res.get());
      if (status == PGRES_SINGLE_TUPLE) {
        if (error || cancelled) continue;  // drain the rest
        ++rows;
        auto st = peek_row(res.get(), ready, ready_bytes, fresh);
        if (!st) {
          error = st.error();
          continue;
        }
        if (!ready.empty() && !push(ready, &ready_bytes)) error = Error::internal("stopped");
        while (!error && assembler_->spilled_ready() && !stop_.load()) {
          auto drained = assembler_->drain_spilled(ready, kSpillPiece);
          if (!drained) error = drained.error();
          if (!error && !push(ready, &ready_bytes)) error = Error::internal("stopped");
        }
      } else if (status != PGRES_TUPLES_OK && !error) {
        error = detail::error_from_result(res.get(), conn, "peeking replication slot " +
                                                               config_.slot_name);
      }
    }
    if (error) return fail(*error);
    return ok();
  }

  Status peek_row(const PGresult* res, std::vector<Event>& ready,
                  std::vector<std::size_t>& ready_bytes, std::uint64_t& fresh) {
    if (PQgetisnull(res, 0, 0) || PQgetisnull(res, 0, 1) || PQgetlength(res, 0, 0) != 8) {
      return fail(Error::invalid_data("a peek of slot " + config_.slot_name +
                                      " returned a row without an LSN or data"));
    }
    std::uint64_t lsn = 0;
    const auto* p = reinterpret_cast<const std::uint8_t*>(PQgetvalue(res, 0, 0));
    for (int i = 0; i < 8; ++i) lsn = (lsn << 8) | p[i];
    const Lsn position(lsn);
    std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(PQgetvalue(res, 0, 1)),
                                        static_cast<std::size_t>(PQgetlength(res, 0, 1)));
    auto message = decode_pgoutput(bytes);
    if (!message) {
      return fail(message.error().context("decoding the pgoutput message peeked at " +
                                          position.to_string()));
    }
    // A peek starts again at the slot's confirmed position, so it returns transactions already
    // handed over until the slot is advanced past them: skip whole transactions whose commit
    // lies before the high-water mark, and non-transactional messages at or before it.
    if (skipping_) {
      if (std::holds_alternative<CommitMsg>(*message)) skipping_ = false;
      if (const auto* r = std::get_if<RelationMsg>(&*message)) {
        // This peek's pgoutput will not describe the relation again, and after a restart
        // the assembler has not seen it yet: take it in, silently (it was announced when the
        // transaction was first handed over).
        return assembler_->observe_relation(*r);
      }
      return ok();
    }
    if (const auto* b = std::get_if<BeginMsg>(&*message); b && b->final_lsn < high_water_) {
      skipping_ = true;
      return ok();
    }
    if (const auto* m = std::get_if<LogicalMessageMsg>(&*message);
        m && !m->transactional && !(m->lsn > high_water_)) {
      return ok();
    }
    ++fresh;
    const auto* commit = std::get_if<CommitMsg>(&*message);
    const auto* loose = std::get_if<LogicalMessageMsg>(&*message);
    const Lsn mark = commit ? commit->end_lsn : (loose && !loose->transactional ? loose->lsn : Lsn());
    auto st = assembler_->feed(std::move(*message), position, ready, &ready_bytes);
    if (!st) return fail(st.error().context("at WAL position " + position.to_string()));
    if (mark > high_water_) {
      std::lock_guard lock(mutex_);
      high_water_ = mark;
    }
    return ok();
  }

  Status handle_frame(std::span<const std::uint8_t> bytes, std::vector<Event>& ready,
                      std::vector<std::size_t>& ready_bytes) {
    auto frame = decode_copy_frame(bytes);
    if (!frame) return fail(frame.error().context("decoding a replication frame"));
    if (auto* k = std::get_if<PrimaryKeepalive>(&*frame)) {
      if (!assembler_->in_transaction()) {
        // Every transaction committed before this position was sent before this keepalive
        // and has been pushed already; one still open commits later and is sent again from
        // here. So once the queue drains, this position may be checkpointed.
        std::lock_guard lock(mutex_);
        idle_lsn_ = std::max(idle_lsn_, k->wal_end.value());
        if (progress_wanted_) {
          progress_wanted_ = false;
          progress_arrived_ = true;
          not_empty_.notify_all();
        }
      }
      if (k->reply_requested && !send_status(false)) {
        return fail(detail::error_from_conn(repl_.get(), "answering a keepalive"));
      }
      return ok();
    }
    const auto& x = std::get<XLogData>(*frame);
    std::uint32_t change_xid = 0;
    auto message = decode_pgoutput(x.payload, assembler_->in_stream() ? &change_xid : nullptr);
    if (!message) {
      return fail(message.error().context("decoding the pgoutput message at " +
                                          x.data_start.to_string()));
    }
    std::uint64_t end = 0;
    if (const auto* commit = std::get_if<CommitMsg>(&*message)) {
      end = commit->end_lsn.value();
    } else if (const auto* streamed = std::get_if<StreamCommitMsg>(&*message)) {
      end = streamed->end_lsn.value();
    }
    auto st = assembler_->feed(std::move(*message), x.data_start, ready, &ready_bytes, change_xid);
    if (!st) return fail(st.error().context("at WAL position " + x.data_start.to_string()));
    if (end > received_.load()) received_.store(end);
    return ok();
  }

  PostgresSourceConfig config_;
  std::set<TableName> tables_;
  std::string database_;
  Lsn slot_confirmed_;  // the slot's confirmed_flush_lsn at start
  ConnPtr sql_;
  ConnPtr repl_;
  ConnPtr peek_;               // kSqlPeek only
  std::optional<SnapshotProgress> snapshot_;  // to read before streaming
  std::atomic<bool> finished_{false};         // initial_only: all handed over
  bool streaming_ = false;  // repl_ is in COPY mode (START_REPLICATION succeeded)
  Lsn high_water_;             // kSqlPeek: everything before it was handed over (mutex_)
  std::uint64_t advanced_ = 0;  // kSqlPeek: where the slot was last advanced to
  std::uint32_t window_ = 0;    // kSqlPeek: upto_nchanges of the next peek
  bool skipping_ = false;       // kSqlPeek: inside a transaction handed over before
  std::unique_ptr<SqlCatalog> catalog_;
  std::unique_ptr<TransactionAssembler> assembler_;

  std::thread reader_;
  std::atomic<bool> stop_{false};
  int wake_[2] = {-1, -1};
  std::atomic<std::uint64_t> confirmed_{0};
  std::atomic<std::uint64_t> received_{0};
  std::uint64_t idle_lsn_ = 0;  // guarded by mutex_
  bool progress_wanted_ = false;   // guarded by mutex_: request_progress() waits for a keepalive
  bool progress_arrived_ = false;  // guarded by mutex_: it came; the next poll() returns at once
  std::chrono::steady_clock::time_point last_ping_;
  std::atomic<bool> ping_now_{false};
  std::chrono::steady_clock::time_point last_received_;  // reader thread only
  std::uint64_t sent_flush_ = 0;  // reader thread only
  std::chrono::steady_clock::time_point last_status_;

  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  static constexpr std::size_t kSpillPiece = 1000;  // events read back per push
  cppcdc::detail::BatchQueue queue_;
  static constexpr std::size_t kMaxRecycled = 16384;
  // Delivered batches the blocking snapshot keeps for its next rows.
  static constexpr std::size_t kReusableBatches = 2;
  // A read of the replication socket that brings fewer messages than kTrickleFrames, and
  // fewer bytes than kTrickleBytes, makes the reader pause 1 ms before the next (read_loop).
  static constexpr std::uint32_t kTrickleFrames = 16;
  static constexpr std::size_t kTrickleBytes = 4096;
  // While the blocking snapshot runs (reader thread sets it), poll() waits up to kBulkLinger
  // for a fuller batch.
  std::atomic<bool> bulk_{false};
  static constexpr std::chrono::milliseconds kBulkLinger{50};
  std::vector<std::vector<Event>> recycled_;  // guarded by mutex_; see recycle()
  std::size_t recycled_events_ = 0;           // guarded by mutex_
  std::optional<Error> error_;
  bool reader_done_ = false;
};

}  // namespace

Result<std::unique_ptr<Source>> make_postgres_source(PostgresSourceConfig config) {
  register_positions();  // the checkpoint guard orders "postgres" offsets through the registry
  if (config.dsn.empty()) return fail(Error::configuration("[source] dsn: required"));
  static const std::regex kSlot("[a-z0-9_]{1,63}");
  if (!std::regex_match(config.slot_name, kSlot)) {
    return fail(Error::configuration("[source] slot_name '" + config.slot_name +
                                     "': use 1-63 lower-case letters, digits or underscores"));
  }
  if (config.publication_name.empty() || config.publication_name.size() > 63) {
    return fail(Error::configuration("[source] publication_name: 1-63 characters"));
  }
  if (config.tables.empty()) {
    return fail(Error::configuration("[source] tables: list at least one \"schema.table\""));
  }
  if (config.max_queued_events == 0) config.max_queued_events = 1;
  auto source = std::unique_ptr<PostgresSource>(new PostgresSource(std::move(config)));
  const PostgresSourceConfig& c = source->config();
  // initial_only never streams, so it has nothing to interleave chunks with.
  if (c.snapshot_mode == SnapshotMode::kInitialOnly) return std::unique_ptr<Source>(std::move(source));
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
  return make_incremental_snapshot_source(std::move(source),
                                          make_incremental_backend(std::move(backend), std::move(hooks)),
                                          std::move(options));
}

}  // namespace cppcdc::pg
