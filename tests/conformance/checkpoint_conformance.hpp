#pragma once
// Conformance suite for checkpoint backends (Checkpoint, checkpoint.hpp). Every backend
// instantiates it with a harness that opens instances of the backend over storage of its own
// and can damage what it stored; see tests/conformance/README.md.
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(LocalFsCheckpoint, CheckpointConformance, LocalFsHarness);
//
// A harness is a default-constructible class (one per test, fresh empty storage, removed by
// its destructor) with:
//
//   static constexpr const char* kName;   // what Checkpoint::name() says ("local_fs")
//   static constexpr bool kSharedStorage; // instances open() returns share one record: a
//                                         // record outlives its instance, and two live
//                                         // instances are two writers. False (memory): the
//                                         // reopen and second-writer tests are skipped.
//   Result<std::unique_ptr<Checkpoint>> open(const std::string& source_id);
//   bool corrupt(const std::string& source_id);   // change bytes of the stored record in
//   bool truncate(const std::string& source_id);  // place / cut it short; false: the backend
//                                                 // stores no bytes (skipped)
//   std::string location(const std::string& source_id);  // what an error about the stored
//                                         // record must name: its file, else the backend
//   std::string writer_lock_location(const std::string& source_id);  // what the refusal of
//                                         // a second writer must name
//   std::optional<Status> save_failing_part_way(Checkpoint&, const CheckpointRecord&);
//                                         // runs save() so that it fails after it began to
//                                         // write; nullopt: cannot inject (skipped)
//   std::vector<SaveCrashPoint> crash_points();  // CPPCDC_FAULT_POINTs inside save(); empty:
//                                         // skipped
//   static constexpr bool kNewestWriterWins;  // optional: a second writer fences the first
//                                         // (the first's saves are refused from the second's
//                                         // first save on) instead of being refused itself
//   static std::string unavailable();     // optional: why the backend's server cannot be
//                                         // reached in this run (a variable that is not set);
//                                         // non-empty skips the test
//
// The suite registers the PostgreSQL and MySQL position orders: the invariant 6 tests use a
// binlog file+position regression and a zero LSN.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conformance/conformance_util.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/mysql.hpp"
#include "cppcdc/postgres/lsn.hpp"

