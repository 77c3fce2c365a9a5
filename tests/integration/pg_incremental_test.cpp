// The incremental (DBLog) snapshot against a real server: a large table read in chunks while a
// writer changes it at random ends equal to the source; a commit that is in the WAL but not
// yet visible (held in a synchronous-replication wait) cannot make a stale chunk row win; the
// snapshot can be steered while it runs.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "replay.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

class PgIncremental : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("incr");
    it::fresh_database(db_);
    // A test that died with the ghost standby configured would leave every later synchronous
    // commit on this server waiting forever: start each test without it. But not while the
    // test that set it runs (ctest runs tests in parallel): that one holds the advisory lock
    // kGhostStandbyLock on its session for as long as it uses the setting, and a process that
    // died lost its session, and with it the lock.
    PgSession admin(it::admin_dsn());
    if (admin.scalar("show synchronous_standby_names") != "" &&
        admin.scalar("select pg_try_advisory_lock(" + std::to_string(kGhostStandbyLock) + ")") ==
            "t") {
      reset_ghost_standby(admin);
      admin.query("select pg_advisory_unlock(" + std::to_string(kGhostStandbyLock) + ")");
    }
  }
  static constexpr long kGhostStandbyLock = 7710431;
  static void reset_ghost_standby(PgSession& admin) {
    admin.query("alter system reset synchronous_standby_names");
    admin.query("select pg_reload_conf()");
  }
  void TearDown() override {
    if (ghost_standby_) {
      PgSession admin(it::admin_dsn());
      reset_ghost_standby(admin);
    }
    it::drop_slots(db_);
  }

  std::unique_ptr<Runtime> runtime(pg::SnapshotMode mode, std::vector<std::string> tables,
                                   std::uint32_t chunk_size) {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = db_;
    cfg.publication_name = "incr_pub";
    cfg.tables = std::move(tables);
    cfg.snapshot_mode = mode;
    cfg.snapshot_chunk_size = chunk_size;
    it::ReaderOptions options;
    options.max_buffer_size = 5000;
    return std::move(it::Reader(db_, std::move(cfg), options).runtime);
  }

  // Polls, applies to `replay` and acknowledges until `done` holds (checked between batches)
  // or `seconds` pass. Returns whether `done` held.
  static bool consume(Runtime& rt, it::Replay& replay, const std::function<bool()>& done,
                      int seconds, std::uint64_t* reads = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      auto batch = rt.poll_event_batch();
      if (!batch) {
        ADD_FAILURE() << batch.error().report();
        return false;
      }
      for (const auto& e : batch->events()) {
        replay.apply(e);
        if (reads && e.op == Operation::kRead) ++*reads;
      }
      if (!rt.commit_ack(batch->ack_mode())) return false;
      if (done()) return true;
    }
    return done();
  }

  std::string db_;
  bool ghost_standby_ = false;
};

}  // namespace

