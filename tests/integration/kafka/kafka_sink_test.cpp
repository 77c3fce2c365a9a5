// The Kafka sink against a real broker, read back by an independent consumer (kafka_tool.py on
// confluent-kafka) and by Kafka's own Java tools: keys, values, headers, tombstones, where keyed
// and keyless records land, topic creation, and the errors a refusing broker causes.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_util.hpp"

namespace cppcdc {
namespace {

using kafka_it::Record;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

Event change(Operation op, const std::string& source_name, const std::string& table, int id,
             const std::string& note, std::size_t filler = 0) {
  EventBuilder b(table, op);
  b.schema("public")
      .source(SourceMetadata{source_name, "0/" + std::to_string(0x2000 + id), 1700000000000 + id})
      .ts(1700000000500 + id)
      .primary_key({"id", "region"})
      .transaction(TransactionMetadata{static_cast<std::uint64_t>(900 + id), 1, 0});
  Row row{{"id", std::to_string(id), false},
          {"region", std::string("eu"), false},
          {"note", note + std::string(filler, 'x'), false}};
  if (op == Operation::kDelete) {
    b.before(BeforeKeyOnly{
        Row{{"id", std::to_string(id), false}, {"region", std::string("eu"), false}}});
  } else {
    b.after(row);
  }
  return b.build();
}

Event keyless_insert(const std::string& source_name, const std::string& table, int i) {
  EventBuilder b(table, Operation::kInsert);
  b.schema("public")
      .source(SourceMetadata{source_name, "0/" + std::to_string(0x9000 + i), 1700000000000})
      .after(Row{{"line", "log line " + std::to_string(i), false}});
  return b.build();
}

std::unique_ptr<Sink> open_sink(KafkaSinkConfig c) {
  auto sink = make_kafka_sink(std::move(c));
  EXPECT_TRUE(sink) << sink.error().report();
  return sink ? std::move(*sink) : nullptr;
}

TEST(KafkaSinkOnBroker, KeysValuesAndHeadersAreWhatAnIndependentConsumerReads) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("src");
  const std::string orders = source + ".public.orders";
  const std::string logs = source + ".public.logs";
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, orders, 3));
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, logs, 3));
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;  // the default topic template
  c.tombstones_on_delete = true;
  c.compression = "lz4";
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  const std::vector<Event> batch = {
      change(Operation::kInsert, source, "orders", 1, "caf\xc3\xa9 \"q\""),
      change(Operation::kUpdate, source, "orders", 1, "second"),
      change(Operation::kInsert, source, "orders", 2, "two"),
      keyless_insert(source, "logs", 1),
      change(Operation::kDelete, source, "orders", 1, ""),
  };
  ASSERT_TRUE(sink->write(batch));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  ASSERT_TRUE(sink->close());

  const auto records = kafka_it::read_topic(bootstrap, orders);
  // Four events and one tombstone. Records of one key share a partition and keep their order.
  ASSERT_EQ(records.size(), 5u);
  std::map<std::string, std::vector<Record>> by_key;
  for (const auto& r : records) by_key[r.key.value_or("(none)")].push_back(r);
  ASSERT_EQ(by_key.size(), 2u);
  const auto& one = by_key[R"({"id":"1","region":"eu"})"];
  ASSERT_EQ(one.size(), 4u);
  const std::vector<std::string> ops = {"insert", "update", "delete", "delete"};
  const std::vector<const Event*> events = {&batch[0], &batch[1], &batch[4], &batch[4]};
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].partition, one[0].partition);
    EXPECT_EQ(one[i].header("op"), ops[i]);
    EXPECT_EQ(one[i].header("source.offset"), events[i]->source.offset);
    EXPECT_EQ(one[i].header("envelope_version"), "1");
    if (i < 3) {
      EXPECT_EQ(one[i].value, events[i]->to_json());
    } else {
      EXPECT_FALSE(one[i].value.has_value()) << "the tombstone after the delete has a value";
    }
  }
  const auto& two = by_key[R"({"id":"2","region":"eu"})"];
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].value, batch[2].to_json());

  const auto log_records = kafka_it::read_topic(bootstrap, logs);
  ASSERT_EQ(log_records.size(), 1u);
  EXPECT_FALSE(log_records[0].key.has_value()) << "a keyless event got a key";
  EXPECT_EQ(log_records[0].value, batch[3].to_json());
  EXPECT_EQ(log_records[0].header("op"), "insert");
}

// An update that moves its row to another key (pgoutput sends the old key columns then): the
// old key gets a delete and, with tombstones_on_delete, a tombstone, so a compacted topic
// forgets the row there; the update itself goes under the new key. An update whose key stayed
// (a full before-image with the same key) sends nothing extra.
TEST(KafkaSinkOnBroker, AnUpdateThatChangesTheKeyDeletesTheRowUnderItsOldKey) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("rekey");
  const std::string orders = source + ".public.orders";
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, orders, 3));
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.tombstones_on_delete = true;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);

  EventBuilder moved("orders", Operation::kUpdate);
  moved.schema("public")
      .source(SourceMetadata{source, "0/3000", 1700000000000})
      .primary_key({"id", "region"})
      .transaction(TransactionMetadata{77, 1, 0})
      .before(
          BeforeKeyOnly{Row{{"id", std::string("1"), false}, {"region", std::string("eu"), false}}})
      .after(Row{{"id", std::string("5"), false},
                 {"region", std::string("eu"), false},
                 {"note", std::string("moved"), false}});
  EventBuilder stayed("orders", Operation::kUpdate);
  stayed.schema("public")
      .source(SourceMetadata{source, "0/3100", 1700000000001})
      .primary_key({"id", "region"})
      .before(BeforeFull{Row{{"id", std::string("2"), false},
                             {"region", std::string("eu"), false},
                             {"note", std::string("old"), false}},
                         {}})
      .after(Row{{"id", std::string("2"), false},
                 {"region", std::string("eu"), false},
                 {"note", std::string("new"), false}});
  const std::vector<Event> batch = {
      change(Operation::kInsert, source, "orders", 1, "first"), moved.build(),
      change(Operation::kInsert, source, "orders", 2, "old"), stayed.build()};
  ASSERT_TRUE(sink->write(batch));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  ASSERT_TRUE(sink->close());

  const auto records = kafka_it::read_topic(bootstrap, orders);
  std::map<std::string, std::vector<Record>> by_key;
  for (const auto& r : records) by_key[r.key.value_or("(none)")].push_back(r);
  ASSERT_EQ(by_key.size(), 3u) << "keys: old, new, and the unmoved row";
  const auto& old_key = by_key[R"({"id":"1","region":"eu"})"];
  ASSERT_EQ(old_key.size(), 3u) << "insert, delete, tombstone under the old key";
  EXPECT_EQ(old_key[0].header("op"), "insert");
  EXPECT_EQ(old_key[1].header("op"), "delete");
  EXPECT_EQ(old_key[1].header("source.offset"), "0/3000");
  ASSERT_TRUE(old_key[1].value.has_value());
  auto deleted = Event::from_json(*old_key[1].value);
  ASSERT_TRUE(deleted) << deleted.error().report();
  EXPECT_EQ(deleted->op, Operation::kDelete);
  EXPECT_EQ(deleted->before, batch[1].before);
  EXPECT_FALSE(deleted->after.has_value());
  ASSERT_TRUE(deleted->transaction.has_value());
  EXPECT_EQ(deleted->transaction->tx_id, 77u);
  EXPECT_TRUE(deleted->validate()) << "the delete sent for the old key is a valid event";
  EXPECT_FALSE(old_key[2].value.has_value()) << "no tombstone after the delete of the old key";
  EXPECT_EQ(old_key[2].header("op"), "delete");

  const auto& new_key = by_key[R"({"id":"5","region":"eu"})"];
  ASSERT_EQ(new_key.size(), 1u);
  EXPECT_EQ(new_key[0].header("op"), "update");
  EXPECT_EQ(new_key[0].value, batch[1].to_json());

  const auto& unmoved = by_key[R"({"id":"2","region":"eu"})"];
  ASSERT_EQ(unmoved.size(), 2u) << "an update that kept its key sent a delete";
  EXPECT_EQ(unmoved[1].header("op"), "update");
}

