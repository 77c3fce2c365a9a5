// The incremental snapshot driver against a scripted stream and an in-memory table: the
// watermark bracket, the batch split, TOAST repair, generations, control and resume. The
// database half is faked here on purpose (the driver is source-agnostic); the PostgreSQL
// backend is tested against a real server in tests/integration/pg_incremental_test.cpp.

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <thread>

#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/runtime.hpp"
#include "wait_until.hpp"

using namespace cppcdc;
using cppcdc::test::wait_until;
using namespace std::chrono_literals;

namespace {

Row row(int id, const std::string& v, const std::string& big = "") {
  Row r{ColumnValue{"id", std::to_string(id)}, ColumnValue{"v", v}};
  if (!big.empty()) r.push_back(ColumnValue{"big", big});
  return r;
}

// The fake stream's positions are small integers, carried the way a connector would.
LogPosition at(std::uint64_t position) {
  return position == 0 ? LogPosition() : LogPosition::from_u64(position);
}
std::uint64_t number(const LogPosition& position) { return position.as_u64().value_or(0); }

Event change(Operation op, int id, const std::string& v, std::uint64_t position,
             std::string resume = "") {
  Event e;
  e.op = op;
  e.schema = "public";
  e.table = "t";
  e.primary_key = std::vector<std::string>{"id"};
  if (op == Operation::kDelete) {
    e.before = BeforeKeyOnly{Row{ColumnValue{"id", std::to_string(id)}}};
  } else {
    e.after = row(id, v, "B" + v);
  }
  e.log_position = at(position);
  e.transaction = TransactionMetadata{position, 1, 0};
  e.resume_offset = resume.empty() ? "0/" + std::to_string(position) : resume;
  return e;
}

struct Stream final : Source {
  std::deque<Event> queue;
  std::optional<CheckpointRecord> started_with;
  std::string type() const override { return "fake"; }
  std::string source_id() const override { return "slot"; }
  Status start(const std::optional<CheckpointRecord>& resume) override {
    started_with = resume;
    return ok();
  }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    // Appends up to `max` events (the Source contract), whatever `out` already holds.
    for (std::size_t n = 0; !queue.empty() && n < max; ++n) {
      out.push_back(queue.front());
      queue.pop_front();
    }
    return ok();
  }
  Status confirm(std::string_view) override { return ok(); }
  std::optional<std::string> initial_offset() const override { return "0/1"; }
  void close() override {}
};

struct Table final : IncrementalSnapshotBackend {
  std::map<int, Row> rows;                  // the table as a chunk read sees it
  std::vector<std::string> key = {"id"};
  std::deque<std::uint64_t> positions;      // watermarks to hand out, in order
  std::uint64_t reached = 0;                // the stream has passed this position
  std::vector<std::optional<std::vector<std::string>>> cursors;  // each fetch's cursor
  std::atomic<int> fetches{0};  // chunk reads done (a read ahead runs on a thread of its own)
  // Waits (up to 10 s) until `n` chunk reads are done.
  bool wait_for_fetches(int n) const {
    return wait_until([&] { return fetches.load() >= n; }, 10s, 1ms);
  }
  Status open() override { return ok(); }
  void close() override {}
  Result<SnapshotTableInfo> describe_table(const std::string& t) override {
    if (t != "public.t") return fail(Error::configuration("table " + t + " does not exist"));
    return SnapshotTableInfo{t, key, static_cast<double>(rows.size())};
  }
  Result<Watermark> current_position() override {
    const std::uint64_t p = positions.empty() ? 1000 : positions.front();
    if (!positions.empty()) positions.pop_front();
    return Watermark{at(p), {}};
  }
  Result<std::vector<Event>> fetch_chunk(const SnapshotTableInfo&,
                                         const std::optional<std::vector<std::string>>& cursor,
                                         std::size_t limit) override {
    cursors.push_back(cursor);
    std::vector<Event> out;
    for (auto it = cursor ? rows.upper_bound(std::stoi((*cursor)[0])) : rows.begin();
         it != rows.end() && out.size() < limit; ++it) {
      Event e;
      e.op = Operation::kRead;
      e.schema = "public";
      e.table = "t";
      e.primary_key = key;
      e.after = it->second;
      out.push_back(std::move(e));
    }
    ++fetches;  // done with `rows`: a test may change it from here on
    return out;
  }
  // The contract: the stream is past `high` and every event at or before it has been handed
  // over by the stream's poll() (one still queued there has not).
  const std::deque<Event>* stream_queue = nullptr;
  bool stream_reached(const Watermark& high) override {
    if (reached < number(high.position)) return false;
    if (stream_queue) {
      for (const auto& e : *stream_queue) {
        if (!e.log_position.empty() && number(e.log_position) <= number(high.position)) {
          return false;
        }
      }
    }
    return true;
  }

