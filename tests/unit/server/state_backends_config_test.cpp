// [state.offset] backend = "postgresql" and "redis" in cdc.toml: their keys load, a bad setting
// names its key and what to do, and a server that cannot be reached is a clear error when the
// checkpoint is opened (naming host and port), bounded by the connect and command timeouts
// rather than a hang. No server is needed: the unreachable ones are a closed port and a
// listening socket on loopback that never answers.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "server/config.hpp"

namespace cppcdc::server {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)
#define EXPECT_LACKS(haystack, needle) \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kSource = R"([source]
dsn = "host=127.0.0.1 dbname=app"
tables = ["public.t"]
slot_name = "orders_slot"

)";

Result<ServerConfig> parse_state(const std::string& state) {
  return parse_server_config(std::string(kSource) + "[state.offset]\n" + state, "cdc.toml");
}

std::string error_of(const std::string& state) {
  auto config = parse_state(state);
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

/// A TCP socket listening on 127.0.0.1 (an ephemeral port) that never accepts: a connection
/// completes in the kernel's backlog, and nothing ever answers on it.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t length = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t length = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// --- postgresql ---------------------------------------------------------------------------

TEST(PostgresqlStateConfig, KeysLoadAndDescribeShowsTheTableWithoutThePassword) {
  auto config = parse_state(
      "backend = \"postgresql\"\n"
      "dsn = \"host=db.example.com port=5433 dbname=ops user=cdc password=s3cret-pw\"\n"
      "schema = \"cdc_state\"\ntable = \"offsets\"\n");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->checkpoint_backend, "postgresql");
  EXPECT_TRUE(config->checkpoint->durable());
  EXPECT_FALSE(config->checkpoint->directory());
  const std::string described = config->checkpoint->describe("orders_slot");
  EXPECT_CONTAINS(described, "postgresql row 'orders_slot' of table \"cdc_state\".\"offsets\"");
  EXPECT_CONTAINS(described, "host=db.example.com port=5433 dbname=ops user=cdc");
  EXPECT_LACKS(described, "s3cret-pw");
  EXPECT_LACKS(describe_config(*config), "s3cret-pw");
}

TEST(PostgresqlStateConfig, SchemaAndTableDefaultToCppcdcCheckpoints) {
  auto config = parse_state("backend = \"postgresql\"\ndsn = \"host=h dbname=d\"\n");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_CONTAINS(config->checkpoint->describe("s"), "table \"cppcdc\".\"checkpoints\"");
}

TEST(PostgresqlStateConfig, DsnEnvReadsTheVariableAndDescribeSaysWhereItCameFrom) {
  ::setenv("CPPCDC_TEST_STATE_DSN", "host=10.1.2.3 dbname=ops user=cdc password=from-env", 1);
  auto config = parse_state("backend = \"postgresql\"\ndsn_env = \"CPPCDC_TEST_STATE_DSN\"\n");
  ::unsetenv("CPPCDC_TEST_STATE_DSN");
  ASSERT_TRUE(config) << config.error().report();
  const std::string described = config->checkpoint->describe("s");
  EXPECT_CONTAINS(described, "host=10.1.2.3");
  EXPECT_CONTAINS(described, "dsn_env CPPCDC_TEST_STATE_DSN");
  EXPECT_LACKS(described, "from-env");
}

TEST(PostgresqlStateConfig, BadSettingsNameTheKeyAndTheRemedy) {
  EXPECT_CONTAINS(error_of("backend = \"postgresql\"\n"),
                  "[state.offset] dsn: required when backend = \"postgresql\"");
  EXPECT_CONTAINS(error_of("backend = \"postgresql\"\ndsn = \"host=h\"\ndsn_env = \"X\"\n"),
                  "[state.offset] dsn_env: set either dsn or dsn_env, not both");
  ::unsetenv("CPPCDC_TEST_STATE_UNSET");
  const std::string unset =
      error_of("backend = \"postgresql\"\ndsn_env = \"CPPCDC_TEST_STATE_UNSET\"\n");
  EXPECT_CONTAINS(unset, "[state.offset] dsn_env");
  EXPECT_CONTAINS(unset, "\"CPPCDC_TEST_STATE_UNSET\" is not set");
  const std::string bad_dsn =
      error_of("backend = \"postgresql\"\ndsn = \"host=h password='unclosed-s3cret\"\n");
  EXPECT_CONTAINS(bad_dsn, "[state.offset] dsn: not a valid libpq connection string");
  EXPECT_LACKS(bad_dsn, "unclosed-s3cret");
  EXPECT_CONTAINS(error_of("backend = \"postgresql\"\ndsn = \"host=h\"\nschema = \"\"\n"),
                  "[state.offset] schema: expected a name, found an empty string");
  EXPECT_CONTAINS(error_of("backend = \"postgresql\"\ndsn = \"host=h\"\ntable = \"" +
                           std::string(64, 't') + "\"\n"),
                  "[state.offset] table: expected at most 63 bytes");
  EXPECT_CONTAINS(error_of("backend = \"postgresql\"\ndsn = \"host=h\"\ndir = \"x\"\n"),
                  "[state.offset] dir: unknown key");
}

TEST(PostgresqlStateConfig, AClosedPortIsATransientErrorAtOpenNamingHostAndPort) {
  const int port = closed_port();
  auto config =
      parse_state("backend = \"postgresql\"\ndsn = \"host=127.0.0.1 port=" + std::to_string(port) +
                  " dbname=postgres user=postgres\"\n");
  ASSERT_TRUE(config) << config.error().report();
  const auto opened = config->checkpoint->open("orders_slot");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kTransient) << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "127.0.0.1:" + std::to_string(port));
  EXPECT_CONTAINS(opened.error().report(), "check that the server is running");
}

TEST(PostgresqlStateConfig, AServerThatNeverAnswersEndsAtTheConnectTimeoutNamingHostAndPort) {
  SilentListener silent;
  auto config = parse_state(
      "backend = \"postgresql\"\ndsn = \"host=127.0.0.1 port=" + std::to_string(silent.port()) +
      " dbname=postgres user=postgres connect_timeout=2\"\n");
  ASSERT_TRUE(config) << config.error().report();
  const auto opened = config->checkpoint->open("orders_slot");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kTransient) << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "127.0.0.1:" + std::to_string(silent.port()));
  EXPECT_CONTAINS(opened.error().report(), "timeout");
}

// --- redis --------------------------------------------------------------------------------

TEST(RedisStateConfig, UrlKeysLoadAndDescribeShowsTheKeysWithoutThePassword) {
  auto config = parse_state(
      "backend = \"redis\"\nurl = \"redis://cdc:s3cret-pw@cache.example.com:6380/3\"\n"
      "key_prefix = \"shop:\"\nlock_ttl_ms = 20000\nconnect_timeout_ms = 2000\n"
      "timeout_ms = 4000\ntls = false\n");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->checkpoint_backend, "redis");
  EXPECT_TRUE(config->checkpoint->durable());
  const std::string described = config->checkpoint->describe("orders_slot");
  EXPECT_CONTAINS(described,
                  "redis key shop:checkpoint:orders_slot on cache.example.com:6380 db 3");
  EXPECT_CONTAINS(described, "lease shop:lock:orders_slot, 20000 ms");
  EXPECT_CONTAINS(described, "user cdc");
  EXPECT_LACKS(described, "s3cret-pw");
  EXPECT_LACKS(describe_config(*config), "s3cret-pw");
}

TEST(RedisStateConfig, HostPortDbAndPasswordEnvLoadWithTheirDefaults) {
  ::setenv("CPPCDC_TEST_REDIS_PASSWORD", "pw-from-env", 1);
  auto config = parse_state(
      "backend = \"redis\"\nhost = \"10.0.0.7\"\ndb = 1\n"
      "password_env = \"CPPCDC_TEST_REDIS_PASSWORD\"\n");
  ::unsetenv("CPPCDC_TEST_REDIS_PASSWORD");
  ASSERT_TRUE(config) << config.error().report();
  const std::string described = config->checkpoint->describe("s");
  EXPECT_CONTAINS(described, "redis key cppcdc:checkpoint:s on 10.0.0.7:6379 db 1");
  EXPECT_CONTAINS(described, "lease cppcdc:lock:s, 15000 ms");
  EXPECT_CONTAINS(described, "password from password_env");
  EXPECT_LACKS(described, "pw-from-env");
}

TEST(RedisStateConfig, BadSettingsNameTheKeyAndTheRemedy) {
  const std::string tls = error_of("backend = \"redis\"\nurl = \"rediss://h:6380\"\n");
  EXPECT_CONTAINS(tls, "[state.offset] url: TLS (rediss://) is not supported");
  EXPECT_CONTAINS(tls, "TLS tunnel");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\ntls = true\n"),
                  "[state.offset] tls: TLS is not supported for Redis");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nurl = \"http://h\"\n"),
                  "[state.offset] url: expected redis://");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nurl = \"redis://h:99999\"\n"),
                  "[state.offset] url: the port is not a number from 1 to 65535");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nurl = \"redis://h/x\"\n"),
                  "[state.offset] url: the path is not a database number");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nurl = \"redis://h\"\nport = 1\n"),
                  "[state.offset] port: set either url or host/port/db, not both");
  const std::string both =
      error_of("backend = \"redis\"\nurl = \"redis://:url-s3cret@h\"\npassword_env = \"P\"\n");
  EXPECT_CONTAINS(both, "[state.offset] password_env: the url carries a password too");
  EXPECT_LACKS(both, "url-s3cret");
  ::unsetenv("CPPCDC_TEST_STATE_UNSET");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\npassword_env = \"CPPCDC_TEST_STATE_UNSET\"\n"),
                  "[state.offset] password_env: the environment variable "
                  "\"CPPCDC_TEST_STATE_UNSET\" is not set");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nlock_ttl_ms = 10\n"),
                  "[state.offset] lock_ttl_ms");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nport = 0\n"), "[state.offset] port");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\nhost = \"\"\n"), "[state.offset] host");
  EXPECT_CONTAINS(error_of("backend = \"redis\"\ndsn = \"x\"\n"),
                  "[state.offset] dsn: unknown key");
}

TEST(RedisStateConfig, AClosedPortIsATransientErrorAtOpenNamingHostAndPort) {
  const int port = closed_port();
  auto config = parse_state("backend = \"redis\"\nport = " + std::to_string(port) + "\n");
  ASSERT_TRUE(config) << config.error().report();
  const auto opened = config->checkpoint->open("orders_slot");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kTransient) << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "127.0.0.1:" + std::to_string(port));
  EXPECT_CONTAINS(opened.error().report(), "check that the server is running");
}

TEST(RedisStateConfig, AServerThatNeverAnswersEndsAtTheCommandTimeoutNamingHostAndPort) {
  SilentListener silent;
  auto config = parse_state(
      "backend = \"redis\"\nurl = \"redis://127.0.0.1:" + std::to_string(silent.port()) +
      "\"\nconnect_timeout_ms = 300\ntimeout_ms = 300\n");
  ASSERT_TRUE(config) << config.error().report();
  const auto opened = config->checkpoint->open("orders_slot");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind(), ErrorKind::kTransient) << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "127.0.0.1:" + std::to_string(silent.port()));
  EXPECT_CONTAINS(opened.error().report(), "no answer within 300 ms (timeout_ms)");
}

}  // namespace
}  // namespace cppcdc::server
