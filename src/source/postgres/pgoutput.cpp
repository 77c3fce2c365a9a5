#include "source/postgres/pgoutput.hpp"

#include <boost/json.hpp>
#include <cstddef>
#include <string_view>
#include <utility>

#include "core/text_util.hpp"
#include "source/postgres/byte_reader.hpp"

namespace cppcdc::pg {

namespace {

using detail::ByteReader;

// Unwraps a Result into `lhs`, returning its error from the enclosing function otherwise.
#define PGO_ASSIGN(lhs, expr)                                     \
  auto PGO_CONCAT(pgo_r_, __LINE__) = (expr);                     \
  if (!PGO_CONCAT(pgo_r_, __LINE__)) {                            \
    return fail(std::move(PGO_CONCAT(pgo_r_, __LINE__)).error()); \
  }                                                               \
  lhs = std::move(*PGO_CONCAT(pgo_r_, __LINE__))
#define PGO_CONCAT_INNER(a, b) a##b
#define PGO_CONCAT(a, b) PGO_CONCAT_INNER(a, b)

// Smallest encodings, used to bound element counts before reserving memory.
constexpr std::size_t kMinTupleColumnBytes = 1;      // 'n' or 'u'
constexpr std::size_t kMinRelationColumnBytes = 10;  // flags, "" name, type oid, typmod
constexpr std::size_t kXLogDataHeaderBytes = 25;
constexpr std::size_t kKeepaliveBytes = 18;
constexpr std::size_t kStandbyStatusBytes = 34;

// "'x' (0x78)" for printable bytes, "0x05" otherwise.
std::string describe_byte(std::uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  if (b >= 0x20 && b < 0x7f) {
    out.push_back('\'');
    out.push_back(static_cast<char>(b));
    out.append("' (");
  }
  out.append("0x");
  out.push_back(kHex[b >> 4]);
  out.push_back(kHex[b & 0xf]);
  if (b >= 0x20 && b < 0x7f) out.push_back(')');
  return out;
}

Lsn to_lsn(std::uint64_t v) { return Lsn(v); }

// ---- tuples ----------------------------------------------------------------------------

Result<TupleData> read_tuple(ByteReader& r, std::string_view which) {
  // Error text is only assembled on the failure paths: this runs for every row.
  auto count_what = [&] { return std::string(which) + " column count"; };
  const std::size_t count_offset = r.offset();
  auto count_r = r.i16("column count");
  if (!count_r) return fail(r.past_end(count_what()));
  const std::int16_t count = *count_r;
  if (count < 0) {
    return fail(r.error_at(count_offset, "negative " + count_what() + " " + std::to_string(count)));
  }
  const auto n = static_cast<std::size_t>(count);
  if (n * kMinTupleColumnBytes > r.remaining()) {
    return fail(
        r.error_at(count_offset, count_what() + " " + std::to_string(n) + " needs at least " +
                                     std::to_string(n * kMinTupleColumnBytes) + " bytes but only " +
                                     std::to_string(r.remaining()) + " remain in the " +
                                     std::to_string(r.size()) + "-byte message"));
  }
  TupleData tuple;
  tuple.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t kind_offset = r.offset();
    auto column_name = [&] { return std::string(which) + " column " + std::to_string(i + 1); };
    auto kind_r = r.u8("kind");
    if (!kind_r) return fail(r.past_end(column_name() + " kind"));
    TupleColumn column;
    switch (*kind_r) {
      case 'n':
        column.kind = TupleColumn::Kind::kNull;
        break;
      case 'u':
        column.kind = TupleColumn::Kind::kUnchanged;
        break;
      case 't':
      case 'b': {
        column.kind = *kind_r == 't' ? TupleColumn::Kind::kText : TupleColumn::Kind::kBinary;
        const std::size_t length_offset = r.offset();
        auto length_r = r.i32("length");
        if (!length_r) return fail(r.past_end(column_name() + " length"));
        const std::int32_t length = *length_r;
        if (length < 0) {
          return fail(r.error_at(
              length_offset, "negative " + column_name() + " length " + std::to_string(length)));
        }
        auto value_r = r.take(static_cast<std::size_t>(length), "value");
        if (!value_r) {
          return fail(r.past_end(column_name() + " length " + std::to_string(length)));
        }
        // Constructed straight from the bytes (assigning into an empty string costs more).
        tuple.push_back(TupleColumn{column.kind,
                                    std::string(reinterpret_cast<const char*>(value_r->data()),
                                                value_r->size())});
        continue;
      }
      default:
        return fail(r.error_at(kind_offset,
                               "unknown " + column_name() + " kind " + describe_byte(*kind_r)));
    }
    tuple.push_back(std::move(column));
  }
  return tuple;
}

// Reads the one-byte marker that introduces a tuple ('N', 'K' or 'O').
Result<std::uint8_t> read_marker(ByteReader& r, std::string_view allowed, std::string_view what) {
  const std::size_t offset = r.offset();
  PGO_ASSIGN(const std::uint8_t marker, r.u8(what));
  if (marker == 0 || allowed.find(static_cast<char>(marker)) == std::string_view::npos) {
    std::string text = "expected ";
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      if (i > 0) text.append(i + 1 == allowed.size() ? " or " : ", ");
      text.push_back('\'');
      text.push_back(allowed[i]);
      text.push_back('\'');
    }
    text.append(" as ").append(what).append(" but found ").append(describe_byte(marker));
    return fail(r.error_at(offset, text));
  }
  return marker;
}

