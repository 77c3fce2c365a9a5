// The blocking snapshot against a real server: existing rows arrive as op `read` with the
// same text and shape the stream gives, the stream takes over exactly where the exported
// snapshot ends while a writer keeps going, an interrupted snapshot resumes at its last
// acknowledged chunk, and the modes (initial, initial_only, never) and per-table settings do
// what they say.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"
#include "replay.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

// A runtime over `cfg` with slot <db> and publication snap_pub, in batches of 300 events.
struct Reader : it::Reader {
  Reader(const std::string& db, pg::PostgresSourceConfig cfg,
         std::shared_ptr<Checkpoint> cp = nullptr)
      : it::Reader(db, named(db, std::move(cfg)),
                   {.checkpoint = std::move(cp), .max_buffer_size = 300, .max_retries = 2}) {}

  static pg::PostgresSourceConfig named(const std::string& db, pg::PostgresSourceConfig cfg) {
    cfg.slot_name = db;
    cfg.publication_name = "snap_pub";
    return cfg;
  }
};

std::string id_of(const Event& e) {
  const Row* row = e.op == Operation::kDelete ? e.before.row() : (e.after ? &*e.after : nullptr);
  const ColumnValue* c = row ? find_column(*row, "id") : nullptr;
  return c && c->text ? *c->text : "";
}

class PgSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("snap");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    s.query(R"(
      create table docs (id int primary key, note text, doc jsonb, tags text[], amount numeric,
                         at timestamptz, big text, flag boolean, region text);
      alter table docs replica identity full;
      insert into docs select g, 'note ' || g, ('{"n": ' || g || '0000000000000000000, "s": "x\ny"}')::jsonb,
                              array['a', null, 'q"' || g], g / 7.0, '2026-01-02 03:04:05+02',
                              case when g % 100 = 0 then repeat(md5(g::text), 200) end, g % 2 = 0,
                              case when g % 3 = 0 then 'eu' else 'us' end
                       from generate_series(1, 2500) g;
      create table keyless (a int, b text);
      alter table keyless replica identity full;
      insert into keyless select g, 'k' || g from generate_series(1, 250) g;
      create table untouched (id int primary key);
      insert into untouched values (1), (2);
    )");
  }
  void TearDown() override { it::drop_slots(db_); }

  pg::PostgresSourceConfig config(std::vector<std::string> tables) {
    pg::PostgresSourceConfig cfg;
    cfg.tables = std::move(tables);
    cfg.snapshot_chunk_size = 1000;
    return cfg;
  }

  std::string db_;
};

}  // namespace

