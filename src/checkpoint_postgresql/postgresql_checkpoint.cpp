// The "postgresql" checkpoint backend: cppcdc/postgresql_checkpoint.hpp says what it stores,
// how it fences a second writer and how it classifies failures.

#include "cppcdc/postgresql_checkpoint.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_postgresql/libpq_util.hpp"
#include "core/fault.hpp"
#include "core/process_identity.hpp"
#include "core/text_util.hpp"

namespace cppcdc {
namespace {

using pgckpt::ConnPtr;
using pgckpt::Param;
using pgckpt::quote_ident;
using pgckpt::quote_literal;

constexpr Oid kTextOid = 25;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
// PostgreSQL keeps the first 63 bytes of an application_name.
constexpr std::size_t kMaxAppName = 63;
constexpr const char* kStatementTimeout = "SET statement_timeout = 60000";

Param text(std::string value) { return {std::move(value), false, kTextOid}; }

/// The advisory lock key of one checkpoint: the first 8 bytes of a SHA-256 over its schema,
/// table and id (so two tables, or two ids, never share a lock by accident).
std::int64_t lock_key_for(const PostgresqlCheckpointOptions& options, const std::string& id) {
  const std::string hex = detail::sha256_hex("cppcdc checkpoint lock\n" + options.schema + "\n" +
                                             options.table + "\n" + id)
                              .value_or(std::string(16, '0'));
  std::uint64_t key = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    const char c = hex[i];
    key = (key << 4) | static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return static_cast<std::int64_t>(key);  // two's complement (C++20)
}

std::string qualified_name(const PostgresqlCheckpointOptions& options) {
  return quote_ident(options.schema) + "." + quote_ident(options.table);
}

/// A big-endian int8 of a binary result.
std::optional<std::int64_t> binary_int8(const PGresult* result, int row, int col) {
  if (PQgetisnull(result, row, col) || PQgetlength(result, row, col) != 8) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, col));
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return static_cast<std::int64_t>(value);
}

/// What a row holds: the encoded record and its generation.
struct StoredRow {
  std::string bytes;
  std::int64_t generation = 0;
};

/// A session with the writer lock held; used by open() and remove().
class Session {
 public:
  Session(const PostgresqlCheckpointOptions& options, std::string id)
      : options_(options),
        id_(std::move(id)),
        qualified_(qualified_name(options)),
        location_(postgresql_checkpoint_location(options, id_)),
        lock_key_(lock_key_for(options, id_)) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { release(); }

  /// Connects and takes the lock. `reopening`: after a lost connection, where the lock still
  /// being held may be the old session the server has not ended yet (transient); otherwise a
  /// held lock is a second writer (configuration).
  Status open(bool reopening) {
    release();
    Status opened = connect_and_lock(reopening);
    if (!opened) conn_.reset();  // never a connection without the lock
    return opened;
  }

  /// Unlocks (synchronously, so a next writer opening at once finds the lock free) and
  /// disconnects.
  void release() {
    if (conn_ && locked_ && !pgckpt::connection_lost(conn_.get())) {
      (void)pgckpt::exec(conn_.get(), "SELECT pg_advisory_unlock($1)",
                         {{std::to_string(lock_key_), false, kInt8Oid}});
    }
    locked_ = false;
    conn_.reset();
  }

  /// Connected, with the lock held (as far as libpq knows: a dropped connection shows only
  /// when a statement fails on it).
  bool usable() const { return conn_ && locked_ && !pgckpt::connection_lost(conn_.get()); }
  PGconn* conn() const { return conn_.get(); }

  /// The error for a failed statement of this backend.
  Error error(const pgckpt::Outcome& outcome, const std::string& what) const {
    return pgckpt::sql_error(outcome.result.get(), conn_.get(), what + " (" + location_ + ")",
                             "table",
                             "GRANT SELECT, INSERT, UPDATE ON " + qualified_ +
                                 " TO the user of dsn, or set table to one it may write");
  }

