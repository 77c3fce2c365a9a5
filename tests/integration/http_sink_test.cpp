// The HTTP sink end to end: the real `cppcdc run` capturing from the test PostgreSQL and
// POSTing to a real receiver (tests/integration/http_receiver.py, Python's http.server) that
// checks the signatures with Python's own hmac, keeps each webhook-id once, and fails on
// command (500, 429 with Retry-After, 400, stalls, dropped connections, a whole outage).
// The replay oracle then compares what the receiver kept with the source tables.

#include "cppcdc/http_sink.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;

namespace {

constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kRotated = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr const char* kToken = "it-bearer-token";

/// A free port: from CPPCDC_TEST_HTTP_PORTS=LO-HI when set, else one the kernel picks.
int free_port() {
  int lo = 0, hi = 0;
  if (const char* env = std::getenv("CPPCDC_TEST_HTTP_PORTS")) {
    const std::string s(env);
    const auto dash = s.find('-');
    lo = std::stoi(s.substr(0, dash));
    hi = dash == std::string::npos ? lo : std::stoi(s.substr(dash + 1));
  }
  for (int p = lo; p <= hi; ++p) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int yes = 1;  // as the receiver binds: a port in TIME_WAIT is free
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(p));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      socklen_t len = sizeof addr;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      ::close(fd);
      return ntohs(addr.sin_port);
    }
    ::close(fd);
  }
  ADD_FAILURE() << "no free port in CPPCDC_TEST_HTTP_PORTS";
  return 0;
}

/// The Python receiver as a child process, on a fixed port (so that it can come back after an
/// outage on the same address).
class Receiver {
 public:
  Receiver(fs::path dir, std::vector<std::string> extra)
      : dir_(std::move(dir)), extra_(std::move(extra)) {
    port_ = free_port();
  }
  ~Receiver() { kill_now(); }

  void start() {
    fs::create_directories(dir_);
    fs::remove(dir_ / "port");
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = (dir_ / "receiver.log").string();
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      std::vector<std::string> args = {
          "python3", std::string(CPPCDC_SOURCE_DIR) + "/tests/integration/http_receiver.py",
          "--store", dir_.string(),
          "--port",  std::to_string(port_)};
      args.insert(args.end(), extra_.begin(), extra_.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("python3", argv.data());
      _exit(127);
    }
    ASSERT_TRUE(wait_until([&] { return fs::exists(dir_ / "port"); }, 30s))
        << log_tail(dir_ / "receiver.log");
  }

  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  std::string url(const std::string& scheme = "http", const std::string& host = "127.0.0.1") const {
    return scheme + "://" + host + ":" + std::to_string(port_) + "/cdc";
  }
  fs::path kept() const { return dir_ / "kept.jsonl"; }

  void control(const std::string& rule) {
    httplib::Client cli("127.0.0.1", port_);
    auto res = cli.Post("/control", rule, "application/json");
    ASSERT_TRUE(res) << "the receiver does not answer /control";
    ASSERT_EQ(res->status, 200);
  }

  boost::json::object stats() {
    httplib::Client cli("127.0.0.1", port_);
    auto res = cli.Get("/stats");
    if (!res || res->status != 200) return {};
    return boost::json::parse(res->body).as_object();
  }
  std::int64_t stat(const char* name) {
    auto s = stats();
    return s.contains(name) ? s.at(name).as_int64() : -1;
  }
  std::int64_t status_count(int status) {
    auto s = stats();
    if (!s.contains("statuses")) return 0;
    const auto& by = s.at("statuses").as_object();
    const auto key = std::to_string(status);
    return by.contains(key) ? by.at(key).as_int64() : 0;
  }

  /// Whether a kept record has `fragment` (and `also`, when given) in it.
  bool kept_contains(const std::string& fragment, const std::string& also = "") const {
    std::ifstream in(kept());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(fragment) != std::string::npos && line.find(also) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

 private:
  fs::path dir_;
  std::vector<std::string> extra_;
  int port_ = 0;
  pid_t pid_ = -1;
};

/// Waits at most `seconds` for `pid` to exit; returns its wait status, or -1 after killing it
/// when it did not (a bound for a failing test).
int wait_exit(pid_t& pid, int seconds) {
  int status = 0;
  const bool exited = wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                                 std::chrono::seconds(seconds));
  if (!exited) {
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    status = -1;
  }
  pid = -1;
  return status;
}

