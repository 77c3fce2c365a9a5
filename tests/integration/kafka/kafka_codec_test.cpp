// The Kafka sink with codec = "avro" against the real broker: what it produced is read back by
// Debian's python3-confluent-kafka and decoded by Debian's python3-avro (kafka_tool.py
// read-avro; no cppcdc code on that side) and compared field by field, bare and in the
// Confluent framing, whose schema ids must be the ones the schema registry DOUBLE
// (tests/integration/schema_registry_double.py) holds for the topic's value and key subjects;
// and through the "apicurio" client (Apicurio Registry 3's native API, against the DOUBLE
// tests/integration/apicurio_registry_double.py), where python3-avro decodes each record with
// the schema it fetches from the registry by the framing's global id.

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/cloudevents.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_capture.hpp"
#include "schema_registry_double.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

std::vector<Event> workload(const std::string& source_name) {
  std::vector<Event> out;
  for (int id = 1; id <= 3; ++id) {
    EventBuilder b("orders", Operation::kInsert);
    b.schema("public")
        .source(SourceMetadata{source_name, "0/" + std::to_string(0x3000 + id), 1700000000000 + id})
        .ts(1700000000500 + id)
        .primary_key({"id"})
        .transaction(TransactionMetadata{static_cast<std::uint64_t>(700 + id), 1, 0})
        .after(Row{{"id", std::to_string(id), false},
                   {"note", "n\"ote ✓ " + std::to_string(id), false},
                   {"doc", R"({"n":)" + std::to_string(id) + "}", true},
                   {"gone", std::nullopt, false}});
    out.push_back(b.build());
  }
  EventBuilder d("orders", Operation::kDelete);
  d.schema("public")
      .source(SourceMetadata{source_name, "0/4000", 1700000000100})
      .ts(1700000000600)
      .primary_key({"id"})
      .before(BeforeKeyOnly{Row{{"id", "2", false}}});
  out.push_back(d.build());
  EventBuilder t("orders", Operation::kTruncate);
  t.schema("public").source(SourceMetadata{source_name, "0/4100", 1700000000200}).ts(1700000000700);
  out.push_back(t.build());
  return out;
}

struct AvroRecord {
  boost::json::object value;
  boost::json::value key;  // null: the record has no key
  boost::json::value value_schema_id;
  boost::json::value key_schema_id;
};

// The records kafka_tool.py read-avro (and read-avro-apicurio) prints, one JSON line each.
std::vector<AvroRecord> avro_records(const std::string& output) {
  std::vector<AvroRecord> out;
  for (const auto& v : kafka_it::json_lines(output)) {
    out.push_back(
        {v.at("value").as_object(), v.at("key"), v.at("value_schema_id"), v.at("key_schema_id")});
  }
  return out;
}

std::vector<AvroRecord> read_avro(const std::string& bootstrap, const std::string& topic,
                                  bool confluent, bool* failed = nullptr) {
  const std::string dir = std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/";
  const auto o = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-avro " + topic +
                                       " " + dir + "event.avsc " + dir + "event_key.avsc " +
                                       (confluent ? "confluent" : "bare"));
  if (failed != nullptr) {
    *failed = o.code != 0;
  } else {
    EXPECT_EQ(o.code, 0) << "python3-avro could not read topic " << topic;
  }
  return avro_records(o.output);
}

