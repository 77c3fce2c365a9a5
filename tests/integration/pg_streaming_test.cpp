// In-progress transactions streamed by pgoutput (protocol v2, [source] stream_in_progress),
// against a real server. The walsender of the test database decodes with
// logical_decoding_work_mem = 64kB, so every transaction of more than a few hundred rows is
// streamed in blocks before its commit. The same workload is read at the same time through a
// second slot without streaming (protocol v1, the server holds each transaction until its
// commit): both must deliver the very same events.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "pg_util.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

pg::PostgresSourceConfig source(const std::string& slot, bool streamed) {
  pg::PostgresSourceConfig cfg;
  cfg.slot_name = slot;
  cfg.publication_name = "stream_pub";
  cfg.tables = {"public.st"};
  cfg.stream_in_progress = streamed;
  cfg.spill_threshold_bytes = 256 * 1024;  // the larger transactions spill on our side too
  return cfg;
}

std::string id_of(const Event& e) {
  const Row* row = e.after ? &*e.after : e.before.row();
  if (row == nullptr) return "?";
  const ColumnValue* v = find_column(*row, "id");
  return v && v->text ? *v->text : "?";
}

// The envelope without `ts` (the time cppcdc built the event, which differs between readers).
std::string comparable(const Event& e) {
  Event copy = e;
  copy.ts = 0;
  return copy.to_json();
}

// Events until `n` arrived or `seconds` passed, acknowledging each batch.
std::vector<Event> take(it::Reader& r, std::size_t n, int seconds = 60) {
  return r.take(n, seconds);
}

}  // namespace

class PgStreaming : public ::testing::Test {
 protected:
  void SetUp() override {
    CPPCDC_REQUIRE_PG(14, "stream_in_progress (pgoutput protocol v2)");
    db_ = it::test_database("strm");
    it::fresh_database(db_);
    PgSession admin(it::admin_dsn());
    admin.query("alter database " + db_ + " set logical_decoding_work_mem = '64kB'");
    PgSession s(it::dsn_for(db_));
    s.query("create table st (id int primary key, payload text)");
  }
  void TearDown() override {
    if (!db_.empty()) it::drop_slots(db_);
  }

  // Inserts ids [from, to] with a 100-byte payload on `s`.
  static void insert(PgSession& s, int from, int to) {
    s.query("insert into st select g, repeat('p', 100) from generate_series(" +
            std::to_string(from) + ", " + std::to_string(to) + ") g");
  }

  std::string slot_stat(const std::string& slot, const std::string& column) {
    PgSession admin(it::admin_dsn());
    std::string v = admin.scalar("select " + column +
                          "::text from pg_stat_replication_slots where slot_name = '" + slot +
                          "'");
    return v;
  }

  std::string db_;
};

