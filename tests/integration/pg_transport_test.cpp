// The two WAL transports, streaming replication and SqlPeek, against a real server: one
// workload read through both gives identical events (offsets and resume points included),
// their checkpoints are interchangeable, the SqlPeek slot follows the checkpoint, and a peek
// that runs over its statement_timeout shrinks its window instead of failing or looping.

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "pg_util.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

// The stream alone (no snapshot) of orders and full_t through `slot` (made beforehand) and
// publication tp_pub, messages included, over `transport`.
struct Reader : it::Reader {
  Reader(const std::string& db, const std::string& slot, pg::WalTransport transport,
         std::shared_ptr<Checkpoint> cp = nullptr, std::uint32_t statement_timeout_ms = 30'000,
         std::uint32_t max_changes = 10'000)
      : it::Reader(db, source(slot, transport, statement_timeout_ms, max_changes),
                   {.checkpoint = std::move(cp),
                    .max_buffer_size = 777,  // batches that end inside transactions
                    .max_retries = 2}) {}

  static pg::PostgresSourceConfig source(const std::string& slot, pg::WalTransport transport,
                                         std::uint32_t statement_timeout_ms,
                                         std::uint32_t max_changes) {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = slot;
    cfg.publication_name = "tp_pub";
    cfg.tables = {"public.orders", "public.full_t"};
    cfg.create_slot = false;
    cfg.capture_logical_messages = true;
    cfg.snapshot_mode = pg::SnapshotMode::kNever;  // the stream alone is compared here
    cfg.transport = transport;
    cfg.peek_interval_ms = 50;
    cfg.peek_statement_timeout_ms = statement_timeout_ms;
    cfg.peek_max_changes = max_changes;
    return cfg;
  }
};

// An event as JSON without `ts` (the capture time may differ), and without the
// source.timestamp of a non-transactional message, which is also the capture time
// (PostgreSQL records no time for such a message).
std::string comparable(Event e) {
  e.ts = 0;
  if (e.op == Operation::kMessage && !e.transaction) e.source.timestamp = 0;
  return e.to_json() + " resume=" + e.resume_offset;
}

class PgTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every reader here captures logical messages (part of what both transports must agree on).
    CPPCDC_REQUIRE_PG(14, "capture_logical_messages (on in these readers)");
    db_ = it::test_database("tp");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    s.query(R"(
      create table orders (id bigint primary key, status text, amount numeric(12,2), doc jsonb,
                           big text);
      create table full_t (id int primary key, a text, big text);
      alter table full_t replica identity full;
      create publication tp_pub for table orders, full_t;
    )");
  }
  void TearDown() override {
    if (!db_.empty()) it::drop_slots(db_);
  }

  // Two slots at the same position, so both transports see exactly the same changes.
  void create_slots() {
    PgSession s(it::dsn_for(db_));
    s.query("select pg_create_logical_replication_slot('" + slot("s") + "', 'pgoutput')");
    s.query("select pg_create_logical_replication_slot('" + slot("p") + "', 'pgoutput')");
  }
  std::string slot(const std::string& suffix) const { return db_.substr(0, 60) + "_" + suffix; }

  // A mixed workload; returns the number of events it produces.
  std::size_t workload() {
    PgSession s(it::dsn_for(db_));
    s.query(R"(
      insert into orders values (1, 'new', 1.50, '{"n": 12345678901234567890}', null);
      begin;
      insert into orders (id, status) select g, 'bulk' from generate_series(10, 2009) g;
      update orders set status = 'paid', amount = 2 where id = 1;
      commit;
      insert into full_t values (1, 'a', repeat('x', 5000));
      update full_t set a = 'b' where id = 1;
      update orders set id = 3 where id = 1;
      delete from orders where id between 10 and 19;
      select pg_logical_emit_message(false, 'audit', 'loose');
      begin;
      select pg_logical_emit_message(true, 'outbox', '{"k": 1}');
      insert into orders (id) values (4);
      commit;
    )");
    s.query("begin; insert into orders (id) values (5); rollback;");
    // Interleaved: the first to write commits last.
    PgSession t1(it::dsn_for(db_)), t2(it::dsn_for(db_));
    t1.query("begin; insert into orders (id, status) values (6, 't1')");
    t2.query("begin; insert into orders (id, status) values (7, 't2')");
    t1.query("update orders set status = 't1 again' where id = 6");
    t2.query("commit");
    t1.query("commit");
    s.query("alter table orders add column extra int default 7; "
            "insert into orders (id) values (8); truncate full_t;");
    // insert, (2000 inserts + update), full_t insert and update, key change, 10 deletes, loose
    // message, (message + insert), t2 (1) and t1 (2), (schema_change + insert), truncate
    return 1 + 2001 + 1 + 1 + 1 + 10 + 1 + 2 + 3 + 2 + 1;
  }

  std::string db_;
};

}  // namespace

