// The MySQL / MariaDB source: its lifecycle (start-up checks, where the stream starts, the
// schema history, the blocking snapshot), the reader thread that turns binlog events into
// transactions of change events, and poll / confirm through the core's reader hand-off.

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <thread>
#include <unordered_map>

#include "core/event_reuse.hpp"
#include "core/event_spill.hpp"
#include "core/lag_sampler.hpp"
#include "core/reader_handoff.hpp"
#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/mysql.hpp"
#include "source/mysql/binlog_client.hpp"
#include "source/mysql/binlog_event.hpp"
#include "source/mysql/byte_reader.hpp"
#include "source/mysql/gtid.hpp"
#include "source/mysql/incremental_backend.hpp"
#include "source/mysql/mysql_conn.hpp"
#include "source/mysql/pipeline_lock.hpp"
#include "source/mysql/row_decoder.hpp"
#include "source/mysql/schema_history.hpp"
#include "source/mysql/snapshot.hpp"

namespace cppcdc::mysql {
namespace {

using detail::BinlogStream;
using detail::MysqlPtr;
using detail::SchemaHistory;
using detail::StreamStart;
using detail::TableSchemaPtr;

// Whether two TABLE_MAP events describe a table the same way (then the one kept is reused).
bool same_table_map(const TableMapEvent& a, const TableMapEvent& b) {
  return a.table_id == b.table_id && a.flags == b.flags && a.database == b.database &&
         a.table == b.table && a.column_types == b.column_types && a.column_meta == b.column_meta &&
         a.nullable == b.nullable && a.metadata == b.metadata;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// {"content_id", "columns": [{name, data_type, nullable, primary_key}...]} of a shape, as the
// PostgreSQL source describes shapes in schema_change events.
void describe_shape(const RowShape& shape, Row& out) {
  boost::json::array columns;
  for (const auto& c : shape.columns()) {
    boost::json::object o;
    o["name"] = c.name;
    if (c.data_type) {
      o["data_type"] = *c.data_type;
    } else {
      o["data_type"] = nullptr;
    }
    o["nullable"] = c.nullable;
    o["primary_key"] = c.primary_key;
    columns.push_back(std::move(o));
  }
  out.push_back(ColumnValue{"content_id", shape.content_id(), false});
  out.push_back(ColumnValue{"columns", boost::json::serialize(columns), true});
}

// The checkpoint's source_state: {"schema": <history>, "snapshot": <progress>?}.
std::string make_state(const std::string& schema, const std::string& snapshot) {
  std::string out = "{\"schema\":" + schema;
  if (!snapshot.empty()) out += ",\"snapshot\":" + snapshot;
  return out + "}";
}

struct SavedState {
  std::string schema;    // JSON text, empty when absent
  std::string snapshot;  // JSON text, empty when absent
};

Result<SavedState> parse_state(std::string_view text) {
  SavedState out;
  if (text.empty()) return out;
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec || !v.is_object()) {
    return fail(Error::checkpoint(ErrorKind::kTerminal,
                                  "the checkpoint's source state is not the JSON object this "
                                  "source writes"));
  }
  if (const auto* s = v.as_object().if_contains("schema")) out.schema = boost::json::serialize(*s);
  if (const auto* s = v.as_object().if_contains("snapshot")) {
    out.snapshot = boost::json::serialize(*s);
  }
  return out;
}

class MysqlSource final : public Source {
 public:
  explicit MysqlSource(MysqlSourceConfig config)
      : config_(std::move(config)),
        flavor_(config_.flavor == ServerFlavor::kMariaDb ? Flavor::kMariaDb : Flavor::kMySql) {
    if (config_.source_name.empty()) config_.source_name = std::string(to_string(config_.flavor));
    if (const auto dot = config_.snapshot_signal_table.find('.'); dot != std::string::npos) {
      signal_db_ = config_.snapshot_signal_table.substr(0, dot);
      signal_table_ = config_.snapshot_signal_table.substr(dot + 1);
    }
  }
  ~MysqlSource() override { close(); }

  std::string type() const override { return std::string(to_string(config_.flavor)); }
  std::shared_ptr<const BlockingSnapshotTracker> blocking_snapshot_tracker() const override {
    return tracker_;
  }
  std::string source_id() const override { return config_.source_id; }
  std::optional<std::string> initial_offset() const override { return initial_offset_; }

  Status start(const std::optional<CheckpointRecord>& checkpoint) override {
    close();
    initial_offset_.reset();
    finished_.store(false);
    snapshot_.reset();
    // Held from the start until close(): a second copy of this pipeline stops at its start,
    // and so does a reconnect (close, start) when another process took the lock meanwhile.
    CPPCDC_TRY(lock_.hold(config_));
    auto conn = detail::connect(config_);
    if (!conn) return fail(conn.error());
    sql_ = std::move(*conn);
    auto server = detail::check_server(sql_.get(), config_);
    if (!server) return fail(server.error());
    server_ = *server;
    const bool mysql8 = !server_.mariadb && server_.version.rfind("5.", 0) != 0;
    history_ = std::make_unique<SchemaHistory>(detail::TableFilter(config_.tables), mysql8);

    std::optional<CheckpointRecord> resume = checkpoint;
    StreamStart start;
    SavedState saved;
    if (resume) {
      auto parsed = detail::parse_resume_offset(resume->offset, server_);
      if (!parsed) return fail(parsed.error());
      start = *parsed;
      auto state = parse_state(resume->source_state);
      if (!state) return fail(state.error());
      saved = *state;
      auto problem = detail::resume_problem(sql_.get(), start, server_);
      if (!problem) return fail(problem.error());
      if (!problem->empty()) {
        if (config_.snapshot_mode == SnapshotMode::kWhenNeeded) {
          spdlog::warn(
              "the checkpoint at {} cannot be resumed: {}; snapshot mode when_needed: "
              "setting it aside and taking a new snapshot",
              resume->offset, *problem);
          resume.reset();
          saved = SavedState{};
        } else {
          return fail(Error::source(
                          ErrorKind::kTerminal,
                          "cannot resume at checkpoint " + resume->offset + ": " + *problem +
                              "; the changes in between are lost: take a new snapshot (remove the "
                              "checkpoint, or use snapshot mode when_needed)")
                          .with_condition(ErrorCondition::kSourcePositionLost));
        }
      }
    }
    if (resume) {
      if (saved.schema.empty()) {
        spdlog::warn(
            "the checkpoint at {} carries no schema history; reading the table shapes "
            "from the catalog (rows written before a later ALTER may decode wrongly)",
            resume->offset);
        CPPCDC_TRY(history_->load_catalog(sql_.get()));
      } else {
        CPPCDC_TRY(history_->restore(saved.schema));
      }
      if (server_.gtid && start.gtid.empty() && server_.mariadb) {
        auto pos = detail::query(sql_.get(),
                                 "SELECT BINLOG_GTID_POS(" + detail::quote_literal(start.file) +
                                     ", " + std::to_string(start.position) + ")",
                                 "reading the GTID position of " + start.offset());
        if (!pos) return fail(pos.error());
        if (!pos->rows.empty() && pos->rows[0][0]) start.gtid = *pos->rows[0][0];
      }
    } else {
      const bool snapshot = config_.snapshot_mode == SnapshotMode::kInitial ||
                            config_.snapshot_mode == SnapshotMode::kInitialOnly ||
                            config_.snapshot_mode == SnapshotMode::kWhenNeeded;
      if (snapshot) {
        // The snapshot's own transaction gives the exact binlog coordinate of its view.
        auto snap = detail::begin_snapshot(config_, *history_, server_);
        if (!snap) return fail(snap.error());
        snapshot_ = std::move(*snap);
        start = snapshot_->stream_start;
      } else {
        auto pos = detail::current_position(sql_.get(), server_);
        if (!pos) return fail(pos.error());
        start = *pos;
        CPPCDC_TRY(history_->load_catalog(sql_.get()));
        initial_offset_ = start.offset();
      }
      if (!server_.gtid) start.gtid.clear();
    }
    if (!server_.gtid) start.gtid.clear();
    start_ = start;
    gtid_ = MariaGtidPosition();
    if (server_.mariadb && !start.gtid.empty()) {
      auto g = MariaGtidPosition::parse(start.gtid);
      if (!g) return fail(g.error().context("the start GTID position"));
      gtid_ = *g;
    }
    if (snapshot_) {
      std::vector<std::string> names;
      for (const auto& t : snapshot_->tables) names.push_back(t->database + "." + t->table);
      tracker_->set_pending(snapshot_->id, names, 0, false, 0);
    } else {
      tracker_->set_none();
    }
    const bool only = config_.snapshot_mode == SnapshotMode::kInitialOnly;
    if (only && !snapshot_) {
      spdlog::info("snapshot_mode initial_only: the snapshot was completed before; nothing to do");
      finished_.store(true);
    }
    if (!only) {
      auto stream = BinlogStream::open(config_, server_, start);
      if (!stream) return fail(stream.error());
      stream_ = std::move(*stream);
    }
    confirmed_ = resume ? resume->offset : std::string();
    state_version_.reset();
    CPPCDC_TRY(handoff_.open({config_.max_queued_events, config_.max_queued_bytes}));
    handoff_.locked([&](auto&) {
      idle_offset_.clear();
      idle_state_.clear();
    });
    reader_ = std::thread([this] { reader_main(); });
    return ok();
  }

