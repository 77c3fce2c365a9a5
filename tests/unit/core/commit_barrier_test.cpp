// The commit barrier's plan, as a pure function: tables of cases for what an acknowledgement
// may checkpoint and confirm (architecture document, "Safety Invariants" 1, 2 and 6).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/commit_barrier.hpp"

// The case tables leave trailing fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cppcdc::detail {
namespace {

constexpr std::int64_t kNow = 1'700'000'000'000;

// One event; `resume` empty means "not a boundary"; tx 0 means outside a transaction.
Event ev(std::uint64_t tx, std::string resume = {}, std::string state = {}) {
  Event e;
  e.op = Operation::kInsert;
  e.table = "t";
  if (tx != 0) e.transaction = TransactionMetadata{tx, 3, 0};
  e.resume_offset = std::move(resume);
  e.resume_state = std::move(state);
  return e;
}

CheckpointRecord durable(std::string offset, std::uint64_t partial_events = 0,
                         std::uint64_t partial_tx = 0, std::string state = {}) {
  CheckpointRecord r;
  r.source_type = "fake";
  r.source_id = "slot";
  r.offset = std::move(offset);
  r.committed_events = 100;
  r.partial_tx_events = partial_events;
  r.partial_tx_id = partial_tx;
  r.source_state = std::move(state);
  return r;
}

BarrierState at(std::optional<CheckpointRecord> record, std::string initial = {}) {
  BarrierState s;
  s.source_type = "fake";
  s.source_id = "slot";
  s.durable = std::move(record);
  s.initial_offset = std::move(initial);
  s.committed_events = s.durable ? s.durable->committed_events : 0;
  return s;
}

struct Case {
  const char* name;
  BarrierState state;
  std::vector<Event> acked;
  // Expected plan; nullopt offset: nothing saved.
  std::optional<std::string> offset;
  std::uint64_t partial_events = 0;
  std::uint64_t partial_tx = 0;
  std::optional<std::string> confirm;
  std::string source_state;
};

std::vector<Case> commit_cases() {
  return {
      {"a whole transaction moves the checkpoint to its boundary and confirms it",
       at(durable("0/10")), {ev(7), ev(7), ev(7, "0/20")}, "0/20", 0, 0, "0/20"},
      {"the last of several boundaries wins, with its own state",
       at(durable("0/10")), {ev(7, "0/20", "s1"), ev(8, "0/30", "s2")}, "0/30", 0, 0, "0/30",
       "s2"},
      {"a prefix ending inside a transaction records the head after the last boundary",
       at(durable("0/10")), {ev(7, "0/20"), ev(8), ev(8)}, "0/20", 2, 8, "0/20"},
      {"a prefix inside one transaction with no boundary keeps the offset and does not confirm",
       at(durable("0/10")), {ev(8), ev(8)}, "0/10", 2, 8, std::nullopt},
      {"the same partial transaction goes on: its head grows",
       at(durable("0/10", 2, 8)), {ev(8)}, "0/10", 3, 8, std::nullopt},
      {"another transaction after a partial one starts its own count",
       at(durable("0/10", 2, 8)), {ev(9)}, "0/10", 1, 9, std::nullopt},
      {"a fresh start acknowledged inside its first transaction uses the initial offset",
       at(std::nullopt, "0/5"), {ev(7), ev(7)}, "0/5", 2, 7, std::nullopt},
      {"a fresh start without any position saves nothing (the events come again)",
       at(std::nullopt), {ev(7), ev(7)}, std::nullopt},
      {"an unchanged boundary and state saves nothing",
       at(durable("0/20")), {ev(7, "0/20")}, std::nullopt},
      {"an unchanged offset with new source state is saved and confirmed",
       at(durable("0/20", 0, 0, "old")), {ev(0, "0/20", "new")}, "0/20", 0, 0, "0/20", "new"},
      {"events outside any transaction after the boundary are no partial transaction",
       at(durable("0/10")), {ev(7, "0/20"), ev(0)}, "0/20", 0, 0, "0/20"},
      {"a boundary completes a partial transaction: the head count is cleared",
       at(durable("0/10", 2, 8)), {ev(8, "0/30")}, "0/30", 0, 0, "0/30"},
      {"a lower offset (commit order is not log order) is still what was acknowledged",
       at(durable("0/30")), {ev(9, "0/20")}, "0/20", 0, 0, "0/20"},
  };
}

TEST(CommitPlan, PlanForEachAcknowledgement) {
  for (const auto& c : commit_cases()) {
    SCOPED_TRACE(c.name);
    const auto plan = plan_commit(c.state, c.acked, kNow);
    EXPECT_EQ(plan.committed_events, c.state.committed_events + c.acked.size());
    ASSERT_EQ(plan.record.has_value(), c.offset.has_value());
    EXPECT_EQ(plan.confirm, c.confirm);
    if (!plan.record) continue;
    EXPECT_EQ(plan.record->offset, *c.offset);
    EXPECT_EQ(plan.record->partial_tx_events, c.partial_events);
    EXPECT_EQ(plan.record->partial_tx_id, c.partial_tx);
    EXPECT_EQ(plan.record->source_state, c.source_state);
    EXPECT_EQ(plan.record->source_type, "fake");
    EXPECT_EQ(plan.record->source_id, "slot");
    EXPECT_EQ(plan.record->committed_events, plan.committed_events);
    EXPECT_EQ(plan.record->saved_at_ms, kNow);
  }
}

// Invariants 1 and 2 over every case: the record names only a position that was acknowledged
// (a resume_offset among the acknowledged events) or that was already durable or the stream's
// start; the source is confirmed only at the record's own offset.
TEST(CommitPlan, NeverCheckpointsOrConfirmsBeyondWhatWasAcknowledged) {
  for (const auto& c : commit_cases()) {
    SCOPED_TRACE(c.name);
    const auto plan = plan_commit(c.state, c.acked, kNow);
    if (plan.confirm) {
      ASSERT_TRUE(plan.record) << "a confirmation without a durable record";
      EXPECT_EQ(*plan.confirm, plan.record->offset);
    }
    if (!plan.record) continue;
    bool known = plan.record->offset == c.state.initial_offset ||
                 (c.state.durable && plan.record->offset == c.state.durable->offset);
    for (const auto& e : c.acked) known = known || e.resume_offset == plan.record->offset;
    EXPECT_TRUE(known) << plan.record->offset;
  }
}

TEST(CommitPlan, AnEmptyAcknowledgementChangesNothing) {
  const auto plan = plan_commit(at(durable("0/10", 2, 8)), {}, kNow);
  EXPECT_FALSE(plan.record);
  EXPECT_FALSE(plan.confirm);
  EXPECT_EQ(plan.committed_events, 100u);
}

TEST(CommitPlan, IdlePlans) {
  struct IdleCase {
    const char* name;
    BarrierState state;
    std::optional<std::string> idle;
    std::optional<std::string> idle_state;
    std::optional<std::string> offset;  // nullopt: nothing saved
    std::string source_state;
  };
  const std::vector<IdleCase> cases = {
      {"no idle position: nothing", at(durable("0/10")), std::nullopt, std::nullopt, std::nullopt},
      {"a new idle position is saved and confirmed, keeping the durable state",
       at(durable("0/10", 0, 0, "s")), "0/40", std::nullopt, "0/40", "s"},
      {"the same idle position and state: nothing", at(durable("0/40", 0, 0, "s")), "0/40",
       std::nullopt, std::nullopt},
      {"the same position with newer source progress is saved",
       at(durable("0/40", 0, 0, "s")), "0/40", "t", "0/40", "t"},
      {"a partially delivered transaction pins the durable offset",
       at(durable("0/10", 2, 8)), "0/40", std::nullopt, std::nullopt},
      {"a fresh start checkpoints its idle position", at(std::nullopt), "0/40", std::nullopt,
       "0/40", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto plan = plan_idle(c.state, c.idle, c.idle_state, kNow);
    EXPECT_EQ(plan.committed_events, c.state.committed_events);
    ASSERT_EQ(plan.record.has_value(), c.offset.has_value());
    if (!plan.record) {
      EXPECT_FALSE(plan.confirm);
      continue;
    }
    EXPECT_EQ(plan.record->offset, *c.offset);
    EXPECT_EQ(plan.confirm, c.offset);
    EXPECT_EQ(plan.record->source_state, c.source_state);
    EXPECT_EQ(plan.record->partial_tx_events, 0u);
  }
}

}  // namespace
}  // namespace cppcdc::detail
