// The chain: the key guard, the unavailable-column bookkeeping (the guide's four cases),
// Event::validate on what leaves a stage, the error policy, and building from a config tree.

#include <gtest/gtest.h>

#include "transform_events.hpp"

namespace cppcdc {
namespace {

using namespace test;

std::unique_ptr<TransformAction> mapping(FieldMappingConfig c) {
  return must(make_field_mapping(std::move(c)));
}

TEST(KeyGuard, RenamingAKeyColumnIsRefusedNamingStageAndTable) {
  FieldMappingConfig c;
  c.rename = {{"id", "customer_id"}};
  auto chain = chain_of(mapping(std::move(c)), "rename-id");
  std::vector<Event> batch{row_event({col("id", "1"), col("v", "x")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  const std::string report = st.error().report();
  EXPECT_NE(report.find("\"rename-id\""), std::string::npos) << report;
  EXPECT_NE(report.find("public.customers"), std::string::npos) << report;
  EXPECT_NE(report.find("\"id\""), std::string::npos) << report;
}

TEST(KeyGuard, ProjectionOmittingTheKeyIsRefused) {
  FilterConfig c;
  c.include_columns = std::vector<std::string>{"v"};
  auto chain = chain_of(must(make_filter(std::move(c))), "project");
  std::vector<Event> batch{row_event({col("id", "1"), col("v", "x")})};
  EXPECT_FALSE(chain->apply(batch));
}

TEST(KeyGuard, SettingTheKeyToNoneOnPurposeIsAllowed) {
  TransformChainConfig config;
  TransformStage drop_key{"drop-key", {}, {}};
  drop_key.actions.push_back(must(make_unwrap({"data", true})));
  config.stages.push_back(std::move(drop_key));
  auto chain = must(TransformChain::create(std::move(config)));
  auto out = run(*chain, row_event({col("id", "1"), json_col("data", R"({"v":1})")}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].primary_key);
}

TEST(KeyGuard, KeylessTablesNeverTripIt) {
  FieldMappingConfig c;
  c.remove = {"id"};
  auto chain = chain_of(mapping(std::move(c)));
  // No key at all, and an empty key: both pass; a keyed table in the same batch still trips.
  std::vector<Event> batch{row_event({col("id", "1")}, Operation::kInsert, std::nullopt),
                           row_event({col("id", "1")}, Operation::kInsert,
                                     std::vector<std::string>{})};
  EXPECT_TRUE(chain->apply(batch));
  EXPECT_EQ(batch.size(), 2u);
  batch.push_back(row_event({col("id", "1")}));
  EXPECT_FALSE(chain->apply(batch));
}

// The key-value check: an action that keeps the key columns but changes their values is
// refused (a consumer upserting by key would file the row under another row's key).
TEST(KeyGuard, AnUnwrapThatReplacesTheKeyValueIsRefused) {
  auto chain = chain_of(must(make_unwrap({"body", false})), "docs");
  // The object carries "id" with the row's own value: kept.
  auto out = run(*chain, row_event({col("id", "5"), json_col("body", R"({"id":5,"t":1})")}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*value(out[0], "id"), "5");
  // In the row's own form (text, as the delete's key-only image has it), not as the JSON
  // number the object held: keys are built from the form.
  EXPECT_FALSE(find_column(*out[0].after, "id")->is_json);
  // Another value: refused as invalid data, naming the stage, the action and the column.
  std::vector<Event> batch{row_event({col("id", "5"), json_col("body", R"({"id":555,"t":1})")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
  const std::string report = st.error().report();
  EXPECT_NE(report.find("\"docs\" (unwrap) changed the value of primary-key column \"id\""),
            std::string::npos)
      << report;
}

TEST(KeyGuard, SettingAKeyColumnToAnotherValueIsRefused) {
  FieldMappingConfig c;
  c.set = {{"id", std::string("0")}};
  auto chain = chain_of(mapping(std::move(c)), "const-id");
  std::vector<Event> batch{row_event({col("id", "1"), col("v", "x")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("primary-key column \"id\""), std::string::npos);
  // A delete's key is in its before-image: the check reads it there.
  Event del = row_event({}, Operation::kDelete);
  del.after.reset();
  del.before = BeforeKeyOnly{{col("id", "1")}};
  FieldMappingConfig keep;
  keep.set = {{"v", std::string("y")}};
  auto harmless = chain_of(mapping(std::move(keep)));
  EXPECT_EQ(run(*harmless, del).size(), 1u);
}

// An unwrap stage meets a delete under the default replica identity: the before-image holds
// only the key, which stays, and the delete keeps its key even with drop_primary_key.
TEST(KeyGuard, AKeyOnlyDeleteKeepsItsKeyThroughUnwrap) {
  for (bool drop : {false, true}) {
    auto chain = chain_of(must(make_unwrap({"body", drop})), "docs");
    Event del = row_event({}, Operation::kDelete);
    del.after.reset();
    del.before = BeforeKeyOnly{{col("id", "1")}};
    auto out = run(*chain, del);
    ASSERT_EQ(out.size(), 1u) << drop;
    ASSERT_TRUE(out[0].before.is_key_only()) << drop;
    EXPECT_EQ(*find_column(*out[0].before.row(), "id")->text, "1");
    ASSERT_TRUE(out[0].primary_key) << drop;
    EXPECT_EQ(*out[0].primary_key, std::vector<std::string>{"id"});
  }
}

// An update whose after lacks unchanged-TOAST column `big`, with a full before-image that lacks
// it too.
Event toast_update() {
  Event e = row_event({col("id", "1"), col("v", "x")}, Operation::kUpdate);
  e.unavailable_columns = {"big"};
  e.before = BeforeFull{{col("id", "1"), col("v", "w")}, {"big"}};
  return e;
}

TEST(UnavailableColumns, RenameMovesTheMarker) {
  FieldMappingConfig c;
  c.rename = {{"big", "large"}};
  auto out = run(*chain_of(mapping(std::move(c))), toast_update());
  EXPECT_EQ(out[0].unavailable_columns, std::vector<std::string>{"large"});
  EXPECT_EQ(out[0].before.unavailable_columns(), std::vector<std::string>{"large"});
  EXPECT_TRUE(out[0].validate());
}

TEST(UnavailableColumns, RemoveDropsTheMarker) {
  FieldMappingConfig c;
  c.remove = {"big"};
  auto out = run(*chain_of(mapping(std::move(c))), toast_update());
  EXPECT_TRUE(out[0].unavailable_columns.empty());
  EXPECT_TRUE(out[0].before.unavailable_columns().empty());
  EXPECT_TRUE(out[0].validate());
  FilterConfig projection;
  projection.include_columns = std::vector<std::string>{"id", "v"};
  out = run(*chain_of(must(make_filter(std::move(projection)))), toast_update());
  EXPECT_TRUE(out[0].unavailable_columns.empty());
  EXPECT_TRUE(out[0].validate());
}

TEST(UnavailableColumns, SetOrCopyIntoTheColumnDropsTheMarker) {
  FieldMappingConfig set;
  set.set = {{"big", std::string("literal")}};
  auto out = run(*chain_of(mapping(std::move(set))), toast_update());
  EXPECT_TRUE(out[0].unavailable_columns.empty()) << "it now has a value";
  EXPECT_EQ(*value(out[0], "big"), "literal");
  EXPECT_TRUE(out[0].validate());
  FieldMappingConfig copy;
  copy.copy = {{"v", "v2"}, {"big", "big2"}};
  out = run(*chain_of(mapping(std::move(copy))), toast_update());
  EXPECT_EQ(*value(out[0], "v2"), "x");
  // Copying an unavailable column gives an unavailable column.
  EXPECT_EQ(out[0].unavailable_columns, (std::vector<std::string>{"big", "big2"}));
  EXPECT_TRUE(out[0].validate());
}

TEST(UnavailableColumns, NestedRewriteLeavesTheListsAlone) {
  FieldMappingConfig c;
  c.set = {{"doc.flag", std::string("y")}};
  Event e = toast_update();
  e.after->push_back(json_col("doc", "{}"));
  auto out = run(*chain_of(mapping(std::move(c))), e);
  EXPECT_EQ(out[0].unavailable_columns, std::vector<std::string>{"big"});
  EXPECT_EQ(out[0].before.unavailable_columns(), std::vector<std::string>{"big"});
  EXPECT_TRUE(out[0].validate());
}

TEST(Chain, DroppedEventsLeaveTheBatchInOrder) {
  FilterConfig c;
  c.exclude_ops = {Operation::kDelete};
  auto chain = chain_of(must(make_filter(std::move(c))));
  std::vector<Event> batch;
  for (int i = 0; i < 5; ++i) {
    Event e = row_event({col("id", std::to_string(i))});
    if (i % 2 == 1) {
      e.op = Operation::kDelete;
      e.before = BeforeKeyOnly{{col("id", std::to_string(i))}};
      e.after.reset();
    }
    batch.push_back(std::move(e));
  }
  ASSERT_TRUE(chain->apply(batch));
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(*value(batch[0], "id"), "0");
  EXPECT_EQ(*value(batch[1], "id"), "2");
  EXPECT_EQ(*value(batch[2], "id"), "4");
}

TEST(Chain, StagesRunInOrderOnlyWhereWhenMatches) {
  TransformChainConfig config;
  TransformStage a{"meta", {}, {}};
  a.actions.push_back(must(make_metadata_projection({"_m", {"table"}})));
  TransformStage b{"orders-only", WhenConfig{{"public.orders"}, {}, {}}, {}};
  b.actions.push_back(must(make_route({std::nullopt, std::string("x")})));
  config.stages.push_back(std::move(a));
  config.stages.push_back(std::move(b));
  auto chain = must(TransformChain::create(std::move(config)));
  auto out = run(*chain, row_event({col("id", "1")}));
  EXPECT_EQ(out[0].table, "customers");
  EXPECT_EQ(*value(out[0], "_m"), R"({"table":"customers"})");
}

TEST(Chain, ConstructionRefusesBadStagesAndSkipWithoutDeadLetters) {
  TransformChainConfig skip;
  skip.error_policy = TransformErrorPolicy::kSkip;
  auto refused = TransformChain::create(std::move(skip));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().report().find("dead-letter"), std::string::npos);
  TransformChainConfig empty;
  empty.stages.push_back(TransformStage{"x", {}, {}});
  EXPECT_FALSE(TransformChain::create(std::move(empty)));
  TransformChainConfig twice;
  for (int i = 0; i < 2; ++i) {
    TransformStage s{"same", {}, {}};
    s.actions.push_back(must(make_route({std::nullopt, std::string("t")})));
    twice.stages.push_back(std::move(s));
  }
  EXPECT_FALSE(TransformChain::create(std::move(twice)));
}

TEST(Chain, SkipHandsTheOriginalEventAndErrorToTheDeadLetterHook) {
  struct Letter {
    Event event;
    std::string error;
    std::string stage;
  };
  std::vector<Letter> letters;
  TransformChainConfig config;
  config.error_policy = TransformErrorPolicy::kSkip;
  config.dead_letter = [&](const Event& e, const Error& err, std::string_view stage) -> Status {
    letters.push_back({e, err.report(), std::string(stage)});
    return ok();
  };
  TransformStage s{"dec", {}, {}};
  MaskConfig mask;
  mask.rules.emplace_back("card", MaskRule::decrypt("k"));
  s.actions.push_back(must(make_mask(std::move(mask))));
  config.stages.push_back(std::move(s));
  auto chain = must(TransformChain::create(std::move(config)));
  std::vector<Event> batch{row_event({col("id", "1"), col("card", "not a token")}),
                           row_event({col("id", "2")})};
  ASSERT_TRUE(chain->apply(batch));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(*value(batch[0], "id"), "2");
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(*value(letters[0].event, "card"), "not a token");
  EXPECT_EQ(letters[0].stage, "dec");
  EXPECT_NE(letters[0].error.find("enc:v1:"), std::string::npos) << letters[0].error;
  EXPECT_EQ(chain->skipped_events(), 1u);
}

// A mask stage ran before the stage that failed: the dead-letter hook gets the event as the
// mask left it, never the clear values (a non-mask stage before the mask is kept done too,
// one after it is not).
TEST(Chain, ADeadLetterNeverHoldsValuesAStageMaskedBeforeTheFailure) {
  std::vector<Event> letters;
  TransformChainConfig config;
  config.error_policy = TransformErrorPolicy::kSkip;
  config.dead_letter = [&](const Event& e, const Error&, std::string_view) -> Status {
    letters.push_back(e);
    return ok();
  };
  TransformStage meta{"meta", {}, {}};
  meta.actions.push_back(must(make_metadata_projection({"_m", {"table"}})));
  TransformStage pii{"pii", {}, {}};
  MaskConfig mask;
  mask.rules.emplace_back("email", MaskRule::redact("[R]"));
  pii.actions.push_back(must(make_mask(std::move(mask))));
  TransformStage rename{"rename", {}, {}};
  FieldMappingConfig m;
  m.rename = {{"v", "value"}};
  rename.actions.push_back(mapping(std::move(m)));
  TransformStage shape{"shape", {}, {}};
  shape.actions.push_back(must(make_flatten({"doc", ""})));
  for (auto* st : {&meta, &pii, &rename, &shape}) config.stages.push_back(std::move(*st));
  auto chain = must(TransformChain::create(std::move(config)));
  // doc is not an object: flatten fails in the last stage.
  std::vector<Event> batch{
      row_event({col("id", "1"), col("email", "a@b"), col("v", "x"), json_col("doc", "[1]")})};
  ASSERT_TRUE(chain->apply(batch));
  EXPECT_TRUE(batch.empty());
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(*value(letters[0], "email"), "[R]");
  EXPECT_NE(find_column(*letters[0].after, "_m"), nullptr);
  EXPECT_EQ(*value(letters[0], "v"), "x") << "the record is the event as the mask stage left it";
}

TEST(Chain, TheDeadLetterFlushRunsOncePerBatchThatSkippedAndItsFailureFailsTheBatch) {
  std::vector<std::string> calls;
  bool flush_fails = false;
  TransformChainConfig config;
  config.error_policy = TransformErrorPolicy::kSkip;
  config.dead_letter = [&](const Event& e, const Error&, std::string_view) -> Status {
    calls.push_back("letter:" + *value(e, "id"));
    return ok();
  };
  config.dead_letter_flush = [&]() -> Status {
    calls.push_back("flush");
    if (flush_fails) return fail(Error::transient("disk full"));
    return ok();
  };
  TransformStage s{"dec", {}, {}};
  MaskConfig mask;
  mask.rules.emplace_back("card", MaskRule::decrypt("k"));
  s.actions.push_back(must(make_mask(std::move(mask))));
  config.stages.push_back(std::move(s));
  auto chain = must(TransformChain::create(std::move(config)));
  std::vector<Event> clean{row_event({col("id", "1")})};
  ASSERT_TRUE(chain->apply(clean));
  EXPECT_TRUE(calls.empty()) << "nothing skipped: nothing to flush";
  std::vector<Event> batch{row_event({col("id", "2"), col("card", "x")}),
                           row_event({col("id", "3"), col("card", "y")}),
                           row_event({col("id", "4")})};
  ASSERT_TRUE(chain->apply(batch));
  EXPECT_EQ(calls, (std::vector<std::string>{"letter:2", "letter:3", "flush"}));
  flush_fails = true;
  std::vector<Event> again{row_event({col("id", "5"), col("card", "z")})};
  const auto st = chain->apply(again);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(st.error().report().find("dead-letter"), std::string::npos) << st.error().report();
}

TEST(Chain, HaltFailsTheBatch) {
  MaskConfig mask;
  mask.rules.emplace_back("card", MaskRule::decrypt("k"));
  auto chain = chain_of(must(make_mask(std::move(mask))), "dec");
  std::vector<Event> batch{row_event({col("id", "1"), col("card", "x")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("transform stage \"dec\" (mask)"), std::string::npos)
      << st.error().report();
}

TEST(Chain, InvalidEnvelopeLeavingAStageIsAnError) {
  struct Breaks final : TransformAction {
    std::string_view type() const noexcept override { return "breaks"; }
    Result<ActionResult> apply(Event& e, std::string_view) override {
      e.unavailable_columns.push_back("id");  // present and listed: invalid
      return ActionResult::kKeep;
    }
  };
  auto chain = chain_of(std::make_unique<Breaks>(), "custom");
  std::vector<Event> batch{row_event({col("id", "1")})};
  auto st = chain->apply(batch);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().report().find("after transform stage \"custom\""), std::string::npos);
}

// ---- from a configuration tree ----

ConfigNode str(std::string s, std::string where = "t.toml:1:1") {
  return ConfigNode::of_string(std::move(s), std::move(where));
}
ConfigNode table(ConfigNode::Table t, std::string where = "t.toml:1:1") {
  return ConfigNode::of_table(std::move(t), std::move(where));
}
ConfigNode array(ConfigNode::Array a, std::string where = "t.toml:1:1") {
  return ConfigNode::of_array(std::move(a), std::move(where));
}

Result<std::vector<TransformStage>> parse_one(ConfigNode action) {
  return parse_transform_stages(
      array({table({{"name", str("s")}, {"actions", array({std::move(action)})}})}),
      "[[pipeline.transforms]]");
}

TEST(ParseStages, BuildsEveryAction) {
  const auto ok_type = [](ConfigNode::Table t) {
    auto r = parse_one(table(std::move(t)));
    EXPECT_TRUE(r) << (r ? "" : r.error().report());
  };
  ok_type({{"type", str("filter")}, {"include_ops", array({str("INSERT")})}});
  ok_type({{"type", str("unwrap")}, {"field", str("d")}});
  ok_type({{"type", str("flatten")}, {"field", str("d")}, {"prefix", str("d_")}});
  ok_type({{"type", str("route")}, {"table", str("t")}});
  ok_type({{"type", str("metadata_projection")}, {"fields", array({str("offset")})}});
  ok_type({{"type", str("key_shaping")}, {"mode", str("fingerprint")}});
  ok_type({{"type", str("mask")}, {"rules", table({{"ssn", str("null")}})}});
  ok_type({{"type", str("field_mapping")}, {"remove", array({str("x")})}});
  ok_type({{"type", str("outbox")}});
}

TEST(ParseStages, ErrorsNamePlaceStageActionAndKey) {
  auto r = parse_one(table(
      {{"type", str("mask")},
       {"rules", table({{"email", table({{"truncate", ConfigNode::of_integer(0, "t.toml:9:30")}},
                                        "t.toml:9:20")}},
                       "t.toml:9:9")}},
      "t.toml:8:3"));
  ASSERT_FALSE(r);
  const std::string report = r.error().report();
  EXPECT_NE(report.find("t.toml:9:20"), std::string::npos) << report;
  EXPECT_NE(report.find("[[pipeline.transforms]] \"s\" action 1 (mask): rules.email"),
            std::string::npos)
      << report;
  auto op = parse_one(table({{"type", str("filter")},
                             {"filters", array({table({{"field", str("after.x")},
                                                       {"op", str("equals", "t.toml:4:7")},
                                                       {"value", str("1")}})})}}));
  ASSERT_FALSE(op);
  EXPECT_NE(op.error().report().find("t.toml:4:7"), std::string::npos) << op.error().report();
  EXPECT_NE(op.error().report().find("unknown filter operator \"equals\""), std::string::npos);
  auto unknown = parse_one(table({{"type", str("route")}, {"tabel", str("x", "t.toml:5:1")}}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().report().find("t.toml:5:1"), std::string::npos);
  EXPECT_NE(unknown.error().report().find("tabel: unknown key"), std::string::npos);
  EXPECT_NE(unknown.error().report().find("(did you mean table"), std::string::npos)
      << unknown.error().report();
  auto bad_op = parse_transform_stages(
      array({table({{"name", str("s")},
                    {"when", table({{"ops", array({str("upsert", "t.toml:2:9")})}})},
                    {"actions", array({table({{"type", str("route")}, {"table", str("x")}})})}})}),
      "[[pipeline.transforms]]");
  ASSERT_FALSE(bad_op);
  EXPECT_NE(bad_op.error().report().find("t.toml:2:9"), std::string::npos);
  auto secret = parse_one(table(
      {{"type", str("mask")},
       {"rules", table({{"email", table({{"hmac_sha256",
                                          table({{"secret_env", str("CPPCDC_TEST_UNSET_VAR")}})}})}})}}));
  ASSERT_FALSE(secret);
  EXPECT_NE(secret.error().report().find("CPPCDC_TEST_UNSET_VAR is not set"), std::string::npos);
}

}  // namespace
}  // namespace cppcdc
