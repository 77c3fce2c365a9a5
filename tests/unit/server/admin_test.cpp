// The admin server's pieces without a network: [admin] parsing, the probes' answers, the
// Prometheus text format, the pipeline counters and the OpenAPI document's coverage; and one
// test binding loopback ports (a listen address is taken by one process only).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "server/admin_http.hpp"
#include "server/config.hpp"
#include "server/metrics.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kMinimal = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[state.offset]
dir = "/tmp/state"
)";

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string error_of(const std::string& text) {
  auto config = parse_server_config(text, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

TEST(AdminConfig, OffUnlessTheSectionIsPresent) {
  auto config = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_FALSE(config->admin.has_value());
  EXPECT_CONTAINS(describe_config(*config), "off ([admin] is not configured)");
}

TEST(AdminConfig, AnEmptySectionListensOnTheDefaultLoopbackPort) {
  auto config = parse_server_config(std::string(kMinimal) + "[admin]\n", "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  ASSERT_TRUE(config->admin.has_value());
  EXPECT_EQ(config->admin->host, "127.0.0.1");
  EXPECT_EQ(config->admin->port, 9464);
  EXPECT_TRUE(config->admin->token.empty());
}

TEST(AdminConfig, ListenTakesHostAndPortIncludingBracketedIpv6) {
  auto v4 = parse_server_config(std::string(kMinimal) + "[admin]\nlisten = \"0.0.0.0:9470\"\n",
                                "cdc.toml");
  ASSERT_TRUE(v4) << v4.error().report();
  EXPECT_EQ(v4->admin->host, "0.0.0.0");
  EXPECT_EQ(v4->admin->port, 9470);
  auto v6 =
      parse_server_config(std::string(kMinimal) + "[admin]\nlisten = \"[::1]:9471\"\n", "cdc.toml");
  ASSERT_TRUE(v6) << v6.error().report();
  EXPECT_EQ(v6->admin->host, "::1");
  EXPECT_EQ(v6->admin->port, 9471);
}

TEST(AdminConfig, ErrorsNameTheKey) {
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nlisten = \"9464\"\n"),
                  "cdc.toml:8:10: [admin] listen: expected \"host:port\"");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nlisten = \"127.0.0.1:99999\"\n"),
                  "[admin] listen: expected a port from 0 to 65535");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nlisten = \":9464\"\n"),
                  "[admin] listen: the host is missing");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nlisten = 9464\n"),
                  "[admin] listen: expected a string, found an integer");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\ntoken = \"\"\n"),
                  "[admin] token: expected a non-empty token");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\ntoken = \"a b\"\n"),
                  "[admin] token: the token must not contain spaces");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\ntoken = \"x\"\ntoken_env = \"T\"\n"),
                  "[admin] token_env: set either token or token_env, not both");
  EXPECT_CONTAINS(
      error_of(std::string(kMinimal) + "[admin]\nlisen = \"127.0.0.1:1\"\n"),
      "[admin] lisen: unknown key (did you mean listen?); expected one of: listen, token, "
      "token_env, "
      "error_linger_ms");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nerror_linger_ms = -1\n"),
                  "[admin] error_linger_ms: expected an integer from 0 to 3600000, found -1");
}

