// The Kafka sink with codec = "protobuf" against the real broker, read back with no cppcdc code
// (kafka_tool.py read-protobuf, through tests/protobuf_reader.py) and compared with the events
// field by field:
//  - bare: Debian's python3-protobuf parses each record with classes Debian's protoc generates
//    from src/codec/protobuf/*.proto;
//  - Confluent framing: the way a consumer without generated classes reads it. The frame is
//    taken apart, python3-confluent-kafka's schema registry client fetches the schema by the
//    frame's id from the registry DOUBLE (tests/integration/schema_registry_double.py, which
//    hands back its own form of the .proto text), protoc compiles that text, and the message the
//    frame's index path names in it is what python3-protobuf parses. The test then requires
//    that path to name cppcdc.v1.Event (cppcdc.v1.EventKey for keys) and the ids to be those of
//    the topic's subjects. Keys also go through python3-confluent-kafka's own
//    ProtobufDeserializer. Values cannot: Debian's version, 1.7.0, reads the message-index array
//    as plain varints, the form Confluent later replaced by zig-zag varints, so it misreads
//    Event's [4] (02 08); for the key's [0] (a single 0 byte) both forms agree.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "cppcdc/kafka.hpp"
#include "cppcdc/protobuf.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "schema_registry_double.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

namespace json = boost::json;

// Events of every kind the codec must carry: json columns, SQL NULL, escapes and non-ASCII
// text, both before-image shapes, an unavailable TOAST column, a transaction id above 2^63,
// snapshot metadata, and keyless events (truncate, a message).
std::vector<Event> workload(const std::string& source_name) {
  std::vector<Event> out;
  const auto source = [&](int n) {
    return SourceMetadata{source_name, "0/" + std::to_string(0x6000 + n), 1700000000000 + n};
  };
  for (int id = 1; id <= 2; ++id) {
    EventBuilder b("orders", Operation::kInsert);
    b.schema("public")
        .source(source(id))
        .ts(1700000000500 + id)
        .primary_key({"id"})
        .transaction(TransactionMetadata{static_cast<std::uint64_t>(900 + id), 1, 0})
        .after(Row{{"id", std::to_string(id), false},
                   {"note", "n\"ote ✓\n" + std::to_string(id), false},
                   {"doc", R"({"n":)" + std::to_string(id) + R"(,"tags":["a",null]})", true},
                   {"gone", std::nullopt, false}});
    out.push_back(b.build());
  }
  EventBuilder u("orders", Operation::kUpdate);
  u.schema("public")
      .source(source(3))
      .ts(1700000000600)
      .primary_key({"id"})
      .transaction(TransactionMetadata{18446744073709551615ULL, 2, 1})
      .before(BeforeFull{Row{{"id", "1", false}, {"note", "old", false}}, {"big"}})
      .after(Row{{"id", "1", false}, {"note", "new", false}})
      .unavailable_columns({"big"});
  out.push_back(u.build());
  EventBuilder d("orders", Operation::kDelete);
  d.schema("public")
      .source(source(4))
      .ts(1700000000700)
      .primary_key({"id"})
      .before(BeforeKeyOnly{Row{{"id", "2", false}}});
  out.push_back(d.build());
  EventBuilder r("orders", Operation::kRead);
  r.schema("public")
      .source(source(5))
      .ts(1700000000800)
      .primary_key({"id"})
      .snapshot(SnapshotMetadata{"snap-1", 3, true})
      .after(Row{{"id", "9", false}, {"note", std::nullopt, false}});
  out.push_back(r.build());
  EventBuilder t("orders", Operation::kTruncate);
  t.schema("public").source(source(6)).ts(1700000000900).primary_key({"id"});
  out.push_back(t.build());
  EventBuilder m("audit__messages", Operation::kMessage);
  m.source(source(7))
      .ts(1700000001000)
      .after(Row{{"prefix", "audit", false}, {"content", "hello", false}});
  out.push_back(m.build());
  return out;
}

struct ProtobufRecord {
  json::object value;
  json::value key;  // null: the record has no key
  bool same_bytes = false;
  // Confluent framing only (null when bare or keyless):
  json::value value_schema_id, key_schema_id;
  json::value value_indexes, key_indexes;
  json::value value_message, key_message;        // the message the index path names
  json::value value_subject_id, key_subject_id;  // newest ids of TOPIC-value, TOPIC-key
  json::value key_by_deserializer;               // the key as ProtobufDeserializer read it
};

json::value member(const json::object& o, const char* name) {
  const auto* v = o.if_contains(name);
  return v != nullptr ? *v : json::value();
}