  // An in-flight set as a list of transaction ids ("7,9"), like PostgreSQL's xip.
  std::string in_flight_set;
  Result<std::string> in_flight() override { return in_flight_set; }
  static bool listed(const Event& e, const std::string& set) {
    return e.transaction && ("," + set + ",").find("," + std::to_string(e.transaction->tx_id) +
                                                   ",") != std::string::npos;
  }
  BracketPosition event_in_bracket(const Event& e, const LogPosition& position,
                                   const Watermark& low, const std::string& set,
                                   const Watermark& high) const override {
    auto ordinal = IncrementalSnapshotBackend::event_in_bracket(e, position, low, set, high);
    if (ordinal == BracketPosition::kBefore && listed(e, set)) return BracketPosition::kInside;
    return ordinal;
  }
  // The wrapped source (Stream) keeps a blocking snapshot's progress under "snapshot", as
  // the PostgreSQL source does.
  bool blocking_snapshot_running(std::string_view state) const override {
    return state.find("\"snapshot\"") != std::string_view::npos;
  }
  bool may_be_in_flight_later(const Event& e, const std::string& set) const override {
    return listed(e, set);
  }
};

struct Harness {
  Stream* stream = nullptr;
  Table* table = nullptr;
  std::shared_ptr<IncrementalSnapshotControl> control;
  std::unique_ptr<Source> source;

  explicit Harness(std::uint32_t chunk_size, std::vector<std::string> tables = {"public.t"}) {
    auto s = std::make_unique<Stream>();
    auto t = std::make_unique<Table>();
    stream = s.get();
    table = t.get();
    table->stream_queue = &stream->queue;
    IncrementalSnapshotOptions options;
    options.chunk_size = chunk_size;
    options.tables = std::move(tables);
    source = make_incremental_snapshot_source(std::move(s), std::move(t), options, &control);
  }
  std::vector<Event> poll(std::size_t max = 100) {
    std::vector<Event> out;
    EXPECT_TRUE(source->poll(out, max, std::chrono::milliseconds(0)));
    return out;
  }
};

// "r:1" for a read of id 1, "u:2" for an update, "i:9", "d:3".
std::vector<std::string> names(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    const Row* r = e.after ? &*e.after : e.before.row();
    out.push_back(std::string(to_string(e.op)).substr(0, 1) + ":" + *find_column(*r, "id")->text);
  }
  return out;
}

std::vector<std::string> expected(std::initializer_list<const char*> v) {
  return std::vector<std::string>(v.begin(), v.end());
}

TEST(IncrementalSnapshot, StraddlingBatchIsSplitIntoHeadChunkTail) {
  Harness h(10);
  for (int id = 1; id <= 3; ++id) h.table->rows[id] = row(id, "old", "Bold");
  h.table->positions = {100, 200};
  ASSERT_TRUE(h.source->start(std::nullopt));
  // One batch: an update inside the bracket (150), then two events past it (250, 260).
  h.stream->queue = {change(Operation::kUpdate, 1, "new1", 150),
                     change(Operation::kUpdate, 2, "new2", 250),
                     change(Operation::kInsert, 9, "new9", 260)};
  const auto out = h.poll();
  // Head (the update of 1 wins over its chunk row), chunk, then the tail: the chunk row of 2
  // lands before the newer update of 2, never after it.
  EXPECT_EQ(names(out), expected({"u:1", "r:2", "r:3", "u:2", "i:9"}));
  EXPECT_EQ(*find_column(*out[3].after, "v")->text, "new2");
  const auto state = h.control->state();
  ASSERT_EQ(state.tables.size(), 1u);
  EXPECT_EQ(state.tables[0].rows, 2u);
  EXPECT_TRUE(state.tables[0].complete);
  EXPECT_TRUE(state.is_complete());
}

