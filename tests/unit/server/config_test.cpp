// cdc.toml loading: the documented keys, defaults, and errors that name file, key and line.

#include "server/config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "server/run.hpp"
#include "source/postgres/settings.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kExample = R"(delivery_contract = "at_least_once"

[source]
type = "postgres"
dsn = "host=127.0.0.1 port=5432 dbname=shop user=cdc password=s3cret-pw"
slot_name = "cppcdc_orders"
publication_name = "cppcdc_orders_pub"
tables = ["public.orders", "customers"]
create_slot = true
create_publication = false
source_name = "shop-db"
status_interval_ms = 5000
capture_logical_messages = true
wal_transport = "sql_peek"
peek_interval_ms = 150
peek_statement_timeout_ms = 9000
peek_max_changes = 2000
spill_threshold_bytes = 1048576
spill_dir = "/var/tmp/cppcdc"
max_queued_bytes = 4194304

[source.snapshot]
mode = "initial_only"
chunk_size = 500
tables = ["public.orders"]
table_conditions = { "public.orders" = "region = 'eu'" }

[sink]
type = "file"
path = "/var/lib/cppcdc/out/events.jsonl"

[state.offset]
backend = "local_fs"
dir = "/var/lib/cppcdc/state"

[runtime]
max_buffer_size = 5000
max_poll_wait_ms = 250
connection_retry_max_retries = -1
connection_retry_initial_delay_ms = 200
connection_retry_max_delay_ms = 8000

[log]
format = "json"
level = "debug"
)";

// The smallest valid file: everything else takes its default.
constexpr const char* kMinimal = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[state.offset]
dir = "/tmp/state"
)";

using pg::redact_dsn;

// The PostgreSQL settings the loader handed to the "postgres" plugin.
const pg::PostgresSourceConfig& pg_source(const ServerConfig& config) {
  const auto* configured = dynamic_cast<const pg::ConfiguredPostgres*>(config.source.get());
  if (configured == nullptr) throw std::logic_error("not a postgres source");
  return configured->config();
}

// The directory a local_fs checkpoint backend was configured with.
std::filesystem::path checkpoint_dir(const ServerConfig& config) {
  return config.checkpoint->directory().value_or(std::filesystem::path());
}