// ---- one decoder per message -------------------------------------------------------------
// Each is handed a reader positioned just after the tag byte and must consume every byte.

Result<PgOutputMessage> decode_begin(ByteReader& r) {
  BeginMsg m;
  PGO_ASSIGN(const std::uint64_t final_lsn, r.u64("final LSN"));
  PGO_ASSIGN(m.commit_time, r.i64("commit timestamp"));
  PGO_ASSIGN(m.xid, r.u32("xid"));
  m.final_lsn = to_lsn(final_lsn);
  return m;
}

Result<PgOutputMessage> decode_commit(ByteReader& r) {
  CommitMsg m;
  PGO_ASSIGN(m.flags, r.u8("flags"));
  PGO_ASSIGN(const std::uint64_t commit_lsn, r.u64("commit LSN"));
  PGO_ASSIGN(const std::uint64_t end_lsn, r.u64("end LSN"));
  PGO_ASSIGN(m.commit_time, r.i64("commit timestamp"));
  m.commit_lsn = to_lsn(commit_lsn);
  m.end_lsn = to_lsn(end_lsn);
  return m;
}

Result<PgOutputMessage> decode_origin(ByteReader& r) {
  OriginMsg m;
  PGO_ASSIGN(const std::uint64_t commit_lsn, r.u64("origin commit LSN"));
  PGO_ASSIGN(const std::string_view name, r.cstring("origin name"));
  m.commit_lsn = to_lsn(commit_lsn);
  m.name.assign(name);
  return m;
}

Result<PgOutputMessage> decode_relation(ByteReader& r) {
  RelationMsg m;
  PGO_ASSIGN(m.relation_id, r.u32("relation id"));
  PGO_ASSIGN(const std::string_view namespace_name, r.cstring("namespace"));
  PGO_ASSIGN(const std::string_view relation_name, r.cstring("relation name"));
  m.namespace_name.assign(namespace_name);
  m.relation_name.assign(relation_name);
  const std::size_t identity_offset = r.offset();
  PGO_ASSIGN(const std::uint8_t identity, r.u8("replica identity"));
  if (identity != 'd' && identity != 'n' && identity != 'f' && identity != 'i') {
    return fail(r.error_at(identity_offset, "unknown replica identity " + describe_byte(identity)));
  }
  m.replica_identity = static_cast<char>(identity);
  const std::size_t count_offset = r.offset();
  PGO_ASSIGN(const std::int16_t count, r.i16("column count"));
  if (count < 0) {
    return fail(r.error_at(count_offset, "negative column count " + std::to_string(count)));
  }
  const auto n = static_cast<std::size_t>(count);
  if (n * kMinRelationColumnBytes > r.remaining()) {
    return fail(r.error_at(count_offset, "column count " + std::to_string(n) + " needs at least " +
                                             std::to_string(n * kMinRelationColumnBytes) +
                                             " bytes but only " + std::to_string(r.remaining()) +
                                             " remain in the " + std::to_string(r.size()) +
                                             "-byte message"));
  }
  m.columns.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Relation messages are rare, so the field names are built up front.
    const std::string prefix = "column " + std::to_string(i + 1) + " ";
    RelationColumn column;
    PGO_ASSIGN(const std::uint8_t flags, r.u8(prefix + "flags"));
    PGO_ASSIGN(const std::string_view name, r.cstring(prefix + "name"));
    PGO_ASSIGN(column.type_oid, r.u32(prefix + "type oid"));
    PGO_ASSIGN(column.type_modifier, r.i32(prefix + "type modifier"));
    column.part_of_key = (flags & 1U) != 0;
    column.name.assign(name);
    m.columns.push_back(std::move(column));
  }
  return m;
}

