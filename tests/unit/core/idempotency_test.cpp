// The idempotency guard and the event fingerprints (idempotency.hpp).

#include "cppcdc/idempotency.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <string>

#include "core/event_identity.hpp"
#include "core/siphash.hpp"

using namespace cppcdc;

namespace {

// An insert in a PostgreSQL transaction: identified by its transaction metadata.
Event tx_insert() {
  return EventBuilder("orders", Operation::kInsert)
      .source({"postgres", "0/16B2E48", 1'700'000'000'000})
      .schema("public")
      .primary_key({"id"})
      .after({ColumnValue{"id", "42", false}, ColumnValue{"note", std::nullopt, false},
              ColumnValue{"doc", R"({"a": [1, 2]})", true}})
      .transaction({771, 3, 1})
      .ts(1'700'000'000'123)
      .build();
}

// A delete with a key-only before-image and no transaction metadata: identified by its key.
Event keyed_delete() {
  return EventBuilder("customers", Operation::kDelete)
      .source({"mysql", "binlog.000003:1234", 0})
      .primary_key({"tenant", "id"})
      .before(BeforeKeyOnly{{ColumnValue{"tenant", "eu", false}, ColumnValue{"id", "7", false}}})
      .build();
}

// An update with a full before-image, an unchanged TOAST column and a snapshot marker.
Event partial_update() {
  Event e = EventBuilder("docs", Operation::kUpdate)
                .source({"postgres", "0/3000060", 5})
                .schema("app")
                .primary_key({"id"})
                .before(BeforeFull{{ColumnValue{"id", "1", false}, ColumnValue{"n", "1", false}},
                                   {"body"}})
                .after({ColumnValue{"id", "1", false}, ColumnValue{"n", "2", false}})
                .unavailable_columns({"body"})
                .build();
  return e;
}

// A row of a keyless table outside any transaction: nothing identifies it.
Event keyless_ping() {
  return EventBuilder("pings", Operation::kInsert)
      .source({"custom", "offset-9", 0})
      .after({ColumnValue{"status", "ok", false}})
      .build();
}

}  // namespace

TEST(Fingerprint, StableFingerprintsMatchTheGoldenVectors) {
  // Computed once from the encoding documented in idempotency.hpp (and checked against an
  // independent implementation of that layout). If one of these changes, fingerprints stored
  // by users stop matching: that needs a new encoding version, not a new expected value.
  EXPECT_EQ(fingerprint_event_stable(tx_insert()).value(),
            "9d8774a21ccce033b6ae9adba32a52c6a54e1fe50877f3eb77b5c8ed2a0ee688");
  EXPECT_EQ(fingerprint_event_stable(keyed_delete()).value(),
            "8ffd787ab3c30a6dd3a9e82dd519948378347b8f11340050322a6b343fd103cd");
  EXPECT_EQ(fingerprint_event_stable(partial_update()).value(),
            "a1d5d6506106b5be12253da13e022e19dab2306ed62358f89d89a9f532d0a19e");
  EXPECT_EQ(fingerprint_event_stable(keyless_ping()).value(),
            "b857d79e45e4d3849ccace0137c85644b4855bb8232a07ac1c3e3528d432d653");
}

TEST(Fingerprint, EncodingStartsWithItsVersionAndLengthPrefixesStrings) {
  std::string bytes;
  append_fingerprint_encoding(keyless_ping(), bytes);
  const std::string head("cppcdc.fingerprint.v1\0\x06\0\0\0custom", 32);
  EXPECT_EQ(bytes.substr(0, head.size()), head);
}

