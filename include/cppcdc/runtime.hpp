#pragma once
// Runtime: drives a Source, hands out event batches, and turns acknowledgements into durable
// checkpoints and source confirmations (architecture document, "Runtime Model" and "Safety
// Invariants"; API guide, "Runtime Lifecycle" and "Delivery And Acknowledgement Semantics").
//
//   auto rt = Runtime::create(std::move(config)).value();
//   rt->start();
//   while (...) {
//     auto batch = rt->poll_event_batch();          // up to max_buffer_size events
//     write_durably(batch->events());
//     rt->commit_ack(batch->ack_mode());            // checkpoint, then source confirm
//   }
//   rt->stop();                                     // refused while a batch is unacknowledged
//
// Threading: one thread drives a Runtime. admin_snapshot() and the incremental snapshot
// control may be used from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/idempotency.hpp"
#include "cppcdc/incremental_snapshot.hpp"
#include "cppcdc/pipeline.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc {

/// Back-off and retry budget for recoverable (transient) failures of the source and of the
/// sinks run_to_completion delivers to (API guide, "Connection Retry Policy"). Defaults: 5
/// retries, 300 ms initial delay, 10 s cap, doubling. The delays are the back-off of the
/// circuit breaker below while it is closed; max_retries, when set, ends the run after that many
/// failed retries in a row even before the breaker would escalate. Only errors of kind
/// transient are retried; configuration, terminal and invalid-data errors never are.
struct ConnectionRetryPolicy {
  std::optional<std::uint32_t> max_retries = 5;  ///< nullopt: no budget, the breaker decides
  std::uint32_t initial_delay_ms = 300;
  std::uint32_t max_delay_ms = 10'000;
};

/// Whether a batch may end inside a source transaction (API guide, "Transaction Boundaries").
enum class TransactionBoundaryPolicy {
  /// Batches are cut on size alone, so a transaction may be spread over two batches (and two
  /// sink commits). Lowest latency, memory bounded by max_buffer_size. The default.
  kSplit,
  /// Every batch ends on a transaction boundary: a trailing transaction whose end has not been
  /// read yet is held back and delivered with the next batch. A transaction ends at its event
  /// with event_index + 1 == total_events, or where an event of another transaction follows;
  /// an event without transaction metadata is a boundary of its own. A transaction with more
  /// events than max_buffer_size cannot fit and is delivered split, with a warning naming it.
  kPreserveTransactions,
};
/// "split", "preserve_transactions".
std::string_view to_string(TransactionBoundaryPolicy policy) noexcept;
/// The circuit breaker over recoverable errors that source reads and sink deliveries share
/// (core concepts, "Circuit breaker"; `[runtime] recoverable_error_breaker_*` in cdc.toml).
/// After `consecutive_threshold` failures in a row it opens: nothing is tried for
/// `cooldown_ms`, then one probe. A failed probe opens it again; when the probe of the
/// `max_open_cycles`-th cycle fails too, it escalates to the error state and the run ends.
/// Any success closes it and resets the counts.
struct CircuitBreakerPolicy {
  std::uint32_t consecutive_threshold = 10;  ///< >= 1
  std::uint32_t cooldown_ms = 30'000;
  std::uint32_t max_open_cycles = 3;  ///< >= 1
};

struct RuntimeOptions {
  /// Most events in one batch.
  std::size_t max_buffer_size = 10'000;
  /// Longest a poll waits for the first event, in ms.
  std::uint32_t max_poll_wait_ms = 500;
  ConnectionRetryPolicy connection_retry;
  /// The runtime's own duplicate suppression, on by default; nullopt turns it off. An event
  /// the source hands over again after it was acknowledged in this process (an incremental
  /// snapshot chunk re-read after a reconnect, a source replaying past the checkpoint) is not
  /// handed out a second time, but is acknowledged and checkpointed as if it had been. Only
  /// identifiable events are suppressed (idempotency.hpp); events delivered and not yet
  /// acknowledged (a batch's tail after accept_prefix, a batch delivered again) are never
  /// suppressed. The window is in memory and starts empty on every start.
  std::optional<IdempotencyOptions> idempotency = IdempotencyOptions{};
  TransactionBoundaryPolicy transaction_boundary = TransactionBoundaryPolicy::kSplit;
  CircuitBreakerPolicy breaker;
  /// Largest event run_to_completion hands to a sink, in bytes as held in memory (column
  /// values, names and the envelope's strings; approximate but proportional). A larger event
  /// ends the run with an invalid_data error naming its table and size: it is never retried,
  /// as it would be just as large on every attempt. 0: no limit.
  std::uint64_t max_event_bytes = 0;
  /// The wall clock the health verdict and the breaker read, in ms since the epoch. Empty:
  /// the system clock. Tests put a fake clock here.
  std::function<std::int64_t()> clock_ms;
  /// How the runtime waits between retries. Empty: std::this_thread::sleep_for. A fake
  /// clock's test advances its clock here instead of sleeping. Called with at most 100 ms at a
  /// time, so that a cancelled run stops waiting soon.
  std::function<void(std::chrono::milliseconds)> sleep;
};

/// Hooks for counting what the runtime does (the server's metrics). Called on the thread that
/// drives the runtime, once per batch or checkpoint, never per event, and never with the
/// runtime's lock held: an implementation must be quick and must not call back into the
/// runtime. The spans are valid only during the call.
class RuntimeObserver {
 public:
  virtual ~RuntimeObserver() = default;
  /// A poll handed out `events` (a non-empty batch, as the source produced it).
  virtual void on_delivered(std::span<const Event> /*events*/) {}
  /// commit_ack succeeded for `events` (the acknowledged prefix of the outstanding batch), and
  /// they are committed: at the sinks and, with them, in the checkpoint as far as it goes.
  /// `acked_at_ms`: wall clock when commit_ack was called, i.e. right after the sinks flushed
  /// when run_to_completion drives the runtime. Under a transactional sink this commit also
  /// commits the events of the on_carried() calls since the last on_committed().
  virtual void on_committed(std::span<const Event> /*events*/, std::int64_t /*acked_at_ms*/) {}
  /// commit_ack succeeded for `events`, but a transactional sink carries them in its open
  /// transaction (a stretch with no position to resume after: a snapshot of a table without a
  /// primary key, say): they are committed only with the next on_committed(), or dropped by
  /// on_carried_aborted(). Not committed yet, so not to be counted as such.
  virtual void on_carried(std::span<const Event> /*events*/, std::int64_t /*acked_at_ms*/) {}
  /// The open transaction that carried the events of the on_carried() calls since the last
  /// on_committed() was aborted (a stop, or a failed delivery): none of them is committed, and
  /// a restart from the checkpoint delivers them again.
  virtual void on_carried_aborted() {}
  /// A checkpoint record became durable (after a batch, or for an idle position).
  virtual void on_checkpoint(const CheckpointRecord& /*record*/) {}
};

struct RuntimeConfig {
  std::unique_ptr<Source> source;
  std::shared_ptr<Checkpoint> checkpoint;
  RuntimeOptions options;
  /// Optional; shared so that its owner may read what it counted from other threads.
  std::shared_ptr<RuntimeObserver> observer;
};

class Runtime;

/// Proof that a batch was handed out; committing it advances the checkpoint over its events.
/// Copies share one use: the first commit of any copy consumes all of them, and a second
/// commit is refused (kind invalid_state).
class AckToken {
 public:
  std::uint64_t delivery_id() const noexcept { return delivery_id_; }
  /// Number of events this token acknowledges.
  std::size_t size() const noexcept { return count_; }
  /// A token for the first `n` events only (n <= size()). The rest is redelivered by the next
  /// poll. Error kind invalid_state when n > size() or the token was already used.
  Result<AckToken> accept_prefix(std::size_t n) const;
  bool used() const noexcept { return used_->load(); }

 private:
  friend class Runtime;
  AckToken(std::uint64_t id, std::size_t count, std::shared_ptr<std::atomic<bool>> used)
      : delivery_id_(id), count_(count), used_(std::move(used)) {}
  std::uint64_t delivery_id_;
  std::size_t count_;
  std::shared_ptr<std::atomic<bool>> used_;
};

