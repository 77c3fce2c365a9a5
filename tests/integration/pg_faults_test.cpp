// Faults on the PostgreSQL side while `cppcdc run` streams: the walsender terminated, and the
// server restarted with fast and with immediate shutdown. The connector reconnects under the
// connection retry policy; the replay oracle proves nothing was lost, and because every batch
// the server loop delivered was acknowledged before the fault, nothing is delivered twice.
// These tests restart PostgreSQL, so they run against a server of their own.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_for;

namespace {

// Each test restarts its server, and ctest runs tests in parallel: every test gets a server
// (and port) of its own.
int own_port() {
  const char* p = std::getenv("CPPCDC_TEST_PG_PORT");
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const int offset = name.find("Walsender") != std::string::npos ? 100
                     : name.find("Fast") != std::string::npos    ? 101
                                                                 : 102;
  return (p ? std::atoi(p) : 55440) + offset;
}
std::string own_dir() { return "/tmp/cppcdc-it-faults-" + std::to_string(own_port()); }
std::string own_dsn(const std::string& db) {
  return "host=127.0.0.1 port=" + std::to_string(own_port()) + " dbname=" + db + " user=postgres";
}
std::string script() { return std::string(CPPCDC_SOURCE_DIR) + "/scripts/pg.sh"; }

// A connection that survives server restarts: every statement is retried on a fresh
// connection until it runs (or 60 s pass). A commit whose outcome was lost in a crash is not
// retried twice over: statements are idempotent upserts keyed by the caller.
class Resilient {
 public:
  explicit Resilient(std::string dsn) : dsn_(std::move(dsn)) {}
  void run(const std::string& sql) {
    if (gave_up_) return;
    for (int attempt = 0; attempt < 300; ++attempt) {
      if (!conn_) {
        auto c = pg::detail::connect(dsn_, false);
        if (c) conn_ = std::move(*c);
      }
      if (conn_) {
        auto r = pg::detail::exec(conn_.get(), sql, "workload");
        if (r) return;
        conn_.reset();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "workload statement never succeeded: " << sql.substr(0, 200);
    gave_up_ = true;  // the server is gone: do not wait again for every later statement
  }

 private:
  bool gave_up_ = false;
  std::string dsn_;
  pg::detail::ConnPtr conn_;
};

class PgFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system((script() + " stop " + own_dir() + " --purge >/dev/null 2>&1; " +
                           script() + " start " + own_dir() + " " + std::to_string(own_port()) +
                           " >/dev/null 2>&1").c_str()), 0);
    name_ = it::test_database("flt");
    dir_ = fs::temp_directory_path() / ("cppcdc-it-" + name_);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    it::PgSession admin(own_dsn("postgres"));
    admin.query("drop database if exists " + name_ + " with (force)");
    admin.query("create database " + name_);
    it::PgSession s(own_dsn(name_));
    s.query("create table acct (id int primary key, balance bigint, note text);"
            "create table marker (id int primary key)");
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ntype = \"postgres\"\ndsn = \"" << own_dsn(name_) << "\"\n"
        << "slot_name = \"" << name_ << "\"\npublication_name = \"flt_pub\"\n"
        << "tables = [\"public.acct\", \"public.marker\"]\n\n[sink]\ntype = \"file\"\npath = \""
        << (dir_ / "events.jsonl").string() << "\"\n\n[state.offset]\nbackend = \"local_fs\"\n"
        << "dir = \"" << (dir_ / "state").string() << "\"\n\n[runtime]\nmax_buffer_size = 300\n"
        << "max_poll_wait_ms = 100\nconnection_retry_max_retries = 100\n"
        << "connection_retry_initial_delay_ms = 100\nconnection_retry_max_delay_ms = 1000\n";
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    it::PgSession admin(own_dsn("postgres"));
    admin.try_exec("select pg_terminate_backend(active_pid) from pg_replication_slots where "
                   "slot_name = '" + name_ + "' and active_pid is not null");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    admin.try_exec("select pg_drop_replication_slot('" + name_ + "')");
    if (!HasFailure()) fs::remove_all(dir_);
    std::system((script() + " stop " + own_dir() + " --purge >/dev/null 2>&1").c_str());
  }

  void start_cppcdc() {
    child_ = fork();
    if (child_ == 0) {
      const std::string log = (dir_ / "cppcdc.log").string();
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      execl(CPPCDC_BINARY, CPPCDC_BINARY, "run", "--config", (dir_ / "cdc.toml").c_str(),
            nullptr);
      _exit(127);
    }
    it::PgSession s(own_dsn("postgres"));
    ASSERT_TRUE(wait_for([&] {
      return s.scalar(it::streaming_sql(name_)) == "1";
    }, 30)) << log_tail(dir_ / "cppcdc.log");
  }

  // Runs `fault` three times while a workload of 3,000 rows in small transactions runs, then
  // checks the sink against the table.
  void run_with_fault(const std::function<void()>& fault) {
    start_cppcdc();
    std::atomic<bool> done{false};
    std::thread workload([&] {
      Resilient db(own_dsn(name_));
      std::mt19937 rng(99);
      for (int tx = 0; tx < 300; ++tx) {
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
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      done = true;
    });
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      fault();
    }
    workload.join();
    Resilient(own_dsn(name_)).run("insert into marker values (1)");
    const fs::path sink = dir_ / "events.jsonl";
    const bool caught_up = wait_for([&] {
      std::ifstream in(sink);
      std::string line, last;
      while (std::getline(in, line)) last = line;
      return last.find("\"table\":\"marker\"") != std::string::npos;
    }, 120);
    kill(child_, SIGTERM);
    int status = 0;
    waitpid(child_, &status, 0);
    child_ = -1;
    ASSERT_TRUE(caught_up) << log_tail(dir_ / "cppcdc.log");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "exit code " + std::to_string(WEXITSTATUS(status)))
        << "\n" << log_tail(dir_ / "cppcdc.log");

    const auto events = it::read_sink(sink.string());
    std::set<std::string> ids;
    std::size_t duplicates = 0;
    for (const auto& e : events) {
      const std::string id = e.source.offset + "/" + std::to_string(e.transaction->tx_id) +
                             "/" + std::to_string(e.transaction->event_index);
      if (!ids.insert(id).second) ++duplicates;
    }
    EXPECT_EQ(duplicates, 0u);
    it::Replay replay;
    for (const auto& e : events) replay.apply(e);
    for (const auto& p : replay.problems) ADD_FAILURE() << p;
    it::PgSession s(own_dsn(name_));
    const auto source = it::source_rows(s, "public.acct", {"id"});
    EXPECT_EQ(it::diff_tables(replay.tables["public.acct"], source), "");
    EXPECT_GT(source.size(), 100u);
    const std::string log = log_tail(dir_ / "cppcdc.log");
    EXPECT_NE(log.find("reconnecting"), std::string::npos) << log;
  }

  void restart_server(const char* mode) {
    const std::string cmd = "cd /tmp && runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D " +
                            own_dir() + "/data -m " + mode + " -w restart >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  std::string name_;
  fs::path dir_;
  pid_t child_ = -1;
};

}  // namespace

TEST_F(PgFaults, WalsenderTerminatedMidStreamReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] {
    it::PgSession admin(own_dsn("postgres"));
    admin.query("select pg_terminate_backend(active_pid) from pg_replication_slots where "
                "slot_name = '" + name_ + "' and active_pid is not null");
  });
}

TEST_F(PgFaults, FastShutdownRestartReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] { restart_server("fast"); });
}

TEST_F(PgFaults, ImmediateShutdownRestartReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] { restart_server("immediate"); });
}