std::string error_of(const std::string& text) {
  auto config = parse_server_config(text, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(ServerConfig, ExampleConfigParsesEveryKey) {
  auto config = parse_server_config(kExample, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->origin, "cdc.toml");
  EXPECT_EQ(config->delivery_contract, "at_least_once");
  const auto& src = pg_source(*config);
  EXPECT_EQ(src.dsn, "host=127.0.0.1 port=5432 dbname=shop user=cdc password=s3cret-pw");
  EXPECT_EQ(src.slot_name, "cppcdc_orders");
  EXPECT_EQ(src.publication_name, "cppcdc_orders_pub");
  EXPECT_EQ(src.tables, (std::vector<std::string>{"public.orders", "public.customers"}));
  EXPECT_TRUE(src.create_slot);
  EXPECT_FALSE(src.create_publication);
  EXPECT_EQ(src.source_name, "shop-db");
  EXPECT_EQ(src.status_interval_ms, 5000u);
  EXPECT_TRUE(src.capture_logical_messages);
  EXPECT_EQ(src.transport, pg::WalTransport::kSqlPeek);
  EXPECT_EQ(src.peek_interval_ms, 150u);
  EXPECT_EQ(src.peek_statement_timeout_ms, 9000u);
  EXPECT_EQ(src.peek_max_changes, 2000u);
  EXPECT_EQ(src.spill_threshold_bytes, 1048576u);
  EXPECT_EQ(src.spill_dir, "/var/tmp/cppcdc");
  EXPECT_EQ(src.max_queued_bytes, 4194304u);
  EXPECT_EQ(src.snapshot_mode, pg::SnapshotMode::kInitialOnly);
  EXPECT_EQ(src.snapshot_chunk_size, 500u);
  EXPECT_EQ(src.snapshot_tables, std::vector<std::string>{"public.orders"});
  ASSERT_EQ(src.snapshot_table_conditions.size(), 1u);
  EXPECT_EQ(src.snapshot_table_conditions[0].first, "public.orders");
  EXPECT_EQ(src.snapshot_table_conditions[0].second, "region = 'eu'");
  EXPECT_EQ(config->sink_type, "file");
  EXPECT_EQ(config->sink->describe().headline, "file /var/lib/cppcdc/out/events.jsonl");
  EXPECT_EQ(config->checkpoint_backend, "local_fs");
  EXPECT_EQ(checkpoint_dir(*config), "/var/lib/cppcdc/state");
  EXPECT_EQ(config->runtime.max_buffer_size, 5000u);
  EXPECT_EQ(config->runtime.max_poll_wait_ms, 250u);
  EXPECT_FALSE(config->runtime.connection_retry.max_retries.has_value());
  EXPECT_EQ(config->runtime.connection_retry.initial_delay_ms, 200u);
  EXPECT_EQ(config->runtime.connection_retry.max_delay_ms, 8000u);
  EXPECT_EQ(config->log_format, "json");
  EXPECT_EQ(config->log_level, "debug");
}

TEST(ServerConfig, StreamInProgressIsReadForTheStreamingReplicationTransport) {
  std::string text = kMinimal;
  const auto at = text.find("[source]\n");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 9, "stream_in_progress = true\n");
  auto streamed = parse_server_config(text, "cdc.toml");
  ASSERT_TRUE(streamed) << streamed.error().report();
  EXPECT_TRUE(pg_source(*streamed).stream_in_progress);
}

TEST(ServerConfig, MinimalConfigTakesTheDefaults) {
  auto config = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const pg::PostgresSourceConfig pg_defaults;
  const RuntimeOptions rt_defaults;
  EXPECT_EQ(pg_source(*config).slot_name, pg_defaults.slot_name);
  EXPECT_EQ(pg_source(*config).publication_name, pg_defaults.publication_name);
  EXPECT_EQ(pg_source(*config).create_slot, pg_defaults.create_slot);
  EXPECT_EQ(pg_source(*config).source_name, "postgres");
  EXPECT_EQ(pg_source(*config).transport, pg::WalTransport::kStreamingReplication);
  EXPECT_FALSE(pg_source(*config).capture_logical_messages);
  EXPECT_FALSE(pg_source(*config).stream_in_progress);
  EXPECT_EQ(pg_source(*config).spill_threshold_bytes, pg_defaults.spill_threshold_bytes);
  EXPECT_TRUE(pg_source(*config).spill_dir.empty());
  EXPECT_EQ(pg_source(*config).snapshot_mode, pg::SnapshotMode::kInitial);
  EXPECT_EQ(config->sink_type, "stdout");
  EXPECT_EQ(config->checkpoint_backend, "local_fs");
  EXPECT_EQ(config->runtime.max_buffer_size, rt_defaults.max_buffer_size);
  // The server's retry defaults are the spec's [runtime] table: the breaker decides when to give
  // up, the back-off runs from 100 ms to 5 s.
  EXPECT_FALSE(config->runtime.connection_retry.max_retries.has_value());
  EXPECT_EQ(config->runtime.connection_retry.initial_delay_ms, 100u);
  EXPECT_EQ(config->runtime.connection_retry.max_delay_ms, 5'000u);
  EXPECT_EQ(config->runtime.breaker.consecutive_threshold, 10u);
  EXPECT_EQ(config->runtime.breaker.cooldown_ms, 30'000u);
  EXPECT_EQ(config->runtime.breaker.max_open_cycles, 3u);
  EXPECT_EQ(config->runtime.max_event_bytes, 0u);
  EXPECT_EQ(config->delivery_contract, "at_least_once");
  EXPECT_EQ(config->log_format, "text");
  EXPECT_EQ(config->log_level, "info");
}

TEST(ServerConfig, EachIntegerKeyAloneLeavesEveryOtherAtItsDefault) {
  // A key set on its own must not leak into the keys read after it.
  const pg::PostgresSourceConfig d;
  const RuntimeOptions r;
  auto defaults_except = [&](const ServerConfig& c, const std::string& key) {
    const auto& s = pg_source(c);
    std::vector<std::pair<std::string, bool>> same = {
        {"status_interval_ms", s.status_interval_ms == d.status_interval_ms},
        {"wal_receiver_timeout_ms", s.wal_receiver_timeout_ms == d.wal_receiver_timeout_ms},
        {"peek_interval_ms", s.peek_interval_ms == d.peek_interval_ms},
        {"peek_statement_timeout_ms", s.peek_statement_timeout_ms == d.peek_statement_timeout_ms},
        {"peek_max_changes", s.peek_max_changes == d.peek_max_changes},
        {"spill_threshold_bytes", s.spill_threshold_bytes == d.spill_threshold_bytes},
        {"max_queued_bytes", s.max_queued_bytes == d.max_queued_bytes},
        {"chunk_size", s.snapshot_chunk_size == d.snapshot_chunk_size},
        {"max_buffer_size", c.runtime.max_buffer_size == r.max_buffer_size},
        {"max_poll_wait_ms", c.runtime.max_poll_wait_ms == r.max_poll_wait_ms},
        {"connection_retry_max_retries", !c.runtime.connection_retry.max_retries.has_value()},
        {"connection_retry_initial_delay_ms", c.runtime.connection_retry.initial_delay_ms == 100},
        {"connection_retry_max_delay_ms", c.runtime.connection_retry.max_delay_ms == 5'000},
        {"recoverable_error_breaker_consecutive_threshold",
         c.runtime.breaker.consecutive_threshold == r.breaker.consecutive_threshold},
        {"recoverable_error_breaker_cooldown_ms",
         c.runtime.breaker.cooldown_ms == r.breaker.cooldown_ms},
        {"recoverable_error_breaker_max_open_cycles",
         c.runtime.breaker.max_open_cycles == r.breaker.max_open_cycles},
        {"max_event_bytes", c.runtime.max_event_bytes == r.max_event_bytes}};
    for (const auto& [name, equal] : same) {
      if (name != key) {
        EXPECT_TRUE(equal) << name << " changed when only " << key << " was set";
      }
    }
  };
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"source", "status_interval_ms = 4321"},
      {"source", "wal_receiver_timeout_ms = 4321"},
      {"source", "peek_interval_ms = 4321"},
      {"source", "peek_statement_timeout_ms = 4321"},
      {"source", "peek_max_changes = 4321"},
      {"source", "spill_threshold_bytes = 0"},
      {"source", "max_queued_bytes = 4321"},
      {"source.snapshot", "chunk_size = 4321"},
      {"runtime", "max_buffer_size = 4321"},
      {"runtime", "max_poll_wait_ms = 4321"},
      {"runtime", "connection_retry_max_retries = 4321"},
      {"runtime", "connection_retry_initial_delay_ms = 1"},
      {"runtime", "connection_retry_max_delay_ms = 43210"},
      {"runtime", "recoverable_error_breaker_consecutive_threshold = 4321"},
      {"runtime", "recoverable_error_breaker_cooldown_ms = 4321"},
      {"runtime", "recoverable_error_breaker_max_open_cycles = 4321"},
      {"runtime", "max_event_bytes = 4321"}};
  for (const auto& [section, line] : keys) {
    std::string text;
    if (section == "source") {
      text = edit(kMinimal, "tables = [\"public.t\"]", "tables = [\"public.t\"]\n" + line);
    } else {
      text = std::string(kMinimal) + "\n[" + section + "]\n" + line + "\n";
    }
    auto config = parse_server_config(text, "cdc.toml");
    ASSERT_TRUE(config) << line << ": " << config.error().report();
    defaults_except(*config, line.substr(0, line.find(' ')));
  }
}

TEST(ServerConfig, DottedStateKeysAreAccepted) {
  auto config = parse_server_config(R"(state.offset.backend = "memory"
[source]
dsn = "host=h"
tables = ["t"]
)",
                                    "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->checkpoint_backend, "memory");
  EXPECT_EQ(pg_source(*config).tables, std::vector<std::string>{"public.t"});
}

TEST(ServerConfig, MissingRequiredKeysAreNamed) {
  const std::string example = kExample;
  EXPECT_CONTAINS(error_of(edit(example,
                                "dsn = \"host=127.0.0.1 port=5432 dbname=shop user=cdc "
                                "password=s3cret-pw\"\n",
                                "")),
                  "cdc.toml: [source] dsn: required");
  EXPECT_CONTAINS(error_of(edit(example, "tables = [\"public.orders\", \"customers\"]\n", "")),
                  "cdc.toml: [source] tables: required");
  EXPECT_CONTAINS(error_of(edit(example, "path = \"/var/lib/cppcdc/out/events.jsonl\"\n", "")),
                  "cdc.toml: [sink] path: required when type = \"file\"");
  EXPECT_CONTAINS(error_of(edit(example, "dir = \"/var/lib/cppcdc/state\"\n", "")),
                  "cdc.toml: [state.offset] dir: required when backend = \"local_fs\"");
  EXPECT_CONTAINS(error_of("[state.offset]\nbackend = \"memory\"\n"), "cdc.toml: [source]");
}

TEST(ServerConfig, AMisspelledRequiredKeyIsNamedWithItsLine) {
  const std::string text = edit(kMinimal, "tables = [", "tabels = [");
  const std::string report = error_of(text);
  EXPECT_CONTAINS(report, "[source] tables: required");
  EXPECT_CONTAINS(report, "did you mean tables where the file says tabels (cdc.toml:3:1)");
}

TEST(ServerConfig, WrongTypeNamesKeyAndLine) {
  const std::string example = kExample;
  // create_slot sits on line 9, its value at column 15.
  EXPECT_CONTAINS(error_of(edit(example, "create_slot = true", "create_slot = \"yes\"")),
                  "cdc.toml:9:15: [source] create_slot: expected a boolean, found a string");
  EXPECT_CONTAINS(error_of(edit(example, "max_buffer_size = 5000", "max_buffer_size = \"5000\"")),
                  "[runtime] max_buffer_size: expected an integer, found a string");
  EXPECT_CONTAINS(error_of(edit(example, "tables = [\"public.orders\", \"customers\"]",
                                "tables = [\"public.orders\", 7]")),
                  "cdc.toml:8:28: [source] tables: expected a \"schema.table\" string, found an "
                  "integer");
  EXPECT_CONTAINS(error_of(edit(example, "tables = [\"public.orders\", \"customers\"]",
                                "tables = \"public.orders\"")),
                  "[source] tables: expected an array");
  EXPECT_CONTAINS(error_of(std::string("sink = 3\n") + kMinimal),
                  "cdc.toml:1:8: sink: expected a table, found an integer");
}

TEST(ServerConfig, OutOfRangeAndBadValuesAreNamed) {
  const std::string example = kExample;
  EXPECT_CONTAINS(error_of(edit(example, "max_buffer_size = 5000", "max_buffer_size = 0")),
                  "[runtime] max_buffer_size: expected an integer from 1");
  EXPECT_CONTAINS(error_of(edit(example, "connection_retry_max_retries = -1",
                                "connection_retry_max_retries = -2")),
                  "[runtime] connection_retry_max_retries");
  EXPECT_CONTAINS(
      error_of(edit(example, "tables = [\"public.orders\", \"customers\"]", "tables = []")),
      "[source] tables: expected at least one");
  EXPECT_CONTAINS(error_of(edit(example, "\"customers\"", "\"a.b.c\"")), "[source] tables");
  EXPECT_CONTAINS(error_of(edit(example, "\"customers\"", "\"orders\"")), "listed twice");
  EXPECT_CONTAINS(error_of(edit(example, "type = \"file\"", "type = \"nats\"")),
                  "[sink] type: expected \"file\", \"http\", \"kafka\", \"stdout\" or \"fanout\"");
  EXPECT_CONTAINS(error_of(edit(example, "backend = \"local_fs\"", "backend = \"etcd\"")),
                  "[state.offset] backend");
  EXPECT_CONTAINS(error_of(edit(example, "format = \"json\"", "format = \"xml\"")), "[log] format");
  EXPECT_CONTAINS(error_of(edit(example, "level = \"debug\"", "level = \"loud\"")), "[log] level");
  EXPECT_CONTAINS(error_of(edit(example, "mode = \"initial_only\"", "mode = \"gradual\"")),
                  "[source.snapshot] mode: expected \"initial\", \"never\", \"initial_only\", "
                  "\"when_needed\" or \"incremental\", found \"gradual\"");
  EXPECT_CONTAINS(error_of(edit(example, "tables = [\"public.orders\"]\ntable_conditions",
                                "tables = [\"public.other\"]\ntable_conditions")),
                  "is not captured");
  EXPECT_CONTAINS(error_of(edit(example, "chunk_size = 500", "chunk_size = 0")),
                  "[source.snapshot] chunk_size");
  EXPECT_CONTAINS(error_of(edit(example, "chunk_size = 500", "chunk_sise = 500")),
                  "[source.snapshot] chunk_sise: unknown key");
  EXPECT_CONTAINS(error_of(edit(example, "\"sql_peek\"", "\"peek\"")),
                  "[source] wal_transport: expected \"streaming_replication\" or \"sql_peek\"");
  EXPECT_CONTAINS(error_of(edit(example, "capture_logical_messages = true",
                                "capture_logical_messages = true\nstream_in_progress = true")),
                  "[source] stream_in_progress: in-progress transactions are streamed only over "
                  "wal_transport = \"streaming_replication\"");
  EXPECT_CONTAINS(error_of(edit(example, "spill_dir = \"/var/tmp/cppcdc\"", "spill_dir = \"\"")),
                  "[source] spill_dir");
  EXPECT_CONTAINS(error_of(edit(example, "peek_max_changes = 2000", "peek_max_changes = 0")),
                  "[source] peek_max_changes");
  EXPECT_CONTAINS(error_of(edit(example, "connection_retry_max_delay_ms = 8000",
                                "connection_retry_max_delay_ms = 100")),
                  "[runtime] connection_retry_max_delay_ms");
}

TEST(ServerConfig, TheCircuitBreakerKeysAreRead) {
  const std::string text = std::string(kMinimal) +
                           "\n[runtime]\n"
                           "recoverable_error_breaker_consecutive_threshold = 4\n"
                           "recoverable_error_breaker_cooldown_ms = 250\n"
                           "recoverable_error_breaker_max_open_cycles = 2\n"
                           "recoverable_error_backoff_initial_ms = 20\n"
                           "recoverable_error_backoff_max_ms = 80\n"
                           "max_event_bytes = 1048576\n";
  auto config = parse_server_config(text, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const auto& rt = config->runtime;
  EXPECT_EQ(rt.breaker.consecutive_threshold, 4u);
  EXPECT_EQ(rt.breaker.cooldown_ms, 250u);
  EXPECT_EQ(rt.breaker.max_open_cycles, 2u);
  EXPECT_EQ(rt.connection_retry.initial_delay_ms, 20u);
  EXPECT_EQ(rt.connection_retry.max_delay_ms, 80u);
  EXPECT_EQ(rt.max_event_bytes, 1'048'576u);
  const std::string described = describe_config(*config);
  EXPECT_CONTAINS(described, "opens after 4 recoverable errors in a row, cooldown 250 ms");
  EXPECT_CONTAINS(described, "error state after 2 open cycles");
  EXPECT_CONTAINS(described, "initial delay 20 ms, max delay 80 ms");
}

TEST(ServerConfig, BadCircuitBreakerValuesNameTheirKey) {
  const std::string base = std::string(kMinimal) + "\n[runtime]\n";
  EXPECT_CONTAINS(error_of(base + "recoverable_error_breaker_consecutive_threshold = 0\n"),
                  "[runtime] recoverable_error_breaker_consecutive_threshold: expected an "
                  "integer from 1");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_breaker_max_open_cycles = 0\n"),
                  "[runtime] recoverable_error_breaker_max_open_cycles: expected an integer "
                  "from 1");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_breaker_cooldown_ms = -1\n"),
                  "[runtime] recoverable_error_breaker_cooldown_ms");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_breaker_cooldown_ms = \"30s\"\n"),
                  "[runtime] recoverable_error_breaker_cooldown_ms: expected an integer");
  EXPECT_CONTAINS(error_of(base + "max_event_bytes = -5\n"), "[runtime] max_event_bytes");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_backoff_initial_ms = 500\n"
                                  "recoverable_error_backoff_max_ms = 100\n"),
                  "[runtime] recoverable_error_backoff_max_ms: expected at least "
                  "recoverable_error_backoff_initial_ms (500), found 100");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_backoff_initial_ms = 50\n"
                                  "connection_retry_initial_delay_ms = 50\n"),
                  "[runtime] connection_retry_initial_delay_ms: is the same setting as "
                  "recoverable_error_backoff_initial_ms; set only one of them");
  EXPECT_CONTAINS(error_of(base + "recoverable_error_breaker_treshold = 3\n"),
                  "[runtime] recoverable_error_breaker_treshold: unknown key");
}

