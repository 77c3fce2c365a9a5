#include "server/snapshot_control.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <thread>

#include "core/text_util.hpp"
#include "cppcdc/checkpoint.hpp"
#include "server/config.hpp"
#include "server/control_socket.hpp"
#include "server/run.hpp"

namespace cppcdc::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kDefaultRequestTimeoutMs = 30'000;
constexpr std::int64_t kMaxTimeoutMs = 600'000;
constexpr auto kDefaultSettleTimeout = std::chrono::seconds(10);
constexpr auto kRequestSlice = std::chrono::milliseconds(250);

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string refused(std::string_view message) {
  boost::json::object o;
  o["ok"] = false;
  o["error"] = message;
  return boost::json::serialize(o);
}

std::string accepted(const IncrementalSnapshotState& state, std::string_view message = {}) {
  boost::json::object o;
  o["ok"] = true;
  o["state"] = boost::json::parse(state.to_json());
  if (!message.empty()) o["message"] = message;
  return boost::json::serialize(o);
}

bool has_unfinished(const IncrementalSnapshotState& state) {
  return std::any_of(state.tables.begin(), state.tables.end(),
                     [](const auto& t) { return !t.complete; });
}

// Waits until the published state satisfies `done`, `timeout` passes or `stopping` is set.
bool wait_for_state(const IncrementalSnapshotControl& control,
                    const std::function<bool(const IncrementalSnapshotState&)>& done,
                    std::chrono::milliseconds timeout, const std::atomic<bool>& stopping) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (done(control.state())) return true;
    if (stopping.load() || Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string handle_request(const boost::json::object& o, IncrementalSnapshotControl& control,
                           const std::atomic<bool>& stopping) {
  const auto* list = o.if_contains("tables");
  if (list == nullptr || !list->is_array() || list->as_array().empty()) {
    return refused("\"request\" needs \"tables\": a non-empty array of \"schema.table\" names");
  }
  std::vector<std::string> tables;
  for (const auto& t : list->as_array()) {
    if (!t.is_string() || t.as_string().empty()) {
      return refused("\"tables\" must hold \"schema.table\" names (non-empty strings)");
    }
    tables.emplace_back(t.as_string());
  }
  std::int64_t timeout_ms = kDefaultRequestTimeoutMs;
  if (const auto* t = o.if_contains("timeout_ms")) {
    if (!t->is_int64() || t->as_int64() < 0) {
      return refused("\"timeout_ms\" must be a non-negative integer");
    }
    timeout_ms = std::min(t->as_int64(), kMaxTimeoutMs);
  }
  spdlog::info("control socket: incremental snapshot of {} requested", join(tables));
  const std::uint64_t before = control.state().generation;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  // Asked in slices, so that a shutdown is noticed: a request that was not taken within its
  // slice is withdrawn (invalid_state) and has had no effect.
  while (true) {
    if (stopping.load()) {
      return refused("cppcdc is shutting down; the request for " + join(tables) + " was not taken");
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto st =
        control.request(tables, std::clamp(left, std::chrono::milliseconds(1), kRequestSlice));
    if (st) break;
    if (st.error().kind() != ErrorKind::kInvalidState) return refused(render_error(st.error()));
    if (Clock::now() >= deadline) {
      return refused("the pipeline did not take the request for " + join(tables) + " within " +
                     std::to_string(timeout_ms) +
                     " ms: it is not polling (reconnecting, or the sink is blocked?); see "
                     "cppcdc's log and try again");
    }
  }
  // The driver answers the request before it publishes the new state.
  wait_for_state(
      control, [before](const IncrementalSnapshotState& s) { return s.generation > before; },
      std::chrono::seconds(2), stopping);
  return accepted(control.state());
}

std::string handle_pause(IncrementalSnapshotControl& control, bool pause,
                         const std::atomic<bool>& stopping) {
  const IncrementalSnapshotState now = control.state();
  if (pause && !has_unfinished(now)) {
    return refused("no incremental snapshot is running (status " + now.status() +
                   "): nothing to pause");
  }
  if (now.paused == pause) {
    return accepted(now, pause ? "already paused" : "not paused: nothing to resume");
  }
  spdlog::info("control socket: incremental snapshot {}", pause ? "pause" : "resume");
  if (pause) {
    control.pause();
  } else {
    control.resume();
  }
  const bool applied = wait_for_state(
      control, [pause](const IncrementalSnapshotState& s) { return s.paused == pause; },
      kDefaultSettleTimeout, stopping);
  if (!applied) {
    return accepted(control.state(), std::string(pause ? "pause" : "resume") +
                                         " sent; it takes effect at the pipeline's next poll");
  }
  return accepted(control.state(), pause ? "paused (a chunk in progress completes)" : "resumed");
}

std::string handle_stop(IncrementalSnapshotControl& control, const std::atomic<bool>& stopping) {
  const IncrementalSnapshotState now = control.state();
  if (!has_unfinished(now)) {
    return refused("no incremental snapshot is running (status " + now.status() +
                   "): nothing to stop");
  }
  spdlog::info("control socket: incremental snapshot stop");
  const std::uint64_t before = now.generation;
  control.stop();
  const bool applied = wait_for_state(
      control,
      [before](const IncrementalSnapshotState& s) { return s.generation > before && s.stopped; },
      kDefaultSettleTimeout, stopping);
  if (!applied) {
    return accepted(control.state(), "stop sent; it takes effect at the pipeline's next poll");
  }
  return accepted(control.state(), "stopped: the unfinished tables were dropped");
}

// Prints `text` (one line) to stderr prefixed with "cppcdc: ".
void complain(const std::string& text) { std::fprintf(stderr, "cppcdc: %s\n", text.c_str()); }

std::string not_running_hint(const std::filesystem::path& config_path) {
  return "is `cppcdc run --config " + config_path.string() + "` running?";
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Rows of cells as aligned columns (two spaces apart), one line each.
std::string render_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows.empty() ? 0 : rows[0].size(), 0);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += i + 1 == r.size() ? r[i] : pad(r[i], widths[i] + 2);
    }
    out += line + "\n";
  }
  return out;
}

