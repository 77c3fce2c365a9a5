// The debezium_json codec's typed values (codec_options typed, the default): checked against
// what Debezium 3.6.1's PostgreSQL connector wrote for the same rows
// (tests/golden/debezium/postgres_types.json, captured by DebeziumOnBroker.* in
// tests/integration/kafka), type by type and option by option, read back by the decoder, and
// for MySQL / MariaDB column types against Debezium's documented mapping.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codec/debezium/typed.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/debezium.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Columns whose value or schema differs from Debezium's, with the reason in
// tests/integration/kafka/debezium_compare.py (KNOWN) and docs/codecs.md (Limits).
const std::set<std::string> kKnownDifferences = {"c_name", "c_mood", "c_point"};

const json::value& golden() {
  static const json::value g = [] {
    std::ifstream in(fs::path(CPPCDC_GOLDEN_DIR) / "debezium" / "postgres_types.json");
    std::stringstream s;
    s << in.rdbuf();
    return json::parse(s.str());
  }();
  return g;
}

RowShapePtr golden_shape() {
  std::vector<ColumnShape> columns;
  for (const auto& c : golden().at("columns").as_array()) {
    ColumnShape s;
    s.name = std::string(c.at("name").as_string());
    s.data_type = std::string(c.at("data_type").as_string());
    s.nullable = c.at("nullable").as_bool();
    s.type_oid = static_cast<std::uint32_t>(c.at("type_oid").to_number<std::int64_t>());
    s.type_modifier = static_cast<std::int32_t>(c.at("type_modifier").to_number<std::int64_t>());
    s.is_json = s.type_oid == 114 || s.type_oid == 3802;
    s.primary_key = s.name == "id";
    columns.push_back(std::move(s));
  }
  return std::make_shared<const RowShape>("public", "dbz_types", std::move(columns),
                                          std::vector<std::string>{"id"});
}

/// cppcdc's envelopes of the golden changes (its json codec's records), with the shape.
std::vector<Event> golden_events() {
  std::vector<Event> out;
  auto decoder = make_json_decoder();
  const RowShapePtr shape = golden_shape();
  for (const auto& text : golden().at("envelopes").as_array()) {
    auto e = decoder->decode(std::string(text.as_string()));
    EXPECT_TRUE(e) << e.error().report();
    if (!e) continue;
    e->shape = shape;
    e->primary_key = std::vector<std::string>{"id"};
    out.push_back(std::move(*e));
  }
  return out;
}

DebeziumJsonOptions options_named(const std::string& name) {
  DebeziumJsonOptions o;
  o.schemas_enable = true;
  if (name.find("decimal_string") != std::string::npos) o.decimal_handling_mode = "string";
  if (name.find("decimal_double") != std::string::npos) o.decimal_handling_mode = "double";
  if (name.find("time_connect") != std::string::npos) o.time_precision_mode = "connect";
  if (name.find("time_adaptive_time_microseconds") != std::string::npos)
    o.time_precision_mode = "adaptive_time_microseconds";
  if (name.find("binary_hex") != std::string::npos) o.binary_handling_mode = "hex";
  if (name.find("binary_base64") != std::string::npos) o.binary_handling_mode = "base64";
  return o;
}

std::map<std::string, json::object> field_schemas(const json::object& value_schema,
                                                  const char* field) {
  std::map<std::string, json::object> out;
  for (const auto& f : value_schema.at("fields").as_array()) {
    if (f.at("field").as_string() != field) continue;
    for (const auto& c : f.at("fields").as_array()) {
      json::object o = c.as_object();
      o.erase("default");  // Debezium declares column defaults; a shape does not have them
      out.emplace(std::string(c.at("field").as_string()), std::move(o));
    }
  }
  return out;
}

std::string encode(Encoder& encoder, const Event& e) {
  ByteBuffer out;
  auto st = encoder.encode(e, out);
  EXPECT_TRUE(st) << st.error().report();
  return std::string(out.view());
}