  /// Who holds the lock, as far as the server tells: backend pid, application_name, client.
  std::string holder() const {
    const auto key = static_cast<std::uint64_t>(lock_key_);
    auto found = pgckpt::exec(
        conn_.get(),
        "SELECT l.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local') "
        "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
        "AND l.classid = $1::oid AND l.objid = $2::oid "
        "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        {text(std::to_string(key >> 32)), text(std::to_string(key & 0xffffffffU))});
    if (!found.ok || PQntuples(found.result.get()) == 0) return "its holder is not visible";
    const PGresult* r = found.result.get();
    return "PostgreSQL backend pid " + pgckpt::text_value(r, 0, 0).value_or("?") +
           ", application_name " + quote_literal(pgckpt::text_value(r, 0, 1).value_or("")) +
           ", client " + pgckpt::text_value(r, 0, 2).value_or("?");
  }

  /// The stored row, nullopt when there is none (or no table yet).
  Result<std::optional<StoredRow>> read_row() {
    auto read =
        pgckpt::exec(conn_.get(), "SELECT record, generation FROM " + qualified_ + " WHERE id = $1",
                     {text(id_)}, /*binary_results=*/true);
    if (!read.ok) {
      if (pgckpt::sqlstate(read.result.get()) == "42P01") {
        return std::optional<StoredRow>();  // no table: nothing was ever saved
      }
      return fail(error(read, "reading the checkpoint"));
    }
    const PGresult* r = read.result.get();
    if (PQntuples(r) == 0) return std::optional<StoredRow>();
    const auto generation = binary_int8(r, 0, 1);
    if (PQgetisnull(r, 0, 0) || !generation) {
      return fail(Error::checkpoint(ErrorKind::kTerminal,
                                    location_ + " has a NULL record or generation; " + remedy()));
    }
    return std::optional<StoredRow>(
        StoredRow{std::string(PQgetvalue(r, 0, 0), static_cast<std::size_t>(PQgetlength(r, 0, 0))),
                  *generation});
  }

  /// What an operator can do about a damaged row.
  std::string remedy() const {
    return "restore the row from a backup, or delete it (DELETE FROM " + qualified_ +
           " WHERE id = " + quote_literal(id_) +
           ") to start from the source's own position, accepting a replay";
  }

  const PostgresqlCheckpointOptions& options() const { return options_; }
  const std::string& id() const { return id_; }
  const std::string& qualified() const { return qualified_; }
  const std::string& location() const { return location_; }

 private:
  Status connect_and_lock(bool reopening) {
    std::string app_name = "cppcdc-checkpoint " + detail::process_identity();
    if (app_name.size() > kMaxAppName) app_name.resize(kMaxAppName);
    auto conn = pgckpt::connect(options_.dsn, app_name);
    if (!conn) {
      return fail(std::move(conn).error().context("opening the checkpoint " + location_));
    }
    conn_ = std::move(*conn);
    auto timeout = pgckpt::exec(conn_.get(), kStatementTimeout);
    if (!timeout.ok) return fail(error(timeout, "setting statement_timeout"));
    auto locked = pgckpt::exec(conn_.get(), "SELECT pg_try_advisory_lock($1)",
                               {{std::to_string(lock_key_), false, kInt8Oid}});
    if (!locked.ok) return fail(error(locked, "taking the writer lock"));
    if (std::strcmp(PQgetvalue(locked.result.get(), 0, 0), "t") != 0) {
      std::string message = location_ + " is in use by another writer, which holds advisory lock " +
                            std::to_string(lock_key_) + " (" + holder() + ")";
      if (reopening) {
        return fail(Error::checkpoint(
            ErrorKind::kTransient,
            message + " since this process lost its connection; when that holder is this "
                      "process's old session, the server ends it once it notices the "
                      "connection is gone"));
      }
      return fail(Error::checkpoint(ErrorKind::kConfiguration,
                                    message + "; stop that cppcdc first (one writer per "
                                              "checkpoint), or when it is gone, end its session "
                                              "with pg_terminate_backend(pid)")
                      .with_condition(ErrorCondition::kCheckpointInUse));
    }
    locked_ = true;
    return ok();
  }

  PostgresqlCheckpointOptions options_;
  std::string id_;
  std::string qualified_;
  std::string location_;
  std::int64_t lock_key_;
  ConnPtr conn_;
  bool locked_ = false;
};

/// What open() finds out about the schema and the table.
struct Layout {
  bool table_exists = false;
};

/// Checks that the schema and table exist with the privileges a writer needs, or can be
/// created by the first save; `need_delete` adds DELETE (remove()). Configuration errors name
/// the setting and the GRANT to run.
Result<Layout> inspect(Session& session, bool need_delete) {
  const auto& options = session.options();
  auto found = pgckpt::exec(
      session.conn(),
      "SELECT n.oid IS NOT NULL, c.oid IS NOT NULL, "
      "CASE WHEN n.oid IS NULL THEN NULL ELSE has_schema_privilege(n.oid, 'USAGE') END, "
      "CASE WHEN n.oid IS NULL THEN NULL ELSE has_schema_privilege(n.oid, 'CREATE') END, "
      "has_database_privilege(current_database(), 'CREATE'), "
      "CASE WHEN c.oid IS NULL THEN NULL ELSE has_table_privilege(c.oid, 'SELECT') AND "
      "has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE') AND "
      "($3 = 'f' OR has_table_privilege(c.oid, 'DELETE')) END, "
      "(SELECT count(*) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT "
      "a.attisdropped AND a.attname IN ('id', 'record', 'generation', 'position', "
      "'updated_at')), current_user, current_database() "
      "FROM (SELECT 1) AS one LEFT JOIN pg_namespace n ON n.nspname = $1 "
      "LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = $2 "
      "AND c.relkind IN ('r', 'p')",
      {text(options.schema), text(options.table), text(need_delete ? "t" : "f")});
  if (!found.ok) return fail(session.error(found, "inspecting the checkpoint table"));
  const PGresult* r = found.result.get();
  auto flag = [r](int col) { return pgckpt::text_value(r, 0, col).value_or("") == "t"; };
  const std::string user = quote_ident(pgckpt::text_value(r, 0, 7).value_or("?"));
  const std::string database = quote_ident(pgckpt::text_value(r, 0, 8).value_or("?"));
  const std::string schema = quote_ident(options.schema);
  auto refuse = [](const std::string& setting, std::string message) {
    return fail(Error::checkpoint(ErrorKind::kConfiguration, std::move(message))
                    .for_setting(SettingOwner::kCheckpoint, setting));
  };
  const bool schema_exists = flag(0);
  const bool table_exists = flag(1);
  if (table_exists) {
    if (pgckpt::text_value(r, 0, 6).value_or("0") != "5") {
      return refuse("table", session.qualified() +
                                 " exists but is not a cppcdc checkpoint table (columns id, "
                                 "record, generation, position, updated_at); name another table");
    }
    if (!flag(2)) {
      return refuse("schema", "user " + user + " may not use schema " + schema +
                                  "; GRANT USAGE ON SCHEMA " + schema + " TO " + user +
                                  ", or set schema to one it may use");
    }
    if (!flag(5)) {
      return refuse("table", "user " + user + " lacks a privilege on " + session.qualified() +
                                 "; GRANT SELECT, INSERT, UPDATE" +
                                 (need_delete ? ", DELETE" : "") + " ON " + session.qualified() +
                                 " TO " + user);
    }
    return Layout{true};
  }
  if (need_delete) return Layout{false};  // nothing to delete, and nothing will be created
  if (schema_exists && (!flag(2) || !flag(3))) {
    return refuse("schema", "the table " + session.qualified() + " does not exist and user " +
                                user + " may not create it in schema " + schema +
                                "; GRANT USAGE, CREATE ON SCHEMA " + schema + " TO " + user +
                                ", or create the table in advance (docs/state-backends.md)");
  }
  if (!schema_exists && !flag(4)) {
    return refuse("schema", "the schema " + schema + " does not exist and user " + user +
                                " may not create it; run CREATE SCHEMA " + schema +
                                " AUTHORIZATION " + user +
                                " as its owner, or GRANT CREATE ON "
                                "DATABASE " +
                                database + " TO " + user);
  }
  return Layout{false};
}

class PostgresqlCheckpoint final : public Checkpoint {
 public:
  PostgresqlCheckpoint(const PostgresqlCheckpointOptions& options, const std::string& id)
      : session_(options, id) {}

