// The incremental snapshot driver (DBLog watermarks), written once for every connector.
//
// Per chunk: low watermark, in-flight set, keyset read, high watermark (all through the
// backend). While the chunk waits, stream events flow on. Each one is placed against the
// bracket by the backend: inside it, the event suppresses the chunk's row for its key (and an
// update missing unchanged columns is completed from the chunk's image of that row, which
// every inside event keeps current); the first event after it splits the batch: the events
// before it, then the chunk, then it and the rest. When the stream reaches the high watermark
// without such an event, the chunk follows the events handed out so far.
//
// The state (tables, cursors, generation) rides on every resumable event as the
// "incremental" member of its resume_state, so the checkpoint stores it in the same record as
// the stream position. A table's cursor moves only when its chunk is handed out, so a restart
// reads at most that one chunk again.

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <algorithm>
#include <deque>
#include <future>
#include <mutex>
#include <unordered_map>

#include "core/progress_log.hpp"
#include "core/text_util.hpp"
#include "cppcdc/incremental_snapshot.hpp"

namespace cppcdc {
namespace {

constexpr const char* kStateKey = "incremental";
constexpr std::size_t kRecentLimit = 1'000'000;
// Between chunks (no snapshot running, paused, or waiting for the stream) the remembered
// transactions are pruned against a fresh in-flight set once there are this many, at most
// once per kIdlePruneInterval.
constexpr std::size_t kIdlePruneAt = 4096;
constexpr auto kIdlePruneInterval = std::chrono::seconds(1);

std::string qualified(const Event& e) { return e.schema ? *e.schema + "." + e.table : e.table; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The key of a row image as one string (length-prefixed values); nullopt when a key column is
// absent or NULL.
std::optional<std::string> key_of(const Row* row, const std::vector<std::string>& key) {
  if (!row) return std::nullopt;
  std::string out;
  for (const auto& k : key) {
    const ColumnValue* c = find_column(*row, k);
    if (!c || !c->text) return std::nullopt;
    out += std::to_string(c->text->size());
    out += ':';
    out += *c->text;
  }
  return out;
}

struct Command {
  enum class Kind { kRequest, kPause, kResume, kStop } kind = Kind::kPause;
  std::vector<std::string> tables;
  std::shared_ptr<std::promise<Status>> done;
  std::uint64_t generation = 0;  // the generation it produced (request, stop)
};

class Control final : public IncrementalSnapshotControl {
 public:
  Status request(const std::vector<std::string>& tables,
                 std::chrono::milliseconds timeout) override {
    if (tables.empty()) {
      return fail(Error::configuration("an incremental snapshot request names no table"));
    }
    auto done = std::make_shared<std::promise<Status>>();
    auto future = done->get_future();
    {
      std::lock_guard lock(mutex_);
      commands_.push_back(Command{Command::Kind::kRequest, tables, done, 0});
    }
    if (future.wait_for(timeout) != std::future_status::ready) {
      std::lock_guard lock(mutex_);
      for (auto it = commands_.begin(); it != commands_.end(); ++it) {
        if (it->done == done) {
          commands_.erase(it);
          return fail(Error::invalid_state(
              "the incremental snapshot request for " + join(tables) + " was not taken within " +
              std::to_string(timeout.count()) +
              " ms: the pipeline is not running or not polling; start `cppcdc run` (or the "
              "runtime's poll loop) and request again"));
        }
      }
    }
    return future.get();  // taken: the driver is answering
  }
  void pause() override { push(Command::Kind::kPause); }
  void resume() override { push(Command::Kind::kResume); }
  void stop() override { push(Command::Kind::kStop); }
  IncrementalSnapshotState state() const override {
    std::lock_guard lock(mutex_);
    return state_;
  }

  std::deque<Command> take() {
    std::lock_guard lock(mutex_);
    std::deque<Command> out;
    out.swap(commands_);
    return out;
  }
  void publish(const IncrementalSnapshotState& s) {
    std::lock_guard lock(mutex_);
    state_ = s;
  }

 private:
  void push(Command::Kind kind) {
    std::lock_guard lock(mutex_);
    commands_.push_back(Command{kind, {}, nullptr, 0});
  }
  mutable std::mutex mutex_;
  std::deque<Command> commands_;
  IncrementalSnapshotState state_;
};

class IncrementalSnapshotSource final : public Source {
 public:
  IncrementalSnapshotSource(std::unique_ptr<Source> inner,
                            std::unique_ptr<IncrementalSnapshotBackend> backend,
                            IncrementalSnapshotOptions options)
      : inner_(std::move(inner)), backend_(std::move(backend)), options_(std::move(options)),
        control_(std::make_shared<Control>()) {
    if (options_.chunk_size == 0) options_.chunk_size = 1;
    if (options_.id_prefix.empty()) options_.id_prefix = inner_->source_id();
  }
  ~IncrementalSnapshotSource() override { close(); }

  std::shared_ptr<Control> control() const { return control_; }

  std::string type() const override { return inner_->type(); }
  std::string source_id() const override { return inner_->source_id(); }
  std::optional<std::string> initial_offset() const override { return inner_->initial_offset(); }
  bool finished() override { return held_.empty() && inner_->finished(); }
  std::shared_ptr<IncrementalSnapshotControl> incremental_snapshot_control() override {
    return control_;
  }
  std::optional<SourceLag> lag() const override { return inner_->lag(); }
  std::shared_ptr<const BlockingSnapshotTracker> blocking_snapshot_tracker() const override {
    return inner_->blocking_snapshot_tracker();
  }

  Status start(const std::optional<CheckpointRecord>& resume) override {
    close();
    std::optional<CheckpointRecord> inner_resume = resume;
    std::optional<IncrementalSnapshotState> saved;
    inner_state_.clear();
    if (resume && !resume->source_state.empty()) {
      auto split = split_state(resume->source_state);
      if (!split) return fail(split.error());
      inner_state_ = std::move(split->first);
      saved = std::move(split->second);
      inner_resume->source_state = inner_state_;
    }
    // The snapshot's tables are checked before the wrapped source starts, so a table that
    // cannot be snapshotted stops a first start before any slot or publication is made.
    CPPCDC_TRY(backend_->open());
    started_ = true;
    state_ = saved.value_or(IncrementalSnapshotState{});
    ++version_;
    mid_tx_ = false;
    // Requests and stops taken in this process that the checkpoint does not know yet (the
    // source was restarted after a connection failure) are applied again.
    const std::uint64_t durable_generation = state_.generation;
    std::optional<bool> paused;
    for (const auto& c : applied_) {
      if (c.kind == Command::Kind::kPause || c.kind == Command::Kind::kResume) {
        paused = c.kind == Command::Kind::kPause;
      } else if (c.generation > durable_generation) {
        if (c.kind == Command::Kind::kStop) {
          apply_stop();
        } else if (auto st = apply_request(c.tables); !st) {
          spdlog::warn("incremental snapshot: the request for {} taken before the reconnect "
                       "cannot be applied again: {}",
                       join(c.tables), st.error().report());
        }
      }
    }
    if (paused) state_.paused = *paused;
    if (!resume && applied_.empty() && !options_.tables.empty()) {
      auto st = apply_request(options_.tables);
      if (!st) {
        return fail(st.error().context(
            "an incremental snapshot reads the snapshot tables (by default every captured "
            "table); list only tables with a primary key there, or take a blocking snapshot "
            "(snapshot mode initial), which reads keyless tables too"));
      }
      // Remembered like a request, so a reconnect before the first checkpoint applies it
      // again under the same generation.
      applied_.push_back(Command{Command::Kind::kRequest, options_.tables, nullptr,
                                 state_.generation});
    }
    // A cursor is only good for the key it was taken over.
    for (const auto& t : state_.tables) {
      if (t.complete) continue;
      auto info = backend_->describe_table(t.table);
      if (!info) {
        return fail(info.error().context(
            "resuming the incremental snapshot of " + t.table +
            " (to drop it: `cppcdc snapshot forget --config <file> " + t.table +
            "` while cppcdc is stopped)"));
      }
      if (t.cursor && info->key != t.key_columns) {
        return fail(Error::configuration(
            "the primary key of " + t.table + " changed since its incremental snapshot cursor "
            "was saved (was (" + join(t.key_columns) + "), now (" + join(info->key) +
            ")), so the cursor cannot continue: run `cppcdc snapshot forget --config <file> " +
            t.table + "` while cppcdc is stopped, start it, then `cppcdc snapshot request " +
            t.table + "` to read the table again from its start"));
      }
      infos_[t.table] = std::move(*info);
    }
    CPPCDC_TRY(inner_->start(inner_resume));
    last_offset_ = resume ? resume->offset : inner_->initial_offset().value_or("");
    if (!state_.tables.empty()) {
      spdlog::info("incremental snapshot {}: {}, {} to go, {} so far", state_.snapshot_id,
                   state_.status(), detail::counted(state_.tables_remaining(), "table"),
                   detail::counted(state_.rows_emitted(), "row"));
    }
    control_->publish(state_);
    return ok();
  }

  Status poll(std::vector<Event>& out, std::size_t max_events,
              std::chrono::milliseconds wait) override {
    CPPCDC_TRY(apply_commands());
    // While a chunk waits, one poll gathers the stream until the chunk is out (for a bounded
    // time), so a chunk costs one delivery rather than several. It stops after one chunk:
    // a batch never holds two, so a crash before its acknowledgement re-reads one chunk.
    const auto deadline =
        std::chrono::steady_clock::now() + std::min(wait, std::chrono::milliseconds(200));
    Status st = ok();
    // `out` may already hold events (the runtime's redeliveries): up to max_events more.
    const std::size_t base = out.size();
    const std::size_t limit = base + max_events;
    drain_held(out, limit);
    bool chunk_out = false;
    while (st && out.size() < limit && held_.empty() && !chunk_out) {
      if (!chunk_ && runnable() && std::chrono::steady_clock::now() >= retry_at_) {
        CPPCDC_TRY(begin_chunk());
        // Ask for the stream's position now, before waiting on the stream for the first
        // time: the answer then arrives while that wait runs instead of after it.
        if (chunk_ && !mid_tx_ && backend_->stream_reached(chunk_->high)) {
          finish_chunk();
          chunk_out = true;
          drain_held(out, limit);
          break;
        }
      }
      if (!chunk_) {
        if (out.size() > base) break;
        const std::size_t first = out.size();
        st = inner_->poll(out, limit - out.size(), wait);
        for (std::size_t i = first; i < out.size(); ++i) hand_out(out[i]);
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline && out.size() > base) break;
      // The chunk waits for the stream to pass its high watermark.
      std::vector<Event> batch;
      st = inner_->poll(batch, limit - out.size(),
                        // Short: progress without events (a keepalive) wakes nobody.
                        std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - now),
                                   std::chrono::milliseconds(0), std::chrono::milliseconds(1)));
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (chunk_) {
          const BracketPosition where = classify(batch[i]);
          if (where == BracketPosition::kAfter) {
            // Split: what came before is out, the chunk goes next, then this event and the
            // rest.
            finish_chunk();
            for (std::size_t j = i; j < batch.size(); ++j) {
              held_.push_back(Held{std::move(batch[j]), true});
            }
            batch.clear();
            break;
          }
          if (where == BracketPosition::kInside) absorb(batch[i]);
        }
        hand_out(batch[i]);
        out.push_back(std::move(batch[i]));
      }
      if (chunk_ && !mid_tx_ && st && backend_->stream_reached(chunk_->high)) finish_chunk();
      chunk_out = !chunk_;
      drain_held(out, limit);
      if (chunk_ && std::chrono::steady_clock::now() >= deadline) break;
    }
    publish();
    // A chunk goes out in this batch: read the next one while the batch is delivered.
    if (st && chunk_out) start_prefetch();
    return st;
  }