TEST(Fingerprint, IgnoresProductionAndCommitTimesButNotPositionSequenceOrPayload) {
  const Event base = tx_insert();
  const std::string fp = fingerprint_event_stable(base).value();
  Event later = base;
  later.ts += 60'000;
  later.source.timestamp += 5;
  later.resume_offset = "0/16B2F00";
  EXPECT_EQ(fingerprint_event_stable(later).value(), fp);

  Event moved = base;
  moved.source.offset = "0/16B2E49";
  EXPECT_NE(fingerprint_event_stable(moved).value(), fp);
  Event next_in_tx = base;
  next_in_tx.transaction->event_index = 2;
  EXPECT_NE(fingerprint_event_stable(next_in_tx).value(), fp);
  Event other_value = base;
  (*other_value.after)[0].text = "43";
  EXPECT_NE(fingerprint_event_stable(other_value).value(), fp);
  Event null_vs_empty = base;
  (*null_vs_empty.after)[1].text = "";
  EXPECT_NE(fingerprint_event_stable(null_vs_empty).value(), fp);
  Event json_flag = base;
  (*json_flag.after)[2].is_json = false;
  EXPECT_NE(fingerprint_event_stable(json_flag).value(), fp);
}

TEST(Fingerprint, TransientFingerprintIsDeterministicInAProcessAndTellsEventsApart) {
  const auto a = fingerprint_event_transient(tx_insert());
  EXPECT_EQ(fingerprint_event_transient(tx_insert()), a);
  Event moved = tx_insert();
  moved.source.offset = "0/16B2E49";
  EXPECT_NE(fingerprint_event_transient(moved), a);
  EXPECT_EQ(a.to_string().size(), 32u);
  EXPECT_EQ(a.to_string().find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(SipHash, MatchesTheReferenceVectors) {
  // Key 00..0f; messages 00..(n-1), from the SipHash reference implementation.
  detail::SipKey key{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  std::string msg;
  for (int i = 0; i < 15; ++i) msg.push_back(static_cast<char>(i));
  EXPECT_EQ(detail::siphash24_64(key, msg), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(detail::siphash24_64(key, ""), 0x726fdb47dd0e0e31ULL);
  const auto wide = detail::siphash24_128(key, "");
  // Output bytes a3 81 7f 04 ba 25 a8 e6 | 6d f6 72 14 c7 55 02 93, read little-endian.
  EXPECT_EQ(wide[0], 0xe6a825ba047f81a3ULL);
  EXPECT_EQ(wide[1], 0x930255c71472f66dULL);
}

TEST(IdempotencyGuard, ZeroCapacityIsAConfigurationError) {
  auto guard = EventIdempotencyGuard::create(0);
  ASSERT_FALSE(guard);
  EXPECT_EQ(guard.error().kind(), ErrorKind::kConfiguration);
  EXPECT_EQ(IdempotencyOptions::create(0).error().kind(), ErrorKind::kConfiguration);
  EXPECT_EQ(IdempotencyOptions::create(5).value().capacity, 5u);
  auto ok_guard = EventIdempotencyGuard::create(1);
  ASSERT_TRUE(ok_guard);
  EXPECT_EQ(ok_guard->set_ttl_ms(0).error().kind(), ErrorKind::kConfiguration);
}

TEST(IdempotencyGuard, SuppressesARepeatOfAnEventWithTransactionMetadata) {
  auto guard = EventIdempotencyGuard::create(10).value();
  EXPECT_TRUE(guard.should_process(tx_insert()));
  EXPECT_FALSE(guard.should_process(tx_insert()));
  Event next = tx_insert();
  next.transaction->event_index = 2;
  next.source.offset = "0/16B2F00";
  EXPECT_TRUE(guard.should_process(next));
  EXPECT_EQ(guard.unidentifiable_passthrough_count(), 0u);
  EXPECT_EQ(guard.size(), 2u);
}

TEST(IdempotencyGuard, SuppressesARepeatOfAnEventWithACompleteKey) {
  auto guard = EventIdempotencyGuard::create(10).value();
  EXPECT_TRUE(guard.should_process(keyed_delete()));
  EXPECT_FALSE(guard.should_process(keyed_delete()));
  EXPECT_EQ(guard.unidentifiable_passthrough_count(), 0u);
}

TEST(IdempotencyGuard, TwoIdenticalKeylessRowsWithoutTransactionMetadataBothPass) {
  // Two ('ok') rows inserted into a keyless table by one statement, on a source that numbers
  // nothing inside a transaction: byte for byte the same event, and both are real rows.
  auto guard = EventIdempotencyGuard::create(10).value();
  EXPECT_TRUE(guard.should_process(keyless_ping()));
  EXPECT_TRUE(guard.should_process(keyless_ping()));
  EXPECT_EQ(guard.unidentifiable_passthrough_count(), 2u);
  EXPECT_EQ(guard.size(), 0u);
  EXPECT_FALSE(guard.is_duplicate(keyless_ping()));
}

TEST(IdempotencyGuard, AKeyMissingFromTheRowImageIsNotAnIdentity) {
  Event e = keyed_delete();
  e.before = BeforeKeyOnly{{ColumnValue{"tenant", "eu", false}}};  // "id" absent
  EXPECT_FALSE(is_identifiable(e));
  auto guard = EventIdempotencyGuard::create(10).value();
  EXPECT_TRUE(guard.should_process(e));
  EXPECT_TRUE(guard.should_process(e));
  EXPECT_EQ(guard.unidentifiable_passthrough_count(), 2u);
  // A NULL key value is still a value that is present.
  Event null_key = tx_insert();
  null_key.transaction.reset();
  (*null_key.after)[0].text.reset();
  EXPECT_TRUE(is_identifiable(null_key));
}

TEST(IdempotencyGuard, AFullWindowEvictsTheOldestAndCountsIt) {
  auto guard = EventIdempotencyGuard::create(2).value();
  auto at = [](const char* offset) {
    Event e = tx_insert();
    e.source.offset = offset;
    return e;
  };
  EXPECT_TRUE(guard.should_process(at("0/1")));
  EXPECT_TRUE(guard.should_process(at("0/2")));
  EXPECT_EQ(guard.eviction_count(), 0u);
  EXPECT_TRUE(guard.should_process(at("0/3")));  // pushes 0/1 out
  EXPECT_EQ(guard.eviction_count(), 1u);
  EXPECT_EQ(guard.size(), 2u);
  EXPECT_FALSE(guard.should_process(at("0/3")));
  EXPECT_FALSE(guard.should_process(at("0/2")));
  EXPECT_TRUE(guard.should_process(at("0/1")));  // forgotten: a duplicate gets through
  EXPECT_EQ(guard.eviction_count(), 2u);
}

TEST(IdempotencyGuard, FingerprintsAgeOutAfterTheTtlOnTheGivenClock) {
  std::int64_t now = 1'000;
  IdempotencyOptions options;
  options.capacity = 10;
  options.ttl_ms = 60'000;
  auto guard = EventIdempotencyGuard::create(options, [&] { return now; }).value();
  EXPECT_TRUE(guard.should_process(tx_insert()));
  now += 59'999;
  EXPECT_FALSE(guard.should_process(tx_insert()));
  now += 1;  // 60 s after it was remembered
  EXPECT_TRUE(guard.should_process(tx_insert()));
  EXPECT_EQ(guard.size(), 1u);
  EXPECT_EQ(guard.eviction_count(), 0u);  // ageing out is not an eviction
  now += 30'000;
  EXPECT_FALSE(guard.should_process(tx_insert()));
}

TEST(IdempotencyGuard, CheckAndRecordSeparatelyForADurableWriteInBetween) {
  auto guard = EventIdempotencyGuard::create(10).value();
  EXPECT_FALSE(guard.is_duplicate(tx_insert()));
  EXPECT_FALSE(guard.is_duplicate(tx_insert()));  // looking remembers nothing
  guard.mark_processed(tx_insert());
  EXPECT_TRUE(guard.is_duplicate(tx_insert()));
  guard.mark_processed(keyless_ping());
  EXPECT_EQ(guard.unidentifiable_passthrough_count(), 1u);
}

TEST(IdempotencyGuard, TheWindowHoldsExactlyTheLastCapacityFingerprintsUnderCollisions) {
  // Fingerprints chosen to collide in the index (equal low bits) and to wrap around its end,
  // checked against a plain model after every step: the window is the last `capacity`
  // distinct fingerprints remembered.
  constexpr std::size_t kCapacity = 50;
  auto guard = EventIdempotencyGuard::create(kCapacity).value();
  std::deque<TransientFingerprint> model;
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int step = 0; step < 20'000; ++step) {
    const std::uint64_t k = next() % 300;
    // Low bits in a narrow band near the top of any power-of-two table: long probe runs that
    // wrap; hi tells fingerprints with equal low bits apart.
    TransientFingerprint fp{k, (k % 7) * 1024 + 1020 + (k % 5)};
    const bool in_model = std::find(model.begin(), model.end(), fp) != model.end();
    ASSERT_EQ(guard.contains(fp), in_model) << "step " << step;
    guard.remember(fp);
    if (!in_model) {
      model.push_back(fp);
      if (model.size() > kCapacity) model.pop_front();
    }
    ASSERT_EQ(guard.size(), model.size());
    if (step % 97 == 0) {
      for (std::uint64_t j = 0; j < 300; ++j) {
        TransientFingerprint probe{j, (j % 7) * 1024 + 1020 + (j % 5)};
        const bool expected = std::find(model.begin(), model.end(), probe) != model.end();
        ASSERT_EQ(guard.contains(probe), expected) << "step " << step << " key " << j;
      }
    }
  }
}

TEST(IdempotencyGuard, AnAgeLimitSetLaterCountsFromWhenItWasSet) {
  std::int64_t now = 0;
  IdempotencyOptions options;
  options.capacity = 10;
  auto guard = EventIdempotencyGuard::create(options, [&] { return now; }).value();
  guard.mark_processed(tx_insert());
  now = 1'000'000;
  ASSERT_TRUE(guard.set_ttl_ms(100));
  EXPECT_TRUE(guard.is_duplicate(tx_insert()));
  now += 100;
  EXPECT_FALSE(guard.is_duplicate(tx_insert()));
}

// The identity of a transacted event is a key kept per group (place, transaction id, event
// count) and the event's index: every event of a large transaction shares the key and has its
// own index, the same event gets the same identity again after other groups were identified in
// between, and a change of transaction id or count alone gives another key.
TEST(Fingerprint, TheEventsOfOneTransactionShareAKeyAndDifferInTheirIndex) {
  Event e = tx_insert();
  constexpr std::uint64_t kEvents = 200'000;
  e.transaction = TransactionMetadata{9, kEvents, 0};
  const auto first = detail::event_identity(e);
  EXPECT_EQ(first.index, 0u);
  for (std::uint64_t i = 1; i < kEvents; ++i) {
    e.transaction->event_index = i;
    const auto id = detail::event_identity(e);
    ASSERT_EQ(id.key, first.key) << i;
    ASSERT_EQ(id.index, i);
  }
  Event other = tx_insert();
  EXPECT_NE(detail::event_identity(other).key, first.key);  // another group in between
  e.transaction->event_index = 0;
  EXPECT_EQ(detail::event_identity(e), first);
  Event next_tx = e;
  next_tx.transaction = TransactionMetadata{10, kEvents, 0};
  EXPECT_NE(detail::event_identity(next_tx).key, first.key);
  Event other_count = e;
  other_count.transaction = TransactionMetadata{9, kEvents + 1, 0};
  EXPECT_NE(detail::event_identity(other_count).key, first.key);
}

TEST(Fingerprint, TheRuntimesIdentityOfATransactedEventIsItsPlaceNotItsImages) {
  const Event a = tx_insert();
  Event same_place = a;
  (*same_place.after)[1].text = "changed";  // images are not part of the identity
  EXPECT_EQ(detail::event_identity(same_place), detail::event_identity(a));
  Event next = a;
  next.transaction->event_index = 2;
  EXPECT_NE(detail::event_identity(next), detail::event_identity(a));
  Event moved = a;
  moved.source.offset = "0/16B2E49";
  EXPECT_NE(detail::event_identity(moved), detail::event_identity(a));
  // Without transaction metadata the identity is the whole encoding.
  EXPECT_EQ(detail::event_identity(keyed_delete()),
            (detail::EventIdentity{fingerprint_event_transient(keyed_delete()), 0}));
}
