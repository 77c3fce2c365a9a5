// One very large transaction through the real `cppcdc run` binary: it is spilled to a
// temporary file past [source] spill_threshold_bytes, delivered whole with the right
// total_events and event_index, and the process stays small. The spill file never shows up in
// its directory (it is unlinked at creation), so nothing is left after the end or a SIGKILL.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "large_tx_util.hpp"
#include "pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;
using cppcdc::it::field;
using cppcdc::it::proc_status_kb;

namespace {

// Whether the process has a deleted spill file of `dir` open.
bool holds_spill_file(pid_t pid, const fs::path& dir) {
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const auto target = fs::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind((dir / "cppcdc-spill-").string(), 0) == 0 &&
        target.find("(deleted)") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::size_t count_lines(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

class PgLargeTx : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("big");
    it::fresh_database(db_);
    dir_ = fs::temp_directory_path() / ("cppcdc-it-" + db_);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "spill");
    it::PgSession s(it::dsn_for(db_));
    s.query("create table big (id int primary key, payload text)");
  }
  void TearDown() override {
    stop(SIGKILL);
    it::drop_slots(db_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void write_config(std::size_t spill_threshold) {
    std::ofstream(dir_ / "cdc.toml")
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db_) << "\"\n"
        << "slot_name = \"" << db_ << "\"\npublication_name = \"big_pub\"\n"
        << "tables = [\"public.big\"]\nspill_dir = \"spill\"\n"
        << "spill_threshold_bytes = " << spill_threshold << "\n\n"
        << "[sink]\ntype = \"file\"\npath = \"events.jsonl\"\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n";
  }

  void start() { it::start_cppcdc_process(child_, dir_, it::admin_dsn(), db_, 30); }
  int stop(int sig) { return it::stop_cppcdc_process(child_, sig); }

  std::string db_;
  fs::path dir_;
  pid_t child_ = -1;
};

TEST_F(PgLargeTx, TwoMillionRowTransactionIsDeliveredWholeUnder128MB) {
  constexpr std::size_t kRows = 2'000'000;
  write_config(std::size_t{32} << 20);
  start();
  it::PgSession s(it::dsn_for(db_));
  s.query("insert into big select g, 'row ' || g from generate_series(1, " +
          std::to_string(kRows) + ") g");

  // Watch the process while it works: the spill file is open but never visible.
  bool saw_spill_file = false;
  long peak_rss_kb = 0;
  const fs::path sink = dir_ / "events.jsonl";
  ASSERT_TRUE(wait_until([&] {
    saw_spill_file = saw_spill_file || holds_spill_file(child_, dir_ / "spill");
    peak_rss_kb = std::max(peak_rss_kb, proc_status_kb(child_, "VmRSS"));
    EXPECT_TRUE(fs::is_empty(dir_ / "spill"));
    std::error_code ec;
    // Each line is at least 200 bytes: start counting only when the size allows it.
    return fs::file_size(sink, ec) > kRows * 200 && count_lines(sink) >= kRows;
  }, 600s)) << log_tail(dir_ / "cppcdc.log");
  const long hwm_kb = proc_status_kb(child_, "VmHWM");
  EXPECT_EQ(stop(SIGTERM), 0) << log_tail(dir_ / "cppcdc.log");

  EXPECT_TRUE(saw_spill_file) << "the transaction was never spilled";
  EXPECT_LT(std::max(hwm_kb, peak_rss_kb), 128 * 1024) << "peak resident set in KiB";
  std::cout << "peak resident set of cppcdc: " << hwm_kb / 1024 << " MiB" << std::endl;
  EXPECT_TRUE(fs::is_empty(dir_ / "spill"));
  EXPECT_NE(it::log_tail(dir_ / "cppcdc.log").find("spilled events read back"), std::string::npos);

  // Every row exactly once, in order, each event counting the whole transaction.
  std::ifstream in(sink);
  std::string line;
  std::size_t n = 0;
  std::string tx;
  while (std::getline(in, line)) {
    ASSERT_EQ(field(line, "total_events"), std::to_string(kRows)) << "line " << n;
    ASSERT_EQ(field(line, "event_index"), std::to_string(n)) << "line " << n;
    ASSERT_EQ(field(line, "id"), std::to_string(n + 1)) << "line " << n;
    if (n == 0) tx = field(line, "tx_id");
    ASSERT_EQ(field(line, "tx_id"), tx);
    ++n;
  }
  EXPECT_EQ(n, kRows);
}

TEST_F(PgLargeTx, KilledWhileSpillingLeavesNothingBehindAndLosesNothing) {
  constexpr std::size_t kRows = 300'000;
  write_config(std::size_t{1} << 20);  // spill early
  start();
  it::PgSession s(it::dsn_for(db_));
  s.query("insert into big select g, 'row ' || g from generate_series(1, " +
          std::to_string(kRows) + ") g");
  const fs::path sink = dir_ / "events.jsonl";
  // Kill it once the spill file is open and part of the transaction is delivered.
  ASSERT_TRUE(wait_until([&] {
    std::error_code ec;
    return holds_spill_file(child_, dir_ / "spill") && fs::file_size(sink, ec) > 2'000'000;
  }, 300s)) << log_tail(dir_ / "cppcdc.log");
  stop(SIGKILL);
  EXPECT_TRUE(fs::is_empty(dir_ / "spill"));

  start();
  // Every row at least once (the line count alone can reach kRows with the re-sent batch's
  // duplicates while rows are still to come).
  auto distinct_ids = [&] {
    std::vector<char> seen(kRows + 1, 0);
    std::size_t n = 0;
    std::ifstream in(sink);
    std::string line;
    while (std::getline(in, line)) {
      const auto id_text = field(line, "id");
      if (id_text.empty()) continue;
      const std::size_t id = std::stoul(id_text);
      if (id >= 1 && id <= kRows && !seen[id]) {
        seen[id] = 1;
        ++n;
      }
    }
    return n;
  };
  ASSERT_TRUE(wait_until([&] {
    std::error_code ec;
    return fs::file_size(sink, ec) > kRows * 150 && count_lines(sink) >= kRows &&
           distinct_ids() == kRows;
  }, 300s)) << log_tail(dir_ / "cppcdc.log");
  // A clean stop after everything: the checkpoint then covers the transaction.
  EXPECT_EQ(stop(SIGTERM), 0) << log_tail(dir_ / "cppcdc.log");
  EXPECT_TRUE(fs::is_empty(dir_ / "spill"));

  std::vector<int> seen(kRows + 1, 0);
  std::ifstream in(sink);
  std::string line;
  while (std::getline(in, line)) {
    ASSERT_EQ(field(line, "total_events"), std::to_string(kRows));
    const std::size_t id = std::stoul(field(line, "id"));
    ASSERT_GE(id, 1u);
    ASSERT_LE(id, kRows);
    ++seen[id];
  }
  std::size_t missing = 0, duplicated = 0;
  for (std::size_t id = 1; id <= kRows; ++id) {
    if (seen[id] == 0) ++missing;
    if (seen[id] > 1) ++duplicated;
  }
  EXPECT_EQ(missing, 0u);
  // Only the batch in flight at the kill may come again (max_buffer_size, 10,000).
  EXPECT_LE(duplicated, 10'000u);
}

}  // namespace
