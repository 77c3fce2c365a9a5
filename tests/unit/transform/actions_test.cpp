// filter, unwrap, flatten, route, metadata_projection, key_shaping, field_mapping, outbox, and
// the pieces they share (paths, globs, when).

#include <gtest/gtest.h>

#include "transform_events.hpp"

namespace cppcdc {
namespace {

using namespace test;

TEST(FieldPath, ParsesDottedNamesAndRefusesPathsThatCannotMatch) {
  auto p = must(parse_field_path("doc.items.*.sku"));
  EXPECT_EQ(p.segments, (std::vector<std::string>{"doc", "items", "*", "sku"}));
  EXPECT_TRUE(p.has_wildcard());
  for (std::string bad : {"", ".", "a..b", "a.", ".a", "*", "*.a"}) {
    auto r = parse_field_path(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind(), ErrorKind::kConfiguration);
  }
  EXPECT_FALSE(parse_field_path(std::string(2000, 'a')));
  EXPECT_TRUE(parse_filter_field("after.x"));
  EXPECT_TRUE(parse_filter_field("before.x.y"));
  EXPECT_FALSE(parse_filter_field("x"));
  EXPECT_FALSE(parse_filter_field("after."));
}

TEST(Glob, MatchesStarsQuestionMarksAndQualifiedNames) {
  EXPECT_TRUE(Glob("public.cust*").matches_qualified("public", "customers"));
  EXPECT_FALSE(Glob("public.cust*").matches_qualified("billing", "customers"));
  EXPECT_TRUE(Glob("*.orders").matches_qualified("a", "orders"));
  EXPECT_TRUE(Glob("t?").matches("t1"));
  EXPECT_FALSE(Glob("t?").matches("t12"));
  EXPECT_TRUE(Glob("*a*b*c").matches("xxaxxbxxc"));
  EXPECT_TRUE(Glob("*").matches(""));
  Event e = row_event({col("id", "1")});
  EXPECT_TRUE(table_glob_matches(Glob("cust*"), e)) << "no dot: the table name alone";
}

TEST(When, TablesSchemasAndOps) {
  WhenPredicate when(WhenConfig{{"public.cust*"}, {"pub*"}, {Operation::kInsert}});
  Event e = row_event({col("id", "1")});
  EXPECT_TRUE(when.matches(e));
  e.op = Operation::kUpdate;
  EXPECT_FALSE(when.matches(e));
  e.op = Operation::kInsert;
  e.schema = "billing";
  EXPECT_FALSE(when.matches(e));
  EXPECT_TRUE(WhenPredicate().matches(e));
}

std::size_t kept(TransformChain& chain, Event e) {
  std::vector<Event> batch{std::move(e)};
  EXPECT_TRUE(chain.apply(batch));
  return batch.size();
}

TEST(Filter, OpsTablesAndSchemas) {
  FilterConfig c;
  c.include_ops = {Operation::kInsert, Operation::kUpdate};
  c.exclude_tables = {"public.audit*"};
  c.include_schemas = {"public"};
  auto chain = chain_of(must(make_filter(std::move(c))));
  EXPECT_EQ(kept(*chain, row_event({col("id", "1")})), 1u);
  EXPECT_EQ(kept(*chain, row_event({col("id", "1")}, Operation::kRead)), 0u);
  Event audit = row_event({col("id", "1")});
  audit.table = "audit_log";
  EXPECT_EQ(kept(*chain, audit), 0u);
  Event other = row_event({col("id", "1")});
  other.schema = "billing";
  EXPECT_EQ(kept(*chain, other), 0u);
}

TEST(Filter, ContentOperators) {
  const auto keeps = [](FilterOperator op, std::string value, Row after) {
    FilterConfig c;
    c.filters.push_back({"after.v", op, std::move(value)});
    auto chain = chain_of(must(make_filter(std::move(c))));
    return kept(*chain, row_event(std::move(after))) == 1;
  };
  const Row v = {col("id", "1"), col("v", "150")};
  EXPECT_TRUE(keeps(FilterOperator::kEq, "150", v));
  EXPECT_FALSE(keeps(FilterOperator::kNe, "150", v));
  EXPECT_TRUE(keeps(FilterOperator::kContains, "5", v));
  EXPECT_TRUE(keeps(FilterOperator::kRegex, "^1[0-9]+$", v));
  EXPECT_TRUE(keeps(FilterOperator::kGt, "100", v)) << "numbers compare as numbers";
  EXPECT_TRUE(keeps(FilterOperator::kGe, "150", v));
  EXPECT_FALSE(keeps(FilterOperator::kLt, "20", v));
  EXPECT_TRUE(keeps(FilterOperator::kLe, "150.0", v));
  EXPECT_FALSE(keeps(FilterOperator::kNe, "x", {col("id", "1"), null_col("v")}))
      << "NULL matches no operator";
  EXPECT_FALSE(keeps(FilterOperator::kEq, "x", {col("id", "1")})) << "absent matches nothing";
  EXPECT_TRUE(keeps(FilterOperator::kLt, "b", {col("id", "1"), col("v", "a")}));
}

// Decimals compare exactly, not through a double (a trial saw ge 9007199254740993 let
// ...992 through: both round to the same double); signs, fractions and zeros are right.
TEST(Filter, DecimalsCompareExactly) {
  const auto keeps = [](FilterOperator op, std::string value, std::string v) {
    FilterConfig c;
    c.filters.push_back({"after.v", op, std::move(value)});
    auto chain = chain_of(must(make_filter(std::move(c))));
    return kept(*chain, row_event({col("id", "1"), col("v", std::move(v))})) == 1;
  };
  EXPECT_TRUE(keeps(FilterOperator::kGe, "9007199254740993", "9007199254740993"));
  EXPECT_FALSE(keeps(FilterOperator::kGe, "9007199254740993", "9007199254740992"));
  EXPECT_TRUE(keeps(FilterOperator::kGt, "12345678901234567890.1", "12345678901234567890.10001"));
  EXPECT_FALSE(keeps(FilterOperator::kGt, "0.5", "0.49"));
  EXPECT_TRUE(keeps(FilterOperator::kGt, "0.5", "0.51"));
  EXPECT_TRUE(keeps(FilterOperator::kLt, "0", "-0.5"));
  EXPECT_TRUE(keeps(FilterOperator::kLt, "-2", "-10"));
  EXPECT_TRUE(keeps(FilterOperator::kLe, "1.5", "001.50"));
  EXPECT_TRUE(keeps(FilterOperator::kGe, "-0", "0"));
  EXPECT_TRUE(keeps(FilterOperator::kGt, "1e2", "101")) << "an exponent still compares as a number";
}

TEST(Filter, JsonPathsAndBeforeImage) {
  FilterConfig c;
  c.filters.push_back({"after.doc.user.country", FilterOperator::kEq, "NO"});
  c.filters.push_back({"before.status", FilterOperator::kEq, "pending"});
  auto chain = chain_of(must(make_filter(std::move(c))));
  Event e = row_event({col("id", "1"), json_col("doc", R"({"user":{"country":"NO"}})")},
                      Operation::kUpdate);
  e.before = BeforeFull{{col("id", "1"), col("status", "pending")}, {}};
  EXPECT_EQ(kept(*chain, e), 1u);
  e.before = BeforeFull{{col("id", "1"), col("status", "shipped")}, {}};
  EXPECT_EQ(kept(*chain, e), 0u);
}

TEST(Filter, AnyModeAndCountingOnlyEvaluatedRules) {
  FilterConfig all;
  all.filters.push_back({"after.a", FilterOperator::kEq, "1"});
  all.filters.push_back({"after.b", FilterOperator::kEq, "1"});
  auto chain = chain_of(must(make_filter(std::move(all))), "f");
  EXPECT_EQ(kept(*chain, row_event({col("id", "1"), col("a", "0"), col("b", "1")})), 0u);
  // The second rule was never evaluated (the first was false): it is not reported.
  auto unmatched = chain->unmatched_rules();
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_EQ(unmatched[0].rule, "after.a eq 1");
  auto stats = chain->rules();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].evaluations, 0u);
  EXPECT_FALSE(stats[1].unmatched);