TEST(IncrementalSnapshot, ChunkWaitsForTheStreamToPassTheHighWatermark) {
  Harness h(10);
  h.table->rows[1] = row(1, "old", "Bold");
  h.table->positions = {100, 200};
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_TRUE(h.poll().empty());  // the stream has not reached 200 yet
  h.stream->queue = {change(Operation::kUpdate, 7, "x", 150)};
  EXPECT_EQ(names(h.poll()), expected({"u:7"}));
  h.table->reached = 200;
  const auto out = h.poll();
  EXPECT_EQ(names(out), expected({"r:1"}));
  // The chunk row is a read with snapshot metadata, and its offset names the generation.
  EXPECT_EQ(out[0].op, Operation::kRead);
  ASSERT_TRUE(out[0].snapshot);
  EXPECT_EQ(out[0].snapshot->snapshot_id, "slot-incremental-1");
  EXPECT_FALSE(out[0].snapshot->is_last_chunk);
  EXPECT_EQ(out[0].source.offset, "incremental:1:public.t:[\"1\"]");
}

TEST(IncrementalSnapshot, EventsInsideTheBracketSuppressTheirChunkRows) {
  Harness h(10);
  for (int id = 1; id <= 4; ++id) h.table->rows[id] = row(id, "old", "Bold");
  h.table->positions = {100, 200};
  ASSERT_TRUE(h.source->start(std::nullopt));
  h.stream->queue = {change(Operation::kDelete, 2, "", 120),
                     change(Operation::kInsert, 3, "re", 130),
                     change(Operation::kUpdate, 9, "other-key", 140),
                     change(Operation::kUpdate, 4, "before-low", 50)};
  h.table->reached = 200;
  // 2 and 3 were changed inside the bracket; 4 changed before the low watermark, so the chunk
  // saw it and its row stays; 9 is not in the chunk at all.
  EXPECT_EQ(names(h.poll()), expected({"d:2", "i:3", "u:9", "u:4", "r:1", "r:4"}));
}

TEST(IncrementalSnapshot, ACommitInTheLogButNotYetVisibleMakesTheChunkWait) {
  // Transaction 40 committed at position 50 and its event went out before any snapshot was
  // requested, but it is not yet visible: a chunk read now would hold the old value of row 2
  // and deliver it after the update. The in-flight set lists 40, so the chunk is read again
  // once 40 is visible.
  Harness h(10, {});
  for (int id = 1; id <= 3; ++id) h.table->rows[id] = row(id, "old", "Bold");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  Event update = change(Operation::kUpdate, 2, "new", 50);
  update.transaction->tx_id = 40;
  h.stream->queue = {update};
  ASSERT_EQ(names(h.poll()), expected({"u:2"}));
  h.table->in_flight_set = "40";
  h.table->positions = {100, 200, 300, 400};
  std::thread requester([&] { EXPECT_TRUE(h.control->request({"public.t"})); });
  while (h.control->state().tables.empty()) EXPECT_TRUE(h.poll().empty());
  requester.join();
  EXPECT_EQ(h.table->cursors.size(), 1u);  // read once, and set aside
  EXPECT_TRUE(h.poll().empty());
  // Transaction 40 becomes visible: the next read has its value.
  h.table->in_flight_set = "";
  h.table->rows[2] = row(2, "new", "Bnew");
  // The set-aside chunk is read again after a short retry delay: poll until it comes.
  std::vector<Event> chunk;
  ASSERT_TRUE(wait_until([&] { return !(chunk = h.poll()).empty(); }, 10s, 5ms));
  ASSERT_EQ(names(chunk), expected({"r:1", "r:2", "r:3"}));
  EXPECT_EQ(*find_column(*chunk[1].after, "v")->text, "new");
}

TEST(IncrementalSnapshot, UnchangedToastUpdateInsideTheBracketIsRepairedFromTheChunk) {
  Harness h(10);
  h.table->rows[1] = row(1, "old", "BIG-VALUE");
  h.table->positions = {100, 200};
  ASSERT_TRUE(h.source->start(std::nullopt));
  Event first = change(Operation::kUpdate, 1, "v2", 150);
  first.after = Row{ColumnValue{"id", "1"}, ColumnValue{"v", "v2"}};
  first.unavailable_columns = {"big"};
  Event second = first;  // a second update leaving big out again
  second.after = Row{ColumnValue{"id", "1"}, ColumnValue{"v", "v3"}};
  second.log_position = at(160);
  h.stream->queue = {first, second};
  h.table->reached = 200;
  const auto out = h.poll();
  ASSERT_EQ(names(out), expected({"u:1", "u:1"}));
  for (const auto& e : out) {
    EXPECT_TRUE(e.unavailable_columns.empty());
    ASSERT_NE(find_column(*e.after, "big"), nullptr);
    EXPECT_EQ(*find_column(*e.after, "big")->text, "BIG-VALUE");
    EXPECT_EQ(e.row_write().kind, RowWrite::Kind::kReplace);
  }
  EXPECT_EQ(*find_column(*out[1].after, "v")->text, "v3");
}