  Status poll(std::vector<Event>& out, std::size_t max_events,
              std::chrono::milliseconds wait) override {
    if (!reader_.joinable()) {
      return fail(Error::invalid_state(type() + " source is not started"));
    }
    auto taken = handoff_.take(out, max_events, wait);
    if (taken.error && !taken.reader_done) return fail(std::move(*taken.error));
    if (taken.events > 0 || !taken.reader_done) return ok();
    if (taken.error) return fail(std::move(*taken.error));
    if (finished_.load()) return ok();
    return fail(Error::source(ErrorKind::kTransient, "the binlog stream ended"));
  }

  Status confirm(std::string_view offset) override {
    // The server keeps binlogs by its own expiry: nothing to release there. Remembered so
    // that idle_offset() does not offer the same position again.
    handoff_.locked([&](auto&) {
      confirmed_ = std::string(offset);
      // The binlog coordinate the confirmed offset stands for (for lag()).
      while (!pending_coords_.empty()) {
        const bool match = pending_coords_.front().first == offset;
        if (match) confirmed_coord_ = pending_coords_.front().second;
        pending_coords_.pop_front();
        if (match) return;
      }
      if (offset == idle_offset_) confirmed_coord_ = idle_coord_;
    });
    return ok();
  }

  /// MariaDB and MySQL keep binlogs by their own expiry, not for a replica, so nothing is
  /// "retained" for this pipeline; confirmed_lag_bytes is the binlog written after the
  /// position this pipeline last confirmed (SHOW BINARY LOGS, which needs the BINLOG MONITOR
  /// or REPLICATION CLIENT privilege; without it, nullopt). Refreshed at most every 2 s on a
  /// connection of its own; after a failure, not tried for 15 s.
  std::optional<SourceLag> lag() const override {
    const auto confirmed = const_cast<cppcdc::detail::ReaderHandoff&>(handoff_).locked(
        [&](const auto&) { return confirmed_coord_; });
    if (!confirmed) return std::nullopt;
    return lag_sampler_.get([&]() -> Result<std::optional<SourceLag>> {
      if (!lag_conn_) {
        auto conn = detail::connect(config_, 2000);
        if (!conn) return fail(conn.error());
        lag_conn_ = std::move(*conn);
      }
      auto logs = detail::query(lag_conn_.get(), "SHOW BINARY LOGS", "reading the binlog sizes");
      if (!logs) {
        lag_conn_.reset();
        return fail(logs.error());
      }
      // The parsed coordinates point into their text: it must outlive them.
      const std::string at_text = confirmed->first + ":0";
      const auto at = parse_binlog_coordinate(at_text);
      std::uint64_t behind = 0;
      bool found = false;
      for (const auto& row : logs->rows) {
        if (row.size() < 2 || !row[0] || !row[1]) continue;
        const std::string file_text = *row[0] + ":0";
        const auto file = parse_binlog_coordinate(file_text);
        if (!file || !at || file->basename != at->basename || file->sequence < at->sequence) {
          continue;
        }
        const std::uint64_t size = std::strtoull(row[1]->c_str(), nullptr, 10);
        if (file->sequence == at->sequence) {
          found = true;
          behind += size > confirmed->second ? size - confirmed->second : 0;
        } else {
          behind += size;
        }
      }
      // That binlog is gone (purged) or renamed: no figure.
      if (!found) return std::optional<SourceLag>();
      return std::optional<SourceLag>(SourceLag{std::nullopt, behind});
    });
  }

  std::optional<std::string> idle_offset() override {
    return handoff_.locked([&](const auto& h) -> std::optional<std::string> {
      if (!h.empty() || h.reader_done() || idle_offset_.empty() || idle_offset_ == confirmed_) {
        return std::nullopt;
      }
      return idle_offset_;
    });
  }

  std::optional<std::string> idle_state() override {
    return handoff_.locked([&](const auto&) -> std::optional<std::string> {
      if (idle_state_.empty()) return std::nullopt;
      return idle_state_;
    });
  }

  bool finished() override { return finished_.load() && handoff_.empty(); }

  void recycle(std::vector<Event>&& events) override {
    {
      // Some stay on this thread, for the transactions poll() decodes (produce_deferred): small
      // batches. A large one is usually a vector the reader handed over whole: back to the
      // reader, which fills it again in place (taking its events here one by one would leave
      // the reader without a spare vector).
      std::lock_guard lock(poll_spares_mutex_);
      if (poll_spare_count_ < kPollSpareEvents && !events.empty() &&
          events.size() <= 2 * kPollSpareEvents) {
        poll_spare_count_ += events.size();
        poll_spares_.push_back(std::move(events));
        return;
      }
    }
    handoff_.recycle(std::move(events));
  }

  void close() override {
    if (reader_.joinable()) {
      handoff_.request_stop();
      if (stream_) stream_->interrupt();
      reader_.join();
      if (deferred_txs_ > 0) {
        spdlog::info(
            "{} source: {} of {} transactions with rows were decoded on the poll "
            "thread (share_decoding)",
            type(), deferred_txs_, deferred_txs_ + reader_txs_);
      }
      deferred_txs_ = reader_txs_ = 0;
    }
    handoff_.close();
    stream_.reset();
    sql_.reset();
    lock_.release();
  }

  const MysqlSourceConfig& config() const { return config_; }

  // For the incremental snapshot backend (incremental_backend.hpp).
  std::shared_ptr<detail::WatermarkLog> watermarks() const { return watermarks_; }
  bool drained() {
    return handoff_.locked([&](const auto& h) { return h.empty() && !h.reader_done(); });
  }
  bool blocking_snapshot_running() const {
    return tracker_->status().phase == BlockingSnapshotStatus::Phase::kRunning ||
           tracker_->status().phase == BlockingSnapshotStatus::Phase::kPending;
  }

 private:
  // A binlog coordinate: file, and the position after an event.
  using Coordinate = std::pair<std::string, std::uint64_t>;

  // ---- the reader thread -----------------------------------------------------------------

  void reader_main() {
    if (snapshot_) {
      const bool read = run_blocking_snapshot(
          handoff_, "snapshot " + snapshot_->id,
          [&](const SnapshotEmit& emit) {
            return detail::read_snapshot(*snapshot_, config_, *history_, emit, handoff_.stop_flag(),
                                         make_state(history_->serialize(), ""), tracker_.get());
          },
          tracker_.get());
      snapshot_.reset();
      if (!read) return;
      if (config_.snapshot_mode == SnapshotMode::kInitialOnly) {
        finished_.store(true);
        return handoff_.finish(std::nullopt);
      }
    }
    if (finished_.load()) return handoff_.finish(std::nullopt);
    auto st = stream_loop();
    hand_over_held();  // finished transactions: delivered before the error, if any
    if (handoff_.stopping()) return handoff_.finish(std::nullopt);
    handoff_.finish(st ? std::optional<Error>() : std::optional<Error>(st.error()));
  }

  std::string coordinate(std::uint64_t pos) const { return file_ + ":" + std::to_string(pos); }