// Issue item 6(a): a 1,000,000-row table snapshotted in chunks while a writer updates, deletes,
// inserts and re-keys rows of that same table at random; the replayed result equals the table.
TEST_F(PgIncremental, AMillionRowTableUnderRandomWritesEndsEqualToTheSource) {
  constexpr int kRows = 1'000'000;
  PgSession s(it::dsn_for(db_));
  s.query(R"(
    create table items (id bigint primary key, v int, note text, big text);
    alter table items alter column big set storage external;
  )");
  s.query(
      "insert into items select g, g % 1000, 'n' || g, case when g % 500 = 0 then "
      "repeat(md5(g::text), 100) end from generate_series(1, " +
      std::to_string(kRows) + ") g");
  s.query("analyze items");
  auto rt = runtime(pg::SnapshotMode::kIncremental, {"public.items"}, 1024);
  ASSERT_TRUE(rt->start());
  auto control = rt->incremental_snapshot_control();
  ASSERT_TRUE(control);

  std::atomic<bool> stop{false};
  std::atomic<int> ops{0};
  std::thread writer([&] {
    PgSession w(it::dsn_for(db_));
    // The test server runs with synchronous_commit off, where WAL reaches the stream only when
    // the WAL writer flushes it (every 200 ms): each chunk would wait that long for the stream
    // to pass its high watermark. Committing synchronously, as production usually does, keeps
    // the stream close.
    w.query("set synchronous_commit = on");
    std::mt19937 rng(20261130);
    std::uniform_int_distribution<int> pick(1, kRows);
    int next_id = kRows + 1;
    while (!stop.load()) {
      const std::string id = std::to_string(pick(rng));
      switch (rng() % 6) {
        case 0:
        case 1:  // leaves big (TOASTed on some rows) unchanged
          w.query("update items set v = v + 1, note = note || '+' where id = " + id);
          break;
        case 2:
          w.query("delete from items where id = " + id);
          break;
        case 3:
          w.query("insert into items values (" + std::to_string(next_id++) + ", 1, 'new', null)");
          break;
        case 4:  // a key change (only where nothing is TOASTed, so the event is complete)
          w.query("update items set id = " + std::to_string(next_id++) + " where id = " + id +
                  " and big is null");
          break;
        default:  // a transaction of several rows
          w.query("begin; update items set v = -v where id = " + id +
                  "; delete from items where id = " + std::to_string(pick(rng)) +
                  "; insert into items values (" + std::to_string(next_id++) +
                  ", 2, 'tx', null); commit");
      }
      ++ops;
      // A steady load (about 1,000 statements/s) rather than a flood the stream lags behind.
      std::this_thread::sleep_for(std::chrono::microseconds(800));
    }
  });

  it::Replay replay;
  replay.merges_may_precede_rows = true;
  std::uint64_t reads = 0;
  const bool complete = consume(
      *rt, replay, [&] { return control->state().is_complete(); }, 600, &reads);
  stop.store(true);
  writer.join();
  ASSERT_TRUE(complete) << control->state().to_json();
  // Everything the writer did is in the stream; a last marker row shows the stream caught up.
  s.query("insert into items values (-1, -1, 'marker', null)");
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return replay.tables["public.items"].count("id=-1;") > 0; }, 60));
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  const auto source = it::source_rows(s, "public.items", {"id"});
  EXPECT_EQ(replay.tables["public.items"].size(), source.size());
  EXPECT_EQ(it::diff_tables(replay.tables["public.items"], source), "");
  const auto state = control->state();
  ASSERT_EQ(state.tables.size(), 1u);
  EXPECT_GT(ops.load(), 100) << "the writer barely ran";
  EXPECT_LE(state.tables[0].rows, reads);
  std::cout << "incremental snapshot: " << reads << " rows read in " << state.tables[0].chunks
            << " chunks while the writer ran " << ops.load() << " statements; "
            << replay.merges_before_rows << " partial updates preceded their chunk row\n";
  ASSERT_TRUE(rt->stop());
}

