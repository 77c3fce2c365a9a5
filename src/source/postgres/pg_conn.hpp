#pragma once
// Thin RAII helpers over libpq for the PostgreSQL source: connecting with the fixed session
// settings, running SQL, and turning libpq failures into classified cppcdc errors.

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/postgres/lsn.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg::detail {

struct ConnDeleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;

struct ResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using PgResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

/// Opens a connection. `replication` adds replication=database. The session settings of
/// session_options() are always applied; application_name (cppcdc), connect_timeout (10 s)
/// and TCP keepalives (idle 30 s, interval 10 s, count 3) are added unless the DSN sets them.
/// Errors are classified: authentication failures, a missing database or role, and TLS
/// set-ups that cannot succeed (untrusted or mismatched certificate, missing or unreadable
/// certificate or key files, TLS required but not offered) are terminal; everything else
/// (refused, timeout, server starting up or shutting down) is transient. The message never
/// contains the password.
Result<ConnPtr> connect(const std::string& dsn, bool replication);

/// Runs a statement (optionally with text parameters) and expects PGRES_TUPLES_OK or
/// PGRES_COMMAND_OK. `what` names the step for the error message.
Result<PgResultPtr> exec(PGconn* conn, const std::string& sql, const std::string& what,
                         const std::vector<std::optional<std::string>>& params = {});

/// Sends a statement without waiting for its result (PQsendQueryParams), so the server works
/// on it while the caller does something else; receive_result() takes the result. One
/// statement at a time per connection. `what` names the step for the error message.
Status send_query(PGconn* conn, const std::string& sql, const std::string& what,
                  const std::vector<std::optional<std::string>>& params = {});

/// Waits for the result of the statement sent with send_query() and drains the connection
/// for the next one; expects PGRES_TUPLES_OK or PGRES_COMMAND_OK, as exec() does.
Result<PgResultPtr> receive_result(PGconn* conn, const std::string& what);

/// Discards the results of a statement sent with send_query() that is no longer wanted,
/// leaving the connection ready for the next statement.
void discard_results(PGconn* conn);

/// Classifies a failed result by SQLSTATE: class 08 (connection), 57P0x (shutdown), 53
/// (resources), 40001/40P01 and 55006 (object in use, e.g. a slot still held by the walsender
/// of a process that just died) are transient; others terminal.
Error error_from_result(const PGresult* res, PGconn* conn, const std::string& what);

/// Error for a connection that failed outside a result (PQstatus bad, copy failure).
Error error_from_conn(PGconn* conn, const std::string& what);

/// How error_from_conn() classifies libpq's message `msg` of a failed connection: the kind
/// (authentication, a missing database or role, a missing REPLICATION attribute and TLS
/// set-ups that cannot succeed are terminal, the rest transient) and what to do about it.
std::pair<ErrorKind, std::string> classify_connection_failure(const std::string& msg);

/// Quotes an identifier for SQL ("name" with inner quotes doubled).
std::string quote_ident(std::string_view name);
/// Quotes a string literal ('text' with inner quotes doubled).
std::string quote_literal(std::string_view text);

/// Value of (row, col) or nullopt for SQL NULL.
std::optional<std::string> get(const PGresult* res, int row, int col);

/// The LSN in (row, col). A NULL or a text that is not an LSN is an error (kind invalid_data)
/// naming `what` and the text: a position the server did not give is never taken as zero.
Result<Lsn> get_lsn(const PGresult* res, int row, int col, std::string_view what);

}  // namespace cppcdc::pg::detail
