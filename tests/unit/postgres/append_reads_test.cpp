// Snapshot rows built in place (TransactionAssembler::append_reads): a delivered event handed
// back for reuse must come out exactly as a freshly made one, whatever it held before, and
// its memory must be reused. The query result is built with libpq's own result constructors
// (PQmakeEmptyPGresult / PQsetResultAttrs / PQsetvalue), so no server is needed.

#include <gtest/gtest.h>
#include <libpq-fe.h>

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

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

// Rows of (id, note, doc); nullptr is SQL NULL.
ResultPtr make_result(const std::vector<std::vector<const char*>>& rows, int columns = 3) {
  ResultPtr res(PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK));
  std::vector<PGresAttDesc> attrs(static_cast<std::size_t>(columns));
  const char* names[] = {"id", "note", "doc", "extra"};
  for (int c = 0; c < columns; ++c) {
    attrs[c] = PGresAttDesc{};
    attrs[c].name = const_cast<char*>(names[c]);
    attrs[c].format = 0;
    attrs[c].typlen = -1;
    attrs[c].atttypmod = -1;
  }
  EXPECT_EQ(PQsetResultAttrs(res.get(), columns, attrs.data()), 1);
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    for (int c = 0; c < columns; ++c) {
      const char* v = rows[r][c];
      EXPECT_EQ(PQsetvalue(res.get(), r, c, const_cast<char*>(v),
                           v ? static_cast<int>(std::strlen(v)) : -1),
                1);
    }
  }
  return res;
}

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
    e.log_position = 1234;
    return e;
  }

  KeyIsId catalog;
  TransactionAssembler assembler{"postgres", [](const std::string&, const std::string&) { return true; },
                                 catalog};
  const SnapshotMetadata meta{"slot@0/1", 3, false};
};

TEST_F(AppendReads, AReusedEventEqualsAFreshOneInEveryFieldAndKeepsItsMemory) {
  auto res = make_result({{"1", "a note long enough to live on the heap", "{\"k\":\n1}"},
                          {"2", nullptr, nullptr}});
  std::vector<Event> fresh;
  ASSERT_TRUE(assembler.append_reads(42, res.get(), 2, Lsn(0x16B2E48), 99, meta, fresh));
  ASSERT_EQ(fresh.size(), 2u);
  ASSERT_TRUE(fresh[0].after);
  EXPECT_EQ(fresh[0].op, Operation::kRead);
  EXPECT_EQ(fresh[0].source.offset, "0/16B2E48");
  EXPECT_EQ(fresh[0].source.timestamp, 99);
  EXPECT_EQ(*fresh[0].snapshot, meta);
  EXPECT_EQ((*fresh[0].after)[2].text, "{\"k\": 1}");  // one line, as the stream's
  EXPECT_TRUE((*fresh[0].after)[2].is_json);
  EXPECT_FALSE((*fresh[1].after)[1].text.has_value());

  std::vector<Event> spare{dirty(), dirty()};
  // spare is used from its back: remember where the heap text of each one lives.
  const char* heap_of_first_used = (*spare[1].after)[1].text->data();
  std::vector<Event> reused;
  ASSERT_TRUE(
      assembler.append_reads(42, res.get(), 2, Lsn(0x16B2E48), 99, meta, reused, &spare));
  EXPECT_TRUE(spare.empty());
  ASSERT_EQ(reused.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(reused[i], fresh[i]);
    EXPECT_EQ(reused[i].to_json(), fresh[i].to_json());
    EXPECT_EQ(reused[i].shape, fresh[i].shape);
    EXPECT_EQ(reused[i].resume_offset, "");
    EXPECT_EQ(reused[i].resume_state, "");
    EXPECT_EQ(reused[i].log_position, 0u);
    EXPECT_TRUE(reused[i].before.is_unavailable());
    EXPECT_TRUE(reused[i].before.unavailable_columns().empty());
  }
  // The first row's long note went into the memory the reused event's value had there.
  EXPECT_EQ((*reused[0].after)[1].text->data(), heap_of_first_used);
}

TEST_F(AppendReads, AResultThatDoesNotMatchTheTableIsRefusedByNameAndAddsNothing) {
  auto res = make_result({{"1", "n", "{}", "surplus"}}, 4);
  std::vector<Event> out;
  auto st = assembler.append_reads(42, res.get(), 1, Lsn(1), 0, meta, out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
  EXPECT_NE(st.error().message().find("public.orders"), std::string::npos)
      << st.error().message();
  EXPECT_TRUE(out.empty());

  auto unknown = assembler.append_reads(7, res.get(), 1, Lsn(1), 0, meta, out);
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace cppcdc::pg
