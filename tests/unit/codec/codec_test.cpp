// The codecs through their public API (cppcdc/codec.hpp, cppcdc/avro.hpp): JSON output byte for
// byte Event::to_json(), the key's three outcomes, every decoder round-tripping golden and
// generated events, the Avro golden file, Avro bytes decoded by Debian's python3-avro (an
// independent implementation) field by field, and the Confluent framing against the schema
// registry DOUBLE (tests/integration/schema_registry_double.py).

#include "cppcdc/codec.hpp"

#include <gtest/gtest.h>
#include <stdio.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "core/event_json.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/cloudevents.hpp"
#include "cppcdc/debezium.hpp"
#include "cppcdc/plugin.hpp"
#include "schema_registry_double.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using test::as_int;
using test::expect_same;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

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

// ---- json ------------------------------------------------------------------------------------

TEST(JsonCodec, WritesExactlyWhatToJsonWritesAndReadsItBack) {
  auto encoder = make_json_encoder();
  auto decoder = make_json_decoder();
  for (const Event& e : generated(500, 7)) {
    const std::string record = encoded(*encoder, e, "some.topic");
    ASSERT_EQ(record, e.to_json());
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report() << "\n" << record;
    EXPECT_EQ(*back, e) << record;
  }
}

// ---- keys: the three outcomes ----------------------------------------------------------------

TEST(CodecKeys, AKeyNoKeyForAKeylessEventAndNothingAppended) {
  auto encoder = make_json_encoder();
  Event e = test::full_event();
  ByteBuffer out;
  out.raw("prefix|");
  auto keyed = encoder->encode_key(e, out);
  ASSERT_TRUE(keyed);
  EXPECT_TRUE(*keyed);
  EXPECT_EQ(out.view(), R"(prefix|{"id":"42"})");

  Event deleted = e;
  deleted.op = Operation::kDelete;
  deleted.after.reset();
  out.clear();
  ASSERT_TRUE(*encoder->encode_key(deleted, out));
  EXPECT_EQ(out.view(), R"({"id":"42"})") << "a delete's key comes from the before-image";

  std::vector<Event> keyless(4, e);
  keyless[0].op = Operation::kTruncate;
  keyless[0].after.reset();
  keyless[0].before = BeforeImage{};
  keyless[1].primary_key.reset();
  keyless[2].primary_key = std::vector<std::string>{"id", "missing"};
  keyless[3].primary_key = std::vector<std::string>{};
  for (const Event& k : keyless) {
    for (auto* enc : {encoder.get()}) {
      out.clear();
      out.raw("prefix|");
      auto r = enc->encode_key(k, out);
      ASSERT_TRUE(r);
      EXPECT_FALSE(*r);
      EXPECT_EQ(out.view(), "prefix|") << "no key is no bytes, never an empty key";
    }
  }
  auto avro = make_avro_encoder();
  for (const Event& k : keyless) {
    out.clear();
    auto r = avro->encode_key(k, out);
    ASSERT_TRUE(r);
    EXPECT_FALSE(*r);
    EXPECT_TRUE(out.empty());
  }
  out.clear();
  ASSERT_TRUE(*avro->encode_key(e, out));
  auto key = decode_avro_key(out.view());
  ASSERT_TRUE(key) << key.error().report();
  EXPECT_EQ(*key, R"({"id":"42"})");
}

// ---- avro ------------------------------------------------------------------------------------

TEST(AvroCodec, TheBuiltInSchemasAreTheAvscFilesOfTheRepository) {
  EXPECT_EQ(avro_event_schema(),
            read_file(fs::path(CPPCDC_SOURCE_DIR) / "src/codec/avro/event.avsc"));
  EXPECT_EQ(avro_key_schema(),
            read_file(fs::path(CPPCDC_SOURCE_DIR) / "src/codec/avro/event_key.avsc"));
}

TEST(AvroCodec, RoundTripsGeneratedEvents) {
  auto encoder = make_avro_encoder();
  auto decoder = make_avro_decoder();
  for (const Event& e : generated(3000, 11)) {
    const std::string record = encoded(*encoder, e);
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report() << "\n" << e.to_json();
    ASSERT_EQ(*back, e) << e.to_json() << "\n" << back->to_json();
    EXPECT_EQ(back->before_is_key_only(), e.before_is_key_only());
  }
}