TEST(DebeziumTyped, ValuesSchemasAndKeysAreDebeziumsOwnForEveryGoldenColumnAndOptionSet) {
  const std::vector<Event> events = golden_events();
  ASSERT_EQ(events.size(), 7u);
  int sets = 0;
  for (const auto& [name, recorded] : golden().at("debezium").as_object()) {
    SCOPED_TRACE(std::string(name));
    ++sets;
    auto encoder = make_debezium_json_encoder(options_named(std::string(name)));
    const auto& payloads = recorded.at("payloads").as_array();
    const auto& keys = recorded.at("keys").as_array();
    ASSERT_EQ(payloads.size(), events.size());
    int compared = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const json::object ours = json::parse(encode(*encoder, events[i])).as_object();
      const json::object& our_payload = ours.at("payload").as_object();
      const json::object& theirs = payloads[i].as_object();
      EXPECT_EQ(our_payload.at("op"), theirs.at("op")) << i;
      for (const char* field : {"before", "after"}) {
        ASSERT_EQ(our_payload.at(field).is_null(), theirs.at(field).is_null()) << i << field;
        if (theirs.at(field).is_null()) continue;
        const auto& t = theirs.at(field).as_object();
        const auto& o = our_payload.at(field).as_object();
        EXPECT_EQ(t.size(), o.size());
        for (const auto& kv : t) {
          const std::string column(kv.key());
          if (kKnownDifferences.count(column)) continue;
          ASSERT_TRUE(o.contains(column)) << column;
          EXPECT_EQ(o.at(column), kv.value()) << "record " << i << " " << field << "." << column;
          ++compared;
        }
      }
      // The schema of every column (type, optional, name, version, parameters).
      if (i == 0) {
        const auto their_columns = field_schemas(recorded.at("value_schema").as_object(), "after");
        const auto our_columns = field_schemas(ours.at("schema").as_object(), "after");
        EXPECT_EQ(their_columns.size(), our_columns.size());
        for (const auto& [column, schema] : their_columns) {
          if (kKnownDifferences.count(column)) continue;
          ASSERT_TRUE(our_columns.count(column)) << column;
          EXPECT_EQ(our_columns.at(column), schema) << column;
        }
      }
      ByteBuffer key;
      ASSERT_TRUE(*encoder->encode_key(events[i], key));
      const json::object k = json::parse(key.view()).as_object();
      EXPECT_EQ(k.at("payload"), keys[i]);
      EXPECT_EQ(k.at("schema").at("fields"), recorded.at("key_schema").at("fields"));
    }
    EXPECT_GT(compared, 300);
  }
  EXPECT_EQ(sets, 3);
}

// The texts the decoder gives back for Debezium's own records (defaults) and for ours (every
// option set): the database's text, except for the encodings that lose something.
TEST(DebeziumTyped, TypedValuesReadBackToThePostgresqlTextWhereTheEncodingKeepsIt) {
  const std::vector<Event> events = golden_events();
  auto decoder = make_debezium_json_decoder();
  // Not the same text: an interval's months become 30.4375 days, a timetz's offset becomes
  // +00, a varbit's length is not in the record, bit(1) reads as a boolean, money loses its
  // symbol and separators.
  const std::set<std::string> lossy = {"c_interval", "c_timetz", "c_varbit", "c_bit1", "c_money"};
  const auto check = [&](const Event& back, const Event& e, const std::set<std::string>& skip) {
    for (const auto& [got, want] :
         {std::pair{back.after ? &*back.after : nullptr, e.after ? &*e.after : nullptr},
          std::pair{back.before.row(), e.before.row()}}) {
      ASSERT_EQ(got == nullptr, want == nullptr);
      if (want == nullptr) continue;
      for (const auto& c : *want) {
        if (lossy.count(c.name) || skip.count(c.name)) continue;
        const ColumnValue* g = find_column(*got, c.name);
        ASSERT_NE(g, nullptr) << c.name;
        if (c.text == "NaN" && !g->text) continue;  // a precise decimal holds no NaN: null
        EXPECT_EQ(g->text, c.text) << c.name;
        EXPECT_EQ(g->is_json, c.is_json && c.text.has_value()) << c.name;
      }
    }
  };
  // Debezium's records.
  const auto& defaults = golden().at("debezium").at("defaults");
  for (std::size_t i = 0; i < events.size(); ++i) {
    json::object record;
    record["schema"] = defaults.at("value_schema");
    record["payload"] = defaults.at("payloads").as_array()[i];
    auto back = decoder->decode(json::serialize(record));
    ASSERT_TRUE(back) << back.error().report();
    SCOPED_TRACE("Debezium's record " + std::to_string(i));
    check(*back, events[i], {"c_name", "c_point"});  // null, and a struct, there
  }
  // Ours, under each option set; what each set's encodings lose besides.
  const std::map<std::string, std::set<std::string>> set_loses = {
      {"defaults", {}},
      {"decimal_string_time_connect_binary_hex",
       {"c_time", "c_ts", "c_ts6", "c_bytea", "c_num", "c_num_free"}},  // millis; hex; "NAN"
      {"decimal_double_time_adaptive_time_microseconds_binary_base64",
       {"c_num", "c_num_free", "c_dec", "c_bytea"}}};  // doubles; base64 strings
  for (const auto& [name, loses] : set_loses) {
    SCOPED_TRACE(name);
    auto encoder = make_debezium_json_encoder(options_named(name));
    for (const Event& e : events) {
      auto back = decoder->decode(encode(*encoder, e));
      ASSERT_TRUE(back) << back.error().report();
      check(*back, e, loses);
    }
  }
}

