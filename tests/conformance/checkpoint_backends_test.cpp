// The checkpoint conformance suite for the built-in backends: local_fs (FileCheckpoint) and
// memory (InMemoryCheckpoint). Below the instantiations, what only local_fs promises about its
// writer lock.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/checkpoint_conformance.hpp"
#include "conformance/conformance_util.hpp"
#include "cppcdc/checkpoint.hpp"

namespace cppcdc::conformance {
namespace {

namespace fs = std::filesystem;

void overwrite(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Runs `checkpoint.save(record)` in a child process whose file size limit lets the temporary
/// file take only its first bytes: the write fails part way (EFBIG) after the save began.
/// The child relays the outcome through a pipe.
std::optional<Status> save_with_file_size_limit(Checkpoint& checkpoint,
                                                const CheckpointRecord& record) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child < 0) return std::nullopt;
  if (child == 0) {
    ::close(fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    const rlimit limit{24, 24};
    std::string outcome;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      outcome = "setup\n";
    } else {
      const auto status = checkpoint.save(record);
      outcome =
          status ? std::string("ok\n")
                 : std::string(to_string(status.error().kind())) + "\n" + status.error().report();
    }
    (void)!::write(fds[1], outcome.data(), outcome.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string outcome;
  char buffer[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) {
    outcome.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int wait_status = 0;
  ::waitpid(child, &wait_status, 0);
  if (outcome.starts_with("ok\n")) return ok();
  const auto newline = outcome.find('\n');
  if (outcome.empty() || outcome.starts_with("setup\n") || newline == std::string::npos) {
    return std::nullopt;
  }
  const std::string kind_name = outcome.substr(0, newline);
  ErrorKind kind = ErrorKind::kInternal;
  for (const ErrorKind k :
       {ErrorKind::kTransient, ErrorKind::kTerminal, ErrorKind::kConfiguration,
        ErrorKind::kInvalidState, ErrorKind::kInvalidData, ErrorKind::kInternal}) {
    if (to_string(k) == kind_name) kind = k;
  }
  // The failure the child saw must be the injected one, not something unrelated.
  EXPECT_EQ(kind, ErrorKind::kTransient) << outcome;
  EXPECT_NE(outcome.find("File too large"), std::string::npos) << outcome;
  return fail(Error(kind, "relayed from the child", outcome.substr(newline + 1)));
}

class LocalFsCheckpointHarness {
 public:
  static constexpr const char* kName = "local_fs";
  static constexpr bool kSharedStorage = true;

  Result<std::unique_ptr<Checkpoint>> open(const std::string& source_id) {
    auto opened = FileCheckpoint::open(dir(), source_id);
    if (!opened) return fail(std::move(opened).error());
    return std::unique_ptr<Checkpoint>(std::move(*opened));
  }
  bool corrupt(const std::string& source_id) {
    std::string bytes = read_bytes(file(source_id));
    if (bytes.size() < 10) return false;
    bytes[bytes.size() - 5] = static_cast<char>(bytes[bytes.size() - 5] ^ 0x20);
    overwrite(file(source_id), bytes);
    return true;
  }
  bool truncate(const std::string& source_id) {
    const std::string bytes = read_bytes(file(source_id));
    if (bytes.size() < 2) return false;
    overwrite(file(source_id), bytes.substr(0, bytes.size() / 2));
    return true;
  }
  std::string location(const std::string& source_id) { return file(source_id).string(); }
  std::string writer_lock_location(const std::string& source_id) {
    return (dir() / ("checkpoint-" + source_id + ".lock")).string();
  }
  std::optional<Status> save_failing_part_way(Checkpoint& checkpoint,
                                              const CheckpointRecord& record) {
    return save_with_file_size_limit(checkpoint, record);
  }
  std::vector<SaveCrashPoint> crash_points() {
    return {{"checkpoint.after_tmp_write", false},
            {"checkpoint.before_rename", false},
            {"checkpoint.after_rename", true}};
  }

  fs::path dir() const { return tmp_.path() / "state"; }
  fs::path file(const std::string& source_id) const {
    return dir() / ("checkpoint-" + source_id + ".ckpt");
  }

 private:
  TempDir tmp_{"cppcdc-conformance-local-fs"};
};

class MemoryCheckpointHarness {
 public:
  static constexpr const char* kName = "memory";
  static constexpr bool kSharedStorage = false;

  Result<std::unique_ptr<Checkpoint>> open(const std::string& /*source_id*/) {
    return std::unique_ptr<Checkpoint>(std::make_unique<InMemoryCheckpoint>());
  }
  bool corrupt(const std::string& /*source_id*/) { return false; }
  bool truncate(const std::string& /*source_id*/) { return false; }
  std::string location(const std::string& /*source_id*/) { return kName; }
  std::string writer_lock_location(const std::string& /*source_id*/) { return kName; }
  std::optional<Status> save_failing_part_way(Checkpoint&, const CheckpointRecord&) {
    return std::nullopt;
  }
  std::vector<SaveCrashPoint> crash_points() { return {}; }
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(LocalFsCheckpoint, CheckpointConformance, LocalFsCheckpointHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(MemoryCheckpoint, CheckpointConformance, MemoryCheckpointHarness);

namespace {

// --- local_fs only: the writer lock ----------------------------------------------------------

TEST(LocalFsWriterLock, ASecondOpenIsAConfigurationErrorNamingTheLockFileAndItsHolder) {
  LocalFsCheckpointHarness harness;
  auto first = FileCheckpoint::open(harness.dir(), "slot_a");
  ASSERT_TRUE(first) << first.error().report();
  EXPECT_EQ((*first)->lock_path(), harness.dir() / "checkpoint-slot_a.lock");
  const auto second = FileCheckpoint::open(harness.dir(), "slot_a");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind(), ErrorKind::kConfiguration);
  const std::string report = second.error().report();
  EXPECT_NE(report.find((*first)->lock_path().string()), std::string::npos) << report;
  EXPECT_NE(report.find("held by another process (pid " + std::to_string(::getpid()) + ")"),
            std::string::npos)
      << report;
  // Another source id in the same directory is another writer's business.
  const auto other = FileCheckpoint::open(harness.dir(), "slot_b");
  EXPECT_TRUE(other) << other.error().report();
}

TEST(LocalFsWriterLock, AnotherProcessCannotOpenWhileThisOneHoldsTheCheckpoint) {
  LocalFsCheckpointHarness harness;
  auto held = FileCheckpoint::open(harness.dir(), "slot_a");
  ASSERT_TRUE(held) << held.error().report();
  auto in_child = [&harness]() {
    const pid_t child = ::fork();
    if (child == 0) {
      // A fresh open in another process: its own open file description, its own lock attempt.
      const auto opened = FileCheckpoint::open(harness.dir(), "slot_a");
      if (opened) ::_exit(0);
      ::_exit(opened.error().kind() == ErrorKind::kConfiguration ? 3 : 4);
    }
    int wait_status = 0;
    ::waitpid(child, &wait_status, 0);
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  };
  EXPECT_EQ(in_child(), 3) << "another process opened the checkpoint this one holds";
  held->reset();
  EXPECT_EQ(in_child(), 0) << "the lock outlived its FileCheckpoint";
}

TEST(LocalFsWriterLock, AStaleLockFileFromADeadProcessBlocksNobody) {
  LocalFsCheckpointHarness harness;
  fs::create_directories(harness.dir());
  overwrite(harness.dir() / "checkpoint-slot_a.lock", "999999\n");
  auto opened = FileCheckpoint::open(harness.dir(), "slot_a");
  ASSERT_TRUE(opened) << opened.error().report();
  EXPECT_EQ(read_bytes((*opened)->lock_path()), std::to_string(::getpid()) + "\n");
}

TEST(LocalFsWriterLock, AnUnopenableLockFileIsAConfigurationErrorNamingIt) {
  LocalFsCheckpointHarness harness;
  fs::create_directories(harness.dir() / "checkpoint-slot_a.lock");  // a directory in its place
  const auto opened = FileCheckpoint::open(harness.dir(), "slot_a");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kConfiguration);
  EXPECT_NE(opened.error().report().find("checkpoint-slot_a.lock"), std::string::npos)
      << opened.error().report();
}

}  // namespace
}  // namespace cppcdc::conformance