Result<PgOutputMessage> decode_type(ByteReader& r) {
  TypeMsg m;
  PGO_ASSIGN(m.type_oid, r.u32("type oid"));
  PGO_ASSIGN(const std::string_view namespace_name, r.cstring("namespace"));
  PGO_ASSIGN(const std::string_view type_name, r.cstring("type name"));
  m.namespace_name.assign(namespace_name);
  m.type_name.assign(type_name);
  return m;
}

Result<PgOutputMessage> decode_insert(ByteReader& r) {
  InsertMsg m;
  PGO_ASSIGN(m.relation_id, r.u32("relation id"));
  CPPCDC_TRY(read_marker(r, "N", "new tuple marker"));
  PGO_ASSIGN(m.new_tuple, read_tuple(r, "new tuple"));
  return m;
}

Result<PgOutputMessage> decode_update(ByteReader& r) {
  UpdateMsg m;
  PGO_ASSIGN(m.relation_id, r.u32("relation id"));
  PGO_ASSIGN(std::uint8_t marker, read_marker(r, "KON", "tuple marker"));
  if (marker != 'N') {
    m.old_kind = static_cast<char>(marker);
    PGO_ASSIGN(m.old_tuple, read_tuple(r, "old tuple"));
    CPPCDC_TRY(read_marker(r, "N", "new tuple marker"));
  }
  PGO_ASSIGN(m.new_tuple, read_tuple(r, "new tuple"));
  return m;
}

Result<PgOutputMessage> decode_delete(ByteReader& r) {
  DeleteMsg m;
  PGO_ASSIGN(m.relation_id, r.u32("relation id"));
  PGO_ASSIGN(const std::uint8_t marker, read_marker(r, "KO", "old tuple marker"));
  m.old_kind = static_cast<char>(marker);
  PGO_ASSIGN(m.old_tuple, read_tuple(r, "old tuple"));
  return m;
}

Result<PgOutputMessage> decode_truncate(ByteReader& r) {
  TruncateMsg m;
  const std::size_t count_offset = r.offset();
  PGO_ASSIGN(const std::int32_t count, r.i32("relation count"));
  if (count < 0) {
    return fail(r.error_at(count_offset, "negative relation count " + std::to_string(count)));
  }
  PGO_ASSIGN(m.options, r.u8("options"));
  const auto n = static_cast<std::size_t>(count);
  if (n > r.remaining() / 4) {
    return fail(r.error_at(count_offset, "relation count " + std::to_string(n) + " needs " +
                                             std::to_string(n * 4) + " bytes but only " +
                                             std::to_string(r.remaining()) + " remain in the " +
                                             std::to_string(r.size()) + "-byte message"));
  }
  m.relation_ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    PGO_ASSIGN(const std::uint32_t id, r.u32("relation id"));
    m.relation_ids.push_back(id);
  }
  return m;
}

Result<PgOutputMessage> decode_message(ByteReader& r) {
  LogicalMessageMsg m;
  PGO_ASSIGN(const std::uint8_t flags, r.u8("flags"));
  PGO_ASSIGN(const std::uint64_t lsn, r.u64("message LSN"));
  PGO_ASSIGN(const std::string_view prefix, r.cstring("prefix"));
  const std::size_t length_offset = r.offset();
  PGO_ASSIGN(const std::int32_t length, r.i32("content length"));
  if (length < 0) {
    return fail(r.error_at(length_offset, "negative content length " + std::to_string(length)));
  }
  PGO_ASSIGN(const auto content, r.take(static_cast<std::size_t>(length),
                                        "content of length " + std::to_string(length)));
  m.transactional = (flags & 1U) != 0;
  m.lsn = to_lsn(lsn);
  m.prefix.assign(prefix);
  m.content.assign(reinterpret_cast<const char*>(content.data()), content.size());
  return m;
}

Result<PgOutputMessage> decode_stream_start(ByteReader& r) {
  StreamStartMsg m;
  PGO_ASSIGN(m.xid, r.u32("xid"));
  PGO_ASSIGN(const std::uint8_t first, r.u8("first segment flag"));
  m.first_segment = first == 1;
  return m;
}

Result<PgOutputMessage> decode_stream_stop(ByteReader&) { return StreamStopMsg{}; }

Result<PgOutputMessage> decode_stream_commit(ByteReader& r) {
  StreamCommitMsg m;
  PGO_ASSIGN(m.xid, r.u32("xid"));
  PGO_ASSIGN(m.flags, r.u8("flags"));
  PGO_ASSIGN(const std::uint64_t commit_lsn, r.u64("commit LSN"));
  PGO_ASSIGN(const std::uint64_t end_lsn, r.u64("end LSN"));
  PGO_ASSIGN(m.commit_time, r.i64("commit timestamp"));
  m.commit_lsn = to_lsn(commit_lsn);
  m.end_lsn = to_lsn(end_lsn);
  return m;
}

Result<PgOutputMessage> decode_stream_abort(ByteReader& r) {
  StreamAbortMsg m;
  PGO_ASSIGN(m.xid, r.u32("xid"));
  PGO_ASSIGN(m.subxid, r.u32("subtransaction xid"));
  return m;
}

using MessageDecoder = Result<PgOutputMessage> (*)(ByteReader&);

struct TagInfo {
  std::string_view context;
  MessageDecoder decode;
  bool xid_in_stream = false;  // carries the change's xid inside a stream block (v2)
};

// Looks up the decoder for a v1 or v2 tag; nullptr decode for anything else.
TagInfo lookup(std::uint8_t tag) {
  switch (tag) {
    case 'B':
      return {"pgoutput Begin", &decode_begin};
    case 'C':
      return {"pgoutput Commit", &decode_commit};
    case 'O':
      return {"pgoutput Origin", &decode_origin};
    case 'R':
      return {"pgoutput Relation", &decode_relation, true};
    case 'Y':
      return {"pgoutput Type", &decode_type, true};
    case 'I':
      return {"pgoutput Insert", &decode_insert, true};
    case 'U':
      return {"pgoutput Update", &decode_update, true};
    case 'D':
      return {"pgoutput Delete", &decode_delete, true};
    case 'T':
      return {"pgoutput Truncate", &decode_truncate, true};
    case 'M':
      return {"pgoutput Message", &decode_message, true};
    case 'S':
      return {"pgoutput Stream Start", &decode_stream_start};
    case 'E':
      return {"pgoutput Stream Stop", &decode_stream_stop};
    case 'c':
      return {"pgoutput Stream Commit", &decode_stream_commit};
    case 'A':
      return {"pgoutput Stream Abort", &decode_stream_abort};
    default:
      return {{}, nullptr};
  }
}

Error unknown_tag(std::uint8_t tag) {
  std::string text = "pgoutput: ";
  switch (tag) {
    case 'b':
    case 'P':
    case 'K':
    case 'r':
    case 'p':
      text.append("two-phase commit message (protocol v3) with tag ")
          .append(describe_byte(tag))
          .append(" is not supported");
      break;
    default:
      text.append("unknown message tag ").append(describe_byte(tag));
      break;
  }
  text.append(" at offset 0");
  return Error::invalid_data(std::move(text));
}

// ---- describe ----------------------------------------------------------------------------


std::string to_hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

// Valid UTF-8 becomes a JSON string; anything else becomes {"hex": "..."} so that the
// output stays valid JSON whatever the bytes.
boost::json::value text_value(std::string_view s) {
  if (cppcdc::detail::is_valid_utf8(s)) return boost::json::string(s);
  boost::json::object o;
  o["hex"] = to_hex(s);
  return o;
}

