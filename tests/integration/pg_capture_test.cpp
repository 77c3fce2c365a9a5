// The PostgreSQL source end to end through the library runtime, against a real server.

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <sstream>

#include "cppcdc/postgres.hpp"
#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/runtime.hpp"
#include "log_capture.hpp"
#include "pg_util.hpp"
#include "source/postgres/sql_catalog.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

using cppcdc::it::LogCapture;

struct CaptureOptions {
  std::shared_ptr<Checkpoint> checkpoint = nullptr;  // a fresh in-memory one when null
  bool accept_slot_ahead_of_checkpoint = false;
  std::optional<std::uint32_t> max_retries = 5;
  std::uint32_t initial_delay_ms = 300;
  bool capture_logical_messages = false;
};

// Capture of `tables` in `database` through slot <database> and publication cap_pub.
struct Capture : it::Reader {
  Capture(const std::string& database, std::vector<std::string> tables, CaptureOptions options = {})
      : it::Reader(database, source(database, std::move(tables), options),
                   {.checkpoint = options.checkpoint,
                    .max_retries = options.max_retries,
                    .initial_delay_ms = options.initial_delay_ms}) {}

  static pg::PostgresSourceConfig source(const std::string& database,
                                         std::vector<std::string> tables,
                                         const CaptureOptions& options) {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = database;  // slots are cluster-wide: one per test database
    cfg.publication_name = "cap_pub";
    cfg.tables = std::move(tables);
    cfg.accept_slot_ahead_of_checkpoint = options.accept_slot_ahead_of_checkpoint;
    cfg.capture_logical_messages = options.capture_logical_messages;
    return cfg;
  }
};

std::optional<std::string> value(const Row& row, const std::string& name) {
  const ColumnValue* v = find_column(row, name);
  if (v == nullptr) return std::string("<absent>");
  return v->text;
}

std::string key_text_of(const Row& key) {
  std::string out;
  for (const auto& c : key) out += c.name + "=" + c.text.value_or("\\N") + ";";
  return out;
}

std::string big_text(int kb) {
  // Hex of a simple generator: does not compress well enough to stay inline.
  std::string s;
  std::uint64_t x = 88172645463325252ull;
  static constexpr char kHex[] = "0123456789abcdef";
  while (static_cast<int>(s.size()) < kb * 1024) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (int i = 0; i < 16; ++i) s += kHex[(x >> (i * 4)) & 15];
  }
  return s;
}

}  // namespace

class PgCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("cap");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    s.query(R"(
      create table orders (id bigint primary key, status text, amount numeric(12,2),
                           flag boolean, code char(5), ip inet, doc jsonb, note text,
                           big text);
      create table full_t (id int primary key, a text, big text);
      alter table full_t replica identity full;
      create table other (id int primary key);
    )");
  }
  void TearDown() override { it::drop_slots(db_); }
  std::string db_;
};

