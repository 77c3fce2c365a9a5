#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <thread>

#include "cppcdc/event.hpp"

using namespace cppcdc;

namespace {

ColumnValue col(std::string name, std::optional<std::string> text, bool json = false) {
  return ColumnValue{std::move(name), std::move(text), json};
}

Event update_event() {
  return EventBuilder("orders", Operation::kUpdate)
      .source({"postgres", "0/1B2C3D4E", 1784583185586})
      .schema("public")
      .before(BeforeKeyOnly{{col("id", "42")}})
      .after({col("id", "42"), col("status", "shipped"), col("meta", R"({"n": 12345678901234567890})", true),
              col("note", std::nullopt)})
      .primary_key({"id"})
      .ts(1784583185590)
      .transaction({3084, 2, 1})
      .build();
}

}  // namespace

TEST(EventJson, SerialisesEveryEnvelopeFieldInOrder) {
  const std::string json = update_event().to_json();
  EXPECT_EQ(json,
            R"({"before":{"id":"42"},"after":{"id":"42","status":"shipped","meta":{"n": 12345678901234567890},"note":null},)"
            R"("op":"update","source":{"source_name":"postgres","offset":"0/1B2C3D4E","timestamp":1784583185586},)"
            R"("ts":1784583185590,"schema":"public","table":"orders","primary_key":["id"],"snapshot":null,)"
            R"("transaction":{"tx_id":3084,"total_events":2,"event_index":1},"envelope_version":1,)"
            R"("before_is_key_only":true})");
}

TEST(EventJson, UnavailableListsAreOmittedWhenEmptyAndPresentOtherwise) {
  Event e = update_event();
  EXPECT_EQ(e.to_json().find("unavailable_columns"), std::string::npos);
  e.unavailable_columns = {"body"};
  e.before = BeforeFull{{col("id", "42")}, {"body", "blob"}};
  const auto v = boost::json::parse(e.to_json()).as_object();
  ASSERT_TRUE(v.contains("unavailable_columns"));
  EXPECT_EQ(v.at("unavailable_columns").as_array().size(), 1u);
  EXPECT_EQ(v.at("before_unavailable_columns").as_array().size(), 2u);
  EXPECT_FALSE(v.at("before_is_key_only").as_bool());
}

TEST(EventJson, EscapesControlCharactersQuotesAndBackslashes) {
  Event e = update_event();
  e.after = Row{col("t", std::string("a\"b\\c\n\x01\xc3\xa9", 9))};
  const auto v = boost::json::parse(e.to_json()).as_object();
  EXPECT_EQ(std::string(v.at("after").as_object().at("t").as_string()),
            std::string("a\"b\\c\n\x01\xc3\xa9", 9));
}

TEST(EventJson, RoundTripsThroughFromJson) {
  Event e = update_event();
  auto back = Event::from_json(e.to_json());
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->before, e.before);
  EXPECT_EQ(back->transaction, e.transaction);
  EXPECT_EQ(back->source, e.source);
  ASSERT_TRUE(back->after);
  EXPECT_EQ((*back->after)[1], e.after->at(1));
  EXPECT_EQ((*back->after)[3], e.after->at(3));
  EXPECT_TRUE((*back->after)[2].is_json);
}

TEST(EventJson, FromJsonRefusesSelfContradictoryBeforeImage) {
  auto r = Event::from_json(
      R"({"before":null,"after":null,"op":"delete","source":{"source_name":"p","offset":"0/1","timestamp":1},)"
      R"("ts":1,"table":"t","envelope_version":1,"before_is_key_only":true})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
}

TEST(EventValidate, ColumnBothPresentAndUnavailableIsRefused) {
  Event e = update_event();
  e.unavailable_columns = {"status"};
  auto st = e.validate();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("status"), std::string::npos);
}

TEST(EventValidate, BuilderSetsEnvelopeVersionAndWrongVersionFails) {
  Event e = update_event();
  EXPECT_TRUE(e.validate());
  e.envelope_version = 7;
  EXPECT_FALSE(e.validate());
}

TEST(EventValidate, EventIndexMustBeBelowTotal) {
  Event e = update_event();
  e.transaction = TransactionMetadata{1, 2, 2};
  EXPECT_FALSE(e.validate());
}

