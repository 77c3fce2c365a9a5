// `[sink] type = "http"` in cdc.toml: every key, errors naming the key and its line, and
// check-config output without any secret.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "server/config.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kHead = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[state.offset]
dir = "/tmp/state"

)";

constexpr const char* kFull = R"([sink]
type = "http"
url = "https://billing:url-pw@billing.internal/cdc?key=query-secret"
content_type = "application/x-ndjson"
compression = "gzip"
headers = { "X-Team" = "billing", "X-Api-Key" = "header-secret" }
signing_secret = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="]
connect_timeout_ms = 1500
request_timeout_ms = 9000
batch_max_events = 500
batch_max_bytes = 1000000

[sink.auth]
type = "basic"
username = "cdc"
password = "basic-secret"

[sink.tls]
verify = true
ca_file = "/etc/hostname"

[sink.retry]
max_retries = -1
initial_backoff_ms = 250
max_backoff_ms = 60000
max_elapsed_ms = 90000
)";

std::string with_head(const std::string& sink) { return kHead + sink; }

std::string error_of(const std::string& sink) {
  auto config = parse_server_config(with_head(sink), "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(HttpSinkConfig, EveryKeyIsReadAndCheckConfigShowsNoSecret) {
  auto config = parse_server_config(with_head(kFull), "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->sink_type, "http");
  const std::string text = describe_config(*config);
  for (const char* secret :
       {"url-pw", "query-secret", "header-secret", "basic-secret",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " shown in:\n" << text;
  }
  EXPECT_CONTAINS(text, "https://billing:****@billing.internal/cdc?...");
  EXPECT_CONTAINS(text, "application/x-ndjson");
  EXPECT_CONTAINS(text, "gzip");
  EXPECT_CONTAINS(text, "X-Api-Key, X-Team (values not shown)");
  EXPECT_CONTAINS(text, "basic, user \"cdc\"");
  EXPECT_CONTAINS(text, "Standard Webhooks, 2 secrets");
  EXPECT_CONTAINS(text, "connect 1500 ms, request 9000 ms");
  EXPECT_CONTAINS(text, "CA file /etc/hostname");
  EXPECT_CONTAINS(text, "without end, back-off 250 to 60000 ms, jittered, for at most 90000 ms "
                        "per request (then the runtime delivers the batch again)");
  EXPECT_CONTAINS(text, "at most 500 events and 1000000 bytes per request");
  EXPECT_CONTAINS(text, "halt");
}

TEST(HttpSinkConfig, TheSmallestSinkSectionTakesTheDefaults) {
  auto config = parse_server_config(
      with_head("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n"), "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const std::string text = describe_config(*config);
  EXPECT_CONTAINS(text, "application/json (a JSON array per request)");
  EXPECT_CONTAINS(text, "compression: ");
  EXPECT_CONTAINS(text, "signing: ");
  EXPECT_CONTAINS(text, "off (requests are not signed)");
  EXPECT_CONTAINS(text, "connect 10000 ms, request 30000 ms");
  EXPECT_CONTAINS(text, "up to 10 retries, back-off 500 to 2000 ms, jittered, for at most 5000 ms");
  EXPECT_CONTAINS(text, "one request per delivered batch");
}

TEST(HttpSinkConfig, SecretsFromTheEnvironment) {
  ::setenv("CPPCDC_TEST_HTTP_SIGNING", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
  ::setenv("CPPCDC_TEST_HTTP_TOKEN", "env-token-secret", 1);
  auto config = parse_server_config(
      with_head("[sink]\ntype = \"http\"\nurl = \"http://r/\"\n"
                "signing_secret_env = \"CPPCDC_TEST_HTTP_SIGNING\"\n"
                "[sink.auth]\ntype = \"bearer\"\ntoken_env = \"CPPCDC_TEST_HTTP_TOKEN\"\n"),
      "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  const std::string text = describe_config(*config);
  EXPECT_CONTAINS(text, "Standard Webhooks, 1 secret (not shown)");
  EXPECT_CONTAINS(text, "bearer (token set, not shown)");
  EXPECT_EQ(text.find("env-token-secret"), std::string::npos) << text;
  EXPECT_EQ(text.find("MfKQ9r8"), std::string::npos) << text;
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"http\"\nurl = \"http://r/\"\n"
                           "signing_secret_env = \"CPPCDC_TEST_HTTP_UNSET_VARIABLE\"\n"),
                  "[sink] signing_secret_env: the environment variable "
                  "\"CPPCDC_TEST_HTTP_UNSET_VARIABLE\" is not set");
  ::unsetenv("CPPCDC_TEST_HTTP_SIGNING");
  ::unsetenv("CPPCDC_TEST_HTTP_TOKEN");
}

TEST(HttpSinkConfig, ErrorsNameTheKeyAndItsLine) {
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"http\"\n"), "[sink] url: required");
  EXPECT_CONTAINS(error_of(edit(kFull, "\"application/x-ndjson\"", "\"text/csv\"")),
                  "[sink] content_type: expected \"application/json\" or "
                  "\"application/x-ndjson\", found \"text/csv\"");
  EXPECT_CONTAINS(error_of(edit(kFull, "\"gzip\"", "\"zstd\"")),
                  "[sink] compression: expected \"none\" or \"gzip\", found \"zstd\"");
  EXPECT_CONTAINS(error_of(edit(kFull, "https://billing", "ftp://billing")),
                  "[sink] url: expected an http:// or https:// address");
  EXPECT_CONTAINS(error_of(edit(kFull, "\"X-Team\"", "\"Content-Type\"")),
                  "[sink] headers: \"Content-Type\" is set by the sink itself");
  EXPECT_CONTAINS(
      error_of(edit(kFull, "\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"", "\"whsec_%%%\"")),
      "[sink] signing_secret: secret 1: the signing secret is not base64");
  EXPECT_CONTAINS(error_of(edit(kFull, "signing_secret = [", "signing_secret = [1, ")),
                  "[sink] signing_secret: expected a \"whsec_...\" string or an array of them");
  EXPECT_CONTAINS(error_of(edit(kFull, "request_timeout_ms = 9000", "request_timeout_ms = 0")),
                  "[sink] request_timeout_ms");
  EXPECT_CONTAINS(error_of(edit(kFull, "type = \"basic\"", "type = \"digest\"")),
                  "[sink.auth] type: expected \"bearer\", \"basic\" or \"none\", found "
                  "\"digest\"");
  EXPECT_CONTAINS(error_of(edit(kFull, "username = \"cdc\"\n", "")),
                  "[sink.auth] username: required");
  EXPECT_CONTAINS(error_of(edit(kFull, "password = \"basic-secret\"",
                                "password = \"basic-secret\"\npassword_env = \"X\"")),
                  "[sink.auth] password_env: set either password or password_env, not both");
  EXPECT_CONTAINS(error_of(edit(kFull, "/etc/hostname", "/nonexistent/ca.pem")),
                  "[sink.tls] ca_file: '/nonexistent/ca.pem' is not a readable file");
  EXPECT_CONTAINS(
      error_of(edit(kFull, "verify = true", "verify = true\nclient_cert = \"/etc/hostname\"")),
      "client_key");
  EXPECT_CONTAINS(error_of(edit(kFull, "max_retries = -1", "max_retries = -2")),
                  "[sink.retry] max_retries");
  EXPECT_CONTAINS(error_of(edit(kFull, "max_backoff_ms = 60000", "max_backoff_ms = 1")),
                  "[sink.retry] max_backoff_ms: is below retry.initial_backoff_ms (250 ms)");
  EXPECT_CONTAINS(error_of(edit(kFull, "max_retries = -1", "max_retries = -1\nretries = 3")),
                  "[sink.retry] retries: unknown key");
  EXPECT_CONTAINS(error_of(edit(kFull, "compression = \"gzip\"", "gzip = true")),
                  "[sink] gzip: unknown key");
  // Errors name the line too.
  EXPECT_CONTAINS(error_of(edit(kFull, "\"gzip\"", "\"zstd\"")), "cdc.toml:");
}

// refused_batch_policy: "halt" by default; "skip" needs [dead_letter], and check-config says
// which one applies.
TEST(HttpSinkConfig, RefusedBatchPolicySkipNeedsADeadLetterFile) {
  const std::string skip = edit(kFull, "batch_max_events = 500",
                                "batch_max_events = 500\nrefused_batch_policy = \"skip\"");
  EXPECT_CONTAINS(error_of(skip), "[sink] refused_batch_policy: this sink hands the batches");
  EXPECT_CONTAINS(error_of(skip), "no [dead_letter] section");
  EXPECT_CONTAINS(error_of(edit(kFull, "batch_max_events = 500",
                                "batch_max_events = 500\nrefused_batch_policy = \"drop\"")),
                  "[sink] refused_batch_policy: expected \"halt\" or \"skip\", found \"drop\"");

  auto with_file =
      parse_server_config(with_head(skip) + "\n[dead_letter]\npath = \"/tmp/dead.jsonl\"\n",
                          "cdc.toml");
  ASSERT_TRUE(with_file) << with_file.error().report();
  EXPECT_CONTAINS(describe_config(*with_file), "skip (written to the [dead_letter] file");
  auto plain = parse_server_config(with_head(kFull), "cdc.toml");
  ASSERT_TRUE(plain) << plain.error().report();
  EXPECT_CONTAINS(describe_config(*plain), "halt (the pipeline stops");
  EXPECT_FALSE(plain->sinks[0].configured->dead_letter_key());
  EXPECT_EQ(with_file->sinks[0].configured->dead_letter_key().value_or(""),
            "refused_batch_policy");
}

TEST(HttpSinkConfig, ErrorsDoNotRepeatASecret) {
  const std::string text =
      error_of(edit(kFull, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjU*"));
  EXPECT_EQ(text.find("MfKQ9r8GKYqrTwjU"), std::string::npos) << text;
}

}  // namespace
}  // namespace cppcdc::server
