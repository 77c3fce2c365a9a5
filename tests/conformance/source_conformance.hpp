#pragma once
// Conformance suite for sources (Source, source.hpp), driven through the Runtime as an
// embedder would: the six safety invariants of the architecture document (one test each,
// named Invariant1 .. Invariant6), resume at the boundary inside a partly acknowledged
// transaction, and restarts without duplicates. Every source instantiates it with a harness
// over a real database; see tests/conformance/README.md.
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(PostgresSource, SourceConformance, PostgresSourceHarness);
//
// A harness is a default-constructible class (one per test: fresh tables and a fresh log
// identity such as a replication slot; its destructor releases them) with:
//
//   static constexpr const char* kName;           // for messages ("postgres")
//   static std::optional<std::string> skip_reason();  // optional: why the suite skips (its
//                                                 // database is not available), or nullopt
//   Result<std::unique_ptr<Source>> make_source(); // a new, unstarted source over the same
//                                                 // tables and log identity, every call
//   std::vector<std::vector<std::string>> produce(int transactions, int changes_per_tx);
//                                                 // commits that many transactions, one after
//                                                 // the other, and returns each change's key,
//                                                 // per transaction, in commit order; each
//                                                 // key is new (never returned before)
//   std::string key_of(const Event&);             // the key of the change an event carries
//   std::vector<std::string> initial_keys();      // keys delivered without produce(), in any
//                                                 // order (the rows an initial or incremental
//                                                 // snapshot reads); empty when none
//   std::optional<std::string> released_position();  // how far the database has been told
//                                                 // it may release its log (PostgreSQL: the
//                                                 // slot's confirmed_flush_lsn); nullopt: the
//                                                 // source cannot tell (those checks skip)
//   std::string regressed_offset(const std::string& offset);  // an offset the source type's
//                                                 // position order refuses to follow `offset`
//
// Changes produced after Runtime::start() returned must be captured. A produced transaction
// of several changes must arrive as one transaction (Event::transaction set, one tx_id), and
// its last event is its resume boundary.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/conformance_util.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/position.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc::conformance {

/// What the runtime asked of a source and its checkpoint, in order.
struct SourceJournal {
  enum class Kind { kStart, kSave, kConfirm };
  struct Step {
    Kind kind;
    std::string offset;                      ///< saved or confirmed offset; start: resume's
    std::optional<CheckpointRecord> record;  ///< kSave: the record; kStart: the resume record
  };
  void add(Step step) {
    const std::lock_guard<std::mutex> lock(mutex);
    steps.push_back(std::move(step));
  }
  std::vector<Step> snapshot() const {
    const std::lock_guard<std::mutex> lock(mutex);
    return steps;
  }
  mutable std::mutex mutex;
  std::vector<Step> steps;
};

/// Forwards everything to the source under test and notes start() and confirm() calls.
class ObservedSource final : public Source {
 public:
  ObservedSource(std::unique_ptr<Source> inner, std::shared_ptr<SourceJournal> journal)
      : inner_(std::move(inner)), journal_(std::move(journal)) {}

  std::string type() const override { return inner_->type(); }
  std::string source_id() const override { return inner_->source_id(); }
  Status start(const std::optional<CheckpointRecord>& resume) override {
    journal_->add({SourceJournal::Kind::kStart, resume ? resume->offset : "", resume});
    return inner_->start(resume);
  }
  Status poll(std::vector<Event>& out, std::size_t max_events,
              std::chrono::milliseconds wait) override {
    return inner_->poll(out, max_events, wait);
  }
  Status confirm(std::string_view offset) override {
    journal_->add({SourceJournal::Kind::kConfirm, std::string(offset), std::nullopt});
    return inner_->confirm(offset);
  }
  std::optional<std::string> initial_offset() const override { return inner_->initial_offset(); }
  std::optional<std::string> idle_offset() override { return inner_->idle_offset(); }
  std::optional<std::string> idle_state() override { return inner_->idle_state(); }
  std::shared_ptr<IncrementalSnapshotControl> incremental_snapshot_control() override {
    return inner_->incremental_snapshot_control();
  }
  bool finished() override { return inner_->finished(); }
  void recycle(std::vector<Event>&& events) override { inner_->recycle(std::move(events)); }
  void close() override { inner_->close(); }

