// `cppcdc migrate-state` through every durable backend, with the binary as a user runs it:
// local_fs -> postgresql -> redis -> kafka_topic -> local_fs (a fresh directory). Each hop
// leaves its source record as it was, the record (with a schema history in its source state)
// arrives whole at the end, and a target that moved ahead is refused until --force. The
// servers are the ones scripts/test.sh starts (PostgreSQL, Redis, Kafka); the test skips,
// naming the variable, when one is missing. The local_fs-only cases are unit tests
// (tests/unit/server/migrate_state_test.cpp).

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "server/config.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class MigrateStateAcrossBackends : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cppcdc-it-migrate-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    tag_ = "mig" + std::to_string(::getpid());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A cdc.toml for the same PostgreSQL source (never connected to) with `state` as its
  // [state.offset] body.
  fs::path config(const std::string& name, const std::string& state) {
    const fs::path path = dir_ / (name + ".toml");
    std::ofstream(path) << "[source]\ndsn = \"" << env("CPPCDC_TEST_PG_DSN")
                        << "\"\ntables = [\"public.t\"]\nslot_name = \"" << tag_ << "_slot\"\n\n"
                        << "[sink]\ntype = \"file\"\npath = \"" << (dir_ / "events.jsonl").string()
                        << "\"\n\n[state.offset]\n"
                        << state << "\n[runtime]\ncontrol_socket = \""
                        << (dir_ / (name + ".sock")).string() << "\"\n";
    return path;
  }

  static Result<std::shared_ptr<Checkpoint>> open(const fs::path& config) {
    auto loaded = server::load_server_config(config);
    if (!loaded) return fail(loaded.error());
    return loaded->checkpoint->open(loaded->source->checkpoint_id());
  }

  static std::optional<CheckpointRecord> load(const fs::path& config) {
    auto ckpt = open(config);
    EXPECT_TRUE(ckpt) << ckpt.error().report();
    if (!ckpt) return std::nullopt;
    auto record = (*ckpt)->load();
    EXPECT_TRUE(record) << record.error().report();
    return record ? *record : std::nullopt;
  }

  it::CliOutcome migrate(const fs::path& from, const fs::path& to, bool force = false) {
    std::vector<std::string> args{"migrate-state",
                                  "--config",
                                  from.string(),
                                  "--to",
                                  to.string(),
                                  "--output",
                                  (dir_ / "report.json").string()};
    if (force) args.emplace_back("--force");
    return it::run_cli(args, 120);
  }

  boost::json::object report() const {
    return boost::json::parse(slurp(dir_ / "report.json")).as_object();
  }

  fs::path dir_;
  std::string tag_;
};

TEST_F(MigrateStateAcrossBackends, ARecordTravelsThroughEveryBackendWholeAndLeavesEachAsItWas) {
  if (env("CPPCDC_TEST_PG_DSN").empty() || env("CPPCDC_TEST_REDIS_PORT").empty()) {
    GTEST_SKIP() << "CPPCDC_TEST_PG_DSN and CPPCDC_TEST_REDIS_PORT are needed (scripts/test.sh "
                    "starts PostgreSQL and Redis and sets them)";
  }
  KAFKA_TEST_BOOTSTRAP(bootstrap);

  const fs::path first =
      config("first", "backend = \"local_fs\"\ndir = \"" + (dir_ / "first").string() + "\"\n");
  const fs::path pg =
      config("pg", "backend = \"postgresql\"\ndsn = \"" + env("CPPCDC_TEST_PG_DSN") +
                       "\"\nschema = \"" + tag_ + "\"\n");
  const fs::path redis =
      config("redis", "backend = \"redis\"\nport = " + env("CPPCDC_TEST_REDIS_PORT") +
                          "\nkey_prefix = \"" + tag_ + ":\"\n");
  const fs::path kafka =
      config("kafka", "backend = \"kafka_topic\"\nbootstrap_servers = \"" + bootstrap +
                          "\"\ntopic = \"" + tag_ + ".checkpoints\"\n");
  const fs::path last =
      config("last", "backend = \"local_fs\"\ndir = \"" + (dir_ / "last").string() + "\"\n");

  CheckpointRecord record;
  record.source_type = "postgres";
  record.source_id = tag_ + "_slot";
  record.offset = "1/2A3B4C5D";
  record.committed_events = 987654;
  record.partial_tx_events = 12;
  record.partial_tx_id = 4242;
  // A source state of some size, as a MySQL schema history would be: it travels byte for byte.
  std::string history = R"({"schema":{"tables":[)";
  for (int i = 0; i < 2000; ++i) {
    history += (i != 0 ? "," : "") + std::string(R"({"name":"app.t)") + std::to_string(i) +
               R"(","columns":["id","naïve \"quoted\"","x"]})";
  }
  history += "]}}";
  record.source_state = history;
  record.saved_at_ms = 1764000000123;
  {
    auto ckpt = open(first);
    ASSERT_TRUE(ckpt) << ckpt.error().report();
    auto saved = (*ckpt)->save(record);
    ASSERT_TRUE(saved) << saved.error().report();
  }
  const fs::path first_file = dir_ / "first" / ("checkpoint-" + tag_ + "_slot.ckpt");
  const std::string first_bytes = slurp(first_file);
  ASSERT_FALSE(first_bytes.empty());

  const std::vector<std::pair<fs::path, fs::path>> hops{
      {first, pg}, {pg, redis}, {redis, kafka}, {kafka, last}};
  for (const auto& [from, to] : hops) {
    const auto out = migrate(from, to);
    ASSERT_EQ(out.code, 0) << from << " -> " << to << ":\n" << out.output;
    const auto r = report();
    EXPECT_EQ(r.at("outcome").as_string(), "migrated") << out.output;
    EXPECT_TRUE(r.at("from").at("unchanged").as_bool());
    EXPECT_EQ(r.at("to").at("record_after").at("source_state_bytes").to_number<std::uint64_t>(),
              history.size());
    // The hop's source still holds the record, the target holds the same.
    EXPECT_EQ(load(from), record) << from;
    EXPECT_EQ(load(to), record) << to;
  }
  EXPECT_EQ(slurp(first_file), first_bytes) << "the first local_fs record was rewritten";

  // A pipeline ran on the Kafka configuration since: its record moved ahead, and copying the
  // old PostgreSQL record over it is refused until --force.
  CheckpointRecord ahead = record;
  ahead.offset = "1/FFFF0000";
  ahead.committed_events += 10;
  {
    auto ckpt = open(kafka);
    ASSERT_TRUE(ckpt) << ckpt.error().report();
    auto saved = (*ckpt)->save(ahead);
    ASSERT_TRUE(saved) << saved.error().report();
  }
  auto refused = migrate(pg, kafka);
  EXPECT_EQ(refused.code, 5) << refused.output;
  EXPECT_NE(refused.output.find("is ahead of"), std::string::npos) << refused.output;
  EXPECT_EQ(report().at("outcome").as_string(), "refused");
  EXPECT_EQ(load(kafka), ahead);
  auto forced = migrate(pg, kafka, /*force=*/true);
  EXPECT_EQ(forced.code, 0) << forced.output;
  EXPECT_EQ(load(kafka), record);
  EXPECT_EQ(load(pg), record);
}

}  // namespace
}  // namespace cppcdc