class HttpSinkRun : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("http");
    it::fresh_database(db_);
    dir_ = fs::temp_directory_path() / ("cppcdc-it-" + db_);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    it::PgSession s(it::dsn_for(db_));
    s.query(R"(
      create table acct (id int primary key, balance bigint not null, note text);
      create table item (id bigint primary key, name text, qty int, tags text[]);
      create table marker (id int primary key);
    )");
  }
  void TearDown() override {
    if (child_ > 0) it::stop_cppcdc_process(child_, SIGKILL);
    receiver_.reset();
    it::drop_slots(db_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void make_receiver(std::vector<std::string> extra = {}) {
    receiver_ = std::make_unique<Receiver>(dir_ / "receiver", std::move(extra));
    receiver_->start();
  }

  /// cdc.toml with `sink` as the [sink] section's body (type and url are added).
  void write_config(const std::string& sink, int max_buffer = 500) {
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db_) << "\"\n"
        << "slot_name = \"" << db_ << "\"\npublication_name = \"" << db_ << "_pub\"\n"
        << "tables = [\"public.acct\", \"public.item\", \"public.marker\"]\n\n"
        << "[sink]\ntype = \"http\"\nurl = \"" << receiver_->url() << "\"\n"
        << sink << "\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n"
        << "[runtime]\nmax_buffer_size = " << max_buffer << "\nmax_poll_wait_ms = 100\n"
        << "connection_retry_max_retries = 100\nconnection_retry_initial_delay_ms = 50\n"
        << "connection_retry_max_delay_ms = 500\n";
  }

  void start(int wait_seconds = 60) {
    it::start_cppcdc_process(child_, dir_, it::admin_dsn(), db_, wait_seconds);
  }

  /// Inserts the marker row `id` and waits until the receiver kept it.
  void mark_and_wait(int id) {
    it::PgSession s(it::dsn_for(db_));
    s.query("insert into marker values (" + std::to_string(id) + ")");
    ASSERT_TRUE(wait_until(
        [&] {
          return receiver_->kept_contains("\"table\":\"marker\"",
                                          "\"id\":\"" + std::to_string(id) + "\"");
        },
        300s))
        << log_tail(dir_ / "cppcdc.log") << log_tail(dir_ / "receiver" / "receiver.log");
  }

  /// Replays what the receiver kept and compares every table with the source.
  void expect_receiver_equals_source() {
    it::PgSession s(it::dsn_for(db_));
    it::Replay replay;
    std::size_t events = 0;
    for (const auto& e : it::read_sink(receiver_->kept().string())) {
      ++events;
      replay.apply(e);
    }
    EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
    EXPECT_GT(events, 0u);
    for (const auto& [table, key] : std::vector<std::pair<std::string, std::string>>{
             {"acct", "id"}, {"item", "id"}, {"marker", "id"}}) {
      EXPECT_EQ(it::diff_tables(replay.tables["public." + table], it::source_rows(s, table, {key})),
                "")
          << table;
    }
  }

  std::string db_;
  fs::path dir_;
  pid_t child_ = -1;
  std::unique_ptr<Receiver> receiver_;
};

void some_changes(const std::string& db, int first, int count) {
  it::PgSession s(it::dsn_for(db));
  for (int i = first; i < first + count; i += 10) {
    std::string sql = "begin;";
    for (int j = i; j < std::min(first + count, i + 10); ++j) {
      sql += "insert into acct values (" + std::to_string(j) + ", " + std::to_string(j * 7) +
             ", 'caf\xc3\xa9 \"" + std::to_string(j) + "\"\\n');";
      sql += "insert into item values (" + std::to_string(j) + ", 'it''em', " +
             std::to_string(j % 5) + ", '{a,\"b c\",NULL}');";
    }
    sql += "update acct set balance = balance + 1 where id = " + std::to_string(i) + ";";
    sql += "delete from item where id = " + std::to_string(i) + ";commit;";
    s.query(sql);
  }
}

// The admin server's port, read from cppcdc's log (it binds port 0).
int admin_port(const fs::path& dir) {
  const std::string marker = "admin server listening on http://127.0.0.1:";
  std::string log;
  if (!wait_until(
          [&] {
            log = log_tail(dir / "cppcdc.log");
            return log.find(marker) != std::string::npos;
          },
          30s)) {
    ADD_FAILURE() << log;
    return 0;
  }
  return std::atoi(log.c_str() + log.find(marker) + marker.size());
}

struct Reply {
  int status = -1;
  std::string body;
};
Reply admin_get(int port, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(2, 0);
  auto res = cli.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

// The value of the sample `series` (name and labels exactly as exposed); -1 when absent.
double sample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

}  // namespace

// F4: an outage of the receiver reaches the circuit breaker and the metrics within seconds, as
// one of the source does: the sink's own retries end after retry.max_elapsed_ms (5 s), each
// round is one recoverable error, every failed request counts in
// cppcdc_sink_attempt_failures_total{sink="default"}, the breaker opens after its threshold,
// and /readyz says so, naming the sink. (With retries of about two minutes per round, three
// rounds took six minutes.) Once the receiver is back, the held batch arrives.
TEST_F(HttpSinkRun, AReceiverOutageReachesTheBreakerAndTheMetricsWithinSeconds) {
  make_receiver();
  write_config("");
  std::ofstream(dir_ / "cdc.toml", std::ios::app)
      << "recoverable_error_breaker_consecutive_threshold = 3\n"
      << "recoverable_error_breaker_cooldown_ms = 3000\n"
      << "recoverable_error_breaker_max_open_cycles = 1000\n"
      << "\n[admin]\nlisten = \"127.0.0.1:0\"\n";
  start();
  mark_and_wait(1);
  const int port = admin_port(dir_);
  ASSERT_GT(port, 0);
  receiver_->kill_now();
  it::PgSession(it::dsn_for(db_)).query("insert into marker values (2)");
  const auto t0 = std::chrono::steady_clock::now();
  std::string metrics;
  ASSERT_TRUE(wait_until(
      [&] {
        metrics = admin_get(port, "/metrics").body;
        return sample(metrics, "cppcdc_breaker_state{state=\"open\"}") == 1;
      },
      90s, 200ms))
      << metrics << log_tail(dir_ / "cppcdc.log");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 60s);
  EXPECT_GE(sample(metrics, "cppcdc_recoverable_errors_total"), 3) << metrics;
  EXPECT_GE(sample(metrics, "cppcdc_sink_errors_total{sink=\"default\"}"), 3) << metrics;
  EXPECT_GE(sample(metrics, "cppcdc_sink_attempt_failures_total{sink=\"default\"}"),
            sample(metrics, "cppcdc_sink_errors_total{sink=\"default\"}"))
      << metrics;
  EXPECT_EQ(sample(metrics, "cppcdc_source_up"), 1) << metrics;  // the source is fine
  Reply ready;
  EXPECT_TRUE(wait_until(
      [&] {
        ready = admin_get(port, "/readyz");
        return ready.status == 503 && ready.body.find("breaker_") != std::string::npos;
      },
      30s, 100ms))
      << ready.body;
  EXPECT_NE(ready.body.find("sink errors in a row"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find(receiver_->url()), std::string::npos) << ready.body;

  receiver_->start();
  mark_and_wait(3);
  EXPECT_TRUE(receiver_->kept_contains("\"table\":\"marker\"", "\"id\":\"2\""));
  EXPECT_TRUE(wait_until([&] { return admin_get(port, "/readyz").status == 200; }, 30s))
      << admin_get(port, "/readyz").body;
  it::stop_cppcdc_process(child_, SIGTERM);
}

