#pragma once
// The MySQL / MariaDB source's claim on its pipeline: a user-level named lock (GET_LOCK) on the
// server, named after source_id, that a running source holds on a small connection of its own
// for its whole life. The server has no replication slot to show that a pipeline runs, and the
// list of binlog readers (SHOW SLAVE HOSTS) needs privileges a CDC user lacks; GET_LOCK and
// IS_USED_LOCK need none, and the server lets go of the lock when its connection ends (also
// when the holding process is killed, as soon as the server sees the connection close).

#include <optional>
#include <string>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/plugin.hpp"
#include "cppcdc/result.hpp"
#include "source/mysql/mysql_conn.hpp"

namespace cppcdc::mysql::detail {

/// The lock's name for `config`: "cppcdc:" + source_id when that fits the servers' limit of
/// 64 characters and has no upper-case letter (MySQL compares lock names without case), else
/// "cppcdc:sha256:" + the first 48 hex digits of source_id's SHA-256.
std::string pipeline_lock_name(const MysqlSourceConfig& config);

/// The second lock a running source holds, on the same connection: "cppcdc:server_id:" + the
/// replica server id it reads the binlog with (effective_server_id). The server ends a binlog
/// reader's stream when another reader connects with the same id, so two pipelines with
/// different source_ids but one server id would stop each other; this lock lets the second
/// refuse to start instead.
std::string server_id_lock_name(const MysqlSourceConfig& config);

/// ConfiguredSource::check_not_in_use for `config`: an Error of kind configuration (for the
/// setting source_id) when another connection holds the pipeline's lock for 3 s, naming the
/// lock, the holder's connection id (with its user and host when this user may see them) and
/// the remedies; the connection's error when the server cannot be reached (transient: the
/// caller waits) or refuses the login (terminal); likewise (for the setting server_id) when the
/// server id's lock is held by another pipeline; ok() otherwise. Changes nothing.
Status check_pipeline_not_running(const MysqlSourceConfig& config);

/// Who holds the pipeline's lock for `config` now, as `conn`'s user sees it: the holder's
/// connection id and its description ("connection 42 (user cdc from 127.0.0.1:51234)"), or
/// nullopt when no connection holds it. No grace for a holder that is ending (for `cppcdc
/// preflight`). Changes nothing.
struct LockHolder {
  std::string id;
  std::string described;
};
Result<std::optional<LockHolder>> pipeline_lock_holder(MYSQL* conn,
                                                       const MysqlSourceConfig& config);
/// The same for the server id's lock (server_id_lock_name).
Result<std::optional<LockHolder>> server_id_lock_holder(MYSQL* conn,
                                                        const MysqlSourceConfig& config);

/// ConfiguredSource::teardown for `config`: the source keeps nothing on the server, but its
/// checkpoint must stay while the pipeline runs, also on another machine (whose control socket
/// the caller cannot see). No step when the pipeline's lock is free; one kFailed step naming
/// the holder when it is held; one kAbsent step saying the check was not made when the
/// server cannot be reached (a decommissioned server must not block the teardown).
std::vector<TeardownStep> teardown_steps(const MysqlSourceConfig& config);

/// The lock a running source holds.
class PipelineLock {
 public:
  /// Takes the lock for `config`, then the server id's lock, on a new connection of its own
  /// (locks held before are let go first), waiting up to 3 s for a holder that is ending.
  /// Errors: another connection holds either (kind configuration: the pipeline, or another
  /// with the same server id, runs elsewhere, so this one must not run too), or the server
  /// cannot be reached (transient, as connect() classifies it).
  Status hold(const MysqlSourceConfig& config);
  /// Lets go of the lock (closes its connection). Idempotent.
  void release() noexcept { conn_.reset(); }
  bool held() const noexcept { return conn_ != nullptr; }

 private:
  MysqlPtr conn_;
};

}  // namespace cppcdc::mysql::detail