TEST(ServerConfig, FileModeIsAnOctalStringOfReadAndWriteBits) {
  const std::string example = kExample;
  const std::string sink_path = "path = \"/var/lib/cppcdc/out/events.jsonl\"";
  const std::string state_dir = "dir = \"/var/lib/cppcdc/state\"";
  auto config =
      parse_server_config(edit(edit(example, sink_path, sink_path + "\nfile_mode = \"0640\""),
                               state_dir, state_dir + "\nfile_mode = \"600\""),
                          "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_CONTAINS(describe_config(*config), "0640");
  for (const char* bad : {"\"0755\"", "\"4600\"", "\"rw\"", "\"\"", "\"06400\""}) {
    EXPECT_CONTAINS(error_of(edit(example, sink_path, sink_path + "\nfile_mode = " + bad)),
                    "[sink] file_mode: expected permission bits in octal");
    EXPECT_CONTAINS(error_of(edit(example, state_dir, state_dir + "\nfile_mode = " + bad)),
                    "[state.offset] file_mode: expected permission bits in octal");
  }
  EXPECT_CONTAINS(error_of(edit(example, sink_path, sink_path + "\nfile_mode = 640")),
                  "[sink] file_mode");
}

TEST(ServerConfig, SlotAndPublicationNamesAreValidated) {
  const std::string example = kExample;
  EXPECT_CONTAINS(error_of(edit(example, "\"cppcdc_orders\"", "\"Orders\"")),
                  "cdc.toml:6:13: [source] slot_name: expected 1 to 63 characters");
  EXPECT_CONTAINS(error_of(edit(example, "\"cppcdc_orders\"", "\"my-slot\"")),
                  "[source] slot_name");
  EXPECT_CONTAINS(error_of(edit(example, "\"cppcdc_orders\"", "\"" + std::string(64, 'a') + "\"")),
                  "[source] slot_name");
  auto ok63 = parse_server_config(
      edit(example, "\"cppcdc_orders\"", "\"" + std::string(63, 'a') + "\""), "cdc.toml");
  EXPECT_TRUE(ok63) << ok63.error().report();
  EXPECT_CONTAINS(error_of(edit(example, "\"cppcdc_orders_pub\"", "\"\"")),
                  "[source] publication_name");
  EXPECT_CONTAINS(
      error_of(edit(example, "\"cppcdc_orders_pub\"", "\"" + std::string(64, 'p') + "\"")),
      "[source] publication_name");
}

// A near miss of a key the section takes names that key; a well-known key of another section
// names the section it belongs to.
TEST(ServerConfig, UnknownKeysNameTheLikelyTypoOrTheSectionTheyBelongTo) {
  const std::string example = kExample;
  EXPECT_CONTAINS(error_of(edit(example, "slot_name =", "slot_nmae =")),
                  "[source] slot_nmae: unknown key (did you mean slot_name?)");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\nmax_bufer_size = 1\n")),
                  "[runtime] max_bufer_size: unknown key (did you mean max_buffer_size?)");
  // Nothing close: no guess.
  const std::string far = error_of(edit(example, "[sink]\n", "[sink]\nformat = \"json\"\n"));
  EXPECT_CONTAINS(far, "[sink] format: unknown key; expected one of:");
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
  EXPECT_CONTAINS(error_of(edit(example, "[sink]\n", "[sink]\npublication_name = \"p\"\n")),
                  "[sink] publication_name: unknown key (publication_name is a key of [source], "
                  "not of this section: move it there)");
  EXPECT_CONTAINS(error_of(edit(example, "[source]\n", "[source]\nmax_poll_wait_ms = 5\n")),
                  "(max_poll_wait_ms is a key of [runtime], not of this section");
}

