#pragma once
// Thin RAII helpers over MariaDB Connector/C for the MySQL / MariaDB source: connecting with
// TLS and timeouts and the fixed session settings, running SQL, and turning Connector/C
// failures into classified cppcdc errors.

#include <mysql.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::mysql::detail {

struct MysqlDeleter {
  void operator()(MYSQL* m) const noexcept { mysql_close(m); }
};
using MysqlPtr = std::unique_ptr<MYSQL, MysqlDeleter>;

/// A fetched result: rows of text values (nullopt for SQL NULL), byte-exact (embedded zero
/// bytes kept).
struct Rows {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

/// Opens a connection to the configured server with its TLS mode and connect timeout, and
/// the session settings every value depends on: utf8mb4, time_zone '+00:00'.
/// `read_timeout_ms` (0: none) bounds each read from the server. Errors are classified as
/// error_from() does; the message never contains the password.
Result<MysqlPtr> connect(const MysqlSourceConfig& config, std::uint32_t read_timeout_ms = 0);

/// Runs one statement; `what` names the step for the error message.
Status exec(MYSQL* conn, const std::string& sql, const std::string& what);
/// Runs one statement that returns rows and fetches them all.
Result<Rows> query(MYSQL* conn, const std::string& sql, const std::string& what);

/// The error of the last call on `conn`: client-side connection failures (lost, gone,
/// refused, timeout), too many connections, a server shutting down and a killed connection
/// are transient; everything else (access denied, unknown table, a replication error such
/// as a purged binlog) is terminal.
Error error_from(MYSQL* conn, const std::string& what);
/// Whether a MySQL / Connector/C error number is transient (see error_from).
bool is_transient_errno(unsigned int code) noexcept;

/// `name` quoted as an identifier (`name`, inner backticks doubled).
std::string quote_ident(std::string_view name);
/// `text` quoted as a string literal (single quotes; backslashes and quotes escaped).
std::string quote_literal(std::string_view text);

}  // namespace cppcdc::mysql::detail
