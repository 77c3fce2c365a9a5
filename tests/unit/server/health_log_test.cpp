// The health log (server/health_log.hpp): a stall is logged once as a warning when it starts
// or its cause changes, its end once when the verdict is healthy or idle again, and nothing in
// between or for healthy <-> idle changes.

#include "server/health_log.hpp"

#include <gtest/gtest.h>

#include <string>

#include "integration/log_capture.hpp"

using namespace cppcdc;

namespace {

HealthVerdict verdict(HealthVerdict::Kind kind, std::optional<StallCause> cause = std::nullopt,
                      std::string reason = "why") {
  HealthVerdict v;
  v.kind = kind;
  v.cause = cause;
  v.reason = std::move(reason);
  return v;
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HealthLog, LogsAStallOnceAndItsEndOnce) {
  it::LogCapture log;
  HealthVerdict current = verdict(HealthVerdict::Kind::kHealthy);
  server::HealthLogger logger([&] { return current; });
  logger.check(0);
  current = verdict(HealthVerdict::Kind::kIdle);
  logger.check(1'000);
  EXPECT_EQ(count(log.text(), "health:"), 0u) << log.text();

  current = verdict(HealthVerdict::Kind::kStalled, StallCause::kDeliveryFailing,
                    "a delivery attempt has not returned for 31000ms");
  logger.check(2'000);
  current.reason = "a delivery attempt has not returned for 32000ms";  // same stall, new numbers
  logger.check(3'000);
  EXPECT_EQ(count(log.text(), "health: stalled:delivery_failing: a delivery attempt"), 1u)
      << log.text();

  current = verdict(HealthVerdict::Kind::kStalled, StallCause::kPollLoopNotTurning, "no poll");
  logger.check(4'000);
  EXPECT_EQ(count(log.text(), "health: stalled:poll_loop_not_turning: no poll"), 1u);

  current = verdict(HealthVerdict::Kind::kHealthy, std::nullopt, "events delivered 5ms ago");
  logger.check(9'000);
  logger.check(10'000);
  EXPECT_EQ(count(log.text(),
                  "health: healthy again after 7000 ms stalled "
                  "(stalled:poll_loop_not_turning): events delivered 5ms ago"),
            1u)
      << log.text();
  EXPECT_EQ(count(log.text(), "health:"), 3u) << log.text();
}

TEST(HealthLog, TheThreadChecksUntilStopped) {
  it::LogCapture log;
  std::atomic<int> calls{0};
  {
    server::HealthLogger logger(
        [&] {
          ++calls;
          return verdict(HealthVerdict::Kind::kStalled, StallCause::kConsumerNotAcknowledging);
        },
        std::chrono::milliseconds(1));
    while (calls.load() < 3) std::this_thread::yield();
  }
  const int after_stop = calls.load();
  EXPECT_EQ(calls.load(), after_stop);
  EXPECT_EQ(count(log.text(), "health: stalled:consumer_not_acknowledging"), 1u) << log.text();
}
