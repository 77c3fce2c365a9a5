// The plugin registry (cppcdc/plugin.hpp) and the server's use of it: type names map to
// factories, unknown and duplicate names are refused, and a source, sink and checkpoint backend
// registered here, in the test, run through the server's own loader and run loop (src/server
// names none of them).

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/plugin.hpp"
#include "server/config.hpp"
#include "server/run.hpp"

namespace cppcdc {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// What the test plugins saw, shared with the test body.
struct Seen {
  std::mutex mutex;
  std::vector<std::string> delivered;  // "id=N" per event the sink wrote
  std::vector<std::string> saved;      // checkpoint offsets
  std::vector<std::string> confirmed;  // offsets the source was told to release
  std::string checkpoint_id;           // what the checkpoint was opened for
};
Seen& seen() {
  static Seen s;
  return s;
}

// `events` rows, one per transaction, each a resume boundary; finished once all are handed out.
class CountingSource final : public Source {
 public:
  explicit CountingSource(std::int64_t events) : events_(events) {}
  std::string type() const override { return "test_counter"; }
  std::string source_id() const override { return "counter-1"; }
  Status start(const std::optional<CheckpointRecord>& resume) override {
    next_ = resume ? std::stoll(resume->offset) + 1 : 1;
    return ok();
  }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    for (std::size_t n = 0; n < max && next_ <= events_; ++n, ++next_) {
      Event e = EventBuilder("t", Operation::kInsert)
                    .source({"test", std::to_string(next_), 0})
                    .after({ColumnValue{"id", std::to_string(next_), false}})
                    .build();
      e.resume_offset = std::to_string(next_);
      out.push_back(std::move(e));
    }
    return ok();
  }
  Status confirm(std::string_view offset) override {
    std::lock_guard lock(seen().mutex);
    seen().confirmed.emplace_back(offset);
    return ok();
  }
  bool finished() override { return next_ > events_; }
  void close() override {}

 private:
  std::int64_t events_;
  std::int64_t next_ = 1;
};

class ConfiguredCounter final : public ConfiguredSource {
 public:
  explicit ConfiguredCounter(std::int64_t events) : events_(events) {}
  std::string checkpoint_id() const override { return "counter-1"; }
  std::string summary() const override { return "events=" + std::to_string(events_); }
  Description describe() const override {
    return {"test_counter", {{"events", std::to_string(events_)}}};
  }
  std::optional<std::string> no_incremental_snapshots_reason() const override {
    return "a test source";
  }
  Result<std::unique_ptr<Source>> build() const override {
    return std::unique_ptr<Source>(std::make_unique<CountingSource>(events_));
  }

 private:
  std::int64_t events_;
};

Result<std::unique_ptr<ConfiguredSource>> configure_counter(const Settings& settings) {
  auto events = settings.get_int("events", 0, 1'000'000);
  if (!events) return fail(events.error());
  if (!*events) return fail(settings.missing("events", "(how many events to produce)"));
  if (**events == 13) {
    // An error that is not made through Settings still names the setting.
    return fail(
        Error::configuration("13 brings bad luck").for_setting(SettingOwner::kSource, "events"));
  }
  return std::unique_ptr<ConfiguredSource>(std::make_unique<ConfiguredCounter>(**events));
}

class CollectingSink final : public Sink {
 public:
  Status write(std::span<const Event> events) override {
    std::lock_guard lock(seen().mutex);
    for (const auto& e : events) {
      seen().delivered.push_back("id=" + e.after->front().text.value_or("NULL"));
    }
    return ok();
  }
  Status flush() override { return ok(); }
  Status close() override { return ok(); }
  std::string name() const override { return "test_collect"; }
};

class ConfiguredCollector final : public ConfiguredSink {
 public:
  Description describe() const override { return {"test_collect", {}}; }
  Result<std::unique_ptr<Sink>> open(const SinkOpenContext&) const override {
    return std::unique_ptr<Sink>(std::make_unique<CollectingSink>());
  }
};

class RecordingCheckpoint final : public Checkpoint {
 public:
  std::string name() const override { return "test_recording"; }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override { return record_; }
  Status do_save(const CheckpointRecord& record) override {
    record_ = record;
    std::lock_guard lock(seen().mutex);
    seen().saved.push_back(record.offset);
    return ok();
  }

 private:
  std::optional<CheckpointRecord> record_;
};

class ConfiguredRecorder final : public ConfiguredCheckpoint {
 public:
  std::string describe(const std::string& id) const override { return "test_recording " + id; }
  bool durable() const override { return false; }
  Result<std::shared_ptr<Checkpoint>> open(const std::string& id) const override {
    {
      std::lock_guard lock(seen().mutex);
      seen().checkpoint_id = id;
    }
    return std::shared_ptr<Checkpoint>(std::make_shared<RecordingCheckpoint>());
  }
};

void register_test_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    ASSERT_TRUE(register_source_type("test_counter", configure_counter));
    ASSERT_TRUE(register_sink_type(
        "test_collect", [](const Settings&) -> Result<std::unique_ptr<ConfiguredSink>> {
          return std::unique_ptr<ConfiguredSink>(std::make_unique<ConfiguredCollector>());
        }));
    ASSERT_TRUE(register_checkpoint_backend(
        "test_recording", [](const Settings&) -> Result<std::unique_ptr<ConfiguredCheckpoint>> {
          return std::unique_ptr<ConfiguredCheckpoint>(std::make_unique<ConfiguredRecorder>());
        }));
  });
}

constexpr const char* kTestPipeline = R"([source]
type = "test_counter"
events = 7

[sink]
type = "test_collect"

[state.offset]
backend = "test_recording"

[runtime]
max_buffer_size = 3
max_poll_wait_ms = 10
)";

std::string error_of(const std::string& text) {
  register_test_plugins();
  auto config = server::parse_server_config(text, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return server::render_error(config.error());
}

std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

TEST(PluginRegistry, UnknownTypeIsAConfigurationErrorListingTheKnownTypes) {
  server::register_builtin_plugins();
  auto sink = find_sink_type("no_such_sink");
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().kind(), ErrorKind::kConfiguration);
  EXPECT_EQ(sink.error().setting_owner(), SettingOwner::kSink);
  EXPECT_EQ(sink.error().setting(), "type");
  EXPECT_CONTAINS(sink.error().message(), "\"file\"");
  EXPECT_CONTAINS(sink.error().message(), "\"stdout\"");
  EXPECT_CONTAINS(sink.error().message(), "found \"no_such_sink\"");
  // The library names the setting, never the file's syntax; the server adds that.
  EXPECT_EQ(sink.error().report().find("[sink]"), std::string::npos) << sink.error().report();
  EXPECT_CONTAINS(server::render_error(sink.error()), "[sink] type: expected");

  auto backend = find_checkpoint_backend("no_such_backend");
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().setting(), "backend");
  EXPECT_CONTAINS(backend.error().message(), "\"local_fs\"");
  EXPECT_CONTAINS(backend.error().message(), "\"memory\"");

  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "\"test_counter\"", "\"oracle\"")),
                  "cdc.toml:2:8: [source] type: expected ");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "\"test_counter\"", "\"oracle\"")), "\"postgres\"");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "\"test_collect\"", "\"nats\"")),
                  "[sink] type: expected ");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "\"test_recording\"", "\"etcd\"")),
                  "[state.offset] backend: expected ");
}

TEST(PluginRegistry, AReservedTypeSaysItIsNotBuiltYet) {
  server::register_builtin_plugins();
  auto sqlserver = find_source_type("sqlserver");
  ASSERT_FALSE(sqlserver);
  EXPECT_CONTAINS(sqlserver.error().message(), "not built yet");
  for (const auto& name : source_type_names()) EXPECT_NE(name, "sqlserver");
}