// ---- one column at a time --------------------------------------------------------------------

ColumnShape pg_column(std::string name, std::uint32_t oid, std::int32_t mod = -1) {
  ColumnShape c;
  c.name = std::move(name);
  c.type_oid = oid;
  c.type_modifier = mod;
  c.is_json = oid == 114 || oid == 3802;
  return c;
}

ColumnShape mysql_column(std::string name, std::string type, bool nullable = true) {
  ColumnShape c;
  c.name = std::move(name);
  c.data_type = std::move(type);
  c.nullable = nullable;
  return c;
}

Event one_column_event(const ColumnShape& column, std::optional<std::string> text, bool postgres) {
  Event e;
  e.op = Operation::kInsert;
  e.source = {"src", postgres ? "0/16B2E48" : "mysql-bin.000001:4", 1700000000000};
  e.schema = postgres ? "public" : "shop";
  e.table = "t";
  e.after = Row{{column.name, std::move(text), column.is_json}};
  e.shape = std::make_shared<const RowShape>(e.schema, "t", std::vector<ColumnShape>{column},
                                             std::vector<std::string>{});
  return e;
}

struct Written {
  json::value value;
  json::object schema;
};

Written write_one(const ColumnShape& column, std::optional<std::string> text, bool postgres,
                  DebeziumJsonOptions o = {}) {
  o.schemas_enable = true;
  auto encoder = make_debezium_json_encoder(o);
  const Event e = one_column_event(column, std::move(text), postgres);
  ByteBuffer out;
  auto st = encoder->encode(e, out);
  EXPECT_TRUE(st) << st.error().report();
  if (!st) return {};
  const json::object record = json::parse(out.view()).as_object();
  Written w;
  w.value = record.at("payload").at("after").at(column.name);
  w.schema = field_schemas(record.at("schema").as_object(), "after").at(column.name);
  // What the decoder makes of it: the text again, for these columns.
  return w;
}

json::value j(std::string_view text) { return json::parse(text); }

