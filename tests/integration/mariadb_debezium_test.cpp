// `cppcdc run` from MariaDB with codec = "debezium_json": each column of a table of the common
// MariaDB types comes out typed as Debezium's MySQL/MariaDB connectors document it, for a row
// of the snapshot and a row of the binlog (the two paths print values apart), with the field
// schemas naming the semantic types. (No Debezium MySQL or MariaDB connector runs here: the
// expected values follow its documented mapping; docs/codecs.md, "debezium_json".)

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/mariadb_util.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc::it::maria {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

TEST(MariaDbDebeziumJson, EachColumnIsTypedAsDebeziumsMysqlConnectorTypesIt) {
  MARIADB_OR_SKIP();
  Session session;
  const std::string db = database_for_test("dbzjson");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-" + db + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  session.exec("DROP DATABASE IF EXISTS " + db);
  session.exec("CREATE DATABASE " + db);
  session.exec("CREATE TABLE " + db +
               ".types (id int primary key, c_tiny tinyint, c_bool boolean, "
               "c_small smallint unsigned, c_med mediumint, c_int int unsigned, "
               "c_big bigint unsigned, c_float float, c_double double, c_dec decimal(10,2), "
               "c_bit1 bit(1), c_bits bit(10), c_date date, c_time time(3), c_dt datetime, "
               "c_dt6 datetime(6), c_ts timestamp(3) NULL, c_year year, c_vb varbinary(8), "
               "c_blob blob, c_enum enum('a','b'), c_set set('x','y'), c_json json, "
               "c_vc varchar(10), c_uuid uuid, c_inet inet6)");
  const std::string values =
      "-5, true, 65535, -8388608, 4294967295, 18446744073709551615, 1.5, -2.25, -12345678.90, "
      "b'1', b'1010000001', '2024-02-29', '-838:59:59.5', '2024-02-29 13:45:30', "
      "'1969-12-31 23:59:59.999999', '2024-02-29 13:45:30.5', 2024, x'00ff', x'abcd', 'b', "
      "'x,y', '{\"a\": [1, 2.50]}', 'h\xC3\xA9llo', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '::1'";
  session.exec("INSERT INTO " + db + ".types VALUES (1, " + values + ")");
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                                  << *port() << "\nuser = \"root\"\ntables = [\"" << db
                                  << ".*\"]\nsource_id = \"" << db << "\"\n\n[sink]\n"
                                  << "type = \"file\"\npath = \"" << (dir / "events.jsonl").string()
                                  << "\"\ncodec = \"debezium_json\"\n"
                                  << "[sink.codec_options]\nschemas_enable = true\n\n"
                                  << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
                                  << (dir / "state").string() << "\"\n";
  pid_t child = -1;
  start_cppcdc_process(child, dir, "", "", 0);
  const auto lines = [&] {
    std::ifstream in(dir / "events.jsonl");
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return lines().size() >= 1; }, std::chrono::seconds(60)))
      << log_tail(dir / "cppcdc.log");
  session.exec("INSERT INTO " + db + ".types VALUES (2, " + values + ")");
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return lines().size() >= 2; }, std::chrono::seconds(60)))
      << log_tail(dir / "cppcdc.log");
  stop_cppcdc_process(child, SIGTERM);

  const json::value expected = json::parse(R"({
    "c_tiny": -5, "c_bool": 1, "c_small": 65535, "c_med": -8388608, "c_int": 4294967295,
    "c_big": -1, "c_float": 1.5, "c_double": -2.25, "c_dec": "tmn9Lg==", "c_bit1": true,
    "c_bits": "gQI=", "c_date": 19782, "c_time": -3020399500000, "c_dt": 1709214330000,
    "c_dt6": -1, "c_ts": "2024-02-29T13:45:30.5Z", "c_year": 2024, "c_vb": "AP8=",
    "c_blob": "q80=", "c_enum": "b", "c_set": "x,y", "c_json": "{\"a\": [1, 2.50]}",
    "c_vc": "h\u00e9llo", "c_uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "c_inet": "::1"})");
  const auto all = lines();
  ASSERT_EQ(all.size(), 2u);
  const char* ops[] = {"r", "c"};
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(all[i]);
    const json::object record = json::parse(all[i]).as_object();
    const json::object& payload = record.at("payload").as_object();
    EXPECT_EQ(payload.at("op"), ops[i]);
    json::object after = payload.at("after").as_object();
    EXPECT_EQ(after.at("id"), json::value(static_cast<std::int64_t>(i + 1)));
    after.erase("id");
    EXPECT_EQ(json::value(after), expected);
    EXPECT_EQ(payload.at("source").at("connector"), "mariadb");  // the source type's
    // The schema names each semantic type.
    std::map<std::string, json::object> schemas;
    for (const auto& f : record.at("schema").at("fields").as_array()[1].at("fields").as_array()) {
      schemas.emplace(std::string(f.at("field").as_string()), f.as_object());
    }
    EXPECT_EQ(schemas.at("id").at("optional"), false);
    EXPECT_EQ(schemas.at("c_small").at("type"), "int32");
    EXPECT_EQ(schemas.at("c_float").at("type"), "float");
    EXPECT_EQ(schemas.at("c_dec").at("parameters"),
              json::parse(R"({"scale":"2","connect.decimal.precision":"10"})"));
    EXPECT_EQ(schemas.at("c_bits").at("name"), "io.debezium.data.Bits");
    EXPECT_EQ(schemas.at("c_time").at("name"), "io.debezium.time.MicroTime");
    EXPECT_EQ(schemas.at("c_dt").at("name"), "io.debezium.time.Timestamp");
    EXPECT_EQ(schemas.at("c_dt6").at("name"), "io.debezium.time.MicroTimestamp");
    EXPECT_EQ(schemas.at("c_ts").at("name"), "io.debezium.time.ZonedTimestamp");
    EXPECT_EQ(schemas.at("c_year").at("name"), "io.debezium.time.Year");
    EXPECT_EQ(schemas.at("c_enum").at("parameters"), json::parse(R"({"allowed":"a,b"})"));
    EXPECT_EQ(schemas.at("c_set").at("name"), "io.debezium.data.EnumSet");
    EXPECT_EQ(schemas.at("c_json").at("name"), "io.debezium.data.Json");
    EXPECT_EQ(schemas.at("c_vb").at("type"), "bytes");
  }
  session.exec("DROP DATABASE IF EXISTS " + db);
  if (!HasFailure()) fs::remove_all(dir);
}

