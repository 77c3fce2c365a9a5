#pragma once
// Helpers of the large-transaction tests (PostgreSQL and MariaDB): reading fields of the sink's
// JSON lines without parsing them, and the memory of the cppcdc process under test.

#include <sys/types.h>

#include <fstream>
#include <string>

namespace cppcdc::it {

/// A field of a JSON line written by cppcdc, by plain search (the lines are ours and regular;
/// parsing millions of them as JSON would dominate a test's time). "" when absent.
inline std::string field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  auto at = line.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  if (line[at] == '"') {
    const auto end = line.find('"', at + 1);
    return line.substr(at + 1, end - at - 1);
  }
  const auto end = line.find_first_of(",}", at);
  return line.substr(at, end - at);
}

/// Kilobytes of a /proc/<pid>/status line such as VmHWM (peak resident set) or VmRSS; -1 when
/// the line (or the process) is not there.
inline long proc_status_kb(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  }
  return -1;
}

}  // namespace cppcdc::it
