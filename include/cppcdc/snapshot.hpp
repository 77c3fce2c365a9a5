#pragma once
// Snapshot settings shared by every source: when the rows that exist before capture starts
// are read. A source that cannot honour a mode refuses it when it is made
// (ErrorKind::kConfiguration).

#include <optional>
#include <string_view>

namespace cppcdc {

/// When the rows that exist before capture starts are read.
enum class SnapshotMode {
  kNever,        ///< only changes committed after the stream position exists
  kInitial,      ///< a blocking snapshot when there is no checkpoint, then the stream (default)
  kInitialOnly,  ///< a blocking snapshot when there is no checkpoint, then stop
  /// as kInitial, and also when the checkpoint cannot be resumed (the source's position is
  /// gone or past it). The checkpoint is then set aside with a warning naming why, and a new
  /// snapshot is taken.
  kWhenNeeded,
  /// no blocking snapshot: when there is no checkpoint, an incremental snapshot (DBLog
  /// watermarks, incremental_snapshot.hpp) of the snapshot tables runs alongside the stream.
  kIncremental,
};

/// The mode's stable name: "never", "initial", "initial_only", "when_needed" or
/// "incremental".
std::string_view to_string(SnapshotMode mode) noexcept;

/// The mode of a name to_string() gives; nullopt for any other text.
std::optional<SnapshotMode> parse_snapshot_mode(std::string_view name) noexcept;

}  // namespace cppcdc
