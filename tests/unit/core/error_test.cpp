#include "cppcdc/error.hpp"

#include <gtest/gtest.h>

#include "cppcdc/result.hpp"

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

namespace cppcdc {
namespace {

// An Error is one pointer, so that a Result holding one stays small and a successful Status
// costs no clear of a large error storage (it did at 152 bytes: a quarter of the MariaDB row
// decoder's own time went to that).
TEST(Error, IsOnePointerAndASuccessfulStatusIsSmall) {
  EXPECT_EQ(sizeof(Error), sizeof(void*));
  EXPECT_LE(sizeof(Status), 2 * sizeof(void*));
}

TEST(Error, CopiesAreDeepAndAMovedFromErrorReadsAsEmpty) {
  Error a = Error::transient("boom").context("reading").for_setting(SettingOwner::kSink, "path");
  Error b = a;
  b = std::move(b).context("outer");
  EXPECT_EQ(a.report(), "reading: transient error: path: boom");
  EXPECT_EQ(b.report(), "outer: reading: transient error: path: boom");
  EXPECT_EQ(b.kind(), ErrorKind::kTransient);
  Error c = std::move(a);
  EXPECT_EQ(c.message(), "boom");
  // NOLINTNEXTLINE(bugprone-use-after-move): what a moved-from Error reads is defined
  EXPECT_EQ(a.message(), "");
  EXPECT_EQ(a.kind(), ErrorKind::kInternal);
  EXPECT_TRUE(a.chain().empty());
  a = std::move(a).context("again");  // a moved-from Error takes modifiers too
  EXPECT_EQ(a.chain().size(), 1u);
  a = c;
  EXPECT_EQ(a.report(), c.report());
}

}  // namespace
}  // namespace cppcdc
