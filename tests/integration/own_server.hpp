#pragma once
// A fixture for tests that need a PostgreSQL server of their own (they restart it, change its
// TLS or authentication settings, or put a proxy in front of it) and run the real `cppcdc run`
// binary against it, with a workload of small transactions and the replay oracle to check
// what arrived.
//
// ctest may run tests in parallel, so every test gets a server and port of its own:
// CPPCDC_TEST_PG_PORT + port_offset(test name), in /tmp/cppcdc-it-own-<port>. Offsets in use:
// 100-102 pg_faults_test, 103-106 pg_tls_test, 107-108 pg_network_test, 109 pg_breaker_test,
// 115-118 admin_test, 120 state_backends_test (its own server, restarted; not this fixture). Tests that ctest may run in parallel need offsets of their own.
// The work directory (/tmp/cppcdc-it-own_<test>: cdc.toml, cppcdc.log, the sink) is kept when
// a test fails, or always with CPPCDC_IT_KEEP set.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "cppcdc/postgres/lsn.hpp"
#include "replay.hpp"

namespace cppcdc::it {

namespace fs = std::filesystem;

/// A connection that survives server restarts and network faults: every statement is retried
/// on a fresh connection until it runs (or 30 s pass). A commit whose outcome was lost in a
/// crash is not retried twice over: statements are idempotent upserts keyed by the caller.
class Resilient {
 public:
  explicit Resilient(std::string dsn) : dsn_(std::move(dsn)) {}
  void run(const std::string& sql) {
    if (gave_up_) return;
    const bool done = wait_until(
        [&] {
          if (!conn_) {
            auto c = pg::detail::connect(dsn_, false);
            if (c) conn_ = std::move(*c);
          }
          if (conn_) {
            if (pg::detail::exec(conn_.get(), sql, "workload")) return true;
            conn_.reset();
          }
          return false;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(100));
    if (done) return;
    ADD_FAILURE() << "workload statement never succeeded: " << sql.substr(0, 200);
    gave_up_ = true;  // the server is gone: do not wait again for every later statement
  }

 private:
  bool gave_up_ = false;
  std::string dsn_;
  pg::detail::ConnPtr conn_;
};

/// "exit code N" or "killed by signal N", for failure messages.
inline std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

/// Whether a listening socket could bind 127.0.0.1:port now (as PostgreSQL does it, with
/// SO_REUSEADDR).
inline bool loopback_port_bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

class OwnServerTest : public ::testing::Test {
 protected:
  /// This test's offset from CPPCDC_TEST_PG_PORT; unique among all tests that use the fixture.
  virtual int port_offset(const std::string& test_name) const = 0;

  int port() const { return port_; }
  std::string pg_dir() const { return "/tmp/cppcdc-it-own-" + std::to_string(port_); }
  /// Stops the test's server (its data kept); true on success.
  bool stop_server() const {
    return std::system((script("pg.sh") + " stop " + pg_dir() + " >/dev/null 2>&1").c_str()) == 0;
  }
  /// Starts it again on its port; true on success.
  bool start_server() const {
    return std::system((script("pg.sh") + " start " + pg_dir() + " " + std::to_string(port_) +
                        " >/dev/null 2>&1")
                           .c_str()) == 0;
  }
  /// Direct connection to database `db` as postgres (trust), named cppcdc_it in
  /// pg_stat_activity (cppcdc's own connections are named cppcdc unless the DSN says
  /// otherwise).
  std::string dsn(const std::string& db) const {
    return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + db +
           " user=postgres application_name=cppcdc_it";
  }
  static bool port_bindable(int port) { return loopback_port_bindable(port); }
  static std::string script(const std::string& name) {
    return std::string(CPPCDC_SOURCE_DIR) + "/scripts/" + name;
  }

