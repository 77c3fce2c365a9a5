#pragma once
// Helpers for tests against the MariaDB that scripts/test.sh starts (scripts/mariadb.sh):
// CPPCDC_TEST_MARIADB_PORT names its port on 127.0.0.1, where root logs in without a
// password. Without it the tests skip (MARIADB_OR_SKIP).

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cppcdc/mysql.hpp"
#include "cppcdc/source.hpp"
#include "source/mysql/mysql_conn.hpp"
#include "wait_until.hpp"

namespace cppcdc::it::maria {

inline std::optional<std::uint16_t> port() {
  const char* p = std::getenv("CPPCDC_TEST_MARIADB_PORT");
  if (p == nullptr || *p == '\0') return std::nullopt;
  return static_cast<std::uint16_t>(std::stoi(p));
}

#define MARIADB_OR_SKIP()                                                         \
  do {                                                                            \
    if (!::cppcdc::it::maria::port()) {                                           \
      GTEST_SKIP() << "CPPCDC_TEST_MARIADB_PORT is not set: start a server with " \
                      "scripts/mariadb.sh start DIR PORT and export its port";    \
    }                                                                             \
  } while (0)

/// A config for the test server as root, capturing `tables`.
inline mysql::MysqlSourceConfig config_for(std::vector<std::string> tables,
                                           const std::string& source_id) {
  mysql::MysqlSourceConfig c;
  c.flavor = mysql::ServerFlavor::kMariaDb;
  c.host = "127.0.0.1";
  c.port = port().value_or(3306);
  c.user = "root";
  c.tables = std::move(tables);
  c.source_id = source_id;
  c.snapshot_mode = SnapshotMode::kNever;
  c.heartbeat_interval_ms = 200;
  c.receive_timeout_ms = 30'000;
  return c;
}

/// A root SQL session; failures fail the test.
class Session {
 public:
  Session() {
    if (!port()) return;  // the test skips
    auto c = mysql::detail::connect(config_for({"x.y"}, "session"));
    if (!c) {
      ADD_FAILURE() << c.error().report();
      return;
    }
    conn_ = std::move(*c);
  }
  void exec(const std::string& sql) {
    ASSERT_TRUE(conn_);
    auto st = mysql::detail::exec(conn_.get(), sql, sql);
    ASSERT_TRUE(st.has_value()) << st.error().report();
  }
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql) {
    if (!conn_) return {};
    auto r = mysql::detail::query(conn_.get(), sql, sql);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().report());
    return r ? r->rows : decltype(r->rows){};
  }
  std::string value(const std::string& sql) {
    auto r = rows(sql);
    return r.empty() || r[0].empty() || !r[0][0] ? std::string() : *r[0][0];
  }

 private:
  mysql::detail::MysqlPtr conn_;
};

/// A database name unique to the running test (ctest runs tests in parallel).
inline std::string database_for_test(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + (info != nullptr ? info->name() : "x");
  for (char& c : name) {
    const auto u = static_cast<unsigned char>(c);
    c = std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  if (name.size() > 60) name = name.substr(0, 50) + std::to_string(name.size());
  return name;
}

/// Polls `source` until `done(events)` holds or 60 s pass; returns what arrived.
inline std::vector<Event> poll_until(Source& source,
                                     const std::function<bool(const std::vector<Event>&)>& done) {
  std::vector<Event> all;
  cppcdc::test::wait_until(
      [&] {
        std::vector<Event> batch;
        auto st = source.poll(batch, 1000, std::chrono::milliseconds(100));
        EXPECT_TRUE(st.has_value()) << (st ? "" : st.error().report());
        if (!st) return true;
        for (auto& e : batch) all.push_back(std::move(e));
        return done(all);
      },
      std::chrono::seconds(60), std::chrono::milliseconds(1));
  return all;
}

inline std::size_t count_rows(const std::vector<Event>& events) {
  std::size_t n = 0;
  for (const auto& e : events) n += e.op != Operation::kSchemaChange ? 1 : 0;
  return n;
}

/// The text of column `name` in `row`, or "<absent>" / "<null>".
inline std::string text_of(const Row* row, const std::string& name) {
  if (!row) return "<no row>";
  const ColumnValue* v = find_column(*row, name);
  if (!v) return "<absent>";
  return v->text ? *v->text : "<null>";
}

/// The checkpoint a runtime would save after acknowledging `events` up to their last
/// resume boundary.
inline std::optional<CheckpointRecord> checkpoint_after(const std::vector<Event>& events,
                                                        const std::string& type,
                                                        const std::string& id) {
  std::optional<CheckpointRecord> r;
  for (const auto& e : events) {
    if (e.resume_offset.empty()) continue;
    r = CheckpointRecord{};
    r->source_type = type;
    r->source_id = id;
    r->offset = e.resume_offset;
    r->source_state = e.resume_state;
  }
  return r;
}

}  // namespace cppcdc::it::maria