 private:
  std::unique_ptr<Source> inner_;
  std::shared_ptr<SourceJournal> journal_;
};

/// Forwards to a real backend and notes every successful save.
class ObservedCheckpoint final : public Checkpoint {
 public:
  ObservedCheckpoint(std::shared_ptr<Checkpoint> inner, std::shared_ptr<SourceJournal> journal)
      : inner_(std::move(inner)), journal_(std::move(journal)) {}
  std::string name() const override { return inner_->name(); }
  void observe(std::shared_ptr<SourceJournal> journal) { journal_ = std::move(journal); }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override { return inner_->load(); }
  Status do_save(const CheckpointRecord& record) override {
    auto saved = inner_->save(record);
    if (saved) journal_->add({SourceJournal::Kind::kSave, record.offset, record});
    return saved;
  }

 private:
  std::shared_ptr<Checkpoint> inner_;
  std::shared_ptr<SourceJournal> journal_;
};

template <typename Harness>
class SourceConformance : public ::testing::Test {
 protected:
  static constexpr std::chrono::seconds kWait{60};

  /// One runtime over a new source instance.
  struct Run {
    std::shared_ptr<SourceJournal> journal = std::make_shared<SourceJournal>();
    std::unique_ptr<Runtime> runtime;
    std::string source_type;
  };

  void SetUp() override {
    // A harness whose database is not available says why (optional static skip_reason()).
    if constexpr (requires { Harness::skip_reason(); }) {
      if (auto why = Harness::skip_reason()) GTEST_SKIP() << *why;
    }
    harness_.emplace();
  }
  void TearDown() override { harness_.reset(); }
  Harness& harness() { return *harness_; }

  /// A checkpoint that outlives runs: FileCheckpoint in a private directory, observed.
  std::shared_ptr<ObservedCheckpoint> durable_checkpoint() {
    auto opened = FileCheckpoint::open(dir_.path() / "state", "conformance");
    if (!opened) {
      ADD_FAILURE() << opened.error().report();
      return nullptr;
    }
    return std::make_shared<ObservedCheckpoint>(std::shared_ptr<Checkpoint>(std::move(*opened)),
                                                std::make_shared<SourceJournal>());
  }
  std::shared_ptr<ObservedCheckpoint> memory_checkpoint() {
    return std::make_shared<ObservedCheckpoint>(std::make_shared<InMemoryCheckpoint>(),
                                                std::make_shared<SourceJournal>());
  }

  /// A runtime over a new source and `checkpoint` (which then notes saves in the run's
  /// journal), not started.
  Run make_run(const std::shared_ptr<ObservedCheckpoint>& checkpoint) {
    Run run;
    auto source = harness().make_source();
    if (!source) {
      ADD_FAILURE() << Harness::kName << ": make_source failed: " << source.error().report();
      return run;
    }
    run.source_type = (*source)->type();
    checkpoint->observe(run.journal);
    RuntimeConfig config;
    config.source = std::make_unique<ObservedSource>(std::move(*source), run.journal);
    config.checkpoint = checkpoint;
    config.options.max_poll_wait_ms = 100;
    config.options.connection_retry.max_retries = 20;
    config.options.connection_retry.initial_delay_ms = 100;
    config.options.connection_retry.max_delay_ms = 1000;
    auto runtime = Runtime::create(std::move(config));
    if (!runtime) {
      ADD_FAILURE() << runtime.error().report();
      return run;
    }
    run.runtime = std::move(*runtime);
    return run;
  }

  /// make_run() and start().
  Run start_run(const std::shared_ptr<ObservedCheckpoint>& checkpoint) {
    Run run = make_run(checkpoint);
    if (!run.runtime) return run;
    const auto started = run.runtime->start();
    if (!started) {
      ADD_FAILURE() << Harness::kName << ": start failed: " << started.error().report();
      run.runtime.reset();
    }
    return run;
  }