TEST(AvroCodec, MatchesTheGoldenFile) {
  const fs::path golden = fs::path(CPPCDC_GOLDEN_DIR) / "codec" / "avro_event.bin";
  auto encoder = make_avro_encoder();
  const std::string record = encoded(*encoder, test::full_event());
  if (std::getenv("CPPCDC_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << record;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " (CPPCDC_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(record, read_file(golden))
      << "the Avro bytes changed: a consumer reading with event.avsc would misread them";
  auto back = make_avro_decoder()->decode(read_file(golden));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, test::full_event());
}

TEST(AvroCodec, RefusesTruncatedDamagedAndTrailingBytes) {
  auto encoder = make_avro_encoder();
  auto decoder = make_avro_decoder();
  const std::string record = encoded(*encoder, test::full_event());
  for (std::size_t n = 0; n < record.size(); ++n) {
    auto r = decoder->decode(record.substr(0, n));
    ASSERT_FALSE(r) << "a prefix of " << n << " bytes";
    EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
  }
  auto trailing = decoder->decode(record + "x");
  ASSERT_FALSE(trailing);
  EXPECT_CONTAINS(trailing.error().report(), "1 bytes follow");
  // A key-only before-image that also lists unavailable columns is refused by the same rule
  // as the JSON envelope's.
  Event bad = test::full_event();
  bad.before = BeforeKeyOnly{{{"id", "1", false}}};
  std::string bytes = encoded(*encoder, bad);
  ASSERT_GE(bytes.size(), 2u);
  // The last field (before_unavailable_columns) is an empty array, one byte 0: write one name.
  bytes.pop_back();
  bytes += std::string("\x02\x02x\x00", 4);
  auto contradictory = decoder->decode(bytes);
  ASSERT_FALSE(contradictory);
  EXPECT_CONTAINS(contradictory.error().report(), "key-only before image");
}

// Runs tests/unit/codec/avro_decode.py over `records`; one parsed JSON object per record.
std::vector<json::object> python_decode(const std::vector<std::string>& records,
                                        const std::string& schema_file, bool framed) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("avro-py-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string command = "/usr/bin/python3 " + std::string(CPPCDC_SOURCE_DIR) +
                        "/tests/unit/codec/avro_decode.py " + schema_file +
                        (framed ? " --framed" : "");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const fs::path file = dir / (std::to_string(i) + ".bin");
    std::ofstream(file, std::ios::binary) << records[i];
    command += " " + file.string();
  }
  std::vector<json::object> out;
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return out;
  std::string text;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "python3-avro could not decode our bytes (apt-get install python3-avro)";
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out.push_back(json::parse(line).as_object());
  fs::remove_all(dir);
  return out;
}

TEST(AvroCodec, PythonAvroDecodesOurBytesFieldByField) {
  auto encoder = make_avro_encoder();
  const std::vector<Event> events = generated(300, 23);
  std::vector<std::string> records;
  for (const Event& e : events) records.push_back(encoded(*encoder, e));
  const auto decoded =
      python_decode(records, std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/event.avsc", false);
  ASSERT_EQ(decoded.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i) + ": " + events[i].to_json());
    expect_same(decoded[i].at("datum").as_object(), events[i]);
  }
  // The key schema too.
  std::vector<std::string> keys;
  ByteBuffer key;
  ASSERT_TRUE(*encoder->encode_key(test::full_event(), key));
  keys.emplace_back(key.view());
  const auto decoded_keys =
      python_decode(keys, std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/event_key.avsc", false);
  ASSERT_EQ(decoded_keys.size(), 1u);
  EXPECT_EQ(decoded_keys[0].at("datum").at("key").as_string(), R"({"id":"42"})");
}

// ---- avro in the Confluent framing, against the registry double --------------------------

AvroCodecOptions registry_options(const RegistryDouble& registry, bool auto_register) {
  AvroCodecOptions o;
  o.registry_config.url = registry.url();
  o.registry_config.auto_register = auto_register;
  o.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(o.registry_config);
  EXPECT_TRUE(client);
  o.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  return o;
}

TEST(AvroCodec, ConfluentFramingCarriesTheRegistrysIdsForValueAndKey) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const AvroCodecOptions options = registry_options(registry, true);
  auto encoder = make_avro_encoder(options);
  EXPECT_EQ(encoder->content_type(), "application/vnd.confluent.avro");
  const Event e = test::full_event();
  const std::string value = encoded(*encoder, e, "shop.public.orders");
  ByteBuffer key;
  auto keyed = encoder->encode_key_to("shop.public.orders", e, key);
  ASSERT_TRUE(keyed) << keyed.error().report();
  ASSERT_TRUE(*keyed);

  auto value_id = options.registry->lookup_schema("shop.public.orders-value", SchemaType::kAvro,
                                                  std::string(avro_event_schema()));
  auto key_id = options.registry->lookup_schema("shop.public.orders-key", SchemaType::kAvro,
                                                std::string(avro_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  EXPECT_NE(*value_id, *key_id);
  auto frame = split_confluent_frame(value);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->first, *value_id);
  auto key_frame = split_confluent_frame(key.view());
  ASSERT_TRUE(key_frame);
  EXPECT_EQ(key_frame->first, *key_id);

  // Our decoder (checking the id's schema with the registry) and python3-avro read it back.
  auto decoder = make_avro_decoder(options);
  auto back = decoder->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  auto back_key = decode_avro_key(key.view(), options);
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");
  const auto py =
      python_decode({value}, std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/event.avsc", true);
  ASSERT_EQ(py.size(), 1u);
  EXPECT_EQ(as_int(py[0].at("schema_id")), *value_id);
  expect_same(py[0].at("datum").as_object(), e);

  // Ids are resolved once per destination: a second record asks the registry nothing.
  const auto asked = registry.requests().size();
  (void)encoded(*encoder, e, "shop.public.orders");
  EXPECT_EQ(registry.requests().size(), asked);

  // Bare bytes given to a framing decoder are refused, never misread.
  auto bare = decoder->decode(encoded(*make_avro_encoder(), e));
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().kind(), ErrorKind::kInvalidData);
}

// The same through the "apicurio" client (Apicurio Registry 3's native API, against its DOUBLE
// tests/integration/apicurio_registry_double.py): the framing carries the global ids.
TEST(AvroCodec, ApicurioGlobalIdsFrameTheRecordsAndOurDecoderReadsThemBack) {
  RegistryDouble registry({}, RegistryDouble::kApicurio);
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options;
  options.registry_config.type = SchemaRegistryType::kApicurio;
  options.registry_config.url = registry.url();
  options.registry_config.retry = RegistryRetryPolicy::none();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client) << client.error().report();
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  auto encoder = make_avro_encoder(options);
  const Event e = test::full_event();
  const std::string value = encoded(*encoder, e, "shop.public.orders");
  ByteBuffer key;
  auto keyed = encoder->encode_key_to("shop.public.orders", e, key);
  ASSERT_TRUE(keyed) << keyed.error().report();
  ASSERT_TRUE(*keyed);
  auto value_id = options.registry->lookup_schema("shop.public.orders-value", SchemaType::kAvro,
                                                  std::string(avro_event_schema()));
  auto key_id = options.registry->lookup_schema("shop.public.orders-key", SchemaType::kAvro,
                                                std::string(avro_key_schema()));
  ASSERT_TRUE(value_id && key_id);
  EXPECT_EQ(*value_id, 101) << "the double's first global id (its content ids start at 1)";
  EXPECT_EQ(*key_id, 102);
  EXPECT_EQ(split_confluent_frame(value)->first, *value_id);
  EXPECT_EQ(split_confluent_frame(key.view())->first, *key_id);
  auto back = make_avro_decoder(options)->decode(value);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  auto back_key = decode_avro_key(key.view(), options);
  ASSERT_TRUE(back_key) << back_key.error().report();
  EXPECT_EQ(*back_key, R"({"id":"42"})");
}

