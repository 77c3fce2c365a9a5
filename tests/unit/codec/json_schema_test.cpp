// The json_schema codec (cppcdc/json_schema.hpp): records are the Confluent header and the
// JSON envelope byte for byte, keys the header and the json codec's key; generated and golden
// events round-trip; bad framing, unknown ids and foreign schemas are refused; ids come from the
// schema registry DOUBLE (tests/integration/schema_registry_double.py) as schemaType JSON or
// are fixed; and Debian's python3-jsonschema validates what we write against the checked-in
// draft-07 schemas (and refuses envelopes that break them, so the schemas say something).

#include "cppcdc/json_schema.hpp"

#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "schema_registry_double.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr std::int32_t kValueId = 0x01020304;  // every header byte differs: shows the order
constexpr std::int32_t kKeyId = 77;

JsonSchemaCodecOptions fixed_ids(std::int32_t value = kValueId, std::int32_t key = kKeyId) {
  JsonSchemaCodecOptions o;
  o.schema_id = value;
  o.key_schema_id = key;
  return o;
}

std::string header(std::int32_t id) {
  std::string out;
  append_confluent_header(id, out);
  return out;
}

std::string encoded(Encoder& encoder, const Event& e, std::string_view destination = {}) {
  ByteBuffer out;
  auto st = encoder.encode_to(destination, e, out);
  EXPECT_TRUE(st) << st.error().report();
  return std::string(out.view());
}

