// PostgreSQL's visibility rule for the incremental snapshot's in-flight set: a transaction is
// invisible to a pg_current_snapshot() value when xid >= xmax or xid is listed in xip.

#include <gtest/gtest.h>

#include "source/postgres/incremental_backend.hpp"

using cppcdc::pg::invisible_to_snapshot;

TEST(InFlightSet, ALoneCommittingTransactionSitsAtXmaxAndIsNotListed) {
  // One writer mid-commit: its xid is xmax itself, and xip is empty.
  EXPECT_TRUE(invisible_to_snapshot("733:733:", 733));
  EXPECT_FALSE(invisible_to_snapshot("733:733:", 732));
  EXPECT_TRUE(invisible_to_snapshot("733:733:", 800));  // started after the snapshot
}

TEST(InFlightSet, ListedTransactionsAreInvisibleOthersBelowXmaxAreVisible) {
  const char* s = "100:105:101,103";
  EXPECT_TRUE(invisible_to_snapshot(s, 101));
  EXPECT_TRUE(invisible_to_snapshot(s, 103));
  EXPECT_FALSE(invisible_to_snapshot(s, 102));
  EXPECT_FALSE(invisible_to_snapshot(s, 104));
  EXPECT_FALSE(invisible_to_snapshot(s, 99));
  EXPECT_TRUE(invisible_to_snapshot(s, 105));
}

TEST(InFlightSet, EpochExtendedValuesCompareOnTheLow32BitsModulo2To32) {
  // xid8 values carry the epoch in the high bits; pgoutput's Begin gives the 32-bit xid.
  const std::uint64_t epoch = std::uint64_t{3} << 32;
  const std::string s = std::to_string(epoch + 10) + ":" + std::to_string(epoch + 20) + ":" +
                        std::to_string(epoch + 15);
  EXPECT_TRUE(invisible_to_snapshot(s, 15));
  EXPECT_FALSE(invisible_to_snapshot(s, 14));
  EXPECT_TRUE(invisible_to_snapshot(s, 20));
  // Across the 32-bit wrap: xmax just past it, an xid just before it is in the past.
  const std::string w = "4294967290:4294967300:";
  EXPECT_FALSE(invisible_to_snapshot(w, 4294967295u));
  EXPECT_TRUE(invisible_to_snapshot(w, 4));  // 4294967300 mod 2^32
}

TEST(InFlightSet, TextThatDoesNotParseFlagsNothing) {
  EXPECT_FALSE(invisible_to_snapshot("", 5));
  EXPECT_FALSE(invisible_to_snapshot("garbage", 5));
  EXPECT_FALSE(invisible_to_snapshot("1:x:", 5));
}