TEST_F(HttpSinkRun, CapturedChangesReachARealReceiverSignedAuthenticatedAndComplete) {
  make_receiver({"--secret", kSecret, "--secret", kRotated, "--bearer", kToken});
  ::setenv("CPPCDC_IT_HTTP_TOKEN", kToken, 1);
  write_config(std::string("compression = \"gzip\"\n") + "signing_secret = [\"" + kSecret +
               "\", \"" + kRotated +
               "\"]\nheaders = { \"X-Pipeline\" = \"it\" }\n"
               "[sink.auth]\ntype = \"bearer\"\ntoken_env = \"CPPCDC_IT_HTTP_TOKEN\"\n");
  start();
  some_changes(db_, 1, 300);
  mark_and_wait(1);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0)
      << log_tail(dir_ / "cppcdc.log");
  EXPECT_EQ(receiver_->stat("bad_signatures"), 0);
  EXPECT_EQ(receiver_->stat("unauthorized"), 0);
  EXPECT_EQ(receiver_->stat("duplicates"), 0);
  expect_receiver_equals_source();
  // The log names the receiver but no secret.
  const std::string log = log_tail(dir_ / "cppcdc.log");
  EXPECT_NE(log.find("http:" + receiver_->url()), std::string::npos) << log;
  EXPECT_EQ(log.find(kToken), std::string::npos) << log;
  EXPECT_EQ(log.find("MfKQ9r8"), std::string::npos) << log;
}

TEST_F(HttpSinkRun, ARefusedBatchStopsThePipelineAndArrivesAfterTheReceiverIsFixed) {
  make_receiver({"--secret", kSecret});
  write_config(std::string("content_type = \"application/x-ndjson\"\nsigning_secret = \"") +
               kSecret + "\"\n");
  receiver_->control(R"({"status": 400, "count": -1, "body": "amount: not a number"})");
  start();
  some_changes(db_, 1, 20);
  const int status = wait_exit(child_, 120);
  ASSERT_TRUE(WIFEXITED(status)) << log_tail(dir_ / "cppcdc.log");
  EXPECT_EQ(WEXITSTATUS(status), 3) << "a refused batch needs an operator (terminal)";
  const std::string log = log_tail(dir_ / "cppcdc.log");
  EXPECT_NE(log.find("HTTP 400"), std::string::npos) << log;
  EXPECT_NE(log.find("amount: not a number"), std::string::npos) << log;
  EXPECT_EQ(receiver_->status_count(400), 1) << "a permanent refusal is not retried";
  EXPECT_EQ(receiver_->stat("kept_records"), 0);

  // Nothing was acknowledged: after the fix, a restart delivers everything.
  receiver_->control("{}");
  start();
  mark_and_wait(1);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0);
  expect_receiver_equals_source();
}

// refused_batch_policy = "skip": the refused request's events go to the dead-letter file,
// durably and named after the sink, and the pipeline goes on; what the receiver kept plus
// what the dead-letter file holds is the source, and a restart does not deliver the refused
// events again.
TEST_F(HttpSinkRun, UnderSkipARefusedBatchGoesToTheDeadLetterFileAndThePipelineGoesOn) {
  make_receiver({"--secret", kSecret});
  write_config(std::string("content_type = \"application/x-ndjson\"\nsigning_secret = \"") +
               kSecret + "\"\nrefused_batch_policy = \"skip\"\n\n[dead_letter]\npath = \"" +
               (dir_ / "dead.jsonl").string() + "\"\n");
  receiver_->control(R"({"status": 400, "count": 1, "body": "amount: not a number"})");
  start();
  some_changes(db_, 1, 20);
  // The first request is refused; what comes after it must still arrive.
  ASSERT_TRUE(wait_until([&] { return receiver_->status_count(400) == 1; }, 120s))
      << log_tail(dir_ / "cppcdc.log");
  some_changes(db_, 21, 20);
  mark_and_wait(1);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0)
      << log_tail(dir_ / "cppcdc.log");
  EXPECT_EQ(receiver_->status_count(400), 1) << "a permanent refusal is not retried";
  EXPECT_GT(receiver_->stat("kept_records"), 0);

  const auto dead_letters = [&] {
    std::vector<Event> events;
    std::ifstream in(dir_ / "dead.jsonl");
    std::string line;
    while (std::getline(in, line)) {
      const auto record = boost::json::parse(line).as_object();
      EXPECT_EQ(record.at("sink").as_string(), "default") << line;
      EXPECT_FALSE(record.contains("stage")) << line;
      const std::string error(record.at("error").as_string());
      EXPECT_NE(error.find("HTTP 400"), std::string::npos) << line;
      EXPECT_NE(error.find("amount: not a number"), std::string::npos) << line;
      auto event = Event::from_json(boost::json::serialize(record.at("event")));
      EXPECT_TRUE(event) << line;
      if (event) events.push_back(std::move(*event));
    }
    return events;
  };
  const auto refused = dead_letters();
  ASSERT_FALSE(refused.empty()) << log_tail(dir_ / "cppcdc.log");
  const std::string log = log_tail(dir_ / "cppcdc.log");
  EXPECT_NE(log.find("dead-letter"), std::string::npos) << log;

  // A restart goes on after the refused batch: it was acknowledged once it was durable there.
  start();
  mark_and_wait(2);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0);
  EXPECT_EQ(dead_letters().size(), refused.size());
  EXPECT_EQ(receiver_->status_count(400), 1);

  it::PgSession s(it::dsn_for(db_));
  it::Replay replay;
  for (const auto& e : refused) replay.apply(e);
  for (const auto& e : it::read_sink(receiver_->kept().string())) replay.apply(e);
  EXPECT_TRUE(replay.problems.empty()) << replay.problems.front();
  for (const auto& [table, key] : std::vector<std::pair<std::string, std::string>>{
           {"acct", "id"}, {"item", "id"}, {"marker", "id"}}) {
    EXPECT_EQ(it::diff_tables(replay.tables["public." + table], it::source_rows(s, table, {key})),
              "")
        << table;
  }
}