std::vector<Event> generated(int n, std::uint32_t seed) {
  test::EventGenerator gen(seed);
  std::vector<Event> out;
  for (int i = 0; i < n; ++i) out.push_back(gen.next());
  out.push_back(test::full_event());
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path source_path(const std::string& relative) { return fs::path(CPPCDC_SOURCE_DIR) / relative; }

TEST(JsonSchemaCodec, TheBuiltInSchemasAreTheFilesOfTheRepository) {
  EXPECT_EQ(json_schema_event_schema(),
            read_file(source_path("src/codec/json_schema/event.schema.json")));
  EXPECT_EQ(json_schema_key_schema(),
            read_file(source_path("src/codec/json_schema/event_key.schema.json")));
  // The titles are what the record_name strategies name subjects after.
  EXPECT_EQ(json::parse(json_schema_event_schema()).at("title"), kJsonSchemaEventTitle.data());
  EXPECT_EQ(json::parse(json_schema_key_schema()).at("title"), kJsonSchemaKeyTitle.data());
  EXPECT_EQ(json::parse(json_schema_event_schema()).at("$schema"),
            "http://json-schema.org/draft-07/schema#");
}

TEST(JsonSchemaCodec, RecordsAreTheHeaderAndTheJsonEnvelopeAndRoundTripGeneratedEvents) {
  auto encoder = make_json_schema_encoder(fixed_ids());
  auto decoder = make_json_schema_decoder(fixed_ids());
  EXPECT_EQ(encoder->name(), "json_schema");
  EXPECT_FALSE(encoder->json_text()) << "the header's bytes are not JSON text";
  std::set<Operation> ops;
  std::size_t keyed = 0;
  for (const Event& e : generated(3000, 31)) {
    ops.insert(e.op);
    const std::string record = encoded(*encoder, e, "some.topic");
    ASSERT_EQ(record, std::string("\0\x01\x02\x03\x04", 5) + e.to_json());
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report() << "\n" << e.to_json();
    ASSERT_EQ(*back, e) << e.to_json() << "\n" << back->to_json();
    EXPECT_EQ(back->before_is_key_only(), e.before_is_key_only());

    ByteBuffer key;
    key.raw("prefix|");
    auto r = encoder->encode_key_to("some.topic", e, key);
    ASSERT_TRUE(r) << r.error().report();
    ByteBuffer json_key;
    if (append_json_key(e, json_key)) {
      ++keyed;
      ASSERT_TRUE(*r);
      ASSERT_EQ(key.view(), "prefix|" + header(kKeyId) + std::string(json_key.view()));
      auto back_key = decode_json_schema_key(key.view().substr(7), fixed_ids());
      ASSERT_TRUE(back_key) << back_key.error().report();
      EXPECT_EQ(*back_key, json_key.view());
    } else {
      EXPECT_FALSE(*r);
      EXPECT_EQ(key.view(), "prefix|") << "no key is no bytes, never a framed empty key";
    }
  }
  EXPECT_EQ(ops.size(), 7u) << "every op";
  EXPECT_GT(keyed, 1000u);
}

TEST(JsonSchemaCodec, KeylessEventsHaveNoKeyEvenWhenTheRegistryWouldFail) {
  // No registry call is made for a keyless event: an unreachable registry does not matter.
  JsonSchemaCodecOptions o;
  o.registry_config.url = "http://127.0.0.1:1";
  o.registry_config.retry = RegistryRetryPolicy::none();
  o.registry_config.connect_timeout_ms = 200;
  auto client = make_schema_registry_client(o.registry_config);
  ASSERT_TRUE(client);
  o.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  auto encoder = make_json_schema_encoder(o);
  Event e = test::full_event();
  e.op = Operation::kTruncate;
  e.after.reset();
  e.before = BeforeImage{};
  ByteBuffer out;
  auto r = encoder->encode_key_to("t", e, out);
  ASSERT_TRUE(r) << r.error().report();
  EXPECT_FALSE(*r);
  EXPECT_TRUE(out.empty());
  // A keyed one needs the id: an error (not "no key"), nothing appended.
  auto keyed = encoder->encode_key_to("t", test::full_event(), out);
  ASSERT_FALSE(keyed);
  EXPECT_EQ(keyed.error().kind(), ErrorKind::kTransient);
  EXPECT_CONTAINS(keyed.error().report(), "t-key");
  EXPECT_TRUE(out.empty());
}

TEST(JsonSchemaCodec, MatchesTheGoldenFiles) {
  const fs::path dir = fs::path(CPPCDC_GOLDEN_DIR) / "codec";
  auto encoder = make_json_schema_encoder(fixed_ids());
  // The shared full event with a table and transaction of its own: this golden file is the
  // envelope's JSON text, which would otherwise repeat the specification's example event.
  Event golden = test::full_event();
  golden.table = "shipments";
  golden.transaction = TransactionMetadata{5127, 2, 1};
  const std::string record = encoded(*encoder, golden);
  ByteBuffer key;
  ASSERT_TRUE(*encoder->encode_key(golden, key));
  if (std::getenv("CPPCDC_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(dir);
    std::ofstream(dir / "json_schema_event.bin", std::ios::binary) << record;
    std::ofstream(dir / "json_schema_key.bin", std::ios::binary) << key.view();
  }
  ASSERT_TRUE(fs::exists(dir / "json_schema_event.bin")) << "(CPPCDC_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(record, read_file(dir / "json_schema_event.bin"))
      << "the JSON Schema records changed: consumers of the registered schema would notice";
  EXPECT_EQ(key.view(), read_file(dir / "json_schema_key.bin"));
  auto back =
      make_json_schema_decoder(fixed_ids())->decode(read_file(dir / "json_schema_event.bin"));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, golden);
  auto back_key = decode_json_schema_key(read_file(dir / "json_schema_key.bin"), fixed_ids());
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");
}

TEST(JsonSchemaCodec, RefusesWrongMagicShortInputForeignIdsAndNonEnvelopes) {
  auto decoder = make_json_schema_decoder(fixed_ids());
  const std::string record = encoded(*make_json_schema_encoder(fixed_ids()), test::full_event());
  for (std::size_t n = 0; n < 5; ++n) {
    auto r = decoder->decode(record.substr(0, n));
    ASSERT_FALSE(r) << n << " bytes";
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
    EXPECT_CONTAINS(r.error().report(), "too short for the Confluent framing");
  }
  std::string wrong_magic = record;
  wrong_magic[0] = '\x01';
  auto magic = decoder->decode(wrong_magic);
  ASSERT_FALSE(magic);
  EXPECT_EQ(magic.error().kind(), ErrorKind::kInvalidData);
  EXPECT_CONTAINS(magic.error().report(), "magic byte 0");
  auto bare = decoder->decode(test::full_event().to_json());
  ASSERT_FALSE(bare) << "the json codec's bytes are not read as framed ones";
  EXPECT_EQ(bare.error().kind(), ErrorKind::kInvalidData);

  auto other_id = decoder->decode(header(kKeyId) + record.substr(5));
  ASSERT_FALSE(other_id);
  EXPECT_EQ(other_id.error().kind(), ErrorKind::kInvalidData);
  EXPECT_CONTAINS(other_id.error().report(), "schema id 77, not the schema_id 16909060");

  for (const std::string& payload : {std::string(""), std::string("{"), std::string("[]"),
                                     std::string(R"({"op":"insert"})"), record.substr(6)}) {
    auto r = decoder->decode(header(kValueId) + payload);
    ASSERT_FALSE(r) << payload;
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData) << r.error().report();
    EXPECT_CONTAINS(r.error().report(), "reading a JSON Schema event");
  }
  // Trailing bytes after the envelope.
  EXPECT_FALSE(decoder->decode(record + "x"));

  // Keys: the key id, a non-empty object.
  auto value_id_key = decode_json_schema_key(header(kValueId) + R"({"id":"1"})", fixed_ids());
  ASSERT_FALSE(value_id_key);
  EXPECT_CONTAINS(value_id_key.error().report(), "not the key_schema_id 77");
  for (const std::string& payload : {std::string("{}"), std::string("\"7\""), std::string("{")}) {
    auto r = decode_json_schema_key(header(kKeyId) + payload, fixed_ids());
    ASSERT_FALSE(r) << payload;
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
  }
}