  std::vector<std::string> keys_of(const std::vector<Event>& events) {
    std::vector<std::string> keys;
    keys.reserve(events.size());
    for (const Event& e : events) keys.push_back(harness().key_of(e));
    return keys;
  }

  static std::vector<std::string> flatten(const std::vector<std::vector<std::string>>& txs) {
    std::vector<std::string> out;
    for (const auto& tx : txs) out.insert(out.end(), tx.begin(), tx.end());
    return out;
  }

  /// Polls until a batch is not empty and returns it, unacknowledged; nullopt (and a test
  /// failure) on error or timeout.
  std::optional<EventBatch> next_batch(Runtime& runtime) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (true) {
      auto batch = runtime.poll_event_batch();
      if (!batch) {
        ADD_FAILURE() << "poll failed: " << batch.error().report();
        return std::nullopt;
      }
      if (!batch->empty()) return std::move(*batch);
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << Harness::kName << ": nothing arrived within " << kWait.count() << " s";
        return std::nullopt;
      }
    }
  }

  /// What ack_through() acknowledged.
  struct Cut {
    EventBatch batch;            ///< the batch holding the key; its tail is unacknowledged
    std::size_t acked_in_batch;  ///< its events up to and including the key's
    std::vector<Event> acked;    ///< every event acknowledged, in order
  };

  /// Polls and acknowledges whole batches until one holds the event with `key`, and
  /// acknowledges that batch up to and including it. nullopt (and a test failure) on error or
  /// timeout.
  std::optional<Cut> ack_through(Runtime& runtime, const std::string& key) {
    std::vector<Event> acked;
    while (true) {
      auto batch = next_batch(runtime);
      if (!batch) return std::nullopt;
      const auto& events = batch->events();
      const std::size_t at = index_of(events, key);
      const std::size_t n = at < events.size() ? at + 1 : events.size();
      const auto prefix = batch->ack_mode().token->accept_prefix(n);
      if (!prefix || !runtime.commit_ack(*prefix)) {
        ADD_FAILURE() << "acknowledging " << n << " events failed";
        return std::nullopt;
      }
      acked.insert(acked.end(), events.begin(), events.begin() + static_cast<std::ptrdiff_t>(n));
      if (at < events.size()) return Cut{std::move(*batch), n, std::move(acked)};
    }
  }

  /// Polls and acknowledges every batch until every key of `wanted` arrived; returns all the
  /// events delivered (acknowledged), in order.
  std::vector<Event> take_until(Runtime& runtime, const std::vector<std::string>& wanted) {
    std::vector<Event> out;
    std::set<std::string> missing(wanted.begin(), wanted.end());
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!missing.empty()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << Harness::kName << ": " << missing.size() << " changes (first "
                      << *missing.begin() << ") did not arrive within " << kWait.count() << " s";
        break;
      }
      auto batch = runtime.poll_event_batch();
      if (!batch) {
        ADD_FAILURE() << "poll failed: " << batch.error().report();
        break;
      }
      for (const Event& e : batch->events()) {
        missing.erase(harness().key_of(e));
        out.push_back(e);
      }
      const auto committed = runtime.commit_ack(batch->ack_mode());
      if (!committed) {
        ADD_FAILURE() << "commit failed: " << committed.error().report();
        break;
      }
    }
    return out;
  }

  /// `keys` without those in `got`.
  static std::vector<std::string> minus(const std::vector<std::string>& keys,
                                        const std::vector<std::string>& got) {
    const std::set<std::string> skip(got.begin(), got.end());
    std::vector<std::string> out;
    for (const auto& k : keys) {
      if (skip.count(k) == 0) out.push_back(k);
    }
    return out;
  }

  /// Index of the event with `key` in `events`, or events.size().
  std::size_t index_of(const std::vector<Event>& events, const std::string& key) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (harness().key_of(events[i]) == key) return i;
    }
    return events.size();
  }

  /// The resume_offset of the last boundary among events[0, n), or "" when none.
  static std::string last_boundary(const std::vector<Event>& events, std::size_t n) {
    for (std::size_t i = std::min(n, events.size()); i > 0; --i) {
      if (!events[i - 1].resume_offset.empty()) return events[i - 1].resume_offset;
    }
    return "";
  }

  /// `keys` without the initial (snapshot) keys.
  std::vector<std::string> without_initial(const std::vector<std::string>& keys) {
    return minus(keys, harness().initial_keys());
  }

  /// The checkpoint's record; nullopt when none (a failed load fails the test).
  static std::optional<CheckpointRecord> record_of(Checkpoint& checkpoint) {
    auto record = checkpoint.load();
    if (!record) {
      ADD_FAILURE() << "load failed: " << record.error().report();
      return std::nullopt;
    }
    return *record;
  }

  /// Orders two offsets of the source type; fails the test when they do not compare.
  std::partial_ordering compare(const std::string& type, const std::string& a,
                                const std::string& b) {
    const auto order = find_position_order(type);
    if (!order) {
      ADD_FAILURE() << "no position order is registered for source type '" << type << "'";
      return std::partial_ordering::unordered;
    }
    const auto result = order->compare(a, b);
    if (!result) {
      ADD_FAILURE() << "offsets '" << a << "' and '" << b
                    << "' do not compare: " << result.error().report();
      return std::partial_ordering::unordered;
    }
    return *result;
  }

  std::optional<Harness> harness_;
  TempDir dir_{"cppcdc-conformance-source"};
};

