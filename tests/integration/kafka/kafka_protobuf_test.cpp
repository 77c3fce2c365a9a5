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
#include "integration/kafka/every_op_workload.hpp"
#include "integration/kafka/kafka_capture.hpp"
#include "schema_registry_double.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

namespace json = boost::json;

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
  for (const auto& v : kafka_it::json_lines(o.output)) {
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
  const auto events = kafka_it::every_op_workload("shop");
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
  const auto events = kafka_it::every_op_workload("shop");
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
  kafka_it::PgCapture cap("kproto", bootstrap,
                          "create table t (id int primary key, v text, j jsonb)");
  cap.write_config("codec = \"protobuf\"\n[sink.codec_options.schema_registry]\nurl = \"" +
                   registry.url() + "\"\nauto_register = false");
  const std::string config = cap.config();
  const std::string topic = cap.topic();

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

  ASSERT_NO_FATAL_FAILURE(cap.start());
  cap.pg().query(
      "insert into t values (1, 'one', '{\"a\": 1}'), (2, 'two', null), (3, 'three', '[]')");
  cap.pg().query("update t set v = 'uno' where id = 1");
  cap.pg().query("delete from t where id = 2");

  std::vector<ProtobufRecord> records;
  ASSERT_TRUE(cap.await(
      5, records,
      [&](bool& failed) { return read_protobuf(bootstrap, topic, registry.url(), &failed); }))
      << records.size() << " records\n"
      << cap.log();
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
    EXPECT_EQ(v.at("source").at("source_name").as_string(), cap.tag());
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
}

}  // namespace
}  // namespace cppcdc
