#include "core/commit_barrier.hpp"

namespace cppcdc::detail {
namespace {

CheckpointRecord make_record(const BarrierState& state, std::string offset,
                             std::string source_state, std::uint64_t committed,
                             std::int64_t now_ms) {
  CheckpointRecord record;
  record.source_type = state.source_type;
  record.source_id = state.source_id;
  record.offset = std::move(offset);
  record.committed_events = committed;
  record.source_state = std::move(source_state);
  record.saved_at_ms = now_ms;
  return record;
}

}  // namespace

CommitPlan plan_commit(const BarrierState& state, std::span<const Event> acked,
                       std::int64_t now_ms) {
  CommitPlan plan;
  plan.committed_events = state.committed_events + acked.size();
  // Acknowledging nothing (accept_prefix(0)) must not touch the record: it would forget the
  // already delivered head of a partial transaction.
  if (acked.empty()) return plan;
  const auto& durable = state.durable;

  // The last resumable boundary inside the acknowledged prefix, and how far the prefix
  // reaches into the transaction after it.
  const Event* boundary = nullptr;
  std::size_t after_boundary = 0;
  for (const Event& e : acked) {
    if (!e.resume_offset.empty()) {
      boundary = &e;
      after_boundary = 0;
    } else {
      ++after_boundary;
    }
  }
  std::uint64_t partial_events = 0;
  std::uint64_t partial_tx = 0;
  plan.uncovered_tail = after_boundary > 0 && !acked.back().transaction;
  if (after_boundary > 0 && acked.back().transaction) {
    partial_tx = acked.back().transaction->tx_id;
    partial_events = after_boundary;
    if (!boundary && durable && durable->partial_tx_id == partial_tx) {
      partial_events += durable->partial_tx_events;  // the same transaction goes on
    }
  }

  std::string offset = boundary  ? boundary->resume_offset
                       : durable ? durable->offset
                                 : state.initial_offset;
  std::string source_state = boundary  ? boundary->resume_state
                             : durable ? durable->source_state
                                       : std::string();
  const bool moved = boundary && (!durable || durable->offset != offset ||
                                  durable->source_state != source_state);
  const bool partial_changed = durable ? (durable->partial_tx_events != partial_events ||
                                          durable->partial_tx_id != partial_tx)
                                       : partial_events != 0;
  // Without any position (a fresh start whose source reported none, acknowledged inside its
  // first transaction) there is nothing a restart could resume from: nothing is saved and the
  // events are delivered again.
  if (offset.empty() || !(moved || partial_changed)) return plan;

  if (moved) plan.confirm = offset;
  plan.record = make_record(state, std::move(offset), std::move(source_state),
                            plan.committed_events, now_ms);
  plan.record->partial_tx_events = partial_events;
  plan.record->partial_tx_id = partial_tx;
  return plan;
}

CommitPlan plan_idle(const BarrierState& state, const std::optional<std::string>& idle_offset,
                     const std::optional<std::string>& idle_state, std::int64_t now_ms) {
  CommitPlan plan;
  plan.committed_events = state.committed_events;
  const auto& durable = state.durable;
  // A partially delivered transaction must be resumed at the durable offset to skip its head.
  if (!idle_offset || idle_offset->empty()) return plan;
  if (durable && durable->partial_tx_events != 0) return plan;
  std::string source_state = idle_state ? *idle_state
                             : durable  ? durable->source_state
                                        : std::string();
  if (durable && durable->offset == *idle_offset && durable->source_state == source_state) {
    return plan;
  }
  plan.confirm = *idle_offset;
  plan.record = make_record(state, *idle_offset, std::move(source_state), state.committed_events,
                            now_ms);
  return plan;
}

}  // namespace cppcdc::detail
