#pragma once
// Decoder for the pgoutput logical replication message format, protocol version 1
// (PostgreSQL documentation, "Logical Replication Message Formats"), and for the
// CopyBoth frames of the streaming replication protocol that carry it ('w' XLogData,
// 'k' primary keepalive).
//
// Pure functions over bytes: no socket, no allocation beyond the returned messages, so the
// decoder can be fuzzed and golden-tested. Every integer is big-endian on the wire. A short
// buffer, an unknown tag or a length that runs past the end is an Error of kind invalid_data
// whose message names the byte offset; the decoder never invents a value.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg {

/// Microseconds since 2000-01-01 00:00:00 UTC (PostgreSQL's TimestampTz epoch).
using PgTimestamp = std::int64_t;
/// Converts a PostgreSQL timestamp to milliseconds since the Unix epoch.
constexpr std::int64_t pg_timestamp_to_unix_ms(PgTimestamp ts) noexcept {
  return ts / 1000 + 946684800000LL;
}

// ---- CopyBoth frames -------------------------------------------------------------------

/// 'w': a chunk of WAL data. `payload` is the pgoutput message (points into the input).
struct XLogData {
  Lsn data_start;  ///< WAL position of the payload (0/0 for Relation and Type messages)
  Lsn wal_end;     ///< current end of WAL on the server
  PgTimestamp send_time = 0;
  std::span<const std::uint8_t> payload;
};

/// 'k': primary keepalive.
struct PrimaryKeepalive {
  Lsn wal_end;
  PgTimestamp send_time = 0;
  bool reply_requested = false;
};

using CopyFrame = std::variant<XLogData, PrimaryKeepalive>;

/// Decodes one CopyData payload from the walsender.
Result<CopyFrame> decode_copy_frame(std::span<const std::uint8_t> bytes);

/// Encodes a Standby Status Update ('r', 34 bytes): written, flushed and applied positions,
/// the client clock and whether a reply is requested.
std::string encode_standby_status(Lsn written, Lsn flushed, Lsn applied, PgTimestamp now,
                                  bool reply_requested);

// ---- pgoutput messages -----------------------------------------------------------------

/// One column of a TupleData.
struct TupleColumn {
  enum class Kind : std::uint8_t {
    kNull,       ///< 'n'
    kUnchanged,  ///< 'u': unchanged TOASTed value, not sent
    kText,       ///< 't': value in the type's text output format
    kBinary,     ///< 'b': value in binary format (only with the binary option)
  };
  Kind kind = Kind::kNull;
  std::string value;  ///< bytes for kText / kBinary, empty otherwise
};
using TupleData = std::vector<TupleColumn>;

struct BeginMsg {        // 'B'
  Lsn final_lsn;         ///< LSN of the commit record
  PgTimestamp commit_time = 0;
  std::uint32_t xid = 0;
};
struct CommitMsg {       // 'C'
  std::uint8_t flags = 0;
  Lsn commit_lsn;
  Lsn end_lsn;           ///< end of the commit record: the resume point after this transaction
  PgTimestamp commit_time = 0;
};
struct OriginMsg {       // 'O'
  Lsn commit_lsn;
  std::string name;
};
struct RelationColumn {
  bool part_of_key = false;  ///< flags bit 1: part of the replica identity
  std::string name;
  std::uint32_t type_oid = 0;
  std::int32_t type_modifier = -1;
};
struct RelationMsg {     // 'R'
  std::uint32_t relation_id = 0;
  std::string namespace_name;  ///< empty string means pg_catalog
  std::string relation_name;
  char replica_identity = 'd';  ///< 'd' default, 'n' nothing, 'f' full, 'i' index
  std::vector<RelationColumn> columns;
};
struct TypeMsg {         // 'Y'
  std::uint32_t type_oid = 0;
  std::string namespace_name;
  std::string type_name;
};
struct InsertMsg {       // 'I'
  std::uint32_t relation_id = 0;
  TupleData new_tuple;
};
struct UpdateMsg {       // 'U'
  std::uint32_t relation_id = 0;
  /// 'K': old key columns (replica identity index), or 'O': the whole old row (FULL).
  std::optional<char> old_kind;
  TupleData old_tuple;
  TupleData new_tuple;
};
struct DeleteMsg {       // 'D'
  std::uint32_t relation_id = 0;
  char old_kind = 'K';   ///< 'K' or 'O'
  TupleData old_tuple;
};
struct TruncateMsg {     // 'T'
  std::uint8_t options = 0;  ///< bit 1: CASCADE, bit 2: RESTART IDENTITY
  std::vector<std::uint32_t> relation_ids;
};
struct LogicalMessageMsg {  // 'M'
  bool transactional = false;
  Lsn lsn;
  std::string prefix;
  std::string content;
};

// Protocol v2 (streaming = on): the changes of a transaction still in progress arrive in
// blocks, Stream Start ... Stream Stop, before its Stream Commit or Stream Abort.
struct StreamStartMsg {  // 'S'
  std::uint32_t xid = 0;       ///< the top-level transaction the block belongs to
  bool first_segment = false;  ///< the transaction's first block
};
struct StreamStopMsg {};  // 'E'
struct StreamCommitMsg {  // 'c'
  std::uint32_t xid = 0;
  std::uint8_t flags = 0;
  Lsn commit_lsn;
  Lsn end_lsn;  ///< end of the commit record: the resume point after this transaction
  PgTimestamp commit_time = 0;
};
struct StreamAbortMsg {  // 'A'
  std::uint32_t xid = 0;     ///< the top-level transaction
  std::uint32_t subxid = 0;  ///< the aborted (sub)transaction: xid itself for the whole one
};

using PgOutputMessage = std::variant<BeginMsg, CommitMsg, OriginMsg, RelationMsg, TypeMsg,
                                     InsertMsg, UpdateMsg, DeleteMsg, TruncateMsg,
                                     LogicalMessageMsg, StreamStartMsg, StreamStopMsg,
                                     StreamCommitMsg, StreamAbortMsg>;

/// Decodes one pgoutput message of protocol version 1 or 2 (PostgreSQL's "Logical
/// Replication Message Formats"). `stream_xid` is non-null between a Stream Start and its
/// Stream Stop: there, Relation, Type, Insert, Update, Delete, Truncate and Message carry the
/// xid of the (sub)transaction that made the change after their tag, and it is stored in
/// *stream_xid. Two-phase (v3) messages, an unknown tag, and a message shorter or longer
/// than its fields are invalid_data naming the message, the field and the byte offset.
Result<PgOutputMessage> decode_pgoutput(std::span<const std::uint8_t> bytes,
                                        std::uint32_t* stream_xid = nullptr);

/// Renders a decoded message as one line of JSON (for golden files and debugging).
std::string describe(const PgOutputMessage& message);

}  // namespace cppcdc::pg
