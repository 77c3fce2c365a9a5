#pragma once
// The canonical change event (core concepts, section 1) and the safe write derived from it.
//
// JSON shape produced by to_json() (one object, fields in this order):
//   before, after, op, source{source_name, offset, timestamp}, ts, schema, table, primary_key,
//   snapshot, transaction{tx_id, total_events, event_index}, envelope_version,
//   before_is_key_only, unavailable_columns (omitted when empty),
//   before_unavailable_columns (omitted when empty).
// Every scalar column value is a JSON string holding the text the database's output function
// printed; SQL NULL is JSON null; json/jsonb values are emitted as JSON (structure kept).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cppcdc/position.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/row_shape.hpp"

namespace cppcdc {

class Event;

/// The envelope version this build writes and accepts.
inline constexpr std::uint16_t kEnvelopeVersion = 1;

enum class Operation { kInsert, kUpdate, kDelete, kRead, kSchemaChange, kTruncate, kMessage };

/// The `op` string: "insert", "update", "delete", "read", "schema_change", "truncate", "message".
std::string_view to_string(Operation op) noexcept;
/// Parses an `op` string (case-insensitive). Error kind: configuration.
Result<Operation> parse_operation(std::string_view text);

/// One column of a row image. `text` nullopt is SQL NULL. When `is_json`, `text` holds JSON
/// text that is emitted verbatim (structure kept, big numbers exact).
struct ColumnValue {
  std::string name;
  std::optional<std::string> text;
  bool is_json = false;

  friend bool operator==(const ColumnValue&, const ColumnValue&) = default;
};

/// A row image: the columns that are present, in ordinal order. A column that exists on the
/// table but is absent here is not NULL: it is either unavailable (listed separately) or
/// outside a key-only image.
using Row = std::vector<ColumnValue>;

/// Value of `name` in `row`, or nullptr when the column is absent.
const ColumnValue* find_column(const Row& row, std::string_view name) noexcept;

/// Before-image, one of three shapes (API guide, "before: BeforeImage").
struct BeforeUnavailable {
  friend bool operator==(const BeforeUnavailable&, const BeforeUnavailable&) = default;
};
struct BeforeKeyOnly {
  Row key;  ///< primary-key (or replica-identity index) columns only
  friend bool operator==(const BeforeKeyOnly&, const BeforeKeyOnly&) = default;
};
struct BeforeFull {
  Row row;                                   ///< the complete prior row, minus:
  std::vector<std::string> unavailable_columns;  ///< columns the source could not supply
  friend bool operator==(const BeforeFull&, const BeforeFull&) = default;
};
class BeforeImage {
 public:
  BeforeImage() = default;  // unavailable
  BeforeImage(BeforeUnavailable v) : v_(v) {}
  BeforeImage(BeforeKeyOnly v) : v_(std::move(v)) {}
  BeforeImage(BeforeFull v) : v_(std::move(v)) {}

  bool is_unavailable() const noexcept { return std::holds_alternative<BeforeUnavailable>(v_); }
  bool is_key_only() const noexcept { return std::holds_alternative<BeforeKeyOnly>(v_); }
  bool is_full() const noexcept { return std::holds_alternative<BeforeFull>(v_); }
  /// Any prior column values (key-only or full); nullptr when unavailable.
  const Row* row() const noexcept;
  /// The complete prior row; nullptr for key-only and unavailable.
  const Row* full_row() const noexcept;
  /// Columns missing from a full image; empty for the other shapes.
  const std::vector<std::string>& unavailable_columns() const noexcept;
  const std::variant<BeforeUnavailable, BeforeKeyOnly, BeforeFull>& variant() const noexcept {
    return v_;
  }
  friend bool operator==(const BeforeImage&, const BeforeImage&) = default;

 private:
  std::variant<BeforeUnavailable, BeforeKeyOnly, BeforeFull> v_;
};

struct SourceMetadata {
  std::string source_name;    ///< e.g. "postgres"
  std::string offset;         ///< the change's own position, e.g. LSN "0/16B2E48"
  std::int64_t timestamp = 0; ///< source-side time, ms since the Unix epoch (commit time)
  friend bool operator==(const SourceMetadata&, const SourceMetadata&) = default;
};

struct TransactionMetadata {
  /// The source's transaction id. PostgreSQL: the xid. MySQL/MariaDB: the transaction number
  /// of its GTID (Event::gtid), or without a GTID its BEGIN's binlog coordinate as
  /// (file sequence << 32) | position (the debezium_json codec writes Debezium's
  /// "file=NAME,pos=N" from it).
  std::uint64_t tx_id = 0;
  /// Events of this transaction the source read for this pipeline, counted before transforms
  /// and routes (a filtered or re-routed event still counts).
  std::uint64_t total_events = 0;
  std::uint64_t event_index = 0;   ///< 0-based position of this event among them
  friend bool operator==(const TransactionMetadata&, const TransactionMetadata&) = default;
};

/// Where a snapshot read stands among the rows of its snapshot, as far as the source that read
/// it knows (see Event::snapshot_edge). Debezium's source.snapshot values other than "true".
enum class SnapshotEdge : std::uint8_t {
  kNone,          ///< none of the below, or not known
  kFirst,         ///< the first row of the snapshot
  kFirstInTable,  ///< the first row of its table (not the snapshot's first)
  kLastInTable,   ///< the last row of its table (not the snapshot's last)
  kLast,          ///< the last row of the snapshot
};

/// Gives `e` the mark `edge` unless it has one that takes precedence, in Debezium's order:
/// kFirst, kLast, kFirstInTable, kLastInTable (a table's only row is its first).
void mark_snapshot_edge(Event& e, SnapshotEdge edge) noexcept;

struct SnapshotMetadata {
  std::string snapshot_id;
  std::uint64_t chunk = 0;
  bool is_last_chunk = false;
  friend bool operator==(const SnapshotMetadata&, const SnapshotMetadata&) = default;
};

/// Why row_write() offers no write.
enum class NoRowWrite {
  kNotARowChange,      ///< schema_change or message
  kNoPrimaryKey,       ///< the table reports no key, so an update/delete cannot be addressed
  kMissingPrimaryKey,  ///< a key is declared but a key column is absent from the image
};
std::string_view to_string(NoRowWrite reason) noexcept;

/// The one safe write for an event (API guide, "Event::row_write() - the safe path").
struct RowWrite {
  enum class Kind { kReplace, kMerge, kDelete, kTruncate, kNone };
  Kind kind = Kind::kNone;
  /// Key columns (all of them, in key order). For kReplace it is nullopt when the table has no
  /// key (an insert into a keyless table: append). Always set for kMerge and kDelete.
  std::optional<Row> key;
  /// When an update moved the row to a new key: the old key. The row at previous_key must be
  /// removed, and for kMerge its columns absent from `columns` carry over to the new key.
  std::optional<Row> previous_key;
  /// kReplace: the complete row. kMerge: only the present columns; leave every other column of
  /// the target row untouched.
  const Row* columns = nullptr;
  NoRowWrite reason = NoRowWrite::kNotARowChange;  ///< meaningful for kNone only