  Status confirm(std::string_view offset) override { return inner_->confirm(offset); }

  std::optional<std::string> idle_offset() override {
    if (!held_.empty() || mid_tx_) return std::nullopt;
    if (auto idle = inner_->idle_offset()) {
      last_offset_ = *idle;
      return idle;
    }
    // A state change no event has carried yet (a table completed, a stop) is saved at the
    // position everything handed out has reached.
    if (carried_version_ != version_ && !last_offset_.empty()) return last_offset_;
    return std::nullopt;
  }

  std::optional<std::string> idle_state() override {
    carried_version_ = version_;
    return merged_state();
  }

  void recycle(std::vector<Event>&& events) override { inner_->recycle(std::move(events)); }

  void close() override {
    drop_prefetch();
    chunk_.reset();
    held_.clear();
    progress_.reset();
    infos_.clear();
    if (started_) {
      backend_->close();
      started_ = false;
    }
    inner_->close();
  }

 private:
  struct Entry {
    std::size_t index = 0;          // into Chunk::rows
    bool suppressed = false;
    std::optional<Row> shadow;      // the row as the bracket's events left it; nullopt: deleted
  };
  struct Chunk {
    std::string table;
    std::vector<std::string> key;
    Watermark low;
    std::string in_flight;
    Watermark high;
    std::vector<Event> rows;
    std::unordered_map<std::string, Entry> entries;  // by key_of
    std::vector<std::string> last_key;               // the cursor after this chunk
    bool last = false;                                // fewer rows than asked for
  };
  struct Past {
    std::uint64_t tx_id = 0;
    LogPosition position;
  };
  struct Held {
    Event event;
    bool from_stream;  // handed out through hand_out() when it leaves
  };