  Status stream_loop() {
    EventDecoder decoder(flavor_);
    // The artificial ROTATE that opens the stream comes before the FORMAT_DESCRIPTION that
    // tells the decoder about checksums, yet carries the checksum we declared we handle.
    decoder.set_checksummed(server_.checksum == "CRC32");
    file_ = start_.file;
    table_maps_.clear();
    in_tx_ = false;
    handoff_.set_assembling(false);
    reset_tx_events();
    tx_events_.drop_all();
    held_sizes_.clear();
    held_bytes_ = 0;
    idle_pending_ = false;
    while (!handoff_.stopping()) {
      // Held transactions are handed over before the reader may wait for the server.
      if (tx_events_.held() > 0 && !stream_->readable_now()) hand_over_held();
      auto bytes = stream_->next();
      if (!bytes) {
        if (handoff_.stopping()) return ok();
        return fail(bytes.error());
      }
      if (bytes->empty()) {
        return fail(Error::source(ErrorKind::kTransient, "the server ended the binlog stream"));
      }
      auto ev = decoder.decode(*bytes);
      if (!ev)
        return fail(ev.error().context("decoding the binlog event after " + coordinate(last_end_)));
      CPPCDC_TRY(handle(*ev, decoder));
      handoff_.take_recycled(recycled_);
      spare_events_.keep(recycled_);
    }
    return ok();
  }

  // The binlog coordinate where `h`'s event starts (0 for artificial events).
  static std::uint64_t event_start(const EventHeader& h) {
    return h.next_position >= h.event_size ? h.next_position - h.event_size : 0;
  }

  Status handle(const BinlogEvent& ev, EventDecoder& decoder) {
    const EventHeader& h = ev.header;
    switch (ev.type) {
      case EventType::kRotate:
        if (ev.rotate) {
          file_ = ev.rotate->next_file;
          last_end_ = ev.rotate->position;
        }
        return ok();
      case EventType::kMariaGtid:
      case EventType::kGtid:
        if (ev.gtid) begin_tx(h, &*ev.gtid);
        break;
      case EventType::kQuery:
        if (ev.query) CPPCDC_TRY(on_query(h, *ev.query));
        break;
      case EventType::kTableMap:
        if (ev.table_map) {
          auto& map = table_maps_[ev.table_map->table_id];
          // Shared with transactions left for poll() to decode; kept while it is unchanged.
          if (!map || !same_table_map(*map, *ev.table_map)) {
            map = std::make_shared<const TableMapEvent>(*ev.table_map);
          }
        }
        break;
      case EventType::kWriteRowsV1:
      case EventType::kUpdateRowsV1:
      case EventType::kDeleteRowsV1:
      case EventType::kWriteRowsV2:
      case EventType::kUpdateRowsV2:
      case EventType::kDeleteRowsV2:
      case EventType::kWriteRowsCompressedV1:
      case EventType::kUpdateRowsCompressedV1:
      case EventType::kDeleteRowsCompressedV1:
      case EventType::kWriteRowsCompressedV2:
      case EventType::kUpdateRowsCompressedV2:
      case EventType::kDeleteRowsCompressedV2:
        if (ev.rows) CPPCDC_TRY(on_rows(h, *ev.rows));
        break;
      case EventType::kXid:
        if (h.next_position) last_end_ = h.next_position;
        return end_tx(h);
      case EventType::kTransactionPayload:
        for (const auto& inner : ev.payload_events) {
          auto e = decoder.decode_payload_event(inner);
          if (!e)
            return fail(
                e.error().context("in the transaction payload at " + coordinate(event_start(h))));
          // Events of a payload have no position of their own: they end where it ends.
          BinlogEvent copy = std::move(*e);
          copy.header.next_position = h.next_position;
          copy.header.event_size = h.event_size;
          copy.header.timestamp = h.timestamp;
          CPPCDC_TRY(handle(copy, decoder));
        }
        return ok();
      case EventType::kHeartbeat:
      case EventType::kHeartbeatV2:
        on_heartbeat(h);
        return ok();
      default:
        break;
    }
    if (h.next_position) last_end_ = h.next_position;
    return ok();
  }

  void begin_tx(const EventHeader& h, const GtidEvent* gtid) {
    in_tx_ = true;
    handoff_.set_assembling(true);  // its events follow: poll() may wait briefly for them
    saw_begin_ = false;
    reset_tx_events();
    tx_gtid_.reset();
    tx_watermark_ = false;
    tx_start_ = event_start(h);
    tx_timestamp_ = std::int64_t{h.timestamp} * 1000;
    if (gtid) {
      tx_gtid_ = *gtid;
      tx_id_ = gtid->sequence;
      tx_standalone_ = gtid->standalone;
    } else {
      tx_standalone_ = false;
      // No GTID: the transaction's start coordinate identifies it across restarts.
      const auto c = parse_binlog_coordinate(coordinate(event_start(h)));
      tx_id_ = c ? (c->sequence << 32) | (c->position & 0xffffffffu) : event_start(h);
    }
  }

  static bool is_keyword(std::string_view sql, std::string_view word) {
    while (!sql.empty() && std::isspace(static_cast<unsigned char>(sql.front())))
      sql.remove_prefix(1);
    if (sql.size() < word.size()) return false;
    for (std::size_t i = 0; i < word.size(); ++i) {
      if (std::toupper(static_cast<unsigned char>(sql[i])) != word[i]) return false;
    }
    return sql.size() == word.size() || !std::isalnum(static_cast<unsigned char>(sql[word.size()]));
  }

  Status on_query(const EventHeader& h, const QueryEvent& q) {
    if (is_keyword(q.sql, "BEGIN") || is_keyword(q.sql, "XA")) {
      if (!in_tx_) begin_tx(h, nullptr);
      saw_begin_ = true;
      return ok();
    }
    if (is_keyword(q.sql, "COMMIT") || is_keyword(q.sql, "ROLLBACK")) {
      if (h.next_position) last_end_ = h.next_position;
      return end_tx(h);
    }
    if (!in_tx_) begin_tx(h, nullptr);
    // The statement's events follow the rows before it: those are decoded now.
    if (tx_deferred_) CPPCDC_TRY(decode_deferred_here());
    auto changes = history_->apply_ddl(q.database, q.sql);
    if (!changes) {
      return fail(changes.error().context("at binlog position " + coordinate(event_start(h))));
    }
    for (const auto& c : *changes) CPPCDC_TRY(add_tx_event(change_event(h, c, q.sql)));
    if (tx_standalone_ || !saw_begin_) {
      // DDL commits on its own (MariaDB flags its GTID standalone; MySQL writes no XID).
      if (h.next_position) last_end_ = h.next_position;
      return end_tx(h);
    }
    return ok();
  }

  Event base_event(const EventHeader& h, const std::string& database, const std::string& table,
                   Operation op) const {
    Event e;
    fill_base(e, h, database, table, op, coordinate(event_start(h)), now_ms());
    return e;
  }

  // The fields every event of this source has, set on a default (or reset) Event.
  void fill_base(Event& e, const EventHeader& h, const std::string& database,
                 const std::string& table, Operation op, const std::string& offset,
                 std::int64_t ts) const {
    e.op = op;
    e.source.source_name = config_.source_name;
    e.source.offset = offset;
    e.source.timestamp = tx_timestamp_ ? tx_timestamp_ : std::int64_t{h.timestamp} * 1000;
    e.ts = ts;
    e.schema = database;
    e.table = table;
  }

  Event change_event(const EventHeader& h, const SchemaHistory::Change& c,
                     std::string_view sql) const {
    using K = SchemaHistory::Change::Kind;
    if (c.kind == K::kTruncated) {
      Event e = base_event(h, c.database, c.table, Operation::kTruncate);
      if (c.before) {
        e.primary_key = c.before->primary_key;
        e.shape = c.before->shape;
      }
      return e;
    }
    Event e = base_event(h, c.database, c.table, Operation::kSchemaChange);
    if (c.before) {
      Row before;
      describe_shape(*c.before->shape, before);
      e.before = BeforeFull{std::move(before), {}};
    }
    Row after;
    if (c.after) {
      describe_shape(*c.after->shape, after);
      e.primary_key = c.after->primary_key;
      e.shape = c.after->shape;
    } else if (c.before) {
      e.primary_key = c.before->primary_key;
      e.shape = c.before->shape;
    }
    after.push_back(ColumnValue{"ddl", std::string(sql), false});
    e.after = std::move(after);
    return e;
  }