TEST(IncrementalSnapshot, ChunksAdvanceTheCursorOnlyWhenHandedOut) {
  Harness h(2);
  for (int id = 1; id <= 5; ++id) h.table->rows[id] = row(id, "v", "B");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  std::vector<Event> all;
  std::string last_state;
  for (int i = 0; i < 10; ++i) {
    auto out = h.poll();
    for (auto& e : out) {
      if (!e.resume_offset.empty()) last_state = e.resume_state;
      all.push_back(std::move(e));
    }
  }
  EXPECT_EQ(names(all), expected({"r:1", "r:2", "r:3", "r:4", "r:5"}));
  ASSERT_EQ(h.table->cursors.size(), 3u);
  EXPECT_FALSE(h.table->cursors[0]);
  EXPECT_EQ(*h.table->cursors[1], std::vector<std::string>{"2"});
  EXPECT_EQ(*h.table->cursors[2], std::vector<std::string>{"4"});
  // The last chunk's last row carries the state with the final cursor, at the stream position.
  EXPECT_NE(last_state.find("\"incremental\""), std::string::npos);
  EXPECT_NE(last_state.find("\"complete\":true"), std::string::npos);
}

TEST(IncrementalSnapshot, TheNextChunkIsReadWhileABatchIsDeliveredAndKeepsItsBracket) {
  Harness h(2);
  for (int id = 1; id <= 4; ++id) h.table->rows[id] = row(id, "old", "B");
  h.table->positions = {100, 200, 300, 400};  // chunk 1: 100..200, chunk 2: 300..400
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_EQ(names(h.poll()), expected({"r:1", "r:2"}));
  // Chunk 2 is read while the consumer still has chunk 1, without another poll.
  ASSERT_TRUE(h.table->wait_for_fetches(2));
  // A change to row 3 committed inside chunk 2's bracket reaches the stream afterwards: the
  // read-ahead chunk's row 3 gives way to it, as a chunk read at the next poll would.
  h.stream->queue = {change(Operation::kUpdate, 3, "new", 350)};
  EXPECT_EQ(names(h.poll()), expected({"u:3", "r:4"}));
  // The read ahead was used, not repeated: the read after it is already the next chunk's (from
  // row 4 on), started ahead on its own thread once chunk 2 was handed out. Waiting for it
  // first keeps the check free of that thread's timing.
  EXPECT_TRUE(h.table->wait_for_fetches(3));
  ASSERT_EQ(h.table->cursors.size(), 3u);
  EXPECT_EQ(*h.table->cursors[1], std::vector<std::string>{"2"});
  EXPECT_EQ(*h.table->cursors[2], std::vector<std::string>{"4"});
}

TEST(IncrementalSnapshot, AReadAheadChunkIsNotUsedOnceTheStreamHasMovedPastIt) {
  Harness h(2);
  for (int id = 1; id <= 4; ++id) h.table->rows[id] = row(id, "v", "B");
  h.table->positions = {100, 200, 300, 400, 600, 700};
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_EQ(names(h.poll()), expected({"r:1", "r:2"}));
  ASSERT_TRUE(h.table->wait_for_fetches(2));  // chunk 2 read ahead: row 3 is "v" (300..400)
  // Paused, the pipeline goes on streaming: row 3 changes after that read, and the change is
  // handed out.
  h.control->pause();
  h.table->rows[3] = row(3, "new", "B");
  h.stream->queue = {change(Operation::kUpdate, 3, "new", 500)};
  EXPECT_EQ(names(h.poll()), expected({"u:3"}));
  h.control->resume();
  // The read ahead would bring the old row 3 after its newer change; the chunk is read again.
  const auto out = h.poll();
  EXPECT_EQ(names(out), expected({"r:3", "r:4"}));
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(*find_column(*out[0].after, "v")->text, "new");
  // Then the next chunk (from row 4 on) is read ahead on its own thread: wait for it, so the
  // reads are counted after it whatever that thread's timing.
  EXPECT_TRUE(h.table->wait_for_fetches(4));
  ASSERT_EQ(h.table->cursors.size(), 4u);
  EXPECT_EQ(*h.table->cursors[2], std::vector<std::string>{"2"});
  EXPECT_EQ(*h.table->cursors[3], std::vector<std::string>{"4"});
}

