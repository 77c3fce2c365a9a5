// The "apicurio" schema registry client (Apicurio Registry 3's native API) against a registry
// DOUBLE: tests/integration/apicurio_registry_double.py, a separate process on loopback that
// speaks the part of /apis/registry/v3 the client uses with its own code. No real Apicurio
// runs on this machine (docs/schema-registry.md); real-server coverage is an evidence gap.
// Also the codecs' shared RegistryBackedCodec preflight, through the same double.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "cppcdc/registry_codec.hpp"
#include "cppcdc/schema_registry.hpp"
#include "schema_registry_double.hpp"

namespace cppcdc {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kSchema =
    R"({"type":"record","name":"Event","namespace":"io.cppcdc","fields":[{"name":"op","type":"string"}]})";
// The same schema, written differently (compared in canonical form).
constexpr const char* kSameSchema =
    R"({ "namespace": "io.cppcdc", "name": "Event", "type": "record", "fields": [ {"type": "string", "name": "op"} ] })";
constexpr const char* kOtherSchema =
    R"({"type":"record","name":"Key","namespace":"io.cppcdc","fields":[{"name":"id","type":["null","string"]}]})";

RegistryDouble apicurio_double(std::vector<std::string> args = {}) {
  return RegistryDouble(std::move(args), RegistryDouble::kApicurio);
}

SchemaRegistryConfig config_for(const RegistryDouble& registry) {
  SchemaRegistryConfig c;
  c.type = SchemaRegistryType::kApicurio;
  c.url = registry.url();
  c.retry.base_backoff_ms = 10;
  c.retry.max_backoff_ms = 200;
  return c;
}

std::unique_ptr<SchemaRegistryClient> client_for(const SchemaRegistryConfig& c) {
  auto client = make_schema_registry_client(c);
  EXPECT_TRUE(client) << client.error().report();
  return client ? std::move(*client) : nullptr;
}

std::size_t count_containing(const std::vector<std::string>& requests, const std::string& part) {
  std::size_t n = 0;
  for (const auto& r : requests) n += r.find(part) != std::string::npos;
  return n;
}

TEST(ApicurioRegistry, UrlIsTheServerRootAndAnApiPathIsAConfigurationErrorNamingTheRemedy) {
  SchemaRegistryConfig c;
  c.type = SchemaRegistryType::kApicurio;
  c.url = "http://apicurio:8080";
  EXPECT_TRUE(validate(c));
  c.url = "http://apicurio:8080/";
  EXPECT_TRUE(validate(c));
  c.url = "http://apicurio:8080/apis/registry/v3";
  auto native = validate(c);
  ASSERT_FALSE(native);
  EXPECT_EQ(native.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(native.error().report(), "url");
  EXPECT_CONTAINS(native.error().report(), "drop the /apis/registry/... part");
  c.url = "https://apicurio:8080/apis/registry/v3/";
  EXPECT_FALSE(validate(c));
  c.url = "http://apicurio:8080/apis/ccompat/v7";
  auto ccompat = validate(c);
  ASSERT_FALSE(ccompat);
  EXPECT_CONTAINS(ccompat.error().report(), "type = \"confluent\"");

  // The Confluent client given Apicurio's native API: pointed at the other type.
  SchemaRegistryConfig confluent;
  confluent.url = "http://apicurio:8080/apis/registry/v3";
  auto wrong_type = validate(confluent);
  ASSERT_FALSE(wrong_type);
  EXPECT_CONTAINS(wrong_type.error().report(), "type = \"apicurio\"");
  confluent.url = "http://apicurio:8080/apis/ccompat/v7";
  EXPECT_TRUE(validate(confluent));

  c.url = "http://apicurio:8080";
  c.normalize_schemas = true;
  EXPECT_CONTAINS(validate(c).error().report(), "normalize_schemas");
  c.normalize_schemas = false;
  c.group.clear();
  EXPECT_CONTAINS(validate(c).error().report(), "group");

  EXPECT_EQ(*parse_schema_registry_type("apicurio"), SchemaRegistryType::kApicurio);
  auto unknown = parse_schema_registry_type("glue2");
  ASSERT_FALSE(unknown);
  EXPECT_CONTAINS(unknown.error().report(), "\"confluent\"");
}

TEST(ApicurioRegistry, RegisterGivesTheGlobalIdAndLookupIdReadsAndLatestAgree) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.group = "cdc";
  auto client = client_for(c);
  ASSERT_NE(client, nullptr);
  auto id = client->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(*id, 101) << "the double's first global id (its content ids start at 1)";
  auto again = client->register_schema("t-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(again) << again.error().report();
  EXPECT_EQ(*again, *id) << "the same canonical content is the same version";
  auto key_id = client->register_schema("t-key", SchemaType::kAvro, kOtherSchema);
  ASSERT_TRUE(key_id);
  EXPECT_EQ(*key_id, 102);

  auto found = client->lookup_schema("t-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(found) << found.error().report();
  EXPECT_EQ(*found, *id);
  auto by_id = client->schema_by_id(*id);
  ASSERT_TRUE(by_id) << by_id.error().report();
  EXPECT_EQ(by_id->id, *id);
  EXPECT_EQ(by_id->type, SchemaType::kAvro);
  EXPECT_EQ(boost::json::parse(by_id->schema), boost::json::parse(kSchema));
  auto latest = client->latest_schema("t-key");
  ASSERT_TRUE(latest) << latest.error().report();
  EXPECT_EQ(latest->id, *key_id);
  EXPECT_EQ(latest->version, 1);
  EXPECT_EQ(latest->subject, "t-key");
  auto subjects = client->subjects();
  ASSERT_TRUE(subjects) << subjects.error().report();
  EXPECT_EQ(*subjects, (std::vector<std::string>{"t-key", "t-value"}));

  // Everything went to the native API under the configured group.
  const auto requests = registry.requests();
  EXPECT_EQ(count_containing(requests, "/apis/registry/v3/"), requests.size());
  EXPECT_GE(count_containing(requests, "/groups/cdc/artifacts"), 3u);
  EXPECT_EQ(count_containing(requests, "/groups/default/"), 0u);

  // Ids and registrations are cached: asking again sends nothing.
  const std::size_t before = requests.size();
  ASSERT_TRUE(client->schema_by_id(*id));
  ASSERT_TRUE(client->register_schema("t-value", SchemaType::kAvro, kSchema));
  ASSERT_TRUE(client->lookup_schema("t-value", SchemaType::kAvro, kSameSchema));
  EXPECT_EQ(registry.requests().size(), before);

  auto json_id = client->register_schema("j-value", SchemaType::kJson, R"({"type":"object"})");
  ASSERT_TRUE(json_id);
  auto json_schema = client->schema_by_id(*json_id);
  ASSERT_TRUE(json_schema);
  EXPECT_EQ(json_schema->type, SchemaType::kJson);
  EXPECT_TRUE(warm_schema_cache(*client, std::vector<std::int32_t>{*key_id}));
  auto unknown = client->schema_by_id(999);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(unknown.error().report(), "999");
}

TEST(ApicurioRegistry, AutoRegisterFalseNeverWritesAndAMismatchIsRefusedNamingTheArtifact) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.auto_register = false;
  auto client = client_for(c);
  ASSERT_NE(client, nullptr);
  auto missing = resolve_schema_id(*client, c, "orders-value", SchemaType::kAvro, kSchema);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(missing.error().report(), "artifact \"orders-value\" in group \"default\"");
  EXPECT_CONTAINS(missing.error().report(), "does not exist");
  EXPECT_CONTAINS(missing.error().report(), "auto_register = true");
  const SubjectSchema wanted[] = {{"orders-value", SchemaType::kAvro, kSchema}};
  EXPECT_FALSE(preflight_schema_registry(*client, c, wanted));

  // Someone registered another schema under the artifact: the start is refused, naming it.
  auto writer = client_for(config_for(registry));
  ASSERT_TRUE(writer->register_schema("orders-value", SchemaType::kAvro, kOtherSchema));
  auto differs = preflight_schema_registry(*client, c, wanted);
  ASSERT_FALSE(differs);
  EXPECT_EQ(differs.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(differs.error().report(), "\"orders-value\"");
  EXPECT_CONTAINS(differs.error().report(), "another schema");
  EXPECT_EQ(registry.writes(), 1u) << "auto_register = false wrote to the registry";

  // Once the schema cppcdc writes is a version of the artifact, it is found by its content.
  auto registered = writer->register_schema("orders-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(registered);
  auto id = resolve_schema_id(*client, c, "orders-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(*id, *registered);
  EXPECT_TRUE(preflight_schema_registry(*client, c, wanted));
  EXPECT_EQ(registry.writes(), 2u) << "only the other writer's two registrations";
}

TEST(ApicurioRegistry, FiveHundredsAndDroppedConnectionsAreRetriedAndTheAnswerStillComes) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  auto client = client_for(config_for(registry));
  ASSERT_NE(client, nullptr);
  registry.post("/__double/fail", R"({"status": 503, "count": 2})");
  auto id = client->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(count_containing(registry.requests(), "POST /apis/registry/v3/groups/"), 3u);
  registry.post("/__double/fail", R"({"drop": 2})");
  auto schema = client->schema_by_id(*id);
  ASSERT_TRUE(schema) << schema.error().report();
  EXPECT_EQ(count_containing(registry.requests(), "/search/versions?globalId="), 3u)
      << "two dropped connections, then the answer";
}

TEST(ApicurioRegistry, A429WaitsAtLeastWhatRetryAfterAsks) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.retry.max_backoff_ms = 1500;
  auto client = client_for(c);
  registry.post("/__double/fail", R"({"status": 429, "count": 1, "retry_after": "1"})");
  const auto started = std::chrono::steady_clock::now();
  auto subjects = client->subjects();
  ASSERT_TRUE(subjects) << subjects.error().report();
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1000))
      << "Retry-After: 1 was not honoured";
  EXPECT_EQ(registry.requests().size(), 2u);
}

TEST(ApicurioRegistry, RetriesEndInATransientErrorAndClientErrorsAreNotRetried) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.retry.max_retries = 2;
  auto client = client_for(c);
  registry.post("/__double/fail", R"({"status": 500, "count": 10})");
  auto down = client->subjects();
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().kind(), ErrorKind::kTransient) << down.error().report();
  EXPECT_CONTAINS(down.error().report(), "HTTP 500");
  EXPECT_CONTAINS(down.error().report(), "3 attempts");
  EXPECT_EQ(registry.requests().size(), 3u);

  RegistryDouble fresh = apicurio_double();
  auto other = client_for(config_for(fresh));
  auto invalid = other->register_schema("t-value", SchemaType::kAvro, "{not json");
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(invalid.error().report(), "400");
  EXPECT_EQ(fresh.requests().size(), 1u) << "a 400 was retried";

  ASSERT_TRUE(other->register_schema("t-value", SchemaType::kAvro, kOtherSchema));
  fresh.post("/__double/incompatible", R"({"artifact": "t-value"})");
  const std::size_t before = fresh.requests().size();
  auto refused = other->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(), "RuleViolationException");
  EXPECT_CONTAINS(refused.error().report(), "rules");
  EXPECT_EQ(fresh.requests().size(), before + 1) << "a rule violation was retried";

  SchemaRegistryConfig nowhere;
  nowhere.type = SchemaRegistryType::kApicurio;
  nowhere.url = "http://127.0.0.1:1";
  nowhere.retry = RegistryRetryPolicy::none();
  auto unreachable = client_for(nowhere)->subjects();
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(unreachable.error().report(), "127.0.0.1:1");
}

