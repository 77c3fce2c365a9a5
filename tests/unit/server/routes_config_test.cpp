// [[sinks]], [[pipeline.routes]], fanouts, the sink batching keys and [dead_letter] in
// cdc.toml: what loads, what check-config shows, and errors at load that name the file, the
// line and the key.

#include <gtest/gtest.h>

#include <string>

#include "server/config.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kBase = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.invoice", "public.orders"]

[state.offset]
dir = "/tmp/state"
)";

std::string error_of(const std::string& extra) {
  auto config = parse_server_config(std::string(kBase) + extra, "cdc.toml");
  if (config) return "(loaded)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return render_error(config.error());
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// Lines 7 on (kBase has 6).
constexpr const char* kRouted = R"(
[sink]
type = "file"
path = "/out/default.jsonl"

[[sinks]]
name = "billing-hook"
type = "file"
path = "/out/billing.jsonl"
batch_max_events = 100
sink_flush_interval_events = 1000
batch_max_delay_ms = 250

[[sinks]]
name = "audit"
type = "stdout"

[[sinks]]
name = "both"
type = "fanout"
sinks = ["billing-hook", "audit"]

[[pipeline.routes]]
tables = ["public.invoice*"]
sink = "billing-hook"

[[pipeline.routes]]
schemas = ["audit"]
tables = ["*.events"]
sink = "both"
)";

}  // namespace