TEST(IncrementalSnapshot, RestartResumesAtTheSavedCursorAndAdoptsUnfinishedTables) {
  // A checkpoint saved after the first chunk of 2 rows; the config's table list is empty,
  // the table came from a request: it is adopted from the checkpoint all the same.
  IncrementalSnapshotState saved;
  saved.snapshot_id = "slot-incremental-4";
  saved.generation = 4;
  IncrementalSnapshotTableState t;
  t.table = "public.t";
  t.key_columns = {"id"};
  t.cursor = std::vector<std::string>{"2"};
  t.generation = 4;
  t.chunks = 1;
  t.rows = 2;
  saved.tables.push_back(t);
  CheckpointRecord record;
  record.offset = "0/50";
  record.source_state = "{\"snapshot\":{\"x\":1},\"incremental\":" + saved.to_json() + "}";

  Harness h(2, {});
  for (int id = 1; id <= 5; ++id) h.table->rows[id] = row(id, "v", "B");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(record));
  // The wrapped source sees its own state only.
  EXPECT_EQ(h.stream->started_with->source_state, "{\"snapshot\":{\"x\":1}}");
  std::vector<Event> all;
  for (int i = 0; i < 5; ++i) {
    for (auto& e : h.poll()) all.push_back(std::move(e));
  }
  EXPECT_EQ(names(all), expected({"r:3", "r:4", "r:5"}));
  EXPECT_EQ(all[0].source.offset, "incremental:4:public.t:[\"3\"]");
  EXPECT_EQ(*h.table->cursors[0], std::vector<std::string>{"2"});
  // The chunk rows resume where the checkpoint was: the stream has not moved.
  EXPECT_EQ(all.back().resume_offset, "0/50");
  EXPECT_NE(all.back().resume_state.find("\"snapshot\":{\"x\":1}"), std::string::npos);

  // A key that changed since the cursor was saved is refused with the remedy.
  Harness k(2, {});
  k.table->key = {"id", "v"};
  auto st = k.source->start(record);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("primary key of public.t changed"), std::string::npos);
  EXPECT_NE(st.error().report().find("cppcdc snapshot forget"), std::string::npos);
}

TEST(IncrementalSnapshot, AReRequestedTableIsANewGenerationNotAReplay) {
  Harness h(10, {});
  h.table->rows[1] = row(1, "v", "B");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_EQ(h.control->state().status(), "idle");
  std::thread requester([&] { EXPECT_TRUE(h.control->request({"public.t"})); });
  std::vector<Event> first;
  while (first.empty()) first = h.poll();
  requester.join();
  EXPECT_EQ(h.control->state().status(), "complete");
  std::thread again([&] { EXPECT_TRUE(h.control->request({"public.t"})); });
  std::vector<Event> second;
  while (second.empty()) second = h.poll();
  again.join();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].source.offset, "incremental:1:public.t:[\"1\"]");
  EXPECT_EQ(second[0].source.offset, "incremental:2:public.t:[\"1\"]");
  EXPECT_NE(first[0].snapshot->snapshot_id, second[0].snapshot->snapshot_id);
  // A stop advances the generation too, so the next request cannot collide with it.
  h.control->stop();
  h.poll();
  EXPECT_EQ(h.control->state().generation, 3u);
  EXPECT_EQ(h.control->state().status(), "stopped");
}

TEST(IncrementalSnapshot, BadRequestsAreRefusedByName) {
  Harness h(10, {});
  h.table->key = {};
  ASSERT_TRUE(h.source->start(std::nullopt));
  // The pipeline stand-in polls until both requests are answered.
  std::atomic<bool> answered{false};
  std::thread poller([&] {
    EXPECT_TRUE(wait_until(
        [&] {
          h.poll();
          return answered.load();
        },
        30s, 1ms));
  });
  auto keyless = h.control->request({"public.t"});
  auto missing = h.control->request({"public.nope"});
  answered = true;
  poller.join();
  ASSERT_FALSE(keyless);
  EXPECT_NE(keyless.error().report().find("public.t has no primary key"), std::string::npos);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().report().find("public.nope does not exist"), std::string::npos);
  // Nobody polling: the request times out with the reason, instead of hanging.
  auto unpolled = h.control->request({"public.t"}, std::chrono::milliseconds(20));
  ASSERT_FALSE(unpolled);
  EXPECT_NE(unpolled.error().report().find("not polling"), std::string::npos);
}

