#pragma once
// Logs the health verdict's changes into and out of a stall, so that a pipeline that stops
// getting through says so in its log even with no admin server and no metrics scraper: one
// warning when it becomes stalled (or the stall's cause changes), one line when it recovers.
// Healthy <-> idle changes are normal and not logged.
//
// Threading: the constructor starts a thread that calls `verdict` every `every` until stop()
// or the destructor; `verdict` must be callable from that thread (Runtime::admin_snapshot()
// is). check() is the same step, for tests.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cppcdc/runtime.hpp"

namespace cppcdc::server {

class HealthLogger {
 public:
  HealthLogger(std::function<HealthVerdict()> verdict, std::chrono::milliseconds every);
  /// Without a thread: check() is called by the owner (tests).
  explicit HealthLogger(std::function<HealthVerdict()> verdict);
  ~HealthLogger();
  HealthLogger(const HealthLogger&) = delete;
  HealthLogger& operator=(const HealthLogger&) = delete;

  /// Stops the thread; idempotent.
  void stop();
  /// Evaluates once and logs a change. `now_ms`: a steady clock reading, for the durations.
  void check(std::int64_t now_ms);

 private:
  std::function<HealthVerdict()> verdict_;
  std::string last_key_;
  bool last_stalled_ = false;
  std::int64_t stalled_since_ms_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cppcdc::server