TEST_F(PgTransport, BothTransportsGiveIdenticalEventsAndInterchangeableCheckpoints) {
  create_slots();
  const std::size_t n = workload();

  Reader streaming(db_, slot("s"), pg::WalTransport::kStreamingReplication);
  ASSERT_TRUE(streaming.runtime->start());
  const auto a = streaming.take(n, 60);
  ASSERT_TRUE(streaming.runtime->stop());

  Reader peek(db_, slot("p"), pg::WalTransport::kSqlPeek);
  ASSERT_TRUE(peek.runtime->start());
  const auto b = peek.take(n, 60);
  ASSERT_EQ(a.size(), n);
  ASSERT_EQ(b.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(comparable(a[i]), comparable(b[i])) << "event " << i;
  }
  EXPECT_TRUE(peek.take(1, 2).empty()) << "a peek must not hand anything over twice";

  // The SqlPeek slot follows the checkpoint (pg_replication_slot_advance).
  PgSession s(it::dsn_for(db_));
  const auto checkpoint = (*peek.checkpoint->load())->offset;
  ASSERT_TRUE(it::wait_until([&] {
    return s.scalar("select confirmed_flush_lsn >= '" + checkpoint +
                    "'::pg_lsn from pg_replication_slots where slot_name = '" + slot("p") +
                    "'") == "t";
  }, 10s));
  ASSERT_TRUE(peek.runtime->stop());

  // A checkpoint made with one transport resumes with the other (same slot): nothing again,
  // then the next change.
  s.query("insert into orders (id) values (5000)");
  {
    Reader r(db_, slot("p"), pg::WalTransport::kStreamingReplication, peek.checkpoint);
    ASSERT_TRUE(r.runtime->start());
    auto events = r.take(2, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(find_column(*events[0].after, "id")->text, "5000");
    ASSERT_TRUE(r.runtime->stop());
  }
  s.query("insert into orders (id) values (5001)");
  {
    Reader r(db_, slot("p"), pg::WalTransport::kSqlPeek, peek.checkpoint);
    ASSERT_TRUE(r.runtime->start());
    auto events = r.take(2, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(find_column(*events[0].after, "id")->text, "5001");
    ASSERT_TRUE(r.runtime->stop());
  }
}

TEST_F(PgTransport, SqlPeekStartUpMovesASlotThatIsBehindTheCheckpoint) {
  // cppcdc saved a checkpoint and was stopped before it advanced the slot: the slot is
  // behind. A peek cannot be told where to start, so start-up advances the slot.
  create_slots();
  PgSession s(it::dsn_for(db_));
  // A synchronous commit, so the flush position is past it (the test server runs with
  // synchronous_commit off, and a slot is never advanced beyond the flush position).
  s.query("set synchronous_commit = on; insert into orders (id) values (1)");
  const std::string past = s.scalar("select pg_current_wal_flush_lsn()");
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  CheckpointRecord record;
  record.source_type = "postgres";
  record.source_id = slot("p");
  record.offset = past;
  record.committed_events = 1;
  ASSERT_TRUE(checkpoint->save(record));

  Reader r(db_, slot("p"), pg::WalTransport::kSqlPeek, checkpoint);
  ASSERT_TRUE(r.runtime->start());
  EXPECT_EQ(s.scalar("select confirmed_flush_lsn >= '" + past +
                     "'::pg_lsn from pg_replication_slots where slot_name = '" + slot("p") + "'"),
            "t");
  s.query("insert into orders (id) values (2)");
  auto events = r.take(2, 3);
  ASSERT_EQ(events.size(), 1u) << "the change before the checkpoint must not come again";
  EXPECT_EQ(find_column(*events[0].after, "id")->text, "2");
  ASSERT_TRUE(r.runtime->stop());
}

TEST_F(PgTransport, APeekOverItsStatementTimeoutHalvesItsWindowAndStillDeliversEverything) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  spdlog::default_logger()->sinks().push_back(ring);
  create_slots();
  PgSession s(it::dsn_for(db_));
  // A backlog of 150 transactions of 2,000 rows, peeked 200,000 changes at a time under the
  // smallest statement_timeout allowed (100 ms): a first peek inside it would need PostgreSQL
  // to decode 2 million changes a second. Here it decodes 300k-600k a second; with 300 ms
  // allowed, CI once decoded the first 200,000 in time and nothing was halved.
  // Every peek decodes from the slot's restart_lsn, which moves only past a running-xacts
  // record; PostgreSQL writes one every 15 s when idle, and at a checkpoint. Without the
  // checkpoints, later peeks could re-read the whole backlog and, under load, run over 100 ms
  // whatever their window.
  for (int t = 0; t < 150; ++t) {
    s.query("insert into orders (id, status) select g, 'x' from generate_series(" +
            std::to_string(t * 2000) + ", " + std::to_string(t * 2000 + 1999) + ") g");
    if (t % 5 == 4) s.query("checkpoint");
  }
  Reader r(db_, slot("p"), pg::WalTransport::kSqlPeek, nullptr, 100, 200'000);
  ASSERT_TRUE(r.runtime->start());
  auto events = r.take(300'000, 240);
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(events.size(), 300'000u);
  bool halved = false;
  for (const auto& line : ring->last_formatted()) {
    if (line.find("ran over statement_timeout") != std::string::npos) halved = true;
  }
  EXPECT_TRUE(halved) << "the first peek should have run over its 100 ms";
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(find_column(*events[i].after, "id")->text, std::to_string(i)) << i;
  }
  ASSERT_TRUE(r.runtime->stop());
}

TEST_F(PgTransport, ATransactionTooBigForTheStatementTimeoutIsANamedError) {
  create_slots();
  PgSession s(it::dsn_for(db_));
  s.query("insert into orders (id) select g from generate_series(1, 400000) g");
  Reader r(db_, slot("p"), pg::WalTransport::kSqlPeek, nullptr, 100, 4);
  ASSERT_TRUE(r.runtime->start());
  std::optional<Error> error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!error && std::chrono::steady_clock::now() < deadline) {
    auto batch = r.runtime->poll_event_batch();
    if (!batch) error = batch.error();
  }
  ASSERT_TRUE(error) << "expected an error, not a silent loop";
  EXPECT_NE(error->report().find("peek_statement_timeout_ms"), std::string::npos)
      << error->report();
  r.runtime->force_stop();
}
