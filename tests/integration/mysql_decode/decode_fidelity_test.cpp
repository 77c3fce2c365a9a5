// Type fidelity of the binlog decoders against a real MariaDB 10.11: rows written with every
// column type (extremes, NULLs, zero and partial dates, negative and over-24-hour TIME,
// multi-byte ENUM/SET, latin1/cp1251/utf16 text, INET6, UUID, JSON, GEOMETRY) are read back
// from the binlog through Connector/C's replication API, decoded with EventDecoder and
// RowReader, and compared value by value with what the server's own text protocol returns
// for SELECT in a session with time_zone '+00:00' (HEX() for binary strings, BIT and
// GEOMETRY, against the decoder's "\x" form). Also MINIMAL and NOBLOB images (absent columns)
// and a compressed binlog (log_bin_compress).
//
// Needs CPPCDC_TEST_MARIADB_PORT (a server from scripts/mariadb.sh: root@127.0.0.1 without a
// password, binlog on, ROW format); skipped without it.

#include <gtest/gtest.h>
#include <mysql.h>
// mariadb_rpl.h needs mysql.h first.
#include <mariadb_rpl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "source/mysql/binlog_event.hpp"
#include "source/mysql/row_decoder.hpp"

namespace cppcdc::mysql {
namespace {

using Cell = std::optional<std::string>;
using ResultRows = std::vector<std::vector<Cell>>;

class Conn {
 public:
  explicit Conn(unsigned port) {
    m_ = mysql_init(nullptr);
    if (mysql_real_connect(m_, "127.0.0.1", "root", nullptr, nullptr, port, nullptr, 0) ==
        nullptr) {
      error_ = mysql_error(m_);
    }
  }
  ~Conn() { mysql_close(m_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  const std::string& error() const { return error_; }
  MYSQL* raw() { return m_; }

  void exec(const std::string& sql) {
    ASSERT_EQ(mysql_query(m_, sql.c_str()), 0) << sql << ": " << mysql_error(m_);
    if (MYSQL_RES* r = mysql_store_result(m_)) mysql_free_result(r);
  }

  ResultRows query(const std::string& sql) {
    ResultRows out;
    if (mysql_query(m_, sql.c_str()) != 0) {
      ADD_FAILURE() << sql << ": " << mysql_error(m_);
      return out;
    }
    MYSQL_RES* r = mysql_store_result(m_);
    if (r == nullptr) return out;
    const unsigned n = mysql_num_fields(r);
    while (MYSQL_ROW row = mysql_fetch_row(r)) {
      unsigned long* lens = mysql_fetch_lengths(r);
      std::vector<Cell> cells;
      for (unsigned i = 0; i < n; ++i) {
        cells.push_back(row[i] ? Cell(std::string(row[i], lens[i])) : std::nullopt);
      }
      out.push_back(std::move(cells));
    }
    mysql_free_result(r);
    return out;
  }

 private:
  MYSQL* m_;
  std::string error_;
};

struct Change {
  RowsKind kind;
  std::uint8_t event_type;
  DecodedRow row;
};

class DecodeFidelity : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* port = std::getenv("CPPCDC_TEST_MARIADB_PORT");
    if (port == nullptr || *port == '\0') {
      GTEST_SKIP() << "CPPCDC_TEST_MARIADB_PORT is not set (start a server with "
                      "scripts/mariadb.sh start DIR PORT and export the port)";
    }
    port_ = static_cast<unsigned>(std::atoi(port));
    conn_ = std::make_unique<Conn>(port_);
    ASSERT_EQ(conn_->error(), "");
    // One database per test process: ctest runs these tests in parallel.
    db_ = "decode_fidelity_" + std::to_string(getpid());
    conn_->exec("DROP DATABASE IF EXISTS " + db_);
    conn_->exec("CREATE DATABASE " + db_ + " CHARACTER SET utf8mb4");
    conn_->exec("USE " + db_);
    conn_->exec("SET NAMES utf8mb4");
    conn_->exec("SET SESSION time_zone = '+00:00'");
    conn_->exec("SET SESSION sql_mode = ''");
    conn_->exec("SET SESSION binlog_row_image = 'FULL'");
  }
  void TearDown() override {
    if (conn_ && !db_.empty()) conn_->exec("DROP DATABASE IF EXISTS " + db_);
  }