TEST(AvroCodec, WithoutAutoRegisterAMissingSchemaIsAnErrorNamingTheSubjectNeverNoKey) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  auto encoder = make_avro_encoder(registry_options(registry, false));
  ByteBuffer out;
  auto value = encoder->encode_to("shop.public.orders", test::full_event(), out);
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(value.error().report(), "shop.public.orders-value");
  auto key = encoder->encode_key_to("shop.public.orders", test::full_event(), out);
  ASSERT_FALSE(key) << "a key that cannot be encoded is an error, not \"no key\"";
  EXPECT_CONTAINS(key.error().report(), "shop.public.orders-key");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false never writes";
}

TEST(AvroCodec, ADecoderRefusesAnIdWhoseSchemaIsNotTheEnvelope) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options = registry_options(registry, true);
  auto other = options.registry->register_schema(
      "other-value", SchemaType::kAvro,
      R"({"type":"record","name":"Other","fields":[{"name":"x","type":"long"}]})");
  ASSERT_TRUE(other) << other.error().report();
  std::string record;
  append_confluent_header(*other, record);
  record += std::string(encoded(*make_avro_encoder(), test::full_event()));
  auto r = make_avro_decoder(options)->decode(record);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kTerminal);
  EXPECT_CONTAINS(r.error().report(), "is not io.cppcdc.Event");
}

TEST(AvroCodec, ASinkWithoutTopicsNeedsTheRecordNameStrategy) {
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options = registry_options(registry, true);
  ByteBuffer out;
  auto r = make_avro_encoder(options)->encode(test::full_event(), out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kConfiguration);
  EXPECT_CONTAINS(r.error().report(), "record_name");
  options.registry_config.subject_name_strategy = SubjectNameStrategy::kRecordName;
  auto encoder = make_avro_encoder(options);
  ASSERT_TRUE(encoder->encode(test::full_event(), out));
  auto id = options.registry->lookup_schema("io.cppcdc.Event", SchemaType::kAvro,
                                            std::string(avro_event_schema()));
  ASSERT_TRUE(id) << id.error().report();
  EXPECT_EQ(split_confluent_frame(out.view())->first, *id);
}

// ---- debezium_json ---------------------------------------------------------------------------

/// Options with schemas_enable, connector and database set, the rest at their defaults.
cppcdc::DebeziumJsonOptions dbz_options(bool schemas, std::string connector = "",
                                        std::string database = "") {
  cppcdc::DebeziumJsonOptions o;
  o.schemas_enable = schemas;
  o.connector = std::move(connector);
  o.database = std::move(database);
  return o;
}

json::object parsed(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  return v.is_object() ? v.as_object() : json::object{};
}

TEST(DebeziumJson, ThePostgresqlValueShape) {
  auto encoder = make_debezium_json_encoder();
  const Event e = test::full_event();
  const std::string record = encoded(*encoder, e);
  const json::object v = parsed(record);
  EXPECT_EQ(v.size(), 8u) << record;
  EXPECT_EQ(v.at("op").as_string(), "u");
  EXPECT_EQ(v.at("ts_ms").as_int64(), e.ts);
  EXPECT_EQ(v.at("ts_us").as_int64(), e.ts * 1000);
  EXPECT_EQ(v.at("ts_ns").as_int64(), e.ts * 1000000);
  EXPECT_EQ(v.at("before").at("status").as_string(), "pending");
  EXPECT_TRUE(v.at("before").at("doc").is_null());
  EXPECT_EQ(v.at("after").at("status").as_string(), "shipped \"fast\"\n");
  EXPECT_EQ(v.at("after").at("doc").as_string(),
            R"({"a":[1,2.50,12345678901234567890123],"b":null})")
      << "a json column is a string holding its JSON (Debezium's io.debezium.data.Json)";
  const auto& source = v.at("source").as_object();
  EXPECT_EQ(source.at("connector").as_string(), "postgresql");
  EXPECT_EQ(source.at("name").as_string(), "postgres");
  EXPECT_EQ(source.at("ts_ms").as_int64(), e.source.timestamp);
  EXPECT_EQ(source.at("snapshot").as_string(), "false");
  EXPECT_EQ(source.at("schema").as_string(), "public");
  EXPECT_EQ(source.at("table").as_string(), "orders");
  EXPECT_EQ(source.at("txId").as_int64(), 3084);
  EXPECT_EQ(source.at("lsn").as_int64(), 0x1B2C3D4E);
  EXPECT_EQ(source.at("ts_us").as_int64(), e.source.timestamp * 1000);
  for (const char* field : {"version", "db", "sequence", "xmin", "origin", "origin_lsn"}) {
    EXPECT_TRUE(source.contains(field)) << field;
  }
  const auto& tx = v.at("transaction").as_object();
  EXPECT_EQ(tx.at("id").as_string(), "3084");
  EXPECT_EQ(tx.at("total_order").as_int64(), 2);
  EXPECT_EQ(tx.at("data_collection_order").as_int64(), 1);
  // The next event of the same transaction and table counts on.
  Event next = e;
  next.transaction->event_index = 2;
  EXPECT_EQ(
      parsed(encoded(*encoder, next)).at("transaction").at("data_collection_order").as_int64(), 2);

  ByteBuffer key;
  ASSERT_TRUE(*encoder->encode_key(e, key));
  EXPECT_EQ(key.view(), R"({"id":"42"})");
}