TEST_F(HttpSinkRun, ServerErrorsRetryAfterStallsAndDropsAreRetriedUntilDelivered) {
  make_receiver({"--secret", kSecret});
  write_config(std::string("content_type = \"application/x-ndjson\"\nsigning_secret = \"") +
                   kSecret +
                   "\"\nrequest_timeout_ms = 1000\n"
                   "[sink.retry]\nmax_retries = -1\ninitial_backoff_ms = 50\n"
                   "max_backoff_ms = 500\n",
               50);
  start();
  int next = 1;
  int marker = 1;
  for (const std::string rule :
       {R"({"status": 500, "count": 3, "body": "internal"})", R"({"status": 503, "count": 1})",
        R"({"status": 429, "count": 1, "retry_after": "1"})", R"({"status": 408, "count": 1})",
        R"({"stall_ms": 2500, "count": 1})", R"({"drop": true, "count": 2})"}) {
    receiver_->control(rule);
    some_changes(db_, next, 30);
    next += 30;
    mark_and_wait(marker++);
  }
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0);
  EXPECT_EQ(receiver_->status_count(500), 3);
  EXPECT_EQ(receiver_->status_count(503), 1);
  EXPECT_EQ(receiver_->status_count(429), 1);
  EXPECT_EQ(receiver_->status_count(408), 1);
  EXPECT_EQ(receiver_->stat("bad_signatures"), 0);
  // The stalled request was kept when its late answer went out, after the retry with the same
  // webhook-id had been kept: the receiver dropped it as a repeat.
  EXPECT_TRUE(wait_until([&] { return receiver_->stat("duplicates") >= 1; }, 30s));
  expect_receiver_equals_source();
  const std::string log = log_tail(dir_ / "cppcdc.log");
  EXPECT_NE(log.find("retry"), std::string::npos) << log;
}

TEST_F(HttpSinkRun, AStopWhileTheReceiverStallsEndsWithinTheTimeoutsAndLosesNothing) {
  make_receiver();
  const std::string sink =
      "request_timeout_ms = 2000\nconnect_timeout_ms = 2000\n"
      "[sink.retry]\nmax_retries = -1\ninitial_backoff_ms = 100\nmax_backoff_ms = 1000\n";
  write_config(sink);
  receiver_->control(R"({"stall_ms": 600000, "count": -1})");
  start();
  some_changes(db_, 1, 10);
  ASSERT_TRUE(wait_until([&] { return receiver_->stat("requests") >= 2; }, 60s))
      << log_tail(dir_ / "cppcdc.log");
  ::kill(child_, SIGTERM);
  // The bound is for a failing test: a stop waits at most for the request in flight.
  const int status = wait_exit(child_, 90);
  ASSERT_NE(status, -1) << "cppcdc did not stop\n" << log_tail(dir_ / "cppcdc.log");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(log_tail(dir_ / "cppcdc.log").find("no further retry"), std::string::npos)
      << log_tail(dir_ / "cppcdc.log");

  // Nothing was acknowledged: a new receiver gets everything.
  receiver_.reset();
  make_receiver();
  write_config(sink);  // the new receiver's address
  start();
  mark_and_wait(1);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0);
  expect_receiver_equals_source();
}

