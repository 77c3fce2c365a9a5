// The admin HTTP server of the real `cppcdc run` binary ([admin]) against a PostgreSQL server
// of its own, scraped by a real Prometheus (Debian's `prometheus`) that the test starts in a
// temporary directory: PromQL over Prometheus' HTTP API sees the events cppcdc committed; the
// token is enforced; the probes, the admin snapshot, the snapshot commands and the OpenAPI
// document answer; SIGTERM stops the server with the pipeline. The readiness probe follows the
// database going away and coming back.
//
// Ports: the admin listener binds port 0 (any free port, read back from cppcdc's log),
// Prometheus the first free one of CPPCDC_TEST_PROMETHEUS_PORTS (9480-9489). The PostgreSQL
// servers: CPPCDC_TEST_PG_PORT + 115 to 118, one per test (own_server.hpp).

#include <httplib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <set>
#include <string>

#include "own_server.hpp"

namespace cppcdc::it {
namespace {

constexpr const char* kToken = "it-admin-token-7f3a";

std::pair<int, int> port_range(const char* variable, int low, int high) {
  const char* env = std::getenv(variable);
  if (env == nullptr) return {low, high};
  const std::string s(env);
  const auto dash = s.find('-');
  if (dash == std::string::npos) return {std::stoi(s), std::stoi(s)};
  return {std::stoi(s.substr(0, dash)), std::stoi(s.substr(dash + 1))};
}

// The first port of the range nothing listens on (checked by binding it).
int free_port(const char* variable, int low, int high) {
  const auto [from, to] = port_range(variable, low, high);
  for (int port = from; port <= to; ++port) {
    if (loopback_port_bindable(port)) return port;
  }
  ADD_FAILURE() << "no free port in " << variable << " " << from << "-" << to;
  return from;
}

struct Reply {
  int status = -1;  ///< -1: no answer
  std::string body;
};

Reply http_get(int port, const std::string& path, const std::string& token = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(10, 0);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto res = client.Get(path.c_str(), headers);
  if (!res) return {};
  return {res->status, res->body};
}

Reply http_post(int port, const std::string& path, const std::string& body,
                const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(40, 0);
  httplib::Headers headers{{"Authorization", "Bearer " + token}};
  auto res = client.Post(path.c_str(), headers, body, "application/json");
  if (!res) return {};
  return {res->status, res->body};
}

// A Prometheus server scraping `target` every second, with the bearer token, in a temporary
// directory of its own; stopped and removed by the destructor.
class Prometheus {
 public:
  Prometheus(const fs::path& dir, int admin_port) : dir_(dir) {
    fs::create_directories(dir_ / "data");
    port_ = free_port("CPPCDC_TEST_PROMETHEUS_PORTS", 9480, 9489);
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: cppcdc\n    scrape_timeout: 1s\n"
        << "    authorization:\n      credentials: \"" << kToken << "\"\n"
        << "    static_configs:\n      - targets: [\"127.0.0.1:" << admin_port << "\"]\n";
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = (dir_ / "prometheus.log").string();
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      const std::string config = "--config.file=" + (dir_ / "prometheus.yml").string();
      const std::string storage = "--storage.tsdb.path=" + (dir_ / "data").string();
      const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
      execlp("prometheus", "prometheus", config.c_str(), storage.c_str(), listen.c_str(),
             "--log.level=warn", nullptr);
      _exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }
  int port() const { return port_; }
  std::string log() const { return log_tail(dir_ / "prometheus.log"); }

  /// The value of the one sample an instant query returns; nullopt when it returns none (or
  /// Prometheus does not answer yet).
  std::optional<double> query(const std::string& promql) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(2, 0);
    auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!res || res->status != 200) return std::nullopt;
    boost::system::error_code ec;
    const auto doc = boost::json::parse(res->body, ec);
    if (ec) return std::nullopt;
    const auto& result = doc.at("data").at("result").as_array();
    if (result.size() != 1) return std::nullopt;
    return std::stod(std::string(result[0].at("value").as_array()[1].as_string()));
  }