TEST_F(PgCapture, InsertUpdateDeleteTruncateArriveInCommitOrderWithExactEnvelope) {
  Capture cap(db_, {"public.orders", "public.full_t"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  s.query(R"(
    begin;
    insert into orders values (1, 'new', 12.5, true, 'ab', '10.0.0.1', '{"n": 12345678901234567890, "a": [1, "x"]}', null, null);
    insert into orders values (2, 'new', 0, false, 'abcde', '::1', null, 'x', null);
    commit;
    update orders set status = 'paid' where id = 1;
    update orders set id = 3 where id = 2;
    insert into other values (1);
    delete from orders where id = 3;
    truncate orders;
  )");
  auto events = cap.take(6);
  ASSERT_EQ(events.size(), 6u);

  const Event& i1 = events[0];
  EXPECT_EQ(i1.op, Operation::kInsert);
  EXPECT_EQ(i1.schema, "public");
  EXPECT_EQ(i1.table, "orders");
  EXPECT_EQ(i1.primary_key, std::vector<std::string>{"id"});
  ASSERT_TRUE(i1.transaction);
  EXPECT_EQ(i1.transaction->total_events, 2u);
  EXPECT_EQ(i1.transaction->event_index, 0u);
  EXPECT_EQ(events[1].transaction->event_index, 1u);
  EXPECT_EQ(events[1].transaction->tx_id, i1.transaction->tx_id);
  EXPECT_TRUE(i1.resume_offset.empty());
  EXPECT_FALSE(events[1].resume_offset.empty());
  // Output-function text, not ::text casts: boolean t, char(n) padded, inet without /32.
  EXPECT_EQ(value(*i1.after, "amount"), "12.50");
  EXPECT_EQ(value(*i1.after, "flag"), "t");
  EXPECT_EQ(value(*i1.after, "code"), "ab   ");
  EXPECT_EQ(value(*i1.after, "ip"), "10.0.0.1");
  EXPECT_EQ(value(*i1.after, "note"), std::nullopt);
  ASSERT_NE(find_column(*i1.after, "doc"), nullptr);
  EXPECT_TRUE(find_column(*i1.after, "doc")->is_json);

  const auto json = boost::json::parse(i1.to_json()).as_object();
  EXPECT_TRUE(json.at("after").as_object().at("doc").is_object());
  EXPECT_NE(i1.to_json().find("12345678901234567890"), std::string::npos);
  EXPECT_TRUE(json.at("after").as_object().at("note").is_null());
  EXPECT_EQ(json.at("source").as_object().at("source_name").as_string(), "postgres");
  EXPECT_TRUE(json.at("snapshot").is_null());
  EXPECT_EQ(json.at("envelope_version").as_int64(), 1);
  ASSERT_TRUE(i1.shape);
  EXPECT_EQ(i1.shape->columns()[2].data_type, "numeric(12,2)");
  EXPECT_EQ(i1.shape->columns()[4].data_type, "character(5)");
  EXPECT_FALSE(i1.shape->columns()[0].nullable);

  const Event& u = events[2];
  EXPECT_EQ(u.op, Operation::kUpdate);
  EXPECT_TRUE(u.before.is_unavailable());  // DEFAULT identity, key unchanged
  EXPECT_EQ(value(*u.after, "status"), "paid");
  EXPECT_EQ(u.row_write().kind, RowWrite::Kind::kReplace);

  const Event& moved = events[3];
  ASSERT_TRUE(moved.before.is_key_only());
  EXPECT_EQ(value(*moved.before.row(), "id"), "2");
  EXPECT_EQ(value(*moved.after, "id"), "3");
  ASSERT_TRUE(moved.row_write().previous_key);

  const Event& d = events[4];
  EXPECT_EQ(d.op, Operation::kDelete);
  EXPECT_TRUE(d.before_is_key_only());
  EXPECT_FALSE(d.after);
  EXPECT_EQ(d.row_write().kind, RowWrite::Kind::kDelete);

  EXPECT_EQ(events[5].op, Operation::kTruncate);
  EXPECT_EQ(events[5].row_write().kind, RowWrite::Kind::kTruncate);
  for (const auto& e : events) EXPECT_TRUE(e.validate()) << e.to_json();
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, UnchangedToastIsListedUnderDefaultAndCompletedUnderFull) {
  Capture cap(db_, {"public.orders", "public.full_t"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  const std::string big = big_text(64);
  s.query("insert into orders (id, status, big) values (1, 'a', $1)", {big});
  s.query("insert into full_t values (1, 'a', $1)", {big});
  s.query("update orders set status = 'b' where id = 1");
  s.query("update full_t set a = 'b' where id = 1");
  s.query("update full_t set big = $1 where id = 1", {big + "z"});
  auto events = cap.take(5);
  ASSERT_EQ(events.size(), 5u);

  const Event& def = events[2];
  EXPECT_EQ(def.unavailable_columns, std::vector<std::string>{"big"});
  EXPECT_EQ(find_column(*def.after, "big"), nullptr);  // absent, not null
  EXPECT_EQ(def.row_write().kind, RowWrite::Kind::kMerge);
  EXPECT_NE(def.to_json().find("\"unavailable_columns\":[\"big\"]"), std::string::npos);

  const Event& full = events[3];
  EXPECT_TRUE(full.unavailable_columns.empty());
  EXPECT_EQ(value(*full.after, "big"), big);
  EXPECT_EQ(full.row_write().kind, RowWrite::Kind::kReplace);
  ASSERT_TRUE(full.before.is_full());
  // The catalog's key under FULL, not every column.
  EXPECT_EQ(full.primary_key, std::vector<std::string>{"id"});

  const Event& modified = events[4];
  EXPECT_EQ(value(*modified.after, "big"), big + "z");
  EXPECT_TRUE(modified.unavailable_columns.empty());
  for (const auto& e : events) EXPECT_TRUE(e.validate()) << e.to_json().substr(0, 300);
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, CleanStopAndRestartDeliversZeroDuplicates) {
  std::shared_ptr<Checkpoint> checkpoint;
  {
    Capture cap(db_, {"public.orders"});
    checkpoint = cap.checkpoint;
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    s.query(
        "begin; insert into orders (id) values (1); insert into orders (id) values (2); commit;");
    s.query("insert into orders (id) values (3)");
    ASSERT_EQ(cap.take(3).size(), 3u);
    ASSERT_TRUE(cap.runtime->stop());
  }
  auto record = checkpoint->load();
  ASSERT_TRUE(record && *record);
  EXPECT_EQ((*record)->committed_events, 3u);
  {
    Capture cap(db_, {"public.orders"}, {.checkpoint = checkpoint});  // the saved checkpoint
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    s.query("insert into orders (id) values (4)");
    auto events = cap.take(2, 3);  // a duplicate would arrive within these 3 s
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(value(*events[0].after, "id"), "4");
    ASSERT_TRUE(cap.runtime->stop());
  }
}

TEST_F(PgCapture, LogicalMessagesArriveInTheirTransactionAndExactlyOnceAcrossARestart) {
  CPPCDC_REQUIRE_PG(14, "capture_logical_messages");
  std::shared_ptr<Checkpoint> checkpoint;
  {
    Capture cap(db_, {"public.orders"}, {.capture_logical_messages = true});
    checkpoint = cap.checkpoint;
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
    s.query(R"(
      begin;
      insert into orders (id) values (1);
      select pg_logical_emit_message(true, 'outbox', '{"order": 1, "n": 12345678901234567890}');
      insert into orders (id) values (2);
      commit;
      select pg_logical_emit_message(false, 'audit', 'line one
line two');
      select pg_logical_emit_message(true, 'bin', '\x00ff41'::bytea);
    )");
    // A separate query: inside one multi-statement query, BEGIN would take the statements
    // before it into its transaction.
    s.query(R"(
      begin;
      select pg_logical_emit_message(true, 'outbox', 'rolled back');
      rollback;
    )");
    auto events = cap.take(5);
    ASSERT_EQ(events.size(), 5u);

    EXPECT_EQ(events[0].op, Operation::kInsert);
    const Event& m = events[1];
    EXPECT_EQ(m.op, Operation::kMessage);
    EXPECT_EQ(m.table, "outbox__messages");
    EXPECT_FALSE(m.schema);
    EXPECT_FALSE(m.primary_key);
    EXPECT_TRUE(m.before.is_unavailable());
    ASSERT_TRUE(m.after);
    EXPECT_EQ(value(*m.after, "prefix"), "outbox");
    EXPECT_EQ(value(*m.after, "content"), R"({"order": 1, "n": 12345678901234567890})");
    EXPECT_EQ(value(*m.after, "transactional"), "t");
    ASSERT_TRUE(m.transaction);
    EXPECT_EQ(m.transaction->total_events, 3u);
    EXPECT_EQ(m.transaction->event_index, 1u);
    EXPECT_EQ(m.transaction->tx_id, events[0].transaction->tx_id);
    EXPECT_TRUE(m.resume_offset.empty());
    EXPECT_TRUE(m.validate());
    ASSERT_TRUE(m.shape);
    EXPECT_EQ(m.shape->columns()[1].data_type, "text");
    EXPECT_EQ(events[2].op, Operation::kInsert);
    EXPECT_EQ(events[2].transaction->event_index, 2u);
    // pgoutput positions a message at the end of its WAL record, which is where the next
    // change starts.
    EXPECT_LT(*pg::Lsn::parse(events[0].source.offset), *pg::Lsn::parse(m.source.offset));
    EXPECT_LE(*pg::Lsn::parse(m.source.offset), *pg::Lsn::parse(events[2].source.offset));

    const Event& audit = events[3];
    EXPECT_EQ(audit.table, "audit__messages");
    EXPECT_EQ(value(*audit.after, "content"), "line one\nline two");
    EXPECT_EQ(value(*audit.after, "transactional"), "f");
    EXPECT_FALSE(audit.transaction);
    EXPECT_EQ(audit.resume_offset, audit.source.offset);
    // The JSON line stays one line.
    EXPECT_EQ(audit.to_json().find('\n'), std::string::npos);

    const Event& bin = events[4];
    EXPECT_EQ(bin.table, "bin__messages");
    EXPECT_EQ(value(*bin.after, "content"), "\\x00ff41");
    EXPECT_EQ(bin.shape->columns()[1].data_type, "bytea");
    EXPECT_NE(bin.shape->content_id(), m.shape->content_id());
    EXPECT_EQ(bin.transaction->total_events, 1u);
    ASSERT_TRUE(cap.runtime->stop());
  }
  {
    // Restart from the checkpoint: nothing of the above again. Two non-transactional
    // messages back to back, only the first acknowledged, then a stop: its resume point must
    // keep PostgreSQL from sending it again without skipping the second.
    Capture cap(db_, {"public.orders"},
                {.checkpoint = checkpoint, .capture_logical_messages = true});
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
    s.query(
        "select pg_logical_emit_message(false, 'audit', 'first'), "
        "pg_logical_emit_message(false, 'audit', 'second')");
    std::vector<Event> got;
    for (int i = 0; i < 100 && got.size() < 2; ++i) {
      auto batch = cap.runtime->poll_event_batch();
      ASSERT_TRUE(batch) << batch.error().report();
      if (batch->empty()) continue;
      for (const auto& e : batch->events()) got.push_back(e);
      auto first = batch->ack_mode().token->accept_prefix(1);
      ASSERT_TRUE(first);
      ASSERT_TRUE(cap.runtime->commit_ack(AckMode{*first}));
      if (got.size() < 2) break;
    }
    ASSERT_GE(got.size(), 1u);
    EXPECT_EQ(value(*got[0].after, "content"), "first");
    EXPECT_EQ((*checkpoint->load())->offset, got[0].resume_offset);
    cap.runtime->force_stop();  // "second" is handed out again but never acknowledged
  }
  {
    Capture cap(db_, {"public.orders"},
                {.checkpoint = checkpoint, .capture_logical_messages = true});
    ASSERT_TRUE(cap.runtime->start());
    auto events = cap.take(2, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(value(*events[0].after, "content"), "second");
    ASSERT_TRUE(cap.runtime->stop());
  }
  {
    Capture cap(db_, {"public.orders"},
                {.checkpoint = checkpoint, .capture_logical_messages = true});
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
    s.query("insert into orders (id) values (9)");
    auto events = cap.take(2, 3);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].op, Operation::kInsert);
    ASSERT_TRUE(cap.runtime->stop());
  }
}

TEST_F(PgCapture, InterleavedTransactionsArriveInCommitOrderAndResumeWithoutLoss) {
  // T1 writes first (lower LSN) but commits after T2: pgoutput sends T2 first, so change
  // offsets go backwards in the stream while resume offsets (commit ends) only go forwards.
  std::shared_ptr<Checkpoint> checkpoint;
  std::string t2_resume, t1_resume;
  {
    Capture cap(db_, {"public.orders"});
    checkpoint = cap.checkpoint;
    ASSERT_TRUE(cap.runtime->start());
    PgSession admin(it::dsn_for(db_));
    ASSERT_TRUE(it::wait_until([&] { return admin.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
    PgSession t1(it::dsn_for(db_)), t2(it::dsn_for(db_));
    t1.query("begin; insert into orders (id, status) values (1, 't1-first')");
    t2.query("begin; insert into orders (id, status) values (2, 't2')");
    t1.query("insert into orders (id, status) values (3, 't1-second')");
    t2.query("commit");
    t1.query("commit");

    // Take T2 alone and acknowledge it; T1 stays unacknowledged.
    std::vector<Event> got;
    for (int i = 0; i < 100 && got.size() < 3; ++i) {
      auto batch = cap.runtime->poll_event_batch();
      ASSERT_TRUE(batch) << batch.error().report();
      for (const auto& e : batch->events()) got.push_back(e);
      if (batch->empty()) continue;
      auto first = batch->ack_mode().token->accept_prefix(std::min<std::size_t>(1, batch->size()));
      ASSERT_TRUE(first);
      ASSERT_TRUE(cap.runtime->commit_ack(AckMode{*first}));
      break;
    }
    ASSERT_GE(got.size(), 1u);
    EXPECT_EQ(value(*got[0].after, "id"), "2");
    t2_resume = got[0].resume_offset;
    EXPECT_EQ((*checkpoint->load())->offset, t2_resume);
    cap.runtime->force_stop();
  }
  {
    // T1 committed after T2's commit end, so resuming there sends T1 (both rows), even though
    // its changes lie before that position in the WAL.
    Capture cap(db_, {"public.orders"}, {.checkpoint = checkpoint});
    ASSERT_TRUE(cap.runtime->start());
    auto events = cap.take(3, 5);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(value(*events[0].after, "id"), "1");
    EXPECT_EQ(value(*events[1].after, "id"), "3");
    EXPECT_LT(*pg::Lsn::parse(events[0].source.offset), *pg::Lsn::parse(t2_resume));
    t1_resume = events[1].resume_offset;
    EXPECT_GT(*pg::Lsn::parse(t1_resume), *pg::Lsn::parse(t2_resume));
    // At T1's commit end, or past it once the idle slot followed the server's WAL end.
    EXPECT_GE(*pg::Lsn::parse((*checkpoint->load())->offset), *pg::Lsn::parse(t1_resume));
    ASSERT_TRUE(cap.runtime->stop());
  }
  {
    Capture cap(db_, {"public.orders"}, {.checkpoint = checkpoint});
    ASSERT_TRUE(cap.runtime->start());
    EXPECT_TRUE(cap.take(1, 3).empty());
    ASSERT_TRUE(cap.runtime->stop());
  }
}

TEST_F(PgCapture, LogicalMessagesAreDroppedUnlessCaptureIsOn) {
  Capture cap(db_, {"public.orders"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  s.query(
      "select pg_logical_emit_message(false, 'audit', 'x'); "
      "select pg_logical_emit_message(true, 'audit', 'y'); "
      "insert into orders (id) values (1)");
  auto events = cap.take(2, 3);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].op, Operation::kInsert);
}

TEST_F(PgCapture, ConfirmedFlushFollowsTheDurableCheckpointOnly) {
  Capture cap(db_, {"public.orders"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  s.query("insert into orders (id) values (1)");
  auto batch = cap.runtime->poll_event_batch();
  for (int i = 0; i < 50 && batch && batch->empty(); ++i) {
    batch = cap.runtime->poll_event_batch();
  }
  ASSERT_TRUE(batch && batch->size() == 1);
  const std::string end = batch->events()[0].resume_offset;
  auto slot_lsn = [&] {
    return s.scalar("select confirmed_flush_lsn from pg_replication_slots where slot_name = '" +
                    db_ + "'");
  };
  // Delivered but not acknowledged: the slot must not move past the event. The reader sends a
  // status update (asking for a keepalive) about every second; once the walsender has taken
  // two of them after the delivery, the first one's position has reached the slot.
  auto replied_after = [&](const std::string& t) {
    return s.scalar(
               "select count(*) from pg_replication_slots s join pg_stat_replication r "
               "on r.pid = s.active_pid where s.slot_name = '" +
               db_ + "' and r.reply_time > '" + t + "'::timestamptz") == "1";
  };
  const std::string delivered_at = s.scalar("select clock_timestamp()");
  ASSERT_TRUE(it::wait_until([&] { return replied_after(delivered_at); }, 30s));
  const std::string first_reply = s.scalar(
      "select r.reply_time from pg_replication_slots s join pg_stat_replication r on r.pid = "
      "s.active_pid where s.slot_name = '" +
      db_ + "'");
  ASSERT_TRUE(it::wait_until([&] { return replied_after(first_reply); }, 30s));
  EXPECT_LT(*pg::Lsn::parse(slot_lsn()), *pg::Lsn::parse(end));
  ASSERT_TRUE(cap.runtime->commit_ack(batch->ack_mode()));
  EXPECT_EQ((*cap.checkpoint->load())->offset, end);
  EXPECT_TRUE(it::wait_until([&] { return slot_lsn() == end; }, 30s))
      << "slot at " << slot_lsn() << ", checkpoint at " << end;
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, MissingTableIsTerminalAndNamesTheTable) {
  Capture cap(db_, {"public.orders", "public.nope"});
  auto st = cap.runtime->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(st.error().report().find("public.nope"), std::string::npos) << st.error().report();
}

TEST_F(PgCapture, QuietCapturedTableDoesNotPinWalWhileOtherTablesWrite) {
  Capture cap(db_, {"public.orders"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  s.query("insert into orders (id) values (1)");
  ASSERT_EQ(cap.take(1).size(), 1u);
  const std::string captured_end = (*cap.checkpoint->load())->offset;
  // About 30 MB of WAL into a table that is not captured.
  s.query("create table noise (id int, pad text)");
  s.query("insert into noise select g, repeat('x', 200) from generate_series(1, 120000) g");
  const auto after_noise = *pg::Lsn::parse(s.scalar("select pg_current_wal_lsn()"));
  auto slot_lsn = [&] {
    return *pg::Lsn::parse(s.scalar(
        "select confirmed_flush_lsn from pg_replication_slots where slot_name = '" + db_ + "'"));
  };
  bool followed = false;
  for (int i = 0; i < 100 && !followed; ++i) {
    auto batch = cap.runtime->poll_event_batch();  // empty polls let the slot follow
    ASSERT_TRUE(batch && batch->empty());
    followed = slot_lsn() >= after_noise;
  }
  EXPECT_TRUE(followed) << "slot stayed at " << slot_lsn().to_string() << ", WAL is at "
                        << after_noise.to_string();
  // The advance was checkpointed first: the checkpoint is never behind the slot.
  const auto ckpt = *pg::Lsn::parse((*cap.checkpoint->load())->offset);
  EXPECT_GE(ckpt, slot_lsn());
  EXPECT_GT(ckpt, *pg::Lsn::parse(captured_end));
  // And capture goes on normally afterwards.
  s.query("insert into orders (id) values (2)");
  ASSERT_EQ(cap.take(1).size(), 1u);
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, CheckpointBehindTheSlotIsRefusedUnlessAccepted) {
  std::shared_ptr<Checkpoint> checkpoint;
  std::string early;
  {
    Capture cap(db_, {"public.orders"});
    checkpoint = cap.checkpoint;
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    s.query("insert into orders (id) values (1)");
    ASSERT_EQ(cap.take(1).size(), 1u);
    early = (*checkpoint->load())->offset;
    s.query("insert into orders (id) values (2)");
    ASSERT_EQ(cap.take(1).size(), 1u);
    ASSERT_TRUE(cap.runtime->stop());
  }
  // Pretend the checkpoint was restored from an older backup.
  auto rec = **checkpoint->load();
  rec.offset = early;
  ASSERT_TRUE(checkpoint->save(rec));
  auto make = [&](bool accept) {
    return std::move(
        Capture(
            db_, {"public.orders"},
            {.checkpoint = checkpoint, .accept_slot_ahead_of_checkpoint = accept, .max_retries = 0})
            .runtime);
  };
  auto refused = make(false);
  auto st = refused->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(st.error().report().find(early), std::string::npos) << st.error().report();
  EXPECT_NE(st.error().report().find("accept_slot_ahead_of_checkpoint"), std::string::npos);
  refused.reset();
  auto accepted = make(true);
  EXPECT_TRUE(accepted->start());
  ASSERT_TRUE(accepted->stop());
}

TEST_F(PgCapture, CheckpointWhoseSlotVanishedIsRefusedInsteadOfSilentlySkipping) {
  std::shared_ptr<Checkpoint> checkpoint;
  {
    Capture cap(db_, {"public.orders"});
    checkpoint = cap.checkpoint;
    ASSERT_TRUE(cap.runtime->start());
    PgSession s(it::dsn_for(db_));
    s.query("insert into orders (id) values (1)");
    ASSERT_EQ(cap.take(1).size(), 1u);
    ASSERT_TRUE(cap.runtime->stop());
  }
  it::drop_slots(db_);
  auto make = [&](bool accept) {
    return std::move(
        Capture(
            db_, {"public.orders"},
            {.checkpoint = checkpoint, .accept_slot_ahead_of_checkpoint = accept, .max_retries = 0})
            .runtime);
  };
  auto refused = make(false);
  auto st = refused->start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(st.error().report().find("does not exist"), std::string::npos) << st.error().report();
  PgSession s(it::dsn_for(db_));
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db_ + "'"),
            "0");  // nothing was created behind the operator's back
  refused.reset();
  auto accepted = make(true);
  ASSERT_TRUE(accepted->start());
  ASSERT_TRUE(accepted->stop());
}

TEST_F(PgCapture, AlterTableMidStreamGivesANewShapeAndASchemaChangeBeforeItsFirstRow) {
  Capture cap(db_, {"public.orders"});
  ASSERT_TRUE(cap.runtime->start());
  PgSession s(it::dsn_for(db_));
  // Mid-stream: after the (empty) snapshot, once the stream runs. DDL committed while the
  // snapshot starts would be announced too, against the shape the snapshot described.
  ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
  s.query("insert into orders (id, status) values (1, 'a')");
  s.query("alter table orders add column extra int");
  s.query("insert into orders (id, status, extra) values (2, 'b', 7)");
  s.query("alter table orders drop column note");
  s.query("update orders set status = 'c' where id = 2");
  s.query("alter table orders alter column extra type bigint");
  s.query("insert into orders (id, extra) values (3, 9000000000)");
  s.query("insert into orders (id) values (4)");  // same shape: no announcement
  auto events = cap.take(8);
  ASSERT_EQ(events.size(), 8u);
  const std::vector<Operation> ops = {
      Operation::kInsert, Operation::kSchemaChange, Operation::kInsert, Operation::kSchemaChange,
      Operation::kUpdate, Operation::kSchemaChange, Operation::kInsert, Operation::kInsert};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(events[i].op, ops[i]) << i << ": " << events[i].to_json().substr(0, 200);
  }
  // The announcement carries the new shape and shares the transaction of the row after it.
  const Event& added = events[1];
  EXPECT_EQ(added.table, "orders");
  EXPECT_EQ(added.shape->content_id(), events[2].shape->content_id());
  EXPECT_NE(added.shape->content_id(), events[0].shape->content_id());
  EXPECT_EQ(added.transaction->tx_id, events[2].transaction->tx_id);
  EXPECT_EQ(added.transaction->total_events, 2u);
  EXPECT_EQ(added.transaction->event_index, 0u);
  EXPECT_EQ(find_column(*added.after, "content_id")->text, added.shape->content_id());
  const auto json = boost::json::parse(added.to_json()).as_object();
  const auto& cols = json.at("after").as_object().at("columns").as_array();
  EXPECT_EQ(cols.back().as_object().at("name").as_string(), "extra");
  EXPECT_EQ(cols.back().as_object().at("data_type").as_string(), "integer");
  EXPECT_EQ(json.at("before").as_object().at("columns").as_array().size() + 1, cols.size());
  EXPECT_EQ(added.row_write().kind, RowWrite::Kind::kNone);
  // Dropped column gone from the rows; retyped column announced with its new type.
  EXPECT_EQ(find_column(*events[4].after, "note"), nullptr);
  EXPECT_NE(events[5].to_json().find("\"bigint\""), std::string::npos);
  EXPECT_EQ(find_column(*events[6].after, "extra")->text, "9000000000");
  for (const auto& e : events) EXPECT_TRUE(e.validate()) << e.to_json();
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, SlotHeldByAnotherProcessIsNamedAfterTheRetries) {
  Capture holder(db_, {"public.orders"});
  ASSERT_TRUE(holder.runtime->start());
  // The holder streams once its (empty) snapshot is read.
  PgSession s(it::dsn_for(db_));
  ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
  auto second = std::move(
      Capture(db_, {"public.orders"}, {.max_retries = 1, .initial_delay_ms = 50}).runtime);
  auto st = second->start();
  ASSERT_FALSE(st);
  // The holder is a cppcdc source: its pipeline lock stops the second one before the slot.
  EXPECT_NE(st.error().report().find("the pipeline of replication slot " + db_ +
                                     " is held by PID "),
            std::string::npos)
      << st.error().report();
  EXPECT_NE(st.error().report().find("another cppcdc runs it"), std::string::npos);
  EXPECT_NE(st.error().report().find("gave up after 1 retries"), std::string::npos);
  ASSERT_TRUE(holder.runtime->stop());
}

TEST_F(PgCapture, PartitionedTableIsCapturedWhetherOrNotThePublicationUsesTheRoot) {
  CPPCDC_REQUIRE_PG(13, "capturing a partitioned table");
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table parted (id int primary key, v text) partition by range (id);"
      "create table parted_low partition of parted for values from (0) to (100);"
      "create table parted_high partition of parted for values from (100) to (1000)");
  {
    // The publication cppcdc creates publishes through the root: events name the table.
    Capture cap(db_, {"public.parted"});
    ASSERT_TRUE(cap.runtime->start());
    s.query("insert into parted values (1, 'a'), (150, 'b')");
    s.query("update parted set v = 'c' where id = 150");
    auto events = cap.take(3);
    ASSERT_EQ(events.size(), 3u);
    for (const auto& e : events) EXPECT_EQ(e.table, "parted");
    ASSERT_TRUE(cap.runtime->stop());
  }
  it::drop_slots(db_);
  s.query("drop publication cap_pub; create publication cap_pub for table parted");
  {
    // An existing publication without publish_via_partition_root sends partitions under their
    // own names: they are still captured, never silently dropped.
    Capture cap(db_, {"public.parted"});
    ASSERT_TRUE(cap.runtime->start());
    s.query("insert into parted values (2, 'd'), (200, 'e')");
    auto events = cap.take(4);
    ASSERT_EQ(events.size(), 4u);
    // The rows from before arrive through the snapshot, named as the stream names them.
    EXPECT_EQ(events[0].op, Operation::kRead);
    EXPECT_EQ(events[0].table, "parted_high");
    EXPECT_EQ(events[1].op, Operation::kRead);
    EXPECT_EQ(events[1].table, "parted_low");
    EXPECT_EQ(events[2].table, "parted_low");
    EXPECT_EQ(events[3].table, "parted_high");
    ASSERT_TRUE(cap.runtime->stop());
  }
}

// pgoutput describes a partition (a Relation message) also when it sends the partition's changes
// under the root's name; the log line must say which of the two happens.
TEST_F(PgCapture, APartitionsLogLineSaysUnderWhichNameItsChangesArrive) {
  CPPCDC_REQUIRE_PG(13, "capturing a partitioned table");
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table parted (id int primary key, v text) partition by range (id);"
      "create table parted_low partition of parted for values from (0) to (100)");
  const std::string own_name =
      "capturing partition public.parted_low of public.parted under its own name (publication "
      "cap_pub does not publish via the partition root)";
  const std::string via_root =
      "partition public.parted_low of public.parted: its changes arrive under the name of its "
      "partition root, not its own (publication cap_pub publishes via the partition root)";
  auto via_root_of = [&](const std::string& publication) {
    auto v = pg::publishes_via_root(s.get(), publication);
    EXPECT_TRUE(v) << v.error().report();
    return v.value_or(std::nullopt);
  };
  {
    LogCapture log;
    Capture cap(db_, {"public.parted"});  // creates cap_pub publishing via the root
    ASSERT_TRUE(cap.runtime->start());
    EXPECT_EQ(via_root_of("cap_pub"), std::optional<bool>(true));
    s.query("insert into parted values (1, 'a')");
    auto events = cap.take(1);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].table, "parted");
    ASSERT_TRUE(cap.runtime->stop());
    EXPECT_NE(log.text().find(via_root), std::string::npos) << log.text();
    EXPECT_EQ(log.text().find("under its own name"), std::string::npos) << log.text();
  }
  it::drop_slots(db_);
  s.query("drop publication cap_pub; create publication cap_pub for table parted");
  {
    LogCapture log;
    Capture cap(db_, {"public.parted"});
    ASSERT_TRUE(cap.runtime->start());
    EXPECT_EQ(via_root_of("cap_pub"), std::optional<bool>(false));
    s.query("insert into parted values (2, 'b')");
    auto events = cap.take(2);  // row 1 from the snapshot, then row 2
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].table, "parted_low");
    ASSERT_TRUE(cap.runtime->stop());
    EXPECT_NE(log.text().find(own_name), std::string::npos) << log.text();
    EXPECT_EQ(log.text().find("publishes via the partition root)"), std::string::npos)
        << log.text();
  }
  EXPECT_FALSE(via_root_of("no_such_pub").has_value());  // no such publication
}

TEST_F(PgCapture, ReplicaIdentitiesAndKeysShapeTheEvents) {
  PgSession s(it::dsn_for(db_));
  s.query(R"(
    create table by_index (id int not null, code text not null, v text);
    create unique index by_index_code on by_index (code);
    alter table by_index replica identity using index by_index_code;
    create table composite (a int, b text, v text, primary key (a, b));
    create table keyless_full (x int, y text);
    alter table keyless_full replica identity full;
    insert into by_index values (1, 'c1', 'old');
    insert into composite values (1, 'x', 'old');
    insert into keyless_full values (1, 'one');
  )");
  Capture cap(db_, {"public.by_index", "public.composite", "public.keyless_full"});
  ASSERT_TRUE(cap.runtime->start());
  auto reads = cap.take(3);
  ASSERT_EQ(reads.size(), 3u);
  ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
  s.query(R"(
    update by_index set code = 'c2' where id = 1;
    update composite set b = 'y' where a = 1;
    update keyless_full set y = 'uno' where x = 1;
    delete from keyless_full;
  )");
  auto events = cap.take(4);
  ASSERT_EQ(events.size(), 4u);
  // USING INDEX: the identity index's columns are the key; the old key comes key-only.
  EXPECT_EQ(events[0].primary_key, std::vector<std::string>{"code"});
  ASSERT_TRUE(events[0].before.is_key_only());
  EXPECT_EQ(value(*events[0].before.row(), "code"), "c1");
  EXPECT_EQ(events[0].row_write().previous_key->at(0).text, "c1");
  // Composite primary key, in key order; a change of one part gives the previous key.
  EXPECT_EQ(events[1].primary_key, (std::vector<std::string>{"a", "b"}));
  auto w = events[1].row_write();
  ASSERT_TRUE(w.previous_key);
  EXPECT_EQ(key_text_of(*w.previous_key), "a=1;b=x;");
  EXPECT_EQ(key_text_of(*w.key), "a=1;b=y;");
  // No primary key (FULL): whole before images, but no key to address the row by.
  EXPECT_FALSE(events[2].primary_key);
  EXPECT_TRUE(events[2].before.is_full());
  EXPECT_EQ(events[2].row_write().reason, NoRowWrite::kNoPrimaryKey);
  EXPECT_EQ(events[3].op, Operation::kDelete);
  EXPECT_EQ(value(*events[3].before.row(), "y"), "uno");
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, ATableWithoutReplicaIdentityIsNotPutIntoAPublication) {
  // In a publication that publishes updates, such a table would make PostgreSQL refuse the
  // application's own UPDATE and DELETE: cppcdc refuses to create that publication.
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table nopk (a int, b text); create table nothing_t (id int primary key);"
      "alter table nothing_t replica identity nothing");
  for (const std::string table : {"public.nopk", "public.nothing_t"}) {
    Capture cap(db_, {table}, {.max_retries = 0});
    auto st = cap.runtime->start();
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().report().find("has no replica identity"), std::string::npos)
        << st.error().report();
    EXPECT_NE(st.error().report().find("REPLICA IDENTITY FULL"), std::string::npos);
  }
  EXPECT_EQ(s.scalar("select count(*) from pg_publication where pubname = 'cap_pub'"), "0");
  s.query("update nopk set b = 'still writable'");  // the application is unharmed
  // With a publication the operator made for inserts only, NOTHING works: no key, inserts.
  s.query("create publication cap_pub for table nothing_t with (publish = 'insert')");
  Capture cap(db_, {"public.nothing_t"});
  ASSERT_TRUE(cap.runtime->start());
  ASSERT_TRUE(it::wait_until([&] { return s.scalar(it::streaming_sql(db_)) == "1"; }, 20s));
  s.query("insert into nothing_t values (7)");
  auto events = cap.take(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].op, Operation::kInsert);
  EXPECT_FALSE(events[0].primary_key);
  ASSERT_TRUE(cap.runtime->stop());
}

