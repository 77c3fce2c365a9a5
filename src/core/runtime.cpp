#include "cppcdc/runtime.hpp"
#include "cppcdc/incremental_snapshot.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <utility>

#include "core/batch_shaper.hpp"
#include "core/circuit_breaker.hpp"
#include "core/commit_barrier.hpp"
#include "core/event_spill.hpp"
#include "core/fault.hpp"
#include "core/health.hpp"

namespace cppcdc {
namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string_view to_string(RuntimeState state) noexcept {
  switch (state) {
    case RuntimeState::kCreated: return "created";
    case RuntimeState::kRunning: return "running";
    case RuntimeState::kStopped: return "stopped";
    case RuntimeState::kFailed: return "failed";
  }
  return "unknown";
}

std::string_view to_string(TransactionBoundaryPolicy policy) noexcept {
  switch (policy) {
    case TransactionBoundaryPolicy::kSplit: return "split";
    case TransactionBoundaryPolicy::kPreserveTransactions: return "preserve_transactions";
  }
  return "unknown";
}

std::string_view to_string(StallCause cause) noexcept {
  switch (cause) {
    case StallCause::kSourcePositionLost: return "source_position_lost";
    case StallCause::kUnconfirmedSourcePosition: return "unconfirmed_source_position";
    case StallCause::kDeliveryFailing: return "delivery_failing";
    case StallCause::kPollLoopNotTurning: return "poll_loop_not_turning";
    case StallCause::kConsumerNotAcknowledging: return "consumer_not_acknowledging";
  }
  return "unknown";
}

std::string_view to_string(HealthVerdict::Kind kind) noexcept {
  switch (kind) {
    case HealthVerdict::Kind::kHealthy: return "healthy";
    case HealthVerdict::Kind::kIdle: return "idle";
    case HealthVerdict::Kind::kStalled: return "stalled";
    case HealthVerdict::Kind::kNotRunning: return "not_running";
  }
  return "unknown";
}

std::string HealthVerdict::change_key() const {
  std::string key(to_string(kind));
  if (kind == Kind::kStalled && cause) {
    key += ':';
    key += to_string(*cause);
  }
  return key;
}

std::string_view to_string(BreakerState state) noexcept {
  switch (state) {
    case BreakerState::kClosed: return "closed";
    case BreakerState::kOpen: return "open";
    case BreakerState::kHalfOpen: return "half_open";
    case BreakerState::kError: return "error";
  }
  return "unknown";
}

Result<AckToken> AckToken::accept_prefix(std::size_t n) const {
  if (used_->load()) {
    return fail(Error::invalid_state("ack token of delivery " + std::to_string(delivery_id_) +
                                     " was already committed; each token is committed once"));
  }
  if (n > count_) {
    return fail(Error::invalid_state("accept_prefix(" + std::to_string(n) + ") on a token for " +
                                     std::to_string(count_) + " events"));
  }
  return AckToken(delivery_id_, n, used_);
}

struct Runtime::Impl {
  RuntimeConfig config;
  mutable std::mutex mutex;  // guards the admin fields below
  RuntimeState state = RuntimeState::kCreated;
  std::uint64_t events_delivered = 0;
  // Acknowledged since the pipeline's first start (the checkpoint's count, which the commit
  // barrier goes on from), events carried in an open transaction included: those are the last
  // carried_counted of it, which count as committed only once that transaction commits.
  std::uint64_t events_committed = 0;
  std::uint64_t carried_counted = 0;
  std::uint64_t committed_before_start = 0;  // events_committed when this process started
  std::int64_t last_poll_at_ms = 0;
  std::int64_t last_commit_at_ms = 0;
  std::optional<CheckpointRecord> checkpoint;  // last durable record
  // What the health verdict reads (health.hpp), and the breaker (circuit_breaker.hpp); all
  // guarded by `mutex`.
  std::int64_t started_at_ms = 0;
  std::int64_t poll_started_at_ms = 0;
  std::int64_t last_delivery_at_ms = 0;
  std::int64_t outstanding_since_ms = 0;
  std::uint64_t outstanding_events = 0;
  std::optional<std::string> position_lost;
  std::optional<detail::UnconfirmedPosition> unconfirmed;
  std::optional<detail::DeliveryFailure> delivery_failure;
  // The delivery attempt of deliver_loop that has not returned yet, and the pipeline it
  // delivers to (for Pipeline::current_problem()); both only while deliver_loop runs.
  std::optional<detail::DeliveryAttempt> attempt;
  // When the attempt that returned last began (0: none since the last failure was recorded):
  // a delivery fails since the start of its first unsuccessful attempt, not since that
  // attempt gave up (which can be delivery_timeout_ms later).
  std::int64_t ended_attempt_started_ms = 0;
  const Pipeline* delivering_to = nullptr;
  const Sink* attempt_sink = nullptr;  // the sink of an idle commit's attempt
  std::optional<detail::CircuitBreaker> breaker;  // made in the constructor
  std::string last_recoverable_error;
  // The side whose recoverable failure is being retried ("source", "sink", "checkpoint"),
  // from the failure until the next success; empty otherwise.
  std::string retrying;
  bool source_connected = false;  // the source's connection is up (started, not failed since)
  bool starting = false;          // start() is running (connecting to the source)
  bool checkpoint_loaded = false;  // load_checkpoint() succeeded (this thread only)
  void set_source_connected(bool up) {
    std::lock_guard lock(mutex);
    source_connected = up;
  }
  // Events of the transaction after the checkpoint offset that were acknowledged before a
  // restart; dropped when the source sends that transaction again.
  std::string initial_offset;  // where the stream began when there was no checkpoint
  std::uint64_t skip_tx_id = 0;
  std::uint64_t skip_remaining = 0;

  // The barrier's count after an acknowledgement (`mutex` held): `carried`, the acknowledged
  // events wait in the open transaction; otherwise it committed, with whatever it carried.
  void count_committed(std::uint64_t planned, bool carried) {
    if (carried) {
      carried_counted += planned - events_committed;
    } else {
      carried_counted = 0;
    }
    events_committed = planned;
  }

  // The open transaction that carried batches was aborted: they were not committed, and the
  // source delivers them again (the barrier counts them again then).
  void drop_carried() {
    {
      std::lock_guard lock(mutex);
      events_committed -= carried_counted;
      carried_counted = 0;
    }
    if (config.observer) config.observer->on_carried_aborted();
  }