  // A fresh server; database name_ with tables acct and marker; an empty work directory dir_
  // holding cdc.toml for a direct connection.
  void SetUp() override {
    const char* p = std::getenv("CPPCDC_TEST_PG_PORT");
    port_ = (p ? std::atoi(p) : 25440) +
            port_offset(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::system((script("pg.sh") + " stop " + pg_dir() + " --purge >/dev/null 2>&1").c_str());
    // scripts/test.sh picks its ports below Linux's ephemeral range (32768-60999 by default)
    // so that no client connection is given one as its local port. A base port set by hand
    // may lie inside it; the port is then held by such a connection (also in TIME_WAIT, up
    // to a minute after it closed) and PostgreSQL cannot bind it. Wait for it, not fail.
    ASSERT_TRUE(wait_until([&] { return port_bindable(port_); }, std::chrono::seconds(70)))
        << "127.0.0.1:" << port_ << " stayed in use for 70 s";
    const std::string out = "/tmp/cppcdc-it-own-" + std::to_string(port_) + ".start.log";
    ASSERT_EQ(std::system((script("pg.sh") + " start " + pg_dir() + " " + std::to_string(port_) +
                           " >" + out + " 2>&1")
                              .c_str()),
              0)
        << "could not start " << pg_dir() << ":\n"
        << log_tail(out);
    fs::remove(out);
    name_ = test_database("own");
    dir_ = fs::temp_directory_path() / ("cppcdc-it-" + name_);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    PgSession admin(dsn("postgres"));
    admin.query("drop database if exists " + name_ + " with (force)");
    admin.query("create database " + name_);
    PgSession s(dsn(name_));
    s.query(
        "create table acct (id int primary key, balance bigint, note text);"
        "create table marker (id int primary key)");
    write_config(dsn(name_));
  }

  void TearDown() override {
    stop_cppcdc_process(child_, SIGKILL);
    {
      PgSession admin(dsn("postgres"));
      admin.try_exec(
          "select pg_terminate_backend(active_pid) from pg_replication_slots where "
          "slot_name = '" +
          name_ + "' and active_pid is not null");
      // The drop fails while the terminated walsender still holds the slot: retry until it
      // is gone (a slot that does not exist drops nothing and succeeds).
      if (admin.get()) {
        wait_until(
            [&] {
              return admin.try_exec(
                  "select pg_drop_replication_slot(slot_name) from "
                  "pg_replication_slots where slot_name = '" +
                  name_ + "'");
            },
            std::chrono::seconds(10));
      }
    }
    if (!HasFailure() && std::getenv("CPPCDC_IT_KEEP") == nullptr) fs::remove_all(dir_);
    std::system((script("pg.sh") + " stop " + pg_dir() + " --purge >/dev/null 2>&1").c_str());
  }

  /// (Re)writes dir_/cdc.toml: source `cppcdc_dsn` (plus `source_extra` lines in [source]),
  /// file sink, local checkpoint, fast retries (100 of them), then `extra` (more sections).
  void write_config(const std::string& cppcdc_dsn, const std::string& source_extra = "",
                    const std::string& extra = "") {
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ntype = \"postgres\"\ndsn = \"" << cppcdc_dsn << "\"\n"
        << "slot_name = \"" << name_ << "\"\npublication_name = \"own_pub\"\n"
        << "tables = [\"public.acct\", \"public.marker\"]\n"
        << source_extra << "\n[sink]\ntype = \"file\"\npath = \""
        << (dir_ / "events.jsonl").string() << "\"\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"" << (dir_ / "state").string()
        << "\"\n\n[runtime]\nmax_buffer_size = 300\nmax_poll_wait_ms = 100\n"
        << "connection_retry_max_retries = 100\nconnection_retry_initial_delay_ms = 100\n"
        << "connection_retry_max_delay_ms = 1000\n"
        << extra;
  }

  fs::path log_path() const { return dir_ / "cppcdc.log"; }
  std::string log() const {
    std::ifstream in(log_path());
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

  /// Starts `cppcdc run` in the background (output to cppcdc.log); with `wait_streaming`,
  /// returns once its walsender streams from the slot.
  void start_cppcdc(bool wait_streaming = true) {
    start_cppcdc_process(child_, dir_, dsn("postgres"), name_, wait_streaming ? 30 : 0);
  }

  /// Waits up to `seconds` for the running cppcdc to exit by itself; returns its wait status,
  /// or nullopt (after killing it) when it was still running.
  std::optional<int> wait_exit(int seconds) {
    int status = 0;
    const bool exited = wait_until([&] { return waitpid(child_, &status, WNOHANG) == child_; },
                                   std::chrono::seconds(seconds));
    if (!exited) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    child_ = -1;
    if (!exited) return std::nullopt;
    return status;
  }

  /// SIGTERM to the running cppcdc; its wait status.
  int stop_cppcdc() { return stop_cppcdc_process(child_, SIGTERM); }

  /// Writes 300 transactions of 10 random upserts and deletes of acct rows (ids below 1500),
  /// on a connection of its own straight to the server, 10 ms apart.
  std::thread start_workload(int transactions = 300) {
    return std::thread([this, transactions] {
      Resilient db(dsn(name_));
      std::mt19937 rng(99);
      for (int tx = 0; tx < transactions; ++tx) {
        std::string sql = "begin;";
        for (int i = 0; i < 10; ++i) {
          const int id = static_cast<int>(rng() % 1500);
          if (rng() % 5 == 0) {
            sql += "delete from acct where id = " + std::to_string(id) + ";";
          } else {
            sql += "insert into acct values (" + std::to_string(id) + ", " +
                   std::to_string(rng() % 1000) + ", 'v" + std::to_string(tx) +
                   "') on conflict (id) do update set balance = excluded.balance, note = "
                   "excluded.note;";
          }
        }
        db.run(sql + "commit;");
        // Pacing, not waiting: the workload spans the faults instead of finishing first.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  /// After the workload: writes the marker row, waits until cppcdc delivered it, stops cppcdc
  /// (it must exit 0) and checks the sink: no event twice, events in WAL order, every
  /// transaction whole and contiguous, and the replayed table equal to the source's.
  void finish_and_check() {
    Resilient(dsn(name_)).run("insert into marker values (1)");
    const fs::path sink = dir_ / "events.jsonl";
    const bool caught_up = wait_until(
        [&] {
          std::ifstream in(sink);
          std::string line, last;
          while (std::getline(in, line)) last = line;
          return last.find("\"table\":\"marker\"") != std::string::npos;
        },
        std::chrono::seconds(120));
    const int status = stop_cppcdc();
    ASSERT_TRUE(caught_up) << log_tail(log_path());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << describe_wait_status(status) << "\n"
        << log_tail(log_path());

    const auto events = read_sink(sink.string());
    std::set<std::string> ids;
    std::size_t duplicates = 0;
    for (const auto& e : events) {
      const std::string id = e.source.offset + "/" + std::to_string(e.transaction->tx_id) + "/" +
                             std::to_string(e.transaction->event_index);
      if (!ids.insert(id).second) ++duplicates;
    }
    EXPECT_EQ(duplicates, 0u);
    // One writer commits one transaction at a time, so WAL order is commit order and every
    // change has a higher LSN than the one before it.
    std::uint64_t previous = 0;
    std::size_t out_of_order = 0;
    for (const auto& e : events) {
      auto lsn = pg::Lsn::parse(e.source.offset);
      ASSERT_TRUE(lsn) << e.source.offset;
      if (lsn->value() <= previous && out_of_order++ < 3) {
        ADD_FAILURE() << "event at " << e.source.offset << " after one at "
                      << pg::Lsn(previous).to_string();
      }
      previous = lsn->value();
    }
    for (std::size_t i = 0; i < events.size();) {
      const auto& tx = *events[i].transaction;
      std::size_t n = 0;
      while (i + n < events.size() && events[i + n].transaction->tx_id == tx.tx_id) {
        EXPECT_EQ(events[i + n].transaction->event_index, n) << "transaction " << tx.tx_id;
        ++n;
      }
      EXPECT_EQ(tx.total_events, n) << "transaction " << tx.tx_id << " is not whole";
      i += n;
    }
    Replay replay;
    for (const auto& e : events) replay.apply(e);
    for (const auto& p : replay.problems) ADD_FAILURE() << p;
    PgSession s(dsn(name_));
    const auto source = source_rows(s, "public.acct", {"id"});
    EXPECT_EQ(diff_tables(replay.tables["public.acct"], source), "");
    EXPECT_GT(source.size(), 100u);
  }

  /// Whether cppcdc's replication connection streams from slot name_ now (false, without a
  /// test failure, while the server is unreachable).
  bool streaming() const {
    auto conn = pg::detail::connect(dsn("postgres"), false);
    if (!conn) return false;
    auto res = pg::detail::exec(conn->get(), streaming_sql(name_), "is cppcdc streaming?");
    return res && PQntuples(res->get()) == 1 && pg::detail::get(res->get(), 0, 0) == "1";
  }

  /// Runs `fault` three times while the workload runs, each once cppcdc streams again after
  /// the previous one (so that each hits a live pipeline), then checks the sink
  /// (finish_and_check) and that cppcdc reconnected.
  void run_with_fault(const std::function<void()>& fault) {
    start_cppcdc();
    if (HasFatalFailure()) return;
    std::thread workload = start_workload();
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(wait_until([&] { return streaming(); }, std::chrono::seconds(60)))
          << "cppcdc did not stream again before fault " << i + 1 << "\n"
          << log_tail(log_path());
      // A gap on purpose: some of the workload goes through the live pipeline between faults.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      fault();
    }
    workload.join();
    finish_and_check();
    const std::string text = log();
    EXPECT_NE(text.find("reconnecting"), std::string::npos) << log_tail(log_path());
  }

  int port_ = 0;
  std::string name_;
  fs::path dir_;
  pid_t child_ = -1;
};

}  // namespace cppcdc::it
