#pragma once
// CircuitBreaker: the one retry policy of a runtime, shared by source reads and sink
// deliveries (core concepts, "Circuit breaker"). It decides, after each recoverable failure,
// how long to wait before the next attempt, or that the run gives up.
//
//   closed     failures back off exponentially (ConnectionRetryPolicy's initial and max
//              delay); `consecutive_threshold` failures in a row open the breaker
//   open       nothing is attempted for `cooldown_ms`; then one probe (half-open)
//   half-open  the probe succeeds: closed again; it fails: open again, one more cycle, or the
//              error state once `max_open_cycles` cycles have passed
//   error      terminal: the run ends
//
// ConnectionRetryPolicy::max_retries, when set, is a second limit: that many failed retries
// in a row (without a success in between) end the run too, whatever the breaker's state.
//
// Not thread-safe: the runtime calls it under its own lock.

#include <chrono>
#include <cstdint>
#include <string>

#include "cppcdc/runtime.hpp"

namespace cppcdc::detail {

class CircuitBreaker {
 public:
  CircuitBreaker(const ConnectionRetryPolicy& retry, const CircuitBreakerPolicy& breaker)
      : retry_(retry), policy_(breaker) {}

  /// What to do after a recoverable failure.
  struct Next {
    bool give_up = false;             ///< the error state: stop retrying
    std::chrono::milliseconds wait{0};  ///< before the next attempt (when not giving up)
    /// give_up: why, naming the setting that decided it. Otherwise a short note for the log
    /// ("retry 3 of 5", "breaker open, cycle 2 of 3").
    std::string note;
  };

  /// Records a recoverable failure and moves the state machine.
  Next on_failure();
  /// The wait after on_failure() is over and the next attempt begins: an open breaker lets
  /// its one probe through (half-open).
  void before_attempt();
  /// An attempt succeeded: closed, counters of consecutive failures and open cycles reset.
  void on_success();

  BreakerState state() const noexcept { return state_; }
  /// Every recoverable failure recorded, over the runtime's life.
  std::uint64_t recoverable_errors() const noexcept { return total_; }
  /// Failures since the last success.
  std::uint32_t consecutive() const noexcept { return consecutive_; }

 private:
  std::chrono::milliseconds backoff() const;

  ConnectionRetryPolicy retry_;
  CircuitBreakerPolicy policy_;
  BreakerState state_ = BreakerState::kClosed;
  std::uint64_t total_ = 0;
  std::uint32_t consecutive_ = 0;
  std::uint32_t open_cycles_ = 0;
};

}  // namespace cppcdc::detail
