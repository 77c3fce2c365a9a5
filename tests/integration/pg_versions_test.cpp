// What an older server refuses: settings that need a newer PostgreSQL stop the start with an
// error naming the setting, the version it needs and the server's own, before any slot or
// publication is made. Each test applies to the servers that lack the feature and is skipped,
// saying so, on the others (where the feature's own tests run). Part of the pgcore set that
// scripts/pg-matrix.sh runs against every major from 12 to 18.

#include <gtest/gtest.h>

#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "pg_util.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;

namespace {

/// Skips the test unless the server is older than PostgreSQL `major`.
#define CPPCDC_ONLY_BEFORE_PG(major, what)                                                  \
  do {                                                                                      \
    if (::cppcdc::it::server_version_num() >= (major)*10000) {                              \
      GTEST_SKIP() << "this refusal is for servers before PostgreSQL " << (major)           \
                   << "; this server is PostgreSQL " << ::cppcdc::it::server_version_text() \
                   << ", where " << (what) << " works (and is tested elsewhere)";           \
    }                                                                                       \
  } while (0)

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class PgVersions : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("vers");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    s.query(
        "create table t (id int primary key, v text);"
        "create table parted (id int primary key) partition by range (id);"
        "create table parted_low partition of parted for values from (0) to (100)");
  }
  void TearDown() override { it::drop_slots(db_); }

  pg::PostgresSourceConfig config(std::vector<std::string> tables) const {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = db_;
    cfg.publication_name = "vers_pub";
    cfg.tables = std::move(tables);
    return cfg;
  }

  // Starts a runtime over `cfg`, expects a terminal refusal whose report contains every part
  // of `expected`, and checks that neither the slot nor the publication was made.
  void expect_refused(const pg::PostgresSourceConfig& cfg,
                      const std::vector<std::string>& expected) {
    it::ReaderOptions options;
    options.max_retries = 0;
    it::Reader r(db_, cfg, options);
    auto st = r.runtime->start();
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal) << st.error().report();
    for (const auto& part : expected) {
      EXPECT_TRUE(has(st.error().report(), part))
          << "missing \"" << part << "\" in " << st.error().report();
    }
    PgSession s(it::dsn_for(db_));
    EXPECT_EQ(s.scalar("select count(*) from pg_replication_slots where slot_name = '" + db_ + "'"),
              "0");
    EXPECT_EQ(s.scalar("select count(*) from pg_publication where pubname = 'vers_pub'"), "0");
  }

  std::string db_;
};

TEST_F(PgVersions, StreamInProgressBeforeFourteenIsRefusedNamingTheVersions) {
  CPPCDC_ONLY_BEFORE_PG(14, "stream_in_progress");
  auto cfg = config({"public.t"});
  cfg.stream_in_progress = true;
  expect_refused(cfg, {"stream_in_progress needs PostgreSQL 14 or later",
                       "this server is PostgreSQL " + it::server_version_text(),
                       "set stream_in_progress = false"});
}

TEST_F(PgVersions, LogicalMessagesBeforeFourteenAreRefusedNamingTheVersions) {
  CPPCDC_ONLY_BEFORE_PG(14, "capture_logical_messages");
  auto cfg = config({"public.t"});
  cfg.capture_logical_messages = true;
  expect_refused(cfg, {"capture_logical_messages needs PostgreSQL 14 or later",
                       "this server is PostgreSQL " + it::server_version_text(),
                       "set capture_logical_messages = false"});
}

TEST_F(PgVersions, APartitionedTableBeforeThirteenIsRefusedNamingTheVersionsButAPartitionIsNot) {
  CPPCDC_ONLY_BEFORE_PG(13, "capturing a partitioned table");
  expect_refused(
      config({"public.t", "public.parted"}),
      {"public.parted is a partitioned table", "needs PostgreSQL 13 or later",
       "this server is PostgreSQL " + it::server_version_text(), "capture its partitions instead"});
  // Its partition is a plain table: captured (the publication is made without the
  // publish_via_partition_root option that 12 lacks), and the stream names it.
  it::Reader r(db_, config({"public.t", "public.parted_low"}));
  ASSERT_TRUE(r.runtime->start());
  PgSession s(it::dsn_for(db_));
  s.query("insert into parted values (1); insert into t values (2, 'x')");
  auto events = r.take(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].table, "parted_low");
  EXPECT_EQ(events[1].table, "t");
  ASSERT_TRUE(r.runtime->stop());
}
