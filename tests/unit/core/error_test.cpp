#include <gtest/gtest.h>

#include "cppcdc/error.hpp"

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