TEST(ServerConfig, UnknownKeysAreErrorsNamingTheKey) {
  const std::string example = kExample;
  EXPECT_CONTAINS(error_of(edit(example, "slot_name =", "slot_nmae =")),
                  "cdc.toml:6:1: [source] slot_nmae: unknown key");
  EXPECT_CONTAINS(error_of(edit(example, "[sink]\n", "[sink]\nformat = \"json\"\n")),
                  "[sink] format: unknown key");
  EXPECT_CONTAINS(error_of(edit(example, "[state.offset]\n", "[state.offset]\ndirr = \"x\"\n")),
                  "[state.offset] dirr: unknown key");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\nmax_bufer_size = 1\n")),
                  "[runtime] max_bufer_size: unknown key");
  EXPECT_CONTAINS(error_of(edit(example, "[log]\n", "[log]\ncolour = true\n")),
                  "[log] colour: unknown key");
  EXPECT_CONTAINS(error_of(std::string("delivery_contrat = \"at_least_once\"\n") + kMinimal),
                  "cdc.toml:1:1: delivery_contrat: unknown key");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[admin]\nport = 1\n"),
                  "[admin] port: unknown key; expected one of: listen, token, token_env");
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[state.schema_history]\nbackend = \"x\"\n"),
                  "cdc.toml:7:8: [state] schema_history: unknown key");
}

// A key with a dot in it (librdkafka properties, topic configs) is one key of its table: the
// message names the table and the key in quotes, as the file writes them, never a table made
// up from the key's first part ("[sink.topic_config.cleanup] policy").
TEST(ServerConfig, ADottedKeyIsNamedAsOneQuotedKeyOfItsTable) {
  const std::string kafka = std::string(kMinimal) +
                            "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
                            "[sink.kafka_properties]\n\"linger.ms\" = \"5\"\n";
  const std::string report = error_of(kafka);
  EXPECT_CONTAINS(report, "cdc.toml:11:");
  EXPECT_CONTAINS(report, ": [sink.kafka_properties] \"linger.ms\": set linger_ms instead");
  EXPECT_EQ(report.find("[sink.kafka_properties.linger]"), std::string::npos) << report;
  // Errors met once the pipeline runs (creating a topic with its topic_config) are named the
  // same way.
  EXPECT_EQ(setting_label(SettingOwner::kSink, "topic_config.cleanup.polcy"),
            "[sink.topic_config] \"cleanup.polcy\"");
  EXPECT_EQ(setting_label(SettingOwner::kSink, "kafka_properties.sasl.password"),
            "[sink.kafka_properties] \"sasl.password\"");
  EXPECT_EQ(setting_label(SettingOwner::kCheckpoint, "kafka_properties.acks"),
            "[state.offset.kafka_properties] acks");
  EXPECT_EQ(setting_label(SettingOwner::kSource, "snapshot.table_conditions.public.orders"),
            "[source.snapshot.table_conditions] \"public.orders\"");
  EXPECT_EQ(setting_label(SettingOwner::kSource, "snapshot.mode"), "[source.snapshot] mode");
  EXPECT_EQ(setting_label(SettingOwner::kSink, "path"), "[sink] path");
  // An unknown key that is no bare TOML key is quoted too.
  EXPECT_CONTAINS(error_of(edit(kExample, "[runtime]\n", "[runtime]\n\"max.buffer\" = 1\n")),
                  "[runtime] \"max.buffer\": unknown key");
}

// Habits from Java clients: a dotted key (linger.ms) is a table to TOML, and a key written
// after a [sink.kafka_properties] header belongs to that table. Each is named as such.
TEST(ServerConfig, JavaStyleDottedKeysAndKeysBelowALaterHeaderAreExplained) {
  const std::string head = std::string(kMinimal) + "[sink]\ntype = \"kafka\"\n";
  const std::string missing = error_of(head + "bootstrap.servers = \"127.0.0.1:9092\"\n");
  EXPECT_CONTAINS(missing,
                  "[sink] bootstrap.servers: unknown key; TOML reads a dotted key as "
                  "tables, and this section's key is bootstrap_servers");
  EXPECT_EQ(missing.find("bootstrap_servers: required"), std::string::npos) << missing;
  const std::string linger =
      error_of(head + "bootstrap_servers = \"127.0.0.1:9092\"\nlinger.ms = 5\n");
  EXPECT_CONTAINS(linger,
                  "[sink] linger.ms: unknown key; TOML reads a dotted key as tables, "
                  "and this section's key is linger_ms (write linger_ms = ...)");
  EXPECT_EQ(linger.find("unknown table [sink.linger]"), std::string::npos) << linger;
  const std::string later = error_of(head +
                                     "[sink.kafka_properties]\n\"linger.ms\" = \"5\"\n"
                                     "bootstrap_servers = \"127.0.0.1:9092\"\n");
  EXPECT_CONTAINS(later,
                  "[sink.kafka_properties] bootstrap_servers: bootstrap_servers is a key "
                  "of [sink], but TOML puts every key after the [sink.kafka_properties] "
                  "header into that table: move it above the header");
}

