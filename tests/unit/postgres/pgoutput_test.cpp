// Unit tests of the pgoutput v1 decoder and the CopyBoth frame codec. Frames are built by
// hand with the tiny encoder below, so every field's bytes are visible in the test.

#include "source/postgres/pgoutput.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cppcdc::pg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Big-endian writer for building wire bytes in tests.
class Wire {
 public:
  Wire& u8(std::uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  Wire& ch(char c) { return u8(static_cast<std::uint8_t>(c)); }
  Wire& i16(std::int16_t v) { return be(static_cast<std::uint16_t>(v), 2); }
  Wire& i32(std::int32_t v) { return be(static_cast<std::uint32_t>(v), 4); }
  Wire& u32(std::uint32_t v) { return be(v, 4); }
  Wire& i64(std::int64_t v) { return be(static_cast<std::uint64_t>(v), 8); }
  Wire& u64(std::uint64_t v) { return be(v, 8); }
  Wire& raw(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  Wire& str(std::string_view s) { return raw(s).u8(0); }  // NUL-terminated
  // Tuple columns.
  Wire& null_col() { return ch('n'); }
  Wire& unchanged_col() { return ch('u'); }
  Wire& text_col(std::string_view v) {
    return ch('t').i32(static_cast<std::int32_t>(v.size())).raw(v);
  }
  Wire& binary_col(std::string_view v) {
    return ch('b').i32(static_cast<std::int32_t>(v.size())).raw(v);
  }

  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  Wire& be(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<std::uint8_t> bytes_;
};

Result<PgOutputMessage> decode(const std::vector<std::uint8_t>& bytes) {
  return decode_pgoutput(std::span<const std::uint8_t>(bytes));
}

std::vector<std::uint8_t> bytes_of(std::string_view s) {
  return std::vector<std::uint8_t>(s.begin(), s.end());
}

// ---- sample messages, one or more per type -----------------------------------------------

std::vector<std::uint8_t> begin_msg() {
  return Wire().ch('B').u64(0x1505618).i64(754'000'000'123'456).u32(735).take();
}
std::vector<std::uint8_t> commit_msg() {
  return Wire().ch('C').u8(0).u64(0x1505618).u64(0x1505650).i64(754'000'000'123'456).take();
}
std::vector<std::uint8_t> origin_msg() {
  return Wire().ch('O').u64(0x2000000).str("upstream").take();
}
std::vector<std::uint8_t> relation_msg() {
  return Wire()
      .ch('R')
      .u32(16385)
      .str("public")
      .str("accounts")
      .ch('d')
      .i16(3)
      .u8(1)
      .str("id")
      .u32(23)
      .i32(-1)
      .u8(0)
      .str("name")
      .u32(1043)
      .i32(36)  // varchar(32): typmod is length + 4
      .u8(0)
      .str("doc")
      .u32(25)
      .i32(-1)
      .take();
}
std::vector<std::uint8_t> type_msg() {
  return Wire().ch('Y').u32(16390).str("public").str("mood").take();
}
std::vector<std::uint8_t> insert_msg() {
  return Wire()
      .ch('I')
      .u32(16385)
      .ch('N')
      .i16(4)
      .text_col("42")
      .null_col()
      .binary_col(std::string("\x00\x01\xff", 3))
      .text_col("")
      .take();
}
std::vector<std::uint8_t> update_plain_msg() {
  return Wire().ch('U').u32(16385).ch('N').i16(2).text_col("1").unchanged_col().take();
}
std::vector<std::uint8_t> update_key_msg() {
  return Wire()
      .ch('U')
      .u32(16385)
      .ch('K')
      .i16(2)
      .text_col("1")
      .null_col()
      .ch('N')
      .i16(2)
      .text_col("2")
      .text_col("x")
      .take();
}
std::vector<std::uint8_t> update_full_msg() {
  return Wire()
      .ch('U')
      .u32(16386)
      .ch('O')
      .i16(3)
      .text_col("1")
      .text_col("big value")
      .text_col("7")
      .ch('N')
      .i16(3)
      .text_col("1")
      .unchanged_col()
      .text_col("8")
      .take();
}
std::vector<std::uint8_t> delete_key_msg() {
  return Wire().ch('D').u32(16385).ch('K').i16(2).text_col("2").null_col().take();
}
std::vector<std::uint8_t> delete_full_msg() {
  return Wire().ch('D').u32(16386).ch('O').i16(2).text_col("1").text_col("y").take();
}
std::vector<std::uint8_t> truncate_msg() {
  return Wire().ch('T').i32(2).u8(3).u32(16385).u32(16386).take();
}
std::vector<std::uint8_t> message_msg() {
  return Wire().ch('M').u8(1).u64(0x1505700).str("app").i32(5).raw("hello").take();
}
std::vector<std::uint8_t> message_nontx_msg() {
  return Wire()
      .ch('M')
      .u8(0)
      .u64(0x1505800)
      .str("bin")
      .i32(3)
      .raw(std::string("\xff\x00\xfe", 3))
      .take();
}

std::vector<std::uint8_t> stream_start_msg() { return Wire().ch('S').u32(740).u8(1).take(); }
std::vector<std::uint8_t> stream_stop_msg() { return Wire().ch('E').take(); }
std::vector<std::uint8_t> stream_commit_msg() {
  return Wire().ch('c').u32(740).u8(0).u64(0x1505618).u64(0x1505650).i64(754'000'000'123'456).take();
}
std::vector<std::uint8_t> stream_abort_msg() { return Wire().ch('A').u32(740).u32(741).take(); }

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> valid_messages() {
  return {
      {"stream_start", stream_start_msg()},
      {"stream_stop", stream_stop_msg()},
      {"stream_commit", stream_commit_msg()},
      {"stream_abort", stream_abort_msg()},
      {"begin", begin_msg()},
      {"commit", commit_msg()},
      {"origin", origin_msg()},
      {"relation", relation_msg()},
      {"type", type_msg()},
      {"insert", insert_msg()},
      {"update_plain", update_plain_msg()},
      {"update_key", update_key_msg()},
      {"update_full", update_full_msg()},
      {"delete_key", delete_key_msg()},
      {"delete_full", delete_full_msg()},
      {"truncate", truncate_msg()},
      {"message", message_msg()},
      {"message_nontx", message_nontx_msg()},
  };
}

template <class T>
const T& as(const Result<PgOutputMessage>& r) {
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().report());
  EXPECT_TRUE(std::holds_alternative<T>(*r));
  return std::get<T>(*r);
}
// A reference into a temporary result would dangle: callers keep the result in a variable.
template <class T>
const T& as(Result<PgOutputMessage>&& r) = delete;

void expect_invalid_data(const Error& e) {
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidData) << e.report();
  EXPECT_THAT(e.message(), HasSubstr("at offset ")) << e.report();
}

// ---- CopyBoth frames ---------------------------------------------------------------------

TEST(PgoutputCopyFrame, XLogDataHeaderFieldsAndPayloadDecode) {
  const auto frame =
      Wire().ch('w').u64(0x1505618).u64(0x1505700).i64(754'000'000'000'001).raw("B-payload").take();
  auto r = decode_copy_frame(frame);
  ASSERT_TRUE(r) << r.error().report();
  const auto& x = std::get<XLogData>(*r);
  EXPECT_EQ(x.data_start, Lsn(0x1505618));
  EXPECT_EQ(x.wal_end, Lsn(0x1505700));
  EXPECT_EQ(x.send_time, 754'000'000'000'001);
  ASSERT_EQ(x.payload.size(), 9u);
  EXPECT_EQ(x.payload.data(), frame.data() + 25);  // a view into the input, no copy
  EXPECT_EQ(std::string(x.payload.begin(), x.payload.end()), "B-payload");
}

TEST(PgoutputCopyFrame, XLogDataWithNoPayloadHasEmptySpan) {
  const auto frame = Wire().ch('w').u64(1).u64(2).i64(3).take();
  auto r = decode_copy_frame(frame);
  ASSERT_TRUE(r) << r.error().report();
  EXPECT_TRUE(std::get<XLogData>(*r).payload.empty());
}

TEST(PgoutputCopyFrame, LsnWithHighBitSetDecodesUnsigned) {
  const auto frame = Wire().ch('w').u64(0xFFFFFFFF00000001ULL).u64(0).i64(-5).take();
  auto r = decode_copy_frame(frame);
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<XLogData>(*r).data_start.to_string(), "FFFFFFFF/1");
  EXPECT_EQ(std::get<XLogData>(*r).send_time, -5);
}

