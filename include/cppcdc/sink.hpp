#pragma once
// Sink: where delivered batches go. The runtime (or your loop) calls write() with a batch,
// then flush(), and acknowledges only after flush() returned: a sink must make the batch
// durable in flush() (the file sink writes and fsyncs there). A sink turns events into bytes
// through an Encoder (codec.hpp); the built-in sinks default to the JSON envelope.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

class Sink {
 public:
  virtual ~Sink() = default;
  /// Accepts a batch (in order). May buffer.
  virtual Status write(std::span<const Event> events) = 0;
  /// Makes everything written so far durable (or delivered, for non-durable sinks).
  virtual Status flush() = 0;
  /// Flushes and releases resources. Idempotent. write() and flush() after close() are
  /// refused (kind invalid_state).
  virtual Status close() = 0;
  /// Name for logs ("file:/path", "stdout").
  virtual std::string name() const = 0;
  /// How long this sink would like Runtime::run_to_completion to keep gathering events into a
  /// batch after the first one arrived (up to RuntimeOptions::max_buffer_size), so that it
  /// flushes larger batches less often. 0 (the default): no wish; the batch is handed over
  /// with what the source had ready. Read once when a run starts.
  virtual std::chrono::milliseconds batch_delay() const { return std::chrono::milliseconds(0); }
  /// Called by Runtime::run_to_completion before it delivers a batch again after write() or
  /// flush() failed with a recoverable (transient) error; the whole batch is written again
  /// after it. A sink that refuses further work after a failure, so that a caller cannot
  /// acknowledge past a lost record, drops what it still holds of the failed attempt here and
  /// takes writes again. An error (a sink that cannot recover, e.g. a producer that hit a fatal
  /// error) ends the retries with it. The default: nothing to do.
  virtual Status recover() { return ok(); }
  /// What this sink sees going wrong right now, for the health verdict while one of its calls
  /// is blocked (e.g. "all 3 brokers unreachable for 42 s; last error: ..."); empty when
  /// nothing is known to be wrong. Diagnostic text only: it never changes what the runtime
  /// does. Called from other threads (the admin server) while write(), flush() or commit() run
  /// on the runtime's thread, so it must be thread-safe and must not block. The default: empty.
  virtual std::string current_problem() const { return {}; }
  /// For a sink that retries inside its own calls (the HTTP sink retries a request within one
  /// flush()): every attempt to reach its destination that failed so far, over its life, the
  /// ones it retried itself included, so that monitoring sees each one as it happens rather
  /// than only the call that finally failed. nullopt (the default): the sink does not retry
  /// internally, and each failed write(), flush() or commit() is one failed attempt. Called
  /// from other threads while the sink's calls run: thread-safe, must not block.
  virtual std::optional<std::uint64_t> failed_attempts() const { return std::nullopt; }
};

/// A sink that makes a batch and the checkpoint record durable together, in one transaction of
/// its own (Kafka under effectively_once: the records and the offsets commit atomically). When
/// Runtime::run_to_completion drives one, each batch goes begin() -> write() -> commit(record),
/// where `record` is what the commit barrier planned for that batch; the runtime then does not
/// save the record through its Checkpoint backend (which must read back what the sink committed
/// on the next start) and only confirms the source. Positions the runtime checkpoints while
/// idle go through begin() -> commit(record) with no write.
///
/// The runtime runs the invariant 6 guard (check_monotonic) on `record` before commit(), so the
/// sink need not. Between write() and commit() the runtime calls flush(): the sink delivers what
/// it wrote inside the open transaction (not yet visible to readers of committed data) and
/// reports a refusal there, where the runtime aborts and retries the batch under the retry
/// policy; commit() then only has to commit.
///
/// Errors: a failed commit() leaves neither the batch nor the record durable (the runtime fails
/// and the batch is delivered again after a restart); abort() is then called, and must be safe
/// to call after a failed commit or without an open transaction.
class TransactionalSink : public Sink {
 public:
  /// Opens a transaction. Refused (invalid_state) while one is open.
  virtual Status begin() = 0;
  /// Commits what was written since begin() together with `record` (nullopt: the checkpoint
  /// does not change with this batch). On success both are durable; on failure neither is.
  virtual Status commit(const std::optional<CheckpointRecord>& record) = 0;
  /// Drops what was written since begin(). Idempotent.
  virtual Status abort() = 0;
};

/// One record per line on standard output, encoded by `encoder` (nullptr: the JSON envelope).
/// flush() flushes stdout.
std::unique_ptr<Sink> make_stdout_sink(std::unique_ptr<Encoder> encoder = nullptr);

/// Options of the file sink.
struct FileSinkOptions {
  /// Permission bits of a file the sink creates (before the umask), e.g. 0600. Captured rows
  /// are data: the default keeps them readable by the owner only. An existing file keeps its
  /// mode.
  unsigned file_mode = 0600;
};

/// Records appended to a file, one per line, encoded by `encoder` (nullptr: the JSON
/// envelope). flush() writes and fsyncs. On open, a torn final line left by a crash (bytes after
/// the last newline) is cut off: that event was never acknowledged and is delivered again.
/// A file (and parent directories) that open() created and that is still empty at close() is
/// removed again, so a run that failed to start leaves nothing behind. Errors: configuration
/// (cannot open/create the file, naming it), transient (write or fsync failed).
Result<std::unique_ptr<Sink>> make_file_sink(const std::filesystem::path& path,
                                             std::unique_ptr<Encoder> encoder = nullptr,
                                             FileSinkOptions options = {});

}  // namespace cppcdc