// librdkafka takes every property as text, but a number or a switch is naturally written bare:
// integers and booleans in [sink.kafka_properties] (and topic_config) are taken in their text
// form; tables and arrays are still refused, and a bare dotted key (which TOML reads as nested
// tables) is explained with the quoted key to write instead. A trial saw
// "transaction.timeout.ms" = 300000 refused as not a string, and linger.ms = 5 refused as "a
// table" without a hint.
TEST(ServerConfig, KafkaPropertiesTakeIntegersAndBooleansAndExplainADottedKeyThatBecameATable) {
  const std::string head = std::string(kMinimal) +
                           "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
                           "create_topics = true\n";
  auto config = parse_server_config(head +
                                        "[sink.topic_config]\n\"retention.ms\" = 86400000\n"
                                        "[sink.kafka_properties]\n"
                                        "\"transaction.timeout.ms\" = 300000\n"
                                        "\"socket.keepalive.enable\" = true\n"
                                        "\"client.id\" = \"orders\"\n",
                                    "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const std::string described = describe_config(*config);
  EXPECT_CONTAINS(described, "transaction.timeout.ms = \"300000\"");
  EXPECT_CONTAINS(described, "socket.keepalive.enable = \"true\"");
  EXPECT_CONTAINS(described, "client.id = \"orders\"");
  EXPECT_CONTAINS(described, "retention.ms = \"86400000\"");

  const std::string dotted = error_of(head + "[sink.kafka_properties]\nlinger.ms = 5\n");
  EXPECT_CONTAINS(dotted,
                  "[sink] kafka_properties: the value for \"linger\" must be a string, an "
                  "integer or a boolean (\"librdkafka property\" = \"value\"), found a table: "
                  "TOML reads a bare dotted key as nested tables; quote the key to keep its dots "
                  "(\"linger.ms\" = 5)");
  EXPECT_CONTAINS(error_of(head + "[sink.kafka_properties]\nsasl.username = \"cdc\"\n"),
                  "(\"sasl.username\" = \"cdc\")");
  EXPECT_CONTAINS(error_of(head + "[sink.kafka_properties]\n\"sasl.username\" = [\"cdc\"]\n"),
                  "the value for \"sasl.username\" must be a string, an integer or a boolean "
                  "(\"librdkafka property\" = \"value\"), found an array");
  // Other string maps still take strings only.
  EXPECT_CONTAINS(
      error_of(std::string(kMinimal) + "[sink]\ntype = \"http\"\nurl = \"http://127.0.0.1:1/\"\n"
                                       "[sink.headers]\nX-Count = 3\n"),
      "the value for \"X-Count\" must be a string (");
}

// A misspelt section header is named as such, not hidden behind a required key of the
// section the file then lacks.
TEST(ServerConfig, AMisspeltTableIsNamedBeforeTheKeysItsSectionLacks) {
  const std::string state = error_of(edit(kMinimal, "[state.offset]", "[state.ofset]"));
  EXPECT_CONTAINS(state, "unknown table [state.ofset] (did you mean [state.offset]?)");
  EXPECT_LT(state.find("unknown table [state.ofset]"), state.find("dir")) << state;
  const std::string top = error_of(edit(kMinimal, "[state.offset]", "[stat.offset]"));
  EXPECT_CONTAINS(top, "unknown table [stat] (did you mean [state]?)");
  const std::string source = error_of(edit(kMinimal, "[source]", "[sorce]"));
  EXPECT_CONTAINS(source, "unknown table [sorce] (did you mean [source]?)");
  EXPECT_EQ(source.find("required section is missing"), std::string::npos) << source;
}

// effectively_once without [state.offset]: what the section must hold, not "dir: required".
TEST(ServerConfig, EffectivelyOnceWithoutStateOffsetSaysWhatToAdd) {
  const std::string text = "delivery_contract = \"effectively_once\"\n" +
                           std::string(kMinimal).substr(0, std::string(kMinimal).find("[state")) +
                           "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
                           "delivery_mode = \"transactional\"\ntransactional_id = \"t1\"\n";
  const std::string report = error_of(text);
  EXPECT_CONTAINS(report, "delivery_contract: \"effectively_once\"");
  EXPECT_CONTAINS(report, "no [state.offset] section");
  EXPECT_CONTAINS(report, "backend = \"kafka_topic\"");
  EXPECT_CONTAINS(report, "dir = ");
  EXPECT_EQ(report.find("dir: required"), std::string::npos) << report;
}

// The same misspelt header under effectively_once (where [state.offset] is required) is named
// once: a trial saw the unknown table listed, and then again as the error it causes.
TEST(ServerConfig, AMisspeltStateOffsetUnderEffectivelyOnceIsReportedOnce) {
  const std::string text = "delivery_contract = \"effectively_once\"\n" +
                           std::string(kMinimal).substr(0, std::string(kMinimal).find("[state")) +
                           "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
                           "delivery_mode = \"transactional\"\ntransactional_id = \"t1\"\n\n"
                           "[state.ofset]\nbackend = \"kafka_topic\"\n";
  const std::string report = error_of(text);
  const std::string named = "unknown table [state.ofset] (did you mean [state.offset]?)";
  const auto first = report.find(named);
  ASSERT_NE(first, std::string::npos) << report;
  EXPECT_EQ(report.find(named, first + 1), std::string::npos) << report;
  EXPECT_EQ(report.find("the file also has this error"), std::string::npos) << report;
}

// The keys cppcdc adds to [state.offset] from [sink] (kafka_topic) are neither listed as keys a
// user may write nor taken from the file (trial 10, L1: both were).
TEST(ServerConfig, TheCheckpointBackendsInternalKeysAreNotTheUsers) {
  const std::string base = std::string(kMinimal).substr(0, std::string(kMinimal).find("[state")) +
                           "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
                           "delivery_mode = \"transactional\"\ntransactional_id = \"t1\"\n\n"
                           "[state.offset]\nbackend = \"kafka_topic\"\n";
  const std::string typo = error_of(base + "topik = \"x\"\n");
  EXPECT_CONTAINS(typo, "[state.offset] topik: unknown key");
  EXPECT_EQ(typo.find("_inherited_from_sink"), std::string::npos) << typo;
  EXPECT_EQ(typo.find("_sink_transactional_id"), std::string::npos) << typo;
  const std::string written = error_of(base + "_sink_transactional_id = \"other\"\n");
  EXPECT_CONTAINS(written,
                  "[state.offset] _sink_transactional_id: keys starting with '_' are set "
                  "by cppcdc itself");
}

// Every unknown key of the file in one error, in file order, each with its hint.
TEST(ServerConfig, AllUnknownKeysAreReportedTogether) {
  std::string text = edit(kExample, "slot_name =", "slot_nmae =");
  text = edit(text, "[runtime]\n", "[runtime]\nmax_bufer_size = 1\n");
  text = edit(text, "[log]\n", "[log]\ncolour = true\n");
  text = edit(text, "[state.offset]\n", "[state.offset]\ndirr = \"x\"\n");
  const std::string report = error_of(text);
  EXPECT_CONTAINS(report, "4 unknown keys or tables");
  const auto source = report.find("[source] slot_nmae: unknown key (did you mean slot_name?)");
  const auto state = report.find("[state.offset] dirr: unknown key");
  const auto runtime =
      report.find("[runtime] max_bufer_size: unknown key (did you mean max_buffer_size?)");
  const auto log = report.find("[log] colour: unknown key");
  ASSERT_NE(source, std::string::npos) << report;
  ASSERT_NE(state, std::string::npos) << report;
  ASSERT_NE(runtime, std::string::npos) << report;
  ASSERT_NE(log, std::string::npos) << report;
  EXPECT_LT(source, state);
  EXPECT_LT(state, runtime);
  EXPECT_LT(runtime, log);
  // A section that fails does not hide the unknown keys of the sections after it.
  const std::string after =
      error_of(edit(edit(kExample, "path = \"/var/lib/cppcdc/out/events.jsonl\"", "path = 5"),
                    "[log]\n", "[log]\ncolour = true\n"));
  EXPECT_CONTAINS(after, "[log] colour: unknown key");
  EXPECT_CONTAINS(after,
                  "the file also has this error, which may come from one of those: "
                  "cdc.toml:");
  EXPECT_CONTAINS(after, "[sink] path: expected a string, found an integer");
  // The misspelt required key is listed with the error it causes.
  const std::string both = error_of(
      edit(edit(kMinimal, "dir =", "dri ="), "[source]\n", "[source]\nslot_nmae = \"s\"\n"));
  EXPECT_CONTAINS(both, "[source] slot_nmae: unknown key");
  EXPECT_CONTAINS(both, "the file also has this error");
  EXPECT_CONTAINS(both, "[state.offset] dir: required");
  EXPECT_CONTAINS(both, "where the file says dri");
}

TEST(ServerConfig, EffectivelyOnceIsRefusedWithASinkThatHasNoTransactions) {
  const std::string report = error_of(edit(kExample, "\"at_least_once\"", "\"effectively_once\""));
  EXPECT_CONTAINS(report, "cdc.toml:1:21: delivery_contract:");
  EXPECT_CONTAINS(report, "cannot honour");
  EXPECT_CONTAINS(report, "at_least_once");
  EXPECT_CONTAINS(error_of(edit(kExample, "\"at_least_once\"", "\"exactly_once\"")),
                  "delivery_contract: expected \"at_least_once\" or \"effectively_once\"");
}

TEST(ServerConfig, OtherSourceTypesAreNotBuiltYet) {
  for (const char* type : {"sqlserver"}) {
    const std::string report =
        error_of(edit(kExample, "type = \"postgres\"", std::string("type = \"") + type + "\""));
    EXPECT_CONTAINS(report, "cdc.toml:4:8: [source] type:");
    EXPECT_CONTAINS(report, "not built yet");
  }
  EXPECT_CONTAINS(error_of(edit(kExample, "type = \"postgres\"", "type = \"oracle\"")),
                  "[source] type: expected \"mariadb\"");
  // MySQL and MariaDB are built: a PostgreSQL section is read as theirs and found wanting.
  for (const char* type : {"mysql", "mariadb"}) {
    EXPECT_CONTAINS(
        error_of(edit(kExample, "type = \"postgres\"", std::string("type = \"") + type + "\"")),
        "[source] user");
  }
}

TEST(ServerConfig, TomlSyntaxErrorNamesLineAndColumn) {
  const std::string report = error_of("[source]\ndsn = \"unterminated\n");
  EXPECT_CONTAINS(report, "cdc.toml:2:");
  EXPECT_CONTAINS(report, "invalid TOML");
  // A text value without quotes is read as a number by the TOML parser: say what to do.
  const std::string bare = error_of(edit(kExample, "type = \"postgres\"", "type = postgres"));
  EXPECT_CONTAINS(bare, "needs double quotes");
  const std::string inc = error_of("[source.snapshot]\nmode = incremental\n");
  EXPECT_CONTAINS(inc, "needs double quotes");
  // A broken table header is not about quoting: no hint that sends the reader elsewhere.
  const std::string header = error_of("[source\ndsn = \"x\"\n");
  EXPECT_CONTAINS(header, "cdc.toml:1:");
  EXPECT_EQ(header.find("double quotes"), std::string::npos) << header;
  // A key given twice: said as such, at the second one's line, without the quoting hint and
  // without the parser's garbled echo of a quoted key ('"sosocket.timeout.ms"').
  const std::string twice = error_of(
      "[sink.kafka_properties]\n\"socket.timeout.ms\" = 30000\n\"socket.timeout.ms\" = 1000\n");
  EXPECT_CONTAINS(twice, "cdc.toml:3:");
  EXPECT_CONTAINS(twice, "already given earlier in the same table");
  EXPECT_EQ(twice.find("double quotes"), std::string::npos) << twice;
  EXPECT_EQ(twice.find("sosocket"), std::string::npos) << twice;
}

TEST(ServerConfig, LoadNamesAMissingFile) {
  auto config = load_server_config("/nonexistent/dir/cdc.toml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(config.error().report(), "/nonexistent/dir/cdc.toml");
}

TEST(ServerConfig, LoadReadsAFileAndNamesItInErrors) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "cppcdc_config_test.toml";
  {
    std::ofstream out(path);
    out << "\n\nbogus = 1\n" << kMinimal;
  }
  auto config = load_server_config(path);
  ASSERT_FALSE(config);
  EXPECT_CONTAINS(config.error().report(), path.string() + ":3:1: bogus: unknown key");
  {
    std::ofstream out(path, std::ios::trunc);
    out << kMinimal;
  }
  auto good = load_server_config(path);
  ASSERT_TRUE(good) << good.error().report();
  EXPECT_EQ(good->origin, path.string());
  std::filesystem::remove(path);
}

TEST(ServerConfig, RelativePathsAreResolvedAgainstTheConfigFileNotTheWorkingDirectory) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "cppcdc_relpaths";
  std::filesystem::create_directories(dir);
  const auto path = dir / "cdc.toml";
  {
    std::ofstream out(path);
    out << "[source]\ntype = \"postgres\"\ndsn = \"host=127.0.0.1 dbname=app user=cdc\"\n"
        << "tables = [\"public.orders\"]\n[sink]\ntype = \"file\"\npath = \"out/events.jsonl\"\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n";
  }
  auto config = load_server_config(path);
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->sink->describe().headline,
            "file " + (std::filesystem::absolute(dir) / "out" / "events.jsonl").string());
  EXPECT_EQ(checkpoint_dir(*config), std::filesystem::absolute(dir) / "state");
  std::filesystem::remove_all(dir);
  {
    std::filesystem::create_directories(dir);
    std::ofstream out(path);
    out << "[source]\ndsn = \"host=127.0.0.1 dbname=app user=cdc\"\n"
        << "tables = [\"public.orders\"]\nspill_dir = \"spill\"\n"
        << "[state.offset]\ndir = \"state\"\n";
  }
  config = load_server_config(path);
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(pg_source(*config).spill_dir, (std::filesystem::absolute(dir) / "spill").string());
  std::filesystem::remove_all(dir);
}

