#include "server/control_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "core/json_write.hpp"
#include "server/config.hpp"

namespace cppcdc::server {
namespace {

/// Removes `dirs` (innermost first) while they are empty; stops at the first that is not.
void remove_empty_dirs(const std::vector<std::filesystem::path>& dirs) {
  for (const auto& dir : dirs) {
    if (::rmdir(dir.c_str()) != 0) return;
  }
}

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxRequestBytes = 1 << 20;
constexpr std::size_t kMaxConnections = 16;
constexpr auto kRequestReadTimeout = std::chrono::seconds(10);
constexpr auto kAnswerWriteTimeout = std::chrono::seconds(10);
constexpr auto kPingTimeout = std::chrono::seconds(2);
// How long a listener that answers nothing is asked again before it counts as in use.
constexpr auto kDyingListenerGrace = std::chrono::seconds(3);

static_assert(sizeof(sockaddr_un{}.sun_path) == kMaxControlSocketPath + 1);

std::string errno_text(int err) { return std::strerror(err); }

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Fills `addr` for `path`; false when it does not fit.
bool make_address(const std::filesystem::path& path, sockaddr_un& addr) {
  const std::string& p = path.native();
  if (p.empty() || p.size() > kMaxControlSocketPath) return false;
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, p.data(), p.size());
  return true;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30));
}

// Waits for `events` on `fd` until `deadline`, in slices of at most `slice_ms` so that `stop`
// (when given) is noticed. Returns false on timeout, on `stop`, or on a poll error.
bool wait_fd(int fd, short events, Clock::time_point deadline,
             const std::atomic<bool>* stop = nullptr, int slice_ms = 200) {
  while (true) {
    if (stop != nullptr && stop->load()) return false;
    const int left = remaining_ms(deadline);
    if (left == 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, stop != nullptr ? std::min(left, slice_ms) : left);
    if (n < 0 && errno != EINTR) return false;
    if (n > 0) return true;
  }
}

// Writes all of `data`; false on error or timeout.
bool write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    if (!wait_fd(fd, POLLOUT, deadline)) return false;
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

enum class ReadLine { kLine, kEof, kTimeout, kTooLong, kError };

// Reads up to the first newline (not included in `out`), or to the end of the stream.
ReadLine read_line(int fd, std::string& out, Clock::time_point deadline,
                   const std::atomic<bool>* stop = nullptr) {
  char buffer[4096];
  while (true) {
    if (!wait_fd(fd, POLLIN, deadline, stop)) return ReadLine::kTimeout;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return ReadLine::kError;
    }
    if (n == 0) return out.empty() ? ReadLine::kEof : ReadLine::kLine;  // no final newline
    out.append(buffer, static_cast<std::size_t>(n));
    if (const auto nl = out.find('\n'); nl != std::string::npos) {
      out.resize(nl);
      return ReadLine::kLine;
    }
    if (out.size() > kMaxRequestBytes) return ReadLine::kTooLong;
  }
}

std::string error_answer(std::string_view message) {
  std::string out = "{\"ok\":false,\"error\":";
  detail::append_json_string(out, message);
  out += '}';
  return out;
}

// "pid 123, --config /etc/cdc.toml" from a ping answer; empty when it says neither.
std::string describe_peer(const std::string& answer) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(answer, ec);
  if (ec || !v.is_object()) return "";
  std::string out;
  if (const auto* pid = v.as_object().if_contains("pid"); pid && pid->is_int64()) {
    out = "pid " + std::to_string(pid->as_int64());
  }
  if (const auto* cfg = v.as_object().if_contains("config"); cfg && cfg->is_string()) {
    out += (out.empty() ? "" : ", ") + std::string("--config ") + std::string(cfg->as_string());
  }
  return out;
}

}  // namespace

