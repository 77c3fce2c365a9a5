// Snapshot rows built in place (TransactionAssembler::append_reads): a delivered event handed
// back for reuse must come out exactly as a freshly made one, whatever it held before, and
// its memory must be reused. The rows are lines of COPY TO text format, as the server sends
// them, so no server is needed.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
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
      d.type_names.push_back(c.name == "id" ? "bigint" : c.name == "doc" ? "jsonb" : "text");
      d.not_null.push_back(c.name == "id");
    }
    d.primary_key = {"id"};
    return d;
  }
};

class AppendReads : public ::testing::Test {
 protected:
  void SetUp() override {
    assembler.clock = [] { return std::int64_t{1700000000000}; };
    RelationMsg rel;
    rel.relation_id = 42;
    rel.namespace_name = "public";
    rel.relation_name = "orders";
    rel.columns = {{true, "id", 20, -1}, {false, "note", 25, -1}, {false, "doc", 3802, -1}};
    ASSERT_TRUE(assembler.observe_relation(rel));
  }

  // An event with every field away from its default, as a delivered event may be.
  static Event dirty() {
    Event e;
    e.op = Operation::kDelete;
    e.before = BeforeFull{Row{ColumnValue{"old", std::string(200, 'o'), false}}, {"gone"}};
    e.after = Row{ColumnValue{"a", std::string(100, 'a'), false},
                  ColumnValue{"b", std::string(100, 'b'), true},
                  ColumnValue{"c", std::nullopt, false}, ColumnValue{"d", "x", false},
                  ColumnValue{"e", "y", false}};
    e.source = SourceMetadata{"other-source-name-that-is-long", "9/99999999", 5};
    e.ts = 6;
    e.schema.reset();
    e.table = "a_table_with_a_long_enough_name";
    e.primary_key.reset();
    e.snapshot = SnapshotMetadata{"another-snapshot-id-long", 77, true};
    e.transaction = TransactionMetadata{1, 2, 1};
    e.envelope_version = 9;
    e.unavailable_columns = {"u1", "u2"};
    e.shape = nullptr;
    e.resume_offset = "1/2";
    e.resume_state = "{\"state\":true}";
    e.log_position = LogPosition::from_u64(1234);
    return e;
  }

  KeyIsId catalog;
  TransactionAssembler assembler{"postgres", [](const std::string&, const std::string&) { return true; },
                                 catalog};
  const SnapshotMetadata meta{"slot@0/1", 3, false};
};

TEST_F(AppendReads, AReusedEventEqualsAFreshOneInEveryFieldAndKeepsItsMemory) {
  // The jsonb value holds an escaped newline and the note an escaped tab and backslash.
  const std::vector<std::string_view> rows = {
      "1\ta note long enough to live on the heap\\t\\\\\t{\"k\":\\n1}\n", "2\t\\N\t\\N\n"};
  std::vector<Event> fresh;
  std::size_t used = 0;
  ASSERT_TRUE(assembler.append_reads(42, rows, Lsn(0x16B2E48), 99, meta, fresh, used));
  ASSERT_EQ(used, 2u);
  ASSERT_EQ(fresh.size(), 2u);
  ASSERT_TRUE(fresh[0].after);
  EXPECT_EQ(fresh[0].op, Operation::kRead);
  EXPECT_EQ(fresh[0].source.offset, "0/16B2E48");
  EXPECT_EQ(fresh[0].source.timestamp, 99);
  EXPECT_EQ(*fresh[0].snapshot, meta);
  EXPECT_EQ((*fresh[0].after)[1].text, "a note long enough to live on the heap\t\\");
  EXPECT_EQ((*fresh[0].after)[2].text, "{\"k\": 1}");  // one line, as the stream's
  EXPECT_TRUE((*fresh[0].after)[2].is_json);
  EXPECT_FALSE((*fresh[1].after)[1].text.has_value());

  // A delivered batch handed back: one event already built in front, two to overwrite, and
  // one more past what the rows need, which stays as it was.
  std::vector<Event> reused{fresh[1], dirty(), dirty(), dirty()};
  const char* heap_of_first_overwritten = (*reused[1].after)[1].text->data();
  used = 1;
  ASSERT_TRUE(assembler.append_reads(42, rows, Lsn(0x16B2E48), 99, meta, reused, used));
  ASSERT_EQ(used, 3u);
  ASSERT_EQ(reused.size(), 4u);
  EXPECT_EQ(reused[0], fresh[1]);
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const Event& e = reused[1 + i];
    EXPECT_EQ(e, fresh[i]);
    EXPECT_EQ(e.to_json(), fresh[i].to_json());
    EXPECT_EQ(e.shape, fresh[i].shape);
    EXPECT_EQ(e.resume_offset, "");
    EXPECT_EQ(e.resume_state, "");
    EXPECT_TRUE(e.log_position.empty());
    EXPECT_TRUE(e.before.is_unavailable());
    EXPECT_TRUE(e.before.unavailable_columns().empty());
  }
  EXPECT_EQ(reused[3], dirty());
  // The first row's long note went into the memory the overwritten event's value had there.
  EXPECT_EQ((*reused[1].after)[1].text->data(), heap_of_first_overwritten);
}

TEST_F(AppendReads, ARowThatDoesNotMatchTheTableIsRefusedByNameAndNothingIsAdded) {
  // The first row fits; the second has a column too many.
  const std::vector<std::string_view> rows = {"1\tn\t{}\n", "2\tn\t{}\tsurplus\n"};
  std::vector<Event> out;
  std::size_t used = 0;
  auto st = assembler.append_reads(42, rows, Lsn(1), 0, meta, out, used);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
  EXPECT_NE(st.error().message().find("public.orders"), std::string::npos)
      << st.error().message();
  EXPECT_EQ(used, 0u);  // the row built before the misfit is not counted

  auto unknown = assembler.append_reads(7, rows, Lsn(1), 0, meta, out, used);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(used, 0u);
}

}  // namespace
}  // namespace cppcdc::pg
