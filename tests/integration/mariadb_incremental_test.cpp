// The incremental (DBLog) snapshot of the MariaDB source against the real server: a table read
// in chunks while a writer inserts, updates, re-keys and deletes rows ends equal to the table;
// a composite key (with a binary part) is read in key order, every row once, its values equal
// to the stream's for every type; a restart mid-snapshot resumes at the saved cursor; a
// keyless table is refused; `cppcdc run` takes a request through `cppcdc snapshot request`.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/runtime.hpp"
#include "integration/mariadb_util.hpp"
#include "integration/pg_util.hpp"
#include "replay.hpp"

namespace cppcdc::it::maria {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class MariaDbIncremental : public ::testing::Test {
 protected:
  void SetUp() override {
    MARIADB_OR_SKIP();
    db_ = database_for_test("incr");
    session_.exec("DROP DATABASE IF EXISTS " + db_);
    session_.exec("CREATE DATABASE " + db_);
  }
  void TearDown() override {
    if (!db_.empty()) session_.exec("DROP DATABASE IF EXISTS " + db_);
  }

  mysql::MysqlSourceConfig config(std::vector<std::string> tables, std::uint32_t chunk) {
    auto c = config_for(std::move(tables), db_);
    c.snapshot_mode = SnapshotMode::kIncremental;
    c.snapshot_chunk_size = chunk;
    c.snapshot_signal_table = db_ + ".cdc_signal";
    return c;
  }

  Result<std::unique_ptr<Runtime>> runtime(mysql::MysqlSourceConfig c,
                                           std::shared_ptr<Checkpoint> checkpoint) {
    auto src = mysql::make_mysql_source(std::move(c));
    if (!src) return fail(src.error());
    RuntimeConfig rc;
    rc.source = std::move(*src);
    rc.checkpoint = std::move(checkpoint);
    rc.options.max_poll_wait_ms = 200;
    rc.options.max_buffer_size = 5000;
    return Runtime::create(std::move(rc));
  }

  // Polls, applies to `replay` and acknowledges until `done` holds or `seconds` pass.
  static bool consume(Runtime& rt, Replay& replay, const std::function<bool()>& done, int seconds,
                      std::vector<Event>* seen = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      auto batch = rt.poll_event_batch();
      if (!batch) {
        ADD_FAILURE() << batch.error().report();
        return false;
      }
      for (const auto& e : batch->events()) {
        replay.apply(e);
        if (seen) seen->push_back(e);
      }
      if (!rt.commit_ack(batch->ack_mode())) return false;
      if (done()) return true;
    }
    return done();
  }

  // The table as the server's text protocol prints it, keyed as Replay keys it.
  ReplayTable table_rows(const std::string& table, const std::vector<std::string>& key) {
    ReplayTable out;
    auto conn = mysql::detail::connect(config_for({"x.y"}, "reader"));
    EXPECT_TRUE(conn);
    auto r = mysql::detail::query(conn->get(), "SELECT * FROM " + db_ + "." + table, "reading");
    EXPECT_TRUE(r) << (r ? "" : r.error().report());
    if (!r) return out;
    for (const auto& row : r->rows) {
      ReplayRow values;
      for (std::size_t i = 0; i < r->columns.size(); ++i) values[r->columns[i]] = row[i];
      std::string k;
      for (const auto& name : key) k += name + "=" + values[name].value_or("\\N") + ";";
      out[k] = std::move(values);
    }
    return out;
  }

  Session session_;
  std::string db_;
};

