// One very large MariaDB transaction through the real `cppcdc run` binary: past [source]
// spill_threshold_bytes its events go to a temporary file until the commit, then arrive whole
// (total_events and every event_index right, the rows in order) while the process stays
// under 128 MB; without the spill it held the whole transaction in memory (1.2 GB for
// 1,000,000 rows). The spilled transaction reaches the runtime in pieces of which only the last
// carries a resume position: a SIGKILL between two pieces resumes at the transaction's start,
// so its rows come again and none is lost.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "integration/large_tx_util.hpp"
#include "integration/mariadb_util.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc::it::maria {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kRows = 500'000;

// The file's last line (empty when it has none).
std::string last_line(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  if (size <= 1) return "";
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  in.seekg(from);
  std::string tail(static_cast<std::size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.pop_back();  // its newline
  return tail.substr(tail.rfind('\n') + 1);
}

std::size_t line_count(const fs::path& path) {
  std::ifstream in(path);
  return static_cast<std::size_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

TEST(MariaDbLargeTx, AHalfMillionRowTransactionIsSpilledAndDeliveredWholeUnder128MB) {
  MARIADB_OR_SKIP();
  const std::string db = database_for_test("largetx");
  Session admin;
  admin.exec("DROP DATABASE IF EXISTS " + db);
  admin.exec("CREATE DATABASE " + db);
  admin.exec("CREATE TABLE " + db +
             ".big (id int primary key, name varchar(64) not null, amount decimal(12,2))");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-it-" + db + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path sink = dir / "events.jsonl";
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                                  << *port() << "\nuser = \"root\"\ntables = [\"" << db
                                  << ".big\"]\nsource_id = \"" << db
                                  << "\"\nheartbeat_interval_ms = 200\n[source.snapshot]\n"
                                  << "mode = \"never\"\n\n[sink]\ntype = \"file\"\npath = \""
                                  << sink.string() << "\"\n\n[state.offset]\nbackend = "
                                  << "\"local_fs\"\ndir = \"" << (dir / "state").string()
                                  << "\"\n\n[runtime]\nmax_buffer_size = 10000\n";
  pid_t child = -1;
  start_cppcdc_process(child, dir, "", "", 0);
  struct Guard {
    pid_t& pid;
    ~Guard() {
      if (pid > 0) stop_cppcdc_process(pid, SIGKILL);
    }
  } guard{child};
  // Streaming once a first row arrives (a first start reads from where the server is then).
  int probe = 0;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        admin.exec("INSERT INTO " + db + ".big VALUES (" + std::to_string(--probe) + ", 'p', 0)");
        return line_count(sink) > 0;
      },
      60s, 200ms))
      << log_tail(dir / "cppcdc.log");
  admin.exec("DELETE FROM " + db + ".big");
  admin.exec("INSERT INTO " + db + ".big SELECT seq, md5(seq), seq * 1.25 FROM " + db +
             ".seq_1_to_" + std::to_string(kRows));
  long peak_rss_kb = 0;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        peak_rss_kb = std::max(peak_rss_kb, proc_status_kb(child, "VmRSS"));
        return field(last_line(sink), "id") == std::to_string(kRows);
      },
      300s, 100ms))
      << line_count(sink) << " lines\n"
      << log_tail(dir / "cppcdc.log");
  const long hwm_kb = proc_status_kb(child, "VmHWM");
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM), 0) << log_tail(dir / "cppcdc.log");
  EXPECT_LT(std::max(hwm_kb, peak_rss_kb), 128 * 1024) << "peak resident set in KiB";
  std::cout << "peak resident set of cppcdc: " << hwm_kb / 1024 << " MiB" << std::endl;
  EXPECT_NE(log_tail(dir / "cppcdc.log").find("spilling it to a temporary file"), std::string::npos)
      << log_tail(dir / "cppcdc.log");

  // The big transaction: every row once, in order, each knowing the transaction's size and
  // its own place in it.
  std::ifstream in(sink);
  std::string line;
  std::size_t big = 0;
  std::string tx;
  while (std::getline(in, line)) {
    if (field(line, "total_events") != std::to_string(kRows)) continue;
    if (big == 0) tx = field(line, "tx_id");
    EXPECT_EQ(field(line, "tx_id"), tx);
    ASSERT_EQ(field(line, "event_index"), std::to_string(big)) << line.substr(0, 300);
    ASSERT_EQ(field(line, "id"), std::to_string(big + 1)) << line.substr(0, 300);
    ++big;
  }
  EXPECT_EQ(big, static_cast<std::size_t>(kRows));
  admin.exec("DROP DATABASE IF EXISTS " + db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The local_fs checkpoint `source_id` in `state` (an empty record when there is none yet). Read
// without the writer lock: the record is replaced by a rename, so a read sees one whole record.
CheckpointRecord checkpoint(const fs::path& state, const std::string& source_id) {
  const fs::path file = FileCheckpoint::path_for(state, source_id);
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto record = FileCheckpoint::decode(bytes, file.string());
  return record ? *record : CheckpointRecord{};
}

std::string checkpoint_offset(const fs::path& state, const std::string& source_id) {
  return checkpoint(state, source_id).offset;
}

TEST(MariaDbLargeTx, SigkillBetweenPiecesOfASpilledTransactionResumesAtItsStartAndLosesNoRow) {
  MARIADB_OR_SKIP();
  constexpr int kTxRows = 50'000;
  const std::string db = database_for_test("largetx");
  Session admin;
  admin.exec("DROP DATABASE IF EXISTS " + db);
  admin.exec("CREATE DATABASE " + db);
  admin.exec("CREATE TABLE " + db + ".big (id int primary key, name varchar(64) not null)");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-it-" + db + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path sink = dir / "events.jsonl";
  const fs::path state = dir / "state";
  // A 1 MiB spill threshold: the 50,000 rows (several MB of events) spill, and come back in
  // pieces of 10,000 events, delivered in batches of at most 1,000.
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                                  << *port() << "\nuser = \"root\"\ntables = [\"" << db
                                  << ".big\"]\nsource_id = \"" << db
                                  << "\"\nheartbeat_interval_ms = 200\n"
                                  << "spill_threshold_bytes = 1048576\n[source.snapshot]\n"
                                  << "mode = \"never\"\n\n[sink]\ntype = \"file\"\npath = \""
                                  << sink.string() << "\"\n\n[state.offset]\nbackend = "
                                  << "\"local_fs\"\ndir = \"" << state.string()
                                  << "\"\n\n[runtime]\nmax_buffer_size = 1000\n";
  pid_t child = -1;
  struct Guard {
    pid_t& pid;
    ~Guard() {
      if (pid > 0) stop_cppcdc_process(pid, SIGKILL);
    }
  } guard{child};

  // A first run: streaming once a probe row arrives, then checkpointed at the server's end.
  start_cppcdc_process(child, dir, "", "", 0);
  int probe = 0;
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] {
        admin.exec("INSERT INTO " + db + ".big VALUES (" + std::to_string(--probe) + ", 'p')");
        return line_count(sink) > 0;
      },
      60s, 200ms))
      << log_tail(dir / "cppcdc.log");
  ASSERT_TRUE(cppcdc::test::wait_until(
      [&] { return checkpoint_offset(state, db) == admin.value("SELECT @@gtid_binlog_pos"); }, 60s))
      << checkpoint_offset(state, db) << "\n"
      << log_tail(dir / "cppcdc.log");
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM), 0) << log_tail(dir / "cppcdc.log");
  const std::string before = checkpoint_offset(state, db);
  const std::size_t probe_lines = line_count(sink);

  // The large transaction, written while cppcdc is down.
  admin.exec("INSERT INTO " + db + ".big SELECT seq, md5(seq) FROM " + db + ".seq_1_to_" +
             std::to_string(kTxRows));
  const std::string after = admin.value("SELECT @@gtid_binlog_pos");
  ASSERT_NE(after, before);

  // A run that kills itself after its fifth durable batch: inside the transaction.
  ::setenv("CPPCDC_FAULT_POINT", "file_sink.after_fsync@5", 1);
  start_cppcdc_process(child, dir, "", "", 0);
  ::unsetenv("CPPCDC_FAULT_POINT");
  int status = 0;
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 120s))
      << log_tail(dir / "cppcdc.log");
  child = -1;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status << "\n"
                                                                  << log_tail(dir / "cppcdc.log");
  EXPECT_NE(log_tail(dir / "cppcdc.log").find("spilling it to a temporary file"), std::string::npos)
      << log_tail(dir / "cppcdc.log");
  const std::size_t partial = line_count(sink) - probe_lines;
  EXPECT_GT(partial, 0u);
  EXPECT_LT(partial, static_cast<std::size_t>(kTxRows));
  // Pieces without a position moved no offset: the checkpoint is still at the boundary before
  // the transaction, and counts how many of its events were acknowledged (the core's
  // partial_tx_events), at most what reached the file.
  const CheckpointRecord crashed = checkpoint(state, db);
  EXPECT_EQ(crashed.offset, before);
  const std::size_t acknowledged = crashed.partial_tx_events;
  EXPECT_LE(acknowledged, partial);

  // The restart reads the transaction again from its start and delivers it from its first
  // unacknowledged event to its end.
  start_cppcdc_process(child, dir, "", "", 0);
  ASSERT_TRUE(cppcdc::test::wait_until([&] { return checkpoint_offset(state, db) == after; }, 120s))
      << checkpoint_offset(state, db) << " (expected " << after << ")\n"
      << line_count(sink) << " lines\n"
      << log_tail(dir / "cppcdc.log");
  EXPECT_EQ(stop_cppcdc_process(child, SIGTERM), 0) << log_tail(dir / "cppcdc.log");

  // The transaction's lines: the killed run's part (in order, from its first row), then the
  // rest from the first event the checkpoint did not count, in order, each line knowing its
  // place. Every row arrived; only the batch in flight at the kill came twice.
  std::ifstream in(sink);
  std::string line;
  std::vector<std::string> ids;
  std::string tx;
  while (std::getline(in, line)) {
    if (field(line, "total_events") != std::to_string(kTxRows)) continue;
    if (tx.empty()) tx = field(line, "tx_id");
    ASSERT_EQ(field(line, "tx_id"), tx) << line.substr(0, 300);
    const std::size_t index =
        ids.size() < partial ? ids.size() : ids.size() - partial + acknowledged;
    ASSERT_EQ(field(line, "event_index"), std::to_string(index)) << line.substr(0, 300);
    ASSERT_EQ(field(line, "id"), std::to_string(index + 1)) << line.substr(0, 300);
    ids.push_back(field(line, "id"));
  }
  EXPECT_EQ(ids.size(), partial + kTxRows - acknowledged);
  if (acknowledged > 0) {
    EXPECT_EQ(std::to_string(crashed.partial_tx_id), tx);
  }
  EXPECT_EQ(checkpoint(state, db).partial_tx_events, 0u);
  admin.exec("DROP DATABASE IF EXISTS " + db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc::it::maria
