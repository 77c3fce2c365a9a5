// An update that changes a row's primary key, captured from PostgreSQL by the real `cppcdc run`
// into the real broker with codec = "debezium_json", and read back by python3-confluent-kafka
// (kafka_tool.py read): as Debezium's connectors send it, a delete under the old key (and its
// tombstone), then a create (`op` "c", `before` null) under the new key. A consumer applying
// `u` as an update of an existing row would otherwise miss the row.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

TEST(KafkaDebeziumCli, AKeyChangingUpdateIsADeleteUnderTheOldKeyAndACreateUnderTheNewOne) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string db = it::test_database("kdbzkey");
  it::fresh_database(db);
  it::PgSession pg(it::dsn_for(db));
  // REPLICA IDENTITY DEFAULT: the update's before-image holds the old key columns only.
  pg.query("create table t (id int primary key, v text)");
  const std::string tag = kafka_it::unique_topic("kdbzkey");
  const std::string slot = "kdbzkey_" + std::to_string(::getpid());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cppcdc-kdbzkey-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cdc.toml") << "[source]\ndsn = \"" << it::dsn_for(db)
                                  << "\"\ntables = [\"public.t\"]\nslot_name = \"" << slot
                                  << "\"\nsource_name = \"" << tag
                                  << "\"\n\n[sink]\ntype = \"kafka\"\n"
                                  << "bootstrap_servers = \"" << bootstrap
                                  << "\"\ncreate_topics = true\ncodec = \"debezium_json\"\n"
                                  << "tombstones_on_delete = true\n\n"
                                  << "[state.offset]\ndir = \"" << (dir / "state").string()
                                  << "\"\n";
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), slot);
  pg.query("insert into t values (1, 'one'), (2, 'two')");
  pg.query("update t set id = id + 100");

  // insert 1, insert 2, then per moved row: delete, tombstone, create.
  const std::string topic = tag + ".public.t";
  std::vector<kafka_it::Record> records;
  const bool arrived = test::wait_until(
      [&] {
        if (kafka_it::partition_count(bootstrap, topic) <= 0) return false;
        records = kafka_it::read_topic(bootstrap, topic);
        return records.size() >= 8;
      },
      std::chrono::seconds(90));
  it::stop_cppcdc_process(child, SIGTERM);
  it::drop_slots(db);
  ASSERT_TRUE(arrived) << records.size() << " records\n" << it::log_tail(dir / "cppcdc.log");
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
    EXPECT_EQ(value.at("source").at("db").as_string(), db);
    // The delete and the create share the update's source position.
    EXPECT_EQ(by_key[old_key][1]->header("source.offset"), moved.header("source.offset"));
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc
