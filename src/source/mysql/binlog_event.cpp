// Binlog event decoding (binlog_event.hpp). Layouts follow the published binlog format of
// MySQL (libbinlogevents) and MariaDB (log_event.cc); every read goes through the bounds-checked
// ByteReader, so a short or malformed event is an error naming the event and the offset.

#include "source/mysql/binlog_event.hpp"

#include <isa-l/crc.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "source/mysql/byte_reader.hpp"
#include "source/mysql/field_type.hpp"
#include "source/mysql/gtid.hpp"

namespace cppcdc::mysql {
namespace {

// An event's CRC32 (the zlib/gzip polynomial, reflected) with ISA-L, which folds 16 bytes at
// a time with carry-less multiplication where the CPU has it; zlib's table-driven crc32 cost
// about 5% of the reader thread's instructions. The tests build their events' checksums with
// zlib, so the two are checked against each other.
std::uint32_t binlog_crc32(const std::uint8_t* p, std::size_t n) noexcept {
  return crc32_gzip_refl(0, p, n);
}

using detail::ByteReader;

constexpr std::size_t kHeaderLen = 19;
constexpr std::size_t kChecksumLen = 4;
// zlib cannot expand by more than about 1032:1; a declared length beyond that is corrupt.
constexpr std::uint64_t kMaxInflateRatio = 1100;
constexpr std::uint64_t kMaxEventBytes = 1ull << 30;  // max_allowed_packet's ceiling

const char* event_name(std::uint8_t type) noexcept {
  switch (type) {
    case 2:
      return "QUERY event";
    case 3:
      return "STOP event";
    case 4:
      return "ROTATE event";
    case 15:
      return "FORMAT_DESCRIPTION event";
    case 16:
      return "XID event";
    case 19:
      return "TABLE_MAP event";
    case 23:
      return "WRITE_ROWS_V1 event";
    case 24:
      return "UPDATE_ROWS_V1 event";
    case 25:
      return "DELETE_ROWS_V1 event";
    case 27:
      return "HEARTBEAT event";
    case 29:
      return "ROWS_QUERY event";
    case 30:
      return "WRITE_ROWS event";
    case 31:
      return "UPDATE_ROWS event";
    case 32:
      return "DELETE_ROWS event";
    case 33:
      return "GTID event";
    case 34:
      return "ANONYMOUS_GTID event";
    case 35:
      return "PREVIOUS_GTIDS event";
    case 39:
      return "PARTIAL_UPDATE_ROWS event";
    case 40:
      return "TRANSACTION_PAYLOAD event";
    case 42:
      return "GTID_TAGGED event";
    case 160:
      return "ANNOTATE_ROWS event";
    case 161:
      return "BINLOG_CHECKPOINT event";
    case 162:
      return "GTID event";
    case 163:
      return "GTID_LIST event";
    case 164:
      return "START_ENCRYPTION event";
    case 165:
      return "QUERY_COMPRESSED event";
    case 166:
      return "WRITE_ROWS_COMPRESSED event";
    case 167:
      return "UPDATE_ROWS_COMPRESSED event";
    case 168:
      return "DELETE_ROWS_COMPRESSED event";
    case 169:
      return "WRITE_ROWS_COMPRESSED_V1 event";
    case 170:
      return "UPDATE_ROWS_COMPRESSED_V1 event";
    case 171:
      return "DELETE_ROWS_COMPRESSED_V1 event";
    default:
      return "binlog event";
  }
}

// Post-header lengths used when no FORMAT_DESCRIPTION said otherwise (MySQL 8 / MariaDB 10.x).
std::size_t default_post_header(std::uint8_t type) noexcept {
  switch (type) {
    case 2:
    case 165:
      return 13;
    case 4:
      return 8;
    case 19:
      return 8;
    case 23:
    case 24:
    case 25:
    case 169:
    case 170:
    case 171:
      return 8;
    case 30:
    case 31:
    case 32:
    case 166:
    case 167:
    case 168:
      return 10;
    case 33:
    case 34:
      return 42;
    case 162:
      return 19;
    case 163:
    case 161:
      return 4;
    default:
      return 0;
  }
}

#define DEC_TRY(var, expr)                               \
  auto var##_r = (expr);                                 \
  if (!var##_r) return fail(std::move(var##_r).error()); \
  auto var = *var##_r

Status read_bitmap(ByteReader& r, std::size_t bits, Bitmap& out, std::string_view what) {
  DEC_TRY(bytes, r.take((bits + 7) / 8, what));
  out.bits = bits;
  out.bytes.assign(bytes.begin(), bytes.end());
  return ok();
}

// The table id: 6 bytes, or 4 when the post-header is the old 6 bytes long.
Result<std::uint64_t> read_table_id(ByteReader& r, std::size_t post_header) {
  return r.le(post_header == 6 ? 4 : 6, "the table id");
}

bool version_has_checksum(std::string_view version) {
  // Checksums exist from MySQL 5.6.1 and MariaDB 5.3 on; the version is "X.Y.Z[-suffix]".
  unsigned a = 0, b = 0, c = 0;
  std::string v(version.substr(0, std::min<std::size_t>(version.size(), 40)));
  if (std::sscanf(v.c_str(), "%u.%u.%u", &a, &b, &c) != 3) return false;
  if (version.find("MariaDB") != std::string_view::npos) return a > 5 || (a == 5 && b >= 3);
  return (a * 256 + b) * 256 + c >= (5 * 256 + 6) * 256 + 1;
}

std::string uuid_text(std::span<const std::uint8_t> b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

// MariaDB compressed data: one byte 0x80 | n, the uncompressed length in n big-endian bytes,
// then a zlib stream.
Result<std::span<const std::uint8_t>> inflate_mariadb(std::span<const std::uint8_t> in,
                                                      std::vector<std::uint8_t>& out,
                                                      const ByteReader& where) {
  if (in.empty()) return fail(where.error("the compressed data is empty"));
  const std::uint8_t head = in[0];
  const std::size_t lenlen = head & 0x07;
  if ((head & 0x80) == 0 || lenlen == 0 || lenlen > 4) {
    return fail(where.error("the compressed data starts with 0x" + ByteReader::hex_byte(head) +
                            " (expected 0x81 to 0x84)"));
  }
  if (in.size() < 1 + lenlen) return fail(where.error("the compressed data is truncated"));
  const std::uint64_t len = ByteReader::load_be(in.data() + 1, lenlen);
  const auto zdata = in.subspan(1 + lenlen);
  if (len > kMaxEventBytes || len > kMaxInflateRatio * zdata.size() + 1024) {
    return fail(where.error("the compressed data declares " + std::to_string(len) +
                            " bytes, more than " + std::to_string(zdata.size()) +
                            " compressed bytes can hold"));
  }
  out.resize(static_cast<std::size_t>(len));
  uLongf dest_len = static_cast<uLongf>(len);
  uLong src_len = static_cast<uLong>(zdata.size());
  const int rc = uncompress2(out.data(), &dest_len, zdata.data(), &src_len);
  if (rc != Z_OK || dest_len != len) {
    return fail(where.error("the compressed data does not inflate to its declared " +
                            std::to_string(len) + " bytes (zlib " + std::to_string(rc) + ")"));
  }
  return std::span<const std::uint8_t>(out.data(), out.size());
}

Result<QueryEvent> decode_query(ByteReader& r, std::size_t post_header, bool compressed,
                                std::vector<std::uint8_t>& inflated) {
  QueryEvent q;
  DEC_TRY(thread_id, r.u32("the thread id"));
  q.thread_id = thread_id;
  CPPCDC_TRY(r.skip(4, "the execution time"));
  DEC_TRY(db_len, r.u8("the database name length"));
  DEC_TRY(error_code, r.u16("the error code"));
  q.error_code = error_code;
  std::size_t status_len = 0;
  if (post_header >= 13) {
    DEC_TRY(sl, r.u16("the status variables length"));
    status_len = sl;
  }
  if (post_header > 13) CPPCDC_TRY(r.skip(post_header - 13, "the post-header"));
  DEC_TRY(status, r.take(status_len, "the status variables"));
  {
    // Only the charset is wanted; an unknown code ends the walk (its length is unknown, and
    // the database and statement are located by the lengths above anyway).
    ByteReader s(status, r.context(), r.offset() - status_len);
    while (!s.at_end()) {
      auto code = s.u8("a status variable code");
      if (!code) break;
      std::size_t skip = 0;
      bool known = true;
      switch (*code) {
        case 0:
          skip = 4;
          break;  // flags2
        case 1:
          skip = 8;
          break;   // sql_mode
        case 2: {  // catalog (old): length, text, NUL
          auto n = s.u8("the catalog length");
          if (!n) {
            known = false;
            break;
          }
          skip = *n + 1u;
          break;
        }
        case 3:
          skip = 4;
          break;   // auto_increment
        case 4: {  // charset: client, connection collation, server collation
          auto cs = s.u16("the client charset");
          if (!cs) {
            known = false;
            break;
          }
          q.client_charset = *cs;
          skip = 4;
          break;
        }
        case 5:
        case 6: {  // time zone, catalog: length + text
          auto n = s.u8("a status variable length");
          if (!n) {
            known = false;
            break;
          }
          skip = *n;
          break;
        }
        case 7:
          skip = 2;
          break;  // lc_time_names
        case 8:
          skip = 2;
          break;  // charset_database
        case 9:
          skip = 8;
          break;  // table_map_for_update
        case 10:
          skip = 4;
          break;    // master_data_written
        case 11: {  // invoker: user, host
          auto n = s.u8("the invoker user length");
          if (!n || !s.skip(*n, "the invoker user")) {
            known = false;
            break;
          }
          auto h = s.u8("the invoker host length");
          if (!h) {
            known = false;
            break;
          }
          skip = *h;
          break;
        }
        case 12: {  // updated db names: count, NUL-terminated names
          auto n = s.u8("the updated database count");
          if (!n) {
            known = false;
            break;
          }
          if (*n == 254) break;  // too many to list
          for (unsigned i = 0; i < *n && known; ++i) {
            const auto rest = s.remaining();
            const auto* p = s.cursor();
            const void* nul = std::memchr(p, 0, rest);
            if (nul == nullptr) {
              known = false;
              break;
            }
            (void)s.skip(static_cast<const std::uint8_t*>(nul) - p + 1, "a database name");
          }
          break;
        }
        case 13:
          skip = 3;
          break;  // microseconds
        case 16:
          skip = 1;
          break;  // explicit_defaults_for_timestamp
        case 17:
          skip = 8;
          break;  // ddl_logged_with_xid
        case 18:
          skip = 2;
          break;  // default_collation_for_utf8mb4
        case 19:
          skip = 1;
          break;  // sql_require_primary_key
        case 20:
          skip = 1;
          break;  // default_table_encryption
        case 128:
          skip = 3;
          break;  // MariaDB hrnow
        case 129:
          skip = 8;
          break;  // MariaDB xid
        case 130:
          skip = 1;
          break;  // MariaDB gtid flags3
        default:
          known = false;
      }
      if (!known || !s.skip(skip, "a status variable")) break;
    }
  }
  DEC_TRY(db, r.str(db_len, "the database name"));
  q.database = db;
  CPPCDC_TRY(r.skip(1, "the NUL after the database name"));
  auto rest = r.rest();
  if (compressed) {
    DEC_TRY(plain, inflate_mariadb(rest, inflated, r));
    rest = plain;
  }
  q.sql = std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size());
  return q;
}

bool is_numeric(std::uint8_t t) {
  switch (t) {
    case kTiny:
    case kShort:
    case kInt24:
    case kLong:
    case kLongLong:
    case kNewDecimal:
    case kFloat:
    case kDouble:
      return true;
    default:
      return false;
  }
}

// The real type of a column: STRING hides CHAR, ENUM and SET in its metadata.
std::uint8_t real_type(std::uint8_t type, std::uint16_t meta) {
  if (type == kString && meta >= 256) {
    const std::uint8_t b0 = meta >> 8;
    if ((b0 & 0x30) != 0x30) return b0 | 0x30;  // long CHAR: length bits folded into byte 0
    if (b0 == kEnum || b0 == kSet) return b0;
  }
  return type;
}

bool is_character(std::uint8_t type, std::uint16_t meta) {
  const auto t = real_type(type, meta);
  switch (t) {
    case kString:
    case kVarchar:
    case kVarString:
    case kBlob:
    case kTinyBlob:
    case kMediumBlob:
    case kLongBlob:
      return true;
    default:
      return false;
  }
}

Status read_strings(ByteReader& f, std::vector<std::vector<std::string>>& out) {
  while (!f.at_end()) {
    DEC_TRY(n, f.packed("a value count"));
    if (n > f.remaining()) return fail(f.error("a value count exceeds the field"));
    auto& v = out.emplace_back();
    v.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) {
      DEC_TRY(s, f.packed_str("a value"));
      v.emplace_back(s);
    }
  }
  return ok();
}

// DEFAULT_CHARSET-style field: the default collation, then (column index, collation) pairs
// for the columns that differ, expanded to one collation per column of the kind.
Status read_default_charsets(ByteReader& f, std::size_t columns, std::vector<std::uint32_t>& out) {
  DEC_TRY(def, f.packed("the default collation"));
  out.assign(columns, static_cast<std::uint32_t>(def));
  while (!f.at_end()) {
    DEC_TRY(index, f.packed("a column index"));
    DEC_TRY(coll, f.packed("a collation"));
    if (index >= columns) return fail(f.error("a charset names a column out of range"));
    out[static_cast<std::size_t>(index)] = static_cast<std::uint32_t>(coll);
  }
  return ok();
}

Status decode_optional_metadata(ByteReader& r, TableMapEvent& t) {
  std::size_t numeric = 0, character = 0, enum_set = 0;
  for (std::size_t i = 0; i < t.column_types.size(); ++i) {
    const auto rt = real_type(t.column_types[i], t.column_meta[i]);
    if (is_numeric(rt)) ++numeric;
    if (is_character(t.column_types[i], t.column_meta[i])) ++character;
    if (rt == kEnum || rt == kSet) ++enum_set;
  }
  auto& m = t.metadata;
  while (!r.at_end()) {
    DEC_TRY(type, r.u8("an optional metadata type"));
    DEC_TRY(len, r.packed("an optional metadata length"));
    DEC_TRY(body, r.take(static_cast<std::size_t>(len), "an optional metadata field"));
    ByteReader f(body, r.context(), r.offset() - body.size());
    switch (type) {
      case 1:  // signedness: one bit per numeric column, most significant bit first
        m.is_unsigned.assign(numeric, false);
        for (std::size_t i = 0; i < numeric; ++i) {
          if (i / 8 >= body.size()) return fail(f.error("the signedness bitmap is short"));
          m.is_unsigned[i] = (body[i / 8] >> (7 - i % 8)) & 1;
        }
        break;
      case 2:
        CPPCDC_TRY(read_default_charsets(f, character, m.charsets));
        break;
      case 3:
        m.charsets.clear();
        while (!f.at_end()) {
          DEC_TRY(c, f.packed("a column collation"));
          m.charsets.push_back(static_cast<std::uint32_t>(c));
        }
        break;
      case 4:
        m.column_names.clear();
        while (!f.at_end()) {
          DEC_TRY(s, f.packed_str("a column name"));
          m.column_names.emplace_back(s);
        }
        break;
      case 5:
        m.set_values.clear();
        CPPCDC_TRY(read_strings(f, m.set_values));
        break;
      case 6:
        m.enum_values.clear();
        CPPCDC_TRY(read_strings(f, m.enum_values));
        break;
      case 8:
        m.primary_key.clear();
        while (!f.at_end()) {
          DEC_TRY(c, f.packed("a key column index"));
          m.primary_key.push_back(static_cast<std::uint32_t>(c));
        }
        break;
      case 9:
        m.primary_key.clear();
        while (!f.at_end()) {
          DEC_TRY(c, f.packed("a key column index"));
          DEC_TRY(prefix, f.packed("a key prefix length"));
          (void)prefix;
          m.primary_key.push_back(static_cast<std::uint32_t>(c));
        }
        break;
      case 10:
        CPPCDC_TRY(read_default_charsets(f, enum_set, m.enum_set_charsets));
        break;
      case 11:
        m.enum_set_charsets.clear();
        while (!f.at_end()) {
          DEC_TRY(c, f.packed("a column collation"));
          m.enum_set_charsets.push_back(static_cast<std::uint32_t>(c));
        }
        break;
      default:
        break;  // geometry types, visibility, later additions: not needed
    }
  }
  return ok();
}

Result<TableMapEvent> decode_table_map(ByteReader& r, std::size_t post_header) {
  TableMapEvent t;
  DEC_TRY(id, read_table_id(r, post_header));
  t.table_id = id;
  DEC_TRY(flags, r.u16("the flags"));
  t.flags = flags;
  if (post_header > 8) CPPCDC_TRY(r.skip(post_header - 8, "the post-header"));
  DEC_TRY(db_len, r.u8("the database name length"));
  DEC_TRY(db, r.str(db_len, "the database name"));
  t.database.assign(db);
  CPPCDC_TRY(r.skip(1, "the NUL after the database name"));
  DEC_TRY(tb_len, r.u8("the table name length"));
  DEC_TRY(tb, r.str(tb_len, "the table name"));
  t.table.assign(tb);
  CPPCDC_TRY(r.skip(1, "the NUL after the table name"));
  DEC_TRY(n, r.packed("the column count"));
  if (n > r.remaining()) return fail(r.error("the column count exceeds the event"));
  DEC_TRY(types, r.take(static_cast<std::size_t>(n), "the column types"));
  t.column_types.assign(types.begin(), types.end());
  DEC_TRY(meta_len, r.packed("the metadata length"));
  DEC_TRY(meta, r.take(static_cast<std::size_t>(meta_len), "the column metadata"));
  ByteReader m(meta, r.context(), r.offset() - meta.size());
  t.column_meta.resize(t.column_types.size());
  for (std::size_t i = 0; i < t.column_types.size(); ++i) {
    std::uint16_t v = 0;
    switch (t.column_types[i]) {
      case kFloat:
      case kDouble:
      case kBlob:
      case kTinyBlob:
      case kMediumBlob:
      case kLongBlob:
      case kGeometry:
      case kJson:
      case kTime2:
      case kDateTime2:
      case kTimestamp2:
      case kVector: {
        DEC_TRY(b, m.u8("a column's metadata"));
        v = b;
        break;
      }
      case kVarchar:
      case kVarString:
      case kBit: {
        DEC_TRY(b, m.u16("a column's metadata"));
        v = b;
        break;
      }
      case kNewDecimal:
      case kString:
      case kEnum:
      case kSet: {
        DEC_TRY(b0, m.u8("a column's metadata"));
        DEC_TRY(b1, m.u8("a column's metadata"));
        v = static_cast<std::uint16_t>(b0 << 8 | b1);
        break;
      }
      case kDecimal:
      case kTiny:
      case kShort:
      case kLong:
      case kNull:
      case kTimestamp:
      case kLongLong:
      case kInt24:
      case kDate:
      case kTime:
      case kDateTime:
      case kYear:
      case kNewDate:
        break;
      default:
        return fail(r.error("column " + std::to_string(i + 1) + " has the unknown type " +
                            std::to_string(t.column_types[i])));
    }
    t.column_meta[i] = v;
  }
  if (!m.at_end()) return fail(m.error("the column metadata has bytes left over"));
  CPPCDC_TRY(read_bitmap(r, t.column_types.size(), t.nullable, "the nullable bitmap"));
  CPPCDC_TRY(decode_optional_metadata(r, t));
  return t;
}

Result<RowsEvent> decode_rows(ByteReader& r, std::uint8_t type, std::size_t post_header,
                              std::vector<std::uint8_t>& inflated) {
  RowsEvent e;
  bool v2 = false, compressed = false;
  switch (type) {
    case 23:
      e.kind = RowsKind::kWrite;
      break;
    case 24:
      e.kind = RowsKind::kUpdate;
      break;
    case 25:
      e.kind = RowsKind::kDelete;
      break;
    case 30:
      e.kind = RowsKind::kWrite;
      v2 = true;
      break;
    case 31:
      e.kind = RowsKind::kUpdate;
      v2 = true;
      break;
    case 32:
      e.kind = RowsKind::kDelete;
      v2 = true;
      break;
    case 166:
      e.kind = RowsKind::kWrite;
      v2 = compressed = true;
      break;
    case 167:
      e.kind = RowsKind::kUpdate;
      v2 = compressed = true;
      break;
    case 168:
      e.kind = RowsKind::kDelete;
      v2 = compressed = true;
      break;
    case 169:
      e.kind = RowsKind::kWrite;
      compressed = true;
      break;
    case 170:
      e.kind = RowsKind::kUpdate;
      compressed = true;
      break;
    case 171:
      e.kind = RowsKind::kDelete;
      compressed = true;
      break;
    default:
      break;
  }
  DEC_TRY(id, read_table_id(r, post_header));
  e.table_id = id;
  DEC_TRY(flags, r.u16("the flags"));
  e.flags = flags;
  std::size_t used = post_header == 6 ? 6 : 8;
  if (v2 && post_header >= 10) {
    DEC_TRY(extra, r.u16("the extra data length"));
    used += 2;
    if (post_header > used) CPPCDC_TRY(r.skip(post_header - used, "the post-header"));
    if (extra < 2) return fail(r.error("the extra data length is below 2"));
    CPPCDC_TRY(r.skip(extra - 2u, "the extra data"));
  } else if (post_header > used) {
    CPPCDC_TRY(r.skip(post_header - used, "the post-header"));
  }
  DEC_TRY(n, r.packed("the column count"));
  if (n > 8 * r.remaining()) return fail(r.error("the column count exceeds the event"));
  e.column_count = static_cast<std::size_t>(n);
  CPPCDC_TRY(read_bitmap(r, e.column_count, e.present, "the present-columns bitmap"));
  if (e.kind == RowsKind::kUpdate) {
    CPPCDC_TRY(read_bitmap(r, e.column_count, e.present_after, "the after-image bitmap"));
  }
  e.rows = r.rest();
  if (compressed) {
    DEC_TRY(plain, inflate_mariadb(e.rows, inflated, r));
    e.rows = plain;
  }
  return e;
}

Result<GtidEvent> decode_maria_gtid(ByteReader& r, std::uint32_t server_id) {
  GtidEvent g;
  g.server_id = server_id;
  DEC_TRY(seq, r.u64("the sequence number"));
  DEC_TRY(domain, r.u32("the domain id"));
  DEC_TRY(flags, r.u8("the flags"));
  g.sequence = seq;
  g.domain_id = domain;
  g.standalone = flags & 1;
  if (flags & 2) {
    DEC_TRY(cid, r.u64("the commit id"));
    g.commit_id = cid;
  }
  return g;
}

Result<GtidListEvent> decode_gtid_list(ByteReader& r) {
  GtidListEvent l;
  DEC_TRY(count, r.u32("the GTID count"));
  const std::uint32_t n = count & 0x0fffffff;  // the top 4 bits are flags
  if (n > r.remaining() / 16) return fail(r.error("the GTID count exceeds the event"));
  l.gtids.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    GtidEvent g;
    DEC_TRY(domain, r.u32("a domain id"));
    DEC_TRY(server, r.u32("a server id"));
    DEC_TRY(seq, r.u64("a sequence number"));
    g.domain_id = domain;
    g.server_id = server;
    g.sequence = seq;
    l.gtids.push_back(std::move(g));
  }
  return l;
}

Result<GtidEvent> decode_mysql_gtid(ByteReader& r) {
  GtidEvent g;
  CPPCDC_TRY(r.skip(1, "the flags"));
  DEC_TRY(sid, r.take(16, "the source uuid"));
  DEC_TRY(gno, r.u64("the transaction number"));
  g.uuid = uuid_text(sid);
  g.sequence = gno;
  return g;
}

Result<std::string> decode_previous_gtids(ByteReader& r) {
  MySqlGtidSet set;
  DEC_TRY(n_sids, r.u64("the uuid count"));
  if (n_sids > r.remaining() / 24) return fail(r.error("the uuid count exceeds the event"));
  for (std::uint64_t i = 0; i < n_sids; ++i) {
    DEC_TRY(sid, r.take(16, "a source uuid"));
    DEC_TRY(n, r.u64("an interval count"));
    if (n > r.remaining() / 16) return fail(r.error("the interval count exceeds the event"));
    const std::string uuid = uuid_text(sid);
    for (std::uint64_t k = 0; k < n; ++k) {
      DEC_TRY(start, r.u64("an interval start"));
      DEC_TRY(end, r.u64("an interval end"));
      if (start < 1 || end <= start) return fail(r.error("an empty or inverted interval"));
      set.add_interval(uuid, start, end - 1);
    }
  }
  return set.text();
}

Status split_payload(std::span<const std::uint8_t> data,
                     std::vector<std::span<const std::uint8_t>>& out, const ByteReader& where) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < kHeaderLen) {
      return fail(where.error("an event inside the payload is cut short"));
    }
    const auto size = static_cast<std::size_t>(ByteReader::load_le(data.data() + pos + 9, 4));
    if (size < kHeaderLen || size > data.size() - pos) {
      return fail(where.error("an event inside the payload declares " + std::to_string(size) +
                              " bytes, with " + std::to_string(data.size() - pos) + " left"));
    }
    out.push_back(data.subspan(pos, size));
    pos += size;
  }
  return ok();
}