TEST(JsonSchemaCodec, OptionsNameTheIdsOneWay) {
  Event e = test::full_event();
  ByteBuffer out;
  auto neither = make_json_schema_encoder({})->encode(e, out);
  ASSERT_FALSE(neither);
  EXPECT_EQ(neither.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(neither.error().report(), "schema_registry");
  auto neither_decoder = make_json_schema_decoder({})->decode(header(1) + e.to_json());
  ASSERT_FALSE(neither_decoder);
  EXPECT_EQ(neither_decoder.error().kind(), ErrorKind::kConfiguration);

  JsonSchemaCodecOptions half;
  half.schema_id = 3;
  auto st = validate(half);
  ASSERT_FALSE(st);
  EXPECT_CONTAINS(st.error().report(), "key_schema_id is missing");
  EXPECT_FALSE(make_json_schema_encoder(half)->encode_key(e, out));

  JsonSchemaCodecOptions negative = fixed_ids(-1, 2);
  ASSERT_FALSE(validate(negative));
  EXPECT_CONTAINS(validate(negative).error().report(), "schema_id must be 0 or more");

  JsonSchemaCodecOptions both = fixed_ids();
  SchemaRegistryConfig c;
  c.url = "http://127.0.0.1:1";
  auto client = make_schema_registry_client(c);
  ASSERT_TRUE(client);
  both.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  ASSERT_FALSE(validate(both));
  EXPECT_CONTAINS(validate(both).error().report(), "not both");
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(validate(fixed_ids()));
  EXPECT_TRUE(validate(fixed_ids(0, 0)));
}

// ---- ids from the schema registry double --------------------------------------------------

JsonSchemaCodecOptions registry_options(const RegistryDouble& registry, bool auto_register) {
  JsonSchemaCodecOptions o;
  o.registry_config.url = registry.url();
  o.registry_config.auto_register = auto_register;
  o.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(o.registry_config);
  EXPECT_TRUE(client);
  o.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  return o;
}

TEST(JsonSchemaCodec, RegistryIdsOfTheTopicsSubjectsRegisteredAsJsonSchemas) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const JsonSchemaCodecOptions options = registry_options(registry, true);
  // Another schema first, so that our ids are not simply 1 and 2.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kJson,
                                                R"({"type":"string"})"));
  auto encoder = make_json_schema_encoder(options);
  const Event e = test::full_event();
  const std::string value = encoded(*encoder, e, "shop.public.orders");
  ByteBuffer key;
  auto keyed = encoder->encode_key_to("shop.public.orders", e, key);
  ASSERT_TRUE(keyed) << keyed.error().report();
  ASSERT_TRUE(*keyed);

  auto value_id = options.registry->lookup_schema("shop.public.orders-value", SchemaType::kJson,
                                                  std::string(json_schema_event_schema()));
  auto key_id = options.registry->lookup_schema("shop.public.orders-key", SchemaType::kJson,
                                                std::string(json_schema_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  EXPECT_NE(*value_id, 1);
  EXPECT_NE(*value_id, *key_id);
  EXPECT_EQ(value, header(*value_id) + e.to_json());
  EXPECT_EQ(key.view(), header(*key_id) + R"({"id":"42"})");
  auto registered = options.registry->schema_by_id(*value_id);
  ASSERT_TRUE(registered);
  EXPECT_EQ(registered->type, SchemaType::kJson) << "registered with schemaType JSON";

  // Our decoder checks the id's schema with the registry, once per id.
  auto decoder = make_json_schema_decoder(registry_options(registry, true));
  auto back = decoder->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  auto back_key = decode_json_schema_key(key.view(), options);
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");

  // Ids are resolved once per destination: more records ask the registry nothing.
  const auto asked = registry.requests().size();
  (void)encoded(*encoder, e, "shop.public.orders");
  ByteBuffer again;
  ASSERT_TRUE(*encoder->encode_key_to("shop.public.orders", e, again));
  ASSERT_TRUE(decoder->decode(value));
  EXPECT_EQ(registry.requests().size(), asked);
  // Another topic has subjects of its own, with the same schemas and so the same ids.
  const std::string other = encoded(*encoder, e, "shop.public.items");
  EXPECT_EQ(other, value);
  auto subjects = options.registry->subjects();
  ASSERT_TRUE(subjects);
  EXPECT_EQ(*subjects,
            (std::vector<std::string>{"shop.public.items-value", "shop.public.orders-key",
                                      "shop.public.orders-value", "unrelated-value"}));
}

// Through the "apicurio" client (against the Apicurio DOUBLE): global ids in the header, and
// unlike Confluent's content ids, the same schema under another topic's artifact has an id of
// its own.
TEST(JsonSchemaCodec, ApicurioGlobalIdsFrameTheRecordsAndOurDecoderReadsThemBack) {
  RegistryDouble registry({}, RegistryDouble::kApicurio);
  ASSERT_TRUE(registry.up());
  JsonSchemaCodecOptions options;
  options.registry_config.type = SchemaRegistryType::kApicurio;
  options.registry_config.url = registry.url();
  options.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client) << client.error().report();
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  auto encoder = make_json_schema_encoder(options);
  const Event e = test::full_event();
  const std::string value = encoded(*encoder, e, "shop.public.orders");
  EXPECT_EQ(value, header(101) + e.to_json());
  auto back = make_json_schema_decoder(options)->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  const std::string other = encoded(*encoder, e, "shop.public.items");
  EXPECT_EQ(other, header(102) + e.to_json());
  auto registered = options.registry->schema_by_id(102);
  ASSERT_TRUE(registered) << registered.error().report();
  EXPECT_EQ(registered->type, SchemaType::kJson);
}