// Only the commands that start the admin server (run; check-config and preflight, which check
// what run would do) need the token: teardown and snapshot status read the same file.
TEST(AdminConfig, AnUnsetTokenVariableStopsOnlyTheCommandsThatServe) {
  auto config = parse_server_config(
      std::string(kMinimal) + "[admin]\ntoken_env = \"CPPCDC_TEST_SURELY_UNSET_VARIABLE\"\n",
      "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const Status token = check_admin_token(*config);
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(token.error().report(),
                  "[admin] token_env: the environment variable "
                  "\"CPPCDC_TEST_SURELY_UNSET_VARIABLE\" is not set or empty");
  auto without_admin = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(without_admin);
  EXPECT_TRUE(check_admin_token(*without_admin));
}

TEST(AdminConfig, ErrorLingerDefaultsTo15SecondsAndZeroTurnsItOff) {
  auto plain = parse_server_config(std::string(kMinimal) + "[admin]\n", "cdc.toml");
  ASSERT_TRUE(plain) << plain.error().report();
  EXPECT_EQ(plain->admin->error_linger_ms, 15000);
  auto off =
      parse_server_config(std::string(kMinimal) + "[admin]\nerror_linger_ms = 0\n", "cdc.toml");
  ASSERT_TRUE(off) << off.error().report();
  EXPECT_EQ(off->admin->error_linger_ms, 0);
  // check-config says what each value does (ops trial 3: 0 was described as a 503 "that long").
  EXPECT_CONTAINS(describe_config(*plain),
                  "error_linger_ms 15000 (/livez 503 for that long before exiting on an error)");
  EXPECT_CONTAINS(describe_config(*off), "error_linger_ms 0 (exits at once on an error)");
  EXPECT_EQ(describe_config(*off).find("for that long"), std::string::npos);
}

// run warns when it listens beyond loopback without a token; check-config, which describes
// what run would do, warns too (ops trial 3: it did not).
TEST(AdminConfig, CheckConfigWarnsOfAnOpenAddressWithoutAToken) {
  auto open = parse_server_config(std::string(kMinimal) + "[admin]\nlisten = \"0.0.0.0:9464\"\n",
                                  "cdc.toml");
  ASSERT_TRUE(open) << open.error().report();
  EXPECT_CONTAINS(describe_config(*open), "no token (WARNING: not a loopback address");
  auto local = parse_server_config(std::string(kMinimal) + "[admin]\nlisten = \"127.0.0.1:9464\"\n",
                                   "cdc.toml");
  ASSERT_TRUE(local) << local.error().report();
  EXPECT_CONTAINS(describe_config(*local), "no token, ");
  EXPECT_EQ(describe_config(*local).find("WARNING"), std::string::npos);
  ::setenv("CPPCDC_TEST_ADMIN_TOKEN_OPEN", "t0ken-for-open", 1);
  auto guarded = parse_server_config(std::string(kMinimal) +
                                         "[admin]\nlisten = \"0.0.0.0:9464\"\n"
                                         "token_env = \"CPPCDC_TEST_ADMIN_TOKEN_OPEN\"\n",
                                     "cdc.toml");
  ASSERT_TRUE(guarded) << guarded.error().report();
  EXPECT_EQ(describe_config(*guarded).find("WARNING"), std::string::npos);
  ::unsetenv("CPPCDC_TEST_ADMIN_TOKEN_OPEN");
}

TEST(AdminConfig, TheTokenComesFromTheFileOrTheEnvironmentAndIsNeverDescribed) {
  ::setenv("CPPCDC_TEST_ADMIN_TOKEN", "s3cret-admin-token", 1);
  auto config = parse_server_config(
      std::string(kMinimal) + "[admin]\ntoken_env = \"CPPCDC_TEST_ADMIN_TOKEN\"\n", "cdc.toml");
  ::unsetenv("CPPCDC_TEST_ADMIN_TOKEN");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->admin->token, "s3cret-admin-token");
  const std::string description = describe_config(*config);
  EXPECT_CONTAINS(description, "bearer token from token_env CPPCDC_TEST_ADMIN_TOKEN");
  EXPECT_EQ(description.find("s3cret"), std::string::npos);
  auto inline_token =
      parse_server_config(std::string(kMinimal) + "[admin]\ntoken = \"abc\"\n", "cdc.toml");
  ASSERT_TRUE(inline_token);
  EXPECT_EQ(inline_token->admin->token, "abc");
}

TEST(AdminListen, LoopbackHosts) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("10.0.0.5"));
}

// cpp-httplib's default socket options add SO_REUSEPORT, which would let a second process
// bind the same listen address and share its requests with the first one.
TEST(AdminListen, ASecondServerCannotTakeTheSameAddress) {
  AdminConfig config;
  config.listen = "127.0.0.1:0";
  config.host = "127.0.0.1";
  config.port = 0;
  AdminSources sources;
  sources.snapshot = [] { return RuntimeAdminSnapshot{}; };
  auto first = AdminServer::start(config, sources);
  ASSERT_TRUE(first) << first.error().report();
  config.port = (*first)->port();
  config.listen = "127.0.0.1:" + std::to_string(config.port);
  auto second = AdminServer::start(config, sources);
  ASSERT_FALSE(second) << "a second admin server bound " << config.listen;
  EXPECT_EQ(second.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(second.error().report(), "address in use");
  (*first)->stop();
}

// One request on a fresh connection to 127.0.0.1:port; the whole answer as read until close.
std::string raw_http(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  ::close(fd);
  return answer;
}

// An admin server on a loopback port the kernel picks, with an empty snapshot.
Result<std::unique_ptr<AdminServer>> start_on_any_loopback_port() {
  AdminConfig config;
  config.listen = "127.0.0.1:0";
  config.port = 0;
  AdminSources sources;
  sources.snapshot = [] { return RuntimeAdminSnapshot{}; };
  return AdminServer::start(config, sources);
}

// cpp-httplib answers a request it cannot read (a POST without Content-Length) before any
// route runs; the answer is still the documented JSON error.
TEST(AdminListen, ARequestTheServerCannotReadGetsAJsonError) {
  auto server = start_on_any_loopback_port();
  ASSERT_TRUE(server) << server.error().report();
  const std::string answer =
      raw_http((*server)->port(),
               "POST /admin/snapshot/pause HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 4", 0), 0u) << answer;
  EXPECT_CONTAINS(answer, "application/json");
  EXPECT_CONTAINS(answer, "\"ok\":false");
  EXPECT_CONTAINS(answer, "Content-Length");
  (*server)->stop();
}