ControlReply call_control_socket(const std::filesystem::path& path, std::string_view request,
                                 std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  if (!make_address(path, addr)) {
    return {ControlReply::Outcome::kFailed,
            "the control socket path " + path.string() + " is longer than the " +
                std::to_string(kMaxControlSocketPath) + " bytes a Unix socket path can have"};
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return {ControlReply::Outcome::kFailed, "cannot create a Unix socket: " + errno_text(errno)};
  }
  int rc = 0;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return {ControlReply::Outcome::kNotRunning,
              "cannot connect to " + path.string() + ": " + errno_text(err)};
    }
    std::string remedy;
    if (err == EACCES || err == EPERM) {
      // The socket is created mode 0600: only the user running cppcdc may steer it.
      remedy =
          "; run this command as the user that runs `cppcdc run` (the socket admits only "
          "its owner)";
    }
    return {ControlReply::Outcome::kFailed, "cannot connect to the control socket " +
                                                path.string() + ": " + errno_text(err) + remedy};
  }
  std::string line(request);
  line += '\n';
  if (!write_all(fd.get(), line, deadline)) {
    return {ControlReply::Outcome::kFailed,
            "cannot send the request to the control socket " + path.string()};
  }
  std::string answer;
  switch (read_line(fd.get(), answer, deadline)) {
    case ReadLine::kLine:
      return {ControlReply::Outcome::kAnswered, std::move(answer)};
    case ReadLine::kTimeout:
      return {ControlReply::Outcome::kFailed, "no answer on the control socket " + path.string() +
                                                  " within " + std::to_string(timeout.count()) +
                                                  " ms"};
    case ReadLine::kTooLong:
      return {ControlReply::Outcome::kFailed,
              "the answer on the control socket " + path.string() + " is too long"};
    case ReadLine::kEof:
    case ReadLine::kError:
      break;
  }
  return {ControlReply::Outcome::kFailed,
          "the control socket " + path.string() + " closed the connection without an answer"};
}

ControlServer::ControlServer(std::filesystem::path path, Handler handler)
    : path_(std::move(path)), handler_(std::move(handler)) {}

ControlServer::~ControlServer() {
  stop();
  // Here rather than in stop(): the server outlives the checkpoint whose files share the
  // directory, so by now those are gone too when nothing was saved.
  remove_empty_dirs(created_dirs_);
}