// The replay oracle through HTTP: ten SIGKILLs of cppcdc at random moments and one outage of
// the receiver (killed, down for a while, back on the same port) during a mixed workload.
// A sender killed while it sends leaves a body shorter than its Content-Length. The test
// receiver counts it as truncated and keeps nothing of it; it used to check the signature of
// the part it got and count a bad signature, which failed the test below when a kill landed
// mid-body (seen once in CI).
TEST_F(HttpSinkRun, TheTestReceiverCountsABodyCutShortAsTruncatedNotAsABadSignature) {
  make_receiver({"--secret", kSecret});
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(receiver_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request =
      "POST /cdc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
      "webhook-id: msg_1\r\nwebhook-timestamp: 1\r\nwebhook-signature: v1,AAAA\r\n"
      "Content-Length: 100\r\n\r\n{\"op\":\"ins";
  ASSERT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  ::close(fd);
  ASSERT_TRUE(wait_until([&] { return receiver_->stat("truncated") == 1; }, 30s));
  EXPECT_EQ(receiver_->stat("bad_signatures"), 0);
  EXPECT_EQ(receiver_->stat("kept_records"), 0);
}

TEST_F(HttpSinkRun, TenKillsAndAReceiverOutageReplayToTheSourceTables) {
  make_receiver({"--secret", kSecret});
  write_config(std::string("content_type = \"application/x-ndjson\"\nsigning_secret = \"") +
                   kSecret +
                   "\"\nrequest_timeout_ms = 5000\nconnect_timeout_ms = 1000\n"
                   "[sink.retry]\nmax_retries = -1\ninitial_backoff_ms = 50\n"
                   "max_backoff_ms = 1000\n",
               200);
  start();
  std::atomic<bool> done{false};
  std::atomic<int> statements{0};
  std::thread workload([&] {
    it::PgSession s(it::dsn_for(db_));
    std::mt19937 rng(99);
    std::vector<int> ids;
    int next = 1;
    while (!done.load()) {
      std::string sql = "begin;";
      for (int i = 0, n = 1 + static_cast<int>(rng() % 20); i < n; ++i) {
        const int pick = static_cast<int>(rng() % 100);
        if (pick < 45 || ids.size() < 20) {
          ids.push_back(next);
          sql += "insert into acct values (" + std::to_string(next) + ", " +
                 std::to_string(rng() % 1000) + ", 'n" + std::to_string(rng()) + "');" +
                 "insert into item values (" + std::to_string(next) + ", 'i', " +
                 std::to_string(rng() % 9) + ", '{x,NULL}');";
          ++next;
        } else if (pick < 80) {
          sql += "update acct set balance = balance + 1, note = 'u" + std::to_string(rng()) +
                 "' where id = " + std::to_string(ids[rng() % ids.size()]) + ";";
        } else if (pick < 90) {
          const int from = ids[rng() % ids.size()];
          sql += "update item set qty = qty + 1 where id between " + std::to_string(from) +
                 " and " + std::to_string(from + 5) + ";";
        } else {
          const std::size_t at = rng() % ids.size();
          sql += "delete from acct where id = " + std::to_string(ids[at]) + ";";
          sql += "delete from item where id = " + std::to_string(ids[at]) + ";";
          ids.erase(ids.begin() + static_cast<long>(at));
        }
        ++statements;
      }
      s.query(sql + "commit;");
      // Pacing, not waiting: a steady load that the kills land in.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  // Random gaps on purpose (where the kills land), not waits for anything.
  std::mt19937 rng(7);
  int kills = 0;
  bool outage = false;
  while (kills < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng() % 2500));
    it::stop_cppcdc_process(child_, SIGKILL);
    ++kills;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
    start(0);
    if (kills == 5) {
      // The receiver goes away while cppcdc delivers, and comes back a few seconds later.
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 1000));
      receiver_->kill_now();
      std::this_thread::sleep_for(std::chrono::milliseconds(3000 + rng() % 2000));
      receiver_->start();
      outage = true;
    }
  }
  done.store(true);
  workload.join();
  EXPECT_TRUE(outage);
  mark_and_wait(1);
  EXPECT_EQ(WEXITSTATUS(it::stop_cppcdc_process(child_, SIGTERM)), 0)
      << log_tail(dir_ / "cppcdc.log");
  EXPECT_EQ(receiver_->stat("bad_signatures"), 0);
  expect_receiver_equals_source();
  // cppcdc saw the outage and retried through it.
  std::ifstream log(dir_ / "cppcdc.log");
  std::stringstream all;
  all << log.rdbuf();
  EXPECT_NE(all.str().find("http sink: "), std::string::npos);
  std::cout << kills << " kills, 1 receiver outage, " << statements.load() << " statements, "
            << receiver_->stat("kept_records") << " records kept, " << receiver_->stat("duplicates")
            << " repeats dropped by webhook-id" << std::endl;
}

