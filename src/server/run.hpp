#pragma once
// The server's run loop (`cppcdc run`) and the configuration check (`cppcdc check-config`).

#include <filesystem>
#include <string_view>

#include "config.hpp"

namespace cppcdc::server {

/// Process exit codes of the server.
inline constexpr int kExitOk = 0;             ///< clean stop (SIGINT/SIGTERM) or source ended
inline constexpr int kExitFailure = 1;        ///< any other error (transient ones included)
inline constexpr int kExitConfiguration = 2;  ///< the configuration is invalid
inline constexpr int kExitTerminal = 3;       ///< needs an operator (auth, missing slot, ...)
/// `cppcdc snapshot ...`: no cppcdc answers on the control socket.
inline constexpr int kExitNotRunning = 4;
/// `cppcdc snapshot ...`: the running cppcdc (or the saved checkpoint) refused the command.
inline constexpr int kExitRefused = 5;

/// The version this build reports. The build may pass -DCPPCDC_VERSION="x.y.z" (the CMake
/// project version); without it the fallback below is used.
#ifndef CPPCDC_VERSION
#define CPPCDC_VERSION "0.1.0"
#endif
inline constexpr std::string_view kVersion = CPPCDC_VERSION;

/// Exit code for an error of `kind`.
int exit_code_for(ErrorKind kind) noexcept;

/// Sets up logging (log.format / log.level, on stderr) and SIGINT/SIGTERM handling, builds the
/// source, checkpoint and sink, opens the control socket ([runtime] control_socket, for
/// `cppcdc snapshot ...`; refused while another cppcdc answers on it), and delivers batches
/// until a signal arrives or an error stops the pipeline. Returns the process exit code.
int run_server(const ServerConfig& config);

/// Loads `path`; prints the effective configuration and "configuration OK" (and that nothing
/// was checked against the database) to stdout and returns 0, or prints the error to stderr
/// and returns kExitConfiguration. Offline: connects to nothing.
int check_config(const std::filesystem::path& path);

/// `cppcdc preflight`: loads `path` and runs, read-only, the checkpoint backend's checks
/// (ConfiguredCheckpoint::preflight, which also reads the record), the local directories',
/// the source's (ConfiguredSource::preflight, given that record) and every sink's
/// (ConfiguredSink::preflight). Nothing is created on any server or on disk.
/// Prints one line per check (and the remedy under each failure) to stdout. Returns 0 when
/// no check failed, kExitTerminal when a start would fail, kExitConfiguration for a bad file.
int preflight(const std::filesystem::path& path);

/// `cppcdc teardown`: refused (kExitRefused) while a cppcdc answers on the pipeline's control
/// socket. Shows what it will remove (the source's objects that cppcdc created, and the
/// checkpoint), asks on a terminal unless `yes` (without a terminal, `yes` is required), then
/// removes them. kExitOk when everything planned was removed, kExitTerminal when a step
/// failed (the checkpoint is then kept), kExitRefused when not confirmed.
int teardown(const std::filesystem::path& path, bool yes, bool include_preexisting);

}  // namespace cppcdc::server