TYPED_TEST_SUITE_P(SourceConformance);

// Invariant 1: no checkpoint advancement without explicit ack.
TYPED_TEST_P(SourceConformance, Invariant1NoCheckpointAdvancesWithoutAnExplicitAck) {
  auto checkpoint = this->memory_checkpoint();
  auto run = this->start_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  const auto txs = this->harness().produce(2, 3);
  auto batch = this->next_batch(*run.runtime);
  ASSERT_TRUE(batch);
  // Delivered, not acknowledged: whatever was saved so far covers no event.
  const auto held = this->record_of(*checkpoint);
  if (held) {
    EXPECT_EQ(held->committed_events, 0u) << "saved while a batch was unacknowledged";
  }

  // Committing an empty prefix acknowledges nothing, and the batch comes again, first.
  const auto none = batch->ack_mode().token->accept_prefix(0);
  ASSERT_TRUE(none);
  ASSERT_TRUE(run.runtime->commit_ack(*none));
  EXPECT_EQ(this->record_of(*checkpoint), held);
  auto again = run.runtime->poll_event_batch();
  ASSERT_TRUE(again) << again.error().report();
  ASSERT_GE(again->size(), batch->size());
  const auto first_keys = this->keys_of(batch->events());
  auto again_keys = this->keys_of(again->events());
  again_keys.resize(first_keys.size());
  EXPECT_EQ(again_keys, first_keys);
  EXPECT_EQ(this->record_of(*checkpoint), held);

  // The acknowledgement is what moves it: to the batch's last boundary, counting each event.
  ASSERT_TRUE(run.runtime->commit_ack(again->ack_mode()));
  const auto acked = this->record_of(*checkpoint);
  ASSERT_TRUE(acked);
  EXPECT_EQ(acked->committed_events, again->size());
  const std::string boundary = this->last_boundary(again->events(), again->size());
  if (!boundary.empty()) {
    EXPECT_EQ(acked->offset, boundary);
  }
  const auto rest = this->take_until(
      *run.runtime, this->minus(this->flatten(txs), this->keys_of(again->events())));
  const auto total = this->record_of(*checkpoint);
  ASSERT_TRUE(total);
  EXPECT_EQ(total->committed_events, again->size() + rest.size());
  ASSERT_TRUE(run.runtime->stop());
}

