// foreign_checkpoint_check(): the preflight line every source gives for a checkpoint record
// that a source of another type wrote under its key.

#include <gtest/gtest.h>

#include "cppcdc/plugin.hpp"

namespace cppcdc {
namespace {

CheckpointRecord record_of(const std::string& type) {
  CheckpointRecord r;
  r.source_type = type;
  r.source_id = "cppcdc";
  r.offset = type == "postgres" ? "0/16B3748" : "0-1-307";
  return r;
}

TEST(ForeignCheckpoint, NoRecordOrOneOfThisSourceTypeIsNotALine) {
  EXPECT_FALSE(foreign_checkpoint_check(std::nullopt, "mariadb", "cppcdc", "source_id"));
  EXPECT_FALSE(foreign_checkpoint_check(record_of("mariadb"), "mariadb", "cppcdc", "source_id"));
  EXPECT_FALSE(foreign_checkpoint_check(record_of("postgres"), "postgres", "cppcdc", "slot_name"));
}

TEST(ForeignCheckpoint, ARecordOfAnotherSourceTypeFailsNamingTheKeySettingNotRemovingIt) {
  const auto line =
      foreign_checkpoint_check(record_of("postgres"), "mariadb", "cppcdc", "source_id");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->outcome, PreflightCheck::Outcome::kFail);
  EXPECT_EQ(line->what,
            "the checkpoint stored under this pipeline's key (cppcdc) was written by a postgres "
            "source ('cppcdc', at 0/16B3748): another pipeline shares the key");
  EXPECT_NE(line->remedy.find("give this pipeline its own source_id"), std::string::npos)
      << line->remedy;
  EXPECT_NE(line->remedy.find("do not remove that record"), std::string::npos) << line->remedy;
  EXPECT_EQ(line->remedy.find("teardown"), std::string::npos) << line->remedy;
  // A MySQL pipeline's record is not a MariaDB pipeline's either (Source::type() differs).
  EXPECT_TRUE(foreign_checkpoint_check(record_of("mysql"), "mariadb", "cppcdc", "source_id"));
}

}  // namespace
}  // namespace cppcdc