TEST(PgoutputCopyFrame, KeepaliveDecodesWalEndTimeAndReplyFlag) {
  const auto frame = Wire().ch('k').u64(0x3000028).i64(123456789).u8(1).take();
  auto r = decode_copy_frame(frame);
  ASSERT_TRUE(r) << r.error().report();
  const auto& k = std::get<PrimaryKeepalive>(*r);
  EXPECT_EQ(k.wal_end, Lsn(0x3000028));
  EXPECT_EQ(k.send_time, 123456789);
  EXPECT_TRUE(k.reply_requested);
}

TEST(PgoutputCopyFrame, KeepaliveWithoutReplyRequestDecodesFalse) {
  const auto frame = Wire().ch('k').u64(7).i64(8).u8(0).take();
  auto r = decode_copy_frame(frame);
  ASSERT_TRUE(r);
  EXPECT_FALSE(std::get<PrimaryKeepalive>(*r).reply_requested);
}

TEST(PgoutputCopyFrame, KeepaliveWithTrailingByteIsError) {
  const auto frame = Wire().ch('k').u64(7).i64(8).u8(0).u8(0).take();
  auto r = decode_copy_frame(frame);
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_EQ(r.error().message(),
            "keepalive frame: 1 trailing byte after the end of the message at offset 18");
}