  void arm_skip() {
    skip_tx_id = checkpoint ? checkpoint->partial_tx_id : 0;
    skip_remaining = checkpoint ? checkpoint->partial_tx_events : 0;
  }

  // Drops the already acknowledged head of a partially acknowledged transaction from events
  // [from, end).
  void drop_acknowledged(std::vector<Event>& events, std::size_t from) {
    if (skip_remaining == 0) return;
    std::size_t keep = from;
    for (std::size_t i = from; i < events.size(); ++i) {
      const auto& tx = events[i].transaction;
      if (skip_remaining > 0 && tx && tx->tx_id == skip_tx_id) {
        --skip_remaining;
        continue;
      }
      if (skip_remaining > 0) {
        spdlog::warn("expected {} more already acknowledged events of transaction {} after the "
                     "checkpoint, found another transaction; delivering everything from here",
                     skip_remaining, skip_tx_id);
        skip_remaining = 0;
      }
      if (keep != i) events[keep] = std::move(events[i]);
      ++keep;
    }
    events.resize(keep);
  }

  detail::BarrierState barrier_state() const {
    detail::BarrierState s;
    s.source_type = config.source->type();
    s.source_id = config.source->source_id();
    s.durable = checkpoint;
    s.initial_offset = initial_offset;
    s.committed_events = events_committed;
    return s;
  }

  void set_state(RuntimeState next) {
    std::lock_guard lock(mutex);
    state = next;
  }
  RuntimeState state_now() {
    std::lock_guard lock(mutex);
    return state;
  }

  // The runtime's clock (RuntimeOptions::clock_ms), ms since the epoch.
  std::int64_t now() const {
    return config.options.clock_ms ? config.options.clock_ms() : now_ms();
  }

  // Waits before a retry, in slices so that a cancelled run stops waiting soon. False when
  // the run was cancelled (only while run_to_completion drives the runtime).
  bool wait_retry(std::chrono::milliseconds total) {
    constexpr std::chrono::milliseconds kSlice{100};
    while (total.count() > 0) {
      if (cancel != nullptr && cancel->load()) return false;
      const auto step = std::min(total, kSlice);
      if (config.options.sleep) {
        config.options.sleep(step);
      } else {
        std::this_thread::sleep_for(step);
      }
      total -= step;
    }
    return cancel == nullptr || !cancel->load();
  }

  // A failed source start or poll: a lost position is remembered for the health verdict for
  // the rest of the run.
  void note_source_error(const Error& error) {
    if (error.condition() != ErrorCondition::kSourcePositionLost) return;
    std::lock_guard lock(mutex);
    if (!position_lost) position_lost = error.report();
  }

  // The breaker's verdict on a recoverable failure.
  detail::CircuitBreaker::Next on_recoverable(const Error& error, const char* side) {
    std::lock_guard lock(mutex);
    last_recoverable_error = error.report();
    retrying = side;
    return breaker->on_failure();
  }
  void before_retry() {
    std::lock_guard lock(mutex);
    breaker->before_attempt();
  }
  void on_recovered() {
    std::lock_guard lock(mutex);
    retrying.clear();
    breaker->on_success();
  }

  // A position checkpointed earlier whose confirmation the source refused: asked again before
  // each poll until the source takes it (or a newer position is confirmed).
  void retry_unconfirmed() {
    if (!unconfirmed) return;  // written only on this thread
    std::string offset;
    {
      std::lock_guard lock(mutex);
      offset = unconfirmed->offset;
    }
    auto confirmed = config.source->confirm(offset);
    std::lock_guard lock(mutex);
    if (confirmed) {
      spdlog::info("the source confirmed position {} after refusing it", offset);
      unconfirmed.reset();
    } else {
      unconfirmed->error = confirmed.error().report();
    }
  }

  // Applies a commit plan: the record is made durable (by the checkpoint backend, or already
  // by a transactional sink's commit when `saved_by_sink`), then the source may release up to
  // the confirmed position (invariant 2). Any failure fails the runtime: the events are
  // durable at the sink, the position is not, and a restart replays them. The exception is a
  // plan for an `idle` position (no events behind it): a recoverable failure to record it
  // leaves the runtime running, with the previous checkpoint, and the caller retries it.
  Status apply(const detail::CommitPlan& plan, bool committed_by_sink = false, bool idle = false) {
    if (transactional != nullptr) {
      if (!committed_by_sink) CPPCDC_TRY(commit_in_sink(plan, idle));
    } else if (plan.record) {
      CPPCDC_FAULT_POINT("runtime.before_checkpoint");
      auto saved = config.checkpoint->save(*plan.record);
      if (!saved) {
        if (!(idle && saved.error().retryable())) set_state(RuntimeState::kFailed);
        return fail(saved.error().context("saving the checkpoint at " + plan.record->offset));
      }
      CPPCDC_FAULT_POINT("runtime.after_checkpoint");
    }
    if (!plan.record) return ok();
    {
      std::lock_guard lock(mutex);
      checkpoint = plan.record;
    }
    if (config.observer) config.observer->on_checkpoint(*plan.record);
    if (!plan.confirm) return ok();
    auto confirmed = config.source->confirm(*plan.confirm);
    if (!confirmed) {
      if (confirmed.error().retryable()) {
        // The position is durable: nothing is lost, the database only goes on retaining log
        // until a later confirmation gets through (the health verdict says so meanwhile).
        spdlog::warn("the source refused to confirm checkpointed position {}; asking again "
                     "before the next poll: {}",
                     *plan.confirm, confirmed.error().report());
        std::lock_guard lock(mutex);
        const std::int64_t since = unconfirmed ? unconfirmed->since_ms : now();
        unconfirmed = detail::UnconfirmedPosition{*plan.confirm, confirmed.error().report(), since};
        return ok();
      }
      set_state(RuntimeState::kFailed);
      return fail(confirmed.error().context("confirming checkpointed position " + *plan.confirm +
                                            " to the source"));
    }
    if (unconfirmed) {
      std::lock_guard lock(mutex);
      unconfirmed.reset();
    }
    return ok();
  }