// registry_url empty: bare messages, read with the classes of the repository's .proto files;
// otherwise Confluent framing, read through that registry.
std::vector<ProtobufRecord> read_protobuf(const std::string& bootstrap, const std::string& topic,
                                          const std::string& registry_url, bool* failed = nullptr) {
  const std::string how = registry_url.empty()
                              ? std::string("bare ") + CPPCDC_SOURCE_DIR + "/src/codec/protobuf"
                              : "confluent " + registry_url;
  const auto o = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-protobuf " +
                                       topic + " " + how);
  if (failed != nullptr) {
    *failed = o.code != 0;
  } else {
    EXPECT_EQ(o.code, 0) << "python3-protobuf could not read topic " << topic;
  }
  std::vector<ProtobufRecord> out;
  std::size_t start = 0;
  while (start < o.output.size()) {
    std::size_t end = o.output.find('\n', start);
    if (end == std::string::npos) end = o.output.size();
    const std::string line = o.output.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const auto v = json::parse(line).as_object();
    out.push_back({v.at("value").as_object(), v.at("key"), v.at("same_bytes").as_bool(),
                   member(v, "value_schema_id"), member(v, "key_schema_id"),
                   member(v, "value_indexes"), member(v, "key_indexes"), member(v, "value_message"),
                   member(v, "key_message"), member(v, "value_subject_id"),
                   member(v, "key_subject_id"), member(v, "key_by_deserializer")});
  }
  return out;
}

void produce(const std::string& bootstrap, const std::string& topic,
             std::unique_ptr<Encoder> encoder, const std::vector<Event>& events) {
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = topic;
  c.delivery_timeout_ms = 60'000;
  auto sink = make_kafka_sink(std::move(c), std::move(encoder));
  ASSERT_TRUE(sink) << sink.error().report();
  auto written = (*sink)->write(events);
  ASSERT_TRUE(written) << written.error().report();
  auto flushed = (*sink)->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
}

void expect_workload(const std::vector<ProtobufRecord>& records, const std::vector<Event>& events) {
  ASSERT_EQ(records.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i) + ": " + events[i].to_json());
    test::expect_same(records[i].value, events[i]);
    EXPECT_TRUE(records[i].same_bytes) << "python3-protobuf writes the message with other bytes";
    ByteBuffer json_key;
    if (append_json_key(events[i], json_key)) {
      ASSERT_TRUE(records[i].key.is_object());
      EXPECT_EQ(records[i].key.at("key").as_string(), json_key.view());
    } else {
      EXPECT_TRUE(records[i].key.is_null()) << "a keyless event has no key, not an empty one";
    }
  }
}

TEST(KafkaProtobufOnBroker, BareMessagesAreWhatPythonProtobufReadsFieldByField) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string topic = kafka_it::unique_topic("protobuf-bare");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_protobuf_encoder(), events);
  const auto records = read_protobuf(bootstrap, topic, "");
  expect_workload(records, events);
}