// Issue item 6(b): the flush-to-visibility window made deterministic. With a synchronous
// standby named that does not exist, an UPDATE's commit record is in the WAL (and decoded and
// streamed) while the transaction is still in flight to every new snapshot. A chunk read in
// that state sees the old row; it must not be delivered after the update.
TEST_F(PgIncremental, ACommitWaitingForASynchronousStandbyCannotMakeAStaleChunkRowWin) {
  PgSession s(it::dsn_for(db_));
  s.query("create table t (id int primary key, v text)");
  s.query("insert into t select g, 'old' from generate_series(1, 10) g");
  auto rt = runtime(pg::SnapshotMode::kNever, {"public.t"}, 4);
  ASSERT_TRUE(rt->start());
  auto control = rt->incremental_snapshot_control();
  it::Replay replay;
  // The first poll creates the stream's position; nothing is there yet.
  ASSERT_TRUE(consume(
      *rt, replay, [] { return true; }, 5));

  PgSession admin(it::admin_dsn());
  // Held by this session until the test ends (see SetUp); nobody else takes it for long.
  ASSERT_TRUE(it::wait_until(
      [&] {
        return admin.scalar("select pg_try_advisory_lock(" + std::to_string(kGhostStandbyLock) +
                            ")") == "t";
      },
      10s));
  admin.query("alter system set synchronous_standby_names = 'cppcdc_ghost_standby'");
  admin.query("select pg_reload_conf()");
  ghost_standby_ = true;
  PgSession w(it::dsn_for(db_));
  const std::string writer_pid = w.scalar("select pg_backend_pid()");
  // The writer's own backend must have taken the reload in, not just the admin's: a backend
  // reads a changed configuration when the postmaster's signal reaches it, and one that has
  // not would commit without waiting.
  ASSERT_TRUE(it::wait_until(
      [&] { return w.scalar("show synchronous_standby_names") == "cppcdc_ghost_standby"; }, 10s));
  // That is not enough either: a commit waits only once the checkpointer, after its own reload,
  // has marked synchronous standbys as defined in shared memory (PostgreSQL's
  // SyncRepUpdateSyncStandbysDefined); a busy checkpointer does so late, and a commit before
  // that returns at once (seen in CI). Probe commits on another table until one waits.
  s.query("create table sync_probe (n serial primary key)");
  ASSERT_TRUE(it::wait_until(
      [&] {
        PgSession p(it::dsn_for(db_));
        const std::string probe_pid = p.scalar("select pg_backend_pid()");
        std::atomic<bool> returned{false};
        std::thread probe([&] {
          p.try_exec("set synchronous_commit = on; insert into sync_probe default values");
          returned.store(true);
        });
        const bool waited =
            it::wait_until(
                [&] {
                  return returned.load() ||
                         admin.scalar("select count(*) from pg_stat_activity where pid = " +
                                      probe_pid + " and wait_event = 'SyncRep'") == "1";
                },
                10s, 20ms) &&
            !returned.load();
        if (!returned.load()) admin.query("select pg_cancel_backend(" + probe_pid + ")");
        probe.join();
        return waited;
      },
      60s, 200ms))
      << "no synchronous commit ever waited for the ghost standby";
  std::thread waiting([&] {
    // Commits locally, then waits for the standby: in the WAL, not yet visible.
    w.try_exec("set synchronous_commit = on; update t set v = 'new' where id = 5");
  });
  std::thread requester;
  struct Release {  // on every exit, an assertion's early return too: no thread left joinable
    PgSession& admin;
    const std::string& pid;
    std::thread& waiting;
    std::thread& requester;
    ~Release() {
      if (waiting.joinable()) {
        admin.try_exec("select pg_cancel_backend(" + pid + ")");
        waiting.join();
      }
      if (requester.joinable()) requester.join();
    }
  } release{admin, writer_pid, waiting, requester};
  // A loaded machine may take a while to get the update to its commit; what the writer did
  // meanwhile is shown when it never waits.
  std::string seen;
  ASSERT_TRUE(it::wait_until(
      [&] {
        seen = admin.scalar(
            "select coalesce(state, '?') || ' / ' || coalesce(wait_event_type, '-') || ':' || "
            "coalesce(wait_event, '-') || ' / ' || coalesce(query, '') from pg_stat_activity "
            "where pid = " +
            writer_pid);
        return seen.find(":SyncRep /") != std::string::npos;
      },
      60s, 100ms))
      << "the writer never waited for the standby; last seen: " << seen;
  // The update is decoded and delivered although no new snapshot sees it yet.
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return replay.tables["public.t"].count("id=5;") > 0; }, 20));
  EXPECT_EQ(s.scalar("select v from t where id = 5"), "old");  // not visible
  EXPECT_NE(s.scalar(it::server_version_num() >= 130000 ? "select pg_current_snapshot()::text"
                                                        : "select txid_current_snapshot()::text"),
            "");

  // Now the snapshot, while the transaction is still in flight.
  requester = std::thread([&] { EXPECT_TRUE(control->request({"public.t"})); });
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return !control->state().tables.empty(); }, 20));
  requester.join();
  consume(
      *rt, replay, [] { return false; }, 1);  // chunks are attempted meanwhile
  EXPECT_FALSE(control->state().is_complete())
      << "a chunk was delivered while a transaction it could not see was in flight";
  EXPECT_EQ((*replay.tables["public.t"]["id=5;"]["v"]), "new");

  // Release the waiting session: the transaction becomes visible, the chunks go on.
  admin.query("select pg_cancel_backend(" + writer_pid + ")");
  waiting.join();
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return control->state().is_complete(); }, 30))
      << control->state().to_json();
  EXPECT_EQ((*replay.tables["public.t"]["id=5;"]["v"]), "new")
      << "the chunk's stale row won over the newer update";
  EXPECT_EQ(it::diff_tables(replay.tables["public.t"], it::source_rows(s, "public.t", {"id"})), "");
  ASSERT_TRUE(rt->stop());
}