TEST(KafkaSinkOnBroker, KeyedRecordsLandWhereJavasPartitionerPutsThemAndKeylessOnesSpread) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  constexpr int kPartitions = 6;
  constexpr int kKeys = 300;
  const std::string ours = kafka_it::unique_topic("murmur-cppcdc");
  const std::string java = kafka_it::unique_topic("murmur-java");
  const std::string spread = kafka_it::unique_topic("keyless");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, ours, kPartitions));
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, java, kPartitions));
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, spread, kPartitions));

  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = ours;  // partitioner: murmur2_random, the default
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  std::vector<Event> batch;
  for (int i = 0; i < kKeys; ++i) batch.push_back(change(Operation::kInsert, "s", "t", i, "n"));
  ASSERT_TRUE(sink->write(batch));
  ASSERT_TRUE(sink->flush());
  ASSERT_TRUE(sink->close());

  // The same keys through Kafka's Java console producer (its default partitioner: murmur2).
  const std::string input = std::string(::testing::TempDir()) + "/murmur-keys.txt";
  {
    std::ofstream out(input);
    for (int i = 0; i < kKeys; ++i) {
      out << R"({"id":")" << i << R"(","region":"eu"})" << '\t' << "v" << i << '\n';
    }
  }
  const std::string cmd =
      std::string(CPPCDC_SOURCE_DIR) +
      "/scripts/kafka.sh run console-producer --bootstrap-server " + bootstrap + " --topic " +
      java + " --property parse.key=true --property key.separator=$'\\t' < " + input + " 2>&1";
  const auto produced = kafka_it::run_command("bash -c \"" + cmd + "\"");
  ASSERT_EQ(produced.code, 0) << produced.output;

  std::map<std::string, int> cppcdc_partition;
  for (const auto& r : kafka_it::read_topic(bootstrap, ours))
    cppcdc_partition[*r.key] = r.partition;
  std::map<std::string, int> java_partition;
  for (const auto& r : kafka_it::read_topic(bootstrap, java)) java_partition[*r.key] = r.partition;
  ASSERT_EQ(cppcdc_partition.size(), static_cast<std::size_t>(kKeys));
  ASSERT_EQ(java_partition.size(), static_cast<std::size_t>(kKeys));
  int differ = 0;
  std::set<int> used;
  for (const auto& [key, partition] : cppcdc_partition) {
    used.insert(partition);
    if (java_partition[key] != partition) {
      if (differ++ < 5)
        ADD_FAILURE() << key << ": cppcdc " << partition << ", Java " << java_partition[key];
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(used.size(), static_cast<std::size_t>(kPartitions));

  // Keyless records: no key, spread over the partitions rather than piled onto one.
  c.topic = spread;
  auto keyless = open_sink(c);
  ASSERT_NE(keyless, nullptr);
  std::vector<Event> logs;
  for (int i = 0; i < 200; ++i) logs.push_back(keyless_insert("s", "logs", i));
  ASSERT_TRUE(keyless->write(logs));
  ASSERT_TRUE(keyless->flush());
  ASSERT_TRUE(keyless->close());
  std::map<int, int> per_partition;
  for (const auto& r : kafka_it::read_topic(bootstrap, spread)) {
    EXPECT_FALSE(r.key.has_value());
    ++per_partition[r.partition];
  }
  EXPECT_GE(per_partition.size(), 4u) << "200 keyless records used only " << per_partition.size()
                                      << " of " << kPartitions << " partitions";
}

TEST(KafkaSinkOnBroker, AMissingTopicIsAConfigurationErrorNamingItAndTheRemedy) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string topic = kafka_it::unique_topic("missing");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = topic;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  const std::vector<Event> batch = {change(Operation::kInsert, "s", "t", 1, "n")};
  Status st = sink->write(batch);
  if (st) st = sink->flush();
  ASSERT_FALSE(st) << "a record for a missing topic was acknowledged";
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "\"" + topic + "\"");
  EXPECT_CONTAINS(st.error().report(), "does not exist");
  EXPECT_CONTAINS(st.error().report(), "create_topics = true");
  (void)sink->close();
  // The broker may auto-create topics, but the sink did not let it.
  EXPECT_EQ(kafka_it::partition_count(bootstrap, topic), -1);
}