namespace cppcdc::conformance {

/// A CPPCDC_FAULT_POINT inside a backend's save(), and which record a restart reads after the
/// process was killed there.
struct SaveCrashPoint {
  const char* name;
  bool new_record_survives;
};

/// The source id every record of the suite belongs to.
inline constexpr const char* kCheckpointSourceId = "conformance_slot";

/// A PostgreSQL record at `offset` with nothing partial.
inline CheckpointRecord postgres_record(std::string offset, std::uint64_t events) {
  CheckpointRecord r;
  r.source_type = "postgres";
  r.source_id = kCheckpointSourceId;
  r.offset = std::move(offset);
  r.committed_events = events;
  r.saved_at_ms = 1700000000000 + static_cast<std::int64_t>(events);
  return r;
}

/// A MySQL record at a binlog coordinate.
inline CheckpointRecord mysql_record(std::string offset, std::uint64_t events) {
  CheckpointRecord r = postgres_record(std::move(offset), events);
  r.source_type = "mysql";
  return r;
}

/// A record with every field set to something a careless encoding would lose: a partial
/// transaction, counters beyond 32 bits, a negative time, and a source_state with quotes,
/// backslashes, a newline and non-ASCII text (UTF-8).
inline CheckpointRecord full_record() {
  CheckpointRecord r;
  r.source_type = "postgres";
  r.source_id = kCheckpointSourceId;
  r.offset = "1A/16B2E48";
  r.committed_events = std::numeric_limits<std::uint64_t>::max() - 1;
  r.partial_tx_events = 3;
  r.partial_tx_id = 4294967301;
  r.source_state =
      "{\"incremental\":{\"tables\":[{\"table\":\"public.caf\xc3\xa9\",\"cursor\":[\"Zo\xc3\xab "
      "\\\"q\\\" \\\\ \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\",null]}]},\"note\":\"a\\nb\"}";
  r.saved_at_ms = -1234567890123;
  return r;
}

template <typename Harness>
class CheckpointConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg::register_positions();
    mysql::register_positions();
  }
  void SetUp() override {
    if constexpr (requires { Harness::unavailable(); }) {
      if (const std::string why = Harness::unavailable(); !why.empty()) GTEST_SKIP() << why;
    }
    harness_.emplace();
  }
  void TearDown() override { harness_.reset(); }

  Harness& harness() { return *harness_; }

  /// A new instance over the harness's storage; nullptr (and a test failure) when it fails.
  std::unique_ptr<Checkpoint> open() {
    auto opened = harness().open(kCheckpointSourceId);
    if (!opened) {
      ADD_FAILURE() << Harness::kName << ": open failed: " << opened.error().report();
      return nullptr;
    }
    return std::move(*opened);
  }

  /// The record `checkpoint` loads, failing the test when there is none or load fails.
  static std::optional<CheckpointRecord> loaded(Checkpoint& checkpoint) {
    auto record = checkpoint.load();
    if (!record) {
      ADD_FAILURE() << "load failed: " << record.error().report();
      return std::nullopt;
    }
    if (!*record) ADD_FAILURE() << "load found no record";
    return *record;
  }

  /// Expects `checkpoint` (and, with shared storage, a fresh instance) to hold `expected`.
  void expect_holds(std::unique_ptr<Checkpoint>& checkpoint, const CheckpointRecord& expected,
                    const std::string& when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(loaded(*checkpoint), expected);
    if (!Harness::kSharedStorage) return;
    checkpoint.reset();  // one writer at a time
    checkpoint = open();
    ASSERT_NE(checkpoint, nullptr);
    EXPECT_EQ(loaded(*checkpoint), expected) << "after reopening";
  }

  /// Expects load() to refuse the damaged record: an error (kind terminal) naming the
  /// location, never nullopt and never a record.
  void expect_damage_refused(Checkpoint& checkpoint, const std::string& what) {
    const auto record = checkpoint.load();
    ASSERT_FALSE(record) << what << ": load returned "
                         << (record->has_value() ? "a record" : "nullopt (a fresh start)");
    EXPECT_EQ(record.error().kind(), ErrorKind::kTerminal) << record.error().report();
    const std::string location = harness().location(kCheckpointSourceId);
    EXPECT_NE(record.error().report().find(location), std::string::npos)
        << what << ": the error does not name " << location << ": " << record.error().report();
  }

  /// Damages the saved record with `damage`, then checks that this instance and a fresh one
  /// refuse it, and that a save does not paper over it.
  template <typename Damage>
  void check_damage(Damage damage, const std::string& what) {
    auto checkpoint = open();
    ASSERT_NE(checkpoint, nullptr);
    ASSERT_TRUE(checkpoint->save(full_record()));
    if (!damage(kCheckpointSourceId)) {
      GTEST_SKIP() << Harness::kName << " stores no bytes that could be " << what;
    }
    expect_damage_refused(*checkpoint, what);
    // A save must not replace a record nobody could read: the damage would be hidden.
    const auto saved = checkpoint->save(postgres_record("1A/16B3000", 10));
    EXPECT_FALSE(saved) << "a save replaced a " << what << " record";
    expect_damage_refused(*checkpoint, what + ", after a refused save");
    if (Harness::kSharedStorage) {
      checkpoint.reset();
      checkpoint = open();
      ASSERT_NE(checkpoint, nullptr);
      expect_damage_refused(*checkpoint, what + ", in a fresh instance");
    }
  }

  std::optional<Harness> harness_;
};

TYPED_TEST_SUITE_P(CheckpointConformance);

TYPED_TEST_P(CheckpointConformance, NameIsTheBackendName) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->name(), TypeParam::kName);
}

TYPED_TEST_P(CheckpointConformance, EmptyStorageLoadsAsNullopt) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  const auto record = checkpoint->load();
  ASSERT_TRUE(record) << record.error().report();
  EXPECT_FALSE(record->has_value());
}

TYPED_TEST_P(CheckpointConformance, SaveThenLoadReturnsEveryField) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  const CheckpointRecord record = full_record();
  const auto saved = checkpoint->save(record);
  ASSERT_TRUE(saved) << saved.error().report();
  this->expect_holds(checkpoint, record, "after one save");
}

TYPED_TEST_P(CheckpointConformance, ASaveReplacesTheWholeRecord) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  ASSERT_TRUE(checkpoint->save(full_record()));
  // Every optional part of the first record is absent from the second: nothing may linger.
  const CheckpointRecord plain = postgres_record("1A/16B3000", 7);
  const auto saved = checkpoint->save(plain);
  ASSERT_TRUE(saved) << saved.error().report();
  this->expect_holds(checkpoint, plain, "after the second save");
}