  // The transactional sink commits the open batch (or, for an idle position, a transaction of
  // its own with no events) together with the planned record, which the guard checks first.
  // A delivery attempt, for the health verdict, while it lives: `attempt` (and, for a sink
  // outside the delivering pipeline, `attempt_sink`) are set, and stage() names the call in
  // progress.
  class AttemptScope {
   public:
    AttemptScope(Impl& d, std::string destination, std::uint64_t events, const char* stage,
                 const Sink* sink = nullptr)
        : d_(d) {
      std::lock_guard lock(d_.mutex);
      d_.attempt.emplace();
      d_.attempt->started_at_ms = d_.now();
      d_.attempt->destination = std::move(destination);
      d_.attempt->events = events;
      d_.attempt->stage = stage;
      d_.attempt_sink = sink;
    }
    ~AttemptScope() {
      std::lock_guard lock(d_.mutex);
      if (d_.attempt) d_.ended_attempt_started_ms = d_.attempt->started_at_ms;
      d_.attempt.reset();
      d_.attempt_sink = nullptr;
    }
    AttemptScope(const AttemptScope&) = delete;
    AttemptScope& operator=(const AttemptScope&) = delete;
    void stage(const char* name) {
      std::lock_guard lock(d_.mutex);
      d_.attempt->stage = name;
    }

   private:
    Impl& d_;
  };

  Status commit_in_sink(const detail::CommitPlan& plan, bool idle = false) {
    if (!plan.record && !batch_open) return ok();
    // Carried batches commit only with a record that resumes after them (commit_attempt).
    if (!plan.record && carried_events > 0) return ok();
    // An idle position's transaction is a delivery attempt of its own (no events): while the
    // sink's calls block (a broker that is down), the health verdict says so.
    std::optional<AttemptScope> idle_attempt;
    if (idle && !attempt) {
      idle_attempt.emplace(*this, transactional->name(), 0, "commit of an idle checkpoint",
                           transactional);
    }
    // An idle commit that failed recoverably may have left the sink needing recovery.
    if (!batch_open && std::exchange(sink_needs_recover, false)) {
      if (auto recovered = transactional->recover(); !recovered) {
        sink_needs_recover = true;
        if (!(idle && recovered.error().retryable())) set_state(RuntimeState::kFailed);
        return fail(recovered.error().context("recovering " + transactional->name()));
      }
    }
    // A recoverable failure of an idle commit is retried by the caller, the sink recovered
    // first; any other failure fails the runtime.
    const auto failed = [&](const Error& e) {
      if (idle && e.retryable()) {
        sink_needs_recover = true;
      } else {
        set_state(RuntimeState::kFailed);
      }
    };
    if (plan.record) {
      if (auto guarded = check_monotonic(checkpoint, *plan.record); !guarded) {
        set_state(RuntimeState::kFailed);
        return fail(guarded.error());
      }
    }
    if (!batch_open) {
      if (auto begun = transactional->begin(); !begun) {
        failed(begun.error());
        return fail(begun.error().context("opening a transaction on " + transactional->name()));
      }
    }
    batch_open = false;
    // Committed with this record, or aborted (the runtime then fails).
    const bool carrying = std::exchange(carried_events, 0) > 0;
    if (plan.record) {
      CPPCDC_FAULT_POINT("runtime.before_checkpoint");
    }
    if (auto committed = transactional->commit(plan.record); !committed) {
      (void)transactional->abort();
      if (carrying) drop_carried();
      failed(committed.error());
      const std::string what =
          plan.record ? "the checkpoint at " + plan.record->offset : std::string("a batch");
      return fail(committed.error().context("committing " + what + " in " +
                                            transactional->name() + "'s transaction"));
    }
    if (plan.record) {
      CPPCDC_FAULT_POINT("runtime.after_checkpoint");
    }
    return ok();
  }

  // While run_to_completion drives a TransactionalSink: that sink, and whether the batch being
  // delivered holds its transaction open (commit_ack then commits it with the record).
  TransactionalSink* transactional = nullptr;
  bool batch_open = false;
  // Events of earlier batches delivered inside the transaction that is still open: their
  // acknowledgement planned no record (nothing a restart could resume after: a snapshot of a
  // table without a key, a source's stretch without positions), so committing them would
  // show them to readers with nothing that keeps a restart from delivering them again. The
  // transaction stays open until a batch reaches a resumable position and commits them all
  // with its record. Nonzero only while batch_open.
  std::uint64_t carried_events = 0;
  // An idle commit failed recoverably: the sink recovers before it is used again.
  bool sink_needs_recover = false;
  // The plan a transactional sink already committed inside the delivery attempt (so that a
  // failed commit is retried with the batch); commit_ack applies it without committing again.
  std::optional<detail::CommitPlan> precommitted;

  // The plan for acknowledging the first `delivered_count` events of the outstanding delivery
  // (pure: nothing changes until commit_ack applies it).
  detail::CommitPlan plan_for_ack(std::size_t delivered_count, std::int64_t now_ms) const {
    const std::vector<Event>& produced = shaper.produced(*scratch);
    const std::size_t n = shaper.produced_prefix(delivered_count);
    return detail::plan_commit(barrier_state(), std::span<const Event>(produced.data(), n),
                               now_ms);
  }

  // Commits the delivered batch in the transactional sink, with its planned record, as the last
  // step of a delivery attempt: a failure aborts the transaction and, when recoverable, the
  // attempt (the whole batch) is made again.
  Status commit_attempt(TransactionalSink& sink, const AckToken& token) {
    auto plan = plan_for_ack(token.size(), now());
    if (!plan.record || plan.uncovered_tail) {
      // No position that covers the whole batch (its tail would be read again after a
      // restart): carry it in the open transaction (carried_events), and make nothing durable
      // or confirmed for it; a later batch's record covers it.
      carried_events += token.size();
      detail::CommitPlan carried;
      carried.committed_events = plan.committed_events;
      precommitted = std::move(carried);
      return ok();
    }
    {
      if (auto guarded = check_monotonic(checkpoint, *plan.record); !guarded) {
        (void)sink.abort();
        batch_open = false;
        set_state(RuntimeState::kFailed);
        return fail(guarded.error());
      }
      CPPCDC_FAULT_POINT("runtime.before_checkpoint");
    }
    auto committed = sink.commit(plan.record);
    batch_open = false;
    if (!committed) {
      (void)sink.abort();
      // carried_events stays: the abort took the carried batches too, which a retry of this
      // batch alone would skip for good; deliver_loop fails the run instead.
      // Refused for good: nothing of the batch is durable, and a restart delivers it again.
      if (!committed.error().retryable()) set_state(RuntimeState::kFailed);
      const std::string what =
          plan.record ? "the checkpoint at " + plan.record->offset : std::string("a batch");
      return fail(committed.error().context("committing " + what + " in " + sink.name() +
                                            "'s transaction"));
    }
    carried_events = 0;  // committed with this batch
    if (plan.record) {
      CPPCDC_FAULT_POINT("runtime.after_checkpoint");
    }
    precommitted = std::move(plan);
    return ok();
  }
  // While run_to_completion runs: how long a poll goes on gathering after the first event
  // (Pipeline::batch_delay()).
  std::chrono::milliseconds gather{0};
  // While run_to_completion runs: its cancel flag (a retry's wait ends early on it).
  const std::atomic<bool>* cancel = nullptr;
  // A retry wait of the source was cancelled: the next poll reconnects first.
  bool reconnect_pending = false;
  // Closes the source and drops what it handed over and nobody acknowledged, so that starting
  // it again from the durable checkpoint reads all of that again.
  void rewind_source() {
    set_source_connected(false);
    config.source->close();
    redeliver.clear();
    shaper.drop_held();
  }