TEST(KafkaSinkOnBroker, CreateTopicsMakesAMissingTopicWithTheGivenPartitions) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("created");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.topic_partitions = 4;
  c.topic_replication_factor = 1;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  const std::vector<Event> batch = {change(Operation::kInsert, source, "t", 1, "n"),
                                    change(Operation::kInsert, source, "u", 2, "m")};
  ASSERT_TRUE(sink->write(batch));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  ASSERT_TRUE(sink->close());
  EXPECT_EQ(kafka_it::partition_count(bootstrap, source + ".public.t"), 4);
  EXPECT_EQ(kafka_it::partition_count(bootstrap, source + ".public.u"), 4);
  EXPECT_EQ(kafka_it::read_topic(bootstrap, source + ".public.t").size(), 1u);
  // A second sink finds them existing.
  auto again = open_sink(c);
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->write(batch));
  ASSERT_TRUE(again->flush());
  ASSERT_TRUE(again->close());
  EXPECT_EQ(kafka_it::read_topic(bootstrap, source + ".public.u").size(), 2u);
}

// Found by a fresh-user trial: tables "a b" and a_b both became topic ...a_b and their rows,
// under the same keys, were mixed silently. A deliberately shared topic (a template without
// ${table}) stays allowed.
TEST(KafkaSinkOnBroker, TwoTablesThatMeetInOneTopicOnlyBySanitizingAreRefused) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("clash");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.topic_replication_factor = 1;
  {
    auto sink = open_sink(c);
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(std::vector<Event>{change(Operation::kInsert, source, "a_b", 1, "n")}));
    auto clash = sink->write(std::vector<Event>{change(Operation::kInsert, source, "a b", 1, "m")});
    ASSERT_FALSE(clash) << "two tables were mixed in one topic";
    EXPECT_EQ(clash.error().kind(), ErrorKind::kConfiguration);
    EXPECT_CONTAINS(clash.error().report(), "public.a b");
    EXPECT_CONTAINS(clash.error().report(), "public.a_b");
    EXPECT_CONTAINS(clash.error().report(), "topic");
    (void)sink->close();
  }
  c.topic = source + ".shared";
  auto shared = open_sink(c);
  ASSERT_NE(shared, nullptr);
  ASSERT_TRUE(shared->write(std::vector<Event>{change(Operation::kInsert, source, "a_b", 1, "n"),
                                               change(Operation::kInsert, source, "a b", 2, "m")}));
  ASSERT_TRUE(shared->flush());
  ASSERT_TRUE(shared->close());
  EXPECT_EQ(kafka_it::read_topic(bootstrap, source + ".shared").size(), 2u);
}