TEST_F(PgStreaming, StreamedAndHeldTransactionsGiveTheSameEventsWithSubtransactionAbortsDropped) {
  it::Reader streamed(db_, source(db_ + "_v2", true));
  it::Reader held(db_, source(db_ + "_v1", false));
  ASSERT_TRUE(streamed.runtime->start());
  ASSERT_TRUE(held.runtime->start());
  PgSession admin(it::dsn_for(db_));
  ASSERT_TRUE(
      it::wait_until([&] { return admin.scalar(it::streaming_sql(db_ + "_v2")) == "1"; }, 20s));
  ASSERT_TRUE(
      it::wait_until([&] { return admin.scalar(it::streaming_sql(db_ + "_v1")) == "1"; }, 20s));

  PgSession t1(it::dsn_for(db_)), t2(it::dsn_for(db_)), t3(it::dsn_for(db_));
  t1.query("begin");
  insert(t1, 1, 2000);
  t2.query("begin");  // interleaved with t1: its blocks alternate with t1's
  insert(t2, 100001, 102000);
  t1.query("savepoint a");
  insert(t1, 2001, 3000);
  t1.query("rollback to savepoint a");  // dropped
  t1.query("savepoint b");
  insert(t1, 3001, 4000);
  t1.query("release savepoint b");  // kept
  t2.query("commit");               // commits first: delivered first
  t1.query("savepoint c");
  insert(t1, 5001, 6000);
  t1.query("savepoint d");
  insert(t1, 6001, 7000);
  t1.query("rollback to savepoint c");  // drops c and its child d
  insert(t1, 7001, 8000);
  t1.query("update st set payload = 'u' where id between 1 and 500");
  t1.query("delete from st where id between 501 and 600");
  t3.query("begin");
  insert(t3, 200001, 203000);
  t3.query("rollback");  // a whole streamed transaction aborted: nothing of it
  t1.query("commit");
  t2.query("insert into st values (9999, 'small')");  // not streamed

  const std::size_t expected = 2000 + (2000 + 1000 + 1000 + 500 + 100) + 1;
  auto a = take(streamed, expected);
  auto b = take(held, expected);
  ASSERT_EQ(a.size(), expected);
  ASSERT_EQ(b.size(), expected);

  // The order: t2 (2000 inserts), t1 (4600 events), the small insert.
  EXPECT_EQ(id_of(a[0]), "100001");
  EXPECT_EQ(a[0].transaction->total_events, 2000u);
  EXPECT_EQ(id_of(a[2000]), "1");
  EXPECT_EQ(a[2000].transaction->total_events, 4600u);
  EXPECT_EQ(a[2000].transaction->event_index, 0u);
  EXPECT_EQ(a[6599].transaction->event_index, 4599u);
  EXPECT_FALSE(a[6599].resume_offset.empty());
  EXPECT_EQ(id_of(a[6600]), "9999");
  std::set<int> inserted;
  std::map<Operation, int> ops;
  for (const auto& e : a) {
    ++ops[e.op];
    if (e.op == Operation::kInsert) inserted.insert(std::stoi(id_of(e)));
  }
  EXPECT_EQ(ops[Operation::kInsert], 6001);
  EXPECT_EQ(ops[Operation::kUpdate], 500);
  EXPECT_EQ(ops[Operation::kDelete], 100);
  for (int gone : {2001, 3000, 5001, 6000, 6001, 7000, 200001, 203000}) {
    EXPECT_EQ(inserted.count(gone), 0u) << gone;
  }
  for (int kept : {1, 2000, 3001, 4000, 7001, 8000, 100001, 102000, 9999}) {
    EXPECT_EQ(inserted.count(kept), 1u) << kept;
  }

  // Character for character the events of the unstreamed reader, commit time, offsets,
  // transaction metadata and resume offsets included.
  for (std::size_t i = 0; i < expected; ++i) {
    ASSERT_EQ(comparable(a[i]), comparable(b[i])) << "event " << i;
  }

  // The server really streamed to one slot and spilled for the other.
  ASSERT_TRUE(it::wait_until([&] { return slot_stat(db_ + "_v2", "stream_txns") != "0"; }, 20s));
  EXPECT_EQ(slot_stat(db_ + "_v2", "spill_txns"), "0");
  EXPECT_NE(slot_stat(db_ + "_v1", "spill_txns"), "0");
  ASSERT_TRUE(streamed.runtime->stop());
  ASSERT_TRUE(held.runtime->stop());
}

TEST_F(PgStreaming, ATransactionStreamedBeforeARestartArrivesWholeAfterIt) {
  std::shared_ptr<Checkpoint> checkpoint;
  PgSession t1(it::dsn_for(db_)), t2(it::dsn_for(db_));
  {
    it::Reader r(db_, source(db_, true));
    checkpoint = r.checkpoint;
    ASSERT_TRUE(r.runtime->start());
    PgSession admin(it::dsn_for(db_));
    ASSERT_TRUE(it::wait_until([&] { return admin.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
    t1.query("begin");
    insert(t1, 1, 3000);  // streamed to this reader before it stops
    t2.query("insert into st values (100001, 'later start, earlier commit')");
    auto first = take(r, 1, 30);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(id_of(first[0]), "100001");
    // Acknowledged: the checkpoint lies past the start of t1's changes.
    EXPECT_EQ((*checkpoint->load())->offset, first[0].resume_offset);
    ASSERT_TRUE(it::wait_until([&] { return slot_stat(db_, "stream_txns") != "0"; }, 20s));
    r.runtime->force_stop();
  }
  insert(t1, 3001, 4000);
  t1.query("commit");
  it::Reader r(db_, source(db_, true), {.checkpoint = checkpoint});
  ASSERT_TRUE(r.runtime->start());
  auto events = take(r, 4000, 60);
  ASSERT_EQ(events.size(), 4000u);
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(id_of(events[i]), std::to_string(i + 1));
    ASSERT_EQ(events[i].transaction->event_index, i);
    ASSERT_EQ(events[i].transaction->total_events, 4000u);
  }
  EXPECT_TRUE(take(r, 1, 2).empty());
  ASSERT_TRUE(r.runtime->stop());
}