TEST(RowWrite, CompleteUpdateIsReplace) {
  Event e = update_event();
  auto w = e.row_write();
  EXPECT_EQ(w.kind, RowWrite::Kind::kReplace);
  ASSERT_TRUE(w.key);
  EXPECT_EQ((*w.key)[0].text, "42");
  EXPECT_FALSE(w.previous_key);
  EXPECT_EQ(w.columns, &*e.after);
}

TEST(RowWrite, UnchangedToastUpdateIsMergeOfPresentColumnsOnly) {
  Event e = update_event();
  e.unavailable_columns = {"body"};
  auto w = e.row_write();
  EXPECT_EQ(w.kind, RowWrite::Kind::kMerge);
  EXPECT_TRUE(w.is_partial());
  EXPECT_EQ(find_column(*w.columns, "body"), nullptr);
}

TEST(RowWrite, KeyChangeCarriesPreviousKey) {
  Event e = update_event();
  e.before = BeforeKeyOnly{{col("id", "41")}};
  auto w = e.row_write();
  ASSERT_TRUE(w.previous_key);
  EXPECT_EQ((*w.previous_key)[0].text, "41");
}

TEST(RowWrite, DeleteUsesKeyFromBeforeImage) {
  Event e = EventBuilder("orders", Operation::kDelete)
                .source({"postgres", "0/1", 1})
                .before(BeforeKeyOnly{{col("id", "7")}})
                .primary_key({"id"})
                .build();
  auto w = e.row_write();
  EXPECT_EQ(w.kind, RowWrite::Kind::kDelete);
  EXPECT_EQ((*w.key)[0].text, "7");
}

TEST(RowWrite, TruncateSchemaChangeAndKeylessUpdate) {
  EXPECT_EQ(EventBuilder("t", Operation::kTruncate).build().row_write().kind,
            RowWrite::Kind::kTruncate);
  auto none = EventBuilder("t", Operation::kSchemaChange).build().row_write();
  EXPECT_EQ(none.kind, RowWrite::Kind::kNone);
  EXPECT_EQ(none.reason, NoRowWrite::kNotARowChange);
  auto keyless = EventBuilder("t", Operation::kUpdate).after({col("a", "1")}).build().row_write();
  EXPECT_EQ(keyless.kind, RowWrite::Kind::kNone);
  EXPECT_EQ(keyless.reason, NoRowWrite::kNoPrimaryKey);
  auto insert = EventBuilder("t", Operation::kInsert).after({col("a", "1")}).build().row_write();
  EXPECT_EQ(insert.kind, RowWrite::Kind::kReplace);
  EXPECT_FALSE(insert.key);
}

TEST(PrimaryKeyValues, CompositeKeyIsAllOrNothing) {
  Event e = EventBuilder("t", Operation::kUpdate)
                .after({col("tenant_id", "7"), col("x", "1")})
                .primary_key({"tenant_id", "id"})
                .build();
  EXPECT_FALSE(e.primary_key_values());
  auto w = e.row_write();
  EXPECT_EQ(w.kind, RowWrite::Kind::kNone);
  EXPECT_EQ(w.reason, NoRowWrite::kMissingPrimaryKey);
  e.after->push_back(col("id", "3"));
  auto key = e.primary_key_values();
  ASSERT_TRUE(key);
  ASSERT_EQ(key->size(), 2u);
  EXPECT_EQ((*key)[0].name, "tenant_id");
  EXPECT_EQ((*key)[1].name, "id");
}

TEST(BeforeImage, RowAndFullRowDistinguishKeyOnlyFromFull) {
  BeforeImage key_only = BeforeKeyOnly{{col("id", "1")}};
  BeforeImage full = BeforeFull{{col("id", "1"), col("a", "x")}, {}};
  BeforeImage none;
  EXPECT_NE(key_only.row(), nullptr);
  EXPECT_EQ(key_only.full_row(), nullptr);
  EXPECT_NE(full.full_row(), nullptr);
  EXPECT_EQ(none.row(), nullptr);
  EXPECT_TRUE(none.is_unavailable());
}

TEST(RowShape, ContentIdChangesWithTypeAndKey) {
  RowShape a("public", "t", {ColumnShape{"id", "integer", false, true}}, {"id"});
  RowShape b("public", "t", {ColumnShape{"id", "integer", false, true}}, {"id"});
  RowShape c("public", "t", {ColumnShape{"id", "bigint", false, true}}, {"id"});
  RowShape d("public", "t", {ColumnShape{"id", "integer", false, false}}, {});
  EXPECT_EQ(a.content_id(), b.content_id());
  EXPECT_NE(a.content_id(), c.content_id());
  EXPECT_NE(a.content_id(), d.content_id());
  EXPECT_EQ(a.content_id().size(), 32u);
}