// topic_config reaches the topics the sink creates (read back by confluent-kafka's admin
// client), so that a compacted topic needs no step outside cppcdc.
TEST(KafkaSinkOnBroker, CreateTopicsGivesTheTopicConfigToEveryTopicItCreates) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("configured");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.topic_config = {{"cleanup.policy", "compact"}, {"min.compaction.lag.ms", "60000"}};
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(std::vector<Event>{change(Operation::kInsert, source, "t", 1, "n")}));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  ASSERT_TRUE(sink->close());
  const std::string topic = source + ".public.t";
  const auto policy = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " config " +
                                            topic + " cleanup.policy");
  EXPECT_EQ(policy.code, 0);
  EXPECT_EQ(policy.output, "compact\n");
  const auto lag = kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " config " + topic +
                                         " min.compaction.lag.ms");
  EXPECT_EQ(lag.output, "60000\n");
}

// A compacted topic refuses a record without a key (INVALID_RECORD): the error says why (a
// keyless table) and what to do, as a configuration error, not a bare broker refusal.
TEST(KafkaSinkOnBroker, AKeylessRecordForACompactedTopicIsAConfigurationErrorSayingWhy) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("compactkeyless");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.topic_config = {{"cleanup.policy", "compact"}};
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  auto st = sink->write(std::vector<Event>{keyless_insert(source, "logs", 1)});
  if (st) st = sink->flush();
  ASSERT_FALSE(st) << "a compacted topic took a keyless record";
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "INVALID_RECORD");
  EXPECT_CONTAINS(st.error().report(), "it has no key (its table has no primary key)");
  EXPECT_CONTAINS(st.error().report(), "route it to a topic that is not compacted");
  (void)sink->close();
}

TEST(KafkaSinkOnBroker, ATopicConfigTheBrokerRefusesIsAConfigurationErrorNamingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("badconfig");
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.topic_config = {{"cleanup.policy", "sometimes"}};
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  auto st = sink->write(std::vector<Event>{change(Operation::kInsert, source, "t", 1, "n")});
  if (st) st = sink->flush();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_EQ(st.error().setting(), "topic_config.cleanup.policy") << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "sometimes");
  (void)sink->close();
  EXPECT_EQ(kafka_it::partition_count(bootstrap, source + ".public.t"), -1);
}

// A topic deleted under a running sink: with create_topics the failed batch is retryable, and
// the retry (after recover()) creates the topic again and delivers.
TEST(KafkaSinkOnBroker, ATopicDeletedWhileRunningIsCreatedAgainByTheRetry) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string source = kafka_it::unique_topic("deleted");
  const std::string topic = source + ".public.t";
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.create_topics = true;
  c.delivery_timeout_ms = 5'000;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(std::vector<Event>{change(Operation::kInsert, source, "t", 1, "a")}));
  ASSERT_TRUE(sink->flush());
  const auto deleted =
      kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " delete " + topic);
  ASSERT_EQ(deleted.code, 0) << deleted.output;
  const std::vector<Event> next = {change(Operation::kInsert, source, "t", 2, "b")};
  bool delivered = false;
  for (int attempt = 0; attempt < 5 && !delivered; ++attempt) {
    auto st = sink->write(next);
    if (st) st = sink->flush();
    if (st) {
      delivered = true;
      break;
    }
    ASSERT_TRUE(st.error().retryable()) << st.error().report();
    const auto recovered = sink->recover();
    ASSERT_TRUE(recovered) << recovered.error().report();
  }
  ASSERT_TRUE(delivered);
  ASSERT_TRUE(sink->close());
  const auto records = kafka_it::read_topic(bootstrap, topic);
  ASSERT_FALSE(records.empty());
  EXPECT_CONTAINS(*records.back().value, "\"b\"");
}

TEST(KafkaSinkOnBroker, ARecordLargerThanTheTopicTakesIsATerminalErrorNamingTopicAndRemedy) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string topic = kafka_it::unique_topic("small");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1, {"max.message.bytes=2000"}));
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = topic;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  const std::vector<Event> batch = {change(Operation::kInsert, "s", "t", 1, "small"),
                                    change(Operation::kInsert, "s", "t", 2, "big", 50'000)};
  Status st = sink->write(batch);
  if (st) st = sink->flush();
  ASSERT_FALSE(st) << "a record larger than the topic's max.message.bytes was acknowledged";
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal) << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "\"" + topic + "\"");
  EXPECT_CONTAINS(st.error().report(), "max.message.bytes");
  EXPECT_CONTAINS(st.error().report(), "[runtime] max_event_bytes");
  // Nothing after it is acknowledged: the sink stays failed.
  EXPECT_FALSE(sink->flush());
  (void)sink->close();
}

