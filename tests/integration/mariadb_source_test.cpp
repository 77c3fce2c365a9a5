// The MariaDB source against a real MariaDB 10.11 (CPPCDC_TEST_MARIADB_PORT; skipped without
// it): change events with transaction metadata, resume by GTID and by file and position,
// schema changes mid-stream and across a restart, TRUNCATE, start-up checks, a purged binlog,
// the blocking snapshot.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "integration/log_capture.hpp"
#include "integration/mariadb_util.hpp"

namespace cppcdc::it::maria {
namespace {

class MariaDbSource : public ::testing::Test {
 protected:
  void SetUp() override {
    MARIADB_OR_SKIP();
    db_ = database_for_test("ms");
    session_.exec("DROP DATABASE IF EXISTS " + db_);
    session_.exec("CREATE DATABASE " + db_);
  }
  void TearDown() override {
    if (source_) source_->close();
    if (!db_.empty()) session_.exec("DROP DATABASE IF EXISTS " + db_);
  }

  mysql::MysqlSourceConfig config(std::vector<std::string> tables = {}) {
    if (tables.empty()) tables = {db_ + ".t"};
    return config_for(std::move(tables), db_);
  }
  void start(const mysql::MysqlSourceConfig& c,
             const std::optional<CheckpointRecord>& resume = std::nullopt) {
    if (source_) source_->close();
    auto s = mysql::make_mysql_source(c);
    ASSERT_TRUE(s.has_value()) << s.error().report();
    source_ = std::move(*s);
    auto st = source_->start(resume);
    ASSERT_TRUE(st.has_value()) << st.error().report();
  }
  std::vector<Event> rows(std::size_t n) {
    return poll_until(*source_, [n](const auto& all) { return count_rows(all) >= n; });
  }

  Session session_;
  std::string db_;
  std::unique_ptr<Source> source_;
};

TEST_F(MariaDbSource, InsertUpdateDeleteWithTransactionMetadata) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v varchar(20), d decimal(6,2))");
  start(config());
  session_.exec("BEGIN");
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1, 'a', 1.50), (2, 'b', NULL)");
  session_.exec("UPDATE " + db_ + ".t SET v = 'bb' WHERE id = 2");
  session_.exec("COMMIT");
  session_.exec("DELETE FROM " + db_ + ".t WHERE id = 1");
  auto events = rows(4);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].op, Operation::kInsert);
  EXPECT_EQ(events[0].schema, db_);
  EXPECT_EQ(events[0].table, "t");
  EXPECT_EQ(text_of(&*events[0].after, "d"), "1.50");
  EXPECT_EQ(text_of(&*events[1].after, "d"), "<null>");
  EXPECT_EQ(events[2].op, Operation::kUpdate);
  ASSERT_TRUE(events[2].before.is_full());
  EXPECT_EQ(text_of(events[2].before.row(), "v"), "b");
  EXPECT_EQ(text_of(&*events[2].after, "v"), "bb");
  EXPECT_EQ(events[3].op, Operation::kDelete);
  EXPECT_EQ(text_of(events[3].before.row(), "v"), "a");
  EXPECT_EQ(events[0].primary_key, (std::vector<std::string>{"id"}));
  // One transaction of three events, then one of one.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(events[i].transaction);
    EXPECT_EQ(events[i].transaction->total_events, 3u);
    EXPECT_EQ(events[i].transaction->event_index, static_cast<std::uint64_t>(i));
    EXPECT_EQ(events[i].transaction->tx_id, events[0].transaction->tx_id);
  }
  EXPECT_TRUE(events[0].resume_offset.empty());
  EXPECT_TRUE(events[1].resume_offset.empty());
  EXPECT_FALSE(events[2].resume_offset.empty());
  EXPECT_NE(events[3].transaction->tx_id, events[0].transaction->tx_id);
  // GTID mode (MariaDB's default): the resume offset is a GTID position; source.offset the
  // event's binlog coordinate.
  EXPECT_NE(events[2].resume_offset.find('-'), std::string::npos) << events[2].resume_offset;
  EXPECT_TRUE(mysql::parse_binlog_coordinate(events[0].source.offset)) << events[0].source.offset;
  for (const auto& e : events) EXPECT_TRUE(e.validate().has_value()) << e.to_json();
}

