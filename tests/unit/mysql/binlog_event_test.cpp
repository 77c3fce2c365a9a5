// Golden tests of the binlog event decoder on event bytes built from the published format.

#include "source/mysql/binlog_event.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "unit/mysql/binlog_bytes.hpp"

namespace cppcdc::mysql {
namespace {

using test::Bytes;
using test::Wire;
using ::testing::HasSubstr;

// Decoded views point into the event's bytes: keep every event alive for the whole test run.
std::span<const std::uint8_t> keep(Bytes b) {
  static std::deque<Bytes> kept;
  kept.push_back(std::move(b));
  return kept.back();
}

EventDecoder maria() {
  EventDecoder d(Flavor::kMariaDb);
  auto fd = d.decode(test::format_description());
  EXPECT_TRUE(fd.has_value()) << fd.error().report();
  return d;
}

TEST(BinlogEvent, FormatDescriptionDeclaresCrc32AndIsVerified) {
  EventDecoder d(Flavor::kMariaDb);
  auto fd = test::format_description();
  auto ev = d.decode(fd);
  ASSERT_TRUE(ev) << ev.error().report();
  ASSERT_TRUE(ev->format);
  EXPECT_EQ(ev->format->server_version, "10.11.19-MariaDB-0+deb12u1");
  EXPECT_EQ(ev->format->checksum_alg, 1);
  EXPECT_TRUE(d.checksummed());
  fd[30] ^= 1;  // a flipped bit in the server version
  EXPECT_THAT(d.decode(fd).error().message(), HasSubstr("CRC32 mismatch"));
}

TEST(BinlogEvent, FormatDescriptionWithChecksumOffTurnsTrailersOff) {
  EventDecoder d(Flavor::kMariaDb);
  ASSERT_TRUE(d.decode(test::format_description("10.11.19-MariaDB", false)));
  EXPECT_FALSE(d.checksummed());
  auto ev = d.decode(keep(test::event(16, Wire().u64(77).bytes(), false)));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->xid->xid, 77u);
}

TEST(BinlogEvent, CorruptedEventFailsItsCrc32) {
  auto d = maria();
  auto x = test::event(16, Wire().u64(5).bytes());
  x[20] ^= 0x40;
  auto ev = d.decode(x);
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("XID event: CRC32 mismatch"));
  d.set_verify_checksum(false);
  EXPECT_TRUE(d.decode(x));
}

TEST(BinlogEvent, HeaderFields) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(16, Wire().u64(42).bytes(), true, 4321, 7)));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->header.timestamp, 1700000000u);
  EXPECT_EQ(ev->header.server_id, 7u);
  EXPECT_EQ(ev->header.next_position, 4321u);
  EXPECT_EQ(ev->header.event_size, 19u + 8 + 4);
  EXPECT_EQ(ev->type, EventType::kXid);
}

TEST(BinlogEvent, ArtificialRotateBeforeFormatDescriptionWithDeclaredChecksum) {
  EventDecoder d(Flavor::kMariaDb);
  d.set_checksummed(true);
  auto ev = d.decode(keep(test::event(4, Wire().u64(4).raw("mysql-bin.000001").bytes(), true, 0)));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->rotate->next_file, "mysql-bin.000001");
  EXPECT_EQ(ev->rotate->position, 4u);
}