/// The id the registry holds for `schema` under `subject` (looked up, never written).
std::int64_t registry_id(const std::string& url, const std::string& subject,
                         std::string_view schema) {
  SchemaRegistryConfig c;
  c.url = url;
  auto client = make_schema_registry_client(c);
  EXPECT_TRUE(client);
  auto id = (*client)->lookup_schema(subject, SchemaType::kAvro, std::string(schema));
  EXPECT_TRUE(id) << id.error().report();
  return id ? *id : -1;
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

/// Writes workload("shop") to `topic` through a Kafka sink with the Avro encoder of `options`
/// and flushes: the error of the step that failed (opening, writing, flushing), nullopt when
/// none did.
std::optional<Error> avro_write_error(const std::string& bootstrap, const std::string& topic,
                                      const AvroCodecOptions& options) {
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = topic;
  c.delivery_timeout_ms = 60'000;
  auto sink = make_kafka_sink(std::move(c), make_avro_encoder(options));
  if (!sink) return sink.error();
  if (auto written = (*sink)->write(workload("shop")); !written) return written.error();
  if (auto flushed = (*sink)->flush(); !flushed) return flushed.error();
  return std::nullopt;
}

void expect_workload(const std::vector<AvroRecord>& records, const std::vector<Event>& events) {
  ASSERT_EQ(records.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i) + ": " + events[i].to_json());
    test::expect_same(records[i].value, events[i]);
    ByteBuffer json_key;
    if (append_json_key(events[i], json_key)) {
      ASSERT_TRUE(records[i].key.is_object());
      EXPECT_EQ(records[i].key.at("key").as_string(), json_key.view());
    } else {
      EXPECT_TRUE(records[i].key.is_null()) << "a keyless event has no key, not an empty one";
    }
  }
}

TEST(KafkaCodecOnBroker, BareAvroIsWhatPythonAvroReadsFieldByField) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string topic = kafka_it::unique_topic("avro-bare");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_avro_encoder(), events);
  const auto records = read_avro(bootstrap, topic, false);
  expect_workload(records, events);
  for (const auto& r : records) EXPECT_TRUE(r.value_schema_id.is_null());
}

TEST(KafkaCodecOnBroker, ConfluentFramingCarriesTheRegistrysIdsOfTheTopicsSubjects) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options;
  options.registry_config.url = registry.url();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client);
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  // Another subject first, so the ids of ours are not simply 1 and 2.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kAvro,
                                                R"({"type":"string"})"));

  const std::string topic = kafka_it::unique_topic("avro-confluent");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_avro_encoder(options), events);

  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kAvro,
                                                  std::string(avro_event_schema()));
  auto key_id = options.registry->lookup_schema(topic + "-key", SchemaType::kAvro,
                                                std::string(avro_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  const auto records = read_avro(bootstrap, topic, true);
  expect_workload(records, events);
  for (const auto& r : records) {
    EXPECT_EQ(test::as_int(r.value_schema_id), *value_id);
    if (!r.key.is_null()) {
      EXPECT_EQ(test::as_int(r.key_schema_id), *key_id);
    }
  }
}

// What a Python consumer uses: confluent-kafka's own AvroDeserializer (over fastavro), which
// fetches each record's schema from the registry by the framing's id. Skipped when fastavro is
// not installed (scripts/install-deps.sh fetches it: Debian 12 does not package it).
TEST(KafkaCodecOnBroker, ConfluentAvroIsWhatConfluentKafkasAvroDeserializerReads) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options;
  options.registry_config.url = registry.url();
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client);
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  const std::string topic = kafka_it::unique_topic("avro-deserializer");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_avro_encoder(options), events);

  const auto o = kafka_it::run_command(kafka_it::python() + " " + std::string(CPPCDC_SOURCE_DIR) +
                                       "/tests/integration/kafka/avro_deserialize.py " + bootstrap +
                                       " " + topic + " " + registry.url());
  if (o.code == 77) GTEST_SKIP() << o.output;
  ASSERT_EQ(o.code, 0) << o.output;
  const auto records = avro_records(o.output);
  expect_workload(records, events);
  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kAvro,
                                                  std::string(avro_event_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  for (const auto& r : records) EXPECT_EQ(test::as_int(r.value_schema_id), *value_id);
}

