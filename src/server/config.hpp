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
  /// `[runtime] control_socket`: the Unix socket on which `cppcdc run` takes `cppcdc snapshot`
  /// commands. Default: `<[state.offset] dir>/cppcdc.sock` (beside the checkpoint), or
  /// `cppcdc.sock` next to the config file when the checkpoint backend is "memory". Pipelines
  /// that share a checkpoint directory need one each. A relative path is relative to the config file's directory (after
  /// load_server_config; parse_server_config leaves it as written).
  std::filesystem::path control_socket;
  std::string delivery_contract = "at_least_once";
  std::string log_format = "text";  ///< "text" or "json"
  std::string log_level = "info";   ///< trace, debug, info, warn, error, critical, off
};

/// Longest path a Unix domain socket can be bound to (sun_path holds 108 bytes with the NUL).
inline constexpr std::size_t kMaxControlSocketPath = 107;

/// Reads and validates `path`. A missing or unreadable file is a configuration error naming it.
/// Relative `[sink] path`, `[state.offset] dir` and `[runtime] control_socket` are resolved against the directory of
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
