#pragma once
// Which streamed changes a snapshot read already contains.
//
// A snapshot read in a transaction of its own (a restart mid-snapshot, whose exported snapshot
// is gone; or a first start without one: the slot existed, or sql_peek) sees every transaction
// that committed before it was taken, while the stream starts at the slot's earlier position.
// Each change the stream carries from such a transaction, to a row that read covers, is in the
// read already. The read records its snapshot (txid_current_snapshot(): xmin, xmax and the
// transactions in progress, with 64-bit epoch-extended ids), the WAL insert position read
// right after it, and the tables (or, for a keyed table read from a saved key on, the key
// range) it covers; the stream then drops those changes.
//
// Visibility is exact: a top-level transaction is visible when its id is below xmin, or below
// xmax and not in progress. Every visible transaction committed (its commit record was written)
// before the position read after the snapshot, so once the stream has released a commit at or
// past that position no later transaction can be visible and the filter is dropped. That also
// bounds the 32-bit ids pgoutput sends to within 2^31 of the snapshot's xmax, so they extend to
// 64 bits unambiguously.

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg {

/// A transaction snapshot as txid_current_snapshot() prints it: "xmin:xmax:xip,...".
struct XidSnapshot {
  std::uint64_t xmin = 0;
  std::uint64_t xmax = 0;
  std::vector<std::uint64_t> xip;  ///< sorted

  static std::optional<XidSnapshot> parse(std::string_view text);
  std::string to_string() const;
  /// The 64-bit id whose low 32 bits are `xid`, nearest to xmax.
  std::uint64_t extend(std::uint32_t xid) const noexcept;
  /// Whether top-level transaction `xid` (32 bits, as pgoutput sends it) had committed for
  /// this snapshot.
  bool visible(std::uint32_t xid) const noexcept;

  friend bool operator==(const XidSnapshot&, const XidSnapshot&) = default;
};

/// The rows of one table one read covers: all (no bounds) or the keys in (after, through].
struct ReadRange {
  std::string table;                                ///< "schema.table", as the stream names it
  std::vector<std::string> key;                     ///< primary key column names (empty: keyless)
  std::vector<std::string> key_types;               ///< their format_type
  std::optional<std::vector<std::string>> after;    ///< exclusive lower bound (text values)
  std::optional<std::vector<std::string>> through;  ///< inclusive upper bound

  bool whole() const noexcept { return !after && !through; }
  friend bool operator==(const ReadRange&, const ReadRange&) = default;
};

/// One read in a transaction of its own.
struct SnapshotRead {
  XidSnapshot snapshot;
  Lsn until;  ///< the WAL insert position read right after the snapshot was taken
  std::vector<ReadRange> ranges;
  friend bool operator==(const SnapshotRead&, const SnapshotRead&) = default;
};

/// Orders two keys of the given types (text values, key order): <0, 0, >0.
using KeyCompare = std::function<Result<int>(const std::vector<std::string>& types,
                                             const std::vector<std::string>& a,
                                             const std::vector<std::string>& b)>;

/// Integer keys (smallint, integer, bigint) compared here; nullopt for any other type.
std::optional<int> compare_integer_keys(const std::vector<std::string>& types,
                                        const std::vector<std::string>& a,
                                        const std::vector<std::string>& b);

class ReadVisibility {
 public:
  bool empty() const noexcept { return reads_.empty(); }
  /// Changes whenever the filter does (to cache its to_state()).
  std::uint64_t version() const noexcept { return version_; }
  const std::vector<SnapshotRead>& reads() const noexcept { return reads_; }

  /// A new read under `snapshot` starts (add_range adds what it covers).
  void begin_read(const XidSnapshot& snapshot, Lsn until);
  /// The current (last begun) read covers `range`. Earlier reads' open ranges of that table
  /// end at range.after (the saved key the new read continues after: the earlier read
  /// delivered the keys up to it); without range.after they are dropped (the table is read
  /// again from its start).
  void add_range(ReadRange range);

  /// Whether a change of `table` in top-level transaction `xid` is in a read already (and so
  /// is to be dropped). `before` (the old row or key; null for an insert, or an update that
  /// kept its key) and `after` (the new row; null for a delete) give the change's keys.
  ///
  /// A table without a key: every change of a visible transaction. A keyed table: an insert
  /// or an update that keeps its key, of a visible transaction, when the key lies in the
  /// range read. Deletes and updates that change the key are delivered even so: a consumer
  /// may still hold the old row from a batch delivered but not acknowledged before a crash
  /// (at_least_once), which only they remove; `row_write()` of a delete of a row the consumer
  /// lacks writes nothing. Their keys are remembered, and every later change of the window to
  /// a remembered key is delivered too, so that the row ends as the read's view has it (a
  /// key deleted and inserted again in the window thus arrives as a read and again through the
  /// stream). A key that cannot be compared delivers.
  bool already_read(std::uint32_t xid, const std::string& table, const Row* before,
                    const Row* after, const KeyCompare& compare);
  /// Whether a TRUNCATE of `table` in `xid` is in a read already (only a table without a key
  /// read whole). A TRUNCATE that is delivered also empties the rows reads took of the table:
  /// call truncated() for it.
  bool truncate_already_read(std::uint32_t xid, const std::string& table) const;
  /// A TRUNCATE of `table` is delivered: later visible changes of the table are delivered too
  /// (their rows are no longer in what the consumer holds).
  void truncated(const std::string& table);

  /// The stream released a transaction committed at `commit_lsn`: reads whose `until` it has
  /// reached are dropped. Returns whether anything was.
  bool passed(Lsn commit_lsn);

  /// The remembered keys of `table` (see already_read).
  std::size_t remembered(const std::string& table) const;
  /// Past this many remembered keys the table's filter ends (its later changes are all
  /// delivered: the overlap, which row_write() replays right), so that the checkpoint's
  /// source_state stays small.
  static constexpr std::size_t kMaxRemembered = 1000;

  boost::json::object to_json() const;
  /// {"visibility": [...]} for a source_state (the empty string when empty()).
  std::string to_state() const;
  /// The "visibility" member of a source_state (empty when it has none).
  static Result<ReadVisibility> from_state(const std::string& state);
  /// Empty for a null or missing value.
  static Result<ReadVisibility> from_json(const boost::json::value* v);

 private:
  void remember(const std::string& table, std::vector<std::string> key);
  std::vector<SnapshotRead> reads_;
  std::uint64_t version_ = 0;
  // Per table, the keys whose changes the window delivers (already_read).
  std::map<std::string, std::set<std::vector<std::string>>> delivered_;
};

/// The key values of `row` for columns `key` (nullopt when one is absent or NULL).
std::optional<std::vector<std::string>> key_values(const Row& row,
                                                   const std::vector<std::string>& key);

}  // namespace cppcdc::pg
