// The Kafka sink with codec = "json_schema" against the real broker: what it produced is read
// back by Debian's python3-confluent-kafka with its own schema registry client and
// JSONDeserializer (kafka_tool.py read-json-schema; no cppcdc code on that side), which finds
// each record's schema by the framing's id in the schema registry DOUBLE
// (tests/integration/schema_registry_double.py) and validates the document against it with
// python3-jsonschema; the documents are then compared with the events field by field.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cppcdc/json_schema.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/every_op_workload.hpp"
#include "integration/kafka/kafka_capture.hpp"
#include "schema_registry_double.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

namespace json = boost::json;

struct JsonSchemaRecord {
  json::value value, key;
  json::value value_schema_id, key_schema_id;
  json::value value_title, key_title;
  json::value value_subject_id, key_subject_id;
};

std::vector<JsonSchemaRecord> read_json_schema(const std::string& bootstrap,
                                               const std::string& topic,
                                               const std::string& registry_url,
                                               bool* failed = nullptr) {
  const auto o = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-json-schema " +
                                       topic + " " + registry_url);
  if (failed != nullptr) {
    *failed = o.code != 0;
  } else {
    EXPECT_EQ(o.code, 0) << "confluent-kafka's JSONDeserializer could not read topic " << topic;
  }
  std::vector<JsonSchemaRecord> out;
  for (const auto& v : kafka_it::json_lines(o.output)) {
    out.push_back({v.at("value"), v.at("key"), v.at("value_schema_id"), v.at("key_schema_id"),
                   v.at("value_title"), v.at("key_title"), v.at("value_subject_id"),
                   v.at("key_subject_id")});
  }
  return out;
}

std::shared_ptr<SchemaRegistryClient> client_of(const std::string& url) {
  SchemaRegistryConfig c;
  c.url = url;
  auto client = make_schema_registry_client(c);
  EXPECT_TRUE(client);
  return client ? std::shared_ptr<SchemaRegistryClient>(std::move(*client)) : nullptr;
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

// What the consumer read, field by field, against the event (as the envelope writes it), and
// the key against the json codec's key object.
void expect_same(const JsonSchemaRecord& r, const Event& e) {
  ASSERT_TRUE(r.value.is_object());
  const json::object& got = r.value.as_object();
  const json::object want = json::parse(e.to_json()).as_object();
  std::set<std::string> got_fields, want_fields;
  for (const auto& f : got) got_fields.insert(f.key());
  for (const auto& f : want) want_fields.insert(f.key());
  EXPECT_EQ(got_fields, want_fields);
  for (const auto& f : want) {
    const auto* field = got.if_contains(f.key());
    ASSERT_NE(field, nullptr) << f.key();
    EXPECT_EQ(*field, f.value()) << "field " << f.key();
  }
  EXPECT_EQ(got.at("op"), json::value(std::string(to_string(e.op))));
  EXPECT_EQ(got.at("ts"), json::value(e.ts));
  ByteBuffer key;
  if (append_json_key(e, key)) {
    EXPECT_EQ(r.key, json::parse(key.view()));
  } else {
    EXPECT_TRUE(r.key.is_null()) << "a keyless event has no key, not an empty one";
  }
}

TEST(KafkaJsonSchemaOnBroker, ConfluentsJsonDeserializerReadsTheRegistrysSchemasAndEveryField) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  JsonSchemaCodecOptions options;
  options.registry_config.url = registry.url();
  options.registry = client_of(registry.url());
  ASSERT_TRUE(options.registry);
  // Another schema first, so that ours do not simply get ids 1 and 2.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kJson,
                                                R"({"type":"string"})"));

  const std::string topic = kafka_it::unique_topic("json-schema");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = kafka_it::every_op_workload("shop");
  produce(bootstrap, topic, make_json_schema_encoder(options), events);

  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kJson,
                                                  std::string(json_schema_event_schema()));
  auto key_id = options.registry->lookup_schema(topic + "-key", SchemaType::kJson,
                                                std::string(json_schema_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  const auto records = read_json_schema(bootstrap, topic, registry.url());
  ASSERT_EQ(records.size(), events.size());
  std::size_t keyed = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i) + ": " + events[i].to_json());
    expect_same(records[i], events[i]);
    EXPECT_EQ(records[i].value_schema_id, json::value(*value_id));
    EXPECT_EQ(records[i].value_subject_id, json::value(*value_id));
    EXPECT_EQ(records[i].value_title, "io.cppcdc.Event");
    if (!records[i].key.is_null()) {
      ++keyed;
      EXPECT_EQ(records[i].key_schema_id, json::value(*key_id));
      EXPECT_EQ(records[i].key_subject_id, json::value(*key_id));
      EXPECT_EQ(records[i].key_title, "io.cppcdc.EventKey");
    }
  }
  EXPECT_EQ(keyed, 5u) << "inserts, update, delete and read are keyed; truncate and message not";
}