TEST(JsonSchemaCodec, ADecoderRefusesIdsTheRegistryLacksOrThatNameAnotherSchema) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  JsonSchemaCodecOptions options = registry_options(registry, true);
  const std::string payload = test::full_event().to_json();
  auto decoder = make_json_schema_decoder(options);

  auto unknown = decoder->decode(header(4711) + payload);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(unknown.error().report(), "reading JSON Schema id 4711");
  EXPECT_CONTAINS(unknown.error().report(), "404");

  auto other_json = options.registry->register_schema(
      "other-value", SchemaType::kJson, R"({"type":"object","title":"io.cppcdc.Event"})");
  ASSERT_TRUE(other_json) << other_json.error().report();
  auto r = decoder->decode(header(*other_json) + payload);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(r.error().report(), "is not the JSON Schema io.cppcdc.Event");
  EXPECT_CONTAINS(r.error().report(), "another JSON Schema");

  // The same text registered as another schema type is not ours either.
  auto avro = options.registry->register_schema("avro-value", SchemaType::kAvro,
                                                std::string(json_schema_event_schema()));
  ASSERT_TRUE(avro) << avro.error().report();
  auto as_avro = decoder->decode(header(*avro) + payload);
  ASSERT_FALSE(as_avro);
  EXPECT_CONTAINS(as_avro.error().report(), "a schema of type AVRO");

  // The key decoder wants the key schema, not the envelope's.
  ByteBuffer value;
  ASSERT_TRUE(make_json_schema_encoder(options)->encode_to("t", test::full_event(), value));
  auto as_key =
      decode_json_schema_key(std::string(value.view().substr(0, 5)) + R"({"id":"42"})", options);
  ASSERT_FALSE(as_key);
  EXPECT_CONTAINS(as_key.error().report(), "is not the JSON Schema io.cppcdc.EventKey");
}

