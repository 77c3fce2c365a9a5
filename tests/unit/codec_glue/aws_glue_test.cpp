// The AWS Glue client (make_aws_glue_schema_registry) against the Glue DOUBLE
// (tests/unit/codec_glue/glue_double.py: a separate Python process on loopback, not AWS), which
// checks every request's Signature Version 4 with Debian's python3-botocore. What this shows:
// the JSON API calls and their order, the signature (with and without a session token, with
// credentials from the environment), retries of throttling and 5xx, terminal refusals with
// their remedy, PENDING versions waited for, and events round-tripping through it. Live AWS is
// not reachable here: that is an evidence gap (docs/schema-registry.md).

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/glue.hpp"
#include "cppcdc/http_client.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc {
namespace {

namespace json = boost::json;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kAccessKey = "AKIDEXAMPLE";
constexpr const char* kSecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

// The double, started for one test and killed at its end.
class GlueDouble {
 public:
  explicit GlueDouble(std::vector<std::string> args = {}) {
    static int n = 0;
    port_file_ = std::filesystem::path(::testing::TempDir()) /
                 ("glue-double-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
    std::filesystem::remove(port_file_);
    std::vector<std::string> argv = {
        "/usr/bin/python3",
        std::string(CPPCDC_SOURCE_DIR) + "/tests/unit/codec_glue/glue_double.py", "--port-file",
        port_file_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(port_file_) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls for the file
    }
    std::ifstream in(port_file_);
    in >> port_;
  }
  ~GlueDouble() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(port_file_);
  }
  GlueDouble(const GlueDouble&) = delete;
  GlueDouble& operator=(const GlueDouble&) = delete;

  bool up() const { return port_ > 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void fail_next(int count, int status, const std::string& type) {
    auto client = http::Client::create(http::ClientOptions{});
    ASSERT_TRUE(client);
    const auto r = (*client)->send(
        endpoint() + "/__double/fail", {"Content-Type: application/json"},
        json::serialize(json::object{{"count", count}, {"status", status}, {"type", type}}));
    ASSERT_EQ(r.status, 200) << r.transport_error << r.body_prefix;
  }

  // The operations received, in order; every one must have carried a valid signature.
  std::vector<std::string> ops() {
    http::ClientOptions o;
    o.max_body = 1 << 20;
    auto client = http::Client::create(o);
    EXPECT_TRUE(client);
    const auto r = (*client)->send(endpoint() + "/__double/requests", {}, std::nullopt);
    std::vector<std::string> out;
    const json::value parsed = json::parse(r.body_prefix);
    for (const auto& v : parsed.as_array()) {
      const auto& o2 = v.as_object();
      std::string op(o2.at("op").as_string());
      if (!o2.at("signature_ok").as_bool()) op += " (BAD SIGNATURE)";
      out.push_back(op);
    }
    return out;
  }

 private:
  std::filesystem::path port_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

AwsGlueRegistryConfig config_for(const GlueDouble& d) {
  AwsGlueRegistryConfig c;
  c.registry_name = "cdc";
  c.region = "eu-west-1";
  c.endpoint = d.endpoint();
  c.access_key_id = kAccessKey;
  c.secret_access_key = kSecretKey;
  c.base_backoff_ms = 1;
  c.max_backoff_ms = 5;
  c.max_retries = 3;
  return c;
}

std::shared_ptr<GlueSchemaRegistry> client_for(const AwsGlueRegistryConfig& c) {
  auto r = make_aws_glue_schema_registry(c);
  EXPECT_TRUE(r) << r.error().report();
  return r ? *r : nullptr;
}

using Ops = std::vector<std::string>;

TEST(AwsGlue, RegistersThroughSignedCallsAndEventsRoundTrip) {
  GlueDouble d;
  ASSERT_TRUE(d.up());
  auto registry = client_for(config_for(d));
  auto encoder = GlueAvroEncoder::create(
      registry, GlueAvroConfig("cdc-events").with_compression(GlueCompression::kZlib));
  ASSERT_TRUE(encoder);
  ASSERT_TRUE((*encoder)->resolve()) << (*encoder)->resolve().error().report();
  // A schema not there yet: looked up, then registered, then created (value, then key).
  EXPECT_EQ(d.ops(), (Ops{"GetSchemaByDefinition", "RegisterSchemaVersion", "CreateSchema",
                          "GetSchemaByDefinition", "RegisterSchemaVersion", "CreateSchema"}));
  // Another writer (a fresh client) finds both by definition: reads only.
  auto again = GlueAvroEncoder::create(client_for(config_for(d)), GlueAvroConfig("cdc-events"));
  ASSERT_TRUE(again);
  ASSERT_TRUE((*again)->resolve());
  EXPECT_EQ((*again)->value_schema_version(), (*encoder)->value_schema_version());
  EXPECT_EQ((*again)->key_schema_version(), (*encoder)->key_schema_version());
  EXPECT_EQ(d.ops().size(), 8u);
  EXPECT_EQ(d.ops().back(), "GetSchemaByDefinition");

  // A decoder with its own client resolves the writer schema by the UUID, once.
  GlueAvroDecoder decoder(std::make_shared<CachedGlueSchemaRegistry>(client_for(config_for(d))));
  test::EventGenerator gen(3);
  for (int i = 0; i < 50; ++i) {
    const Event e = gen.next();
    ByteBuffer out;
    ASSERT_TRUE((*encoder)->encode(e, out));
    auto back = decoder.decode(out.view());
    ASSERT_TRUE(back) << back.error().report();
    ASSERT_EQ(*back, e);
  }
  const Ops ops = d.ops();
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "GetSchemaVersion"), 1);
  for (const auto& op : ops) EXPECT_EQ(op.find("BAD"), std::string::npos) << op;
}

TEST(AwsGlue, SessionTokensAndCredentialsFromTheEnvironmentAreSigned) {
  GlueDouble d({"--session-token", "FQoGZXIvYXdzEXAMPLETOKEN"});
  ASSERT_TRUE(d.up());
  AwsGlueRegistryConfig c = config_for(d);
  c.access_key_id.clear();
  c.secret_access_key.clear();
  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecretKey, 1);
  ::setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLETOKEN", 1);
  auto registry = client_for(c);
  ::unsetenv("AWS_SESSION_TOKEN");
  ASSERT_TRUE(registry);
  auto id = registry->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_TRUE(id) << id.error().report();
  // Without the token the double (as AWS) refuses the signature: terminal, with the remedy.
  auto no_token = client_for(c);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto refused = no_token->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(), "InvalidSignatureException");
  EXPECT_CONTAINS(refused.error().report(), "AWS_SESSION_TOKEN");
  // No credentials at all: a configuration error naming the variables.
  auto none = make_aws_glue_schema_registry(c);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(none.error().report(), "AWS_ACCESS_KEY_ID");
}

