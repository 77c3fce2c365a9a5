#pragma once
// The health verdict as a pure function of what the runtime measured (API guide, "Health
// verdict"). Runtime::admin_snapshot() fills HealthInputs under its lock and calls
// evaluate_health(); the unit tests call it directly too.

#include <cstdint>
#include <optional>
#include <string>

#include "cppcdc/runtime.hpp"

namespace cppcdc::detail {

/// A checkpointed position the source refused to confirm, and why.
struct UnconfirmedPosition {
  std::string offset;
  std::string error;  ///< Error::report() of the refusal
  std::int64_t since_ms = 0;
};

/// Delivery failures reported since the last commit_ack.
struct DeliveryFailure {
  std::string destination;  ///< may be empty
  std::string last_error;   ///< Error::report() of the latest failure
  std::int64_t first_at_ms = 0;
  std::int64_t last_at_ms = 0;
  std::uint64_t attempts = 0;
};

/// A delivery attempt (Runtime::run_to_completion) that has not returned yet.
struct DeliveryAttempt {
  std::string destination;      ///< Pipeline::name()
  const char* stage = "write";  ///< the call it is in: recover, begin, write, flush, commit
  std::int64_t started_at_ms = 0;
  std::uint64_t events = 0;  ///< the batch's size
  std::string sink_problem;  ///< Pipeline::current_problem(), may be empty
};

/// Every time is wall clock ms since the epoch; 0 means "never".
struct HealthInputs {
  RuntimeState state = RuntimeState::kCreated;
  std::int64_t now_ms = 0;
  std::uint32_t max_poll_wait_ms = 0;
  std::int64_t started_at_ms = 0;       ///< start() succeeded
  std::int64_t last_poll_at_ms = 0;     ///< a poll returned, empty or not
  std::int64_t poll_started_at_ms = 0;  ///< a poll is running since then (0: none)
  std::int64_t last_delivery_at_ms = 0;
  std::int64_t last_commit_at_ms = 0;
  std::int64_t outstanding_since_ms = 0;  ///< a batch is handed out and not acknowledged
  std::uint64_t outstanding_events = 0;
  std::optional<std::string> position_lost;  ///< report of the error that said so
  std::optional<UnconfirmedPosition> unconfirmed;
  std::optional<DeliveryFailure> delivery_failure;
  std::optional<DeliveryAttempt> attempt;
  BreakerState breaker = BreakerState::kClosed;
  std::uint32_t consecutive_errors = 0;
  std::string last_recoverable_error;  ///< report of the latest retried error, or empty
  bool starting = false;  ///< start() is running: connecting to the source (state kCreated)
};

/// max_poll_wait_ms x 6, at least 30 s.
std::int64_t stall_threshold_ms(std::uint32_t max_poll_wait_ms) noexcept;

/// The checks in the API guide's order: source position lost (even when not running), not
/// running, unconfirmed source position, delivery failing, poll loop not turning, consumer not
/// acknowledging; then Healthy when events were delivered within the threshold, else Idle.
HealthVerdict evaluate_health(const HealthInputs& in);

}  // namespace cppcdc::detail