// "1000 (25% done)" for an estimate and the rows done so far; "unknown" without an estimate.
std::string estimate_cell(double estimated_rows, std::uint64_t done, bool complete) {
  if (estimated_rows <= 0) return "unknown";
  std::string cell = std::to_string(static_cast<std::uint64_t>(std::llround(estimated_rows)));
  if (!complete) {
    const double pct = std::min(99.0, 100.0 * static_cast<double>(done) / estimated_rows);
    cell += " (" + std::to_string(static_cast<int>(pct)) + "% done)";
  }
  return cell;
}

}  // namespace

std::string qualify_table(const std::string& table, std::string_view source_type) {
  // MySQL and MariaDB have no default database to imply: their names stay as written.
  if (source_type == "mysql" || source_type == "mariadb") return table;
  return table.find('.') == std::string::npos ? "public." + table : table;
}

std::string handle_control_request(std::string_view request, const ControlContext& context,
                                   const std::atomic<bool>& stopping) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(request, ec);
  if (ec || !v.is_object()) return refused("a request is one JSON object on one line");
  const auto& o = v.as_object();
  const auto* command_value = o.if_contains("command");
  if (command_value == nullptr || !command_value->is_string()) {
    return refused("a request needs \"command\" (ping, status, request, pause, resume, stop)");
  }
  const std::string command(command_value->as_string());
  if (command == "ping") {
    boost::json::object answer;
    answer["ok"] = true;
    answer["pid"] = static_cast<std::int64_t>(::getpid());
    answer["version"] = kVersion;
    answer["config"] = context.config;
    return boost::json::serialize(answer);
  }
  const bool known = command == "status" || command == "request" || command == "pause" ||
                     command == "resume" || command == "stop";
  if (!known) {
    return refused("unknown command \"" + command +
                   "\"; expected ping, status, request, pause, resume or stop");
  }
  if (command == "status" && (context.snapshot || context.initial)) {
    boost::json::object o;
    o["ok"] = true;
    if (context.snapshot) o["state"] = boost::json::parse(context.snapshot->state().to_json());
    if (context.initial) {
      o["initial_snapshot"] = boost::json::parse(context.initial->status().to_json());
    }
    return boost::json::serialize(o);
  }
  if (!context.snapshot) return refused(context.unavailable_reason);
  IncrementalSnapshotControl& control = *context.snapshot;
  if (command == "request") return handle_request(o, control, stopping);
  if (command == "pause" || command == "resume") {
    return handle_pause(control, command == "pause", stopping);
  }
  return handle_stop(control, stopping);
}