TYPED_TEST_P(CheckpointConformance, AtomicReplaceAFailedSaveKeepsThePreviousRecord) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  const CheckpointRecord previous = full_record();
  ASSERT_TRUE(checkpoint->save(previous));
  const auto status =
      this->harness().save_failing_part_way(*checkpoint, postgres_record("1A/16B3000", 10));
  if (!status) GTEST_SKIP() << TypeParam::kName << " cannot make a save fail part way";
  ASSERT_FALSE(*status) << "the injected failure did not fail the save";
  this->expect_holds(checkpoint, previous, "after a save that failed part way");
  // The backend recovers: the next save goes through whole.
  const CheckpointRecord next = postgres_record("1A/16B4000", 11);
  const auto saved = checkpoint->save(next);
  ASSERT_TRUE(saved) << saved.error().report();
  this->expect_holds(checkpoint, next, "after the next save");
}

TYPED_TEST_P(CheckpointConformance, AtomicReplaceAProcessKilledDuringASaveLeavesOneWholeRecord) {
#ifndef CPPCDC_ENABLE_FAULT_POINTS
  GTEST_SKIP() << "built without CPPCDC_ENABLE_FAULT_POINTS";
#else
  const std::vector<SaveCrashPoint> points = this->harness().crash_points();
  if (points.empty()) GTEST_SKIP() << TypeParam::kName << " has no crash points in save()";
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  std::uint64_t events = 100;
  CheckpointRecord previous = postgres_record("1A/" + std::to_string(events), events);
  ASSERT_TRUE(checkpoint->save(previous));
  for (const SaveCrashPoint& point : points) {
    SCOPED_TRACE(point.name);
    events += 10;
    CheckpointRecord next = full_record();
    next.offset = "1A/" + std::to_string(events);
    next.committed_events = events;
    // The child shares the instance (and whatever it holds) and dies inside save().
    const pid_t child = ::fork();
    if (child == 0) {
      ::setenv("CPPCDC_FAULT_POINT", point.name, 1);
      const auto status = checkpoint->save(next);
      ::_exit(status ? 0 : 1);  // the fault point did not fire
    }
    ASSERT_GT(child, 0);
    int wait_status = 0;
    ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wait_status)) << "the child was not killed at " << point.name;
    const CheckpointRecord expected = point.new_record_survives ? next : previous;
    // What a restarted process reads.
    checkpoint.reset();
    checkpoint = this->open();
    ASSERT_NE(checkpoint, nullptr);
    EXPECT_EQ(this->loaded(*checkpoint), expected);
    previous = expected;
  }
  const CheckpointRecord last = postgres_record("1A/9000", events + 1);
  const auto saved = checkpoint->save(last);
  ASSERT_TRUE(saved) << "a save after the crashes failed: " << saved.error().report();
  this->expect_holds(checkpoint, last, "after a save following the crashes");
#endif
}

TYPED_TEST_P(CheckpointConformance, ChecksumACorruptedRecordIsRefusedNamingItsLocation) {
  this->check_damage([this](const std::string& id) { return this->harness().corrupt(id); },
                     "corrupted");
}

TYPED_TEST_P(CheckpointConformance, ChecksumATruncatedRecordIsRefusedNamingItsLocation) {
  this->check_damage([this](const std::string& id) { return this->harness().truncate(id); },
                     "truncated");
}

TYPED_TEST_P(CheckpointConformance, MonotonicGuardRefusesAMysqlFilePositionRegression) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  const CheckpointRecord previous = mysql_record("mysql-bin.000012:4567", 40);
  ASSERT_TRUE(checkpoint->save(previous));
  for (const std::string behind : {"mysql-bin.000012:100", "mysql-bin.000011:99999"}) {
    const auto status = checkpoint->save(mysql_record(behind, 41));
    ASSERT_FALSE(status) << "a regression to " << behind << " was saved";
    EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal) << status.error().report();
    const std::string report = status.error().report();
    EXPECT_NE(report.find("mysql-bin.000012:4567"), std::string::npos) << report;
    EXPECT_NE(report.find(behind), std::string::npos) << report;
  }
  this->expect_holds(checkpoint, previous, "after the refused regressions");
  // A fresh instance compares with what is stored, not with something it remembers.
  const auto again = checkpoint->save(mysql_record("mysql-bin.000012:4566", 41));
  EXPECT_FALSE(again) << "a regression was saved through a fresh instance";
  const CheckpointRecord forward = mysql_record("mysql-bin.000013:4", 42);
  const auto saved = checkpoint->save(forward);
  ASSERT_TRUE(saved) << saved.error().report();
  this->expect_holds(checkpoint, forward, "after moving forward");
}