TEST(ServerConfig, DescribeConfigSummarisesWithoutThePassword) {
  auto config = parse_server_config(kExample, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const std::string text = describe_config(*config);
  EXPECT_EQ(text.find("s3cret-pw"), std::string::npos) << text;
  EXPECT_CONTAINS(text, "password=****");
  EXPECT_CONTAINS(text, "cppcdc_orders");
  EXPECT_CONTAINS(text, "public.customers");
  EXPECT_CONTAINS(text, "/var/lib/cppcdc/out/events.jsonl");
  EXPECT_CONTAINS(text, "/var/lib/cppcdc/state/checkpoint-cppcdc_orders.ckpt");
}

TEST(ServerConfig, ControlSocketDefaultsToTheCheckpointDirectoryNamedAfterTheFile) {
  auto config = parse_server_config(kExample, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, "/var/lib/cppcdc/state/cdc.sock");
  EXPECT_CONTAINS(describe_config(*config), "control socket:   /var/lib/cppcdc/state/cdc.sock");

  // No checkpoint directory with the memory backend: beside the config file.
  config = parse_server_config(edit(kMinimal, "[state.offset]\ndir = \"/tmp/state\"\n",
                                    "[state.offset]\nbackend = \"memory\"\n"),
                               "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, "cdc.sock");
  EXPECT_EQ(default_control_socket_name("/etc/cppcdc/orders.toml"), "orders.sock");
  EXPECT_EQ(default_control_socket_name(""), "cppcdc.sock");
}

// A checkpoint kept off the machine has no directory here. For an instance of the packaged
// unit (its file in the packaged configuration directory) the socket and the source's files go
// to the unit's state directory, the one place the unit may write (beside the file they could
// not be created: ProtectSystem=strict); anywhere else, beside the file as before.
TEST(ServerConfig, WithoutACheckpointDirectoryAPackagedInstanceUsesItsStateDirectory) {
  EXPECT_EQ(local_state_directory("/etc/cppcdc", "orders", "/etc/cppcdc", "/var/lib/cppcdc"),
            "/var/lib/cppcdc/orders");
  EXPECT_EQ(local_state_directory("/etc/cppcdc/", "orders", "/etc/cppcdc", "/var/lib/cppcdc/"),
            "/var/lib/cppcdc/orders");
  EXPECT_EQ(local_state_directory("/etc/cppcdc/sub", "orders", "/etc/cppcdc", "/var/lib/cppcdc"),
            "/etc/cppcdc/sub");
  EXPECT_EQ(local_state_directory("/home/me/cdc", "orders", "/etc/cppcdc", "/var/lib/cppcdc"),
            "/home/me/cdc");
  EXPECT_EQ(packaged_state_root(), "/var/lib/cppcdc");
  EXPECT_EQ(packaged_conf_dir().filename(), "cppcdc");
  EXPECT_TRUE(packaged_conf_dir().is_absolute());

  // Through load_server_config: a file elsewhere keeps its socket beside it.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "cppcdc_socket_elsewhere";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "orders.toml")
      << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\n[state.offset]\nbackend = \"memory\"\n";
  auto config = load_server_config(dir / "orders.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, (dir / "orders.sock").lexically_normal());
}

// Two files in one directory, or sharing a checkpoint directory, no longer share a socket:
// a command that finds a cppcdc answering on one knows which file it runs.
TEST(ServerConfig, TwoConfigFilesInOneDirectoryGetASocketEach) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "cppcdc_two_sockets";
  std::filesystem::create_directories(dir);
  for (const char* backend : {"backend = \"memory\"\n", "dir = \"state\"\n"}) {
    for (const char* name : {"orders.toml", "billing.toml"}) {
      std::ofstream(dir / name) << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\nslot_name = \""
                                << std::filesystem::path(name).stem().string()
                                << "\"\n[state.offset]\n"
                                << backend;
    }
    auto orders = load_server_config(dir / "orders.toml");
    auto billing = load_server_config(dir / "billing.toml");
    ASSERT_TRUE(orders) << orders.error().report();
    ASSERT_TRUE(billing) << billing.error().report();
    EXPECT_NE(orders->control_socket, billing->control_socket);
    EXPECT_EQ(orders->control_socket.filename(), "orders.sock");
    EXPECT_EQ(billing->control_socket.filename(), "billing.sock");
  }
}

// In TOML a key below a [table] header belongs to that table: a top-level key written there
// is named as such, with where it belongs.
TEST(ServerConfig, ATopLevelKeyWrittenInsideATableSaysWhereItBelongs) {
  const std::string in_sink = error_of(std::string(kMinimal) +
                                       "[sink]\ntype = \"stdout\"\n"
                                       "delivery_contract = \"at_least_once\"\n");
  EXPECT_CONTAINS(in_sink,
                  "[sink] delivery_contract: unknown key (delivery_contract is a "
                  "top-level key: in TOML every key after a [table] header belongs to "
                  "that table, so write it above the file's first [table] header)");
  const std::string in_state =
      error_of(std::string(kMinimal) + "delivery_contract = \"at_least_once\"\n");
  EXPECT_CONTAINS(in_state,
                  "[state.offset] delivery_contract: unknown key (delivery_contract is "
                  "a top-level key");
  // Below a table of string values too (it is no librdkafka property).
  const std::string in_properties = error_of(
      std::string(kMinimal) +
      "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\n"
      "[sink.kafka_properties]\n\"linger.ms\" = \"5\"\ndelivery_contract = \"at_least_once\"\n");
  EXPECT_CONTAINS(in_properties, "[sink.kafka_properties] delivery_contract: not a");
  EXPECT_CONTAINS(in_properties, "delivery_contract is a top-level key");
  // A section's name inside another section.
  EXPECT_CONTAINS(error_of(std::string(kMinimal) + "[sink]\ntype = \"stdout\"\n"
                                                   "runtime = { max_buffer_size = 5 }\n"),
                  "[sink] runtime: unknown key ([runtime] is a section of its own");
}

TEST(ServerConfig, ControlSocketKeyIsReadAndValidated) {
  const std::string example = kExample;
  auto config = parse_server_config(
      edit(example, "[runtime]\n", "[runtime]\ncontrol_socket = \"/run/cppcdc/orders.sock\"\n"),
      "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, "/run/cppcdc/orders.sock");

  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\ncontrol_socket = 3\n")),
                  "cdc.toml:37:18: [runtime] control_socket: expected a string, found an integer");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\ncontrol_socket = \"\"\n")),
                  "[runtime] control_socket: expected a path, found an empty string");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\ncontrol_socket = \"/run/\"\n")),
                  "[runtime] control_socket: expected the path of a socket file");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\ncontrol_sockt = \"x\"\n")),
                  "[runtime] control_sockt: unknown key (did you mean control_socket?); expected "
                  "one of: max_buffer_size, "
                  "max_poll_wait_ms, connection_retry_max_retries, "
                  "connection_retry_initial_delay_ms, connection_retry_max_delay_ms, "
                  "control_socket");
}