TEST(KafkaCodecOnBroker, ApicurioGlobalIdsInTheFramingNameTheSchemasPythonAvroDecodesWith) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry({}, RegistryDouble::kApicurio);
  ASSERT_TRUE(registry.up());
  AvroCodecOptions options;
  options.registry_config.type = SchemaRegistryType::kApicurio;
  options.registry_config.url = registry.url();
  options.registry_config.group = "cdc";
  auto client = make_schema_registry_client(options.registry_config);
  ASSERT_TRUE(client) << client.error().report();
  options.registry = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  // Another artifact first, so the global ids of ours are not the first ones.
  ASSERT_TRUE(options.registry->register_schema("unrelated-value", SchemaType::kAvro,
                                                R"({"type":"string"})"));

  const std::string topic = kafka_it::unique_topic("avro-apicurio");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  const auto events = workload("shop");
  produce(bootstrap, topic, make_avro_encoder(options), events);

  auto value_id = options.registry->lookup_schema(topic + "-value", SchemaType::kAvro,
                                                  std::string(avro_event_schema()));
  auto key_id = options.registry->lookup_schema(topic + "-key", SchemaType::kAvro,
                                                std::string(avro_key_schema()));
  ASSERT_TRUE(value_id) << value_id.error().report();
  ASSERT_TRUE(key_id) << key_id.error().report();
  EXPECT_NE(*value_id, *key_id);
  const auto o = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-avro-apicurio " +
                                       topic + " " + registry.url());
  ASSERT_EQ(o.code, 0) << "python3-avro could not read topic " << topic << ": " << o.output;
  const auto records = avro_records(o.output);
  expect_workload(records, events);
  for (const auto& r : records) {
    EXPECT_EQ(test::as_int(r.value_schema_id), *value_id);
    if (!r.key.is_null()) {
      EXPECT_EQ(test::as_int(r.key_schema_id), *key_id);
    }
  }
}

// The whole path through the server: PostgreSQL rows captured by `cppcdc run` with
// codec = "avro" and [sink.codec_options.schema_registry], read back by python3-avro.
TEST(KafkaCodecCli, CapturedRowsArriveAsConfluentFramedAvroWithTheRegistrysIds) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  kafka_it::PgCapture cap("kcodec", bootstrap,
                          "create table t (id int primary key, v text, j jsonb)");
  cap.write_config("codec = \"avro\"\n[sink.codec_options.schema_registry]\nurl = \"" +
                   registry.url() + "\"");
  ASSERT_NO_FATAL_FAILURE(cap.start());
  cap.pg().query(
      "insert into t values (1, 'one', '{\"a\": 1}'), (2, 'two', null), (3, 'three', '[]')");
  cap.pg().query("update t set v = 'uno' where id = 1");
  cap.pg().query("delete from t where id = 2");

  const std::string topic = cap.topic();
  std::vector<AvroRecord> records;
  ASSERT_TRUE(cap.await(5, records,
                        [&](bool& failed) { return read_avro(bootstrap, topic, true, &failed); }))
      << records.size() << " records\n"
      << cap.log();
  ASSERT_EQ(records.size(), 5u);

  auto value_id = registry_id(registry.url(), topic + "-value", avro_event_schema());
  auto key_id = registry_id(registry.url(), topic + "-key", avro_key_schema());
  const char* ops[] = {"insert", "insert", "insert", "update", "delete"};
  const char* keys[] = {"1", "2", "3", "1", "2"};
  for (std::size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    const auto& v = records[i].value;
    EXPECT_EQ(v.at("op").as_string(), ops[i]);
    EXPECT_EQ(v.at("table").as_string(), "t");
    EXPECT_EQ(v.at("schema").as_string(), "public");
    EXPECT_EQ(v.at("source").at("source_name").as_string(), cap.tag());
    EXPECT_EQ(test::as_int(records[i].value_schema_id), value_id);
    EXPECT_EQ(test::as_int(records[i].key_schema_id), key_id);
    EXPECT_EQ(records[i].key.at("key").as_string(), std::string("{\"id\":\"") + keys[i] + "\"}");
  }
  EXPECT_EQ(records[0].value.at("after").as_string(), R"({"id":"1","v":"one","j":{"a": 1}})");
  EXPECT_EQ(records[1].value.at("after").as_string(), R"({"id":"2","v":"two","j":null})");
  EXPECT_EQ(records[3].value.at("after").as_string(), R"({"id":"1","v":"uno","j":{"a": 1}})");
  EXPECT_TRUE(records[4].value.at("after").is_null());
  EXPECT_EQ(records[4].value.at("before").as_string(), R"({"id":"2"})");
  EXPECT_TRUE(records[4].value.at("before_is_key_only").as_bool());
}

