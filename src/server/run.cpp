#include "server/run.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/circuit_breaker.hpp"
#include "core/json_write.hpp"
#include "core/said_once.hpp"
#include "core/stop_request.hpp"
#include "core/text_util.hpp"
#include "cppcdc/blocking_snapshot.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/dead_letter.hpp"
#include "cppcdc/pipeline.hpp"
#include "cppcdc/router.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/transforms.hpp"
#include "server/admin_http.hpp"
#include "server/control_socket.hpp"
#include "server/health_log.hpp"
#include "server/metrics.hpp"
#include "server/snapshot_control.hpp"

namespace cppcdc::server {
namespace {

// Set by SIGINT/SIGTERM. A lock-free atomic is safe to store from a signal handler.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// The core's flag too: parts that wait on something outside (the HTTP sink's retries) stop
// waiting when it is set.
// How many stop signals arrived (the log mentions repeats when the process stops).
std::atomic<int> g_stop_signals{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int /*signo*/) {
  g_stop_requested.store(true);
  detail::g_process_stop_requested.store(true);
  g_stop_signals.fetch_add(1);
}

// No SA_RESTART, so a blocking call returns EINTR and the loop sees the flag promptly.
// A repeated signal does not cut the stop short: every wait of the stop path ends within about
// a second of the first, and killing the process half-way would leave its lock file and control
// socket behind (GNU timeout and some service managers send SIGTERM twice). SIGKILL remains the
// way to end it at once; nothing unacknowledged is ever checkpointed, so it loses nothing.
void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A peer that went away must surface as an EPIPE error on the write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
}

// One JSON object per line: {"ts":"2026-01-01T00:00:00.000Z","level":"info","msg":"..."}.
class JsonLineFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    line_.clear();
    const auto since_epoch = msg.time.time_since_epoch();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
    const std::time_t secs = std::chrono::system_clock::to_time_t(msg.time);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[96];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms < 0 ? ms + 1000 : ms));
    line_ += "{\"ts\":\"";
    line_ += ts;
    line_ += "\",\"level\":";
    const auto level = spdlog::level::to_string_view(msg.level);
    detail::append_json_string(line_, std::string_view(level.data(), level.size()));
    line_ += ",\"msg\":";
    detail::append_json_string(line_, std::string_view(msg.payload.data(), msg.payload.size()));
    line_ += "}\n";
    dest.append(line_.data(), line_.data() + line_.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>();
  }

 private:
  std::string line_;
};

