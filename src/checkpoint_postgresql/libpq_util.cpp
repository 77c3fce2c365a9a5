#include "checkpoint_postgresql/libpq_util.hpp"

#include <cstring>
#include <utility>

namespace cppcdc::pgckpt {
namespace {

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// libpq messages may span lines (a hint on a line of its own): one line, "; " between.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "; ";
      continue;
    }
    if (c == '\t') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// libpq's messages for a TLS set-up that cannot succeed as configured (not a dropped
// connection, which retrying may fix).
bool is_tls_setup_failure(const std::string& message) {
  for (const char* needle :
       {"certificate verify failed", "does not match host name", "certificate file",
        "private key file", "requires a valid client certificate", "alert unknown ca",
        "alert bad certificate", "alert certificate", "server does not support SSL"}) {
    if (contains(message, needle)) return true;
  }
  return false;
}

// Whether `key` is set (non-empty) in a parsed connection string.
bool is_set(const PQconninfoOption* options, const char* key) {
  for (const auto* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, key) == 0) return o->val != nullptr && *o->val != '\0';
  }
  return false;
}

}  // namespace

Status check_dsn(const std::string& dsn) {
  char* message = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), &message);
  if (message != nullptr) PQfreemem(message);  // may quote the string, password and all
  if (parsed == nullptr) {
    return fail(Error::checkpoint(ErrorKind::kConfiguration,
                                  "not a valid libpq connection string or postgresql:// URI "
                                  "(check the quoting and the key names)")
                    .for_setting(SettingOwner::kCheckpoint, "dsn"));
  }
  PQconninfoFree(parsed);
  return ok();
}

std::string describe_dsn(const std::string& dsn) {
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), nullptr);
  if (parsed == nullptr) return "(not a valid connection string)";
  std::string out;
  for (const char* key : {"host", "hostaddr", "port", "dbname", "user", "sslmode"}) {
    for (const auto* o = parsed; o->keyword != nullptr; ++o) {
      if (std::strcmp(o->keyword, key) != 0 || o->val == nullptr || *o->val == '\0') continue;
      if (!out.empty()) out += ' ';
      out += key;
      out += '=';
      out += o->val;
    }
  }
  PQconninfoFree(parsed);
  return out.empty() ? "(libpq defaults)" : out;
}

Result<ConnPtr> connect(const std::string& dsn, const std::string& app_name) {
  // expand_dbname: `dbname` carries the whole connection string or URI; later keys win over
  // it, so the defaults below are added only where the DSN leaves them unset.
  std::vector<const char*> keys = {"dbname", "fallback_application_name", "client_encoding"};
  std::vector<const char*> values = {dsn.c_str(), app_name.c_str(), "UTF8"};
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), nullptr);
  if (parsed == nullptr) {
    auto checked = check_dsn(dsn);
    return fail(checked ? Error::internal("libpq refused a connection string it parsed before")
                        : checked.error());
  }
  static constexpr std::pair<const char*, const char*> kDefaults[] = {{"connect_timeout", "10"},
                                                                      {"keepalives_idle", "30"},
                                                                      {"keepalives_interval", "10"},
                                                                      {"keepalives_count", "3"}};
  for (const auto& [key, value] : kDefaults) {
    if (is_set(parsed, key)) continue;
    keys.push_back(key);
    values.push_back(value);
  }
  PQconninfoFree(parsed);
  keys.push_back(nullptr);
  values.push_back(nullptr);
  ConnPtr conn(PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1));
  if (!conn) {
    return fail(Error::checkpoint(ErrorKind::kTransient, "libpq could not allocate a connection"));
  }
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return fail(connection_error(conn.get(), "connecting"));
  }
  return conn;
}