// Invariant 2: no source confirmation beyond checkpointed progress.
TYPED_TEST_P(SourceConformance, Invariant2TheSourceIsConfirmedOnlyUpToADurableCheckpoint) {
  auto checkpoint = this->memory_checkpoint();
  auto run = this->start_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  const auto txs = this->harness().produce(3, 2);
  auto batch = this->next_batch(*run.runtime);
  ASSERT_TRUE(batch);
  // Nothing delivered and unacknowledged may be released yet.
  if (const auto released = this->harness().released_position()) {
    for (const Event& e : batch->events()) {
      if (e.resume_offset.empty() || !e.transaction) continue;
      EXPECT_TRUE(this->compare(run.source_type, *released, e.resume_offset) < 0)
          << "released up to " << *released << " while the event ending at " << e.resume_offset
          << " is unacknowledged";
    }
  }
  ASSERT_TRUE(run.runtime->commit_ack(batch->ack_mode()));
  auto wanted = this->minus(this->flatten(txs), this->keys_of(batch->events()));
  const auto more = this->flatten(this->harness().produce(1, 1));
  wanted.insert(wanted.end(), more.begin(), more.end());
  this->take_until(*run.runtime, wanted);
  // A few quiet polls: idle positions are checkpointed and confirmed too.
  for (int i = 0; i < 3; ++i) {
    auto quiet = run.runtime->poll_event_batch();
    ASSERT_TRUE(quiet) << quiet.error().report();
    ASSERT_TRUE(run.runtime->commit_ack(quiet->ack_mode()));
  }
  ASSERT_TRUE(run.runtime->stop());

  // Every confirmation follows a save of exactly that offset.
  std::optional<std::string> saved;
  int confirms = 0;
  for (const auto& step : run.journal->snapshot()) {
    if (step.kind == SourceJournal::Kind::kSave) saved = step.offset;
    if (step.kind != SourceJournal::Kind::kConfirm) continue;
    ++confirms;
    ASSERT_TRUE(saved) << "confirmed " << step.offset << " before any checkpoint was saved";
    EXPECT_EQ(step.offset, *saved) << "confirmed an offset other than the last one saved";
  }
  EXPECT_GT(confirms, 0) << "acknowledged changes were never confirmed to the source";
  const auto final_record = this->record_of(*checkpoint);
  ASSERT_TRUE(final_record);
  if (const auto released = this->harness().released_position()) {
    EXPECT_FALSE(this->compare(run.source_type, *released, final_record->offset) > 0)
        << "released up to " << *released << ", past the checkpoint at " << final_record->offset;
  }
}

// Invariant 3: restart begins from the persisted checkpoint position.
TYPED_TEST_P(SourceConformance, Invariant3ARestartBeginsFromThePersistedCheckpoint) {
  auto checkpoint = this->durable_checkpoint();
  ASSERT_TRUE(checkpoint);
  std::vector<std::string> first_keys;
  {
    auto run = this->start_run(checkpoint);
    ASSERT_TRUE(run.runtime);
    const auto txs = this->harness().produce(2, 2);
    first_keys = this->keys_of(this->take_until(*run.runtime, this->flatten(txs)));
    ASSERT_TRUE(run.runtime->stop());
  }
  const auto persisted = this->record_of(*checkpoint);
  ASSERT_TRUE(persisted);

  auto run = this->start_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  const auto steps = run.journal->snapshot();
  ASSERT_FALSE(steps.empty());
  ASSERT_EQ(steps[0].kind, SourceJournal::Kind::kStart);
  EXPECT_EQ(steps[0].record, persisted) << "the source was not started at the checkpoint";

  const auto txs = this->harness().produce(1, 3);
  const auto keys = this->keys_of(this->take_until(*run.runtime, this->flatten(txs)));
  EXPECT_EQ(this->without_initial(keys), this->flatten(txs));
  for (const auto& k : keys) {
    EXPECT_EQ(std::count(first_keys.begin(), first_keys.end(), k), 0)
        << k << " was delivered and acknowledged before the restart, and again after it";
  }
  ASSERT_TRUE(run.runtime->stop());
}

