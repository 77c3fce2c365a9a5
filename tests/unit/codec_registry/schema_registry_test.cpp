// The schema registry client (include/cppcdc/schema_registry.hpp) against a registry DOUBLE:
// tests/integration/schema_registry_double.py, a separate process on loopback that speaks the
// Confluent REST API with its own code (no real registry runs on this machine; see
// docs/schema-registry.md). Registering, looking up, reading by id, the caches, the retries on
// 5xx, 429 (with Retry-After) and dropped connections, the terminal errors, authentication,
// auto_register = false never writing, and the preflight.

#include "cppcdc/schema_registry.hpp"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/http_client.hpp"
#include "schema_registry_double.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr const char* kSchema =
    R"({"type":"record","name":"Event","namespace":"io.cppcdc","fields":[{"name":"op","type":"string"}]})";
// The same schema, written differently (a registry compares parsed schemas).
constexpr const char* kSameSchema =
    R"({ "namespace": "io.cppcdc", "name": "Event", "type": "record", "fields": [ {"type": "string", "name": "op"} ] })";
constexpr const char* kOtherSchema =
    R"({"type":"record","name":"Key","namespace":"io.cppcdc","fields":[{"name":"id","type":["null","string"]}]})";

SchemaRegistryConfig config_for(const RegistryDouble& registry) {
  SchemaRegistryConfig c;
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

TEST(SchemaRegistry, SubjectNamesFollowTheThreeStrategies) {
  using S = SubjectNameStrategy;
  EXPECT_EQ(subject_name(S::kTopicName, "db.public.orders", "io.cppcdc.Event", false),
            "db.public.orders-value");
  EXPECT_EQ(subject_name(S::kTopicName, "db.public.orders", "io.cppcdc.Key", true),
            "db.public.orders-key");
  EXPECT_EQ(subject_name(S::kRecordName, "db.public.orders", "io.cppcdc.Event", false),
            "io.cppcdc.Event");
  EXPECT_EQ(subject_name(S::kTopicRecordName, "db.public.orders", "io.cppcdc.Event", false),
            "db.public.orders-io.cppcdc.Event");
  EXPECT_EQ(*parse_subject_name_strategy("topic_record_name"), S::kTopicRecordName);
  auto bad = parse_subject_name_strategy("TopicNameStrategy");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(bad.error().report(), "topic_record_name");
}

TEST(SchemaRegistry, TheConfluentFrameIsMagicZeroAndABigEndianId) {
  std::string framed;
  append_confluent_header(0x01020304, framed);
  framed += "payload";
  ASSERT_EQ(framed.size(), 12u);
  EXPECT_EQ(framed.substr(0, 5), std::string("\x00\x01\x02\x03\x04", 5));
  auto split = split_confluent_frame(framed);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->first, 0x01020304);
  EXPECT_EQ(split->second, "payload");
  auto short_one = split_confluent_frame(std::string("\x00\x01", 2));
  ASSERT_FALSE(short_one);
  EXPECT_EQ(short_one.error().kind(), ErrorKind::kInvalidData);
  auto wrong_magic = split_confluent_frame(std::string("\x03\x00\x00\x00\x01x", 6));
  ASSERT_FALSE(wrong_magic);
  EXPECT_EQ(wrong_magic.error().kind(), ErrorKind::kInvalidData);
}

TEST(SchemaRegistry, BadSettingsAreRefusedNamingThem) {
  SchemaRegistryConfig c;
  c.url = "registry:8081";
  EXPECT_CONTAINS(validate(c).error().report(), "url");
  c.url = "http://registry:8081";
  c.username = "u";
  EXPECT_CONTAINS(validate(c).error().report(), "password");
  c.password = "p";
  c.bearer_token = "t";
  EXPECT_CONTAINS(validate(c).error().report(), "bearer_token");
  c.bearer_token.reset();
  c.max_cache_entries = 0;
  EXPECT_CONTAINS(validate(c).error().report(), "max_cache_entries");
  c.max_cache_entries = 1;
  EXPECT_TRUE(validate(c));
}

TEST(SchemaRegistry, RegisterFindsTheSameIdForTheSameSchemaAndLookupAndIdReadsAgree) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  auto client = client_for(config_for(registry));
  ASSERT_NE(client, nullptr);
  auto id = client->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(id) << id.error().report();
  auto again = client->register_schema("t-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(again) << again.error().report();
  EXPECT_EQ(*again, *id);
  auto key_id = client->register_schema("t-key", SchemaType::kAvro, kOtherSchema);
  ASSERT_TRUE(key_id);
  EXPECT_NE(*key_id, *id);

  auto found = client->lookup_schema("t-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(found) << found.error().report();
  EXPECT_EQ(*found, *id);
  auto by_id = client->schema_by_id(*id);
  ASSERT_TRUE(by_id) << by_id.error().report();
  EXPECT_EQ(by_id->type, SchemaType::kAvro);
  EXPECT_EQ(boost::json::parse(by_id->schema), boost::json::parse(kSchema));
  auto latest = client->latest_schema("t-key");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, *key_id);
  EXPECT_EQ(latest->version, 1);
  auto subjects = client->subjects();
  ASSERT_TRUE(subjects);
  EXPECT_EQ(*subjects, (std::vector<std::string>{"t-key", "t-value"}));

  // Ids and registrations are cached: asking again sends nothing.
  const std::size_t before = registry.requests().size();
  ASSERT_TRUE(client->schema_by_id(*id));
  ASSERT_TRUE(client->register_schema("t-value", SchemaType::kAvro, kSchema));
  EXPECT_EQ(registry.requests().size(), before);

  auto json_id = client->register_schema("j-value", SchemaType::kJson, R"({"type":"object"})");
  ASSERT_TRUE(json_id);
  auto json_schema = client->schema_by_id(*json_id);
  ASSERT_TRUE(json_schema);
  EXPECT_EQ(json_schema->type, SchemaType::kJson);
}

TEST(SchemaRegistry, AutoRegisterFalseNeverWritesAndAMissingSchemaIsTerminalNamingTheSubject) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.auto_register = false;
  auto client = client_for(c);
  ASSERT_NE(client, nullptr);
  auto missing = resolve_schema_id(*client, c, "orders-value", SchemaType::kAvro, kSchema);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(missing.error().report(), "orders-value");
  EXPECT_CONTAINS(missing.error().report(), "auto_register");
  const SubjectSchema wanted[] = {{"orders-value", SchemaType::kAvro, kSchema}};
  auto preflight = preflight_schema_registry(*client, c, wanted);
  ASSERT_FALSE(preflight);
  EXPECT_CONTAINS(preflight.error().report(), "orders-value");
  // Every missing subject is named, not only the first (a trial registered one, ran preflight
  // again, and only then learnt of the next).
  const SubjectSchema both[] = {{"orders-value", SchemaType::kAvro, kSchema},
                                {"orders-key", SchemaType::kAvro, kOtherSchema}};
  auto two = preflight_schema_registry(*client, c, both);
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(two.error().report(), "2 subjects");
  EXPECT_CONTAINS(two.error().report(), "orders-value");
  EXPECT_CONTAINS(two.error().report(), "orders-key");
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false wrote to the registry";

  // Registered by someone else: found, and still nothing written by us.
  SchemaRegistryConfig writer = config_for(registry);
  auto other = client_for(writer);
  ASSERT_TRUE(other->register_schema("orders-value", SchemaType::kAvro, kSchema));
  auto id = resolve_schema_id(*client, c, "orders-value", SchemaType::kAvro, kSameSchema);
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_TRUE(preflight_schema_registry(*client, c, wanted));
  EXPECT_EQ(registry.writes(), 1u);
}