// `cppcdc preflight` checks the codec's registry subjects for the topics the captured tables go
// to: with auto_register = false a subject that lacks the schema is a FAIL naming it, and
// nothing is written to the registry; once registered, the check passes.
TEST(KafkaCodecCli, PreflightChecksTheRegistrySubjectsOfTheCapturedTables) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  kafka_it::PgCapture cap("kcpf", bootstrap, "create table t (id int primary key)");
  cap.write_config("codec = \"avro\"\n[sink.codec_options.schema_registry]\nurl = \"" +
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
  ASSERT_TRUE((*client)->register_schema(topic + "-value", SchemaType::kAvro,
                                         std::string(avro_event_schema())));
  ASSERT_TRUE((*client)->register_schema(topic + "-key", SchemaType::kAvro,
                                         std::string(avro_key_schema())));
  const auto registered = it::run_cli({"preflight", "--config", config}, 120);
  EXPECT_NE(registered.output.find("holds or accepts the Avro schemas of 2 subjects"),
            std::string::npos)
      << registered.output;
  EXPECT_EQ(registered.output.find("FAIL  schema registry"), std::string::npos)
      << registered.output;
}

// ---- CloudEvents: read by the CNCF's CloudEvents Python SDK (kafka_tool.py read-cloudevents)

std::vector<boost::json::object> read_cloudevents(const std::string& bootstrap,
                                                  const std::string& topic) {
  const auto o =
      kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-cloudevents " + topic);
  EXPECT_EQ(o.code, 0) << "the CloudEvents SDK could not read topic " << topic << ": " << o.output;
  return kafka_it::json_lines(o.output);
}

// `cppcdc preflight` with type = "apicurio" and auto_register = false: an artifact holding
// another schema than the one cppcdc writes stops the start, named with its group; nothing is
// written; once the schemas are versions of the artifacts, the check passes.
TEST(KafkaCodecCli, ApicurioPreflightRefusesAnArtifactHoldingAnotherSchemaNamingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry({}, RegistryDouble::kApicurio);
  ASSERT_TRUE(registry.up());
  kafka_it::PgCapture cap("kcap", bootstrap, "create table t (id int primary key)");
  cap.write_config(
      "codec = \"avro\"\n[sink.codec_options.schema_registry]\ntype = \"apicurio\"\nurl = \"" +
      registry.url() + "\"\ngroup = \"cdc\"\nauto_register = false");
  const std::string config = cap.config();
  const std::string topic = cap.topic();
  SchemaRegistryConfig c;
  c.type = SchemaRegistryType::kApicurio;
  c.url = registry.url();
  c.group = "cdc";
  auto client = make_schema_registry_client(c);
  ASSERT_TRUE(client);
  ASSERT_TRUE(
      (*client)->register_schema(topic + "-value", SchemaType::kAvro, R"({"type":"string"})"));
  const auto differs = it::run_cli({"preflight", "--config", config}, 120);
  EXPECT_EQ(differs.code, 3) << differs.output;
  EXPECT_NE(differs.output.find("FAIL  schema registry"), std::string::npos) << differs.output;
  EXPECT_NE(differs.output.find("artifact \"" + topic + "-value\" in group \"cdc\""),
            std::string::npos)
      << differs.output;
  EXPECT_NE(differs.output.find("another schema"), std::string::npos) << differs.output;
  EXPECT_EQ(registry.writes(), 1u) << "auto_register = false: preflight writes nothing";

  ASSERT_TRUE((*client)->register_schema(topic + "-value", SchemaType::kAvro,
                                         std::string(avro_event_schema())));
  ASSERT_TRUE((*client)->register_schema(topic + "-key", SchemaType::kAvro,
                                         std::string(avro_key_schema())));
  const auto registered = it::run_cli({"preflight", "--config", config}, 120);
  EXPECT_NE(registered.output.find("holds or accepts the Avro schemas of 2 subjects"),
            std::string::npos)
      << registered.output;
  EXPECT_EQ(registered.output.find("FAIL  schema registry"), std::string::npos)
      << registered.output;
  EXPECT_EQ(registry.writes(), 3u);
}

