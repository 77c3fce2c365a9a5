#pragma once
// The schema registry DOUBLES as a test fixture: tests/integration/schema_registry_double.py
// (the Confluent REST API) or, with RegistryDouble::kApicurio,
// tests/integration/apicurio_registry_double.py (Apicurio Registry 3's native API); each a
// separate Python process on loopback speaking its API with its own code, started for one
// test and killed at its end. Needs CPPCDC_SOURCE_DIR.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/http_client.hpp"

namespace cppcdc {

// The double, started for one test and killed at its end.
class RegistryDouble {
 public:
  static constexpr const char* kConfluent = "schema_registry_double.py";
  static constexpr const char* kApicurio = "apicurio_registry_double.py";

  explicit RegistryDouble(std::vector<std::string> args = {}, const char* script = kConfluent) {
    static int n = 0;
    port_file_ = std::filesystem::path(::testing::TempDir()) /
                 ("registry-double-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
    std::filesystem::remove(port_file_);
    std::vector<std::string> argv = {
        "/usr/bin/python3", std::string(CPPCDC_SOURCE_DIR) + "/tests/integration/" + script,
        "--port-file", port_file_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(port_file_) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls for the file
    }
    std::ifstream in(port_file_);
    in >> port_;
  }
  ~RegistryDouble() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(port_file_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool up() const { return port_ > 0; }

  // The double's test controls.
  void post(const std::string& path, const std::string& body) {
    auto client = http::Client::create(http::ClientOptions{});
    ASSERT_TRUE(client);
    const auto r = (*client)->send(url() + path, {"Content-Type: application/json"}, body);
    ASSERT_EQ(r.status, 200) << r.transport_error << r.body_prefix;
  }
  // Every request so far ("METHOD /path?query"); the Apicurio double also keeps each one's
  // Authorization header (`control` = "/__double/headers").
  std::vector<std::string> requests(const std::string& control = "/__double/requests") {
    http::ClientOptions o;
    o.max_body = 1 << 20;
    auto client = http::Client::create(o);
    EXPECT_TRUE(client);
    const auto r = (*client)->send(url() + control, {}, std::nullopt);
    std::vector<std::string> out;
    const boost::json::value parsed = boost::json::parse(r.body_prefix);
    for (const auto& v : parsed.as_array()) out.emplace_back(v.as_string());
    return out;
  }
  // Requests that could have stored something: Confluent's POST .../versions, Apicurio's
  // POST /groups/... (not a dry run); lookups, searches and checks do not count.
  std::size_t writes() {
    std::size_t n = 0;
    for (const auto& r : requests()) {
      if (r.rfind("POST", 0) != 0 || r.find("/compatibility/") != std::string::npos ||
          r.find("/search/") != std::string::npos || r.find("dryRun=true") != std::string::npos) {
        continue;
      }
      if (r.find("/versions") != std::string::npos ||
          r.find("/apis/registry/v3/groups/") != std::string::npos) {
        ++n;
      }
    }
    return n;
  }

 private:
  std::filesystem::path port_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace cppcdc