TEST(JsonSchemaCodec, WithoutAutoRegisterOnlyLooksUpAndADifferingSchemaNamesTheSubject) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  // Missing subjects: the value and the key fail naming their subject; nothing is written.
  {
    auto encoder = make_json_schema_encoder(registry_options(registry, false));
    ByteBuffer out;
    auto value = encoder->encode_to("shop.public.orders", test::full_event(), out);
    ASSERT_FALSE(value);
    EXPECT_EQ(value.error().kind(), ErrorKind::kTerminal);
    EXPECT_CONTAINS(value.error().report(), "\"shop.public.orders-value\"");
    EXPECT_CONTAINS(value.error().report(), "auto_register is false");
    auto key = encoder->encode_key_to("shop.public.orders", test::full_event(), out);
    ASSERT_FALSE(key) << "a key that cannot be encoded is an error, not \"no key\"";
    EXPECT_CONTAINS(key.error().report(), "\"shop.public.orders-key\"");
    EXPECT_TRUE(out.empty());
    EXPECT_EQ(registry.writes(), 0u) << "auto_register = false never writes";
  }
  // The subject holds a different JSON Schema (someone else's version): an error naming it.
  const JsonSchemaCodecOptions admin = registry_options(registry, true);
  ASSERT_TRUE(admin.registry->register_schema("shop.public.orders-value", SchemaType::kJson,
                                              R"({"type":"object"})"));
  ASSERT_TRUE(admin.registry->register_schema("shop.public.orders-key", SchemaType::kJson,
                                              std::string(json_schema_key_schema())));
  const auto writes = registry.writes();
  {
    auto encoder = make_json_schema_encoder(registry_options(registry, false));
    ByteBuffer out;
    auto value = encoder->encode_to("shop.public.orders", test::full_event(), out);
    ASSERT_FALSE(value);
    EXPECT_EQ(value.error().kind(), ErrorKind::kTerminal);
    EXPECT_CONTAINS(value.error().report(), "\"shop.public.orders-value\"");
    EXPECT_CONTAINS(value.error().report(), "Schema not found");
    EXPECT_TRUE(out.empty());
    // The key subject holds exactly our key schema: found, framed with its id.
    auto key = encoder->encode_key_to("shop.public.orders", test::full_event(), out);
    ASSERT_TRUE(key) << key.error().report();
    auto key_id = admin.registry->lookup_schema("shop.public.orders-key", SchemaType::kJson,
                                                std::string(json_schema_key_schema()));
    ASSERT_TRUE(key_id);
    EXPECT_EQ(out.view(), header(*key_id) + R"({"id":"42"})");
  }
  // Once the envelope schema is registered (as a newer version), lookups find it.
  ASSERT_TRUE(admin.registry->register_schema("shop.public.orders-value", SchemaType::kJson,
                                              std::string(json_schema_event_schema())));
  const auto writes_after = registry.writes();
  EXPECT_EQ(writes_after, writes + 1);
  auto encoder = make_json_schema_encoder(registry_options(registry, false));
  ByteBuffer out;
  ASSERT_TRUE(encoder->encode_to("shop.public.orders", test::full_event(), out));
  EXPECT_EQ(registry.writes(), writes_after) << "auto_register = false never writes";
}

TEST(JsonSchemaCodec, WithoutATopicTheRecordNameStrategyUsesTheTitles) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  JsonSchemaCodecOptions options = registry_options(registry, true);
  ByteBuffer out;
  auto r = make_json_schema_encoder(options)->encode(test::full_event(), out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(r.error().report(), "record_name");
  options.registry_config.subject_name_strategy = SubjectNameStrategy::kRecordName;
  auto encoder = make_json_schema_encoder(options);
  ASSERT_TRUE(encoder->encode(test::full_event(), out));
  ByteBuffer key;
  ASSERT_TRUE(*encoder->encode_key(test::full_event(), key));
  auto id = options.registry->lookup_schema("io.cppcdc.Event", SchemaType::kJson,
                                            std::string(json_schema_event_schema()));
  auto key_id = options.registry->lookup_schema("io.cppcdc.EventKey", SchemaType::kJson,
                                                std::string(json_schema_key_schema()));
  ASSERT_TRUE(id) << id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  EXPECT_EQ(split_confluent_frame(out.view())->first, *id);
  EXPECT_EQ(split_confluent_frame(key.view())->first, *key_id);
  // topic_record_name: "<topic>-<title>".
  options.registry_config.subject_name_strategy = SubjectNameStrategy::kTopicRecordName;
  ASSERT_TRUE(make_json_schema_encoder(options)->encode_to("t", test::full_event(), out));
  EXPECT_TRUE(options.registry->lookup_schema("t-io.cppcdc.Event", SchemaType::kJson,
                                              std::string(json_schema_event_schema())));
}

// ---- python3-jsonschema validates what we write ---------------------------------------------

struct Verdict {
  std::int64_t magic = -1;
  std::int64_t schema_id = -1;
  bool valid = false;
  std::string errors;
};

// Runs tests/unit/codec/json_schema_validate.py with `schema_file` over `records`.
std::vector<Verdict> python_validate(const std::vector<std::string>& records,
                                     const std::string& schema_file) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("jsonschema-py-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string command = "/usr/bin/python3 " +
                        source_path("tests/unit/codec/json_schema_validate.py").string() + " " +
                        schema_file;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const fs::path file = dir / (std::to_string(i) + ".bin");
    std::ofstream(file, std::ios::binary) << records[i];
    command += " " + file.string();
  }
  std::vector<Verdict> out;
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return out;
  std::string text;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "python3-jsonschema could not check our records "
                          "(apt-get install python3-jsonschema)";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto v = json::parse(line).as_object();
    Verdict verdict;
    verdict.magic = v.at("magic").as_int64();
    verdict.schema_id = v.at("schema_id").as_int64();
    verdict.valid = v.at("valid").as_bool();
    verdict.errors = json::serialize(v.at("errors"));
    out.push_back(std::move(verdict));
  }
  fs::remove_all(dir);
  return out;
}