TEST_F(MariaDbSource, ResumesFromGtidAfterARestart) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v text)");
  auto c = config();
  start(c);
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1, 'one')");
  auto first = rows(1);
  auto ckpt = checkpoint_after(first, "mariadb", db_);
  ASSERT_TRUE(ckpt);
  EXPECT_FALSE(mysql::parse_binlog_coordinate(ckpt->offset)) << ckpt->offset;
  source_->close();
  session_.exec("INSERT INTO " + db_ + ".t VALUES (2, 'two')");
  start(c, ckpt);
  session_.exec("INSERT INTO " + db_ + ".t VALUES (3, 'three')");
  auto next = rows(2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(text_of(&*next[0].after, "id"), "2");
  EXPECT_EQ(text_of(&*next[1].after, "id"), "3");
}

TEST_F(MariaDbSource, ResumesFromFileAndPositionAfterARestart) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v text)");
  auto c = config();
  c.gtid_mode = mysql::GtidMode::kOff;
  start(c);
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1, 'one')");
  auto first = rows(1);
  auto ckpt = checkpoint_after(first, "mariadb", db_);
  ASSERT_TRUE(ckpt);
  EXPECT_TRUE(mysql::parse_binlog_coordinate(ckpt->offset)) << ckpt->offset;
  source_->close();
  session_.exec("INSERT INTO " + db_ + ".t VALUES (2, 'two')");
  start(c, ckpt);
  auto next = rows(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(text_of(&*next[0].after, "id"), "2");
}

TEST_F(MariaDbSource, SchemaChangeMidStreamAndAcrossARestart) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v text)");
  session_.exec("CREATE TABLE " + db_ + ".other (id int primary key)");
  auto c = config();
  start(c);
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1, 'one')");
  auto first = rows(1);
  auto ckpt = checkpoint_after(first, "mariadb", db_);
  ASSERT_TRUE(ckpt);
  session_.exec("INSERT INTO " + db_ + ".t VALUES (2, 'two')");
  session_.exec("ALTER TABLE " + db_ +
                ".t ADD COLUMN n int NOT NULL DEFAULT 7 AFTER id, "
                "DROP COLUMN v");
  session_.exec("ALTER TABLE " + db_ + ".other ADD COLUMN x int");  // not captured: no event
  session_.exec("INSERT INTO " + db_ + ".t VALUES (3, 8)");
  auto live = poll_until(*source_, [](const auto& all) { return all.size() >= 3; });
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(text_of(&*live[0].after, "v"), "two");
  EXPECT_EQ(live[1].op, Operation::kSchemaChange);
  EXPECT_NE(text_of(&*live[1].after, "ddl").find("ADD COLUMN n"), std::string::npos);
  EXPECT_FALSE(live[1].resume_offset.empty());
  EXPECT_EQ(text_of(&*live[2].after, "n"), "8");
  EXPECT_EQ(text_of(&*live[2].after, "v"), "<absent>");
  // Restart from before row 2: it decodes with the shape it was written with.
  source_->close();
  start(c, ckpt);
  auto again = poll_until(*source_, [](const auto& all) { return all.size() >= 3; });
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(text_of(&*again[0].after, "v"), "two");
  EXPECT_EQ(again[0].shape->columns().size(), 2u);
  EXPECT_EQ(again[1].op, Operation::kSchemaChange);
  EXPECT_EQ(text_of(&*again[2].after, "n"), "8");
  EXPECT_EQ(again[2].shape->columns().size(), 2u);
  EXPECT_EQ(again[2].shape->columns()[1].name, "n");
}

