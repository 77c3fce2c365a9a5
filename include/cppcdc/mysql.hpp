#pragma once
// MySQL and MariaDB: what exists of the connector so far is the notation and order of its
// checkpoint offsets (the binlog source itself is a later issue).
//
// An offset is either a binlog coordinate "<basename>.<sequence>:<position>" (e.g.
// "mysql-bin.000012:4567"), or a GTID set (MySQL "uuid:1-5,uuid:7", tagged "uuid:tag:1-5",
// MariaDB "0-1-100"). Coordinates of one basename are ordered by (sequence, position); GTID
// sets, coordinates of different basenames, and a coordinate against a GTID set are not ordered.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "cppcdc/position.hpp"

namespace cppcdc::mysql {

/// A parsed binlog coordinate; `basename` points into the parsed text.
struct BinlogCoordinate {
  std::string_view basename;
  std::uint64_t sequence = 0;
  std::uint64_t position = 0;
};

/// nullopt for anything that is not exactly "<basename>.<decimal>:<decimal>".
std::optional<BinlogCoordinate> parse_binlog_coordinate(std::string_view offset);

/// The order of MySQL and MariaDB checkpoint offsets described above.
std::shared_ptr<const PositionOrder> offset_order();

/// Registers offset_order() for source types "mysql" and "mariadb" (idempotent, thread-safe).
void register_positions();

/// Reserves source types "mysql" and "mariadb" in the plugin registry (cppcdc/plugin.hpp) and
/// registers the offset order: the source itself is not built yet, so a configuration that
/// asks for it is told so. Idempotent.
void register_plugin();

}  // namespace cppcdc::mysql
