#include "source/postgres/pg_conn.hpp"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/unless_stopped.hpp"
#include "cppcdc/postgres.hpp"

namespace cppcdc::pg {

std::string session_options() {
  // Each -c sets one GUC for the session; spaces inside a value are escaped with a backslash.
  // client_encoding matters as much as the others: pgoutput converts every value (and every
  // name) to the walsender's client encoding, and the envelope is UTF-8 JSON. connect() also
  // passes it as a libpq keyword, so a client_encoding in the DSN cannot override it.
  return "-c DateStyle=ISO,\\ MDY -c TimeZone=UTC -c IntervalStyle=postgres "
         "-c extra_float_digits=1 -c bytea_output=hex -c lc_monetary=C "
         "-c client_encoding=UTF8";
}

namespace detail {
namespace {

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  // libpq messages may span lines; keep them on one.
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\n') {
      // libpq puts a hint on its own line ("...refused\n\tIs the server running..."): keep
      // the two apart on one line.
      out += ';';
      c = ' ';
    } else if (c == '\t') {
      c = ' ';
    }
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// libpq's messages for a TLS set-up that can never succeed as configured. Not "SSL SYSCALL
// error" or "SSL connection has been closed unexpectedly": those are a dropped connection.
bool is_tls_setup_failure(const std::string& msg) {
  for (const char* needle : {
           "certificate verify failed",            // the server's chain is not trusted
           "does not match host name",             // verify-full: it names another host
           "certificate file",                     // sslrootcert / sslcert missing or unreadable
           "private key file",                     // sslkey missing, unreadable, too open, wrong
           "requires a valid client certificate",  // hostssl ... cert, and no sslcert
           "alert unknown ca",                     // the server does not trust our certificate
           "alert bad certificate",                //   or refuses it for another reason
           "alert certificate",                    //   (expired, revoked, required, ...)
           "server does not support SSL",          // sslmode require or stricter, ssl = off
       }) {
    if (contains(msg, needle)) return true;
  }
  return false;
}

}  // namespace

Result<ConnPtr> connect(const std::string& dsn, bool replication) {
  // expand_dbname lets `dbname` carry a whole connection string or URI; later keys win over
  // it, and "options" is appended to whatever options the DSN carries.
  std::string options = session_options();
  std::vector<const char*> keys = {"dbname", "options", "client_encoding"};
  std::vector<const char*> vals = {dsn.c_str(), options.c_str(), "UTF8"};
  {
    PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), nullptr);
    if (parsed == nullptr) {
      return fail(Error::configuration(
                      "not a valid libpq connection string or URI (check quoting and key names)")
                      .for_setting(SettingOwner::kSource, "dsn"));
    }
    // Defaults, each only where the DSN does not set it. A connection attempt that never
    // completes (an address that drops packets, a server that accepted the TCP connection
    // but never answers) gives up after connect_timeout seconds, and TCP keepalives notice a
    // dead peer of an idle connection (the SQL connection between catalog look-ups) within
    // about a minute instead of the system's two hours.
    static constexpr std::pair<const char*, const char*> kDefaults[] = {
        {"application_name", "cppcdc"},
        {"connect_timeout", "10"},
        {"keepalives_idle", "30"},
        {"keepalives_interval", "10"},
        {"keepalives_count", "3"}};
    for (const auto& [key, value] : kDefaults) {
      bool set = false;
      for (auto* o = parsed; o->keyword != nullptr; ++o) {
        if (std::strcmp(o->keyword, key) == 0) set = o->val != nullptr && *o->val;
      }
      if (!set) {
        keys.push_back(key);
        vals.push_back(value);
      }
    }
    for (auto* o = parsed; o->keyword != nullptr; ++o) {
      if (std::strcmp(o->keyword, "options") == 0 && o->val != nullptr && *o->val) {
        options = std::string(o->val) + " " + options;
      }
    }
    PQconninfoFree(parsed);
  }
  vals[1] = options.c_str();
  if (replication) {
    keys.push_back("replication");
    vals.push_back("database");
  }
  // The attempt runs on a thread of its own (core/unless_stopped.hpp), so that a stop request
  // ends the wait for a server that does not answer at once instead of after connect_timeout;
  // it gets copies of the strings, since an abandoned attempt outlives this call.
  std::vector<std::string> key_text(keys.begin(), keys.end());
  std::vector<std::string> value_text(vals.begin(), vals.end());
  auto attempt = ::cppcdc::detail::unless_stopped(
      [key_text = std::move(key_text), value_text = std::move(value_text)]() {
        std::vector<const char*> k;
        std::vector<const char*> v;
        for (const auto& t : key_text) k.push_back(t.c_str());
        for (const auto& t : value_text) v.push_back(t.c_str());
        k.push_back(nullptr);
        v.push_back(nullptr);
        return ConnPtr(PQconnectdbParams(k.data(), v.data(), /*expand_dbname=*/1));
      });
  if (!attempt) {
    return fail(Error::source(
        ErrorKind::kTransient,
        std::string("stopping: ") +
            (replication ? "opening the replication connection" : "opening the SQL connection") +
            " to PostgreSQL was cut short by the stop request"));
  }
  ConnPtr conn = std::move(*attempt);
  if (!conn) return fail(Error::source(ErrorKind::kTransient, "libpq could not allocate a connection"));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return fail(error_from_conn(conn.get(), replication ? "opening the replication connection"
                                                        : "opening the SQL connection"));
  }
  return conn;
}