  Status on_rows(const EventHeader& h, const RowsEvent& rows) {
    auto map_it = table_maps_.find(rows.table_id);
    if (map_it == table_maps_.end()) {
      return fail(Error::invalid_data("a rows event at " + coordinate(event_start(h)) +
                                      " for table id " + std::to_string(rows.table_id) +
                                      " without its TABLE_MAP"));
    }
    const TableMapEvent& map = *map_it->second;
    if (!signal_table_.empty() && map.table == signal_table_ && map.database == signal_db_) {
      // An incremental snapshot's watermark (or another write to the signal table): noted at
      // the commit, never emitted.
      if (!in_tx_) begin_tx(h, nullptr);
      tx_watermark_ = true;
      return ok();
    }
    if (!history_->filter().captured(map.database, map.table)) return ok();
    auto schema = history_->find(map.database, map.table);
    if (!schema) {
      return fail(Error::source(
          ErrorKind::kTerminal,
          "rows of captured table " + map.database + "." + map.table + " at " +
              coordinate(event_start(h)) +
              " but its shape is not known (created or renamed in a way the schema history "
              "did not follow); take a new snapshot"));
    }
    if (!in_tx_) begin_tx(h, nullptr);
    if (!tx_decided_) {
      // Once per transaction, at its first rows: while the consumer has little queued, its
      // rows are left for poll() to decode, so that both threads work.
      tx_decided_ = true;
      if (config_.share_decoding && deferred_cap() > 0 && tx_events_.empty() && !tx_spill_ &&
          tx_events_.held() == 0 && handoff_.consumer_short()) {
        tx_deferred_ = std::make_unique<DeferredTx>(*this);
      }
    }
    std::string offset = coordinate(event_start(h));
    if (tx_deferred_) {
      if (tx_deferred_->raw.size() + rows.rows.size() <= deferred_cap()) {
        tx_deferred_->capture(rows, map_it->second, std::move(schema), std::move(offset),
                              source_timestamp(h), now_ms());
        return ok();
      }
      CPPCDC_TRY(decode_deferred_here());  // too large to leave: decoded here after all
    }
    if (tx_spill_) {
      // The transaction outgrew memory: its rows wait in the spill file as they came, to be
      // decoded at the commit.
      return spill_rows(map_it->second, std::move(schema), rows, offset, source_timestamp(h),
                        now_ms());
    }
    return decode_rows(map, *schema, rows, offset, source_timestamp(h), now_ms());
  }

  // The most rows-event bytes a transaction left for poll() may have: 1 MiB, and less under a
  // small spill_threshold_bytes (decoded events take several times their encoded size, and
  // the poll thread holds them in memory).
  std::size_t deferred_cap() const {
    return std::min(kMaxDeferredBytes, config_.spill_threshold_bytes / 16);
  }

  std::int64_t source_timestamp(const EventHeader& h) const {
    return tx_timestamp_ ? tx_timestamp_ : std::int64_t{h.timestamp} * 1000;
  }

  // What every row event of one rows event shares.
  struct RowContext {
    const std::string& source_name;
    const std::string& offset;  // where the rows event starts
    std::int64_t source_ts;     // source.timestamp
    std::int64_t ts;            // when it was read
    const TableMapEvent& map;
    const TableSchema& schema;
    Operation op;
  };

  static Operation operation(const RowsEvent& rows) {
    return rows.kind == RowsKind::kWrite    ? Operation::kInsert
           : rows.kind == RowsKind::kUpdate ? Operation::kUpdate
                                            : Operation::kDelete;
  }

  // Fills `e` (default or reset) with the row `row` holds; `parts` may hold a recycled event's
  // key names and shape, used instead of new ones. Leaves `row` empty.
  static void fill_row(Event& e, const RowContext& c, DecodedRow& row,
                       cppcdc::detail::ReusableParts& parts) {
    e.op = c.op;
    e.source.source_name = c.source_name;
    e.source.offset = c.offset;
    e.source.timestamp = c.source_ts;
    e.ts = c.ts;
    e.schema = c.map.database;
    e.table = c.map.table;
    if (parts.names) {
      e.primary_key = std::move(parts.names);
      parts.names.reset();
      *e.primary_key = c.schema.primary_key;
    } else {
      e.primary_key = c.schema.primary_key;
    }
    if (parts.shape == c.schema.shape) {
      e.shape = std::move(parts.shape);  // the recycled event's own: no copy
      parts.shape.reset();
    } else {
      e.shape = c.schema.shape;
    }
    if (row.before) e.before = before_image(c.schema, std::move(*row.before));
    if (c.op != Operation::kDelete && row.after) {
      e.unavailable_columns = missing(c.schema, *row.after);
      e.after = std::move(*row.after);
    }
    row.before.reset();
    row.after.reset();
  }

  // Decodes the rows `reader` holds one at a time into the event slot() returns (a recycled
  // one, reset, whose after image the row is decoded into when `parts` holds one), then calls
  // filled(event). After the last row, slot() is not called again; a row that does not come
  // gives its event back through unslot().
  template <class Slot, class Unslot, class Filled>
  static Status decode_each(RowReader& reader, const RowContext& context, DecodedRow& row,
                            cppcdc::detail::ReusableParts& parts, Slot&& slot, Unslot&& unslot,
                            Filled&& filled) {
    while (!reader.at_end()) {
      Event& e = slot();
      if (!row.after && parts.row) {
        row.after = std::move(parts.row);
        parts.row.reset();
      }
      auto more = reader.next(row);
      if (!more || !*more) {
        unslot();
        if (more) break;
        return fail(more.error().context("decoding a rows event of " + context.map.database + "." +
                                         context.map.table + " at " + context.offset));
      }
      fill_row(e, context, row, parts);
      CPPCDC_TRY(filled(e));
    }
    return ok();
  }

  // Decodes the rows of `rows` into events of the open transaction, on the reader thread.
  Status decode_rows(const TableMapEvent& map, const TableSchema& schema, const RowsEvent& rows,
                     const std::string& offset, std::int64_t source_ts, std::int64_t ts) {
    RowReader reader(map, schema, rows, flavor_);
    const RowContext context{config_.source_name, offset, source_ts, ts, map, schema,
                             operation(rows)};
    DecodedRow row;
    Event spilled;  // the event of a row once the transaction went to a spill file meanwhile
    const std::size_t held = tx_events_.size();
    // In memory, the row's event is filled in place at the end of tx_events_. (Not taken after
    // the last row: a recycled event taken and given back would break the run of events
    // filled in place, so that the next batch moved to a new vector.)
    CPPCDC_TRY(decode_each(
        reader, context, row, spare_parts_,
        [&]() -> Event& {
          if (tx_spill_) return spilled = Event();
          if (tx_events_.must_hand_over()) hand_over_held();
          return tx_events_.append(spare_events_, spare_parts_);
        },
        [&] {
          if (!tx_spill_) tx_events_.pop_back();
        },
        [&](Event& e) { return tx_spill_ ? spill_event(e) : held_tx_event(); }));
    if (!tx_spill_ && tx_events_.size() > held) {
      decoded_rows_ += tx_events_.size() - held;
      decoded_raw_bytes_ += rows.rows.size();
    }
    return ok();
  }

  // The open transaction's rows left for poll() (tx_deferred_) are decoded here instead, and
  // the rest of it too: it grew too large to leave, or a statement follows that makes events
  // of its own.
  Status decode_deferred_here() {
    auto tx = std::move(tx_deferred_);
    for (auto& c : tx->rows) {
      CPPCDC_TRY(decode_rows(*c.map, *c.schema, tx->bytes(c), c.offset, c.source_ts, c.ts));
    }
    return ok();
  }

  // ---- decoding on the consumer's thread ---------------------------------------------------

  // A transaction whose rows events were kept undecoded by the reader, for poll() to decode
  // (a DeferredBatch in the hand-off).
  class DeferredTx final : public cppcdc::detail::DeferredBatch {
   public:
    explicit DeferredTx(MysqlSource& source) : source_(source) {}

    struct Rows {
      RowsEvent rows;      // rows.rows points into raw once it is decoded (bytes())
      std::size_t at = 0;  // its bytes in raw
      std::size_t size = 0;
      std::shared_ptr<const TableMapEvent> map;
      TableSchemaPtr schema;
      std::string offset;
      std::int64_t source_ts = 0;
      std::int64_t ts = 0;
    };