TEST_F(PgSnapshot, ExistingRowsArriveAsReadsWithTheStreamsTextAndShapeThenTheStreamTakesOver) {
  Reader r(db_, config({"public.docs"}));
  // A writer that never pauses: rows it commits before the slot exists are in the snapshot,
  // rows after it are in the stream, and none may be in both or neither.
  std::atomic<bool> stop{false};
  std::atomic<int> next{100000};
  std::thread writer([&] {
    PgSession w(it::dsn_for(db_));
    while (!stop.load()) {
      const int id = next.fetch_add(1);
      w.query("insert into docs (id, note) values (" + std::to_string(id) + ", 'live')");
      // Pacing, not waiting: a steady trickle of commits around the snapshot's start.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // Some of the writer's rows are committed before the slot exists.
  EXPECT_TRUE(it::wait_until([&] { return next.load() > 100020; }, 30s));
  ASSERT_TRUE(r.runtime->start());
  auto events = r.take(2600, 60);
  stop.store(true);
  writer.join();
  PgSession s(it::dsn_for(db_));
  const int rows = std::stoi(s.scalar("select count(*) from docs"));
  auto more = r.take(static_cast<std::size_t>(rows) - events.size(), 60);
  events.insert(events.end(), more.begin(), more.end());

  std::map<std::string, int> seen;
  std::map<std::string, Event> reads;
  std::size_t read_count = 0;
  bool streaming = false;
  std::string content_id;
  for (const auto& e : events) {
    EXPECT_NE(e.op, Operation::kSchemaChange) << "the stream must describe the same shape";
    if (e.op == Operation::kRead) {
      EXPECT_FALSE(streaming) << "a read after the stream began";
      ++read_count;
      ASSERT_TRUE(e.snapshot);
      EXPECT_FALSE(e.transaction);
      EXPECT_TRUE(e.validate());
      reads.emplace(id_of(e), e);
      if (content_id.empty()) content_id = e.shape->content_id();
      EXPECT_EQ(e.shape->content_id(), content_id);
    } else {
      streaming = true;
      EXPECT_EQ(e.op, Operation::kInsert);
      EXPECT_EQ(e.shape->content_id(), content_id);
    }
    ++seen[id_of(e)];
  }
  EXPECT_GE(read_count, 2500u);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(rows)) << "a row missing";
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << "row " << id << " arrived " << n << " times";

  // Every snapshot row is character for character what the stream sends: under REPLICA
  // IDENTITY FULL the stream's before image of an update is the whole old row.
  s.query("update docs set flag = not flag where id <= 2500");
  auto updates = r.take(2500, 60);
  ASSERT_EQ(updates.size(), 2500u);
  for (const auto& u : updates) {
    ASSERT_TRUE(u.before.full_row());
    const auto it = reads.find(id_of(u));
    ASSERT_NE(it, reads.end());
    EXPECT_EQ(*u.before.full_row(), *it->second.after) << "row " << it->first;
  }
  ASSERT_TRUE(r.runtime->stop());
}

// Event::snapshot_edge: the snapshot's first and last rows, and each table's first and last,
// are marked; no other row is, though the rows of a table's last chunk all carry
// is_last_chunk (docs has 2,500 rows in chunks of 1,000: its last chunk holds 500).
TEST_F(PgSnapshot, OnlyTheFirstAndLastRowsOfTheSnapshotAndOfEachTableAreMarked) {
  Reader r(db_, config({"public.docs", "public.keyless", "public.untouched"}));
  ASSERT_TRUE(r.runtime->start());
  auto events = r.take(2752, 60);
  ASSERT_TRUE(r.runtime->stop());
  ASSERT_EQ(events.size(), 2752u);
  // The rows grouped by table, in the order they came.
  std::vector<std::vector<const Event*>> tables;
  for (const auto& e : events) {
    ASSERT_EQ(e.op, Operation::kRead);
    if (tables.empty() || tables.back().front()->table != e.table) tables.emplace_back();
    tables.back().push_back(&e);
  }
  ASSERT_EQ(tables.size(), 3u) << "each table's rows together";
  std::size_t last_chunk_rows = 0;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto& rows = tables[t];
    SCOPED_TRACE(rows.front()->table);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SnapshotEdge want = SnapshotEdge::kNone;
      if (i + 1 == rows.size())
        want = t + 1 == tables.size() ? SnapshotEdge::kLast : SnapshotEdge::kLastInTable;
      if (i == 0) want = t == 0 ? SnapshotEdge::kFirst : SnapshotEdge::kFirstInTable;
      if (t != 0 && i == 0 && i + 1 == rows.size() && t + 1 == tables.size()) {
        want = SnapshotEdge::kLast;  // Debezium: last comes before first_in_data_collection
      }
      ASSERT_EQ(rows[i]->snapshot_edge, want) << "row " << i << " of " << rows.size();
      if (rows[i]->snapshot->is_last_chunk) ++last_chunk_rows;
    }
  }
  EXPECT_GT(last_chunk_rows, 3u) << "a last chunk of more than one row";
}

