// Watches a running cppcdc from the outside, for bench/run.sh.
//
//   cppcdc_bench_sinkwatch checkpoint --file CKPT --events N [--stall S]
//     Waits (inotify on CKPT's directory) until the checkpoint file records
//     committed_events >= N, i.e. N events were written, fsynced, acknowledged and
//     checkpointed. Prints one JSON line: the checkpoint file's mtime then (and when the
//     first batch was checkpointed), and the watcher's own clock when it noticed.
//
//   cppcdc_bench_sinkwatch lines --file SINK --lines N --times OUT [--stall S]
//     Follows SINK (inotify IN_MODIFY, reading only the new bytes) and writes "line_no ns"
//     to OUT for every complete line, ns being CLOCK_REALTIME when the line was seen. Stops
//     after N lines. Prints one JSON line.
//
// Both give up (exit 1) when nothing moves for S seconds (default 120).

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

std::int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// committed_events from a checkpoint file, or -1 when unreadable (e.g. not written yet).
long long committed_events(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* key = std::strstr(buf, "\"committed_events\":");
  if (key == nullptr) return -1;
  return std::strtoll(key + std::strlen("\"committed_events\":"), nullptr, 10);
}

// Drains pending inotify events; returns false on a read error other than EAGAIN.
bool drain(int ifd) {
  alignas(inotify_event) char buf[8192];
  for (;;) {
    const ssize_t n = ::read(ifd, buf, sizeof buf);
    if (n > 0) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: cppcdc_bench_sinkwatch checkpoint --file CKPT --events N [--stall S]\n"
               "       cppcdc_bench_sinkwatch lines --file SINK --lines N --times OUT "
               "[--stall S]\n");
  return 2;
}

int watch_checkpoint(const std::string& path, long long want, double stall_s) {
  const int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ifd < 0 || inotify_add_watch(ifd, dir_of(path).c_str(),
                                   IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) < 0) {
    std::fprintf(stderr, "inotify on %s: %s\n", dir_of(path).c_str(), std::strerror(errno));
    return 1;
  }
  long long seen = committed_events(path);
  std::int64_t last_progress = realtime_ns();
  std::int64_t first_ns = seen > 0 ? mtime_ns(path) : 0;  // first batch checkpointed
  while (seen < want) {
    pollfd p{ifd, POLLIN, 0};
    ::poll(&p, 1, 20);
    drain(ifd);
    const long long now_seen = committed_events(path);
    if (now_seen > seen) {
      if (seen <= 0) first_ns = mtime_ns(path);
      seen = now_seen;
      last_progress = realtime_ns();
    } else if (static_cast<double>(realtime_ns() - last_progress) > stall_s * 1e9) {
      std::printf("{\"ok\":false,\"committed_events\":%lld,\"wanted\":%lld}\n", seen, want);
      return 1;
    }
  }
  const std::int64_t done = realtime_ns();
  std::printf("{\"ok\":true,\"committed_events\":%lld,\"checkpoint_mtime_ns\":%lld,"
              "\"first_checkpoint_mtime_ns\":%lld,\"seen_ns\":%lld}\n",
              seen, static_cast<long long>(mtime_ns(path)), static_cast<long long>(first_ns),
              static_cast<long long>(done));
  return 0;
}

int watch_lines(const std::string& path, long long want, const std::string& times_path,
                double stall_s) {
  int fd = -1;
  const std::int64_t open_deadline = realtime_ns() + static_cast<std::int64_t>(stall_s * 1e9);
  while ((fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    if (realtime_ns() > open_deadline) {
      std::fprintf(stderr, "%s does not appear\n", path.c_str());
      return 1;
    }
    ::usleep(1000);
  }
  const int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (ifd < 0 || inotify_add_watch(ifd, path.c_str(), IN_MODIFY) < 0) {
    std::fprintf(stderr, "inotify on %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<std::int64_t> times;
  times.reserve(static_cast<std::size_t>(want));
  std::vector<char> buf(1 << 20);
  std::int64_t last_progress = realtime_ns();
  long long lines = 0;
  while (lines < want) {
    // Read what is there first: the inotify watch may have been set after some writes.
    ssize_t n;
    bool progressed = false;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
      const std::int64_t now = realtime_ns();
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[static_cast<std::size_t>(i)] == '\n') {
          times.push_back(now);
          ++lines;
        }
      }
      progressed = true;
    }
    if (progressed) {
      last_progress = realtime_ns();
      continue;
    }
    if (static_cast<double>(realtime_ns() - last_progress) > stall_s * 1e9) break;
    pollfd p{ifd, POLLIN, 0};
    ::poll(&p, 1, 100);
    drain(ifd);
  }
  std::FILE* out = std::fopen(times_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s: %s\n", times_path.c_str(), std::strerror(errno));
    return 1;
  }
  for (std::size_t i = 0; i < times.size(); ++i) {
    std::fprintf(out, "%zu %lld\n", i + 1, static_cast<long long>(times[i]));
  }
  std::fclose(out);
  std::printf("{\"ok\":%s,\"lines\":%lld,\"wanted\":%lld}\n", lines >= want ? "true" : "false",
              lines, want);
  return lines >= want ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  std::string file, times;
  long long count = -1;
  double stall_s = 120;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--file") file = v;
    else if (a == "--events" || a == "--lines") count = std::atoll(v);
    else if (a == "--times") times = v;
    else if (a == "--stall") stall_s = std::atof(v);
    else return usage();
  }
  if (file.empty() || count < 0) return usage();
  if (mode == "checkpoint") return watch_checkpoint(file, count, stall_s);
  if (mode == "lines" && !times.empty()) return watch_lines(file, count, times, stall_s);
  return usage();
}
