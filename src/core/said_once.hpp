#pragma once
// One warning for one fact, however many parts of the program notice it: the first caller with
// a key gets true (and logs its line at warning level), every later one false (and logs at
// debug level, or not at all). For facts such as "table X has no primary key", which the
// program, the snapshot and the stream each meet in their own words.

#include <mutex>
#include <set>
#include <string>

namespace cppcdc::detail {

/// True the first time `key` is given in this process, false after that. Thread-safe.
inline bool first_to_say(const std::string& key) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  return said.insert(key).second;
}

/// The key of the fact that table `qualified` ("schema.table") has no primary key.
inline std::string keyless_table_fact(const std::string& qualified) {
  return "keyless table " + qualified;
}

}  // namespace cppcdc::detail