  /// Opens the session and checks the layout (see the header: nothing is created).
  Status start() {
    CPPCDC_TRY(session_.open(/*reopening=*/false));
    auto layout = inspect(session_, /*need_delete=*/false);
    if (!layout) return fail(layout.error());
    table_exists_ = layout->table_exists;
    return ok();
  }

  std::string name() const override { return "postgresql"; }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return load_locked();
  }

  Result<std::optional<CheckpointRecord>> current_record() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (cache_valid_) return cached_;
    return load_locked();
  }

  Status do_save(const CheckpointRecord& record) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::string bytes = FileCheckpoint::encode(record);
    // Never store what load() would refuse (a string that is not valid UTF-8, say).
    const auto read_back = FileCheckpoint::decode_stored(bytes, session_.location(), "");
    if (!read_back || *read_back != record) {
      return fail(Error::checkpoint(
          ErrorKind::kInvalidData,
          "the checkpoint of source '" + record.source_id +
              "' does not read back after encoding (are all its strings valid UTF-8?); the "
              "previous record is kept"));
    }
    if (!cache_valid_) {
      auto loaded = load_locked();
      if (!loaded) return fail(std::move(loaded).error());
    }
    const std::int64_t expected = generation_;
    cache_valid_ = false;  // until the outcome is known
    auto written = write_locked(bytes, record.offset, expected);
    if (!written && session_.usable()) return fail(std::move(written).error());
    if (!written) {
      // The connection went during the save: reopen it, and let the row say whether the
      // COMMIT got through.
      const Error lost = std::move(written).error();
      session_.release();
      if (auto reopened = session_.open(/*reopening=*/true); !reopened) {
        return fail(std::move(reopened).error().context(lost.report()));
      }
      auto stored = session_.read_row();
      if (!stored) return fail(std::move(stored).error());
      if (*stored) {
        auto decoded = FileCheckpoint::decode_stored((*stored)->bytes, session_.location(), "");
        if (decoded && *decoded == record) {
          remember(record, (*stored)->generation);
          return ok();
        }
      }
      const std::int64_t found = *stored ? (*stored)->generation : 0;
      if (found != expected) return fail(changed(expected, found));
      written = write_locked(bytes, record.offset, expected);
      if (!written) return fail(std::move(written).error());
    }
    remember(record, *written);
    return ok();
  }

 private:
  /// Reopens a lost connection (taking the lock again). The cache is kept: the next save's
  /// generation check compares with what this writer last saw.
  Status ensure_connected_locked() {
    if (session_.usable()) return ok();
    session_.release();
    return session_.open(/*reopening=*/true);
  }

  Result<std::optional<CheckpointRecord>> load_locked() {
    cache_valid_ = false;
    CPPCDC_TRY(ensure_connected_locked());
    auto stored = session_.read_row();
    if (!stored && !session_.usable()) {
      // Lost on the way: one more try on a new connection.
      CPPCDC_TRY(ensure_connected_locked());
      stored = session_.read_row();
    }
    if (!stored) return fail(std::move(stored).error());
    if (!*stored) {
      remember(std::nullopt, 0);
      return std::optional<CheckpointRecord>();
    }
    auto record =
        FileCheckpoint::decode_stored((*stored)->bytes, session_.location(), session_.remedy());
    if (!record) return fail(std::move(record).error());
    remember(*record, (*stored)->generation);
    table_exists_ = true;
    return std::optional<CheckpointRecord>(std::move(*record));
  }

  void remember(std::optional<CheckpointRecord> record, std::int64_t generation) {
    cached_ = std::move(record);
    generation_ = generation;
    cache_valid_ = true;
  }

  Error changed(std::int64_t expected, std::int64_t found) const {
    return Error::checkpoint(
        ErrorKind::kTerminal,
        session_.location() + " was changed by another writer (generation " +
            std::to_string(found) + ", this writer last saw " + std::to_string(expected) +
            "): refusing to overwrite it; two cppcdc processes wrote this checkpoint (this one "
            "had lost its lock); stop one of them and restart the other");
  }

  /// Creates the schema and the table when missing. CREATE ... IF NOT EXISTS can still fail
  /// when another process creates the same object at the same moment: tried twice.
  Status create_table_locked() {
    const std::string schema = quote_ident(session_.options().schema);
    std::string create;
    // A schema that exists is not created again: CREATE SCHEMA IF NOT EXISTS needs the
    // CREATE privilege on the database even then.
    auto exists = pgckpt::exec(session_.conn(), "SELECT 1 FROM pg_namespace WHERE nspname = $1",
                               {text(session_.options().schema)});
    if (!exists.ok) return fail(session_.error(exists, "looking up the checkpoint schema"));
    if (PQntuples(exists.result.get()) == 0)
      create = "CREATE SCHEMA IF NOT EXISTS " + schema + "; ";
    create += "CREATE TABLE IF NOT EXISTS " + session_.qualified() +
              " (id text PRIMARY KEY, record bytea NOT NULL, generation bigint NOT NULL, "
              "position text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())";
    for (int attempt = 0;; ++attempt) {
      auto created = pgckpt::exec(session_.conn(), create);
      if (created.ok) break;
      const std::string state = pgckpt::sqlstate(created.result.get());
      const bool race = state == "23505" || state == "42P06" || state == "42P07";
      if (!race || attempt > 0) {
        return fail(pgckpt::sql_error(
            created.result.get(), session_.conn(), "creating " + session_.qualified(), "schema",
            "GRANT CREATE ON SCHEMA " + schema +
                " (or CREATE ON DATABASE, when the schema "
                "does not exist) to the user of dsn, or create the table in advance"));
      }
    }
    table_exists_ = true;
    return ok();
  }

  /// One transaction: the row written when its generation is still `expected` (0: no row),
  /// committed. Returns the new generation.
  Result<std::int64_t> write_locked(const std::string& bytes, const std::string& position,
                                    std::int64_t expected) {
    CPPCDC_TRY(ensure_connected_locked());
    if (!table_exists_) CPPCDC_TRY(create_table_locked());
    PGconn* conn = session_.conn();
    auto begun = pgckpt::exec(conn, "BEGIN");
    if (!begun.ok) return fail(session_.error(begun, "saving the checkpoint (BEGIN)"));
    std::vector<Param> params = {text(session_.id()), {bytes, true, kByteaOid}, text(position)};
    std::string sql;
    if (expected == 0) {
      sql = "INSERT INTO " + session_.qualified() +
            " (id, record, generation, position, updated_at) VALUES ($1, $2, 1, $3, now()) "
            "ON CONFLICT (id) DO NOTHING RETURNING generation";
    } else {
      sql = "UPDATE " + session_.qualified() +
            " SET record = $2, generation = generation + 1, position = $3, updated_at = now() "
            "WHERE id = $1 AND generation = $4 RETURNING generation";
      params.push_back({std::to_string(expected), false, kInt8Oid});
    }
    auto written = pgckpt::exec(conn, sql, params);
    auto roll_back = [&] {
      if (session_.usable()) (void)pgckpt::exec(conn, "ROLLBACK");
    };
    if (!written.ok) {
      Error error = session_.error(written, "saving the checkpoint");
      roll_back();
      return fail(std::move(error));
    }
    if (PQntuples(written.result.get()) != 1) {
      roll_back();
      auto stored = session_.read_row();
      return fail(changed(expected, stored && *stored ? (*stored)->generation : 0));
    }
    const auto generation =
        detail::parse_decimal(pgckpt::text_value(written.result.get(), 0, 0).value_or(""));
    CPPCDC_FAULT_POINT("checkpoint.postgresql.before_commit");
    auto committed = pgckpt::exec(conn, "COMMIT");
    if (!committed.ok) return fail(session_.error(committed, "saving the checkpoint (COMMIT)"));
    if (std::strcmp(PQcmdStatus(committed.result.get()), "COMMIT") != 0) {
      return fail(Error::checkpoint(ErrorKind::kTerminal,
                                    "saving the checkpoint in " + session_.location() +
                                        ": the server rolled the transaction back"));
    }
    CPPCDC_FAULT_POINT("checkpoint.postgresql.after_commit");
    if (!generation) {
      return fail(Error::checkpoint(
          ErrorKind::kInternal, "the server returned no generation for " + session_.location()));
    }
    return static_cast<std::int64_t>(*generation);
  }

  Session session_;
  std::mutex mutex_;
  bool table_exists_ = false;
  // What the row holds as far as this writer knows (the last record saved or loaded) and its
  // generation (0: no row). Guarded by mutex_; meaningful while cache_valid_.
  bool cache_valid_ = false;
  std::optional<CheckpointRecord> cached_;
  std::int64_t generation_ = 0;
};

}  // namespace