TEST(SchemaRegistry, FiveHundredsAndDroppedConnectionsAreRetriedAndTheAnswerStillComes) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  auto client = client_for(config_for(registry));
  ASSERT_NE(client, nullptr);
  registry.post("/__double/fail", R"({"status": 503, "count": 2})");
  auto id = client->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(id) << id.error().report();
  registry.post("/__double/fail", R"({"drop": 2})");
  auto schema = client->schema_by_id(*id);
  ASSERT_TRUE(schema) << schema.error().report();
  std::size_t attempts = 0;
  for (const auto& r : registry.requests())
    attempts += r.find("/schemas/ids/") != std::string::npos;
  EXPECT_EQ(attempts, 3u) << "two dropped connections, then the answer";
}

TEST(SchemaRegistry, A429WaitsAtLeastWhatRetryAfterAsksUpToTheBackoffCap) {
  RegistryDouble registry;
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
}

TEST(SchemaRegistry, RetriesEndInATransientErrorAndClientErrorsAreNotRetried) {
  RegistryDouble registry;
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

  RegistryDouble fresh;
  auto other = client_for(config_for(fresh));
  auto invalid = other->register_schema("t-value", SchemaType::kAvro, "{not json");
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(invalid.error().report(), "422");
  EXPECT_EQ(fresh.requests().size(), 1u) << "a 422 was retried";

  fresh.post("/__double/incompatible", R"({"subject": "t-value"})");
  auto refused = other->register_schema("t-value", SchemaType::kAvro, kSchema);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(refused.error().report(), "incompatible");

  SchemaRegistryConfig nowhere;
  nowhere.url = "http://127.0.0.1:1";
  nowhere.retry = RegistryRetryPolicy::none();
  auto unreachable = client_for(nowhere)->subjects();
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(unreachable.error().report(), "127.0.0.1:1");
}

TEST(SchemaRegistry, CredentialsAreSentAndAWrongOneIsTerminalWithTheRemedy) {
  RegistryDouble registry({"--user", "cdc", "--password", "s3cret"});
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  auto anonymous = client_for(c)->subjects();
  ASSERT_FALSE(anonymous);
  EXPECT_EQ(anonymous.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(anonymous.error().report(), "401");
  EXPECT_CONTAINS(anonymous.error().report(), "credentials");
  c.username = "cdc";
  c.password = "s3cret";
  auto client = client_for(c);
  EXPECT_TRUE(client->subjects());
  EXPECT_EQ(client->describe().find("s3cret"), std::string::npos);

  RegistryDouble bearer({"--token", "tok"});
  SchemaRegistryConfig b = config_for(bearer);
  b.bearer_token = "tok";
  EXPECT_TRUE(client_for(b)->subjects());
}

TEST(SchemaRegistry, PreflightChecksCompatibilityUnlessTheRegistryHasNoSuchCheck) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  auto client = client_for(c);
  const SubjectSchema wanted[] = {{"t-value", SchemaType::kAvro, kSchema}};
  EXPECT_TRUE(preflight_schema_registry(*client, c, wanted)) << "a new subject takes anything";
  ASSERT_TRUE(client->register_schema("t-value", SchemaType::kAvro, kOtherSchema));
  registry.post("/__double/incompatible", R"({"subject": "t-value"})");
  auto refused = preflight_schema_registry(*client, c, wanted);
  ASSERT_FALSE(refused);
  EXPECT_CONTAINS(refused.error().report(), "t-value");
  EXPECT_CONTAINS(refused.error().report(), "not compatible");
  EXPECT_EQ(registry.writes(), 1u) << "the preflight wrote";

  RegistryDouble plain({"--no-compatibility"});
  SchemaRegistryConfig p = config_for(plain);
  auto other = client_for(p);
  ASSERT_TRUE(other->register_schema("t-value", SchemaType::kAvro, kOtherSchema));
  auto verdict = other->is_compatible("t-value", SchemaType::kAvro, kSchema);
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->has_value());
  EXPECT_TRUE(preflight_schema_registry(*other, p, wanted));

  SchemaRegistryConfig wrong_root = config_for(registry);
  wrong_root.url += "/apis/ccompat/v7";  // not this registry's root
  auto lost = preflight_schema_registry(*client_for(wrong_root), wrong_root, wanted);
  ASSERT_FALSE(lost);
  EXPECT_CONTAINS(lost.error().report(), "API root");
}

