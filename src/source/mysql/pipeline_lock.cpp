#include "source/mysql/pipeline_lock.hpp"

#include <cctype>
#include <chrono>
#include <thread>

#include "core/stop_request.hpp"
#include "core/text_util.hpp"

namespace cppcdc::mysql::detail {
namespace {

// How long a lock held by a process that just ended may linger (its connection still open on
// the server until the server reads the close).
constexpr std::chrono::seconds kGrace{3};

std::string first_value(const Rows& rows) {
  if (rows.rows.empty() || rows.rows[0].empty() || !rows.rows[0][0]) return {};
  return *rows.rows[0][0];
}

// "connection 42 (user cdc from 127.0.0.1:51234)", as far as `conn`'s user may see it.
std::string describe_holder(MYSQL* conn, const std::string& id) {
  std::string who = "connection " + id;
  bool digits = !id.empty();
  for (char c : id) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits) return who;
  auto rows = query(conn, "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = " + id,
                    "looking up the connection that holds the pipeline's lock");
  if (!rows || rows->rows.empty() || rows->rows[0].size() < 2) {
    return who + " (its user and host are not visible to this user)";
  }
  const std::string user = rows->rows[0][0].value_or("");
  const std::string host = rows->rows[0][1].value_or("");
  if (user.empty() && host.empty()) return who;
  who += " (";
  if (!user.empty()) who += "user " + user;
  if (!host.empty()) who += std::string(user.empty() ? "" : " ") + "from " + host;
  return who + ")";
}

// The error both paths return: what is in use, by whom, and what to do; `tail` says what this
// process did about it.
Error in_use(const MysqlSourceConfig& config, const std::string& lock, const std::string& holder,
             const std::string& holder_id, const std::string& tail) {
  return Error::source(
             ErrorKind::kConfiguration,
             "source_id " + config.source_id + " is in use on " + config.host + ":" +
                 std::to_string(config.port) + ": the server's named lock \"" + lock +
                 "\" is held by " + holder +
                 ", so another cppcdc runs this pipeline; stop it, or give this configuration "
                 "its own source_id (and, with a transactional Kafka sink, its own "
                 "transactional_id). If that process is gone but its connection is not (its host "
                 "went "
                 "away without closing it), end the connection with KILL " +
                 holder_id + ". " + tail)
      .for_setting(SettingOwner::kSource, "source_id");
}

// The error for a server id whose lock another connection holds.
Error server_id_in_use(const MysqlSourceConfig& config, const std::string& lock,
                       const std::string& holder, const std::string& holder_id,
                       const std::string& tail) {
  const std::uint32_t id = effective_server_id(config);
  return Error::source(
             ErrorKind::kConfiguration,
             "replica server id " + std::to_string(id) +
                 (config.server_id == 0 ? " (derived from source_id " + config.source_id + ")"
                                        : std::string()) +
                 " is in use on " + config.host + ":" + std::to_string(config.port) +
                 ": the server's named lock \"" + lock + "\" is held by " + holder +
                 ", so another cppcdc pipeline reads the binlog with that id, and the server "
                 "would end its stream as soon as this one connected; give this configuration "
                 "its own [source] server_id (unique among the server's replicas and binlog "
                 "readers). If that process is gone but its connection is not, end the "
                 "connection with KILL " +
                 holder_id + ". " + tail)
      .for_setting(SettingOwner::kSource, "server_id");
}

Result<std::optional<LockHolder>> lock_holder(MYSQL* conn, const std::string& lock) {
  auto rows = query(conn, "SELECT IS_USED_LOCK(" + quote_literal(lock) + ")",
                    "looking up whether the lock " + lock + " is held");
  if (!rows) return fail(rows.error());
  const std::string holder = first_value(*rows);
  if (holder.empty()) return std::optional<LockHolder>();
  return std::optional<LockHolder>(LockHolder{holder, describe_holder(conn, holder)});
}

}  // namespace

std::string server_id_lock_name(const MysqlSourceConfig& config) {
  return "cppcdc:server_id:" + std::to_string(effective_server_id(config));
}

Result<std::optional<LockHolder>> server_id_lock_holder(MYSQL* conn,
                                                        const MysqlSourceConfig& config) {
  return lock_holder(conn, server_id_lock_name(config));
}

std::string pipeline_lock_name(const MysqlSourceConfig& config) {
  static constexpr std::string_view kPrefix = "cppcdc:";
  bool plain = kPrefix.size() + config.source_id.size() <= 64;
  for (unsigned char c : config.source_id) plain = plain && c < 0x80 && !std::isupper(c);
  if (plain) return std::string(kPrefix) + config.source_id;
  const auto digest = cppcdc::detail::sha256_hex(config.source_id);
  return std::string(kPrefix) + "sha256:" + digest.value_or(std::string(64, '0')).substr(0, 48);
}

Result<std::optional<LockHolder>> pipeline_lock_holder(MYSQL* conn,
                                                       const MysqlSourceConfig& config) {
  return lock_holder(conn, pipeline_lock_name(config));
}

