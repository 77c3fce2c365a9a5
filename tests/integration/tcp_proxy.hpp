#pragma once
// A TCP forwarder for network-fault tests. It listens on 127.0.0.1 (a port the kernel picks)
// and forwards every connection it accepts to 127.0.0.1:<target>, from one poll() thread.
// Two faults:
//   cut()            closes every current connection abruptly on both sides (SO_LINGER 0, so
//                    the peers see a reset, as when a NAT or firewall drops its state)
//   set_blackhole()  keeps every connection open but moves no byte in either direction, old
//                    connections and new ones alike (new ones are accepted and connected to
//                    the target, then stay silent), as when packets are silently dropped.
//                    Nobody sees a FIN or a reset; when it ends, whatever queued up is
//                    delivered, like TCP retransmitting after a route comes back.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cppcdc::it {

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks, with `backlog`; `addr`
/// gets the address it is bound to. -1 when bind or listen failed (errno says why).
inline int listen_on_loopback(int backlog, sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  addr = sockaddr_in{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

class TcpProxy {
 public:
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    sockaddr_in addr{};
    listen_fd_ = listen_on_loopback(64, addr);
    if (listen_fd_ < 0) {
      throw std::runtime_error(std::string("tcp proxy: bind/listen failed: ") +
                               std::strerror(errno));
    }
    port_ = ntohs(addr.sin_port);
    set_nonblocking(listen_fd_);
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("tcp proxy: pipe failed: ") + std::strerror(errno));
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~TcpProxy() {
    stop_.store(true);
    wake();
    thread_.join();
    for (auto& c : conns_) close_pair(c, false);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  /// The port to connect to instead of the target's.
  int port() const { return port_; }

  /// Resets every current connection (both sides); returns how many there were.
  int cut() {
    std::unique_lock lock(mutex_);
    const std::uint64_t ticket = ++cuts_requested_;
    wake();
    done_.wait(lock, [&] { return cuts_done_ >= ticket; });
    return last_cut_count_;
  }

  /// While on, no byte moves on any connection (see the top of this file). Returns once the
  /// proxy thread has begun a pass that sees the new setting: a pass that was moving bytes
  /// when it was called has ended by then.
  void set_blackhole(bool on) {
    std::unique_lock lock(mutex_);
    blackhole_.store(on);
    const std::uint64_t ticket = ++blackhole_requested_;
    wake();
    done_.wait(lock, [&] { return blackhole_seen_ >= ticket; });
  }

  /// Connections accepted so far.
  int accepted() const { return accepted_.load(); }
  /// Bytes forwarded so far, both directions.
  std::uint64_t bytes_forwarded() const { return bytes_.load(); }
  /// When bytes were last forwarded (either direction).
  std::chrono::steady_clock::time_point last_forwarded() const {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_forward_.load()));
  }

 private:
  struct Direction {
    std::vector<char> buf;  // read from `from`, not yet written to `to`
    std::size_t off = 0;
    bool eof = false;   // `from` reached EOF
    bool shut = false;  // shutdown(to, SHUT_WR) done after the EOF was forwarded
  };
  struct Conn {
    int client = -1;
    int server = -1;
    Direction up;    // client -> server
    Direction down;  // server -> client
    bool dead = false;
  };

  static void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

  void wake() {
    const char b = 1;
    [[maybe_unused]] auto r = ::write(wake_[1], &b, 1);
  }

  static void close_pair(Conn& c, bool reset) {
    for (int fd : {c.client, c.server}) {
      if (fd < 0) continue;
      if (reset) {
        const linger l{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      ::close(fd);
    }
    c.client = c.server = -1;
    c.dead = true;
  }

  void accept_all() {
    for (;;) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      ++accepted_;
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<std::uint16_t>(target_port_));
      // Blocking connect to the loopback target: immediate, refused at once if it is down.
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        Conn failed{client, server, {}, {}, false};
        close_pair(failed, true);  // the client sees a reset, as from a refused port
        continue;
      }
      const int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      set_nonblocking(client);
      set_nonblocking(server);
      conns_.push_back(Conn{client, server, {}, {}, false});
    }
  }

  // Moves bytes one way as far as the sockets allow. Returns false on an error.
  bool pump(int from, int to, Direction& d, short from_revents, short to_revents) {
    if (d.off == d.buf.size() && !d.eof && (from_revents & (POLLIN | POLLHUP | POLLERR))) {
      d.buf.resize(65536);
      const ssize_t n = ::recv(from, d.buf.data(), d.buf.size(), 0);
      if (n > 0) {
        d.buf.resize(static_cast<std::size_t>(n));
        d.off = 0;
      } else {
        d.buf.clear();
        d.off = 0;
        if (n == 0) {
          d.eof = true;
        } else if (errno != EAGAIN && errno != EINTR) {
          return false;
        }
      }
    }
    if (d.off < d.buf.size() && (to_revents & POLLOUT)) {
      const ssize_t n = ::send(to, d.buf.data() + d.off, d.buf.size() - d.off, MSG_NOSIGNAL);
      if (n > 0) {
        d.off += static_cast<std::size_t>(n);
        bytes_ += static_cast<std::uint64_t>(n);
        last_forward_.store(std::chrono::steady_clock::now().time_since_epoch().count());
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    if (d.eof && d.off == d.buf.size() && !d.shut) {
      ::shutdown(to, SHUT_WR);
      d.shut = true;
    }
    return true;
  }

  void loop() {
    while (!stop_.load()) {
      bool blackhole = false;
      {
        std::lock_guard lock(mutex_);
        blackhole = blackhole_.load();
        if (blackhole_seen_ < blackhole_requested_) {
          blackhole_seen_ = blackhole_requested_;
          done_.notify_all();
        }
      }
      std::vector<pollfd> fds;
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      std::vector<Conn*> polled;
      if (!blackhole) {
        for (auto& c : conns_) {
          short ce = 0, se = 0;
          if (c.up.off == c.up.buf.size() && !c.up.eof) ce |= POLLIN;
          if (c.down.off < c.down.buf.size()) ce |= POLLOUT;
          if (c.down.off == c.down.buf.size() && !c.down.eof) se |= POLLIN;
          if (c.up.off < c.up.buf.size()) se |= POLLOUT;
          fds.push_back({c.client, ce, 0});
          fds.push_back({c.server, se, 0});
          polled.push_back(&c);
        }
      }
      ::poll(fds.data(), fds.size(), 200);
      if (fds[0].revents & POLLIN) {
        char drain[256];
        while (::read(wake_[0], drain, sizeof drain) > 0) {
        }
      }
      {
        std::lock_guard lock(mutex_);
        if (cuts_requested_ > cuts_done_) {
          last_cut_count_ = static_cast<int>(conns_.size());
          for (auto& c : conns_) close_pair(c, true);
          conns_.clear();
          cuts_done_ = cuts_requested_;
          done_.notify_all();
          continue;
        }
      }
      if (fds[1].revents & POLLIN) accept_all();
      if (blackhole_.load()) continue;
      for (std::size_t i = 0; i < polled.size(); ++i) {
        Conn& c = *polled[i];
        const short cr = fds[2 + 2 * i].revents;
        const short sr = fds[3 + 2 * i].revents;
        // The other side's POLLOUT may not have been asked for this round: try writing anyway
        // (a non-blocking send just says EAGAIN).
        if (!pump(c.client, c.server, c.up, cr, static_cast<short>(sr | POLLOUT)) ||
            !pump(c.server, c.client, c.down, sr, static_cast<short>(cr | POLLOUT))) {
          close_pair(c, true);  // one side reset: reset the other too
        } else if (c.up.shut && c.down.shut) {
          close_pair(c, false);
        }
      }
      conns_.remove_if([](const Conn& c) { return c.dead; });
    }
  }

  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> blackhole_{false};
  std::atomic<int> accepted_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::chrono::steady_clock::rep> last_forward_{0};
  std::list<Conn> conns_;  // proxy thread only (and the destructor after the join)

  std::mutex mutex_;
  std::condition_variable done_;
  std::uint64_t cuts_requested_ = 0;
  std::uint64_t cuts_done_ = 0;
  std::uint64_t blackhole_requested_ = 0;  // set_blackhole() calls
  std::uint64_t blackhole_seen_ = 0;       // of them, seen at the start of a pass
  int last_cut_count_ = 0;
};

}  // namespace cppcdc::it
