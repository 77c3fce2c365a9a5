// The pieces of the MariaDB incremental snapshot backend that need no server: the byte order
// of encoded binlog coordinates (files first, then positions) and the watermark log's lookups,
// including how it forgets old entries. The backend against the server is in
// tests/integration/mariadb_incremental_test.cpp.

#include "source/mysql/incremental_backend.hpp"

#include <gtest/gtest.h>

#include <compare>

namespace cppcdc::mysql::detail {
namespace {

TEST(MariaWatermarks, CoordinatesOrderByFileThenPosition) {
  const auto a = encode_coordinate(3, 0xffff'ffff'ffULL);  // a position past 4 GiB
  const auto b = encode_coordinate(4, 4);
  const auto c = encode_coordinate(4, 5);
  EXPECT_EQ(a.size(), 16u);
  EXPECT_TRUE(LogPosition::compare_bytes(a, b) < 0);
  EXPECT_TRUE(LogPosition::compare_bytes(b, c) < 0);
  EXPECT_TRUE(LogPosition::compare_bytes(c, encode_coordinate(4, 5)) == 0);
  EXPECT_TRUE(LogPosition::compare_bytes(encode_coordinate(256, 0), encode_coordinate(255, 1)) > 0);
}

TEST(MariaWatermarks, TheLogFindsAGtidAndForgetsTheOldest) {
  WatermarkLog log;
  EXPECT_FALSE(log.find("0-1-1"));
  EXPECT_FALSE(log.find(""));
  log.seen("0-1-1", encode_coordinate(1, 100));
  log.seen("0-1-2", encode_coordinate(1, 200));
  ASSERT_TRUE(log.find("0-1-2"));
  EXPECT_TRUE(LogPosition::compare_bytes(*log.find("0-1-2"), encode_coordinate(1, 200)) == 0);
  EXPECT_FALSE(log.find("0-1-20"));  // whole GTIDs only
  for (std::size_t i = 0; i < WatermarkLog::kLimit; ++i) {
    log.seen("1-1-" + std::to_string(i), encode_coordinate(2, i));
  }
  EXPECT_FALSE(log.find("0-1-1"));
  EXPECT_TRUE(log.find("1-1-0"));
  log.clear();
  EXPECT_FALSE(log.find("1-1-0"));
}

}  // namespace
}  // namespace cppcdc::mysql::detail