// An update that moved its row to another key is two records for Debezium (a delete under
// the old key, a create under the new one; the Kafka sink encodes both from events carrying the
// update's event index): total_order counts records, so the pair differ and every later record
// of the transaction comes one further, as data_collection_order already did. A trial saw the
// pair share one total_order. A batch delivered again counts from its start again.
TEST(DebeziumJson, TotalOrderCountsBothRecordsOfAKeyChange) {
  auto encoder = make_debezium_json_encoder();
  Event e = test::full_event();
  e.transaction->tx_id = 77;
  const auto orders = [&](Operation op, std::uint64_t index) {
    Event x = e;
    x.op = op;
    x.transaction->event_index = index;
    const auto tx = parsed(encoded(*encoder, x)).at("transaction").as_object();
    return std::pair{tx.at("total_order").as_int64(), tx.at("data_collection_order").as_int64()};
  };
  using P = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(orders(Operation::kInsert, 0), (P{1, 1}));
  EXPECT_EQ(orders(Operation::kDelete, 1), (P{2, 2})) << "the delete under the old key";
  EXPECT_EQ(orders(Operation::kInsert, 1), (P{3, 3})) << "the create under the new key";
  EXPECT_EQ(orders(Operation::kUpdate, 2), (P{4, 4}));
  EXPECT_EQ(orders(Operation::kInsert, 0), (P{1, 1})) << "the batch delivered again";
  EXPECT_EQ(orders(Operation::kUpdate, 2), (P{3, 2})) << "a batch starting later, no split seen";
  EXPECT_EQ(orders(Operation::kUpdate, 2), (P{3, 1})) << "a one-event batch delivered again";
  e.transaction->tx_id = 78;
  EXPECT_EQ(orders(Operation::kInsert, 0), (P{1, 1})) << "the next transaction";
}

TEST(DebeziumJson, TheMysqlSourceBlockAndOpLetters) {
  auto encoder = make_debezium_json_encoder();
  Event e = test::full_event();
  e.source = {"mariadb", "mysql-bin.000012:4567", 1700000000000};
  e.schema = "shop";
  e.transaction.reset();
  const std::pair<Operation, const char*> letters[] = {
      {Operation::kInsert, "c"}, {Operation::kUpdate, "u"},   {Operation::kDelete, "d"},
      {Operation::kRead, "r"},   {Operation::kTruncate, "t"}, {Operation::kMessage, "m"}};
  for (const auto& [op, letter] : letters) {
    e.op = op;
    const json::object v = parsed(encoded(*encoder, e));
    EXPECT_EQ(v.at("op").as_string(), letter);
    const auto& source = v.at("source").as_object();
    EXPECT_EQ(source.at("connector").as_string(), "mysql");
    EXPECT_EQ(source.at("db").as_string(), "shop");
    EXPECT_EQ(source.at("file").as_string(), "mysql-bin.000012");
    EXPECT_EQ(source.at("pos").as_int64(), 4567);
    EXPECT_EQ(source.at("snapshot").as_string(), op == Operation::kRead ? "true" : "false");
    for (const char* field : {"server_id", "gtid", "row", "thread", "query"}) {
      EXPECT_TRUE(source.contains(field)) << field;
    }
    EXPECT_TRUE(v.at("transaction").is_null());
  }
  auto mariadb = make_debezium_json_encoder(dbz_options(false, "mariadb", ""));
  EXPECT_EQ(parsed(encoded(*mariadb, e)).at("source").at("connector").as_string(), "mariadb");

  e.op = Operation::kSchemaChange;
  ByteBuffer out;
  auto refused = encoder->encode(e, out);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidData);
  EXPECT_CONTAINS(refused.error().report(), "filter");
}

// source.gtid is the transaction's own GTID (Event::gtid) beside the event's file and pos;
// the server id comes from a MariaDB GTID; the decoder gives the GTID back.
TEST(DebeziumJson, TheMysqlSourceBlockCarriesTheTransactionsGtid) {
  auto encoder = make_debezium_json_encoder(dbz_options(false, "mariadb", ""));
  auto decoder = make_debezium_json_decoder();
  Event e = test::full_event();
  e.source = {"mariadb", "mariadb-bin.000002:812", 1700000000000};
  e.schema = "shop";
  struct Case {
    std::string gtid;
    std::int64_t server_id;
  };
  for (const Case& c : {Case{"0-7-42", 7}, Case{"3-4294967295-18446744073709551615", 4294967295},
                        Case{"3e11fa47-71ca-11e1-9e33-c80aa9429562:23", 0}, Case{"", 0}}) {
    SCOPED_TRACE(c.gtid);
    e.gtid = c.gtid;
    const std::string record = encoded(*encoder, e);
    const json::object v = parsed(record);
    const auto& source = v.at("source").as_object();
    if (c.gtid.empty()) {
      EXPECT_TRUE(source.at("gtid").is_null()) << record;
    } else {
      EXPECT_EQ(source.at("gtid").as_string(), c.gtid) << record;
    }
    EXPECT_EQ(source.at("server_id").as_int64(), c.server_id) << record;
    EXPECT_EQ(source.at("file").as_string(), "mariadb-bin.000002");
    EXPECT_EQ(source.at("pos").as_int64(), 812);
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report();
    EXPECT_EQ(back->gtid, c.gtid);
    EXPECT_EQ(back->source.offset, e.source.offset);
  }
  // An offset that is a GTID position (no file position) is still written as source.gtid
  // when the event has no GTID of its own.
  e.gtid.clear();
  e.source.offset = "0-1-100,1-2-7";
  const json::object v = parsed(encoded(*encoder, e));
  EXPECT_EQ(v.at("source").at("gtid").as_string(), "0-1-100,1-2-7");
  EXPECT_EQ(v.at("source").at("file").as_string(), "");
  EXPECT_EQ(v.at("source").at("pos").as_int64(), 0);
}

