// A process killed in the middle of FileCheckpoint::save leaves a readable checkpoint: the old
// record before the rename, the new one after it. The kill is a real SIGKILL delivered at a
// CPPCDC_FAULT_POINT inside a forked child.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "unit/checkpoint/checkpoint_test_util.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;

CheckpointRecord pg_record(std::string offset, std::uint64_t events) {
  CheckpointRecord r;
  r.source_type = "postgres";
  r.source_id = "orders_slot";
  r.offset = std::move(offset);
  r.committed_events = events;
  r.saved_at_ms = 1700000000000 + static_cast<std::int64_t>(events);
  return r;
}

struct CrashCase {
  const char* fault_point;
  bool new_record_survives;
};

class FileCheckpointCrash : public ::testing::TestWithParam<CrashCase> {};

/// Runs `checkpoint.save(record)` in a child that is armed to die at `fault_point`; returns
/// the child's wait status.
[[maybe_unused]] int save_in_child_armed_at(FileCheckpoint& checkpoint,
                                            const CheckpointRecord& record,
                                            const char* fault_point) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::setenv("CPPCDC_FAULT_POINT", fault_point, 1);
    const auto status = checkpoint.save(record);
    // Reaching this line means the fault point did not fire.
    ::_exit(status ? 0 : 1);
  }
  int wait_status = 0;
  if (child < 0 || ::waitpid(child, &wait_status, 0) != child) return -1;
  return wait_status;
}

TEST_P(FileCheckpointCrash, KillDuringSaveLeavesAReadableRecord) {
#ifndef CPPCDC_ENABLE_FAULT_POINTS
  GTEST_SKIP() << "built without CPPCDC_ENABLE_FAULT_POINTS";
#else
  const CrashCase crash = GetParam();
  test::TempDir dir;
  auto opened = FileCheckpoint::open(dir.path(), "orders_slot");
  ASSERT_TRUE(opened) << opened.error().report();
  FileCheckpoint& checkpoint = **opened;

  const auto old_record = pg_record("0/16B2E48", 100);
  const auto new_record = pg_record("0/16B3000", 120);
  ASSERT_TRUE(checkpoint.save(old_record));

  const int wait_status = save_in_child_armed_at(checkpoint, new_record, crash.fault_point);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child was not killed, status " << wait_status;
  EXPECT_EQ(WTERMSIG(wait_status), SIGKILL);

  // What a restarted process sees (the crashed writer's instance is gone with its lock).
  const fs::path checkpoint_path = checkpoint.path();
  opened->reset();
  auto restarted = FileCheckpoint::open(dir.path(), "orders_slot");
  ASSERT_TRUE(restarted) << restarted.error().report();
  const auto loaded = (*restarted)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, crash.new_record_survives ? new_record : old_record);

  // The next save goes through and cleans up whatever the crash left behind.
  const auto next_record = pg_record("0/16B4000", 130);
  ASSERT_TRUE((*restarted)->save(next_record));
  const auto after = (*restarted)->load();
  ASSERT_TRUE(after && after->has_value());
  EXPECT_EQ(**after, next_record);
  EXPECT_FALSE(fs::exists(checkpoint_path.string() + ".tmp"));
#endif
}

INSTANTIATE_TEST_SUITE_P(FaultPoints, FileCheckpointCrash,
                         ::testing::Values(CrashCase{"checkpoint.after_tmp_write", false},
                                           CrashCase{"checkpoint.before_rename", false},
                                           CrashCase{"checkpoint.after_rename", true}),
                         [](const ::testing::TestParamInfo<CrashCase>& info) {
                           std::string name = info.param.fault_point;
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return name;
                         });

TEST(Invariant3, CrashBetweenTemporaryWriteAndRenameKeepsTheOldRecord) {
#ifndef CPPCDC_ENABLE_FAULT_POINTS
  GTEST_SKIP() << "built without CPPCDC_ENABLE_FAULT_POINTS";
#else
  test::TempDir dir;
  auto opened = FileCheckpoint::open(dir.path(), "orders_slot");
  ASSERT_TRUE(opened) << opened.error().report();
  const auto old_record = pg_record("0/16B2E48", 100);
  ASSERT_TRUE((*opened)->save(old_record));

  const int wait_status =
      save_in_child_armed_at(**opened, pg_record("0/16B3000", 120), "checkpoint.before_rename");
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child was not killed, status " << wait_status;
  EXPECT_EQ(WTERMSIG(wait_status), SIGKILL);

  // The new record reached the temporary file in full, yet the checkpoint still reads old.
  const fs::path tmp = (*opened)->path().string() + ".tmp";
  ASSERT_TRUE(fs::exists(tmp));
  const auto in_tmp = FileCheckpoint::decode(test::read_bytes(tmp), tmp.string());
  ASSERT_TRUE(in_tmp) << in_tmp.error().report();
  EXPECT_EQ(in_tmp->offset, "0/16B3000");

  const auto loaded = (*opened)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, old_record);
#endif
}

TEST(FaultPoint, UnarmedFaultPointsDoNotFire) {
  test::TempDir dir;
  auto opened = FileCheckpoint::open(dir.path(), "orders_slot");
  ASSERT_TRUE(opened);
  // Saving in this process passes every fault point; the environment does not arm any.
  ASSERT_EQ(std::getenv("CPPCDC_FAULT_POINT"), nullptr);
  EXPECT_TRUE((*opened)->save(pg_record("0/1", 1)));
}

}  // namespace
}  // namespace cppcdc
