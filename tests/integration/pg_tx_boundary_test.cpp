// Transaction metadata and the transaction boundary policy against a real PostgreSQL: every
// captured change carries its transaction's xid, size and its own place in it, and under
// PreserveTransactions no transaction is spread over two batches (RuntimeOptions::
// transaction_boundary), except one too large for max_buffer_size, which is split with a
// warning naming it.

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"
#include "log_capture.hpp"
#include "pg_util.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;
using namespace std::chrono_literals;

namespace {

using cppcdc::it::LogCapture;

constexpr std::size_t kMaxBuffer = 5;

class PgTxBoundary : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("txb");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    s.query("create table t (id int primary key, v text)");
  }
  void TearDown() override { it::drop_slots(db_); }

  pg::PostgresSourceConfig source() const {
    pg::PostgresSourceConfig cfg;
    cfg.slot_name = db_;
    cfg.publication_name = "txb_pub";
    cfg.tables = {"public.t"};
    cfg.snapshot_mode = pg::SnapshotMode::kNever;
    return cfg;
  }

  // Runs `sizes.size()` transactions, the i-th inserting sizes[i] rows in one statement, and
  // one more mixing an insert, an update and a delete; waits until the walsender has sent all
  // of it, so that the first polls find several transactions ready. Returns the event count.
  std::size_t write(PgSession& s, const std::vector<int>& sizes) {
    int next = 1;
    std::size_t events = 0;
    for (int n : sizes) {
      s.query("insert into t select g, 'v' || g from generate_series(" + std::to_string(next) +
              ", " + std::to_string(next + n - 1) + ") g");
      next += n;
      events += static_cast<std::size_t>(n);
    }
    s.query(
        "begin; insert into t values (1000, 'a'); update t set v = 'b' where id = 1; "
        "delete from t where id = 2; commit");
    events += 3;
    const std::string end = s.scalar("select pg_current_wal_lsn()");
    it::wait_until(
        [&] {
          return s.scalar(
                     "select count(*) from pg_stat_replication r join pg_replication_slots "
                     "p on p.active_pid = r.pid where p.slot_name = '" +
                     db_ + "' and r.sent_lsn >= '" + end + "'") == "1";
        },
        20s, 20ms);
    return events;
  }

  std::string db_;
};

}  // namespace

TEST_F(PgTxBoundary, EveryChangeCarriesItsTransactionsXidSizeAndIndex) {
  it::ReaderOptions options;
  options.max_buffer_size = kMaxBuffer;
  it::Reader reader(db_, source(), options);
  ASSERT_TRUE(reader.runtime->start());
  PgSession s(it::dsn_for(db_));
  const std::size_t expected = write(s, {3, 1, 4});
  auto events = reader.take(expected);
  ASSERT_EQ(events.size(), expected);
  std::map<std::uint64_t, std::vector<std::uint64_t>> indexes;  // xid -> event_index in order
  std::map<std::uint64_t, std::uint64_t> totals;
  for (const auto& e : events) {
    ASSERT_TRUE(e.transaction) << e.to_json();
    EXPECT_NE(e.transaction->tx_id, 0u);
    indexes[e.transaction->tx_id].push_back(e.transaction->event_index);
    totals[e.transaction->tx_id] = e.transaction->total_events;
  }
  std::vector<std::uint64_t> sizes;
  for (const auto& [xid, seen] : indexes) {
    sizes.push_back(totals[xid]);
    ASSERT_EQ(seen.size(), totals[xid]) << "xid " << xid;
    for (std::uint64_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i) << "xid " << xid;
  }
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{1, 3, 3, 4}));
}

TEST_F(PgTxBoundary, PreserveTransactionsNeverSpreadsATransactionOverTwoBatches) {
  LogCapture log;
  std::string logged;
  std::vector<std::vector<Event>> batches;
  std::size_t expected = 0;
  {
    it::ReaderOptions options;
    options.max_buffer_size = kMaxBuffer;
    options.transaction_boundary = TransactionBoundaryPolicy::kPreserveTransactions;
    it::Reader reader(db_, source(), options);
    ASSERT_TRUE(reader.runtime->start());
    PgSession s(it::dsn_for(db_));
    // 7 rows do not fit in a batch of 5: that one is delivered split.
    expected = write(s, {3, 4, 2, 1, 5, 3, 7, 2});
    std::size_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (got < expected && std::chrono::steady_clock::now() < deadline) {
      auto batch = reader.runtime->poll_event_batch();
      ASSERT_TRUE(batch) << batch.error().report();
      if (batch->empty()) continue;
      got += batch->size();
      batches.push_back(batch->events());
      ASSERT_TRUE(reader.runtime->commit_ack(batch->ack_mode()));
    }
    ASSERT_EQ(got, expected);
    ASSERT_TRUE(reader.runtime->stop());
    logged = log.text();
  }
  std::uint64_t oversized_xid = 0;
  std::size_t batches_with_several = 0;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto& batch = batches[b];
    EXPECT_LE(batch.size(), kMaxBuffer);
    const auto& first = *batch.front().transaction;
    const auto& last = *batch.back().transaction;
    if (last.total_events > kMaxBuffer) {
      oversized_xid = last.tx_id;
      continue;  // the split one: checked below
    }
    EXPECT_TRUE(first.event_index == 0 || first.total_events > kMaxBuffer)
        << "batch " << b << " begins inside transaction " << first.tx_id;
    EXPECT_EQ(last.event_index + 1, last.total_events)
        << "batch " << b << " ends inside transaction " << last.tx_id;
    std::set<std::uint64_t> xids;
    for (const auto& e : batch) xids.insert(e.transaction->tx_id);
    if (xids.size() > 1) ++batches_with_several;
  }
  ASSERT_NE(oversized_xid, 0u) << "the 7-row transaction was not delivered split";
  EXPECT_NE(logged.find("transaction " + std::to_string(oversized_xid) +
                        " has more events than max_buffer_size (5)"),
            std::string::npos)
      << logged;
  // Batches did gather whole transactions (the writes were all sent before the first poll).
  std::cout << "[ info ] " << batches.size() << " batches, " << batches_with_several
            << " with more than one transaction\n";
}