/// What to do with a batch: a token to commit, or nothing (empty batch).
struct AckMode {
  std::optional<AckToken> token;  ///< nullopt: not required; committing it is a no-op
  bool required() const noexcept { return token.has_value(); }
};

class EventBatch {
 public:
  /// The events, in log order. Shared with the runtime (which needs the tail again after a
  /// partial acknowledgement), hence read-only.
  const std::vector<Event>& events() const noexcept { return *events_; }
  bool empty() const noexcept { return events_->empty(); }
  std::size_t size() const noexcept { return events_->size(); }
  /// A fresh copy of the batch's ack mode (copies share one use).
  AckMode ack_mode() const { return AckMode{token_}; }

 private:
  friend class Runtime;
  std::shared_ptr<std::vector<Event>> events_ = std::make_shared<std::vector<Event>>();
  std::optional<AckToken> token_;
};

enum class RuntimeState { kCreated, kRunning, kStopped, kFailed };
std::string_view to_string(RuntimeState state) noexcept;

/// Why a running pipeline is not making progress, and so whose problem it is. The health
/// check looks for them in this order and reports the first that holds (API guide, "Health
/// verdict").
enum class StallCause {
  kSourcePositionLost,         ///< the database dropped the retained position (slot invalidated)
  kUnconfirmedSourcePosition,  ///< a durable position the source refused to confirm
  kDeliveryFailing,            ///< record_delivery_failure reported for longer than the threshold
  kPollLoopNotTurning,         ///< no poll returned for max_poll_wait_ms x 6 (at least 30 s)
  kConsumerNotAcknowledging,   ///< events handed out, no commit_ack for too long
};
/// snake_case name: "source_position_lost", "unconfirmed_source_position", "delivery_failing",
/// "poll_loop_not_turning", "consumer_not_acknowledging".
std::string_view to_string(StallCause cause) noexcept;

/// The runtime's answer to "is this pipeline making progress?".
struct HealthVerdict {
  enum class Kind {
    kHealthy,     ///< polls return and events flow
    kIdle,        ///< polls return, the source is quiet: normal, never alert on it alone
    kStalled,     ///< see cause
    kNotRunning,  ///< not started yet, stopped or failed
  };
  Kind kind = Kind::kNotRunning;
  std::optional<StallCause> cause;  ///< set exactly when kind is kStalled
  /// For a person: what fired, with the measurements (elapsed ms, counts, positions); it
  /// changes from one evaluation to the next, so never compare it to detect a change.
  std::string reason;

  /// True for kStalled only: what a readiness probe or an alert gates on.
  bool is_alertable() const noexcept { return kind == Kind::kStalled; }
  /// Stable while the condition is: the verdict's name, and for a stall its cause
  /// ("healthy", "idle", "not_running", "stalled:poll_loop_not_turning").
  std::string change_key() const;
};
/// "healthy", "idle", "stalled", "not_running".
std::string_view to_string(HealthVerdict::Kind kind) noexcept;

/// The circuit breaker that source reads and sink deliveries share (core concepts, "Circuit
/// breaker"): closed (normal), open (cooling down after consecutive recoverable errors),
/// half-open (one probe allowed), error (escalated after too many open cycles: terminal).
enum class BreakerState { kClosed, kOpen, kHalfOpen, kError };
/// "closed", "open", "half_open", "error".
std::string_view to_string(BreakerState state) noexcept;

