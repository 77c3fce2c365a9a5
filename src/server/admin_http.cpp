#include "server/admin_http.hpp"

#include <httplib.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <thread>

#include "server/metrics.hpp"

namespace cppcdc::server {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr const char* kJson = "application/json";

std::string status_json(bool ok, std::string_view status, std::string_view reason) {
  boost::json::object o;
  o["ok"] = ok;
  o["status"] = std::string(status);
  if (!reason.empty()) o["reason"] = std::string(reason);
  return boost::json::serialize(o);
}

std::optional<BlockingSnapshotStatus> initial_status(const AdminSources& sources) {
  if (!sources.control.initial) return std::nullopt;
  return sources.control.initial->status();
}

}  // namespace

ProbeAnswer liveness(const RuntimeAdminSnapshot& snapshot, const std::string& failure) {
  if (snapshot.breaker_state == BreakerState::kError) {
    std::string reason =
        "the circuit breaker escalated after repeated recoverable errors; restart the process";
    // The error that ended the run names the side that kept failing.
    if (snapshot.state == RuntimeState::kFailed && !failure.empty()) {
      reason += "; the last error: " + failure;
    }
    return {503, status_json(false, "error", reason)};
  }
  // The run ended with another fatal error (a lost source position, a sink's or the
  // checkpoint's terminal error): the process only lingers for a last scrape, then exits.
  if (!failure.empty()) {
    return {503, status_json(false, "error",
                             "the run ended with an error and the process exits: " + failure)};
  }
  return {200, status_json(true, "alive", "")};
}

ProbeAnswer readiness(const RuntimeAdminSnapshot& snapshot,
                      const std::optional<BlockingSnapshotStatus>& initial,
                      const std::string& failure) {
  if (snapshot.health.is_alertable()) {
    return {503, status_json(false, snapshot.health.change_key(), snapshot.health.reason)};
  }
  if (snapshot.state != RuntimeState::kRunning) {
    // Before the runtime exists the server says which step of the start it is at; while the
    // runtime's start() runs, what it waits for (connecting to the source, and its retries).
    const bool starting = snapshot.health.reason.rfind("starting: ", 0) == 0;
    std::string reason =
        starting ? snapshot.health.reason
        : snapshot.state == RuntimeState::kCreated && !snapshot.health.reason.empty()
            ? "starting: " + snapshot.health.reason
            : "the runtime is " + std::string(to_string(snapshot.state));
    if (snapshot.state == RuntimeState::kFailed && !failure.empty()) reason += ": " + failure;
    return {503, status_json(false, "not_running", reason)};
  }
  // Not streaming while the source reconnects or the breaker holds attempts back, even before
  // the health verdict's stall threshold: the verdict stays as it is, only readiness answers.
  const auto last_error = [&snapshot] {
    return snapshot.last_recoverable_error.empty()
               ? std::string()
               : "; last error: " + snapshot.last_recoverable_error;
  };
  if (!snapshot.source_connected) {
    return {503,
            status_json(false, "source_reconnecting",
                        "the source connection is down and the runtime is reconnecting (" +
                            std::to_string(snapshot.consecutive_errors) +
                            " failed attempts in a row, breaker " +
                            std::string(to_string(snapshot.breaker_state)) + ")" + last_error())};
  }
  if (snapshot.breaker_state == BreakerState::kOpen ||
      snapshot.breaker_state == BreakerState::kHalfOpen) {
    const std::string side = snapshot.retrying.empty() ? "recoverable" : snapshot.retrying;
    return {503,
            status_json(false, "breaker_" + std::string(to_string(snapshot.breaker_state)),
                        "the circuit breaker is " + std::string(to_string(snapshot.breaker_state)) +
                            " after " + std::to_string(snapshot.consecutive_errors) + " " + side +
                            " errors in a row; attempts wait for its cooldown" + last_error())};
  }
  if (initial && (initial->phase == BlockingSnapshotStatus::Phase::kPending ||
                  initial->phase == BlockingSnapshotStatus::Phase::kRunning)) {
    return {503, status_json(false, "initial_snapshot",
                             "the initial snapshot is " +
                                 std::string(BlockingSnapshotStatus::phase_name(initial->phase)) +
                                 "; streaming follows it")};
  }
  return {200, status_json(true, snapshot.health.change_key(), snapshot.health.reason)};
}

std::string admin_snapshot_json(const RuntimeAdminSnapshot& s,
                                const std::optional<BlockingSnapshotStatus>& initial,
                                std::int64_t now_ms, const std::vector<UnmatchedRule>& unmatched) {
  boost::json::object o;
  o["state"] = std::string(to_string(s.state));
  o["events_delivered"] = s.events_delivered;
  o["events_committed"] = s.events_committed;
  o["events_committed_lifetime"] = s.events_committed_lifetime;
  o["in_flight"] = s.in_flight;
  if (s.checkpoint_offset) {
    o["checkpoint_offset"] = *s.checkpoint_offset;
  } else {
    o["checkpoint_offset"] = nullptr;
  }
  o["last_poll_at_ms"] = s.last_poll_at_ms;
  o["last_delivery_at_ms"] = s.last_delivery_at_ms;
  o["last_commit_at_ms"] = s.last_commit_at_ms;
  o["now_ms"] = now_ms;
  boost::json::object health;
  health["verdict"] = std::string(to_string(s.health.kind));
  if (s.health.cause) {
    health["cause"] = std::string(to_string(*s.health.cause));
  } else {
    health["cause"] = nullptr;
  }
  health["reason"] = s.health.reason;
  health["change_key"] = s.health.change_key();
  health["alertable"] = s.health.is_alertable();
  o["health"] = std::move(health);
  o["breaker_state"] = std::string(to_string(s.breaker_state));
  o["recoverable_errors"] = s.recoverable_errors;
  o["consecutive_errors"] = s.consecutive_errors;
  if (s.retrying.empty()) {
    o["retrying"] = nullptr;
  } else {
    o["retrying"] = s.retrying;
  }
  if (s.last_recoverable_error.empty()) {
    o["last_recoverable_error"] = nullptr;
  } else {
    o["last_recoverable_error"] = s.last_recoverable_error;
  }
  o["source_connected"] = s.source_connected;
  o["idempotency_evictions"] = s.idempotency_evictions;
  o["idempotency_unidentifiable_passthrough"] = s.idempotency_unidentifiable_passthrough;
  o["idempotency_suppressed"] = s.idempotency_suppressed;
  boost::json::array rules;
  for (const auto& rule : unmatched) {
    boost::json::object r;
    r["transform"] = rule.transform;
    r["kind"] = rule.kind;
    r["rule"] = rule.rule;
    r["consequence"] = rule.consequence;
    rules.push_back(std::move(r));
  }
  o["unmatched_rules"] = std::move(rules);
  if (s.incremental_snapshot) {
    o["incremental_snapshot"] = boost::json::parse(s.incremental_snapshot->to_json());
  } else {
    o["incremental_snapshot"] = nullptr;
  }
  if (initial) {
    o["initial_snapshot"] = boost::json::parse(initial->to_json());
  } else {
    o["initial_snapshot"] = nullptr;
  }
  return boost::json::serialize(o);
}

const std::vector<std::string>& admin_routes() {
  static const std::vector<std::string> kRoutes = {
      "GET /livez",
      "GET /readyz",
      "GET /metrics",
      "GET /admin/snapshot",
      "GET /admin/snapshot/status",
      "POST /admin/snapshot/request",
      "POST /admin/snapshot/pause",
      "POST /admin/snapshot/resume",
      "POST /admin/snapshot/stop",
      "GET /admin/openapi.yaml",
  };
  return kRoutes;
}

