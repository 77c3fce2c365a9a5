#include "cppcdc/snapshot.hpp"

#include <array>
#include <utility>

namespace cppcdc {
namespace {

constexpr std::array<std::pair<SnapshotMode, std::string_view>, 5> kNames{{
    {SnapshotMode::kNever, "never"},
    {SnapshotMode::kInitial, "initial"},
    {SnapshotMode::kInitialOnly, "initial_only"},
    {SnapshotMode::kWhenNeeded, "when_needed"},
    {SnapshotMode::kIncremental, "incremental"},
}};

}  // namespace

std::string_view to_string(SnapshotMode mode) noexcept {
  for (const auto& [m, name] : kNames) {
    if (m == mode) return name;
  }
  return "unknown";
}

std::optional<SnapshotMode> parse_snapshot_mode(std::string_view name) noexcept {
  for (const auto& [m, text] : kNames) {
    if (text == name) return m;
  }
  return std::nullopt;
}

}  // namespace cppcdc
