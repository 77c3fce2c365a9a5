#pragma once
// Helpers for integration tests against the real PostgreSQL that scripts/test.sh starts
// (CPPCDC_TEST_PG_DSN: Debian's 15, or any major from 12 to 18 for the tests labelled pgcore,
// see scripts/pg-matrix.sh). Each test works in a database of its own and drops its slots.

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "source/postgres/pg_conn.hpp"
#include "wait_until.hpp"

namespace cppcdc::it {

/// The server's DSN (database postgres). Fails the test when the variable is missing: the
/// integration tests never skip silently.
inline std::string admin_dsn() {
  const char* dsn = std::getenv("CPPCDC_TEST_PG_DSN");
  if (dsn == nullptr || *dsn == '\0') {
    ADD_FAILURE() << "CPPCDC_TEST_PG_DSN is not set; run the tests through scripts/test.sh, "
                     "which starts PostgreSQL 15 and sets it";
    return "host=127.0.0.1 port=1 dbname=postgres user=postgres";
  }
  return dsn;
}

/// DSN of database `db` on the test server.
inline std::string dsn_for(const std::string& db) { return admin_dsn() + " dbname=" + db; }

class PgSession {
 public:
  explicit PgSession(const std::string& dsn) {
    auto c = pg::detail::connect(dsn, false);
    if (!c) {
      ADD_FAILURE() << c.error().report();
      return;
    }
    conn_ = std::move(*c);
  }
  PGconn* get() const { return conn_.get(); }

