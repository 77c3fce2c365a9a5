// The sink conformance suite for the built-in sinks: file, stdout, http, and the router and
// fanout over file sinks.

#include <fcntl.h>
#include <stdio_ext.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "conformance/conformance_util.hpp"
#include "conformance/sink_conformance.hpp"
#include "cppcdc/http_sink.hpp"
#include "cppcdc/router.hpp"
#include "cppcdc/sink.hpp"
#include "http_receiver.hpp"

namespace cppcdc::conformance {
namespace {

namespace fs = std::filesystem;

/// Cuts this process's writes to regular files off at a size (RLIMIT_FSIZE: a write past it
/// writes what fits and then fails with EFBIG; SIGXFSZ is ignored meanwhile) until lift().
class FileSizeLimit {
 public:
  FileSizeLimit() = default;
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  ~FileSizeLimit() { lift(); }

  void set(const fs::path& file, std::uintmax_t more) {
    std::error_code ec;
    const std::uintmax_t size = fs::exists(file, ec) ? fs::file_size(file, ec) : 0;
    if (!saved_) {
      saved_.emplace();
      ::getrlimit(RLIMIT_FSIZE, &*saved_);
      old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    }
    rlimit limit = *saved_;
    limit.rlim_cur = static_cast<rlim_t>(size + more);
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) throw std::runtime_error("setrlimit failed");
  }
  void lift() {
    if (!saved_) return;
    ::setrlimit(RLIMIT_FSIZE, &*saved_);
    std::signal(SIGXFSZ, old_handler_);
    saved_.reset();
  }

 private:
  std::optional<rlimit> saved_;
  void (*old_handler_)(int) = SIG_DFL;
};

class FileSinkHarness {
 public:
  static constexpr const char* kName = "file";

  Result<std::unique_ptr<Sink>> open() { return make_file_sink(path()); }
  std::string delivered() { return read_bytes(path()); }

  std::optional<Result<std::unique_ptr<Sink>>> open_failing() {
    return make_file_sink("/dev/full");
  }
  std::string failing_location() { return "/dev/full"; }

  /// The sink's directory would have to be made below a regular file.
  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() {
    std::ofstream(tmp_.path() / "plain_file") << "x";
    return make_file_sink(misconfigured_path());
  }
  std::string misconfigured_location() { return misconfigured_path().string(); }

  static constexpr bool kSentBytesStay = false;
  void interrupt() { limit_.set(path(), 4096); }
  void resume() { limit_.lift(); }

 private:
  fs::path path() const { return tmp_.path() / "out" / "events.jsonl"; }
  fs::path misconfigured_path() const { return tmp_.path() / "plain_file" / "sub" / "e.jsonl"; }

  TempDir tmp_{"cppcdc-conformance-file-sink"};
  FileSizeLimit limit_;
};

/// Points file descriptor 1 at a temporary file for the harness's lifetime, and back. What
/// the sink wrote is read from that file. When the test failed, what was captured (gtest's
/// own failure messages among it) is copied to stderr after stdout is restored.
class StdoutSinkHarness {
 public:
  static constexpr const char* kName = "stdout";

  StdoutSinkHarness() {
    std::fflush(stdout);
    saved_fd_ = ::dup(STDOUT_FILENO);
    const int fd = ::open(capture_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (saved_fd_ < 0 || fd < 0) throw std::runtime_error("cannot redirect standard output");
    ::dup2(fd, STDOUT_FILENO);
    ::close(fd);
  }
  ~StdoutSinkHarness() {
    limit_.lift();
    // Bytes stdio still holds (after a write to /dev/full failed) would leak into the real
    // stdout: drop them.
    std::fflush(stdout);
    __fpurge(stdout);
    std::clearerr(stdout);
    ::dup2(saved_fd_, STDOUT_FILENO);
    ::close(saved_fd_);
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "--- standard output captured during the test:\n%s\n---\n",
                   read_bytes(capture_path()).c_str());
    }
  }
  StdoutSinkHarness(const StdoutSinkHarness&) = delete;
  StdoutSinkHarness& operator=(const StdoutSinkHarness&) = delete;

  Result<std::unique_ptr<Sink>> open() { return make_stdout_sink(); }
  std::string delivered() { return read_bytes(capture_path()); }

  /// Standard output on a full device.
  std::optional<Result<std::unique_ptr<Sink>>> open_failing() {
    std::fflush(stdout);
    const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    ::dup2(fd, STDOUT_FILENO);
    ::close(fd);
    return make_stdout_sink();
  }
  std::string failing_location() { return "standard output"; }

  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() { return std::nullopt; }
  std::string misconfigured_location() { return ""; }

  // What reached standard output cannot be taken back.
  static constexpr bool kSentBytesStay = true;
  void interrupt() {
    std::fflush(stdout);
    limit_.set(capture_path(), 4096);
  }
  void resume() { limit_.lift(); }

 private:
  fs::path capture_path() const { return tmp_.path() / "stdout.txt"; }

  TempDir tmp_{"cppcdc-conformance-stdout-sink"};
  int saved_fd_ = -1;
  FileSizeLimit limit_;
};

/// A receiver on loopback (cpp-httplib) that checks every request's signature; JSON lines, so
/// that what it kept is the suite's one record per line. The I/O failure is a listener that
/// drops every connection.
class HttpSinkHarness {
 public:
  static constexpr const char* kName = "http";
  static constexpr const char* kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

  HttpSinkHarness() : receiver_({kSecret}) {}

  Result<std::unique_ptr<Sink>> open() { return make_http_sink(options(receiver_.url())); }