// A path without a route is named in the answer, with where the routes are listed (the
// answer named /admin/openapi.yaml as if that had been asked for: ops trial 2, L3).
TEST(AdminListen, AnUnknownPathIsNamedInTheNotFoundAnswer) {
  auto server = start_on_any_loopback_port();
  ASSERT_TRUE(server) << server.error().report();
  const std::string answer =
      raw_http((*server)->port(), "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 404", 0), 0u) << answer;
  EXPECT_CONTAINS(answer, "\"not_found\"");
  EXPECT_CONTAINS(answer, "no such route: GET /nope; GET /admin/openapi.yaml lists the routes");
  (*server)->stop();
}

RuntimeAdminSnapshot running() {
  RuntimeAdminSnapshot s;
  s.state = RuntimeState::kRunning;
  s.source_connected = true;
  s.health.kind = HealthVerdict::Kind::kHealthy;
  return s;
}

TEST(AdminProbes, LivenessFailsOnlyWhenTheBreakerEscalated) {
  RuntimeAdminSnapshot s = running();
  for (auto state : {BreakerState::kClosed, BreakerState::kOpen, BreakerState::kHalfOpen}) {
    s.breaker_state = state;
    EXPECT_EQ(liveness(s).status, 200) << to_string(state);
  }
  s.state = RuntimeState::kFailed;  // not running is still alive
  s.health.kind = HealthVerdict::Kind::kNotRunning;
  EXPECT_EQ(liveness(s).status, 200);
  s.breaker_state = BreakerState::kError;
  EXPECT_EQ(liveness(s).status, 503);
  EXPECT_CONTAINS(liveness(s).body, "\"status\":\"error\"");
  // Once the run failed, both probes name the side that kept failing through its error.
  const std::string failure =
      "reconnecting the postgres source: connection to 127.0.0.1:5432 refused";
  EXPECT_CONTAINS(liveness(s, failure).body, "the last error: " + failure);
  EXPECT_CONTAINS(readiness(s, std::nullopt, failure).body, "the runtime is failed: " + failure);
  EXPECT_EQ(readiness(s, std::nullopt, failure).status, 503);
}

// A run that ended with another fatal error (ops trial M1: the slot was dropped) lingers
// for [admin] error_linger_ms with the error set: both probes answer 503 naming it.
TEST(AdminProbes, LivenessFailsOnceTheRunEndedWithAFatalError) {
  RuntimeAdminSnapshot s = running();
  s.state = RuntimeState::kFailed;
  s.health.kind = HealthVerdict::Kind::kStalled;
  s.health.cause = StallCause::kSourcePositionLost;
  s.health.reason = "the database no longer has the log position";
  EXPECT_EQ(liveness(s).status, 200);  // failed, but no error handed over: not lingering
  const std::string failure = "replication slot \"s\" does not exist";
  const ProbeAnswer live = liveness(s, failure);
  EXPECT_EQ(live.status, 503);
  EXPECT_CONTAINS(live.body, "\"status\":\"error\"");
  EXPECT_CONTAINS(live.body, "the run ended with an error");
  EXPECT_CONTAINS(live.body, "does not exist");
  const ProbeAnswer ready = readiness(s, std::nullopt, failure);
  EXPECT_EQ(ready.status, 503);
  EXPECT_CONTAINS(ready.body, "source_position_lost");
}

TEST(AdminProbes, ReadinessNeedsARunningStreamThatIsNotStalled) {
  RuntimeAdminSnapshot s = running();
  EXPECT_EQ(readiness(s, std::nullopt).status, 200);
  s.health.kind = HealthVerdict::Kind::kIdle;  // a quiet database is ready
  EXPECT_EQ(readiness(s, std::nullopt).status, 200);

  s.health.kind = HealthVerdict::Kind::kStalled;
  s.health.cause = StallCause::kPollLoopNotTurning;
  s.health.reason = "no poll returned for 31000 ms";
  const ProbeAnswer stalled = readiness(s, std::nullopt);
  EXPECT_EQ(stalled.status, 503);
  EXPECT_CONTAINS(stalled.body, "stalled:poll_loop_not_turning");
  EXPECT_CONTAINS(stalled.body, "no poll returned for 31000 ms");

  RuntimeAdminSnapshot created;
  EXPECT_EQ(readiness(created, std::nullopt).status, 503);
  EXPECT_CONTAINS(readiness(created, std::nullopt).body, "not_running");

  BlockingSnapshotStatus initial;
  initial.phase = BlockingSnapshotStatus::Phase::kRunning;
  EXPECT_EQ(readiness(running(), initial).status, 503);
  EXPECT_CONTAINS(readiness(running(), initial).body, "initial_snapshot");
  initial.phase = BlockingSnapshotStatus::Phase::kComplete;
  EXPECT_EQ(readiness(running(), initial).status, 200);
}

