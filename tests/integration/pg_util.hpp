#pragma once
// Helpers for integration tests against the real PostgreSQL 15 that scripts/test.sh starts
// (CPPCDC_TEST_PG_DSN). Each test works in a database of its own and drops its slots.

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "source/postgres/pg_conn.hpp"

namespace cppcdc::it {

/// The server's DSN (database postgres). Fails the test when the variable is missing: the
/// integration tests never skip silently.
inline std::string admin_dsn() {
  const char* dsn = std::getenv("CPPCDC_TEST_PG_DSN");
  if (dsn == nullptr || *dsn == '\0') {
    ADD_FAILURE() << "CPPCDC_TEST_PG_DSN is not set; run the tests through scripts/test.sh, "
                     "which starts PostgreSQL 15 and sets it";
    return "host=127.0.0.1 port=1 dbname=postgres user=postgres";
  }
  return dsn;
}

/// DSN of database `db` on the test server.
inline std::string dsn_for(const std::string& db) { return admin_dsn() + " dbname=" + db; }

class PgSession {
 public:
  explicit PgSession(const std::string& dsn) {
    auto c = pg::detail::connect(dsn, false);
    if (!c) {
      ADD_FAILURE() << c.error().report();
      return;
    }
    conn_ = std::move(*c);
  }
  PGconn* get() const { return conn_.get(); }

  /// Runs SQL (several statements allowed without parameters); fails the test on error.
  std::vector<std::vector<std::optional<std::string>>> query(
      const std::string& sql, const std::vector<std::optional<std::string>>& params = {}) {
    std::vector<std::vector<std::optional<std::string>>> rows;
    if (!conn_) return rows;
    auto res = pg::detail::exec(conn_.get(), sql, "test SQL: " + sql.substr(0, 200), params);
    if (!res) {
      ADD_FAILURE() << res.error().report();
      return rows;
    }
    for (int r = 0; r < PQntuples(res->get()); ++r) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < PQnfields(res->get()); ++c) row.push_back(pg::detail::get(res->get(), r, c));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  std::string scalar(const std::string& sql) {
    auto rows = query(sql);
    if (rows.empty() || rows[0].empty() || !rows[0][0]) return "";
    return *rows[0][0];
  }
  /// Runs SQL and returns whether it succeeded (no test failure).
  bool try_exec(const std::string& sql) {
    PGresult* r = PQexec(conn_.get(), sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
  }

 private:
  pg::detail::ConnPtr conn_;
};

/// Polls `cond` every 50 ms until it holds or `seconds` pass; returns its last value.
inline bool wait_for(const std::function<bool()>& cond, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}

/// The last 3,000 bytes of a log file, for failure messages.
inline std::string log_tail(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
}

/// SQL counting the walsenders streaming from `slot` (0 or 1). A slot's active_pid alone is
/// not enough: while a slot is being created, the creating backend or walsender holds it (a
/// walsender in state startup), and after CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export') the
/// slot is free again until the snapshot is read and START_REPLICATION runs.
inline std::string streaming_sql(const std::string& slot) {
  return "select count(*) from pg_replication_slots s join pg_stat_replication r on r.pid = "
         "s.active_pid where s.slot_name = '" + slot + "' and r.state in ('catchup', "
         "'streaming')";
}

/// A database name unique to the running test (ctest runs tests in parallel).
inline std::string test_database(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + (info ? info->name() : "x");
  for (auto& c : name) c = static_cast<char>(std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_');
  if (name.size() > 50) name = name.substr(0, 40) + "_" + std::to_string(std::hash<std::string>{}(name) % 100000);
  return name;
}

/// Creates (or recreates) database `db`, dropping slots left in it by an earlier run.
inline void fresh_database(const std::string& db) {
  PgSession admin(admin_dsn());
  for (int i = 0; i < 50; ++i) {
    auto rows = admin.query(
        "select slot_name, active_pid from pg_replication_slots where database = $1", {db});
    bool busy = false;
    for (auto& r : rows) {
      if (r[1]) {
        admin.try_exec("select pg_terminate_backend(" + *r[1] + ")");
        busy = true;
      } else {
        admin.try_exec("select pg_drop_replication_slot('" + *r[0] + "')");
      }
    }
    if (!busy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  admin.query("drop database if exists " + db + " with (force)");
  admin.query("create database " + db);
}

/// Drops the slots of database `db` (terminating their walsenders).
inline void drop_slots(const std::string& db) {
  PgSession admin(admin_dsn());
  for (int i = 0; i < 50; ++i) {
    auto rows = admin.query(
        "select slot_name, active_pid from pg_replication_slots where database = $1", {db});
    if (rows.empty()) return;
    for (auto& r : rows) {
      if (r[1]) {
        admin.try_exec("select pg_terminate_backend(" + *r[1] + ")");
      } else {
        admin.try_exec("select pg_drop_replication_slot('" + *r[0] + "')");
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace cppcdc::it