TEST_F(MariaDbSource, TruncateIsAnEvent) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  start(config());
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1)");
  session_.exec("TRUNCATE TABLE " + db_ + ".t");
  auto events = rows(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].op, Operation::kTruncate);
  EXPECT_EQ(events[1].table, "t");
  EXPECT_FALSE(events[1].resume_offset.empty());
}

TEST_F(MariaDbSource, StatementBinlogFormatIsRefusedWithItsRemedy) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  session_.exec("SET GLOBAL binlog_format = 'STATEMENT'");
  auto s = mysql::make_mysql_source(config());
  ASSERT_TRUE(s.has_value());
  auto st = (*s)->start(std::nullopt);
  session_.exec("SET GLOBAL binlog_format = 'ROW'");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(st.error().report().find("binlog_format = 'ROW'"), std::string::npos)
      << st.error().report();
}

TEST_F(MariaDbSource, MissingReplicationGrantIsRefusedWithItsRemedy) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  session_.exec("DROP USER IF EXISTS 'nogrant'@'127.0.0.1'");
  session_.exec("CREATE USER 'nogrant'@'127.0.0.1' IDENTIFIED BY 'pw'");
  session_.exec("GRANT SELECT ON " + db_ + ".* TO 'nogrant'@'127.0.0.1'");
  auto c = config();
  c.user = "nogrant";
  c.password = "pw";
  auto s = mysql::make_mysql_source(c);
  ASSERT_TRUE(s.has_value());
  auto st = (*s)->start(std::nullopt);
  session_.exec("DROP USER 'nogrant'@'127.0.0.1'");
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
  EXPECT_NE(st.error().report().find("REPLICATION SLAVE"), std::string::npos)
      << st.error().report();
  EXPECT_EQ(st.error().report().find("pw"), std::string::npos);
}

TEST_F(MariaDbSource, APurgedBinlogWhileStoppedIsAClearError) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  for (auto mode : {mysql::GtidMode::kOff, mysql::GtidMode::kOn}) {
    auto c = config();
    c.gtid_mode = mode;
    start(c);
    session_.exec("INSERT INTO " + db_ + ".t VALUES (" +
                  std::to_string(mode == mysql::GtidMode::kOff ? 1 : 2) + ")");
    auto first = rows(1);
    auto ckpt = checkpoint_after(first, "mariadb", db_);
    ASSERT_TRUE(ckpt);
    source_->close();
    session_.exec("INSERT INTO " + db_ + ".t VALUES (" +
                  std::to_string(mode == mysql::GtidMode::kOff ? 11 : 12) + ")");
    session_.exec("FLUSH BINARY LOGS");
    auto status = session_.rows("SHOW MASTER STATUS");
    ASSERT_FALSE(status.empty());
    // MariaDB keeps a binlog until InnoDB's checkpoint has passed it: purge until it goes.
    ASSERT_TRUE(cppcdc::test::wait_until(
        [&] {
          session_.exec("PURGE BINARY LOGS TO '" + *status[0][0] + "'");
          return session_.value("SHOW BINARY LOGS") == *status[0][0];
        },
        std::chrono::seconds(60), std::chrono::milliseconds(100)));
    auto s = mysql::make_mysql_source(c);
    ASSERT_TRUE(s.has_value());
    auto st = (*s)->start(ckpt);
    ASSERT_FALSE(st.has_value()) << "mode " << static_cast<int>(mode);
    EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
    EXPECT_NE(st.error().report().find("purged"), std::string::npos) << st.error().report();
  }
}