// F6: /readyz means streaming. A source that is reconnecting, or a breaker that is open or
// half-open, answers 503 at once, naming the side and the last error, while the health verdict
// (Idle or Healthy until the 30 s stall threshold) is left as it is.
TEST(AdminProbes, ReadinessIsNotReadyWhileTheSourceReconnectsOrTheBreakerIsOpen) {
  RuntimeAdminSnapshot s = running();
  s.health.kind = HealthVerdict::Kind::kIdle;
  s.source_connected = false;
  s.retrying = "source";
  s.consecutive_errors = 2;
  s.last_recoverable_error = "connection to 127.0.0.1:5432 refused";
  ProbeAnswer answer = readiness(s, std::nullopt);
  EXPECT_EQ(answer.status, 503);
  EXPECT_CONTAINS(answer.body, "\"status\":\"source_reconnecting\"");
  EXPECT_CONTAINS(answer.body, "2 failed attempts in a row");
  EXPECT_CONTAINS(answer.body, "last error: connection to 127.0.0.1:5432 refused");
  EXPECT_EQ(s.health.kind, HealthVerdict::Kind::kIdle);

  // The source is up, the sink keeps failing and the breaker opened.
  s.source_connected = true;
  s.retrying = "sink";
  s.breaker_state = BreakerState::kOpen;
  s.consecutive_errors = 10;
  s.last_recoverable_error = "the receiver at http://hook/ answered HTTP 503";
  answer = readiness(s, std::nullopt);
  EXPECT_EQ(answer.status, 503);
  EXPECT_CONTAINS(answer.body, "\"status\":\"breaker_open\"");
  EXPECT_CONTAINS(answer.body, "after 10 sink errors in a row");
  EXPECT_CONTAINS(answer.body, "answered HTTP 503");
  s.breaker_state = BreakerState::kHalfOpen;
  EXPECT_EQ(readiness(s, std::nullopt).status, 503);
  EXPECT_CONTAINS(readiness(s, std::nullopt).body, "breaker_half_open");

  // Closed again and connected: ready.
  s.breaker_state = BreakerState::kClosed;
  s.retrying.clear();
  EXPECT_EQ(readiness(s, std::nullopt).status, 200);

  // A restart during an outage: the runtime exists, start() is connecting to the source.
  RuntimeAdminSnapshot created;
  created.health.reason =
      "connecting to the source (3 failed attempts, breaker closed; last "
      "error: refused)";
  answer = readiness(created, std::nullopt);
  EXPECT_EQ(answer.status, 503);
  EXPECT_CONTAINS(answer.body, "starting: connecting to the source (3 failed attempts");
  EXPECT_EQ(answer.body.find("the runtime is created"), std::string::npos) << answer.body;
}

TEST(AdminSnapshotJson, CarriesHealthBreakerCountersAndBothSnapshots) {
  RuntimeAdminSnapshot s = running();
  s.events_delivered = 7;
  s.events_committed = 5;
  s.events_committed_lifetime = 105;
  s.in_flight = 2;
  s.checkpoint_offset = "0/16B2E48";
  s.breaker_state = BreakerState::kHalfOpen;
  s.recoverable_errors = 3;
  IncrementalSnapshotState inc;
  inc.generation = 2;
  inc.tables.push_back({"public.t", {"id"}, std::nullopt, 2, 1, 10, 100, false});
  s.incremental_snapshot = inc;
  BlockingSnapshotStatus initial;
  initial.phase = BlockingSnapshotStatus::Phase::kComplete;
  const std::string json = admin_snapshot_json(
      s, initial, 1234, {{"pii", "mask", "ssn", "the column ssn is delivered in clear text"}});
  EXPECT_CONTAINS(json,
                  "\"unmatched_rules\":[{\"transform\":\"pii\",\"kind\":\"mask\","
                  "\"rule\":\"ssn\",\"consequence\":\"the column ssn is delivered in "
                  "clear text\"}]");
  EXPECT_CONTAINS(admin_snapshot_json(s, initial, 1234), "\"unmatched_rules\":[]");
  EXPECT_CONTAINS(json, "\"state\":\"running\"");
  EXPECT_CONTAINS(json, "\"events_committed\":5");
  EXPECT_CONTAINS(json, "\"events_committed_lifetime\":105");
  EXPECT_EQ(json.find("events_committed_total"), std::string::npos)
      << "the JSON names a lifetime count like the per-process Prometheus counter";
  EXPECT_CONTAINS(json, "\"checkpoint_offset\":\"0/16B2E48\"");
  EXPECT_CONTAINS(json, "\"verdict\":\"healthy\"");
  EXPECT_CONTAINS(json, "\"breaker_state\":\"half_open\"");
  EXPECT_CONTAINS(json, "\"recoverable_errors\":3");
  EXPECT_CONTAINS(json, "\"incremental_snapshot\":{");
  EXPECT_CONTAINS(json, "\"public.t\"");
  EXPECT_CONTAINS(json, "\"initial_snapshot\":{\"phase\":\"complete\"");
  EXPECT_CONTAINS(json, "\"now_ms\":1234");
}

