#include "core/health.hpp"

#include <algorithm>

namespace cppcdc::detail {
namespace {

constexpr std::int64_t kStallFloorMs = 30'000;

HealthVerdict stalled(StallCause cause, std::string reason) {
  HealthVerdict v;
  v.kind = HealthVerdict::Kind::kStalled;
  v.cause = cause;
  v.reason = std::move(reason);
  return v;
}

std::string ms(std::int64_t value) { return std::to_string(value) + "ms"; }

// What the current delivery attempt is doing, after the failures before it; empty when none
// runs.
std::string attempt_note(const HealthInputs& in) {
  if (!in.attempt) return {};
  const auto& a = *in.attempt;
  std::string out = "; the attempt now running has been in " + std::string(a.stage) + " for " +
                    ms(std::max<std::int64_t>(0, in.now_ms - a.started_at_ms));
  if (!a.sink_problem.empty()) out += "; the sink reports: " + a.sink_problem;
  return out;
}

}  // namespace

std::int64_t stall_threshold_ms(std::uint32_t max_poll_wait_ms) noexcept {
  return std::max<std::int64_t>(kStallFloorMs, static_cast<std::int64_t>(max_poll_wait_ms) * 6);
}

HealthVerdict evaluate_health(const HealthInputs& in) {
  const std::int64_t threshold = stall_threshold_ms(in.max_poll_wait_ms);
  const auto age = [&](std::int64_t at) { return std::max<std::int64_t>(0, in.now_ms - at); };

  // Lost for good: stays the verdict even after the run ended because of it.
  if (in.position_lost) {
    return stalled(StallCause::kSourcePositionLost,
                   "the database no longer has the log position this pipeline resumes from; "
                   "recreate the slot (or position) and take a new snapshot: " +
                       *in.position_lost);
  }
  // A delivery failing for longer than the threshold; also the final verdict of a run that
  // ended because of it (the breaker escalated), so that it keeps blaming the destination.
  const auto delivery_failing = [&]() -> std::optional<HealthVerdict> {
    if (!in.delivery_failure) return std::nullopt;
    const auto& f = *in.delivery_failure;
    const std::int64_t failing_for = age(f.first_at_ms);
    if (failing_for < threshold) return std::nullopt;
    return stalled(StallCause::kDeliveryFailing,
                   "delivery" + (f.destination.empty() ? std::string() : " to " + f.destination) +
                       " has been failing for " + ms(failing_for) + " (" +
                       std::to_string(f.attempts) + " failed attempts, threshold " +
                       ms(threshold) + ", nothing committed since); last error: " +
                       f.last_error + attempt_note(in));
  };
  if (in.state != RuntimeState::kRunning) {
    if (in.state == RuntimeState::kFailed) {
      if (auto v = delivery_failing()) return *v;
    }
    HealthVerdict v;
    v.kind = HealthVerdict::Kind::kNotRunning;
    if (in.state == RuntimeState::kCreated && in.starting) {
      // start() is connecting to the source, perhaps retrying through an outage.
      v.reason = "connecting to the source";
      if (in.consecutive_errors > 0) {
        v.reason += " (" + std::to_string(in.consecutive_errors) + " failed attempts, breaker " +
                    std::string(to_string(in.breaker)) +
                    "; last error: " + in.last_recoverable_error + ")";
      }
    } else if (in.state == RuntimeState::kCreated) {
      v.reason = "runtime created; start() not called yet";
    } else {
      v.reason = "runtime " + std::string(to_string(in.state));
      if (in.state == RuntimeState::kFailed && in.delivery_failure) {
        v.reason += " after " + std::to_string(in.delivery_failure->attempts) +
                    " failed delivery attempts; last error: " + in.delivery_failure->last_error;
      }
    }
    return v;
  }
  if (in.unconfirmed) {
    return stalled(StallCause::kUnconfirmedSourcePosition,
                   "position " + in.unconfirmed->offset + " is checkpointed but the source " +
                       "has refused to confirm it for " + ms(age(in.unconfirmed->since_ms)) +
                       ", so the database goes on retaining its log: " + in.unconfirmed->error);
  }
  if (in.delivery_failure) {
    if (auto v = delivery_failing()) return *v;
    // The consumer is alive and retrying a batch it holds: neither its polls nor its
    // acknowledgements are expected until the destination takes the batch.
  } else if (in.attempt) {
    // The runtime is inside a sink call with the batch; it has not failed (yet), but a call
    // blocked for longer than the threshold is a delivery that is not getting through.
    const auto& a = *in.attempt;
    const std::int64_t blocked_for = age(a.started_at_ms);
    if (blocked_for >= threshold) {
      return stalled(StallCause::kDeliveryFailing,
                     "a delivery attempt of " + std::to_string(a.events) + " events" +
                         (a.destination.empty() ? std::string() : " to " + a.destination) +
                         " has not returned for " + ms(blocked_for) + " (now in " + a.stage +
                         ", threshold " + ms(threshold) + ", nothing committed since)" +
                         (a.sink_problem.empty() ? std::string()
                                                 : "; the sink reports: " + a.sink_problem));
    }
  } else if (in.outstanding_since_ms == 0) {
    // Nothing handed out: the loop should be polling. A commit is a turn of the loop too (the
    // poll comes right after it).
    const std::int64_t since =
        std::max({in.last_poll_at_ms, in.started_at_ms, in.last_commit_at_ms});
    const std::int64_t quiet_for = age(since);
    if (quiet_for > threshold) {
      std::string reason =
          (in.last_poll_at_ms == 0 ? "no poll has returned since the start " + ms(quiet_for) +
                                         " ago"
                                   : "no poll has returned for " + ms(quiet_for)) +
          " (threshold " + ms(threshold) + ")";
      if (in.poll_started_at_ms != 0) {
        reason += "; a poll has been running for " + ms(age(in.poll_started_at_ms));
      } else {
        reason += "; nothing is polling";
      }
      if (in.consecutive_errors > 0) {
        reason += "; the source is failing (" + std::to_string(in.consecutive_errors) +
                  " recoverable errors in a row, circuit breaker " +
                  std::string(to_string(in.breaker)) + ")";
        if (!in.last_recoverable_error.empty()) reason += ": " + in.last_recoverable_error;
      }
      return stalled(StallCause::kPollLoopNotTurning, std::move(reason));
    }
  } else {
    // A batch is handed out: the consumer should acknowledge it.
    const std::int64_t since = std::max(in.last_commit_at_ms, in.outstanding_since_ms);
    const std::int64_t waiting_for = age(since);
    if (waiting_for > threshold) {
      return stalled(StallCause::kConsumerNotAcknowledging,
                     std::to_string(in.outstanding_events) + " events handed out " +
                         ms(age(in.outstanding_since_ms)) +
                         " ago are not acknowledged; no commit_ack for " + ms(waiting_for) +
                         " (threshold " + ms(threshold) + ")");
    }
  }
  HealthVerdict v;
  if (in.attempt) {
    const auto& a = *in.attempt;
    v.kind = HealthVerdict::Kind::kHealthy;
    v.reason = "delivering " + std::to_string(a.events) + " events" +
               (a.destination.empty() ? std::string() : " to " + a.destination) + " (in " +
               a.stage + " for " + ms(age(a.started_at_ms)) + ")";
    if (!a.sink_problem.empty()) v.reason += "; the sink reports: " + a.sink_problem;
  } else if (in.delivery_failure) {
    // Between two attempts at a batch it holds: retrying, below the threshold.
    const auto& f = *in.delivery_failure;
    v.kind = HealthVerdict::Kind::kHealthy;
    v.reason = "waiting to deliver a batch again" +
               (f.destination.empty() ? std::string() : " to " + f.destination) + " after " +
               std::to_string(f.attempts) + " failed attempts";
  } else if (in.last_delivery_at_ms != 0 && age(in.last_delivery_at_ms) <= threshold) {
    v.kind = HealthVerdict::Kind::kHealthy;
    v.reason = "events delivered " + ms(age(in.last_delivery_at_ms)) + " ago";
  } else {
    v.kind = HealthVerdict::Kind::kIdle;
    v.reason = in.last_delivery_at_ms == 0
                   ? std::string("polling; no events delivered yet")
                   : "polling; the source has been quiet for " + ms(age(in.last_delivery_at_ms));
  }
  if (in.delivery_failure) {
    v.reason += "; delivery failing for " + ms(age(in.delivery_failure->first_at_ms)) +
                " (below the threshold " + ms(threshold) + ")";
  }
  return v;
}

}  // namespace cppcdc::detail
