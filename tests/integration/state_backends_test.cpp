// The "postgresql" and "redis" checkpoint backends against real servers, beyond their
// conformance suite: records of several MB (a MySQL source's schema history lives in
// source_state), what open() creates, the second writer's refusal naming its holder, a lost
// connection or lock, a lease taken away, and a record that survives a server restart.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "integration/log_capture.hpp"
#include "integration/state_backend_util.hpp"

namespace cppcdc::it::state {
namespace {

namespace fs = std::filesystem;
using conformance::postgres_record;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

/// A record whose source_state is about `bytes` long: JSON text with quotes, backslashes,
/// newlines and multi-byte UTF-8, as a schema history would hold.
CheckpointRecord large_record(std::size_t bytes, std::uint64_t events) {
  CheckpointRecord record = postgres_record("2B/" + std::to_string(1000 + events), events);
  std::mt19937 random(7);
  std::string state = "{\"history\":[";
  while (state.size() < bytes) {
    state += "{\"ddl\":\"CREATE TABLE \\\"t" + std::to_string(random() % 100000) +
             "\\\" (id int, note text) -- caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\\n\",\"pos\":" +
             std::to_string(random()) + "},";
  }
  state += "{}]}";
  record.source_state = std::move(state);
  return record;
}

Result<std::unique_ptr<Checkpoint>> must_open(Result<std::unique_ptr<Checkpoint>> opened) {
  EXPECT_TRUE(opened) << opened.error().report();
  return opened;
}

// --- postgresql -------------------------------------------------------------------------------

TEST(PostgresqlCheckpointBackend, AFourMegabyteRecordRoundTripsAndThePositionColumnFollows) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  auto checkpoint = must_open(harness.open("big_slot"));
  ASSERT_TRUE(checkpoint);
  const CheckpointRecord big = large_record(4 << 20, 1);
  ASSERT_GE(big.source_state.size(), 4u << 20);
  const auto saved = (*checkpoint)->save(big);
  ASSERT_TRUE(saved) << saved.error().report();
  const CheckpointRecord next = large_record(4 << 20, 2);
  ASSERT_TRUE((*checkpoint)->save(next));
  checkpoint->reset();
  auto reopened = must_open(harness.open("big_slot"));
  ASSERT_TRUE(reopened);
  const auto loaded = (*reopened)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_TRUE(**loaded == next) << "the 4 MB record did not read back as saved";
  const auto row = harness.admin().query("SELECT position, generation, length(record) FROM " +
                                         harness.table() + " WHERE id = 'big_slot'");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0], next.offset);
  EXPECT_EQ(row[0][1], "2");
  EXPECT_GT(std::stoul(row[0][2].value_or("0")), 4ul << 20);
}

TEST(PostgresqlCheckpointBackend, OpenCreatesNothingTheFirstSaveCreatesTheSchemaAndTable) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  const std::string exists =
      "SELECT count(*) FROM pg_namespace WHERE nspname = '" + harness.options().schema + "'";
  auto checkpoint = must_open(harness.open("slot_a"));
  ASSERT_TRUE(checkpoint);
  const auto empty = (*checkpoint)->load();
  ASSERT_TRUE(empty) << empty.error().report();
  EXPECT_FALSE(empty->has_value());
  EXPECT_EQ(harness.admin().scalar(exists), "0") << "open() or load() created the schema";
  ASSERT_TRUE((*checkpoint)->save(postgres_record("1/10", 1)));
  EXPECT_EQ(harness.admin().scalar(exists), "1");
  EXPECT_EQ(harness.admin().scalar("SELECT id FROM " + harness.table()), "slot_a");
}

TEST(PostgresqlCheckpointBackend, ASecondWriterIsAConfigurationErrorNamingTheHolder) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  auto first = must_open(harness.open("slot_a"));
  ASSERT_TRUE(first);
  const auto second = harness.open("slot_a");
  ASSERT_FALSE(second) << "a second writer opened";
  EXPECT_EQ(second.error().kind(), ErrorKind::kConfiguration);
  const std::string report = second.error().report();
  EXPECT_CONTAINS(report, harness.location("slot_a"));
  EXPECT_CONTAINS(report, "PostgreSQL backend pid ");
  EXPECT_CONTAINS(report, "application_name 'cppcdc-checkpoint pid " + std::to_string(getpid()));
  EXPECT_CONTAINS(report, "pg_terminate_backend");
  // Another id in the same table is another writer's business.
  EXPECT_TRUE(harness.open("slot_b"));
}