  Result<std::uint64_t> deliver_loop(Runtime& runtime, Pipeline& pipeline,
                                     const std::atomic<bool>& cancel, bool until_quiet);

  // The one outstanding delivery.
  std::uint64_t next_delivery_id = 1;
  std::optional<std::uint64_t> outstanding_id;
  std::deque<Event> redeliver;                   // tail of a partially acknowledged batch
  // Why the batch in flight is unacknowledged, when a stop request ended its delivery (for
  // force_stop()'s warning); cleared by force_stop().
  std::string unacked_note;
  std::shared_ptr<std::vector<Event>> scratch;  // the outstanding batch's events
  // Held-back partial transactions and duplicate suppression (batch_shaper.hpp).
  detail::BatchShaper shaper;
  bool swallowed = false;  // the last poll's events were all suppressed and acknowledged here

  // Acknowledges a batch whose every event was suppressed as a duplicate: the consumer has
  // them from before, so the checkpoint moves past them without handing them out.
  Status acknowledge_suppressed() {
    static const std::vector<Event> kNone;
    const auto& produced = shaper.produced(kNone);
    auto plan = detail::plan_commit(barrier_state(), produced, now());
    shaper.acknowledge(produced.size());
    CPPCDC_TRY(apply(plan));
    std::lock_guard lock(mutex);
    count_committed(plan.committed_events, transactional != nullptr && carried_events > 0);
    swallowed = true;
    return ok();
  }