  // The binlog from here on.
  void mark() {
    auto st = conn_->query("SHOW MASTER STATUS");
    ASSERT_EQ(st.size(), 1u);
    file_ = *st[0][0];
    pos_ = std::stoul(*st[0][1]);
  }

  // ColumnSchema of `table` from information_schema.
  TableSchema schema(const std::string& table) {
    TableSchema s;
    s.database = db_;
    s.table = table;
    auto rows = conn_->query(
        "SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, IS_NULLABLE FROM "
        "information_schema.COLUMNS WHERE TABLE_SCHEMA = '" +
        db_ + "' AND TABLE_NAME = '" + table + "' ORDER BY ORDINAL_POSITION");
    for (auto& r : rows) {
      ColumnSchema c;
      c.name = *r[0];
      c.column_type = *r[1];
      c.charset = r[2].value_or("");
      c.is_unsigned = c.column_type.find("unsigned") != std::string::npos;
      c.nullable = *r[3] == "YES";
      const bool is_enum = c.column_type.rfind("enum(", 0) == 0;
      const bool is_set = c.column_type.rfind("set(", 0) == 0;
      if (is_enum || is_set) {
        // 'a','b' with '' for a quote inside a label.
        const std::string& t = c.column_type;
        std::size_t i = t.find('(') + 1;
        while (i < t.size() && t[i] == '\'') {
          std::string label;
          ++i;
          while (i < t.size()) {
            if (t[i] == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
              label += '\'';
              i += 2;
            } else if (t[i] == '\'') {
              ++i;
              break;
            } else {
              label += t[i++];
            }
          }
          c.elements.push_back(label);
          if (i < t.size() && t[i] == ',') ++i;
        }
      }
      s.columns.push_back(std::move(c));
    }
    auto checks = conn_->query(
        "SELECT CONSTRAINT_NAME FROM information_schema.CHECK_CONSTRAINTS WHERE "
        "CONSTRAINT_SCHEMA = '" +
        db_ + "' AND TABLE_NAME = '" + table + "' AND CHECK_CLAUSE LIKE 'json_valid(%'");
    for (auto& r : checks) {
      for (auto& c : s.columns) {
        if (c.name == *r[0]) c.is_json = true;
      }
    }
    return s;
  }