  bool is_partial() const noexcept { return kind == Kind::kMerge; }
};

class Event {
 public:
  Operation op = Operation::kInsert;
  BeforeImage before;
  std::optional<Row> after;
  SourceMetadata source;
  std::int64_t ts = 0;  ///< ms since the Unix epoch when cppcdc produced the event
  std::optional<std::string> schema;
  std::string table;
  std::optional<std::vector<std::string>> primary_key;
  std::optional<SnapshotMetadata> snapshot;
  std::optional<TransactionMetadata> transaction;
  std::uint16_t envelope_version = kEnvelopeVersion;
  std::vector<std::string> unavailable_columns;  ///< absent from `after`, not NULL
  RowShapePtr shape;  ///< nullptr when unknown

  /// Where a restart resumes if everything up to and including this event is durable.
  /// Empty when this event is not a resumable boundary (e.g. not the last event of its
  /// transaction); the runtime then keeps the previous boundary. Not part of the envelope.
  std::string resume_offset;
  /// Source progress to store with resume_offset in the checkpoint (CheckpointRecord::
  /// source_state), e.g. a snapshot's cursor. Meaningful only where resume_offset is set; empty
  /// means no such progress. Not part of the envelope.
  std::string resume_state;
  /// Where the change's transaction committed in the source log, opaque to the core and
  /// ordered by the source's incremental snapshot backend (PostgreSQL: the commit record's LSN,
  /// known from Begin; a non-transactional message: its own LSN). Empty: unknown. Used to
  /// place the event against a chunk's watermarks. Not part of the envelope.
  LogPosition log_position;
  /// For a row of a blocking snapshot: whether it is the snapshot's or its table's first or
  /// last row, set by the source that reads the tables in order (a table with no rows has no
  /// such rows; a snapshot resumed mid-table marks no first). Not part of the envelope: the
  /// debezium_json codec writes it as source.snapshot.
  SnapshotEdge snapshot_edge = SnapshotEdge::kNone;
  /// The global transaction id of the change's transaction, in the source's notation (MariaDB
  /// "domain-server-sequence", MySQL "uuid:sequence"); empty when the source has none (no GTID
  /// mode, PostgreSQL, snapshot rows). Not part of the envelope: the debezium_json codec
  /// writes it as source.gtid.
  std::string gtid;

  bool before_is_key_only() const noexcept { return before.is_key_only(); }
  bool has_full_before() const noexcept { return before.is_full(); }

  /// Key values, all-or-nothing: every column named in primary_key taken from `after` (or,
  /// for delete, from the before-image). nullopt when no key is declared or any key column is
  /// absent. Never a partial key.
  std::optional<Row> primary_key_values() const;

  /// The safe write; see RowWrite. `columns` points into this event.
  RowWrite row_write() const;

  /// Checks the envelope contract: version, op-specific images, columns both present and
  /// listed unavailable, key columns named but unknown. Error kind: invalid_data.
  Status validate() const;

  /// Appends the envelope JSON (one object, no trailing newline) to `out`.
  void append_json(std::string& out) const;
  std::string to_json() const;

  /// Parses an envelope produced by to_json(). The shape is not carried and stays nullptr.
  /// A column value that is neither a string nor null keeps its text as written (numbers of
  /// any size exact; a line break between its tokens becomes a space). Error kind:
  /// invalid_data, naming the field.
  static Result<Event> from_json(std::string_view json);

  friend bool operator==(const Event& a, const Event& b);
};

/// Builder that sets envelope_version and checks the contract at the end.
class EventBuilder {
 public:
  EventBuilder(std::string table, Operation op);
  EventBuilder& source(SourceMetadata source);
  EventBuilder& schema(std::string schema);
  EventBuilder& before(BeforeImage before);
  EventBuilder& after(Row after);
  EventBuilder& primary_key(std::vector<std::string> columns);
  EventBuilder& ts(std::int64_t ms);
  EventBuilder& transaction(TransactionMetadata tx);
  EventBuilder& snapshot(SnapshotMetadata snapshot);
  EventBuilder& unavailable_columns(std::vector<std::string> columns);
  EventBuilder& shape(RowShapePtr shape);
  EventBuilder& resume_offset(std::string offset);
  Event build();
  /// build() followed by Event::validate().
  Result<Event> build_validated();

 private:
  Event event_;
};

}  // namespace cppcdc
