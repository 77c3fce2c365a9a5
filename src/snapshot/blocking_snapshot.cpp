// The blocking snapshot's hand-off to poll() (cppcdc/blocking_snapshot.hpp).

#include "cppcdc/blocking_snapshot.hpp"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <limits>
#include <string>

#include "core/reader_handoff.hpp"

namespace cppcdc {
namespace {

// Delivered batches kept for the next rows.
constexpr std::size_t kReusableBatches = 2;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using Phase = BlockingSnapshotStatus::Phase;

constexpr Phase kPhases[] = {Phase::kNone,     Phase::kPending, Phase::kRunning,
                             Phase::kComplete, Phase::kFailed,  Phase::kStopped};

}  // namespace

bool run_blocking_snapshot(detail::ReaderHandoff& handoff, std::string_view what,
                           const std::function<Status(const SnapshotEmit&)>& read,
                           BlockingSnapshotTracker* tracker) {
  if (tracker != nullptr) tracker->set_running();
  handoff.set_bulk(true);
  std::deque<std::vector<Event>> reusable;  // delivered batches, for the next rows
  const SnapshotEmit emit = [&handoff, &reusable](std::vector<Event>& events,
                                                  std::vector<std::size_t>& sizes) {
    std::vector<std::vector<Event>> done;
    if (!handoff.push(events, &sizes, &done)) return false;
    // Delivered batches come back whole: the next rows are written over their events (no
    // allocation, no event moved). A few wait for their turn; the rest are released here, on
    // the thread that allocated them.
    for (auto& batch : done) {
      if (reusable.size() < kReusableBatches && !batch.empty()) {
        reusable.push_back(std::move(batch));
      }
    }
    if (!reusable.empty()) {
      events.swap(reusable.front());
      reusable.pop_front();
    }
    return !handoff.stopping();
  };
  auto st = read(emit);
  handoff.set_bulk(false);
  if (!st) {
    Error error = st.error().context(std::string(what));
    spdlog::debug("reader stopped: {}", error.report());
    if (tracker != nullptr) {
      // A stop asked for ends the read early without it being the snapshot's fault.
      if (handoff.stopping()) {
        tracker->set_stopped();
      } else {
        tracker->set_failed(error.report());
      }
    }
    handoff.finish(std::move(error));
    return false;
  }
  if (handoff.stopping()) {
    // `read` returns early, and successfully, when a stop interrupts it: the tables it did
    // not finish say whether it completed.
    if (tracker != nullptr) {
      const auto s = tracker->status();
      if (s.tables_complete() == s.tables.size()) {
        tracker->set_complete();
      } else {
        tracker->set_stopped();
      }
    }
    handoff.finish(std::nullopt);
    return false;
  }
  if (tracker != nullptr) tracker->set_complete();
  return true;
}

std::uint64_t BlockingSnapshotStatus::rows_read() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tables) n += t.rows_read;
  return n;
}

std::size_t BlockingSnapshotStatus::tables_complete() const noexcept {
  std::size_t n = 0;
  for (const auto& t : tables) n += t.complete ? 1 : 0;
  return n;
}

std::string_view BlockingSnapshotStatus::phase_name(Phase phase) noexcept {
  switch (phase) {
    case Phase::kNone:
      return "none";
    case Phase::kPending:
      return "pending";
    case Phase::kRunning:
      return "running";
    case Phase::kComplete:
      return "complete";
    case Phase::kFailed:
      return "failed";
    case Phase::kStopped:
      return "stopped";
  }
  return "none";
}

std::string BlockingSnapshotStatus::to_json() const {
  boost::json::object o;
  o["phase"] = phase_name(phase);
  o["snapshot_id"] = snapshot_id;
  o["mode"] = mode;
  o["resumed"] = resumed;
  o["started_ms"] = started_ms;
  o["finished_ms"] = finished_ms;
  o["error"] = error;
  o["rows_read"] = rows_read();
  boost::json::array a;
  for (const auto& t : tables) {
    boost::json::object j;
    j["table"] = t.table;
    j["rows_read"] = t.rows_read;
    // Unknown (never analysed, or not reached yet) is null rather than a negative number.
    // A row count: written as an integer (a double would print as 2.5E3).
    j["estimated_rows"] =
        t.estimated_rows > 0 ? boost::json::value(t.estimated_rows >= 9.2e18
                                                      ? std::numeric_limits<std::int64_t>::max()
                                                      : static_cast<std::int64_t>(t.estimated_rows))
                             : boost::json::value(nullptr);
    j["started"] = t.started;
    j["complete"] = t.complete;
    j["earlier"] = t.earlier;
    a.push_back(std::move(j));
  }
  o["tables"] = std::move(a);
  return boost::json::serialize(o);
}