void setup_logging(const ServerConfig& config) {
  auto logger = spdlog::stderr_color_mt("cppcdc");
  if (config.log_format == "json") {
    logger->set_formatter(std::make_unique<JsonLineFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

// Closes the source: cleanly when nothing is in flight, otherwise forced (the unacknowledged
// events are replayed after a restart, which is what at-least-once allows).
// `why`: why a batch in flight is not acknowledged, for the forced stop's warning.
// True when the stop cut short a delivery that had not got through (Runtime::force_stop()).
bool shut_down(Runtime& runtime, std::string_view why = {}) {
  if (auto stopped = runtime.stop(); !stopped) {
    // The runtime's reason speaks to library callers (which call to make); the forced stop
    // says what it means for this program: the unacknowledged events come again.
    spdlog::debug("a clean stop was refused: {}", stopped.error().report());
    return runtime.force_stop(why);
  }
  return false;
}

// `origin`: the configuration being run. Library messages cannot know the config file; it is
// named where they show a command to type.
int report_failure(const Error& error, const std::string& origin) {
  std::string text = render_error(error);
  if (!origin.empty()) {
    const std::string placeholder = "--config <file>";
    for (auto at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + 1)) {
      text.replace(at, placeholder.size(), "--config " + origin);
    }
  }
  spdlog::error("cppcdc stopped: {}", text);
  spdlog::default_logger()->flush();
  return exit_code_for(error.kind());
}

// An error a sink plugin returned for a [[sinks]] entry, with its setting named as that entry
// spells it (the plugin only knows "[sink] path").
Error for_entry(const Error& e, const SinkEntry& entry) {
  if (e.setting_owner() != SettingOwner::kSink || entry.label == "[sink]") return e;
  const auto [table, key] = split_setting_path(e.setting());
  Error out(e.kind(), e.category(),
            entry.label + " " + (table.empty() ? key : table + "." + key) + ": " + e.message());
  out = std::move(out).with_condition(e.condition());
  for (auto it = e.chain().rbegin(); it != e.chain().rend(); ++it) {
    out = std::move(out).context(*it);
  }
  return out;
}

// A plain pipeline of [sink] alone needs no router: no routes, no other sinks, no fanout, no
// batching.
bool needs_router(const ServerConfig& config) {
  if (config.sinks.size() != 1 || !config.routes.empty()) return true;
  const SinkEntry& only = config.sinks.front();
  return only.type == "fanout" || only.batching.max_events != 0 ||
         only.batching.flush_interval_events != 0 || only.batching.max_delay.count() != 0;
}

// The router over every opened sink: [[pipeline.routes]] in order, fanouts as targets of
// several children, [sink] as the default target.
Result<std::unique_ptr<RouterSink>> build_router(const ServerConfig& config,
                                                 std::vector<std::unique_ptr<Sink>>& opened) {
  RouterConfig rc;
  std::vector<std::size_t> child_of(config.sinks.size(), 0);
  for (std::size_t i = 0; i < config.sinks.size(); ++i) {
    if (config.sinks[i].type == "fanout") continue;
    child_of[i] = rc.children.size();
    RouterChild child{config.sinks[i].name, std::move(opened[i]), config.sinks[i].batching, {}};
    // Errors of a [[sinks]] entry name its settings as that entry ("[[sinks]] \"x\" topic"),
    // not as "[sink] topic".
    if (config.sinks[i].label != "[sink]") {
      child.relabel_error = [entry = config.sinks[i]](Error e) { return for_entry(e, entry); };
    }
    rc.children.push_back(std::move(child));
  }
  const auto targets = [&](std::size_t i) {
    std::vector<std::size_t> out;
    if (config.sinks[i].type != "fanout") return std::vector<std::size_t>{child_of[i]};
    for (std::size_t c : config.sinks[i].fanout) out.push_back(child_of[c]);
    return out;
  };
  for (const auto& route : config.routes) {
    rc.routes.push_back(RouterRoute{route.tables, route.schemas, targets(route.sink),
                                    config.sinks[route.sink].name});
  }
  rc.default_targets = targets(0);
  rc.default_name = "the default sink \"" + config.sinks[0].name + "\" ([sink])";
  return RouterSink::create(std::move(rc));
}

// What the admin server reads while the pipeline is put together: it comes up before the
// checkpoint, the sinks and the source are opened (each may wait on a server), so that the
// probes answer from the start, and it reads the runtime, the transforms and the routes once
// they exist (the runtime under the mutex). The admin server is stopped before any of them
// goes.
struct AdminLink {
  std::mutex mutex;
  const Runtime* runtime = nullptr;
  TransformChain* chain = nullptr;
  RouterSink* router = nullptr;
  std::string step = "starting";  // what the start does now, until the runtime runs
  std::string failure;            // the error that ended the run, once it failed
  bool source_started = false;    // the runtime's start() began: the source's lag may be read

  void set_step(std::string what) {
    std::lock_guard lock(mutex);
    step = std::move(what);
  }
  void set_failure(std::string what) {
    std::lock_guard lock(mutex);
    failure = std::move(what);
  }
  std::string get_failure() {
    std::lock_guard lock(mutex);
    return failure;
  }
  RuntimeAdminSnapshot snapshot() {
    std::lock_guard lock(mutex);
    if (runtime != nullptr) {
      // The runtime exists from the checkpoint's load on: its counters, breaker and errors
      // count from there. Until its start() runs, the step says what the start does.
      RuntimeAdminSnapshot s = runtime->admin_snapshot();
      if (!step.empty() && s.state == RuntimeState::kCreated) s.health.reason = "starting: " + step;
      return s;
    }
    RuntimeAdminSnapshot s;
    s.health.kind = HealthVerdict::Kind::kNotRunning;
    s.health.reason = "starting: " + step;
    return s;
  }
};

// "a, b, c" for messages, the first few only.
std::string table_list(const std::vector<std::string>& tables) {
  constexpr std::size_t kShown = 8;
  std::string out;
  for (std::size_t i = 0; i < tables.size() && i < kShown; ++i) {
    out += (i ? ", " : "") + tables[i];
  }
  if (tables.size() > kShown) out += " and " + std::to_string(tables.size() - kShown) + " more";
  return out;
}

// Under effectively_once: a warning about the stretch of the initial snapshot that one
// transaction of the sink must hold, with the sink's time limit for it (docs/kafka.md,
// "Stretches without a position"); nullopt when there is no such stretch or no transactional
// sink. `preflight` prints it, `run` logs it as the snapshot starts.
std::optional<PreflightCheck> unresumable_snapshot_warning(
    const ServerConfig& config, const std::optional<UnresumableSnapshot>& stretch) {
  if (config.delivery_contract != "effectively_once" || !stretch || stretch->tables.empty()) {
    return std::nullopt;
  }
  std::optional<std::int64_t> timeout_ms;
  for (const auto& sink : config.sinks) {
    if (sink.configured && !timeout_ms) timeout_ms = sink.configured->transaction_timeout_ms();
  }
  if (!timeout_ms) return std::nullopt;
  const std::size_t n = stretch->tables.size();
  const std::string limit = ", which must commit within the sink's transaction.timeout.ms (" +
                            std::to_string(*timeout_ms) +
                            " ms) or the broker aborts it and the run fails";
  const std::string raise =
      "raise [sink.kafka_properties] \"transaction.timeout.ms\" (at most the brokers' "
      "transaction.max.timeout.ms, 15 minutes by default)";
  const std::string see = " (docs/kafka.md, \"Stretches without a position\")";
  if (stretch->whole_snapshot) {
    const std::string server = config.source_type == "mysql" ? "MySQL" : "MariaDB";
    return PreflightCheck{
        PreflightCheck::Outcome::kWarn,
        "effectively_once: the " + server + " snapshot (" + detail::counted(n, "table") + ": " +
            table_list(stretch->tables) +
            ") has a resume position only after its last row, so all of it is delivered in "
            "one Kafka transaction" +
            limit,
        "if reading these tables takes longer, " + raise +
            ", or snapshot less ([source.snapshot] tables, table_conditions)" +
            (config.source_type == "mariadb" ? " and take the rest with incremental snapshots"
                                             : "") +
            see};
  }
  return PreflightCheck{
      PreflightCheck::Outcome::kWarn,
      "effectively_once: " + std::string(n == 1 ? "table " : "tables ") +
          table_list(stretch->tables) + (n == 1 ? " has" : " have") +
          " no primary key, so the snapshot cannot resume inside " + (n == 1 ? "it" : "them") +
          " and delivers " + (n == 1 ? "it" : "each") + " whole in one Kafka transaction" + limit,
      "give " + std::string(n == 1 ? "it" : "them") + " a primary key; or, if reading " +
          (n == 1 ? "it" : "one") + " takes longer, " + raise +
          ", or snapshot fewer of its rows ([source.snapshot] table_conditions)" + see};
}

// The runtime's observer in `cppcdc run`: counts the events that open transactions carried
// and that were aborted (a stop during a stretch with no position to resume after), for the
// stop line, and passes every call on to the metrics (when [admin] has them).
class CarriedTally final : public RuntimeObserver {
 public:
  explicit CarriedTally(std::shared_ptr<RuntimeObserver> next) : next_(std::move(next)) {}
  void on_delivered(std::span<const Event> events) override {
    if (next_) next_->on_delivered(events);
  }
  void on_committed(std::span<const Event> events, std::int64_t acked_at_ms) override {
    carried_.store(0, std::memory_order_relaxed);
    if (next_) next_->on_committed(events, acked_at_ms);
  }
  void on_carried(std::span<const Event> events, std::int64_t acked_at_ms) override {
    carried_.fetch_add(events.size(), std::memory_order_relaxed);
    if (next_) next_->on_carried(events, acked_at_ms);
  }
  void on_carried_aborted() override {
    aborted_.fetch_add(carried_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    if (next_) next_->on_carried_aborted();
  }
  void on_checkpoint(const CheckpointRecord& record) override {
    if (next_) next_->on_checkpoint(record);
  }
  /// Events of this process that open transactions carried and that were then aborted.
  std::uint64_t aborted() const { return aborted_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<RuntimeObserver> next_;
  std::atomic<std::uint64_t> carried_{0};
  std::atomic<std::uint64_t> aborted_{0};
};

}  // namespace

int exit_code_for(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kConfiguration:
      return kExitConfiguration;
    case ErrorKind::kTerminal:
    // Data that can never be processed as it is (an event over max_event_bytes, a malformed
    // frame) is met again on every start: a supervisor must not restart on it.
    case ErrorKind::kInvalidData:
      return kExitTerminal;
    default:
      return kExitFailure;
  }
}

std::vector<std::vector<std::string>> tables_per_sink(const ServerConfig& config,
                                                      const std::vector<std::string>& tables);

int run_server(const ServerConfig& config) {
  setup_logging(config);
  install_signal_handlers();

  auto source = config.source->build();
  if (!source) {
    return report_failure(source.error().context("building the " + config.source_type + " source"),
                          config.origin);
  }

  // The control socket comes up before anything else is opened, so that a second cppcdc
  // started on the same configuration stops here, before it opens the checkpoint (whose
  // writer lock would refuse it less helpfully) or the sink, or touches the source. The source
  // is built but not connected: its snapshot handle works before the runtime exists.
  ControlContext control_context;
  control_context.snapshot = (*source)->incremental_snapshot_control();
  if (!control_context.snapshot) {
    control_context.unavailable_reason =
        "this pipeline runs no incremental snapshots (" +
        config.source->no_incremental_snapshots_reason().value_or("its source takes none") + ")";
  }
  control_context.initial = (*source)->blocking_snapshot_tracker();
  control_context.config = std::filesystem::absolute(config.origin).string();
  auto control = ControlServer::start(
      config.control_socket,
      [control_context](std::string_view request, const std::atomic<bool>& stopping) {
        return handle_control_request(request, control_context, stopping);
      });
  if (!control) {
    return report_failure(control.error().context("opening the control socket"), config.origin);
  }
  // An open that a stop signal cut short is a stop, not a failure.
  const auto failed_opening = [&config](const Error& error, const std::string& what) {
    if (g_stop_requested.load()) {
      spdlog::info("cppcdc stopped by signal while {}: {}", what, error.report());
      spdlog::default_logger()->flush();
      return kExitOk;
    }
    return report_failure(error.context(what), config.origin);
  };

  // Metrics are counted only when something serves them. The admin server comes up now, so
  // that the probes answer (not ready, saying which step the start is at) while the
  // checkpoint, the sinks and the source connect, or the initial snapshot runs. It is stopped
  // before the runtime goes.
  const std::string checkpoint_id = config.source->checkpoint_id();
  const std::string checkpoint_desc = config.checkpoint->describe(checkpoint_id);
  std::shared_ptr<PipelineMetrics> metrics;
  if (config.admin) metrics = std::make_shared<PipelineMetrics>();
  auto admin_link = std::make_shared<AdminLink>();
  admin_link->set_step("opening the checkpoint (" + checkpoint_desc + ")");
  const Source* source_view = source->get();  // owned by the runtime, which outlives its use
  std::unique_ptr<AdminServer> admin;
  if (config.admin) {
    AdminSources sources;
    sources.snapshot = [admin_link] { return admin_link->snapshot(); };
    // The probes answered during the error linger name the side that kept failing.
    sources.failure = [admin_link] { return admin_link->get_failure(); };
    sources.lag = [admin_link, source_view]() -> std::optional<SourceLag> {
      {
        std::lock_guard lock(admin_link->mutex);
        if (!admin_link->source_started) return std::nullopt;  // not connected yet
      }
      return source_view->lag();
    };
    sources.unmatched_rules = [admin_link] {
      std::vector<UnmatchedRule> all;
      std::lock_guard lock(admin_link->mutex);
      if (admin_link->chain != nullptr) all = admin_link->chain->unmatched_rules();
      if (admin_link->router != nullptr) {
        for (const auto& route : admin_link->router->unmatched_routes()) {
          all.push_back(
              {"pipeline.routes", "route", route.rule + " -> " + route.target, route.consequence});
        }
      }
      return all;
    };
    sources.metrics = metrics;
    sources.control = control_context;
    auto started = AdminServer::start(*config.admin, std::move(sources));
    if (!started) {
      return report_failure(started.error().context("starting the admin server"), config.origin);
    }
    admin = std::move(*started);
  }
  const auto stop_admin = [&admin] {
    if (admin) admin->stop();
  };

  auto checkpoint = config.checkpoint->open(checkpoint_id);
  if (!checkpoint) {
    stop_admin();
    return failed_opening(checkpoint.error(), "opening the checkpoint");
  }

  // The runtime comes next, before anything waits on a server: it loads the checkpoint now
  // (the admin snapshot shows its position and lifetime count while the start goes on), and
  // its retry policy and circuit breaker count every failed attempt to reach the source from
  // here on, as they do for a reconnect in the middle of a run.
  RuntimeConfig runtime_config;
  runtime_config.source = std::move(*source);
  runtime_config.checkpoint = *checkpoint;
  runtime_config.options = config.runtime;
  const auto tally = std::make_shared<CarriedTally>(metrics);
  runtime_config.observer = tally;
  auto runtime = Runtime::create(std::move(runtime_config));
  if (!runtime) {
    stop_admin();
    return report_failure(runtime.error().context("creating the runtime"), config.origin);
  }
  // Declared after the runtime, so that the admin server stops before the runtime goes.
  struct AdminStop {
    std::unique_ptr<AdminServer>& admin;
    ~AdminStop() {
      if (admin) admin->stop();
    }
  } admin_runtime_guard{admin};
  {
    std::lock_guard lock(admin_link->mutex);
    admin_link->runtime = runtime->get();
    admin_link->step = "loading the checkpoint (" + checkpoint_desc + ")";
  }
  // After the breaker escalated, or the run ended with a fatal error, /livez answers 503 for
  // [admin] error_linger_ms before the process exits, so that a liveness probe and a last
  // scrape see the error state and its cause.
  // Never after a stop signal (a clean stop, or one that cut a wait short).
  // `escalated_only`: only after the breaker escalated (a check before the start, whose other
  // failures are the configuration's or another process').
  // True when it lingered: the exit status is then the error's, also after a stop signal
  // ended the wait.
  const auto linger_on_error = [&](const Error& error, bool escalated_only = false) {
    if (!admin || config.admin->error_linger_ms <= 0 || g_stop_requested.load()) return false;
    const RuntimeAdminSnapshot last = (*runtime)->admin_snapshot();
    if (escalated_only && last.breaker_state != BreakerState::kError) return false;
    admin_link->set_failure(error.report());
    if (last.breaker_state == BreakerState::kError) {
      spdlog::error(
          "the circuit breaker escalated to its error state; /livez answers 503 for {} "
          "ms before cppcdc exits ([admin] error_linger_ms; SIGTERM ends the wait)",
          config.admin->error_linger_ms);
    } else {
      spdlog::error(
          "the run ended with an error; /livez and /readyz answer 503 and /metrics shows the "
          "final verdict ({}) for {} ms before cppcdc exits ([admin] error_linger_ms; SIGTERM "
          "ends the wait)",
          last.health.change_key(), config.admin->error_linger_ms);
    }
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(config.admin->error_linger_ms);
    while (!g_stop_requested.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  };
  // Where the sink writes the checkpoint record inside its own transactions
  // (effectively_once), a run killed in the middle of one left it open on the checkpoint's
  // topic, and committed reads of that topic stop before it until the broker gives up on it
  // (the sink's transaction.timeout.ms). The sink's open ends that transaction (its
  // init_transactions aborts it), so the record is then read after the sinks opened, by the
  // runtime's start, and not here.
  const bool checkpoint_in_sink = config.delivery_contract == "effectively_once" &&
                                  config.checkpoint->in_sink(checkpoint_id).has_value();

  // A copy of a running pipeline's configuration (its own control socket, and a checkpoint
  // that lets a second writer in, or one of its own) stops here, before the sinks open: a
  // transactional Kafka sink's start would fence the running pipeline's producer.
  // The check connects as the source will: a login the server refuses stops here too (the
  // source's start would fail the same way, after the sinks opened), and a server that cannot
  // be reached is waited for under the runtime's retry policy and breaker (the admin snapshot
  // counts those attempts, and a server that stays down escalates the breaker).
  // Nullopt when the source is free; else the exit status.
  const auto check_source_free = [&]() -> std::optional<int> {
    admin_link->set_step("");  // the runtime's own account: connecting to the source, its errors
    const std::string what = "checking the " + config.source_type + " source";
    auto free = (*runtime)->await_before_start(
        [&config] { return config.source->check_not_in_use(); },
        "waiting for the " + config.source_type + " source before opening the sinks",
        g_stop_requested);
    if (free) return std::nullopt;
    const bool lingered = linger_on_error(free.error(), /*escalated_only=*/true);
    stop_admin();
    if (lingered) return report_failure(free.error().context(what), config.origin);
    return failed_opening(free.error(), what);
  };
  bool source_checked = false;
  if (!checkpoint_in_sink) {
    // A backend that can end what a killed run left half-done (kafka_topic: a save left open,
    // which a read of committed records waits for until the broker's transaction timeout)
    // does so once no other instance can be running: the source's check comes first then.
    if ((*checkpoint)->takes_over()) {
      if (auto status = check_source_free()) return *status;
      source_checked = true;
      admin_link->set_step("opening the checkpoint (" + checkpoint_desc + ")");
      if (auto taken = (*checkpoint)->take_over(); !taken) {
        stop_admin();
        return failed_opening(taken.error(), "taking the checkpoint over from an earlier run");
      }
    }
    if (auto loaded = (*runtime)->load_checkpoint(); !loaded) {
      stop_admin();
      return report_failure(loaded.error().context("starting the pipeline"), config.origin);
    }
  }
  if (!source_checked) {
    if (auto status = check_source_free()) return *status;
  }
  admin_link->set_step("opening the sinks");

  // Dead letters: opened only when something sends events there.
  std::shared_ptr<DeadLetterWriter> dead_letters;
  const bool sinks_send_dead_letters =
      std::any_of(config.sinks.begin(), config.sinks.end(), [](const SinkEntry& e) {
        return e.configured && e.configured->dead_letter_key().has_value();
      });
  if (config.dead_letter &&
      (config.transform_error_policy == TransformErrorPolicy::kSkip || sinks_send_dead_letters)) {
    auto opened = DeadLetterWriter::open(config.dead_letter->path,
                                         DeadLetterOptions{config.dead_letter->file_mode});
    if (!opened) {
      return report_failure(opened.error().context("opening [dead_letter]"), config.origin);
    }
    dead_letters = std::move(*opened);
  } else if (config.dead_letter) {
    spdlog::info(
        "[dead_letter] {} is configured, but nothing is sent there while "
        "transform_error_policy = \"halt\" and no sink skips refused batches",
        config.dead_letter->path.string());
  }
  const auto close_dead_letters = [&dead_letters]() -> Status {
    if (!dead_letters) return ok();
    const std::uint64_t kept = dead_letters->records();
    auto closed = dead_letters->close();
    if (kept > 0) {
      spdlog::warn("{} written to the dead-letter file {} in this run",
                   kept == 1 ? std::string("1 event was") : std::to_string(kept) + " events were",
                   dead_letters->path().string());
    }
    return closed;
  };

  // The transforms, then the sinks (one, or a router over several). The pipeline owns both;
  // `chain` and `router` stay readable for their counters.
  TransformChain* chain = nullptr;
  PipelineConfig pipeline_config;
  if (config.transforms) {
    auto stages = parse_transform_stages(*config.transforms, "[[pipeline.transforms]]");
    if (!stages) {
      (void)close_dead_letters();
      return report_failure(stages.error(), config.origin);
    }
    TransformChainConfig chain_config;
    chain_config.stages = std::move(*stages);
    chain_config.error_policy = config.transform_error_policy;
    if (dead_letters) {
      chain_config.dead_letter = [dead_letters](const Event& event, const Error& error,
                                                std::string_view stage) {
        return dead_letters->append(event, error, DeadLetterOrigin::stage(std::string(stage)));
      };
      chain_config.dead_letter_flush = [dead_letters] { return dead_letters->flush(); };
    }
    auto built = TransformChain::create(std::move(chain_config));
    if (!built) {
      (void)close_dead_letters();
      return report_failure(built.error().context("building the transforms"), config.origin);
    }
    chain = built->get();
    pipeline_config.transforms.push_back(std::move(*built));
  }

  const auto routed = tables_per_sink(config, config.source->captured_tables());
  std::vector<std::unique_ptr<Sink>> opened(config.sinks.size());
  const auto close_opened = [&opened] {
    for (auto& s : opened) {
      if (s) (void)s->close();
    }
  };
  for (std::size_t i = 0; i < config.sinks.size(); ++i) {
    const SinkEntry& entry = config.sinks[i];
    if (entry.type == "fanout") continue;
    SinkOpenContext context;
    context.name = entry.name;
    // The destinations its codec checks before the source starts. Transforms may rename
    // events on their way, so then only a sink's fixed destination is known.
    if (!config.transforms) {
      context.source_name = config.source->source_name();
      context.tables = routed[i];
    }
    if (config.delivery_contract == "effectively_once") {
      // The loader made sure that this is the only sink and that it can hold the record.
      context.checkpoint = config.checkpoint->in_sink(checkpoint_id);
    }
    if (dead_letters) {
      context.dead_letter = [dead_letters, name = entry.name](std::span<const Event> events,
                                                              const Error& error) -> Status {
        for (const Event& event : events) {
          CPPCDC_TRY(dead_letters->append(event, error, DeadLetterOrigin::sink(name)));
        }
        return dead_letters->flush();
      };
    }
    const std::string opening =
        "opening the " + entry.type + " sink " + (i == 0 ? std::string("[sink]") : entry.label);
    admin_link->set_step(opening);
    auto sink = entry.configured->open(context);
    if (!sink) {
      close_opened();
      (void)close_dead_letters();
      stop_admin();
      return failed_opening(for_entry(sink.error(), entry), opening);
    }
    opened[i] = std::move(*sink);
    if (metrics) {
      // The sink side of the metrics, per configured sink (sink="<name>").
      auto tally = std::make_shared<SinkTally>(entry.name);
      opened[i] = count_sink(std::move(opened[i]), tally);
      metrics->add_sink(std::move(tally));
    }
  }
  RouterSink* router = nullptr;
  if (needs_router(config)) {
    auto built = build_router(config, opened);
    if (!built) {
      close_opened();
      (void)close_dead_letters();
      return report_failure(built.error().context("building the routes"), config.origin);
    }
    router = built->get();
    pipeline_config.routes.push_back(PipelineRoute{std::move(*built), {}});
  } else {
    pipeline_config.routes.push_back(PipelineRoute{std::move(opened[0]), {}});
  }
  auto pipeline = Pipeline::create(std::move(pipeline_config));
  if (!pipeline) {
    (void)close_dead_letters();
    return report_failure(pipeline.error().context("building the pipeline"), config.origin);
  }
  // Rules and routes that never fired are logged when the pipeline stops, whatever the reason.
  const auto report_unmatched = [chain, router] {
    if (chain != nullptr) chain->warn_on_unmatched_rules();
    if (router != nullptr) router->warn_on_unmatched_routes();
  };

  // From here the admin server reads the transforms and the routes too; it is stopped before
  // they go (declared after them, the guard goes first).
  {
    std::lock_guard lock(admin_link->mutex);
    admin_link->chain = chain;
    admin_link->router = router;
    admin_link->step.clear();  // the runtime's own account from here: connecting to the source
    admin_link->source_started = true;
  }
  AdminStop admin_stop_guard{admin};

  spdlog::info(
      "cppcdc {} starting: source={} {} sink={} checkpoint={} delivery_contract={} "
      "transforms={}{}",
      kVersion, config.source_type, config.source->summary(), (*pipeline)->name(), checkpoint_desc,
      config.delivery_contract,
      chain != nullptr ? std::to_string(chain->stage_count()) + " stage(s)" : std::string("none"),
      config.routes.empty() ? std::string() : " routes=" + std::to_string(config.routes.size()));

  // A stop signal ends the retries of a source that cannot be reached yet.
  if (auto started = (*runtime)->start(g_stop_requested); !started) {
    const bool lingered = linger_on_error(started.error());
    stop_admin();
    shut_down(**runtime);
    (void)(*pipeline)->close();
    (void)close_dead_letters();
    if (g_stop_requested.load() && !lingered) {
      spdlog::info("cppcdc stopped by signal before the pipeline started: {}",
                   started.error().report());
      spdlog::default_logger()->flush();
      return kExitOk;
    }
    return report_failure(started.error().context("starting the pipeline"), config.origin);
  }
  spdlog::info("pipeline running; send SIGINT or SIGTERM to stop; control socket {}",
               config.control_socket.string());
  // An initial snapshot that one transaction must hold: said once, as it starts.
  if (config.delivery_contract == "effectively_once" && control_context.initial) {
    const BlockingSnapshotStatus status = control_context.initial->status();
    if (status.phase == BlockingSnapshotStatus::Phase::kPending ||
        status.phase == BlockingSnapshotStatus::Phase::kRunning) {
      auto stretch = config.source->unresumable_snapshot(std::nullopt);
      if (stretch) {
        // Only what this run reads (a resumed snapshot read some tables before), in the
        // snapshot's order.
        std::vector<std::string> tables;
        for (const BlockingSnapshotTable& t : status.tables) {
          if (!t.earlier && std::find(stretch->tables.begin(), stretch->tables.end(), t.table) !=
                                stretch->tables.end()) {
            tables.push_back(t.table);
          }
        }
        stretch->tables = std::move(tables);
        // A keyless table is one warning: this one, unless the snapshot said it first.
        if (!stretch->whole_snapshot) {
          std::erase_if(stretch->tables, [](const std::string& table) {
            return !detail::first_to_say(detail::keyless_table_fact(table));
          });
        }
      }
      if (auto warning = unresumable_snapshot_warning(config, stretch)) {
        spdlog::warn("{}; {}", warning->what, warning->remedy);
      }
    }
  }

  std::optional<HealthLogger> health_log;
  health_log.emplace([rt = runtime->get()] { return rt->admin_snapshot().health; },
                     std::chrono::seconds(1));
  auto delivered = (*runtime)->run_to_completion(**pipeline, g_stop_requested);
  health_log.reset();
  (*control)->stop();  // no command is taken while the pipeline shuts down
  if (!delivered) linger_on_error(delivered.error());
  stop_admin();
  if (delivered || (*runtime)->admin_snapshot().events_committed > 0) {
    report_unmatched();
  } else {
    // A run that ended before any event got through (a transform error under halt, say):
    // rules after the failing stage were never reached, so "never matched" would mislead.
    spdlog::info("the transform and route rule counters are not reported: no event was "
                 "delivered in this run");
  }
  if (!delivered) {
    const auto snapshot = (*runtime)->admin_snapshot();
    spdlog::info("events delivered and acknowledged before the error: {}",
                 snapshot.events_committed);
    shut_down(**runtime, "the error below ended their delivery; every sink gets them again");
    (void)(*pipeline)->close();
    (void)close_dead_letters();
    if (!snapshot.checkpoint_offset) {
      // A first start that failed before its first checkpoint: the next start begins over,
      // and what this one created on the source's server (a PostgreSQL replication slot,
      // which holds WAL) waits there for it.
      spdlog::warn(
          "no checkpoint was saved, so the next start begins over; what this start created on "
          "the source's server (a replication slot keeps WAL) stays for that start: if this "
          "pipeline will not run again, `cppcdc teardown --config {}` removes it",
          config.origin);
    }
    return report_failure(delivered.error(), config.origin);
  }

  const bool left_behind = shut_down(**runtime);
  if (auto closed = (*pipeline)->close(); !closed) {
    (void)close_dead_letters();
    return report_failure(closed.error(), config.origin);
  }
  if (auto closed = close_dead_letters(); !closed) {
    return report_failure(closed.error().context("closing [dead_letter]"), config.origin);
  }
  const auto snapshot = (*runtime)->admin_snapshot();
  const int signals = g_stop_signals.load();
  std::string aborted;
  std::uint64_t committed = *delivered;
  if (const std::uint64_t n = tally->aborted(); n > 0) {
    // A stop during a stretch carried in one open transaction (a keyless table's snapshot
    // under effectively_once): those events were written, then aborted, so they do not count
    // as delivered.
    committed -= std::min(committed, n);
    aborted = "; " + std::to_string(n) + (n == 1 ? " event" : " events") +
              " written into an open transaction " + (n == 1 ? "was" : "were") +
              " not delivered: the stop aborted that transaction, so read_committed consumers "
              "saw none of them, and the next start reads them again from the checkpoint";
  }
  spdlog::info("cppcdc stopped{}: {} events delivered, checkpoint at {}{}{}",
               g_stop_requested.load() ? " by signal" : "", committed,
               snapshot.checkpoint_offset.value_or("(none)"), aborted,
               signals > 1 ? " (" + std::to_string(signals) +
                                 " stop signals arrived; a repeated one does not cut the stop "
                                 "short, SIGKILL does)"
                           : std::string());
  if (left_behind) {
    // A supervisor should see that this stop left work behind (README, "Exit codes").
    spdlog::warn(
        "exit status 1: the stop came while a sink was not taking the batch in flight, which "
        "stays unacknowledged and is delivered again at the next start");
    spdlog::default_logger()->flush();
    return kExitFailure;
  }
  spdlog::default_logger()->flush();
  return kExitOk;
}

int check_config(const std::filesystem::path& path) {
  auto config = load_server_config(path);
  if (!config) {
    std::fprintf(stderr, "%s\n", render_error(config.error()).c_str());
    return kExitConfiguration;
  }
  if (auto token = check_admin_token(*config); !token) {
    std::fprintf(stderr, "%s\n", render_error(token.error()).c_str());
    return kExitConfiguration;
  }
  std::fputs(describe_config(*config).c_str(), stdout);
  std::fputs("configuration OK; not checked against the database: run `cppcdc preflight`\n",
             stdout);
  std::fflush(stdout);
  return kExitOk;
}

namespace {

// Empty when this process may write in `dir`, or create it (its nearest existing ancestor is
// writable); otherwise what stands in the way.
std::string directory_problem(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path probe = dir.empty() ? std::filesystem::path(".") : dir;
  bool exists = std::filesystem::exists(probe, ec);
  while (!exists && probe.has_parent_path() && probe != probe.parent_path()) {
    probe = probe.parent_path();
    exists = std::filesystem::exists(probe, ec);
  }
  if (!exists) return "no part of it exists";
  if (!std::filesystem::is_directory(probe, ec)) return probe.string() + " is not a directory";
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    return (probe == dir ? "it is" : probe.string() + " is") +
           std::string(" not writable for this user (uid ") + std::to_string(::geteuid()) + ")";
  }
  return {};
}

// The directories a start creates or writes in: the checkpoint's and the control socket's.
void check_local_directories(const ServerConfig& config, std::vector<PreflightCheck>& checks) {
  using Outcome = PreflightCheck::Outcome;
  std::vector<std::pair<std::string, std::filesystem::path>> dirs;
  if (auto dir = config.checkpoint->directory()) dirs.emplace_back("the checkpoint", *dir);
  const auto socket_dir = config.control_socket.parent_path();
  if (dirs.empty() || dirs.front().second != socket_dir) {
    dirs.emplace_back("the control socket", socket_dir);
  }
  for (const auto& [what, dir] : dirs) {
    const std::string shown = dir.empty() ? std::string(".") : dir.string();
    if (const std::string problem = directory_problem(dir); !problem.empty()) {
      checks.push_back(
          {Outcome::kFail,
           "the directory of " + what + " (" + shown + ") cannot be used: " + problem,
           "create it writable for the user cppcdc runs as (as root: install -d -o "
           "USER " +
               shown + ")" +
               (what == "the control socket" ? ", or set [runtime] control_socket elsewhere"
                                             : ", or point [state.offset] dir elsewhere")});
    } else {
      checks.push_back(
          {Outcome::kPass,
           "the directory of " + what + " (" + shown + ") is writable or can be created", ""});
    }
  }
}

}  // namespace

// The captured tables each sink of `config` receives, by ServerConfig::sinks index: the routes
// applied to each table's name as the source writes it (first match wins, else [sink]), a
// fanout's tables given to each of its children. A table pattern could go anywhere, and so
// could every table when transforms run first (they may rename events): those go to every sink.
std::vector<std::vector<std::string>> tables_per_sink(const ServerConfig& config,
                                                      const std::vector<std::string>& tables) {
  std::vector<std::vector<std::string>> out(config.sinks.size());
  std::vector<WhenPredicate> routes;
  for (const auto& route : config.routes) {
    routes.emplace_back(WhenConfig{route.tables, route.schemas, {}});
  }
  for (const auto& table : tables) {
    const bool anywhere =
        config.transforms.has_value() || table.find_first_of("*?[") != std::string::npos;
    std::vector<std::size_t> to;
    if (anywhere) {
      for (std::size_t i = 0; i < config.sinks.size(); ++i) to.push_back(i);
    } else {
      Event e;
      const auto dot = table.find('.');
      if (dot != std::string::npos) e.schema = table.substr(0, dot);
      e.table = dot == std::string::npos ? table : table.substr(dot + 1);
      std::size_t target = 0;
      for (std::size_t r = 0; r < routes.size(); ++r) {
        if (routes[r].matches(e)) {
          target = config.routes[r].sink;
          break;
        }
      }
      if (config.sinks[target].type == "fanout") {
        to = config.sinks[target].fanout;
      } else {
        to.push_back(target);
      }
    }
    for (std::size_t i : to) {
      if (std::find(out[i].begin(), out[i].end(), table) == out[i].end()) {
        out[i].push_back(table);
      }
    }
  }
  return out;
}

int preflight(const std::filesystem::path& path) {
  auto config = load_server_config(path);
  if (!config) {
    std::fprintf(stderr, "%s\n", render_error(config.error()).c_str());
    return kExitConfiguration;
  }
  if (auto token = check_admin_token(*config); !token) {
    std::fprintf(stderr, "%s\n", render_error(token.error()).c_str());
    return kExitConfiguration;
  }
  // Quiet logs: the checklist is the output.
  spdlog::set_level(spdlog::level::warn);
  std::vector<PreflightCheck> checks;
  using Outcome = PreflightCheck::Outcome;

  // The checkpoint backend's own checks, and the record when it can be read (read-only: a
  // backend creates nothing here that a start would create).
  const std::string checkpoint_id = config->source->checkpoint_id();
  CheckpointPreflight checkpoint = config->checkpoint->preflight(checkpoint_id);
  const std::size_t checkpoint_checks_at = checks.size();
  for (auto& check : checkpoint.checks) checks.push_back(std::move(check));
  check_local_directories(*config, checks);
  for (auto& check : config->source->preflight(checkpoint.record)) {
    checks.push_back(std::move(check));
  }
  // A batch in flight that the checkpoint reports as a stopped run's may be the running
  // pipeline's own (this file, or a copy of it, checked while the pipeline runs): the source
  // tells (its check then fails, naming the process).
  if (checkpoint.in_flight_check) {
    auto free = config->source->check_not_in_use();
    if (!free && free.error().kind() == ErrorKind::kConfiguration) {
      PreflightCheck& check = checks[checkpoint_checks_at + *checkpoint.in_flight_check];
      check = {Outcome::kPass,
               "the checkpoint's " + checkpoint.in_flight +
                   " belongs to the pipeline that runs now: it is its batch in flight, not a "
                   "batch a stopped run left (see the source's check below)",
               ""};
    }
  }
  if (config->delivery_contract == "effectively_once") {
    if (auto warning = unresumable_snapshot_warning(
            *config, config->source->unresumable_snapshot(checkpoint.record))) {
      checks.push_back(std::move(*warning));
    }
  }
  // Every sink's destination (the Kafka sink: brokers, topics, transactions).
  SinkPreflightContext context;
  context.source_name = config->source->source_name();
  const std::vector<std::string> captured = config->source->captured_tables();
  const auto routed = tables_per_sink(*config, captured);
  // Which tables arrive without a key, asked only when some sink may care (a keyed
  // destination) and no transform may re-key them on the way.
  std::optional<std::vector<std::string>> keyless;
  if (!config->transforms && !captured.empty()) keyless = config->source->keyless_tables();
  context.source_name_is_default = !config->source_name_set;
  if (config->delivery_contract == "effectively_once") {
    context.checkpoint = config->checkpoint->in_sink(checkpoint_id);
  }
  for (std::size_t i = 0; i < config->sinks.size(); ++i) {
    const SinkEntry& sink = config->sinks[i];
    if (!sink.configured) continue;
    context.name = sink.name;
    context.tables = routed[i];
    context.keyless_tables.reset();
    if (keyless) {
      context.keyless_tables.emplace();
      for (const auto& t : *keyless) {
        if (std::find(routed[i].begin(), routed[i].end(), t) != routed[i].end()) {
          context.keyless_tables->push_back(t);
        }
      }
    }
    if (!captured.empty() && routed[i].empty()) {
      checks.push_back({PreflightCheck::Outcome::kWarn,
                        sink.label + ": no captured table is routed to it, so it receives no "
                                     "events",
                        "check the globs of the [[pipeline.routes]] that name it"});
    }
    for (auto& check : sink.configured->preflight(context)) {
      if (config->sinks.size() > 1) check.what = sink.label + ": " + check.what;
      checks.push_back(std::move(check));
    }
  }

  std::printf("preflight of %s (source %s):\n", config->origin.c_str(),
              config->source_type.c_str());
  int failures = 0;
  int warnings = 0;
  for (const auto& check : checks) {
    const char* tag = check.outcome == Outcome::kPass   ? "ok  "
                      : check.outcome == Outcome::kWarn ? "warn"
                                                        : "FAIL";
    failures += check.outcome == Outcome::kFail;
    warnings += check.outcome == Outcome::kWarn;
    std::printf("  %s  %s\n", tag, check.what.c_str());
    if (!check.remedy.empty()) std::printf("        remedy: %s\n", check.remedy.c_str());
  }
  if (failures > 0) {
    std::printf("%d check%s failed: a start would stop there\n", failures,
                failures == 1 ? "" : "s");
  } else {
    std::printf("all checks passed%s\n", warnings > 0
                                             ? (" (" + std::to_string(warnings) + " warning" +
                                                (warnings == 1 ? "" : "s") + ")")
                                                   .c_str()
                                             : "");
  }
  std::fflush(stdout);
  return failures > 0 ? kExitTerminal : kExitOk;
}

namespace {

const char* step_tag(TeardownStep::Outcome outcome) {
  using Outcome = TeardownStep::Outcome;
  switch (outcome) {
    case Outcome::kWouldDrop:
      return "drop   ";
    case Outcome::kDropped:
      return "dropped";
    case Outcome::kKept:
      return "keep   ";
    case Outcome::kAbsent:
      return "absent ";
    case Outcome::kFailed:
      return "FAILED ";
  }
  return "?";
}

void print_steps(const std::vector<TeardownStep>& steps) {
  for (const auto& step : steps) {
    std::printf("  %s %s%s%s\n", step_tag(step.outcome), step.what.c_str(),
                step.detail.empty() ? "" : ": ", step.detail.c_str());
  }
}

}  // namespace

int teardown(const std::filesystem::path& path, bool yes, bool include_preexisting) {
  using Outcome = TeardownStep::Outcome;
  auto config = load_server_config(path);
  if (!config) {
    std::fprintf(stderr, "%s\n", render_error(config.error()).c_str());
    return kExitConfiguration;
  }
  spdlog::set_level(spdlog::level::warn);
  const ControlReply running =
      call_control_socket(config->control_socket, R"({"command":"ping"})", std::chrono::seconds(2));
  if (running.outcome == ControlReply::Outcome::kAnswered) {
    std::fprintf(stderr,
                 "cppcdc: a cppcdc runs this pipeline (it answers on %s): stop it before "
                 "tearing the pipeline down; nothing was changed\n",
                 config->control_socket.c_str());
    return kExitRefused;
  }

  auto plan = config->source->teardown(true, include_preexisting);
  if (!plan) {
    std::fprintf(stderr, "cppcdc: %s\n", render_error(plan.error()).c_str());
    return exit_code_for(plan.error().kind());
  }
  const std::string checkpoint_id = config->source->checkpoint_id();
  bool kept = false;  // what the checkpoint's position belongs to stays
  for (const auto& step : *plan) {
    kept = kept || (step.holds_position && step.outcome == Outcome::kKept);
  }
  // Whether a record exists, read without creating anything (as preflight reads it): only a
  // record that is there is listed; when the backend cannot tell, removing it is tried.
  const std::string where = config->checkpoint->describe(checkpoint_id);
  bool exists = false;
  std::string unsure;
  std::optional<PreflightCheck> unreadable;  // a failed check: the backend does not answer
  std::string foreign;  // why the record found is another pipeline's (then it stays)
  if (config->checkpoint->durable() && config->checkpoint->may_hold_record(checkpoint_id)) {
    const CheckpointPreflight found = config->checkpoint->preflight(checkpoint_id);
    exists = found.record.has_value();
    if (found.record && found.record->source_type != config->source_type) {
      // The record under this pipeline's key was written by a pipeline of another source type
      // (two pipelines sharing a checkpoint topic or table with their default keys): it is
      // that pipeline's, and removing it would make it start over from a new snapshot.
      foreign = "it belongs to a " + found.record->source_type + " source ('" +
                found.record->source_id + "'), not to this " + config->source_type +
                " pipeline: kept; give the two pipelines different keys (slot_name, source_id) "
                "or checkpoint locations";
    }
    for (const auto& check : found.checks) {
      if (!exists && check.outcome != PreflightCheck::Outcome::kPass) {
        exists = true;
        unsure = "cannot tell whether it exists (" + check.what + ")";
        if (check.outcome == PreflightCheck::Outcome::kFail) unreadable = check;
        break;
      }
    }
  }
  // A backend whose check failed could not remove the record after the source's objects are
  // gone, leaving a checkpoint that no start can resume from: change nothing. A backend that
  // does not answer exits 1 (trying again later may work), one that refuses (e.g. a Kafka
  // transactional_id that another pipeline's key carries) 3, a step that cannot be carried
  // out as things are; both name the check and its remedy.
  if (unreadable && !kept) {
    std::fprintf(stderr,
                 "cppcdc: the checkpoint %s failed its check (%s%s%s), so it might not be "
                 "removed, and dropping the source's objects without it would leave a "
                 "checkpoint no start can resume from; nothing was changed: %s and run "
                 "teardown again\n",
                 where.c_str(), unreadable->what.c_str(), unreadable->remedy.empty() ? "" : "; ",
                 unreadable->remedy.c_str(),
                 unreadable->unreachable ? "make the backend reachable" : "deal with its cause");
    return unreadable->unreachable ? kExitFailure : kExitTerminal;
  }
  const bool has_checkpoint = exists && !kept && foreign.empty();
  std::vector<TeardownStep> checkpoint_step{
      {has_checkpoint ? Outcome::kWouldDrop
       : exists       ? Outcome::kKept
                      : Outcome::kAbsent,
       exists ? "checkpoint " + where : "no checkpoint found at " + where,
       !foreign.empty() ? foreign
       : kept && exists ? "what it resumes on is kept"
                        : unsure}};
  std::printf("teardown of %s (source %s):\n", config->origin.c_str(), config->source_type.c_str());
  print_steps(*plan);
  print_steps(checkpoint_step);
  bool any = has_checkpoint;
  for (const auto& step : *plan) any = any || step.outcome == Outcome::kWouldDrop;
  for (const auto& step : *plan) {
    if (step.outcome == Outcome::kFailed) {
      std::printf("a step cannot be carried out; nothing was changed\n");
      return kExitTerminal;
    }
  }
  if (!any) {
    std::printf("nothing to remove\n");
    return kExitOk;
  }
  if (!yes) {
    if (::isatty(STDIN_FILENO) == 0) {
      std::printf(
          "not confirmed (no terminal to ask on): pass --yes to proceed; nothing was "
          "changed\n");
      return kExitRefused;
    }
    std::printf("Proceed? This cannot be undone [y/N] ");
    std::fflush(stdout);
    char answer[16] = {};
    if (std::fgets(answer, sizeof answer, stdin) == nullptr ||
        (answer[0] != 'y' && answer[0] != 'Y')) {
      std::printf("nothing was changed\n");
      return kExitRefused;
    }
  }

  auto done = config->source->teardown(false, include_preexisting);
  if (!done) {
    std::fprintf(stderr, "cppcdc: %s\n", render_error(done.error()).c_str());
    return exit_code_for(done.error().kind());
  }
  print_steps(*done);
  bool failed = false;
  for (const auto& step : *done) failed = failed || step.outcome == Outcome::kFailed;
  if (failed) {
    std::printf("  keep    %s: a step above failed, so the checkpoint stays\n",
                checkpoint_step[0].what.c_str());
    return kExitTerminal;
  }
  if (has_checkpoint) {
    if (auto removed = config->checkpoint->remove(checkpoint_id); !removed) {
      std::printf("  FAILED  %s: %s\n", checkpoint_step[0].what.c_str(),
                  render_error(removed.error()).c_str());
      return kExitTerminal;
    }
    std::printf("  removed %s\n", checkpoint_step[0].what.c_str());
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace cppcdc::server
