// The source conformance suite for the MariaDB source, against the test server
// (CPPCDC_TEST_MARIADB_PORT; the suite skips without it). Resume offsets are binlog
// coordinates (gtid_mode off), so that the checkpoint guard's order applies to them. A second
// instantiation runs the suite with an incremental snapshot of another table going on.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/source_conformance.hpp"
#include "cppcdc/mysql.hpp"
#include "integration/mariadb_util.hpp"

namespace cppcdc::conformance {
namespace {

/// Table conf_t (id, v) takes the produced changes. With `incremental`, table conf_snap holds
/// kSnapshotRows rows that an incremental snapshot reads in small chunks while the stream runs
/// (its watermarks go to table conf_signal); its rows never change, so each is read once.
class MariaDbHarness {
 public:
  static constexpr int kSnapshotRows = 30;
  static std::optional<std::string> skip_reason() {
    if (it::maria::port()) return std::nullopt;
    return std::string("CPPCDC_TEST_MARIADB_PORT is not set (scripts/mariadb.sh start DIR PORT)");
  }

  MariaDbHarness(const std::string& variant, bool incremental)
      : db_(it::maria::database_for_test(variant)), incremental_(incremental) {
    mysql::register_positions();
    session_.exec("DROP DATABASE IF EXISTS " + db_);
    session_.exec("CREATE DATABASE " + db_);
    session_.exec("CREATE TABLE " + db_ + ".conf_t (id int primary key, v text not null)");
    if (incremental_) {
      session_.exec("CREATE TABLE " + db_ + ".conf_snap (id int primary key, v text not null)");
      session_.exec("INSERT INTO " + db_ + ".conf_snap SELECT seq, CONCAT('s', seq) FROM " + db_ +
                    ".seq_1_to_" + std::to_string(kSnapshotRows));
    }
  }
  ~MariaDbHarness() { session_.exec("DROP DATABASE IF EXISTS " + db_); }
  MariaDbHarness(const MariaDbHarness&) = delete;
  MariaDbHarness& operator=(const MariaDbHarness&) = delete;

  Result<std::unique_ptr<Source>> make_source() {
    auto config = it::maria::config_for({db_ + ".conf_t"}, db_);
    config.gtid_mode = mysql::GtidMode::kOff;
    if (incremental_) {
      config.tables.push_back(db_ + ".conf_snap");
      config.snapshot_mode = SnapshotMode::kIncremental;
      config.snapshot_tables = {db_ + ".conf_snap"};
      config.snapshot_chunk_size = 4;
      config.snapshot_signal_table = db_ + ".conf_signal";
    }
    return mysql::make_mysql_source(std::move(config));
  }

  std::vector<std::vector<std::string>> produce(int transactions, int changes_per_tx) {
    std::vector<std::vector<std::string>> out;
    for (int t = 0; t < transactions; ++t) {
      std::vector<std::string> keys;
      session_.exec("BEGIN");
      const int first_id = next_id_;
      for (int c = 0; c < changes_per_tx; ++c) {
        const std::string v = "c" + std::to_string(next_change_++);
        if (c % 3 == 2) {
          session_.exec("UPDATE " + db_ + ".conf_t SET v = '" + v +
                        "' WHERE id = " + std::to_string(first_id));
          keys.push_back("update:" + v);
        } else {
          session_.exec("INSERT INTO " + db_ + ".conf_t VALUES (" + std::to_string(next_id_++) +
                        ", '" + v + "')");
          keys.push_back("insert:" + v);
        }
      }
      session_.exec("COMMIT");
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

  // The server keeps binlogs by its own expiry: there is nothing a client releases.
  std::optional<std::string> released_position() { return std::nullopt; }

  std::string regressed_offset(const std::string& offset) {
    // The start of the same binlog file (offsets here are "file:position", past 4).
    return offset.substr(0, offset.rfind(':')) + ":4";
  }

 private:
  std::string db_;
  bool incremental_;
  it::maria::Session session_;
  int next_id_ = 1000;
  int next_change_ = 1;
};

class MariaDbSourceHarness : public MariaDbHarness {
 public:
  static constexpr const char* kName = "mariadb";
  MariaDbSourceHarness() : MariaDbHarness("conf", false) {}
};

class MariaDbIncrementalSourceHarness : public MariaDbHarness {
 public:
  static constexpr const char* kName = "mariadb with an incremental snapshot";
  MariaDbIncrementalSourceHarness() : MariaDbHarness("confinc", true) {}
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(MariaDbSource, SourceConformance, MariaDbSourceHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(MariaDbIncrementalSource, SourceConformance,
                               MariaDbIncrementalSourceHarness);

}  // namespace cppcdc::conformance