// The same events in both modes: the SDK finds the same attributes (binary mode from the ce_
// headers, structured from the document) and the envelope as the data.
TEST(KafkaCodecOnBroker, CloudEventsInBothModesAreWhatTheCloudEventsSdkReads) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const auto events = workload("shop");
  std::vector<std::vector<boost::json::object>> read;
  for (const auto mode : {CloudEventsMode::kStructured, CloudEventsMode::kBinary}) {
    const std::string topic =
        kafka_it::unique_topic(mode == CloudEventsMode::kBinary ? "ce-binary" : "ce-structured");
    ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
    CloudEventsOptions options;
    options.mode = mode;
    produce(bootstrap, topic, make_cloudevents_encoder(options), events);
    read.push_back(read_cloudevents(bootstrap, topic));
    ASSERT_EQ(read.back().size(), events.size());
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i) + ": " + events[i].to_json());
    const auto& structured = read[0][i].at("attributes").as_object();
    const auto& binary = read[1][i].at("attributes").as_object();
    for (const auto* attributes : {&structured, &binary}) {
      EXPECT_EQ(attributes->at("specversion"), "1.0");
      EXPECT_EQ(attributes->at("source"), "/cppcdc/shop");
      EXPECT_EQ(attributes->at("type"),
                boost::json::value("io.cppcdc." + std::string(to_string(events[i].op))));
      EXPECT_EQ(attributes->at("subject"), "public.orders");
      EXPECT_EQ(attributes->at("datacontenttype"), "application/json");
      EXPECT_EQ(attributes->at("id").as_string().size(), 64U);
    }
    for (const char* name : {"id", "time", "type", "subject"}) {
      EXPECT_EQ(structured.at(name), binary.at(name)) << name;
    }
    // The commit times of workload(), RFC 3339 in UTC (date -u -d @1700000000.001).
    const char* const times[] = {"2023-11-14T22:13:20.001Z", "2023-11-14T22:13:20.002Z",
                                 "2023-11-14T22:13:20.003Z", "2023-11-14T22:13:20.100Z",
                                 "2023-11-14T22:13:20.200Z"};
    EXPECT_EQ(structured.at("time"), times[i]);
    const auto envelope = boost::json::parse(events[i].to_json());
    EXPECT_EQ(read[0][i].at("data"), envelope);
    EXPECT_EQ(read[1][i].at("data"), envelope);
  }
}

// ---- a real registry: Apicurio Registry 2.4.2 (scripts/apicurio.sh), not a double ----------
// Its Confluent-compatible API (/apis/ccompat/v7) behind the "confluent" client. The registry is
// named by CPPCDC_TEST_APICURIO_URL, its root (scripts/test.sh starts one); the tests skip
// without it. (Its native API is v2; the "apicurio" client speaks v3: see
// docs/schema-registry.md.)

std::string apicurio_root() {
  const char* url = std::getenv("CPPCDC_TEST_APICURIO_URL");
  return url ? url : "";
}

#define APICURIO_TEST_URL(var)                                                                 \
  const std::string var = apicurio_root().empty() ? "" : apicurio_root() + "/apis/ccompat/v7"; \
  if (var.empty())                                                                             \
  GTEST_SKIP() << "CPPCDC_TEST_APICURIO_URL is not set: no Apicurio Registry to test "         \
                  "against (scripts/apicurio.sh start DIR PORT starts one)"

std::shared_ptr<SchemaRegistryClient> real_client(const SchemaRegistryConfig& c) {
  auto client = make_schema_registry_client(c);
  EXPECT_TRUE(client) << client.error().report();
  return client ? std::shared_ptr<SchemaRegistryClient>(std::move(*client)) : nullptr;
}

bool has_subject(SchemaRegistryClient& client, const std::string& subject) {
  auto listed = client.subjects();
  EXPECT_TRUE(listed) << listed.error().report();
  return listed && std::find(listed->begin(), listed->end(), subject) != listed->end();
}