TEST(KafkaProtobufOnBroker, ConfluentFramingCarriesTheRegistrysIdsAndTheMessageIndexes) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  ProtobufCodecOptions options;
  options.registry_config.url = registry.url();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client);
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  // Another subject first, so that the ids of ours are not simply 1 and 2.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kAvro,
                                                R"({"type":"string"})"));

  const std::string topic = kafka_it::unique_topic("protobuf-confluent");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_protobuf_encoder(options), events);

  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kProtobuf,
                                                  std::string(protobuf_event_schema()));
  auto key_id = options.registry->lookup_schema(topic + "-key", SchemaType::kProtobuf,
                                                std::string(protobuf_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  const auto records = read_protobuf(bootstrap, topic, registry.url());
  expect_workload(records, events);
  std::size_t keyed = 0;
  for (const auto& r : records) {
    EXPECT_EQ(test::as_int(r.value_schema_id), *value_id);
    EXPECT_EQ(test::as_int(r.value_subject_id), *value_id);
    EXPECT_EQ(r.value_indexes, json::array({4}));
    EXPECT_EQ(r.value_message, "cppcdc.v1.Event");
    if (!r.key.is_null()) {
      ++keyed;
      EXPECT_EQ(test::as_int(r.key_schema_id), *key_id);
      EXPECT_EQ(test::as_int(r.key_subject_id), *key_id);
      EXPECT_EQ(r.key_indexes, json::array({0}));
      EXPECT_EQ(r.key_message, "cppcdc.v1.EventKey");
      EXPECT_EQ(r.key_by_deserializer, r.key) << "confluent-kafka's ProtobufDeserializer";
    }
  }
  EXPECT_EQ(keyed, 5u) << "inserts, update, delete and read are keyed; truncate and message not";
}

// The whole path through the server: `cppcdc preflight` fails naming the subject that lacks the
// schema under auto_register = false and writes nothing; once the schemas are registered it
// passes, and `cppcdc run` captures PostgreSQL rows into Confluent-framed Protobuf records that
// the registry-driven reader above takes apart, the rows compared with what was written.
TEST(KafkaProtobufCli, PreflightThenCapturedRowsArriveAsConfluentFramedProtobuf) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const std::string db = it::test_database("kproto");
  it::fresh_database(db);
  it::PgSession pg(it::dsn_for(db));
  pg.query("create table t (id int primary key, v text, j jsonb)");
  const std::string tag = kafka_it::unique_topic("kproto");
  const std::string slot = "kproto_" + std::to_string(::getpid());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cppcdc-kproto-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cdc.toml") << "[source]\ndsn = \"" << it::dsn_for(db)
                                  << "\"\ntables = [\"public.t\"]\nslot_name = \"" << slot
                                  << "\"\nsource_name = \"" << tag
                                  << "\"\n\n[sink]\ntype = \"kafka\"\n"
                                  << "bootstrap_servers = \"" << bootstrap
                                  << "\"\ncreate_topics = true\ncodec = \"protobuf\"\n"
                                  << "[sink.codec_options.schema_registry]\nurl = \""
                                  << registry.url() << "\"\nauto_register = false\n\n"
                                  << "[state.offset]\ndir = \"" << (dir / "state").string()
                                  << "\"\n";
  const std::string config = (dir / "cdc.toml").string();
  const std::string topic = tag + ".public.t";

  const auto missing = it::run_cli({"preflight", "--config", config}, 120);
  EXPECT_EQ(missing.code, 3) << missing.output;
  EXPECT_NE(missing.output.find("FAIL  schema registry"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find(topic + "-value"), std::string::npos) << missing.output;
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false: preflight writes nothing";

  SchemaRegistryConfig c;
  c.url = registry.url();
  auto client = make_schema_registry_client(c);
  ASSERT_TRUE(client);
  auto value_id = (*client)->register_schema(topic + "-value", SchemaType::kProtobuf,
                                             std::string(protobuf_event_schema()));
  auto key_id = (*client)->register_schema(topic + "-key", SchemaType::kProtobuf,
                                           std::string(protobuf_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  const auto registered = it::run_cli({"preflight", "--config", config}, 120);
  EXPECT_NE(registered.output.find("holds or accepts the Protobuf schemas of 2 subjects"),
            std::string::npos)
      << registered.output;
  EXPECT_EQ(registered.output.find("FAIL  schema registry"), std::string::npos)
      << registered.output;
  const auto writes = registry.writes();

  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), slot);
  pg.query("insert into t values (1, 'one', '{\"a\": 1}'), (2, 'two', null), (3, 'three', '[]')");
  pg.query("update t set v = 'uno' where id = 1");
  pg.query("delete from t where id = 2");

  std::vector<ProtobufRecord> records;
  const bool arrived = test::wait_until(
      [&] {
        if (kafka_it::partition_count(bootstrap, topic) <= 0) return false;
        bool failed = false;
        records = read_protobuf(bootstrap, topic, registry.url(), &failed);
        return !failed && records.size() >= 5;
      },
      std::chrono::seconds(90));
  it::stop_cppcdc_process(child, SIGTERM);
  it::drop_slots(db);
  ASSERT_TRUE(arrived) << records.size() << " records\n" << it::log_tail(dir / "cppcdc.log");
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(registry.writes(), writes) << "auto_register = false: the sink writes nothing";

  const char* ops[] = {"insert", "insert", "insert", "update", "delete"};
  const char* keys[] = {"1", "2", "3", "1", "2"};
  for (std::size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    const auto& v = records[i].value;
    EXPECT_EQ(v.at("op").as_string(), ops[i]);
    EXPECT_EQ(v.at("table").as_string(), "t");
    EXPECT_EQ(v.at("schema").as_string(), "public");
    EXPECT_EQ(v.at("source").at("source_name").as_string(), tag);
    EXPECT_EQ(test::as_int(records[i].value_schema_id), *value_id);
    EXPECT_EQ(test::as_int(records[i].key_schema_id), *key_id);
    EXPECT_EQ(records[i].value_indexes, json::array({4}));
    EXPECT_EQ(records[i].key_indexes, json::array({0}));
    EXPECT_EQ(records[i].value_message, "cppcdc.v1.Event");
    EXPECT_EQ(records[i].key_message, "cppcdc.v1.EventKey");
    EXPECT_TRUE(records[i].same_bytes);
    EXPECT_EQ(records[i].key.at("key").as_string(), std::string("{\"id\":\"") + keys[i] + "\"}");
    EXPECT_EQ(records[i].key_by_deserializer, records[i].key);
  }
  EXPECT_EQ(records[0].value.at("after").as_string(), R"({"id":"1","v":"one","j":{"a": 1}})");
  EXPECT_EQ(records[1].value.at("after").as_string(), R"({"id":"2","v":"two","j":null})");
  EXPECT_EQ(records[2].value.at("after").as_string(), R"({"id":"3","v":"three","j":[]})");
  EXPECT_EQ(records[3].value.at("after").as_string(), R"({"id":"1","v":"uno","j":{"a": 1}})");
  EXPECT_TRUE(records[4].value.at("after").is_null());
  EXPECT_EQ(records[4].value.at("before").as_string(), R"({"id":"2"})");
  EXPECT_TRUE(records[4].value.at("before_is_key_only").as_bool());
  EXPECT_TRUE(records[4].value.at("transaction").is_object());
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc
