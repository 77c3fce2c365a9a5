#pragma once
// Helpers for tests against the real Kafka broker that scripts/test.sh starts
// (CPPCDC_TEST_KAFKA_BOOTSTRAP). What cppcdc wrote is read back independently, by
// kafka_tool.py through Debian's python3-confluent-kafka, or by Kafka's own Java tools
// (scripts/kafka.sh run ...).

#include <gtest/gtest.h>

#include <array>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace cppcdc::kafka_it {

/// The broker's bootstrap address, or "" when CPPCDC_TEST_KAFKA_BOOTSTRAP is not set (the
/// caller skips: see KAFKA_TEST_BOOTSTRAP).
inline std::string bootstrap() {
  const char* b = std::getenv("CPPCDC_TEST_KAFKA_BOOTSTRAP");
  return b ? b : "";
}

/// Why the Kafka tests skip when no broker is configured, and how to run them.
inline std::string unavailable_reason() {
  return "CPPCDC_TEST_KAFKA_BOOTSTRAP is not set: no Kafka broker to test against. "
         "scripts/test.sh starts one; by hand: scripts/kafka.sh start /tmp/cppcdc-kafka 19092, "
         "then export CPPCDC_TEST_KAFKA_BOOTSTRAP=127.0.0.1:19092";
}

/// Declares `var` as the bootstrap address, or skips the current test when none is set.
#define KAFKA_TEST_BOOTSTRAP(var)                          \
  const std::string var = ::cppcdc::kafka_it::bootstrap(); \
  if (var.empty()) GTEST_SKIP() << ::cppcdc::kafka_it::unavailable_reason()

/// The Python that has confluent_kafka (Debian's; a pyenv python first on PATH has not).
inline std::string python() {
  const char* p = std::getenv("CPPCDC_TEST_PYTHON");
  return p ? p : "/usr/bin/python3";
}

struct CommandOutcome {
  int code = -1;
  std::string output;  ///< stdout (stderr goes to the test's stderr)
};

