// An update that changes a row's primary key, captured from PostgreSQL by the real `cppcdc run`
// into the real broker with codec = "debezium_json", and read back by python3-confluent-kafka
// (kafka_tool.py read): as Debezium's connectors send it, a delete under the old key (and its
// tombstone), then a create (`op` "c", `before` null) under the new key, with Debezium's
// __debezium.newkey / __debezium.oldkey headers. A consumer applying
// `u` as an update of an existing row would otherwise miss the row.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "integration/kafka/kafka_capture.hpp"

namespace cppcdc {
namespace {

TEST(KafkaDebeziumCli, AKeyChangingUpdateIsADeleteUnderTheOldKeyAndACreateUnderTheNewOne) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  // REPLICA IDENTITY DEFAULT: the update's before-image holds the old key columns only.
  kafka_it::PgCapture cap("kdbzkey", bootstrap, "create table t (id int primary key, v text)");
  cap.write_config("codec = \"debezium_json\"\ntombstones_on_delete = true");
  ASSERT_NO_FATAL_FAILURE(cap.start());
  cap.pg().query("insert into t values (1, 'one'), (2, 'two')");
  cap.pg().query("update t set id = id + 100");

  // insert 1, insert 2, then per moved row: delete, tombstone, create.
  std::vector<kafka_it::Record> records;
  ASSERT_TRUE(
      cap.await(8, records, [&](bool&) { return kafka_it::read_topic(bootstrap, cap.topic()); }))
      << records.size() << " records\n"
      << cap.log();
  ASSERT_EQ(records.size(), 8u);

  // The records of each key in offset order (one partition: create_topics makes one).
  std::map<std::string, std::vector<const kafka_it::Record*>> by_key;
  for (const auto& r : records) {
    ASSERT_TRUE(r.key.has_value());
    by_key[*r.key].push_back(&r);
  }
  for (int old_id : {1, 2}) {
    SCOPED_TRACE("row " + std::to_string(old_id));
    const std::string old_key = "{\"id\":" + std::to_string(old_id) + "}";
    const std::string new_key = "{\"id\":" + std::to_string(old_id + 100) + "}";
    ASSERT_EQ(by_key[old_key].size(), 3u) << "create, delete, tombstone";
    const auto created = boost::json::parse(*by_key[old_key][0]->value).as_object();
    EXPECT_EQ(created.at("op").as_string(), "c");
    const auto deleted = boost::json::parse(*by_key[old_key][1]->value).as_object();
    EXPECT_EQ(deleted.at("op").as_string(), "d");
    EXPECT_EQ(deleted.at("before").at("id").as_int64(), old_id);
    EXPECT_TRUE(deleted.at("after").is_null());
    EXPECT_FALSE(by_key[old_key][2]->value.has_value()) << "the delete's tombstone";

    ASSERT_EQ(by_key[new_key].size(), 1u);
    const kafka_it::Record& moved = *by_key[new_key][0];
    ASSERT_TRUE(moved.value.has_value());
    const auto value = boost::json::parse(*moved.value).as_object();
    EXPECT_EQ(value.at("op").as_string(), "c") << *moved.value;
    EXPECT_TRUE(value.at("before").is_null()) << *moved.value;
    EXPECT_EQ(value.at("after").at("id").as_int64(), old_id + 100);
    EXPECT_EQ(value.at("after").at("v").as_string(), old_id == 1 ? "one" : "two");
    EXPECT_EQ(moved.header("op"), std::optional<std::string>("insert"));
    // codec_options name no database: source.db is the one the dsn connects to.
    EXPECT_EQ(value.at("source").at("db").as_string(), cap.database());
    // As Debezium's connectors mark a key change: the delete (and its tombstone) names the
    // new key, the create the old one, each as the record key bytes.
    EXPECT_EQ(by_key[old_key][1]->header("__debezium.newkey"), std::optional<std::string>(new_key));
    EXPECT_EQ(by_key[old_key][2]->header("__debezium.newkey"), std::optional<std::string>(new_key));
    EXPECT_EQ(by_key[old_key][1]->header("__debezium.oldkey"), std::nullopt);
    EXPECT_EQ(moved.header("__debezium.oldkey"), std::optional<std::string>(old_key));
    EXPECT_EQ(moved.header("__debezium.newkey"), std::nullopt);
    // Records that are no part of a key change carry neither.
    EXPECT_EQ(by_key[old_key][0]->header("__debezium.oldkey"), std::nullopt);
    EXPECT_EQ(by_key[old_key][0]->header("__debezium.newkey"), std::nullopt);
    // The delete and the create share the update's source position.
    EXPECT_EQ(by_key[old_key][1]->header("source.offset"), moved.header("source.offset"));
  }
}

}  // namespace
}  // namespace cppcdc