TEST(JsonSchemaCodec, PythonJsonschemaFindsEveryRecordAndKeyValidAgainstTheCheckedInSchemas) {
  auto encoder = make_json_schema_encoder(fixed_ids());
  const std::vector<Event> events = generated(700, 43);
  std::set<Operation> ops;
  std::vector<std::string> records;
  std::vector<std::string> keys;
  for (const Event& e : events) {
    ops.insert(e.op);
    records.push_back(encoded(*encoder, e));
    ByteBuffer key;
    auto keyed = encoder->encode_key(e, key);
    ASSERT_TRUE(keyed);
    if (*keyed) keys.emplace_back(key.view());
  }
  ASSERT_EQ(ops.size(), 7u) << "every op is validated";
  ASSERT_GT(keys.size(), 100u);
  const auto verdicts =
      python_validate(records, source_path("src/codec/json_schema/event.schema.json").string());
  ASSERT_EQ(verdicts.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(verdicts[i].magic, 0);
    EXPECT_EQ(verdicts[i].schema_id, kValueId);
    EXPECT_TRUE(verdicts[i].valid) << verdicts[i].errors << "\n" << events[i].to_json();
  }
  const auto key_verdicts =
      python_validate(keys, source_path("src/codec/json_schema/event_key.schema.json").string());
  ASSERT_EQ(key_verdicts.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(key_verdicts[i].schema_id, kKeyId);
    EXPECT_TRUE(key_verdicts[i].valid) << key_verdicts[i].errors << "\n" << keys[i];
  }
}

// The schemas are not vacuous: envelopes that break the envelope's rules fail validation, each
// for its reason.
TEST(JsonSchemaCodec, PythonJsonschemaRefusesEnvelopesThatBreakTheSchema) {
  const std::string good = test::full_event().to_json();
  json::object base = json::parse(good).as_object();
  const auto changed = [&](auto&& change) {
    json::object o = base;
    change(o);
    return header(kValueId) + json::serialize(o);
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {changed([](json::object& o) { o["op"] = "upsert"; }), "'upsert' is not one of"},
      {changed([](json::object& o) { o.erase("ts"); }), "'ts' is a required property"},
      {changed([](json::object& o) { o["extra"] = 1; }), "Additional properties"},
      {changed([](json::object& o) { o["ts"] = "1"; }), "'1' is not of type 'integer'"},
      {changed([](json::object& o) { o["envelope_version"] = 70000; }), "70000 is greater"},
      {changed([](json::object& o) { o["transaction"].as_object()["tx_id"] = -1; }),
       "-1 is less than the minimum of 0"},
      {changed([](json::object& o) { o["after"] = json::array{}; }), "[] is not of type"},
      {changed([](json::object& o) { o["source"].as_object().erase("offset"); }),
       "'offset' is a required property"},
      {changed([](json::object& o) { o["primary_key"] = json::array{1}; }),
       "1 is not of type 'string'"},
      {changed([](json::object& o) {
         o["before"] = nullptr;
         o["before_is_key_only"] = true;
       }),
       "False was expected"},
      {changed([](json::object& o) {
         o["before_is_key_only"] = true;
         o["before_unavailable_columns"] = json::array{"x"};
       }),
       "should not be valid"},
      {changed([](json::object& o) {
         o["snapshot"] = json::object{{"snapshot_id", "s"}};
       }),
       "'chunk' is a required property"},
  };
  std::vector<std::string> records;
  for (const auto& [record, why] : bad) records.push_back(record);
  records.push_back(header(kValueId) + good);  // the control
  const auto verdicts =
      python_validate(records, source_path("src/codec/json_schema/event.schema.json").string());
  ASSERT_EQ(verdicts.size(), records.size());
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(verdicts[i].valid) << records[i];
    EXPECT_CONTAINS(verdicts[i].errors, bad[i].second) << records[i];
  }
  EXPECT_TRUE(verdicts.back().valid) << verdicts.back().errors;

  const auto keys =
      python_validate({header(kKeyId) + "{}", header(kKeyId) + "[\"42\"]",
                       header(kKeyId) + R"({"id":null,"doc":{"a":[1]}})"},
                      source_path("src/codec/json_schema/event_key.schema.json").string());
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_FALSE(keys[0].valid) << "an empty key object";
  EXPECT_FALSE(keys[1].valid) << "a key is an object";
  EXPECT_TRUE(keys[2].valid) << keys[2].errors;
}

}  // namespace
}  // namespace cppcdc
