#pragma once
// Decoding binlog events from their bytes (MySQL 5.7/8 and MariaDB 10.x). Pure functions on
// byte spans: no I/O, no Connector/C types, so the decoder runs on recorded bytes in tests and
// under the fuzzer exactly as on the live stream.
//
// Bytes: one event as the server sends it after the replication packet's OK byte: the 19-byte
// common header, the body, then the 4-byte CRC32 when the binlog is checksummed (the decoder
// strips and, when asked, verifies it). Integers are little-endian. Views returned by the
// decoder (std::string_view, std::span) point into the event's bytes or into the decoder's own
// buffer for decompressed events: valid until the next call on the same decoder.
//
// Errors: Error::invalid_data naming the event type, its position and what is wrong; the
// caller adds the binlog coordinate. Never reads past the span.
//
// Threading: an EventDecoder is used by one thread (the source's reader thread).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/result.hpp"

namespace cppcdc::mysql {

enum class EventType : std::uint8_t {
  kUnknown = 0,
  kQuery = 2,
  kStop = 3,
  kRotate = 4,
  kIntvar = 5,
  kRand = 13,
  kUserVar = 14,
  kFormatDescription = 15,
  kXid = 16,
  kTableMap = 19,
  kWriteRowsV1 = 23,
  kUpdateRowsV1 = 24,
  kDeleteRowsV1 = 25,
  kHeartbeat = 27,
  kRowsQuery = 29,
  kWriteRowsV2 = 30,
  kUpdateRowsV2 = 31,
  kDeleteRowsV2 = 32,
  kGtid = 33,                // MySQL
  kAnonymousGtid = 34,       // MySQL
  kPreviousGtids = 35,       // MySQL
  kTransactionPayload = 40,  // MySQL 8.0.20+ binlog_transaction_compression (zstd)
  kHeartbeatV2 = 41,         // MySQL 8.0.26+
  kAnnotateRows = 160,       // MariaDB
  kBinlogCheckpoint = 161,
  kMariaGtid = 162,
  kMariaGtidList = 163,
  kStartEncryption = 164,
  kQueryCompressed = 165,
  kWriteRowsCompressedV2 = 166,
  kUpdateRowsCompressedV2 = 167,
  kDeleteRowsCompressedV2 = 168,
  kWriteRowsCompressedV1 = 169,
  kUpdateRowsCompressedV1 = 170,
  kDeleteRowsCompressedV1 = 171,
};

struct EventHeader {
  std::uint32_t timestamp = 0;  ///< seconds since the epoch (0 for artificial events)
  std::uint8_t type = 0;        ///< raw type code (EventType when known)
  std::uint32_t server_id = 0;
  std::uint32_t event_size = 0;     ///< header + body + checksum
  std::uint32_t next_position = 0;  ///< end of this event in its binlog file (0: artificial)
  std::uint16_t flags = 0;
};

/// A present-column (or NULL) bitmap: bit i set = column i. Shapes: `bits` bits.
/// Bit order: LSB first within each byte (bit i is bytes[i / 8] >> (i % 8)).
struct Bitmap {
  std::vector<std::uint8_t> bytes;
  std::size_t bits = 0;
  bool test(std::size_t i) const noexcept { return i < bits && ((bytes[i / 8] >> (i % 8)) & 1); }
  std::size_t count() const noexcept;
  friend bool operator==(const Bitmap&, const Bitmap&) = default;
};

struct RotateEvent {
  std::uint64_t position = 0;
  std::string next_file;
};

struct QueryEvent {
  std::uint32_t thread_id = 0;
  std::uint16_t error_code = 0;
  std::string_view database;  ///< the session's default database ("" when none)
  std::string_view sql;       ///< decompressed for kQueryCompressed
  /// Session charset of the statement (from the status variables), 0 when absent.
  std::uint16_t client_charset = 0;
};

/// MariaDB GTID event (162) and MySQL GTID event (33); the GTID starts a transaction group.
struct GtidEvent {
  // MariaDB: domain-server-seq. MySQL: uuid:gno (server_id unused).
  std::uint32_t domain_id = 0;
  std::uint32_t server_id = 0;
  std::uint64_t sequence = 0;
  std::string uuid;         ///< MySQL only: "3e11fa47-71ca-11e1-9e33-c80aa9429562"
  bool standalone = false;  ///< MariaDB FL_STANDALONE: no terminating XID/COMMIT (DDL)
  std::optional<std::uint64_t> commit_id;  ///< MariaDB group commit id
  std::string text() const;                ///< "0-1-42" (MariaDB) or "uuid:42" (MySQL)
};

struct GtidListEvent {
  std::vector<GtidEvent> gtids;
};  ///< MariaDB 163

/// FORMAT_DESCRIPTION (15).
struct FormatDescriptionEvent {
  std::uint16_t binlog_version = 0;
  std::string server_version;  ///< "10.11.19-MariaDB-0+deb12u1", "8.0.36"
  /// The binlog's checksum algorithm: 0 off, 1 CRC32 (as the event declares it).
  std::uint8_t checksum_alg = 0;
};
struct XidEvent {
  std::uint64_t xid = 0;
};

/// Optional metadata of TABLE_MAP (binlog_row_metadata=FULL/MINIMAL); empty when not logged.
/// Numeric columns: TINY, SHORT, INT24, LONG, LONGLONG, NEWDECIMAL, FLOAT, DOUBLE. Character
/// columns: CHAR/BINARY (STRING whose real type is not ENUM/SET), VARCHAR, VAR_STRING and the
/// BLOB types (TEXT and BLOB). DEFAULT_CHARSET fields are expanded into `charsets`.
struct TableMapMetadata {
  std::vector<bool> is_unsigned;                 ///< per numeric column, in numeric-column order
  std::vector<std::uint32_t> charsets;           ///< per character column (collation ids)
  std::vector<std::uint32_t> enum_set_charsets;  ///< per ENUM/SET column (collation ids)
  std::vector<std::string> column_names;
  std::vector<std::vector<std::string>> set_values;   ///< per SET column
  std::vector<std::vector<std::string>> enum_values;  ///< per ENUM column
  std::vector<std::uint32_t> primary_key;             ///< column indexes
  friend bool operator==(const TableMapMetadata&, const TableMapMetadata&) = default;
};

struct TableMapEvent {
  std::uint64_t table_id = 0;
  std::string database;
  std::string table;
  std::uint16_t flags = 0;
  std::vector<std::uint8_t> column_types;  ///< binlog field types (MYSQL_TYPE_*)
  /// Per column, decoded per type: FLOAT/DOUBLE/BLOB/JSON/GEOMETRY: the length (pack) bytes;
  /// TIME2/DATETIME2/TIMESTAMP2: fsp; VARCHAR/VAR_STRING: max length in bytes; BIT:
  /// (bytes << 8) | (bits % 8); NEWDECIMAL: (precision << 8) | scale; STRING/ENUM/SET:
  /// (first byte << 8) | second byte as logged (real type and length, see row_decoder.cpp);
  /// 0 for the others.
  std::vector<std::uint16_t> column_meta;
  Bitmap nullable;
  TableMapMetadata metadata;
};

enum class RowsKind { kWrite, kUpdate, kDelete };

/// A rows event (v1, v2, MariaDB compressed): the row images stay undecoded in `rows` until
/// the row decoder (row_decoder.hpp) reads them against the table's TABLE_MAP and schema.
struct RowsEvent {
  RowsKind kind = RowsKind::kWrite;
  std::uint64_t table_id = 0;
  std::uint16_t flags = 0;  ///< bit 0: end of statement
  std::size_t column_count = 0;
  Bitmap present;                      ///< before image (update/delete) or the inserted image
  Bitmap present_after;                ///< update only: the after image's columns
  std::span<const std::uint8_t> rows;  ///< concatenated images: [null bitmap, values]...
  bool end_of_statement() const noexcept { return flags & 1; }
};

/// Decoded event: the header plus the one member its type fills.
struct BinlogEvent {
  EventHeader header;
  EventType type = EventType::kUnknown;
  std::optional<RotateEvent> rotate;
  std::optional<QueryEvent> query;
  std::optional<GtidEvent> gtid;
  std::optional<GtidListEvent> gtid_list;
  std::optional<XidEvent> xid;
  std::optional<TableMapEvent> table_map;
  std::optional<RowsEvent> rows;
  std::optional<FormatDescriptionEvent> format;
  /// ANNOTATE_ROWS / ROWS_QUERY: the statement text.
  std::optional<std::string_view> statement;
  /// MariaDB BINLOG_CHECKPOINT (161): the binlog file named; HEARTBEAT (27): the current file.
  std::optional<std::string_view> log_file;
  /// MySQL PREVIOUS_GTIDS (35): the GTID set, canonical text (gtid.hpp).
  std::optional<std::string> previous_gtids;
  /// MySQL TRANSACTION_PAYLOAD: the events it carries, each one event's bytes without checksum,
  /// decompressed; decode each with decode_payload_event().
  std::vector<std::span<const std::uint8_t>> payload_events;
};

enum class Flavor { kMariaDb, kMySql };

class EventDecoder {
 public:
  explicit EventDecoder(Flavor flavor) : flavor_(flavor) {}

