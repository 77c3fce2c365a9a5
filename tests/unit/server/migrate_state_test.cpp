// `cppcdc migrate-state` between two local_fs directories (no server needed; the same command
// between the server backends is tested in tests/integration/migrate_state_test.cpp): the
// record arrives whole (source state and all), the old one is left byte for byte, the report
// says what happened, and a newer record, another source's record or a different source
// identity at the target are refused unless forced.

#include "server/migrate_state.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "server/config.hpp"
#include "server/control_socket.hpp"
#include "server/run.hpp"

namespace cppcdc::server {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class MigrateState : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cppcdc-migrate-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    old_config_ = write_config("old.toml", "orders_slot", root_ / "old");
    new_config_ = write_config("new.toml", "orders_slot", root_ / "new");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path write_config(const std::string& name, const std::string& slot, const fs::path& dir) {
    const fs::path path = root_ / name;
    std::ofstream(path) << "[source]\ndsn = \"host=127.0.0.1 dbname=app\"\n"
                        << "tables = [\"public.t\"]\nslot_name = \"" << slot << "\"\n\n"
                        << "[sink]\ntype = \"file\"\npath = \"" << (root_ / "events.jsonl").string()
                        << "\"\n\n[state.offset]\nbackend = \"local_fs\"\ndir = \"" << dir.string()
                        << "\"\n\n[runtime]\ncontrol_socket = \""
                        << (root_ / (name + ".sock")).string() << "\"\n";
    return path;
  }

  static CheckpointRecord record_at(const std::string& offset) {
    CheckpointRecord r;
    r.source_type = "postgres";
    r.source_id = "orders_slot";
    r.offset = offset;
    r.committed_events = 1234;
    r.partial_tx_events = 3;
    r.partial_tx_id = 777;
    r.source_state = R"({"schema":{"app.orders":{"columns":["id","total"]}},"note":"é\n"})";
    r.saved_at_ms = 1764000000123;
    return r;
  }

  // Saves `record` through the backend `config` names, as a pipeline would.
  static void save(const fs::path& config, const CheckpointRecord& record) {
    auto loaded = load_server_config(config);
    ASSERT_TRUE(loaded) << loaded.error().report();
    auto ckpt = loaded->checkpoint->open(loaded->source->checkpoint_id());
    ASSERT_TRUE(ckpt) << ckpt.error().report();
    auto saved = (*ckpt)->save(record);
    ASSERT_TRUE(saved) << saved.error().report();
  }

  static std::optional<CheckpointRecord> load(const fs::path& config) {
    auto loaded = load_server_config(config);
    EXPECT_TRUE(loaded) << loaded.error().report();
    if (!loaded) return std::nullopt;
    auto ckpt = loaded->checkpoint->open(loaded->source->checkpoint_id());
    EXPECT_TRUE(ckpt) << ckpt.error().report();
    if (!ckpt) return std::nullopt;
    auto record = (*ckpt)->load();
    EXPECT_TRUE(record) << record.error().report();
    return record ? *record : std::nullopt;
  }

  int migrate(bool force = false, bool dry_run = false) {
    MigrateStateOptions options;
    options.from_config = old_config_;
    options.to_config = new_config_;
    options.force = force;
    options.dry_run = dry_run;
    options.output = report_path();
    return migrate_state(options);
  }

  fs::path report_path() const { return root_ / "report.json"; }
  boost::json::object report() const {
    return boost::json::parse(slurp(report_path())).as_object();
  }
  fs::path old_file() const { return root_ / "old" / "checkpoint-orders_slot.ckpt"; }

  fs::path root_, old_config_, new_config_;
};

TEST_F(MigrateState, CopiesTheWholeRecordAndLeavesTheOldOneByteForByte) {
  save(old_config_, record_at("0/16B2E48"));
  ASSERT_TRUE(fs::exists(old_file()));
  const std::string before = slurp(old_file());

  ASSERT_EQ(migrate(), kExitOk);
  const auto moved = load(new_config_);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(*moved, record_at("0/16B2E48"));  // source_state and the partial transaction too
  EXPECT_EQ(slurp(old_file()), before);

  const auto r = report();
  EXPECT_EQ(r.at("outcome").as_string(), "migrated");
  EXPECT_EQ(r.at("checkpoint_id").as_string(), "orders_slot");
  EXPECT_EQ(r.at("from").at("backend").as_string(), "local_fs");
  EXPECT_EQ(r.at("from").at("record").at("offset").as_string(), "0/16B2E48");
  EXPECT_EQ(r.at("from").at("unchanged").as_bool(), true);
  EXPECT_TRUE(r.at("to").at("record_before").is_null());
  EXPECT_EQ(r.at("to").at("record_after").at("committed_events").to_number<std::uint64_t>(), 1234u);
  EXPECT_EQ(r.at("to").at("record_after").at("source_state_bytes").to_number<std::uint64_t>(),
            record_at("x").source_state.size());
  EXPECT_FALSE(r.at("forced").as_bool());

  // Again: the target already holds it, nothing is written.
  ASSERT_EQ(migrate(), kExitOk);
  EXPECT_EQ(report().at("outcome").as_string(), "already_current");
}

