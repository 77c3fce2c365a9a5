#pragma once
// The commit barrier: the one place that decides what an acknowledgement may checkpoint and
// what the source may then release (architecture document, "Safety Invariants" 1, 2 and 6).
//
// It is split in two:
//   - plan_commit / plan_idle: pure functions from what is durable now and what was just
//     acknowledged (the batch prefix as the source produced it, before any transform) to a
//     CommitPlan: the record to make durable, if any, and the position to confirm after it.
//   - applying the plan (Runtime): save the record through the checkpoint backend, or let a
//     transactional sink commit it inside its own transaction, then confirm the source.
// The plan never looks at a sink, a transform or a clock it was not given.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/event.hpp"

namespace cppcdc::detail {

/// What is durable when the plan is made.
struct BarrierState {
  std::string source_type;                    ///< Source::type()
  std::string source_id;                      ///< Source::source_id()
  std::optional<CheckpointRecord> durable;    ///< the last record made durable
  std::string initial_offset;                 ///< Source::initial_offset() of a fresh start
  std::uint64_t committed_events = 0;         ///< acknowledged over the pipeline's life
};

struct CommitPlan {
  /// The record to make durable; nullopt when the acknowledgement changes nothing a restart
  /// needs (no new boundary and the same partial transaction).
  std::optional<CheckpointRecord> record;
  /// The position to confirm to the source once `record` is durable; nullopt when the resume
  /// position did not move (only the partial-transaction count changed). Never set without
  /// `record` (invariant 2).
  std::optional<std::string> confirm;
  /// committed_events after this acknowledgement (also when nothing is saved).
  std::uint64_t committed_events = 0;
  /// Whether acknowledged events after the record's position are left uncovered by it: no
  /// resume_offset of their own and no transaction whose head the record counts (the first
  /// rows of a snapshot table that has no cursor, after the previous table's last chunk). A
  /// restart delivers them again, which at-least-once allows; a transactional sink must not
  /// commit them with this record.
  bool uncovered_tail = false;
};

/// The plan for acknowledging `acked`, the first events of a delivered batch in the order the
/// source produced them. The record's offset is the last resume_offset among them (with that
/// event's resume_state); events acknowledged after it that belong to one transaction are
/// recorded as that transaction's already-delivered head, to be skipped after a restart.
/// `now_ms` becomes saved_at_ms.
CommitPlan plan_commit(const BarrierState& state, std::span<const Event> acked,
                       std::int64_t now_ms);

/// The plan when nothing is in flight and the source reports a position past everything
/// handed out (`idle_offset`, Source::idle_offset()) and possibly newer progress of its own
/// (`idle_state`, Source::idle_state(); nullopt keeps the durable record's). Saves and confirms
/// only when the offset or the state differ from the durable record, and never while the
/// durable record still names a partially delivered transaction.
CommitPlan plan_idle(const BarrierState& state, const std::optional<std::string>& idle_offset,
                     const std::optional<std::string>& idle_state, std::int64_t now_ms);

}  // namespace cppcdc::detail
