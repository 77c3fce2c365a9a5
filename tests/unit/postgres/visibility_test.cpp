// The stream's filter of changes a snapshot read in a transaction of its own already holds
// (visibility.hpp): transaction visibility with 64-bit ids, key ranges, when the filter ends,
// and how the assembler applies it and carries it in resume_state. No server.

#include "source/postgres/visibility.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "source/postgres/assembler.hpp"
#include "source/postgres/snapshot.hpp"

namespace cppcdc::pg {
namespace {

constexpr std::uint64_t kEpoch = std::uint64_t{1} << 32;

XidSnapshot snap(const std::string& text) {
  auto s = XidSnapshot::parse(text);
  EXPECT_TRUE(s) << text;
  return s.value_or(XidSnapshot{});
}

TEST(XidSnapshot, ParsesWhatTxidCurrentSnapshotPrints) {
  const auto s = snap("100:110:107,103");
  EXPECT_EQ(s.xmin, 100u);
  EXPECT_EQ(s.xmax, 110u);
  EXPECT_EQ(s.xip, (std::vector<std::uint64_t>{103, 107}));
  EXPECT_EQ(s.to_string(), "100:110:103,107");
  EXPECT_EQ(snap("5:5:").xip.size(), 0u);
  EXPECT_FALSE(XidSnapshot::parse("5:5"));
  EXPECT_FALSE(XidSnapshot::parse("9:5:"));
  EXPECT_FALSE(XidSnapshot::parse("1:5:x"));
}

TEST(XidSnapshot, VisibleBelowXminAndBelowXmaxUnlessInProgress) {
  const auto s = snap("100:110:103,107");
  EXPECT_TRUE(s.visible(50));
  EXPECT_TRUE(s.visible(99));
  EXPECT_TRUE(s.visible(100));  // xmin itself is not in progress here: it committed
  EXPECT_TRUE(s.visible(104));
  EXPECT_FALSE(s.visible(103));
  EXPECT_FALSE(s.visible(107));
  EXPECT_FALSE(s.visible(110));
  EXPECT_FALSE(s.visible(111));
}

TEST(XidSnapshot, ThirtyTwoBitIdsExtendAcrossAWrapOfTheEpoch) {
  // xmin just before the wrap into epoch 4, xmax just after it.
  XidSnapshot s;
  s.xmin = 3 * kEpoch + 4294967000u;
  s.xmax = 4 * kEpoch + 100;
  s.xip = {3 * kEpoch + 4294967200u, 4 * kEpoch + 20};  // sorted, as parse() leaves them
  EXPECT_EQ(s.extend(50), 4 * kEpoch + 50);
  EXPECT_EQ(s.extend(4294967100u), 3 * kEpoch + 4294967100u);
  EXPECT_TRUE(s.visible(50));            // after the wrap, below xmax
  EXPECT_FALSE(s.visible(20));           // in progress
  EXPECT_TRUE(s.visible(4294967100u));   // before the wrap, at or past xmin
  EXPECT_FALSE(s.visible(4294967200u));  // in progress, before the wrap
  EXPECT_TRUE(s.visible(4294966000u));   // below xmin, previous epoch
  EXPECT_FALSE(s.visible(100));          // xmax
  EXPECT_FALSE(s.visible(200));          // after xmax
  // Epoch 0: no previous epoch to extend into.
  EXPECT_EQ(snap("3:10:").extend(4294967290u), 4294967290u);
  EXPECT_FALSE(snap("3:10:").visible(4294967290u));
}

ReadRange whole(const std::string& table) { return ReadRange{table, {}, {}, {}, {}}; }
ReadRange from(const std::string& table, const std::string& after) {
  return ReadRange{table, {"id"}, {"integer"}, std::vector<std::string>{after}, {}};
}
Row row(int id) { return Row{ColumnValue{"id", std::to_string(id), false}}; }

TEST(ReadVisibility, AKeylessTableIsFilteredWholeForVisibleTransactionsOnly) {
  ReadVisibility v;
  v.begin_read(snap("100:110:105"), Lsn(1000));
  v.add_range(whole("public.k"));
  const Row r = row(1);
  EXPECT_TRUE(v.already_read(99, "public.k", nullptr, &r, {}));
  EXPECT_TRUE(v.already_read(104, "public.k", &r, nullptr, {}));
  EXPECT_FALSE(v.already_read(105, "public.k", nullptr, &r, {}));
  EXPECT_FALSE(v.already_read(110, "public.k", nullptr, &r, {}));
  EXPECT_FALSE(v.already_read(99, "public.other", nullptr, &r, {}));
  EXPECT_TRUE(v.truncate_already_read(99, "public.k"));
  EXPECT_FALSE(v.truncate_already_read(111, "public.k"));
}

TEST(ReadVisibility, AKeyedRestCoversInsertsAndUpdatesOfKeysAfterTheCursor) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(from("public.t", "50"));
  const Row low = row(50), high = row(51), far = row(9000);
  EXPECT_FALSE(v.already_read(99, "public.t", nullptr, &low, {}));  // read under the old view
  EXPECT_TRUE(v.already_read(99, "public.t", nullptr, &high, {}));
  EXPECT_TRUE(v.already_read(99, "public.t", &high, &high, {}));      // an update keeping its key
  EXPECT_FALSE(v.already_read(120, "public.t", nullptr, &high, {}));  // not visible
  EXPECT_EQ(v.remembered("public.t"), 0u);
  // A partial range never swallows a TRUNCATE; one delivered ends the table's filter.
  EXPECT_FALSE(v.truncate_already_read(99, "public.t"));
  v.truncated("public.t");
  EXPECT_FALSE(v.already_read(99, "public.t", nullptr, &high, {}));
}

TEST(ReadVisibility, DeletesAndKeyChangesAreDeliveredAndTheirKeysFollow) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(from("public.t", "50"));
  const Row low = row(40), a = row(60), b = row(70), c = row(80), d = row(90);
  // A delete in the rest: delivered (a consumer may hold the row from a batch it was given
  // before a crash); the key is remembered, so its insertion again and what follows are too.
  EXPECT_FALSE(v.already_read(99, "public.t", &a, nullptr, {}));
  EXPECT_FALSE(v.already_read(99, "public.t", nullptr, &a, {}));
  EXPECT_FALSE(v.already_read(101, "public.t", &a, &a, {}));
  // A key change inside the rest, and one straddling the cursor: delivered, both keys followed.
  EXPECT_FALSE(v.already_read(99, "public.t", &b, &c, {}));
  EXPECT_FALSE(v.already_read(99, "public.t", &c, &c, {}));
  EXPECT_FALSE(v.already_read(99, "public.t", &low, &d, {}));
  EXPECT_FALSE(v.already_read(99, "public.t", &d, &d, {}));
  // Only keys a read covers are remembered (40 is not).
  EXPECT_EQ(v.remembered("public.t"), 4u);
  const Row other = row(100);
  EXPECT_TRUE(v.already_read(99, "public.t", nullptr, &other, {}));
  // They ride in the state.
  auto back = ReadVisibility::from_state(v.to_state());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->remembered("public.t"), 4u);
  EXPECT_FALSE(back->already_read(99, "public.t", &c, &c, {}));
  // The filter ends when the window passes.
  v.passed(Lsn(1000));
  EXPECT_EQ(v.remembered("public.t"), 0u);
}

TEST(ReadVisibility, TooManyRememberedKeysEndTheTablesFilter) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(from("public.t", "0"));
  v.add_range(whole("public.k"));
  for (std::size_t i = 1; i <= ReadVisibility::kMaxRemembered; ++i) {
    const Row r = row(static_cast<int>(i));
    ASSERT_FALSE(v.already_read(99, "public.t", &r, nullptr, {}));
  }
  const Row next = row(999999);
  EXPECT_TRUE(v.already_read(99, "public.t", nullptr, &next, {}));
  const Row over = row(888888);
  EXPECT_FALSE(v.already_read(99, "public.t", &over, nullptr, {}));  // one too many
  EXPECT_FALSE(v.already_read(99, "public.t", nullptr, &next, {}));  // the table's filter ended
  EXPECT_TRUE(v.already_read(99, "public.k", nullptr, &next, {}));   // not the other table's
}

TEST(ReadVisibility, OtherKeyTypesAreComparedByTheCallbackAndDeliveredWhenItFails) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(ReadRange{"public.s", {"name"}, {"text"}, std::vector<std::string>{"m"}, {}});
  const Row a{ColumnValue{"name", "a", false}}, z{ColumnValue{"name", "z", false}};
  const KeyCompare bytes = [](const auto&, const auto& x, const auto& y) -> Result<int> {
    return x[0] < y[0] ? -1 : x[0] == y[0] ? 0 : 1;
  };
  EXPECT_TRUE(v.already_read(99, "public.s", nullptr, &z, bytes));
  EXPECT_FALSE(v.already_read(99, "public.s", nullptr, &a, bytes));
  const KeyCompare broken = [](const auto&, const auto&, const auto&) -> Result<int> {
    return fail(Error::source(ErrorKind::kTransient, "gone"));
  };
  EXPECT_FALSE(v.already_read(99, "public.s", nullptr, &z, broken));
  EXPECT_FALSE(v.already_read(99, "public.s", nullptr, &z, {}));
}