// A 50,000-row table read in chunks of 200 while a writer runs inserts, updates, key changes,
// deletes and multi-statement transactions on it: the replayed sink ends equal to the table.
TEST_F(MariaDbIncremental, ATableUnderConcurrentWritesEndsEqualToTheSource) {
  constexpr int kRows = 50'000;
  session_.exec("CREATE TABLE " + db_ + ".items (id bigint primary key, v int, note varchar(64))");
  session_.exec("INSERT INTO " + db_ + ".items SELECT seq, seq % 1000, CONCAT('n', seq) FROM " +
                db_ + ".seq_1_to_" + std::to_string(kRows));
  auto rt = runtime(config({db_ + ".items"}, 200), std::make_shared<InMemoryCheckpoint>());
  ASSERT_TRUE(rt) << rt.error().report();
  ASSERT_TRUE((*rt)->start());
  auto control = (*rt)->incremental_snapshot_control();
  ASSERT_TRUE(control);

  std::atomic<bool> stop{false};
  std::atomic<int> ops{0};
  std::thread writer([&] {
    Session w;
    std::mt19937 rng(20261203);
    std::uniform_int_distribution<int> pick(1, kRows);
    int next_id = kRows + 1;
    const std::string t = db_ + ".items";
    while (!stop.load()) {
      const std::string id = std::to_string(pick(rng));
      switch (rng() % 6) {
        case 0:
        case 1:
          w.exec("UPDATE " + t + " SET v = v + 1, note = CONCAT(note, '+') WHERE id = " + id);
          break;
        case 2:
          w.exec("DELETE FROM " + t + " WHERE id = " + id);
          break;
        case 3:
          w.exec("INSERT INTO " + t + " VALUES (" + std::to_string(next_id++) + ", 1, 'new')");
          break;
        case 4:  // a key change: the row moves (possibly into a chunk not read yet)
          w.exec("UPDATE IGNORE " + t + " SET id = " + std::to_string(next_id++) +
                 " WHERE id = " + id);
          break;
        default:
          w.exec("BEGIN");
          w.exec("UPDATE " + t + " SET v = -v WHERE id = " + id);
          w.exec("DELETE FROM " + t + " WHERE id = " + std::to_string(pick(rng)));
          w.exec("INSERT INTO " + t + " VALUES (" + std::to_string(next_id++) + ", 2, 'tx')");
          w.exec("COMMIT");
      }
      ++ops;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });

  Replay replay;
  std::vector<Event> seen;
  const bool complete = consume(
      **rt, replay, [&] { return control->state().is_complete(); }, 300, &seen);
  stop.store(true);
  writer.join();
  ASSERT_TRUE(complete) << control->state().to_json();
  session_.exec("INSERT INTO " + db_ + ".items VALUES (-1, -1, 'marker')");
  ASSERT_TRUE(consume(
      **rt, replay, [&] { return replay.tables[db_ + ".items"].count("id=-1;") > 0; }, 60));
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  const auto source = table_rows("items", {"id"});
  EXPECT_EQ(replay.tables[db_ + ".items"].size(), source.size());
  EXPECT_EQ(diff_tables(replay.tables[db_ + ".items"], source), "");
  std::size_t reads = 0;
  for (const auto& e : seen) {
    reads += e.op == Operation::kRead;
    // The watermark table's writes never reach the sink.
    EXPECT_NE(e.table, "cdc_signal");
  }
  const auto state = control->state();
  ASSERT_EQ(state.tables.size(), 1u);
  EXPECT_GT(ops.load(), 100) << "the writer barely ran";
  EXPECT_EQ(state.tables[0].rows, reads);
  EXPECT_GE(state.tables[0].chunks, static_cast<std::uint64_t>(kRows / 200));
  std::cout << "incremental snapshot: " << reads << " rows in " << state.tables[0].chunks
            << " chunks while the writer ran " << ops.load() << " statements\n";
  ASSERT_TRUE((*rt)->stop());
}

// A composite key (text, integer, binary) read in chunks of 2: every row once, in key order;
// every type's chunk value equals what the stream prints for the same row (the update's
// before image, which binlog_row_image FULL carries whole).
TEST_F(MariaDbIncremental, CompositeKeyRowsComeInKeyOrderWithTheStreamsValues) {
  session_.exec("CREATE TABLE " + db_ +
                ".typed (region varchar(8) CHARACTER SET latin1, n int, tag varbinary(4), "
                "i8 tinyint, u64 bigint unsigned, d decimal(30,10), f float, g double, "
                "b bit(10), y year, dt date, tm time(3), ts datetime(6), tz timestamp(3) NULL, "
                "c char(4), txt text, bl blob, e enum('x','y','ü'), s set('a','b','c'), "
                "j json, ip inet6, u uuid, pt point, touched int default 0, "
                "PRIMARY KEY (region, n, tag))");
  const std::string ins = "INSERT INTO " + db_ + ".typed VALUES ";
  session_.exec(ins +
                "('eu', 1, 0x00, -128, 18446744073709551615, -12345678901234567890.0123456789, "
                "1.5, -2.25e100, b'1010101010', 1901, '0000-00-00', '-838:59:59.000', "
                "'2026-12-03 05:00:00.123456', '2038-01-19 03:14:07.999', 'ab', 'tëxt', "
                "0xdeadbeef, 'ü', 'a,c', '{\"k\": [1, 2]}', '::1', "
                "'123e4567-e89b-12d3-a456-426614174000', POINT(1, 2), 0)");
  session_.exec(ins +
                "('eu', 1, 0x01ff, 127, 0, 0.0000000001, NULL, NULL, b'0', 2155, '2026-02-28', "
                "'838:59:59.999', '1000-01-01 00:00:00.000000', NULL, '', '', '', 'y', '', "
                "'[]', 'fe80::1', '00000000-0000-0000-0000-000000000000', NULL, 0)");
  for (const char* region : {"apac", "eu", "us", "zz"}) {
    for (int n : {-5, 2, 10}) {
      session_.exec(
          ins + "('" + region + "', " + std::to_string(n) +
          ", 0xab, 1, 2, 3.5, 4, 5, b'1', 2000, '2000-01-01', '01:02:03', "
          "'2000-01-01 01:02:03', '2000-01-01 01:02:03', 'c', 't', 'b', 'x', 'b', "
          "'{}', '::ffff:10.0.0.1', '123e4567-e89b-12d3-a456-426614174000', POINT(0,0), 0)");
    }
  }
  auto rt = runtime(config({db_ + ".typed"}, 2), std::make_shared<InMemoryCheckpoint>());
  ASSERT_TRUE(rt) << rt.error().report();
  ASSERT_TRUE((*rt)->start());
  auto control = (*rt)->incremental_snapshot_control();
  ASSERT_TRUE(control);
  Replay replay;
  std::vector<Event> seen;
  ASSERT_TRUE(consume(
      **rt, replay, [&] { return control->state().is_complete(); }, 60, &seen));
  std::vector<std::string> order;
  std::map<std::string, Row> snapshot_rows;
  for (const auto& e : seen) {
    if (e.op != Operation::kRead) continue;
    const std::string key = text_of(&*e.after, "region") + "|" + text_of(&*e.after, "n") + "|" +
                            text_of(&*e.after, "tag");
    order.push_back(key);
    EXPECT_TRUE(snapshot_rows.emplace(key, *e.after).second) << "twice: " << key;
    EXPECT_EQ(e.primary_key, (std::vector<std::string>{"region", "n", "tag"}));
  }
  ASSERT_EQ(order.size(), 14u);
  // Key order as the server sorts it.
  std::vector<std::string> expected;
  for (const auto& r : session_.rows("SELECT region, n, CONCAT('\\\\x', LOWER(HEX(tag))) FROM " +
                                     db_ + ".typed ORDER BY region, n, tag")) {
    expected.push_back(*r[0] + "|" + *r[1] + "|" + *r[2]);
  }
  EXPECT_EQ(order, expected);
  EXPECT_EQ(control->state().tables[0].chunks, 7u);  // the empty read after them delivers none

  // Touch every row: the stream's before images are the rows as the stream prints them.
  session_.exec("UPDATE " + db_ + ".typed SET touched = 1");
  std::vector<Event> updates;
  ASSERT_TRUE(consume(
      **rt, replay,
      [&] {
        std::size_t n = 0;
        for (const auto& e : updates) n += e.op == Operation::kUpdate;
        return n == 14;
      },
      60, &updates));
  int compared = 0;
  for (const auto& e : updates) {
    if (e.op != Operation::kUpdate) continue;
    const Row* before = e.before.row();
    ASSERT_TRUE(before);
    const std::string key =
        text_of(before, "region") + "|" + text_of(before, "n") + "|" + text_of(before, "tag");
    ASSERT_TRUE(snapshot_rows.count(key)) << key;
    const Row& chunk = snapshot_rows[key];
    ASSERT_EQ(chunk.size(), before->size());
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      EXPECT_EQ(chunk[i].name, (*before)[i].name);
      EXPECT_EQ(chunk[i].text, (*before)[i].text) << key << " column " << chunk[i].name;
      EXPECT_EQ(chunk[i].is_json, (*before)[i].is_json) << chunk[i].name;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 14 * 24);
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  ASSERT_TRUE((*rt)->stop());
}

// Stopped after a few chunks, started again on the same checkpoint: the snapshot goes on from
// the saved cursor (no chunk before it read again), rows written meanwhile are streamed, and
// the two runs together hold exactly the table.
TEST_F(MariaDbIncremental, ARestartMidSnapshotResumesAtTheSavedCursor) {
  session_.exec("CREATE TABLE " + db_ + ".r (id int primary key, v varchar(16))");
  session_.exec("INSERT INTO " + db_ + ".r SELECT seq, CONCAT('v', seq) FROM " + db_ +
                ".seq_1_to_3000");
  auto checkpoint = std::make_shared<InMemoryCheckpoint>();
  Replay replay;
  std::uint64_t rows_first = 0;
  {
    auto rt = runtime(config({db_ + ".r"}, 100), checkpoint);
    ASSERT_TRUE(rt) << rt.error().report();
    ASSERT_TRUE((*rt)->start());
    auto control = (*rt)->incremental_snapshot_control();
    ASSERT_TRUE(consume(
        **rt, replay, [&] { return control->state().tables.at(0).chunks >= 5; }, 60));
    ASSERT_TRUE((*rt)->stop());
    rows_first = control->state().tables.at(0).rows;
    EXPECT_LT(rows_first, 3000u);
  }
  auto saved = checkpoint->load();
  ASSERT_TRUE(saved && *saved) << "no checkpoint saved";
  auto split = boost::json::parse((*saved)->source_state).as_object();
  auto state = IncrementalSnapshotState::from_json(boost::json::serialize(split.at("incremental")));
  ASSERT_TRUE(state) << (*saved)->source_state;
  ASSERT_TRUE(state->tables.at(0).cursor);
  const int cursor = std::stoi(state->tables.at(0).cursor->at(0));
  EXPECT_GE(cursor, 500);
  // Changes while cppcdc is stopped, on both sides of the cursor.
  session_.exec("UPDATE " + db_ + ".r SET v = 'changed' WHERE id IN (1, 2999)");
  session_.exec("DELETE FROM " + db_ + ".r WHERE id IN (2, 2998)");
  session_.exec("INSERT INTO " + db_ + ".r VALUES (5000, 'new')");

  auto rt = runtime(config({db_ + ".r"}, 100), checkpoint);
  ASSERT_TRUE(rt) << rt.error().report();
  ASSERT_TRUE((*rt)->start());
  auto control = (*rt)->incremental_snapshot_control();
  std::vector<Event> seen;
  ASSERT_TRUE(consume(
      **rt, replay, [&] { return control->state().is_complete(); }, 60, &seen));
  std::set<int> second_reads;
  for (const auto& e : seen) {
    if (e.op == Operation::kRead) second_reads.insert(std::stoi(text_of(&*e.after, "id")));
  }
  ASSERT_FALSE(second_reads.empty());
  EXPECT_GT(*second_reads.begin(), cursor) << "the second run read rows before the cursor again";
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  EXPECT_EQ(diff_tables(replay.tables[db_ + ".r"], table_rows("r", {"id"})), "");
  ASSERT_TRUE((*rt)->stop());
}

// A table without a primary key: refused at start (the configured set) and on request, each
// error naming the table and the remedy. Also a request for a table that is not captured.
TEST_F(MariaDbIncremental, AKeylessTableIsRefusedWithTheTableAndTheRemedy) {
  session_.exec("CREATE TABLE " + db_ + ".nokey (a int, b text)");
  session_.exec("CREATE TABLE " + db_ + ".keyed (id int primary key)");
  auto rt = runtime(config({db_ + ".nokey"}, 10), std::make_shared<InMemoryCheckpoint>());
  ASSERT_TRUE(rt) << rt.error().report();
  auto st = (*rt)->start();
  ASSERT_FALSE(st);
  const std::string report = st.error().report();
  EXPECT_NE(report.find(db_ + ".nokey has no primary key"), std::string::npos) << report;
  EXPECT_NE(report.find("ADD PRIMARY KEY"), std::string::npos) << report;

  // On request, in a pipeline that streams without a snapshot.
  auto c = config({db_ + ".*"}, 10);
  c.snapshot_mode = SnapshotMode::kNever;
  c.snapshot_signal_table = "cdc_signals_" + db_ + ".watermarks";
  session_.exec("DROP DATABASE IF EXISTS cdc_signals_" + db_);
  session_.exec("CREATE DATABASE cdc_signals_" + db_);
  auto rt2 = runtime(c, std::make_shared<InMemoryCheckpoint>());
  ASSERT_TRUE(rt2) << rt2.error().report();
  ASSERT_TRUE((*rt2)->start());
  auto control = (*rt2)->incremental_snapshot_control();
  ASSERT_TRUE(control);
  std::atomic<bool> done{false};
  std::thread poller([&] {
    while (!done.load()) {
      auto batch = (*rt2)->poll_event_batch();
      if (!batch) break;
      (void)(*rt2)->commit_ack(batch->ack_mode());
    }
  });
  auto refused = control->request({db_ + ".nokey"}, 20s);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().report().find(db_ + ".nokey has no primary key"), std::string::npos)
      << refused.error().report();
  auto uncaptured = control->request({"mysql.user"}, 20s);
  ASSERT_FALSE(uncaptured);
  EXPECT_NE(uncaptured.error().report().find("table mysql.user is not captured"), std::string::npos)
      << uncaptured.error().report();
  EXPECT_TRUE(control->request({db_ + ".keyed"}, 20s));
  EXPECT_TRUE(cppcdc::test::wait_until([&] { return control->state().is_complete(); }, 30s));
  done.store(true);
  poller.join();
  // The watermark table was made where configured.
  EXPECT_EQ(session_.value("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                           "'cdc_signals_" +
                           db_ + "' AND TABLE_NAME = 'watermarks'"),
            "1");
  ASSERT_TRUE((*rt2)->stop());
  session_.exec("DROP DATABASE IF EXISTS cdc_signals_" + db_);
}