TEST_F(MariaDbSource, BlockingSnapshotThenStreamWithTheSameText) {
  session_.exec("CREATE TABLE " + db_ +
                ".t (id int primary key, v varchar(10), "
                "b varbinary(4), j json, f double, ts timestamp(3) NULL, e enum('x','y'))");
  session_.exec("INSERT INTO " + db_ +
                ".t VALUES (1, 'wörld', 0x00ff, '{\"a\": [1, 2]}', 0.1, "
                "'2024-01-02 03:04:05.678', 'y')");
  auto c = config();
  c.snapshot_mode = SnapshotMode::kInitial;
  c.snapshot_chunk_size = 1;
  start(c);
  EXPECT_FALSE(source_->initial_offset());
  session_.exec("INSERT INTO " + db_ +
                ".t VALUES (2, 'wörld', 0x00ff, '{\"a\": [1, 2]}', 0.1, "
                "'2024-01-02 03:04:05.678', 'y')");
  auto events = rows(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].op, Operation::kRead);
  ASSERT_TRUE(events[0].snapshot);
  EXPECT_TRUE(events[0].snapshot->is_last_chunk);
  EXPECT_FALSE(events[0].resume_offset.empty());
  EXPECT_EQ(events[1].op, Operation::kInsert);
  for (const char* col : {"v", "b", "j", "f", "ts", "e"}) {
    EXPECT_EQ(text_of(&*events[0].after, col), text_of(&*events[1].after, col)) << col;
  }
  EXPECT_EQ(text_of(&*events[0].after, "b"), "\\x00ff");
}

// lag(): the binlog written after the position this pipeline confirmed. It grows with writes
// that are read but not confirmed and falls back once they are. Other tests write to the same
// server meanwhile, so the bounds leave room for their (small) transactions.
TEST_F(MariaDbSource, LagIsTheBinlogWrittenAfterTheConfirmedPosition) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v text)");
  start(config());
  EXPECT_FALSE(source_->lag().has_value()) << "nothing is confirmed yet";
  session_.exec("INSERT INTO " + db_ + ".t VALUES (0, 'first')");
  auto first = rows(1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(source_->confirm(first.back().resume_offset));

  constexpr std::uint64_t kBig = 300 * 1000;  // 300 rows of 1000 bytes
  for (int i = 1; i <= 300; ++i) {
    session_.exec("INSERT INTO " + db_ + ".t VALUES (" + std::to_string(i) +
                  ", REPEAT('x', 1000))");
  }
  auto more = rows(300);
  ASSERT_EQ(more.size(), 300u);
  std::optional<SourceLag> lag;
  EXPECT_TRUE(cppcdc::test::wait_until(
      [&] {
        lag = source_->lag();
        return lag && lag->confirmed_lag_bytes && *lag->confirmed_lag_bytes >= kBig;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)))
      << (lag && lag->confirmed_lag_bytes ? std::to_string(*lag->confirmed_lag_bytes) : "none");
  ASSERT_TRUE(lag);
  EXPECT_FALSE(lag->retained_bytes) << "the server keeps binlogs by its own expiry";

  ASSERT_TRUE(source_->confirm(more.back().resume_offset));
  EXPECT_TRUE(cppcdc::test::wait_until(
      [&] {
        lag = source_->lag();
        return lag && lag->confirmed_lag_bytes && *lag->confirmed_lag_bytes < kBig / 2;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)))
      << (lag && lag->confirmed_lag_bytes ? std::to_string(*lag->confirmed_lag_bytes) : "none");
}

