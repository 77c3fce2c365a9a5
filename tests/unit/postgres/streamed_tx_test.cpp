// TransactionAssembler on streamed transactions (pgoutput protocol v2): blocks of several
// transactions interleaved, subtransaction aborts in memory and in a spill file, whole
// aborts, and messages out of place. Driven by decoded messages, no server.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "source/postgres/assembler.hpp"

namespace cppcdc::pg {
namespace {

class KeyIsId final : public CatalogLookup {
 public:
  Result<RelationDetails> describe(const RelationMsg& rel) override {
    RelationDetails d;
    for (const auto& c : rel.columns) {
      d.type_names.push_back(c.name == "id" ? "integer" : "text");
      d.not_null.push_back(c.name == "id");
    }
    d.primary_key = {"id"};
    return d;
  }
};

RelationMsg relation() {
  RelationMsg r;
  r.relation_id = 7;
  r.namespace_name = "public";
  r.relation_name = "t";
  r.columns = {RelationColumn{true, "id", 23, -1}, RelationColumn{false, "v", 25, -1}};
  return r;
}

InsertMsg insert(int id) {
  InsertMsg m;
  m.relation_id = 7;
  TupleColumn a;
  a.kind = TupleColumn::Kind::kText;
  a.value = std::to_string(id);
  TupleColumn b;
  b.kind = TupleColumn::Kind::kText;
  b.value = std::string(200, 'x');  // about 1 KB per event: a few make a spill
  m.new_tuple = {a, b};
  return m;
}

StreamStartMsg start(std::uint32_t xid, bool first) { return StreamStartMsg{xid, first}; }
StreamCommitMsg commit(std::uint32_t xid, std::uint64_t end) {
  StreamCommitMsg m;
  m.xid = xid;
  m.commit_lsn = Lsn(end - 8);
  m.end_lsn = Lsn(end);
  m.commit_time = 1'000'000;  // 2000-01-01 00:00:01 UTC
  return m;
}

std::vector<int> ids(const std::vector<Event>& events) {
  std::vector<int> out;
  for (const auto& e : events) out.push_back(std::stoi(*(*e.after)[0].text));
  return out;
}

class StreamedTx : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    asm_.clock = [] { return std::int64_t{42}; };
    // The parameter: whether the transactions spill to a file (tiny threshold) or stay in
    // memory; every outcome must be the same.
    asm_.spill_threshold_bytes = GetParam() ? 1 : (std::size_t{64} << 20);
    ASSERT_TRUE(asm_.feed(relation(), Lsn(1), out_));
  }
  // Feeds `m` as the decoder would hand it over; `xid`: the change's own xid in a block.
  void feed(PgOutputMessage m, std::uint32_t xid = 0) {
    auto st = asm_.feed(std::move(m), Lsn(++pos_), out_, nullptr, xid);
    ASSERT_TRUE(st) << st.error().report();
  }
  // Everything released so far, spilled transactions read back.
  std::vector<Event> released() {
    while (asm_.spilled_ready()) {
      auto st = asm_.drain_spilled(out_, 3);
      if (!st) {
        ADD_FAILURE() << st.error().report();
        break;
      }
    }
    return std::move(out_);
  }

  KeyIsId catalog_;
  TransactionAssembler asm_{"postgres", [](const std::string&, const std::string&) { return true; },
                            catalog_};
  std::vector<Event> out_;
  std::uint64_t pos_ = 100;
};

TEST_P(StreamedTx, InterleavedBlocksAreReleasedAtTheirCommitWithAbortedSubtransactionsDropped) {
  feed(start(10, true));
  feed(insert(1), 10);
  feed(insert(2), 11);  // subtransaction 11 of 10
  feed(insert(3), 11);
  feed(StreamStopMsg{});
  EXPECT_FALSE(asm_.in_transaction());
  feed(start(20, true));
  feed(insert(100), 20);
  feed(StreamStopMsg{});
  feed(start(10, false));
  feed(insert(4), 12);  // subtransaction 12, later aborted together with its child 13
  feed(insert(5), 13);
  feed(StreamStopMsg{});
  feed(StreamAbortMsg{10, 12});
  feed(start(10, false));
  feed(insert(6), 10);
  feed(StreamStopMsg{});
  EXPECT_EQ(asm_.open_streamed(), 2u);
  EXPECT_TRUE(released().empty());  // nothing before a commit

  feed(StreamAbortMsg{20, 20});  // all of 20
  feed(commit(10, 0x5000));
  auto events = released();
  ASSERT_EQ(ids(events), (std::vector<int>{1, 2, 3, 6}));
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_TRUE(events[i].transaction);
    EXPECT_EQ(events[i].transaction->tx_id, 10u);
    EXPECT_EQ(events[i].transaction->total_events, 4u);
    EXPECT_EQ(events[i].transaction->event_index, i);
    EXPECT_EQ(events[i].source.timestamp, 946'684'801'000) << "the commit time, learnt last";
    EXPECT_EQ(events[i].log_position, to_log_position(Lsn(0x5000u - 8)));
    EXPECT_EQ(events[i].resume_offset, i + 1 == events.size() ? "0/5000" : "");
  }
  EXPECT_EQ(asm_.open_streamed(), 0u);
  EXPECT_EQ(asm_.last_end_lsn(), Lsn(0x5000));
}