TEST(DebeziumTyped, PostgresqlScalarTypes) {
  struct Case {
    ColumnShape column;
    const char* text;
    const char* value;  // JSON
    const char* type;
    const char* name;  // nullptr: none
  };
  const Case cases[] = {
      {pg_column("a", 21), "-7", "-7", "int16", nullptr},
      {pg_column("a", 23), "42", "42", "int32", nullptr},
      {pg_column("a", 20), "9223372036854775807", "9223372036854775807", "int64", nullptr},
      {pg_column("a", 26), "4294967295", "4294967295", "int64", nullptr},
      {pg_column("a", 700), "1.1", "1.1", "float", nullptr},
      {pg_column("a", 701), "1e+300", "1e300", "double", nullptr},
      {pg_column("a", 701), "NaN", "\"NaN\"", "double", nullptr},
      {pg_column("a", 16), "t", "true", "boolean", nullptr},
      {pg_column("a", 1560, 1), "0", "false", "boolean", nullptr},
      {pg_column("a", 25), "x\"y", "\"x\\\"y\"", "string", nullptr},
      {pg_column("a", 2950), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
       "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"", "string", "io.debezium.data.Uuid"},
      {pg_column("a", 3802), "{\"k\": 1.50}", "\"{\\\"k\\\": 1.50}\"", "string",
       "io.debezium.data.Json"},
      {pg_column("a", 142), "<a/>", "\"<a/>\"", "string", "io.debezium.data.Xml"},
      {pg_column("a", 1082), "2000-03-01", "11017", "int32", "io.debezium.time.Date"},
      {pg_column("a", 1082), "0001-01-01 BC", "-719528", "int32", "io.debezium.time.Date"},
      {pg_column("a", 1083, 3), "00:00:01.5", "1500", "int32", "io.debezium.time.Time"},
      {pg_column("a", 1083), "00:00:01.5", "1500000", "int64", "io.debezium.time.MicroTime"},
      {pg_column("a", 1114, 0), "1970-01-01 00:00:01", "1000", "int64",
       "io.debezium.time.Timestamp"},
      {pg_column("a", 1114), "1969-12-31 23:59:59.999999", "-1", "int64",
       "io.debezium.time.MicroTimestamp"},
      {pg_column("a", 1184, 2), "2024-01-02 03:04:05.1+00", "\"2024-01-02T03:04:05.10Z\"", "string",
       "io.debezium.time.ZonedTimestamp"},
      {pg_column("a", 1266), "10:00:00-01:30", "\"11:30:00Z\"", "string",
       "io.debezium.time.ZonedTime"},
      {pg_column("a", 1186), "1 mon -1 days +00:00:00.000001", "2543400000001", "int64",
       "io.debezium.time.MicroDuration"},
      {pg_column("a", 17), "\\xdeadbeef", "\"3q2+7w==\"", "bytes", nullptr},
      {pg_column("a", 1562, 8), "11", "\"Aw==\"", "bytes", "io.debezium.data.Bits"},
      {pg_column("a", 1700, ((10 << 16) | 2) + 4), "-128.00", "\"zgA=\"", "bytes",
       "org.apache.kafka.connect.data.Decimal"},
      {pg_column("a", 1700, ((10 << 16) | 2) + 4), "127.99", "\"Mf8=\"", "bytes",
       "org.apache.kafka.connect.data.Decimal"},
      {pg_column("a", 790), "-$1,000.01", "\"/nlf\"", "bytes",
       "org.apache.kafka.connect.data.Decimal"},
      {pg_column("a", 1007), "{1,NULL,-3}", "[1,null,-3]", "array", nullptr},
      {pg_column("a", 1009), "{a,\"b,c\",\"\\\"\"}", "[\"a\",\"b,c\",\"\\\"\"]", "array", nullptr},
      // inet, a range, an enum (oid not built in): the text.
      {pg_column("a", 869), "10.1.2.3/32", "\"10.1.2.3/32\"", "string", nullptr},
      {pg_column("a", 3908), "[1,2)", "\"[1,2)\"", "string", nullptr},
      {pg_column("a", 70001), "happy", "\"happy\"", "string", nullptr},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.column.type_oid) + " " + c.text);
    const Written w = write_one(c.column, c.text, true);
    EXPECT_EQ(w.value, j(c.value));
    EXPECT_EQ(w.schema.at("type").as_string(), c.type);
    if (c.name) {
      EXPECT_EQ(w.schema.at("name").as_string(), c.name);
    } else {
      EXPECT_FALSE(w.schema.contains("name")) << w.schema;
    }
    // And back to the same text (all of these keep it).
    if (c.column.type_oid != 1266 && c.column.type_oid != 1186 && c.column.type_oid != 1560 &&
        c.column.type_oid != 1562 && c.column.type_oid != 790) {
      DebeziumJsonOptions o;
      o.schemas_enable = true;
      ByteBuffer out;
      ASSERT_TRUE(
          make_debezium_json_encoder(o)->encode(one_column_event(c.column, c.text, true), out));
      auto back = make_debezium_json_decoder()->decode(out.view());
      ASSERT_TRUE(back) << back.error().report();
      EXPECT_EQ(back->after->at(0).text, std::string(c.text));
    }
  }
  // SQL NULL is null whatever the type.
  EXPECT_TRUE(write_one(pg_column("a", 1082), std::nullopt, true).value.is_null());
}