TEST(ReadVisibility, ALaterReadCutsTheEarlierReadsRangeAtItsCursor) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(from("public.t", "10"));
  v.add_range(whole("public.k"));
  // Restarted again: the second read goes on after 40 in public.t, and public.k from its start.
  v.begin_read(snap("200:210:"), Lsn(2000));
  v.add_range(from("public.t", "40"));
  v.add_range(whole("public.k"));
  ASSERT_EQ(v.reads().size(), 2u);
  ASSERT_EQ(v.reads()[0].ranges.size(), 1u);
  EXPECT_EQ(v.reads()[0].ranges[0].through, std::vector<std::string>{"40"});
  const Row r30 = row(30), r50 = row(50);
  EXPECT_TRUE(v.already_read(99, "public.t", nullptr, &r30, {}));    // first read's range
  EXPECT_TRUE(v.already_read(99, "public.t", nullptr, &r50, {}));    // the second sees it too
  EXPECT_FALSE(v.already_read(150, "public.t", nullptr, &r30, {}));  // only the second sees it
  EXPECT_TRUE(v.already_read(150, "public.t", nullptr, &r50, {}));
  EXPECT_TRUE(v.already_read(150, "public.k", nullptr, &r30, {}));
}

TEST(ReadVisibility, EachReadEndsOnceACommitReachesItsPosition) {
  ReadVisibility v;
  v.begin_read(snap("100:110:"), Lsn(1000));
  v.add_range(whole("public.k"));
  v.begin_read(snap("200:210:"), Lsn(2000));
  v.add_range(whole("public.j"));
  EXPECT_FALSE(v.passed(Lsn(999)));
  EXPECT_EQ(v.reads().size(), 2u);
  EXPECT_TRUE(v.passed(Lsn(1000)));
  EXPECT_EQ(v.reads().size(), 1u);
  EXPECT_TRUE(v.passed(Lsn(5000)));
  EXPECT_TRUE(v.empty());
}