  FilterConfig any;
  any.mode = FilterMode::kAny;
  any.filters.push_back({"after.a", FilterOperator::kEq, "1"});
  any.filters.push_back({"after.b", FilterOperator::kEq, "1"});
  auto any_chain = chain_of(must(make_filter(std::move(any))));
  EXPECT_EQ(kept(*any_chain, row_event({col("id", "1"), col("a", "0"), col("b", "1")})), 1u);
  EXPECT_EQ(kept(*any_chain, row_event({col("id", "1"), col("a", "0"), col("b", "0")})), 0u);
}

TEST(Filter, ExcludePatternThatNeverFiredIsReported) {
  FilterConfig c;
  c.exclude_tables = {"public.aduit"};
  auto chain = chain_of(must(make_filter(std::move(c))), "drop-audit");
  EXPECT_EQ(kept(*chain, row_event({col("id", "1")})), 1u);
  auto unmatched = chain->unmatched_rules();
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_EQ(unmatched[0].kind, "filter");
  EXPECT_NE(unmatched[0].consequence.find("meant to be excluded are being delivered"),
            std::string::npos);
}

TEST(Filter, ConfigurationErrorsAtConstruction) {
  const auto err = [](FilterRule rule) {
    FilterConfig c;
    c.filters.push_back(std::move(rule));
    auto made = make_filter(std::move(c));
    EXPECT_FALSE(made);
    return made ? std::string() : made.error().report();
  };
  EXPECT_NE(err({"after.v", FilterOperator::kEq, ""}).find("empty value"), std::string::npos);
  EXPECT_NE(err({"after.v", FilterOperator::kRegex, "(["}).find("invalid regular expression"),
            std::string::npos);
  EXPECT_NE(err({"v", FilterOperator::kEq, "1"}).find("after.<column>"), std::string::npos);
  auto op = parse_filter_operator("equals");
  ASSERT_FALSE(op);
  EXPECT_NE(op.error().report().find("eq, ne, contains"), std::string::npos);
  EXPECT_EQ(*parse_filter_operator("GE"), FilterOperator::kGe);
}