inline CommandOutcome run_command(const std::string& command) {
  CommandOutcome o;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.output.append(buf.data(), n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

inline std::string tool() {
  return python() + " " + CPPCDC_SOURCE_DIR + "/tests/integration/kafka/kafka_tool.py";
}

/// A topic name unique to this test run: prefix, test name, a random suffix.
inline std::string unique_topic(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "-" + (info ? info->name() : "x");
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  std::random_device rd;
  return name.substr(0, 150) + "-" + std::to_string(rd() % 1'000'000'000);
}

/// Creates `topic` with `partitions` partitions (replication 1) and topic configs
/// ("max.message.bytes=10000"); fails the test when it cannot.
inline bool create_topic(const std::string& bootstrap, const std::string& topic, int partitions,
                         const std::vector<std::string>& configs = {}) {
  std::string cmd =
      tool() + " " + bootstrap + " create " + topic + " " + std::to_string(partitions);
  for (const auto& c : configs) cmd += " " + c;
  const auto o = run_command(cmd);
  EXPECT_EQ(o.code, 0) << cmd;
  return o.code == 0;
}

inline int partition_count(const std::string& bootstrap, const std::string& topic) {
  const auto o = run_command(tool() + " " + bootstrap + " partitions " + topic);
  if (o.code != 0) return -1;
  return std::atoi(o.output.c_str());
}

/// One record as the independent reader saw it.
struct Record {
  int partition = -1;
  std::int64_t offset = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::string>> headers;

  /// The last header called `name`, or nullopt.
  std::optional<std::string> header(const std::string& name) const {
    std::optional<std::string> out;
    for (const auto& [n, v] : headers) {
      if (n == name) out = v;
    }
    return out;
  }
};

/// The JSON objects a reader printed, one a line (empty lines skipped); a line that is not a
/// JSON object fails the test and is left out.
inline std::vector<boost::json::object> json_lines(const std::string& output) {
  std::vector<boost::json::object> out;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) {
      ADD_FAILURE() << "a reader printed a line that is not a JSON object: " << line;
      continue;
    }
    out.push_back(std::move(v.as_object()));
  }
  return out;
}

/// Every record of `topic`, partition by partition in offset order (kafka_tool.py read).
inline std::vector<Record> read_topic(const std::string& bootstrap, const std::string& topic,
                                      const std::string& isolation = "read_uncommitted") {
  std::vector<Record> out;
  const auto o = run_command(tool() + " " + bootstrap + " read " + topic + " " + isolation);
  EXPECT_EQ(o.code, 0) << "reading topic " << topic << " failed";
  for (const auto& o2 : json_lines(o.output)) {
    Record r;
    r.partition = static_cast<int>(o2.at("partition").as_int64());
    r.offset = o2.at("offset").as_int64();
    if (o2.at("key").is_string()) r.key = std::string(o2.at("key").as_string().c_str());
    if (o2.at("value").is_string()) {
      const auto& s = o2.at("value").as_string();
      r.value = std::string(s.data(), s.size());
    }
    for (const auto& h : o2.at("headers").as_array()) {
      const auto& pair = h.as_array();
      r.headers.emplace_back(
          std::string(pair.at(0).as_string().c_str()),
          pair.at(1).is_string() ? std::string(pair.at(1).as_string().c_str()) : std::string());
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// How many records of `topic` a read_committed reader sees; 0 while the topic does not exist.
inline std::size_t committed_records(const std::string& bootstrap, const std::string& topic) {
  if (partition_count(bootstrap, topic) <= 0) return 0;
  return read_topic(bootstrap, topic, "read_committed").size();
}

/// How many times `text` occurs in the file at `path` (a cppcdc log), 0 when it cannot be read.
inline std::size_t count_in_file(const std::filesystem::path& path, const std::string& text) {
  std::ifstream in(path);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t n = 0;
  for (auto at = s.find(text); at != std::string::npos; at = s.find(text, at + 1)) ++n;
  return n;
}

/// Runs scripts/kafka.sh with `args`, its output appended to $TMPDIR/cppcdc-it-kafka-own.log;
/// returns its exit status as std::system gives it.
inline int run_kafka_script(const std::string& args) {
  const std::string cmd =
      std::string(CPPCDC_SOURCE_DIR) + "/scripts/kafka.sh " + args + " >>" +
      (std::filesystem::temp_directory_path() / "cppcdc-it-kafka-own.log").string() + " 2>&1";
  return std::system(cmd.c_str());
}

/// A test's own broker (scripts/kafka.sh): the shared broker's port + `offset` (controller +
/// offset + 1); each test has its own offset, so that ctest -j runs them side by side. Offsets
/// in use: 40, 42, 48 and 50 (kafka_broker_restart_test), 44 and 46 (the soak runs of
/// kafka_replay_test).
struct OwnBroker {
  std::filesystem::path dir;
  int port = 0;
  std::string bootstrap;
  bool started = false;

  OwnBroker(const std::string& shared, int offset) {
    const auto colon = shared.rfind(':');
    port = std::stoi(shared.substr(colon + 1)) + offset;
    dir = std::filesystem::temp_directory_path() / ("cppcdc-it-kafka-own-" + std::to_string(port));
    bootstrap = "127.0.0.1:" + std::to_string(port);
    (void)run_kafka_script("stop " + dir.string());  // a leftover of a crashed run
    started = run_kafka_script("start " + dir.string() + " " + std::to_string(port)) == 0;
  }
  bool stop() { return run_kafka_script("stop " + dir.string() + " --keep") == 0; }
  bool start() {
    return run_kafka_script("start " + dir.string() + " " + std::to_string(port)) == 0;
  }
  ~OwnBroker() { (void)run_kafka_script("stop " + dir.string()); }
};

}  // namespace cppcdc::kafka_it