TEST_F(PgSnapshot, AnInterruptedSnapshotResumesAtItsLastAcknowledgedChunk) {
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  std::vector<Event> first;
  {
    Reader r(db_, config({"public.docs", "public.keyless"}), checkpoint);
    ASSERT_TRUE(r.runtime->start());
    first = r.take(1200, 30);  // more than one chunk acknowledged
    ASSERT_GE(first.size(), 1200u);
    auto record = checkpoint->load();
    ASSERT_TRUE(record && *record);
    EXPECT_NE((*record)->source_state.find("\"snapshot\""), std::string::npos);
    r.runtime->force_stop();
  }
  PgSession s(it::dsn_for(db_));
  s.query("insert into docs (id, note) values (9999, 'after the interruption')");
  std::vector<Event> second;
  {
    Reader r(db_, config({"public.docs", "public.keyless"}), checkpoint);
    ASSERT_TRUE(r.runtime->start());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const auto take_until = [&](auto done) {
      while (std::chrono::steady_clock::now() < deadline && !done()) {
        auto more = r.take(1, 1);
        second.insert(second.end(), more.begin(), more.end());
      }
    };
    // Until 9999 is read: the rest's snapshot is taken, and a change after it is streamed.
    take_until([&] {
      return std::any_of(second.begin(), second.end(), [](const Event& e) {
        return e.op == Operation::kRead && id_of(e) == "9999";
      });
    });
    s.query("insert into docs (id, note) values (10000, 'after the rest was read')");
    take_until([&] { return !second.empty() && second.back().op == Operation::kInsert; });
    EXPECT_TRUE(r.take(1, 2).empty());
    ASSERT_TRUE(r.runtime->stop());
  }
  std::map<std::string, int> docs;
  std::size_t keyless = 0;
  for (const auto* part : {&first, &second}) {
    for (const auto& e : *part) {
      if (e.table == "docs") ++docs[id_of(e)];
      if (e.table == "keyless") ++keyless;
    }
  }
  EXPECT_EQ(docs.size(), 2502u);
  std::size_t doubled = 0;
  for (const auto& [id, n] : docs) doubled += static_cast<std::size_t>(n - 1);
  EXPECT_LE(doubled, 1000u) << "at most the one chunk in flight is read again";
  EXPECT_EQ(keyless, 250u);
  // The rest of the snapshot was read in a new transaction that already sees id 9999, while
  // the stream starts where the first snapshot ended: the stream drops the insert the read
  // holds, and delivers the one committed after the rest's snapshot.
  EXPECT_EQ(docs["9999"], 1);
  EXPECT_EQ(docs["10000"], 1);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(id_of(second.back()), "10000");
  // The snapshot is done and the stream passed the rest's position: the checkpoint carries
  // neither snapshot progress nor a filter any more.
  EXPECT_EQ((*checkpoint->load())->source_state, "");
}

TEST_F(PgSnapshot, AnEmptyLastTableIsRecordedAsReadSoItsLaterChangesAreStreamed) {
  // A fresh-user trial: with an empty table last in the list, no event of its own carried the
  // snapshot's completion, so a restart read that table again and its inserts and updates
  // made while cppcdc was stopped came as reads. The small chunk makes the earlier batches
  // leave the reader before the empty table is reached.
  PgSession s(it::dsn_for(db_));
  s.query("create table empt (id int primary key, v text)");
  auto cfg = config({"public.untouched", "public.docs", "public.empt"});
  cfg.snapshot_chunk_size = 500;
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  {
    Reader r(db_, cfg, checkpoint);
    ASSERT_TRUE(r.runtime->start());
    auto reads = r.take(2502, 60);
    ASSERT_EQ(reads.size(), 2502u);
    EXPECT_TRUE(r.take(1, 2).empty());
    ASSERT_TRUE(r.runtime->stop());
  }
  ASSERT_TRUE(checkpoint->load() && *checkpoint->load());
  EXPECT_EQ((*checkpoint->load())->source_state.find("\"table_index\":2"), std::string::npos)
      << "the checkpoint still points at the empty table: " << (*checkpoint->load())->source_state;
  s.query("insert into empt values (1, 'a')");
  s.query("update empt set v = 'b' where id = 1");
  Reader r(db_, cfg, checkpoint);
  ASSERT_TRUE(r.runtime->start());
  auto events = r.take(2, 30);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].op, Operation::kInsert);
  EXPECT_EQ(events[1].op, Operation::kUpdate);
  EXPECT_TRUE(r.take(1, 2).empty()) << "nothing is read again";
  ASSERT_TRUE(r.runtime->stop());
}