  // Reads the binlog from mark() to its end; decodes the rows of `table`.
  std::vector<Change> read_changes(const TableSchema& schema,
                                   std::set<std::uint8_t>* types = nullptr,
                                   TableMapEvent* last_map = nullptr) {
    std::vector<Change> out;
    Conn repl(port_);
    EXPECT_EQ(repl.error(), "");
    repl.exec("SET @mariadb_slave_capability=4");
    repl.exec("SET @master_binlog_checksum=@@global.binlog_checksum");
    MARIADB_RPL* rpl = mariadb_rpl_init(repl.raw());
    mariadb_rpl_optionsv(rpl, MARIADB_RPL_SERVER_ID,
                         // a replica id of its own: the server ends an older dump of the same id
                         static_cast<unsigned int>(4711 + getpid() % 100000));
    mariadb_rpl_optionsv(rpl, MARIADB_RPL_FILENAME, file_.c_str(), file_.size());
    mariadb_rpl_optionsv(rpl, MARIADB_RPL_START, static_cast<unsigned long>(pos_));
    mariadb_rpl_optionsv(rpl, MARIADB_RPL_FLAGS,
                         static_cast<unsigned int>(MARIADB_RPL_BINLOG_DUMP_NON_BLOCK));
    EXPECT_EQ(mariadb_rpl_open(rpl), 0) << mysql_error(repl.raw());
    EventDecoder decoder(Flavor::kMariaDb);
    decoder.set_checksummed(*conn_->query("SELECT @@global.binlog_checksum")[0][0] != "NONE");
    std::map<std::uint64_t, TableMapEvent> maps;
    while (MARIADB_RPL_EVENT* ev = mariadb_rpl_fetch(rpl, nullptr)) {
      // raw_data holds the packet: the OK byte, then the event.
      std::span<const std::uint8_t> bytes(ev->raw_data, ev->raw_data_size);
      if (bytes.size() > 13 && bytes[0] == 0) {
        const std::uint32_t size = bytes[10] | bytes[11] << 8 | bytes[12] << 16 |
                                   static_cast<std::uint32_t>(bytes[13]) << 24;
        if (size + 1 == bytes.size()) bytes = bytes.subspan(1);
      }
      auto decoded = decoder.decode(bytes);
      if (!decoded) {
        ADD_FAILURE() << "event type " << static_cast<int>(ev->event_type) << ": "
                      << decoded.error().report();
        mariadb_free_rpl_event(ev);
        break;
      }
      if (types) types->insert(decoded->header.type);
      if (decoded->table_map) {
        maps[decoded->table_map->table_id] = *decoded->table_map;
        if (last_map != nullptr && decoded->table_map->table == schema.table) {
          *last_map = *decoded->table_map;
        }
      }
      if (decoded->rows) {
        auto it = maps.find(decoded->rows->table_id);
        if (it != maps.end() && it->second.table == schema.table &&
            it->second.database == schema.database) {
          RowReader reader(it->second, schema, *decoded->rows, Flavor::kMariaDb);
          DecodedRow row;
          while (true) {
            auto more = reader.next(row);
            if (!more) {
              ADD_FAILURE() << more.error().report();
              break;
            }
            if (!*more) break;
            out.push_back({decoded->rows->kind, decoded->header.type, row});
          }
        }
      }
      mariadb_free_rpl_event(ev);
    }
    EXPECT_EQ(mysql_errno(repl.raw()), 0u) << mysql_error(repl.raw());
    mariadb_rpl_close(rpl);
    return out;
  }

  // SELECT of every column of row `id` as the decoder prints it.
  std::vector<Cell> expected(const TableSchema& s, const std::string& table, long long id) {
    std::string cols;
    for (const auto& c : s.columns) {
      if (!cols.empty()) cols += ", ";
      const std::string& t = c.column_type;
      const bool binary =
          c.charset.empty() && (t.rfind("binary", 0) == 0 || t.rfind("varbinary", 0) == 0 ||
                                t.find("blob") != std::string::npos);
      if (t.rfind("bit(", 0) == 0) {
        const int bits = std::stoi(t.substr(4));
        cols += "CONCAT('\\\\x', LPAD(LOWER(HEX(`" + c.name + "`)), " +
                std::to_string(2 * ((bits + 7) / 8)) + ", '0'))";
      } else if (binary || t == "geometry" || t == "point") {
        cols += "CONCAT('\\\\x', LOWER(HEX(`" + c.name + "`)))";
      } else {
        cols += "`" + c.name + "`";
      }
    }
    auto rows =
        conn_->query("SELECT " + cols + " FROM " + table + " WHERE id = " + std::to_string(id));
    EXPECT_EQ(rows.size(), 1u) << "row " << id;
    return rows.empty() ? std::vector<Cell>{} : rows[0];
  }

  void compare(const TableSchema& s, const std::string& table, const Row& row, long long id) {
    const auto want = expected(s, table, id);
    ASSERT_EQ(want.size(), s.columns.size());
    ASSERT_EQ(row.size(), s.columns.size());
    const bool dump = std::getenv("CPPCDC_TEST_DUMP") != nullptr;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (dump) {
        std::fprintf(stderr, "%lld %s = %s\n", id, row[i].name.c_str(),
                     row[i].text ? row[i].text->substr(0, 80).c_str() : "NULL");
      }
      EXPECT_EQ(row[i].name, s.columns[i].name);
      EXPECT_EQ(row[i].text, want[i])
          << "row " << id << ", column " << s.columns[i].name << " (" << s.columns[i].column_type
          << "): decoded " << (row[i].text ? *row[i].text : "NULL") << ", SELECT gives "
          << (want[i] ? *want[i] : "NULL");
    }
  }

  unsigned port_ = 0;
  std::unique_ptr<Conn> conn_;
  std::string db_;
  std::string file_;
  unsigned long pos_ = 4;
};

constexpr const char* kAllTypes = R"(CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED,
  mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,
  d1 DECIMAL(10,4), d2 DECIMAL(65,30), d3 DECIMAL(5,0),
  f FLOAT, f2 FLOAT(7,3), db DOUBLE, db2 DOUBLE(10,2),
  b1 BIT(1), b10 BIT(10), b64 BIT(64),
  y YEAR, dt DATE, t0 TIME, t6 TIME(6), t3 TIME(3),
  dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL,
  ts6 TIMESTAMP(6) NULL DEFAULT NULL,
  c CHAR(10), vc VARCHAR(300), vl VARCHAR(20) CHARACTER SET latin1,
  cl CHAR(5) CHARACTER SET latin1, cy VARCHAR(10) CHARACTER SET cp1251,
  u16 VARCHAR(10) CHARACTER SET utf16,
  bn BINARY(4), vb VARBINARY(20), tx TEXT, bl BLOB, ttl TINYTEXT CHARACTER SET latin1,
  mt MEDIUMTEXT, lb LONGBLOB,
  e ENUM('a','ä','€uro'), s SET('x','ÿ','z'),
  j JSON, g GEOMETRY, ip INET6, u UUID
) ENGINE=InnoDB)";

TEST_F(DecodeFidelity, EveryTypeMatchesTheServersTextOutput) {
  conn_->exec(kAllTypes);
  const TableSchema s = schema("all_types");
  mark();
  // 1: maxima; 2: minima; 3: NULLs; 4: zeros, zero and partial dates, empty values;
  // 5-8: assorted values, floats across magnitudes, multi-byte text.
  conn_->exec(
      "INSERT INTO all_types VALUES (1, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647,"
      " 4294967295, 9223372036854775807, 18446744073709551615, 999999.9999,"
      " 99999999999999999999999999999999999.999999999999999999999999999999, 99999,"
      " 3.40282e38, 9999.999, 1.7976931348623157e308, 99999999.99,"
      " b'1', b'1111111111', b'1111111111111111111111111111111111111111111111111111111111111111',"
      " 2155, '9999-12-31', '838:59:59', '838:59:59.999999', '-838:59:59.999',"
      " '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07',"
      " '2038-01-19 03:14:07.999999', 'abcdefghij', REPEAT('ü', 300), 'wörld€',"
      " 'ÿÿÿÿÿ', 'Привет', 'ü€𝄞', 0xffffffff, 0x00ff, 'text ✓', 0xdeadbeef, 'lätin',"
      " REPEAT('m', 70000), REPEAT(0xab, 100), '€uro', 'x,ÿ,z',"
      " '{\"a\": [1, 2.5, \"x\"], \"b\": null}', ST_GeomFromText('POINT(1 2)'),"
      " 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffffffff-ffff-1fff-bfff-ffffffffffff')");
  conn_->exec(
      "INSERT INTO all_types VALUES (2, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0,"
      " -9223372036854775808, 0, -999999.9999,"
      " -99999999999999999999999999999999999.999999999999999999999999999999, -99999,"
      " -3.40282e38, -9999.999, -1.7976931348623157e308, -99999999.99,"
      " b'0', b'0', b'0', 1901, '1000-01-01', '-838:59:59', '-838:59:59.999999',"
      " '-00:00:01.5', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000001',"
      " '1970-01-01 00:00:01', '1970-01-01 00:00:01.000001', '', '', '', '', '', '',"
      " 0x00, '', '', '', '', '', '', 'a', '', '[]', ST_GeomFromText('LINESTRING(0 0,1 1)'),"
      " '::', '00000000-0000-0000-0000-000000000000')");
  conn_->exec("INSERT INTO all_types (id) VALUES (3)");
  conn_->exec(
      "INSERT INTO all_types (id, ti, d1, d3, f, db, y, dt, t0, dtm, dtm6, ts, ts6, e, s, bn, ip,"
      " u) VALUES (4, 0, 0, 0, 0, 0, 0, '0000-00-00', '00:00:00', '0000-00-00 00:00:00',"
      " '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', 'nope', '',"
      " 'ab', '::ffff:1.2.3.4', '123e4567-e89b-12d3-a456-426655440000')");
  conn_->exec(
      "INSERT INTO all_types (id, f, db, dt, dtm, t6, d1, ip, u) VALUES"
      " (5, 3.14, 0.1, '2020-00-00', '2020-02-00 10:00:00', '100:00:00.000001', -0.0001,"
      "  '2001:db8::1', '01234567-89ab-7def-8123-456789abcdef'),"
      " (6, 123456789, 1e15, '2020-05-00', '2020-00-00 00:00:00', '-00:00:00.000001', 1.5,"
      "  '::1', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),"
      " (7, 1e-20, 1e-16, NULL, NULL, '25:00:00.5', 12.34, '1::', NULL),"
      " (8, 0.0001, 123456789012345680, NULL, NULL, NULL, NULL, '2001:db8:0:0:1:0:0:1', NULL)");
  conn_->exec(
      "INSERT INTO all_types (id, f, db, f2, db2) VALUES (9, -1.5, 1e14, 2.5, 1.005),"
      " (10, 1e20, 3.141592653589793, -0.001, 0.5), (11, 1.17549e-38, 1e-15, 0, 0)");
  const auto changes = read_changes(s);
  ASSERT_EQ(changes.size(), 11u);
  for (const auto& ch : changes) {
    ASSERT_EQ(ch.kind, RowsKind::kWrite);
    ASSERT_TRUE(ch.row.after);
    const int id = std::stoi(*(*ch.row.after)[0].text);
    compare(s, "all_types", *ch.row.after, id);
  }
}

TEST_F(DecodeFidelity, MinimalAndNoblobImagesLeaveColumnsAbsent) {
  conn_->exec("CREATE TABLE img (id INT PRIMARY KEY, a INT, b VARCHAR(10), bl BLOB, tx TEXT)");
  conn_->exec("INSERT INTO img VALUES (1, 1, 'one', 0x01, 't1'), (2, 2, 'two', 0x02, 't2')");
  const TableSchema s = schema("img");
  mark();
  conn_->exec("SET SESSION binlog_row_image = 'MINIMAL'");
  conn_->exec("UPDATE img SET b = 'uno' WHERE id = 1");
  conn_->exec("DELETE FROM img WHERE id = 2");
  conn_->exec("SET SESSION binlog_row_image = 'NOBLOB'");
  conn_->exec("UPDATE img SET tx = 'changed', a = NULL WHERE id = 1");
  conn_->exec("SET SESSION binlog_row_image = 'FULL'");
  const auto changes = read_changes(s);
  ASSERT_EQ(changes.size(), 3u);
  auto names = [](const Row& r) {
    std::string out;
    for (const auto& c : r)
      out += (out.empty() ? "" : ",") + c.name + "=" + c.text.value_or("NULL");
    return out;
  };
  EXPECT_EQ(changes[0].kind, RowsKind::kUpdate);
  EXPECT_EQ(names(*changes[0].row.before), "id=1");
  EXPECT_EQ(names(*changes[0].row.after), "b=uno");
  EXPECT_EQ(changes[1].kind, RowsKind::kDelete);
  EXPECT_EQ(names(*changes[1].row.before), "id=2");
  EXPECT_FALSE(changes[1].row.after);
  EXPECT_EQ(changes[2].kind, RowsKind::kUpdate);
  EXPECT_EQ(names(*changes[2].row.before), "id=1,a=1,b=uno");
  EXPECT_EQ(names(*changes[2].row.after), "id=1,a=NULL,b=uno,tx=changed");
}

TEST_F(DecodeFidelity, CompressedBinlogEventsDecode) {
  conn_->exec("CREATE TABLE comp (id INT PRIMARY KEY, body MEDIUMTEXT, v VARCHAR(20))");
  const TableSchema s = schema("comp");
  mark();
  conn_->exec("SET GLOBAL log_bin_compress = ON");
  conn_->exec("INSERT INTO comp VALUES (1, REPEAT('compress me ', 500), 'ä'), (2, 'x', NULL)");
  conn_->exec("UPDATE comp SET body = REPEAT('again ', 400) WHERE id = 1");
  conn_->exec("SET GLOBAL log_bin_compress = OFF");
  std::set<std::uint8_t> types;
  const auto changes = read_changes(s, &types);
  const bool compressed_rows =
      types.count(169) || types.count(170) || types.count(166) || types.count(167);
  EXPECT_TRUE(compressed_rows) << "no compressed rows event was seen";
  ASSERT_EQ(changes.size(), 3u);
  compare(s, "comp", *changes[1].row.after, 2);
  ASSERT_TRUE(changes[2].row.after);
  compare(s, "comp", *changes[2].row.after, 1);
  EXPECT_EQ(*(*changes[0].row.after)[1].text, [] {
    std::string x;
    for (int i = 0; i < 500; ++i) x += "compress me ";
    return x;
  }());
}

TEST_F(DecodeFidelity, BinlogWithoutChecksums) {
  conn_->exec("CREATE TABLE nocrc (id INT PRIMARY KEY, v VARCHAR(20), d DATETIME(3))");
  const TableSchema s = schema("nocrc");
  conn_->exec("SET GLOBAL binlog_checksum = NONE");  // rotates to a binlog without CRC32
  mark();
  conn_->exec("INSERT INTO nocrc VALUES (1, 'plain', '2024-02-29 12:34:56.789')");
  const auto changes = read_changes(s);
  conn_->exec("SET GLOBAL binlog_checksum = CRC32");
  ASSERT_EQ(changes.size(), 1u);
  compare(s, "nocrc", *changes[0].row.after, 1);
}

TEST_F(DecodeFidelity, FullRowMetadataDecodesWithoutTheSchemasTypeDetails) {
  conn_->exec(
      "CREATE TABLE meta (id INT UNSIGNED PRIMARY KEY, n BIGINT, d DECIMAL(6,2) UNSIGNED, "
      "v VARCHAR(10), l VARCHAR(10) CHARACTER SET latin1, b VARBINARY(4), "
      "e ENUM('x','ä'), s SET('p','q','ÿ'), t TINYINT UNSIGNED)");
  const TableSchema full = schema("meta");
  auto before = conn_->query("SELECT @@global.binlog_row_metadata");
  conn_->exec("SET GLOBAL binlog_row_metadata = FULL");
  mark();
  conn_->exec(
      "INSERT INTO meta VALUES (4294967295, -5, 9999.99, 'vé', 'lé', 0x0102, "
      "'ä', 'p,ÿ', 255)");
  // Names only: unsignedness, charsets and labels must come from the table map.
  TableSchema bare;
  bare.database = full.database;
  bare.table = full.table;
  for (const auto& c : full.columns) {
    ColumnSchema b;
    b.name = c.name;
    bare.columns.push_back(b);
  }
  TableMapEvent map;
  const auto changes = read_changes(bare, nullptr, &map);
  conn_->exec("SET GLOBAL binlog_row_metadata = " + *before[0][0]);
  ASSERT_EQ(changes.size(), 1u);
  std::vector<std::string> names;
  for (const auto& c : full.columns) names.push_back(c.name);
  EXPECT_EQ(map.metadata.column_names, names);
  EXPECT_EQ(map.metadata.is_unsigned, (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(map.metadata.primary_key, (std::vector<std::uint32_t>{0}));
  ASSERT_EQ(map.metadata.enum_values.size(), 1u);
  EXPECT_EQ(map.metadata.enum_values[0], (std::vector<std::string>{"x", "ä"}));
  ASSERT_EQ(map.metadata.set_values.size(), 1u);
  EXPECT_EQ(map.metadata.set_values[0].size(), 3u);
  ASSERT_EQ(map.metadata.charsets.size(), 3u);  // v, l, b
  EXPECT_EQ(map.metadata.charsets[2], 63u);     // binary
  compare(full, "meta", *changes[0].row.after, 4294967295LL);
}

}  // namespace
}  // namespace cppcdc::mysql
