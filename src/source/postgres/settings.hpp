#pragma once
// Source type "postgres" as a plugin: its settings read into a PostgresSourceConfig
// (register_plugin() in cppcdc/postgres.hpp registers configure_postgres_source()).

#include <memory>

#include "cppcdc/plugin.hpp"
#include "cppcdc/postgres.hpp"

namespace cppcdc::pg {

/// What configure_postgres_source() returns: the settings, kept for tests and tools.
class ConfiguredPostgres : public ConfiguredSource {
 public:
  virtual const PostgresSourceConfig& config() const noexcept = 0;
};

/// Reads and validates the settings of a "postgres" source. Errors: configuration, through
/// `settings` (so they name where each key is written).
Result<PostgresSourceConfig> read_postgres_settings(const Settings& settings);

/// The checks of `cppcdc preflight` (ConfiguredSource::preflight) for `config`: read-only.
std::vector<PreflightCheck> run_preflight(const PostgresSourceConfig& config,
                                          const std::optional<CheckpointRecord>& checkpoint);

/// ConfiguredSource::keyless_tables for `config`: the configured tables whose events carry no
/// key (replica identity NOTHING; DEFAULT or FULL without a primary key; USING INDEX without
/// the index). nullopt when the server cannot be read.
std::optional<std::vector<std::string>> read_keyless_tables(const PostgresSourceConfig& config);

/// ConfiguredSource::unresumable_snapshot for `config`: the tables of the snapshot a start with
/// `checkpoint` would take (or go on with) that have no primary key, as the snapshot decides
/// (snapshot.cpp: it continues a table from its primary key only), expanded to partitions as
/// the snapshot reads them. nullopt when there are none, no snapshot would be taken, or the
/// server cannot be read.
std::optional<UnresumableSnapshot> read_unresumable_snapshot(
    const PostgresSourceConfig& config, const std::optional<CheckpointRecord>& checkpoint);

/// ConfiguredSource::check_not_in_use for `config`: the connection's error when the SQL
/// connection, or the replication connection the source would stream on, cannot be opened
/// (terminal when the server refuses it, transient when it cannot be reached); an error (kind
/// configuration, naming the slot and the process) when replication slot config.slot_name
/// stays active for a few seconds, or when another session keeps holding the pipeline lock
/// (slot.hpp: a pipeline reading its initial snapshot); ok when neither, and under snapshot
/// mode initial_only (no slot).
Status check_slot_not_in_use(const PostgresSourceConfig& config);

/// `cppcdc teardown` (ConfiguredSource::teardown) for `config`.
Result<std::vector<TeardownStep>> run_teardown(const PostgresSourceConfig& config, bool dry_run,
                                               bool include_preexisting);

/// The factory registered for source type "postgres"; returns a ConfiguredPostgres.
Result<std::unique_ptr<ConfiguredSource>> configure_postgres_source(const Settings& settings);

}  // namespace cppcdc::pg
