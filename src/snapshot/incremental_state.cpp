// IncrementalSnapshotState: counters and its JSON form in the checkpoint's source_state.

#include <boost/json.hpp>
#include <cstdint>
#include <limits>

#include "cppcdc/incremental_snapshot.hpp"

namespace cppcdc {
namespace {

Error bad_state(const std::string& what) {
  return Error::checkpoint(
      ErrorKind::kTerminal,
      "the checkpoint's incremental snapshot state is unreadable (" + what +
          "); run `cppcdc snapshot forget --all --config <file>` while cppcdc is stopped to drop it");
}

boost::json::array strings(const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

std::vector<std::string> strings(const boost::json::value& v) {
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

std::int64_t estimate_for_json(double estimate) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (estimate >= static_cast<double>(kMax)) return kMax;  // the double is 2^63, kMax + 1
  if (estimate > 0) return static_cast<std::int64_t>(estimate);
  return 0;
}

}  // namespace

BracketPosition IncrementalSnapshotBackend::event_in_bracket(const Event&,
                                                             const LogPosition& position,
                                                             const Watermark& low,
                                                             const std::string&,
                                                             const Watermark& high) const {
  if (compare_positions(position, high.position) > 0) return BracketPosition::kAfter;
  if (compare_positions(position, low.position) > 0) return BracketPosition::kInside;
  return BracketPosition::kBefore;
}

bool IncrementalSnapshotState::is_complete() const noexcept {
  if (tables.empty()) return false;
  for (const auto& t : tables) {
    if (!t.complete) return false;
  }
  return true;
}

std::uint64_t IncrementalSnapshotState::rows_emitted() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables) n += t.rows;
  return n;
}

std::size_t IncrementalSnapshotState::tables_remaining() const noexcept {
  std::size_t n = 0;
  for (const auto& t : tables) n += t.complete ? 0 : 1;
  return n;
}

std::string IncrementalSnapshotState::status() const {
  if (is_complete()) return "complete";
  if (stopped && tables.empty()) return "stopped";
  if (tables.empty()) return "idle";
  return paused ? "paused" : "running";
}

std::string IncrementalSnapshotState::to_json() const {
  boost::json::object o;
  o["snapshot_id"] = snapshot_id;
  o["generation"] = generation;
  o["paused"] = paused;
  o["stopped"] = stopped;
  o["status"] = status();
  boost::json::array ts;
  for (const auto& t : tables) {
    boost::json::object j;
    j["table"] = t.table;
    j["key_columns"] = strings(t.key_columns);
    if (t.cursor) {
      j["cursor"] = strings(*t.cursor);
    } else {
      j["cursor"] = nullptr;
    }
    j["generation"] = t.generation;
    j["chunks"] = t.chunks;
    j["rows"] = t.rows;
    // A whole number of rows (a double would print as 3E5); one beyond what an int64 holds
    // (converting it would be undefined) as the largest one, an unknown or NaN one as 0.
    j["estimated_rows"] = estimate_for_json(t.estimated_rows);
    j["complete"] = t.complete;
    ts.emplace_back(std::move(j));
  }
  o["tables"] = std::move(ts);
  return boost::json::serialize(o);
}

Result<IncrementalSnapshotState> IncrementalSnapshotState::from_json(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return fail(bad_state("not a JSON object"));
  const auto& o = v.as_object();
  IncrementalSnapshotState s;
  try {
    s.snapshot_id = std::string(o.at("snapshot_id").as_string());
    s.generation = o.at("generation").to_number<std::uint64_t>();
    s.paused = o.at("paused").as_bool();
    s.stopped = o.at("stopped").as_bool();
    for (const auto& tv : o.at("tables").as_array()) {
      const auto& j = tv.as_object();
      IncrementalSnapshotTableState t;
      t.table = std::string(j.at("table").as_string());
      t.key_columns = strings(j.at("key_columns"));
      if (!j.at("cursor").is_null()) t.cursor = strings(j.at("cursor"));
      t.generation = j.at("generation").to_number<std::uint64_t>();
      t.chunks = j.at("chunks").to_number<std::uint64_t>();
      t.rows = j.at("rows").to_number<std::uint64_t>();
      t.estimated_rows = j.at("estimated_rows").to_number<double>();
      t.complete = j.at("complete").as_bool();
      if (t.cursor && t.cursor->size() != t.key_columns.size()) {
        return fail(bad_state("table " + t.table + ": the cursor has " +
                              std::to_string(t.cursor->size()) + " values for " +
                              std::to_string(t.key_columns.size()) + " key columns"));
      }
      s.tables.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    return fail(bad_state(e.what()));
  }
  return s;
}

}  // namespace cppcdc
