#pragma once
// Builders of binlog event bytes for the decoder tests, written from the published format
// (MySQL's "binlog event" documentation, MariaDB's "Replication protocol" pages): every field
// is visible in the test that builds it.

#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cppcdc::mysql::test {

using Bytes = std::vector<std::uint8_t>;

class Wire {
 public:
  Wire& u8(std::uint64_t v) { return le(v, 1); }
  Wire& u16(std::uint64_t v) { return le(v, 2); }
  Wire& u24(std::uint64_t v) { return le(v, 3); }
  Wire& u32(std::uint64_t v) { return le(v, 4); }
  Wire& u48(std::uint64_t v) { return le(v, 6); }
  Wire& u64(std::uint64_t v) { return le(v, 8); }
  Wire& le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Wire& be(std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) b_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Wire& packed(std::uint64_t v) {
    if (v < 251) return u8(v);
    if (v < 65536) return u8(0xfc).u16(v);
    if (v < (1u << 24)) return u8(0xfd).u24(v);
    return u8(0xfe).u64(v);
  }
  Wire& raw(std::string_view s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Wire& raw(const Bytes& s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Wire& packed_str(std::string_view s) { return packed(s.size()).raw(s); }
  const Bytes& bytes() const { return b_; }
  std::size_t size() const { return b_.size(); }

 private:
  Bytes b_;
};

/// header (19 bytes) + body [+ CRC32 over both].
inline Bytes event(std::uint8_t type, const Bytes& body, bool crc = true,
                   std::uint32_t next_position = 1000, std::uint32_t server_id = 1) {
  Wire w;
  const std::size_t size = 19 + body.size() + (crc ? 4 : 0);
  w.u32(1700000000).u8(type).u32(server_id).u32(size).u32(next_position).u16(0).raw(body);
  Bytes out = w.bytes();
  if (crc) {
    const auto c = crc32(0L, out.data(), static_cast<uInt>(out.size()));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(c >> (8 * i)));
  }
  return out;
}

/// Post-header lengths of MariaDB 10.11 / MySQL 8 for event types 1..171.
inline Bytes post_header_lengths() {
  Bytes lens(171, 0);
  auto set = [&](int type, int len) { lens[static_cast<std::size_t>(type - 1)] = len; };
  set(2, 13);
  set(4, 8);
  set(19, 8);
  for (int t : {23, 24, 25, 169, 170, 171}) set(t, 8);
  for (int t : {30, 31, 32, 166, 167, 168}) set(t, 10);
  set(33, 42);
  set(34, 42);
  set(162, 19);
  set(163, 4);
  set(161, 4);
  set(165, 13);
  return lens;
}

/// FORMAT_DESCRIPTION of a checksummed (CRC32) or plain binlog.
inline Bytes format_description(std::string_view version = "10.11.19-MariaDB-0+deb12u1",
                                bool crc = true) {
  Wire w;
  std::string v(version);
  v.resize(50, '\0');
  w.u16(4).raw(v).u32(0).u8(19).raw(post_header_lengths()).u8(crc ? 1 : 0);
  Bytes body = w.bytes();
  if (crc) return event(15, body, true);
  // Checksum algorithm "off": the 4 checksum bytes are still there.
  body.insert(body.end(), 4, 0);
  return event(15, body, false);
}

/// MariaDB's compressed form: 0x80|n, the length in n big-endian bytes, a zlib stream.
inline Bytes maria_compress(const Bytes& plain) {
  uLongf n = compressBound(static_cast<uLong>(plain.size()));
  Bytes z(n);
  compress(z.data(), &n, plain.data(), static_cast<uLong>(plain.size()));
  z.resize(n);
  Wire w;
  w.u8(0x84).be(plain.size(), 4).raw(z);
  return w.bytes();
}

inline Bytes zstd_compress(const Bytes& plain) {
  Bytes z(ZSTD_compressBound(plain.size()));
  const auto n = ZSTD_compress(z.data(), z.size(), plain.data(), plain.size(), 3);
  z.resize(n);
  return z;
}

struct Column {
  std::uint8_t type;
  Bytes meta;  // the column's metadata bytes as logged
};

/// TABLE_MAP body: table id 6 bytes, flags, db, table, columns, metadata, nullable bitmap,
/// optional metadata (already encoded).
inline Bytes table_map_body(std::uint64_t table_id, std::string_view db, std::string_view table,
                            const std::vector<Column>& cols, const Bytes& optional = {}) {
  Wire w;
  w.u48(table_id).u16(1).u8(db.size()).raw(db).u8(0).u8(table.size()).raw(table).u8(0);
  w.packed(cols.size());
  for (const auto& c : cols) w.u8(c.type);
  Wire meta;
  for (const auto& c : cols) meta.raw(c.meta);
  w.packed(meta.size()).raw(meta.bytes());
  Bytes nullable((cols.size() + 7) / 8, 0xff);
  w.raw(nullable).raw(optional);
  return w.bytes();
}

inline Bytes bitmap(std::size_t bits, std::initializer_list<std::size_t> set) {
  Bytes b((bits + 7) / 8, 0);
  for (auto i : set) b[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  return b;
}
inline Bytes all_bits(std::size_t bits) {
  Bytes b((bits + 7) / 8, 0);
  for (std::size_t i = 0; i < bits; ++i) b[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  return b;
}

/// Rows event body (v1; v2 adds the extra-data length after the flags).
inline Bytes rows_body(std::uint64_t table_id, std::size_t columns, const Bytes& present,
                       const Bytes* present_after, const Bytes& rows, bool v2 = false,
                       const Bytes& extra = {}) {
  Wire w;
  w.u48(table_id).u16(1);
  if (v2) w.u16(2 + extra.size()).raw(extra);
  w.packed(columns).raw(present);
  if (present_after) w.raw(*present_after);
  w.raw(rows);
  return w.bytes();
}

}  // namespace cppcdc::mysql::test
