// `cppcdc preflight` for MySQL and MariaDB: the source's start-up checks, run read-only: the
// connection and login, the server's binlog settings and the user's grants, which tables the
// patterns capture (and that each has a primary key), and a stored checkpoint against the
// binlogs the server still has.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/plugin.hpp"
#include "source/mysql/binlog_client.hpp"
#include "source/mysql/mysql_conn.hpp"
#include "source/mysql/pipeline_lock.hpp"
#include "source/mysql/schema_history.hpp"
#include "source/mysql/settings.hpp"

namespace cppcdc::mysql {
namespace {

using Outcome = PreflightCheck::Outcome;

PreflightCheck pass(std::string what) { return {Outcome::kPass, std::move(what), ""}; }

/// A failed check whose error message already says what to do.
PreflightCheck failed(const Error& error) {
  std::string line;
  for (const auto& layer : error.chain()) line += layer + ": ";
  return {Outcome::kFail, line + error.message(), ""};
}

// The captured tables the user can see ("db.table"), and those of them without a primary key
// (their events carry no key: the key comes from the schema's PRIMARY KEY).
struct CapturedTables {
  std::size_t captured = 0;
  std::vector<std::string> names;  // every captured one
  std::vector<std::string> keyless;
};

Result<CapturedTables> captured_tables(MYSQL* conn, const MysqlSourceConfig& config) {
  auto rows = detail::query(
      conn,
      // STATISTICS, as the schema history reads keys: MariaDB shows TABLE_CONSTRAINTS rows only
      // to a user with more than SELECT on the table, so a cdc user would see no key there.
      "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, EXISTS (SELECT 1 FROM "
      "information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = t.TABLE_SCHEMA AND "
      "s.TABLE_NAME = t.TABLE_NAME AND s.INDEX_NAME = 'PRIMARY') FROM "
      "information_schema.TABLES t WHERE t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_SCHEMA NOT IN "
      "('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY 1, 2",
      "listing the tables the user can see");
  if (!rows) return fail(rows.error());
  detail::TableFilter filter(config.tables);
  CapturedTables out;
  for (const auto& row : rows->rows) {
    const std::string db = row[0].value_or("");
    const std::string table = row[1].value_or("");
    if (!filter.captured(db, table)) continue;
    ++out.captured;
    out.names.push_back(db + "." + table);
    if (row[2].value_or("0") != "1") out.keyless.push_back(db + "." + table);
  }
  return out;
}

void check_tables(MYSQL* conn, const MysqlSourceConfig& config, std::vector<PreflightCheck>& out) {
  auto found = captured_tables(conn, config);
  if (!found) {
    out.push_back(failed(found.error()));
    return;
  }
  const std::size_t captured = found->captured;
  const std::vector<std::string>& keyless = found->keyless;
  if (captured == 0) {
    // A start does not fail on it (a matching table created later is captured), but it is
    // rarely what was meant.
    out.push_back({Outcome::kWarn,
                   "no table the user can see matches the captured tables: nothing is captured "
                   "until one is created",
                   "check the database and table names in `tables`, and that the user has "
                   "SELECT on them"});
    return;
  }
  out.push_back(pass(std::to_string(captured) + " table" + (captured == 1 ? "" : "s") +
                     " match the captured tables"));
  for (const auto& name : keyless) {
    out.push_back({Outcome::kWarn,
                   "table " + name +
                       " has no primary key: its events carry no key, and "
                       "sinks that upsert by key cannot apply them",
                   "add a primary key (ALTER TABLE " + name + " ADD PRIMARY KEY (...))"});
  }
}

}  // namespace

std::optional<std::vector<std::string>> read_keyless_tables(const MysqlSourceConfig& config) {
  auto conn = detail::connect(config);
  if (!conn) return std::nullopt;
  auto found = captured_tables(conn->get(), config);
  if (!found) return std::nullopt;
  return std::move(found->keyless);
}

std::optional<UnresumableSnapshot> read_unresumable_snapshot(
    const MysqlSourceConfig& config, const std::optional<CheckpointRecord>& checkpoint) {
  // A start with a checkpoint resumes the stream (one it cannot resume fails, or under
  // when_needed snapshots again: preflight says which); without one the mode decides.
  if (checkpoint) return std::nullopt;
  if (config.snapshot_mode != SnapshotMode::kInitial &&
      config.snapshot_mode != SnapshotMode::kInitialOnly &&
      config.snapshot_mode != SnapshotMode::kWhenNeeded) {
    return std::nullopt;
  }
  auto conn = detail::connect(config);
  if (!conn) return std::nullopt;
  auto found = captured_tables(conn->get(), config);
  if (!found) return std::nullopt;
  UnresumableSnapshot out;
  out.whole_snapshot = true;
  for (auto& name : found->names) {
    // As begin_snapshot() picks them: snapshot.tables lists "database.table" exactly.
    if (!config.snapshot_tables.empty() &&
        std::find(config.snapshot_tables.begin(), config.snapshot_tables.end(), name) ==
            config.snapshot_tables.end()) {
      continue;
    }
    out.tables.push_back(std::move(name));
  }
  if (out.tables.empty()) return std::nullopt;
  return out;
}

std::vector<PreflightCheck> run_preflight(const MysqlSourceConfig& config,
                                          const std::optional<CheckpointRecord>& checkpoint) {
  std::vector<PreflightCheck> out;
  auto conn = detail::connect(config);
  if (!conn) {
    out.push_back(failed(conn.error()));
    return out;
  }
  out.push_back(pass("connected to " + config.host + ":" + std::to_string(config.port) + " as " +
                     config.user));
  // A running pipeline of this source_id holds its named lock: a start of this configuration
  // would stop at once (exit status 2), so this is a copy of a running pipeline's
  // configuration, or the pipeline itself checked while it runs.
  if (auto holder = detail::pipeline_lock_holder(conn->get(), config); !holder) {
    out.push_back(failed(holder.error()));
  } else if (*holder) {
    const std::string lock = detail::pipeline_lock_name(config);
    out.push_back({Outcome::kFail,
                   "source_id " + config.source_id + " is in use: the server's named lock \"" +
                       lock + "\" is held by " + (*holder)->described +
                       ", so a cppcdc runs this pipeline now, and a start of this configuration "
                       "would stop at once (exit status 2)",
                   "stop the running pipeline first, or give this configuration its own "
                   "source_id (and, with a transactional Kafka sink, its own transactional_id); "
                   "if that process is gone but its connection is not, end it with KILL " +
                       (*holder)->id});
  } else {
    out.push_back(pass("source_id " + config.source_id + " is not in use (its named lock \"" +
                       detail::pipeline_lock_name(config) + "\" is free)"));
    // Another pipeline reading with this replica server id: the server would end its stream
    // when this one connected.
    const std::string id = std::to_string(effective_server_id(config));
    if (auto id_holder = detail::server_id_lock_holder(conn->get(), config); !id_holder) {
      out.push_back(failed(id_holder.error()));
    } else if (*id_holder) {
      out.push_back({Outcome::kFail,
                     "replica server id " + id + " is in use: the server's named lock \"" +
                         detail::server_id_lock_name(config) + "\" is held by " +
                         (*id_holder)->described +
                         ", another cppcdc pipeline reading the binlog with that id; a start "
                         "of this configuration would stop at once (exit status 2)",
                     "give this configuration its own [source] server_id; if that process is "
                     "gone but its connection is not, end it with KILL " +
                         (*id_holder)->id});
    } else {
      out.push_back(pass("replica server id " + id + " is not used by another cppcdc"));
    }
  }
  auto server = detail::check_server(conn->get(), config);
  if (!server) {
    out.push_back(failed(server.error()));
  } else {
    out.push_back(pass(std::string(server->mariadb ? "MariaDB " : "MySQL ") + server->version +
                       ": binlog on, ROW format, replication grants present"));
    if (!server->full_row_image) {
      out.push_back({Outcome::kWarn,
                     "binlog_row_image is not FULL: updates and deletes carry only the columns "
                     "the server logs",
                     "SET GLOBAL binlog_row_image = FULL for full before images"});
    }
  }
  check_tables(conn->get(), config, out);
  // Another pipeline's record under this one's key: not a position of this server to check.
  if (auto foreign = foreign_checkpoint_check(checkpoint, to_string(config.flavor),
                                              config.source_id, "source_id")) {
    out.push_back(std::move(*foreign));
    return out;
  }
  if (!server) return out;
  if (!checkpoint) {
    auto at = detail::current_position(conn->get(), *server);
    if (!at) {
      out.push_back(failed(at.error()));
    } else {
      out.push_back(pass("no checkpoint: a first start reads from " + at->offset()));
    }
    return out;
  }
  auto start = detail::parse_resume_offset(checkpoint->offset, *server);
  if (!start) {
    out.push_back(failed(start.error()));
    return out;
  }
  auto problem = detail::resume_problem(conn->get(), *start, *server);
  if (!problem) {
    out.push_back(failed(problem.error()));
  } else if (!problem->empty()) {
    const bool snapshot_again = config.snapshot_mode == SnapshotMode::kWhenNeeded;
    out.push_back({snapshot_again ? Outcome::kWarn : Outcome::kFail,
                   "the checkpoint at " + checkpoint->offset + " cannot be resumed: " + *problem,
                   snapshot_again
                       ? "snapshot mode when_needed takes a new snapshot"
                       : "remove the checkpoint (cppcdc teardown) and start with a snapshot"});
  } else {
    out.push_back(pass("the checkpoint (" + checkpoint->offset +
                       ") can resume: the server "
                       "still has its binlog"));
  }
  return out;
}

}  // namespace cppcdc::mysql