// auto_register = false and a subject that exists with another schema: the preflight says the
// schema differs, not that the subject is missing (a trial saw Apicurio's "No artifact" text
// passed on as if it were).
TEST(SchemaRegistry, UnderLookupOnlyASubjectHoldingAnotherSchemaIsSaidToDiffer) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  auto writer = client_for(c);
  ASSERT_TRUE(writer->register_schema("t-value", SchemaType::kAvro, kOtherSchema));
  c.auto_register = false;
  auto client = client_for(c);
  const SubjectSchema wanted[] = {{"t-value", SchemaType::kAvro, kSchema},
                                  {"u-value", SchemaType::kAvro, kSchema}};
  auto refused = preflight_schema_registry(*client, c, wanted);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal);
  const std::string report = refused.error().report();
  EXPECT_CONTAINS(report, "subject \"t-value\" exists, but its versions hold another schema");
  EXPECT_CONTAINS(report, "u-value");  // the missing one is still named as missing
  EXPECT_EQ(registry.writes(), 1u) << "lookup only: the preflight wrote";
}

TEST(SchemaRegistry, WarmingFillsTheCacheAndTheOldestIdLeavesAFullOne) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  SchemaRegistryConfig c = config_for(registry);
  c.max_cache_entries = 2;
  auto writer = client_for(config_for(registry));
  std::vector<std::int32_t> ids;
  for (const char* s : {kSchema, kOtherSchema, R"({"type":"string"})"}) {
    auto id = writer->register_schema(std::string("s") + std::to_string(ids.size()),
                                      SchemaType::kAvro, s);
    ASSERT_TRUE(id);
    ids.push_back(*id);
  }
  auto reader = client_for(c);
  ASSERT_TRUE(warm_schema_cache(*reader, std::span<const std::int32_t>(ids).subspan(1)));
  const std::size_t before = registry.requests().size();
  ASSERT_TRUE(reader->schema_by_id(ids[1]));
  ASSERT_TRUE(reader->schema_by_id(ids[2]));
  EXPECT_EQ(registry.requests().size(), before) << "warmed ids were fetched again";
  ASSERT_TRUE(reader->schema_by_id(ids[0]));  // pushes ids[1] out
  ASSERT_TRUE(reader->schema_by_id(ids[1]));
  EXPECT_EQ(registry.requests().size(), before + 2);
  auto unknown = reader->schema_by_id(999);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind(), ErrorKind::kTerminal);
}

}  // namespace
}  // namespace cppcdc

namespace cppcdc {
namespace {

// Fresh-user trial of issue 18: a registry that accepts the connection but never answers held
// a start (and a SIGTERM) for (retries + 1) x request_timeout_ms. With `stop` set, a request in
// flight ends when it turns true, and no retry follows. The request timeout here is ten
// minutes: the call returns because of the stop or not at all.
TEST(SchemaRegistry, AStopRequestEndsARequestToARegistryThatNeverAnswers) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::atomic<bool> stop{false};
  SchemaRegistryConfig c;
  c.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  c.request_timeout_ms = 600'000;
  c.stop = &stop;
  auto client = client_for(c);
  ASSERT_TRUE(client);
  // The request is in flight once its connection is accepted; then the stop comes.
  std::thread silent([&] {
    const int conn = ::accept(listener, nullptr, nullptr);
    stop = true;
    if (conn >= 0) {
      char buf[4096];
      (void)::recv(conn, buf, sizeof buf, 0);  // read the request, answer nothing
      // Held open until the client gives up, so the end of the call is the stop's doing.
      while (::recv(conn, buf, sizeof buf, 0) > 0) {
      }
      ::close(conn);
    }
  });
  auto subjects = client->subjects();
  silent.join();
  ::close(listener);
  ASSERT_FALSE(subjects);
  EXPECT_EQ(subjects.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(subjects.error().report(), "the process is stopping");
  EXPECT_EQ(subjects.error().report().find("attempts"), std::string::npos)
      << subjects.error().report();
}

}  // namespace
}  // namespace cppcdc