TEST(ApicurioRegistry, CredentialsAreSentAndAWrongOneIsTerminalWithTheRemedy) {
  RegistryDouble registry = apicurio_double({"--user", "cdc", "--password", "s3cret"});
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  auto anonymous = client_for(c)->subjects();
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(anonymous.error().report(), "401");
  EXPECT_CONTAINS(anonymous.error().report(), "credentials");
  EXPECT_EQ(registry.requests().size(), 1u) << "a 401 was retried";
  c.username = "cdc";
  c.password = "s3cret";
  auto client = client_for(c);
  EXPECT_TRUE(client->subjects());
  EXPECT_TRUE(client->register_schema("t-value", SchemaType::kAvro, kSchema));
  EXPECT_EQ(client->describe().find("s3cret"), std::string::npos);
  const auto sent = registry.requests("/__double/headers");
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0], "");
  EXPECT_EQ(sent[1], "Basic Y2RjOnMzY3JldA==");  // base64("cdc:s3cret")
  EXPECT_EQ(sent[2], sent[1]);

  RegistryDouble bearer = apicurio_double({"--token", "tok"});
  SchemaRegistryConfig b = config_for(bearer);
  b.bearer_token = "tok";
  EXPECT_TRUE(client_for(b)->subjects());
  EXPECT_EQ(bearer.requests("/__double/headers"), std::vector<std::string>{"Bearer tok"});
}