// `cppcdc run` on a TOML config streaming without a snapshot; `cppcdc snapshot request`
// through the control socket reads the table into the file sink while rows keep streaming.
TEST_F(MariaDbIncremental, TheCliTakesARequestThroughTheControlSocket) {
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-" + db_ + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  session_.exec("CREATE TABLE " + db_ + ".t (id int primary key, v varchar(20))");
  session_.exec("INSERT INTO " + db_ + ".t SELECT seq, CONCAT('row', seq) FROM " + db_ +
                ".seq_1_to_2500");
  const fs::path cfg = dir / "cdc.toml";
  std::ofstream(cfg) << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = " << *port()
                     << "\nuser = \"root\"\ntables = [\"" << db_ << ".t\"]\nsource_id = \"" << db_
                     << "\"\nheartbeat_interval_ms = 200\n\n[source.snapshot]\n"
                     << "mode = \"never\"\nchunk_size = 1000\nsignal_table = \"" << db_
                     << ".cdc_signal\"\n\n[sink]\ntype = \"file\"\npath = \""
                     << (dir / "events.jsonl").string() << "\"\n\n[state.offset]\n"
                     << "backend = \"local_fs\"\ndir = \"" << (dir / "state").string() << "\"\n";
  auto output = [&] {
    std::ifstream in(dir / "events.jsonl");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  };
  pid_t child = -1;
  start_cppcdc_process(child, dir, "", "", 0);
  // The control socket answers before the source has read its start position (it comes up
  // first, to stop a second copy early), so a row written once `snapshot status` answers can
  // still precede that position and, with snapshot mode "never", is rightly not captured. The
  // log says when the binlog stream has started.
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        std::ifstream in(dir / "cppcdc.log");
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str().find("pipeline running") != std::string::npos;
      },
      30s))
      << log_tail(dir / "cppcdc.log");
  ASSERT_EQ(run_cli({"snapshot", "status", "--config", cfg.string()}).code, 0)
      << log_tail(dir / "cppcdc.log");
  session_.exec("INSERT INTO " + db_ + ".t VALUES (9001, 'streamed')");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] { return output().find("\"streamed\"") != std::string::npos; }, 30s))
      << log_tail(dir / "cppcdc.log");
  auto o = run_cli({"snapshot", "request", "--config", cfg.string(), db_ + ".t"});
  ASSERT_EQ(o.code, 0) << o.output << log_tail(dir / "cppcdc.log");
  EXPECT_NE(o.output.find("requested " + db_ + ".t"), std::string::npos) << o.output;
  EXPECT_TRUE(
      cppcdc::test::wait_until([&] { return count(output(), "\"op\":\"read\"") == 2501; }, 60s))
      << count(output(), "\"op\":\"read\"") << " rows read\n"
      << log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        auto s = run_cli({"snapshot", "status", "--config", cfg.string()});
        return s.output.find(": complete (generation 1)") != std::string::npos;
      },
      30s));
  o = run_cli({"snapshot", "status", "--config", cfg.string()});
  EXPECT_NE(o.output.find(db_ + ".t"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("2501"), std::string::npos) << o.output;
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM) & 0x7f, 0);
  fs::remove_all(dir);
}

