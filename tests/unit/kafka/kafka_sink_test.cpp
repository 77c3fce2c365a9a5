// The Kafka sink without a broker: topic names, record keys, the producer configuration and
// `[sink] type = "kafka"` in cdc.toml, and what a sink does when no broker answers.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/avro.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/debezium.hpp"
#include "cppcdc/kafka.hpp"
#include "server/config.hpp"
#include "sink/kafka/kafka_conf.hpp"
#include "sink/kafka/record.hpp"
#include "sink/kafka/topic_template.hpp"

namespace cppcdc {
namespace {

using kafka_sink::TopicTemplate;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

Event row_event(Operation op, std::optional<std::string> schema = "public",
                std::string table = "orders") {
  Event e;
  e.op = op;
  e.source.source_name = "shop";
  e.source.offset = "0/16B2E48";
  e.schema = std::move(schema);
  e.table = std::move(table);
  e.primary_key = std::vector<std::string>{"id", "region"};
  Row row{{"region", std::string("eu \"west\""), false},
          {"note", std::string("n"), false},
          {"id", std::string("7"), false}};
  if (op == Operation::kDelete) {
    e.before = BeforeKeyOnly{
        Row{{"id", std::string("7"), false}, {"region", std::string("eu \"west\""), false}}};
  } else {
    e.after = row;
  }
  return e;
}

std::string render(const std::string& text, const Event& e) {
  auto t = TopicTemplate::parse(text);
  EXPECT_TRUE(t) << t.error().report();
  if (!t) return "";
  auto name = t->render(e);
  EXPECT_TRUE(name) << name.error().report();
  return name ? *name : "";
}

TEST(KafkaTopicTemplate, TheDefaultIsSourceNameSchemaAndTable) {
  const KafkaSinkConfig defaults;
  EXPECT_EQ(render(defaults.topic, row_event(Operation::kInsert)), "shop.public.orders");
  EXPECT_EQ(render("cdc-${table}", row_event(Operation::kInsert)), "cdc-orders");
  EXPECT_EQ(render("all.changes", row_event(Operation::kInsert)), "all.changes");
}

TEST(KafkaTopicTemplate, AnAbsentSchemaDropsOneDotNextToIt) {
  const auto e = row_event(Operation::kInsert, std::nullopt, "app__messages");
  EXPECT_EQ(render("${source_name}.${schema}.${table}", e), "shop.app__messages");
  EXPECT_EQ(render("${schema}.${table}", e), "app__messages");
  EXPECT_EQ(render("${table}.${schema}", e), "app__messages");
  EXPECT_EQ(render("x-${schema}-${table}", e), "x--app__messages");
}

TEST(KafkaTopicTemplate, CharactersKafkaRefusesBecomeUnderscores) {
  auto t = TopicTemplate::parse("${schema}.${table}");
  ASSERT_TRUE(t);
  bool sanitized = false;
  auto name = t->render(row_event(Operation::kInsert, "Sales Dept", "Bestellungen/2024 \xc3\xa4"),
                        &sanitized);
  ASSERT_TRUE(name) << name.error().report();
  EXPECT_EQ(*name, "Sales_Dept.Bestellungen_2024___");
  EXPECT_TRUE(sanitized);
  ASSERT_TRUE(t->render(row_event(Operation::kInsert), &sanitized));
  EXPECT_FALSE(sanitized);
}

TEST(KafkaTopicTemplate, UnknownOrUnterminatedPlaceholdersAreRefused) {
  auto unknown = TopicTemplate::parse("${database}.${table}");
  ASSERT_FALSE(unknown);
  EXPECT_CONTAINS(unknown.error().report(), "${database}");
  EXPECT_CONTAINS(unknown.error().report(), "${source_name}, ${schema} and ${table}");
  auto open = TopicTemplate::parse("x.${table");
  ASSERT_FALSE(open);
  EXPECT_CONTAINS(open.error().report(), "no closing '}'");
  EXPECT_FALSE(TopicTemplate::parse(""));
}

TEST(KafkaTopicTemplate, ANameKafkaCannotTakeIsAnErrorNamingTheTable) {
  auto t = TopicTemplate::parse("${table}");
  ASSERT_TRUE(t);
  auto too_long = t->render(row_event(Operation::kInsert, "s", std::string(300, 't')));
  ASSERT_FALSE(too_long);
  EXPECT_CONTAINS(too_long.error().report(), "at most 249");
  auto dots = TopicTemplate::parse("${schema}..");
  ASSERT_TRUE(dots);
  auto dotted = dots->render(row_event(Operation::kInsert, std::nullopt));
  ASSERT_FALSE(dotted);
  EXPECT_CONTAINS(dotted.error().report(), "does not accept");
}

TEST(KafkaRecordKey, PrimaryKeyValuesInKeyOrderAsJson) {
  std::string key;
  ASSERT_TRUE(kafka_sink::write_record_key(row_event(Operation::kInsert), key));
  EXPECT_EQ(key, R"({"id":"7","region":"eu \"west\""})");
  // A delete takes the key from its before-image.
  ASSERT_TRUE(kafka_sink::write_record_key(row_event(Operation::kDelete), key));
  EXPECT_EQ(key, R"({"id":"7","region":"eu \"west\""})");
}