std::vector<TeardownStep> teardown_steps(const MysqlSourceConfig& config) {
  using Outcome = TeardownStep::Outcome;
  const std::string lock = pipeline_lock_name(config);
  const std::string what = "running pipeline (the named lock \"" + lock + "\" on " + config.host +
                           ":" + std::to_string(config.port) + ")";
  auto conn = connect(config, 5000);
  if (!conn) {
    return {{Outcome::kAbsent, what,
             "not checked, the server cannot be reached (" + conn.error().report() +
                 "): make sure no cppcdc runs this pipeline elsewhere"}};
  }
  auto holder = lock_holder(conn->get(), lock);
  if (!holder) {
    return {{Outcome::kAbsent, what, "not checked (" + holder.error().report() + ")"}};
  }
  if (!*holder) return {};
  return {{Outcome::kFailed, what,
           "held by " + (*holder)->described +
               ": a cppcdc runs this pipeline (on another machine, or with another control "
               "socket), and removing its checkpoint would make its next start begin over; "
               "stop that pipeline first (if it is gone but its connection is not, KILL " +
               (*holder)->id + ")"}};
}

Status check_pipeline_not_running(const MysqlSourceConfig& config) {
  const std::string lock = pipeline_lock_name(config);
  // A connection the server refuses (user, password, host, TLS) fails the same way when the
  // source starts, and that is after the sinks opened (a transactional Kafka sink's start
  // fences the running pipeline's producer); so does a server that cannot be reached, which
  // the caller waits for. Both are returned, not passed.
  auto conn = connect(config, 5000);
  if (!conn) {
    return fail(conn.error().context("connecting as the source will, before any sink opens"));
  }
  const std::string id_lock = server_id_lock_name(config);
  using Clock = std::chrono::steady_clock;
  const auto grace_end = Clock::now() + kGrace;
  for (;;) {
    auto rows = query(conn->get(),
                      "SELECT IS_USED_LOCK(" + quote_literal(lock) + "), " + "IS_USED_LOCK(" +
                          quote_literal(id_lock) + ")",
                      "looking up whether the locks " + lock + " and " + id_lock + " are held");
    if (!rows) {
      return fail(rows.error());
    }
    const std::string holder = first_value(*rows);
    const std::string id_holder = rows->rows.empty() || rows->rows[0].size() < 2
                                      ? std::string()
                                      : rows->rows[0][1].value_or("");
    if (holder.empty() && id_holder.empty()) return ok();
    if (Clock::now() >= grace_end || cppcdc::detail::g_process_stop_requested.load()) {
      if (!holder.empty()) {
        return fail(in_use(config, lock, describe_holder(conn->get(), holder), holder,
                           "Nothing was opened or changed"));
      }
      return fail(server_id_in_use(config, id_lock, describe_holder(conn->get(), id_holder),
                                   id_holder, "Nothing was opened or changed"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status PipelineLock::hold(const MysqlSourceConfig& config) {
  const std::string lock = pipeline_lock_name(config);
  conn_.reset();
  auto conn = connect(config);
  if (!conn) return fail(conn.error().context("connecting to hold the pipeline's lock " + lock));
  conn_ = std::move(*conn);
  // The connection stays idle for the source's whole life: the server's default wait_timeout
  // (8 hours) would close it and drop the lock. A session may raise its own (no privilege);
  // 31536000 s is the largest value both servers take.
  if (auto st = exec(conn_.get(), "SET SESSION wait_timeout = 31536000",
                     "keeping the lock's connection open");
      !st) {
    conn_.reset();
    return fail(st.error());
  }
  // GET_LOCK `name` on the lock's connection, waiting up to the grace. Refused (held by
  // another connection, or an error the server turned into NULL): the connection is closed
  // and `refused(holder described, holder's id)` is the error.
  const auto take = [&](const std::string& name, const std::string& what,
                        const auto& refused) -> Status {
    auto got = query(
        conn_.get(),
        "SELECT GET_LOCK(" + quote_literal(name) + ", " + std::to_string(kGrace.count()) + ")",
        "taking " + what + " " + name);
    if (got && first_value(*got) == "1") return ok();
    if (!got) {
      conn_.reset();
      return fail(got.error());
    }
    auto holder = lock_holder(conn_.get(), name);
    const bool known = holder && *holder;
    const Error error = refused(known ? (*holder)->described : std::string("another connection"),
                                known ? (*holder)->id : std::string("<its id>"));
    conn_.reset();
    return fail(error);
  };
  CPPCDC_TRY(take(lock, "the pipeline's lock", [&](const std::string& who, const std::string& id) {
    return in_use(config, lock, who, id,
                  "This source does not start, so that the pipeline does not run twice");
  }));
  // The second lock, on the same connection (both servers let a session hold several).
  const std::string id_lock = server_id_lock_name(config);
  return take(id_lock, "the server id's lock", [&](const std::string& who, const std::string& id) {
    return server_id_in_use(config, id_lock, who, id,
                            "This source does not start, so that it does not end the other "
                            "pipeline's binlog stream");
  });
}

}  // namespace cppcdc::mysql::detail