// Invariant 4: unacknowledged deliveries are replayable.
TYPED_TEST_P(SourceConformance, Invariant4UnacknowledgedDeliveriesAreReplayed) {
  auto checkpoint = this->memory_checkpoint();
  std::vector<std::vector<std::string>> txs;
  std::vector<std::string> acked;
  {
    auto run = this->start_run(checkpoint);
    ASSERT_TRUE(run.runtime);
    txs = this->harness().produce(3, 2);
    // Everything through the first transaction is acknowledged ...
    auto cut = this->ack_through(*run.runtime, txs[0].back());
    ASSERT_TRUE(cut);
    acked = this->keys_of(cut->acked);
    const auto& events = cut->batch.events();
    if (cut->acked_in_batch < events.size()) {
      // ... and in the same run the rest of that batch is handed out again, first.
      const auto tail = this->keys_of(
          {events.begin() + static_cast<std::ptrdiff_t>(cut->acked_in_batch), events.end()});
      auto again = run.runtime->poll_event_batch();
      ASSERT_TRUE(again) << again.error().report();
      auto again_keys = this->keys_of(again->events());
      ASSERT_GE(again_keys.size(), tail.size());
      again_keys.resize(tail.size());
      EXPECT_EQ(again_keys, tail);
    } else {
      ASSERT_TRUE(this->next_batch(*run.runtime));  // delivered, never acknowledged
    }
    run.runtime->force_stop();  // with a batch in flight
  }
  // After a restart, everything unacknowledged comes again, and nothing acknowledged does.
  auto run = this->start_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  const auto marker = this->harness().produce(1, 1);
  const auto keys = this->keys_of(this->take_until(*run.runtime, this->flatten(marker)));
  std::vector<std::string> expected = txs[1];
  expected.insert(expected.end(), txs[2].begin(), txs[2].end());
  expected.push_back(marker[0][0]);
  EXPECT_EQ(this->without_initial(keys), expected);
  for (const auto& k : keys) {
    EXPECT_EQ(std::count(acked.begin(), acked.end(), k), 0) << k << " was acknowledged";
  }
  ASSERT_TRUE(run.runtime->stop());
}

// Invariant 5: runtime lifecycle transitions are explicit and validated.
TYPED_TEST_P(SourceConformance, Invariant5LifecycleTransitionsAreValidated) {
  auto checkpoint = this->memory_checkpoint();
  auto run = this->make_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  EXPECT_EQ(run.runtime->state(), RuntimeState::kCreated);
  auto early = run.runtime->poll_event_batch();
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().kind(), ErrorKind::kInvalidState);

  ASSERT_TRUE(run.runtime->start());
  EXPECT_EQ(run.runtime->state(), RuntimeState::kRunning);
  const auto twice = run.runtime->start();
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().kind(), ErrorKind::kInvalidState);

  const auto txs = this->harness().produce(1, 2);
  auto batch = this->next_batch(*run.runtime);
  ASSERT_TRUE(batch);
  auto second = run.runtime->poll_event_batch();
  ASSERT_FALSE(second) << "a second batch was handed out before the first was acknowledged";
  EXPECT_EQ(second.error().kind(), ErrorKind::kInvalidState);
  const auto refused = run.runtime->stop();
  ASSERT_FALSE(refused) << "stopped with a batch unacknowledged";
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidState);
  EXPECT_EQ(run.runtime->state(), RuntimeState::kRunning);

  const AckMode mode = batch->ack_mode();
  ASSERT_TRUE(run.runtime->commit_ack(mode));
  const auto reused = run.runtime->commit_ack(mode);
  ASSERT_FALSE(reused) << "a token was committed twice";
  EXPECT_EQ(reused.error().kind(), ErrorKind::kInvalidState);

  ASSERT_TRUE(run.runtime->stop());
  EXPECT_EQ(run.runtime->state(), RuntimeState::kStopped);
  auto late = run.runtime->poll_event_batch();
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind(), ErrorKind::kInvalidState);
}

