#pragma once
// The admin HTTP server of `cppcdc run` (`[admin] listen`): probes, Prometheus metrics, the
// runtime's admin snapshot as JSON, and the incremental snapshot commands of the control
// socket over HTTP. docs/admin-openapi.yaml describes every route; the server serves that
// document (built in) at /admin/openapi.yaml.
//
//   GET  /livez                    200, or 503 once the circuit breaker escalated (error)
//   GET  /readyz                   200 while streaming and not stalled, else 503
//   GET  /metrics                  Prometheus text format (metrics.hpp)
//   GET  /admin/snapshot           RuntimeAdminSnapshot as JSON, with the snapshot states
//   GET  /admin/snapshot/status    the control socket's "status" answer
//   POST /admin/snapshot/request   {"tables": [...], "timeout_ms": n}: "request"
//   POST /admin/snapshot/pause|resume|stop
//   GET  /admin/openapi.yaml       the API description
//
// With a token configured every route but the two probes requires `Authorization: Bearer
// <token>` (401 otherwise): probes reveal nothing but up or not, and a kubelet's probes are
// simplest without headers.
//
// Threading: cpp-httplib accepts on a thread of its own and serves requests on its worker
// pool; those threads block SIGINT/SIGTERM, which stay with the main thread. A handler only
// reads thread-safe state (Runtime::admin_snapshot(), Source::lag(), the snapshot control
// handle), so nothing it does waits on, or makes wait, the pipeline's thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cppcdc/result.hpp"
#include "cppcdc/runtime.hpp"
#include "server/config.hpp"
#include "server/snapshot_control.hpp"

namespace httplib {
class Server;
}

namespace cppcdc::server {

class PipelineMetrics;

/// What the handlers read. Every member may be called from any thread.
struct AdminSources {
  /// The runtime's admin snapshot (required).
  std::function<RuntimeAdminSnapshot()> snapshot;
  /// The error that ended the run (empty while it runs), which names the failing side; may be
  /// null.
  std::function<std::string()> failure;
  /// The source's lag figures; may be null.
  std::function<std::optional<SourceLag>()> lag;
  /// Unmatched transform rules and routes ([[pipeline.routes]] entries, kind "route",
  /// transform "pipeline.routes"); may be null.
  std::function<std::vector<UnmatchedRule>()> unmatched_rules;
  /// The counters the runtime's observer keeps; may be null (then /metrics has only the
  /// snapshot's figures).
  std::shared_ptr<const PipelineMetrics> metrics;
  /// The control socket's context: the incremental snapshot handle and the blocking snapshot
  /// tracker.
  ControlContext control;
};

/// "host:port" split; the host of "[::1]:9464" is "::1". Error kind configuration (the message
/// says what is wrong, without naming the key).
Result<std::pair<std::string, int>> parse_listen_address(std::string_view text);
/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

/// The answer of a probe: status code and a one-line JSON body.
struct ProbeAnswer {
  int status = 200;
  std::string body;
};
/// /livez: 503 when the breaker is in the error state, or once the run failed with `failure`
/// (AdminSources::failure: the error that ended the run, set while the process lingers before
/// its exit; added to the reason).
ProbeAnswer liveness(const RuntimeAdminSnapshot& snapshot, const std::string& failure = {});
/// /readyz: 503 unless running, streaming (no initial snapshot pending or running) and the
/// verdict is not alertable. `failure` as for liveness().
ProbeAnswer readiness(const RuntimeAdminSnapshot& snapshot,
                      const std::optional<BlockingSnapshotStatus>& initial,
                      const std::string& failure = {});
/// The JSON of /admin/snapshot. `unmatched`: the transform rules and routes that never matched
/// (an "unmatched_rules" array; empty before the first event, when every rule is unmatched).
std::string admin_snapshot_json(const RuntimeAdminSnapshot& snapshot,
                                const std::optional<BlockingSnapshotStatus>& initial,
                                std::int64_t now_ms,
                                const std::vector<UnmatchedRule>& unmatched = {});

/// The routes the server registers, as "METHOD /path".
const std::vector<std::string>& admin_routes();
/// The OpenAPI document built into the binary (docs/admin-openapi.yaml).
std::string_view admin_openapi_document();

class AdminServer {
 public:
  /// Binds the configured address and starts serving. Logs the address it listens on, and
  /// warns when it is not a loopback address and no token is configured. Error kind
  /// configuration, naming `[admin] listen`, when the address cannot be bound.
  static Result<std::unique_ptr<AdminServer>> start(const AdminConfig& config,
                                                    AdminSources sources);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  /// Stops accepting, lets requests in progress finish (a waiting snapshot command gives up),
  /// and joins the threads. Idempotent.
  void stop();
  /// The port bound (the configured one, or the kernel's choice for port 0).
  int port() const noexcept { return port_; }

 private:
  AdminServer() = default;
  void install_routes();

  AdminConfig config_;
  AdminSources sources_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> listen_returned_{false};
  int port_ = 0;
};

}  // namespace cppcdc::server