// transaction.id of a MySQL/MariaDB event is Debezium's: the transaction's GTID (MariaDB
// "domain-server-sequence", MySQL "uuid:n"), or without one "file=NAME,pos=N" naming its
// BEGIN's binlog coordinate, which the binlog source packs in tx_id; PostgreSQL's stays the
// xid. The decoder gives tx_id back from each form.
TEST(DebeziumJson, TheMysqlTransactionIdIsTheGtidOrTheBeginsBinlogCoordinate) {
  auto decoder = make_debezium_json_decoder();
  Event e = test::full_event();
  e.source = {"mariadb", "mariadb-bin.000002:812", 1700000000000};
  e.schema = "shop";
  struct Case {
    std::string connector;
    std::string gtid;
    std::uint64_t tx_id;
    std::string id;
  };
  const Case cases[] = {
      {"mariadb", "0-7-42", 42, "0-7-42"},
      {"mariadb", "3-4294967295-18446744073709551615", 18446744073709551615ull,
       "3-4294967295-18446744073709551615"},
      {"mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", 23,
       "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"},
      // No GTID: file sequence 2, BEGIN at 4 of that file.
      {"mysql", "", (2ull << 32) | 4, "file=mariadb-bin.000002,pos=4"},
      {"mysql", "", (2ull << 32) | 0xffffffffu, "file=mariadb-bin.000002,pos=4294967295"},
      // A tx_id that is no coordinate of the event's file (an event made by other code).
      {"mysql", "", 3084, "3084"},
      {"mysql", "", (7ull << 32) | 4, std::to_string((7ull << 32) | 4)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.connector + " " + c.gtid + " " + std::to_string(c.tx_id));
    auto encoder = make_debezium_json_encoder(dbz_options(false, c.connector, ""));
    e.gtid = c.gtid;
    e.transaction = TransactionMetadata{c.tx_id, 3, 1};
    const std::string record = encoded(*encoder, e);
    const json::object v = parsed(record);
    EXPECT_EQ(v.at("transaction").at("id"), json::value(c.id)) << record;
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report();
    ASSERT_TRUE(back->transaction.has_value());
    EXPECT_EQ(back->transaction->tx_id, c.tx_id);
    EXPECT_EQ(back->transaction->event_index, 1u);
  }
  // PostgreSQL: the xid alone, as Debezium's PostgreSQL connector writes it.
  Event pg = test::full_event();
  pg.gtid.clear();
  auto encoder = make_debezium_json_encoder(dbz_options(false, "postgresql", "app"));
  EXPECT_EQ(parsed(encoded(*encoder, pg)).at("transaction").at("id"), json::value("3084"));
  // Debezium's records: a MySQL id, and a PostgreSQL "txId:lsn", read back; a MySQL id that
  // is none of the forms is an error naming it.
  const std::string mysql_record =
      R"({"before":null,"after":{"id":1},"source":{"connector":"mysql","name":"s","table":"t",)"
      R"("file":"mysql-bin.000003","pos":900,"gtid":null},"op":"c","ts_ms":1,)"
      R"("transaction":{"id":"file=mysql-bin.000003,pos=154","total_order":1,)"
      R"("data_collection_order":1}})";
  auto mysql = decoder->decode(mysql_record);
  ASSERT_TRUE(mysql) << mysql.error().report();
  EXPECT_EQ(mysql->transaction->tx_id, (3ull << 32) | 154);
  std::string pg_record = mysql_record;
  pg_record.replace(pg_record.find("\"mysql\""), 7, "\"postgresql\"");
  pg_record.replace(pg_record.find("file=mysql-bin.000003,pos=154"), 29, "571:53195829");
  auto from_pg = decoder->decode(pg_record);
  ASSERT_TRUE(from_pg) << from_pg.error().report() << "\n" << pg_record;
  EXPECT_EQ(from_pg->transaction->tx_id, 571u);
  std::string bad_record = mysql_record;
  bad_record.replace(bad_record.find("file=mysql-bin.000003,pos=154"), 29, "file=x,pos=1");
  auto refused = decoder->decode(bad_record);
  ASSERT_FALSE(refused);
  EXPECT_CONTAINS(refused.error().report(), "file=x,pos=1");
}