TEST(ServerConfig, ControlSocketLongerThanAUnixSocketPathIsRefused) {
  const std::string long_path = "/" + std::string(kMaxControlSocketPath, 's');
  const std::string report = error_of(
      edit(kExample, "[runtime]\n", "[runtime]\ncontrol_socket = \"" + long_path + "\"\n"));
  EXPECT_CONTAINS(report, "[runtime] control_socket");
  EXPECT_CONTAINS(report, long_path);
  EXPECT_CONTAINS(report, "108 bytes long, but a Unix socket path can have at most 107");
  EXPECT_CONTAINS(report, "set [runtime] control_socket to a shorter path");
  // Exactly the limit is fine.
  auto config = parse_server_config(
      edit(kExample, "[runtime]\n",
           "[runtime]\ncontrol_socket = \"" + long_path.substr(0, kMaxControlSocketPath) + "\"\n"),
      "cdc.toml");
  EXPECT_TRUE(config) << config.error().report();
  // The default derived from a long checkpoint directory too.
  const std::string deep_dir = "/" + std::string(100, 'd');
  EXPECT_CONTAINS(
      error_of(edit(kExample, "dir = \"/var/lib/cppcdc/state\"", "dir = \"" + deep_dir + "\"")),
      "the control socket's path \"" + deep_dir + "/cdc.sock\"");
}

TEST(ServerConfig, RelativeControlSocketIsResolvedAgainstTheConfigFile) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "cppcdc_sockpaths";
  std::filesystem::create_directories(dir);
  const auto path = dir / "cdc.toml";
  const auto base = std::filesystem::absolute(dir);
  {
    std::ofstream out(path);
    out << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\nslot_name = \"s1\"\n"
        << "[state.offset]\ndir = \"state\"\n";
  }
  auto config = load_server_config(path);
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, base / "state" / "cdc.sock");
  {
    std::ofstream out(path, std::ios::trunc);
    out << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\n"
        << "[state.offset]\ndir = \"state\"\n[runtime]\ncontrol_socket = \"run/ctl.sock\"\n";
  }
  config = load_server_config(path);
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, base / "run" / "ctl.sock");
  {
    std::ofstream out(path, std::ios::trunc);
    out << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\n[state.offset]\nbackend = \"memory\"\n";
  }
  config = load_server_config(path);
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->control_socket, base / "cdc.sock");
  {
    // A relative path that only becomes too long once resolved is refused by the loader.
    std::ofstream out(path, std::ios::trunc);
    out << "[source]\ndsn = \"host=h\"\ntables = [\"t\"]\n[state.offset]\ndir = \"state\"\n"
        << "[runtime]\ncontrol_socket = \"" << std::string(kMaxControlSocketPath - 5, 'x')
        << "\"\n";
  }
  config = load_server_config(path);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(config.error().report(), path.string() + ": [runtime] control_socket");
  std::filesystem::remove_all(dir);
}

TEST(RedactDsn, KeywordFormHidesThePassword) {
  EXPECT_EQ(redact_dsn("host=db user=cdc password=hunter2 dbname=app"),
            "host=db user=cdc password=**** dbname=app");
  EXPECT_EQ(redact_dsn("password = hunter2"), "password = ****");
  EXPECT_EQ(redact_dsn("PASSWORD=hunter2 host=db"), "PASSWORD=**** host=db");
  EXPECT_EQ(redact_dsn("host=db dbname=app"), "host=db dbname=app");
  const std::string quoted = redact_dsn("host=db password='hun ter\\'2 x' user=cdc");
  EXPECT_EQ(quoted, "host=db password=**** user=cdc");
  for (const auto& dsn : {std::string("password='a b c'"), std::string("password=x\\ y z=1"),
                          std::string("password='unterminated secret")}) {
    const std::string out = redact_dsn(dsn);
    EXPECT_EQ(out.find("a b c"), std::string::npos) << out;
    EXPECT_EQ(out.find("x\\ y"), std::string::npos) << out;
    EXPECT_EQ(out.find("secret"), std::string::npos) << out;
    EXPECT_CONTAINS(out, "****");
  }
}

TEST(RedactDsn, UriFormHidesThePassword) {
  EXPECT_EQ(redact_dsn("postgresql://cdc:hunter2@db.example:5432/app"),
            "postgresql://cdc:****@db.example:5432/app");
  EXPECT_EQ(redact_dsn("postgres://cdc:p%40ss/w@db/app?sslmode=require"),
            "postgres://cdc:****@db/app?sslmode=require");
  EXPECT_EQ(redact_dsn("postgresql://cdc:a@b@h1:5432,h2:5433/app"),
            "postgresql://cdc:****@h1:5432,h2:5433/app");
  EXPECT_EQ(redact_dsn("postgresql://db/app?user=cdc&password=hunter2&sslmode=disable"),
            "postgresql://db/app?user=cdc&password=****&sslmode=disable");
  EXPECT_EQ(redact_dsn("postgresql://cdc@db:5432/app"), "postgresql://cdc@db:5432/app");
  EXPECT_EQ(redact_dsn("postgresql://db:5432/app"), "postgresql://db:5432/app");
  const std::string both = redact_dsn("postgresql://u:hunter2@db/app?password=hunter3");
  EXPECT_EQ(both.find("hunter"), std::string::npos) << both;
}

TEST(RedactDsn, SslPasswordIsHiddenToo) {
  EXPECT_EQ(redact_dsn("host=db sslkey=/k sslpassword=hunter2 sslmode=verify-full"),
            "host=db sslkey=/k sslpassword=**** sslmode=verify-full");
  EXPECT_EQ(redact_dsn("SSLPassword='a b' password=x"), "SSLPassword=**** password=****");
  EXPECT_EQ(redact_dsn("postgresql://db/app?sslkey=/k&sslpassword=hunter2"),
            "postgresql://db/app?sslkey=/k&sslpassword=****");
}