TEST_F(PgSnapshot, ModesTablesAndConditions) {
  PgSession s(it::dsn_for(db_));
  {
    // initial_only: the rows, then the source is finished; no slot is created.
    auto cfg = config({"public.docs", "public.untouched"});
    cfg.snapshot_mode = pg::SnapshotMode::kInitialOnly;
    cfg.snapshot_tables = {"public.docs"};
    cfg.snapshot_table_conditions = {{"public.docs", "region = 'eu'"}};
    Reader r(db_, cfg);
    ASSERT_TRUE(r.runtime->start());
    auto events = r.take(100000, 10);
    EXPECT_EQ(events.size(), 833u);  // ids divisible by 3 up to 2500
    for (const auto& e : events) {
      EXPECT_EQ(e.table, "docs");
      EXPECT_EQ(find_column(*e.after, "region")->text, "eu");
    }
    EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db_ + "'"),
              "0");
    // The runtime's loop ends by itself.
    class Null final : public Sink {
     public:
      Status write(std::span<const Event>) override { return ok(); }
      Status flush() override { return ok(); }
      Status close() override { return ok(); }
      std::string name() const override { return "null"; }
    } sink;
    std::atomic<bool> cancel{false};
    auto done = r.runtime->run_to_completion(sink, cancel);
    EXPECT_TRUE(done) << done.error().report();
  }
  {
    // A condition that does not parse stops the start before any slot is made.
    auto cfg = config({"public.docs"});
    cfg.snapshot_table_conditions = {{"public.docs", "regoin = 'eu'"}};
    Reader r(db_, cfg);
    auto st = r.runtime->start();
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration);
    // The library names the setting; the server renders it as its cdc.toml key.
    EXPECT_EQ(st.error().setting_owner(), SettingOwner::kSource);
    EXPECT_EQ(st.error().setting(), "snapshot.table_conditions");
    EXPECT_NE(st.error().report().find("public.docs"), std::string::npos) << st.error().report();
    EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db_ + "'"),
              "0");
    EXPECT_EQ(s.scalar("select count(*) from pg_publication where pubname = 'snap_pub'"), "0");
  }
  {
    auto cfg = config({"public.untouched"});
    cfg.snapshot_mode = pg::SnapshotMode::kNever;
    Reader r(db_, cfg);
    ASSERT_TRUE(r.runtime->start());
    s.query("insert into untouched values (3)");
    auto events = r.take(3, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].op, Operation::kInsert);
    ASSERT_TRUE(r.runtime->stop());
  }
}

TEST_F(PgSnapshot, WhenNeededSetsAnUnusableCheckpointAsideAndSnapshotsAgain) {
  // A checkpoint whose slot is gone: `initial` refuses it (changes would be lost), while
  // `when_needed` takes a new snapshot instead.
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  CheckpointRecord record;
  record.source_type = "postgres";
  record.source_id = db_;
  record.offset = "0/1000";
  record.committed_events = 5;
  ASSERT_TRUE(checkpoint->save(record));
  {
    Reader r(db_, config({"public.untouched"}), checkpoint);
    auto st = r.runtime->start();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().report().find("does not exist"), std::string::npos) << st.error().report();
  }
  auto cfg = config({"public.untouched"});
  cfg.snapshot_mode = pg::SnapshotMode::kWhenNeeded;
  Reader r(db_, cfg, checkpoint);
  ASSERT_TRUE(r.runtime->start());
  auto events = r.take(2, 20);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) EXPECT_EQ(e.op, Operation::kRead);
  PgSession s(it::dsn_for(db_));
  s.query("insert into untouched values (3)");
  auto more = r.take(1, 20);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].op, Operation::kInsert);
  ASSERT_TRUE(r.runtime->stop());
}

TEST_F(PgSnapshot, ARoleStatementTimeoutDoesNotCutTheTableReadOff) {
  // One COPY reads the whole table and lasts as long as the consumer takes; a
  // statement_timeout set for the database (or role) must not cancel it.
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table wide (id int primary key, pad text);"
      "insert into wide select g, repeat('x', 200) from generate_series(1, 200000) g");
  s.query("alter database \"" + db_ + "\" set statement_timeout = '300ms'");
  auto cfg = config({"public.wide"});
  cfg.snapshot_mode = pg::SnapshotMode::kInitialOnly;
  Reader r(db_, cfg);
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(r.runtime->start());
  std::set<std::string> ids;
  const auto deadline = started + std::chrono::seconds(90);
  while (ids.size() < 200000 && std::chrono::steady_clock::now() < deadline) {
    auto events = r.take(300, 5);  // batches of at most 300 events, slowly
    if (events.empty()) break;
    for (const auto& e : events) ids.insert(id_of(e));
    // A slow consumer on purpose: the one COPY has to outlast the statement_timeout.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(ids.size(), 200000u);
  // The read did outlast the timeout (the source's queue holds a fraction of the table).
  EXPECT_GT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(600));
}