boost::json::value lsn_value(Lsn lsn) { return boost::json::string(lsn.to_string()); }

boost::json::value char_value(char c) { return text_value(std::string_view(&c, 1)); }

boost::json::array tuple_value(const TupleData& tuple) {
  boost::json::array out;
  out.reserve(tuple.size());
  for (const TupleColumn& column : tuple) {
    switch (column.kind) {
      case TupleColumn::Kind::kNull:
        out.emplace_back(nullptr);
        break;
      case TupleColumn::Kind::kUnchanged: {
        boost::json::object o;
        o["unchanged_toast"] = true;
        out.emplace_back(std::move(o));
        break;
      }
      case TupleColumn::Kind::kText:
        out.push_back(text_value(column.value));
        break;
      case TupleColumn::Kind::kBinary: {
        boost::json::object o;
        o["binary_hex"] = to_hex(column.value);
        out.emplace_back(std::move(o));
        break;
      }
    }
  }
  return out;
}

struct Describer {
  boost::json::object& o;

  void operator()(const StreamStartMsg& m) const {
    o["type"] = "stream_start";
    o["xid"] = m.xid;
    o["first_segment"] = m.first_segment;
  }
  void operator()(const StreamStopMsg&) const { o["type"] = "stream_stop"; }
  void operator()(const StreamCommitMsg& m) const {
    o["type"] = "stream_commit";
    o["xid"] = m.xid;
    o["flags"] = m.flags;
    o["commit_lsn"] = lsn_value(m.commit_lsn);
    o["end_lsn"] = lsn_value(m.end_lsn);
    o["commit_time"] = m.commit_time;
  }
  void operator()(const StreamAbortMsg& m) const {
    o["type"] = "stream_abort";
    o["xid"] = m.xid;
    o["subxid"] = m.subxid;
  }

  void operator()(const BeginMsg& m) const {
    o["type"] = "begin";
    o["final_lsn"] = lsn_value(m.final_lsn);
    o["commit_time"] = m.commit_time;
    o["xid"] = m.xid;
  }
  void operator()(const CommitMsg& m) const {
    o["type"] = "commit";
    o["flags"] = m.flags;
    o["commit_lsn"] = lsn_value(m.commit_lsn);
    o["end_lsn"] = lsn_value(m.end_lsn);
    o["commit_time"] = m.commit_time;
  }
  void operator()(const OriginMsg& m) const {
    o["type"] = "origin";
    o["commit_lsn"] = lsn_value(m.commit_lsn);
    o["name"] = text_value(m.name);
  }
  void operator()(const RelationMsg& m) const {
    o["type"] = "relation";
    o["relation_id"] = m.relation_id;
    o["namespace"] = text_value(m.namespace_name);
    o["name"] = text_value(m.relation_name);
    o["replica_identity"] = char_value(m.replica_identity);
    boost::json::array columns;
    columns.reserve(m.columns.size());
    for (const RelationColumn& c : m.columns) {
      boost::json::object col;
      col["name"] = text_value(c.name);
      col["key"] = c.part_of_key;
      col["type_oid"] = c.type_oid;
      col["type_modifier"] = c.type_modifier;
      columns.emplace_back(std::move(col));
    }
    o["columns"] = std::move(columns);
  }
  void operator()(const TypeMsg& m) const {
    o["type"] = "type";
    o["type_oid"] = m.type_oid;
    o["namespace"] = text_value(m.namespace_name);
    o["name"] = text_value(m.type_name);
  }
  void operator()(const InsertMsg& m) const {
    o["type"] = "insert";
    o["relation_id"] = m.relation_id;
    o["new"] = tuple_value(m.new_tuple);
  }
  void operator()(const UpdateMsg& m) const {
    o["type"] = "update";
    o["relation_id"] = m.relation_id;
    if (m.old_kind) {
      o["old_kind"] = char_value(*m.old_kind);
      o["old"] = tuple_value(m.old_tuple);
    }
    o["new"] = tuple_value(m.new_tuple);
  }
  void operator()(const DeleteMsg& m) const {
    o["type"] = "delete";
    o["relation_id"] = m.relation_id;
    o["old_kind"] = char_value(m.old_kind);
    o["old"] = tuple_value(m.old_tuple);
  }
  void operator()(const TruncateMsg& m) const {
    o["type"] = "truncate";
    o["options"] = m.options;
    o["cascade"] = (m.options & 1U) != 0;
    o["restart_identity"] = (m.options & 2U) != 0;
    boost::json::array ids;
    ids.reserve(m.relation_ids.size());
    for (const std::uint32_t id : m.relation_ids) ids.emplace_back(id);
    o["relation_ids"] = std::move(ids);
  }
  void operator()(const LogicalMessageMsg& m) const {
    o["type"] = "message";
    o["transactional"] = m.transactional;
    o["lsn"] = lsn_value(m.lsn);
    o["prefix"] = text_value(m.prefix);
    o["content"] = text_value(m.content);
  }
};