// Invariant 6: a durable checkpoint never moves the stream position backwards.
TYPED_TEST_P(SourceConformance, Invariant6ADurableCheckpointNeverMovesBackwards) {
  auto checkpoint = this->durable_checkpoint();
  ASSERT_TRUE(checkpoint);
  std::vector<SourceJournal::Step> saves;
  std::vector<Event> delivered;
  std::string type;
  for (int round = 0; round < 2; ++round) {
    auto run = this->start_run(checkpoint);
    ASSERT_TRUE(run.runtime);
    type = run.source_type;
    // Batches acknowledged two events at a time: on boundaries and inside transactions.
    const auto txs = this->harness().produce(3, 3);
    const auto wanted = this->flatten(txs);
    std::set<std::string> missing(wanted.begin(), wanted.end());
    const auto deadline = std::chrono::steady_clock::now() + this->kWait;
    while (!missing.empty()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << missing.size() << " missing";
      auto batch = run.runtime->poll_event_batch();
      ASSERT_TRUE(batch) << batch.error().report();
      if (batch->empty()) continue;
      const std::size_t n = std::min<std::size_t>(2, batch->size());
      auto prefix = batch->ack_mode().token->accept_prefix(n);
      ASSERT_TRUE(prefix);
      ASSERT_TRUE(run.runtime->commit_ack(*prefix));
      for (std::size_t i = 0; i < n; ++i) {
        missing.erase(this->harness().key_of(batch->events()[i]));
        delivered.push_back(batch->events()[i]);
      }
    }
    // The tail of the last batch is still handed out: acknowledge it before stopping.
    const auto settled = run.runtime->poll_event_batch();
    ASSERT_TRUE(settled) << settled.error().report();
    ASSERT_TRUE(run.runtime->commit_ack(settled->ack_mode()));
    delivered.insert(delivered.end(), settled->events().begin(), settled->events().end());
    ASSERT_TRUE(run.runtime->stop());
    for (const auto& step : run.journal->snapshot()) {
      if (step.kind == SourceJournal::Kind::kSave) saves.push_back(step);
    }
  }
  const auto order = find_position_order(type);
  ASSERT_TRUE(order) << "no position order is registered for source type '" << type << "'";
  // Every offset the source hands out parses in its own notation.
  for (const Event& e : delivered) {
    if (e.resume_offset.empty()) continue;
    const auto parsed = order->parse(e.resume_offset);
    EXPECT_TRUE(parsed) << parsed.error().report();
  }
  ASSERT_FALSE(saves.empty());
  for (std::size_t i = 1; i < saves.size(); ++i) {
    const CheckpointRecord& before = *saves[i - 1].record;
    const CheckpointRecord& after = *saves[i].record;
    const auto guard = check_monotonic(before, after);
    EXPECT_TRUE(guard) << guard.error().report();
    // One writer committing one transaction after another: its position only moves on.
    EXPECT_FALSE(this->compare(type, before.offset, after.offset) > 0)
        << "the checkpoint moved back from " << before.offset << " to " << after.offset;
    EXPECT_LE(before.committed_events, after.committed_events);
  }
  // The guard stands between the runtime and the backend: a regression is refused and the
  // durable record stays.
  const auto last = this->record_of(*checkpoint);
  ASSERT_TRUE(last);
  CheckpointRecord regressed = *last;
  regressed.offset = this->harness().regressed_offset(last->offset);
  regressed.committed_events += 1;
  const auto refused = checkpoint->save(regressed);
  ASSERT_FALSE(refused) << "a checkpoint moved from " << last->offset << " to " << regressed.offset;
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal) << refused.error().report();
  EXPECT_EQ(this->record_of(*checkpoint), last);
}

