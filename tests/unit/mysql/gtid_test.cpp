// MariaDB GTID positions and MySQL GTID sets.

#include "source/mysql/gtid.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppcdc::mysql {
namespace {

using ::testing::HasSubstr;

TEST(MariaGtidPosition, ParsesFormatsSortedAndApplies) {
  auto p = MariaGtidPosition::parse("1-2-7, 0-1-100");
  ASSERT_TRUE(p) << p.error().report();
  EXPECT_EQ(p->text(), "0-1-100,1-2-7");
  EXPECT_TRUE(p->contains({0, 9, 100}));
  EXPECT_TRUE(p->contains({0, 1, 5}));
  EXPECT_FALSE(p->contains({0, 1, 101}));
  EXPECT_FALSE(p->contains({3, 1, 1}));
  p->apply({0, 1, 101});
  p->apply({5, 3, 1});
  EXPECT_EQ(p->text(), "0-1-101,1-2-7,5-3-1");
  EXPECT_TRUE(p->contains({0, 1, 101}));
  EXPECT_EQ(p->gtids().size(), 3u);
}

TEST(MariaGtidPosition, EmptyAndInvalid) {
  auto e = MariaGtidPosition::parse("");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->empty());
  EXPECT_EQ(e->text(), "");
  EXPECT_THAT(MariaGtidPosition::parse("0-1-100,0-2-5").error().message(),
              HasSubstr("listed twice"));
  EXPECT_THAT(MariaGtidPosition::parse("0-1").error().message(),
              HasSubstr("domain-server-sequence"));
  EXPECT_FALSE(MariaGtidPosition::parse("0-1-x"));
  EXPECT_FALSE(MariaGtidPosition::parse("0-1-1,"));
  EXPECT_FALSE(MariaGtidPosition::parse("-1-1-1"));
  EXPECT_FALSE(MariaGtidPosition::parse("4294967296-1-1"));
  EXPECT_EQ(MariaGtid::parse("0-1-18446744073709551615")->sequence, 18446744073709551615ull);
}

constexpr const char* kA = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
constexpr const char* kB = "4e11fa47-71ca-11e1-9e33-c80aa9429562";

TEST(MySqlGtidSet, ParsesCanonicalisesAndMerges) {
  auto s = MySqlGtidSet::parse(std::string(kB) + ":1-3,\n" + kA +
                               ":7-9:1-5:6, 3E11FA4771CA11E19E33C80AA9429562:20");
  ASSERT_TRUE(s) << s.error().report();
  EXPECT_EQ(s->text(), std::string(kA) + ":1-9:20," + kB + ":1-3");
  EXPECT_TRUE(s->contains(kA, 6));
  EXPECT_TRUE(s->contains(kA, 20));
  EXPECT_FALSE(s->contains(kA, 10));
  EXPECT_FALSE(s->contains(kB, 4));
  s->add(kA, 10);
  s->add_interval(kA, 11, 19);
  EXPECT_EQ(s->text(), std::string(kA) + ":1-20," + kB + ":1-3");
}

TEST(MySqlGtidSet, TaggedGtids) {
  auto s = MySqlGtidSet::parse(std::string(kA) + ":1-5:Tag_b:3:tag_a:1-2");
  ASSERT_TRUE(s) << s.error().report();
  EXPECT_EQ(s->text(), std::string(kA) + ":1-5:tag_a:1-2:tag_b:3");
  EXPECT_TRUE(s->contains(kA, 3, "TAG_B"));
  EXPECT_FALSE(s->contains(kA, 4, "tag_b"));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA) + ":tag"));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA) + ":1-2:9tag:3"));
}

TEST(MySqlGtidSet, SubsetAndErrors) {
  auto big = *MySqlGtidSet::parse(std::string(kA) + ":1-100," + kB + ":1-3");
  auto small = *MySqlGtidSet::parse(std::string(kA) + ":5-10:50");
  EXPECT_TRUE(big.contains(small));
  EXPECT_FALSE(small.contains(big));
  EXPECT_TRUE(big.contains(*MySqlGtidSet::parse("")));
  EXPECT_THAT(MySqlGtidSet::parse("nope:1-2").error().message(), HasSubstr("server uuid"));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA)));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA) + ":0-3"));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA) + ":5-3"));
  EXPECT_FALSE(MySqlGtidSet::parse(std::string(kA) + ":1-3,"));
}

}  // namespace
}  // namespace cppcdc::mysql
