// One very large MariaDB transaction through the real `cppcdc run` binary: past [source]
// spill_threshold_bytes its events go to a temporary file until the commit, then arrive whole
// (total_events and every event_index right, the rows in order) while the process stays
// under 128 MB; without the spill it held the whole transaction in memory (1.2 GB for
// 1,000,000 rows).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace cppcdc::it::maria