std::string postgresql_checkpoint_location(const PostgresqlCheckpointOptions& options,
                                           const std::string& checkpoint_id) {
  return "checkpoint row " + quote_literal(checkpoint_id) + " of table " + qualified_name(options);
}

Result<std::unique_ptr<Checkpoint>> open_postgresql_checkpoint(
    const PostgresqlCheckpointOptions& options, const std::string& checkpoint_id) {
  CPPCDC_TRY(pgckpt::check_dsn(options.dsn));
  auto checkpoint = std::make_unique<PostgresqlCheckpoint>(options, checkpoint_id);
  CPPCDC_TRY(checkpoint->start());
  return std::unique_ptr<Checkpoint>(std::move(checkpoint));
}

Status remove_postgresql_checkpoint(const PostgresqlCheckpointOptions& options,
                                    const std::string& checkpoint_id) {
  CPPCDC_TRY(pgckpt::check_dsn(options.dsn));
  Session session(options, checkpoint_id);
  CPPCDC_TRY(session.open(/*reopening=*/false));
  auto layout = inspect(session, /*need_delete=*/true);
  if (!layout) return fail(layout.error());
  if (!layout->table_exists) return ok();
  auto deleted =
      pgckpt::exec(session.conn(), "DELETE FROM " + session.qualified() + " WHERE id = $1",
                   {text(checkpoint_id)});
  if (!deleted.ok) return fail(session.error(deleted, "deleting the checkpoint"));
  return ok();
}

}  // namespace cppcdc