Status decode_transaction_payload(ByteReader& r, std::vector<std::uint8_t>& buffer,
                                  std::vector<std::span<const std::uint8_t>>& out) {
  std::uint64_t size = 0, compression = 0, uncompressed = 0;
  bool have_uncompressed = false;
  while (true) {
    DEC_TRY(field, r.packed("a payload header field type"));
    if (field == 0) break;  // end of the header
    DEC_TRY(len, r.packed("a payload header field length"));
    DEC_TRY(body, r.take(static_cast<std::size_t>(len), "a payload header field"));
    ByteReader f(body, r.context(), r.offset() - body.size());
    if (field == 1 || field == 2 || field == 3) {
      DEC_TRY(v, f.packed("a payload header value"));
      if (field == 1) size = v;
      if (field == 2) compression = v;
      if (field == 3) {
        uncompressed = v;
        have_uncompressed = true;
      }
    }
  }
  auto data = r.rest();
  if (size != 0 && size != data.size()) {
    return fail(r.error("the payload declares " + std::to_string(size) + " bytes but carries " +
                        std::to_string(data.size())));
  }
  if (compression == 255) {  // not compressed
    buffer.assign(data.begin(), data.end());
  } else if (compression == 0) {  // zstd
    if (have_uncompressed && uncompressed > kMaxEventBytes) {
      return fail(
          r.error("the payload declares " + std::to_string(uncompressed) + " uncompressed bytes"));
    }
    buffer.clear();
    ZSTD_DStream* z = ZSTD_createDStream();
    if (z == nullptr) return fail(Error::internal("ZSTD_createDStream failed"));
    ZSTD_initDStream(z);
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    std::size_t rc = 1;
    while (true) {
      const std::size_t have = buffer.size();
      const std::size_t chunk = std::max<std::size_t>(ZSTD_DStreamOutSize(), have);
      if (have + chunk > kMaxEventBytes) {
        rc = 1;
        break;
      }
      buffer.resize(have + chunk);
      ZSTD_outBuffer o{buffer.data() + have, chunk, 0};
      rc = ZSTD_decompressStream(z, &o, &in);
      buffer.resize(have + o.pos);
      if (ZSTD_isError(rc) || rc == 0) break;
      if (in.pos == in.size && o.pos < chunk) break;  // input ended inside a frame
    }
    ZSTD_freeDStream(z);
    if (ZSTD_isError(rc)) {
      return fail(
          r.error(std::string("the zstd payload does not decompress: ") + ZSTD_getErrorName(rc)));
    }
    if (rc != 0 || in.pos != in.size) {
      return fail(r.error("the zstd payload is truncated or has trailing bytes"));
    }
    if (have_uncompressed && buffer.size() != uncompressed) {
      return fail(r.error("the payload decompresses to " + std::to_string(buffer.size()) +
                          " bytes, not the declared " + std::to_string(uncompressed)));
    }
  } else {
    return fail(r.error("the payload uses the unknown compression " + std::to_string(compression)));
  }
  return split_payload(buffer, out, r);
}

}  // namespace