// source.snapshot follows the row's place the source marked (Event::snapshot_edge), not its
// chunk: a row of a table's last chunk is "true" unless it is that table's or the snapshot's
// last row.
TEST(DebeziumJson, SnapshotMarksComeFromTheRowsEdgeNotFromItsChunk) {
  auto encoder = make_debezium_json_encoder(dbz_options(false, "mariadb", ""));
  auto decoder = make_debezium_json_decoder();
  Event e = test::full_event();
  e.source = {"mariadb", "mariadb-bin.000002:812", 1700000000000};
  e.op = Operation::kRead;
  e.before = BeforeImage();
  e.transaction.reset();
  e.snapshot = SnapshotMetadata{"snap", 4, true};
  const std::pair<SnapshotEdge, const char*> marks[] = {
      {SnapshotEdge::kNone, "true"},
      {SnapshotEdge::kFirst, "first"},
      {SnapshotEdge::kFirstInTable, "first_in_data_collection"},
      {SnapshotEdge::kLastInTable, "last_in_data_collection"},
      {SnapshotEdge::kLast, "last"}};
  for (const auto& [edge, text] : marks) {
    SCOPED_TRACE(text);
    e.snapshot_edge = edge;
    const std::string record = encoded(*encoder, e);
    EXPECT_EQ(parsed(record).at("source").at("snapshot").as_string(), text);
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report();
    EXPECT_EQ(back->snapshot_edge, edge);
  }
  // A read without snapshot metadata (an incremental snapshot's row) is "true"; a change "false".
  e.snapshot.reset();
  e.snapshot_edge = SnapshotEdge::kNone;
  EXPECT_EQ(parsed(encoded(*encoder, e)).at("source").at("snapshot").as_string(), "true");
  e.op = Operation::kInsert;
  EXPECT_EQ(parsed(encoded(*encoder, e)).at("source").at("snapshot").as_string(), "false");
}

TEST(DebeziumJson, SchemasEnableWrapsSchemaAndPayload) {
  auto encoder = make_debezium_json_encoder(dbz_options(true, "", "app"));
  const Event e = test::full_event();
  const json::object v = parsed(encoded(*encoder, e));
  ASSERT_TRUE(v.contains("schema"));
  ASSERT_TRUE(v.contains("payload"));
  EXPECT_EQ(v.size(), 2u);
  const auto& schema = v.at("schema").as_object();
  EXPECT_EQ(schema.at("name").as_string(), "postgres.public.orders.Envelope");
  std::vector<std::string> fields;
  for (const auto& f : schema.at("fields").as_array())
    fields.emplace_back(f.at("field").as_string());
  EXPECT_EQ(fields, (std::vector<std::string>{"before", "after", "source", "transaction", "op",
                                              "ts_ms", "ts_us", "ts_ns"}));
  const auto& after = schema.at("fields").as_array()[1].as_object();
  EXPECT_EQ(after.at("name").as_string(), "postgres.public.orders.Value");
  bool saw_json = false;
  for (const auto& c : after.at("fields").as_array()) {
    if (c.at("field").as_string() == "doc") {
      EXPECT_EQ(c.at("name").as_string(), "io.debezium.data.Json");
      saw_json = true;
    }
    if (c.at("field").as_string() == "id") {
      EXPECT_FALSE(c.at("optional").as_bool());
    }
  }
  EXPECT_TRUE(saw_json);
  EXPECT_EQ(v.at("payload").at("source").at("db").as_string(), "app");
  ByteBuffer key;
  ASSERT_TRUE(*encoder->encode_key(e, key));
  const json::object k = parsed(std::string(key.view()));
  EXPECT_EQ(k.at("schema").at("name").as_string(), "postgres.public.orders.Key");
  EXPECT_EQ(k.at("payload").at("id").as_string(), "42");
  // The schema is kept per table shape: a column added to the same table shows in the next
  // record's schema, and the first table's schema is still right afterwards.
  Event wider = e;
  wider.after->push_back({"added", "x", false});
  const auto column_names = [](const json::object& record) {
    std::vector<std::string> out;
    for (const auto& c : record.at("schema").at("fields").as_array()[1].at("fields").as_array()) {
      out.emplace_back(c.at("field").as_string());
    }
    return out;
  };
  EXPECT_EQ(column_names(parsed(encoded(*encoder, wider))),
            (std::vector<std::string>{"id", "status", "doc", "note", "city", "added"}));
  EXPECT_EQ(column_names(parsed(encoded(*encoder, e))),
            (std::vector<std::string>{"id", "status", "doc", "note", "city"}));
  // With the schema, json columns come back as json.
  auto back = make_debezium_json_decoder()->decode(encoded(*encoder, e));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->after, e.after);
}

// The fields a Debezium value carries, for comparing what its decoder gives back.
Event debezium_projection(const Event& e, bool schemas) {
  Event p;
  p.op = e.op;
  // The schema marks a column json by its first appearance (after, then before); without the
  // schema nothing is json. A NULL is never json.
  std::map<std::string, bool> json_column;
  for (const Row* row : {e.after ? &*e.after : nullptr, e.before.row()}) {
    if (row == nullptr) continue;
    for (const auto& c : *row) json_column.emplace(c.name, c.is_json);
  }
  auto strip = [&](Row row) {
    for (auto& c : row) c.is_json = schemas && c.text && json_column[c.name];
    return row;
  };
  if (const Row* b = e.before.row()) p.before = BeforeFull{strip(*b), {}};
  if (e.after) p.after = strip(*e.after);
  p.source = e.source;
  p.ts = e.ts;
  p.schema = e.schema && !e.schema->empty() ? e.schema : std::nullopt;
  p.table = e.table;
  if (e.transaction)
    p.transaction = TransactionMetadata{e.transaction->tx_id, 0, e.transaction->event_index};
  return p;
}