Error error_from_conn(PGconn* conn, const std::string& what) {
  std::string msg = trim(conn ? PQerrorMessage(conn) : "no connection");
  const char* host = conn ? PQhost(conn) : nullptr;
  const char* port = conn ? PQport(conn) : nullptr;
  const char* db = conn ? PQdb(conn) : nullptr;
  const char* user = conn ? PQuser(conn) : nullptr;
  std::string where = std::string("PostgreSQL at ") + (host ? host : "?") + ":" +
                      (port ? port : "?") + " (database " + (db ? db : "?") + ", user " +
                      (user ? user : "?") + ")";
  auto [kind, remedy] = classify_connection_failure(msg);
  Error error =
      Error::source(kind, what + " to " + where + " failed: " + msg + " (" + remedy + ")");
  // What an operator can fix in the connection string is said about it.
  if (kind == ErrorKind::kTerminal && !contains(remedy, "REPLICATION")) {
    return std::move(error).for_setting(SettingOwner::kSource, "dsn");
  }
  return error;
}

std::pair<ErrorKind, std::string> classify_connection_failure(const std::string& msg) {
  ErrorKind kind = ErrorKind::kTransient;
  std::string remedy = "check that the server is running and reachable from this host";
  if (contains(msg, "no password supplied")) {
    // libpq looks for a password in the connection string, then PGPASSWORD, then the password
    // file: none had one for this user.
    kind = ErrorKind::kTerminal;
    remedy =
        "the server asks for a password and cppcdc has none: set PGPASSWORD in cppcdc's "
        "environment (the systemd unit reads its environment file), put a line for this "
        "host, database and user in a password file (~/.pgpass of the user cppcdc runs as, "
        "mode 0600, or the file PGPASSFILE names), or write password=... in the connection "
        "string";
  } else if (contains(msg, "password authentication failed") ||
             contains(msg, "authentication failed") || contains(msg, "pg_hba.conf")) {
    kind = ErrorKind::kTerminal;
    remedy =
        "fix the user or the password (in the connection string, PGPASSWORD or the password "
        "file ~/.pgpass), or the server's pg_hba.conf";
  } else if (contains(msg, "does not exist") && contains(msg, "database")) {
    kind = ErrorKind::kTerminal;
    remedy = "create the database or fix dbname in the connection string";
  } else if (contains(msg, "role") && contains(msg, "does not exist")) {
    kind = ErrorKind::kTerminal;
    remedy = "create the role or fix user in the connection string";
  } else if (contains(msg, "must have replication") || contains(msg, "replication role") ||
             contains(msg, "permission denied")) {
    kind = ErrorKind::kTerminal;
    remedy = "grant the REPLICATION attribute: ALTER ROLE <user> REPLICATION";
  } else if (is_tls_setup_failure(msg)) {
    // An untrusted or mismatched certificate, a missing or unreadable certificate or key
    // file, a server without TLS where the DSN requires it: retrying cannot fix any of them.
    kind = ErrorKind::kTerminal;
    remedy =
        "fix the TLS settings (sslmode, sslrootcert, sslcert, sslkey) in the connection "
        "string or "
        "the server's certificates; a certificate problem does not go away by retrying";
  }
  return {kind, std::move(remedy)};
}

