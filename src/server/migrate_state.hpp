#pragma once
// `cppcdc migrate-state`: copies a pipeline's saved state (its checkpoint record, which carries
// the source's own state: snapshot progress, and the schema history of a MySQL/MariaDB source)
// from the checkpoint backend one cdc.toml names to the backend another cdc.toml names.

#include <filesystem>
#include <optional>
#include <string>

namespace cppcdc::server {

struct MigrateStateOptions {
  /// The configuration the state is read from (its [source] gives the checkpoint id, its
  /// [state.offset] the backend). Its backend's record is read, never written or deleted; the
  /// writer lock or lease the backend takes to read is released before the command returns.
  std::filesystem::path from_config;
  /// The configuration the pipeline moves to: its [state.offset] is the target. Its [source]
  /// must give the same checkpoint id (the record belongs to that source), else refused.
  std::filesystem::path to_config;
  /// Overwrite a target record that is newer than the source's, or that belongs to another
  /// source (the target record is deleted first, then written).
  bool force = false;
  /// Report what would be done and change nothing.
  bool dry_run = false;
  /// Where to write the JSON report (also written when the command refuses or fails, once the
  /// two configurations loaded). nullopt: none.
  std::optional<std::filesystem::path> output;
};

/// Runs the command. Prints a short account to stdout and errors to stderr. Returns:
///   kExitOk          the target holds the source's record (written now, or already equal);
///   kExitConfiguration  a configuration file is invalid, the checkpoint ids differ, or a
///                    backend refused its settings;
///   kExitTerminal    the source holds no record, a record cannot be read, a backend failed,
///                    or the record read back from the target differs from the one written;
///   kExitRefused     a cppcdc runs either pipeline (it answers on its control socket), or the
///                    target holds a newer record or another source's record and force is off.
/// The JSON report (MigrateStateOptions::output) says the same with both records' positions.
/// Not thread-safe with a running pipeline by design: it refuses one that answers.
int migrate_state(const MigrateStateOptions& options);

}  // namespace cppcdc::server