Result<BlockingSnapshotStatus> BlockingSnapshotStatus::from_json(std::string_view json) {
  const auto bad = [](const std::string& what) {
    return fail(Error::invalid_state("the blocking snapshot status is malformed: " + what));
  };
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return bad("not a JSON object");
  const auto& o = v.as_object();
  BlockingSnapshotStatus s;
  try {
    const std::string phase(o.at("phase").as_string());
    bool known = false;
    for (Phase p : kPhases) {
      if (phase_name(p) == phase) {
        s.phase = p;
        known = true;
      }
    }
    if (!known) return bad("unknown phase \"" + phase + "\"");
    s.snapshot_id = o.at("snapshot_id").as_string();
    s.mode = o.at("mode").as_string();
    s.resumed = o.at("resumed").as_bool();
    s.started_ms = o.at("started_ms").to_number<std::int64_t>();
    s.finished_ms = o.at("finished_ms").to_number<std::int64_t>();
    s.error = o.at("error").as_string();
    for (const auto& item : o.at("tables").as_array()) {
      const auto& j = item.as_object();
      BlockingSnapshotTable t;
      t.table = j.at("table").as_string();
      t.rows_read = j.at("rows_read").to_number<std::uint64_t>();
      const auto& estimate = j.at("estimated_rows");
      t.estimated_rows = estimate.is_null() ? 0 : estimate.to_number<double>();
      t.started = j.at("started").as_bool();
      t.complete = j.at("complete").as_bool();
      t.earlier = j.at("earlier").as_bool();
      s.tables.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  return s;
}

BlockingSnapshotTracker::BlockingSnapshotTracker(std::string mode) {
  status_.mode = std::move(mode);
}

void BlockingSnapshotTracker::set_none() {
  std::lock_guard lock(mutex_);
  BlockingSnapshotStatus s;
  s.mode = status_.mode;
  status_ = std::move(s);
}

void BlockingSnapshotTracker::set_pending(std::string snapshot_id,
                                          const std::vector<std::string>& tables,
                                          std::size_t complete_before, bool resumed,
                                          std::int64_t started_ms) {
  std::lock_guard lock(mutex_);
  BlockingSnapshotStatus s;
  s.mode = status_.mode;
  s.phase = Phase::kPending;
  s.snapshot_id = std::move(snapshot_id);
  s.resumed = resumed || complete_before > 0;
  s.started_ms = started_ms;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    BlockingSnapshotTable t;
    t.table = tables[i];
    t.started = t.complete = t.earlier = i < complete_before;
    s.tables.push_back(std::move(t));
  }
  status_ = std::move(s);
}

void BlockingSnapshotTracker::set_running() {
  std::lock_guard lock(mutex_);
  status_.phase = Phase::kRunning;
  if (status_.started_ms == 0) status_.started_ms = now_ms();
}

void BlockingSnapshotTracker::table_started(std::size_t index, double estimated_rows) {
  std::lock_guard lock(mutex_);
  if (index >= status_.tables.size()) return;
  status_.tables[index].started = true;
  status_.tables[index].estimated_rows = estimated_rows;
}

void BlockingSnapshotTracker::table_progress(std::size_t index, std::uint64_t rows, bool complete) {
  std::lock_guard lock(mutex_);
  if (index >= status_.tables.size()) return;
  auto& t = status_.tables[index];
  t.started = true;
  t.rows_read = rows;
  t.complete = t.complete || complete;
}

void BlockingSnapshotTracker::set_complete() {
  std::lock_guard lock(mutex_);
  status_.phase = Phase::kComplete;
  for (auto& t : status_.tables) t.started = t.complete = true;
  status_.finished_ms = now_ms();
}

void BlockingSnapshotTracker::set_failed(std::string error) {
  std::lock_guard lock(mutex_);
  status_.phase = Phase::kFailed;
  status_.error = std::move(error);
  status_.finished_ms = now_ms();
}

void BlockingSnapshotTracker::set_stopped() {
  std::lock_guard lock(mutex_);
  if (status_.phase == Phase::kComplete || status_.phase == Phase::kFailed) return;
  status_.phase = Phase::kStopped;
  status_.finished_ms = now_ms();
}

BlockingSnapshotStatus BlockingSnapshotTracker::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

}  // namespace cppcdc