TEST(DebeziumJson, RoundTripsTheFieldsDebeziumCarries) {
  for (const bool schemas : {false, true}) {
    auto encoder = make_debezium_json_encoder(dbz_options(schemas, "", ""));
    auto decoder = make_debezium_json_decoder();
    test::EventGenerator gen(31);
    int checked = 0;
    for (int i = 0; i < 1500; ++i) {
      Event e = gen.next();
      if (e.op == Operation::kSchemaChange) continue;
      // Offsets as the sources write them: a PostgreSQL LSN, or a binlog coordinate.
      e.source.offset = i % 2 ? "16/B374D848" : "mysql-bin.000003:" + std::to_string(i);
      if (e.transaction) e.transaction->tx_id %= (1ull << 62);
      if (i % 2 == 0 && i % 3 == 0) e.gtid = "0-1-" + std::to_string(i);
      // A binlog event's tx_id as its source sets it: its GTID's transaction number, or
      // (often) the coordinate of its BEGIN in the event's file (sequence 3).
      if (e.transaction && !e.gtid.empty()) e.transaction->tx_id = i;
      if (e.transaction && i % 2 == 0 && e.gtid.empty() && i % 5 != 0)
        e.transaction->tx_id = (3ull << 32) | (e.transaction->tx_id & 0xffffffffu);
      if (e.op == Operation::kRead) e.snapshot_edge = static_cast<SnapshotEdge>(i % 5);
      const std::string record = encoded(*encoder, e);
      auto back = decoder->decode(record);
      ASSERT_TRUE(back) << back.error().report() << "\n" << record;
      Event expected = debezium_projection(e, schemas);
      ASSERT_EQ(back->to_json(), expected.to_json()) << record;
      EXPECT_EQ(back->gtid, e.gtid) << record;
      EXPECT_EQ(back->snapshot_edge, e.snapshot_edge) << record;
      ++checked;
    }
    EXPECT_GT(checked, 1000);
  }
}

// ---- cloudevents ---------------------------------------------------------------------------

// Structured mode: the attributes CloudEvents 1.0 requires, with the types and forms its JSON
// format gives them, the envelope as data, an id that stays the same for the same change, and
// the reader giving back the event.
TEST(CloudEvents, EveryEventIsAStructuredCloudEventWithTheEnvelopeAsDataAndReadsBack) {
  auto encoder = make_cloudevents_encoder();
  auto decoder = make_cloudevents_decoder();
  EXPECT_EQ(encoder->content_type(), "application/cloudevents+json");
  const std::regex time_format(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  const std::regex id_format("[0-9a-f]{64}");
  for (const Event& e : generated(500, 31)) {
    const std::string record = encoded(*encoder, e, "some.topic");
    ASSERT_EQ(record.find('\n'), std::string::npos) << record;
    const json::value v = json::parse(record);
    const json::object& o = v.as_object();
    EXPECT_EQ(o.at("specversion"), "1.0");
    EXPECT_TRUE(std::regex_match(std::string(o.at("id").as_string()), id_format)) << record;
    EXPECT_EQ(o.at("source"), json::value("/cppcdc/" + e.source.source_name));
    EXPECT_EQ(o.at("type"), json::value("io.cppcdc." + std::string(to_string(e.op))));
    EXPECT_EQ(o.at("subject"), json::value(e.schema ? *e.schema + "." + e.table : e.table));
    // time (optional in CloudEvents) is left out only for a clock no RFC 3339 year can hold.
    const std::int64_t at = e.source.timestamp != 0 ? e.source.timestamp : e.ts;
    const bool writable = at >= -62'135'596'800'000 && at <= 253'402'300'799'999;
    ASSERT_EQ(o.contains("time"), writable) << record;
    if (writable) {
      EXPECT_TRUE(std::regex_match(std::string(o.at("time").as_string()), time_format)) << record;
    }
    EXPECT_EQ(o.at("datacontenttype"), "application/json");
    EXPECT_EQ(o.at("data"), json::parse(e.to_json())) << record;
    // Delivered again, the same change keeps its id (a consumer drops repeats by it).
    EXPECT_EQ(json::parse(encoded(*encoder, e)).as_object().at("id"), o.at("id"));
    auto back = decoder->decode(record);
    ASSERT_TRUE(back) << back.error().report() << "\n" << record;
    EXPECT_EQ(*back, e) << record;
  }
}

TEST(CloudEvents, TimeIsTheCommitTimeInUtcAndOptionsSetSourceAndType) {
  Event e = test::full_event();
  e.source.timestamp = 1'796'029'032'848;  // date -u -d @1796029032.848: 2026-11-30T08:57:12.848Z
  CloudEventsOptions options;
  options.source = "//db.example.com/app";
  options.type_prefix = "com.example.cdc";
  auto encoder = make_cloudevents_encoder(options);
  const json::object o = json::parse(encoded(*encoder, e)).as_object();
  EXPECT_EQ(o.at("time"), "2026-11-30T08:57:12.848Z");
  EXPECT_EQ(o.at("source"), "//db.example.com/app");
  EXPECT_EQ(o.at("type"), json::value("com.example.cdc." + std::string(to_string(e.op))));
  auto back = make_cloudevents_decoder(options)->decode(encoded(*encoder, e));
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  CloudEventsOptions bad;
  bad.type_prefix = "has space";
  const auto refused = validate(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), ErrorKind::kConfiguration);
  EXPECT_EQ(refused.error().setting(), "codec_options.type_prefix");
}

TEST(CloudEvents, TheReaderRefusesWhatIsNotACppcdcCloudEventNamingWhy) {
  auto encoder = make_cloudevents_encoder();
  auto decoder = make_cloudevents_decoder();
  const Event e = test::full_event();
  const json::object good = json::parse(encoded(*encoder, e)).as_object();
  const auto with = [&](const char* name, json::value value) {
    json::object o = good;
    if (value.is_null()) {
      o.erase(name);
    } else {
      o[name] = std::move(value);
    }
    return json::serialize(o);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", ""},
      {"[1,2]", "not a JSON object"},
      {with("specversion", "0.3"), "specversion"},
      {with("id", nullptr), "the attribute id"},
      {with("source", ""), "the attribute source"},
      {with("type", nullptr), "the attribute type"},
      {with("datacontenttype", "application/avro"), "datacontenttype is not JSON"},
      {with("data", nullptr), "data is missing"},
      {with("data", "text"), "data is missing or not an object"},
      {with("type", "io.cppcdc.truncate"), "does not match the envelope's op"},
      {with("subject", "public.other"), "does not match the envelope's table"},
  };
  for (const auto& [record, why] : cases) {
    auto back = decoder->decode(record);
    ASSERT_FALSE(back) << record;
    EXPECT_EQ(back.error().kind(), ErrorKind::kInvalidData) << back.error().report();
    if (record != "not json") {
      EXPECT_CONTAINS(back.error().report(), why);
    }
  }
}

