#pragma once
// Steering incremental snapshots of a running `cppcdc run` (its control socket protocol, and
// the `cppcdc snapshot ...` commands), and `cppcdc snapshot forget`, which edits the saved
// checkpoint while cppcdc is stopped.
//
// Protocol: one JSON object per line, one answer line per request.
//   {"command":"ping"}                          -> {"ok":true,"pid":..,"version":..,"config":..}
//   {"command":"status"}                        -> {"ok":true,"state":{...},
//                                                   "initial_snapshot":{...}}
//   {"command":"request","tables":["s.t",...],"timeout_ms":30000}
//                                               -> {"ok":true,"state":{...}}
//   {"command":"pause"|"resume"|"stop"}         -> {"ok":true,"state":{...},"message":".."}
//   anything refused or failed                  -> {"ok":false,"error":"..."}
// "state" is IncrementalSnapshotState::to_json(), the same object the checkpoint stores under
// "incremental"; a status answer leaves it out when the pipeline runs no incremental
// snapshots. "initial_snapshot" is BlockingSnapshotStatus::to_json(), present when the source
// reports a blocking snapshot's status.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::server {

/// What the control socket of a running server answers with.
struct ControlContext {
  /// The pipeline's incremental snapshot handle; null when its source has none.
  std::shared_ptr<IncrementalSnapshotControl> snapshot;
  /// Why `snapshot` is null, for the answer.
  std::string unavailable_reason;
  /// The source's blocking snapshot status; null when it reports none.
  std::shared_ptr<const BlockingSnapshotTracker> initial;
  std::string config;  ///< the configuration file, for ping answers
};

/// Serves one request line. Waits (while `stopping` stays false) for a request to be taken by
/// the pipeline, and for a pause, resume or stop to show in the published state.
std::string handle_control_request(std::string_view request, const ControlContext& context,
                                   const std::atomic<bool>& stopping);

/// The state as `cppcdc snapshot status` prints it: a heading with the overall status and
/// generation, then one row per table (rows done, estimate, chunks, complete).
std::string format_snapshot_status(const IncrementalSnapshotState& state);

/// The blocking snapshot's status as `cppcdc snapshot status` prints it: a heading with the
/// phase (and, while running or complete, rows read and tables done), then one row per table
/// (rows read, estimate, complete). `now_ms` (wall clock) dates a running snapshot.
std::string format_initial_snapshot_status(const BlockingSnapshotStatus& status,
                                           std::int64_t now_ms);

/// "public.t" for "t"; other names unchanged. For source types "mysql" and "mariadb" every
/// name is returned unchanged (they have no default schema).
std::string qualify_table(const std::string& table, std::string_view source_type = "postgres");

struct ForgetOutcome {
  std::string source_state;            ///< the checkpoint's new source_state
  std::vector<std::string> forgotten;  ///< the tables removed
  std::uint64_t generation = 0;        ///< the incremental state's new generation
};

/// Removes `tables` (or every table with `all`) from the "incremental" member of a checkpoint's
/// source_state and advances its generation by one, so that rows read later never carry an
/// offset that an earlier read produced. The rest of source_state is kept. With `all`, an
/// unreadable incremental state is replaced by an empty one (its generation kept when it can be
/// read, otherwise `now_ms / 1000`, above any count requests reach). Errors (kind
/// invalid_state): no incremental state, or a named table that is not in it.
Result<ForgetOutcome> forget_incremental_tables(const std::string& source_state,
                                                const std::vector<std::string>& tables, bool all,
                                                std::int64_t now_ms);

enum class SnapshotVerb { kRequest, kPause, kResume, kStop, kStatus };

struct SnapshotCommand {
  SnapshotVerb verb = SnapshotVerb::kStatus;
  std::vector<std::string> tables;   ///< kRequest
  bool json = false;                 ///< kStatus: print the raw state
  std::chrono::seconds timeout{30};  ///< kRequest: how long the pipeline may take to accept it
};

/// `cppcdc snapshot request|pause|resume|stop|status --config <file>`: sends the command to the
/// control socket the configuration names and prints the outcome. Exit codes: kExitOk,
/// kExitConfiguration (the file), kExitNotRunning (nobody answers on the socket), kExitRefused
/// (the server's error is printed), kExitFailure (anything else).
int run_snapshot_command(const std::filesystem::path& config_path, const SnapshotCommand& command);

/// `cppcdc snapshot forget TABLE... | --all --config <file>`: loads the checkpoint through the
/// configured backend, removes the tables from its incremental snapshot state and saves it.
/// Refused (kExitRefused) while a cppcdc answers on the control socket.
int forget_snapshot_tables(const std::filesystem::path& config_path,
                           const std::vector<std::string>& tables, bool all);

}  // namespace cppcdc::server
