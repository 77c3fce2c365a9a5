#pragma once
// Crash points for tests.
//
// CPPCDC_FAULT_POINT("name") marks a place where a test may want the process to die abruptly,
// as a power cut or an OOM kill would, to check that what is on disk afterwards is still
// consistent. When the build defines CPPCDC_ENABLE_FAULT_POINTS and the environment variable
// CPPCDC_FAULT_POINT holds exactly "name", the process sends itself SIGKILL there: no
// destructors, no atexit handlers, no buffered output flushed. Without the define the macro
// expands to an empty statement.
//
// "name@N" (N >= 1) dies at the N-th time the process reaches "name" instead of the first, so
// a test can let a few batches through before the crash.
//
// The variable is read the first time a process reaches any fault point and then kept. The
// kept value belongs to the process that read it: a child created with fork() reads the
// variable again, so a test can fork, set the variable in the child and crash only the child.

#ifdef CPPCDC_ENABLE_FAULT_POINTS

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

namespace cppcdc::detail {

/// The armed fault point name for this process ("" when none).
inline std::string armed_fault_point() {
  static std::mutex mutex;
  static pid_t read_by = -1;
  static std::string armed;
  const std::lock_guard<std::mutex> lock(mutex);
  const pid_t self = ::getpid();
  if (read_by != self) {
    const char* value = std::getenv("CPPCDC_FAULT_POINT");
    armed = value != nullptr ? value : "";
    read_by = self;
  }
  return armed;
}

inline void hit_fault_point(std::string_view name) {
  const std::string armed = armed_fault_point();
  if (armed.empty()) return;
  const auto at = armed.rfind('@');
  if (at == std::string::npos) {
    if (armed == name) std::raise(SIGKILL);
    return;
  }
  if (std::string_view(armed).substr(0, at) != name) return;
  static std::mutex mutex;
  static long hits = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  if (++hits >= std::atol(armed.c_str() + at + 1)) std::raise(SIGKILL);
}

}  // namespace cppcdc::detail

#define CPPCDC_FAULT_POINT(name) ::cppcdc::detail::hit_fault_point(name)

#else

#define CPPCDC_FAULT_POINT(name) \
  do {                           \
  } while (0)

#endif
