#pragma once
// Turns decoded pgoutput messages into canonical events, one transaction at a time.
//
// When a captured table's Relation message describes a new shape (columns added, dropped or
// retyped, another key), a schema_change event carrying the old shape in `before` and the new
// one in `after` comes right before the first row in the new shape, inside that transaction.
// The first Relation message after a (re)start has nothing to compare with and announces
// nothing.
//
// Changes are buffered from Begin to Commit, because every event carries its transaction's
// total_events; on Commit the whole transaction is released in commit order. The last event
// of a transaction carries the commit's end LSN as its resume_offset (a restart from there
// re-sends nothing of this transaction); the others carry none. Pure: no I/O except through
// the CatalogLookup it is given (and compare_keys, while a snapshot's visibility filter is
// on), so golden tests can drive it from recorded frames.

#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/event_spill.hpp"
#include "cppcdc/event.hpp"
#include "source/postgres/copy_text.hpp"
#include "source/postgres/pgoutput.hpp"
#include "source/postgres/visibility.hpp"

namespace cppcdc::pg {

/// What the catalog says about a relation, beyond what a Relation message carries.
struct RelationDetails {
  /// Type name with modifiers per column of the message, in the message's order
  /// (format_type of the column's type oid and modifier). Empty entries mean unknown.
  std::vector<std::string> type_names;
  /// Per column of the message, its type with domains resolved to the underlying base type
  /// (a domain over jsonb is jsonb here). Missing or 0 entries mean the column's own type.
  std::vector<std::uint32_t> base_type_oids;
  /// NOT NULL per column of the message (false when unknown).
  std::vector<bool> not_null;
  /// The table's primary key column names in key order (empty: no primary key).
  std::vector<std::string> primary_key;
};

class CatalogLookup {
 public:
  virtual ~CatalogLookup() = default;
  virtual Result<RelationDetails> describe(const RelationMsg& relation) = 0;
};

class TransactionAssembler {
 public:
  /// `captured(schema, table)` says whether a relation's changes become events.
  TransactionAssembler(std::string source_name,
                       std::function<bool(const std::string&, const std::string&)> captured,
                       CatalogLookup& catalog);

  /// Feeds one message; `position` is the XLogData start of the message. Completed
  /// transactions are appended to `out`, except one that was spilled to disk: that one waits
  /// in spilled_ready() and is taken with drain_spilled(), which must finish before the next
  /// feed (invalid_state otherwise). Errors (invalid_data) name the message and relation.
  /// The message's column values are moved into the events (hence by value). With
  /// `out_bytes`, the detail::approx_event_bytes of each event appended to `out` is appended
  /// to it in step: the assembler measures events anyway (spill_threshold_bytes), so a caller
  /// bounding memory need not measure them again.
  ///
  /// Streamed transactions (protocol v2, pgoutput's streaming option): each top-level xid's
  /// blocks are collected until its Stream Commit, which releases the transaction exactly as
  /// a Commit does (the commit time becomes every event's source.timestamp), or its Stream
  /// Abort, which drops it, or for a subtransaction drops the events from that
  /// subtransaction's first change on (as PostgreSQL's own apply worker does: later changes
  /// of the stream belong to that subtransaction or its children). `change_xid` is the xid
  /// decode_pgoutput read from a change inside a stream block (0 elsewhere). Several
  /// transactions may be open at once; each spills on its own past spill_threshold_bytes,
  /// and one that stops its block while the parked ones hold more than that spills too. A
  /// shape change seen in a stream block is announced first in the next transaction released,
  /// whichever it is: the streamed one may abort, or commit after others that already carry
  /// rows of the new shape.
  Status feed(PgOutputMessage message, Lsn position, std::vector<Event>& out,
              std::vector<std::size_t>* out_bytes = nullptr, std::uint32_t change_xid = 0);

  /// Between a Stream Start and its Stream Stop: the next message is decoded with a
  /// stream_xid (decode_pgoutput).
  bool in_stream() const noexcept { return in_stream_; }
  /// Streamed transactions whose commit or abort has not arrived yet.
  std::size_t open_streamed() const noexcept { return streamed_.size() + (in_stream_ ? 1 : 0); }

  /// Takes in a Relation message without announcing a shape change: for a Relation message
  /// inside a transaction that was already handed over and is being skipped (the SqlPeek
  /// transport re-reads such transactions until the slot moves past them). Keeps the relation
  /// cache where pgoutput believes it is, so later changes that rely on it decode.
  Status observe_relation(const RelationMsg& relation) { return on_relation(relation, false); }