  static Result<std::pair<std::string, std::optional<IncrementalSnapshotState>>> split_state(
      const std::string& text) {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(text, ec);
    if (ec || !v.is_object()) return std::pair{text, std::optional<IncrementalSnapshotState>()};
    auto& o = v.as_object();
    const auto* mine = o.if_contains(kStateKey);
    if (!mine) return std::pair{text, std::optional<IncrementalSnapshotState>()};
    auto state = IncrementalSnapshotState::from_json(boost::json::serialize(*mine));
    if (!state) return fail(state.error());
    o.erase(kStateKey);
    return std::pair{o.empty() ? std::string() : boost::json::serialize(o),
                     std::optional<IncrementalSnapshotState>(std::move(*state))};
  }

  const std::string& merged_state() {
    if (state_.tables.empty() && state_.generation == 0) return inner_state_;
    if (merged_version_ == version_ && merged_inner_ == inner_state_) return merged_;
    boost::json::object o;
    if (!inner_state_.empty()) {
      boost::system::error_code ec;
      auto v = boost::json::parse(inner_state_, ec);
      if (!ec && v.is_object()) o = std::move(v.as_object());
    }
    o[kStateKey] = boost::json::parse(state_.to_json());
    merged_ = boost::json::serialize(o);
    merged_version_ = version_;
    merged_inner_ = inner_state_;
    return merged_;
  }

