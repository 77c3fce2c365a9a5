// The control socket: one answer line per request line, a stale file replaced, a live one
// refused, the file removed on stop, and a slow request that blocks neither other clients
// nor the stop.

#include "server/control_socket.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <atomic>

#include "server/config.hpp"
#include "wait_until.hpp"

namespace cppcdc::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

class ControlSocket : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("cppcdc-ctl-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "ctl.sock";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ControlServer::Handler echo() {
    return [](std::string_view request, const std::atomic<bool>&) {
      if (request == R"({"command":"ping"})") {
        return std::string(R"({"ok":true,"pid":4242,"config":"/etc/cdc.toml"})");
      }
      return "echo:" + std::string(request);
    };
  }

  // Leaves a socket file that nobody listens on (what a killed process leaves).
  void make_stale_socket() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
    ASSERT_TRUE(fs::is_socket(path_));
  }

  fs::path dir_;
  fs::path path_;
};

// A failed start leaves no empty state directory: directories the server created for its
// socket go when it does, unless something else was put there meanwhile.
TEST_F(ControlSocket, DirectoriesCreatedForTheSocketAreRemovedWhenEmpty) {
  const fs::path nested = dir_ / "state" / "pipeline" / "ctl.sock";
  {
    auto server = ControlServer::start(nested, echo());
    ASSERT_TRUE(server) << server.error().report();
    EXPECT_TRUE(fs::is_socket(nested));
  }
  EXPECT_FALSE(fs::exists(dir_ / "state"));
  {
    auto server = ControlServer::start(nested, echo());
    ASSERT_TRUE(server) << server.error().report();
    std::ofstream(dir_ / "state" / "pipeline" / "checkpoint.ckpt") << "kept";
  }
  EXPECT_TRUE(fs::exists(dir_ / "state" / "pipeline" / "checkpoint.ckpt"));
  EXPECT_FALSE(fs::exists(nested));
}

TEST_F(ControlSocket, AnswersEachRequestLineAndRemovesItsFileOnStop) {
  auto server = ControlServer::start(path_, echo());
  ASSERT_TRUE(server) << server.error().report();
  EXPECT_TRUE(fs::is_socket(path_));
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  for (int i = 0; i < 3; ++i) {
    auto reply = call_control_socket(path_, "hello " + std::to_string(i), 5s);
    ASSERT_EQ(reply.outcome, ControlReply::Outcome::kAnswered) << reply.text;
    EXPECT_EQ(reply.text, "echo:hello " + std::to_string(i));
  }
  (*server)->stop();
  EXPECT_FALSE(fs::exists(path_));
  auto after = call_control_socket(path_, "x", 1s);
  EXPECT_EQ(after.outcome, ControlReply::Outcome::kNotRunning) << after.text;
}

TEST_F(ControlSocket, NobodyListeningIsNotRunning) {
  auto missing = call_control_socket(path_, "x", 1s);
  EXPECT_EQ(missing.outcome, ControlReply::Outcome::kNotRunning);
  EXPECT_CONTAINS(missing.text, path_.string());
  make_stale_socket();
  auto stale = call_control_socket(path_, "x", 1s);
  EXPECT_EQ(stale.outcome, ControlReply::Outcome::kNotRunning) << stale.text;
}

TEST_F(ControlSocket, AStaleSocketFileIsReplaced) {
  make_stale_socket();
  auto server = ControlServer::start(path_, echo());
  ASSERT_TRUE(server) << server.error().report();
  auto reply = call_control_socket(path_, "again", 5s);
  ASSERT_EQ(reply.outcome, ControlReply::Outcome::kAnswered) << reply.text;
  EXPECT_EQ(reply.text, "echo:again");
}

// A process killed a moment ago still holds its listening socket while it exits: it takes a
// connection and closes it without an answer, then goes away. A start in that window waits for
// it instead of stopping as if another process used the path; one that keeps doing it past
// the grace period is refused.
TEST_F(ControlSocket, AListenerThatClosesWithoutAnAnswerIsWaitedOutWhileItGoesAway) {
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 16), 0);
  std::atomic<bool> dying{true};
  std::thread dying_process([&] {
    const auto until = std::chrono::steady_clock::now() + 600ms;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 20) == 1) {
        const int c = ::accept(listener, nullptr, nullptr);
        if (c >= 0) ::close(c);  // no answer
      }
    }
    ::close(listener);  // the process is gone: its socket file stays behind
    dying = false;
  });
  auto server = ControlServer::start(path_, echo());
  dying_process.join();
  ASSERT_TRUE(server) << server.error().report();
  EXPECT_FALSE(dying.load());
  auto reply = call_control_socket(path_, "after", 5s);
  ASSERT_EQ(reply.outcome, ControlReply::Outcome::kAnswered) << reply.text;
  EXPECT_EQ(reply.text, "echo:after");
}