TEST(Unwrap, AfterBecomesTheObjectsMembers) {
  auto chain = chain_of(must(make_unwrap({"data", /*drop_primary_key=*/true})));
  auto out = run(*chain, row_event({col("id", "1"), json_col("data", R"({"a":"x","n":5,"o":{}})")}));
  ASSERT_EQ(out[0].after->size(), 3u);
  EXPECT_EQ(*value(out[0], "a"), "x");
  EXPECT_TRUE(find_column(*out[0].after, "n")->is_json);
  EXPECT_FALSE(out[0].primary_key);
}

TEST(Unwrap, LosingTheKeyWithoutSayingSoTripsTheKeyGuard) {
  auto chain = chain_of(must(make_unwrap({"data", false})), "unwrap-data");
  std::vector<Event> batch{row_event({col("id", "1"), json_col("data", R"({"a":1})")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("\"unwrap-data\""), std::string::npos);
}

TEST(Flatten, MembersBecomeColumnsWithPrefix) {
  auto chain = chain_of(must(make_flatten({"addr", "addr_"})));
  auto out = run(*chain, row_event({col("id", "1"), json_col("addr", R"({"city":"Oslo","zip":null})")}));
  EXPECT_EQ(*value(out[0], "addr_city"), "Oslo");
  EXPECT_FALSE(value(out[0], "addr_zip").has_value());
  EXPECT_EQ(find_column(*out[0].after, "addr"), nullptr);
  auto clash = chain_of(must(make_flatten({"addr", ""})));
  std::vector<Event> batch{row_event({col("id", "1"), json_col("addr", R"({"id":"2"})")})};
  EXPECT_FALSE(clash->apply(batch));
}

TEST(Route, RewritesNamesAndCountsHits) {
  auto chain = chain_of(must(make_route({std::string("billing"), std::string("invoices")})),
                        "to-billing", WhenConfig{{"public.inv*"}, {}, {}});
  auto out = run(*chain, row_event({col("id", "1")}));
  EXPECT_EQ(out[0].table, "customers") << "when did not match";
  auto unmatched = chain->unmatched_rules();
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_NE(unmatched[0].consequence.find("default destination"), std::string::npos);
  Event inv = row_event({col("id", "1")});
  inv.table = "invoice_2024";
  out = run(*chain, inv);
  EXPECT_EQ(*out[0].schema, "billing");
  EXPECT_EQ(out[0].table, "invoices");
  EXPECT_TRUE(chain->unmatched_rules().empty());
  EXPECT_FALSE(make_route({}));
}

TEST(MetadataProjection, WritesAJsonObject) {
  auto chain = chain_of(must(make_metadata_projection({})));
  auto out = run(*chain, row_event({col("id", "1")}));
  const ColumnValue* meta = find_column(*out[0].after, "_meta");
  ASSERT_NE(meta, nullptr);
  EXPECT_TRUE(meta->is_json);
  EXPECT_EQ(*meta->text,
            R"({"schema":"public","table":"customers","operation":"insert",)"
            R"("source_timestamp":1700000000000,"offset":"0/16B2E48"})");
  EXPECT_FALSE(make_metadata_projection({"_m", {"lsn"}}));
}

// A target column the row already has is refused, not overwritten.
TEST(MetadataProjection, AndKeyShapingRefuseATargetTheRowAlreadyHas) {
  for (int i = 0; i < 2; ++i) {
    auto chain = chain_of(i == 0 ? must(make_metadata_projection({"_cdc", {"offset"}}))
                                 : must(make_key_shaping({"_cdc", KeyMode::kPrimaryKey, false})),
                          "meta");
    std::vector<Event> batch{row_event({col("id", "2"), col("_cdc", "user-value")})};
    auto st = chain->apply(batch);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
    EXPECT_NE(st.error().report().find("target_field \"_cdc\""), std::string::npos)
        << st.error().report();
  }
}

// A delete under the default replica identity is keyed like its row's inserts: the key
// column goes into its key-only before-image (a trial saw the delete keep ["id"] while the
// inserts had ["_key"], so it never reached its row).
TEST(KeyShaping, ADeleteIsKeyedLikeItsRowsInserts) {
  auto pk = chain_of(must(make_key_shaping({"_key", KeyMode::kPrimaryKey, true})));
  const auto insert = run(*pk, row_event({col("id", "7"), col("v", "x")}));
  Event del = row_event({}, Operation::kDelete);
  del.after.reset();
  del.before = BeforeKeyOnly{{col("id", "7")}};
  const auto out = run(*pk, del);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0].primary_key, std::vector<std::string>{"_key"});
  const ColumnValue* key = find_column(*out[0].before.row(), "_key");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(*key->text, *value(insert[0], "_key"));
  EXPECT_TRUE(out[0].validate()) << out[0].validate().error().report();
}

TEST(KeyShaping, PrimaryKeyAndStableFingerprint) {
  auto pk = chain_of(must(make_key_shaping({"_key", KeyMode::kPrimaryKey, true})));
  auto out = run(*pk, row_event({col("id", "7"), col("v", "x")}));
  EXPECT_EQ(*value(out[0], "_key"), R"({"id":"7"})");
  EXPECT_EQ(*out[0].primary_key, std::vector<std::string>{"_key"});
  auto fp = chain_of(must(make_key_shaping({"_fp", KeyMode::kFingerprint, false})));
  const auto a = *value(run(*fp, row_event({col("id", "7")}))[0], "_fp");
  const auto b = *value(run(*fp, row_event({col("id", "7")}))[0], "_fp");
  const auto c = *value(run(*fp, row_event({col("id", "8")}))[0], "_fp");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(FieldMapping, CopyRenameSetRemoveAndStrict) {
  FieldMappingConfig c;
  c.copy = {{"email", "email_copy"}};
  c.rename = {{"name", "full_name"}};
  c.set = {{"source", std::string("crm")}, {"doc.flag", std::string("y")}};
  c.remove = {"secret", "doc.internal"};
  auto chain = chain_of(must(make_field_mapping(std::move(c))));
  auto out = run(*chain, row_event({col("id", "1"), col("email", "e"), col("name", "n"),
                                    col("secret", "s"), json_col("doc", R"({"internal":1})")}));
  EXPECT_EQ(*value(out[0], "email_copy"), "e");
  EXPECT_EQ(*value(out[0], "full_name"), "n");
  EXPECT_EQ(find_column(*out[0].after, "name"), nullptr);
  EXPECT_EQ(*value(out[0], "source"), "crm");
  EXPECT_EQ(find_column(*out[0].after, "secret"), nullptr);
  EXPECT_EQ(*value(out[0], "doc"), R"({"flag":"y"})");

  FieldMappingConfig strict;
  strict.rename = {{"missing", "x"}};
  strict.strict = true;
  auto strict_chain = chain_of(must(make_field_mapping(std::move(strict))));
  std::vector<Event> batch{row_event({col("id", "1")})};
  EXPECT_FALSE(strict_chain->apply(batch));

  FieldMappingConfig onto;
  onto.rename = {{"a", "b"}};
  auto onto_chain = chain_of(must(make_field_mapping(std::move(onto))));
  std::vector<Event> clash{row_event({col("id", "1"), col("a", "1"), col("b", "2")})};
  EXPECT_FALSE(onto_chain->apply(clash)) << "renaming onto a column would lose data";
}

// Strict holds a row to the mapping, but a key-only delete has no row (it used to fail on
// every delete under the default replica identity), and a set inside a NULL JSON column says
// the column is NULL rather than absent (fresh-user trial of issue 14).
TEST(FieldMapping, StrictSkipsKeyOnlyDeletesAndNamesANullJsonColumn) {
  FieldMappingConfig c;
  c.copy = {{"email", "contact"}};
  c.set = {{"doc.added", std::string("1")}};
  c.strict = true;
  auto chain = chain_of(must(make_field_mapping(std::move(c))), "crm");
  Event del = row_event({}, Operation::kDelete);
  del.after.reset();
  del.before = BeforeKeyOnly{{col("id", "1")}};
  EXPECT_EQ(run(*chain, del).size(), 1u);
  std::vector<Event> batch{
      row_event({col("id", "2"), col("email", "a@b"), null_col("doc")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("column \"doc\" is NULL"), std::string::npos)
      << st.error().report();
  // A dotted remove holds its column to strict as well: missing, or not JSON.
  FieldMappingConfig r;
  r.remove = {"settings.internal"};
  r.strict = true;
  auto remover = chain_of(must(make_field_mapping(std::move(r))), "rm");
  std::vector<Event> missing{row_event({col("id", "2")})};
  st = remover->apply(missing);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("\"settings\", which this event does not carry"),
            std::string::npos)
      << st.error().report();
  std::vector<Event> text{row_event({col("id", "2"), col("settings", "plain")})};
  st = remover->apply(text);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("is not JSON"), std::string::npos) << st.error().report();
  EXPECT_EQ(run(*remover, row_event({col("id", "2"), null_col("settings")})).size(), 1u);
}

TEST(Outbox, RowBecomesTheDomainEventRoutedByAggregateType) {
  auto chain = chain_of(must(make_outbox({})), "outbox", WhenConfig{{"public.outbox"}, {}, {}});
  Event e = row_event({col("id", "ev-1"), col("aggregatetype", "order"),
                       col("aggregateid", "42"), col("type", "OrderCreated"),
                       json_col("payload", R"({"total":"9.50"})")});
  e.table = "outbox";
  auto out = run(*chain, e);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].table, "order");
  EXPECT_EQ(*out[0].primary_key, std::vector<std::string>{"aggregateid"});
  EXPECT_EQ(*value(out[0], "type"), "OrderCreated");
  EXPECT_EQ(*value(out[0], "payload"), R"({"total":"9.50"})");
  EXPECT_EQ(find_column(*out[0].after, "aggregatetype"), nullptr);
  Event del = e;
  del.op = Operation::kDelete;
  del.before = BeforeKeyOnly{{col("id", "ev-1")}};
  del.after.reset();
  del.primary_key = std::vector<std::string>{"id"};
  EXPECT_EQ(run(*chain, del).size(), 0u) << "deleting sent rows is clean-up, not an event";
  Event other = row_event({col("id", "1")});
  EXPECT_EQ(run(*chain, other)[0].table, "customers");

  OutboxConfig expand;
  expand.expand_payload = true;
  expand.table_prefix = "events.";
  auto ex = chain_of(must(make_outbox(expand)));
  out = run(*ex, e);
  EXPECT_EQ(out[0].table, "events.order");
  EXPECT_EQ(*value(out[0], "total"), "9.50");
}

}  // namespace
}  // namespace cppcdc