TEST(Operation, ParsesCaseInsensitivelyAndRefusesUnknown) {
  EXPECT_EQ(parse_operation("INSERT").value(), Operation::kInsert);
  EXPECT_EQ(parse_operation("schema_change").value(), Operation::kSchemaChange);
  auto bad = parse_operation("upsert");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kConfiguration);
}

// Events that share everything after "after" (but a transaction's event_index) reuse the
// envelope tail written for the one before (event.cpp, TailCache). Whatever sequence a thread
// writes, each envelope must be byte for byte what a thread with nothing cached writes for it:
// checked from a snapshot row outside transactions and from a row inside one.
TEST(EventJson, AReusedEnvelopeTailIsNeverStale) {
  const Event outside = EventBuilder("orders", Operation::kRead)
                            .source({"postgres", "0/16B2E48", 1784583185586})
                            .schema("public")
                            .after({col("id", "1"), col("note", "a")})
                            .primary_key({"id"})
                            .ts(1784583185590)
                            .snapshot({"slot@0/16B2E48", 3, false})
                            .build();
  Event inside = outside;
  inside.op = Operation::kInsert;
  inside.snapshot.reset();
  inside.transaction = TransactionMetadata{7, 3, 1};
  for (const Event* start : std::array<const Event*, 2>{&outside, &inside}) {
    const Event& base = *start;
    SCOPED_TRACE(base.transaction ? "inside a transaction" : "outside transactions");
    std::vector<Event> variants;
    auto vary = [&](auto change) {
      Event e = base;
      change(e);
      variants.push_back(std::move(e));
    };
    vary([](Event& e) { e.after = Row{col("id", "2"), col("note", "b")}; });  // same tail
    vary([](Event& e) { e.op = Operation::kInsert; });
    vary([](Event& e) { e.source.source_name = "pg2"; });
    vary([](Event& e) { e.source.offset = "0/16B2E49"; });
    vary([](Event& e) { e.source.timestamp += 1; });
    vary([](Event& e) { e.ts += 1; });
    vary([](Event& e) { e.schema.reset(); });
    vary([](Event& e) { e.schema = "other"; });
    vary([](Event& e) { e.table = "orders2"; });
    vary([](Event& e) { e.primary_key.reset(); });
    vary([](Event& e) { e.primary_key = std::vector<std::string>{"id", "note"}; });
    vary([](Event& e) { e.snapshot.reset(); });
    // Whole values: the event inside a transaction has no snapshot metadata to change.
    vary([](Event& e) { e.snapshot = SnapshotMetadata{"slot@0/1", 3, false}; });
    vary([](Event& e) { e.snapshot = SnapshotMetadata{"slot@0/16B2E48", 4, false}; });
    vary([](Event& e) { e.snapshot = SnapshotMetadata{"slot@0/16B2E48", 3, true}; });
    vary([](Event& e) { e.envelope_version = 2; });
    vary([](Event& e) { e.unavailable_columns = {"note"}; });
    vary([](Event& e) {
      e.op = Operation::kUpdate;
      e.before = BeforeKeyOnly{{col("id", "1")}};
    });
    vary([](Event& e) {
      e.op = Operation::kUpdate;
      e.before = BeforeFull{{col("id", "1")}, {"note"}};
    });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 2, 0}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 2, 1}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 3, 2}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 3, 0}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{8, 3, 1}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 12, 1}; });
    vary([](Event& e) { e.transaction = TransactionMetadata{7, 12, 11}; });
    vary([](Event& e) { e.transaction.reset(); });

    auto fresh = [](const Event& e) {  // on a new thread: nothing cached
      std::string out;
      std::thread([&] { out = e.to_json(); }).join();
      return out;
    };
    const std::string base_json = fresh(base);
    for (std::size_t i = 0; i < variants.size(); ++i) {
      SCOPED_TRACE(i);
      const std::string want = fresh(variants[i]);
      // base, variant, variant again, base: each change of tail and each repeat.
      EXPECT_EQ(base.to_json(), base_json);
      EXPECT_EQ(variants[i].to_json(), want);
      EXPECT_EQ(variants[i].to_json(), want);
      EXPECT_EQ(base.to_json(), base_json);
    }
    // A long run of events each at a place of its own (the cache then compares only some of
    // them), then runs of 7 that share a place again, their index advancing.
    for (int i = 0; i < 100; ++i) {
      SCOPED_TRACE(i);
      Event e = base;
      e.source.offset = "0/" + std::to_string(i < 50 ? i : 50 + (i - 50) / 7);
      if (e.transaction) {
        e.transaction = TransactionMetadata{7, 100, static_cast<std::uint64_t>(i)};
      }
      EXPECT_EQ(e.to_json(), fresh(e));
    }
  }
}

// Found by tests/fuzz/event_fuzz.cpp: boost::json reads every number as a double, so a json
// column holding 1e400 came back as infinity, which to_json() then wrote as a bare Infinity
// (not JSON), and a long integer lost its last digits.
TEST(EventJson, FromJsonKeepsTheTextOfJsonColumnValues) {
  const std::string meta = R"({"n": 1e400, "big": 12345678901234567890123, "z": -0, "s": "\u00e9\"}"})";
  auto e = Event::from_json(
      R"({"before":{"id":"1","meta":)" + meta + R"(},"after":{"id":"1","meta":)" + meta +
      R"(,"list":[1.0, 2]},"op":"update","source":{"source_name":"p","offset":"0/1","timestamp":1},)"
      R"("ts":1,"schema":null,"table":"t","primary_key":["id"],"snapshot":null,"transaction":null,)"
      R"("envelope_version":1,"before_is_key_only":false})");
  ASSERT_TRUE(e) << e.error().report();
  ASSERT_TRUE(e->after);
  ASSERT_EQ(e->after->size(), 3u);
  EXPECT_EQ((*e->after)[1], col("meta", meta, true));
  EXPECT_EQ((*e->after)[2], col("list", "[1.0, 2]", true));
  ASSERT_TRUE(e->before.full_row());
  EXPECT_EQ(e->before.full_row()->at(1), col("meta", meta, true));

  const std::string json = e->to_json();
  boost::system::error_code ec;
  (void)boost::json::parse(json, ec);
  EXPECT_FALSE(ec) << json;
  auto back = Event::from_json(json);
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, *e);
}

TEST(EventJson, FromJsonTakesTheLastOfRepeatedKeysAndKeepsJsonValuesOnOneLine) {
  auto e = Event::from_json(
      "{\"after\":{\"id\":\"0\"},\"after\":{\"j\":[1,\r\n 2],\"id\":\"1\",\"j\":{\"a\":\n[3]},"
      "\"k\":\"x\",\"\\u006b\":4},\"op\":\"insert\",\"source\":{\"source_name\":\"p\","
      "\"offset\":\"0/1\",\"timestamp\":1},\"ts\":1,\"table\":\"t\",\"envelope_version\":1}");
  ASSERT_TRUE(e) << e.error().report();
  ASSERT_TRUE(e->after);
  EXPECT_EQ(*e->after, (Row{col("j", "{\"a\": [3]}", true), col("id", "1"), col("k", "4", true)}));
  EXPECT_EQ(e->to_json().find('\n'), std::string::npos);
}

TEST(EventJson, FromJsonRefusesAnEnvelopeVersionBeyondItsRange) {
  auto r = Event::from_json(
      R"({"before":null,"after":{"id":"1"},"op":"insert","source":{"source_name":"p","offset":"0/1",)"
      R"("timestamp":1},"ts":1,"table":"t","envelope_version":65537})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidData);
  EXPECT_NE(r.error().report().find("envelope_version"), std::string::npos) << r.error().report();
}

// A row may be both first and last of its table (or snapshot): the mark kept follows
// Debezium's precedence, whatever order the source sets them in.
TEST(Event, SnapshotEdgeMarksKeepTheOneThatTakesPrecedence) {
  using E = SnapshotEdge;
  const E order[] = {E::kFirst, E::kLast, E::kFirstInTable, E::kLastInTable, E::kNone};
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      Event e;
      mark_snapshot_edge(e, order[i]);
      mark_snapshot_edge(e, order[j]);
      EXPECT_EQ(e.snapshot_edge, order[std::min(i, j)]) << i << " " << j;
    }
  }
  Event e;
  EXPECT_EQ(e.snapshot_edge, E::kNone);
  EXPECT_TRUE(e.gtid.empty());
  // Neither is part of the envelope.
  e.gtid = "0-1-2";
  e.snapshot_edge = E::kLast;
  EXPECT_EQ(e.to_json(), Event().to_json());
  EXPECT_EQ(e, Event());
}
