#pragma once
// The control socket of `cppcdc run`: a Unix domain stream socket on which the running server
// takes one request per connection (one line of JSON) and answers with one line of JSON.
// `cppcdc snapshot ...` is its client.
//
// ControlServer owns the socket file: it refuses to take over a path on which another process
// answers, replaces a stale file that nobody listens on, and removes the file when it stops
// (only if the file is still the one it bound). Connections are accepted by a thread of its
// own and each is served by a short-lived thread, so a slow request never blocks the poll loop
// or another client. Those threads block SIGINT/SIGTERM, which stay with the main thread.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cppcdc/result.hpp"

namespace cppcdc::server {

/// What a client got from the control socket.
struct ControlReply {
  enum class Outcome {
    kAnswered,    ///< `text` is the server's answer line (without the newline)
    kNotRunning,  ///< no socket file, or nobody accepts on it (a stale file)
    kFailed,      ///< anything else: `text` says what (permissions, timeout, a short answer)
  };
  Outcome outcome = Outcome::kFailed;
  std::string text;
};

/// Connects to `path`, sends `request` (one line; a newline is added) and reads one answer line,
/// waiting at most `timeout` for the whole exchange.
ControlReply call_control_socket(const std::filesystem::path& path, std::string_view request,
                                 std::chrono::milliseconds timeout);

class ControlServer {
 public:
  /// Turns one request line into one answer line. `stopping` becomes true when the server
  /// stops; a handler that waits should give up then.
  using Handler =
      std::function<std::string(std::string_view request, const std::atomic<bool>& stopping)>;

  /// Binds `path` (mode 0600, parent directories created) and starts accepting. Error kind
  /// configuration when the path is too long for a Unix socket, is something other than a
  /// socket, or another process answers on it (the message names the path and the remedy).
  static Result<std::unique_ptr<ControlServer>> start(std::filesystem::path path, Handler handler);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  /// Stops accepting, lets the connections in progress finish (their handlers see `stopping`),
  /// and removes the socket file. Idempotent.
  void stop();
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  ControlServer(std::filesystem::path path, Handler handler);
  void accept_loop();
  void serve(int fd);
  void reap(bool all);

  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  std::filesystem::path path_;
  Handler handler_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // a pipe: writing to it wakes the accept thread
  dev_t dev_ = 0;               // identity of the socket file bound, to remove only our own
  ino_t ino_ = 0;
  std::vector<std::filesystem::path> created_dirs_;  // by start(); removed at destruction if empty
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex workers_mutex_;
  std::list<Worker> workers_;
};

}  // namespace cppcdc::server