TEST(KafkaRecordKey, NullAndJsonValuesAreWrittenAsTheEnvelopeWritesThem) {
  Event e = row_event(Operation::kUpdate);
  e.primary_key = std::vector<std::string>{"doc", "gone"};
  e.after = Row{{"doc", std::string(R"({"a":[1,2]})"), true}, {"gone", std::nullopt, false}};
  std::string key;
  ASSERT_TRUE(kafka_sink::write_record_key(e, key));
  EXPECT_EQ(key, R"({"doc":{"a":[1,2]},"gone":null})");
}

TEST(KafkaRecordKey, NoKeyWithoutACompleteKey) {
  std::string key = "stale";
  Event keyless = row_event(Operation::kInsert);
  keyless.primary_key.reset();
  EXPECT_FALSE(kafka_sink::write_record_key(keyless, key));
  EXPECT_EQ(key, "");
  Event partial = row_event(Operation::kUpdate);
  partial.primary_key = std::vector<std::string>{"id", "missing"};
  EXPECT_FALSE(kafka_sink::write_record_key(partial, key));
  EXPECT_EQ(key, "");
  Event truncate;
  truncate.op = Operation::kTruncate;
  truncate.table = "orders";
  EXPECT_FALSE(kafka_sink::write_record_key(truncate, key));
  Event unavailable = row_event(Operation::kDelete);
  unavailable.before = BeforeImage();
  EXPECT_FALSE(kafka_sink::write_record_key(unavailable, key));
}

TEST(KafkaRecordKey, AnUpdateThatMovedItsRowGivesTheOldKeyAndAValidDeleteForIt) {
  Event moved = row_event(Operation::kUpdate);
  moved.before = BeforeKeyOnly{
      Row{{"id", std::string("3"), false}, {"region", std::string("eu \"west\""), false}}};
  moved.transaction = TransactionMetadata{41, 2, 1};
  moved.resume_offset = "0/16B2E48";
  moved.gtid = "0-1-41";
  std::string key;
  std::string old_key = "stale";
  ASSERT_TRUE(kafka_sink::write_record_key(moved, key));
  ASSERT_TRUE(kafka_sink::write_previous_record_key(moved, key, old_key));
  EXPECT_EQ(old_key, R"({"id":"3","region":"eu \"west\""})");

  const Event deleted = kafka_sink::deletion_of_previous_key(moved);
  EXPECT_EQ(deleted.op, Operation::kDelete);
  EXPECT_EQ(deleted.before, moved.before);
  EXPECT_FALSE(deleted.after.has_value());
  EXPECT_EQ(deleted.transaction, moved.transaction);
  EXPECT_EQ(deleted.gtid, "0-1-41") << "debezium_json's transaction.id and source.gtid";
  EXPECT_EQ(deleted.source.offset, moved.source.offset);
  EXPECT_EQ(deleted.resume_offset, "") << "the extra delete is not where a restart resumes";
  EXPECT_TRUE(deleted.validate());
  std::string deleted_key;
  ASSERT_TRUE(kafka_sink::write_record_key(deleted, deleted_key));
  EXPECT_EQ(deleted_key, old_key);
}

TEST(KafkaRecordKey, UnderDebeziumJsonTheRowUnderTheNewKeyIsACreateWithoutBefore) {
  Event moved = row_event(Operation::kUpdate);
  moved.before = BeforeKeyOnly{
      Row{{"id", std::string("3"), false}, {"region", std::string("eu \"west\""), false}}};
  moved.transaction = TransactionMetadata{41, 2, 1};
  moved.resume_offset = "0/16B2E48";
  ASSERT_TRUE(kafka_sink::key_moved(moved));

  // Debezium's connectors send delete (old key) + create (new key): the codec says so.
  auto debezium = make_debezium_json_encoder();
  EXPECT_TRUE(debezium->key_change_creates());
  // The other codecs keep the update (with its before-image) as the second record.
  EXPECT_FALSE(make_json_encoder()->key_change_creates());
  EXPECT_FALSE(make_avro_encoder()->key_change_creates());

  const Event created = kafka_sink::creation_under_new_key(moved);
  EXPECT_EQ(created.op, Operation::kInsert);
  EXPECT_TRUE(created.before.is_unavailable());
  EXPECT_EQ(created.after, moved.after);
  EXPECT_EQ(created.transaction, moved.transaction);
  EXPECT_EQ(created.source, moved.source);
  EXPECT_EQ(created.resume_offset, moved.resume_offset) << "it stands where the update stood";
  EXPECT_TRUE(created.validate());

  ByteBuffer key_of_update;
  ByteBuffer key_of_created;
  auto keyed_update = debezium->encode_key(moved, key_of_update);
  auto keyed_created = debezium->encode_key(created, key_of_created);
  ASSERT_TRUE(keyed_update && *keyed_update);
  ASSERT_TRUE(keyed_created && *keyed_created);
  EXPECT_EQ(key_of_created.view(), key_of_update.view()) << "the new key";

  ByteBuffer value;
  ASSERT_TRUE(debezium->encode(created, value));
  EXPECT_CONTAINS(value.view(), R"("before":null)");
  EXPECT_CONTAINS(value.view(), R"("op":"c")");
}