// Binary mode: the record is the envelope alone and the attributes are headers, named as each
// transport's CloudEvents binding says (ce_ on Kafka with a content-type header, ce- over HTTP
// with values percent-encoded), carrying what structured mode puts in the document.
TEST(CloudEvents, BinaryModePutsTheAttributesIntoHeadersNamedForTheTransport) {
  CloudEventsOptions options;
  options.mode = CloudEventsMode::kBinary;
  auto encoder = make_cloudevents_encoder(options);
  auto structured = make_cloudevents_encoder();
  auto decoder = make_cloudevents_decoder(options);
  EXPECT_TRUE(encoder->record_headers());
  EXPECT_FALSE(structured->record_headers());
  EXPECT_EQ(encoder->content_type(), "application/json");
  EXPECT_EQ(structured->array_content_type(), "application/cloudevents-batch+json");
  for (const Event& e : generated(300, 37)) {
    const std::string record = encoded(*encoder, e, "some.topic");
    EXPECT_EQ(record, e.to_json());
    const json::object doc = json::parse(encoded(*structured, e)).as_object();
    for (const HeaderBinding binding : {HeaderBinding::kKafka, HeaderBinding::kHttp}) {
      const bool http = binding == HeaderBinding::kHttp;
      std::vector<RecordHeader> headers;
      ASSERT_TRUE(encoder->append_headers(binding, e, headers));
      std::map<std::string, std::string> by_name;
      for (const auto& h : headers) by_name[h.name] = h.value;
      const std::string p = http ? "ce-" : "ce_";
      for (const char* attribute : {"specversion", "id", "source", "type", "subject", "time"}) {
        if (!doc.contains(attribute)) {
          EXPECT_EQ(by_name.count(p + attribute), 0U) << attribute;
          continue;
        }
        const std::string value(doc.at(attribute).as_string());
        ASSERT_EQ(by_name.count(p + attribute), 1U) << attribute;
        if (!http) {
          EXPECT_EQ(by_name[p + attribute], value) << attribute;
        } else {
          // Over HTTP nothing unsafe is left: no space, quote or byte outside printable ASCII.
          for (const char c : by_name[p + attribute]) {
            const auto b = static_cast<unsigned char>(c);
            EXPECT_TRUE(b > 0x20 && b < 0x7F && b != '"') << by_name[p + attribute];
          }
        }
      }
      EXPECT_EQ(by_name.count("content-type"), http ? 0U : 1U);
      auto back = decoder->decode_with_headers(record, binding, headers);
      ASSERT_TRUE(back) << back.error().report();
      EXPECT_EQ(*back, e);
    }
  }
}

TEST(CloudEvents, BinaryModeHttpValuesArePercentEncodedAndTheReaderChecksTheHeaders) {
  CloudEventsOptions options;
  options.mode = CloudEventsMode::kBinary;
  auto encoder = make_cloudevents_encoder(options);
  auto decoder = make_cloudevents_decoder(options);
  Event e = test::full_event();
  e.schema = "sales data";
  e.table = "caf\xC3\xA9 \"100%\"";
  const std::string record = encoded(*encoder, e);
  std::vector<RecordHeader> headers;
  ASSERT_TRUE(encoder->append_headers(HeaderBinding::kHttp, e, headers));
  std::string subject;
  for (const auto& h : headers) {
    if (h.name == "ce-subject") subject = h.value;
  }
  EXPECT_EQ(subject, "sales%20data.caf%C3%A9%20%22100%25%22");
  // HTTP header names are case-insensitive.
  for (auto& h : headers) {
    if (h.name == "ce-subject") h.name = "Ce-Subject";
  }
  auto back = decoder->decode_with_headers(record, HeaderBinding::kHttp, headers);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, e);
  // Headers that are missing or contradict the record are refused, naming them.
  std::vector<RecordHeader> kafka;
  ASSERT_TRUE(encoder->append_headers(HeaderBinding::kKafka, e, kafka));
  const auto without = [&](const std::string& name) {
    std::vector<RecordHeader> out;
    for (const auto& h : kafka) {
      if (h.name != name) out.push_back(h);
    }
    return out;
  };
  const auto replaced = [&](const std::string& name, const std::string& value) {
    auto out = kafka;
    for (auto& h : out) {
      if (h.name == name) h.value = value;
    }
    return out;
  };
  const std::vector<std::pair<std::vector<RecordHeader>, std::string>> cases = {
      {without("ce_specversion"), "ce_specversion"},
      {without("ce_id"), "ce_id"},
      {without("ce_source"), "ce_source"},
      {replaced("ce_type", "io.cppcdc.truncate"), "does not match the envelope's op"},
      {replaced("ce_subject", "public.other"), "does not match the envelope's table"},
      {replaced("content-type", "application/avro"), "content-type is not JSON"},
  };
  for (const auto& [hs, why] : cases) {
    auto refused = decoder->decode_with_headers(record, HeaderBinding::kKafka, hs);
    ASSERT_FALSE(refused) << why;
    EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidData);
    EXPECT_CONTAINS(refused.error().report(), why);
  }
}

}  // namespace
}  // namespace cppcdc