// Control while running: pause holds chunks back, resume goes on, a re-request starts the table
// over under a new generation (its rows are not a replay of the first read), stop drops the
// rest; the state tells these apart.
TEST_F(PgIncremental, PauseResumeReRequestAndStopAreVisibleInTheState) {
  PgSession s(it::dsn_for(db_));
  s.query("create table t (id int primary key, v text)");
  s.query("insert into t select g, 'v' || g from generate_series(1, 20000) g");
  auto rt = runtime(pg::SnapshotMode::kNever, {"public.t"}, 100);
  ASSERT_TRUE(rt->start());
  auto control = rt->incremental_snapshot_control();
  it::Replay replay;
  std::uint64_t reads = 0;
  ASSERT_TRUE(consume(
      *rt, replay, [] { return true; }, 5));
  std::thread requester([&] { EXPECT_TRUE(control->request({"public.t"})); });
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return reads >= 300; }, 30, &reads));
  requester.join();
  control->pause();
  consume(
      *rt, replay, [] { return false; }, 1, &reads);
  const auto paused = control->state();
  EXPECT_EQ(paused.status(), "paused");
  const std::uint64_t rows_when_paused = paused.tables.at(0).rows;
  consume(
      *rt, replay, [] { return false; }, 1, &reads);
  EXPECT_EQ(control->state().tables.at(0).rows, rows_when_paused);
  control->resume();
  ASSERT_TRUE(consume(
      *rt, replay, [&] { return control->state().is_complete(); }, 30, &reads));
  EXPECT_EQ(reads, 20000u);
  EXPECT_EQ(control->state().status(), "complete");

  // Again: a new generation, offsets differ from the first read's.
  std::vector<std::string> offsets;
  std::thread again([&] { EXPECT_TRUE(control->request({"public.t"})); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (offsets.size() < 300 && std::chrono::steady_clock::now() < deadline) {
    auto batch = rt->poll_event_batch();
    ASSERT_TRUE(batch);
    for (const auto& e : batch->events()) {
      if (e.op == Operation::kRead) offsets.push_back(e.source.offset);
    }
    ASSERT_TRUE(rt->commit_ack(batch->ack_mode()));
  }
  again.join();
  ASSERT_GE(offsets.size(), 1u);
  EXPECT_EQ(offsets.front(), "incremental:2:public.t:[\"1\"]");
  control->stop();
  consume(
      *rt, replay, [] { return false; }, 1);
  const auto stopped = control->state();
  EXPECT_EQ(stopped.status(), "stopped");
  EXPECT_EQ(stopped.generation, 3u);
  EXPECT_FALSE(stopped.is_complete());
  // Requests naming a table that is not captured, or one without a primary key, are refused.
  s.query("create table keyless (a int)");
  std::thread bad([&] {
    auto st = control->request({"public.keyless"});
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().report().find("not captured"), std::string::npos) << st.error().report();
  });
  consume(
      *rt, replay, [] { return false; }, 1);
  bad.join();
  ASSERT_TRUE(rt->stop());
}

namespace {

// The incremental state in the checkpoint file under `state_dir`: (cursor id or -1, complete).
std::pair<long, bool> saved_cursor(const std::filesystem::path& state_dir) {
  for (const auto& f : std::filesystem::directory_iterator(state_dir)) {
    if (f.path().extension() != ".ckpt") continue;
    std::ifstream in(f.path());
    std::string header, body;
    std::getline(in, header);
    body.assign(std::istreambuf_iterator<char>(in), {});
    const auto record = boost::json::parse(body).as_object();
    const auto* state = record.if_contains("source_state");
    if (!state) return {-1, false};
    const auto parsed = boost::json::parse(state->as_string());
    const auto* incr = parsed.as_object().if_contains("incremental");
    if (!incr || incr->at("tables").as_array().empty()) return {-1, false};
    const auto& t = incr->at("tables").as_array()[0].as_object();
    const long cursor = t.at("cursor").is_null()
                            ? -1
                            : std::stol(std::string(t.at("cursor").as_array()[0].as_string()));
    return {cursor, t.at("complete").as_bool()};
  }
  return {-1, false};
}

}  // namespace