/// Counters and positions for an admin endpoint or logs.
struct RuntimeAdminSnapshot {
  RuntimeState state = RuntimeState::kCreated;
  std::uint64_t events_delivered = 0;  ///< handed out by poll_event_batch (and suppressed
                                       ///< duplicates, acknowledged as if handed out)
  /// Committed by this process, like events_delivered and the Prometheus counter
  /// cppcdc_events_committed_total: acknowledged and durable at the sinks. Events a
  /// transactional sink carries in its open transaction count only once that commits.
  std::uint64_t events_committed = 0;
  /// Committed over the pipeline's life, earlier runs included: the count the checkpoint
  /// carries (its committed_events) plus this process's commits since its last record.
  std::uint64_t events_committed_lifetime = 0;
  /// Delivered by this process and not committed yet (events_delivered - events_committed):
  /// the batch in flight, and batches carried in an open transaction.
  std::uint64_t in_flight = 0;
  std::optional<std::string> checkpoint_offset;  ///< last durable resume position
  std::int64_t last_poll_at_ms = 0;      ///< wall clock (ms since the epoch) of the last
                                         ///< returned poll, empty or not; 0: none yet
  std::int64_t last_delivery_at_ms = 0;  ///< the last poll that returned events; 0: none yet
  std::int64_t last_commit_at_ms = 0;    ///< the last commit_ack; 0: none yet
  HealthVerdict health;
  BreakerState breaker_state = BreakerState::kClosed;
  /// Recoverable errors retried so far (source reads and sink deliveries together).
  std::uint64_t recoverable_errors = 0;
  /// Recoverable errors in a row since the last success (what the breaker counts).
  std::uint32_t consecutive_errors = 0;
  /// While the runtime retries after a recoverable failure, from that failure until the next
  /// success: the side that failed, "source" (reconnecting), "sink" (delivering the batch
  /// again) or "checkpoint" (saving an idle position); empty otherwise.
  std::string retrying;
  /// Error::report() of the latest recoverable error; kept after a success (empty: none yet).
  std::string last_recoverable_error;
  /// True while the runtime runs and its source connection is up: from a successful start or
  /// reconnect until a read fails (the source is then closed and reconnected) or the runtime
  /// stops.
  bool source_connected = false;
  /// The idempotency guard's counters (0 without a guard): entries pushed out of a full
  /// window, and events let through because nothing identifies them.
  std::uint64_t idempotency_evictions = 0;
  std::uint64_t idempotency_unidentifiable_passthrough = 0;
  /// Events not handed out because they had been acknowledged before (0 without a guard).
  std::uint64_t idempotency_suppressed = 0;
  /// The incremental snapshot's state as of the last poll; nullopt when the source has none.
  std::optional<IncrementalSnapshotState> incremental_snapshot;
};

