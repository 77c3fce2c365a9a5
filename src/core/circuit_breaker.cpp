#include "core/circuit_breaker.hpp"

#include <algorithm>

namespace cppcdc::detail {

std::chrono::milliseconds CircuitBreaker::backoff() const {
  // initial, 2 x initial, 4 x initial, ... capped; computed without overflowing.
  std::uint64_t delay = retry_.initial_delay_ms;
  for (std::uint32_t i = 1; i < consecutive_ && delay < retry_.max_delay_ms; ++i) delay *= 2;
  return std::chrono::milliseconds(std::min<std::uint64_t>(delay, retry_.max_delay_ms));
}

CircuitBreaker::Next CircuitBreaker::on_failure() {
  ++total_;
  if (consecutive_ < UINT32_MAX) ++consecutive_;
  Next next;
  if (state_ == BreakerState::kError) {
    next.give_up = true;
    next.note = "the circuit breaker is in the error state";
    return next;
  }
  if (retry_.max_retries && consecutive_ > *retry_.max_retries) {
    state_ = BreakerState::kError;
    next.give_up = true;
    next.note = "gave up after " + std::to_string(consecutive_ - 1) +
                " retries in a row (connection_retry_max_retries = " +
                std::to_string(*retry_.max_retries) + ")";
    return next;
  }
  const std::uint32_t threshold = std::max<std::uint32_t>(1, policy_.consecutive_threshold);
  switch (state_) {
    case BreakerState::kClosed:
      if (consecutive_ < threshold) {
        next.wait = backoff();
        next.note = "retry " + std::to_string(consecutive_) +
                    (retry_.max_retries ? " of " + std::to_string(*retry_.max_retries)
                                        : std::string());
        return next;
      }
      state_ = BreakerState::kOpen;
      open_cycles_ = 1;
      break;
    case BreakerState::kOpen:
    case BreakerState::kHalfOpen:
      if (open_cycles_ >= std::max<std::uint32_t>(1, policy_.max_open_cycles)) {
        state_ = BreakerState::kError;
        next.give_up = true;
        next.note = "the circuit breaker opened " + std::to_string(open_cycles_) +
                    " times and its probe failed each time; escalated to the error state "
                    "(recoverable_error_breaker_max_open_cycles = " +
                    std::to_string(policy_.max_open_cycles) + ", " +
                    std::to_string(consecutive_) + " failures in a row)";
        return next;
      }
      state_ = BreakerState::kOpen;
      ++open_cycles_;
      break;
    case BreakerState::kError: break;  // handled above
  }
  next.wait = std::chrono::milliseconds(policy_.cooldown_ms);
  next.note = "circuit breaker open after " + std::to_string(consecutive_) +
              " failures in a row (cycle " + std::to_string(open_cycles_) + " of " +
              std::to_string(std::max<std::uint32_t>(1, policy_.max_open_cycles)) +
              "), probing again after the " + std::to_string(policy_.cooldown_ms) +
              " ms cooldown";
  return next;
}

void CircuitBreaker::before_attempt() {
  if (state_ == BreakerState::kOpen) state_ = BreakerState::kHalfOpen;
}

void CircuitBreaker::on_success() {
  if (state_ == BreakerState::kError) return;  // terminal
  state_ = BreakerState::kClosed;
  consecutive_ = 0;
  open_cycles_ = 0;
}

}  // namespace cppcdc::detail