TEST(ApicurioRegistry, PreflightRunsTheArtifactRulesWithoutWritingAndAWrongRootIsNamed) {
  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  auto client = client_for(c);
  const SubjectSchema wanted[] = {{"t-value", SchemaType::kAvro, kSchema}};
  EXPECT_TRUE(preflight_schema_registry(*client, c, wanted)) << "a new artifact takes anything";
  ASSERT_TRUE(client->register_schema("t-value", SchemaType::kAvro, kOtherSchema));
  auto verdict = client->is_compatible("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(verdict) << verdict.error().report();
  EXPECT_EQ(*verdict, std::optional<bool>(true));
  registry.post("/__double/incompatible", R"({"artifact": "t-value"})");
  auto refused = preflight_schema_registry(*client, c, wanted);
  ASSERT_FALSE(refused);
  EXPECT_CONTAINS(refused.error().report(), "t-value");
  EXPECT_CONTAINS(refused.error().report(), "not compatible");
  EXPECT_EQ(registry.writes(), 1u) << "the preflight wrote";
  EXPECT_EQ(count_containing(registry.requests(), "dryRun=true"), 3u);

  SchemaRegistryConfig wrong_root = config_for(registry);
  wrong_root.url += "/registry";  // not the server's root
  auto lost = preflight_schema_registry(*client_for(wrong_root), wrong_root, wanted);
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(lost.error().report(), "server's root");
}

// The codecs' shared base, with the schemas of a made-up codec.
class TestCodec final : public RegistryBackedCodec {
 public:
  explicit TestCodec(std::optional<SchemaRegistryConfig> registry)
      : RegistryBackedCodec(std::move(registry)) {}
  std::string name() const override { return "test"; }
  bool json_text() const override { return false; }
  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    return fail(Error::configuration("not here"));
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    return fail(Error::configuration("not here"));
  }
  RegistryCodecSchemas registry_schemas() const override {
    return {"Test",  "Test schemas",  SchemaType::kAvro, "io.cppcdc.Event",
            kSchema, "io.cppcdc.Key", kOtherSchema};
  }
  using RegistryBackedCodec::registry_client;
};