  void hand_out(Event& e) {
    ++handed_out_;
    mid_tx_ = e.transaction && e.transaction->event_index + 1 < e.transaction->total_events;
    if (e.transaction && e.transaction->event_index == 0 && !e.log_position.empty()) remember(e);
    if (e.resume_offset.empty()) return;
    last_offset_ = e.resume_offset;
    inner_state_ = std::move(e.resume_state);
    e.resume_state = merged_state();
    carried_version_ = version_;
  }

  // Remembers the transactions handed out (one entry each), while a later chunk's in-flight
  // set could still list them (see may_be_in_flight_later).
  void remember(const Event& e) {
    recent_.push_back(Past{e.transaction->tx_id, e.log_position});
    if (recent_.size() >= kIdlePruneAt) prune_between_chunks();
    if (recent_.size() > kRecentLimit) {
      if (!recent_warned_ && started_chunks_) {
        spdlog::warn("incremental snapshot: more than {} transactions handed out since the last "
                     "chunk are remembered; forgetting the oldest",
                     kRecentLimit);
        recent_warned_ = true;
      }
      recent_.pop_front();
    }
  }

  // Chunks prune the remembered transactions against their own in-flight sets; while no
  // chunk is read (no snapshot running, or paused) nothing would, and every transaction the
  // stream hands out would be kept. Only those a later chunk's in-flight set could still list
  // matter, and a fresh in-flight set tells which: the rest are forgotten here. Skipped while a
  // chunk or a read ahead holds the backend.
  void prune_between_chunks() {
    if (chunk_ || prefetch_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_idle_prune_) return;
    next_idle_prune_ = now + kIdlePruneInterval;
    auto set = backend_->in_flight();
    if (!set) {
      spdlog::debug("incremental snapshot: cannot read the transactions in flight to forget "
                    "old ones ({}); trying again later",
                    set.error().report());
      return;
    }
    const std::size_t before = recent_.size();
    std::erase_if(recent_, [&](const Past& p) {
      return !backend_->may_be_in_flight_later(stub_of(p), *set);
    });
    spdlog::debug("incremental snapshot: {} of {} remembered transactions can no longer be in "
                  "flight for a later chunk; forgotten",
                  before - recent_.size(), before);
  }

  static Event stub_of(const Past& p) {
    Event stub;
    stub.transaction = TransactionMetadata{p.tx_id, 1, 0};
    stub.log_position = p.position;
    return stub;
  }

  // Moves held events to `out` while it holds fewer than `limit` events in all.
  void drain_held(std::vector<Event>& out, std::size_t limit) {
    while (!held_.empty() && out.size() < limit) {
      Held h = std::move(held_.front());
      held_.pop_front();
      if (h.from_stream) hand_out(h.event);
      out.push_back(std::move(h.event));
    }
    publish();
  }

  void publish() {
    if (published_version_ == version_) return;
    published_version_ = version_;
    control_->publish(state_);
  }

  bool runnable() const { return !state_.paused && has_unfinished(); }

  // The table the next chunk comes from: the first one not complete, in request order.
  IncrementalSnapshotTableState* next_table() {
    for (auto& t : state_.tables) {
      if (!t.complete) return &t;
    }
    return nullptr;
  }

  IncrementalSnapshotTableState* table_state(const std::string& name) {
    for (auto& t : state_.tables) {
      if (t.table == name) return &t;
    }
    return nullptr;
  }