    void capture(const RowsEvent& rows, std::shared_ptr<const TableMapEvent> map,
                 TableSchemaPtr schema, std::string offset, std::int64_t source_ts,
                 std::int64_t ts) {
      Rows& r = this->rows.emplace_back();
      r.rows = rows;
      r.rows.rows = {};  // its bytes are copied into raw below: see bytes()
      r.at = raw.size();
      r.size = rows.rows.size();
      raw.insert(raw.end(), rows.rows.begin(), rows.rows.end());
      r.map = std::move(map);
      r.schema = std::move(schema);
      r.offset = std::move(offset);
      r.source_ts = source_ts;
      r.ts = ts;
    }

    Result<std::size_t> produce(std::vector<Event>& out) override {
      return source_.produce_deferred(*this, out);
    }

    // `r` ready to decode: its rows pointing at their copy in raw.
    const RowsEvent& bytes(Rows& r) {
      r.rows.rows = std::span<const std::uint8_t>(raw.data() + r.at, r.size);
      return r.rows;
    }

    std::vector<std::uint8_t> raw;
    std::vector<Rows> rows;
    std::uint64_t tx_id = 0;
    std::size_t estimate = 0;  // of its event count
    std::string gtid;
    std::string resume_offset;
    std::string resume_state;

   private:
    MysqlSource& source_;
  };

  // Consumer thread (poll()): the events of `tx`, appended to `out`.
  Result<std::size_t> produce_deferred(DeferredTx& tx, std::vector<Event>& out) {
    std::lock_guard lock(poll_spares_mutex_);
    reserve_poll(out, out.size() + tx.estimate);
    const std::size_t first = out.size();
    DecodedRow row;
    for (auto& c : tx.rows) {
      RowReader reader(*c.map, *c.schema, tx.bytes(c), flavor_);
      const RowContext context{config_.source_name, c.offset,         c.source_ts, c.ts, *c.map,
                               *c.schema,           operation(c.rows)};
      CPPCDC_TRY(decode_each(
          reader, context, row, poll_parts_, [&]() -> Event& { return poll_slot(out); },
          [&] { out.pop_back(); }, [](Event&) { return ok(); }));
    }
    const std::uint64_t total = out.size() - first;
    for (std::uint64_t i = 0; i < total; ++i) {
      Event& e = out[first + i];
      e.transaction = TransactionMetadata{tx.tx_id, total, i};
      e.gtid = tx.gtid;
    }
    if (total > 0) {
      out.back().resume_offset = std::move(tx.resume_offset);
      out.back().resume_state = std::move(tx.resume_state);
    }
    return total;
  }

  // Room in `out` for `n` events (poll_spares_mutex_ held): when it has none, the capacity of
  // a spent vector of recycled events, if one is large enough (its memory is mapped already;
  // a new one would fault in every page). A poll that holds events already was given room
  // by the hand-off (BatchQueue::grow_for_poll) before this batch was made.
  void reserve_poll(std::vector<Event>& out, std::size_t n) {
    if (out.capacity() >= n) return;
    if (out.empty()) {
      for (std::size_t i = 0; i < poll_vectors_.size(); ++i) {
        if (poll_vectors_[i].capacity() >= n) {
          out.swap(poll_vectors_[i]);
          poll_vectors_.erase(poll_vectors_.begin() + static_cast<std::ptrdiff_t>(i));
          return;
        }
      }
    }
    out.reserve(n);
  }

  // A new event at the end of `out`: a recycled one (reset) when poll() has one.
  Event& poll_slot(std::vector<Event>& out) {
    while (!poll_spares_.empty() && poll_spares_.back().empty()) {
      if (poll_vectors_.size() < kPollVectors)
        poll_vectors_.push_back(std::move(poll_spares_.back()));
      poll_spares_.pop_back();
    }
    if (poll_spares_.empty()) return out.emplace_back();
    auto& batch = poll_spares_.back();
    out.push_back(std::move(batch.back()));
    batch.pop_back();
    --poll_spare_count_;
    cppcdc::detail::reset_for_reuse(out.back(), poll_parts_);
    return out.back();
  }

  static std::vector<std::string> missing(const TableSchema& schema, const Row& row) {
    std::vector<std::string> out;
    if (row.size() == schema.columns.size()) return out;
    for (const auto& c : schema.columns) {
      if (!find_column(row, c.name)) out.push_back(c.name);
    }
    return out;
  }

  static BeforeImage before_image(const TableSchema& schema, Row row) {
    if (row.size() == schema.columns.size()) return BeforeFull{std::move(row), {}};
    // A MINIMAL image of exactly the key is a key-only before image.
    if (!schema.primary_key.empty() && row.size() == schema.primary_key.size()) {
      bool key_only = true;
      for (const auto& k : schema.primary_key) key_only = key_only && find_column(row, k);
      if (key_only) return BeforeKeyOnly{std::move(row)};
    }
    auto unavailable = missing(schema, row);
    return BeforeFull{std::move(row), std::move(unavailable)};
  }

  // The current resume offset: the GTID position, or the end of the last complete event.
  std::string resume_offset() const {
    if (server_.gtid && server_.mariadb) return gtid_.text();
    return coordinate(last_end_);
  }

  Status end_tx(const EventHeader& h) {
    (void)h;
    std::string watermark;  // the GTID of a write to the signal table
    if (tx_watermark_ && tx_gtid_) {
      watermark = std::to_string(tx_gtid_->domain_id) + "-" + std::to_string(tx_gtid_->server_id) +
                  "-" + std::to_string(tx_gtid_->sequence);
    }
    tx_watermark_ = false;
    if (tx_gtid_ && server_.mariadb) {
      MariaGtid g;
      g.domain_id = tx_gtid_->domain_id;
      g.server_id = tx_gtid_->server_id;
      g.sequence = tx_gtid_->sequence;
      gtid_.apply(g);
    }
    in_tx_ = false;
    saw_begin_ = false;
    handoff_.set_assembling(false);  // before the push: nothing more may follow this one
    // Every event of the transaction carries its GTID (Event::gtid).
    const std::string gtid = tx_gtid_ ? tx_gtid_->text() : std::string();
    tx_gtid_.reset();
    const std::string offset = resume_offset();
    const std::string& state = state_for_checkpoint();
    if (tx_deferred_) {
      // Only rows, undecoded: queued for poll() to decode, sized by what the reader decoded.
      auto tx = std::move(tx_deferred_);
      tx->tx_id = tx_id_;
      tx->gtid = gtid;
      tx->resume_offset = offset;
      tx->resume_state = state;
      const std::size_t raw = tx->raw.size();
      const std::size_t events = std::max<std::size_t>(
          1, decoded_raw_bytes_ ? raw * decoded_rows_ / decoded_raw_bytes_ : raw / 64);
      const std::size_t bytes =
          events * (decoded_rows_ ? decoded_event_bytes_ / decoded_rows_ : std::size_t{1024});
      tx->estimate = events;
      hand_over_held();  // the transactions before it first
      note_handed_out(offset);
      ++deferred_txs_;
      handoff_.push_deferred(std::move(tx), events, bytes, [] { return true; });
      reset_tx_events();
    } else if (tx_spill_) {
      ++reader_txs_;
      hand_over_held();
      CPPCDC_TRY(push_spilled_tx(offset, state, gtid));
    } else if (!tx_events_.empty()) {
      const std::uint64_t total = tx_events_.size();
      ++reader_txs_;
      for (std::uint64_t i = 0; i < total; ++i) {
        tx_events_[i].transaction = TransactionMetadata{tx_id_, total, i};
        tx_events_[i].gtid = gtid;
      }
      tx_events_.back().resume_offset = offset;
      tx_events_.back().resume_state = state;
      // Measured as it was added; the position it now carries is added to its size.
      tx_sizes_.back() +=
          cppcdc::detail::approx_string_bytes(offset) + cppcdc::detail::approx_string_bytes(state);
      note_handed_out(offset);
      // Held with the transactions before it, to be handed over together (hand_over_held).
      if (tx_events_.held() == 0) held_since_ = std::chrono::steady_clock::now();
      tx_events_.commit();
      held_sizes_.insert(held_sizes_.end(), tx_sizes_.begin(), tx_sizes_.end());
      held_bytes_ += tx_bytes_;
      reset_tx_events();
    }
    set_idle(offset, state);
    if (tx_events_.held() > 0 && hand_over_due()) hand_over_held();
    if (!watermark.empty()) {
      hand_over_held();
      // After everything before it was queued: see WatermarkLog.
      if (auto c = parse_binlog_coordinate(coordinate(tx_start_))) {
        watermarks_->seen(std::move(watermark), detail::encode_coordinate(c->sequence, tx_start_));
      }
    }
    return ok();
  }

