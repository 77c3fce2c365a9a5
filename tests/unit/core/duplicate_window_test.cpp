#include "core/duplicate_window.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "cppcdc/idempotency.hpp"

namespace cppcdc::detail {
namespace {

EventIdentity id(std::uint64_t key, std::uint64_t index) {
  return EventIdentity{TransientFingerprint{key * 0x9e3779b97f4a7c15ULL, key}, index};
}

DuplicateWindow window(std::size_t capacity, std::uint64_t ttl_ms = 0) {
  return DuplicateWindow::create(IdempotencyOptions{capacity, ttl_ms}).value();
}

// What the guard would be given for the same event: one fingerprint per (key, index), through
// a bijection of the index (splitmix64's finalizer), so distinct pairs never meet.
TransientFingerprint as_fingerprint(const EventIdentity& e) {
  std::uint64_t x = e.index + 0x632be59bd9b4e019ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return TransientFingerprint{e.key.hi ^ x, e.key.lo ^ (x * 3)};
}

TEST(DuplicateWindow, RefusesTheCapacitiesTheGuardRefuses) {
  auto zero = DuplicateWindow::create(IdempotencyOptions{0, 0});
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().kind(), ErrorKind::kConfiguration);
  EXPECT_NE(zero.error().message().find("at least 1"), std::string::npos);
  EXPECT_FALSE(DuplicateWindow::create(IdempotencyOptions{std::size_t{1} << 31, 0}));
}

// The point of the window: a transaction's events remembered in order take one run, however
// many there are.
TEST(DuplicateWindow, ATransactionRememberedInOrderIsOneRun) {
  auto w = window(100'000);
  for (std::uint64_t i = 0; i < 5'000; ++i) w.remember(id(1, i), 0);
  EXPECT_EQ(w.size(), 5'000u);
  EXPECT_EQ(w.runs(), 1u);
  EXPECT_TRUE(w.contains(id(1, 0)));
  EXPECT_TRUE(w.contains(id(1, 4'999)));
  EXPECT_FALSE(w.contains(id(1, 5'000)));
  EXPECT_FALSE(w.contains(id(2, 0)));
  // Remembering them again changes nothing.
  for (std::uint64_t i = 0; i < 5'000; ++i) w.remember(id(1, i), 0);
  EXPECT_EQ(w.size(), 5'000u);
  EXPECT_EQ(w.runs(), 1u);
}

TEST(DuplicateWindow, AFullWindowForgetsItsOldestEventsOneAtATime) {
  auto w = window(5);
  for (std::uint64_t i = 0; i < 4; ++i) w.remember(id(1, i), 0);
  w.remember(id(2, 7), 0);
  EXPECT_EQ(w.evictions(), 0u);
  w.remember(id(2, 8), 0);  // pushes out (1, 0) only
  EXPECT_EQ(w.evictions(), 1u);
  EXPECT_FALSE(w.contains(id(1, 0)));
  EXPECT_TRUE(w.contains(id(1, 1)));
  EXPECT_TRUE(w.contains(id(2, 8)));
  for (std::uint64_t i = 9; i < 12; ++i) w.remember(id(2, i), 0);  // the rest of key 1 goes
  EXPECT_EQ(w.evictions(), 4u);
  EXPECT_EQ(w.size(), 5u);
  EXPECT_EQ(w.runs(), 1u);
  EXPECT_FALSE(w.contains(id(1, 3)));
  EXPECT_TRUE(w.contains(id(2, 7)));
  // An evicted event is new again.
  w.remember(id(1, 0), 0);
  EXPECT_TRUE(w.contains(id(1, 0)));
  EXPECT_FALSE(w.contains(id(2, 7)));
}

TEST(DuplicateWindow, RunsAgeOutTogetherAndAreNotCountedAsEvictions) {
  auto w = window(100, 1'000);
  for (std::uint64_t i = 0; i < 10; ++i) w.remember(id(1, i), 5'000);
  for (std::uint64_t i = 10; i < 20; ++i) w.remember(id(1, i), 5'600);  // a later batch
  EXPECT_EQ(w.runs(), 2u);
  w.expire(5'999);
  EXPECT_TRUE(w.contains(id(1, 0)));
  w.expire(6'000);
  EXPECT_FALSE(w.contains(id(1, 9)));
  EXPECT_TRUE(w.contains(id(1, 10)));
  w.expire(6'600);
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(w.evictions(), 0u);
}

// The cache hints read the window without changing it, on an empty one and a full one.
TEST(DuplicateWindow, TheHintsChangeNothing) {
  auto w = window(4);
  w.prefetch(id(1, 0).key);
  w.prefetch_eviction(8);
  EXPECT_EQ(w.size(), 0u);
  for (std::uint64_t i = 0; i < 6; ++i) w.remember(id(i, 0), 0);  // runs of one
  for (std::size_t ahead = 0; ahead < 10; ++ahead) w.prefetch_eviction(ahead);
  w.prefetch(id(5, 0).key);
  EXPECT_EQ(w.size(), 4u);
  EXPECT_EQ(w.evictions(), 2u);
  EXPECT_FALSE(w.contains(id(1, 0)));
  EXPECT_TRUE(w.contains(id(2, 0)));
}

// The window answers as EventIdempotencyGuard would for the same events, through in-order
// transactions, replays of older ranges, events out of order, interleaved keys, evictions
// from small and large windows, and an age limit.
TEST(DuplicateWindow, AnswersAsTheGuardDoesForTheSameEvents) {
  for (const std::size_t capacity :
       {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{1'000}, std::size_t{5'000}}) {
    for (const std::uint64_t ttl : {std::uint64_t{0}, std::uint64_t{40}}) {
      std::int64_t now = 1'000;
      auto guard = EventIdempotencyGuard::create(IdempotencyOptions{capacity, ttl}, [&] {
                     return now;
                   }).value();
      auto w = window(capacity, ttl);
      std::mt19937_64 rng(capacity * 131 + ttl);
      std::uint64_t next_key = 1;
      for (int step = 0; step < 3'000; ++step) {
        // A batch: a run of a new key, a replay of an older key's range, or scattered events.
        std::vector<EventIdentity> batch;
        const auto kind = rng() % 4;
        if (kind == 0 || kind == 1) {
          const std::uint64_t key = next_key++;
          const std::uint64_t n = 1 + rng() % 40;
          for (std::uint64_t i = 0; i < n; ++i) batch.push_back(id(key, i));
        } else if (kind == 2) {
          const std::uint64_t key = 1 + rng() % next_key;
          const std::uint64_t from = rng() % 30;
          const std::uint64_t n = 1 + rng() % 20;
          for (std::uint64_t i = from; i < from + n; ++i) batch.push_back(id(key, i));
        } else {
          for (int i = 0; i < 8; ++i) batch.push_back(id(1 + rng() % next_key, rng() % 50));
        }
        now += static_cast<std::int64_t>(rng() % 7);
        w.expire(now);
        for (const auto& e : batch) {
          ASSERT_EQ(w.contains(e), guard.contains(as_fingerprint(e)))
              << "capacity " << capacity << " ttl " << ttl << " step " << step;
        }
        for (const auto& e : batch) {
          w.remember(e, now);
          guard.remember(as_fingerprint(e));
        }
        ASSERT_EQ(w.size(), guard.size()) << "capacity " << capacity << " step " << step;
        ASSERT_EQ(w.evictions(), guard.eviction_count()) << "capacity " << capacity;
        ASSERT_LE(w.runs(), w.size());
      }
    }
  }
}

}  // namespace
}  // namespace cppcdc::detail