class Runtime {
 public:
  /// Validates the config. Error kind configuration (no source, no checkpoint,
  /// max_buffer_size 0, idempotency capacity 0).
  static Result<std::unique_ptr<Runtime>> create(RuntimeConfig config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Loads the checkpoint and starts the source from it, retrying transient failures under
  /// the connection retry policy and the circuit breaker. A checkpoint that cannot be read is
  /// terminal.
  Status start();
  /// start(), whose waits between retries end once `cancel` becomes true (a stop signal while
  /// the database is unreachable at startup): it then fails with the last source error.
  Status start(const std::atomic<bool>& cancel);

  /// Before start(), optional: loads the checkpoint (start() then uses this record), so that
  /// admin_snapshot() shows its position and `events_committed_lifetime` from then on, also
  /// while the source cannot be reached yet. Calling it again does nothing. Fails as start()
  /// would on the checkpoint (the runtime is failed then).
  Status load_checkpoint();
  /// Before start(), optional: runs `attempt` (a check the start depends on, made against the
  /// source's server, such as `cppcdc run`'s check that no other process reads the source)
  /// until it succeeds, under the same retry policy and circuit breaker as the source's start:
  /// each retryable failure counts as a recoverable error of the source side, backs off, opens
  /// and half-opens the breaker, and escalates to the error state (the runtime is failed
  /// then). A failure that is not retryable ends it at once. While it runs, admin_snapshot()
  /// reports the start as connecting to the source, with the failed attempts and the last
  /// error. `waiting` starts each retry's log line ("waiting for the postgres source ...").
  /// The waits end once `cancel` becomes true; it then fails with the last error.
  Status await_before_start(const std::function<Status()>& attempt, std::string_view waiting,
                            const std::atomic<bool>& cancel);

  /// Up to max_buffer_size events, waiting up to max_poll_wait_ms for the first; an empty
  /// batch when the source was quiet. At most one batch is outstanding: polling again before
  /// acknowledging the previous batch is refused (invalid_state). Events of a partially
  /// acknowledged batch are handed out again first. Transient source failures are retried
  /// (reconnecting from the last checkpoint) under the retry policy. Under
  /// kPreserveTransactions a trailing unfinished transaction is held back for the next poll.
  /// With the idempotency guard, events acknowledged before are left out of the batch and
  /// acknowledged with it; a poll whose events were all left out acknowledges them itself and
  /// goes on reading.
  Result<EventBatch> poll_event_batch();

  /// Acknowledges a batch (or a prefix of one): the consumer has made those events durable.
  /// Saves the checkpoint at the last resumable boundary they reach, then confirms that
  /// position to the source. Refuses a used token, a token of another delivery.
  Status commit_ack(const AckMode& mode);
  Status commit_ack(const AckToken& token);

  /// Closes the source. Refused (invalid_state) while a batch is unacknowledged.
  Status stop();
  /// Closes the source even with events in flight; they are replayed after a restart. Logs a
  /// warning with shutdown_mode=forced, saying how many events are unacknowledged and why:
  /// `why` (a few words, e.g. "the error below ended their delivery"; empty: "delivered but
  /// not acknowledged"), or what run_to_completion() noted when a stop request ended a
  /// delivery attempt (which sink did not take the batch, and its error).
  /// Returns true when that was the case: the stop cut short a delivery attempt that had not
  /// got through (a sink failing or not answering), or the wait before its retry, and left
  /// events unacknowledged (the server then exits 1).
  bool force_stop(std::string_view why = {});

  /// poll -> sink.write -> sink.flush -> commit_ack until `cancel` becomes true or an error.
  /// Returns the number of events delivered. A batch that failed mid-delivery is not
  /// acknowledged. An error that `cancel` did not cause leaves the runtime failed
  /// (RuntimeState::kFailed, health verdict not_running) until stop() or force_stop(), so
  /// that a readiness probe or a scrape in the meantime does not see it healthy. A TransactionalSink (sink.hpp) gets begin -> write -> commit(record) per
  /// batch instead, carrying the checkpoint record the commit barrier planned; the checkpoint
  /// backend is then not written by the runtime, and idle positions go through the sink too.
  Result<std::uint64_t> run_to_completion(Sink& sink, const std::atomic<bool>& cancel);

  /// The same loop over a pipeline (pipeline.hpp): each batch is transformed, routed and
  /// written to every sink, every sink is flushed, and only then is the batch acknowledged
  /// (the batch as the source produced it, whatever the transforms did). When the pipeline's
  /// sinks ask for a gathering delay (Pipeline::batch_delay()), each poll goes on reading
  /// after the first event until max_buffer_size events or that delay.
  Result<std::uint64_t> run_to_completion(Pipeline& pipeline, const std::atomic<bool>& cancel);

  /// Ends a run cleanly: polls until the source has nothing more to hand out (an empty poll),
  /// delivering and acknowledging every batch through `pipeline`, then stops the runtime.
  /// Returns the number of events delivered. The source goes on being read while batches keep
  /// coming, so a source that never goes quiet is drained only as far as `cancel` lets it.
  Result<std::uint64_t> drain_and_stop(Pipeline& pipeline, const std::atomic<bool>& cancel);

  /// Reports that delivering the outstanding batch failed; call it on every failed attempt
  /// of a consumer loop that holds a batch and retries it (run_to_completion does so itself).
  /// `destination` names where the batch was going (empty: the error's own text must say).
  /// Once the first such failure is older than the stall threshold with no commit_ack since,
  /// the health verdict is Stalled with cause kDeliveryFailing, naming the destination and
  /// the last error; before that it stays Healthy or Idle. The next successful commit_ack
  /// clears it. Thread-safe.
  void record_delivery_failure(const Error& error, std::string_view destination = {});

  RuntimeState state() const noexcept;
  /// Counters, positions and the health verdict, evaluated now on the runtime's clock
  /// (RuntimeOptions::clock_ms). The verdict's stall threshold is max_poll_wait_ms x 6, at least
  /// 30 s. Thread-safe.
  RuntimeAdminSnapshot admin_snapshot() const;

  /// The handle that requests, pauses, resumes and stops incremental snapshots and reads
  /// their state; usable from any thread (incremental_snapshot.hpp). nullptr when the source
  /// has no incremental snapshot support.
  std::shared_ptr<IncrementalSnapshotControl> incremental_snapshot_control() const;

 private:
  explicit Runtime(RuntimeConfig config);
  Result<EventBatch> poll_source_batch();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cppcdc