  Status apply_commands() {
    auto commands = control_->take();
    if (!commands.empty()) drop_prefetch();  // a request describes tables on the backend
    for (auto& c : commands) {
      switch (c.kind) {
        case Command::Kind::kRequest: {
          auto st = apply_request(c.tables);
          if (st) {
            c.generation = state_.generation;
            applied_.push_back(Command{c.kind, c.tables, nullptr, c.generation});
          }
          if (c.done) c.done->set_value(st);
          break;
        }
        case Command::Kind::kPause:
        case Command::Kind::kResume:
          state_.paused = c.kind == Command::Kind::kPause;
          ++version_;
          applied_.push_back(Command{c.kind, {}, nullptr, 0});
          spdlog::info("incremental snapshot {}: {}", state_.snapshot_id,
                       state_.paused ? "paused (a chunk in progress completes)" : "resumed");
          break;
        case Command::Kind::kStop:
          apply_stop();
          applied_.push_back(Command{c.kind, {}, nullptr, state_.generation});
          break;
      }
    }
    publish();
    return ok();
  }

  Status apply_request(const std::vector<std::string>& requested) {
    if (blocking_snapshot_running()) {
      return fail(Error::invalid_state(
          "the initial (blocking) snapshot is still reading the tables, and reads them whole; "
          "request an incremental snapshot once it is done (the log says \"snapshot ... "
          "complete\")"));
    }
    std::vector<SnapshotTableInfo> infos;
    for (const auto& r : requested) {
      auto names = backend_->resolve(r);
      if (!names) return fail(names.error().context("incremental snapshot request for " + r));
      for (const auto& name : *names) {
        auto info = backend_->describe_table(name);
        if (!info) return fail(info.error().context("incremental snapshot request for " + r));
        if (info->key.empty()) {
          return fail(Error::configuration(
              "table " + name + " has no primary key: an incremental snapshot reads in chunks "
              "by primary key; add one (ALTER TABLE ... ADD PRIMARY KEY), or leave the table "
              "out"));
        }
        infos.push_back(std::move(*info));
      }
    }
    if (!has_unfinished()) {
      state_.tables.clear();  // the previous snapshot is over: start a new one
      state_.snapshot_id.clear();
    }
    ++state_.generation;
    state_.stopped = false;
    if (state_.snapshot_id.empty()) {
      state_.snapshot_id = options_.id_prefix + "-incremental-" + std::to_string(state_.generation);
    }
    for (auto& info : infos) {
      IncrementalSnapshotTableState fresh;
      fresh.table = info.table;
      fresh.key_columns = info.key;
      fresh.generation = state_.generation;
      fresh.estimated_rows = info.estimated_rows;
      if (auto* t = table_state(info.table)) {
        *t = fresh;  // requested again: starts over under the new generation
        if (chunk_ && chunk_->table == info.table) chunk_.reset();
        if (progress_table_ == info.table) progress_.reset();
      } else {
        state_.tables.push_back(fresh);
      }
      infos_[info.table] = std::move(info);
    }
    ++version_;
    spdlog::info("incremental snapshot {}: {} requested (generation {}, chunks of {} rows)",
                 state_.snapshot_id, join(requested), state_.generation, options_.chunk_size);
    return ok();
  }

  // The wrapped source reports a blocking snapshot in progress in its own state, which only
  // its backend reads.
  bool blocking_snapshot_running() const {
    return backend_->blocking_snapshot_running(inner_state_);
  }

  bool has_unfinished() const {
    for (const auto& t : state_.tables) {
      if (!t.complete) return true;
    }
    return false;
  }

  void apply_stop() {
    const std::size_t dropped = state_.tables_remaining();
    state_.tables.clear();
    ++state_.generation;
    state_.stopped = true;
    state_.paused = false;
    chunk_.reset();
    progress_.reset();
    ++version_;
    spdlog::info("incremental snapshot {}: stopped, {} dropped", state_.snapshot_id,
                 detail::counted(dropped, "unfinished table"));
  }

  // What one chunk reads from the backend, in this order: the low watermark, the in-flight
  // set, the rows, the high watermark.
  struct ChunkRead {
    Watermark low;
    std::string in_flight;
    std::vector<Event> rows;
    Watermark high;
  };
  static Result<ChunkRead> read_chunk(IncrementalSnapshotBackend& backend,
                                      const SnapshotTableInfo& info,
                                      const std::optional<std::vector<std::string>>& cursor,
                                      std::size_t chunk_size) {
    ChunkRead r;
    auto low = backend.current_position();
    if (!low) return fail(low.error().context("reading the low watermark for " + info.table));
    auto fence = backend.in_flight();
    if (!fence) return fail(fence.error().context("reading the in-flight transactions"));
    auto rows = backend.fetch_chunk(info, cursor, chunk_size);
    if (!rows) return fail(rows.error().context("incremental snapshot chunk of " + info.table));
    auto high = backend.current_position();
    if (!high) return fail(high.error().context("reading the high watermark for " + info.table));
    r.low = std::move(*low);
    r.in_flight = std::move(*fence);
    r.rows = std::move(*rows);
    r.high = std::move(*high);
    return r;
  }