  // An event of the open transaction: kept in memory up to spill_threshold_bytes, then (with
  // all before it) in a spill file until the commit.
  Status add_tx_event(Event&& e) {
    if (tx_spill_) return spill_event(e);
    if (tx_events_.must_hand_over()) hand_over_held();
    tx_events_.append(std::move(e), spare_events_);
    return held_tx_event();
  }

  // The event just added at the end of tx_events_: counted, and the transaction spilled when
  // it outgrew memory.
  Status held_tx_event() {
    const std::size_t bytes = cppcdc::detail::approx_event_bytes(tx_events_.back());
    tx_bytes_ += bytes;
    decoded_event_bytes_ += bytes;
    tx_sizes_.push_back(bytes);  // handed to the hand-off, which would measure it again
    if (tx_bytes_ <= config_.spill_threshold_bytes) return ok();
    const std::filesystem::path dir = config_.spill_dir.empty()
                                          ? cppcdc::detail::default_spill_dir()
                                          : std::filesystem::path(config_.spill_dir);
    auto spill = cppcdc::detail::EventSpill::create(dir);
    if (!spill) {
      return fail(spill.error().context("a transaction outgrew spill_threshold_bytes (" +
                                        std::to_string(config_.spill_threshold_bytes) + ")"));
    }
    tx_spill_ = std::move(*spill);
    hand_over_held();  // the events of the transactions before it stay in memory
    spdlog::info(
        "a transaction at {} holds more than {} bytes of events ({} so far): spilling "
        "it to a temporary file in {} until its commit",
        coordinate(last_end_), config_.spill_threshold_bytes, tx_events_.size(), dir.string());
    for (const auto& held : tx_events_) CPPCDC_TRY(spill_event(held));
    tx_events_.release();  // the memory goes back, not only the events
    tx_sizes_ = std::vector<std::size_t>();
    return ok();
  }

  void reset_tx_events() {
    tx_deferred_.reset();
    tx_decided_ = false;
    tx_events_.clear();
    tx_sizes_.clear();
    tx_spill_.reset();
    spill_runs_.clear();
    spill_tables_.clear();
    spill_events_ = 0;
    tx_bytes_ = 0;
  }

  // ---- a transaction that outgrew memory ------------------------------------------------
  //
  // Past spill_threshold_bytes, the events the transaction made so far go to a spill file
  // (EventSpill::append), and so does every event it makes later outside a rows event. Its
  // rows events after that are not decoded into events: their row images go to the same file
  // as they came (one record each, with what decoding them needs again), and are decoded at
  // the commit, on the way out. That keeps the file about as small as the binlog and spares
  // making, writing and reading back an event object per row. The rows are still decoded once
  // on arrival, into a scratch row, to count them (every event carries the transaction's
  // total) and to report a malformed image where it was read.

  // A run of records of one kind: events, or rows events.
  struct SpillRun {
    bool rows = false;
    std::uint64_t records = 0;
  };
  // A table map and schema that spilled rows events were read with.
  struct SpillTable {
    std::shared_ptr<const TableMapEvent> map;
    TableSchemaPtr schema;
  };

  // An event of the spilled transaction, in its place.
  Status spill_event(const Event& e) {
    CPPCDC_TRY(tx_spill_->append(e));
    note_spill_record(false);
    ++spill_events_;
    return ok();
  }

  void note_spill_record(bool rows) {
    if (spill_runs_.empty() || spill_runs_.back().rows != rows) spill_runs_.push_back({rows, 0});
    ++spill_runs_.back().records;
  }

  // A rows event of the spilled transaction, kept undecoded. Its record: the index of its
  // table map and schema in spill_tables_, the rows event's header fields, its coordinate and
  // times, then the row images.
  Status spill_rows(const std::shared_ptr<const TableMapEvent>& map, TableSchemaPtr schema,
                    const RowsEvent& rows, const std::string& offset, std::int64_t source_ts,
                    std::int64_t ts) {
    std::uint64_t count = 0;
    {
      RowReader reader(*map, *schema, rows, flavor_);
      while (!reader.at_end()) {
        auto more = reader.next(spill_scratch_);
        if (!more) {
          return fail(more.error().context("decoding a rows event of " + map->database + "." +
                                           map->table + " at " + offset));
        }
        if (!*more) break;
        ++count;
      }
    }
    if (count == 0) return ok();
    // One entry per table map and schema the transaction's rows were read with (a map is
    // replaced only when its table changes); mostly the one used last.
    const auto same = [&](const SpillTable& t) { return t.map == map && t.schema == schema; };
    std::size_t table = spill_last_table_;
    if (table >= spill_tables_.size() || !same(spill_tables_[table])) {
      table = 0;
      while (table < spill_tables_.size() && !same(spill_tables_[table])) ++table;
      if (table == spill_tables_.size()) spill_tables_.push_back({map, std::move(schema)});
      spill_last_table_ = table;
    }
    std::string& head = spill_head_;
    head.clear();
    const auto put = [&](std::uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) head.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    const auto put_bitmap = [&](const Bitmap& b) {
      put(b.bits, 4);
      put(b.bytes.size(), 4);
      head.append(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
    };
    put(table, 4);
    put(static_cast<std::uint64_t>(rows.kind), 1);
    put(rows.table_id, 8);
    put(rows.flags, 2);
    put(rows.column_count, 4);
    put_bitmap(rows.present);
    put_bitmap(rows.present_after);
    put(offset.size(), 4);
    head += offset;
    put(static_cast<std::uint64_t>(source_ts), 8);
    put(static_cast<std::uint64_t>(ts), 8);
    put(count, 8);
    CPPCDC_TRY(tx_spill_->append_record(head, rows.rows));
    note_spill_record(true);
    spill_events_ += count;
    decoded_rows_ += count;
    decoded_raw_bytes_ += rows.rows.size();
    return ok();
  }

  // A record spill_rows() wrote, parsed back: `rows` points into `record`.
  struct SpilledRows {
    const SpillTable* table = nullptr;
    RowsEvent rows;
    std::string offset;
    std::int64_t source_ts = 0;
    std::int64_t ts = 0;
    std::uint64_t count = 0;
  };
  Status parse_spilled_rows(std::string_view record, SpilledRows& out) const {
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(record.data()),
                                              record.size());
    const std::string context = "a rows record of the spill file in " + tx_spill_->dir().string();
    detail::ByteReader r(bytes, context);
    const auto damaged = [](const Error& e) {
      return fail(Error::internal(e.message() + " (the record is damaged)"));
    };
    const auto field = [&](std::size_t n, std::uint64_t& to) {
      auto v = r.le(n, "a field");
      if (v) to = *v;
      return v.has_value();
    };
    const auto bitmap = [&](Bitmap& b) {
      std::uint64_t bits = 0, size = 0;
      if (!field(4, bits) || !field(4, size) || size * 8 < bits) return false;
      auto taken = r.take(size, "a bitmap");
      if (!taken) return false;
      b.bits = bits;
      b.bytes.assign(taken->begin(), taken->end());
      return true;
    };
    std::uint64_t table = 0, kind = 0, flags = 0, columns = 0, offset_size = 0, source_ts = 0,
                  ts = 0;
    bool good = field(4, table) && field(1, kind) && field(8, out.rows.table_id) &&
                field(2, flags) && field(4, columns) && bitmap(out.rows.present) &&
                bitmap(out.rows.present_after) && field(4, offset_size);
    if (good) {
      auto offset = r.str(offset_size, "the coordinate");
      good = offset && field(8, source_ts) && field(8, ts) && field(8, out.count);
      if (offset) out.offset = *offset;
    }
    if (!good || table >= spill_tables_.size() ||
        kind > static_cast<std::uint64_t>(RowsKind::kDelete)) {
      return damaged(r.error("a field out of range or past its end"));
    }
    out.table = &spill_tables_[table];
    out.rows.kind = static_cast<RowsKind>(kind);
    out.rows.flags = static_cast<std::uint16_t>(flags);
    out.rows.column_count = columns;
    out.source_ts = static_cast<std::int64_t>(source_ts);
    out.ts = static_cast<std::int64_t>(ts);
    out.rows.rows = r.rest();
    return ok();
  }