  Status start_source_with_retry() {
    for (;;) {
      auto st = config.source->start(checkpoint);
      if (st) {
        set_source_connected(true);
        on_recovered();
        return st;
      }
      note_source_error(st.error());
      if (!st.error().retryable()) {
        config.source->close();
        return st;
      }
      const auto next = on_recoverable(st.error(), "source");
      config.source->close();
      if (next.give_up) return fail(st.error().context(next.note));
      spdlog::warn("source start failed ({}), retrying in {} ms: {}", next.note,
                   next.wait.count(), st.error().report());
      if (!wait_retry(next.wait)) {
        return fail(st.error().context("stopped while waiting to retry"));
      }
      before_retry();
    }
  }
};

Runtime::Runtime(RuntimeConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->breaker.emplace(impl_->config.options.connection_retry, impl_->config.options.breaker);
}

Runtime::~Runtime() {
  if (impl_ && impl_->config.source) impl_->config.source->close();
}

Result<std::unique_ptr<Runtime>> Runtime::create(RuntimeConfig config) {
  if (!config.source) return fail(Error::configuration("runtime config has no source"));
  if (!config.checkpoint) return fail(Error::configuration("runtime config has no checkpoint"));
  if (config.options.max_buffer_size == 0) {
    return fail(Error::configuration("runtime max_buffer_size must be at least 1"));
  }
  if (config.options.breaker.consecutive_threshold == 0 ||
      config.options.breaker.max_open_cycles == 0) {
    return fail(Error::configuration(
        "runtime breaker consecutive_threshold and max_open_cycles must be at least 1"));
  }
  std::unique_ptr<Runtime> runtime(new Runtime(std::move(config)));
  CPPCDC_TRY(runtime->impl_->shaper.configure(runtime->impl_->config.options));
  return runtime;
}

Status Runtime::load_checkpoint() {
  auto& d = *impl_;
  if (d.checkpoint_loaded) return ok();
  if (d.state_now() != RuntimeState::kCreated) {
    return fail(Error::invalid_state("load_checkpoint() on a runtime that is " +
                                     std::string(to_string(d.state_now()))));
  }
  auto loaded = d.config.checkpoint->load();
  if (!loaded) {
    d.set_state(RuntimeState::kFailed);
    return fail(loaded.error().context("loading the checkpoint"));
  }
  std::optional<CheckpointRecord> record = *loaded;
  if (record && (record->source_type != d.config.source->type() ||
                 record->source_id != d.config.source->source_id())) {
    d.set_state(RuntimeState::kFailed);
    return fail(Error::checkpoint(
        ErrorKind::kTerminal,
        "the checkpoint belongs to " + record->source_type + " source '" + record->source_id +
            "', not to " + d.config.source->type() + " source '" + d.config.source->source_id() +
            "'; point the checkpoint backend at the right place, or move the record away to "
            "start from the source's own position"));
  }
  {
    std::lock_guard lock(d.mutex);
    d.checkpoint = record;
    if (record) d.events_committed = record->committed_events;
    d.committed_before_start = d.events_committed;
  }
  d.checkpoint_loaded = true;
  return ok();
}

Status Runtime::await_before_start(const std::function<Status()>& attempt, std::string_view waiting,
                                   const std::atomic<bool>& cancel) {
  auto& d = *impl_;
  if (d.state_now() != RuntimeState::kCreated) {
    return fail(Error::invalid_state("await_before_start() on a runtime that is " +
                                     std::string(to_string(d.state_now()))));
  }
  d.cancel = &cancel;
  {
    std::lock_guard lock(d.mutex);
    d.starting = true;
  }
  struct End {
    Impl& d;
    ~End() {
      std::lock_guard lock(d.mutex);
      d.starting = false;
      d.cancel = nullptr;
    }
  } end{d};
  for (;;) {
    auto st = attempt();
    if (st) {
      d.on_recovered();
      return st;
    }
    if (!st.error().retryable()) return st;
    const auto next = d.on_recoverable(st.error(), "source");
    if (next.give_up) {
      d.set_state(RuntimeState::kFailed);
      return fail(st.error().context(next.note));
    }
    spdlog::warn("{} ({}), checking again in {} ms: {}", waiting, next.note, next.wait.count(),
                 st.error().report());
    if (!d.wait_retry(next.wait)) return fail(st.error().context("stopped while waiting to retry"));
    d.before_retry();
  }
}

Status Runtime::start() {
  auto& d = *impl_;
  if (d.state_now() != RuntimeState::kCreated) {
    return fail(Error::invalid_state("start() on a runtime that is " +
                                     std::string(to_string(d.state_now()))));
  }
  CPPCDC_TRY(load_checkpoint());
  const std::optional<CheckpointRecord> record = d.checkpoint;
  d.arm_skip();
  if (record) {
    spdlog::info("resuming from checkpoint {} ({} events committed so far)", record->offset,
                 record->committed_events);
  } else {
    spdlog::info(
        "no checkpoint yet: first start (the source begins with its initial snapshot if one "
        "is configured, else at its own retained position)");
  }
  {
    std::lock_guard lock(d.mutex);
    d.starting = true;
  }
  auto st = d.start_source_with_retry();
  {
    std::lock_guard lock(d.mutex);
    d.starting = false;
  }
  if (!st) {
    std::lock_guard lock(d.mutex);
    d.state = RuntimeState::kFailed;
    return fail(st.error().context("starting the " + d.config.source->type() + " source"));
  }
  if (!record) d.initial_offset = d.config.source->initial_offset().value_or("");
  std::lock_guard lock(d.mutex);
  d.state = RuntimeState::kRunning;
  d.started_at_ms = d.now();
  return ok();
}

Status Runtime::start(const std::atomic<bool>& cancel) {
  impl_->cancel = &cancel;
  auto st = start();
  impl_->cancel = nullptr;
  return st;
}

Result<EventBatch> Runtime::poll_event_batch() {
  // A poll whose events were all suppressed as duplicates acknowledged them itself; reading
  // goes on, so that a replayed stretch does not look like a quiet source.
  for (;;) {
    impl_->swallowed = false;
    auto batch = poll_source_batch();
    if (!batch || !batch->empty() || !impl_->swallowed) return batch;
  }
}

Result<EventBatch> Runtime::poll_source_batch() {
  auto& d = *impl_;
  if (d.state != RuntimeState::kRunning) {
    return fail(Error::invalid_state("poll_event_batch() on a runtime that is " +
                                     std::string(to_string(d.state))));
  }
  if (d.outstanding_id) {
    return fail(Error::invalid_state("batch " + std::to_string(*d.outstanding_id) +
                                     " is not acknowledged yet; commit its token (or a prefix "
                                     "of it) before polling again"));
  }
  {
    std::lock_guard lock(d.mutex);
    d.poll_started_at_ms = d.now();
  }
  struct PollEnd {  // no poll is running once this one returns, however it returns
    Impl& d;
    ~PollEnd() {
      std::lock_guard lock(d.mutex);
      d.poll_started_at_ms = 0;
    }
  } poll_end{d};
  if (!d.reconnect_pending) d.retry_unconfirmed();
  EventBatch batch;
  auto& events = *batch.events_;
  const std::size_t max = d.config.options.max_buffer_size;
  bool cancelled = false;
  while (!d.redeliver.empty() && events.size() < max) {
    events.push_back(std::move(d.redeliver.front()));
    d.redeliver.pop_front();
  }
  // Held-back events were never handed out: with only those, wait for the source as usual.
  const bool nothing_to_redeliver = events.empty();
  d.shaper.take_held(events, max);
  if (events.size() < max) {
    auto wait = nothing_to_redeliver ? std::chrono::milliseconds(d.config.options.max_poll_wait_ms)
                                     : std::chrono::milliseconds(0);
    // With a gathering delay (a sink's batch_delay()), polling goes on after the first event
    // until the batch is full or the delay has passed.
    std::optional<std::chrono::steady_clock::time_point> gather_until;
    bool reconnect = d.reconnect_pending;
    d.reconnect_pending = false;
    for (;;) {
      Status st = ok();
      if (reconnect) {
        d.before_retry();
        st = d.config.source->start(d.checkpoint);
        if (st) {
          reconnect = false;
          d.set_source_connected(true);
          d.arm_skip();
          spdlog::info("source reconnected; resuming from checkpoint {}",
                       d.checkpoint ? d.checkpoint->offset : std::string("(none)"));
          continue;
        }
        st = fail(st.error().context("reconnecting the " + d.config.source->type() + " source"));
      } else {
        const std::size_t before = events.size();
        st = d.config.source->poll(events, max - before, wait);
        if (st) {
          d.drop_acknowledged(events, before);
          if (d.gather.count() > 0 && !events.empty() && events.size() < max &&
              !d.config.source->finished()) {
            const auto now = std::chrono::steady_clock::now();
            if (!gather_until) gather_until = now + d.gather;
            if (now < *gather_until) {
              wait = std::max(std::chrono::milliseconds(1),
                              std::chrono::duration_cast<std::chrono::milliseconds>(
                                  *gather_until - now));
              continue;
            }
          }
          break;
        }
        st = fail(st.error().context("polling the " + d.config.source->type() + " source"));
      }
      d.note_source_error(st.error());
      std::optional<detail::CircuitBreaker::Next> next;
      if (st.error().retryable()) next = d.on_recoverable(st.error(), "source");
      if (!next || next->give_up) {
        std::lock_guard lock(d.mutex);
        d.state = RuntimeState::kFailed;
        if (next) return fail(st.error().context(next->note));
        return fail(st.error());
      }
      // Reconnect from the durable checkpoint. Everything read from the dropped connection
      // and not yet acknowledged is discarded: the source sends it again.
      spdlog::warn("source failed ({}), reconnecting from checkpoint in {} ms: {}", next->note,
                   next->wait.count(), st.error().report());
      d.rewind_source();
      events.clear();
      gather_until.reset();
      reconnect = true;
      if (!d.wait_retry(next->wait)) {
        d.reconnect_pending = true;  // the run was cancelled; a later poll reconnects
        cancelled = true;
        break;
      }
    }
  }
  if (cancelled) return batch;
  d.shaper.hold_back_open_transaction(events, max, d.config.source->finished());
  if (const std::size_t suppressed = d.shaper.suppress(events); suppressed > 0) {
    {
      std::lock_guard lock(d.mutex);
      d.events_delivered += suppressed;  // acknowledged as if delivered
    }
    if (events.empty()) {
      if (auto acked = d.acknowledge_suppressed(); !acked) {
        return fail(acked.error().context("acknowledging events suppressed as duplicates"));
      }
    }
  }
  if (events.empty() && d.redeliver.empty() && !d.shaper.holds_events() && d.carried_events == 0 &&
      (!d.checkpoint || d.checkpoint->partial_tx_events == 0)) {
    // Nothing in flight and everything delivered is acknowledged: let the checkpoint (and so
    // the slot) follow the source's idle position, checkpointed before it is confirmed.
    // A source reports an idle position only when nothing of its own progress is pending; the
    // last checkpoint's state stands unless the source reports a newer one.
    auto idle = d.config.source->idle_offset();
    std::optional<std::string> idle_state;
    if (idle) idle_state = d.config.source->idle_state();
    auto plan = detail::plan_idle(d.barrier_state(), idle, idle_state, d.now());
    if (auto applied = d.apply(plan, false, /*idle=*/true); !applied) {
      Error error =
          applied.error().context("checkpointing the idle position " + idle.value_or(""));
      if (!error.retryable() || d.state_now() == RuntimeState::kFailed) return fail(error);
      // Nothing waits on this position: the previous checkpoint stands, and the next idle
      // poll records it, under the shared breaker like any recoverable failure.
      const auto next = d.on_recoverable(error, d.transactional != nullptr ? "sink" : "checkpoint");
      if (next.give_up) {
        d.set_state(RuntimeState::kFailed);
        return fail(std::move(error).context(next.note));
      }
      spdlog::warn("could not checkpoint the idle position ({}); nothing waits on it, trying "
                   "again in {} ms: {}",
                   next.note, next.wait.count(), error.report());
      {
        std::lock_guard lock(d.mutex);
        d.last_poll_at_ms = d.now();  // the poll loop turns; the breaker says what fails
      }
      (void)d.wait_retry(next.wait);
      return batch;
    }
  }
  {
    std::lock_guard lock(d.mutex);
    d.breaker->on_success();
    d.retrying.clear();
    d.last_poll_at_ms = d.now();
    if (events.empty()) return batch;
    const std::uint64_t id = d.next_delivery_id++;
    d.outstanding_id = id;
    d.events_delivered += events.size();
    d.last_delivery_at_ms = d.last_poll_at_ms;
    d.outstanding_since_ms = d.last_poll_at_ms;
    d.outstanding_events = events.size();
    batch.token_ = AckToken(id, events.size(), std::make_shared<std::atomic<bool>>(false));
    // A partial acknowledgement needs the tail again: share the events with the batch.
    d.scratch = batch.events_;
  }
  if (d.config.observer) d.config.observer->on_delivered(events);
  return batch;
}

Status Runtime::commit_ack(const AckMode& mode) {
  if (!mode.token) return ok();
  return commit_ack(*mode.token);
}

Status Runtime::commit_ack(const AckToken& token) {
  auto& d = *impl_;
  if (d.state != RuntimeState::kRunning) {
    return fail(Error::invalid_state("commit_ack() on a runtime that is " +
                                     std::string(to_string(d.state))));
  }
  if (!d.outstanding_id || *d.outstanding_id != token.delivery_id()) {
    return fail(Error::invalid_state(
        "ack token of delivery " + std::to_string(token.delivery_id()) +
        " does not match the outstanding delivery" +
        (d.outstanding_id ? " " + std::to_string(*d.outstanding_id) : std::string(" (none)"))));
  }
  if (token.used_->exchange(true)) {
    return fail(Error::invalid_state("ack token of delivery " +
                                     std::to_string(token.delivery_id()) +
                                     " was already committed; each token is committed once"));
  }
  const std::int64_t acked_at_ms = d.now();
  // The plan reads the acknowledged prefix as the source produced it, events suppressed as
  // duplicates included.
  const std::vector<Event>& produced = d.shaper.produced(*d.scratch);
  const std::size_t n = d.shaper.produced_prefix(token.size());
  const bool committed_by_sink = d.precommitted.has_value();
  auto plan = committed_by_sink ? std::move(*d.precommitted)
                                : detail::plan_commit(d.barrier_state(),
                                                      std::span<const Event>(produced.data(), n),
                                                      acked_at_ms);
  d.precommitted.reset();
  // Hand the unacknowledged tail out again on the next poll.
  for (std::size_t i = produced.size(); i > n; --i) d.redeliver.push_front(produced[i - 1]);
  d.shaper.acknowledge(n);
  // Kept until the observer has seen the acknowledged events, as they were delivered.
  const std::size_t delivered_acked = token.size();
  const std::shared_ptr<std::vector<Event>> acked = std::move(d.scratch);
  d.scratch.reset();
  d.outstanding_id.reset();
  if (auto applied = d.apply(plan, committed_by_sink); !applied) {
    return fail(applied.error().context("after acknowledging delivery " +
                                        std::to_string(token.delivery_id())));
  }
  // Carried in a transactional sink's open transaction (commit_attempt): acknowledged, but
  // committed only with a later batch.
  const bool carried = d.transactional != nullptr && d.carried_events > 0;
  {
    std::lock_guard lock(d.mutex);
    d.count_committed(plan.committed_events, carried);
    d.last_commit_at_ms = acked_at_ms;
    d.outstanding_since_ms = 0;
    d.outstanding_events = 0;
    d.delivery_failure.reset();  // the destination took it
    d.ended_attempt_started_ms = 0;
  }
  if (d.config.observer) {
    const std::span<const Event> events(acked->data(), delivered_acked);
    if (carried) {
      d.config.observer->on_carried(events, acked_at_ms);
    } else {
      d.config.observer->on_committed(events, acked_at_ms);
    }
  }
  return ok();
}

Status Runtime::stop() {
  auto& d = *impl_;
  if (d.outstanding_id || !d.redeliver.empty()) {
    const std::size_t n = (d.scratch ? d.scratch->size() : 0) + d.redeliver.size();
    return fail(Error::invalid_state(std::to_string(n) +
                                     " delivered events are not acknowledged; commit them, or "
                                     "use force_stop() and accept their replay after restart"));
  }
  d.config.source->close();
  std::lock_guard lock(d.mutex);
  d.state = RuntimeState::kStopped;
  d.source_connected = false;
  return ok();
}

bool Runtime::force_stop(std::string_view why) {
  auto& d = *impl_;
  const std::size_t n = (d.scratch ? d.scratch->size() : 0) + d.redeliver.size();
  const bool cut_short = n > 0 && !d.unacked_note.empty();
  std::string reason = !d.unacked_note.empty() ? std::move(d.unacked_note)
                       : !why.empty()          ? std::string(why)
                                               : std::string("delivered but not acknowledged");
  d.unacked_note.clear();
  spdlog::warn("stopping with {} unacknowledged event{} ({}); {} delivered again after a restart, "
               "nothing acknowledged is lost (shutdown_mode=forced)",
               n, n == 1 ? "" : "s", reason, n == 1 ? "it is" : "they are");
  d.config.source->close();
  d.outstanding_id.reset();
  d.redeliver.clear();
  d.shaper.drop_held();
  d.shaper.end_batch();
  d.scratch.reset();
  std::lock_guard lock(d.mutex);
  d.state = RuntimeState::kStopped;
  d.source_connected = false;
  d.outstanding_since_ms = 0;
  d.outstanding_events = 0;
  return cut_short;
}

Result<std::uint64_t> Runtime::run_to_completion(Sink& sink, const std::atomic<bool>& cancel) {
  auto pipeline = Pipeline::of(sink);
  return run_to_completion(*pipeline, cancel);
}

Result<std::uint64_t> Runtime::run_to_completion(Pipeline& pipeline,
                                                 const std::atomic<bool>& cancel) {
  auto delivered = impl_->deliver_loop(*this, pipeline, cancel, /*until_quiet=*/false);
  if (!delivered && !cancel.load()) impl_->set_state(RuntimeState::kFailed);
  return delivered;
}

Result<std::uint64_t> Runtime::drain_and_stop(Pipeline& pipeline, const std::atomic<bool>& cancel) {
  auto delivered = impl_->deliver_loop(*this, pipeline, cancel, /*until_quiet=*/true);
  if (!delivered && !cancel.load()) impl_->set_state(RuntimeState::kFailed);
  if (!delivered) return delivered;
  CPPCDC_TRY(stop());
  return delivered;
}

namespace {

// The first event of `events` over `limit` bytes (0: no limit), as an error that is never
// retried: the event is just as large on every attempt.
Status check_event_sizes(const std::vector<Event>& events, std::uint64_t limit) {
  if (limit == 0) return ok();
  for (const auto& e : events) {
    const std::size_t bytes = detail::approx_event_bytes(e);
    if (bytes <= limit) continue;
    const std::string table = e.schema ? *e.schema + "." + e.table : e.table;
    return fail(Error::invalid_data(
        "an event of table " + table + " at source offset " + e.source.offset + " is " +
        std::to_string(bytes) + " bytes, over runtime.max_event_bytes (" + std::to_string(limit) +
        "); it is not retried, as it is as large on every attempt: raise max_event_bytes under "
        "[runtime], or keep such rows out of the pipeline (a filter transform)"));
  }
  return ok();
}

}  // namespace

Result<std::uint64_t> Runtime::Impl::deliver_loop(Runtime& runtime, Pipeline& pipeline,
                                                  const std::atomic<bool>& cancel,
                                                  bool until_quiet) {
  auto& d = *this;
  TransactionalSink* const sink = pipeline.transactional_sink();
  d.transactional = sink;
  d.gather = pipeline.batch_delay();
  d.cancel = &cancel;
  {
    std::lock_guard lock(d.mutex);
    d.delivering_to = &pipeline;
  }
  struct Reset {  // the sink is only borrowed for this loop
    Impl& d;
    ~Reset() {
      {
        std::lock_guard lock(d.mutex);
        d.delivering_to = nullptr;
        d.attempt.reset();
      }
      if (d.carried_events > 0 && d.transactional != nullptr) {
        // Stopped while a transaction carries batches that reached no resumable position:
        // they were never committed, and the checkpoint is before them. Abort, and have a
        // later poll start the source again from the checkpoint, so that they are read again
        // rather than skipped.
        (void)d.transactional->abort();
        d.drop_carried();
        d.rewind_source();
        d.reconnect_pending = true;
      }
      d.carried_events = 0;
      d.transactional = nullptr;
      d.batch_open = false;
      // sink_needs_recover stays: the next loop recovers its sink first (a no-op for a sink
      // with nothing to recover from).
      d.precommitted.reset();
      d.gather = std::chrono::milliseconds(0);
      d.cancel = nullptr;
    }
  } reset{d};
  std::uint64_t delivered = 0;
  while (!cancel.load()) {
    auto batch = runtime.poll_event_batch();
    if (!batch) return fail(batch.error());
    if (batch->empty()) {
      if (until_quiet || d.config.source->finished()) break;
      continue;
    }
    const auto context = [&](const char* what) {
      return std::string(what) + " a batch of " + std::to_string(batch->size()) + " events to " +
             pipeline.name();
    };
    CPPCDC_TRY(check_event_sizes(batch->events(), d.config.options.max_event_bytes));
    // One attempt at handing the batch to the sinks; a recoverable failure delivers the same
    // batch again after the breaker's wait (duplicates at the sinks that had taken it are what
    // at-least-once allows; a transactional sink aborts, so nothing of the attempt is seen).
    // After a failed attempt the sinks drop what they still hold of it first (Sink::recover());
    // a recover() that fails recoverably is retried like any failed attempt.
    // A transactional sink whose idle commit failed recovers before this batch.
    bool recover_first = std::exchange(d.sink_needs_recover, false);
    // What the health verdict shows while the attempt runs (a sink call may block for as long
    // as its own timeouts allow, e.g. Kafka's delivery_timeout_ms).
    const auto attempt = [&]() -> Status {
      AttemptScope scope(d, pipeline.name(), batch->size(), "recover");
      if (recover_first) {
        if (auto recovered = pipeline.recover(); !recovered) {
          return fail(recovered.error().context(context("recovering the sinks to deliver again")));
        }
        recover_first = false;
      }
      // A transaction that carries earlier batches (carried_events) is open already.
      if (sink != nullptr && d.carried_events == 0) {
        scope.stage("begin");
        if (auto begun = sink->begin(); !begun) {
          return fail(begun.error().context(context("opening a transaction for")));
        }
        d.batch_open = true;
      }
      scope.stage("write");
      auto written = pipeline.write(batch->events());
      if (!written) {
        if (sink != nullptr) {
          (void)sink->abort();
          d.batch_open = false;
        }
        return fail(written.error().context(context("writing")));
      }
      // A transactional sink delivers the batch inside its open transaction here, so that a
      // refused record aborts and retries the batch now instead of failing the commit.
      scope.stage("flush");
      auto flushed = pipeline.flush();
      if (!flushed) {
        if (sink != nullptr) {
          (void)sink->abort();
          d.batch_open = false;
        }
        return fail(flushed.error().context(context("flushing")));
      }
      if (sink != nullptr) {
        const AckMode mode = batch->ack_mode();
        scope.stage("commit");
        if (mode.token) CPPCDC_TRY(d.commit_attempt(*sink, *mode.token));
      }
      return ok();
    };
    for (;;) {
      auto st = attempt();
      if (st) break;
      if (d.carried_events > 0) {
        // The failed attempt aborted the transaction, and with it the events of earlier
        // batches it carried, which the source has handed over for good: only a restart from
        // the checkpoint reads them again, so this is not retried here.
        const std::uint64_t carried = std::exchange(d.carried_events, 0);
        d.drop_carried();
        d.batch_open = false;
        d.set_state(RuntimeState::kFailed);
        return fail(st.error().context(
            "the aborted transaction of " + (sink != nullptr ? sink->name() : pipeline.name()) +
            " also held " + std::to_string(carried) +
            " events of earlier batches that reached no position a restart could resume after "
            "(e.g. a snapshot of a table without a primary key, read in one transaction under "
            "effectively_once); they are not delivered, and a restart reads them again from "
            "the checkpoint" +
            std::string(d.checkpoint ? " at " + d.checkpoint->offset : std::string()) +
            ". Such a transaction stays open until the stretch ends: when the sink's transaction "
            "time limit ended it (Kafka: kafka_properties \"transaction.timeout.ms\", capped by "
            "the broker's transaction.max.timeout.ms), raise the limit, or give the table a "
            "primary key"));
      }
      if (!st.error().retryable()) return fail(st.error());
      if (d.cancel != nullptr && d.cancel->load()) {
        // Stopping: no retry; the batch stays unacknowledged and comes again after a restart
        // (force_stop() says so, with this note).
        d.unacked_note = "not delivered to " + pipeline.name() + ": " + st.error().report();
        return delivered;
      }
      runtime.record_delivery_failure(st.error(), pipeline.name());
      const auto next = d.on_recoverable(st.error(), "sink");
      if (next.give_up) return fail(st.error().context(next.note));
      spdlog::warn("delivery failed ({}); delivering the same batch again in {} ms: {}",
                   next.note, next.wait.count(), st.error().report());
      // Cancelled meanwhile: the batch stays unacknowledged and comes again after a restart.
      if (!d.wait_retry(next.wait)) {
        d.unacked_note = "not delivered to " + pipeline.name() + ", whose retry the stop " +
                         "request cut short: " + st.error().report();
        return delivered;
      }
      d.before_retry();
      recover_first = true;
    }
    d.on_recovered();
    CPPCDC_FAULT_POINT("runtime.before_ack");
    CPPCDC_TRY(runtime.commit_ack(batch->ack_mode()));
    delivered += batch->size();
    // Acknowledged in full and held by no one else: its memory goes back to the source.
    if (batch->events_.use_count() == 1) {
      d.config.source->recycle(std::move(*batch->events_));
    }
  }
  return delivered;
}

void Runtime::record_delivery_failure(const Error& error, std::string_view destination) {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  const std::int64_t now = d.now();
  if (!d.delivery_failure) {
    d.delivery_failure.emplace();
    const std::int64_t began = std::exchange(d.ended_attempt_started_ms, 0);
    d.delivery_failure->first_at_ms = began != 0 && began <= now ? began : now;
  }
  auto& f = *d.delivery_failure;
  if (!destination.empty()) f.destination = std::string(destination);
  f.last_error = error.report();
  f.last_at_ms = now;
  ++f.attempts;
}

RuntimeState Runtime::state() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->state;
}