void put_be(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xffU));
  }
}

}  // namespace

// ---- public API --------------------------------------------------------------------------

Result<CopyFrame> decode_copy_frame(std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) {
    return fail(Error::invalid_data("copy frame: empty CopyData payload at offset 0"));
  }
  switch (bytes[0]) {
    case 'w': {
      ByteReader r(bytes, "XLogData frame");
      (void)r.u8("tag");
      XLogData frame;
      PGO_ASSIGN(const std::uint64_t data_start, r.u64("data start"));
      PGO_ASSIGN(const std::uint64_t wal_end, r.u64("WAL end"));
      PGO_ASSIGN(frame.send_time, r.i64("send time"));
      frame.data_start = Lsn(data_start);
      frame.wal_end = Lsn(wal_end);
      static_assert(kXLogDataHeaderBytes == 25);
      frame.payload = r.rest();  // starts at kXLogDataHeaderBytes
      return frame;
    }
    case 'k': {
      ByteReader r(bytes, "keepalive frame");
      (void)r.u8("tag");
      PrimaryKeepalive frame;
      PGO_ASSIGN(const std::uint64_t wal_end, r.u64("WAL end"));
      PGO_ASSIGN(frame.send_time, r.i64("send time"));
      const std::size_t reply_offset = r.offset();
      PGO_ASSIGN(const std::uint8_t reply, r.u8("reply-requested flag"));
      if (reply > 1) {
        return fail(r.error_at(reply_offset, "reply-requested flag is " + std::to_string(reply) +
                                                 ", expected 0 or 1"));
      }
      CPPCDC_TRY(r.expect_end());
      frame.wal_end = Lsn(wal_end);
      frame.reply_requested = reply == 1;
      static_assert(kKeepaliveBytes == 18);
      return frame;
    }
    default:
      return fail(Error::invalid_data("copy frame: unknown CopyData tag " +
                                      describe_byte(bytes[0]) + " at offset 0"));
  }
}

std::string encode_standby_status(Lsn written, Lsn flushed, Lsn applied, PgTimestamp now,
                                  bool reply_requested) {
  std::string out;
  out.reserve(kStandbyStatusBytes);
  out.push_back('r');
  put_be(out, written.value());
  put_be(out, flushed.value());
  put_be(out, applied.value());
  put_be(out, static_cast<std::uint64_t>(now));
  out.push_back(reply_requested ? '\1' : '\0');
  return out;
}

Result<PgOutputMessage> decode_pgoutput(std::span<const std::uint8_t> bytes,
                                        std::uint32_t* stream_xid) {
  if (bytes.empty()) {
    return fail(Error::invalid_data("pgoutput: empty message (no tag byte) at offset 0"));
  }
  const TagInfo info = lookup(bytes[0]);
  if (info.decode == nullptr) return fail(unknown_tag(bytes[0]));
  ByteReader r(bytes, info.context);
  (void)r.u8("tag");
  if (stream_xid && info.xid_in_stream) {
    PGO_ASSIGN(*stream_xid, r.u32("xid of the streamed change"));
  }
  PGO_ASSIGN(PgOutputMessage message, info.decode(r));
  CPPCDC_TRY(r.expect_end());
  return message;
}

std::string describe(const PgOutputMessage& message) {
  boost::json::object o;
  std::visit(Describer{o}, message);
  return boost::json::serialize(o);
}

#undef PGO_ASSIGN
#undef PGO_CONCAT
#undef PGO_CONCAT_INNER

}  // namespace cppcdc::pg