// The test broker enforces ACLs but allows what no ACL covers (scripts/kafka.sh); clients
// connect as User:ANONYMOUS. Once a topic has an ACL, only what its ACLs allow is allowed.
bool acl(const std::string& bootstrap, const std::string& permission, const std::string& operation,
         const std::string& topic) {
  const auto o = kafka_it::run_command(
      std::string(CPPCDC_SOURCE_DIR) + "/scripts/kafka.sh run acls --bootstrap-server " +
      bootstrap + " --add --" + permission + "-principal User:ANONYMOUS --operation " + operation +
      " --topic " + topic + " 2>&1");
  EXPECT_EQ(o.code, 0) << o.output;
  return o.code == 0;
}

TEST(KafkaSinkOnBroker, NotAuthorizedForTheTopicIsAConfigurationErrorNamingItAndTheRemedy) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string no_write = kafka_it::unique_topic("no-write");
  const std::string hidden = kafka_it::unique_topic("hidden");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, no_write, 1));
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, hidden, 1));
  ASSERT_TRUE(acl(bootstrap, "allow", "All", no_write));
  ASSERT_TRUE(acl(bootstrap, "deny", "Write", no_write));
  ASSERT_TRUE(acl(bootstrap, "deny", "All", hidden));
  const std::vector<Event> batch = {change(Operation::kInsert, "s", "t", 1, "n")};
  // no_write can be seen but not written: the broker refuses the records. hidden cannot even
  // be seen: the metadata look-up before the first record says so.
  for (const std::string& topic : {no_write, hidden}) {
    KafkaSinkConfig c;
    c.bootstrap_servers = bootstrap;
    c.topic = topic;
    auto sink = open_sink(c);
    ASSERT_NE(sink, nullptr);
    Status st = sink->write(batch);
    if (st) st = sink->flush();
    ASSERT_FALSE(st) << "a record the principal may not write was acknowledged (" << topic << ")";
    EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
    EXPECT_CONTAINS(st.error().report(), "\"" + topic + "\"");
    EXPECT_CONTAINS(st.error().report(), "not authorized");
    EXPECT_CONTAINS(st.error().report(), "WRITE");
    EXPECT_CONTAINS(st.error().report(),
                    topic == hidden ? "not authorized to access topic" : "was refused");
    (void)sink->close();
  }
  EXPECT_TRUE(kafka_it::read_topic(bootstrap, no_write).empty());
}

TEST(KafkaSinkOnBroker, ARecordLargerThanTheProducerTakesIsRefusedBeforeItIsSent) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string topic = kafka_it::unique_topic("huge");
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
  KafkaSinkConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = topic;
  auto sink = open_sink(c);
  ASSERT_NE(sink, nullptr);
  // Over librdkafka's message.max.bytes (1,000,000 by default).
  const std::vector<Event> batch = {change(Operation::kInsert, "s", "t", 1, "huge", 1'200'000)};
  const Status st = sink->write(batch);
  ASSERT_FALSE(st) << "a record over message.max.bytes was accepted";
  EXPECT_EQ(st.error().kind(), ErrorKind::kTerminal) << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "public.t at source offset 0/8193");
  EXPECT_CONTAINS(st.error().report(), "message.max.bytes");
  EXPECT_FALSE(sink->flush());
  (void)sink->close();
  EXPECT_TRUE(kafka_it::read_topic(bootstrap, topic).empty());
}

}  // namespace
}  // namespace cppcdc
