// `cppcdc run` and `cppcdc check-config` facing bad input: every case ends with one clear
// line naming the input and the remedy, a non-zero exit code, and no checkpoint written.

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using cppcdc::it::CliOutcome;
using cppcdc::it::run_cli;

namespace {

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cppcdc-it-cli-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_config(const std::string& dsn, const std::string& tables = "\"public.t\"",
                        const std::string& extra = "") {
    const fs::path p = dir_ / "cdc.toml";
    std::ofstream(p) << "[source]\ntype = \"postgres\"\ndsn = \"" << dsn << "\"\n"
                     << "slot_name = \"cli_slot\"\npublication_name = \"cli_pub\"\n"
                     << "tables = [" << tables << "]\n\n[sink]\ntype = \"file\"\npath = \""
                     << (dir_ / "events.jsonl").string() << "\"\n\n[state.offset]\n"
                     << "backend = \"local_fs\"\ndir = \"" << (dir_ / "state").string() << "\"\n"
                     << "\n[runtime]\nconnection_retry_max_retries = 1\n"
                     << "connection_retry_initial_delay_ms = 100\n" << extra;
    return p;
  }
  bool checkpoint_written() const {
    if (!fs::exists(dir_ / "state")) return false;
    for (const auto& e : fs::directory_iterator(dir_ / "state")) {
      if (e.path().extension() == ".ckpt") return true;
    }
    return false;
  }
  static int error_lines(const std::string& out) {
    int n = 0;
    std::size_t pos = 0;
    while ((pos = out.find(" error ", pos)) != std::string::npos) {
      ++n;
      ++pos;
    }
    return n;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(Cli, CheckConfigNamesTheFileAndTheKey) {
  const fs::path p = dir_ / "bad.toml";
  std::ofstream(p) << "[source]\ntype = \"postgres\"\ndsn = \"host=x\"\ntables = [\"a.b\"]\n"
                   << "create_slot = \"yes\"\n[sink]\ntype = \"file\"\n";
  auto o = run_cli({"check-config", "--config", p.string()});
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("bad.toml"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("create_slot"), std::string::npos) << o.output;

  std::ofstream(p) << "[source]\ntype = \"postgres\"\ndsn = \"host=x password=hunter2\"\n"
                   << "tables = [\"a.b\"]\nslot_nmae = \"x\"\n[sink]\ntype = \"stdout\"\n"
                   << "[state.offset]\nbackend = \"memory\"\n";
  o = run_cli({"check-config", "--config", p.string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("slot_nmae"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("hunter2"), std::string::npos) << o.output;
}

TEST_F(Cli, CheckConfigAcceptsAGoodFileWithoutShowingThePassword) {
  auto o = run_cli({"check-config", "--config",
                    write_config("host=127.0.0.1 dbname=app user=cdc password=s3cret").string()});
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(o.output.find("s3cret"), std::string::npos) << o.output;
}

TEST_F(Cli, MissingConfigFileIsNamed) {
  auto o = run_cli({"run", "--config", (dir_ / "nope.toml").string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("nope.toml"), std::string::npos) << o.output;
}

TEST_F(Cli, UnreachableDatabaseFailsAfterRetriesWithoutCheckpoint) {
  auto o = run_cli({"run", "--config",
                    write_config("host=127.0.0.1 port=1 dbname=postgres user=postgres").string()});
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.output.find("127.0.0.1:1"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("server is running"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_FALSE(checkpoint_written());
  // A start that failed leaves nothing it created: no empty sink file, no empty state directory
  // (the control socket's and the checkpoint's).
  EXPECT_FALSE(fs::exists(dir_ / "events.jsonl"));
  EXPECT_FALSE(fs::exists(dir_ / "state"));
}

TEST_F(Cli, MissingTableIsTerminalNamesTheTableAndWritesNoCheckpoint) {
  const std::string db = it::test_database("cli");
  it::fresh_database(db);
  it::PgSession(it::dsn_for(db)).query("create table t (id int primary key)");
  auto o = run_cli({"run", "--config", write_config(it::dsn_for(db), "\"public.t\", \"public.missing\"").string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("public.missing"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("[source] tables"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_FALSE(checkpoint_written());
  EXPECT_FALSE(fs::exists(dir_ / "events.jsonl"));
  EXPECT_FALSE(fs::exists(dir_ / "state"));
  it::drop_slots(db);
}

TEST_F(Cli, WrongPasswordIsTerminalAndNeverShowsThePassword) {
  it::PgSession admin(it::admin_dsn());
  admin.try_exec("create role cppcdc_pw login replication password 'right-one'");
  auto o = run_cli({"run", "--config",
                    write_config(it::admin_dsn() + " user=cppcdc_pw password=wrong-one").string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("password authentication failed"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("wrong-one"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_FALSE(checkpoint_written());
}

TEST_F(Cli, MissingDatabaseIsTerminal) {
  auto o = run_cli({"run", "--config", write_config(it::admin_dsn() + " dbname=no_such_db").string()});
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("no_such_db"), std::string::npos) << o.output;
  EXPECT_FALSE(checkpoint_written());
}

TEST_F(Cli, WalLevelOtherThanLogicalSaysHowToFixIt) {
  const char* port_env = std::getenv("CPPCDC_TEST_PG_PORT");
  const int port = (port_env ? std::atoi(port_env) : 25440) + 7;
  const std::string pgdir = "/tmp/cppcdc-it-replica-" + std::to_string(port);
  const std::string script = std::string(CPPCDC_SOURCE_DIR) + "/scripts/pg.sh";
  ASSERT_EQ(std::system(("PG_WAL_LEVEL=replica " + script + " start " + pgdir + " " +
                         std::to_string(port) + " >/dev/null 2>&1").c_str()), 0);
  it::PgSession(
      "host=127.0.0.1 port=" + std::to_string(port) + " dbname=postgres user=postgres")
      .query("create table if not exists t (id int primary key)");
  auto o = run_cli({"run", "--config",
                    write_config("host=127.0.0.1 port=" + std::to_string(port) +
                                 " dbname=postgres user=postgres").string()});
  std::system((script + " stop " + pgdir + " --purge >/dev/null 2>&1").c_str());
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("wal_level is 'replica'"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("wal_level = logical"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_FALSE(checkpoint_written());
}