  // The committed transaction in the spill file, handed over in pieces (the hand-off waits
  // while its queue is full, so memory stays bounded), its spilled rows decoded on the way
  // into recycled events; only the last event carries the position.
  Status push_spilled_tx(const std::string& offset, const std::string& state,
                         const std::string& gtid) {
    CPPCDC_TRY(tx_spill_->start_reading());
    const std::uint64_t total = spill_events_;
    std::uint64_t index = 0;
    std::size_t piece = 0;
    // The next event of the transaction: a recycled slot at the end of tx_events_.
    const auto slot = [this]() -> Event& {
      if (tx_events_.must_hand_over()) hand_over_held();
      return tx_events_.append(spare_events_, spare_parts_);
    };
    // The event just filled: counted into the piece, which goes out once full.
    const auto done = [&](Event& e) {
      e.transaction = TransactionMetadata{tx_id_, total, index++};
      e.gtid = gtid;
      if (index == total) {
        e.resume_offset = offset;
        e.resume_state = state;
        note_handed_out(offset);
      }
      const std::size_t bytes = cppcdc::detail::approx_event_bytes(e);
      held_sizes_.push_back(bytes);
      held_bytes_ += bytes;
      if (++piece == kSpillPieceEvents || index == total) {
        tx_events_.commit();
        hand_over_held();
        piece = 0;
      }
    };
    const auto ended_early = [&] {
      return fail(Error::internal("the spill file of a transaction ended after " +
                                  std::to_string(index) + " of its " + std::to_string(total) +
                                  " events"));
    };
    SpilledRows spilled;
    DecodedRow row;
    for (const auto& run : spill_runs_) {
      for (std::uint64_t r = 0; r < run.records && !handoff_.stopping(); ++r) {
        if (!run.rows) {
          Event& e = slot();
          auto more = tx_spill_->next(e);
          if (!more) return fail(more.error().context("reading back a spilled transaction"));
          if (!*more) return ended_early();
          done(e);
          continue;
        }
        auto record = tx_spill_->next_record();
        if (!record) return fail(record.error().context("reading back a spilled transaction"));
        if (!*record) return ended_early();
        CPPCDC_TRY(parse_spilled_rows(**record, spilled));
        const TableMapEvent& map = *spilled.table->map;
        const TableSchema& schema = *spilled.table->schema;
        RowReader reader(map, schema, spilled.rows, flavor_);
        const RowContext context{
            config_.source_name,    spilled.offset, spilled.source_ts, spilled.ts, map, schema,
            operation(spilled.rows)};
        const std::uint64_t before = index;
        CPPCDC_TRY(decode_each(
            reader, context, row, spare_parts_, slot, [&] { tx_events_.pop_back(); },
            [&](Event& e) {
              done(e);
              return ok();
            }));
        if (index - before != spilled.count) return ended_early();
      }
    }
    if (index < total && !handoff_.stopping()) return ended_early();
    // A stop may have cut it short: what is open was never handed over (reset_tx_events drops
    // it); the transaction comes again from its start after a restart.
    if (index < total) {
      held_sizes_.resize(held_sizes_.size() - piece);
      held_bytes_ = 0;
    }
    reset_tx_events();
    return ok();
  }

  // A transaction handed out up to `offset`, ending at the current binlog coordinate (for
  // lag() once it is confirmed).
  void note_handed_out(const std::string& offset) {
    handoff_.locked([&](auto&) {
      if (pending_coords_.size() >= kMaxPendingCoords) pending_coords_.pop_front();
      pending_coords_.emplace_back(offset, std::make_pair(file_, last_end_));
    });
  }

  // The source_state of a checkpoint at the current position (cached until the schema
  // history changes).
  const std::string& state_for_checkpoint() {
    if (!state_version_ || *state_version_ != history_->version()) {
      state_text_ = make_state(history_->serialize(), "");
      state_version_ = history_->version();
    }
    return state_text_;
  }

  void on_heartbeat(const EventHeader& h) {
    if (in_tx_) return;
    // Everything up to the heartbeat's position was sent before it: a position a quiet
    // pipeline may checkpoint. In file mode the heartbeat names it.
    if (!(server_.gtid && server_.mariadb) && h.next_position) last_end_ = h.next_position;
    const std::string offset = resume_offset();
    const std::string& state = state_for_checkpoint();
    hand_over_held();
    set_idle(offset, state);
  }

  // The position a pipeline with nothing queued may checkpoint (idle_offset()) is now
  // `offset`: set at once when no transaction is held, else when the held ones are handed
  // over (hand_over_held), after them.
  void set_idle(const std::string& offset, const std::string& state) {
    if (tx_events_.held() > 0) {
      pending_idle_offset_ = offset;
      pending_idle_state_ = state;
      pending_idle_coord_ = {file_, last_end_};
      idle_pending_ = true;
      return;
    }
    publish_idle(offset, state, {file_, last_end_});
  }

  void publish_idle(std::string offset, std::string state, Coordinate coord) {
    handoff_.locked([&](auto&) {
      idle_offset_ = std::move(offset);
      idle_state_ = std::move(state);
      idle_coord_ = std::move(coord);
    });
  }

  // Whether the held transactions are handed over now, at a transaction's end: a poll's worth
  // is held (take() swaps them into a poll whole), or their bytes reach a quarter of the
  // queue's limit, or they were held for kMaxHold. (Before the reader waits for the server,
  // stream_loop() hands them over too.)
  bool hand_over_due() const {
    const std::size_t poll = handoff_.poll_size();
    return tx_events_.held() >= std::max<std::size_t>(poll, 1) ||
           held_bytes_ >= config_.max_queued_bytes / 4 ||
           std::chrono::steady_clock::now() - held_since_ >= kMaxHold;
  }

  // Hands the held transactions to poll() (in one batch, the vector changing hands when it
  // can: InPlaceBatch::hand_over), then the idle position noted while they were held.
  void hand_over_held() {
    if (tx_events_.held() > 0) {
      tx_events_.hand_over(
          [&](std::vector<Event>& events, std::size_t from, std::size_t to) {
            return handoff_.push(events, from, to, &held_sizes_, &recycled_, [] { return true; });
          },
          spare_events_);
      held_sizes_.clear();
      held_bytes_ = 0;
      spare_events_.keep(recycled_);
    }
    if (!idle_pending_) return;
    idle_pending_ = false;
    publish_idle(std::move(pending_idle_offset_), std::move(pending_idle_state_),
                 std::move(pending_idle_coord_));
  }

  MysqlSourceConfig config_;
  Flavor flavor_;
  detail::ServerInfo server_;
  MysqlPtr sql_;
  std::unique_ptr<SchemaHistory> history_;
  std::optional<detail::SnapshotPlan> snapshot_;
  std::shared_ptr<BlockingSnapshotTracker> tracker_ =
      std::make_shared<BlockingSnapshotTracker>(std::string(to_string(config_.snapshot_mode)));
  std::optional<std::string> initial_offset_;
  std::atomic<bool> finished_{false};
  StreamStart start_;
  std::unique_ptr<BinlogStream> stream_;