std::size_t Bitmap::count() const noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::uint8_t b = bytes[i];
    if (i == bytes.size() - 1 && bits % 8 != 0)
      b &= static_cast<std::uint8_t>((1u << (bits % 8)) - 1);
    n += static_cast<std::size_t>(__builtin_popcount(b));
  }
  return n;
}

std::string GtidEvent::text() const {
  if (!uuid.empty()) return uuid + ":" + std::to_string(sequence);
  return std::to_string(domain_id) + "-" + std::to_string(server_id) + "-" +
         std::to_string(sequence);
}

std::size_t EventDecoder::post_header_len(std::uint8_t type, std::size_t fallback) const noexcept {
  if (type >= 1 && type - 1u < post_header_len_.size()) return post_header_len_[type - 1u];
  return fallback;
}

Result<BinlogEvent> EventDecoder::decode(std::span<const std::uint8_t> bytes) {
  auto ev = decode_impl(bytes, false);
  if (!ev && encrypted_) {
    return fail(Error::invalid_data(
        ev.error().message() +
        " (this binlog is encrypted: a START_ENCRYPTION event came before; the server "
        "decrypts the events it sends to a replica, but events taken from the binlog file "
        "itself are encrypted with the server's key and cannot be read; remedy: read the "
        "binlog through the server's replication protocol, or set encrypt_binlog=OFF and "
        "start from a binlog file written after that)"));
  }
  return ev;
}