// The source holds the pipeline's named lock on the server from its start to its close: a
// start while another connection holds it stops (kind configuration, naming the holder)
// instead of running the pipeline twice, and so does a reconnect (close, start) after the
// lock's connection was lost (a server restart, here a KILL) and another process took it.
TEST_F(MariaDbSource, AStartStopsWhileAnotherConnectionHoldsThePipelinesLock) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  const std::string lock = "'cppcdc:" + db_ + "'";
  Session other;
  ASSERT_EQ(other.value("SELECT GET_LOCK(" + lock + ", 0)"), "1");
  const std::string other_id = other.value("SELECT CONNECTION_ID()");
  {
    auto s = mysql::make_mysql_source(config());
    ASSERT_TRUE(s.has_value()) << s.error().report();
    auto st = (*s)->start(std::nullopt);
    ASSERT_FALSE(st.has_value());
    EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
    EXPECT_NE(st.error().report().find("the server's named lock \"cppcdc:" + db_ +
                                       "\" is held by connection " + other_id + " (user root"),
              std::string::npos)
        << st.error().report();
    EXPECT_NE(st.error().report().find("does not start"), std::string::npos) << st.error().report();
  }
  ASSERT_EQ(other.value("SELECT RELEASE_LOCK(" + lock + ")"), "1");
  start(config());
  const std::string first = session_.value("SELECT IS_USED_LOCK(" + lock + ")");
  ASSERT_FALSE(first.empty());
  EXPECT_NE(first, other_id);
  // close() lets go of it; a start takes it again.
  source_->close();
  EXPECT_TRUE(cppcdc::test::wait_until(
      [&] { return session_.value("SELECT IS_USED_LOCK(" + lock + ")").empty(); },
      std::chrono::seconds(10)));
  ASSERT_TRUE(source_->start(std::nullopt).has_value());
  const std::string second = session_.value("SELECT IS_USED_LOCK(" + lock + ")");
  EXPECT_FALSE(second.empty());
  EXPECT_NE(second, first);

  // Its connection is lost, and another process takes the lock meanwhile: the reconnect
  // stops.
  session_.exec("KILL " + second);
  source_->close();
  ASSERT_EQ(other.value("SELECT GET_LOCK(" + lock + ", 10)"), "1");
  auto taken = source_->start(std::nullopt);
  ASSERT_FALSE(taken.has_value());
  EXPECT_EQ(taken.error().kind(), ErrorKind::kConfiguration) << taken.error().report();
  EXPECT_NE(taken.error().report().find("is held by connection " + other_id), std::string::npos)
      << taken.error().report();
  source_->close();
}

// Two pipelines (different source_ids) with one replica server id would end each other's
// binlog stream: the server drops the older reader when a newer one connects with its id. The
// second refuses to start (configuration error naming server_id and the holder) and the first
// goes on. A reader outside cppcdc with that id (here mariadb-binlog) still ends the first's
// stream: that error names the cause and the key, and is not a lost position.
TEST_F(MariaDbSource, TwoPipelinesWithOneServerIdDoNotEndEachOthersStream) {
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key)");
  auto a = config();
  a.server_id = 2'400'000 + static_cast<std::uint32_t>(getpid() % 100'000);
  const std::string id = std::to_string(a.server_id);
  start(a);
  auto b = a;
  b.source_id = db_ + "_b";
  {
    auto s = mysql::make_mysql_source(b);
    ASSERT_TRUE(s.has_value()) << s.error().report();
    auto st = (*s)->start(std::nullopt);
    ASSERT_FALSE(st.has_value());
    EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
    const std::string report = st.error().report();
    EXPECT_NE(report.find("replica server id " + id + " is in use"), std::string::npos) << report;
    EXPECT_NE(report.find("\"cppcdc:server_id:" + id + "\" is held by connection "),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("server_id"), std::string::npos) << report;
    (*s)->close();
  }
  session_.exec("INSERT INTO " + db_ + ".t VALUES (1)");
  auto first = rows(1);
  ASSERT_EQ(count_rows(first), 1u) << "the first pipeline's stream was ended";

  // Another binlog reader with the same id, not a cppcdc, from the current binlog on (an older
  // one may have been purged by another test).
  const std::string binlog = session_.value("SHOW MASTER STATUS");
  ASSERT_FALSE(binlog.empty());
  const pid_t reader = fork();
  if (reader == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    const std::string port_arg = "--port=" + std::to_string(*port());
    const std::string id_arg = "--stop-never-slave-server-id=" + id;
    execlp("mariadb-binlog", "mariadb-binlog", "--no-defaults", "--read-from-remote-server",
           "--host=127.0.0.1", port_arg.c_str(), "--user=root", "--stop-never", id_arg.c_str(),
           "--to-last-log", binlog.c_str(), nullptr);
    _exit(127);
  }
  ASSERT_GT(reader, 0);
  std::optional<Error> ended;
  EXPECT_TRUE(cppcdc::test::wait_until(
      [&] {
        std::vector<Event> batch;
        auto st = source_->poll(batch, 1000, std::chrono::milliseconds(100));
        if (!st) ended = st.error();
        return ended.has_value();
      },
      std::chrono::seconds(30)));
  kill(reader, SIGKILL);
  int status = 0;
  waitpid(reader, &status, 0);
  ASSERT_TRUE(ended);
  const std::string report = ended->report();
  EXPECT_NE(report.find("the same replica server id"), std::string::npos) << report;
  EXPECT_NE(report.find("[source] server_id"), std::string::npos) << report;
  EXPECT_NE(ended->condition(), ErrorCondition::kSourcePositionLost) << report;
  EXPECT_NE(ended->kind(), ErrorKind::kTransient) << report;
}