TYPED_TEST_P(CheckpointConformance, MonotonicGuardRefusesAPostgresZeroLsn) {
  auto checkpoint = this->open();
  ASSERT_NE(checkpoint, nullptr);
  const CheckpointRecord previous = full_record();
  ASSERT_TRUE(checkpoint->save(previous));
  const auto status = checkpoint->save(postgres_record("0/0", 50));
  ASSERT_FALSE(status) << "a zero LSN was saved";
  EXPECT_EQ(status.error().kind(), ErrorKind::kTerminal) << status.error().report();
  const std::string report = status.error().report();
  EXPECT_NE(report.find(previous.offset), std::string::npos) << report;
  EXPECT_NE(report.find("'0/0'"), std::string::npos) << report;
  this->expect_holds(checkpoint, previous, "after the refused zero LSN");
}

TYPED_TEST_P(CheckpointConformance, ASecondWriterIsRefused) {
  if (!TypeParam::kSharedStorage) {
    GTEST_SKIP() << TypeParam::kName
                 << " keeps a record per instance: a second instance is not a second writer";
  }
  auto first = this->open();
  ASSERT_NE(first, nullptr);
  const CheckpointRecord record = postgres_record("1A/1000", 1);
  ASSERT_TRUE(first->save(record));

  const std::string lock = this->harness().writer_lock_location(kCheckpointSourceId);
  auto second = this->harness().open(kCheckpointSourceId);
  if constexpr (requires { TypeParam::kNewestWriterWins; }) {
    // Fencing the other way round (kafka_topic: a newer producer with the same transactional
    // id fences the older): the second writer saves, and the first is refused from then on.
    ASSERT_TRUE(second) << second.error().report();
    const CheckpointRecord newer = postgres_record("1A/2000", 2);
    const auto saved = (*second)->save(newer);
    ASSERT_TRUE(saved) << saved.error().report();
    const auto refused = first->save(postgres_record("1A/3000", 3));
    ASSERT_FALSE(refused) << "the fenced first writer still saved";
    EXPECT_NE(refused.error().report().find(lock), std::string::npos) << refused.error().report();
    EXPECT_EQ(this->loaded(**second), newer);
    return;
  }
  if (second) {
    // The backend lets it open, so it must refuse its writes.
    const auto status = (*second)->save(postgres_record("1A/2000", 2));
    ASSERT_FALSE(status) << "a second writer saved while the first was open";
    EXPECT_NE(status.error().report().find(lock), std::string::npos) << status.error().report();
  } else {
    EXPECT_NE(second.error().report().find(lock), std::string::npos)
        << "the refusal does not name " << lock << ": " << second.error().report();
  }
  // The first writer is unaffected.
  EXPECT_EQ(this->loaded(*first), record);
  const auto saved = first->save(postgres_record("1A/3000", 3));
  EXPECT_TRUE(saved) << saved.error().report();
}

TYPED_TEST_P(CheckpointConformance, ANewWriterOpensOnceTheFirstIsGone) {
  if (!TypeParam::kSharedStorage) {
    GTEST_SKIP() << TypeParam::kName << " keeps a record per instance";
  }
  const CheckpointRecord record = full_record();
  {
    auto first = this->open();
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->save(record));
  }
  auto second = this->open();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(this->loaded(*second), record);
  const CheckpointRecord next = postgres_record("1A/16B3000", 9);
  const auto saved = second->save(next);
  ASSERT_TRUE(saved) << saved.error().report();
  EXPECT_EQ(this->loaded(*second), next);
}

REGISTER_TYPED_TEST_SUITE_P(CheckpointConformance, NameIsTheBackendName, EmptyStorageLoadsAsNullopt,
                            SaveThenLoadReturnsEveryField, ASaveReplacesTheWholeRecord,
                            AtomicReplaceAFailedSaveKeepsThePreviousRecord,
                            AtomicReplaceAProcessKilledDuringASaveLeavesOneWholeRecord,
                            ChecksumACorruptedRecordIsRefusedNamingItsLocation,
                            ChecksumATruncatedRecordIsRefusedNamingItsLocation,
                            MonotonicGuardRefusesAMysqlFilePositionRegression,
                            MonotonicGuardRefusesAPostgresZeroLsn, ASecondWriterIsRefused,
                            ANewWriterOpensOnceTheFirstIsGone);

}  // namespace cppcdc::conformance