  /// Decodes one event. FORMAT_DESCRIPTION updates the decoder (post-header lengths, checksum
  /// algorithm) and is returned too. START_ENCRYPTION returns with only the header set: on the
  /// replication stream MariaDB sends it and then the events decrypted (checked against
  /// 10.11 with encrypt_binlog=ON); after it, an event that does not decode (as the encrypted
  /// events of a binlog file read directly do not) is an error saying the binlog is encrypted,
  /// with the remedy. PARTIAL_UPDATE_ROWS (MySQL binlog_row_value_options=PARTIAL_JSON) and
  /// GTID_TAGGED (MySQL 8.3 tagged GTIDs) are errors naming the remedy. Other unknown and
  /// uninteresting types return with only the header set.
  Result<BinlogEvent> decode(std::span<const std::uint8_t> bytes);

  /// Decodes an event taken from a TRANSACTION_PAYLOAD (no checksum trailer).
  Result<BinlogEvent> decode_payload_event(std::span<const std::uint8_t> bytes);

  /// Verify CRC32 trailers (on by default when the binlog declares CRC32).
  void set_verify_checksum(bool on) noexcept { verify_checksum_ = on; }
  /// Declares the checksum the client asked for (@master_binlog_checksum): the artificial
  /// ROTATE the server sends before the first FORMAT_DESCRIPTION carries it already. Each
  /// FORMAT_DESCRIPTION then sets it from what the binlog declares.
  void set_checksummed(bool on) noexcept { checksum_ = on; }
  bool checksummed() const noexcept { return checksum_; }
  Flavor flavor() const noexcept { return flavor_; }

 private:
  Flavor flavor_;
  bool checksum_ = false;
  bool verify_checksum_ = true;
  bool encrypted_ = false;  // a START_ENCRYPTION was seen in the current binlog file
  Result<BinlogEvent> decode_impl(std::span<const std::uint8_t> bytes, bool in_payload);
  std::size_t post_header_len(std::uint8_t type, std::size_t fallback) const noexcept;

  std::vector<std::uint8_t> post_header_len_;
  std::vector<std::uint8_t> inflated_;  // decompressed body of the current event
  std::vector<std::uint8_t> payload_;   // decompressed transaction payload
};

}  // namespace cppcdc::mysql
