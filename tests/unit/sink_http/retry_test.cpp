// What the HTTP sink retries, how it reads Retry-After, and how long it waits.

#include "sink/http/retry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

namespace cppcdc::http {
namespace {

using std::chrono::system_clock;

TEST(HttpRetry, TwoHundredsAreDeliveredTransientAnswersRetriedTheRestPermanent) {
  for (long s : {200L, 201L, 202L, 204L, 299L}) {
    EXPECT_EQ(classify_status(s), Outcome::kDelivered) << s;
  }
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L, 599L}) {
    EXPECT_EQ(classify_status(s), Outcome::kRetry) << s;
  }
  for (long s :
       {100L, 301L, 302L, 304L, 400L, 401L, 403L, 404L, 405L, 409L, 413L, 422L, 451L, 600L}) {
    EXPECT_EQ(classify_status(s), Outcome::kPermanent) << s;
  }
}

TEST(HttpRetry, RetryAfterInSeconds) {
  const auto now = system_clock::now();
  EXPECT_EQ(parse_retry_after("120", now), 120'000u);
  EXPECT_EQ(parse_retry_after(" 3 ", now), 3'000u);
  EXPECT_EQ(parse_retry_after("0", now), 0u);
  EXPECT_EQ(parse_retry_after("99999999999999999999999", now), 86'400'000u);  // a day at most
  EXPECT_FALSE(parse_retry_after("-5", now));
  EXPECT_FALSE(parse_retry_after("1.5", now));
  EXPECT_FALSE(parse_retry_after("", now));
  EXPECT_FALSE(parse_retry_after("soon", now));
}

TEST(HttpRetry, RetryAfterAsAnHttpDateInAllThreeForms) {
  // 1994-11-06 08:49:37 UTC
  const auto at = system_clock::from_time_t(784111777);
  const auto now = at - std::chrono::seconds(30);
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), 30'000u);
  EXPECT_EQ(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now), 30'000u);
  EXPECT_EQ(parse_retry_after("Sun Nov  6 08:49:37 1994", now), 30'000u);
  // In the past: no wait.
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at + std::chrono::hours(1)), 0u);
  EXPECT_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:37", now));
  EXPECT_FALSE(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT trailing", now));
}

TEST(HttpRetry, BackOffDoublesWithJitterUpToTheMaximum) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 200; ++round) {
    for (std::uint32_t attempt = 0; attempt < 12; ++attempt) {
      const std::uint64_t cap = std::min<std::uint64_t>(30'000, 500ull << attempt);
      const auto wait = backoff_ms(attempt, 500, 30'000, std::nullopt, 300'000, rng);
      EXPECT_GE(wait, cap / 2) << attempt;
      EXPECT_LE(wait, cap) << attempt;
    }
  }
  // Jittered: not every draw is the same.
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 50; ++i) seen.insert(backoff_ms(3, 500, 30'000, std::nullopt, 300'000, rng));
  EXPECT_GT(seen.size(), 10u);
  // Large attempts do not overflow.
  EXPECT_LE(backoff_ms(64, 500, 30'000, std::nullopt, 300'000, rng), 30'000u);
}

TEST(HttpRetry, RetryAfterWinsWhenLongerUpToTheCeiling) {
  std::mt19937_64 rng(2);
  EXPECT_EQ(backoff_ms(0, 100, 1'000, 5'000, 300'000, rng), 5'000u);
  EXPECT_LE(backoff_ms(0, 100, 1'000, 0, 300'000, rng), 100u);  // shorter: back-off stands
  EXPECT_EQ(backoff_ms(0, 100, 1'000, 86'400'000, 300'000, rng), 300'000u);
}

}  // namespace
}  // namespace cppcdc::http