std::string format_snapshot_status(const IncrementalSnapshotState& state) {
  std::string out = "incremental snapshot";
  if (!state.snapshot_id.empty()) out += " " + state.snapshot_id;
  out += ": " + state.status() + " (generation " + std::to_string(state.generation) + ")\n";
  if (state.tables.empty()) {
    out += state.stopped ? "no tables: the last snapshot was stopped before it finished\n"
                         : "no tables requested (`cppcdc snapshot request TABLE...` starts one)\n";
    return out;
  }
  if (state.paused && !state.is_complete()) {
    out += "paused: no new chunk starts until `cppcdc snapshot resume`\n";
  }
  std::vector<std::vector<std::string>> rows = {
      {"TABLE", "ROWS DONE", "ESTIMATED", "CHUNKS", "COMPLETE"}};
  for (const auto& t : state.tables) {
    const std::string estimate = estimate_cell(t.estimated_rows, t.rows, t.complete);
    rows.push_back({t.table, std::to_string(t.rows), estimate, std::to_string(t.chunks),
                    t.complete ? "yes" : "no"});
  }
  out += render_columns(rows);
  out += detail::counted(state.rows_emitted(), "row") + " in all, " +
         std::to_string(state.tables_remaining()) + " of " +
         detail::counted(state.tables.size(), "table") + " to go\n";
  return out;
}

std::string format_initial_snapshot_status(const BlockingSnapshotStatus& status,
                                           std::int64_t now_ms) {
  using Phase = BlockingSnapshotStatus::Phase;
  std::string out = "initial snapshot";
  if (!status.snapshot_id.empty()) out += " " + status.snapshot_id;
  out += ": " + std::string(BlockingSnapshotStatus::phase_name(status.phase));
  const std::string mode = status.mode.empty() ? std::string("?") : status.mode;
  switch (status.phase) {
    case Phase::kNone:
      if (mode == "never" || mode == "incremental") {
        out += " (snapshot mode " + mode + " takes none)\n";
      } else {
        out += " in this run (snapshot mode " + mode +
               "): the checkpoint it resumed from holds no snapshot in progress, so the last "
               "one completed in an earlier run\n";
      }
      return out;
    case Phase::kPending:
      out += " (reading starts once the source has connected)\n";
      break;
    case Phase::kRunning:
    case Phase::kStopped: {
      const std::int64_t end = status.phase == Phase::kRunning ? now_ms : status.finished_ms;
      const std::int64_t secs = status.started_ms > 0 ? std::max<std::int64_t>(0, (end - status.started_ms) / 1000) : 0;
      out += ": " + detail::counted(status.rows_read(), "row") + " read, " +
             std::to_string(status.tables_complete()) + " of " +
             detail::counted(status.tables.size(), "table") + " complete, " +
             std::to_string(secs) + " s" + (status.resumed ? " (resumed)" : "") + "\n";
      if (status.phase == Phase::kStopped) {
        out += "cppcdc is stopping; the next start continues the snapshot from its checkpoint\n";
      }
      break;
    }
    case Phase::kComplete: {
      const std::int64_t secs = status.started_ms > 0 && status.finished_ms >= status.started_ms
                                    ? (status.finished_ms - status.started_ms) / 1000
                                    : 0;
      out += ": " + detail::counted(status.rows_read(), "row") + " from " +
             detail::counted(status.tables.size(), "table") + " read in " +
             std::to_string(secs) + " s" + (status.resumed ? " (resumed)" : "") +
             (mode == "initial_only" ? "\n" : "; streaming changes since\n");
      break;
    }
    case Phase::kFailed:
      out += ": " + status.error + "\n";
      break;
  }
  if (status.tables.empty()) return out;
  std::vector<std::vector<std::string>> rows = {{"TABLE", "ROWS READ", "ESTIMATED", "COMPLETE"}};
  for (const auto& t : status.tables) {
    const bool earlier = t.earlier;
    const std::string estimate = t.estimated_rows <= 0 && !t.started
                                     ? std::string("-")
                                     : estimate_cell(t.estimated_rows, t.rows_read, t.complete);
    rows.push_back({t.table, earlier ? std::string("-") : std::to_string(t.rows_read), estimate,
                    t.complete ? (earlier ? std::string("yes (earlier run)") : std::string("yes"))
                               : std::string("no")});
  }
  out += render_columns(rows);
  return out;
}