// share_decoding: transactions whose rows poll() decodes (while it has little queued) come
// out exactly as those the reader decodes. Two pipelines read the same transactions, one with
// it and one without; the first logs how many it decoded on the poll thread, which must be
// some, and every field of every event must agree.
TEST_F(MariaDbSource, SharedDecodingDeliversWhatTheReaderDecodes) {
  session_.exec("CREATE TABLE " + db_ +
                ".t (id int primary key, v varchar(40), d decimal(12,3), ts datetime(6), "
                "b blob, e enum('x','y'))");
  auto shared = config();
  ASSERT_TRUE(shared.share_decoding);  // the default
  auto alone = config_for({db_ + ".t"}, db_ + "_alone");
  alone.share_decoding = false;
  auto plain = mysql::make_mysql_source(alone);
  ASSERT_TRUE(plain.has_value()) << plain.error().report();
  ASSERT_TRUE((*plain)->start(std::nullopt).has_value());
  LogCapture log;
  start(shared);
  constexpr int kTransactions = 60;
  std::size_t expected = 0;
  for (int t = 0; t < kTransactions; ++t) {
    session_.exec("BEGIN");
    const int id = t * 10;
    session_.exec("INSERT INTO " + db_ + ".t VALUES (" + std::to_string(id) + ", 'v" +
                  std::to_string(t) + "', -" + std::to_string(t) +
                  ".125, '2026-12-05 10:00:00.25', x'00ff', 'y'), (" + std::to_string(id + 1) +
                  ", NULL, NULL, NULL, NULL, NULL)");
    session_.exec("UPDATE " + db_ + ".t SET v = 'w' WHERE id = " + std::to_string(id));
    session_.exec("DELETE FROM " + db_ + ".t WHERE id = " + std::to_string(id + 1));
    session_.exec("COMMIT");
    expected += 4;
  }
  const auto got = rows(expected);
  const auto want =
      poll_until(**plain, [&](const auto& all) { return count_rows(all) >= expected; });
  source_->close();
  (*plain)->close();
  EXPECT_NE(log.text().find("transactions with rows were decoded on the poll thread"),
            std::string::npos)
      << log.text();
  ASSERT_EQ(got.size(), expected);
  ASSERT_EQ(want.size(), expected);
  for (std::size_t i = 0; i < expected; ++i) {
    Event a = got[i];
    Event b = want[i];
    a.ts = b.ts = 0;  // when each pipeline read it
    EXPECT_EQ(a.to_json(), b.to_json()) << i;
    EXPECT_EQ(a.resume_offset, b.resume_offset) << i;
    EXPECT_EQ(a.resume_state.empty(), b.resume_state.empty()) << i;
    EXPECT_EQ(a.gtid, b.gtid) << i;
    EXPECT_EQ(a.source.offset, b.source.offset) << i;
  }
}