Result<std::unique_ptr<ControlServer>> ControlServer::start(std::filesystem::path path,
                                                            Handler handler) {
  const std::string where = "the control socket " + path.string();
  sockaddr_un addr{};
  if (!make_address(path, addr)) {
    return fail(Error::configuration(where + " is " + std::to_string(path.native().size()) +
                                     " bytes long, but a Unix socket path can have at most " +
                                     std::to_string(kMaxControlSocketPath) +
                                     "; set [runtime] control_socket to a shorter path"));
  }
  // Directories created here are removed again when the server stops (or fails to start) and
  // they are empty by then: a run that failed to start leaves no empty state directory.
  std::vector<std::filesystem::path> created_dirs;
  struct RemoveCreated {
    std::vector<std::filesystem::path>* dirs;
    ~RemoveCreated() {
      if (dirs != nullptr) remove_empty_dirs(*dirs);
    }
  } remove_created{&created_dirs};
  if (path.has_parent_path()) {
    std::error_code ec;
    for (auto dir = path.parent_path(); !dir.empty() && !std::filesystem::exists(dir, ec);
         dir = dir.parent_path()) {
      created_dirs.push_back(dir);
      if (dir == dir.parent_path()) break;
    }
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return fail(Error::configuration("cannot create the directory of " + where + ": " +
                                       ec.message() +
                                       "; create that directory writable for this user "
                                       "(it is the checkpoint's directory unless [runtime] "
                                       "control_socket is set), or set [runtime] "
                                       "control_socket to a path in a writable directory"));
    }
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return fail(
          Error::configuration(path.string() +
                               " exists and is not a socket, so it cannot be the control socket; "
                               "move it away or set [runtime] control_socket to another path"));
    }
    ControlReply reply = call_control_socket(path, R"({"command":"ping"})", kPingTimeout);
    // A process killed a moment ago may still hold the socket while it exits: it takes the
    // connection and closes it without an answer. Such a listener is asked again for a few
    // seconds before it counts as another process using the path (a restart right after a
    // SIGKILL would otherwise stop as a configuration error).
    const auto give_up = Clock::now() + kDyingListenerGrace;
    while (reply.outcome == ControlReply::Outcome::kFailed && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      reply = call_control_socket(path, R"({"command":"ping"})", kPingTimeout);
    }
    if (reply.outcome == ControlReply::Outcome::kAnswered) {
      const std::string peer = describe_peer(reply.text);
      return fail(Error::configuration(
          "another cppcdc" + (peer.empty() ? std::string() : " (" + peer + ")") +
          " is running and answers on " + where +
          "; stop it before starting this one. Pipelines that run side by side each need "
          "a configuration of their own: their own [runtime] control_socket, source "
          "(replication slot) and checkpoint"));
    }
    if (reply.outcome == ControlReply::Outcome::kFailed) {
      return fail(
          Error::configuration("a process may be using " + where + " (" + reply.text +
                               "); stop it, or set [runtime] control_socket to another path"));
    }
    // Nobody listens: a file left behind by a process that was killed.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return fail(
          Error::configuration("cannot remove the stale " + where + ": " + errno_text(errno)));
    }
    spdlog::info("replaced the stale control socket {} (no process was listening on it)",
                 path.string());
  }

  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0)
    return fail(Error::terminal("cannot create a Unix socket: " + errno_text(errno)));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    return fail(Error::configuration(
        "cannot bind " + where + ": " + errno_text(err) +
        (err == EADDRINUSE ? "; another process has just taken it: stop it, or set "
                             "[runtime] control_socket to another path"
                           : "; set [runtime] control_socket to a path in a writable directory")));
  }
  // Only the owner (and root) may steer the pipeline.
  ::chmod(path.c_str(), 0600);
  if (::listen(fd.get(), static_cast<int>(kMaxConnections)) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return fail(Error::terminal("cannot listen on " + where + ": " + errno_text(err)));
  }
  auto server = std::unique_ptr<ControlServer>(new ControlServer(path, std::move(handler)));
  if (::stat(path.c_str(), &st) == 0) {
    server->dev_ = st.st_dev;
    server->ino_ = st.st_ino;
  }
  if (::pipe2(server->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::unlink(path.c_str());
    return fail(Error::terminal("cannot create a pipe: " + errno_text(errno)));
  }
  server->listen_fd_ = fd.release();
  server->created_dirs_ = std::move(created_dirs);
  remove_created.dirs = nullptr;

  // The threads inherit this mask: SIGINT and SIGTERM must reach the main thread, whose
  // blocking calls they interrupt.
  sigset_t blocked;
  sigset_t previous;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  ControlServer* raw = server.get();
  server->acceptor_ = std::thread([raw] { raw->accept_loop(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return server;
}

void ControlServer::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fds_[1] >= 0) {
    const char byte = 0;
    [[maybe_unused]] const auto n = ::write(wake_fds_[1], &byte, 1);
  }
  if (acceptor_.joinable()) acceptor_.join();
  reap(true);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  for (int& fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // Remove the file only while it is still ours: a successor may have replaced it.
  struct stat st {};
  if (ino_ != 0 && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

void ControlServer::reap(bool all) {
  std::list<Worker> finished;
  {
    std::lock_guard lock(workers_mutex_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      auto next = std::next(it);
      if (all || it->done->load()) finished.splice(finished.end(), workers_, it);
      it = next;
    }
  }
  for (auto& w : finished) {
    if (w.thread.joinable()) w.thread.join();
  }
}

void ControlServer::accept_loop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, 1000);
    reap(false);
    if (stopping_.load()) break;
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(workers_mutex_);
    if (workers_.size() >= kMaxConnections) {
      write_all(fd, error_answer("too many control connections at once; try again") + "\n",
                Clock::now() + std::chrono::milliseconds(200));
      ::close(fd);
      continue;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back(Worker{std::thread([this, fd, done] {
                                serve(fd);
                                done->store(true);
                              }),
                              done});
  }
}

void ControlServer::serve(int raw_fd) {
  Fd fd(raw_fd);
  std::string request;
  const ReadLine got = read_line(fd.get(), request, Clock::now() + kRequestReadTimeout, &stopping_);
  std::string answer;
  switch (got) {
    case ReadLine::kLine:
      try {
        answer = handler_(request, stopping_);
      } catch (const std::exception& e) {
        answer = error_answer(std::string("internal error: ") + e.what());
      }
      break;
    case ReadLine::kTooLong:
      answer =
          error_answer("the request is longer than " + std::to_string(kMaxRequestBytes) + " bytes");
      break;
    case ReadLine::kTimeout:
      if (stopping_.load()) {
        answer = error_answer("cppcdc is shutting down");
        break;
      }
      return;  // the client sent no complete line in time
    case ReadLine::kEof:
    case ReadLine::kError:
      return;
  }
  answer += '\n';
  write_all(fd.get(), answer, Clock::now() + kAnswerWriteTimeout);
}

}  // namespace cppcdc::server