TEST(DebeziumTyped, PostgresqlDecimalTimeAndBinaryModes) {
  const ColumnShape num = pg_column("n", 1700, ((12 << 16) | 4) + 4);
  const ColumnShape free_num = pg_column("n", 1700);
  DebeziumJsonOptions o;
  EXPECT_EQ(write_one(num, "1.5000", true, o).value, j("\"Opg=\""));  // 15000
  EXPECT_EQ(write_one(num, "1.5000", true, o).schema.at("parameters"),
            j(R"({"scale":"4","connect.decimal.precision":"12"})"));
  EXPECT_EQ(write_one(free_num, "-0.001", true, o).value, j(R"({"scale":3,"value":"/w=="})"));
  EXPECT_EQ(write_one(free_num, "-0.001", true, o).schema.at("name"),
            "io.debezium.data.VariableScaleDecimal");
  EXPECT_TRUE(write_one(num, "NaN", true, o).value.is_null());
  o.decimal_handling_mode = "string";
  EXPECT_EQ(write_one(num, "1.5000", true, o).value, j("\"1.5000\""));
  EXPECT_EQ(write_one(num, "NaN", true, o).value, j("\"NAN\""));
  EXPECT_EQ(write_one(free_num, "2", true, o).schema.at("type"), "string");
  o.decimal_handling_mode = "double";
  EXPECT_EQ(write_one(num, "1.5000", true, o).value, j("1.5"));
  EXPECT_EQ(write_one(num, "NaN", true, o).value, j("\"NaN\""));
  EXPECT_EQ(write_one(free_num, "2", true, o).schema.at("type"), "double");

  const ColumnShape t3 = pg_column("t", 1083, 3);
  const ColumnShape ts6 = pg_column("t", 1114, 6);
  const ColumnShape date = pg_column("t", 1082);
  DebeziumJsonOptions t;
  t.time_precision_mode = "adaptive_time_microseconds";
  EXPECT_EQ(write_one(t3, "00:00:01.5", true, t).value, j("1500000"));
  EXPECT_EQ(write_one(t3, "00:00:01.5", true, t).schema.at("name"), "io.debezium.time.MicroTime");
  t.time_precision_mode = "connect";
  EXPECT_EQ(write_one(t3, "00:00:01.5", true, t).value, j("1500"));
  EXPECT_EQ(write_one(t3, "00:00:01.5", true, t).schema.at("name"),
            "org.apache.kafka.connect.data.Time");
  EXPECT_EQ(write_one(ts6, "1970-01-01 00:00:00.001999", true, t).value, j("1"));
  EXPECT_EQ(write_one(ts6, "1970-01-01 00:00:00.001999", true, t).schema.at("name"),
            "org.apache.kafka.connect.data.Timestamp");
  EXPECT_EQ(write_one(date, "1970-01-02", true, t).schema.at("name"),
            "org.apache.kafka.connect.data.Date");

  const ColumnShape bytea = pg_column("b", 17);
  DebeziumJsonOptions b;
  for (const auto& [mode, value, type] :
       {std::tuple{"bytes", "\"+/8=\"", "bytes"}, std::tuple{"base64", "\"+/8=\"", "string"},
        std::tuple{"base64-url-safe", "\"-_8=\"", "string"},
        std::tuple{"hex", "\"fbff\"", "string"}}) {
    b.binary_handling_mode = mode;
    const Written w = write_one(bytea, "\\xfbff", true, b);
    EXPECT_EQ(w.value, j(value)) << mode;
    EXPECT_EQ(w.schema.at("type"), type) << mode;
  }
}

