// The one way a test waits for something another thread or process does: poll a condition
// until it holds or a timeout passes. Tests never sleep to wait; a sleep that stays in a test
// creates a gap on purpose (load pacing, a random moment) and says so in a comment.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace cppcdc::test {

/// Evaluates `condition` every `interval` (on the calling thread) until it returns true or
/// `timeout` has passed since the call; returns true as soon as it holds, else the value of
/// one last evaluation at the deadline. `timeout` is a bound for a failing test, never a
/// claim about how fast something must happen.
inline bool wait_until(
    const std::function<bool()>& condition, std::chrono::steady_clock::duration timeout,
    std::chrono::steady_clock::duration interval = std::chrono::milliseconds(50)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(interval);
  }
  return condition();
}

}  // namespace cppcdc::test