// `cppcdc run` with mode "incremental" SIGKILLed mid-snapshot while rows change: the restart
// goes on from the checkpoint's cursor, and the sink file, replayed, equals the table. A second
// table is then requested over the admin HTTP endpoint.
TEST_F(MariaDbIncremental, TheCliResumesAfterSigkillAndTakesAnHttpRequest) {
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-" + db_ + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  session_.exec("CREATE TABLE " + db_ + ".big (id int primary key, v varchar(20))");
  session_.exec("INSERT INTO " + db_ + ".big SELECT seq, CONCAT('row', seq) FROM " + db_ +
                ".seq_1_to_20000");
  session_.exec("CREATE TABLE " + db_ + ".small (a varchar(8), b int, primary key (a, b))");
  session_.exec("INSERT INTO " + db_ + ".small SELECT CONCAT('k', seq % 7), seq FROM " + db_ +
                ".seq_1_to_50");
  const fs::path cfg = dir / "cdc.toml";
  std::ofstream(cfg) << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = " << *port()
                     << "\nuser = \"root\"\ntables = [\"" << db_ << ".big\", \"" << db_
                     << ".small\"]\nsource_id = \"" << db_
                     << "\"\nheartbeat_interval_ms = 200\n\n[source.snapshot]\n"
                     << "mode = \"incremental\"\nchunk_size = 100\ntables = [\"" << db_
                     << ".big\"]\nsignal_table = \"" << db_ << ".cdc_signal\"\n\n[sink]\n"
                     << "type = \"file\"\npath = \"" << (dir / "events.jsonl").string()
                     << "\"\n\n[state.offset]\nbackend = \"local_fs\"\ndir = \""
                     << (dir / "state").string() << "\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n";
  auto reads = [&] {
    std::size_t n = 0;
    if (!fs::exists(dir / "events.jsonl")) return n;
    for (const auto& e : read_sink((dir / "events.jsonl").string())) {
      n += e.op == Operation::kRead;
    }
    return n;
  };
  pid_t child = -1;
  start_cppcdc_process(child, dir, "", "", 0);
  ASSERT_TRUE(cppcdc::test::wait_until([&] { return reads() >= 3000; }, 60s))
      << log_tail(dir / "cppcdc.log");
  // Changes on both sides of wherever the snapshot is, then the kill.
  session_.exec("UPDATE " + db_ + ".big SET v = 'changed' WHERE id IN (5, 10000, 19999)");
  session_.exec("DELETE FROM " + db_ + ".big WHERE id IN (6, 10001, 19998)");
  EXPECT_EQ(stop_cppcdc_process(child, SIGKILL) & 0x7f, SIGKILL);
  const std::size_t before_restart = reads();
  EXPECT_LT(before_restart, 20000u);
  session_.exec("INSERT INTO " + db_ + ".big VALUES (30000, 'while stopped')");
  session_.exec("UPDATE " + db_ + ".big SET v = 'changed again' WHERE id IN (7, 15000)");
  start_cppcdc_process(child, dir, "", "", 0);
  auto status = [&] {
    auto o = run_cli({"snapshot", "status", "--json", "--config", cfg.string()});
    return o.output;
  };
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] { return status().find("\"status\":\"complete\"") != std::string::npos; }, 90s))
      << status() << log_tail(dir / "cppcdc.log");
  // Far fewer than the whole table again: the restart went on from the cursor.
  EXPECT_LT(reads() - before_restart, 20000u - 1000u) << "read again from the start";
  session_.exec("INSERT INTO " + db_ + ".big VALUES (-1, 'marker')");

  // The admin endpoint takes a request for the second table (composite key).
  const std::string marker = "admin server listening on http://127.0.0.1:";
  std::string log_text;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        std::ifstream in(dir / "cppcdc.log");
        log_text.assign(std::istreambuf_iterator<char>(in), {});
        return log_text.rfind(marker) != std::string::npos;
      },
      30s));
  const int admin_port = std::atoi(log_text.c_str() + log_text.rfind(marker) + marker.size());
  ASSERT_GT(admin_port, 0);
  const std::string curl =
      "curl -s -X POST -d '{\"tables\": [\"" + db_ +
      ".small\"], \"timeout_ms\": 20000}' http://127.0.0.1:" + std::to_string(admin_port) +
      "/admin/snapshot/request";
  std::string answer;
  {
    FILE* p = popen(curl.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) answer += buf;
    pclose(p);
  }
  EXPECT_NE(answer.find("\"ok\":true"), std::string::npos) << answer;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        const std::string st = status();
        return st.find("\"status\":\"complete\"") != std::string::npos &&
               st.find(db_ + ".small") != std::string::npos;
      },
      60s))
      << status() << log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        Replay r;
        for (const auto& e : read_sink((dir / "events.jsonl").string())) r.apply(e);
        return r.tables[db_ + ".big"].count("id=-1;") > 0;
      },
      30s));
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM) & 0x7f, 0);
  Replay replay;
  for (const auto& e : read_sink((dir / "events.jsonl").string())) replay.apply(e);
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  EXPECT_EQ(diff_tables(replay.tables[db_ + ".big"], table_rows("big", {"id"})), "");
  EXPECT_EQ(diff_tables(replay.tables[db_ + ".small"], table_rows("small", {"a", "b"})), "");
  EXPECT_EQ(replay.tables[db_ + ".small"].size(), 50u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc::it::maria
