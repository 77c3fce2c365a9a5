#pragma once
// cdc.toml: loading and validation of the server configuration.
//
// Every problem is reported as an Error of kind configuration whose message names the file,
// the key (with its section, e.g. "[sink] path"), the position toml++ recorded for it when
// there is one, and what was expected. Keys the loader does not know are errors, so a typo
// cannot silently fall back to a default.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "cppcdc/postgres.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/runtime.hpp"

namespace cppcdc::server {

struct SinkConfig {
  std::string type = "stdout";  ///< "file" or "stdout"
  std::filesystem::path path;   ///< required for "file"
};

struct OffsetStateConfig {
  std::string backend = "local_fs";  ///< "local_fs" or "memory"
  std::filesystem::path dir;         ///< required for "local_fs"
};

struct StateConfig {
  OffsetStateConfig offset;
};

struct ServerConfig {
  /// Where the configuration came from (file name), for messages.
  std::string origin;
  pg::PostgresSourceConfig source;
  SinkConfig sink;
  StateConfig state;
  RuntimeOptions runtime;
  std::string delivery_contract = "at_least_once";
  std::string log_format = "text";  ///< "text" or "json"
  std::string log_level = "info";   ///< trace, debug, info, warn, error, critical, off
};

/// Reads and validates `path`. A missing or unreadable file is a configuration error naming it.
/// Relative `[sink] path` and `[state.offset] dir` are resolved against the directory of
/// `path`, so the same file always finds the same checkpoint whatever the working directory.
Result<ServerConfig> load_server_config(const std::filesystem::path& path);

/// Parses and validates TOML text; `origin` names it in messages (usually the file name).
Result<ServerConfig> parse_server_config(std::string_view toml_text, const std::string& origin);

/// A multi-line human summary of the effective configuration (defaults included), for
/// `cppcdc check-config`. The DSN's password is redacted.
std::string describe_config(const ServerConfig& config);

/// `dsn` with every secret replaced by "****": the `password=` and `sslpassword=` keywords of
/// a key=value connection string (quoted or not), and the user-info password and `password` /
/// `sslpassword` query parameters of a postgres:// or postgresql:// URI. Safe to log.
std::string redact_dsn(std::string_view dsn);

}  // namespace cppcdc::server
