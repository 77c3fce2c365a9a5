// PostgreSQL positions: the LSN text form, and how LSNs travel through the core's opaque
// position types.

#include <gtest/gtest.h>

#include "cppcdc/postgres/lsn.hpp"

using namespace cppcdc;

TEST(PgLsn, ParsesAndPrintsLikePgLsn) {
  auto l = pg::Lsn::parse("16/B374D848");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->value(), (0x16ull << 32) | 0xB374D848ull);
  EXPECT_EQ(l->to_string(), "16/B374D848");
  EXPECT_EQ(pg::Lsn(0).to_string(), "0/0");
  EXPECT_EQ(pg::Lsn::parse("0/16b2e48")->to_string(), "0/16B2E48");
  for (const char* bad : {"", "/", "1/", "/1", "x/1", "1/2/3", "123456789/0", "1 /2", "-1/2"}) {
    EXPECT_FALSE(pg::Lsn::parse(bad)) << bad;
  }
  EXPECT_LT(*pg::Lsn::parse("0/FFFFFFFF"), *pg::Lsn::parse("1/0"));
}

TEST(PgLsn, LogPositionsKeepLsnOrderByteWise) {
  const auto a = pg::to_log_position(pg::Lsn(0xFFFFFFFFull));
  const auto b = pg::to_log_position(pg::Lsn(0x100000000ull));
  EXPECT_TRUE(LogPosition::compare_bytes(a, b) < 0);
  EXPECT_EQ(pg::lsn_of(b), pg::Lsn(0x100000000ull));
  EXPECT_FALSE(pg::lsn_of(LogPosition()));
  EXPECT_FALSE(pg::lsn_of(*LogPosition::from_bytes("abc")));
}

TEST(PgLsn, OffsetOrderComparesLsnsAndRefusesTextThatIsNotOne) {
  const auto order = pg::lsn_order();
  EXPECT_EQ(*order->compare("0/FFFFFFFF", "1/0"), std::partial_ordering::less);
  EXPECT_EQ(*order->compare("1/0", "1/0"), std::partial_ordering::equivalent);
  const auto bad = order->compare("0/1", "mysql-bin.000001:4");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().report().find("mysql-bin.000001:4"), std::string::npos)
      << bad.error().report();
  EXPECT_FALSE(order->parse(""));
}