TEST_F(PgCapture, TruncateOfSeveralTablesWithCascadeAndRestartIdentityGivesOneEventPerTable) {
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table parent (id int primary key);"
      "create table child (id serial primary key, parent_id int references parent(id))");
  Capture cap(db_, {"public.parent", "public.child", "public.orders"});
  ASSERT_TRUE(cap.runtime->start());
  s.query("insert into parent values (1); insert into child (parent_id) values (1)");
  s.query("insert into orders (id) values (1)");
  s.query("truncate parent, orders restart identity cascade");
  auto events = cap.take(6);
  ASSERT_EQ(events.size(), 6u);
  std::set<std::string> truncated;
  for (std::size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(events[i].op, Operation::kTruncate);
    EXPECT_EQ(events[i].transaction->total_events, 3u);
    EXPECT_EQ(events[i].transaction->event_index, i - 3);
    EXPECT_EQ(events[i].row_write().kind, RowWrite::Kind::kTruncate);
    truncated.insert(events[i].table);
  }
  // The cascade empties child too, and PostgreSQL lists it in the same TRUNCATE message.
  EXPECT_EQ(truncated, (std::set<std::string>{"parent", "child", "orders"}));
  ASSERT_TRUE(cap.runtime->stop());
}

// Events handed back through Source::recycle are released by the reader thread even when the
// stream is quiet and nothing is pushed (they must not pile up, holding their memory: an
// incremental snapshot's rows recycled on a quiet stream did, 94 MB for a 5M-row table).
TEST_F(PgCapture, RecycledEventsAreReleasedOnAQuietStream) {
  auto cfg = Capture::source(db_, {"public.orders"}, {});
  cfg.dsn = it::dsn_for(db_);
  auto made = pg::make_postgres_source(std::move(cfg));
  ASSERT_TRUE(made) << made.error().report();
  Source* source = made->get();
  RuntimeConfig rc;
  rc.source = std::move(*made);
  rc.checkpoint = std::make_shared<InMemoryCheckpoint>();
  rc.options.max_poll_wait_ms = 200;
  auto rt = Runtime::create(std::move(rc));
  ASSERT_TRUE(rt);
  ASSERT_TRUE((*rt)->start());
  auto first = (*rt)->poll_event_batch();  // the (empty) snapshot, then a quiet stream
  ASSERT_TRUE(first) << first.error().report();
  if (!first->empty()) {
    ASSERT_TRUE((*rt)->commit_ack(first->ack_mode()));
  }

  auto shape = std::make_shared<const RowShape>(
      std::string("public"), "orders", std::vector<ColumnShape>{}, std::vector<std::string>{});
  for (int round = 0; round < 3; ++round) {
    std::vector<Event> events(1000);
    for (auto& e : events) e.shape = shape;
    source->recycle(std::move(events));
  }
  EXPECT_GT(shape.use_count(), 1);
  EXPECT_TRUE(it::wait_until([&] { return shape.use_count() == 1; }, 10s))
      << shape.use_count() - 1 << " recycled events are still held";
  ASSERT_TRUE((*rt)->stop());
}