// source.gtid and transaction.id of a streamed change are its transaction's GTID as the server
// reports it (@@gtid_binlog_pos after the commit, one domain here), on every event of the
// transaction, with the server id the GTID names and the event's binlog file and position;
// source.snapshot marks only the snapshot's first and last rows and each table's first and
// last, even where the last chunk of a table holds more rows.
TEST(MariaDbDebeziumJson, ChangesCarryTheirTransactionsGtidAndTheSnapshotMarksOnlyItsEdges) {
  MARIADB_OR_SKIP();
  Session session;
  const std::string db = database_for_test("dbzgtid");
  const fs::path dir =
      fs::temp_directory_path() / ("cppcdc-" + db + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  session.exec("DROP DATABASE IF EXISTS " + db);
  session.exec("CREATE DATABASE " + db);
  session.exec("CREATE TABLE " + db + ".a (id int primary key, v varchar(10))");
  session.exec("CREATE TABLE " + db + ".b (id int primary key, v varchar(10))");
  session.exec("INSERT INTO " + db + ".a VALUES (1, 'x'), (2, 'x')");
  session.exec("INSERT INTO " + db + ".b VALUES (1, 'y'), (2, 'y'), (3, 'y'), (4, 'y'), (5, 'y')");
  std::ofstream(dir / "cdc.toml") << "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nport = "
                                  << *port() << "\nuser = \"root\"\ntables = [\"" << db
                                  << ".*\"]\nsource_id = \"" << db << "\"\n\n"
                                  << "[source.snapshot]\nchunk_size = 3\n\n[sink]\n"
                                  << "type = \"file\"\npath = \"" << (dir / "events.jsonl").string()
                                  << "\"\ncodec = \"debezium_json\"\n\n"
                                  << "[state.offset]\nbackend = \"local_fs\"\ndir = \""
                                  << (dir / "state").string() << "\"\n";
  pid_t child = -1;
  start_cppcdc_process(child, dir, "", "", 0);
  const auto lines = [&] {
    std::ifstream in(dir / "events.jsonl");
    std::vector<json::object> out;
    for (std::string l; std::getline(in, l);) out.push_back(json::parse(l).as_object());
    return out;
  };
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return lines().size() >= 7; }, std::chrono::seconds(60)))
      << log_tail(dir / "cppcdc.log");
  // One transaction of three events over both tables, then one of a single statement.
  session.exec("BEGIN");
  session.exec("INSERT INTO " + db + ".a VALUES (3, 'z')");
  session.exec("UPDATE " + db + ".b SET v = 'w' WHERE id = 2");
  session.exec("INSERT INTO " + db + ".a VALUES (4, 'z')");
  session.exec("COMMIT");
  const std::string first_gtid = session.value("SELECT @@gtid_binlog_pos");
  session.exec("DELETE FROM " + db + ".b WHERE id = 5");
  const std::string second_gtid = session.value("SELECT @@gtid_binlog_pos");
  const std::string server_id = session.value("SELECT @@server_id");
  const std::string binlog = session.rows("SHOW MASTER STATUS").at(0).at(0).value_or("");
  ASSERT_TRUE(
      cppcdc::test::wait_until([&] { return lines().size() >= 11; }, std::chrono::seconds(60)))
      << log_tail(dir / "cppcdc.log");
  stop_cppcdc_process(child, SIGTERM);
  const auto all = lines();
  ASSERT_EQ(all.size(), 11u);
  ASSERT_NE(first_gtid, second_gtid);
  ASSERT_EQ(std::count(first_gtid.begin(), first_gtid.end(), '-'), 2) << first_gtid;

  // The snapshot: tables one after the other, a's two rows and b's five (chunks of 3, so b's
  // last chunk holds rows 4 and 5 and only row 5 is its last).
  std::vector<std::string> tables;
  std::vector<std::string> marks;
  for (std::size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(json::serialize(all[i]));
    EXPECT_EQ(all[i].at("op"), "r");
    const auto& source = all[i].at("source").as_object();
    tables.emplace_back(source.at("table").as_string());
    marks.emplace_back(source.at("snapshot").as_string());
    EXPECT_TRUE(source.at("gtid").is_null()) << "a snapshot row belongs to no transaction";
    EXPECT_TRUE(all[i].at("transaction").is_null());
  }
  const std::size_t first_rows = tables[0] == "a" ? 2 : 5;
  std::vector<std::string> expected(7, "true");
  expected[0] = "first";
  expected[first_rows - 1] = "last_in_data_collection";
  expected[first_rows] = "first_in_data_collection";
  expected[6] = "last";
  EXPECT_EQ(marks, expected);
  EXPECT_EQ(tables[first_rows - 1], tables[0]);
  EXPECT_NE(tables[first_rows], tables[0]);

  // The changes.
  const char* ops[] = {"c", "u", "c", "d"};
  for (std::size_t i = 7; i < 11; ++i) {
    SCOPED_TRACE(json::serialize(all[i]));
    EXPECT_EQ(all[i].at("op"), ops[i - 7]);
    const auto& source = all[i].at("source").as_object();
    EXPECT_EQ(source.at("snapshot"), "false");
    EXPECT_EQ(source.at("gtid"), json::value(i < 10 ? first_gtid : second_gtid));
    // Debezium's MariaDB connector names the transaction by its GTID.
    EXPECT_EQ(all[i].at("transaction").at("id"), json::value(i < 10 ? first_gtid : second_gtid));
    EXPECT_EQ(all[i].at("transaction").at("total_order"),
              json::value(static_cast<std::int64_t>(i < 10 ? i - 6 : 1)));
    EXPECT_EQ(std::to_string(source.at("server_id").as_int64()), server_id);
    EXPECT_EQ(source.at("file"), json::value(binlog));
    EXPECT_GT(source.at("pos").as_int64(), 4);
  }
  // The events of one transaction are at positions of their own, in order.
  EXPECT_LT(all[7].at("source").at("pos").as_int64(), all[9].at("source").at("pos").as_int64());
  session.exec("DROP DATABASE IF EXISTS " + db);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc::it::maria