/// Ends the server sessions of this process's postgresql checkpoints.
void terminate_checkpoint_sessions(PgSession& admin) {
  const auto ended = admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1",
      {"cppcdc-checkpoint pid " + std::to_string(getpid()) + " %"});
  EXPECT_FALSE(ended.empty()) << "no checkpoint session to end";
  wait_until(
      [&] {
        return admin.scalar(
                   "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE "
                   "'cppcdc-checkpoint pid " +
                   std::to_string(getpid()) + " %'") == "0";
      },
      std::chrono::seconds(10));
}

TEST(PostgresqlCheckpointBackend, ALostConnectionIsReopenedByTheNextCallWithItsLock) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  auto checkpoint = must_open(harness.open("slot_a"));
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE((*checkpoint)->save(postgres_record("1/10", 1)));
  terminate_checkpoint_sessions(harness.admin());
  const CheckpointRecord next = postgres_record("1/20", 2);
  const auto saved = (*checkpoint)->save(next);
  ASSERT_TRUE(saved) << saved.error().report();
  const auto loaded = (*checkpoint)->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ(**loaded, next);
  // The lock came back with the connection.
  EXPECT_FALSE(harness.open("slot_a"));
}

TEST(PostgresqlCheckpointBackend, ARecordWrittenWhileTheLockWasLostIsNeverOverwritten) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  auto first = must_open(harness.open("slot_a"));
  ASSERT_TRUE(first);
  ASSERT_TRUE((*first)->save(postgres_record("1/10", 1)));
  // The first writer's session ends (a network cut); a second writer gets in meanwhile.
  terminate_checkpoint_sessions(harness.admin());
  const CheckpointRecord theirs = postgres_record("1/30", 3);
  {
    auto second = must_open(harness.open("slot_a"));
    ASSERT_TRUE(second);
    ASSERT_TRUE((*second)->save(theirs));
  }
  const auto refused = (*first)->save(postgres_record("1/20", 2));
  ASSERT_FALSE(refused) << "the first writer overwrote the second's record";
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(), "was changed by another writer (generation 2");
  // The first writer holds the lock again (it reconnected to find out): read through it.
  const auto held = (*first)->load();
  ASSERT_TRUE(held && held->has_value());
  EXPECT_EQ(**held, theirs);
}

TEST(PostgresqlCheckpointBackend, MissingPrivilegesAreConfigurationErrorsNamingTheGrant) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  PostgresqlCheckpointHarness harness;
  const std::string role = unique_name("ckpt_user");
  harness.admin().query("CREATE ROLE " + role + " LOGIN");
  PostgresqlCheckpointOptions options = harness.options();
  options.dsn = pg_dsn() + " user=" + role;
  auto expect_refused = [&](const std::string& setting, const std::string& remedy) {
    const auto opened = open_postgresql_checkpoint(options, "slot_a");
    ASSERT_FALSE(opened) << "opened without " << remedy;
    EXPECT_EQ(opened.error().kind(), ErrorKind::kConfiguration) << opened.error().report();
    EXPECT_EQ(opened.error().setting(), setting) << opened.error().report();
    EXPECT_CONTAINS(opened.error().report(), remedy);
  };
  // No schema, and no CREATE on the database.
  expect_refused("schema", "GRANT CREATE ON DATABASE");
  // The schema exists, but the user may not create in it.
  harness.admin().query("CREATE SCHEMA " + options.schema);
  expect_refused("schema", "GRANT USAGE, CREATE ON SCHEMA \"" + options.schema + "\"");
  // The table exists (made by another user), without privileges on it.
  {
    auto owner = must_open(harness.open("other"));
    ASSERT_TRUE(owner);
    ASSERT_TRUE((*owner)->save(postgres_record("1/10", 1)));
  }
  harness.admin().query("GRANT USAGE ON SCHEMA " + options.schema + " TO " + role);
  expect_refused("table", "GRANT SELECT, INSERT, UPDATE ON \"" + options.schema +
                              "\".\"checkpoints\" TO \"" + role + "\"");
  harness.admin().query("GRANT SELECT, INSERT, UPDATE ON " + harness.table() + " TO " + role);
  {
    auto opened = must_open(open_postgresql_checkpoint(options, "slot_a"));
    ASSERT_TRUE(opened);
    const auto saved = (*opened)->save(postgres_record("1/20", 2));
    EXPECT_TRUE(saved) << saved.error().report();
  }
  harness.admin().query("DROP OWNED BY " + role + "; DROP ROLE " + role);
}