// ---- the text format ------------------------------------------------------------------------

TEST(MetricsExposition, FamiliesSamplesAndEscaping) {
  Exposition out;
  out.family("cppcdc_x_total", "counter", "A help text with a \\ and a\nnewline.");
  out.sample("cppcdc_x_total", {{"table", "a\"b\\c\nd"}, {"op", "insert"}}, 3);
  out.sample("cppcdc_x_total", {}, 0.25);
  EXPECT_EQ(out.text(),
            "# HELP cppcdc_x_total A help text with a \\\\ and a\\nnewline.\n"
            "# TYPE cppcdc_x_total counter\n"
            "cppcdc_x_total{table=\"a\\\"b\\\\c\\nd\",op=\"insert\"} 3\n"
            "cppcdc_x_total 0.25\n");
}

TEST(MetricsExposition, ValuesAreSpelledAsPrometheusReadsThem) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(12345678901234), "12345678901234");
  EXPECT_EQ(format_metric_value(-2), "-2");
  EXPECT_EQ(format_metric_value(0.005), "0.005");
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_metric_value(0.0 / 0.0), "NaN");
}

TEST(MetricsExposition, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Histogram h({0.1, 1});
  h.observe(0.0625);
  h.observe(0.5, 2);
  h.observe(5);
  Exposition out;
  h.write(out, "lat_seconds");
  EXPECT_EQ(out.text(),
            "lat_seconds_bucket{le=\"0.1\"} 1\n"
            "lat_seconds_bucket{le=\"1\"} 3\n"
            "lat_seconds_bucket{le=\"+Inf\"} 4\n"
            "lat_seconds_sum 6.0625\n"
            "lat_seconds_count 4\n");
}

// Every sample line of an exposition: "name{labels}" -> value.
std::map<std::string, std::string> samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

Event make_event(std::string schema, std::string table, Operation op, std::int64_t commit_ms) {
  Event e;
  e.schema = std::move(schema);
  e.table = std::move(table);
  e.op = op;
  e.source.timestamp = commit_ms;
  e.after = Row{ColumnValue{"id", std::string("12345"), false}};
  return e;
}

// How far behind the source the last acknowledged batch ran, Debezium's MilliSecondsBehindSource.
TEST(PipelineMetrics, TheCommitLagIsTheLastAcknowledgementMinusItsNewestSourceCommit) {
  PipelineMetrics metrics;
  MetricsInputs in;
  in.snapshot = running();
  in.now_ms = 9000;
  EXPECT_EQ(samples(metrics.render(in)).count("cppcdc_commit_lag_ms"), 0u);  // nothing yet
  std::vector<Event> batch = {make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "a", Operation::kInsert, 1200)};
  metrics.on_delivered(batch);
  metrics.on_committed(batch, 1500);
  EXPECT_EQ(samples(metrics.render(in)).at("cppcdc_commit_lag_ms"), "300");
  std::vector<Event> next = {make_event("public", "a", Operation::kUpdate, 2000)};
  metrics.on_delivered(next);
  metrics.on_committed(next, 2600);
  EXPECT_EQ(samples(metrics.render(in)).at("cppcdc_commit_lag_ms"), "600");
}

TEST(PipelineMetrics, CountsDeliveredAndCommittedByTableAndOp) {
  PipelineMetrics metrics;
  std::vector<Event> batch = {make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "b", Operation::kDelete, 1000),
                              make_event("public", "a", Operation::kUpdate, 2000)};
  metrics.on_delivered(batch);
  metrics.on_committed(std::span<const Event>(batch.data(), 3), 1500);  // a prefix
  MetricsInputs in;
  in.snapshot = running();
  in.now_ms = 5000;
  const auto s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_events_delivered_total{table=\"public.a\",op=\"insert\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_events_delivered_total{table=\"public.a\",op=\"update\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_events_delivered_total{table=\"public.b\",op=\"delete\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_events_committed_total{table=\"public.a\",op=\"insert\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_events_committed_total{table=\"public.b\",op=\"delete\"}"), "1");
  EXPECT_EQ(s.count("cppcdc_events_committed_total{table=\"public.a\",op=\"update\"}"), 0u);
  EXPECT_EQ(s.at("cppcdc_batches_delivered_total"), "1");
  EXPECT_EQ(s.at("cppcdc_batches_committed_total"), "1");
  EXPECT_EQ(s.at("cppcdc_delivered_bytes_total"), "20");
  // Three events committed 0.5 s after their commit: one observation of weight 3.
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_bucket{le=\"0.25\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_bucket{le=\"0.5\"}"), "3");
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_count"), "3");
  EXPECT_EQ(metrics.committed("public.a", Operation::kInsert), 2u);
}