// Issue item 6(c): `cppcdc run` is SIGKILLed ten times during an incremental snapshot while a
// writer keeps changing the table. Each restart goes on after the chunk the checkpoint names
// (at most one chunk is read again), and the replayed sink file equals the table.
TEST_F(PgIncremental, TenKillsMidSnapshotResumeAtTheChunkBoundaryAndEndEqual) {
  namespace fs = std::filesystem;
  // Large enough that ten kill-and-restart rounds end well before the snapshot does.
  constexpr int kRows = 800'000;
  constexpr int kChunk = 200;
  PgSession s(it::dsn_for(db_));
  s.query("create table items (id bigint primary key, v int, note text)");
  s.query("insert into items select g, 0, 'n' || g from generate_series(1, " +
          std::to_string(kRows) + ") g");
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db_);
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db_) << "\"\n"
        << "slot_name = \"" << db_ << "\"\npublication_name = \"incr_pub\"\n"
        << "tables = [\"public.items\"]\n\n[source.snapshot]\nmode = \"incremental\"\n"
        << "chunk_size = " << kChunk << "\n\n[sink]\ntype = \"file\"\npath = \"events.jsonl\"\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n"
        << "[runtime]\nmax_buffer_size = 300\nmax_poll_wait_ms = 100\n";
  }
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    PgSession w(it::dsn_for(db_));
    w.query("set synchronous_commit = on");  // see AMillionRowTable...
    std::mt19937 rng(99);
    int next_id = kRows + 1;
    while (!stop.load()) {
      const std::string id = std::to_string(1 + rng() % kRows);
      switch (rng() % 3) {
        case 0:
          w.query("update items set v = v + 1 where id = " + id);
          break;
        case 1:
          w.query("delete from items where id = " + id);
          break;
        default:
          w.query("insert into items values (" + std::to_string(next_id++) + ", 1, 'w')");
      }
      // Pacing, not waiting: a steady load while the snapshot runs.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  pid_t child = -1;
  struct Cleanup {  // also when an assertion returns early
    std::atomic<bool>& stop;
    std::thread& writer;
    pid_t& child;
    ~Cleanup() {
      stop.store(true);
      if (writer.joinable()) writer.join();
      it::stop_cppcdc_process(child, SIGKILL);
    }
  } cleanup{stop, writer, child};
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db_, 60);
  std::mt19937 rng(5);
  int kills = 0;
  std::vector<std::pair<std::uintmax_t, long>> restarts;  // sink size at the kill, saved cursor
  while (kills < 10) {
    // A random moment on purpose: the kill lands wherever the snapshot happens to be.
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 300));
    it::stop_cppcdc_process(child, SIGKILL);
    ++kills;
    const auto [cursor, complete] = saved_cursor(dir / "state");
    ASSERT_FALSE(complete) << "the snapshot ended before kill " << kills << "; make it longer";
    restarts.emplace_back(
        fs::exists(dir / "events.jsonl") ? fs::file_size(dir / "events.jsonl") : 0, cursor);
    it::start_cppcdc_process(child, dir, it::admin_dsn(), db_, 60);
  }
  // Let the snapshot finish, then stop the writer and wait for a marker row.
  ASSERT_TRUE(it::wait_until([&] { return saved_cursor(dir / "state").second; }, 300s))
      << it::log_tail(dir / "cppcdc.log");
  stop.store(true);
  writer.join();
  s.query("insert into items values (-1, -1, 'marker')");
  ASSERT_TRUE(it::wait_until(
      [&] {
        std::ifstream in(dir / "events.jsonl");
        std::string all((std::istreambuf_iterator<char>(in)), {});
        return all.find("\"marker\"") != std::string::npos;
      },
      60s));
  it::stop_cppcdc_process(child, SIGTERM);

  // Each restart resumes after the saved cursor: the reads it makes before the first chunk
  // boundary start above it, and at most one chunk is read again.
  std::ifstream in(dir / "events.jsonl");
  std::string line;
  std::uintmax_t pos = 0;
  std::size_t segment = 0;
  std::vector<long> first_read(restarts.size(), -1);
  it::Replay replay;
  replay.merges_may_precede_rows = true;
  std::map<long, int> times_read;
  while (it::read_complete_line(in, line)) {
    while (segment < restarts.size() && pos >= restarts[segment].first) ++segment;
    pos += line.size() + 1;
    auto e = Event::from_json(line);
    ASSERT_TRUE(e) << e.error().report();
    replay.apply(*e);
    if (e->op != Operation::kRead) continue;
    const long id = std::stol(*find_column(*e->after, "id")->text);
    ++times_read[id];
    if (segment > 0 && first_read[segment - 1] < 0) first_read[segment - 1] = id;
  }
  std::size_t reread = 0;
  for (const auto& [id, n] : times_read) reread += static_cast<std::size_t>(n - 1);
  for (std::size_t k = 0; k < restarts.size(); ++k) {
    if (first_read[k] < 0) continue;
    EXPECT_GT(first_read[k], restarts[k].second) << "restart " << k + 1 << " read below its cursor";
  }
  EXPECT_LE(reread, static_cast<std::size_t>(kills * kChunk)) << "more than a chunk per restart";
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  EXPECT_EQ(
      it::diff_tables(replay.tables["public.items"], it::source_rows(s, "public.items", {"id"})),
      "");
  std::cout << kills << " kills; " << reread << " rows read twice; " << times_read.size()
            << " distinct rows read\n";
  it::drop_slots(db_);
  if (!HasFailure()) fs::remove_all(dir);
}

