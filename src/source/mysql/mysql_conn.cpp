#include "source/mysql/mysql_conn.hpp"

#include <errmsg.h>
#include <mysqld_error.h>

#include <string>
#include <utility>

#include "core/unless_stopped.hpp"

namespace cppcdc::mysql::detail {

bool is_transient_errno(unsigned int code) noexcept {
  switch (code) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case CR_UNKNOWN_HOST:
    case ER_CON_COUNT_ERROR:
    case ER_SERVER_SHUTDOWN:
    case ER_NORMAL_SHUTDOWN:
    case ER_SHUTDOWN_COMPLETE:
    case ER_CONNECTION_KILLED:
    case ER_QUERY_INTERRUPTED:
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_LOCK_DEADLOCK:
    case ER_NET_READ_ERROR:
    case ER_NET_READ_INTERRUPTED:
    case ER_NET_ERROR_ON_WRITE:
    case ER_NET_WRITE_INTERRUPTED:
    case ER_TOO_MANY_USER_CONNECTIONS:
      return true;
    default:
      return false;
  }
}

Error error_from(MYSQL* conn, const std::string& what) {
  const unsigned int code = conn ? mysql_errno(conn) : 0;
  std::string text = conn ? mysql_error(conn) : "no connection";
  if (text.empty()) text = "unknown error";
  const ErrorKind kind =
      code == 0 || is_transient_errno(code) ? ErrorKind::kTransient : ErrorKind::kTerminal;
  return Error::source(
      kind, what + ": " + text + (code ? " (error " + std::to_string(code) + ")" : std::string()));
}

Result<MysqlPtr> connect(const MysqlSourceConfig& config, std::uint32_t read_timeout_ms) {
  MysqlPtr conn(mysql_init(nullptr));
  if (!conn) return fail(Error::internal("mysql_init failed (out of memory)"));
  MYSQL* m = conn.get();
  const unsigned int connect_s = std::max(1u, (config.connect_timeout_ms + 999) / 1000);
  mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
  if (read_timeout_ms > 0) {
    const unsigned int read_s = std::max(1u, (read_timeout_ms + 999) / 1000);
    mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &read_s);
    mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &read_s);
  }
  mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(m, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  const my_bool off = 0;
  mysql_optionsv(m, MYSQL_REPORT_DATA_TRUNCATION, &off);
  if (config.ssl_mode != SslMode::kDisabled) {
    const auto opt = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
    mysql_ssl_set(m, opt(config.ssl_key), opt(config.ssl_cert), opt(config.ssl_ca), nullptr,
                  nullptr);
    const my_bool enforce = config.ssl_mode != SslMode::kPreferred;
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &enforce);
    const my_bool verify =
        config.ssl_mode == SslMode::kVerifyCa || config.ssl_mode == SslMode::kVerifyIdentity;
    mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
  }
  // The attempt runs on a thread of its own (core/unless_stopped.hpp), so that a stop request
  // ends the wait for a server that does not answer at once instead of after
  // connect_timeout_ms. The handle goes with it: an abandoned attempt closes it when it ends.
  auto attempt = ::cppcdc::detail::unless_stopped([conn = std::move(conn), host = config.host,
                                                   user = config.user, password = config.password,
                                                   port = config.port]() mutable {
    const bool connected =
        mysql_real_connect(conn.get(), host.c_str(), user.c_str(), password.c_str(), nullptr, port,
                           nullptr, CLIENT_MULTI_RESULTS) != nullptr;
    return std::make_pair(std::move(conn), connected);
  });
  if (!attempt) {
    return fail(Error::source(ErrorKind::kTransient, "stopping: connecting to " + config.user +
                                                         "@" + config.host + ":" +
                                                         std::to_string(config.port) +
                                                         " was cut short by the stop request"));
  }
  conn = std::move(attempt->first);
  m = conn.get();
  if (!attempt->second) {
    Error e = error_from(
        m, "connecting to " + config.user + "@" + config.host + ":" + std::to_string(config.port));
    const unsigned int code = mysql_errno(m);
    if (code == CR_SSL_CONNECTION_ERROR) {
      // A TLS set-up that fails (untrusted certificate, missing file) fails again.
      e = Error::source(ErrorKind::kTerminal,
                        e.message() + "; check ssl_mode, ssl_ca, ssl_cert and ssl_key");
    } else if (code == ER_ACCESS_DENIED_ERROR || code == ER_DBACCESS_DENIED_ERROR) {
      // The same credentials fail again: say where they come from instead of retrying.
      e = Error::source(
          ErrorKind::kTerminal,
          e.message() + "; the server refused user " + config.user +
              (config.password.empty() ? " without a password (neither [source] password nor "
                                         "the variable password_env names is set)"
                                       : " with the password given ([source] password, or the "
                                         "variable password_env names)") +
              ": check both, and that the user may connect from this host (its "
              "'user'@'host' account on the server)");
    }
    return fail(std::move(e));
  }
  return conn;
}

Status exec(MYSQL* conn, const std::string& sql, const std::string& what) {
  if (mysql_real_query(conn, sql.data(), sql.size()) != 0) return fail(error_from(conn, what));
  // Drain any result (a statement that returns rows though we did not ask).
  do {
    if (MYSQL_RES* res = mysql_store_result(conn)) mysql_free_result(res);
  } while (mysql_next_result(conn) == 0);
  if (mysql_errno(conn) != 0) return fail(error_from(conn, what));
  return ok();
}

Result<Rows> query(MYSQL* conn, const std::string& sql, const std::string& what) {
  if (mysql_real_query(conn, sql.data(), sql.size()) != 0) return fail(error_from(conn, what));
  MYSQL_RES* res = mysql_store_result(conn);
  if (!res) {
    if (mysql_errno(conn) != 0) return fail(error_from(conn, what));
    return Rows{};
  }
  Rows out;
  const unsigned int n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  for (unsigned int i = 0; i < n; ++i) out.columns.emplace_back(fields[i].name);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* lengths = mysql_fetch_lengths(res);
    auto& r = out.rows.emplace_back();
    r.reserve(n);
    for (unsigned int i = 0; i < n; ++i) {
      if (row[i] == nullptr) {
        r.emplace_back(std::nullopt);
      } else {
        r.emplace_back(std::string(row[i], lengths[i]));
      }
    }
  }
  mysql_free_result(res);
  while (mysql_next_result(conn) == 0) {
    if (MYSQL_RES* more = mysql_store_result(conn)) mysql_free_result(more);
  }
  return out;
}

std::string quote_ident(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out += '`';
    out += c;
  }
  return out + "`";
}

std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    if (c == '\0') {
      out += "\\0";
      continue;
    }
    out += c;
  }
  return out + "'";
}

}  // namespace cppcdc::mysql::detail