Result<ForgetOutcome> forget_incremental_tables(const std::string& source_state,
                                                const std::vector<std::string>& tables, bool all,
                                                std::int64_t now_ms) {
  const auto nothing = [] {
    return fail(Error::invalid_state(
        "the checkpoint holds no incremental snapshot state: nothing to forget"));
  };
  if (source_state.empty()) return nothing();
  boost::system::error_code ec;
  boost::json::value root = boost::json::parse(source_state, ec);
  if (ec || !root.is_object()) return nothing();
  auto& o = root.as_object();
  auto* saved = o.if_contains("incremental");
  if (saved == nullptr) return nothing();

  ForgetOutcome out;
  IncrementalSnapshotState state;
  auto parsed = IncrementalSnapshotState::from_json(boost::json::serialize(*saved));
  if (parsed) {
    state = std::move(*parsed);
    if (all) {
      for (const auto& t : state.tables) out.forgotten.push_back(t.table);
      state.tables.clear();
      state.paused = false;  // a later request must not start paused
    } else {
      std::vector<std::string> present;
      for (const auto& t : state.tables) present.push_back(t.table);
      std::vector<std::string> missing;
      for (const auto& name : tables) {
        const std::string q = qualify_table(name);
        auto it = std::find_if(state.tables.begin(), state.tables.end(),
                               [&](const auto& t) { return t.table == q; });
        if (it == state.tables.end()) {
          missing.push_back(q);
          continue;
        }
        out.forgotten.push_back(q);
        state.tables.erase(it);
      }
      if (!missing.empty()) {
        return fail(Error::invalid_state(
            "the checkpoint's incremental snapshot has no table " + join(missing) + " (it has " +
            (present.empty() ? std::string("none") : join(present)) + "); nothing was changed"));
      }
    }
    state.generation += 1;
  } else {
    if (!all) {
      return fail(
          Error::invalid_state("the checkpoint's incremental snapshot state cannot be read (" +
                               parsed.error().report() + "); use --all to drop it whole"));
    }
    // Keep counting from the old generation when it is still legible.
    std::uint64_t generation = static_cast<std::uint64_t>(std::max<std::int64_t>(now_ms / 1000, 0));
    if (saved->is_object()) {
      if (const auto* g = saved->as_object().if_contains("generation")) {
        if (g->is_uint64()) generation = g->as_uint64();
        if (g->is_int64() && g->as_int64() >= 0)
          generation = static_cast<std::uint64_t>(g->as_int64());
      }
    }
    state.generation = generation + 1;
  }
  out.generation = state.generation;
  o["incremental"] = boost::json::parse(state.to_json());
  out.source_state = boost::json::serialize(o);
  return out;
}