TEST_F(MigrateState, AnOlderTargetRecordIsReplacedANewerOneOnlyWithForce) {
  save(new_config_, record_at("0/1000"));
  save(old_config_, record_at("0/2000"));
  ASSERT_EQ(migrate(), kExitOk);
  EXPECT_EQ(load(new_config_)->offset, "0/2000");
  EXPECT_EQ(report().at("to").at("record_before").at("offset").as_string(), "0/1000");

  // The pipeline ran on the new configuration meanwhile: its record is ahead.
  save(new_config_, record_at("0/9000"));
  ASSERT_EQ(migrate(), kExitRefused);
  EXPECT_EQ(load(new_config_)->offset, "0/9000");
  auto r = report();
  EXPECT_EQ(r.at("outcome").as_string(), "refused");
  EXPECT_NE(std::string(r.at("reason").as_string()).find("is ahead of"), std::string::npos)
      << r.at("reason").as_string();
  EXPECT_NE(std::string(r.at("reason").as_string()).find("--force"), std::string::npos);

  ASSERT_EQ(migrate(/*force=*/true, /*dry_run=*/true), kExitOk);
  EXPECT_EQ(report().at("outcome").as_string(), "dry_run");
  EXPECT_EQ(load(new_config_)->offset, "0/9000");

  ASSERT_EQ(migrate(/*force=*/true), kExitOk);
  EXPECT_EQ(load(new_config_)->offset, "0/2000");
  r = report();
  EXPECT_EQ(r.at("outcome").as_string(), "migrated");
  EXPECT_TRUE(r.at("forced").as_bool());
  EXPECT_EQ(load(old_config_)->offset, "0/2000");
}

TEST_F(MigrateState, AnotherSourcesRecordAtTheTargetIsRefusedUnlessForced) {
  save(old_config_, record_at("0/2000"));
  CheckpointRecord other = record_at("0/1000");
  other.source_id = "another_slot";
  save(new_config_, other);
  ASSERT_EQ(migrate(), kExitRefused);
  EXPECT_NE(std::string(report().at("reason").as_string()).find("another source"),
            std::string::npos);
  EXPECT_EQ(load(new_config_)->source_id, "another_slot");
  ASSERT_EQ(migrate(/*force=*/true), kExitOk);
  EXPECT_EQ(load(new_config_)->source_id, "orders_slot");
}

TEST_F(MigrateState, ADamagedTargetRecordIsRefusedUnlessForced) {
  save(old_config_, record_at("0/2000"));
  fs::create_directories(root_ / "new");
  std::ofstream(root_ / "new" / "checkpoint-orders_slot.ckpt") << "not a checkpoint";
  ASSERT_EQ(migrate(), kExitRefused);
  EXPECT_NE(std::string(report().at("reason").as_string()).find("cannot be read"),
            std::string::npos);
  ASSERT_EQ(migrate(/*force=*/true), kExitOk);
  EXPECT_EQ(load(new_config_)->offset, "0/2000");
}

TEST_F(MigrateState, NothingToMigrateDifferentSourcesAndTheSamePlaceAreErrors) {
  // No record at the source.
  EXPECT_EQ(migrate(), kExitTerminal);
  EXPECT_EQ(report().at("outcome").as_string(), "failed");
  EXPECT_NE(std::string(report().at("reason").as_string()).find("nothing to migrate"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "new" / "checkpoint-orders_slot.ckpt"));

  save(old_config_, record_at("0/2000"));
  // Another slot: the record would not belong to the new pipeline.
  new_config_ = write_config("new.toml", "other_slot", root_ / "new");
  EXPECT_EQ(migrate(), kExitConfiguration);
  EXPECT_NE(std::string(report().at("reason").as_string()).find("different sources"),
            std::string::npos);
  // The same directory.
  new_config_ = write_config("new.toml", "orders_slot", root_ / "old");
  EXPECT_EQ(migrate(), kExitConfiguration);
  EXPECT_NE(std::string(report().at("reason").as_string()).find("same place"), std::string::npos);
  // A configuration that does not load is named, and no report is written for it.
  fs::remove(report_path());
  std::ofstream(new_config_) << "[source]\nbogus = 1\n";
  EXPECT_EQ(migrate(), kExitConfiguration);
  EXPECT_FALSE(fs::exists(report_path()));
  EXPECT_EQ(load(old_config_)->offset, "0/2000");
}

TEST_F(MigrateState, APipelineThatRunsOnEitherConfigurationIsRefused) {
  save(old_config_, record_at("0/2000"));
  for (const std::string which : {"old.toml", "new.toml"}) {
    // A cppcdc answering on the configuration's control socket, as `cppcdc run` does.
    auto running = ControlServer::start(
        root_ / (which + ".sock"),
        [](std::string_view, const std::atomic<bool>&) { return std::string(R"({"ok":true})"); });
    ASSERT_TRUE(running) << running.error().report();
    EXPECT_EQ(migrate(), kExitRefused) << which;
    const std::string reason(report().at("reason").as_string());
    EXPECT_NE(reason.find("a cppcdc runs the pipeline of " + (root_ / which).string()),
              std::string::npos)
        << reason;
    EXPECT_FALSE(fs::exists(root_ / "new" / "checkpoint-orders_slot.ckpt"));
  }
  EXPECT_EQ(migrate(), kExitOk);
}

}  // namespace
}  // namespace cppcdc::server