TEST(KafkaRecordKey, NoOldKeyWhenTheKeyStayedOrIsUnknown) {
  std::string key;
  std::string old_key = "stale";
  Event same = row_event(Operation::kUpdate);
  same.before = BeforeFull{*same.after, {}};
  ASSERT_TRUE(kafka_sink::write_record_key(same, key));
  EXPECT_FALSE(kafka_sink::write_previous_record_key(same, key, old_key));
  EXPECT_EQ(old_key, "");
  Event no_before = row_event(Operation::kUpdate);  // REPLICA IDENTITY DEFAULT, key unchanged
  EXPECT_FALSE(kafka_sink::write_previous_record_key(no_before, key, old_key));
  Event partial = row_event(Operation::kUpdate);  // an old image without every key column
  partial.before = BeforeKeyOnly{Row{{"id", std::string("3"), false}}};
  EXPECT_FALSE(kafka_sink::write_previous_record_key(partial, key, old_key));
  EXPECT_EQ(old_key, "");
  Event insert = row_event(Operation::kInsert);
  EXPECT_FALSE(kafka_sink::write_previous_record_key(insert, key, old_key));
  EXPECT_FALSE(kafka_sink::write_previous_record_key(partial, "", old_key));
}

// librdkafka starts its threads with C11 thrd_create, which ThreadSanitizer does not intercept:
// under it, the tests that make a producer skip that part.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

// ---- the producer configuration ----------------------------------------------------------

KafkaSinkConfig minimal() {
  KafkaSinkConfig c;
  c.bootstrap_servers = "127.0.0.1:9092";
  return c;
}

std::string refusal(const KafkaSinkConfig& c, const std::string& setting) {
  auto st = validate(c);
  if (st) return "(accepted)";
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_EQ(st.error().setting(), setting) << st.error().report();
  return st.error().report();
}

TEST(KafkaSinkConfig, TheDefaultsAreAccepted) {
  auto st = validate(minimal());
  EXPECT_TRUE(st) << st.error().report();
  auto conf = kafka_sink::build_conf(minimal());
  ASSERT_TRUE(conf);
  auto get = [&](const char* name) {
    char buf[256];
    std::size_t size = sizeof buf;
    if (rd_kafka_conf_get(conf->get(), name, buf, &size) != RD_KAFKA_CONF_OK)
      return std::string("?");
    return std::string(buf);
  };
  EXPECT_EQ(get("enable.idempotence"), "true");
  EXPECT_EQ(get("acks"), "-1");  // all
  EXPECT_EQ(get("compression.codec"), "none");
  EXPECT_EQ(get("message.timeout.ms"), "120000");
  EXPECT_EQ(get("allow.auto.create.topics"), "false");
  EXPECT_EQ(get("sticky.partitioning.linger.ms"), "0");
}

TEST(KafkaSinkConfig, BadValuesAreRefusedNamingTheSetting) {
  auto c = minimal();
  c.bootstrap_servers.clear();
  EXPECT_CONTAINS(refusal(c, "bootstrap_servers"), "empty");
  c = minimal();
  c.compression = "brotli";
  EXPECT_CONTAINS(refusal(c, "compression"), "\"lz4\"");
  c = minimal();
  c.partitioner = "murmur3";
  EXPECT_CONTAINS(refusal(c, "partitioner"), "murmur2_random");
  c = minimal();
  c.topic = "${db}.${table}";
  EXPECT_CONTAINS(refusal(c, "topic"), "${db}");
  c = minimal();
  c.delivery_timeout_ms = 0;
  EXPECT_CONTAINS(refusal(c, "delivery_timeout_ms"), "from 1");
  c = minimal();
  c.topic_partitions = 0;
  EXPECT_CONTAINS(refusal(c, "topic_partitions"), "at least 1");
}

