// What the PostgreSQL source says about a connection that failed: the kind of error and the
// remedy it gives for libpq's messages (a password that is missing or wrong above all).

#include <gtest/gtest.h>

#include <string>

#include "source/postgres/pg_conn.hpp"

namespace cppcdc::pg::detail {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(ConnectionFailure, AMissingPasswordSaysEveryPlaceLibpqLooksForOne) {
  const auto [kind, remedy] = classify_connection_failure(
      "connection to server at \"127.0.0.1\", port 5432 failed: fe_sendauth: no password "
      "supplied");
  EXPECT_EQ(kind, ErrorKind::kTerminal);
  EXPECT_CONTAINS(remedy, "PGPASSWORD");
  EXPECT_CONTAINS(remedy, "~/.pgpass");
  EXPECT_CONTAINS(remedy, "PGPASSFILE");
  EXPECT_CONTAINS(remedy, "password=");
}

TEST(ConnectionFailure, AWrongPasswordNamesWhereItMayComeFrom) {
  const auto [kind, remedy] = classify_connection_failure(
      "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password "
      "authentication failed for user \"cdc\"");
  EXPECT_EQ(kind, ErrorKind::kTerminal);
  EXPECT_CONTAINS(remedy, "PGPASSWORD");
  EXPECT_CONTAINS(remedy, "~/.pgpass");
  EXPECT_CONTAINS(remedy, "pg_hba.conf");
}

TEST(ConnectionFailure, ARefusedConnectionIsTransient) {
  const auto [kind, remedy] = classify_connection_failure(
      "connection to server at \"127.0.0.1\", port 5432 failed: Connection refused");
  EXPECT_EQ(kind, ErrorKind::kTransient);
  EXPECT_CONTAINS(remedy, "running and reachable");
}

}  // namespace
}  // namespace cppcdc::pg::detail
