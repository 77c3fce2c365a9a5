// SIGTERM ends `cppcdc run` promptly while a connection attempt hangs: an address whose TCP
// connect never completes (the test's own listening socket with a full accept queue, so the
// kernel drops further SYNs) as the PostgreSQL source, as the MariaDB source, and as the Kafka
// sink's brokers. libpq and Connector/C blocked for their connect timeout (10 s by default)
// without looking at the stop request, and the Kafka sink gave its first contact the grace a
// batch in flight gets (3 s and more); a stop then took 4.6 to 10 s.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "integration/tcp_proxy.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

/// A loopback port whose connects hang: a listener with a backlog of 0 that never accepts,
/// whose accept queue the test fills with connections of its own.
class Blackhole {
 public:
  Blackhole() {
    sockaddr_in addr{};
    listener_ = it::listen_on_loopback(0, addr);
    if (listener_ < 0) return;
    port_ = ntohs(addr.sin_port);
    for (int i = 0; i < 4; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      ::fcntl(fd, F_SETFL, O_NONBLOCK);
      (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers_.push_back(fd);
    }
  }
  ~Blackhole() {
    for (const int fd : fillers_) ::close(fd);
    if (listener_ >= 0) ::close(listener_);
  }
  Blackhole(const Blackhole&) = delete;
  Blackhole& operator=(const Blackhole&) = delete;

  int port() const { return port_; }

  /// Sockets of this host in SYN_SENT towards the port (/proc/net/tcp): connects that hang.
  int hanging_connects() const {
    std::ifstream in("/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // header
    char remote[32];
    std::snprintf(remote, sizeof remote, ":%04X", port_);
    int n = 0;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, rem, state;
      fields >> slot >> local >> rem >> state;
      if (state == "02" && rem.ends_with(remote)) ++n;
    }
    return n;
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-kstop-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Starts `cppcdc run` on dir/cdc.toml, waits until it hangs in a connect to `hole` (one more
/// SYN_SENT socket towards it than the fillers), sends SIGTERM and expects it to end within
/// 2 s, with exit status 0 and the stop in its log.
void expect_prompt_stop(const fs::path& dir, const Blackhole& hole) {
  const int before = hole.hanging_connects();
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, "", "", 0);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  ASSERT_TRUE(it::wait_until([&] { return hole.hanging_connects() > before; }, 60s, 20ms))
      << it::log_tail(log);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WNOHANG), 0) << "cppcdc ended\n" << it::log_tail(log);
  const auto t0 = std::chrono::steady_clock::now();
  status = it::stop_cppcdc_process(child, SIGTERM);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 2s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms\n"
                      << it::log_tail(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << it::log_tail(log);
  EXPECT_NE(file_text(log).find("cppcdc stopped by signal"), std::string::npos)
      << it::log_tail(log);
}

std::string kafka_sink(const std::string& bootstrap) {
  return "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" + bootstrap +
         "\"\ncreate_topics = true\ntopic_replication_factor = 1\n\n";
}

}  // namespace

TEST(KafkaCliConnectStop, SigtermEndsARunWhosePostgresConnectHangs) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  Blackhole hole;
  ASSERT_GT(hole.port(), 0);
  const fs::path dir = fresh_dir("pg");
  std::ofstream(dir / "cdc.toml")
      << "[source]\ntype = \"postgres\"\ndsn = \"host=127.0.0.1 port=" << hole.port()
      << " dbname=postgres user=postgres\"\nslot_name = \"kstop_pg\"\ntables = [\"public.t\"]\n\n"
      << kafka_sink(bootstrap) << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
      << (dir / "state").string() << "\"\n";
  expect_prompt_stop(dir, hole);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(KafkaCliConnectStop, SigtermEndsARunWhoseMariaDbConnectHangs) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  Blackhole hole;
  ASSERT_GT(hole.port(), 0);
  const fs::path dir = fresh_dir("maria");
  std::ofstream(dir / "cdc.toml")
      << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = " << hole.port()
      << "\nuser = \"root\"\nserver_id = 7311\nsource_id = \"kstop_maria\"\n"
      << "tables = [\"shop.t\"]\n\n"
      << kafka_sink(bootstrap) << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
      << (dir / "state").string() << "\"\n";
  expect_prompt_stop(dir, hole);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The source is reachable; the sink's brokers are not: the start hangs at the sink's first
// contact, before the source reads anything.
TEST(KafkaCliConnectStop, SigtermEndsARunWhoseKafkaBrokersDoNotAnswer) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  Blackhole hole;
  ASSERT_GT(hole.port(), 0);
  const std::string db = it::test_database("kstop_kafka");
  it::fresh_database(db);
  it::PgSession(it::dsn_for(db)).query("create table t (id int primary key)");
  const fs::path dir = fresh_dir("kafka");
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db)
                                  << "\"\nslot_name = \"" << db << "\"\npublication_name = \"" << db
                                  << "_pub\"\ntables = [\"public.t\"]\n\n"
                                  << kafka_sink("127.0.0.1:" + std::to_string(hole.port()))
                                  << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
                                  << (dir / "state").string() << "\"\n";
  expect_prompt_stop(dir, hole);
  EXPECT_NE(file_text(dir / "cppcdc.log").find("opening the kafka sink"), std::string::npos)
      << it::log_tail(dir / "cppcdc.log");
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
