#include <gtest/gtest.h>

#include "cppcdc/error.hpp"
#include "cppcdc/pg_lsn.hpp"

using namespace cppcdc;

TEST(Error, ReportRendersWholeChainOutermostFirst) {
  Error e = Error::checkpoint(ErrorKind::kTransient, "disk full")
                .context("saving the commit barrier")
                .context("acknowledging batch 7");
  EXPECT_EQ(e.to_string(), "acknowledging batch 7");
  EXPECT_EQ(e.report(), "acknowledging batch 7: saving the commit barrier: checkpoint error: disk full");
  ASSERT_EQ(e.chain().size(), 2u);
  EXPECT_EQ(e.chain()[0], "acknowledging batch 7");
}

TEST(Error, ContextNeverChangesTheKind) {
  Error t = Error::source(ErrorKind::kTransient, "connection reset");
  EXPECT_EQ(t.context("reading").kind(), ErrorKind::kTransient);
  EXPECT_TRUE(t.context("a").context("b").retryable());
  Error f = Error::terminal("auth failed");
  EXPECT_FALSE(f.context("x").retryable());
}

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