  /// A snapshot row of relation `relation_id` (described before with observe_relation) as an
  /// event of op `read`: the values go through the same path as a streamed insert, so they
  /// are character for character what the stream would emit. `position` becomes
  /// source.offset and `timestamp_ms` source.timestamp. invalid_data when the relation is
  /// unknown or the tuple does not match it.
  Result<Event> make_read(std::uint32_t relation_id, TupleData tuple, Lsn position,
                          std::int64_t timestamp_ms);

  /// Snapshot rows of relation `relation_id` as events of op `read`, written to
  /// out[used, used + rows.size()) and `used` advanced past them (built in place: the blocking
  /// snapshot's hot path). An event already in that range (one the consumer is done with,
  /// Source::recycle) is overwritten field by field, reusing its memory; `out` grows where it
  /// is too short. Each of `rows` is one row of COPY ... TO STDOUT in text format
  /// (copy_text.hpp) whose columns are the relation's published columns in order. The values
  /// take the same path as make_read's; every event carries `snapshot`, source.offset
  /// `position` and source.timestamp `timestamp_ms`. invalid_data (naming the relation) when
  /// the relation is unknown or a row's column count does not match it; then `used` is left
  /// as it was. With `sizes`, it is kept at one detail::approx_event_bytes per event of
  /// out[0, used) (entries past the events it had are dropped first).
  Status append_reads(std::uint32_t relation_id, std::span<const std::string_view> rows,
                      Lsn position, std::int64_t timestamp_ms, const SnapshotMetadata& snapshot,
                      std::vector<Event>& out, std::size_t& used,
                      std::vector<std::size_t>* sizes = nullptr);

  /// Whether a committed transaction waits in a spill file.
  bool spilled_ready() const noexcept { return static_cast<bool>(ready_spill_.file); }
  /// Appends up to `max_events` events of the committed spilled transaction to `out`, in
  /// order, with their transaction metadata (and the commit's end LSN on the last). The
  /// spill file is closed (and its space released) after the last event.
  Status drain_spilled(std::vector<Event>& out, std::size_t max_events);

  /// Events buffered for the open transaction (in memory and spilled).
  std::size_t pending() const noexcept {
    return pending_.size() + (spill_ ? spill_->events_written() : 0);
  }
  /// Inside a Begin ... Commit, or inside a stream block.
  bool in_transaction() const noexcept { return in_tx_; }
  /// Forgets the open transaction and every streamed one (after a reconnect the server
  /// sends them again, from their first change).
  void reset_transaction();
  /// The end LSN of the last completed transaction seen (zero before any).
  Lsn last_end_lsn() const noexcept { return last_end_lsn_; }

  /// Clock for the envelope's `ts` (ms since the Unix epoch); tests replace it.
  std::function<std::int64_t()> clock;

  /// Whether logical decoding messages (pg_logical_emit_message) become events of op
  /// `message` on the synthetic table "<prefix>__messages", with `after` holding the columns
  /// prefix, content and transactional. Content that is valid UTF-8 is delivered as text,
  /// anything else as bytea hex ("\x..."), and the row shape says which (text or bytea).
  /// A transactional message belongs to its transaction; a non-transactional one is a unit
  /// of its own whose resume_offset is its LSN, which pgoutput sets to the end of the
  /// message's WAL record: a restart from there does not send it again (PostgreSQL skips a
  /// message whose record starts before the start position) and misses nothing after it.
  bool capture_messages = false;

  /// Once the open transaction's events take more than this many bytes in memory (estimated
  /// by detail::approx_event_bytes), they and all later events of the transaction go to a
  /// spill file in `spill_dir`, and are read back after the commit in bounded pieces.
  std::size_t spill_threshold_bytes = std::size_t{32} << 20;

  /// The snapshot reads whose changes the stream drops (visibility.hpp): a change of a
  /// captured table in a transaction a read's snapshot sees, to a row that read covers, is not
  /// delivered. A delivered TRUNCATE of a table ends the filter for that table. Each released
  /// transaction that commits before a read's `until` carries the remaining filter as the
  /// resume_state of its last event; the first one at or past it drops that read.
  ReadVisibility visibility;
  /// Orders keys of types the filter does not compare itself (integers it does); unset: such
  /// a change is delivered.
  KeyCompare compare_keys;
  /// visibility.to_state(), made again only when visibility.version() moved.
  const std::string& visibility_state();
  std::filesystem::path spill_dir = cppcdc::detail::default_spill_dir();

 private:
  struct Relation {
    RelationMsg msg;
    RowShapePtr shape;
    std::optional<std::vector<std::string>> primary_key;
    std::vector<std::size_t> key_columns;  // indices into msg.columns, key order
    std::vector<bool> is_json;
    bool captured = false;
  };