TEST(PgoutputCopyFrame, KeepaliveReplyFlagOtherThanZeroOrOneIsError) {
  const auto frame = Wire().ch('k').u64(7).i64(8).u8(2).take();
  auto r = decode_copy_frame(frame);
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_THAT(r.error().message(), HasSubstr("at offset 17"));
}

TEST(PgoutputCopyFrame, EveryTruncationOfXLogDataHeaderIsError) {
  const auto frame = Wire().ch('w').u64(1).u64(2).i64(3).take();
  for (std::size_t n = 0; n < frame.size(); ++n) {
    std::vector<std::uint8_t> cut(frame.begin(), frame.begin() + static_cast<long>(n));
    auto r = decode_copy_frame(cut);
    ASSERT_FALSE(r) << "prefix of " << n << " bytes decoded";
    expect_invalid_data(r.error());
  }
  auto r = decode_copy_frame(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 20));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "XLogData frame: send time runs past the end of the 20-byte message at offset 17");
}

TEST(PgoutputCopyFrame, EveryTruncationOfKeepaliveIsError) {
  const auto frame = Wire().ch('k').u64(1).i64(2).u8(1).take();
  for (std::size_t n = 0; n < frame.size(); ++n) {
    std::vector<std::uint8_t> cut(frame.begin(), frame.begin() + static_cast<long>(n));
    auto r = decode_copy_frame(cut);
    ASSERT_FALSE(r) << "prefix of " << n << " bytes decoded";
    expect_invalid_data(r.error());
  }
}

TEST(PgoutputCopyFrame, EmptyFrameIsError) {
  auto r = decode_copy_frame({});
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
}

TEST(PgoutputCopyFrame, UnknownFrameTagIsErrorNamingTag) {
  auto r = decode_copy_frame(bytes_of("r0000"));
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_EQ(r.error().message(), "copy frame: unknown CopyData tag 'r' (0x72) at offset 0");
}

// ---- standby status ----------------------------------------------------------------------

TEST(PgoutputStandbyStatus, EncodesThirtyFourBigEndianBytes) {
  const std::string s = encode_standby_status(Lsn(0x0102030405060708ULL), Lsn(0x1505650), Lsn(0x10),
                                              754'000'000'000'001, false);
  const auto expected = Wire()
                            .ch('r')
                            .u64(0x0102030405060708ULL)
                            .u64(0x1505650)
                            .u64(0x10)
                            .i64(754'000'000'000'001)
                            .u8(0)
                            .take();
  ASSERT_EQ(s.size(), 34u);
  EXPECT_EQ(std::vector<std::uint8_t>(s.begin(), s.end()), expected);
}

TEST(PgoutputStandbyStatus, ReplyRequestedSetsTheLastByte) {
  const std::string s = encode_standby_status(Lsn(1), Lsn(1), Lsn(1), 0, true);
  ASSERT_EQ(s.size(), 34u);
  EXPECT_EQ(s[0], 'r');
  EXPECT_EQ(s[33], '\1');
}

TEST(PgoutputStandbyStatus, NegativeClockIsEncodedTwosComplement) {
  const std::string s = encode_standby_status(Lsn(), Lsn(), Lsn(), -1, false);
  for (std::size_t i = 25; i < 33; ++i) EXPECT_EQ(static_cast<unsigned char>(s[i]), 0xffu);
}

// ---- each message type -------------------------------------------------------------------

TEST(PgoutputDecoder, BeginDecodesFinalLsnTimeAndXid) {
  auto r = decode(begin_msg());
  const auto& m = as<BeginMsg>(r);
  EXPECT_EQ(m.final_lsn, Lsn(0x1505618));
  EXPECT_EQ(m.commit_time, 754'000'000'123'456);
  EXPECT_EQ(m.xid, 735u);
}

TEST(PgoutputDecoder, CommitDecodesFlagsLsnsAndTime) {
  auto r = decode(commit_msg());
  const auto& m = as<CommitMsg>(r);
  EXPECT_EQ(m.flags, 0);
  EXPECT_EQ(m.commit_lsn, Lsn(0x1505618));
  EXPECT_EQ(m.end_lsn, Lsn(0x1505650));
  EXPECT_EQ(m.commit_time, 754'000'000'123'456);
}

TEST(PgoutputDecoder, OriginDecodesLsnAndName) {
  auto r = decode(origin_msg());
  const auto& m = as<OriginMsg>(r);
  EXPECT_EQ(m.commit_lsn, Lsn(0x2000000));
  EXPECT_EQ(m.name, "upstream");
}