TEST(ServerConfig, WalReceiverTimeoutDefaultsToAMinuteAndZeroDisablesIt) {
  auto config = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(pg_source(*config).wal_receiver_timeout_ms, 60'000u);
  EXPECT_CONTAINS(describe_config(*config), "receiver timeout: 60000 ms");

  const std::string with = edit(kMinimal, "tables = [\"public.t\"]\n",
                                "tables = [\"public.t\"]\nwal_receiver_timeout_ms = 2500\n");
  config = parse_server_config(with, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(pg_source(*config).wal_receiver_timeout_ms, 2500u);

  config = parse_server_config(edit(with, "= 2500", "= 0"), "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(pg_source(*config).wal_receiver_timeout_ms, 0u);
  EXPECT_CONTAINS(describe_config(*config), "receiver timeout: none");

  const std::string negative = error_of(edit(with, "= 2500", "= -1"));
  EXPECT_CONTAINS(negative, "wal_receiver_timeout_ms");
  EXPECT_CONTAINS(negative, "from 0 to");
}

TEST(RunServer, ExitCodesFollowTheErrorKind) {
  EXPECT_EQ(kExitNotRunning, 4);
  EXPECT_EQ(kExitRefused, 5);
  EXPECT_EQ(exit_code_for(ErrorKind::kConfiguration), 2);
  EXPECT_EQ(exit_code_for(ErrorKind::kTerminal), 3);
  // An oversized event ends every start the same way (trial 10, M4: it exited 1, on which the
  // packaged unit restarts).
  EXPECT_EQ(exit_code_for(ErrorKind::kInvalidData), 3);
  EXPECT_EQ(exit_code_for(ErrorKind::kTransient), 1);
  EXPECT_EQ(exit_code_for(ErrorKind::kInternal), 1);
}

TEST(RunServer, CheckConfigReportsAnInvalidFile) {
  EXPECT_EQ(check_config("/nonexistent/cdc.toml"), 2);
}

TEST(ServerConfig, DuplicateSuppressionIsOnByDefaultAndItsKeysAreRead) {
  auto defaults = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(defaults) << defaults.error().report();
  ASSERT_TRUE(defaults->runtime.idempotency);
  EXPECT_EQ(defaults->runtime.idempotency->capacity, kDefaultIdempotencyCapacity);
  EXPECT_EQ(defaults->runtime.idempotency->ttl_ms, 0u);

  const std::string example = kExample;
  auto sized = parse_server_config(
      edit(example, "[runtime]\n",
           "[runtime]\nidempotency_capacity = 5000\nidempotency_ttl_ms = 60000\n"),
      "cdc.toml");
  ASSERT_TRUE(sized) << sized.error().report();
  ASSERT_TRUE(sized->runtime.idempotency);
  EXPECT_EQ(sized->runtime.idempotency->capacity, 5000u);
  EXPECT_EQ(sized->runtime.idempotency->ttl_ms, 60000u);

  auto off = parse_server_config(edit(example, "[runtime]\n", "[runtime]\nidempotency = false\n"),
                                 "cdc.toml");
  ASSERT_TRUE(off) << off.error().report();
  EXPECT_FALSE(off->runtime.idempotency);

  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n", "[runtime]\nidempotency_capacity = 0\n")),
                  "[runtime] idempotency_capacity: expected an integer from 1");
  EXPECT_CONTAINS(error_of(edit(example, "[runtime]\n",
                                "[runtime]\nidempotency = false\nidempotency_capacity = 10\n")),
                  "[runtime] idempotency_capacity: set while idempotency = false");
}

TEST(ServerConfig, TransactionBoundaryIsSplitUnlessPreserveTransactionsIsAskedFor) {
  auto defaults = parse_server_config(kMinimal, "cdc.toml");
  ASSERT_TRUE(defaults) << defaults.error().report();
  EXPECT_EQ(defaults->runtime.transaction_boundary, TransactionBoundaryPolicy::kSplit);
  const std::string example = kExample;
  auto preserve = parse_server_config(
      edit(example, "[runtime]\n", "[runtime]\ntransaction_boundary = \"preserve_transactions\"\n"),
      "cdc.toml");
  ASSERT_TRUE(preserve) << preserve.error().report();
  EXPECT_EQ(preserve->runtime.transaction_boundary,
            TransactionBoundaryPolicy::kPreserveTransactions);
  EXPECT_CONTAINS(
      error_of(edit(example, "[runtime]\n", "[runtime]\ntransaction_boundary = \"preserve\"\n")),
      "[runtime] transaction_boundary: expected \"split\" or "
      "\"preserve_transactions\", found \"preserve\"");
  EXPECT_CONTAINS(describe_config(*preserve), "preserve_transactions");
}

// share_decoding: on unless turned off, shown by describe, and a value that is not a boolean
// is refused naming the key.
TEST(ServerConfig, MariaDbShareDecodingIsOnByDefaultAndCanBeTurnedOff) {
  const std::string base = R"([source]
type = "mariadb"
user = "cdc"
tables = ["app.orders"]
SHARE
[state.offset]
dir = "/tmp/state"
)";
  auto with = [&](const std::string& line) { return edit(base, "SHARE\n", line); };
  auto on = parse_server_config(with(""), "cdc.toml");
  ASSERT_TRUE(on) << on.error().report();
  EXPECT_CONTAINS(describe_config(*on), "shared with the poll thread");
  auto off = parse_server_config(with("share_decoding = false\n"), "cdc.toml");
  ASSERT_TRUE(off) << off.error().report();
  EXPECT_CONTAINS(describe_config(*off), "on the reader thread only");
  EXPECT_CONTAINS(error_of(with("share_decoding = 1\n")), "share_decoding");
}

// MariaDB incremental snapshots: mode "incremental" needs [source.snapshot] signal_table (the
// watermark table), which must be a plain "database.table" outside the captured tables; the
// "mysql" type refuses the mode. With a signal table, the source offers the control handle.
TEST(ServerConfig, MariaDbIncrementalSnapshotsNeedASignalTable) {
  const std::string base = R"([source]
type = "mariadb"
user = "cdc"
tables = ["app.orders"]

[source.snapshot]
mode = "incremental"
SIGNAL
[state.offset]
dir = "/tmp/state"
)";
  auto with = [&](const std::string& signal) { return edit(base, "SIGNAL\n", signal); };
  EXPECT_CONTAINS(error_of(with("")), "signal_table");
  EXPECT_CONTAINS(error_of(with("signal_table = \"nodot\"\n")), "expected \"database.table\"");
  EXPECT_CONTAINS(error_of(with("signal_table = \"app.*\"\n")), "no globs");
  auto config = parse_server_config(with("signal_table = \"cdc.signal\"\n"), "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->source->no_incremental_snapshots_reason(), std::nullopt);
  auto source = config->source->build();
  ASSERT_TRUE(source) << source.error().report();
  EXPECT_TRUE((*source)->incremental_snapshot_control());
  // The signal table may not be captured: its writes are never emitted.
  auto captured = parse_server_config(with("signal_table = \"app.orders\"\n"), "cdc.toml");
  ASSERT_TRUE(captured) << captured.error().report();
  auto refused = captured->source->build();
  ASSERT_FALSE(refused);
  EXPECT_CONTAINS(refused.error().report(), "one of the captured tables");
  const std::string mysql =
      error_of(edit(with("signal_table = \"cdc.signal\"\n"), "\"mariadb\"", "\"mysql\""));
  EXPECT_CONTAINS(mysql, "MariaDB only");
  // Without the mode and without a signal table: no handle, and the reason names the setting.
  auto plain = parse_server_config(edit(with(""), "mode = \"incremental\"\n", ""), "cdc.toml");
  ASSERT_TRUE(plain) << plain.error().report();
  EXPECT_CONTAINS(plain->source->no_incremental_snapshots_reason().value_or(""), "signal_table");
  auto plain_source = plain->source->build();
  ASSERT_TRUE(plain_source);
  EXPECT_FALSE((*plain_source)->incremental_snapshot_control());
}

}  // namespace
}  // namespace cppcdc::server