Result<BinlogEvent> EventDecoder::decode_payload_event(std::span<const std::uint8_t> bytes) {
  return decode_impl(bytes, true);
}

Result<BinlogEvent> EventDecoder::decode_impl(std::span<const std::uint8_t> bytes,
                                              bool in_payload) {
  BinlogEvent ev;
  if (bytes.size() < kHeaderLen) {
    return fail(Error::invalid_data("binlog event: " + std::to_string(bytes.size()) +
                                    " bytes, shorter than the 19-byte event header"));
  }
  {
    ByteReader h(bytes.first(kHeaderLen), "binlog event header");
    ev.header.timestamp = *h.u32("");
    ev.header.type = *h.u8("");
    ev.header.server_id = *h.u32("");
    ev.header.event_size = *h.u32("");
    ev.header.next_position = *h.u32("");
    ev.header.flags = *h.u16("");
  }
  const std::uint8_t type = ev.header.type;
  ev.type = static_cast<EventType>(type);
  const char* name = event_name(type);
  if (ev.header.event_size != bytes.size()) {
    return fail(Error::invalid_data(std::string(name) + ": the header says " +
                                    std::to_string(ev.header.event_size) +
                                    " bytes, the event has " + std::to_string(bytes.size())));
  }
  auto body = bytes.subspan(kHeaderLen);

  if (type == static_cast<std::uint8_t>(EventType::kFormatDescription)) {
    ByteReader r(body, name, kHeaderLen);
    FormatDescriptionEvent f;
    DEC_TRY(version, r.u16("the binlog version"));
    f.binlog_version = version;
    DEC_TRY(server, r.str(50, "the server version"));
    f.server_version.assign(server.data(), strnlen(server.data(), server.size()));
    CPPCDC_TRY(r.skip(4, "the creation time"));
    DEC_TRY(header_len, r.u8("the header length"));
    if (header_len != kHeaderLen) {
      return fail(
          r.error("the common header length is " + std::to_string(header_len) + ", not 19"));
    }
    auto lens = r.rest();
    if (version_has_checksum(f.server_version)) {
      if (lens.size() < 1 + kChecksumLen) {
        return fail(r.error("the checksum algorithm and checksum are missing"));
      }
      f.checksum_alg = lens[lens.size() - 1 - kChecksumLen];
      lens = lens.first(lens.size() - 1 - kChecksumLen);
      if (f.checksum_alg == 1 && verify_checksum_) {
        const auto n = bytes.size() - kChecksumLen;
        const auto want = ByteReader::load_le(bytes.data() + n, 4);
        const auto got = binlog_crc32(bytes.data(), n);
        if (want != got) return fail(Error::invalid_data(std::string(name) + ": CRC32 mismatch"));
      } else if (f.checksum_alg != 0 && f.checksum_alg != 1 && f.checksum_alg != 255) {
        return fail(r.error("unknown checksum algorithm " + std::to_string(f.checksum_alg)));
      }
    }
    post_header_len_.assign(lens.begin(), lens.end());
    checksum_ = f.checksum_alg == 1;
    encrypted_ = false;  // a new binlog file; its START_ENCRYPTION follows if it has one
    ev.format = std::move(f);
    return ev;
  }

  if (checksum_ && !in_payload) {
    if (body.size() < kChecksumLen) {
      return fail(Error::invalid_data(std::string(name) + ": too short for its CRC32"));
    }
    if (verify_checksum_) {
      const auto n = bytes.size() - kChecksumLen;
      const auto want = ByteReader::load_le(bytes.data() + n, 4);
      const auto got = binlog_crc32(bytes.data(), n);
      if (want != got) {
        return fail(Error::invalid_data(std::string(name) + ": CRC32 mismatch (the event says " +
                                        std::to_string(want) + ", its bytes give " +
                                        std::to_string(got) + ")"));
      }
    }
    body = body.first(body.size() - kChecksumLen);
  }

  ByteReader r(body, name, kHeaderLen);
  const std::size_t ph = post_header_len(type, default_post_header(type));
  switch (type) {
    case 4: {  // ROTATE
      RotateEvent rot;
      DEC_TRY(pos, r.u64("the position"));
      if (ph > 8) CPPCDC_TRY(r.skip(ph - 8, "the post-header"));
      rot.position = pos;
      auto file = r.rest();
      rot.next_file.assign(reinterpret_cast<const char*>(file.data()), file.size());
      ev.rotate = std::move(rot);
      break;
    }
    case 2:
    case 165: {
      DEC_TRY(q, decode_query(r, ph, type == 165, inflated_));
      ev.query = q;
      break;
    }
    case 16: {
      DEC_TRY(xid, r.u64("the xid"));
      ev.xid = XidEvent{xid};
      break;
    }
    case 19: {
      DEC_TRY(t, decode_table_map(r, ph));
      ev.table_map = std::move(t);
      break;
    }
    case 23:
    case 24:
    case 25:
    case 30:
    case 31:
    case 32:
    case 166:
    case 167:
    case 168:
    case 169:
    case 170:
    case 171: {
      DEC_TRY(rows, decode_rows(r, type, ph, inflated_));
      ev.rows = std::move(rows);
      break;
    }
    case 27: {
      auto file = r.rest();
      ev.log_file = std::string_view(reinterpret_cast<const char*>(file.data()), file.size());
      break;
    }
    case 29: {  // ROWS_QUERY: a length byte (not to be trusted beyond 255), then the text
      CPPCDC_TRY(r.skip(1, "the statement length"));
      auto text = r.rest();
      ev.statement = std::string_view(reinterpret_cast<const char*>(text.data()), text.size());
      break;
    }
    case 33:
    case 34: {
      DEC_TRY(g, decode_mysql_gtid(r));
      ev.gtid = std::move(g);
      break;
    }
    case 35: {
      DEC_TRY(set, decode_previous_gtids(r));
      ev.previous_gtids = std::move(set);
      break;
    }
    case 40: {
      if (in_payload) return fail(r.error("a transaction payload inside a transaction payload"));
      CPPCDC_TRY(decode_transaction_payload(r, payload_, ev.payload_events));
      break;
    }
    case 160: {
      auto text = r.rest();
      ev.statement = std::string_view(reinterpret_cast<const char*>(text.data()), text.size());
      break;
    }
    case 161: {
      DEC_TRY(len, r.u32("the file name length"));
      DEC_TRY(file, r.str(len, "the file name"));
      ev.log_file = file;
      break;
    }
    case 162: {
      DEC_TRY(g, decode_maria_gtid(r, ev.header.server_id));
      ev.gtid = std::move(g);
      break;
    }
    case 163: {
      DEC_TRY(l, decode_gtid_list(r));
      ev.gtid_list = std::move(l);
      break;
    }
    case 39:
      return fail(Error::invalid_data(
          "PARTIAL_UPDATE_ROWS event: the server logs JSON columns as partial updates "
          "(binlog_row_value_options=PARTIAL_JSON), which carry only the changed parts of a "
          "document and cannot give its value; remedy: SET GLOBAL "
          "binlog_row_value_options = '' on the server"));
    case 42:
      return fail(Error::invalid_data(
          "GTID_TAGGED event: tagged GTIDs (MySQL 8.3+, gtid_next = 'uuid:tag:n') are not "
          "supported yet; remedy: do not assign tagged GTIDs on a captured server"));
    case 164:
      // The server sends this marker on the replication stream too, then the events
      // decrypted; only a binlog file read directly holds encrypted events after it.
      encrypted_ = true;
      break;
    default:
      break;  // uninteresting: the header is enough
  }
  return ev;
}

}  // namespace cppcdc::mysql