Error error_from_result(const PGresult* res, PGconn* conn, const std::string& what) {
  std::string msg = trim(res ? PQresultErrorMessage(res) : "");
  if (msg.empty() && conn) msg = trim(PQerrorMessage(conn));
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  std::string sqlstate = state ? state : "";
  ErrorKind kind = ErrorKind::kTerminal;
  if (sqlstate.empty() || sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P0", 0) == 0 ||
      sqlstate.rfind("53", 0) == 0 || sqlstate == "40001" || sqlstate == "40P01" ||
      sqlstate == "55006" || (sqlstate == "55000" && contains(msg, "is active for PID"))) {
    kind = ErrorKind::kTransient;
  }
  if (conn && PQstatus(conn) == CONNECTION_BAD) kind = ErrorKind::kTransient;
  std::string text = what + " failed: " + msg;
  if (!sqlstate.empty()) text += " (SQLSTATE " + sqlstate + ")";
  if (contains(msg, "replication role")) {
    text += "; grant the REPLICATION attribute: ALTER ROLE <user> REPLICATION";
  }
  // Decoding from a slot that PostgreSQL invalidated (it removed WAL the slot still needed,
  // max_slot_wal_keep_size): the position is gone for good.
  if (sqlstate == "55000" && contains(msg, "can no longer get changes from replication slot")) {
    return Error::source(ErrorKind::kTerminal,
                         text + "; the slot was invalidated and the changes it retained are "
                                "lost: drop it, let cppcdc create a new one and reload the "
                                "tables from a snapshot")
        .with_condition(ErrorCondition::kSourcePositionLost);
  }
  return Error::source(kind, text);
}

Result<PgResultPtr> exec(PGconn* conn, const std::string& sql, const std::string& what,
                         const std::vector<std::optional<std::string>>& params) {
  PGresult* raw = nullptr;
  if (params.empty()) {
    raw = PQexec(conn, sql.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    raw = PQexecParams(conn, sql.c_str(), static_cast<int>(params.size()), nullptr,
                       values.data(), nullptr, nullptr, 0);
  }
  PgResultPtr res(raw);
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return fail(error_from_result(res.get(), conn, what));
  }
  return res;
}

Status send_query(PGconn* conn, const std::string& sql, const std::string& what,
                  const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  if (PQsendQueryParams(conn, sql.c_str(), static_cast<int>(params.size()), nullptr,
                        values.data(), nullptr, nullptr, 0) != 1) {
    return fail(error_from_conn(conn, what));
  }
  return ok();
}

Result<PgResultPtr> receive_result(PGconn* conn, const std::string& what) {
  PgResultPtr res(PQgetResult(conn));
  discard_results(conn);  // up to the statement's end, so the next one can be sent
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return fail(error_from_result(res.get(), conn, what));
  }
  return res;
}

void discard_results(PGconn* conn) {
  while (PGresult* r = PQgetResult(conn)) PQclear(r);
}

std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::optional<std::string> get(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col)) return std::nullopt;
  return std::string(PQgetvalue(res, row, col), static_cast<std::size_t>(PQgetlength(res, row, col)));
}

Result<Lsn> get_lsn(const PGresult* res, int row, int col, std::string_view what) {
  auto text = get(res, row, col);
  if (!text) {
    return fail(Error::invalid_data("the server returned NULL for " + std::string(what) +
                                    ", where a WAL position (LSN) was expected"));
  }
  auto lsn = Lsn::parse(*text);
  if (!lsn) return fail(lsn.error().context(std::string(what)));
  return *lsn;
}

}  // namespace detail
}  // namespace cppcdc::pg