TEST(IncrementalSnapshot, PauseHoldsNewChunksAndResumeGoesOn) {
  Harness h(1);
  for (int id = 1; id <= 3; ++id) h.table->rows[id] = row(id, "v", "B");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_EQ(names(h.poll(1)), expected({"r:1"}));
  h.control->pause();
  EXPECT_TRUE(h.poll(1).empty());
  EXPECT_TRUE(h.poll(1).empty());
  EXPECT_EQ(h.control->state().status(), "paused");
  EXPECT_FALSE(h.control->state().is_complete());
  h.control->resume();
  EXPECT_EQ(names(h.poll(1)), expected({"r:2"}));
  EXPECT_EQ(names(h.poll(1)), expected({"r:3"}));
  h.poll(1);
  EXPECT_EQ(h.control->state().status(), "complete");
}

TEST(IncrementalSnapshot, AQuietStreamStillCheckpointsACompletedTable) {
  // The last chunk is empty (the table size is a multiple of the chunk): no row carries the
  // completion, so the runtime saves it with the idle state.
  auto s = std::make_unique<Stream>();
  auto t = std::make_unique<Table>();
  t->rows[1] = row(1, "v", "B");
  t->reached = 1'000'000;
  IncrementalSnapshotOptions options;
  options.chunk_size = 1;
  options.tables = {"public.t"};
  struct Memory final : Checkpoint {
    std::optional<CheckpointRecord> record;
    Result<std::optional<CheckpointRecord>> do_load() override { return record; }
    Status do_save(const CheckpointRecord& r) override {
      record = r;
      return ok();
    }
    std::string name() const override { return "memory"; }
  };
  auto checkpoint = std::make_shared<Memory>();
  RuntimeConfig config;
  config.source = make_incremental_snapshot_source(std::move(s), std::move(t), options);
  config.checkpoint = checkpoint;
  config.options.max_poll_wait_ms = 1;
  auto rt = Runtime::create(std::move(config));
  ASSERT_TRUE(rt);
  ASSERT_TRUE((*rt)->start());
  for (int i = 0; i < 5; ++i) {
    auto batch = (*rt)->poll_event_batch();
    ASSERT_TRUE(batch);
    ASSERT_TRUE((*rt)->commit_ack(batch->ack_mode()));
  }
  ASSERT_TRUE(checkpoint->record);
  auto state = (*rt)->admin_snapshot().incremental_snapshot;
  ASSERT_TRUE(state);
  EXPECT_TRUE(state->is_complete());
  EXPECT_NE(checkpoint->record->source_state.find("\"complete\":true"), std::string::npos)
      << checkpoint->record->source_state;
}

}  // namespace

namespace {

TEST(IncrementalSnapshot, AReconnectBeforeAnyCheckpointKeepsTheGenerationAndRequests) {
  Harness h(2, {"public.t"});
  for (int id = 1; id <= 5; ++id) h.table->rows[id] = row(id, "v", "B");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  EXPECT_EQ(names(h.poll()), expected({"r:1", "r:2"}));
  // The connection fails before anything was checkpointed: the runtime starts the source
  // again without a checkpoint. The same snapshot starts over under the same generation, so
  // the rows keep their offsets (a replay, deduplicable), instead of a new generation.
  h.source->close();
  ASSERT_TRUE(h.source->start(std::nullopt));
  const auto again = h.poll();
  ASSERT_EQ(names(again), expected({"r:1", "r:2"}));
  EXPECT_EQ(again[0].source.offset, "incremental:1:public.t:[\"1\"]");
  EXPECT_EQ(h.control->state().generation, 1u);
}

}  // namespace