TEST(ReadVisibility, RoundTripsThroughTheSnapshotProgressState) {
  ReadVisibility v;
  v.begin_read(snap("100:110:105"), Lsn(1000));
  v.add_range(from("public.t", "10"));
  v.add_range(whole("public.k"));
  SnapshotProgress p;
  p.id = "s@0/1";
  p.stream_start = Lsn(16);
  p.tables = {"public.t", "public.k"};
  const std::string state = p.to_state(v);
  auto back = ReadVisibility::from_state(state);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->reads(), v.reads());
  auto progress = SnapshotProgress::from_state(state);
  ASSERT_TRUE(progress && *progress);
  EXPECT_EQ((*progress)->tables, p.tables);
  // Once done, only the filter remains, and that is no snapshot in progress.
  p.table_index = 2;
  const std::string after = p.to_state(v);
  EXPECT_FALSE(SnapshotProgress::in_state(after));
  auto none = SnapshotProgress::from_state(after);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_EQ(ReadVisibility::from_state(after)->reads(), v.reads());
  EXPECT_EQ(p.to_state(ReadVisibility()), "");
  // A state written before the filter existed reads as no filter.
  p.table_index = 0;
  EXPECT_TRUE(ReadVisibility::from_state(p.to_state())->empty());
  EXPECT_FALSE(ReadVisibility::from_state("{\"visibility\": [{\"xids\": \"x\"}]}"));
}

// ---- the assembler ------------------------------------------------------------------------

class KeyIsId final : public CatalogLookup {
 public:
  Result<RelationDetails> describe(const RelationMsg& rel) override {
    RelationDetails d;
    for (const auto& c : rel.columns) {
      d.type_names.push_back(c.name == "id" ? "integer" : "text");
      d.not_null.push_back(c.name == "id");
    }
    if (rel.relation_id == 7) d.primary_key = {"id"};
    return d;
  }
};

RelationMsg relation(std::uint32_t id, const std::string& name) {
  RelationMsg r;
  r.relation_id = id;
  r.namespace_name = "public";
  r.relation_name = name;
  r.replica_identity = id == 7 ? 'd' : 'f';
  r.columns = {RelationColumn{true, "id", 23, -1}, RelationColumn{id != 7, "v", 25, -1}};
  return r;
}

TupleData tuple(int id, const std::string& v) {
  TupleData t(2);
  t[0].kind = t[1].kind = TupleColumn::Kind::kText;
  t[0].value = std::to_string(id);
  t[1].value = v;
  return t;
}

class FilteredStream : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    asm_.clock = [] { return std::int64_t{42}; };
    asm_.spill_threshold_bytes = GetParam() ? 1 : (std::size_t{64} << 20);
    ASSERT_TRUE(asm_.feed(relation(7, "t"), Lsn(1), out_));
    ASSERT_TRUE(asm_.feed(relation(8, "k"), Lsn(1), out_));
    asm_.visibility.begin_read(snap("100:110:105"), Lsn(5000));
    asm_.visibility.add_range(from("public.t", "50"));
    asm_.visibility.add_range(whole("public.k"));
  }
  void feed(PgOutputMessage m) {
    auto st = asm_.feed(std::move(m), Lsn(++pos_), out_);
    ASSERT_TRUE(st) << st.error().report();
  }
  // One transaction: inserts of `t_ids` into public.t and `k_ids` into public.k, committed at
  // `commit`.
  void tx(std::uint32_t xid, std::uint64_t commit, const std::vector<int>& t_ids,
          const std::vector<int>& k_ids) {
    feed(BeginMsg{Lsn(commit), 0, xid});
    for (int id : t_ids) feed(InsertMsg{7, tuple(id, "x")});
    for (int id : k_ids) feed(InsertMsg{8, tuple(id, "x")});
    feed(CommitMsg{0, Lsn(commit), Lsn(commit + 8), 0});
  }
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
  static std::vector<std::string> names(const std::vector<Event>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back("public." + e.table + ":" + *(*e.after)[0].text);
    return out;
  }

  KeyIsId catalog_;
  TransactionAssembler asm_{"postgres", [](const std::string&, const std::string&) { return true; },
                            catalog_};
  std::vector<Event> out_;
  std::uint64_t pos_ = 100;
};