// Batches a transactional sink carries in its open transaction are committed only with the
// batch whose commit ends the stretch: counted then (with its latency), or never when aborted.
// Before, they counted as committed when acknowledged.
TEST(PipelineMetrics, CarriedBatchesCountWhenTheirTransactionCommitsAndNotWhenAborted) {
  PipelineMetrics metrics;
  const auto render = [&] {
    MetricsInputs in;
    in.snapshot = running();
    in.snapshot.events_committed_lifetime = 42;
    in.now_ms = 9000;
    return samples(metrics.render(in));
  };
  const std::string a_insert = "cppcdc_events_committed_total{table=\"public.a\",op=\"insert\"}";
  std::vector<Event> first = {make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "a", Operation::kInsert, 1000)};
  metrics.on_delivered(first);
  metrics.on_carried(first, 1100);
  std::vector<Event> second = {make_event("public", "a", Operation::kInsert, 2000)};
  metrics.on_delivered(second);
  metrics.on_carried(second, 2100);
  auto s = render();
  EXPECT_EQ(s.count(a_insert), 0u) << "carried events counted before their commit";
  EXPECT_EQ(s.at("cppcdc_batches_committed_total"), "0");
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_count"), "0");
  EXPECT_EQ(s.at("cppcdc_events_committed_lifetime"), "42");
  // Aborted: forgotten; delivered again and carried, then committed with a third batch.
  metrics.on_carried_aborted();
  metrics.on_delivered(first);
  metrics.on_carried(first, 3100);
  std::vector<Event> last = {make_event("public", "b", Operation::kDelete, 3000)};
  metrics.on_delivered(last);
  metrics.on_committed(last, 3500);
  s = render();
  EXPECT_EQ(s.at(a_insert), "2");
  EXPECT_EQ(s.at("cppcdc_events_committed_total{table=\"public.b\",op=\"delete\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_batches_committed_total"), "2");
  // Latency to the commit that made them visible: 2.5 s for the carried two, 0.5 s for the last.
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_count"), "3");
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_bucket{le=\"0.5\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_sink_latency_seconds_sum"), "5.5");
}

// A prefix that ends inside a run of one table and op, then the redelivered tail (a batch of
// its own, as the runtime hands it out again) committed whole.
TEST(PipelineMetrics, APrefixEndingInsideARunCountsOnlyItsPart) {
  PipelineMetrics metrics;
  std::vector<Event> batch = {make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "a", Operation::kInsert, 1000),
                              make_event("public", "b", Operation::kDelete, 1000)};
  metrics.on_delivered(batch);
  metrics.on_committed(std::span<const Event>(batch.data(), 2), 1500);
  EXPECT_EQ(metrics.committed("public.a", Operation::kInsert), 2u);
  EXPECT_EQ(metrics.committed("public.b", Operation::kDelete), 0u);
  const std::vector<Event> tail(batch.begin() + 2, batch.end());
  metrics.on_delivered(tail);
  metrics.on_committed(tail, 1500);
  EXPECT_EQ(metrics.committed("public.a", Operation::kInsert), 3u);
  EXPECT_EQ(metrics.committed("public.b", Operation::kDelete), 1u);
  // Committed without a delivery before it (not how the runtime calls it): counted all the same.
  PipelineMetrics other;
  other.on_committed(batch, 1500);
  EXPECT_EQ(other.committed("public.a", Operation::kInsert), 3u);
  EXPECT_EQ(other.committed("public.b", Operation::kDelete), 1u);
}

TEST(PipelineMetrics, TablesBeyondTheCapShareOneOtherSeries) {
  PipelineMetrics metrics;
  std::vector<Event> batch;
  for (std::size_t i = 0; i < kMaxTableSeries + 10; ++i) {
    batch.push_back(make_event("s", "t" + std::to_string(i), Operation::kInsert, 0));
  }
  metrics.on_delivered(batch);
  metrics.on_committed(batch, 0);
  MetricsInputs in;
  const auto s = samples(metrics.render(in));
  std::size_t series = 0;
  for (const auto& [key, value] : s) {
    series += key.rfind("cppcdc_events_committed_total{", 0) == 0;
  }
  EXPECT_EQ(series, kMaxTableSeries + 1);
  EXPECT_EQ(s.at("cppcdc_events_committed_total{table=\"_other\",op=\"insert\"}"), "10");
}