  Result<const Relation*> relation(std::uint32_t id, const char* what) const;
  Status on_relation(const RelationMsg& msg, bool announce = true);
  Result<Row> make_row(const Relation& rel, TupleData& tuple, bool key_only,
                       std::vector<std::string>* unchanged, const char* what) const;
  Event make_event(const Relation& rel, Operation op, Lsn position) const;
  /// Sets the fields make_event sets on `e`.
  void fill_event(Event& e, const Relation& rel, Operation op, Lsn position) const;
  /// A shape as the row of a schema_change event: content_id and the columns as JSON.
  static Row describe_shape(const RowShape& shape);
  Event make_message_event(const LogicalMessageMsg& m, Lsn position);
  /// Whether the change `e` of `rel` in the open transaction is in a snapshot read already.
  bool already_read(const Relation& rel, const Event& e);
  /// Adds an event to the open transaction, spilling past the threshold.
  Status add_pending(Event e);
  /// In-place form of add_pending: the event is built in the slot begin_pending() returns
  /// (the end of pending_, or a scratch event once the transaction spills), then
  /// commit_pending() adds it, or drop_pending() forgets it (after a decoding error).
  Event& begin_pending();
  Status commit_pending();
  void drop_pending();
  /// Moves the open transaction's events to a spill file; later ones go there too.
  Status spill_open();
  /// Releases the open transaction (Commit, Stream Commit): metadata, resume offset, into
  /// `out` or ready_spill_. `commit_ms`: set every event's source.timestamp to it (a
  /// streamed transaction learns its commit time only now).
  Status finish_transaction(Lsn end_lsn, std::vector<Event>& out,
                            std::vector<std::size_t>* out_bytes,
                            std::optional<std::int64_t> commit_ms);
  Status on_stream_start(const StreamStartMsg& m, Lsn position);
  Status on_stream_stop();
  Status on_stream_abort(const StreamAbortMsg& m);
  /// Notes where subtransaction `xid`'s first change of the open streamed transaction goes.
  void mark_subxact(std::uint32_t xid);

  // Where a subtransaction's first change of a streamed transaction went: the events before
  // `index` stay when it aborts; `offset` is that place in the spill file once it spills.
  struct SubxactMark {
    std::uint32_t xid = 0;
    std::uint64_t index = 0;
    std::uint64_t offset = 0;
  };
  // The state of one open transaction; a streamed one is parked in it between its blocks
  // and swapped with the members below (swap_open) while a block of it is read.
  struct OpenTx {
    BeginMsg begin;
    Lsn begin_position;
    std::vector<Event> pending;
    std::vector<std::size_t> pending_sizes;
    std::size_t pending_bytes = 0;
    std::unique_ptr<cppcdc::detail::EventSpill> spill;
    std::vector<SubxactMark> subxacts;
  };
  void swap_open(OpenTx& t) noexcept;

  struct MessageShapes {
    RowShapePtr text;
    RowShapePtr bytea;
  };
  std::unordered_map<std::string, MessageShapes> message_shapes_;  // by prefix
  std::vector<CopyField> copy_fields_;  // append_reads' split of the current row
  std::string visibility_state_;
  std::optional<std::uint64_t> visibility_version_;  // of visibility_state_

  std::string source_name_;
  std::function<bool(const std::string&, const std::string&)> captured_;
  CatalogLookup& catalog_;
  std::unordered_map<std::uint32_t, Relation> relations_;

  bool in_tx_ = false;
  BeginMsg begin_;
  Lsn begin_position_;
  std::vector<Event> waiting_schema_changes_;  // shape changes seen outside a transaction
  // A vector, handed over whole at the commit (swapped into an empty `out`); it is bounded by
  // spill_threshold_bytes and given up after a spill.
  std::vector<Event> pending_;
  Event spill_scratch_;  // begin_pending()'s slot while the open transaction spills
  std::vector<std::size_t> pending_sizes_;  // approx_event_bytes of each event of pending_
  std::size_t pending_bytes_ = 0;
  std::unique_ptr<cppcdc::detail::EventSpill> spill_;  // the open transaction's events, once spilled
  struct ReadySpill {
    std::unique_ptr<cppcdc::detail::EventSpill> file;
    std::uint64_t xid = 0;
    std::uint64_t total = 0;
    std::uint64_t next_index = 0;
    Lsn end_lsn;
    Lsn commit_lsn;
    std::optional<std::int64_t> commit_ms;  // a streamed transaction's commit time
    std::string resume_state;               // the visibility filter still pending
    std::vector<Event> prefix;  // released before the file's events (shape changes)
  };
  ReadySpill ready_spill_;  // a committed spilled transaction not yet drained
  Lsn last_end_lsn_;
  std::vector<SubxactMark> subxacts_;  // of the open streamed transaction, in stream order
  bool in_stream_ = false;             // between Stream Start and Stream Stop
  std::unordered_map<std::uint32_t, OpenTx> streamed_;  // parked streamed transactions
};

}  // namespace cppcdc::pg