TEST(RegistryBackedCodec, PreflightChecksEachTopicsSubjectsAndSharesOneClient) {
  using Outcome = PreflightCheck::Outcome;
  EXPECT_TRUE(TestCodec(std::nullopt).preflight({"orders"}).empty());
  auto none = TestCodec(std::nullopt).registry_client();
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, nullptr);

  RegistryDouble registry = apicurio_double();
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.auto_register = false;
  TestCodec codec(c);
  auto first = codec.registry_client();
  auto second = codec.registry_client();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->get(), second->get()) << "one client per configured codec";

  auto open = codec.preflight({});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].outcome, Outcome::kWarn);
  EXPECT_CONTAINS(open[0].what, "the Test codec's registry subjects depend on the topic");

  auto refused = codec.preflight({"orders"});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].outcome, Outcome::kFail);
  EXPECT_CONTAINS(refused[0].what + refused[0].remedy, "orders-value");

  auto writer = client_for(config_for(registry));
  ASSERT_TRUE(writer->register_schema("orders-value", SchemaType::kAvro, kSchema));
  ASSERT_TRUE(writer->register_schema("orders-key", SchemaType::kAvro, kOtherSchema));
  auto passed = codec.preflight({"orders"});
  ASSERT_EQ(passed.size(), 1u);
  EXPECT_EQ(passed[0].outcome, Outcome::kPass) << passed[0].what;
  EXPECT_CONTAINS(passed[0].what, "holds or accepts the Test schemas of 2 subjects");
  EXPECT_EQ(registry.writes(), 2u);
}

}  // namespace
}  // namespace cppcdc