TEST(KafkaSinkConfig, TransactionalNeedsATransactionalIdAndOnlyItUsesOne) {
  auto c = minimal();
  c.delivery_mode = KafkaDeliveryMode::kTransactional;
  EXPECT_CONTAINS(refusal(c, "transactional_id"), "is required with delivery_mode");
  c.transactional_id = "cppcdc-orders";
  const auto st = validate(c);
  EXPECT_TRUE(st) << st.error().report();
  c = minimal();
  c.transactional_id = "cppcdc-orders";
  EXPECT_CONTAINS(refusal(c, "transactional_id"), "only with delivery_mode = \"transactional\"");
  EXPECT_CONTAINS(refusal(c, "transactional_id"), "set that mode");
  c = minimal();
  c.properties = {{"transactional.id", "x"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.transactional.id"), "set transactional_id instead");
}

// librdkafka refuses to make a transactional producer whose record timeout is over its
// transaction timeout (60 s by default); the default delivery_timeout_ms is 120 s. Making the
// producer needs no broker.
TEST(KafkaSinkConfig, ATransactionalProducerIsMadeWithTheDefaultDeliveryTimeout) {
  auto c = minimal();
  c.delivery_mode = KafkaDeliveryMode::kTransactional;
  c.transactional_id = "cppcdc-orders";
  for (const std::int64_t timeout : {120'000, 30'000, 600'000}) {
    c.delivery_timeout_ms = timeout;
    auto conf = kafka_sink::build_conf(c);
    ASSERT_TRUE(conf) << conf.error().report();
    EXPECT_EQ(kafka_sink::transaction_timeout_ms(c), std::max<std::int64_t>(60'000, timeout));
    if (kThreadSanitizer) continue;  // (see kThreadSanitizer)
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf->release(), err, sizeof err);
    EXPECT_NE(rk, nullptr) << "delivery_timeout_ms " << timeout << ": " << err;
    if (rk != nullptr) rd_kafka_destroy(rk);
  }
  // A transaction timeout set by hand below the record timeout is refused, naming both.
  c.delivery_timeout_ms = 120'000;
  c.properties = {{"transaction.timeout.ms", "90000"}};
  auto refused = kafka_sink::build_conf(c);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().setting(), "delivery_timeout_ms");
  EXPECT_CONTAINS(refused.error().report(), "transaction.timeout.ms (90000 ms)");
  c.properties = {{"transaction.timeout.ms", "180000"}};
  EXPECT_TRUE(kafka_sink::build_conf(c));
  // A value that is not a number is refused as such, under its own name (it was read as 0 ms,
  // and the error blamed delivery_timeout_ms).
  for (const char* bad : {"abc", "90s", "", "-5", "0"}) {
    c.properties = {{"transaction.timeout.ms", bad}};
    auto not_a_number = kafka_sink::build_conf(c);
    ASSERT_FALSE(not_a_number) << bad;
    EXPECT_EQ(not_a_number.error().setting(), "kafka_properties.transaction.timeout.ms") << bad;
    EXPECT_CONTAINS(not_a_number.error().report(), "whole number of milliseconds");
  }
}

// Combinations librdkafka checks only when it makes the producer are refused at load, as run
// would refuse them, naming the property and the remedy (ninth Kafka trial, finding 6).
TEST(KafkaSinkConfig, CombinationsTheProducerRefusesAreRefusedAtLoad) {
  if (kThreadSanitizer) GTEST_SKIP() << "(see kThreadSanitizer)";
  auto c = minimal();
  c.properties = {{"max.in.flight.requests.per.connection", "6"}};
  auto report = refusal(c, "kafka_properties.max.in.flight.requests.per.connection");
  EXPECT_CONTAINS(report, "enable.idempotence");
  EXPECT_CONTAINS(report, "at most 5");
  c.properties = {{"max.in.flight.requests.per.connection", "5"}};
  EXPECT_TRUE(validate(c));
  c.properties = {{"retries", "0"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.retries"), "remove it");
  c.delivery_mode = KafkaDeliveryMode::kTransactional;
  c.transactional_id = "cppcdc-orders";
  EXPECT_CONTAINS(refusal(c, "kafka_properties.retries"), "remove it");
  c.properties = {{"socket.timeout.ms", "120101"}};
  report = refusal(c, "kafka_properties.socket.timeout.ms");
  EXPECT_CONTAINS(report, "transaction.timeout.ms");
  EXPECT_CONTAINS(report, "(120000 ms) + 100 ms");
  c.properties = {{"socket.timeout.ms", "120100"}};
  EXPECT_TRUE(validate(c));
}

// Java producer properties librdkafka does not know name the librdkafka equivalent.
TEST(KafkaSinkConfig, JavaClientPropertiesNameWhatLibrdkafkaTakesInstead) {
  auto c = minimal();
  c.properties = {{"buffer.memory", "33554432"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.buffer.memory"), "queue.buffering.max.kbytes");
  c.properties = {{"max.request.size", "1048576"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.max.request.size"), "message.max.bytes");
  c.properties = {{"key.serializer", "x"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.key.serializer"), "a Java client property");
  c.properties = {{"max.block.ms", "60000"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.max.block.ms"), "no equivalent");
}

TEST(KafkaSinkConfig, PropertiesPassThroughUnlessASettingOwnsThem) {
  auto c = minimal();
  c.properties = {{"security.protocol", "plaintext"}, {"socket.keepalive.enable", "true"}};
  auto st = validate(c);
  EXPECT_TRUE(st) << st.error().report();
  c.properties = {{"compression.type", "zstd"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.compression.type"), "set compression instead");
  c.properties = {{"acks", "1"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.acks"), "the sink sets acks itself");
  c.properties = {{"enable.idempotence", "false"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.enable.idempotence"), "itself");
  c.properties = {{"no.such.property", "1"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.no.such.property"), "librdkafka refuses");
  EXPECT_EQ(refusal(c, "kafka_properties.no.such.property").find("did you mean"),
            std::string::npos);
  // A misspelt property name gets the closest one librdkafka knows.
  c.properties = {{"securty.protocol", "ssl"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.securty.protocol"),
                  "(did you mean security.protocol?)");
  c.properties = {{"sasl.mechanisms.x", "PLAIN"}};
  EXPECT_CONTAINS(refusal(c, "kafka_properties.sasl.mechanisms.x"), "did you mean sasl.mechanism");
  // A refused secret is not echoed.
  c.properties = {{"sasl.password", "hunter2"}, {"sasl.mechanism", "NOPE"}};
  const std::string report = refusal(c, "kafka_properties.sasl.mechanism");
  EXPECT_EQ(report.find("hunter2"), std::string::npos) << report;
}

TEST(KafkaSinkConfig, SecretPropertiesAreRecognised) {
  for (const char* name : {"sasl.password", "ssl.key.password", "ssl.keystore.password",
                           "sasl.oauthbearer.client.secret", "ssl.key.pem",
                           "sasl.oauthbearer.config", "SASL.PASSWORD"}) {
    EXPECT_TRUE(is_secret_kafka_property(name)) << name;
  }
  for (const char* name : {"sasl.username", "security.protocol", "ssl.ca.location"}) {
    EXPECT_FALSE(is_secret_kafka_property(name)) << name;
  }
}

// ---- cdc.toml ----------------------------------------------------------------------------

constexpr const char* kConfig = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[sink]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092,127.0.0.1:9093"
topic = "cdc.${table}"
compression = "lz4"
linger_ms = 20
batch_size = 65536
delivery_timeout_ms = 30000
tombstones_on_delete = true
create_topics = true
topic_partitions = 6
topic_replication_factor = 1

[sink.kafka_properties]
"security.protocol" = "sasl_plaintext"
"sasl.mechanism" = "SCRAM-SHA-256"
"sasl.username" = "cdc"
"sasl.password" = "s3cret-pw"

[state.offset]
dir = "/tmp/state"
)";

std::string config_error(const std::string& text) {
  auto config = server::parse_server_config(text, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

TEST(KafkaSinkPlugin, EveryKeyIsReadAndCheckConfigHidesTheSecrets) {
  auto config = server::parse_server_config(kConfig, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->sink_type, "kafka");
  const std::string text = server::describe_config(*config);
  EXPECT_EQ(text.find("s3cret-pw"), std::string::npos) << text;
  EXPECT_CONTAINS(text, "kafka 127.0.0.1:9092,127.0.0.1:9093");
  EXPECT_CONTAINS(text, "\"cdc.${table}\"");
  EXPECT_CONTAINS(text, "idempotent producer, acks = all, delivery timeout 30000 ms");
  EXPECT_CONTAINS(text, "murmur2_random");
  EXPECT_CONTAINS(text, "lz4");
  EXPECT_CONTAINS(text, "linger 20 ms, batch size 65536 bytes");
  EXPECT_CONTAINS(text, "after every delete");
  EXPECT_CONTAINS(text, "created (partitions: 6, replication factor: 1)");
  EXPECT_CONTAINS(text, "sasl.password = (redacted)");
  EXPECT_CONTAINS(text, "sasl.username = \"cdc\"");
}

TEST(KafkaSinkPlugin, ErrorsNameTheKey) {
  const std::string c = kConfig;
  EXPECT_CONTAINS(config_error(edit(c, "bootstrap_servers =", "bootstrap_server =")),
                  "[sink] bootstrap_servers: required");
  EXPECT_CONTAINS(config_error(edit(c, "compression = \"lz4\"", "compression = \"lz5\"")),
                  "[sink] compression: expected");
  EXPECT_CONTAINS(config_error(edit(c, "linger_ms = 20", "linger_ms = -1")), "[sink] linger_ms");
  EXPECT_CONTAINS(config_error(edit(c, "create_topics = true", "create_topics = false")),
                  "[sink] topic_partitions: applies only to topics the sink creates");
  EXPECT_CONTAINS(config_error(edit(c, "tombstones_on_delete", "tombstones_on_delet")),
                  "[sink] tombstones_on_delet: unknown key (did you mean tombstones_on_delete?)");
  {
    // topic_config without create_topics (and without the sizing keys, refused first).
    std::string no_create = edit(c, "create_topics = true", "create_topics = false");
    no_create = edit(no_create, "topic_partitions = 6", "");
    no_create = edit(no_create, "topic_replication_factor = 1", "");
    EXPECT_CONTAINS(config_error(no_create + "\n[sink.topic_config]\n\"cleanup.policy\" = "
                                             "\"compact\"\n"),
                    "[sink] topic_config: applies only to topics the sink creates");
    EXPECT_CONTAINS(config_error(c + "\n[sink.topic_config]\n\"cleanup.policy\" = [\"compact\"]\n"),
                    "[sink] topic_config: the value for \"cleanup.policy\" must be a string, an "
                    "integer or a boolean");
  }
  EXPECT_CONTAINS(
      config_error(edit(c, "\"sasl.username\" = \"cdc\"", "\"sasl.username\" = 5.5")),
      "must be a string, an integer or a boolean (\"librdkafka property\" = \"value\"), "
      "found a float: write the number as a string");
  EXPECT_CONTAINS(config_error(edit(c, "\"sasl.username\"", "\"linger.ms\"")),
                  "[sink.kafka_properties] \"linger.ms\": set linger_ms instead");
  EXPECT_CONTAINS(config_error(edit(c, "create_topics = true",
                                    "create_topics = true\ndelivery_mode = \"transactional\"")),
                  "[sink] transactional_id: is required");
  EXPECT_CONTAINS(config_error(edit(c, "create_topics = true",
                                    "create_topics = true\ndelivery_mode = \"exactly\"")),
                  "[sink] delivery_mode: expected \"idempotent\" or \"transactional\"");
}

// A typo of a key leaves the meant setting at its default, and what the sink then refuses
// (topic_partitions without create_topics, delivery_mode "transactional" without a
// transactional_id) stems from it: the typo is what the one-line error names.
TEST(KafkaSinkPlugin, AMisspeltKeyIsNamedWithWhatItLikelyMeansInsteadOfWhatItCaused) {
  const std::string c = kConfig;
  const std::string create = config_error(edit(c, "create_topics = true", "create_topic = true"));
  EXPECT_CONTAINS(create,
                  "cdc.toml:14:1: [sink] create_topic: unknown key (did you mean create_topics?)");
  EXPECT_EQ(create.find('\n'), std::string::npos) << create;
  EXPECT_EQ(create.find("topic_partitions"), std::string::npos) << create;

  const std::string txid = config_error(
      edit(c, "create_topics = true",
           "create_topics = true\ndelivery_mode = \"transactional\"\ntransaction_id = \"orders\""));
  EXPECT_CONTAINS(txid,
                  "cdc.toml:16:1: [sink] transaction_id: unknown key (did you mean "
                  "transactional_id?)");
  EXPECT_EQ(txid.find('\n'), std::string::npos) << txid;
  EXPECT_EQ(txid.find("is required"), std::string::npos) << txid;

  // A misspelt required key keeps its own message, which names the look-alike.
  EXPECT_CONTAINS(config_error(edit(c, "bootstrap_servers =", "bootstrap_server =")),
                  "did you mean bootstrap_servers where the file says bootstrap_server "
                  "(cdc.toml:7:1)?");
}

TEST(KafkaSinkPlugin, AMisspeltSinkTypeIsNamedWithTheTypeItLikelyMeans) {
  const std::string text = config_error(edit(kConfig, "type = \"kafka\"", "type = \"kafak\""));
  EXPECT_CONTAINS(text, "cdc.toml:6:8: [sink] type: expected \"file\", ");
  EXPECT_CONTAINS(text, "\"kafka\"");
  EXPECT_CONTAINS(text,
                  " or \"fanout\" (the last hands every event to several [[sinks]] "
                  "entries), found \"kafak\"; did you mean \"kafka\"?");
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  // Far from every type: no suggestion.
  EXPECT_EQ(
      config_error(edit(kConfig, "type = \"kafka\"", "type = \"rabbitmq\"")).find("did you mean"),
      std::string::npos);
}

// ---- effectively_once: what the loader accepts --------------------------------------------

constexpr const char* kExactlyOnce = R"(
delivery_contract = "effectively_once"

[source]
type = "postgres"
dsn = "host=127.0.0.1 dbname=app"
slot_name = "cppcdc_orders"
tables = ["public.orders"]

[sink]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092,127.0.0.1:9093"
delivery_mode = "transactional"
transactional_id = "cppcdc-orders"

[sink.kafka_properties]
"security.protocol" = "plaintext"

[state.offset]
backend = "kafka_topic"
topic = "cppcdc.checkpoints"
)";

TEST(EffectivelyOnceConfig, ATransactionalKafkaSinkWithTheCheckpointOnItsClusterLoads) {
  auto config = server::parse_server_config(kExactlyOnce, "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->delivery_contract, "effectively_once");
  EXPECT_EQ(config->checkpoint_backend, "kafka_topic");
  // bootstrap_servers came from [sink]: the record goes where the sink writes.
  const auto target = config->checkpoint->in_sink("cppcdc_orders");
  ASSERT_TRUE(target);
  EXPECT_EQ(target->backend, "kafka_topic");
  EXPECT_EQ(target->system, "127.0.0.1:9092,127.0.0.1:9093");
  EXPECT_EQ(target->location, "cppcdc.checkpoints");
  EXPECT_EQ(target->key, "cppcdc_orders");
  EXPECT_CONTAINS(config->checkpoint->describe("cppcdc_orders"), "cppcdc.checkpoints");
  // The same brokers in another order and case are the same cluster.
  EXPECT_EQ(config_error(edit(kExactlyOnce, "topic = \"cppcdc.checkpoints\"",
                              "topic = \"cppcdc.checkpoints\"\nbootstrap_servers = "
                              "\" 127.0.0.1:9093, 127.0.0.1:9092\"")),
            "(no error)");
}

// localhost and 127.0.0.1 are one broker: the lists are compared by the addresses they
// resolve to, and a refusal shows those addresses.
TEST(EffectivelyOnceConfig, LocalhostAndItsAddressAreTheSameCluster) {
  const std::string sink_on_localhost =
      edit(kExactlyOnce, "bootstrap_servers = \"127.0.0.1:9092,127.0.0.1:9093\"",
           "bootstrap_servers = \"localhost:9092\"");
  EXPECT_EQ(config_error(edit(sink_on_localhost, "topic = \"cppcdc.checkpoints\"",
                              "topic = \"cppcdc.checkpoints\"\nbootstrap_servers = "
                              "\"127.0.0.1:9092\"")),
            "(no error)");
  // Another port is another broker: refused, saying how each list resolved.
  const std::string report = config_error(edit(sink_on_localhost, "topic = \"cppcdc.checkpoints\"",
                                               "topic = \"cppcdc.checkpoints\"\n"
                                               "bootstrap_servers = \"127.0.0.1:9094\""));
  EXPECT_CONTAINS(report, "share no broker address");
  EXPECT_CONTAINS(report, "localhost:9092 = ");
  EXPECT_CONTAINS(report, "127.0.0.1:9092");
  EXPECT_CONTAINS(report, "127.0.0.1:9094 = 127.0.0.1:9094");
}

TEST(EffectivelyOnceConfig, EveryOtherCombinationIsRefusedNamingWhatToChange) {
  const std::string c = kExactlyOnce;
  // An idempotent producer cannot put the checkpoint in its batch.
  EXPECT_CONTAINS(config_error(edit(c,
                                    "delivery_mode = \"transactional\"\ntransactional_id = "
                                    "\"cppcdc-orders\"",
                                    "delivery_mode = \"idempotent\"")),
                  "[sink] delivery_mode: effectively_once: needs delivery_mode = "
                  "\"transactional\"");
  // A checkpoint outside Kafka is a second durability domain.
  EXPECT_CONTAINS(
      config_error(edit(c, "backend = \"kafka_topic\"\ntopic = \"cppcdc.checkpoints\"",
                        "backend = \"local_fs\"\ndir = \"state\"")),
      "[state.offset] backend: effectively_once: needs the checkpoint in a Kafka topic");
  // Another cluster cannot share the sink's transaction.
  EXPECT_CONTAINS(config_error(edit(c, "topic = \"cppcdc.checkpoints\"",
                                    "topic = \"cppcdc.checkpoints\"\nbootstrap_servers = "
                                    "\"10.0.0.1:9092\"")),
                  "[state.offset] bootstrap_servers: effectively_once: the checkpoint topic is on "
                  "\"10.0.0.1:9092\"");
  // A sink without transactions.
  EXPECT_CONTAINS(config_error(edit(c.substr(0, c.find("[sink]")), "", "") +
                               "[sink]\ntype = \"file\"\npath = \"out.jsonl\"\n"
                               "[state.offset]\nbackend = \"kafka_topic\"\n"
                               "bootstrap_servers = \"127.0.0.1:9092\"\n"),
                  "cannot honour delivery_contract = \"effectively_once\"");
  // A second sink, reached by a route.
  EXPECT_CONTAINS(config_error(c + "\n[[sinks]]\nname = \"audit\"\ntype = \"stdout\"\n"
                                   "[[pipeline.routes]]\ntables = [\"public.audit*\"]\n"
                                   "sink = \"audit\"\n"),
                  "delivery_contract: \"effectively_once\" takes exactly one sink");
  // A route, even to the one sink.
  EXPECT_CONTAINS(config_error(c + "\n[[pipeline.routes]]\ntables = [\"public.x*\"]\n"
                                   "sink = \"default\"\n"),
                  "takes exactly one sink and no routes");
  // Unknown contracts are named.
  EXPECT_CONTAINS(config_error(edit(c, "\"effectively_once\"", "\"exactly_once\"")),
                  "expected \"at_least_once\" or \"effectively_once\"");
}

TEST(EffectivelyOnceConfig, TheCheckpointTopicSettingsAreChecked) {
  const std::string c = kExactlyOnce;
  EXPECT_CONTAINS(config_error(edit(c, "topic = \"cppcdc.checkpoints\"", "topic = \"\"")),
                  "[state.offset] topic: expected a topic name");
  EXPECT_CONTAINS(config_error(edit(c, "topic = \"cppcdc.checkpoints\"",
                                    "topic = \"cppcdc.checkpoints\"\nreplication_factor = 0")),
                  "[state.offset] replication_factor");
  EXPECT_CONTAINS(
      config_error(edit(c, "topic = \"cppcdc.checkpoints\"",
                        "topic = \"cppcdc.checkpoints\"\n"
                        "kafka_properties = { \"isolation.level\" = \"x\" }")),
      "[state.offset.kafka_properties] \"isolation.level\": the checkpoint backend sets");
  EXPECT_CONTAINS(config_error(edit(c, "topic = \"cppcdc.checkpoints\"",
                                    "topic = \"cppcdc.checkpoints\"\ntopik = 1")),
                  "[state.offset] topik: unknown key");
}

// ---- no broker -----------------------------------------------------------------------------

TEST(KafkaSinkWithoutBroker, WriteFailsTransientNamingTheServersAfterTheTimeoutAndStaysFailed) {
  if (kThreadSanitizer) {
    // Seen with g++ 12: the threads have no sanitizer state and crash in its allocator.
    GTEST_SKIP() << "librdkafka starts its threads with C11 thrd_create, which "
                    "ThreadSanitizer does not intercept";
  }
  auto c = minimal();
  c.bootstrap_servers = "127.0.0.1:1";  // nothing listens on port 1
  c.delivery_timeout_ms = 1500;
  c.startup_timeout_ms = 0;  // open does not wait for the brokers
  auto sink = make_kafka_sink(c);
  ASSERT_TRUE(sink) << sink.error().report();
  Event e = row_event(Operation::kInsert);
  e.envelope_version = kEnvelopeVersion;
  const std::vector<Event> batch{e};
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*sink)->write(batch);
  if (st) st = (*sink)->flush();
  ASSERT_FALSE(st) << "a write to an unreachable broker was reported as delivered";
  EXPECT_EQ(st.error().kind(), ErrorKind::kTransient) << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "127.0.0.1:1");
  EXPECT_CONTAINS(st.error().report(), "delivery_timeout_ms");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
  const auto again = (*sink)->flush();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind(), ErrorKind::kTransient);
  EXPECT_FALSE((*sink)->close());
  EXPECT_TRUE((*sink)->close());
  const auto after = (*sink)->write(batch);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().kind(), ErrorKind::kInvalidState);
}

// SIGTERM must not wait out delivery_timeout_ms: a stop request ends the topic look-up of a
// write (here against an address where no broker listens) within about a second, and close()
// then drops the batch instead of waiting for it. With create_topics the look-up comes before
// any CreateTopics request, so nothing is "created" on a cluster that cannot be reached.
TEST(KafkaSinkWithoutBroker, AStopRequestEndsTheTopicLookUpAndCloseDropsTheBatch) {
  if (kThreadSanitizer) GTEST_SKIP() << "librdkafka's C11 threads (see above)";
  std::atomic<bool> stop{false};
  auto c = minimal();
  c.bootstrap_servers = "127.0.0.1:1";
  c.delivery_timeout_ms = 600'000;  // without the stop request the write would wait 10 minutes
  c.create_topics = true;
  c.startup_timeout_ms = 0;
  c.name = "orders-out";
  c.stop = &stop;
  auto sink = make_kafka_sink(c);
  ASSERT_TRUE(sink) << sink.error().report();
  Event e = row_event(Operation::kInsert);
  e.envelope_version = kEnvelopeVersion;
  const std::vector<Event> batch{e};
  std::optional<Status> written;
  std::thread writer([&] { written = (*sink)->write(batch); });
  // The sink says what it waits for (the health verdict shows it) once that lasts a while.
  std::string problem;
  while (problem.find("the metadata of topic") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    problem = (*sink)->current_problem();
  }
  EXPECT_CONTAINS(problem, "kafka sink \"orders-out\": waiting ");
  EXPECT_CONTAINS(problem, "\"shop.public.orders\" from \"127.0.0.1:1\"");
  stop.store(true);
  writer.join();
  ASSERT_TRUE(written.has_value());
  ASSERT_FALSE(*written) << "a write to an unreachable broker was reported as delivered";
  const Error& error = written->error();
  EXPECT_EQ(error.kind(), ErrorKind::kTransient) << error.report();
  EXPECT_CONTAINS(error.report(), "stopping: looking up topic \"shop.public.orders\"");
  EXPECT_CONTAINS(error.report(), "cut short by the stop request");
  EXPECT_EQ(error.report().find("creating topic"), std::string::npos) << error.report();
  EXPECT_TRUE((*sink)->close()) << "a stopped sink's close() drops the unacknowledged batch";
}

// The transactional producer's start (init_transactions) against no broker ends on a stop
// request too, instead of after delivery_timeout_ms.
TEST(KafkaSinkWithoutBroker, AStopRequestEndsInitTransactions) {
  if (kThreadSanitizer) GTEST_SKIP() << "librdkafka's C11 threads (see above)";
  std::atomic<bool> stop{true};
  auto c = minimal();
  c.bootstrap_servers = "127.0.0.1:1";
  c.delivery_timeout_ms = 600'000;
  c.delivery_mode = KafkaDeliveryMode::kTransactional;
  c.transactional_id = "cppcdc-test-stop";
  c.startup_timeout_ms = 0;  // straight to init_transactions
  c.stop = &stop;
  auto sink = make_kafka_sink(c);
  ASSERT_FALSE(sink) << "a transactional producer started without a broker";
  EXPECT_EQ(sink.error().kind(), ErrorKind::kTransient) << sink.error().report();
  EXPECT_CONTAINS(sink.error().report(), "stopping: initializing the transactional producer");
}

// A bootstrap_servers no broker answers (a wrong port) is reported when the sink opens, naming
// it and the remedy, instead of at the first batch's delivery timeout after the source has
// started reading (a trial run took 20 minutes of 120-second attempts to give up).
TEST(KafkaSinkWithoutBroker, AnAddressNoBrokerAnswersFailsTheOpenNamingIt) {
  if (kThreadSanitizer) GTEST_SKIP() << "librdkafka's C11 threads (see above)";
  auto c = minimal();
  c.bootstrap_servers = "127.0.0.1:1";
  c.startup_timeout_ms = 1500;
  const auto t0 = std::chrono::steady_clock::now();
  auto sink = make_kafka_sink(c);
  ASSERT_FALSE(sink) << "a sink opened though no broker answered";
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
  EXPECT_EQ(sink.error().kind(), ErrorKind::kTransient) << sink.error().report();
  EXPECT_CONTAINS(sink.error().report(), "no broker of bootstrap_servers \"127.0.0.1:1\" answered");
  EXPECT_CONTAINS(sink.error().report(), "within 1500 ms");
  EXPECT_CONTAINS(sink.error().report(), "startup_timeout_ms");
  EXPECT_EQ(sink.error().setting(), "bootstrap_servers");
  // A stop request ends that wait at once.
  std::atomic<bool> stop{true};
  c.startup_timeout_ms = 600'000;
  c.stop = &stop;
  auto stopped = make_kafka_sink(c);
  ASSERT_FALSE(stopped);
  EXPECT_CONTAINS(stopped.error().report(),
                  "stopping: waiting for a first answer from the brokers");
}

// The kafka_topic checkpoint backend's waits on brokers end on a stop request too (its
// timeout_ms would otherwise hold up a stop at the start for ten minutes here).
TEST(KafkaTopicCheckpointWithoutBroker, AStopRequestEndsTheTopicLookUpOfOpen) {
  if (kThreadSanitizer) GTEST_SKIP() << "librdkafka's C11 threads (see above)";
  std::atomic<bool> stop{true};
  KafkaTopicCheckpointConfig c;
  c.bootstrap_servers = "127.0.0.1:1";
  c.timeout_ms = 600'000;
  c.stop = &stop;
  auto opened = open_kafka_topic_checkpoint(c, "stop-test");
  ASSERT_FALSE(opened) << "a checkpoint opened without a broker";
  EXPECT_EQ(opened.error().kind(), ErrorKind::kTransient) << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "stopping: looking up the checkpoint topic");
  EXPECT_CONTAINS(opened.error().report(), "cut short by the stop request");
}

}  // namespace
}  // namespace cppcdc