/// What confluent-kafka's AvroDeserializer reads from `topic`, fetching the schemas from
/// `registry_url` by the framing's ids; skips the test without fastavro.
#define DESERIALIZED(records, bootstrap, topic, registry_url)                                 \
  std::vector<AvroRecord> records;                                                            \
  {                                                                                           \
    const auto o =                                                                            \
        kafka_it::run_command(kafka_it::python() + " " + std::string(CPPCDC_SOURCE_DIR) +     \
                              "/tests/integration/kafka/avro_deserialize.py " + (bootstrap) + \
                              " " + (topic) + " " + (registry_url));                          \
    if (o.code == 77) GTEST_SKIP() << o.output;                                               \
    ASSERT_EQ(o.code, 0) << o.output;                                                         \
    records = avro_records(o.output);                                                         \
  }

// auto_register = true, topic_name: cppcdc registers both subjects in the real registry, and
// confluent-kafka's AvroDeserializer, fetching each record's schema from it by the framing's
// id, reads the records back field by field; the ids are the ones the registry gives for the
// subjects, and a preflight of the same subjects passes.
TEST(RealRegistryOnBroker, ApicuriosConfluentApiServesTheIdsConfluentKafkasDeserializerReads) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  APICURIO_TEST_URL(url);
  AvroCodecOptions options;
  options.registry_config.url = url;
  options.registry = real_client(options.registry_config);
  ASSERT_TRUE(options.registry);
  const std::string topic = kafka_it::unique_topic("avro-apicurio-real");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  // Another subject first, so that the ids of ours are not simply the first ones.
  ASSERT_TRUE(options.registry->register_schema(topic + "-unrelated", SchemaType::kAvro,
                                                R"({"type":"string"})"));
  const SubjectSchema subjects[] = {
      {topic + "-value", SchemaType::kAvro, std::string(avro_event_schema())},
      {topic + "-key", SchemaType::kAvro, std::string(avro_key_schema())}};
  auto before = preflight_schema_registry(*options.registry, options.registry_config, subjects);
  EXPECT_TRUE(before) << before.error().report();
  const auto events = workload("shop");
  produce(bootstrap, topic, make_avro_encoder(options), events);

  ASSERT_TRUE(has_subject(*options.registry, topic + "-value"));
  ASSERT_TRUE(has_subject(*options.registry, topic + "-key"));
  const auto value_id = registry_id(url, topic + "-value", avro_event_schema());
  const auto key_id = registry_id(url, topic + "-key", avro_key_schema());
  EXPECT_NE(value_id, key_id);
  DESERIALIZED(records, bootstrap, topic, url);
  expect_workload(records, events);
  for (const auto& r : records) {
    EXPECT_EQ(test::as_int(r.value_schema_id), value_id);
    if (!r.key.is_null()) {
      EXPECT_EQ(test::as_int(r.key_schema_id), key_id);
    }
  }
  // The schema the registry serves for the id is the one cppcdc wrote (read by a second
  // client, so not from the first one's cache).
  auto fresh = real_client(options.registry_config);
  ASSERT_TRUE(fresh);
  auto served = fresh->schema_by_id(static_cast<std::int32_t>(value_id));
  ASSERT_TRUE(served) << served.error().report();
  EXPECT_EQ(boost::json::parse(served->schema), boost::json::parse(avro_event_schema()));
  auto after = preflight_schema_registry(*fresh, options.registry_config, subjects);
  EXPECT_TRUE(after) << after.error().report();
}