TEST(PipelineMetrics, AgesHealthBreakerLagAndSnapshotProgressAreRendered) {
  PipelineMetrics metrics;
  CheckpointRecord record;
  record.saved_at_ms = 9000;
  metrics.on_checkpoint(record);
  MetricsInputs in;
  in.snapshot = running();
  in.snapshot.last_poll_at_ms = 9900;
  in.snapshot.last_commit_at_ms = 9500;
  in.snapshot.health.kind = HealthVerdict::Kind::kStalled;
  in.snapshot.health.cause = StallCause::kDeliveryFailing;
  in.snapshot.breaker_state = BreakerState::kOpen;
  in.snapshot.recoverable_errors = 4;
  in.snapshot.idempotency_evictions = 5;
  in.snapshot.idempotency_unidentifiable_passthrough = 6;
  in.snapshot.idempotency_suppressed = 9;
  IncrementalSnapshotState inc;
  inc.tables.push_back({"public.t", {"id"}, std::nullopt, 1, 2, 40, 100, false});
  in.snapshot.incremental_snapshot = inc;
  in.lag = SourceLag{4096, 512};
  in.unmatched_rules.push_back({"mask_pii", "mask", "user.ssn", "nothing is masked"});
  in.now_ms = 10000;
  const auto s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_runtime_poll_age_ms"), "100");
  EXPECT_EQ(s.at("cppcdc_runtime_commit_age_ms"), "500");
  EXPECT_EQ(s.at("cppcdc_checkpoint_age_ms"), "1000");
  EXPECT_EQ(s.count("cppcdc_runtime_delivery_age_ms"), 0u);  // nothing delivered yet
  EXPECT_EQ(s.at("cppcdc_health_verdict{verdict=\"stalled\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_health_verdict{verdict=\"healthy\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_health_stall_cause{cause=\"delivery_failing\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_health_stall_cause{cause=\"poll_loop_not_turning\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_breaker_state{state=\"open\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_breaker_state{state=\"error\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_recoverable_errors_total"), "4");
  EXPECT_EQ(s.at("cppcdc_idempotency_evictions_total"), "5");
  EXPECT_EQ(s.at("cppcdc_idempotency_unidentifiable_passthrough_total"), "6");
  EXPECT_EQ(s.at("cppcdc_idempotency_suppressed_total"), "9");
  EXPECT_EQ(s.at("cppcdc_source_retained_bytes"), "4096");
  EXPECT_EQ(s.at("cppcdc_source_confirmed_lag_bytes"), "512");
  EXPECT_EQ(s.at("cppcdc_incremental_snapshot_rows{table=\"public.t\"}"), "40");
  EXPECT_EQ(s.at("cppcdc_incremental_snapshot_estimated_rows{table=\"public.t\"}"), "100");
  EXPECT_EQ(s.at("cppcdc_incremental_snapshot_table_complete{table=\"public.t\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_transform_rules_unmatched{transform=\"mask_pii\",kind=\"mask\","
                 "rule=\"user.ssn\"}"),
            "1");
  EXPECT_EQ(s.count("process_cpu_seconds_total"), 1u);
  EXPECT_EQ(s.count("process_resident_memory_bytes"), 1u);
  EXPECT_EQ(s.count("process_open_fds"), 1u);
  EXPECT_EQ(s.count("process_start_time_seconds"), 1u);
  EXPECT_EQ(s.count("cppcdc_initial_snapshot_running"), 0u);  // no initial snapshot configured
}

// The verdict stays healthy while the initial snapshot's rows flow; the readiness probe
// answers 503 then, and /metrics says why through cppcdc_initial_snapshot_running.
TEST(PipelineMetrics, TheInitialSnapshotRunningGaugeFollowsItsPhase) {
  PipelineMetrics metrics;
  MetricsInputs in;
  in.snapshot = running();
  in.now_ms = 10000;
  BlockingSnapshotStatus initial;
  initial.phase = BlockingSnapshotStatus::Phase::kRunning;
  in.initial_snapshot = initial;
  auto s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_health_verdict{verdict=\"healthy\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_initial_snapshot_running"), "1");
  in.initial_snapshot->phase = BlockingSnapshotStatus::Phase::kPending;
  s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_initial_snapshot_running"), "1");
  in.initial_snapshot->phase = BlockingSnapshotStatus::Phase::kComplete;
  s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_initial_snapshot_running"), "0");
}

// F8: which build this is, and whether the source connection is up.
TEST(PipelineMetrics, BuildInfoAndSourceUp) {
  PipelineMetrics metrics;
  MetricsInputs in;
  in.snapshot = running();
  auto s = samples(metrics.render(in));
  bool build_info = false;
  for (const auto& [series, value] : s) {
    if (series.rfind("cppcdc_build_info{version=\"" CPPCDC_VERSION "\",compiler=\"", 0) == 0) {
      build_info = value == "1";
    }
  }
  EXPECT_TRUE(build_info) << metrics.render(in);
  EXPECT_EQ(s.at("cppcdc_source_up"), "1");
  in.snapshot.source_connected = false;  // reconnecting
  EXPECT_EQ(samples(metrics.render(in)).at("cppcdc_source_up"), "0");
}