  /// Runs SQL (several statements allowed without parameters); fails the test on error.
  std::vector<std::vector<std::optional<std::string>>> query(
      const std::string& sql, const std::vector<std::optional<std::string>>& params = {}) {
    std::vector<std::vector<std::optional<std::string>>> rows;
    if (!conn_) return rows;
    auto res = pg::detail::exec(conn_.get(), sql, "test SQL: " + sql.substr(0, 200), params);
    if (!res) {
      ADD_FAILURE() << res.error().report();
      return rows;
    }
    for (int r = 0; r < PQntuples(res->get()); ++r) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < PQnfields(res->get()); ++c)
        row.push_back(pg::detail::get(res->get(), r, c));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  std::string scalar(const std::string& sql) {
    auto rows = query(sql);
    if (rows.empty() || rows[0].empty() || !rows[0][0]) return "";
    return *rows[0][0];
  }
  /// Runs SQL and returns whether it succeeded (no test failure).
  bool try_exec(const std::string& sql) {
    PGresult* r = PQexec(conn_.get(), sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
  }

 private:
  pg::detail::ConnPtr conn_;
};

using test::wait_until;  // tests/wait_until.hpp: the one polling wait

/// The last 3,000 bytes of a log file, for failure messages.
inline std::string log_tail(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
}

/// SQL counting the walsenders streaming from `slot` (0 or 1). A slot's active_pid alone is
/// not enough: while a slot is being created, the creating backend or walsender holds it (a
/// walsender in state startup), and after CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export') the
/// slot is free again until the snapshot is read and START_REPLICATION runs.
inline std::string streaming_sql(const std::string& slot) {
  return "select count(*) from pg_replication_slots s join pg_stat_replication r on r.pid = "
         "s.active_pid where s.slot_name = '" +
         slot +
         "' and r.state in ('catchup', "
         "'streaming')";
}

/// A database name unique to the running test (ctest runs tests in parallel).
/// Whether a session of database `db` waits for a lock (pg_stat_activity), asked through `s`
/// every `every` until `timeout`: a pipeline held before its snapshot's first row by a table
/// condition that waits on an advisory lock the test holds.
inline bool wait_for_a_lock_waiter(PgSession& s, const std::string& db,
                                   std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds every) {
  return wait_until(
      [&] {
        return s.scalar("select count(*) from pg_stat_activity where datname = '" + db +
                        "' and wait_event_type = 'Lock'") != "0";
      },
      timeout, every);
}

inline std::string test_database(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + (info ? info->name() : "x");
  for (auto& c : name)
    c = static_cast<char>(std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_');
  if (name.size() > 50)
    name = name.substr(0, 40) + "_" + std::to_string(std::hash<std::string>{}(name) % 100000);
  return name;
}

/// A Reader's runtime settings; the rest are RuntimeOptions' defaults, but polls wait at most
/// 200 ms.
struct ReaderOptions {
  std::shared_ptr<Checkpoint> checkpoint;  // a fresh in-memory one when null
  std::size_t max_buffer_size = RuntimeOptions{}.max_buffer_size;
  std::optional<std::uint32_t> max_retries = ConnectionRetryPolicy{}.max_retries;
  std::uint32_t initial_delay_ms = ConnectionRetryPolicy{}.initial_delay_ms;
  TransactionBoundaryPolicy transaction_boundary = RuntimeOptions{}.transaction_boundary;
};

/// A library Runtime over a PostgreSQL source reading database `db` of the test server:
/// `source` says the rest (slot, publication, tables, snapshot mode, transport, chunk size...).
struct Reader {
  std::shared_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Runtime> runtime;

  Reader(const std::string& db, pg::PostgresSourceConfig source, ReaderOptions options = {})
      : checkpoint(options.checkpoint ? options.checkpoint
                                      : std::make_shared<InMemoryCheckpoint>()) {
    source.dsn = dsn_for(db);
    auto src = pg::make_postgres_source(std::move(source));
    EXPECT_TRUE(src) << src.error().report();
    RuntimeConfig rc;
    rc.source = std::move(*src);
    rc.checkpoint = checkpoint;
    rc.options.max_poll_wait_ms = 200;
    rc.options.max_buffer_size = options.max_buffer_size;
    rc.options.connection_retry.max_retries = options.max_retries;
    rc.options.connection_retry.initial_delay_ms = options.initial_delay_ms;
    rc.options.transaction_boundary = options.transaction_boundary;
    auto rt = Runtime::create(std::move(rc));
    EXPECT_TRUE(rt);
    runtime = std::move(*rt);
  }

  /// Polls (and acknowledges) until `n` events arrived or `seconds` passed.
  std::vector<Event> take(std::size_t n, int seconds = 20) {
    std::vector<Event> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
      auto batch = runtime->poll_event_batch();
      if (!batch) {
        ADD_FAILURE() << batch.error().report();
        break;
      }
      for (const auto& e : batch->events()) out.push_back(e);
      EXPECT_TRUE(runtime->commit_ack(batch->ack_mode()));
    }
    return out;
  }
};

/// Saves a local_fs checkpoint record in `dir` under `source_id`, as a run of a `source_type`
/// pipeline at `offset` would have (for tests that start from a given checkpoint). Fails the
/// test (fatally: wrap the call in ASSERT_NO_FATAL_FAILURE) when it cannot.
inline void save_file_checkpoint(const std::filesystem::path& dir, const std::string& source_id,
                                 const std::string& source_type, const std::string& offset,
                                 std::uint64_t committed_events = 0) {
  auto ckpt = FileCheckpoint::open(dir, source_id);
  ASSERT_TRUE(ckpt) << ckpt.error().report();
  CheckpointRecord r;
  r.source_type = source_type;
  r.source_id = source_id;
  r.offset = offset;
  r.committed_events = committed_events;
  r.saved_at_ms = 1700000000000;
  ASSERT_TRUE((*ckpt)->save(r));
}

/// The `cppcdc run` processes start_cppcdc_process started and nothing has reaped yet. At the
/// test program's exit, each still running is killed (SIGKILL) and reaped: a test that failed
/// an assertion before stopping its process must not leave it holding the pipeline's locks
/// (a MariaDB named lock, a slot) for the next test that uses the same names.
struct RunningChildren {
  std::vector<pid_t> pids;
  ~RunningChildren() {
    for (const pid_t pid : pids) {
      int status = 0;
      // 0: still running and ours (a pid reaped elsewhere gives -1 and is left alone).
      if (waitpid(pid, &status, WNOHANG) != 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
};
inline RunningChildren running_children;

/// Starts the real `cppcdc run --config <dir>/cdc.toml` in the background, its output appended
/// to <dir>/cppcdc.log, and sets `child` to its pid. With `wait_seconds` > 0, then waits that
/// long at most until its walsender streams from `slot` on the server that `server_dsn`
/// reaches (the shared test server, or a test's own), failing the test (fatally) otherwise.
inline void start_cppcdc_process(pid_t& child, const std::filesystem::path& dir,
                                 const std::string& server_dsn, const std::string& slot,
                                 int wait_seconds = 30) {
  child = fork();
  if (child == 0) {
    const std::string log = (dir / "cppcdc.log").string();
    freopen(log.c_str(), "a", stdout);
    freopen(log.c_str(), "a", stderr);
    execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", (dir / "cdc.toml").c_str(), nullptr);
    _exit(127);
  }
  if (child > 0) running_children.pids.push_back(child);
  if (wait_seconds <= 0) return;
  PgSession s(server_dsn);
  ASSERT_TRUE(wait_until([&] { return s.scalar(streaming_sql(slot)) == "1"; },
                         std::chrono::seconds(wait_seconds)))
      << log_tail(dir / "cppcdc.log");
}

/// Sends `sig` to the process `child` started, waits for it and returns its wait status (-1
/// when none runs); `child` becomes -1.
inline int stop_cppcdc_process(pid_t& child, int sig) {
  if (child <= 0) return -1;
  kill(child, sig);
  int status = 0;
  waitpid(child, &status, 0);
  child = -1;
  return status;
}

/// Kills (SIGKILL) and reaps the process `pid` names when the scope ends, unless it was
/// stopped before (stop_cppcdc_process sets it to -1): a failed assertion that returns early
/// leaves no cppcdc running.
struct KillAtExit {
  pid_t& pid;
  ~KillAtExit() {
    if (pid > 0) stop_cppcdc_process(pid, SIGKILL);
  }
};

/// What a `cppcdc` command printed and how it exited.
struct CliOutcome {
  int code = -1;       ///< exit status; -1 when it did not exit normally
  std::string output;  ///< stdout and stderr together
};

/// Runs the cppcdc binary with `args` (each single-quoted), killed after `timeout_s` seconds.
inline CliOutcome run_cli(const std::vector<std::string>& args, int timeout_s = 60) {
  std::string cmd = "timeout " + std::to_string(timeout_s) + " " + CPPCDC_BINARY;
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  CliOutcome o;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) o.output += buf.data();
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

/// Drops the slots of database `db`, terminating their walsenders first; waits (up to 10 s)
/// until none is left.
inline void drop_slots(const std::string& db) {
  PgSession admin(admin_dsn());
  wait_until(
      [&] {
        auto rows = admin.query(
            "select slot_name, active_pid from pg_replication_slots where database = $1", {db});
        for (auto& r : rows) {
          if (r[1]) {
            admin.try_exec("select pg_terminate_backend(" + *r[1] + ")");
          } else {
            admin.try_exec("select pg_drop_replication_slot('" + *r[0] + "')");
          }
        }
        return rows.empty();
      },
      std::chrono::seconds(10), std::chrono::milliseconds(100));
}

/// The test server's server_version_num (e.g. 150018); 0 when it cannot be read (the failure
/// is reported).
inline int server_version_num() {
  static const int version = [] {
    PgSession admin(admin_dsn());
    const std::string v = admin.scalar("select current_setting('server_version_num')");
    return v.empty() ? 0 : std::stoi(v);
  }();
  return version;
}

/// "12.22" for 120022.
inline std::string server_version_text() {
  const int v = server_version_num();
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

/// Creates (or recreates) database `db`, dropping slots left in it by an earlier run.
inline void fresh_database(const std::string& db) {
  drop_slots(db);
  PgSession admin(admin_dsn());
  if (server_version_num() >= 130000) {
    admin.query("drop database if exists " + db + " with (force)");
  } else {
    // PostgreSQL 12 has no DROP DATABASE ... WITH (FORCE): end the sessions first.
    wait_until(
        [&] {
          admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1",
                      {db});
          return admin.try_exec("drop database if exists " + db);
        },
        std::chrono::seconds(10), std::chrono::milliseconds(100));
    admin.query("drop database if exists " + db);
  }
  admin.query("create database " + db);
}

}  // namespace cppcdc::it

/// Skips the rest of the test (from the test body or SetUp) when the test server is older than
/// PostgreSQL `major`, saying which feature needs which version and what the server is.
#define CPPCDC_REQUIRE_PG(major, feature)                          \
  do {                                                             \
    if (::cppcdc::it::server_version_num() < (major)*10000) {      \
      GTEST_SKIP() << (feature) << " needs PostgreSQL " << (major) \
                   << " or later; this server is PostgreSQL "      \
                   << ::cppcdc::it::server_version_text();         \
    }                                                              \
  } while (0)