// normalize_schemas = true against Apicurio's Confluent-compatible API: Apicurio stores the
// normalized record with its fields sorted by name, so the id it answers names a schema whose
// datums are laid out differently from cppcdc's. The encoder reads the id's schema back and
// refuses to write, naming the subject, the id and the setting; nothing reaches the topic. A
// trial saw every record written with that id, and no consumer could decode them.
TEST(RealRegistryOnBroker, ANormalizedSchemaStoredInAnotherFieldOrderIsRefusedBeforeAnyRecord) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  APICURIO_TEST_URL(url);
  AvroCodecOptions options;
  options.registry_config.url = url;
  options.registry_config.normalize_schemas = true;
  options.registry = real_client(options.registry_config);
  ASSERT_TRUE(options.registry);
  const std::string topic = kafka_it::unique_topic("avro-apicurio-normalized");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  {
    const auto error = avro_write_error(bootstrap, topic, options);
    ASSERT_TRUE(error) << "records were written with the normalized schema's id";
    EXPECT_EQ(error->kind(), ErrorKind::kTerminal) << error->report();
    EXPECT_NE(error->report().find("subject \"" + topic + "-"), std::string::npos)
        << error->report();
    EXPECT_NE(error->report().find("set normalize_schemas = false"), std::string::npos)
        << error->report();
    EXPECT_EQ(error->setting(), "codec_options.schema_registry.normalize_schemas")
        << error->report();
  }
  EXPECT_EQ(kafka_it::committed_records(bootstrap, topic), 0u);

  // Without normalize_schemas the same registry keeps the schema as written, and the records
  // go out (the read back passes).
  options.registry_config.normalize_schemas = false;
  options.registry = real_client(options.registry_config);
  ASSERT_TRUE(options.registry);
  const std::string plain = kafka_it::unique_topic("avro-apicurio-plain");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, plain, 1));
  const auto events = workload("shop");
  produce(bootstrap, plain, make_avro_encoder(options), events);
  DESERIALIZED(records, bootstrap, plain, url);
  expect_workload(records, events);
}

// The same mistake as the test above, caught by `cppcdc preflight` (fresh-user trial of issue
// 18: it passed, and only the run refused): a lookup cannot show it, so preflight warns.
TEST(RealRegistryOnBroker, PreflightWarnsOfNormalizeSchemasWithApicuriosCompatibleApi) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  APICURIO_TEST_URL(url);
  kafka_it::PgCapture cap("kcnorm", bootstrap, "create table t (id int primary key)");
  cap.write_config("codec = \"avro\"\n[sink.codec_options.schema_registry]\nurl = \"" + url +
                   "\"\nnormalize_schemas = true");
  const auto warned = it::run_cli({"preflight", "--config", cap.config()}, 120);
  EXPECT_NE(warned.output.find("normalize_schemas = true with Apicurio"), std::string::npos)
      << warned.output;
  EXPECT_NE(warned.output.find("set normalize_schemas = false"), std::string::npos)
      << warned.output;
  cap.write_config("codec = \"avro\"\n[sink.codec_options.schema_registry]\nurl = \"" + url +
                   "\"");
  const auto plain = it::run_cli({"preflight", "--config", cap.config()}, 120);
  EXPECT_EQ(plain.output.find("normalize_schemas = true with Apicurio"), std::string::npos)
      << plain.output;
}