Result<std::unique_ptr<AdminServer>> AdminServer::start(const AdminConfig& config,
                                                        AdminSources sources) {
  std::unique_ptr<AdminServer> server(new AdminServer());
  server->config_ = config;
  server->sources_ = std::move(sources);
  server->http_ = std::make_unique<httplib::Server>();
  server->http_->new_task_queue = [] { return new httplib::ThreadPool(4); };
  server->http_->set_read_timeout(5, 0);
  server->http_->set_write_timeout(5, 0);
  server->http_->set_keep_alive_max_count(100);
  // cpp-httplib's worker waits out an idle keep-alive connection (5 s by default) before it
  // looks at the stop flag, and Prometheus keeps its connection open between scrapes: stop()
  // then took that long, delaying the exit after SIGTERM or the error linger by up to 5 s.
  server->http_->set_keep_alive_timeout(1);
  // cpp-httplib's default options add SO_REUSEPORT, with which a second process could bind the
  // same address and take every other request; SO_REUSEADDR alone only allows a restart while
  // the previous process' connections are in TIME_WAIT.
  server->http_->set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server->install_routes();
  // The worker threads are made by listen_after_bind() on thread_, whose mask they inherit; the
  // socket is bound here, so a port in use is reported before the pipeline starts.
  int port = config.port;
  if (port == 0) {
    port = server->http_->bind_to_any_port(config.host);
  } else if (!server->http_->bind_to_port(config.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return fail(Error::configuration("[admin] listen: cannot listen on " + config.listen +
                                     " (address in use, or not an address of this host?)"));
  }
  server->port_ = port;
  server->thread_ = std::thread([raw = server.get()] {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    raw->http_->listen_after_bind();
    raw->listen_returned_.store(true);
  });
  const std::string where =
      (config.host.find(':') != std::string::npos ? "[" + config.host + "]" : config.host) + ":" +
      std::to_string(port);
  spdlog::info("admin server listening on http://{} (/livez /readyz /metrics /admin/...){}", where,
               config.token.empty() ? "" : "; a bearer token is required except for the probes");
  if (config.token.empty() && !is_loopback_host(config.host)) {
    spdlog::warn(
        "[admin] listen = \"{}\" is not a loopback address and no [admin] token is "
        "set: anyone who can reach it can read the metrics and steer snapshots; set "
        "token or token_env, or listen on 127.0.0.1",
        config.listen);
  }
  return server;
}

AdminServer::~AdminServer() { stop(); }

void AdminServer::stop() {
  stopping_.store(true);
  if (!thread_.joinable()) return;
  // httplib's stop() only acts on a server that is in its accept loop: one stopped right after
  // start() waits until the loop began (or ended on an error).
  while (!http_->is_running() && !listen_returned_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  http_->stop();
  thread_.join();
}

void AdminServer::install_routes() {
  httplib::Server& http = *http_;
  // Answers cpp-httplib makes before any route runs (a request it could not read, a route that
  // does not exist) come without a body: give them the JSON error the routes give.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req,
                                                                 httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      // The path is echoed only when it is plain printable ASCII (it is the client's text).
      std::string path = req.path.size() <= 200 ? req.path : std::string();
      if (!std::all_of(path.begin(), path.end(),
                       [](char c) { return c > ' ' && c < 127 && c != '"' && c != '\\'; })) {
        path = "(this path)";
      }
      res.set_content(status_json(false, "not_found",
                                  "no such route: " + req.method + " " + path +
                                      "; GET /admin/openapi.yaml lists the routes"),
                      kJson);
    } else if (res.status == 400) {
      res.set_content(status_json(false, "bad_request",
                                  "the request could not be read; a POST needs a Content-Length "
                                  "header (0 for no body)"),
                      kJson);
    } else {
      res.set_content(
          status_json(false, "error", "HTTP " + std::to_string(res.status) + " from the server"),
          kJson);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  // A token guards everything but the probes; compared in constant time.
  const auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (config_.token.empty()) return true;
    const std::string expected = "Bearer " + config_.token;
    const std::string given = req.get_header_value("Authorization");
    if (given.size() == expected.size() &&
        CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0) {
      return true;
    }
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"cppcdc\"");
    res.set_content(status_json(false, "unauthorized",
                                "send the [admin] token as \"Authorization: Bearer <token>\""),
                    kJson);
    return false;
  };

  http.Get("/livez", [this](const httplib::Request&, httplib::Response& res) {
    const ProbeAnswer answer =
        liveness(sources_.snapshot(), sources_.failure ? sources_.failure() : std::string());
    res.status = answer.status;
    res.set_content(answer.body, kJson);
  });
  http.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const ProbeAnswer answer = readiness(sources_.snapshot(), initial_status(sources_),
                                         sources_.failure ? sources_.failure() : std::string());
    res.status = answer.status;
    res.set_content(answer.body, kJson);
  });
  http.Get("/metrics", [this, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    MetricsInputs in;
    in.snapshot = sources_.snapshot();
    if (sources_.lag) in.lag = sources_.lag();
    in.initial_snapshot = initial_status(sources_);
    // Unmatched rules mean something only after traffic (every rule is unmatched at first).
    if (sources_.unmatched_rules && in.snapshot.events_delivered > 0) {
      in.unmatched_rules = sources_.unmatched_rules();
    }
    in.now_ms = wall_ms();
    static const PipelineMetrics kEmpty;
    const PipelineMetrics& metrics = sources_.metrics ? *sources_.metrics : kEmpty;
    res.set_content(metrics.render(in), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get(
      "/admin/snapshot", [this, authorized](const httplib::Request& req, httplib::Response& res) {
        if (!authorized(req, res)) return;
        const RuntimeAdminSnapshot snapshot = sources_.snapshot();
        std::vector<UnmatchedRule> unmatched;
        if (sources_.unmatched_rules && snapshot.events_delivered > 0) {
          unmatched = sources_.unmatched_rules();
        }
        res.set_content(
            admin_snapshot_json(snapshot, initial_status(sources_), wall_ms(), unmatched), kJson);
      });
  http.Get("/admin/openapi.yaml",
           [authorized](const httplib::Request& req, httplib::Response& res) {
             if (!authorized(req, res)) return;
             const std::string_view doc = admin_openapi_document();
             res.set_content(doc.data(), doc.size(), "application/yaml");
           });

  // The snapshot commands go through the control socket's handler: the same checks, waits
  // and answers. {"ok":false} becomes 409 (refused in this state), a body that is not a JSON
  // object 400.
  const auto command = [this](std::string_view verb, const std::string& body,
                              httplib::Response& res) {
    boost::json::object request;
    if (!body.empty()) {
      boost::system::error_code ec;
      boost::json::value parsed = boost::json::parse(body, ec);
      if (ec || !parsed.is_object()) {
        res.status = 400;
        res.set_content(status_json(false, "bad_request", "the body must be a JSON object"), kJson);
        return;
      }
      request = std::move(parsed.as_object());
    }
    request["command"] = std::string(verb);
    const std::string answer =
        handle_control_request(boost::json::serialize(request), sources_.control, stopping_);
    boost::system::error_code ec;
    const boost::json::value parsed = boost::json::parse(answer, ec);
    const auto* ok = !ec && parsed.is_object() ? parsed.as_object().if_contains("ok") : nullptr;
    res.status = ok != nullptr && ok->is_bool() && ok->as_bool() ? 200 : 409;
    res.set_content(answer, kJson);
  };
  http.Get("/admin/snapshot/status",
           [authorized, command](const httplib::Request& req, httplib::Response& res) {
             if (!authorized(req, res)) return;
             command("status", "", res);
           });
  for (const char* verb : {"request", "pause", "resume", "stop"}) {
    http.Post(std::string("/admin/snapshot/") + verb,
              [authorized, command, verb](const httplib::Request& req, httplib::Response& res) {
                if (!authorized(req, res)) return;
                command(verb, req.body, res);
              });
  }
}

}  // namespace cppcdc::server