TEST(PluginRegistry, ASecondRegistrationOfANameIsRefused) {
  server::register_builtin_plugins();
  auto again = register_source_type("postgres", configure_counter);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind(), ErrorKind::kInvalidState);
  EXPECT_CONTAINS(again.error().message(), "\"postgres\" is registered already");
  EXPECT_FALSE(register_sink_type("stdout", nullptr));
  EXPECT_FALSE(register_checkpoint_backend("local_fs", nullptr));

  ASSERT_TRUE(register_source_type("test_once", configure_counter));
  EXPECT_FALSE(register_source_type("test_once", configure_counter));
  EXPECT_FALSE(register_source_type("", configure_counter));
}

TEST(PluginRegistry, APluginsSettingErrorsNameTheKeyAsTheFileSpellsIt) {
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "events = 7", "events = \"seven\"")),
                  "cdc.toml:3:10: [source] events: expected an integer, found a string");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "events = 7", "")),
                  "cdc.toml: [source] events: required (how many events to produce)");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "events = 7", "events = 13")),
                  "cdc.toml:3:10: [source] events: 13 brings bad luck");
  EXPECT_CONTAINS(
      error_of(edit(kTestPipeline, "events = 7", "events = 7\nevnets = 1")),
      "[source] evnets: unknown key (did you mean events?); expected one of: type, events");
  EXPECT_CONTAINS(error_of(edit(kTestPipeline, "[sink]\n", "[sink]\npath = \"x\"\n")),
                  "[sink] path: unknown key; expected one of: type, name, batch_max_events, "
                  "sink_flush_interval_events, batch_max_delay_ms");
}

TEST(PluginRegistry, TheServerNamesASettingAsCdcTomlSpellsIt) {
  EXPECT_EQ(server::setting_label(SettingOwner::kSource, "tables"), "[source] tables");
  EXPECT_EQ(server::setting_label(SettingOwner::kSource, "snapshot.mode"),
            "[source.snapshot] mode");
  EXPECT_EQ(server::setting_label(SettingOwner::kSink, "path"), "[sink] path");
  EXPECT_EQ(server::setting_label(SettingOwner::kCheckpoint, "dir"), "[state.offset] dir");
  EXPECT_EQ(server::setting_label(SettingOwner::kNone, "x"), "");
  const Error e = Error::terminal("table public.x does not exist")
                      .for_setting(SettingOwner::kSource, "tables")
                      .context("starting the postgres source");
  EXPECT_EQ(server::render_error(e),
            "starting the postgres source: terminal error: [source] tables: table public.x does "
            "not exist");
}

TEST(PluginRegistry, TheServerRunsAPipelineOfTypesRegisteredByTheTest) {
  register_test_plugins();
  char pattern[] = "/tmp/cppcdc-registry-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::filesystem::path dir = pattern;
  const auto config_path = dir / "cdc.toml";
  std::ofstream(config_path) << kTestPipeline;

  auto config = server::load_server_config(config_path);
  ASSERT_TRUE(config) << server::render_error(config.error());
  EXPECT_EQ(config->source_type, "test_counter");
  EXPECT_EQ(config->sink_type, "test_collect");
  EXPECT_EQ(config->checkpoint_backend, "test_recording");
  // No checkpoint directory: the control socket sits beside the configuration.
  EXPECT_EQ(config->control_socket, dir / "cdc.sock");
  const std::string described = server::describe_config(*config);
  EXPECT_CONTAINS(described, "source:             test_counter");
  EXPECT_CONTAINS(described, "  events:           7");
  EXPECT_CONTAINS(described, "sink:               test_collect");
  EXPECT_CONTAINS(described, "checkpoint:         test_recording counter-1");

  EXPECT_EQ(server::run_server(*config), server::kExitOk);
  {
    std::lock_guard lock(seen().mutex);
    EXPECT_EQ(seen().delivered,
              (std::vector<std::string>{"id=1", "id=2", "id=3", "id=4", "id=5", "id=6", "id=7"}));
    EXPECT_EQ(seen().checkpoint_id, "counter-1");
    ASSERT_FALSE(seen().saved.empty());
    EXPECT_EQ(seen().saved.back(), "7");
    ASSERT_FALSE(seen().confirmed.empty());
    EXPECT_EQ(seen().confirmed.back(), "7");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc
