#pragma once
// Source types "mysql" and "mariadb" as plugins: their settings read into a MysqlSourceConfig
// (register_plugin() in cppcdc/mysql.hpp registers configure_mysql_source()).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/plugin.hpp"

namespace cppcdc::mysql {

/// What the factories return: the settings, kept for tests and tools.
class ConfiguredMysql : public ConfiguredSource {
 public:
  virtual const MysqlSourceConfig& config() const noexcept = 0;
};

/// Reads and validates the settings of a source of `flavor`. Errors: configuration, through
/// `settings` (so they name where each key is written).
Result<MysqlSourceConfig> read_mysql_settings(const Settings& settings, ServerFlavor flavor);

/// The checks of `cppcdc preflight` (ConfiguredSource::preflight) for `config`: read-only.
std::vector<PreflightCheck> run_preflight(const MysqlSourceConfig& config,
                                          const std::optional<CheckpointRecord>& checkpoint);

/// ConfiguredSource::keyless_tables for `config`: the captured tables ("db.table") without a
/// primary key. nullopt when the server cannot be read.
std::optional<std::vector<std::string>> read_keyless_tables(const MysqlSourceConfig& config);

/// ConfiguredSource::unresumable_snapshot for `config`: the whole blocking snapshot a first
/// start takes (no checkpoint, snapshot mode initial, initial_only or when_needed), with the
/// tables it would read (the captured ones, or those of snapshot.tables). nullopt when no
/// snapshot would be taken, it has no table, or the server cannot be read.
std::optional<UnresumableSnapshot> read_unresumable_snapshot(
    const MysqlSourceConfig& config, const std::optional<CheckpointRecord>& checkpoint);

/// The factory registered for `flavor`'s type name; returns a ConfiguredMysql.
Result<std::unique_ptr<ConfiguredSource>> configure_mysql_source(const Settings& settings,
                                                                 ServerFlavor flavor);

}  // namespace cppcdc::mysql