// Issue item 1: a chunk row is character for character the row the stream gives (here: the
// FULL before-image of an update of that row), with the same shape.
TEST_F(PgIncremental, ChunkRowsCarryTheStreamsTextAndShape) {
  PgSession s(it::dsn_for(db_));
  s.query(R"(
    create table v (id int primary key, doc jsonb, tags text[], amount numeric, at timestamptz,
                    day date, span interval, raw bytea, flag boolean, f float8, note text);
    alter table v replica identity full;
    insert into v select g, ('{"n": ' || g || '0000000000000000001, "s": "x\ny"}')::jsonb,
                         array['a', null, 'q"' || g], g / 7.0, '2026-01-02 03:04:05.123456+02',
                         '2026-02-03', '1 day 02:03:04', decode(lpad(to_hex(g), 8, '0'), 'hex'), g % 2 = 0,
                         g / 3.0, case when g % 5 = 0 then null else 'n' || g end
                  from generate_series(1, 50) g;
  )");
  auto rt = runtime(pg::SnapshotMode::kIncremental, {"public.v"}, 16);
  ASSERT_TRUE(rt->start());
  auto control = rt->incremental_snapshot_control();
  std::map<std::string, Event> reads;
  std::map<std::string, Event> befores;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool updated = false;
  while (befores.size() < 50 && std::chrono::steady_clock::now() < deadline) {
    auto batch = rt->poll_event_batch();
    ASSERT_TRUE(batch) << batch.error().report();
    for (const auto& e : batch->events()) {
      const Row* r = e.op == Operation::kRead ? &*e.after : e.before.full_row();
      if (!r) continue;
      const std::string id = *find_column(*r, "id")->text;
      (e.op == Operation::kRead ? reads : befores).emplace(id, e);
    }
    ASSERT_TRUE(rt->commit_ack(batch->ack_mode()));
    if (!updated && control->state().is_complete()) {
      s.query("update v set id = id");  // every row once more, as a FULL before-image
      updated = true;
    }
  }
  ASSERT_EQ(reads.size(), 50u);
  ASSERT_EQ(befores.size(), 50u);
  for (const auto& [id, read] : reads) {
    const Event& upd = befores.at(id);
    EXPECT_EQ(*read.after, *upd.before.full_row()) << "row " << id;
    ASSERT_TRUE(read.shape && upd.shape);
    EXPECT_EQ(read.shape->content_id(), upd.shape->content_id());
  }
  ASSERT_TRUE(rt->stop());
}

// A table that cannot be read in chunks stops a first start before a slot or publication is
// made, and the message says what to list instead.
TEST_F(PgIncremental, AKeylessTableInTheConfiguredSetFailsBeforeAnySlotIsMade) {
  PgSession s(it::dsn_for(db_));
  s.query(
      "create table keyed (id int primary key); create table nokey (a int);"
      "alter table nokey replica identity full");
  auto rt = runtime(pg::SnapshotMode::kIncremental, {"public.keyed", "public.nokey"}, 100);
  auto st = rt->start();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("public.nokey has no primary key"), std::string::npos)
      << st.error().report();
  EXPECT_NE(st.error().report().find("list only tables with a primary key"), std::string::npos)
      << st.error().report();
  EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db_ + "'"),
            "0");
  EXPECT_EQ(s.scalar("select count(*) from pg_publication"), "0");
}