TEST_P(FilteredStream, VisibleChangesToRowsTheReadHoldsAreDroppedUntilItsPosition) {
  tx(101, 2000, {10, 60}, {1});  // visible: 60 and the keyless row are in the read
  auto first = released();
  EXPECT_EQ(names(first), (std::vector<std::string>{"public.t:10"}));
  ASSERT_FALSE(first.empty());
  // Still filtering: the filter rides on the transaction's last event.
  EXPECT_EQ(first.back().resume_offset, Lsn(2008).to_string());
  EXPECT_EQ(ReadVisibility::from_state(first.back().resume_state)->reads(),
            asm_.visibility.reads());
  tx(105, 3000, {61}, {2});  // in progress for the snapshot: delivered
  EXPECT_EQ(names(released()), (std::vector<std::string>{"public.t:61", "public.k:2"}));
  tx(104, 4000, {62}, {3});  // visible: dropped whole (nothing released)
  EXPECT_TRUE(released().empty());
  EXPECT_FALSE(asm_.visibility.empty());
  tx(111, 5000, {63}, {4});  // at the position: the filter ends with it
  auto last = released();
  EXPECT_EQ(names(last), (std::vector<std::string>{"public.t:63", "public.k:4"}));
  EXPECT_TRUE(asm_.visibility.empty());
  EXPECT_EQ(last.back().resume_state, "");
}

TEST_P(FilteredStream, UpdatesAndDeletesFollowTheirKeys) {
  feed(BeginMsg{Lsn(2000), 0, 101});
  feed(UpdateMsg{7, std::nullopt, {}, tuple(70, "new")});      // in the rest: dropped
  feed(UpdateMsg{7, 'K', tuple(40, ""), tuple(80, "moved")});  // straddles: delivered
  feed(DeleteMsg{7, 'K', tuple(90, "")});                      // a delete: delivered
  feed(DeleteMsg{7, 'K', tuple(20, "")});                      // before the cursor: delivered
  feed(UpdateMsg{8, 'O', tuple(1, "a"), tuple(1, "b")});       // keyless: dropped
  feed(CommitMsg{0, Lsn(2000), Lsn(2008), 0});
  auto events = released();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].op, Operation::kUpdate);
  EXPECT_EQ(*(*events[0].after)[0].text, "80");
  EXPECT_EQ(events[1].op, Operation::kDelete);
  EXPECT_EQ(*(*events[1].before.row())[0].text, "90");
  EXPECT_EQ(events[2].op, Operation::kDelete);
}

TEST_P(FilteredStream, ATruncateTheReadAlreadyReflectsIsDropped) {
  feed(BeginMsg{Lsn(2000), 0, 101});
  feed(TruncateMsg{0, {8}});
  feed(TruncateMsg{0, {7}});  // partial range: delivered, and the table's filter ends
  feed(InsertMsg{7, tuple(60, "x")});
  feed(CommitMsg{0, Lsn(2000), Lsn(2008), 0});
  auto events = released();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].op, Operation::kTruncate);
  EXPECT_EQ(events[0].table, "t");
  EXPECT_EQ(events[1].op, Operation::kInsert);
}

TEST_P(FilteredStream, AStreamedTransactionIsJudgedByItsTopLevelXid) {
  feed(StreamStartMsg{101, true});
  ASSERT_TRUE(asm_.feed(InsertMsg{8, tuple(5, "x")}, Lsn(++pos_), out_, nullptr, 101));
  feed(StreamStopMsg{});
  feed(StreamStartMsg{105, true});
  ASSERT_TRUE(asm_.feed(InsertMsg{8, tuple(6, "x")}, Lsn(++pos_), out_, nullptr, 105));
  feed(StreamStopMsg{});
  StreamCommitMsg c;
  c.xid = 105;
  c.commit_lsn = Lsn(2000);
  c.end_lsn = Lsn(2008);
  feed(c);
  std::vector<Event> events = released();
  c.xid = 101;
  c.commit_lsn = Lsn(2100);
  c.end_lsn = Lsn(2108);
  feed(c);
  for (auto& e : released()) events.push_back(std::move(e));
  EXPECT_EQ(names(events), (std::vector<std::string>{"public.k:6"}));
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndSpilled, FilteredStream, ::testing::Bool());

}  // namespace
}  // namespace cppcdc::pg
