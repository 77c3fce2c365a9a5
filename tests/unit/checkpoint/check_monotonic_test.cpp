// Invariant 6 (a durable checkpoint never moves the stream position backwards), checked by
// check_monotonic as strictly as each source type allows, and applied by InMemoryCheckpoint.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/mysql.hpp"
#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/sqlserver.hpp"

namespace cppcdc {
namespace {

// The guard knows no notation itself: each connector registers its order.
class RegisterOrders : public ::testing::Environment {
 public:
  void SetUp() override {
    pg::register_positions();
    mysql::register_positions();
    sqlserver::register_positions();
  }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new RegisterOrders);

CheckpointRecord rec(std::string type, std::string id, std::string offset) {
  CheckpointRecord r;
  r.source_type = std::move(type);
  r.source_id = std::move(id);
  r.offset = std::move(offset);
  r.committed_events = 10;
  r.saved_at_ms = 1700000000000;
  return r;
}

bool accepted(const std::string& type, const std::string& before, const std::string& after) {
  return check_monotonic(rec(type, "src", before), rec(type, "src", after)).has_value();
}

// --- general rules ----------------------------------------------------------------------------

TEST(Invariant6, FirstRecordIsNotCompared) {
  EXPECT_TRUE(check_monotonic(std::nullopt, rec("postgres", "slot", "0/16B2E48")));
  EXPECT_TRUE(check_monotonic(std::nullopt, rec("mysql", "db", "mysql-bin.000001:4")));
}

TEST(Invariant6, ChangedSourceIdIsNotCompared) {
  EXPECT_TRUE(check_monotonic(rec("postgres", "old_slot", "0/16B2E48"),
                              rec("postgres", "new_slot", "0/0")));
  EXPECT_TRUE(check_monotonic(rec("mysql", "a", "mysql-bin.000012:4567"),
                              rec("mysql", "b", "mysql-bin.000001:4")));
  EXPECT_TRUE(check_monotonic(rec("sqlserver", "a", "0000002A000001F00003"),
                              rec("sqlserver", "b", "00000001000000010001")));
}

TEST(Invariant6, ChangedSourceTypeIsNotCompared) {
  EXPECT_TRUE(check_monotonic(rec("mysql", "db", "mysql-bin.000012:4567"),
                              rec("mariadb", "db", "mysql-bin.000001:4")));
}

TEST(Invariant6, UnknownSourceTypeIsNotCompared) {
  EXPECT_TRUE(accepted("mongodb", "9", "1"));
  EXPECT_TRUE(accepted("custom", "0/16B2E48", "0/0"));
}

TEST(Invariant6, EqualPositionIsAccepted) {
  EXPECT_TRUE(accepted("postgres", "0/16B2E48", "0/16B2E48"));
  EXPECT_TRUE(accepted("mysql", "mysql-bin.000012:4567", "mysql-bin.000012:4567"));
  EXPECT_TRUE(accepted("sqlserver", "0000002A000001F00003", "0000002A000001F00003"));
}

// --- PostgreSQL -------------------------------------------------------------------------------

TEST(Invariant6, PostgresZeroLsnIsRefusedAsTerminalNamingBothPositions) {
  const auto status =
      check_monotonic(rec("postgres", "my_slot", "0/16B2E48"), rec("postgres", "my_slot", "0/0"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  EXPECT_EQ(status.error().category(), "checkpoint error");
  const std::string report = status.error().report();
  EXPECT_NE(report.find("'0/16B2E48'"), std::string::npos) << report;
  EXPECT_NE(report.find("'0/0'"), std::string::npos) << report;
  EXPECT_NE(report.find("my_slot"), std::string::npos) << report;
  EXPECT_NE(report.find("bug in the connector"), std::string::npos) << report;
  EXPECT_NE(report.find("previous record is kept"), std::string::npos) << report;
}

TEST(Invariant6, PostgresZeroLsnInAnyCaseOrPaddingIsRefused) {
  EXPECT_FALSE(accepted("postgres", "0/16B2E48", "00000000/00000000"));
}

TEST(Invariant6, PostgresUnparsableLsnIsRefused) {
  EXPECT_FALSE(accepted("postgres", "0/16B2E48", ""));
  EXPECT_FALSE(accepted("postgres", "0/16B2E48", "16B2E48"));
  EXPECT_FALSE(accepted("postgres", "0/16B2E48", "0/XYZ"));
}

TEST(Invariant6, PostgresBackwardsLsnIsAcceptedBecauseCommitOrderIsNotWalOrder) {
  EXPECT_TRUE(accepted("postgres", "0/16B2E48", "0/16B2000"));
  EXPECT_TRUE(accepted("postgres", "1/0", "0/FFFFFFFF"));
}

TEST(Invariant6, PostgresForwardLsnIsAccepted) {
  EXPECT_TRUE(accepted("postgres", "0/16B2E48", "0/16B2F00"));
  EXPECT_TRUE(accepted("postgres", "0/FFFFFFFF", "1/0"));
}

// --- MySQL / MariaDB --------------------------------------------------------------------------

TEST(Invariant6, MysqlPositionRegressionInSameFileIsRefused) {
  const auto status = check_monotonic(rec("mysql", "db1", "mysql-bin.000012:4567"),
                                      rec("mysql", "db1", "mysql-bin.000012:4000"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  const std::string report = status.error().report();
  EXPECT_NE(report.find("mysql-bin.000012:4567"), std::string::npos) << report;
  EXPECT_NE(report.find("mysql-bin.000012:4000"), std::string::npos) << report;
  EXPECT_NE(report.find("db1"), std::string::npos) << report;
}

TEST(Invariant6, MysqlEarlierBinlogFileIsRefusedEvenWithHigherPosition) {
  EXPECT_FALSE(accepted("mysql", "mysql-bin.000012:4567", "mysql-bin.000011:999999"));
}

TEST(Invariant6, MysqlForwardPositionIsAccepted) {
  EXPECT_TRUE(accepted("mysql", "mysql-bin.000012:4567", "mysql-bin.000012:5000"));
}

TEST(Invariant6, MysqlNextBinlogFileIsAcceptedWithLowerPosition) {
  EXPECT_TRUE(accepted("mysql", "mysql-bin.000012:4567", "mysql-bin.000013:4"));
  // The sequence is compared as a number, not as text.
  EXPECT_TRUE(accepted("mysql", "mysql-bin.999999:4567", "mysql-bin.1000000:4"));
}

TEST(Invariant6, MariadbUsesTheBinlogFilePositionRule) {
  EXPECT_FALSE(accepted("mariadb", "mariadb-bin.000003:800", "mariadb-bin.000003:700"));
  EXPECT_TRUE(accepted("mariadb", "mariadb-bin.000003:800", "mariadb-bin.000004:4"));
}

TEST(Invariant6, MysqlGtidOffsetsAreNotCompared) {
  const std::string uuid = "3E11FA47-71CA-11E1-9E33-C80AA9429562";
  EXPECT_TRUE(accepted("mysql", uuid + ":1-100", uuid + ":1-5"));
  EXPECT_TRUE(accepted("mysql", uuid + ":23", uuid + ":5"));
  EXPECT_TRUE(
      accepted("mysql", uuid + ":1-5,4A22FB58-71CA-11E1-9E33-C80AA9429562:1-9", uuid + ":1-2"));
  EXPECT_TRUE(accepted("mysql", uuid + ":tag:1-100", uuid + ":tag:1-5"));
  EXPECT_TRUE(accepted("mariadb", "0-1-100", "0-1-5"));
}

TEST(Invariant6, MysqlSwitchBetweenGtidAndFilePositionIsNotCompared) {
  EXPECT_TRUE(accepted("mysql", "mysql-bin.000012:4567", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1"));
  EXPECT_TRUE(accepted("mysql", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1", "mysql-bin.000001:4"));
}

TEST(Invariant6, MysqlDifferentBinlogBasenamesAreNotCompared) {
  // Renaming log_bin restarts the numbering; the two sequences share no scale.
  EXPECT_TRUE(accepted("mysql", "old-bin.000050:4567", "new-bin.000001:4"));
}

// --- SQL Server -------------------------------------------------------------------------------

TEST(Invariant6, SqlServerCommitLsnRegressionIsRefused) {
  const auto status = check_monotonic(rec("sqlserver", "dbo_cdc", "0000002A000001F00003"),
                                      rec("sqlserver", "dbo_cdc", "0000002A000001E00001"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  const std::string report = status.error().report();
  EXPECT_NE(report.find("0000002A000001F00003"), std::string::npos) << report;
  EXPECT_NE(report.find("0000002A000001E00001"), std::string::npos) << report;
}

TEST(Invariant6, SqlServerCommitLsnForwardIsAccepted) {
  EXPECT_TRUE(accepted("sqlserver", "0000002A000001F00003", "0000002A000001F00004"));
  EXPECT_TRUE(accepted("sqlserver", "0000002A000001F00003:0000002A000001F00002:2",
                       "0000002B000000100001:0000002B000000100001:1"));
}

TEST(Invariant6, SqlServerBareAndLongFormOfOneCommitCompareEqual) {
  const std::string bare = "0000002A000001F00003";
  const std::string full = bare + ":0000002A000001F00002:4";
  EXPECT_TRUE(accepted("sqlserver", full, bare));
  EXPECT_TRUE(accepted("sqlserver", bare, full));
}

TEST(Invariant6, SqlServerOnlyTheCommitLsnIsCompared) {
  // A lower seqval within a later commit is fine; a later seqval of an earlier commit is not.
  EXPECT_TRUE(accepted("sqlserver", "0000002A000001F00003:0000002A000001F00009:2",
                       "0000002A000001F00004:0000002A000001F00001:2"));
  EXPECT_FALSE(accepted("sqlserver", "0000002A000001F00003:0000002A000001F00001:2",
                        "0000002A000001F00002:FFFFFFFFFFFFFFFFFFFF:4"));
}

TEST(Invariant6, SqlServerLsnIgnoresCasePrefixAndPadding) {
  EXPECT_TRUE(accepted("sqlserver", "0x0000002a000001f00003", "0000002A000001F00003"));
  EXPECT_TRUE(accepted("sqlserver", "0000002A000001F00003", "0X2A000001F00003"));
  EXPECT_FALSE(accepted("sqlserver", "0x0000002B000001F00003", "2a000001f00003"));
  EXPECT_TRUE(accepted("sqlserver", "ff", "0x0100"));
}

TEST(Invariant6, TheGuardAsksTheRegisteredOrderOfTheSourceType) {
  // A custom source type orders its offsets as integers; the core learns it from the registry.
  class IntegerOrder final : public PositionOrder {
   public:
    Status parse(std::string_view offset) const override {
      if (offset.empty() || offset.find_first_not_of("0123456789") != std::string_view::npos) {
        return fail(Error::invalid_data("not an integer"));
      }
      return ok();
    }
    Result<std::partial_ordering> compare(std::string_view a,
                                          std::string_view b) const override {
      CPPCDC_TRY(parse(a));
      CPPCDC_TRY(parse(b));
      return std::partial_ordering(std::stoull(std::string(a)) <=> std::stoull(std::string(b)));
    }
  };
  EXPECT_TRUE(accepted("integers", "10", "9"));  // not registered yet: not compared
  register_position_order("integers", std::make_shared<IntegerOrder>());
  EXPECT_FALSE(accepted("integers", "10", "9"));
  EXPECT_TRUE(accepted("integers", "9", "10"));
  const auto unparsable = check_monotonic(rec("integers", "src", "9"), rec("integers", "src", "x"));
  ASSERT_FALSE(unparsable);
  EXPECT_NE(unparsable.error().report().find("does not parse"), std::string::npos)
      << unparsable.error().report();
  EXPECT_EQ(find_position_order("nobody"), nullptr);
}

// --- InMemoryCheckpoint -----------------------------------------------------------------------

TEST(InMemoryCheckpoint, StartsEmptyAndReturnsTheLastSavedRecord) {
  InMemoryCheckpoint checkpoint;
  auto empty = checkpoint.load();
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->has_value());

  const auto record = rec("postgres", "slot", "0/16B2E48");
  ASSERT_TRUE(checkpoint.save(record));
  auto loaded = checkpoint.load();
  ASSERT_TRUE(loaded);
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, record);
  EXPECT_EQ(checkpoint.name(), "memory");
}

TEST(Invariant6, InMemoryCheckpointRefusesRegressionAndKeepsPreviousRecord) {
  InMemoryCheckpoint checkpoint;
  const auto first = rec("mysql", "db", "mysql-bin.000012:4567");
  ASSERT_TRUE(checkpoint.save(first));
  const auto status = checkpoint.save(rec("mysql", "db", "mysql-bin.000012:10"));
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal);
  auto loaded = checkpoint.load();
  ASSERT_TRUE(loaded);
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, first);
}

}  // namespace
}  // namespace cppcdc