namespace {

TEST(IncrementalSnapshot, ARequestWhileTheBlockingSnapshotRunsIsRefused) {
  Harness h(10, {});
  h.table->rows[1] = row(1, "v", "B");
  ASSERT_TRUE(h.source->start(std::nullopt));
  // The wrapped source is in its initial snapshot: its progress rides on its events.
  Event read = change(Operation::kInsert, 1, "v", 0);
  read.op = Operation::kRead;
  read.transaction.reset();
  read.resume_state = "{\"snapshot\":{\"table_index\":0}}";
  h.stream->queue = {read};
  ASSERT_EQ(h.poll().size(), 1u);
  std::atomic<bool> answered{false};
  std::thread poller([&] {
    EXPECT_TRUE(wait_until(
        [&] {
          h.poll();
          return answered.load();
        },
        30s, 1ms));
  });
  auto st = h.control->request({"public.t"});
  answered = true;
  poller.join();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("blocking) snapshot is still reading"), std::string::npos)
      << st.error().report();
  // Once it is done (its state is empty again), requests are taken.
  Event done = read;
  done.resume_state.clear();
  h.stream->queue = {done};
  h.poll();
  h.table->reached = 1'000'000;
  std::thread again([&] { EXPECT_TRUE(h.control->request({"public.t"})); });
  while (h.control->state().tables.empty()) h.poll();
  again.join();
}

}  // namespace

namespace {
// Hands out `n` single-event transactions 1..n (tx id = position) while no snapshot runs.
void stream_transactions(Harness& h, int n) {
  for (int i = 1; i <= n; ++i) {
    h.stream->queue.push_back(change(Operation::kUpdate, 2, "v" + std::to_string(i), i));
  }
  std::size_t seen = 0;
  while (seen < static_cast<std::size_t>(n)) seen += h.poll(1000).size();
}

// Requests the table and polls until the driver took the request, and once more; returns
// what those polls handed out.
std::vector<Event> request_table(Harness& h) {
  std::thread requester([&] { EXPECT_TRUE(h.control->request({"public.t"})); });
  std::vector<Event> out;
  while (h.control->state().tables.empty()) {
    for (auto& e : h.poll()) out.push_back(std::move(e));
  }
  requester.join();
  for (auto& e : h.poll()) out.push_back(std::move(e));
  return out;
}
}  // namespace

// While no snapshot runs, the stream's transactions are not all kept for a later chunk: a
// fresh in-flight set tells which could still be listed by one, and the rest are forgotten.
TEST(IncrementalSnapshot, BetweenSnapshotsOnlyTransactionsStillInFlightAreRemembered) {
  Harness h(10, {});
  h.table->rows[1] = row(1, "old", "Bold");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  h.table->in_flight_set = "";  // every transaction handed out is visible to new reads
  stream_transactions(h, 5000);
  // A chunk whose in-flight set still lists transaction 5 would wait for it, had it been kept.
  h.table->in_flight_set = "5";
  h.table->positions = {10'000, 20'000};
  EXPECT_EQ(names(request_table(h)), expected({"r:1"}));
}

TEST(IncrementalSnapshot, BetweenSnapshotsATransactionStillInFlightIsKeptForTheNextChunk) {
  Harness h(10, {});
  h.table->rows[1] = row(1, "old", "Bold");
  h.table->reached = 1'000'000;
  ASSERT_TRUE(h.source->start(std::nullopt));
  h.table->in_flight_set = "5";  // handed out, but not yet visible to new reads
  stream_transactions(h, 5000);
  h.table->positions = {10'000, 20'000};
  // The chunk is read, and set aside: it cannot have seen transaction 5.
  EXPECT_TRUE(request_table(h).empty());
  EXPECT_EQ(h.table->cursors.size(), 1u);
}

// The runtime polls with events already in `out` (the tail of a partly acknowledged batch) and
// asks for up to max_events more; the driver appended nothing then (it took a non-empty `out`
// for a full batch), so a consumer acknowledging prefixes saw only the same tail again.
TEST(IncrementalSnapshot, APollIntoABatchThatAlreadyHoldsEventsAppendsNewOnes) {
  Harness h(10, {});
  ASSERT_TRUE(h.source->start(std::nullopt));
  h.stream->queue = {change(Operation::kInsert, 1, "a", 10), change(Operation::kInsert, 2, "b", 20),
                     change(Operation::kInsert, 3, "c", 30)};
  std::vector<Event> out = {change(Operation::kInsert, 9, "redelivered", 5)};
  ASSERT_TRUE(h.source->poll(out, 2, std::chrono::milliseconds(0)));
  EXPECT_EQ(names(out), expected({"i:9", "i:1", "i:2"}));
}