TEST(RoutesConfig, SinksRoutesAndAFanoutLoadAndCheckConfigListsThem) {
  auto config = parse_server_config(std::string(kBase) + kRouted, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  ASSERT_EQ(config->sinks.size(), 4u);
  EXPECT_EQ(config->sinks[0].name, "default");
  EXPECT_EQ(config->sinks[0].type, "file");
  EXPECT_EQ(config->sink, config->sinks[0].configured);
  EXPECT_EQ(config->sinks[1].name, "billing-hook");
  EXPECT_EQ(config->sinks[1].configured->describe().headline, "file /out/billing.jsonl");
  EXPECT_EQ(config->sinks[1].batching.max_events, 100u);
  EXPECT_EQ(config->sinks[1].batching.flush_interval_events, 1000u);
  EXPECT_EQ(config->sinks[1].batching.max_delay, std::chrono::milliseconds(250));
  EXPECT_EQ(config->sinks[2].type, "stdout");
  EXPECT_EQ(config->sinks[3].type, "fanout");
  EXPECT_EQ(config->sinks[3].configured, nullptr);
  EXPECT_EQ(config->sinks[3].fanout, (std::vector<std::size_t>{1, 2}));
  ASSERT_EQ(config->routes.size(), 2u);
  EXPECT_EQ(config->routes[0].tables, (std::vector<std::string>{"public.invoice*"}));
  EXPECT_EQ(config->routes[0].sink, 1u);
  EXPECT_EQ(config->routes[1].schemas, (std::vector<std::string>{"audit"}));
  EXPECT_EQ(config->routes[1].sink, 3u);
  EXPECT_EQ(config->routes[1].where, "cdc.toml:33:1");

  const std::string described = describe_config(*config);
  EXPECT_CONTAINS(described, "sink:               file /out/default.jsonl\n");
  EXPECT_CONTAINS(described, "  name:             \"default\" (events no route takes go here)");
  EXPECT_CONTAINS(described, "sinks.billing-hook: file /out/billing.jsonl\n");
  EXPECT_CONTAINS(described,
                  "  batching:         batch_max_events 100, "
                  "sink_flush_interval_events 1000, batch_max_delay_ms 250\n");
  EXPECT_CONTAINS(described, "sinks.both:         fanout to \"billing-hook\", \"audit\"");
  EXPECT_CONTAINS(described, "routes:             2 rules, tried in order, the first match wins");
  EXPECT_CONTAINS(described, "    1. tables=public.invoice* -> \"billing-hook\"\n");
  EXPECT_CONTAINS(described, "    2. tables=*.events schemas=audit -> \"both\"\n");
}

TEST(RoutesConfig, TheDefaultSinkCanBeNamedRoutedToAndBeAFanout) {
  auto config = parse_server_config(std::string(kBase) + R"(
[sink]
name = "main"
type = "fanout"
sinks = ["a", "b"]

[[sinks]]
name = "a"
type = "stdout"

[[sinks]]
name = "b"
type = "file"
path = "/out/b.jsonl"

[[pipeline.routes]]
tables = ["orders"]
sink = "main"
)",
                                    "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->sinks[0].name, "main");
  EXPECT_EQ(config->sink, nullptr);
  EXPECT_EQ(config->sinks[0].fanout, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(config->routes[0].sink, 0u);
}

TEST(RoutesConfig, ARouteNamingNoSinkIsAnErrorAtTheKey) {
  const std::string report = error_of(
      std::string(kRouted) + "\n[[pipeline.routes]]\ntables = [\"x\"]\nsink = \"biling-hook\"\n");
  EXPECT_CONTAINS(report,
                  "cdc.toml:40:8: [[pipeline.routes]] #3 sink: no sink is named "
                  "\"biling-hook\"");
  EXPECT_CONTAINS(report, "the sinks are \"default\", \"billing-hook\", \"audit\", \"both\"");
  EXPECT_CONTAINS(report, "did you mean \"billing-hook\"?");
  EXPECT_CONTAINS(error_of("\n[[pipeline.routes]]\ntables = [\"x\"]\n"),
                  "cdc.toml: [[pipeline.routes]] #1 sink: required");
}

TEST(RoutesConfig, TwoSinksWithOneNameAreAnErrorNamingBoth) {
  const std::string two = R"(
[[sinks]]
name = "hook"
type = "stdout"

[[sinks]]
name = "hook"
type = "stdout"

[[pipeline.routes]]
tables = ["x"]
sink = "hook"
)";
  EXPECT_CONTAINS(error_of(two),
                  "cdc.toml:13:8: [[sinks]] #2 name: \"hook\" is taken by "
                  "[[sinks]] \"hook\"");
  EXPECT_CONTAINS(error_of("\n[[sinks]]\nname = \"default\"\ntype = \"stdout\"\n"),
                  "cdc.toml:9:8: [[sinks]] #1 name: \"default\" is taken by [sink] (its name "
                  "when it does not set one)");
}

TEST(RoutesConfig, EverySinkEntryMustReceiveSomething) {
  EXPECT_CONTAINS(error_of("\n[[sinks]]\nname = \"spare\"\ntype = \"stdout\"\n"),
                  "cdc.toml:9:8: [[sinks]] \"spare\" name: no [[pipeline.routes]] rule and no "
                  "fanout sends events to \"spare\"");
}

TEST(RoutesConfig, SinkEntryErrorsNameTheEntryAndTheKey) {
  EXPECT_CONTAINS(error_of("\n[[sinks]]\ntype = \"stdout\"\n"),
                  "cdc.toml: [[sinks]] #1 name: required");
  EXPECT_CONTAINS(error_of("\n[[sinks]]\nname = \"x\"\ntype = \"file\"\n"),
                  "[[sinks]] \"x\" path: required when type = \"file\"");
  EXPECT_CONTAINS(error_of("\n[[sinks]]\nname = \"x\"\ntype = \"stdout\"\npaht = \"y\"\n"),
                  "cdc.toml:11:1: [[sinks]] \"x\" paht: unknown key");
  EXPECT_CONTAINS(error_of("\n[[sinks]]\nname = \"x\"\ntype = \"kafkaa\"\n"), "or \"fanout\"");
  EXPECT_CONTAINS(error_of("\n[sink]\nbatch_max_events = 0\n"),
                  "cdc.toml:9:20: [sink] batch_max_events: expected an integer from 1");
  auto top_level = parse_server_config("sinks = 3\n" + std::string(kBase), "cdc.toml");
  ASSERT_FALSE(top_level);
  EXPECT_CONTAINS(top_level.error().report(), "cdc.toml:1:9: sinks: expected an array of tables");
}

TEST(RoutesConfig, FanoutErrorsNameTheElement) {
  const std::string head =
      "\n[[sinks]]\nname = \"a\"\ntype = \"stdout\"\n"
      "\n[[sinks]]\nname = \"f\"\ntype = \"fanout\"\n";
  const std::string route = "\n[[pipeline.routes]]\ntables = [\"x\"]\nsink = \"f\"\n";
  EXPECT_CONTAINS(error_of(head + "sinks = [\"a\", \"b\"]\n" + route),
                  "cdc.toml:15:15: [[sinks]] \"f\" sinks: no sink is named \"b\"");
  EXPECT_CONTAINS(error_of(head + "sinks = [\"a\", \"f\"]\n" + route), "cannot list itself");
  EXPECT_CONTAINS(error_of(head + "sinks = [\"a\", \"a\"]\n" + route), "\"a\" is listed twice");
  EXPECT_CONTAINS(error_of(head + "sinks = []\n" + route), "expected at least one sink name");
  EXPECT_CONTAINS(error_of(head + route), "[[sinks]] \"f\" sinks: required when type = \"fanout\"");
  EXPECT_CONTAINS(error_of(head + "sinks = [\"a\"]\nbatch_max_events = 5\n" + route),
                  "cdc.toml:16:20: [[sinks]] \"f\" batch_max_events: a fanout hands every event");
  EXPECT_CONTAINS(error_of(head +
                           "sinks = [\"a\"]\n\n[[sinks]]\nname = \"g\"\ntype = \"fanout\"\n"
                           "sinks = [\"f\"]\n" +
                           route + "\n[[pipeline.routes]]\ntables = [\"y\"]\nsink = \"g\"\n"),
                  "\"f\" is a fanout too");
}

TEST(RoutesConfig, RouteErrorsNameTheRuleAndTheKey) {
  const std::string sink = "\n[[sinks]]\nname = \"a\"\ntype = \"stdout\"\n";
  EXPECT_CONTAINS(error_of(sink + "\n[[pipeline.routes]]\nsink = \"a\"\n"),
                  "cdc.toml:12:1: [[pipeline.routes]] #1: names no tables and no schemas");
  EXPECT_CONTAINS(error_of(sink + "\n[[pipeline.routes]]\ntables = []\nsink = \"a\"\n"),
                  "cdc.toml:13:10: [[pipeline.routes]] #1 tables: expected at least one glob");
  EXPECT_CONTAINS(error_of(sink + "\n[[pipeline.routes]]\ntables = [\"x\", \"\"]\nsink = \"a\"\n"),
                  "cdc.toml:13:16: [[pipeline.routes]] #1 tables: expected a glob");
  EXPECT_CONTAINS(error_of(sink + "\n[[pipeline.routes]]\ntables = [\"x\"]\nsink = \"a\"\n"
                                  "ops = [\"insert\"]\n"),
                  "cdc.toml:15:1: [[pipeline.routes]] #1 ops: unknown key");
  EXPECT_CONTAINS(error_of("\n[pipeline]\nroutes = \"x\"\n"),
                  "cdc.toml:9:10: [pipeline] routes: expected an array of tables");
}

TEST(RoutesConfig, DeadLetterErrorsNameTheKey) {
  EXPECT_CONTAINS(error_of("\n[dead_letter]\nfile_mode = \"0600\"\n"),
                  "cdc.toml: [dead_letter] path: required");
  EXPECT_CONTAINS(error_of("\n[dead_letter]\ntype = \"kafka\"\npath = \"x\"\n"),
                  "cdc.toml:9:8: [dead_letter] type: expected \"file\"");
  EXPECT_CONTAINS(error_of("\n[dead_letter]\npath = \"x\"\nfile_mode = \"0755\"\n"),
                  "cdc.toml:10:13: [dead_letter] file_mode:");
  EXPECT_CONTAINS(error_of("\n[dead_letter]\npath = \"x\"\ntopic = \"y\"\n"),
                  "cdc.toml:10:1: [dead_letter] topic: unknown key");
  EXPECT_EQ(error_of("\n[dead_letter]\npath = \"x\"\nfile_mode = \"0640\"\n"), "(loaded)");
}

}  // namespace cppcdc::server