TEST(DebeziumTyped, MysqlAndMariadbTypesFollowDebeziumsMysqlMapping) {
  struct Case {
    const char* type;
    const char* text;
    const char* value;
    const char* schema_type;
    const char* name;
  };
  const Case cases[] = {
      {"tinyint(1)", "1", "1", "int16", nullptr},
      {"smallint unsigned", "65535", "65535", "int32", nullptr},
      {"mediumint", "-5", "-5", "int32", nullptr},
      {"int unsigned", "4294967295", "4294967295", "int64", nullptr},
      {"bigint unsigned", "18446744073709551615", "-1", "int64", nullptr},
      {"float", "1.5", "1.5", "float", nullptr},
      {"double", "-2.25", "-2.25", "double", nullptr},
      {"decimal(10,2)", "-1.50", "\"/2o=\"", "bytes", "org.apache.kafka.connect.data.Decimal"},
      {"bit(1)", "\\x01", "true", "boolean", nullptr},
      {"bit(10)", "\\x0281", "\"gQI=\"", "bytes", "io.debezium.data.Bits"},
      {"date", "2000-03-01", "11017", "int32", "io.debezium.time.Date"},
      {"date", "0000-00-00", "null", "int32", "io.debezium.time.Date"},
      {"time", "-838:59:59", "-3020399000000", "int64", "io.debezium.time.MicroTime"},
      {"datetime(3)", "1970-01-01 00:00:01.250", "1250", "int64", "io.debezium.time.Timestamp"},
      {"datetime(6)", "1970-01-01 00:00:01.250000", "1250000", "int64",
       "io.debezium.time.MicroTimestamp"},
      {"timestamp(3)", "2018-06-20 13:37:03.500", "\"2018-06-20T13:37:03.5Z\"", "string",
       "io.debezium.time.ZonedTimestamp"},
      {"year", "2024", "2024", "int32", "io.debezium.time.Year"},
      {"varbinary(4)", "\\x00ff", "\"AP8=\"", "bytes", nullptr},
      {"enum('a','b''c')", "a", "\"a\"", "string", "io.debezium.data.Enum"},
      {"set('x','y')", "x,y", "\"x,y\"", "string", "io.debezium.data.EnumSet"},
      {"varchar(10)", "v", "\"v\"", "string", nullptr},
      {"inet6", "::1", "\"::1\"", "string", nullptr},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.type) + " " + c.text);
    const Written w = write_one(mysql_column("m", c.type), c.text, false);
    EXPECT_EQ(w.value, j(c.value));
    EXPECT_EQ(w.schema.at("type").as_string(), c.schema_type);
    if (c.name) {
      EXPECT_EQ(w.schema.at("name").as_string(), c.name);
    } else {
      EXPECT_FALSE(w.schema.contains("name")) << w.schema;
    }
  }
  EXPECT_EQ(write_one(mysql_column("m", "enum('a','b''c')"), "a", false).schema.at("parameters"),
            j(R"({"allowed":"a,b'c"})"));
  EXPECT_EQ(write_one(mysql_column("m", "decimal(10,2)"), "1.00", false).schema.at("parameters"),
            j(R"({"scale":"2","connect.decimal.precision":"10"})"));
  // MySQL's default time.precision.mode is adaptive_time_microseconds; adaptive gives TIME(0)
  // milliseconds.
  DebeziumJsonOptions adaptive;
  adaptive.time_precision_mode = "adaptive";
  EXPECT_EQ(write_one(mysql_column("m", "time"), "00:00:02", false, adaptive).value, j("2000"));
  // A NOT NULL column's zero date is the epoch.
  EXPECT_EQ(write_one(mysql_column("m", "date", false), "0000-00-00", false).value, j("0"));
  // A MySQL JSON column (is_json) is io.debezium.data.Json.
  ColumnShape js = mysql_column("m", "json");
  js.is_json = true;
  EXPECT_EQ(write_one(js, "[1]", false).schema.at("name"), "io.debezium.data.Json");
}

TEST(DebeziumTyped, DecimalsOfAnySizeAndSignComeBackDigitForDigit) {
  std::mt19937 rng(7);
  auto encoder = [] {
    DebeziumJsonOptions o;
    o.schemas_enable = true;
    return make_debezium_json_encoder(o);
  }();
  auto decoder = make_debezium_json_decoder();
  for (int i = 0; i < 500; ++i) {
    const int scale = static_cast<int>(rng() % 12);
    const int whole = 1 + static_cast<int>(rng() % 60);
    std::string text = rng() % 2 ? "-" : "";
    for (int d = 0; d < whole; ++d)
      text.push_back(static_cast<char>('0' + (d == 0 ? 1 + rng() % 9 : rng() % 10)));
    if (scale) {
      text.push_back('.');
      for (int d = 0; d < scale; ++d) text.push_back(static_cast<char>('0' + rng() % 10));
    }
    for (const ColumnShape& c :
         {pg_column("n", 1700, ((1000 << 16) | scale) + 4), pg_column("n", 1700)}) {
      ByteBuffer out;
      ASSERT_TRUE(encoder->encode(one_column_event(c, text, true), out));
      auto back = decoder->decode(out.view());
      ASSERT_TRUE(back) << back.error().report();
      EXPECT_EQ(back->after->at(0).text, text) << out.view();
    }
  }
}

TEST(DebeziumTyped, ATextThatIsNotItsTypesValueIsInvalidDataNamingTheColumn) {
  DebeziumJsonOptions o;
  auto encoder = make_debezium_json_encoder(o);
  for (const auto& [column, text] :
       {std::pair{pg_column("born", 1082), "yesterday"}, std::pair{pg_column("born", 23), "4x"},
        std::pair{pg_column("born", 1700, ((5 << 16) | 1) + 4), "1.25"},
        std::pair{pg_column("born", 17), "\\xzz"}, std::pair{pg_column("born", 1007), "{{1}}"}}) {
    ByteBuffer out;
    auto st = encoder->encode(one_column_event(column, text, true), out);
    ASSERT_FALSE(st) << text;
    EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
    EXPECT_NE(st.error().message().find("column born of public.t"), std::string::npos)
        << st.error().message();
    EXPECT_EQ(out.size(), 0u) << "nothing of a failed record is left in the buffer";
  }
}

TEST(DebeziumTyped, TypedFalseAndColumnsWithoutAKnownTypeAreTheirText) {
  DebeziumJsonOptions o;
  o.typed = false;
  const Written w = write_one(pg_column("a", 23), "42", true, o);
  EXPECT_EQ(w.value, j("\"42\""));
  EXPECT_EQ(w.schema.at("type"), "string");
  // No shape: the text (json columns named Json), as before typed values existed.
  Event e = one_column_event(pg_column("a", 23), "42", true);
  e.shape.reset();
  DebeziumJsonOptions typed;
  ByteBuffer out;
  ASSERT_TRUE(make_debezium_json_encoder(typed)->encode(e, out));
  EXPECT_EQ(json::parse(out.view()).at("after").at("a"), j("\"42\""));
}

TEST(DebeziumTyped, TheModesAreValidated) {
  for (const auto& [setting, set] :
       {std::pair{"decimal_handling_mode", &DebeziumJsonOptions::decimal_handling_mode},
        std::pair{"time_precision_mode", &DebeziumJsonOptions::time_precision_mode},
        std::pair{"binary_handling_mode", &DebeziumJsonOptions::binary_handling_mode}}) {
    DebeziumJsonOptions o;
    o.*set = "exact";
    auto st = validate(o);
    ASSERT_FALSE(st) << setting;
    EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration);
    EXPECT_EQ(st.error().setting(), setting);
  }
  EXPECT_TRUE(validate(DebeziumJsonOptions{}));
}

TEST(DebeziumTyped, Base64AndCalendarHelpers) {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    EXPECT_EQ(debezium::unbase64(debezium::base64(s)), s);
  }
  EXPECT_EQ(debezium::base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(debezium::days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(debezium::days_from_civil(2024, 2, 29), 19782);
  EXPECT_EQ(debezium::days_from_civil(0, 12, 31), -719163);
}

}  // namespace
}  // namespace cppcdc
