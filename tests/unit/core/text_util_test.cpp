// Small text helpers of the core: counts in messages read as English ("1 row", "2 rows").

#include "core/text_util.hpp"

#include <gtest/gtest.h>

namespace cppcdc::detail {
namespace {

TEST(TextUtil, CountedUsesTheSingularForOneOnly) {
  EXPECT_EQ(counted(1, "row"), "1 row");
  EXPECT_EQ(counted(0, "row"), "0 rows");
  EXPECT_EQ(counted(2, "table"), "2 tables");
  EXPECT_EQ(counted(1, "unfinished table"), "1 unfinished table");
  EXPECT_EQ(counted(3, "entry", "entries"), "3 entries");
  EXPECT_EQ(counted(1, "entry", "entries"), "1 entry");
}

}  // namespace
}  // namespace cppcdc::detail