// TLS against the Python receiver with certificates from scripts/tls-certs.sh: the library
// sink directly (no database needed).
class HttpSinkTls : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cppcdc-it-http-tls-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    const std::string cmd = std::string(CPPCDC_SOURCE_DIR) + "/scripts/tls-certs.sh " +
                            (dir_ / "certs").string() + " cppcdc >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    receiver_ = std::make_unique<Receiver>(
        dir_ / "receiver",
        std::vector<std::string>{"--tls-cert", cert("server.crt"), "--tls-key", cert("server.key"),
                                 "--client-ca", cert("ca.crt"), "--secret", kSecret});
    receiver_->start();
  }
  void TearDown() override {
    receiver_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string cert(const std::string& name) const { return (dir_ / "certs" / name).string(); }

  HttpSinkOptions options(const std::string& host = "localhost") const {
    HttpSinkOptions o;
    o.url = receiver_->url("https", host);
    o.signing_secrets = {kSecret};
    o.format = HttpBodyFormat::kJsonLines;
    o.tls.ca_file = cert("ca.crt");
    o.tls.client_cert = cert("cppcdc.crt");
    o.tls.client_key = cert("cppcdc.key");
    o.retry.max_retries = 1;
    o.retry.initial_backoff_ms = 1;
    o.retry.max_backoff_ms = 2;
    return o;
  }

  Status deliver(HttpSinkOptions o, int id) {
    auto sink = make_http_sink(std::move(o));
    if (!sink) return fail(sink.error());
    EventBuilder b("t", Operation::kInsert);
    b.schema("public").primary_key({"id"}).after(Row{{"id", std::to_string(id), false}});
    std::vector<Event> events;
    events.push_back(std::move(b).build());
    CPPCDC_TRY((*sink)->write(events));
    CPPCDC_TRY((*sink)->flush());
    return (*sink)->close();
  }

  fs::path dir_;
  std::unique_ptr<Receiver> receiver_;
};

TEST_F(HttpSinkTls, VerifiesTheReceiverAgainstTheCaFileAndShowsAClientCertificate) {
  const auto st = deliver(options(), 1);
  ASSERT_TRUE(st) << st.error().report() << log_tail(dir_ / "receiver" / "receiver.log");
  EXPECT_TRUE(receiver_->kept_contains("\"id\":\"1\""));
}

TEST_F(HttpSinkTls, AnUntrustedCertificateIsAConfigurationError) {
  auto o = options();
  o.tls.ca_file.clear();  // the system's CAs do not know the test CA
  const auto st = deliver(o, 2);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_NE(st.error().report().find("tls"), std::string::npos) << st.error().report();
}

TEST_F(HttpSinkTls, AHostNameTheCertificateDoesNotNameIsRefused) {
  const auto st = deliver(options("127.0.0.1"), 3);  // the certificate names localhost only
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
}

TEST_F(HttpSinkTls, WithoutTheClientCertificateTheReceiverRefusesTheConnection) {
  auto o = options();
  o.tls.client_cert.clear();
  o.tls.client_key.clear();
  const auto st = deliver(o, 4);
  ASSERT_FALSE(st);
  EXPECT_FALSE(receiver_->kept_contains("\"id\":\"4\""));
}
