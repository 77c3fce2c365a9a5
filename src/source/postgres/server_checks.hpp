#pragma once
// The PostgreSQL source's start-up checks on its SQL connection: the server (wal_level,
// version, the features the configuration asks for), the captured tables, their replica
// identities, and the publication (made when allowed and missing, else checked to include every
// table). Each refusal is a terminal error that says what to change.

#include <libpq-fe.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cppcdc/postgres.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg::detail {

/// A captured table, "schema.table" split.
struct TableName {
  std::string schema;
  std::string table;
  std::string text() const { return schema + "." + table; }
  friend bool operator<(const TableName& a, const TableName& b) {
    return std::tie(a.schema, a.table) < std::tie(b.schema, b.table);
  }
};

/// "schema.table", or "table" in schema public.
TableName split_table(const std::string& name);

/// The oldest server cppcdc runs against (server_version_num): 12, whose catalogs the
/// source's queries need (pg_attribute.attgenerated, pg_partition_ancestors()).
inline constexpr int kMinServerVersion = 120000;

/// A server of `version` (server_version_num, e.g. 120022) against the features `config` asks
/// for: older than kMinServerVersion, or stream_in_progress or capture_logical_messages before
/// 14, is a terminal error naming the version needed.
Status check_server_version(int version, const PostgresSourceConfig& config);

/// "12.22" for 120022 (and "9.6.24" for 90624).
std::string version_text(int version);

/// pg_replication_slots.wal_status for a select list: the column from PostgreSQL 13 on, NULL
/// before (12 has no such column; a slot there is never invalidated).
const char* wal_status_column(PGconn* conn);

/// wal_level, server version and the features `config` asks for; `database` receives the
/// connection's database name.
Status check_server(PGconn* sql, const PostgresSourceConfig& config, std::string& database);

/// Every table exists in `database` and is a table (plain, or partitioned on 13 and later).
Status check_tables(PGconn* sql, const std::set<TableName>& tables, const std::string& database);

/// The publication exists and includes every table, or is created for them when
/// config.create_publication allows (after check_replica_identities).
Status ensure_publication(PGconn* sql, const PostgresSourceConfig& config,
                          const std::set<TableName>& tables);

/// Before cppcdc puts tables into a publication that publishes updates and deletes: a table
/// without a replica identity (no primary key under DEFAULT, NOTHING, or a missing identity
/// index) would make PostgreSQL refuse the application's own UPDATE and DELETE on it.
Status check_replica_identities(PGconn* sql, const PostgresSourceConfig& config,
                                const std::set<TableName>& tables);

/// What cppcdc records about the objects it made, so that `cppcdc teardown` drops those and
/// leaves anyone else's alone: a comment on the publication it created, naming the slot too
/// once it created that. A slot cppcdc made next to someone else's publication (which it may
/// not comment on; slots take no comments) is recorded in a file beside the checkpoint
/// instead (slot_mark_file), when the pipeline keeps its state on this machine.
struct CreatedMarks {
  bool publication = false;
  bool slot = false;
  /// The slots the publication's comment records as made by cppcdc (pipelines sharing it).
  std::vector<std::string> marked_slots;
};

/// Marks the publication (`slot` false, right after creating it) or the slot (`slot` true,
/// right after creating it: in the file beside the checkpoint, and added to the publication's
/// comment when that carries cppcdc's mark). A failure is logged, never an error: the mark
/// only spares a question at teardown.
void mark_created(PGconn* sql, const PostgresSourceConfig& config, bool slot);

/// The file recording a slot cppcdc created beside a publication it did not create
/// (PostgresSourceConfig::state_dir); empty without a state directory.
std::filesystem::path slot_mark_file(const PostgresSourceConfig& config);

/// Whether that file exists and names config's slot in the database `sql` is connected to.
bool has_slot_mark_file(PGconn* sql, const PostgresSourceConfig& config);

/// Reads the marks of config's publication and slot.
Result<CreatedMarks> read_created_marks(PGconn* sql, const PostgresSourceConfig& config);

}  // namespace cppcdc::pg::detail
