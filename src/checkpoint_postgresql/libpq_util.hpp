#pragma once
// The few libpq calls the "postgresql" checkpoint backend needs: connecting with its session
// defaults, running a statement with text or binary parameters, and turning libpq's failures
// into classified checkpoint errors. (The PostgreSQL source has its own; a plugin sees no
// sibling's files.)

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/error.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pgckpt {

struct ConnDeleter {
  void operator()(PGconn* conn) const noexcept { PQfinish(conn); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;

struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

/// Checks that `dsn` parses as a libpq connection string or URI. The error (configuration,
/// about setting `dsn`) never repeats the string: it may hold a password.
Status check_dsn(const std::string& dsn);

/// "host=h port=p dbname=d user=u" from `dsn`, without its secrets; the keys it does not set
/// are left out ("(libpq defaults)" when none is set).
std::string describe_dsn(const std::string& dsn);

/// Connects. Adds, where the DSN does not set them: fallback_application_name `app_name`,
/// connect_timeout 10 s, TCP keepalives (idle 30 s, interval 10 s, count 3); always
/// client_encoding UTF8. Errors: see connection_error().
Result<ConnPtr> connect(const std::string& dsn, const std::string& app_name);

/// A failed connection: configuration (about `dsn`) for authentication, a missing database
/// or role, no CONNECT privilege and TLS set-ups that cannot work; otherwise transient. The
/// message names the server (host:port, database, user) and says what to do.
Error connection_error(PGconn* conn, const std::string& what);

/// One statement parameter: text, binary (bytea), or SQL NULL.
struct Param {
  std::optional<std::string> value;
  bool binary = false;
  Oid type = 0;  ///< 0: the server infers it
};

/// What exec() got: `ok` for PGRES_COMMAND_OK or PGRES_TUPLES_OK; otherwise `result` holds
/// the failed result for sql_error() (null when libpq gave none: out of memory, or no
/// connection).
struct Outcome {
  ResultPtr result;
  bool ok = false;
};
/// Runs `sql` with `params`; `binary_results` asks for every column in binary form. Without
/// either, `sql` may hold several statements.
Outcome exec(PGconn* conn, const std::string& sql, const std::vector<Param>& params = {},
             bool binary_results = false);

/// SQLSTATE of a failed result ("" when none).
std::string sqlstate(const PGresult* result);

/// Whether the connection is gone (a failure then is the connection's, not the statement's).
bool connection_lost(PGconn* conn);

/// The error for a failed statement: transient when the connection is lost or for SQLSTATE
/// classes 08 (connection), 53 (resources), 57P0x (shutdown), 57014 (statement timeout),
/// 40001 / 40P01 (serialization, deadlock) and 55P03 (lock not available); terminal
/// otherwise. `what` names the step. Permission denied (42501) is left to the caller, who
/// knows which setting it is about: `privilege_remedy` then makes it a configuration error
/// about `privilege_setting`.
Error sql_error(const PGresult* result, PGconn* conn, const std::string& what,
                const std::string& privilege_setting, const std::string& privilege_remedy);

/// "name" with inner quotes doubled.
std::string quote_ident(std::string_view name);
/// 'text' with inner quotes doubled.
std::string quote_literal(std::string_view text);

/// Text value of (row, col), nullopt for NULL.
std::optional<std::string> text_value(const PGresult* result, int row, int col);

}  // namespace cppcdc::pgckpt
