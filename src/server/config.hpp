#pragma once
// cdc.toml: loading and validation of the server configuration.
//
// Every problem is reported as an Error of kind configuration whose message names the file,
// the key (with its section, e.g. "[sink] path"), the position toml++ recorded for it when
// there is one, and what was expected. Keys the loader does not know are errors, so a typo
// cannot silently fall back to a default.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/plugin.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/router.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/transforms.hpp"

namespace cppcdc::server {

/// A sink of the configuration: `[sink]` (the default sink) or an entry of `[[sinks]]`.
struct SinkEntry {
  /// `name`: required in `[[sinks]]`; `[sink]` is "default" unless it names itself.
  std::string name;
  std::string type;  ///< `type` (the plugin's type name, or "fanout")
  /// The plugin's validated settings; null for a fanout.
  std::shared_ptr<const ConfiguredSink> configured;
  /// A fanout's children (`sinks`): indexes into ServerConfig::sinks, never a fanout.
  std::vector<std::size_t> fanout;
  /// `batch_max_events`, `sink_flush_interval_events`, `batch_max_delay_ms`.
  ChildBatching batching;
  /// How messages name it: "[sink]" or "[[sinks]] \"billing-hook\"".
  std::string label;
};

/// One `[[pipeline.routes]]` rule.
struct RouteEntry {
  std::vector<std::string> tables;   ///< `tables` globs
  std::vector<std::string> schemas;  ///< `schemas` globs
  std::size_t sink = 0;              ///< `sink`, as an index into ServerConfig::sinks
  std::string where;                 ///< "cdc.toml:20:1", for messages
};

/// `[dead_letter]`: where events the pipeline gives up on are kept (a JSON-lines file).
struct DeadLetterConfig {
  std::filesystem::path path;  ///< `path`
  unsigned file_mode = 0600;   ///< `file_mode`
};

/// `[admin]`: the admin HTTP server (admin_http.hpp). Off unless the section is present.
struct AdminConfig {
  std::string listen = "127.0.0.1:9464";  ///< `listen`, as written ("host:port")
  std::string host = "127.0.0.1";         ///< its host ("::1" for "[::1]:9464")
  int port = 9464;                        ///< its port; 0: any free port (logged)
  /// `token`, or the value of the environment variable `token_env` names (read when the
  /// configuration is loaded). Empty: no token. Never printed.
  std::string token;
  /// Where the token came from, for describe_config: "", "token", "token_env NAME".
  std::string token_origin;
  /// `error_linger_ms`: after the run ended with an error (the circuit breaker escalated to
  /// its error state, a lost source position, any other fatal error of the running
  /// pipeline), the process keeps answering /livez and /readyz with 503 (and serving /metrics
  /// with the final verdict) for this long before it exits with the error's status, so that
  /// a liveness probe or a last scrape sees why. A stop signal ends the wait early; a clean
  /// stop never waits. 0: exit at once. Milliseconds, 0 to 3600000.
  std::int64_t error_linger_ms = 15000;
  /// Set when `token_env` names a variable that is not set or empty: the error the commands
  /// serving the admin endpoint stop with (check_admin_token); the others ignore it.
  std::optional<Error> token_error;
};

/// The configuration of `cppcdc run`. The source, sinks and checkpoint backend are whatever
/// their type names are registered for (cppcdc/plugin.hpp): the server reads `[source] type`,
/// `[sink] type` (and each `[[sinks]]` entry's) and `[state.offset] backend` and hands the
/// rest of each section to the plugin's factory. The type "fanout" is the server's own: a
/// sink whose `sinks` lists other `[[sinks]]` entries, each getting every event.
struct ServerConfig {
  /// Where the configuration came from (file name), for messages.
  std::string origin;
  std::string source_type;  ///< `[source] type`
  /// Whether the file sets `[source] source_name` (otherwise the source type's default).
  bool source_name_set = false;
  std::shared_ptr<const ConfiguredSource> source;  ///< never null after loading
  std::string sink_type;                           ///< `[sink] type`
  /// `[sink]`'s plugin settings; null when `[sink]` is a fanout (see sinks[0]).
  std::shared_ptr<const ConfiguredSink> sink;
  /// Every sink: [0] is `[sink]`, then the `[[sinks]]` entries in file order. Every entry is
  /// reached by a route, a fanout or (for [0]) as the default.
  std::vector<SinkEntry> sinks;
  /// `[[pipeline.routes]]`, in order (the first match wins; unmatched events go to sinks[0]).
  std::vector<RouteEntry> routes;
  /// `[dead_letter]`, when configured.
  std::optional<DeadLetterConfig> dead_letter;
  /// `[admin]`, when configured.
  std::optional<AdminConfig> admin;
  std::string checkpoint_backend;                          ///< `[state.offset] backend`
  std::shared_ptr<const ConfiguredCheckpoint> checkpoint;  ///< never null after loading
  RuntimeOptions runtime;
  /// `[runtime] control_socket`: the Unix socket on which `cppcdc run` takes `cppcdc snapshot`
  /// commands. Default: default_control_socket_name(origin) in the checkpoint backend's
  /// directory (local_fs: its `dir`), or, when the backend has none, in
  /// local_state_directory() (next to the config file, or /var/lib/cppcdc/NAME for a file in
  /// the packaged configuration directory); so each configuration file has its own
  /// (orders.toml: orders.sock). A relative path is relative
  /// to the config file's directory (after load_server_config; parse_server_config leaves it as
  /// written).
  std::filesystem::path control_socket;
  /// `[[pipeline.transforms]]` as written (validated while loading: every action built once,
  /// secret_env variables read); run_server builds the chain from it with
  /// parse_transform_stages. Empty when the file has none.
  std::optional<ConfigNode> transforms;
  /// One line per stage for describe_config: "name (when ...): action, action".
  std::vector<std::string> transform_summary;
  /// `[runtime] transform_error_policy`. "skip" loads only with `[dead_letter]`: a skipped
  /// event is written there, never dropped silently.
  TransformErrorPolicy transform_error_policy = TransformErrorPolicy::kHalt;
  std::string delivery_contract = "at_least_once";
  std::string log_format = "text";  ///< "text" or "json"
  std::string log_level = "info";   ///< trace, debug, info, warn, error, critical, off
};

/// The file name of the default control socket for the configuration file `origin`: its name
/// without the extension, plus ".sock" (/etc/cppcdc/orders.toml: "orders.sock"); "cppcdc.sock"
/// when `origin` has no usable name.
std::string default_control_socket_name(const std::string& origin);

/// The directory for this machine's files of a pipeline whose checkpoint is kept elsewhere
/// (kafka_topic, redis, postgresql, memory: no `[state.offset] dir`): the control socket's
/// default place and the source's own small files (Settings::state_directory).
/// `config_dir` is the absolute directory of the configuration file, `stem` its name without
/// the extension. A file in `packaged_conf_dir` (the packaged unit's configuration directory,
/// /etc/cppcdc for a /usr build) is an instance of cppcdc@.service, whose only writable
/// directory is its StateDirectory: `packaged_state_root`/`stem` (/var/lib/cppcdc/NAME).
/// Any other file: `config_dir` itself. Pure; the server and the CLI compute the same path.
std::filesystem::path local_state_directory(const std::filesystem::path& config_dir,
                                            const std::string& stem,
                                            const std::filesystem::path& packaged_conf_dir,
                                            const std::filesystem::path& packaged_state_root);

/// This build's packaged configuration directory (<sysconfdir>/cppcdc) and the unit's state
/// root (/var/lib/cppcdc, where systemd's StateDirectory= puts cppcdc/NAME).
std::filesystem::path packaged_conf_dir();
std::filesystem::path packaged_state_root();

/// Longest path a Unix domain socket can be bound to (sun_path holds 108 bytes with the NUL).
inline constexpr std::size_t kMaxControlSocketPath = 107;

/// Reads and validates `path`. A missing or unreadable file is a configuration error naming it.
/// Relative paths in the plugins' sections (read with Settings::get_path: `[sink] path`,
/// `[state.offset] dir`, ...) and `[runtime] control_socket` are resolved against the
/// directory of `path`, so the same file always finds the same checkpoint whatever the
/// working directory. Registers the built-in plugins first (register_builtin_plugins()).
Result<ServerConfig> load_server_config(const std::filesystem::path& path);

/// Parses and validates TOML text; `origin` names it in messages (usually the file name).
/// Relative paths are left as written.
Result<ServerConfig> parse_server_config(std::string_view toml_text, const std::string& origin);

/// A multi-line human summary of the effective configuration (defaults included), for
/// `cppcdc check-config`. Secrets are redacted by the plugins.
std::string describe_config(const ServerConfig& config);

/// The error of an `[admin] token_env` whose variable is not set (AdminConfig::token_error),
/// for the commands that serve the admin endpoint or check what `cppcdc run` would do (run,
/// check-config, preflight). Success without `[admin]`.
Status check_admin_token(const ServerConfig& config);

/// How cdc.toml spells a setting an Error points at (Error::for_setting): "[source] tables",
/// "[source.snapshot] mode", "[sink] path", "[state.offset] dir",
/// "[sink.topic_config] \"cleanup.policy\"". Empty for kNone.
std::string setting_label(SettingOwner owner, const std::string& path);

/// `key` as TOML writes it: bare when it consists of letters, digits, '_' and '-', else in
/// double quotes ("cleanup.policy" stays one key).
std::string toml_key(std::string_view key);

/// A setting path below a section ("snapshot.mode", "topic_config.cleanup.policy") split into
/// the sub-table ("snapshot", "topic_config"; "" for the section itself) and the key as TOML
/// writes it ("mode", "\"cleanup.policy\""). Below a table whose keys are outside names
/// (topic_config, kafka_properties, headers, table_conditions) the rest of the path is one key.
std::pair<std::string, std::string> split_setting_path(std::string_view path);

/// error.report() with its setting, if any, named as cdc.toml spells it.
std::string render_error(const Error& error);

/// Registers the plugins built into cppcdc (src/server/builtin_plugins.cpp, the only file of
/// the server that names them). Idempotent, thread-safe.
void register_builtin_plugins();

/// The type each section takes when it does not say: `[source] type`, `[sink] type`,
/// `[state.offset] backend`.
struct DefaultTypes {
  std::string source;
  std::string sink;
  std::string checkpoint;
};
const DefaultTypes& default_types();

}  // namespace cppcdc::server
