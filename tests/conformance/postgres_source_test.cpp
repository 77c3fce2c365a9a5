// The source conformance suite for the PostgreSQL source, against the test server
// (CPPCDC_TEST_PG_DSN): as make_postgres_source builds it for a pipeline without a snapshot
// (its incremental snapshot driver idle), and with an incremental snapshot of a second table
// running alongside the stream.

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/source_conformance.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/postgres/lsn.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc::conformance {
namespace {

/// A database (and slot) name unique to the running test and variant: ctest runs tests in
/// parallel, and slots are cluster-wide.
std::string database_for_test(const std::string& variant) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "conf_" + variant + "_" + (info != nullptr ? info->name() : "x");
  for (char& c : name) {
    const auto u = static_cast<unsigned char>(c);
    c = std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '_';
  }
  if (name.size() > 50) {
    name = name.substr(0, 40) + "_" + std::to_string(std::hash<std::string>{}(name) % 100000);
  }
  return name;
}

/// Table conf_t (id, v) takes the produced changes: inserts, and in longer transactions an
/// update of the transaction's first row; every change writes a new v ("c<n>"), its key. With
/// `incremental`, table conf_snap holds kSnapshotRows rows before the slot exists and an
/// incremental snapshot reads it in small chunks while the stream runs; its rows never change,
/// so each is read exactly once.
class PostgresHarness {
 public:
  static constexpr int kSnapshotRows = 30;

  PostgresHarness(const std::string& variant, bool incremental)
      : db_(database_for_test(variant)), incremental_(incremental) {
    pg::register_positions();
    it::fresh_database(db_);
    session_ = std::make_unique<it::PgSession>(it::dsn_for(db_));
    session_->query("create table conf_t (id int primary key, v text not null)");
    if (incremental_) {
      session_->query(
          "create table conf_snap (id int primary key, v text not null); "
          "insert into conf_snap select i, 's' || i from generate_series(1, " +
          std::to_string(kSnapshotRows) + ") i");
    }
  }
  ~PostgresHarness() {
    session_.reset();
    it::drop_slots(db_);
  }
  PostgresHarness(const PostgresHarness&) = delete;
  PostgresHarness& operator=(const PostgresHarness&) = delete;

  Result<std::unique_ptr<Source>> make_source() {
    pg::PostgresSourceConfig config;
    config.dsn = it::dsn_for(db_);
    config.slot_name = db_;
    config.publication_name = "conf_pub";
    config.tables = {"public.conf_t"};
    config.snapshot_mode = pg::SnapshotMode::kNever;
    if (incremental_) {
      config.tables.push_back("public.conf_snap");
      config.snapshot_mode = pg::SnapshotMode::kIncremental;
      config.snapshot_tables = {"public.conf_snap"};
      config.snapshot_chunk_size = 4;
    }
    return pg::make_postgres_source(std::move(config));
  }

  std::vector<std::vector<std::string>> produce(int transactions, int changes_per_tx) {
    std::vector<std::vector<std::string>> out;
    for (int t = 0; t < transactions; ++t) {
      std::vector<std::string> keys;
      std::string sql = "begin;";
      const int first_id = next_id_;
      for (int c = 0; c < changes_per_tx; ++c) {
        const std::string v = "c" + std::to_string(next_change_++);
        if (c % 3 == 2) {
          sql += " update conf_t set v = '" + v + "' where id = " + std::to_string(first_id) + ";";
          keys.push_back("update:" + v);
        } else {
          sql += " insert into conf_t values (" + std::to_string(next_id_++) + ", '" + v + "');";
          keys.push_back("insert:" + v);
        }
      }
      sql += " commit;";
      session_->query(sql);
      out.push_back(std::move(keys));
    }
    return out;
  }

  std::string key_of(const Event& event) {
    const Row* row = event.after ? &*event.after : nullptr;
    const ColumnValue* v = row != nullptr ? find_column(*row, "v") : nullptr;
    return std::string(to_string(event.op)) + ":" +
           (v != nullptr && v->text ? *v->text : "<" + event.table + " without v>");
  }

  std::vector<std::string> initial_keys() {
    std::vector<std::string> keys;
    if (!incremental_) return keys;
    for (int i = 1; i <= kSnapshotRows; ++i) keys.push_back("read:s" + std::to_string(i));
    return keys;
  }

  std::optional<std::string> released_position() {
    const auto rows = session_->query(
        "select confirmed_flush_lsn::text from pg_replication_slots where slot_name = $1", {db_});
    if (rows.empty() || rows[0].empty() || !rows[0][0]) return std::nullopt;
    return *rows[0][0];
  }

  std::string regressed_offset(const std::string& /*offset*/) { return "0/0"; }

 private:
  std::string db_;
  bool incremental_;
  std::unique_ptr<it::PgSession> session_;
  int next_id_ = 1000;
  int next_change_ = 1;
};

class PostgresSourceHarness : public PostgresHarness {
 public:
  static constexpr const char* kName = "postgres";
  PostgresSourceHarness() : PostgresHarness("pg", false) {}
};

class PostgresIncrementalSourceHarness : public PostgresHarness {
 public:
  static constexpr const char* kName = "postgres with an incremental snapshot";
  PostgresIncrementalSourceHarness() : PostgresHarness("pginc", true) {}
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(PostgresSource, SourceConformance, PostgresSourceHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(PostgresIncrementalSource, SourceConformance,
                               PostgresIncrementalSourceHarness);

}  // namespace cppcdc::conformance