  // Reading the next chunk ahead. When a poll hands out a finished chunk and nothing else is
  // pending, the next chunk's read starts on a thread of its own while the consumer writes,
  // flushes and acknowledges the batch, and the next poll takes it. That is the same order of
  // events as reading it at the start of the next poll: between the two, nothing is handed
  // out. A read is used only if that still holds when it is taken (no event handed out since
  // it started, same table, cursor and generation); otherwise it is dropped and the chunk is
  // read again. While a read is under way nothing else touches the backend: every other use
  // (commands, close) waits for it first.
  struct Prefetch {
    std::string table;
    std::optional<std::vector<std::string>> cursor;
    std::uint64_t generation = 0;
    std::uint64_t handed_out = 0;  // handed_out_ when it started
    std::future<Result<ChunkRead>> read;
  };

  void start_prefetch() {
    if (prefetch_ || chunk_ || !held_.empty() || !runnable() ||
        std::chrono::steady_clock::now() < retry_at_) {
      return;
    }
    const IncrementalSnapshotTableState* t = next_table();
    if (!t) return;
    auto info = infos_.find(t->table);
    if (info == infos_.end()) return;  // described (synchronously) by the next begin_chunk
    Prefetch p;
    p.table = t->table;
    p.cursor = t->cursor;
    p.generation = t->generation;
    p.handed_out = handed_out_;
    p.read = std::async(std::launch::async,
                        [backend = backend_.get(), info = info->second, cursor = t->cursor,
                         n = options_.chunk_size] { return read_chunk(*backend, info, cursor, n); });
    prefetch_ = std::move(p);
  }

  std::optional<Result<ChunkRead>> take_prefetch(const IncrementalSnapshotTableState& t) {
    if (!prefetch_) return std::nullopt;
    Prefetch p = std::move(*prefetch_);
    prefetch_.reset();
    Result<ChunkRead> r = p.read.get();
    if (p.table != t.table || p.cursor != t.cursor || p.generation != t.generation ||
        p.handed_out != handed_out_) {
      return std::nullopt;
    }
    return r;
  }

  // Waits for a read under way and drops it (before anything else uses the backend).
  void drop_prefetch() {
    if (!prefetch_) return;
    (void)prefetch_->read.get();
    prefetch_.reset();
  }

  Status begin_chunk() {
    IncrementalSnapshotTableState* t = next_table();
    if (!t) return ok();
    auto info_it = infos_.find(t->table);
    if (info_it == infos_.end()) {
      drop_prefetch();  // not for this table (it reads only described ones); the backend is ours
      auto info = backend_->describe_table(t->table);
      if (!info) return fail(info.error().context("incremental snapshot of " + t->table));
      if (t->cursor && info->key != t->key_columns) {
        return fail(Error::configuration(
            "the primary key of " + t->table + " changed during its incremental snapshot (was (" +
            join(t->key_columns) + "), now (" + join(info->key) + ")): request the table again "
            "(`cppcdc snapshot request " + t->table + "`) to read it from its start"));
      }
      info_it = infos_.emplace(t->table, std::move(*info)).first;
    }
    const SnapshotTableInfo& info = info_it->second;
    if (progress_table_ != t->table || !progress_) {
      progress_.emplace(t->table, info.estimated_rows > 0 ? info.estimated_rows : t->estimated_rows,
                        t->rows);
      progress_table_ = t->table;
    }
    Chunk c;
    c.table = t->table;
    c.key = info.key;
    std::optional<Result<ChunkRead>> prefetched = take_prefetch(*t);
    Result<ChunkRead> read = prefetched ? std::move(*prefetched)
                                        : read_chunk(*backend_, info, t->cursor,
                                                     options_.chunk_size);
    if (!read) return fail(read.error());
    c.low = std::move(read->low);
    c.in_flight = std::move(read->in_flight);
    c.high = std::move(read->high);
    c.rows = std::move(read->rows);
    c.last = c.rows.size() < options_.chunk_size;
    for (std::size_t i = 0; i < c.rows.size(); ++i) {
      const Row* after = c.rows[i].after ? &*c.rows[i].after : nullptr;
      auto key = key_of(after, c.key);
      if (!key) {
        return fail(Error::invalid_data("a chunk row of " + t->table +
                                        " lacks a value for a primary-key column (" +
                                        join(c.key) + ")"));
      }
      c.entries[*key] = Entry{i, false, *after};
    }
    // A transaction already handed over that this chunk's read could not see (its commit
    // was in the log, but it was not yet visible): the chunk may hold rows older than what
    // the consumer has. Read the chunk again once that transaction is visible.
    ++started_chunks_;
    for (auto it = recent_.begin(); it != recent_.end();) {
      const Event stub = stub_of(*it);
      if (backend_->event_in_bracket(stub, it->position, c.low, c.in_flight, c.high) ==
          BracketPosition::kInside) {
        if (waiting_for_tx_ != it->tx_id) {
          waiting_for_tx_ = it->tx_id;
          spdlog::info("incremental snapshot: transaction {} was handed over but is not yet "
                       "visible to new reads; chunk {} of {} waits until it is",
                       it->tx_id, t->chunks, t->table);
        }
        retry_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
        return ok();
      }
      it = backend_->may_be_in_flight_later(stub, c.in_flight) ? std::next(it) : recent_.erase(it);
    }
    if (!c.rows.empty()) {
      const Row& last = *c.rows.back().after;
      for (const auto& k : c.key) c.last_key.push_back(*find_column(last, k)->text);
    }
    if (c.rows.empty()) {
      // Nothing left to read: no bracket to wait for.
      t->complete = true;
      ++version_;
      progress_->update(t->rows, true);
      progress_.reset();
      publish();
      return ok();
    }
    chunk_ = std::move(c);
    return ok();
  }