// A transaction past spill_threshold_bytes keeps its later rows events undecoded in the spill
// file and decodes them at the commit. Three pipelines read the same transactions: one holds
// them in memory, one spills from the first event on (threshold 0), one part-way through a
// rows event (a few KB); every field of every event must agree, across two tables, inserts,
// updates (before and after images), deletes, NULLs, and a small transaction between two
// large ones (so a spill's state does not leak into the next transaction).
TEST_F(MariaDbSource, ASpilledTransactionDeliversWhatOneHeldInMemoryDoes) {
  session_.exec("CREATE TABLE " + db_ +
                ".t (id int primary key, v varchar(40), d decimal(12,3), ts datetime(6), "
                "b blob, e enum('x','y'))");
  session_.exec("CREATE TABLE " + db_ + ".u (k bigint primary key, note text)");
  const std::vector<std::string> tables{db_ + ".t", db_ + ".u"};
  auto in_memory = config_for(tables, db_ + "_mem");
  in_memory.share_decoding = false;
  auto from_start = config_for(tables, db_ + "_s0");
  from_start.spill_threshold_bytes = 0;
  auto part_way = config_for(tables, db_ + "_s4k");
  part_way.spill_threshold_bytes = 4096;
  std::vector<std::unique_ptr<Source>> sources;
  for (const auto* c : {&in_memory, &from_start, &part_way}) {
    auto s = mysql::make_mysql_source(*c);
    ASSERT_TRUE(s.has_value()) << s.error().report();
    ASSERT_TRUE((*s)->start(std::nullopt).has_value());
    sources.push_back(std::move(*s));
  }
  LogCapture log;
  std::size_t expected = 0;
  const auto large = [&](int base) {
    session_.exec("BEGIN");
    std::string values;
    for (int i = 0; i < 200; ++i) {
      const int id = base + i;
      values += (i ? ", (" : "(") + std::to_string(id) + ", " +
                (i % 7 == 0 ? std::string("NULL") : "'v" + std::to_string(id) + "'") + ", -" +
                std::to_string(id) + ".125, '2026-12-06 10:00:00.25', x'00ff', " +
                (i % 2 ? "'x'" : "'y'") + ")";
    }
    session_.exec("INSERT INTO " + db_ + ".t VALUES " + values);
    session_.exec("INSERT INTO " + db_ + ".u VALUES (" + std::to_string(base) + ", '" +
                  std::string(300, 'n') + "'), (" + std::to_string(base + 1) + ", NULL)");
    session_.exec("UPDATE " + db_ +
                  ".t SET v = concat(coalesce(v, ''), 'w'), e = 'x' WHERE id >= " +
                  std::to_string(base + 50) + " AND id < " + std::to_string(base + 120));
    session_.exec("DELETE FROM " + db_ + ".t WHERE id >= " + std::to_string(base + 150));
    session_.exec("UPDATE " + db_ + ".u SET note = 'changed' WHERE k = " + std::to_string(base));
    session_.exec("COMMIT");
    expected += 200 + 2 + 70 + 50 + 1;
  };
  large(0);
  session_.exec("INSERT INTO " + db_ + ".u VALUES (-1, 'small')");
  expected += 1;
  large(1000);
  std::vector<std::vector<Event>> got;
  for (auto& s : sources) {
    got.push_back(poll_until(*s, [&](const auto& all) { return count_rows(all) >= expected; }));
    s->close();
  }
  EXPECT_NE(log.text().find("spilling it to a temporary file"), std::string::npos) << log.text();
  const auto& want = got[0];
  ASSERT_EQ(want.size(), expected);
  for (std::size_t p = 1; p < got.size(); ++p) {
    ASSERT_EQ(got[p].size(), expected) << "pipeline " << p;
    for (std::size_t i = 0; i < expected; ++i) {
      Event a = got[p][i];
      Event b = want[i];
      a.ts = b.ts = 0;  // when each pipeline read it
      ASSERT_EQ(a.to_json(), b.to_json()) << "pipeline " << p << ", event " << i;
      EXPECT_EQ(a.resume_offset, b.resume_offset) << p << " " << i;
      EXPECT_EQ(a.resume_state.empty(), b.resume_state.empty()) << p << " " << i;
      EXPECT_EQ(a.gtid, b.gtid) << p << " " << i;
      EXPECT_EQ(a.source.offset, b.source.offset) << p << " " << i;
      EXPECT_EQ(a.shape != nullptr, b.shape != nullptr) << p << " " << i;
    }
  }
}

}  // namespace
}  // namespace cppcdc::it::maria
