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

TEST(Error, ASettingIsNamedByItsPathAndRenderedByTheCaller) {
  const Error e = Error::terminal("table public.x does not exist")
                      .for_setting(SettingOwner::kSource, "tables")
                      .context("starting the source");
  EXPECT_EQ(e.kind(), ErrorKind::kTerminal);
  EXPECT_EQ(e.setting_owner(), SettingOwner::kSource);
  EXPECT_EQ(e.setting(), "tables");
  EXPECT_EQ(e.message(), "table public.x does not exist");
  EXPECT_EQ(e.report(),
            "starting the source: terminal error: tables: table public.x does not exist");
  EXPECT_EQ(e.report("[source] tables"),
            "starting the source: terminal error: [source] tables: table public.x does not exist");
  EXPECT_EQ(e.report(""), "starting the source: terminal error: table public.x does not exist");

  const Error plain = Error::configuration("bad");
  EXPECT_EQ(plain.setting_owner(), SettingOwner::kNone);
  EXPECT_EQ(plain.report("[x] y"), "configuration error: bad");
  // No owner, no setting.
  EXPECT_TRUE(Error::configuration("bad").for_setting(SettingOwner::kNone, "y").setting().empty());
}