  // Reader thread state.
  std::string file_;
  std::uint64_t last_end_ = 4;
  MariaGtidPosition gtid_;
  std::unordered_map<std::uint64_t, std::shared_ptr<const TableMapEvent>> table_maps_;
  bool in_tx_ = false;
  bool saw_begin_ = false;
  bool tx_standalone_ = false;
  std::optional<GtidEvent> tx_gtid_;
  bool tx_watermark_ = false;   // the open transaction wrote to the signal table
  std::uint64_t tx_start_ = 0;  // where it starts in file_
  std::string signal_db_;       // snapshot_signal_table's parts (empty: none)
  std::string signal_table_;
  std::shared_ptr<detail::WatermarkLog> watermarks_ = std::make_shared<detail::WatermarkLog>();
  std::uint64_t tx_id_ = 0;
  std::int64_t tx_timestamp_ = 0;
  // The open transaction's events, and those of finished ones held to be handed over
  // together (hand_over_held).
  cppcdc::detail::InPlaceBatch tx_events_;
  std::vector<std::size_t> tx_sizes_;                 // approx_event_bytes of each of the open ones
  std::size_t tx_bytes_ = 0;                          // their sum
  std::vector<std::size_t> held_sizes_;               // approx_event_bytes of each held event
  std::size_t held_bytes_ = 0;                        // their sum
  std::chrono::steady_clock::time_point held_since_;  // when the first was held
  // A transaction is held at most this long while the server sends more (hand_over_due).
  static constexpr std::chrono::milliseconds kMaxHold{20};
  // The idle position (set_idle) of the last transaction held, set when it is handed over.
  bool idle_pending_ = false;
  std::string pending_idle_offset_;
  std::string pending_idle_state_;
  std::unique_ptr<cppcdc::detail::EventSpill>
      tx_spill_;  // the open transaction, once it outgrew memory
  std::vector<SpillRun> spill_runs_;  // its records in the order written
  std::vector<SpillTable> spill_tables_;
  std::size_t spill_last_table_ = 0;  // the entry the last spilled rows event used
  std::uint64_t spill_events_ = 0;  // events it makes, spilled rows included
  DecodedRow spill_scratch_;        // the rows counted as they are spilled
  std::string spill_head_;          // a rows record's head, reused
  static constexpr std::size_t kSpillPieceEvents = 10'000;
  // Delivered events given back by the runtime, filled again for new rows (event_reuse.hpp).
  std::vector<std::vector<Event>> recycled_;
  cppcdc::detail::SpareEvents spare_events_;
  cppcdc::detail::ReusableParts spare_parts_;
  std::string state_text_;
  std::optional<std::uint64_t> state_version_;  // the history version state_text_ holds
  // The open transaction's rows, left undecoded for poll() (see on_rows); decided at its
  // first rows event.
  std::unique_ptr<DeferredTx> tx_deferred_;
  bool tx_decided_ = false;
  // A transaction larger than this (its rows events' bytes) is decoded by the reader; see
  // deferred_cap().
  static constexpr std::size_t kMaxDeferredBytes = std::size_t{1} << 20;
  // Rows the reader decoded, and their encoded bytes: the estimate of a deferred
  // transaction's event count.
  std::uint64_t decoded_rows_ = 0;
  std::uint64_t decoded_raw_bytes_ = 0;
  std::uint64_t decoded_event_bytes_ = 0;
  // Transactions with rows handed over since start(): left for poll() to decode, or decoded
  // here (read after the reader thread ended).
  std::uint64_t deferred_txs_ = 0;
  std::uint64_t reader_txs_ = 0;

  // Consumer thread: recycled events for the transactions poll() decodes.
  std::mutex poll_spares_mutex_;
  std::vector<std::vector<Event>> poll_spares_;
  std::size_t poll_spare_count_ = 0;
  cppcdc::detail::ReusableParts poll_parts_;
  static constexpr std::size_t kPollSpareEvents = 2048;
  std::vector<std::vector<Event>> poll_vectors_;  // emptied ones, for their capacity
  static constexpr std::size_t kPollVectors = 2;

  // Guarded by handoff_.locked().
  std::string idle_offset_;
  std::string idle_state_;
  std::string confirmed_;
  // Binlog coordinates (file, position after the event) for lag(): of each transaction handed
  // out and not confirmed yet (oldest first; at most kMaxPendingCoords, the oldest dropped), of
  // the idle offset, and of the last confirmed offset.
  static constexpr std::size_t kMaxPendingCoords = 100000;
  std::deque<std::pair<std::string, Coordinate>> pending_coords_;
  Coordinate idle_coord_;
  std::optional<Coordinate> confirmed_coord_;
  Coordinate pending_idle_coord_;  // reader thread: see set_idle()

  // lag(): its throttle, and its connection (used only under the throttle's lock).
  mutable cppcdc::detail::LagSampler lag_sampler_;
  mutable MysqlPtr lag_conn_;

  std::thread reader_;
  cppcdc::detail::ReaderHandoff handoff_;
  // The pipeline's named lock on the server (pipeline_lock.hpp).
  detail::PipelineLock lock_;
};

}  // namespace

std::string_view to_string(ServerFlavor flavor) noexcept {
  return flavor == ServerFlavor::kMariaDb ? "mariadb" : "mysql";
}

std::uint32_t effective_server_id(const MysqlSourceConfig& config) {
  if (config.server_id != 0) return config.server_id;
  // FNV-1a of the source id, folded into 1000000..1999999.
  std::uint32_t h = 2166136261u;
  for (unsigned char c : config.source_id) {
    h ^= c;
    h *= 16777619u;
  }
  return 1'000'000 + h % 1'000'000;
}

Result<std::unique_ptr<Source>> make_mysql_source(MysqlSourceConfig config) {
  register_positions();
  auto bad = [](const std::string& key, const std::string& what) {
    return fail(Error::configuration(what).for_setting(SettingOwner::kSource, key));
  };
  if (config.user.empty()) return bad("user", "required");
  if (config.host.empty()) return bad("host", "required");
  if (config.tables.empty()) return bad("tables", "list at least one \"database.table\"");
  for (const auto& t : config.tables) {
    const auto dot = t.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == t.size() ||
        t.find('.', dot + 1) != std::string::npos) {
      return bad("tables", "'" + t + "': expected \"database.table\" (globs * and ? allowed)");
    }
  }
  detail::TableFilter filter(config.tables);
  for (const auto& t : config.snapshot_tables) {
    const auto dot = t.find('.');
    if (dot == std::string::npos || !filter.captured(t.substr(0, dot), t.substr(dot + 1))) {
      return bad("snapshot.tables", "'" + t + "' is not a captured table");
    }
  }
  const bool mariadb = config.flavor == ServerFlavor::kMariaDb;
  if (config.snapshot_mode == SnapshotMode::kIncremental && !mariadb) {
    return bad("snapshot.mode",
               "incremental snapshots are built for MariaDB only so far (flavor mariadb); "
               "take a blocking snapshot (initial) of a MySQL server");
  }
  if (config.snapshot_mode == SnapshotMode::kIncremental && config.snapshot_signal_table.empty()) {
    return bad("snapshot.signal_table",
               "required by snapshot mode incremental: the \"database.table\" its watermarks "
               "are written to (created when missing)");
  }
  if (!config.snapshot_signal_table.empty()) {
    const auto& t = config.snapshot_signal_table;
    const auto dot = t.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == t.size() ||
        t.find('.', dot + 1) != std::string::npos || t.find_first_of("*?") != std::string::npos) {
      return bad("snapshot.signal_table", "'" + t + "': expected \"database.table\" (no globs)");
    }
    if (filter.captured(t.substr(0, dot), t.substr(dot + 1))) {
      return bad("snapshot.signal_table",
                 "'" + t +
                     "' is one of the captured tables; the watermark table must be a table "
                     "of its own (its writes are never emitted)");
    }
  }
  if (config.source_id.empty()) return bad("source_id", "required");
  if (config.heartbeat_interval_ms == 0) return bad("heartbeat_interval_ms", "at least 1");
  if (config.receive_timeout_ms != 0 && config.receive_timeout_ms <= config.heartbeat_interval_ms) {
    return bad("receive_timeout_ms", "must exceed heartbeat_interval_ms");
  }
  if (config.max_queued_events == 0) config.max_queued_events = 1;
  auto source = std::make_unique<MysqlSource>(std::move(config));
  const MysqlSourceConfig& c = source->config();
  // Incremental snapshots (MariaDB, with a watermark table): the source runs inside the
  // driver. initial_only never streams, so it has nothing to interleave chunks with.
  if (!mariadb || c.snapshot_signal_table.empty() ||
      c.snapshot_mode == SnapshotMode::kInitialOnly) {
    return std::unique_ptr<Source>(std::move(source));
  }
  MysqlSource* raw = source.get();  // owned by the driver, which outlives its backend
  detail::IncrementalHooks hooks;
  hooks.watermarks = raw->watermarks();
  hooks.drained = [raw] { return raw->drained(); };
  hooks.blocking_snapshot_running = [raw] { return raw->blocking_snapshot_running(); };
  IncrementalSnapshotOptions options;
  options.chunk_size = c.snapshot_chunk_size;
  options.id_prefix = c.source_id;
  if (c.snapshot_mode == SnapshotMode::kIncremental) {
    options.tables = c.snapshot_tables.empty() ? c.tables : c.snapshot_tables;
  }
  auto backend = detail::make_incremental_backend(c, std::move(hooks));
  return make_incremental_snapshot_source(std::move(source), std::move(backend),
                                          std::move(options));
}

}  // namespace cppcdc::mysql