  std::string delivered() {
    for (const auto& r : receiver_.requests()) {
      EXPECT_TRUE(r.signature_ok) << "a request with a bad signature: "
                                  << r.header("webhook-signature");
    }
    return receiver_.delivered();
  }

  std::optional<Result<std::unique_ptr<Sink>>> open_failing() {
    dropping_.emplace();
    return make_http_sink(options(dropping_->url()));
  }
  std::string failing_location() { return dropping_ ? dropping_->url() : ""; }

  /// A CA file that does not exist.
  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() {
    HttpSinkOptions o = options("https://127.0.0.1:1/hook");
    o.tls.ca_file = misconfigured_location();
    return make_http_sink(std::move(o));
  }
  std::string misconfigured_location() { return "/nonexistent/cppcdc-conformance-ca.pem"; }

  // The receiver answers 503 to every request until resume(); none of the batch is taken.
  static constexpr bool kSentBytesStay = false;
  void interrupt() { receiver_.set_fallback(testing_http::HttpReceiver::Answer(503)); }
  void resume() { receiver_.set_fallback(testing_http::HttpReceiver::Answer(200)); }

 private:
  static HttpSinkOptions options(const std::string& url) {
    HttpSinkOptions o;
    o.url = url;
    o.format = HttpBodyFormat::kJsonLines;
    o.signing_secrets = {kSecret};
    o.retry.max_retries = 2;
    o.retry.initial_backoff_ms = 1;
    o.retry.max_backoff_ms = 5;
    return o;
  }

  testing_http::HttpReceiver receiver_;
  std::optional<testing_http::DroppingListener> dropping_;
};

/// A router whose route takes the suite's events (table public.orders) to a file sink, with a
/// default file sink that must receive nothing.
class RouterSinkHarness {
 public:
  static constexpr const char* kName = "router";

  Result<std::unique_ptr<Sink>> open() { return router(routed_path()); }
  std::string delivered() {
    EXPECT_EQ(read_bytes(default_path()), "") << "the default sink got routed events";
    return read_bytes(routed_path());
  }

  std::optional<Result<std::unique_ptr<Sink>>> open_failing() { return router("/dev/full"); }
  std::string failing_location() { return "/dev/full"; }

  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() {
    std::ofstream(tmp_.path() / "plain_file") << "x";
    return router(tmp_.path() / "plain_file" / "sub" / "e.jsonl");
  }
  std::string misconfigured_location() {
    return (tmp_.path() / "plain_file" / "sub" / "e.jsonl").string();
  }

  static constexpr bool kSentBytesStay = false;
  void interrupt() { limit_.set(routed_path(), 4096); }
  void resume() { limit_.lift(); }

 private:
  FileSizeLimit limit_;
  Result<std::unique_ptr<Sink>> router(const fs::path& routed) {
    RouterConfig config;
    auto fallback = make_file_sink(default_path());
    if (!fallback) return fail(fallback.error());
    auto target = make_file_sink(routed);
    if (!target) return fail(target.error());
    config.children.push_back(RouterChild{"default", std::move(*fallback), {}, {}});
    config.children.push_back(RouterChild{"orders", std::move(*target), {}, {}});
    config.routes.push_back(RouterRoute{{"public.ord*"}, {}, {1}, ""});
    config.default_targets = {0};
    auto built = RouterSink::create(std::move(config));
    if (!built) return fail(built.error());
    return std::unique_ptr<Sink>(std::move(*built));
  }
  fs::path default_path() const { return tmp_.path() / "default.jsonl"; }
  fs::path routed_path() const { return tmp_.path() / "out" / "orders.jsonl"; }

  TempDir tmp_{"cppcdc-conformance-router-sink"};
};

/// A fanout over two file sinks: both must hold the same bytes.
class FanoutSinkHarness {
 public:
  static constexpr const char* kName = "fanout";

  Result<std::unique_ptr<Sink>> open() { return fanout(first_path()); }
  std::string delivered() {
    const std::string first = read_bytes(first_path());
    EXPECT_EQ(read_bytes(second_path()), first) << "the fanout's children differ";
    return first;
  }

  std::optional<Result<std::unique_ptr<Sink>>> open_failing() { return fanout("/dev/full"); }
  std::string failing_location() { return "/dev/full"; }

  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() {
    std::ofstream(tmp_.path() / "plain_file") << "x";
    return fanout(tmp_.path() / "plain_file" / "sub" / "e.jsonl");
  }
  std::string misconfigured_location() {
    return (tmp_.path() / "plain_file" / "sub" / "e.jsonl").string();
  }

  static constexpr bool kSentBytesStay = false;
  void interrupt() { limit_.set(first_path(), 4096); }
  void resume() { limit_.lift(); }

 private:
  FileSizeLimit limit_;
  Result<std::unique_ptr<Sink>> fanout(const fs::path& first) {
    auto a = make_file_sink(first);
    if (!a) return fail(a.error());
    auto b = make_file_sink(second_path());
    if (!b) return fail(b.error());
    std::vector<RouterChild> children;
    children.push_back(RouterChild{"a", std::move(*a), {}, {}});
    children.push_back(RouterChild{"b", std::move(*b), {}, {}});
    return make_fanout_sink(std::move(children));
  }
  fs::path first_path() const { return tmp_.path() / "a" / "events.jsonl"; }
  fs::path second_path() const { return tmp_.path() / "b" / "events.jsonl"; }

  TempDir tmp_{"cppcdc-conformance-fanout-sink"};
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(FileSink, SinkConformance, FileSinkHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(RouterSink, SinkConformance, RouterSinkHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(FanoutSink, SinkConformance, FanoutSinkHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(StdoutSink, SinkConformance, StdoutSinkHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(HttpSink, SinkConformance, HttpSinkHarness);

}  // namespace cppcdc::conformance
