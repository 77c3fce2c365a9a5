// The blocking snapshot's COPY read against a real server: every value parsed from COPY's
// text format equals what a plain SELECT returns for it (tabs, newlines, backslashes, quotes,
// the text "\N", empty strings, NULLs, control bytes, non-ASCII), and the cursor condition,
// whose values are inlined as literals because COPY takes no parameters, continues after
// every key, however odd, of single-column and composite keys.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "pg_util.hpp"
#include "source/postgres/copy_text.hpp"
#include "source/postgres/snapshot.hpp"

using namespace cppcdc;
using cppcdc::it::PgSession;

namespace {

using Rows = std::vector<std::vector<std::optional<std::string>>>;

// Runs `copy` and returns its rows, split and unescaped.
Rows copy_rows(PGconn* conn, const std::string& copy) {
  Rows out;
  pg::detail::PgResultPtr started(PQexec(conn, copy.c_str()));
  if (PQresultStatus(started.get()) != PGRES_COPY_OUT) {
    ADD_FAILURE() << copy << ": " << PQerrorMessage(conn);
    return out;
  }
  std::vector<pg::CopyField> fields;
  for (;;) {
    char* line = nullptr;
    const int len = PQgetCopyData(conn, &line, 0);
    if (len < 0) break;
    pg::split_copy_row(std::string_view(line, static_cast<std::size_t>(len)), fields);
    std::vector<std::optional<std::string>> row;
    for (const auto& f : fields) {
      if (f.null) {
        row.emplace_back();
      } else {
        std::string v;
        pg::copy_field_text(f, v);
        row.emplace_back(std::move(v));
      }
    }
    out.push_back(std::move(row));
    PQfreemem(line);
  }
  pg::detail::discard_results(conn);
  return out;
}

class PgSnapshotCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("snapcopy");
    it::fresh_database(db_);
    PgSession s(it::dsn_for(db_));
    // E'' strings: the keys and values carry the bytes COPY has to escape.
    s.query(R"(
      create table odd (k text primary key, v text, j jsonb, b bytea, arr text[], n int);
      insert into odd values
        (E'plain', E'tab\there', '{"a": "x\ny"}', E'\\x00ff', array['q"', null, E'b\\s'], 1),
        (E'it''s', E'new\nline\r\n', '[1, "\\u00e9"]', null, null, null),
        (E'back\\slash', E'\\N', 'null', E'\\x5c', '{}', 3),
        (E'tab\tkey', '', '{}', E'\\x', array[E'\t'], 4),
        (E'line\nkey', null, null, null, null, 5),
        (E'\\N', E'\x01\x1f', '"s"', null, array['\N'], 6),
        (E'ünï ✓', E'ünï ✓', '{"ü": "✓"}', null, null, 7),
        (E'', 'empty key', null, null, null, 8),
        (E'quote''\\''mix', E'end\\', null, null, null, 9);
      create table pair (a text, b int, note text, primary key (a, b));
      insert into pair select x, g, x || g
        from unnest(array[E'a''b', E'c\\d', E'e\tf', 'g']) x, generate_series(1, 3) g;
    )");
  }

  std::string db_;
};

}  // namespace

TEST_F(PgSnapshotCopy, EveryValueReadThroughCopyEqualsWhatSelectReturns) {
  PgSession s(it::dsn_for(db_));
  auto d = pg::describe_snapshot_table(s.get(), "public.odd");
  ASSERT_TRUE(d) << d.error().report();
  const Rows copied = copy_rows(s.get(), pg::snapshot_copy_query(*d, "", std::nullopt));
  const Rows selected = s.query("select k, v, j, b, arr, n from odd order by k");
  ASSERT_EQ(copied.size(), 9u);
  ASSERT_EQ(copied, selected);
}

TEST_F(PgSnapshotCopy, TheCursorContinuesAfterEveryKeyOfOneColumnAndOfTwo) {
  PgSession s(it::dsn_for(db_));
  for (const auto& [table, order, key_width] :
       {std::tuple{std::string("odd"), std::string("k"), 1},
        std::tuple{std::string("pair"), std::string("a, b"), 2}}) {
    SCOPED_TRACE(table);
    auto d = pg::describe_snapshot_table(s.get(), "public." + table);
    ASSERT_TRUE(d) << d.error().report();
    ASSERT_EQ(d->key.size(), static_cast<std::size_t>(key_width));
    const Rows all = copy_rows(s.get(), pg::snapshot_copy_query(*d, "", std::nullopt));
    const Rows selected = s.query("select * from " + table + " order by " + order);
    ASSERT_EQ(all, selected);  // key order
    for (std::size_t i = 0; i < all.size(); ++i) {
      std::vector<std::string> cursor;
      for (int k = 0; k < key_width; ++k) cursor.push_back(*all[i][k]);
      const Rows rest = copy_rows(s.get(), pg::snapshot_copy_query(*d, "", cursor));
      EXPECT_EQ(rest, Rows(all.begin() + static_cast<std::ptrdiff_t>(i) + 1, all.end()))
          << "after row " << i;
    }
    // A condition and the cursor together.
    std::vector<std::string> first_key;
    for (int k = 0; k < key_width; ++k) first_key.push_back(*all[0][k]);
    const Rows cond = copy_rows(
        s.get(), pg::snapshot_copy_query(*d, table == "odd" ? "(n > 4)" : "(b = 2)", first_key));
    const Rows want = s.query("select * from " + table + " where " +
                              (table == "odd" ? "n > 4" : "b = 2") + " order by " + order);
    Rows want_after_first;
    for (const auto& r : want) {
      if (r != all[0]) want_after_first.push_back(r);
    }
    EXPECT_EQ(cond, want_after_first);
  }
}

// A key column with a collation of its own: the key types the snapshot records carry it, so
// comparing two keys cast to them (the stream's visibility filter does this on the server)
// orders them as the table's ORDER BY does, not by the database's default collation.
TEST_F(PgSnapshotCopy, AKeyColumnsOwnCollationIsPartOfItsRecordedType) {
  PgSession s(it::dsn_for(db_));
  if (s.query("select 1 from pg_collation where collname = 'und-x-icu'").empty()) {
    GTEST_SKIP() << "this server has no ICU collation";
  }
  s.query(R"(create table icu (k text collate "und-x-icu" primary key);
             insert into icu values ('a'), ('B'), ('c'), ('_d');)");
  auto d = pg::describe_snapshot_table(s.get(), "public.icu");
  ASSERT_TRUE(d) << d.error().report();
  ASSERT_EQ(d->key_types.size(), 1u);
  EXPECT_EQ(d->key_types[0], "text collate pg_catalog.\"und-x-icu\"");
  // Each neighbour pair of the table's order compares as "less" cast to the recorded type; under
  // the database's C.UTF-8 default 'B' < 'a' would come out the other way.
  const Rows ordered = s.query("select k from icu order by k");
  ASSERT_EQ(ordered.size(), 4u);
  for (std::size_t i = 0; i + 1 < ordered.size(); ++i) {
    const Rows less = s.query("select $1::" + d->key_types[0] + " < $2::" + d->key_types[0],
                              {*ordered[i][0], *ordered[i + 1][0]});
    EXPECT_EQ(less, Rows{{std::string("t")}}) << *ordered[i][0] << " vs " << *ordered[i + 1][0];
  }
}