// auto_register = false: with the subjects missing, preflight and the first record fail
// naming a subject of the topic and the registry holds no such subject afterwards (nothing was
// written); a subject holding another schema fails the same way; once the schemas are
// registered (by another client), the records go out with their ids and read back.
TEST(RealRegistryOnBroker, AutoRegisterFalseOnlyLooksUpInApicurio) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  APICURIO_TEST_URL(url);
  const std::string topic = kafka_it::unique_topic("avro-apicurio-lookup");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  AvroCodecOptions options;
  options.registry_config.url = url;
  options.registry_config.auto_register = false;
  options.registry = real_client(options.registry_config);
  ASSERT_TRUE(options.registry);
  const SubjectSchema subjects[] = {
      {topic + "-value", SchemaType::kAvro, std::string(avro_event_schema())},
      {topic + "-key", SchemaType::kAvro, std::string(avro_key_schema())}};
  auto missing = preflight_schema_registry(*options.registry, options.registry_config, subjects);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().report().find(topic + "-value"), std::string::npos)
      << missing.error().report();
  EXPECT_NE(missing.error().report().find("auto_register"), std::string::npos)
      << missing.error().report();
  {
    const auto error = avro_write_error(bootstrap, topic, options);
    ASSERT_TRUE(error) << "a schema that is not registered is an error";
    const std::string report = error->report();
    // The first subject it needs (the key's, encoded first) is named.
    EXPECT_NE(report.find("subject \"" + topic + "-key\""), std::string::npos) << report;
    EXPECT_NE(report.find("auto_register is false"), std::string::npos) << report;
  }
  EXPECT_FALSE(has_subject(*options.registry, topic + "-value")) << "nothing was registered";
  EXPECT_FALSE(has_subject(*options.registry, topic + "-key")) << "nothing was registered";

  SchemaRegistryConfig writer_config;
  writer_config.url = url;
  auto writer = real_client(writer_config);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->register_schema(topic + "-value", SchemaType::kAvro, R"({"type":"long"})"));
  auto differs = preflight_schema_registry(*options.registry, options.registry_config, subjects);
  ASSERT_FALSE(differs) << "the subject holds another schema";
  EXPECT_NE(differs.error().report().find("subject \"" + topic +
                                          "-value\" exists, but its versions hold another schema"),
            std::string::npos)
      << differs.error().report();

  ASSERT_TRUE(writer->register_schema(topic + "-value", SchemaType::kAvro,
                                      std::string(avro_event_schema())));
  ASSERT_TRUE(
      writer->register_schema(topic + "-key", SchemaType::kAvro, std::string(avro_key_schema())));
  auto registered = preflight_schema_registry(*options.registry, options.registry_config, subjects);
  EXPECT_TRUE(registered) << registered.error().report();
  const std::string ok_topic = topic + "-ok";
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, ok_topic, 1));
  // The subjects of the topic the records go to.
  ASSERT_TRUE(writer->register_schema(ok_topic + "-value", SchemaType::kAvro,
                                      std::string(avro_event_schema())));
  ASSERT_TRUE(writer->register_schema(ok_topic + "-key", SchemaType::kAvro,
                                      std::string(avro_key_schema())));
  const auto events = workload("shop");
  produce(bootstrap, ok_topic, make_avro_encoder(options), events);
  DESERIALIZED(records, bootstrap, ok_topic, url);
  expect_workload(records, events);
  const auto value_id = registry_id(url, ok_topic + "-value", avro_event_schema());
  for (const auto& r : records) EXPECT_EQ(test::as_int(r.value_schema_id), value_id);
}

// record_name and topic_record_name: the subjects the real registry holds afterwards are the
// records' full names (io.cppcdc.Event and the key's), alone or after the topic, and the
// records read back through the ids of those subjects.
TEST(RealRegistryOnBroker, SubjectNameStrategiesNameTheSubjectsApicurioHolds) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  APICURIO_TEST_URL(url);
  const std::string value_record = "io.cppcdc.Event";
  const std::string key_record =
      std::string(boost::json::parse(avro_key_schema()).at("namespace").as_string()) + "." +
      std::string(boost::json::parse(avro_key_schema()).at("name").as_string());
  for (const auto strategy :
       {SubjectNameStrategy::kRecordName, SubjectNameStrategy::kTopicRecordName}) {
    SCOPED_TRACE(std::string(to_string(strategy)));
    const std::string topic = kafka_it::unique_topic("avro-apicurio-strategy");
    ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
    AvroCodecOptions options;
    options.registry_config.url = url;
    options.registry_config.subject_name_strategy = strategy;
    options.registry = real_client(options.registry_config);
    ASSERT_TRUE(options.registry);
    const auto events = workload("shop");
    produce(bootstrap, topic, make_avro_encoder(options), events);
    const std::string prefix =
        strategy == SubjectNameStrategy::kTopicRecordName ? topic + "-" : std::string();
    EXPECT_TRUE(has_subject(*options.registry, prefix + value_record));
    EXPECT_TRUE(has_subject(*options.registry, prefix + key_record));
    EXPECT_FALSE(has_subject(*options.registry, topic + "-value"));
    const auto value_id = registry_id(url, prefix + value_record, avro_event_schema());
    const auto key_id = registry_id(url, prefix + key_record, avro_key_schema());
    DESERIALIZED(records, bootstrap, topic, url);
    expect_workload(records, events);
    for (const auto& r : records) {
      EXPECT_EQ(test::as_int(r.value_schema_id), value_id);
      if (!r.key.is_null()) {
        EXPECT_EQ(test::as_int(r.key_schema_id), key_id);
      }
    }
  }
}
}  // namespace
}  // namespace cppcdc