TEST(AwsGlue, AWrongSecretIsATerminalSignatureRefusal) {
  GlueDouble d;
  ASSERT_TRUE(d.up());
  AwsGlueRegistryConfig c = config_for(d);
  c.secret_access_key = "not-the-secret";
  auto r = client_for(c)->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(r.error().report(), "InvalidSignatureException");
  EXPECT_EQ(d.ops(), (Ops{"GetSchemaByDefinition (BAD SIGNATURE)"})) << "no retry of a refusal";
}

TEST(AwsGlue, ThrottlingAnd5xxAreRetriedThenTransient) {
  GlueDouble d;
  ASSERT_TRUE(d.up());
  auto registry = client_for(config_for(d));
  d.fail_next(2, 400, "ThrottlingException");
  auto id = registry->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(d.ops().size(), 5u) << "two throttled, then the three calls of a new schema";
  d.fail_next(4, 503, "");
  auto down = registry->schema_definition(*id);
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(down.error().report(), "after 4 attempts");
  auto up = registry->schema_definition(*id);
  ASSERT_TRUE(up) << up.error().report();
  EXPECT_EQ(*up, R"({"type":"string"})");
  d.fail_next(1, 400, "AccessDeniedException");
  auto denied = registry->schema_definition(*id);
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(denied.error().report(), "glue:GetSchemaVersion permission");
}

TEST(AwsGlue, RefusalsAreTerminalAndNameTheRemedy) {
  GlueDouble d;
  ASSERT_TRUE(d.up());
  AwsGlueRegistryConfig c = config_for(d);
  c.registry_name = "elsewhere";
  auto missing = client_for(c)->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(missing.error().report(), "does the registry \"elsewhere\" exist in eu-west-1");
  auto unknown =
      client_for(config_for(d))
          ->schema_definition(*GlueSchemaVersionId::parse("0f1e2d3c-4b5a-4697-8877-66554433221a"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(unknown.error().report(), "EntityNotFoundException");
}

TEST(AwsGlue, PendingVersionsAreWaitedFor) {
  GlueDouble d({"--pending"});
  ASSERT_TRUE(d.up());
  auto id = client_for(config_for(d))->register_schema_version("s1", R"({"type":"string"})");
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(d.ops(), (Ops{"GetSchemaByDefinition", "RegisterSchemaVersion", "CreateSchema",
                          "GetSchemaVersion", "GetSchemaVersion"}));
}

TEST(AwsGlue, ConfigsAreChecked) {
  AwsGlueRegistryConfig c;
  c.registry_name = "cdc";
  c.region = "eu-west-1";
  EXPECT_TRUE(validate(c));
  for (const auto& [endpoint, needle] : std::vector<std::pair<std::string, std::string>>{
           {"glue.example.com", "not an http:// or https:// URL"},
           {"https://glue.example.com/path", "no path"},
           {"https://user@glue.example.com", "no path, query or user part"}}) {
    AwsGlueRegistryConfig e = c;
    e.endpoint = endpoint;
    auto st = validate(e);
    ASSERT_FALSE(st) << endpoint;
    EXPECT_CONTAINS(st.error().report(), needle);
  }
  AwsGlueRegistryConfig r = c;
  r.region = "EU West";
  EXPECT_FALSE(validate(r));
  r.region.clear();
  EXPECT_FALSE(validate(r));
  AwsGlueRegistryConfig n = c;
  n.registry_name = "a b";
  EXPECT_FALSE(validate(n));
  c.access_key_id = "AKID";
  c.secret_access_key = "secret";
  auto client = make_aws_glue_schema_registry(c);
  ASSERT_TRUE(client);
  EXPECT_EQ((*client)->describe(), "AWS Glue registry \"cdc\" (eu-west-1)");
  EXPECT_EQ((*client)->describe().find("secret"), std::string::npos);
}

}  // namespace
}  // namespace cppcdc