int run_snapshot_command(const std::filesystem::path& config_path, const SnapshotCommand& command) {
  auto config = load_server_config(config_path);
  if (!config) {
    complain(render_error(config.error()));
    return kExitConfiguration;
  }
  boost::json::object request;
  std::chrono::milliseconds wait = std::chrono::seconds(30);
  switch (command.verb) {
    case SnapshotVerb::kRequest: {
      request["command"] = "request";
      boost::json::array tables;
      for (const auto& t : command.tables) {
        tables.emplace_back(qualify_table(t, config->source_type));
      }
      request["tables"] = std::move(tables);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(command.timeout);
      request["timeout_ms"] = static_cast<std::int64_t>(ms.count());
      wait = ms + std::chrono::seconds(15);
      break;
    }
    case SnapshotVerb::kPause:
      request["command"] = "pause";
      break;
    case SnapshotVerb::kResume:
      request["command"] = "resume";
      break;
    case SnapshotVerb::kStop:
      request["command"] = "stop";
      break;
    case SnapshotVerb::kStatus:
      request["command"] = "status";
      break;
  }
  const ControlReply reply =
      call_control_socket(config->control_socket, boost::json::serialize(request), wait);
  if (reply.outcome == ControlReply::Outcome::kNotRunning) {
    complain("no cppcdc answers on the control socket " + config->control_socket.string() + " (" +
             reply.text + "); " + not_running_hint(config_path));
    return kExitNotRunning;
  }
  if (reply.outcome == ControlReply::Outcome::kFailed) {
    complain(reply.text);
    return kExitFailure;
  }
  boost::system::error_code ec;
  const boost::json::value answer = boost::json::parse(reply.text, ec);
  if (ec || !answer.is_object() || !answer.as_object().if_contains("ok") ||
      !answer.as_object().at("ok").is_bool()) {
    complain("unexpected answer on the control socket " + config->control_socket.string() + ": " +
             reply.text.substr(0, 500));
    return kExitFailure;
  }
  const auto& a = answer.as_object();
  if (!a.at("ok").as_bool()) {
    const auto* error = a.if_contains("error");
    complain("refused: " + (error && error->is_string() ? std::string(error->as_string())
                                                        : std::string("(no reason given)")));
    return kExitRefused;
  }
  const auto* state_value = a.if_contains("state");
  const auto* initial_value = a.if_contains("initial_snapshot");
  if (command.verb == SnapshotVerb::kStatus) {
    if (command.json) {
      boost::json::object both;
      both["initial_snapshot"] = initial_value ? *initial_value : boost::json::value(nullptr);
      both["incremental_snapshot"] = state_value ? *state_value : boost::json::value(nullptr);
      std::printf("%s\n", boost::json::serialize(both).c_str());
      return kExitOk;
    }
    if (initial_value != nullptr) {
      auto initial = BlockingSnapshotStatus::from_json(boost::json::serialize(*initial_value));
      if (!initial) {
        complain(initial.error().report());
        return kExitFailure;
      }
      const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
      std::fputs(format_initial_snapshot_status(*initial, now_ms).c_str(), stdout);
    }
    if (state_value == nullptr) {
      std::fflush(stdout);
      return kExitOk;
    }
  }
  if (state_value == nullptr) {
    complain("the answer on the control socket has no state: " + reply.text.substr(0, 500));
    return kExitFailure;
  }
  const std::string state_json = boost::json::serialize(*state_value);
  auto state = IncrementalSnapshotState::from_json(state_json);
  if (!state) {
    complain(state.error().report());
    return kExitFailure;
  }
  if (const auto* message = a.if_contains("message"); message && message->is_string()) {
    std::printf("%s\n", std::string(message->as_string()).c_str());
  } else if (command.verb == SnapshotVerb::kRequest) {
    std::vector<std::string> tables;
    for (const auto& t : command.tables) tables.push_back(qualify_table(t, config->source_type));
    std::printf("requested %s\n", join(tables).c_str());
  }
  std::fputs(format_snapshot_status(*state).c_str(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

int forget_snapshot_tables(const std::filesystem::path& config_path,
                           const std::vector<std::string>& tables, bool all) {
  auto config = load_server_config(config_path);
  if (!config) {
    complain(render_error(config.error()));
    return kExitConfiguration;
  }
  if (!config->checkpoint->durable()) {
    complain("[state.offset] backend = \"" + config->checkpoint_backend +
             "\" keeps no checkpoint once cppcdc exits: there is nothing to forget");
    return kExitConfiguration;
  }
  // The running pipeline holds the state in memory and would save it over this edit.
  const ControlReply reply =
      call_control_socket(config->control_socket, R"({"command":"ping"})", std::chrono::seconds(5));
  if (reply.outcome == ControlReply::Outcome::kAnswered) {
    complain("cppcdc is running (it answers on " + config->control_socket.string() +
             "): stop it first, since `snapshot forget` edits the saved checkpoint; to drop "
             "the unfinished tables of the running snapshot, use `cppcdc snapshot stop`");
    return kExitRefused;
  }
  if (reply.outcome == ControlReply::Outcome::kFailed) {
    complain("cannot tell whether cppcdc is running: " + reply.text +
             "; stop it before `snapshot forget`");
    return kExitRefused;
  }
  const std::string checkpoint_id = config->source->checkpoint_id();
  const std::string file = config->checkpoint->describe(checkpoint_id);
  if (!config->checkpoint->may_hold_record(checkpoint_id)) {
    complain("no checkpoint at " + file + ": there is nothing to forget");
    return kExitRefused;
  }
  auto checkpoint = config->checkpoint->open(checkpoint_id);
  if (!checkpoint) {
    complain(render_error(checkpoint.error()));
    return exit_code_for(checkpoint.error().kind());
  }
  auto record = (*checkpoint)->load();
  if (!record) {
    complain(record.error().report());
    return exit_code_for(record.error().kind());
  }
  if (!*record) {
    complain("no checkpoint at " + file + ": there is nothing to forget");
    return kExitRefused;
  }
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto outcome = forget_incremental_tables((*record)->source_state, tables, all, now_ms);
  if (!outcome) {
    complain(outcome.error().report() + " (" + file + ")");
    return outcome.error().kind() == ErrorKind::kInvalidState
               ? kExitRefused
               : exit_code_for(outcome.error().kind());
  }
  CheckpointRecord updated = **record;
  updated.source_state = outcome->source_state;
  updated.saved_at_ms = now_ms;
  if (auto saved = (*checkpoint)->save(updated); !saved) {
    complain(saved.error().report());
    return exit_code_for(saved.error().kind());
  }
  if (outcome->forgotten.empty()) {
    std::printf("the incremental snapshot in %s had no tables; its generation is now %llu\n",
                file.c_str(), static_cast<unsigned long long>(outcome->generation));
  } else {
    std::printf(
        "forgot %s in %s (generation now %llu); after starting cppcdc, `cppcdc snapshot request "
        "TABLE...` reads a table again from its start\n",
        join(outcome->forgotten).c_str(), file.c_str(),
        static_cast<unsigned long long>(outcome->generation));
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace cppcdc::server