 private:
  fs::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

class Admin : public OwnServerTest {
 protected:
  // One server per test: ctest runs them in parallel.
  int port_offset(const std::string& name) const override {
    return name.find("Prometheus") != std::string::npos  ? 115
           : name.find("Token") != std::string::npos     ? 116
           : name.find("Readiness") != std::string::npos ? 117
           : name.find("Restart") != std::string::npos   ? 110
           : name.find("Slot") != std::string::npos      ? 111
                                                         : 118;
  }

  // The port the admin server of the cppcdc started last took (port 0: it logs the port).
  int wait_admin_port() {
    const std::string marker = "admin server listening on http://127.0.0.1:";
    if (!wait_until([&] { return log().find(marker) != std::string::npos; },
                    std::chrono::seconds(30))) {
      ADD_FAILURE() << log();
      return 0;
    }
    const std::string text = log();
    return std::atoi(text.c_str() + text.find(marker) + marker.size());
  }

  // `runtime_extra`: more [runtime] keys; `admin_extra`: more [admin] keys.
  void start_with_admin(const std::string& runtime_extra = "",
                        const std::string& admin_extra = "") {
    // Port 0: the server takes a free port and logs it (no race between parallel tests).
    write_config(dsn(name_), "",
                 runtime_extra + "\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"" + kToken +
                     "\"\n" + admin_extra);
    start_cppcdc();
    admin_port_ = wait_admin_port();
    ASSERT_GT(admin_port_, 0) << log();
    ASSERT_TRUE(wait_until([&] { return http_get(admin_port_, "/readyz").status == 200; },
                           std::chrono::seconds(30)))
        << http_get(admin_port_, "/readyz").body << "\n"
        << log();
  }

  // Polls /livez until it answers 503 or `limit` passes; returns the last answer.
  Reply wait_for_livez_503(std::chrono::seconds limit, std::chrono::milliseconds every) {
    Reply live;
    (void)wait_until(
        [&] {
          live = http_get(admin_port_, "/livez");
          return live.status == 503;
        },
        limit, every);
    return live;
  }