TYPED_TEST_P(SourceConformance, ResumeAtTheBoundaryDeliversOnlyTheRestOfAPartlyAckedTransaction) {
  auto checkpoint = this->durable_checkpoint();
  ASSERT_TRUE(checkpoint);
  std::vector<std::vector<std::string>> txs;
  std::vector<std::string> acked;
  {
    auto run = this->start_run(checkpoint);
    ASSERT_TRUE(run.runtime);
    txs = this->harness().produce(3, 4);
    // Everything up to and including the second change of the second transaction.
    auto cut = this->ack_through(*run.runtime, txs[1][1]);
    ASSERT_TRUE(cut);
    const Event& inside = cut->acked.back();
    ASSERT_TRUE(inside.transaction) << "a produced change arrived outside a transaction";
    EXPECT_TRUE(inside.resume_offset.empty()) << "a change inside a transaction is a boundary";
    acked = this->keys_of(cut->acked);

    // The checkpoint holds a boundary before the transaction and how far into it the
    // acknowledgement reached. That boundary is the last one delivered before it, or a later
    // idle position the source reported between the two transactions (a PostgreSQL keepalive
    // can arrive before the second transaction is sent); the restart below proves it lies
    // before the second transaction's end.
    const auto record = this->record_of(*checkpoint);
    ASSERT_TRUE(record);
    EXPECT_FALSE(record->offset.empty());
    const std::size_t second_begins = this->index_of(cut->acked, txs[1][0]);
    const std::string before = this->last_boundary(cut->acked, second_begins);
    if (!before.empty() && !record->offset.empty()) {
      EXPECT_TRUE(this->compare(run.source_type, record->offset, before) >= 0)
          << "checkpointed " << record->offset << ", before the boundary " << before
          << " already acknowledged";
    }
    EXPECT_EQ(record->partial_tx_events, 2u);
    EXPECT_EQ(record->partial_tx_id, inside.transaction->tx_id);
    EXPECT_EQ(record->committed_events, cut->acked.size());
    run.runtime->force_stop();
  }
  auto run = this->start_run(checkpoint);
  ASSERT_TRUE(run.runtime);
  const auto marker = this->harness().produce(1, 1);
  const auto keys = this->keys_of(this->take_until(*run.runtime, this->flatten(marker)));
  std::vector<std::string> expected(txs[1].begin() + 2, txs[1].end());
  expected.insert(expected.end(), txs[2].begin(), txs[2].end());
  expected.push_back(marker[0][0]);
  EXPECT_EQ(this->without_initial(keys), expected);
  for (const auto& k : keys) {
    EXPECT_EQ(std::count(acked.begin(), acked.end(), k), 0) << k << " was acknowledged";
  }
  ASSERT_TRUE(run.runtime->stop());
  const auto record = this->record_of(*checkpoint);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->partial_tx_events, 0u);
  EXPECT_EQ(record->committed_events, acked.size() + keys.size());
}

TYPED_TEST_P(SourceConformance, RestartsWithoutDuplicatesDeliverEveryChangeExactlyOnce) {
  auto checkpoint = this->durable_checkpoint();
  ASSERT_TRUE(checkpoint);
  std::vector<std::string> expected = this->harness().initial_keys();
  std::vector<std::string> delivered;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Changes made while no source runs are read after the restart.
    if (round > 0) {
      const auto offline = this->flatten(this->harness().produce(2, 2));
      expected.insert(expected.end(), offline.begin(), offline.end());
    }
    auto run = this->start_run(checkpoint);
    ASSERT_TRUE(run.runtime);
    const auto online = this->flatten(this->harness().produce(3, 2));
    expected.insert(expected.end(), online.begin(), online.end());
    // Wait for everything expected and not yet delivered (the snapshot rows too) before
    // stopping cleanly.
    const auto keys =
        this->keys_of(this->take_until(*run.runtime, this->minus(expected, delivered)));
    delivered.insert(delivered.end(), keys.begin(), keys.end());
    ASSERT_TRUE(run.runtime->stop());
  }
  std::map<std::string, int> times;
  for (const auto& k : delivered) ++times[k];
  for (const auto& k : expected) {
    EXPECT_EQ(times[k], 1) << k << " was delivered " << times[k] << " times";
  }
  EXPECT_EQ(delivered.size(), expected.size());
  const auto record = this->record_of(*checkpoint);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->committed_events, delivered.size());
}

REGISTER_TYPED_TEST_SUITE_P(SourceConformance, Invariant1NoCheckpointAdvancesWithoutAnExplicitAck,
                            Invariant2TheSourceIsConfirmedOnlyUpToADurableCheckpoint,
                            Invariant3ARestartBeginsFromThePersistedCheckpoint,
                            Invariant4UnacknowledgedDeliveriesAreReplayed,
                            Invariant5LifecycleTransitionsAreValidated,
                            Invariant6ADurableCheckpointNeverMovesBackwards,
                            ResumeAtTheBoundaryDeliversOnlyTheRestOfAPartlyAckedTransaction,
                            RestartsWithoutDuplicatesDeliverEveryChangeExactlyOnce);

}  // namespace cppcdc::conformance