TEST(BinlogEvent, QueryWithStatusVariablesAndCharset) {
  auto d = maria();
  Wire status;
  status.u8(0)
      .u32(0)  // flags2
      .u8(1)
      .u64(0)  // sql_mode
      .u8(6)
      .u8(3)
      .raw("std")  // catalog
      .u8(4)
      .u16(45)
      .u16(45)
      .u16(224)  // charset: client 45 (utf8mb4)
      .u8(5)
      .u8(6)
      .raw("+00:00")  // time zone
      .u8(12)
      .u8(1)
      .raw("app")
      .u8(0)  // updated databases
      .u8(128)
      .u24(12345)  // MariaDB hrnow
      .u8(129)
      .u64(99);  // MariaDB xid
  Wire body;
  body.u32(77)
      .u32(0)
      .u8(3)
      .u16(0)
      .u16(status.size())
      .raw(status.bytes())
      .raw("app")
      .u8(0)
      .raw("CREATE TABLE t (a int)");
  auto ev = d.decode(keep(test::event(2, body.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  ASSERT_TRUE(ev->query);
  EXPECT_EQ(ev->query->thread_id, 77u);
  EXPECT_EQ(ev->query->database, "app");
  EXPECT_EQ(ev->query->sql, "CREATE TABLE t (a int)");
  EXPECT_EQ(ev->query->client_charset, 45);
}

TEST(BinlogEvent, QueryWithUnknownStatusVariableStillFindsTheStatement) {
  auto d = maria();
  Wire status;
  status.u8(200).u32(1);  // a code from the future
  Wire body;
  body.u32(1).u32(0).u8(0).u16(0).u16(status.size()).raw(status.bytes()).u8(0).raw("BEGIN");
  auto ev = d.decode(keep(test::event(2, body.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->query->sql, "BEGIN");
  EXPECT_EQ(ev->query->database, "");
}

TEST(BinlogEvent, CompressedQuery) {
  auto d = maria();
  const std::string sql = "INSERT INTO t VALUES " + std::string(300, 'x');
  Wire body;
  body.u32(1).u32(0).u8(3).u16(0).u16(0).raw("app").u8(0).raw(
      test::maria_compress(Bytes(sql.begin(), sql.end())));
  auto ev = d.decode(keep(test::event(165, body.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->query->sql, sql);
}

TEST(BinlogEvent, CompressedDataWithAnImpossibleLengthIsAnError) {
  auto d = maria();
  Wire body;
  body.u32(1).u32(0).u8(0).u16(0).u16(0).u8(0).u8(0x84).be(0x7fffffff, 4).u8(0x78).u8(0x9c);
  auto ev = d.decode(keep(test::event(165, body.bytes())));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("QUERY_COMPRESSED event"));
}

TEST(BinlogEvent, MariaGtidStandaloneAndGroupCommit) {
  auto d = maria();
  auto ev = d.decode(
      keep(test::event(162, Wire().u64(100).u32(0).u8(0x29).raw(Bytes(6, 0)).bytes(), true, 0, 1)));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->gtid->text(), "0-1-100");
  EXPECT_TRUE(ev->gtid->standalone);
  EXPECT_FALSE(ev->gtid->commit_id);
  ev = d.decode(keep(test::event(162, Wire().u64(7).u32(2).u8(0x0e).u64(555).bytes(), true, 0, 3)));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->gtid->text(), "2-3-7");
  EXPECT_FALSE(ev->gtid->standalone);
  EXPECT_EQ(ev->gtid->commit_id, 555u);
}

TEST(BinlogEvent, MariaGtidListAndBinlogCheckpoint) {
  auto d = maria();
  Wire list;
  list.u32(2).u32(0).u32(1).u64(100).u32(1).u32(2).u64(7);
  auto ev = d.decode(keep(test::event(163, list.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  ASSERT_EQ(ev->gtid_list->gtids.size(), 2u);
  EXPECT_EQ(ev->gtid_list->gtids[0].text(), "0-1-100");
  EXPECT_EQ(ev->gtid_list->gtids[1].text(), "1-2-7");
  ev = d.decode(keep(test::event(161, Wire().u32(16).raw("mysql-bin.000003").bytes())));
  ASSERT_TRUE(ev);
  EXPECT_EQ(*ev->log_file, "mysql-bin.000003");
}

TEST(BinlogEvent, GtidListCountBeyondTheEventIsAnError) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(163, Wire().u32(1000).u32(0).bytes())));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("GTID_LIST event"));
}

TEST(BinlogEvent, AnnotateRowsCarriesTheStatement) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(160, Wire().raw("UPDATE t SET a = 1").bytes())));
  ASSERT_TRUE(ev);
  EXPECT_EQ(*ev->statement, "UPDATE t SET a = 1");
}

TEST(BinlogEvent, HeartbeatAndUnknownEventsKeepTheirHeader) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(27, Wire().raw("mysql-bin.000002").bytes(), true, 777)));
  ASSERT_TRUE(ev);
  EXPECT_EQ(*ev->log_file, "mysql-bin.000002");
  EXPECT_EQ(ev->header.next_position, 777u);
  ev = d.decode(keep(test::event(5, Wire().u8(1).u64(9).bytes())));  // INTVAR
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, EventType::kIntvar);
}

TEST(BinlogEvent, StartEncryptionPassesAndLaterUnreadableEventsNameTheEncryption) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(164, Wire().u8(1).u32(1).raw(Bytes(12, 7)).bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->type, EventType::kStartEncryption);
  // The replication stream carries the events decrypted: they decode.
  ev = d.decode(keep(test::event(16, Wire().u64(5).bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  // An event still encrypted (as read from the file) fails its checksum: the error says why.
  auto x = test::event(16, Wire().u64(5).bytes());
  for (std::size_t i = 19; i < x.size() - 4; ++i) x[i] ^= 0x5a;
  ev = d.decode(keep(x));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("CRC32 mismatch"));
  EXPECT_THAT(ev.error().message(), HasSubstr("this binlog is encrypted"));
  EXPECT_THAT(ev.error().message(), HasSubstr("remedy"));
  // A new binlog file (FORMAT_DESCRIPTION) forgets it.
  ASSERT_TRUE(d.decode(keep(test::format_description())));
  ev = d.decode(keep(x));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), ::testing::Not(HasSubstr("encrypted")));
}

TEST(BinlogEvent, PartialJsonUpdatesAndTaggedGtidsAreErrorsNotSilentSkips) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(39, Wire().u48(1).u16(1).u16(2).packed(1).u8(1).bytes())));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("binlog_row_value_options"));
  ev = d.decode(keep(test::event(42, Wire().u8(0).bytes())));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("tagged GTIDs"));
}

Bytes optional_metadata() {
  Wire m;
  // signedness: columns 0 (int) unsigned, 1 (bigint) signed: bits MSB first
  m.u8(1).packed(1).u8(0x80);
  // default charset 45 with column 1 (of the character columns) in latin1 (8)
  Wire cs;
  cs.packed(45).packed(1).packed(8);
  m.u8(2).packed(cs.size()).raw(cs.bytes());
  Wire names;
  for (auto n : {"id", "big", "s", "l", "e"}) names.packed_str(n);
  m.u8(4).packed(names.size()).raw(names.bytes());
  Wire en;
  en.packed(2).packed_str("a").packed_str("b");
  m.u8(6).packed(en.size()).raw(en.bytes());
  m.u8(8).packed(1).packed(0);           // primary key: column 0
  m.u8(99).packed(3).u8(1).u8(2).u8(3);  // unknown field: skipped
  return m.bytes();
}

TEST(BinlogEvent, TableMapWithMetadataAndOptionalMetadata) {
  auto d = maria();
  std::vector<test::Column> cols = {
      {3, {}}, {8, {}}, {15, Wire().u16(400).bytes()}, {254, {0xfe, 40}}, {254, {0xf7, 1}}};
  auto ev = d.decode(
      keep(test::event(19, test::table_map_body(42, "app", "orders", cols, optional_metadata()))));
  ASSERT_TRUE(ev) << ev.error().report();
  const auto& t = *ev->table_map;
  EXPECT_EQ(t.table_id, 42u);
  EXPECT_EQ(t.database, "app");
  EXPECT_EQ(t.table, "orders");
  EXPECT_EQ(t.column_types, (std::vector<std::uint8_t>{3, 8, 15, 254, 254}));
  EXPECT_EQ(t.column_meta, (std::vector<std::uint16_t>{0, 0, 400, 0xfe28, 0xf701}));
  EXPECT_TRUE(t.nullable.test(4));
  EXPECT_EQ(t.metadata.is_unsigned, (std::vector<bool>{true, false}));
  EXPECT_EQ(t.metadata.charsets, (std::vector<std::uint32_t>{45, 8}));
  EXPECT_EQ(t.metadata.column_names, (std::vector<std::string>{"id", "big", "s", "l", "e"}));
  ASSERT_EQ(t.metadata.enum_values.size(), 1u);
  EXPECT_EQ(t.metadata.enum_values[0], (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.metadata.primary_key, (std::vector<std::uint32_t>{0}));
}

TEST(BinlogEvent, TableMapWithUnknownColumnTypeIsAnError) {
  auto d = maria();
  auto ev = d.decode(keep(test::event(19, test::table_map_body(1, "a", "b", {{100, {}}}))));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("unknown type 100"));
}

TEST(BinlogEvent, RowsV1WriteUpdateDelete) {
  auto d = maria();
  const Bytes rows = {0x00, 1, 0, 0, 0};
  auto ev =
      d.decode(keep(test::event(23, test::rows_body(42, 1, test::all_bits(1), nullptr, rows))));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->rows->kind, RowsKind::kWrite);
  EXPECT_EQ(ev->rows->table_id, 42u);
  EXPECT_TRUE(ev->rows->end_of_statement());
  EXPECT_EQ(ev->rows->column_count, 1u);
  EXPECT_EQ(Bytes(ev->rows->rows.begin(), ev->rows->rows.end()), rows);
  const Bytes after = test::all_bits(1);
  ev = d.decode(keep(test::event(24, test::rows_body(42, 1, test::all_bits(1), &after, rows))));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->rows->kind, RowsKind::kUpdate);
  EXPECT_TRUE(ev->rows->present_after.test(0));
  ev = d.decode(keep(test::event(25, test::rows_body(42, 1, test::all_bits(1), nullptr, rows))));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->rows->kind, RowsKind::kDelete);
}

TEST(BinlogEvent, RowsV2SkipsExtraData) {
  auto d = maria();
  const Bytes rows = {0x00, 9, 0, 0, 0};
  auto ev = d.decode(keep(test::event(
      30, test::rows_body(5, 1, test::all_bits(1), nullptr, rows, true, {0, 3, 1, 2, 3}))));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->rows->kind, RowsKind::kWrite);
  EXPECT_EQ(Bytes(ev->rows->rows.begin(), ev->rows->rows.end()), rows);
  const Bytes after = test::all_bits(1);
  ev =
      d.decode(keep(test::event(31, test::rows_body(5, 1, test::all_bits(1), &after, rows, true))));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->rows->kind, RowsKind::kUpdate);
}

TEST(BinlogEvent, CompressedRowsV1AndV2) {
  auto d = maria();
  Bytes rows;
  for (int i = 0; i < 100; ++i)
    rows.insert(rows.end(), {0x00, static_cast<std::uint8_t>(i), 0, 0, 0});
  Wire body;
  body.u48(9).u16(1).packed(1).raw(test::all_bits(1)).raw(test::maria_compress(rows));
  auto ev = d.decode(keep(test::event(169, body.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->rows->kind, RowsKind::kWrite);
  EXPECT_EQ(Bytes(ev->rows->rows.begin(), ev->rows->rows.end()), rows);
  Wire body2;
  body2.u48(9)
      .u16(1)
      .u16(2)
      .packed(1)
      .raw(test::all_bits(1))
      .raw(test::all_bits(1))
      .raw(test::maria_compress(rows));
  ev = d.decode(keep(test::event(167, body2.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->rows->kind, RowsKind::kUpdate);
  EXPECT_EQ(ev->rows->rows.size(), rows.size());
}

TEST(BinlogEvent, MySqlGtidAndPreviousGtids) {
  EventDecoder d(Flavor::kMySql);
  ASSERT_TRUE(d.decode(test::format_description("8.0.36")));
  const Bytes sid = {0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
                     0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62};
  Wire g;
  g.u8(1).raw(sid).u64(23).u8(2).u64(5).u64(6);
  auto ev = d.decode(keep(test::event(33, g.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(ev->gtid->text(), "3e11fa47-71ca-11e1-9e33-c80aa9429562:23");
  Wire p;
  p.u64(1).raw(sid).u64(2).u64(1).u64(6).u64(7).u64(10);
  ev = d.decode(keep(test::event(35, p.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  EXPECT_EQ(*ev->previous_gtids, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9");
}

TEST(BinlogEvent, TransactionPayloadWithZstd) {
  EventDecoder d(Flavor::kMySql);
  ASSERT_TRUE(d.decode(test::format_description("8.0.36")));
  // The inner events carry no checksum.
  Bytes inner =
      test::event(2, Wire().u32(1).u32(0).u8(0).u16(0).u16(0).u8(0).raw("BEGIN").bytes(), false);
  const Bytes tm = test::event(19, test::table_map_body(7, "db", "t", {{3, {}}}), false);
  const Bytes rows = test::event(
      30, test::rows_body(7, 1, test::all_bits(1), nullptr, {0x00, 1, 0, 0, 0}, true), false);
  const Bytes xid = test::event(16, Wire().u64(9).bytes(), false);
  for (const auto* e : {&tm, &rows, &xid}) inner.insert(inner.end(), e->begin(), e->end());
  const Bytes z = test::zstd_compress(inner);
  Wire body;
  body.packed(1)
      .packed(Wire().packed(z.size()).size())
      .packed(z.size())
      .packed(2)
      .packed(1)
      .packed(0)
      .packed(3)
      .packed(Wire().packed(inner.size()).size())
      .packed(inner.size())
      .packed(0)
      .raw(z);
  auto ev = d.decode(keep(test::event(40, body.bytes())));
  ASSERT_TRUE(ev) << ev.error().report();
  ASSERT_EQ(ev->payload_events.size(), 4u);
  auto q = d.decode_payload_event(ev->payload_events[0]);
  ASSERT_TRUE(q) << q.error().report();
  EXPECT_EQ(q->query->sql, "BEGIN");
  auto t = d.decode_payload_event(ev->payload_events[1]);
  ASSERT_TRUE(t) << t.error().report();
  EXPECT_EQ(t->table_map->table, "t");
  auto r = d.decode_payload_event(ev->payload_events[2]);
  ASSERT_TRUE(r) << r.error().report();
  EXPECT_EQ(r->rows->table_id, 7u);
  auto x = d.decode_payload_event(ev->payload_events[3]);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->xid->xid, 9u);
}

TEST(BinlogEvent, TransactionPayloadWithCorruptZstdIsAnError) {
  EventDecoder d(Flavor::kMySql);
  ASSERT_TRUE(d.decode(test::format_description("8.0.36")));
  Wire body;
  body.packed(2).packed(1).packed(0).packed(0).raw("\x28\xb5\x2f\xfd garbage");
  auto ev = d.decode(keep(test::event(40, body.bytes())));
  ASSERT_FALSE(ev);
  EXPECT_THAT(ev.error().message(), HasSubstr("TRANSACTION_PAYLOAD event"));
}

TEST(BinlogEvent, EveryTruncationOfEveryEventIsAnErrorNotACrash) {
  std::vector<Bytes> events = {
      test::event(
          2,
          Wire().u32(1).u32(0).u8(3).u16(0).u16(3).u8(4).u16(45).raw("app").u8(0).raw("x").bytes()),
      test::event(19,
                  test::table_map_body(
                      42, "app", "orders",
                      {{3, {}}, {15, Wire().u16(400).bytes()}, {246, {10, 2}}, {254, {0xf7, 1}}},
                      optional_metadata())),
      test::event(24, test::rows_body(1, 2, test::all_bits(2), nullptr, {1, 2, 3})),
      test::event(162, Wire().u64(100).u32(0).u8(0x0e).u64(3).bytes()),
      test::event(163, Wire().u32(1).u32(0).u32(1).u64(100).bytes()),
      test::event(161, Wire().u32(3).raw("abc").bytes()),
      test::event(4, Wire().u64(4).raw("f").bytes()),
  };
  for (const auto& e : events) {
    for (std::size_t cut = 0; cut < e.size(); ++cut) {
      // Re-frame the truncated event (size field and checksum) so that the body is short.
      if (cut < 19) {
        auto d = maria();
        EXPECT_FALSE(d.decode(Bytes(e.begin(), e.begin() + cut)));
        continue;
      }
      Bytes body(e.begin() + 19, e.begin() + cut);
      auto d = maria();
      auto ev = d.decode(keep(test::event(e[4], body)));
      (void)ev;  // must not crash; most are errors
    }
  }
}

}  // namespace
}  // namespace cppcdc::mysql