RuntimeAdminSnapshot Runtime::admin_snapshot() const {
  const auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  RuntimeAdminSnapshot s;
  s.state = d.state;
  s.events_delivered = d.events_delivered;
  // Both counters of this process: the checkpoint's count covers earlier runs too. Events
  // carried in an open transaction are not committed yet (they are in flight).
  const std::uint64_t committed = d.events_committed - d.carried_counted;
  s.events_committed =
      committed > d.committed_before_start ? committed - d.committed_before_start : 0;
  s.events_committed_lifetime = committed;
  s.in_flight =
      d.events_delivered > s.events_committed ? d.events_delivered - s.events_committed : 0;
  if (d.checkpoint) s.checkpoint_offset = d.checkpoint->offset;
  s.last_poll_at_ms = d.last_poll_at_ms;
  s.last_delivery_at_ms = d.last_delivery_at_ms;
  s.last_commit_at_ms = d.last_commit_at_ms;
  s.idempotency_evictions = d.shaper.evictions();
  s.idempotency_unidentifiable_passthrough = d.shaper.unidentifiable();
  s.idempotency_suppressed = d.shaper.suppressed();
  s.breaker_state = d.breaker->state();
  s.recoverable_errors = d.breaker->recoverable_errors();
  s.consecutive_errors = d.breaker->consecutive();
  s.retrying = d.retrying;
  s.last_recoverable_error = d.last_recoverable_error;
  s.source_connected = d.source_connected && d.state == RuntimeState::kRunning;
  detail::HealthInputs in;
  in.state = d.state;
  in.now_ms = d.now();
  in.max_poll_wait_ms = d.config.options.max_poll_wait_ms;
  in.started_at_ms = d.started_at_ms;
  in.last_poll_at_ms = d.last_poll_at_ms;
  in.poll_started_at_ms = d.poll_started_at_ms;
  in.last_delivery_at_ms = d.last_delivery_at_ms;
  in.last_commit_at_ms = d.last_commit_at_ms;
  in.outstanding_since_ms = d.outstanding_since_ms;
  in.outstanding_events = d.outstanding_events;
  in.position_lost = d.position_lost;
  in.unconfirmed = d.unconfirmed;
  in.delivery_failure = d.delivery_failure;
  in.attempt = d.attempt;
  if (in.attempt && d.attempt_sink != nullptr) {
    in.attempt->sink_problem = d.attempt_sink->current_problem();
  } else if (in.attempt && d.delivering_to != nullptr) {
    in.attempt->sink_problem = d.delivering_to->current_problem();
  }
  in.breaker = d.breaker->state();
  in.consecutive_errors = d.breaker->consecutive();
  in.last_recoverable_error = d.last_recoverable_error;
  in.starting = d.starting;
  s.health = detail::evaluate_health(in);
  if (auto control = d.config.source->incremental_snapshot_control()) {
    s.incremental_snapshot = control->state();
  }
  return s;
}

std::shared_ptr<IncrementalSnapshotControl> Runtime::incremental_snapshot_control() const {
  return impl_->config.source->incremental_snapshot_control();
}

}  // namespace cppcdc