  BracketPosition classify(const Event& e) const {
    auto position = backend_->position_of_event(e);
    if (!position) return BracketPosition::kBefore;
    return backend_->event_in_bracket(e, *position, chunk_->low, chunk_->in_flight,
                                      chunk_->high);
  }

  Entry* entry(const std::optional<std::string>& key) {
    if (!key) return nullptr;
    auto it = chunk_->entries.find(*key);
    return it == chunk_->entries.end() ? nullptr : &it->second;
  }

  // An event the chunk's read may not have seen: its key's chunk row is suppressed, and an
  // update that left columns out is completed from the row's image.
  void absorb(Event& e) {
    if (qualified(e) != chunk_->table) return;
    switch (e.op) {
      case Operation::kSchemaChange:
        spdlog::info("incremental snapshot: {} changed shape while a chunk was read; reading "
                     "that chunk again",
                     chunk_->table);
        infos_.erase(chunk_->table);
        chunk_.reset();
        return;
      case Operation::kTruncate:
        for (auto& [k, en] : chunk_->entries) {
          en.suppressed = true;
          en.shadow.reset();
        }
        return;
      case Operation::kInsert:
        if (Entry* en = entry(key_of(e.after ? &*e.after : nullptr, chunk_->key))) {
          en->suppressed = true;
          en->shadow = e.after;
        }
        return;
      case Operation::kDelete:
        if (Entry* en = entry(key_of(e.before.row(), chunk_->key))) {
          en->suppressed = true;
          en->shadow.reset();
        }
        return;
      case Operation::kUpdate: {
        const auto new_key = key_of(e.after ? &*e.after : nullptr, chunk_->key);
        const auto old_key = key_of(e.before.row(), chunk_->key);
        if (!new_key) {
          spdlog::warn("incremental snapshot: an update of {} arrived without its key columns "
                       "({}); its chunk row cannot be told apart",
                       chunk_->table, join(chunk_->key));
          return;
        }
        const bool moved = old_key && *old_key != *new_key;
        Entry* from = entry(moved ? old_key : new_key);
        Entry* to = entry(new_key);
        if (!e.unavailable_columns.empty() && from && from->shadow) repair(e, *from->shadow);
        if (from) {
          from->suppressed = true;
          if (moved) from->shadow.reset();
        }
        if (to) {
          to->suppressed = true;
          if (e.after && e.unavailable_columns.empty()) {
            to->shadow = e.after;
          } else if (to->shadow && e.after) {
            for (const auto& c : *e.after) {
              for (auto& s : *to->shadow) {
                if (s.name == c.name) s = c;
              }
            }
          }
        }
        return;
      }
      default:
        return;
    }
  }