TEST(PgoutputDecoder, RelationDecodesColumnsKeyFlagsAndTypeModifiers) {
  auto r = decode(relation_msg());
  const auto& m = as<RelationMsg>(r);
  EXPECT_EQ(m.relation_id, 16385u);
  EXPECT_EQ(m.namespace_name, "public");
  EXPECT_EQ(m.relation_name, "accounts");
  EXPECT_EQ(m.replica_identity, 'd');
  ASSERT_EQ(m.columns.size(), 3u);
  EXPECT_TRUE(m.columns[0].part_of_key);
  EXPECT_EQ(m.columns[0].name, "id");
  EXPECT_EQ(m.columns[0].type_oid, 23u);
  EXPECT_EQ(m.columns[0].type_modifier, -1);
  EXPECT_FALSE(m.columns[1].part_of_key);
  EXPECT_EQ(m.columns[1].type_oid, 1043u);
  EXPECT_EQ(m.columns[1].type_modifier, 36);
  EXPECT_EQ(m.columns[2].name, "doc");
}

TEST(PgoutputDecoder, RelationWithEmptyNamespaceAndNoColumnsDecodes) {
  auto r = decode(Wire().ch('R').u32(1).str("").str("t").ch('n').i16(0).take());
  const auto& m = as<RelationMsg>(r);
  EXPECT_EQ(m.namespace_name, "");
  EXPECT_EQ(m.replica_identity, 'n');
  EXPECT_TRUE(m.columns.empty());
}

TEST(PgoutputDecoder, RelationAcceptsEveryReplicaIdentity) {
  for (const char identity : {'d', 'n', 'f', 'i'}) {
    auto r = decode(Wire().ch('R').u32(1).str("s").str("t").ch(identity).i16(0).take());
    ASSERT_TRUE(r) << identity;
    EXPECT_EQ(std::get<RelationMsg>(*r).replica_identity, identity);
  }
}

TEST(PgoutputDecoder, TypeDecodesOidNamespaceAndName) {
  auto r = decode(type_msg());
  const auto& m = as<TypeMsg>(r);
  EXPECT_EQ(m.type_oid, 16390u);
  EXPECT_EQ(m.namespace_name, "public");
  EXPECT_EQ(m.type_name, "mood");
}

TEST(PgoutputDecoder, InsertDecodesNullTextBinaryAndEmptyColumns) {
  auto r = decode(insert_msg());
  const auto& m = as<InsertMsg>(r);
  EXPECT_EQ(m.relation_id, 16385u);
  ASSERT_EQ(m.new_tuple.size(), 4u);
  EXPECT_EQ(m.new_tuple[0].kind, TupleColumn::Kind::kText);
  EXPECT_EQ(m.new_tuple[0].value, "42");
  EXPECT_EQ(m.new_tuple[1].kind, TupleColumn::Kind::kNull);
  EXPECT_EQ(m.new_tuple[1].value, "");
  EXPECT_EQ(m.new_tuple[2].kind, TupleColumn::Kind::kBinary);
  EXPECT_EQ(m.new_tuple[2].value, std::string("\x00\x01\xff", 3));
  // An empty string is a value, not NULL.
  EXPECT_EQ(m.new_tuple[3].kind, TupleColumn::Kind::kText);
  EXPECT_EQ(m.new_tuple[3].value, "");
}

TEST(PgoutputDecoder, InsertWithZeroColumnsDecodes) {
  auto r = decode(Wire().ch('I').u32(5).ch('N').i16(0).take());
  EXPECT_TRUE(as<InsertMsg>(r).new_tuple.empty());
}

TEST(PgoutputDecoder, UnchangedToastColumnDecodesAsUnchanged) {
  auto r = decode(update_full_msg());
  const auto& m = as<UpdateMsg>(r);
  ASSERT_EQ(m.new_tuple.size(), 3u);
  EXPECT_EQ(m.new_tuple[1].kind, TupleColumn::Kind::kUnchanged);
  EXPECT_EQ(m.new_tuple[1].value, "");
  // The old row under REPLICA IDENTITY FULL carries the real value.
  EXPECT_EQ(m.old_tuple[1].kind, TupleColumn::Kind::kText);
  EXPECT_EQ(m.old_tuple[1].value, "big value");
}

TEST(PgoutputDecoder, UpdateWithoutOldTupleHasNoOldKind) {
  auto r = decode(update_plain_msg());
  const auto& m = as<UpdateMsg>(r);
  EXPECT_FALSE(m.old_kind.has_value());
  EXPECT_TRUE(m.old_tuple.empty());
  ASSERT_EQ(m.new_tuple.size(), 2u);
  EXPECT_EQ(m.new_tuple[0].value, "1");
}

TEST(PgoutputDecoder, UpdateChangingTheKeyCarriesOldKeyTuple) {
  auto r = decode(update_key_msg());
  const auto& m = as<UpdateMsg>(r);
  ASSERT_TRUE(m.old_kind.has_value());
  EXPECT_EQ(*m.old_kind, 'K');
  ASSERT_EQ(m.old_tuple.size(), 2u);
  EXPECT_EQ(m.old_tuple[0].value, "1");
  EXPECT_EQ(m.old_tuple[1].kind, TupleColumn::Kind::kNull);
  EXPECT_EQ(m.new_tuple[0].value, "2");
  EXPECT_EQ(m.new_tuple[1].value, "x");
}