  int admin_port_ = 0;
};

TEST_F(Admin, PrometheusScrapesTheEventsCommittedPerTable) {
  start_with_admin();
  PgSession db(dsn(name_));
  for (int i = 0; i < 25; ++i) {
    db.query("insert into acct values (" + std::to_string(i) + ", 1, 'x')");
  }
  db.query("update acct set balance = 2 where id < 4");

  Prometheus prometheus(dir_ / "prometheus", admin_port_);
  const std::string inserts =
      "cppcdc_events_committed_total{table=\"public.acct\",op=\"insert\",job=\"cppcdc\"}";
  std::optional<double> seen;
  EXPECT_TRUE(wait_until(
      [&] {
        seen = prometheus.query(inserts);
        return seen == 25.0;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(250)))
      << "last value: " << (seen ? std::to_string(*seen) : "none") << "\n"
      << prometheus.log() << "\n"
      << log();
  EXPECT_TRUE(wait_until(
      [&] {
        return prometheus.query(
                   "cppcdc_events_committed_total{table=\"public.acct\","
                   "op=\"update\"}") == 4.0;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(250)));
  // The scrape itself worked with the token, and the series Prometheus keeps are there.
  EXPECT_EQ(prometheus.query("up{job=\"cppcdc\"}"), 1.0);
  EXPECT_EQ(prometheus.query("cppcdc_runtime_up"), 1.0);
  EXPECT_EQ(prometheus.query("cppcdc_breaker_state{state=\"closed\"}"), 1.0);
  EXPECT_TRUE(prometheus.query("cppcdc_runtime_poll_age_ms").has_value());
  EXPECT_TRUE(prometheus.query("cppcdc_source_retained_bytes").has_value());
  EXPECT_TRUE(prometheus.query("cppcdc_sink_latency_seconds_count").has_value());
  EXPECT_TRUE(prometheus.query("process_resident_memory_bytes").has_value());

  // SIGTERM ends the pipeline and the admin server with it, also while a client keeps an
  // idle keep-alive connection open, as Prometheus does between scrapes: cpp-httplib waited
  // such a connection out (5 s by default) before it stopped, so the exit came 5 s or more
  // after the signal (ops trial 3); the admin server now keeps an idle connection 1 s.
  httplib::Client idle("127.0.0.1", admin_port_);
  idle.set_keep_alive(true);
  auto alive = idle.Get("/livez");
  ASSERT_TRUE(alive);
  EXPECT_EQ(alive->status, 200);
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(stop_cppcdc(), 0) << log();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(4));
  EXPECT_EQ(http_get(admin_port_, "/livez").status, -1);
}

TEST_F(Admin, TheTokenGuardsEverythingButTheProbes) {
  // A mask rule on a column no table has and a route no table matches: both are reported as
  // unmatched in the admin snapshot once events flowed.
  start_with_admin("\n[[sinks]]\nname = \"spare\"\ntype = \"file\"\npath = \"" +
                   (dir_ / "spare.jsonl").string() +
                   "\"\n\n[[pipeline.routes]]\ntables = [\"public.nothing*\"]\n"
                   "sink = \"spare\"\n\n[[pipeline.transforms]]\nname = \"pii\"\n"
                   "[[pipeline.transforms.actions]]\ntype = \"mask\"\n"
                   "rules = { \"ssn\" = \"null\" }\n");
  EXPECT_EQ(http_get(admin_port_, "/metrics").status, 401);
  EXPECT_EQ(http_get(admin_port_, "/metrics", "wrong-token").status, 401);
  EXPECT_EQ(http_get(admin_port_, "/admin/snapshot").status, 401);
  EXPECT_EQ(http_post(admin_port_, "/admin/snapshot/pause", "", "wrong").status, 401);
  EXPECT_EQ(http_get(admin_port_, "/livez").status, 200);
  EXPECT_EQ(http_get(admin_port_, "/readyz").status, 200);
  const Reply metrics = http_get(admin_port_, "/metrics", kToken);
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("# TYPE cppcdc_events_committed_total counter"), std::string::npos);

  PgSession(dsn(name_)).query("insert into acct values (1, 1, 'x')");
  Reply snapshot;
  ASSERT_TRUE(wait_until(
      [&] {
        snapshot = http_get(admin_port_, "/admin/snapshot", kToken);
        return snapshot.body.find("\"events_committed\":1") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << snapshot.body << "\n"
      << log();
  ASSERT_EQ(snapshot.status, 200);
  const auto doc = boost::json::parse(snapshot.body).as_object();
  const auto& unmatched = doc.at("unmatched_rules").as_array();
  std::set<std::string> rules;
  for (const auto& rule : unmatched) {
    rules.insert(std::string(rule.at("transform").as_string()) + "/" +
                 std::string(rule.at("rule").as_string()));
    EXPECT_FALSE(rule.at("consequence").as_string().empty()) << snapshot.body;
  }
  EXPECT_EQ(rules.size(), 2u) << snapshot.body;
  EXPECT_EQ(rules.count("pii/ssn"), 1u) << snapshot.body;
  EXPECT_TRUE(std::any_of(rules.begin(), rules.end(), [](const std::string& r) {
    return r.rfind("pipeline.routes/", 0) == 0 && r.find("public.nothing*") != std::string::npos;
  })) << snapshot.body;
  EXPECT_EQ(doc.at("state").as_string(), "running");
  EXPECT_EQ(doc.at("health").at("verdict").as_string() == "healthy" ||
                doc.at("health").at("verdict").as_string() == "idle",
            true)
      << snapshot.body;
  EXPECT_EQ(doc.at("breaker_state").as_string(), "closed");
  EXPECT_TRUE(doc.contains("incremental_snapshot")) << snapshot.body;
  EXPECT_TRUE(doc.contains("initial_snapshot")) << snapshot.body;

  // The control socket's commands over HTTP: status answers, a pause with nothing running is
  // refused (409) with the same words, a body that is not JSON is a 400.
  const Reply status = http_get(admin_port_, "/admin/snapshot/status", kToken);
  EXPECT_EQ(status.status, 200) << status.body;
  EXPECT_NE(status.body.find("\"ok\":true"), std::string::npos) << status.body;
  const Reply pause = http_post(admin_port_, "/admin/snapshot/pause", "", kToken);
  EXPECT_EQ(pause.status, 409) << pause.body;
  EXPECT_NE(pause.body.find("nothing to pause"), std::string::npos) << pause.body;
  EXPECT_EQ(http_post(admin_port_, "/admin/snapshot/request", "[1", kToken).status, 400);
  const Reply request =
      http_post(admin_port_, "/admin/snapshot/request", R"({"tables":["public.acct"]})", kToken);
  EXPECT_EQ(request.status, 200) << request.body;
  EXPECT_NE(request.body.find("public.acct"), std::string::npos) << request.body;

  // The served OpenAPI document is the checked-in one.
  std::ifstream in(std::string(CPPCDC_SOURCE_DIR) + "/docs/admin-openapi.yaml");
  const std::string checked_in((std::istreambuf_iterator<char>(in)), {});
  const Reply openapi = http_get(admin_port_, "/admin/openapi.yaml", kToken);
  EXPECT_EQ(openapi.status, 200);
  EXPECT_EQ(openapi.body, checked_in);
  EXPECT_EQ(stop_cppcdc(), 0) << log();
}

// While the database is down the runtime keeps reconnecting inside its poll: /readyz answers
// 503 source_reconnecting at once (well before the verdict's 30 s stall threshold), naming the
// last error, and cppcdc_source_up is 0; later the verdict turns Stalled too. Both come back
// once the database is back.
TEST_F(Admin, ReadinessFollowsTheDatabaseGoingAwayAndComingBack) {
  start_with_admin();
  EXPECT_NE(http_get(admin_port_, "/metrics", kToken).body.find("\ncppcdc_source_up 1\n"),
            std::string::npos);
  ASSERT_TRUE(stop_server());
  const auto stopped_at = std::chrono::steady_clock::now();
  Reply ready;
  EXPECT_TRUE(wait_until(
      [&] {
        ready = http_get(admin_port_, "/readyz");
        return ready.status == 503;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(200)))
      << ready.body << "\n"
      << log();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, std::chrono::seconds(20)) << ready.body;
  EXPECT_NE(ready.body.find("source_reconnecting"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("last error: "), std::string::npos) << ready.body;
  EXPECT_NE(http_get(admin_port_, "/metrics", kToken).body.find("\ncppcdc_source_up 0\n"),
            std::string::npos);
  // The verdict keeps its own threshold: Stalled only later.
  EXPECT_TRUE(wait_until(
      [&] {
        return http_get(admin_port_, "/admin/snapshot", kToken)
                   .body.find("\"verdict\":\"stalled\"") != std::string::npos;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(500)))
      << http_get(admin_port_, "/admin/snapshot", kToken).body;
  EXPECT_EQ(http_get(admin_port_, "/livez").status, 200);  // a stall is not a restart
  ASSERT_TRUE(start_server());
  EXPECT_TRUE(wait_until([&] { return http_get(admin_port_, "/readyz").status == 200; },
                         std::chrono::seconds(120), std::chrono::milliseconds(500)))
      << http_get(admin_port_, "/readyz").body << "\n"
      << log();
  EXPECT_EQ(stop_cppcdc(), 0) << log();
}

// A database that stays down: the breaker opens, its probes fail, it escalates to its error
// state, and the process keeps answering /livez with 503 ([admin] error_linger_ms) until a stop
// signal, then exits with the error. /readyz says why too.
TEST_F(Admin, LivenessTurns503OnceTheBreakerEscalates) {
  start_with_admin(
      "recoverable_error_breaker_consecutive_threshold = 3\n"
      "recoverable_error_breaker_cooldown_ms = 300\n"
      "recoverable_error_breaker_max_open_cycles = 2\n",
      "error_linger_ms = 600000\n");
  ASSERT_EQ(http_get(admin_port_, "/livez").status, 200);
  ASSERT_TRUE(stop_server());
  const Reply live =
      wait_for_livez_503(std::chrono::seconds(120), std::chrono::milliseconds(200));
  EXPECT_EQ(live.status, 503) << live.body << "\n" << log();
  EXPECT_NE(live.body.find("circuit breaker escalated"), std::string::npos) << live.body;
  EXPECT_EQ(http_get(admin_port_, "/readyz").status, 503);
  const Reply metrics = http_get(admin_port_, "/metrics", kToken);
  EXPECT_NE(metrics.body.find("cppcdc_breaker_state{state=\"error\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(log().find("error_linger_ms"), std::string::npos) << log();
  // SIGTERM ends the wait at once; the exit status is the breaker's error, not success.
  EXPECT_NE(stop_cppcdc(), 0) << log();
  EXPECT_NE(log().find("escalated to the error state"), std::string::npos) << log();
  ASSERT_TRUE(start_server());  // for TearDown, which drops the slot
}

// Ops trial M4: a process restarted while its database is down goes through the same retry
// policy and breaker as one whose database goes away mid-run: its failed attempts count as
// recoverable errors, the breaker escalates with the same [runtime] keys and /livez answers 503;
// meanwhile the metrics show the source down, the last error, and the committed count of the
// pipeline's life from the checkpoint (not 0).
TEST_F(Admin, ARestartWhileTheDatabaseIsDownCountsAndEscalatesLikeAnOutageMidRun) {
  start_with_admin();
  PgSession s(dsn(name_));
  s.query("insert into acct select g, g, 'x' from generate_series(1, 25) g");
  ASSERT_TRUE(wait_until(
      [&] {
        return http_get(admin_port_, "/metrics", kToken)
                   .body.find("\ncppcdc_events_committed_lifetime 25\n") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << http_get(admin_port_, "/metrics", kToken).body;
  ASSERT_EQ(stop_cppcdc(), 0) << log();
  ASSERT_TRUE(stop_server());

  fs::remove(log_path());
  write_config(dsn(name_), "",
               "recoverable_error_breaker_consecutive_threshold = 3\n"
               "recoverable_error_breaker_cooldown_ms = 300\n"
               "recoverable_error_breaker_max_open_cycles = 2\n"
               "\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"" +
                   std::string(kToken) + "\"\nerror_linger_ms = 600000\n");
  start_cppcdc(/*wait_streaming=*/false);
  admin_port_ = wait_admin_port();
  ASSERT_GT(admin_port_, 0);
  const Reply live =
      wait_for_livez_503(std::chrono::seconds(120), std::chrono::milliseconds(100));
  EXPECT_EQ(live.status, 503) << live.body << "\n" << log();
  EXPECT_NE(live.body.find("circuit breaker escalated"), std::string::npos) << live.body;
  const std::string metrics = http_get(admin_port_, "/metrics", kToken).body;
  // Three failures open the breaker, its two probes fail: five recoverable errors.
  EXPECT_NE(metrics.find("\ncppcdc_recoverable_errors_total 5\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cppcdc_breaker_state{state=\"error\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ncppcdc_source_up 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ncppcdc_events_committed_lifetime 25\n"), std::string::npos) << metrics;
  const std::string snapshot = http_get(admin_port_, "/admin/snapshot", kToken).body;
  EXPECT_NE(snapshot.find("\"last_recoverable_error\":\""), std::string::npos) << snapshot;
  EXPECT_NE(snapshot.find("\"events_committed_lifetime\":25"), std::string::npos) << snapshot;
  EXPECT_EQ(http_get(admin_port_, "/readyz").status, 503);
  EXPECT_NE(stop_cppcdc(), 0) << log();
  EXPECT_NE(log().find("escalated to the error state"), std::string::npos) << log();
  ASSERT_TRUE(start_server());  // for TearDown, which drops the slot
}

// Fresh-user trial of issue 14: a transform error under the default halt policy ends the run;
// while it lingers, /readyz must not answer 200 "healthy" nor /metrics show a healthy verdict
// (both did: the runtime still counted as running).
TEST_F(Admin, AHaltedRunIsNeitherReadyNorHealthyWhileItLingers) {
  ::setenv("CPPCDC_IT_DETOKENIZE_KEY", "it-key", 1);  // the child inherits it
  start_with_admin(
      "\n[[pipeline.transforms]]\nname = \"detok\"\n  [[pipeline.transforms.actions]]\n"
      "  type = \"mask\"\n"
      "  rules = { \"note\" = { decrypt = { secret_env = \"CPPCDC_IT_DETOKENIZE_KEY\" } } }\n",
      "error_linger_ms = 600000\n");
  PgSession(dsn(name_)).query("insert into acct values (1, 1, 'not a ciphertext')");
  const Reply live =
      wait_for_livez_503(std::chrono::seconds(60), std::chrono::milliseconds(50));
  ASSERT_EQ(live.status, 503) << live.body << "\n" << log();
  const Reply ready = http_get(admin_port_, "/readyz");
  const std::string metrics = http_get(admin_port_, "/metrics", kToken).body;
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("enc:v1:"), std::string::npos) << ready.body;
  EXPECT_EQ(metrics.find("cppcdc_health_verdict{verdict=\"healthy\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("cppcdc_health_verdict{verdict=\"not_running\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(log().find("ended with an error (healthy)"), std::string::npos) << log();
  (void)stop_cppcdc();
}

// Ops trial M1: a run that ends with a fatal error (here: the replication slot was dropped
// under it, exit 3) keeps its admin server up for [admin] error_linger_ms, so that a scrape
// sees why: both probes answer 503 naming the error, /metrics shows the final verdict
// (stalled, source_position_lost); then the process exits with the error's status.
TEST_F(Admin, ADroppedSlotIsScrapedDuringTheLingerAndTheExitStatusFollows) {
  start_with_admin("", "error_linger_ms = 5000\n");
  PgSession s(dsn(name_));
  s.query("insert into acct values (1, 1, 'x')");
  ASSERT_TRUE(wait_until(
      [&] {
        return http_get(admin_port_, "/metrics", kToken)
                   .body.find("\ncppcdc_events_committed_lifetime 1\n") != std::string::npos;
      },
      std::chrono::seconds(30)));
  // Drop the slot under the running pipeline: end its walsender and drop it before cppcdc
  // reconnects (it may win the race: then again).
  PgSession admin(dsn("postgres"));
  ASSERT_TRUE(wait_until(
      [&] {
        admin.try_exec(
            "select pg_terminate_backend(active_pid) from pg_replication_slots where "
            "slot_name = '" +
            name_ + "' and active_pid is not null");
        return admin.try_exec("select pg_drop_replication_slot('" + name_ + "')");
      },
      std::chrono::seconds(30), std::chrono::milliseconds(20)));
  Reply live, ready;
  std::string metrics;
  EXPECT_TRUE(wait_until(
      [&] {
        live = http_get(admin_port_, "/livez");
        return live.status == 503;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(50)))
      << live.status << " " << live.body << "\n"
      << log();
  ready = http_get(admin_port_, "/readyz");
  metrics = http_get(admin_port_, "/metrics", kToken).body;
  EXPECT_NE(live.body.find("does not exist"), std::string::npos) << live.body;
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("source_position_lost"), std::string::npos) << ready.body;
  EXPECT_NE(metrics.find("cppcdc_health_stall_cause{cause=\"source_position_lost\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(log().find("error_linger_ms"), std::string::npos) << log();
  const auto status = wait_exit(60);
  ASSERT_TRUE(status.has_value()) << log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << *status << "\n" << log();
}

}  // namespace
}  // namespace cppcdc::it