  // Fills the columns an update left out (unchanged TOAST) from the chunk's image of the row.
  void repair(Event& e, const Row& image) {
    if (!e.after) return;
    Row filled;
    std::vector<std::string> still_missing;
    std::size_t taken = 0;
    for (const auto& col : image) {
      if (const ColumnValue* v = find_column(*e.after, col.name)) {
        filled.push_back(*v);
        ++taken;
      } else if (std::find(e.unavailable_columns.begin(), e.unavailable_columns.end(),
                           col.name) != e.unavailable_columns.end()) {
        filled.push_back(col);
      }
    }
    if (taken != e.after->size()) {
      // The event has columns the chunk did not read (the table changed): leave it alone.
      spdlog::warn("incremental snapshot: an update of {} has columns the chunk did not read; "
                   "its unchanged columns ({}) stay unavailable",
                   chunk_->table, join(e.unavailable_columns));
      return;
    }
    for (const auto& name : e.unavailable_columns) {
      if (!find_column(filled, name)) still_missing.push_back(name);
    }
    if (!still_missing.empty()) {
      spdlog::warn("incremental snapshot: an update of {} leaves out columns the chunk did not "
                   "read ({}); they stay unavailable",
                   chunk_->table, join(still_missing));
    }
    e.after = std::move(filled);
    e.unavailable_columns = std::move(still_missing);
  }

  void finish_chunk() {
    Chunk c = std::move(*chunk_);
    chunk_.reset();
    IncrementalSnapshotTableState* t = table_state(c.table);
    if (!t) return;  // stopped meanwhile
    std::size_t emitted = 0;
    std::size_t suppressed = 0;
    for (auto& row : c.rows) {
      const auto key = key_of(&*row.after, c.key);
      if (c.entries[*key].suppressed) {
        ++suppressed;
        continue;
      }
      row.snapshot = SnapshotMetadata{state_.snapshot_id, t->chunks, false};
      std::string key_json = "[";
      for (const auto& k : c.key) {
        if (key_json.size() > 1) key_json += ',';
        key_json += boost::json::serialize(boost::json::value(*find_column(*row.after, k)->text));
      }
      key_json += ']';
      row.source.offset =
          "incremental:" + std::to_string(t->generation) + ":" + c.table + ":" + key_json;
      held_.push_back(Held{std::move(row), false});
      ++emitted;
    }
    t->cursor = c.last_key;
    ++t->chunks;
    t->rows += emitted;
    t->complete = c.last;
    ++version_;
    if (emitted > 0 && !last_offset_.empty()) {
      Event& last = held_.back().event;
      last.resume_offset = last_offset_;
      last.resume_state = merged_state();
      carried_version_ = version_;
    }
    if (suppressed > 0) {
      spdlog::debug("incremental snapshot: chunk {} of {}: {} row(s) superseded by the stream",
                    t->chunks - 1, c.table, suppressed);
    }
    if (progress_) progress_->update(t->rows, t->complete);
    if (t->complete) {
      progress_.reset();
      if (state_.is_complete()) {
        spdlog::info("incremental snapshot {} complete: {}, {}", state_.snapshot_id,
                     detail::counted(state_.tables.size(), "table"),
                     detail::counted(state_.rows_emitted(), "row"));
      }
    }
  }

  std::unique_ptr<Source> inner_;
  std::unique_ptr<IncrementalSnapshotBackend> backend_;
  IncrementalSnapshotOptions options_;
  std::shared_ptr<Control> control_;
  bool started_ = false;

  IncrementalSnapshotState state_;
  std::uint64_t version_ = 1;            // bumped on every change of state_
  std::uint64_t carried_version_ = 0;    // the version the last handed-out position carried
  std::uint64_t published_version_ = 0;
  std::string inner_state_;              // the wrapped source's own resume_state
  std::string merged_;
  std::string merged_inner_;
  std::uint64_t merged_version_ = 0;
  std::string last_offset_;              // the last resumable position handed out
  bool mid_tx_ = false;                  // the last event handed out is not its transaction's last

  std::vector<Command> applied_;         // commands taken in this process, in order
  std::unordered_map<std::string, SnapshotTableInfo> infos_;
  std::optional<Chunk> chunk_;
  std::uint64_t handed_out_ = 0;         // stream events handed out so far (see Prefetch)
  std::optional<Prefetch> prefetch_;     // destroyed before backend_ (declared after it)
  std::deque<Held> held_;
  std::deque<Past> recent_;              // see remember()
  std::chrono::steady_clock::time_point next_idle_prune_;  // see prune_between_chunks()
  bool recent_warned_ = false;
  std::uint64_t started_chunks_ = 0;
  std::chrono::steady_clock::time_point retry_at_;
  std::uint64_t waiting_for_tx_ = 0;
  std::optional<detail::ProgressLog> progress_;
  std::string progress_table_;
};

}  // namespace

std::unique_ptr<Source> make_incremental_snapshot_source(
    std::unique_ptr<Source> inner, std::unique_ptr<IncrementalSnapshotBackend> backend,
    IncrementalSnapshotOptions options, std::shared_ptr<IncrementalSnapshotControl>* control) {
  auto source = std::make_unique<IncrementalSnapshotSource>(std::move(inner), std::move(backend),
                                                            std::move(options));
  if (control) *control = source->control();
  return source;
}

}  // namespace cppcdc