Error connection_error(PGconn* conn, const std::string& what) {
  const std::string message = one_line(conn != nullptr ? PQerrorMessage(conn) : "no connection");
  auto text = [](const char* value) { return std::string(value != nullptr ? value : "?"); };
  const std::string where = "PostgreSQL at " + text(conn ? PQhost(conn) : nullptr) + ":" +
                            text(conn ? PQport(conn) : nullptr) + " (database " +
                            text(conn ? PQdb(conn) : nullptr) + ", user " +
                            text(conn ? PQuser(conn) : nullptr) + ")";
  ErrorKind kind = ErrorKind::kConfiguration;
  std::string remedy;
  if (contains(message, "no password supplied")) {
    remedy =
        "the server asks for a password and cppcdc has none: set PGPASSWORD in cppcdc's "
        "environment (the systemd unit reads its environment file), put a line for this "
        "host, database and user in a password file (~/.pgpass of the user cppcdc runs as, "
        "mode 0600, or the file PGPASSFILE names), or write password=... in the connection "
        "string";
  } else if (contains(message, "authentication failed") || contains(message, "pg_hba.conf")) {
    remedy =
        "fix the user or the password (in the connection string, PGPASSWORD or the password "
        "file ~/.pgpass), or the server's pg_hba.conf";
  } else if (contains(message, "database") && contains(message, "does not exist")) {
    remedy = "create the database or fix dbname in the connection string";
  } else if (contains(message, "role") && contains(message, "does not exist")) {
    remedy = "create the role or fix user in the connection string";
  } else if (contains(message, "permission denied for database")) {
    remedy = "GRANT CONNECT ON DATABASE to the user, or connect to another database";
  } else if (is_tls_setup_failure(message)) {
    remedy =
        "fix the TLS settings (sslmode, sslrootcert, sslcert, sslkey) in the connection "
        "string or the server's certificates";
  } else {
    kind = ErrorKind::kTransient;
    remedy = "check that the server is running and reachable from this host";
  }
  Error error =
      Error::checkpoint(kind, what + " to " + where + " failed: " + message + " (" + remedy + ")");
  if (kind == ErrorKind::kConfiguration) {
    return std::move(error).for_setting(SettingOwner::kCheckpoint, "dsn");
  }
  return error;
}

Outcome exec(PGconn* conn, const std::string& sql, const std::vector<Param>& params,
             bool binary_results) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  std::vector<Oid> types;
  for (const Param& p : params) {
    values.push_back(p.value ? p.value->data() : nullptr);
    lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
    formats.push_back(p.binary ? 1 : 0);
    types.push_back(p.type);
  }
  Outcome out;
  if (params.empty() && !binary_results) {
    // The simple protocol: `sql` may hold several statements.
    out.result.reset(PQexec(conn, sql.c_str()));
  } else {
    out.result.reset(PQexecParams(
        conn, sql.c_str(), static_cast<int>(params.size()), params.empty() ? nullptr : types.data(),
        params.empty() ? nullptr : values.data(), params.empty() ? nullptr : lengths.data(),
        params.empty() ? nullptr : formats.data(), binary_results ? 1 : 0));
  }
  if (out.result) {
    const ExecStatusType status = PQresultStatus(out.result.get());
    out.ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }
  return out;
}

std::string sqlstate(const PGresult* result) {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  return state != nullptr ? state : "";
}

bool connection_lost(PGconn* conn) { return conn == nullptr || PQstatus(conn) == CONNECTION_BAD; }

Error sql_error(const PGresult* result, PGconn* conn, const std::string& what,
                const std::string& privilege_setting, const std::string& privilege_remedy) {
  std::string message = one_line(result != nullptr ? PQresultErrorMessage(result) : "");
  if (message.empty() && conn != nullptr) message = one_line(PQerrorMessage(conn));
  const std::string state = sqlstate(result);
  std::string text = what + " failed: " + message;
  if (!state.empty()) text += " (SQLSTATE " + state + ")";
  if (connection_lost(conn)) return connection_error(conn, what);
  if (state == "42501" && !privilege_remedy.empty()) {
    return Error::checkpoint(ErrorKind::kConfiguration, text + "; " + privilege_remedy)
        .for_setting(SettingOwner::kCheckpoint, privilege_setting);
  }
  const bool transient = state.empty() || state.starts_with("08") || state.starts_with("53") ||
                         state.starts_with("57P0") || state == "57014" || state == "40001" ||
                         state == "40P01" || state == "55P03";
  return Error::checkpoint(transient ? ErrorKind::kTransient : ErrorKind::kTerminal, text);
}

std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::optional<std::string> text_value(const PGresult* result, int row, int col) {
  if (PQgetisnull(result, row, col)) return std::nullopt;
  return std::string(PQgetvalue(result, row, col),
                     static_cast<std::size_t>(PQgetlength(result, row, col)));
}

}  // namespace cppcdc::pgckpt
