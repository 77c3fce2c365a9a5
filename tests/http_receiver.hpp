#pragma once
// An HTTP receiver for the HTTP sink's tests: a real server on 127.0.0.1 (cpp-httplib) that
// keeps every request, verifies Standard Webhooks signatures with its own code (OpenSSL's
// one-shot HMAC, not the sink's), and answers as a test scripts it: a status, a body, a
// Retry-After, or a stall before answering. DroppingListener accepts connections and closes
// them without a word.
//
// Ports: with CPPCDC_TEST_HTTP_PORTS=LO-HI in the environment the first free port of that range
// is taken, otherwise one the kernel picks.

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cppcdc::testing_http {

/// The configured test port range, or {0, 0} (any port).
inline std::pair<int, int> test_port_range() {
  const char* env = std::getenv("CPPCDC_TEST_HTTP_PORTS");
  if (env == nullptr) return {0, 0};
  const std::string s(env);
  const auto dash = s.find('-');
  if (dash == std::string::npos) return {std::stoi(s), std::stoi(s)};
  return {std::stoi(s.substr(0, dash)), std::stoi(s.substr(dash + 1))};
}

inline std::string b64(const unsigned char* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

/// The raw key of a "whsec_..." secret (the receiver's own decoding).
inline std::string secret_key(const std::string& secret) {
  std::string text = secret.rfind("whsec_", 0) == 0 ? secret.substr(6) : secret;
  while (text.size() % 4 != 0) text += '=';
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  std::size_t pad = 0;
  while (pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

/// "v1,<base64 HMAC-SHA256>" over id.timestamp.body.
inline std::string expected_signature(const std::string& key, const std::string& id,
                                      const std::string& timestamp, const std::string& body) {
  const std::string message = id + "." + timestamp + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &size);
  return "v1," + b64(mac, size);
}

struct ReceivedRequest {
  std::string path;
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;                            ///< after Content-Encoding was undone
  int answered = 0;                            ///< the status it was answered with
  bool signature_ok = false;                   ///< every configured secret's signature matched
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpReceiver {
 public:
  struct Answer {
    Answer() = default;
    Answer(int status_, std::string body_ = "",
           std::optional<std::string> retry_after_ = std::nullopt, int stall_ms_ = 0)
        : status(status_),
          body(std::move(body_)),
          retry_after(std::move(retry_after_)),
          stall_ms(stall_ms_) {}
    int status = 200;
    std::string body;
    std::optional<std::string> retry_after;
    int stall_ms = 0;   ///< wait this long before answering
    bool hold = false;  ///< wait until release() before answering
  };

  explicit HttpReceiver(std::vector<std::string> secrets = {}) {
    for (const auto& s : secrets) keys_.push_back(secret_key(s));
    server_.Post(R"(/.*)",
                 [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a second
    // receiver would share a port that is in use instead of moving on to the next.
    server_.set_socket_options([](socket_t sock) {
      const int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.set_keep_alive_max_count(1'000'000);
    server_.set_payload_max_length(1ull << 31);
    const auto [lo, hi] = test_port_range();
    if (lo == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      for (int p = lo; p <= hi && port_ <= 0; ++p) {
        if (server_.bind_to_port("127.0.0.1", p)) port_ = p;
      }
    }
    if (port_ <= 0) throw std::runtime_error("the test receiver found no free port");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  ~HttpReceiver() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    server_.stop();
    thread_.join();
  }

  HttpReceiver(const HttpReceiver&) = delete;
  HttpReceiver& operator=(const HttpReceiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/hook") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  /// Answers for the next requests, in order; after them, `fallback` (200 unless set).
  void script(std::vector<Answer> answers) {
    std::lock_guard lock(mutex_);
    script_.assign(answers.begin(), answers.end());
  }
  void set_fallback(Answer answer) {
    std::lock_guard lock(mutex_);
    fallback_ = std::move(answer);
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  /// Requests answered (and kept in requests()).
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  /// Requests that arrived, answered or not yet.
  std::size_t arrived() const {
    std::lock_guard lock(mutex_);
    return arrived_;
  }
  /// Lets held requests (Answer::hold) be answered.
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    wake_.notify_all();
  }

  /// The bodies answered 2xx, in order, each webhook-id once: what the receiver kept.
  std::string delivered() const {
    std::lock_guard lock(mutex_);
    std::string out;
    std::set<std::string> seen;
    for (const auto& r : requests_) {
      if (r.answered < 200 || r.answered > 299) continue;
      const std::string id = r.header("webhook-id");
      if (!id.empty() && !seen.insert(id).second) continue;
      out += r.body;
    }
    return out;
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    ReceivedRequest got;
    got.path = req.path;
    for (const auto& [name, value] : req.headers) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      got.headers[lower] = value;
    }
    got.body = req.body;
    if (!keys_.empty()) {
      const std::string id = got.header("webhook-id");
      const std::string ts = got.header("webhook-timestamp");
      std::string sigs = " " + got.header("webhook-signature") + " ";
      got.signature_ok = !id.empty() && !ts.empty();
      for (const auto& key : keys_) {
        const std::string want = " " + expected_signature(key, id, ts, got.body) + " ";
        if (sigs.find(want) == std::string::npos) got.signature_ok = false;
      }
    }
    Answer answer;
    {
      std::unique_lock lock(mutex_);
      ++arrived_;
      if (!script_.empty()) {
        answer = script_.front();
        script_.pop_front();
      } else {
        answer = fallback_;
      }
      if (answer.stall_ms > 0) {
        wake_.wait_for(lock, std::chrono::milliseconds(answer.stall_ms),
                       [this] { return closing_; });
      }
      if (answer.hold) wake_.wait(lock, [this] { return closing_ || released_; });
      got.answered = answer.status;
      requests_.push_back(std::move(got));
    }
    res.status = answer.status;
    if (answer.retry_after) res.set_header("Retry-After", *answer.retry_after);
    res.set_content(answer.body, "text/plain");
  }

  std::vector<std::string> keys_;
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool closing_ = false;
  bool released_ = false;
  std::size_t arrived_ = 0;
  std::deque<Answer> script_;
  Answer fallback_;
  std::vector<ReceivedRequest> requests_;
};

/// Accepts connections on 127.0.0.1 and closes each at once after reading what arrived.
class DroppingListener {
 public:
  DroppingListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const auto [lo, hi] = test_port_range();
    for (int p = lo; p <= hi; ++p) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<std::uint16_t>(p));
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
    }
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.sin_port);
    if (port_ == 0 || ::listen(fd_, 16) != 0) throw std::runtime_error("no listening socket");
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // closed by the destructor
        char buf[4096];
        (void)::recv(c, buf, sizeof buf, 0);
        ++accepted_;
        ::close(c);
      }
    });
  }
  ~DroppingListener() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  DroppingListener(const DroppingListener&) = delete;
  DroppingListener& operator=(const DroppingListener&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace cppcdc::testing_http