TEST(PostgresqlCheckpointBackend, TheRecordSurvivesAServerRestartAndTheSameInstanceGoesOn) {
  CPPCDC_REQUIRE_SERVER(pg_unavailable());
  const char* base = std::getenv("CPPCDC_TEST_PG_PORT");
  if (base == nullptr) GTEST_SKIP() << "CPPCDC_TEST_PG_PORT is not set (scripts/test.sh sets it)";
  // A server of this test's own (the shared one is not restarted): CPPCDC_TEST_PG_PORT + 120
  // (tests/integration/own_server.hpp lists the offsets in use).
  const int port = std::atoi(base) + 120;
  const std::string dir = "/tmp/cppcdc-it-own-" + std::to_string(port);
  const std::string script = std::string(CPPCDC_SOURCE_DIR) + "/scripts/pg.sh";
  auto pg = [&](const std::string& args) {
    return std::system((script + " " + args + " >/dev/null 2>&1").c_str()) == 0;
  };
  pg("stop " + dir + " --purge");
  ASSERT_TRUE(pg("start " + dir + " " + std::to_string(port)));
  PostgresqlCheckpointOptions options;
  options.dsn = "host=127.0.0.1 port=" + std::to_string(port) + " dbname=postgres user=postgres";
  {
    auto checkpoint = must_open(open_postgresql_checkpoint(options, "slot_a"));
    ASSERT_TRUE(checkpoint);
    const CheckpointRecord first = large_record(64 << 10, 1);
    ASSERT_TRUE((*checkpoint)->save(first));
    ASSERT_TRUE(pg("stop " + dir));
    ASSERT_TRUE(pg("start " + dir + " " + std::to_string(port)));
    const auto loaded = (*checkpoint)->load();
    ASSERT_TRUE(loaded) << loaded.error().report();
    ASSERT_TRUE(loaded->has_value());
    EXPECT_TRUE(**loaded == first) << "the record changed across the restart";
    ASSERT_TRUE(pg("stop " + dir));
    ASSERT_TRUE(pg("start " + dir + " " + std::to_string(port)));
    // A save is the first call after this restart: the connection is reopened within it.
    const auto saved = (*checkpoint)->save(postgres_record("2B/9000", 2));
    EXPECT_TRUE(saved) << saved.error().report();
  }
  {
    auto checkpoint = must_open(open_postgresql_checkpoint(options, "slot_a"));
    ASSERT_TRUE(checkpoint);
    const auto loaded = (*checkpoint)->load();
    ASSERT_TRUE(loaded && loaded->has_value());
    EXPECT_EQ((*loaded)->offset, "2B/9000");
  }
  pg("stop " + dir + " --purge");
}

// --- redis ------------------------------------------------------------------------------------

TEST(RedisCheckpointBackend, AFourMegabyteRecordRoundTrips) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  RedisCheckpointHarness harness;
  auto checkpoint = must_open(harness.open("big_slot"));
  ASSERT_TRUE(checkpoint);
  const CheckpointRecord big = large_record(4 << 20, 1);
  const auto saved = (*checkpoint)->save(big);
  ASSERT_TRUE(saved) << saved.error().report();
  const CheckpointRecord next = large_record(4 << 20, 2);
  ASSERT_TRUE((*checkpoint)->save(next));
  checkpoint->reset();
  auto reopened = must_open(harness.open("big_slot"));
  ASSERT_TRUE(reopened);
  const auto loaded = (*reopened)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_TRUE(**loaded == next) << "the 4 MB record did not read back as saved";
  EXPECT_EQ(harness.client().get(harness.location("big_slot")), FileCheckpoint::encode(next));
}

TEST(RedisCheckpointBackend, ASecondWriterIsAConfigurationErrorNamingTheLeaseAndItsHolder) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  RedisCheckpointHarness harness;
  auto first = must_open(harness.open("slot_a"));
  ASSERT_TRUE(first);
  const auto second = harness.open("slot_a");
  ASSERT_FALSE(second) << "a second writer opened while the first renewed its lease";
  EXPECT_EQ(second.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(second.error().report(), "the lease '" + harness.writer_lock_location("slot_a") +
                                               "' is held by 'pid " + std::to_string(getpid()));
}

TEST(RedisCheckpointBackend, OpenWaitsForTheLeaseOfACrashedWriterToLapse) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  RedisCheckpointHarness harness;
  const std::string lease = harness.writer_lock_location("slot_a");
  harness.client().command({"SET", lease, "a crashed writer", "PX", "700"});
  LogCapture log;
  auto checkpoint = must_open(harness.open("slot_a"));
  ASSERT_TRUE(checkpoint);
  EXPECT_CONTAINS(harness.client().get(lease).value_or(""), "pid " + std::to_string(getpid()));
  // The wait is announced once, naming the lease and its holder.
  const std::string text = log.text();
  EXPECT_CONTAINS(text, "waiting up to ");
  EXPECT_CONTAINS(text, "for the lease on " + lease + " held by 'a crashed writer' to expire");
  EXPECT_EQ(text.find("waiting up to "), text.rfind("waiting up to ")) << text;
}