namespace {

// A sink whose calls fail while `failing` is set; `own` stands for a sink that counts the
// attempts it retries inside its calls (Sink::failed_attempts()).
class ScriptedSink final : public Sink {
 public:
  Status write(std::span<const Event>) override { return result(); }
  Status flush() override { return result(); }
  Status close() override { return ok(); }
  std::string name() const override { return "scripted"; }
  std::optional<std::uint64_t> failed_attempts() const override { return own; }
  bool failing = false;
  std::optional<std::uint64_t> own;

 private:
  Status result() const {
    if (failing) return fail(Error::sink(ErrorKind::kTransient, "down"));
    return ok();
  }
};

}  // namespace

// F8 and F4: every configured sink has its own series (label sink="<name>"), and each failed
// attempt shows in cppcdc_sink_attempt_failures_total as it happens: the sink's own count when
// it retries inside its calls, else its failed calls.
TEST(PipelineMetrics, SinkSeriesAreLabelledByTheConfiguredSinkName) {
  PipelineMetrics metrics;
  MetricsInputs in;
  in.snapshot = running();
  EXPECT_EQ(metrics.render(in).find("cppcdc_sink_errors_total"), std::string::npos);

  auto plain = std::make_unique<ScriptedSink>();
  ScriptedSink* plain_view = plain.get();
  auto counting = std::make_unique<ScriptedSink>();
  ScriptedSink* counting_view = counting.get();
  counting_view->own = 0;
  auto files = std::make_shared<SinkTally>("files");
  auto hook = std::make_shared<SinkTally>("billing-hook");
  auto a = count_sink(std::move(plain), files);
  auto b = count_sink(std::move(counting), hook);
  metrics.add_sink(files);
  metrics.add_sink(hook);

  const std::vector<Event> two{make_event("public", "t", Operation::kInsert, 1),
                               make_event("public", "t", Operation::kInsert, 2)};
  ASSERT_TRUE(a->write(two));
  ASSERT_TRUE(a->flush());
  plain_view->failing = true;
  EXPECT_FALSE(a->write(two));
  EXPECT_FALSE(a->flush());
  ASSERT_TRUE(b->write(two));
  counting_view->own = 5;  // five requests failed inside its calls, none of the calls did
  auto s = samples(metrics.render(in));
  EXPECT_EQ(s.at("cppcdc_sink_events_written_total{sink=\"files\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_sink_flushes_total{sink=\"files\"}"), "1");
  EXPECT_EQ(s.at("cppcdc_sink_errors_total{sink=\"files\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_sink_attempt_failures_total{sink=\"files\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_sink_events_written_total{sink=\"billing-hook\"}"), "2");
  EXPECT_EQ(s.at("cppcdc_sink_errors_total{sink=\"billing-hook\"}"), "0");
  EXPECT_EQ(s.at("cppcdc_sink_attempt_failures_total{sink=\"billing-hook\"}"), "5");
  EXPECT_EQ(a->name(), "scripted");  // the wrapper is invisible
}

TEST(ProcessStats, ReadFromProc) {
  const auto stats = read_process_stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->resident_bytes, 0);
  EXPECT_GE(stats->open_fds, 3);  // stdin, stdout, stderr at least
  EXPECT_GT(stats->start_time_seconds, 1.6e9);
  EXPECT_GE(stats->cpu_seconds, 0);
}

// ---- the OpenAPI document ----------------------------------------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AdminOpenApi, TheBuiltInDocumentIsTheCheckedInOne) {
  const std::string checked_in =
      read_file(std::string(CPPCDC_SOURCE_DIR) + "/docs/admin-openapi.yaml");
  ASSERT_FALSE(checked_in.empty());
  EXPECT_EQ(std::string(admin_openapi_document()), checked_in);
}

TEST(AdminOpenApi, EveryRegisteredRouteIsDescribed) {
  const std::string doc(admin_openapi_document());
  for (const std::string& route : admin_routes()) {
    const auto space = route.find(' ');
    std::string method = route.substr(0, space);
    for (auto& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string path = route.substr(space + 1);
    const auto at = doc.find("\n  " + path + ":\n");
    ASSERT_NE(at, std::string::npos) << route << " is not under paths";
    // The method is the path's next line (each path here has one operation).
    const auto next = at + 4 + path.size() + 1;
    EXPECT_EQ(doc.compare(next, method.size() + 6, "    " + method + ":\n"), 0) << route;
  }
}

}  // namespace
}  // namespace cppcdc::server