TEST_P(StreamedTx, AnAbortedSubtransactionThatNeverChangedAnythingDropsNothing) {
  feed(start(10, true));
  feed(insert(1), 10);
  feed(StreamStopMsg{});
  feed(StreamAbortMsg{10, 99});
  feed(StreamAbortMsg{77, 77});  // a transaction none of whose changes were kept
  feed(commit(10, 0x6000));
  EXPECT_EQ(ids(released()), (std::vector<int>{1}));
}

TEST_P(StreamedTx, ATransactionSentAgainFromItsFirstBlockReplacesTheOldCopy) {
  feed(start(10, true));
  feed(insert(1), 10);
  feed(StreamStopMsg{});
  asm_.reset_transaction();  // a reconnect: the server sends it again from its start
  ASSERT_TRUE(asm_.feed(relation(), Lsn(1), out_));
  feed(start(10, true));
  feed(insert(1), 10);
  feed(insert(2), 10);
  feed(StreamStopMsg{});
  feed(commit(10, 0x7000));
  EXPECT_EQ(ids(released()), (std::vector<int>{1, 2}));
}

TEST_P(StreamedTx, ARegularTransactionBetweenBlocksIsReleasedOnItsOwn) {
  feed(start(10, true));
  feed(insert(1), 10);
  feed(StreamStopMsg{});
  feed(BeginMsg{Lsn(0x100), 0, 30});
  feed(insert(50));
  feed(CommitMsg{0, Lsn(0x100), Lsn(0x108), 0});
  EXPECT_EQ(ids(released()), (std::vector<int>{50}));
  feed(commit(10, 0x8000));
  EXPECT_EQ(ids(released()), (std::vector<int>{1}));
}

TEST_P(StreamedTx, ASubtransactionMarkedInMemoryIsDroppedAfterTheTransactionSpilled) {
  asm_.spill_threshold_bytes = 2500;  // two or three of these events
  feed(start(10, true));
  feed(insert(1), 10);
  feed(insert(2), 11);  // marked while the transaction is still in memory
  for (int id = 3; id <= 8; ++id) feed(insert(id), 11);  // spills on the way
  feed(StreamStopMsg{});
  feed(StreamAbortMsg{10, 11});
  feed(start(10, false));
  feed(insert(9), 10);
  feed(StreamStopMsg{});
  feed(commit(10, 0x9000));
  EXPECT_TRUE(asm_.spilled_ready());
  EXPECT_EQ(ids(released()), (std::vector<int>{1, 9}));
}

// The table gains a column: a Relation message with a new shape.
RelationMsg wider() {
  RelationMsg r = relation();
  r.columns.push_back(RelationColumn{false, "w", 25, -1});
  return r;
}
InsertMsg wide_insert(int id) {
  InsertMsg m = insert(id);
  TupleColumn w;
  w.kind = TupleColumn::Kind::kText;
  w.value = "w";
  m.new_tuple.push_back(w);
  return m;
}

TEST_P(StreamedTx, AShapeChangeSeenInAStreamThatAbortsIsAnnouncedWithTheNextTransaction) {
  feed(start(10, true));
  feed(wider(), 10);
  feed(wide_insert(1), 10);
  feed(StreamStopMsg{});
  feed(StreamAbortMsg{10, 10});
  feed(BeginMsg{Lsn(0x100), 0, 30});
  feed(wide_insert(2));
  feed(CommitMsg{0, Lsn(0x100), Lsn(0x108), 0});
  auto events = released();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].op, Operation::kSchemaChange);
  EXPECT_EQ(events[0].transaction->total_events, 2u);
  EXPECT_EQ(events[1].op, Operation::kInsert);
}

TEST_P(StreamedTx, AShapeChangeSeenInAStreamComesFirstInTheNextTransactionReleased) {
  feed(start(10, true));
  feed(wider(), 10);
  feed(wide_insert(1), 10);
  feed(wide_insert(2), 10);
  feed(StreamStopMsg{});
  feed(commit(10, 0xA000));
  auto events = released();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].op, Operation::kSchemaChange);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].transaction->event_index, i);
    EXPECT_EQ(events[i].transaction->total_events, 3u);
    EXPECT_EQ(events[i].source.timestamp, 946'684'801'000);
  }
  EXPECT_EQ(events[2].resume_offset, "0/A000");
  EXPECT_EQ(events[0].resume_offset, "");
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndSpilled, StreamedTx, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Spilled" : "InMemory"; });

class StreamedTxErrors : public StreamedTx {};

TEST_P(StreamedTxErrors, MessagesOutOfPlaceAreInvalidDataNamingTheXid) {
  auto expect_refused = [&](PgOutputMessage m, const std::string& words) {
    auto st = asm_.feed(std::move(m), Lsn(++pos_), out_);
    ASSERT_FALSE(st) << words;
    EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
    EXPECT_NE(st.error().message().find(words), std::string::npos) << st.error().message();
  };
  expect_refused(StreamStopMsg{}, "outside a stream block");
  expect_refused(start(10, false), "first block never arrived");
  expect_refused(commit(11, 0x100), "none of whose blocks arrived");
  feed(start(10, true));
  expect_refused(BeginMsg{Lsn(1), 0, 5}, "inside the stream block of xid 10");
  expect_refused(start(12, true), "inside the stream block of xid 10");
  expect_refused(commit(10, 0x100), "inside the stream block of xid 10");
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndSpilled, StreamedTxErrors, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Spilled" : "InMemory"; });

}  // namespace
}  // namespace cppcdc::pg