// Fixed ids: the schemas were registered by someone else; the sink asks no registry, and the
// consumer finds the schemas by the ids it was given.
TEST(KafkaJsonSchemaOnBroker, FixedIdsNeedNoRegistryAtTheProducer) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  auto admin = client_of(registry.url());
  ASSERT_TRUE(admin);
  const std::string topic = kafka_it::unique_topic("json-schema-fixed");
  ASSERT_TRUE(admin->register_schema("unrelated-value", SchemaType::kJson, R"({"type":"null"})"));
  auto key_id = admin->register_schema(topic + "-key", SchemaType::kJson,
                                       std::string(json_schema_key_schema()));
  auto value_id = admin->register_schema(topic + "-value", SchemaType::kJson,
                                         std::string(json_schema_event_schema()));
  ASSERT_TRUE(key_id && value_id);
  const auto before = registry.requests().size();

  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  JsonSchemaCodecOptions options;
  options.schema_id = *value_id;
  options.key_schema_id = *key_id;
  const auto events = kafka_it::every_op_workload("shop");
  produce(bootstrap, topic, make_json_schema_encoder(options), events);
  EXPECT_EQ(registry.requests().size(), before) << "the producer asked the registry nothing";

  const auto records = read_json_schema(bootstrap, topic, registry.url());
  ASSERT_EQ(records.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    expect_same(records[i], events[i]);
    EXPECT_EQ(records[i].value_schema_id, json::value(*value_id));
    if (!records[i].key.is_null()) {
      EXPECT_EQ(records[i].key_schema_id, json::value(*key_id));
    }
  }
}

// The whole path through the server: PostgreSQL rows captured by `cppcdc run` with
// codec = "json_schema" and a registry, read back by confluent-kafka's JSONDeserializer; first
// `cppcdc preflight` with auto_register = false fails naming the subject that lacks the schema
// (and writes nothing).
TEST(KafkaJsonSchemaCli, PreflightNamesAMissingSubjectThenCapturedRowsArriveFramedAndValid) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  kafka_it::PgCapture cap("kjs", bootstrap, "create table t (id int primary key, v text, j jsonb)");
  const auto write_config = [&](bool auto_register) {
    cap.write_config("codec = \"json_schema\"\n[sink.codec_options.schema_registry]\nurl = \"" +
                     registry.url() + "\"\nauto_register = " + (auto_register ? "true" : "false"));
  };
  const std::string topic = cap.topic();

  write_config(false);
  const auto missing = it::run_cli({"preflight", "--config", cap.config()}, 120);
  EXPECT_EQ(missing.code, 3) << missing.output;
  EXPECT_NE(missing.output.find("FAIL  schema registry"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find(topic + "-value"), std::string::npos) << missing.output;
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false: preflight writes nothing";

  write_config(true);
  const auto accepts = it::run_cli({"preflight", "--config", cap.config()}, 120);
  EXPECT_NE(accepts.output.find("holds or accepts the JSON Schemas of 2 subjects"),
            std::string::npos)
      << accepts.output;

  ASSERT_NO_FATAL_FAILURE(cap.start());
  cap.pg().query("insert into t values (1, 'one', '{\"a\": [1, null]}'), (2, 'two', null)");
  cap.pg().query("update t set v = 'uno' where id = 1");
  cap.pg().query("delete from t where id = 2");

  std::vector<JsonSchemaRecord> records;
  ASSERT_TRUE(cap.await(
      4, records,
      [&](bool& failed) { return read_json_schema(bootstrap, topic, registry.url(), &failed); }))
      << records.size() << " records\n"
      << cap.log();
  ASSERT_EQ(records.size(), 4u);

  auto admin = client_of(registry.url());
  auto value_id = admin->lookup_schema(topic + "-value", SchemaType::kJson,
                                       std::string(json_schema_event_schema()));
  auto key_id = admin->lookup_schema(topic + "-key", SchemaType::kJson,
                                     std::string(json_schema_key_schema()));
  ASSERT_TRUE(value_id && key_id);
  const char* ops[] = {"insert", "insert", "update", "delete"};
  const char* keys[] = {"1", "2", "1", "2"};
  for (std::size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    const auto& v = records[i].value.as_object();
    EXPECT_EQ(v.at("op"), ops[i]);
    EXPECT_EQ(v.at("table"), "t");
    EXPECT_EQ(v.at("schema"), "public");
    EXPECT_EQ(v.at("source").at("source_name"), json::value(cap.tag()));
    EXPECT_EQ(records[i].value_schema_id, json::value(*value_id));
    EXPECT_EQ(records[i].key_schema_id, json::value(*key_id));
    EXPECT_EQ(records[i].key, json::parse(std::string(R"({"id":")") + keys[i] + "\"}"));
  }
  EXPECT_EQ(records[0].value.at("after"),
            json::parse(R"({"id":"1","v":"one","j":{"a":[1,null]}})"));
  EXPECT_EQ(records[1].value.at("after"), json::parse(R"({"id":"2","v":"two","j":null})"));
  EXPECT_EQ(records[2].value.at("after").at("v"), "uno");
  EXPECT_TRUE(records[3].value.at("after").is_null());
  EXPECT_EQ(records[3].value.at("before"), json::parse(R"({"id":"2"})"));
  EXPECT_EQ(records[3].value.at("before_is_key_only"), true);
}

}  // namespace
}  // namespace cppcdc