TEST(PgoutputDecoder, UpdateUnderReplicaIdentityFullCarriesOldRow) {
  auto r = decode(update_full_msg());
  const auto& m = as<UpdateMsg>(r);
  EXPECT_EQ(m.relation_id, 16386u);
  EXPECT_EQ(m.old_kind, 'O');
  EXPECT_EQ(m.old_tuple.size(), 3u);
  EXPECT_EQ(m.new_tuple[2].value, "8");
}

TEST(PgoutputDecoder, DeleteWithKeyDecodes) {
  auto r = decode(delete_key_msg());
  const auto& m = as<DeleteMsg>(r);
  EXPECT_EQ(m.old_kind, 'K');
  ASSERT_EQ(m.old_tuple.size(), 2u);
  EXPECT_EQ(m.old_tuple[0].value, "2");
}

TEST(PgoutputDecoder, DeleteWithFullOldRowDecodes) {
  auto r = decode(delete_full_msg());
  const auto& m = as<DeleteMsg>(r);
  EXPECT_EQ(m.relation_id, 16386u);
  EXPECT_EQ(m.old_kind, 'O');
  EXPECT_EQ(m.old_tuple[1].value, "y");
}

TEST(PgoutputDecoder, TruncateDecodesOptionsAndRelationIds) {
  auto r = decode(truncate_msg());
  const auto& m = as<TruncateMsg>(r);
  EXPECT_EQ(m.options, 3);
  EXPECT_EQ(m.relation_ids, (std::vector<std::uint32_t>{16385, 16386}));
}

TEST(PgoutputDecoder, TruncateOfNoRelationsDecodes) {
  auto r = decode(Wire().ch('T').i32(0).u8(0).take());
  EXPECT_TRUE(as<TruncateMsg>(r).relation_ids.empty());
}

TEST(PgoutputDecoder, TransactionalLogicalMessageDecodes) {
  auto r = decode(message_msg());
  const auto& m = as<LogicalMessageMsg>(r);
  EXPECT_TRUE(m.transactional);
  EXPECT_EQ(m.lsn, Lsn(0x1505700));
  EXPECT_EQ(m.prefix, "app");
  EXPECT_EQ(m.content, "hello");
}

TEST(PgoutputDecoder, NonTransactionalMessageKeepsBinaryContent) {
  auto r = decode(message_nontx_msg());
  const auto& m = as<LogicalMessageMsg>(r);
  EXPECT_FALSE(m.transactional);
  EXPECT_EQ(m.content, std::string("\xff\x00\xfe", 3));
}

TEST(PgoutputDecoder, IntegerFieldsAreBigEndian) {
  auto r = decode(Wire().ch('B').u64(0x0102030405060708ULL).i64(-2).u32(0xA0B0C0D0u).take());
  const auto& m = as<BeginMsg>(r);
  EXPECT_EQ(m.final_lsn.value(), 0x0102030405060708ULL);
  EXPECT_EQ(m.commit_time, -2);
  EXPECT_EQ(m.xid, 0xA0B0C0D0u);
}

// ---- errors ------------------------------------------------------------------------------

TEST(PgoutputDecoderErrors, EmptyMessageIsError) {
  auto r = decode({});
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
}

TEST(PgoutputDecoder, StreamControlMessagesOfProtocolV2Decode) {
  const auto start_r = decode(stream_start_msg());
  const auto& start = as<StreamStartMsg>(start_r);
  EXPECT_EQ(start.xid, 740u);
  EXPECT_TRUE(start.first_segment);
  const auto later_r = decode(Wire().ch('S').u32(740).u8(0).take());
  EXPECT_FALSE(as<StreamStartMsg>(later_r).first_segment);
  const auto stop_r = decode(stream_stop_msg());
  (void)as<StreamStopMsg>(stop_r);
  const auto commit_r = decode(stream_commit_msg());
  const auto& commit = as<StreamCommitMsg>(commit_r);
  EXPECT_EQ(commit.xid, 740u);
  EXPECT_EQ(commit.commit_lsn, pg::Lsn(0x1505618));
  EXPECT_EQ(commit.end_lsn, pg::Lsn(0x1505650));
  EXPECT_EQ(commit.commit_time, 754'000'000'123'456);
  const auto abort_r = decode(stream_abort_msg());
  const auto& abort = as<StreamAbortMsg>(abort_r);
  EXPECT_EQ(abort.xid, 740u);
  EXPECT_EQ(abort.subxid, 741u);
}

TEST(PgoutputDecoder, ChangesInsideAStreamBlockCarryTheirXidAfterTheTag) {
  // Every message that carries an xid inside a stream block: the xid after the tag, then
  // the message's v1 body.
  for (const auto& [name, body] : valid_messages()) {
    const char tag = static_cast<char>(body[0]);
    if (std::string_view("RYIUDTM").find(tag) == std::string_view::npos) continue;
    std::vector<std::uint8_t> streamed{body[0], 0, 0, 0x02, 0xe5};  // xid 741
    streamed.insert(streamed.end(), body.begin() + 1, body.end());
    std::uint32_t xid = 0;
    auto r = decode_pgoutput(std::span<const std::uint8_t>(streamed), &xid);
    ASSERT_TRUE(r) << name << ": " << r.error().report();
    EXPECT_EQ(xid, 741u) << name;
    EXPECT_EQ(describe(*r), describe(*decode(body))) << name;
    // Read as a v1 message, the xid's bytes misalign the fields: refused, never misread.
    if (tag != 'M') {
      EXPECT_FALSE(decode(streamed)) << name;
    }
  }
  // Control messages carry no such xid.
  std::uint32_t xid = 0;
  auto stop = decode_pgoutput(std::span<const std::uint8_t>(stream_stop_msg()), &xid);
  ASSERT_TRUE(stop);
  EXPECT_EQ(xid, 0u);
}

TEST(PgoutputDecoderErrors, TwoPhaseMessagesOfProtocolV3AreRefusedByTag) {
  for (const char tag : {'b', 'P', 'K', 'r', 'p'}) {
    auto r = decode(Wire().ch(tag).u64(1).u64(2).take());
    ASSERT_FALSE(r) << tag;
    expect_invalid_data(r.error());
    EXPECT_THAT(r.error().message(), HasSubstr(std::string("'") + tag + "'"));
    EXPECT_THAT(r.error().message(), HasSubstr("protocol v3"));
  }
}

TEST(PgoutputDecoderErrors, UnknownTagIsErrorNamingTag) {
  auto r = decode(bytes_of("Zzz"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "pgoutput: unknown message tag 'Z' (0x5a) at offset 0");
  auto r2 = decode(std::vector<std::uint8_t>{0x00});
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().message(), "pgoutput: unknown message tag 0x00 at offset 0");
  auto r3 = decode(std::vector<std::uint8_t>{0xff, 1, 2});
  ASSERT_FALSE(r3);
  EXPECT_THAT(r3.error().message(), HasSubstr("0xff"));
}

TEST(PgoutputDecoderErrors, EveryTruncationOfEveryValidMessageIsError) {
  for (const auto& [name, bytes] : valid_messages()) {
    ASSERT_TRUE(decode(bytes)) << name << " should decode whole";
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
      auto r = decode(cut);
      ASSERT_FALSE(r) << name << " decoded from a " << n << "-byte prefix";
      expect_invalid_data(r.error());
    }
  }
}

TEST(PgoutputDecoderErrors, TrailingByteAfterEveryValidMessageIsError) {
  for (const auto& [name, bytes] : valid_messages()) {
    auto longer = bytes;
    longer.push_back(0);
    auto r = decode(longer);
    ASSERT_FALSE(r) << name << " accepted a trailing byte";
    expect_invalid_data(r.error());
    EXPECT_THAT(r.error().message(), HasSubstr("1 trailing byte after the end of the message"));
    EXPECT_THAT(r.error().message(), HasSubstr("at offset " + std::to_string(bytes.size())));
  }
}

TEST(PgoutputDecoderErrors, ErrorsNameTheMessageType) {
  auto cut = insert_msg();
  cut.resize(6);
  auto r = decode(cut);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), StartsWith("pgoutput Insert: "));
  EXPECT_EQ(r.error().report(), "invalid data: " + r.error().message());
}

TEST(PgoutputDecoderErrors, ColumnLengthPastEndNamesColumnLengthSizeAndOffset) {
  auto bytes = Wire()
                   .ch('I')
                   .u32(1)
                   .ch('N')
                   .i16(3)
                   .text_col("a")
                   .null_col()
                   .ch('t')
                   .i32(5000)
                   .raw("only a few bytes")
                   .take();
  auto r = decode(bytes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Insert: new tuple column 3 length 5000 runs past the end of the " +
                std::to_string(bytes.size()) + "-byte message at offset 20");
}

TEST(PgoutputDecoderErrors, NegativeColumnLengthIsError) {
  auto r = decode(Wire().ch('I').u32(1).ch('N').i16(1).ch('t').i32(-1).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Insert: negative new tuple column 1 length -1 at offset 9");
}

TEST(PgoutputDecoderErrors, NegativeBinaryColumnLengthIsError) {
  auto r = decode(Wire().ch('I').u32(1).ch('N').i16(1).ch('b').i32(INT32_MIN).take());
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_THAT(r.error().message(), HasSubstr("negative"));
}

TEST(PgoutputDecoderErrors, NegativeTupleColumnCountIsError) {
  auto r = decode(Wire().ch('D').u32(1).ch('K').i16(-1).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "pgoutput Delete: negative old tuple column count -1 at offset 6");
}

TEST(PgoutputDecoderErrors, HugeTupleColumnCountIsRejectedBeforeReading) {
  auto r = decode(Wire().ch('I').u32(1).ch('N').i16(32767).null_col().null_col().take());
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_THAT(r.error().message(), HasSubstr("new tuple column count 32767 needs at least"));
  EXPECT_THAT(r.error().message(), HasSubstr("at offset 6"));
}

TEST(PgoutputDecoderErrors, UnknownTupleColumnKindIsError) {
  auto r = decode(Wire().ch('I').u32(1).ch('N').i16(2).null_col().ch('x').take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Insert: unknown new tuple column 2 kind 'x' (0x78) at offset 9");
}

TEST(PgoutputDecoderErrors, InsertWithoutNewTupleMarkerIsError) {
  auto r = decode(Wire().ch('I').u32(1).ch('K').i16(0).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Insert: expected 'N' as new tuple marker but found 'K' (0x4b) at offset 5");
}

TEST(PgoutputDecoderErrors, UpdateWithUnknownTupleMarkerIsError) {
  auto r = decode(Wire().ch('U').u32(1).ch('X').i16(0).take());
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_THAT(r.error().message(), HasSubstr("expected 'K', 'O' or 'N'"));
}

TEST(PgoutputDecoderErrors, UpdateOldTupleNotFollowedByNewTupleIsError) {
  auto r = decode(Wire().ch('U').u32(1).ch('O').i16(0).ch('O').i16(0).take());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("expected 'N' as new tuple marker"));
  EXPECT_THAT(r.error().message(), HasSubstr("at offset 8"));
}

TEST(PgoutputDecoderErrors, DeleteWithNewTupleMarkerIsError) {
  auto r = decode(Wire().ch('D').u32(1).ch('N').i16(0).take());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("expected 'K' or 'O'"));
}

TEST(PgoutputDecoderErrors, StringWithoutTerminatingNulIsError) {
  auto r = decode(Wire().ch('Y').u32(1).str("public").raw("mood").take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Type: type name has no terminating NUL before the end of the 16-byte "
            "message at offset 12");
}

TEST(PgoutputDecoderErrors, UnknownReplicaIdentityIsError) {
  auto r = decode(Wire().ch('R').u32(1).str("s").str("t").ch('z').i16(0).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Relation: unknown replica identity 'z' (0x7a) at offset 9");
}

TEST(PgoutputDecoderErrors, NegativeRelationColumnCountIsError) {
  auto r = decode(Wire().ch('R').u32(1).str("s").str("t").ch('d').i16(-3).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "pgoutput Relation: negative column count -3 at offset 10");
}

TEST(PgoutputDecoderErrors, HugeRelationColumnCountIsRejectedBeforeReading) {
  auto r = decode(Wire().ch('R').u32(1).str("s").str("t").ch('d').i16(32767).take());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("column count 32767 needs at least 327670 bytes"));
}

TEST(PgoutputDecoderErrors, RelationColumnErrorsNameTheColumn) {
  // The type modifier of column 1 has only three of its four bytes.
  auto r = decode(Wire()
                      .ch('R')
                      .u32(1)
                      .str("s")
                      .str("t")
                      .ch('d')
                      .i16(1)
                      .u8(0)
                      .str("c")
                      .u32(25)
                      .raw("\xff\xff\xff")
                      .take());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("column 1 type modifier runs past the end"));
}

TEST(PgoutputDecoderErrors, NegativeTruncateRelationCountIsError) {
  auto r = decode(Wire().ch('T').i32(-1).u8(0).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "pgoutput Truncate: negative relation count -1 at offset 1");
}

TEST(PgoutputDecoderErrors, HugeTruncateRelationCountIsRejectedBeforeReading) {
  auto r = decode(Wire().ch('T').i32(INT32_MAX).u8(0).u32(1).take());
  ASSERT_FALSE(r);
  expect_invalid_data(r.error());
  EXPECT_THAT(r.error().message(), HasSubstr("relation count 2147483647 needs"));
}

TEST(PgoutputDecoderErrors, NegativeMessageContentLengthIsError) {
  auto r = decode(Wire().ch('M').u8(1).u64(1).str("p").i32(-7).take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "pgoutput Message: negative content length -7 at offset 12");
}

TEST(PgoutputDecoderErrors, MessageContentLongerThanMessageIsError) {
  auto r = decode(Wire().ch('M').u8(1).u64(1).str("p").i32(100).raw("short").take());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(),
            "pgoutput Message: content of length 100 runs past the end of the 21-byte message at "
            "offset 16");
}

// ---- describe ----------------------------------------------------------------------------

std::string describe_bytes(const std::vector<std::uint8_t>& bytes) {
  auto r = decode(bytes);
  EXPECT_TRUE(r) << r.error().report();
  return r ? describe(*r) : std::string();
}

TEST(PgoutputDescribe, BeginAndCommitRenderExactly) {
  EXPECT_EQ(describe_bytes(begin_msg()),
            R"({"type":"begin","final_lsn":"0/1505618","commit_time":754000000123456,"xid":735})");
  EXPECT_EQ(describe_bytes(commit_msg()),
            R"({"type":"commit","flags":0,"commit_lsn":"0/1505618","end_lsn":"0/1505650",)"
            R"("commit_time":754000000123456})");
}

TEST(PgoutputDescribe, RelationListsColumns) {
  EXPECT_EQ(describe_bytes(relation_msg()),
            R"({"type":"relation","relation_id":16385,"namespace":"public","name":"accounts",)"
            R"("replica_identity":"d","columns":[)"
            R"({"name":"id","key":true,"type_oid":23,"type_modifier":-1},)"
            R"({"name":"name","key":false,"type_oid":1043,"type_modifier":36},)"
            R"({"name":"doc","key":false,"type_oid":25,"type_modifier":-1}]})");
}

TEST(PgoutputDescribe, TupleColumnsRenderNullTextBinaryAndUnchangedDistinctly) {
  EXPECT_EQ(
      describe_bytes(insert_msg()),
      R"({"type":"insert","relation_id":16385,"new":["42",null,{"binary_hex":"0001ff"},""]})");
  EXPECT_EQ(describe_bytes(update_full_msg()),
            R"({"type":"update","relation_id":16386,"old_kind":"O","old":["1","big value","7"],)"
            R"("new":["1",{"unchanged_toast":true},"8"]})");
}

TEST(PgoutputDescribe, UpdateWithoutOldTupleOmitsOldFields) {
  EXPECT_EQ(describe_bytes(update_plain_msg()),
            R"({"type":"update","relation_id":16385,"new":["1",{"unchanged_toast":true}]})");
}

TEST(PgoutputDescribe, TruncateSpellsOutOptionBits) {
  EXPECT_EQ(describe_bytes(truncate_msg()),
            R"({"type":"truncate","options":3,"cascade":true,"restart_identity":true,)"
            R"("relation_ids":[16385,16386]})");
}

TEST(PgoutputDescribe, InvalidUtf8IsRenderedAsHex) {
  EXPECT_EQ(describe_bytes(message_nontx_msg()),
            R"({"type":"message","transactional":false,"lsn":"0/1505800","prefix":"bin",)"
            R"("content":{"hex":"ff00fe"}})");
  // Overlong encoding, lone surrogate, truncated sequence, code point above U+10FFFF.
  for (const std::string bad : {"\xc0\xaf", "\xed\xa0\x80", "a\xe2\x82", "\xf4\x90\x80\x80"}) {
    auto bytes = Wire().ch('I').u32(1).ch('N').i16(1).text_col(bad).take();
    const std::string line = describe_bytes(bytes);
    EXPECT_THAT(line, HasSubstr(R"({"hex":")")) << line;
  }
}

TEST(PgoutputDescribe, ValidUtf8AndControlCharactersStayReadableJson) {
  const std::string value = "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"\n\t\x01";
  auto bytes = Wire().ch('I').u32(1).ch('N').i16(1).text_col(value).take();
  const std::string line = describe_bytes(bytes);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto parsed = boost::json::parse(line);
  EXPECT_EQ(parsed.at("new").at(0).as_string(), value);
}

TEST(PgoutputDescribe, EveryMessageTypeRendersOneLineOfValidJson) {
  for (const auto& [name, bytes] : valid_messages()) {
    const std::string line = describe_bytes(bytes);
    EXPECT_EQ(line.find('\n'), std::string::npos) << name;
    boost::system::error_code ec;
    const auto parsed = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << name << ": " << line;
    EXPECT_TRUE(parsed.as_object().contains("type")) << name;
    EXPECT_EQ(describe_bytes(bytes), line) << name << " is not deterministic";
  }
}

TEST(PgoutputDescribe, OriginTypeAndMessageRenderExactly) {
  EXPECT_EQ(describe_bytes(origin_msg()),
            R"({"type":"origin","commit_lsn":"0/2000000","name":"upstream"})");
  EXPECT_EQ(describe_bytes(type_msg()),
            R"({"type":"type","type_oid":16390,"namespace":"public","name":"mood"})");
  EXPECT_EQ(describe_bytes(message_msg()),
            R"({"type":"message","transactional":true,"lsn":"0/1505700","prefix":"app",)"
            R"("content":"hello"})");
  EXPECT_EQ(describe_bytes(delete_key_msg()),
            R"({"type":"delete","relation_id":16385,"old_kind":"K","old":["2",null]})");
}

}  // namespace
}  // namespace cppcdc::pg