TEST(RedisCheckpointBackend, ASaveIsRefusedWhileAnotherWriterHoldsTheLease) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  RedisCheckpointHarness harness;
  auto checkpoint = must_open(harness.open("slot_a"));
  ASSERT_TRUE(checkpoint);
  const CheckpointRecord mine = postgres_record("1/10", 1);
  ASSERT_TRUE((*checkpoint)->save(mine));
  // This writer was paused past its lease, and another took it.
  const std::string lease = harness.writer_lock_location("slot_a");
  harness.client().command({"SET", lease, "another writer", "PX", "60000"});
  const auto refused = (*checkpoint)->save(postgres_record("1/20", 2));
  ASSERT_FALSE(refused) << "saved while another writer held the lease";
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(),
                  "the writer lease '" + lease + "' is held by 'another writer'");
  EXPECT_EQ(harness.client().get(harness.location("slot_a")), FileCheckpoint::encode(mine));
  // A lease that lapsed with nobody taking it is taken again by the next save.
  harness.client().command({"DEL", lease});
  const auto saved = (*checkpoint)->save(postgres_record("1/30", 3));
  EXPECT_TRUE(saved) << saved.error().report();
  // The destructor deletes only its own lease.
  harness.client().command({"SET", lease, "another writer", "PX", "60000"});
  checkpoint->reset();
  EXPECT_EQ(harness.client().get(lease), "another writer");
}

TEST(RedisCheckpointBackend, ASaveIsRefusedWhenAnotherWriterChangedTheRecord) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  RedisCheckpointHarness harness;
  auto checkpoint = must_open(harness.open("slot_a"));
  ASSERT_TRUE(checkpoint);
  ASSERT_TRUE((*checkpoint)->save(postgres_record("1/10", 1)));
  // While this writer's lease had lapsed, another wrote (and left).
  const std::string theirs = FileCheckpoint::encode(postgres_record("1/40", 4));
  harness.client().command({"SET", harness.location("slot_a"), theirs});
  const auto refused = (*checkpoint)->save(postgres_record("1/20", 2));
  ASSERT_FALSE(refused) << "overwrote another writer's record";
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(), "another writer changed it since this one read it");
  EXPECT_EQ(harness.client().get(harness.location("slot_a")), theirs);
}

TEST(RedisCheckpointBackend, TheRecordSurvivesARestartWithTheAppendOnlyFile) {
  CPPCDC_REQUIRE_SERVER(redis_unavailable());
  // A server of this test's own, on the next port.
  const int port = redis_port() + 1;
  const std::string dir = "/tmp/cppcdc-it-redis-" + std::to_string(port);
  const std::string script = std::string(CPPCDC_SOURCE_DIR) + "/scripts/redis.sh";
  auto redis = [&](const std::string& args) {
    return std::system((script + " " + args + " >/dev/null 2>&1").c_str()) == 0;
  };
  redis("stop " + dir + " --purge");
  ASSERT_TRUE(redis("start " + dir + " " + std::to_string(port)));
  RedisCheckpointOptions options;
  options.port = static_cast<std::uint16_t>(port);
  {
    auto checkpoint = must_open(open_redis_checkpoint(options, "slot_a"));
    ASSERT_TRUE(checkpoint);
    const CheckpointRecord first = large_record(64 << 10, 1);
    ASSERT_TRUE((*checkpoint)->save(first));
    ASSERT_TRUE(redis("stop " + dir));
    ASSERT_TRUE(redis("start " + dir + " " + std::to_string(port)));
    const auto loaded = (*checkpoint)->load();
    ASSERT_TRUE(loaded) << loaded.error().report();
    ASSERT_TRUE(loaded->has_value());
    EXPECT_TRUE(**loaded == first) << "the record changed across the restart";
    ASSERT_TRUE(redis("stop " + dir));
    ASSERT_TRUE(redis("start " + dir + " " + std::to_string(port)));
    // A save is the first call after this restart: the connection is reopened within it.
    const auto saved = (*checkpoint)->save(postgres_record("2B/9000", 2));
    EXPECT_TRUE(saved) << saved.error().report();
  }
  {
    auto checkpoint = must_open(open_redis_checkpoint(options, "slot_a"));
    ASSERT_TRUE(checkpoint);
    const auto loaded = (*checkpoint)->load();
    ASSERT_TRUE(loaded && loaded->has_value());
    EXPECT_EQ((*loaded)->offset, "2B/9000");
  }
  redis("stop " + dir + " --purge");
}

}  // namespace
}  // namespace cppcdc::it::state
