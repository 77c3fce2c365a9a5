// LagSampler: the throttle in front of Source::lag() (core/lag_sampler.hpp).

#include "core/lag_sampler.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace std::chrono_literals;
using cppcdc::Error;
using cppcdc::ErrorKind;
using cppcdc::Result;
using cppcdc::SourceLag;
using cppcdc::detail::LagSampler;

namespace {

struct CountingRead {
  int calls = 0;
  bool failing = false;
  std::uint64_t bytes = 7;
  Result<std::optional<SourceLag>> operator()() {
    ++calls;
    if (failing) return cppcdc::fail(Error::source(ErrorKind::kTransient, "server down"));
    return std::optional<SourceLag>(SourceLag{std::nullopt, bytes});
  }
};

}  // namespace

TEST(LagSampler, FiguresAreReadOncePerRefreshInterval) {
  LagSampler sampler(1h, 1h);
  CountingRead read;
  auto first = sampler.get([&] { return read(); });
  ASSERT_TRUE(first);
  EXPECT_EQ(first->confirmed_lag_bytes, 7u);
  read.bytes = 9;
  auto again = sampler.get([&] { return read(); });
  ASSERT_TRUE(again);
  EXPECT_EQ(again->confirmed_lag_bytes, 7u) << "the cached figure, not a new read";
  EXPECT_EQ(read.calls, 1);
}

TEST(LagSampler, AFailedReadIsNotRetriedDuringTheBackOff) {
  LagSampler sampler(0s, 1h);
  CountingRead read;
  read.failing = true;
  EXPECT_FALSE(sampler.get([&] { return read(); }));
  read.failing = false;
  EXPECT_FALSE(sampler.get([&] { return read(); })) << "read again inside the back-off";
  EXPECT_EQ(read.calls, 1);
}

TEST(LagSampler, WithoutThrottlingEveryCallReadsAndNothingToReportIsNotAFailure) {
  LagSampler sampler(0s, 0s);
  int calls = 0;
  const auto nothing = [&]() -> Result<std::optional<SourceLag>> {
    ++calls;
    return std::optional<SourceLag>();
  };
  EXPECT_FALSE(sampler.get(nothing));
  EXPECT_FALSE(sampler.get(nothing));
  EXPECT_EQ(calls, 2);
  CountingRead read;
  EXPECT_TRUE(sampler.get([&] { return read(); }));
}