TEST_F(ControlSocket, ALiveServerOnThePathIsNotTakenOver) {
  auto first = ControlServer::start(path_, echo());
  ASSERT_TRUE(first) << first.error().report();
  auto second = ControlServer::start(path_, echo());
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind(), ErrorKind::kConfiguration);
  const std::string report = second.error().report();
  EXPECT_CONTAINS(report, "another cppcdc (pid 4242, --config /etc/cdc.toml) is running");
  EXPECT_CONTAINS(report, path_.string());
  EXPECT_CONTAINS(report, "[runtime] control_socket");
  // The first one still owns and serves the file.
  auto reply = call_control_socket(path_, "still there", 5s);
  ASSERT_EQ(reply.outcome, ControlReply::Outcome::kAnswered) << reply.text;
  EXPECT_EQ(reply.text, "echo:still there");
}

TEST_F(ControlSocket, AFileThatIsNotASocketIsLeftAlone) {
  std::ofstream(path_) << "precious";
  auto server = ControlServer::start(path_, echo());
  ASSERT_FALSE(server);
  EXPECT_CONTAINS(server.error().report(), path_.string() + " exists and is not a socket");
  std::ifstream in(path_);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(ControlSocket, APathTooLongForAUnixSocketIsAClearError) {
  const fs::path long_path = dir_ / std::string(kMaxControlSocketPath, 'x');
  auto server = ControlServer::start(long_path, echo());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(server.error().report(), "a Unix socket path can have at most 107");
  EXPECT_CONTAINS(server.error().report(), "[runtime] control_socket");
  auto reply = call_control_socket(long_path, "x", 1s);
  EXPECT_EQ(reply.outcome, ControlReply::Outcome::kFailed);
  EXPECT_CONTAINS(reply.text, "longer than the 107 bytes");
}

TEST_F(ControlSocket, MissingParentDirectoriesAreCreated) {
  const fs::path nested = dir_ / "a" / "b" / "ctl.sock";
  auto server = ControlServer::start(nested, echo());
  ASSERT_TRUE(server) << server.error().report();
  EXPECT_TRUE(fs::is_socket(nested));
}

TEST_F(ControlSocket, ASlowRequestBlocksNeitherOtherClientsNorTheStop) {
  std::atomic<bool> slow_started{false};
  auto server =
      ControlServer::start(path_, [&](std::string_view request, const std::atomic<bool>& stopping) {
        if (request == "slow") {
          slow_started = true;
          // Held until the server stops (a stop that does not tell it shows as another reply).
          const bool told = test::wait_until([&] { return stopping.load(); }, 60s, 10ms);
          return std::string(told ? "gave up" : "never told to stop");
        }
        return std::string("fast");
      });
  ASSERT_TRUE(server) << server.error().report();
  ControlReply slow_reply;
  std::thread slow([&] { slow_reply = call_control_socket(path_, "slow", 20s); });
  EXPECT_TRUE(test::wait_until([&] { return slow_started.load(); }, 20s, 5ms));
  // Answered while the slow request is still held (it ends only with the stop).
  auto fast = call_control_socket(path_, "other", 5s);
  EXPECT_EQ(fast.outcome, ControlReply::Outcome::kAnswered);
  EXPECT_EQ(fast.text, "fast");
  (*server)->stop();
  slow.join();
  EXPECT_EQ(slow_reply.outcome, ControlReply::Outcome::kAnswered);
  EXPECT_EQ(slow_reply.text, "gave up");
}

TEST_F(ControlSocket, ARequestWithoutAFinalNewlineIsStillAnswered) {
  auto server = ControlServer::start(path_, echo());
  ASSERT_TRUE(server) << server.error().report();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[256];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  EXPECT_EQ(answer, "echo:abc\n");
}

}  // namespace
}  // namespace cppcdc::server
