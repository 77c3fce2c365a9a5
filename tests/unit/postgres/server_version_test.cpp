// The server versions the PostgreSQL source accepts, and what it refuses on an older server:
// each refusal names the setting and the version it needs.

#include <gtest/gtest.h>

#include "cppcdc/postgres.hpp"
#include "source/postgres/server_checks.hpp"

using namespace cppcdc;
using pg::detail::check_server_version;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(PgServerVersion, TwelveToEighteenAreAcceptedWithTheDefaults) {
  for (int version : {120000, 120022, 130023, 140023, 150018, 160014, 170010, 180004, 190000}) {
    EXPECT_TRUE(check_server_version(version, {})) << version;
  }
}

TEST(PgServerVersion, ElevenAndOlderAreRefusedNamingTwelve) {
  for (int version : {100023, 110022, 90624}) {
    const auto st = check_server_version(version, {});
    ASSERT_FALSE(st) << version;
    EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal);
    EXPECT_TRUE(has(st.error().report(), "PostgreSQL 12 or later")) << st.error().report();
    EXPECT_TRUE(has(st.error().report(), pg::detail::version_text(version))) << st.error().report();
  }
  EXPECT_EQ(pg::detail::version_text(110022), "11.22");
  EXPECT_EQ(pg::detail::version_text(90624), "9.6.24");
}

TEST(PgServerVersion, StreamingAndMessagesBeforeFourteenAreRefusedNamingTheSettingAndFourteen) {
  pg::PostgresSourceConfig streamed;
  streamed.stream_in_progress = true;
  pg::PostgresSourceConfig messages;
  messages.capture_logical_messages = true;
  for (int version : {120022, 130023}) {
    const auto a = check_server_version(version, streamed);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().kind(), ErrorKind::kTerminal);
    EXPECT_TRUE(has(a.error().report(), "stream_in_progress needs PostgreSQL 14 or later"))
        << a.error().report();
    EXPECT_TRUE(
        has(a.error().report(), "this server is PostgreSQL " + pg::detail::version_text(version)))
        << a.error().report();
    const auto b = check_server_version(version, messages);
    ASSERT_FALSE(b);
    EXPECT_TRUE(has(b.error().report(), "capture_logical_messages needs PostgreSQL 14 or later"))
        << b.error().report();
  }
  for (int version : {140000, 150018, 180004}) {
    EXPECT_TRUE(check_server_version(version, streamed)) << version;
    EXPECT_TRUE(check_server_version(version, messages)) << version;
  }
}
