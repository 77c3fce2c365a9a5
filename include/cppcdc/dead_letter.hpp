#pragma once
// Dead letters: events the pipeline could not deliver as configured, kept with why, so that a
// skipped event is never lost silently (the server's `[dead_letter]`; the transforms'
// transform_error_policy = "skip").
//
// DeadLetterWriter appends one JSON object per line to a file:
//
//   {"time":"2026-01-01T12:00:00.123Z","stage":"pii","error_kind":"invalid_data",
//    "error":"transform stage \"pii\" (mask) on table public.t ...: invalid data: ...",
//    "event":{...the envelope, as Event::to_json() writes it...}}
//
// `stage` names the transform stage that failed; a record written for a sink carries `sink`
// with the sink's name instead. `time` is when the record was written (UTC, milliseconds);
// `error` is Error::report() and `error_kind` its kind (to_string(ErrorKind)). Read a record
// back with Event::from_json() on its "event" member.
//
// Durability: append() buffers; flush() writes and fsyncs. A record is durable once a flush()
// after its append() returned ok, which the pipeline makes sure of before it acknowledges the
// batch the event came in. A crash can leave at most a torn last line, belonging to a batch that
// was not acknowledged: open() cuts it off (the batch is delivered again, and the event is
// written again). The file is created with `file_mode` (0600 by default: the records hold
// captured rows), along with missing parent directories; an existing file keeps its mode.
//
// Errors: configuration (the file cannot be created or opened, naming it), transient (a write
// or fsync failed). Threading: one thread at a time. Ownership: the caller owns the writer.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "cppcdc/error.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

/// Who gave up on the event: a transform stage or a sink, by name.
struct DeadLetterOrigin {
  enum class Kind { kStage, kSink };
  Kind kind = Kind::kStage;
  std::string name;
  static DeadLetterOrigin stage(std::string name) { return {Kind::kStage, std::move(name)}; }
  static DeadLetterOrigin sink(std::string name) { return {Kind::kSink, std::move(name)}; }
};

struct DeadLetterOptions {
  /// Permission bits of the file when this writer creates it (before the umask).
  unsigned file_mode = 0600;
};

class DeadLetterWriter {
 public:
  /// Opens (creating when absent) the file at `path` for appending.
  static Result<std::unique_ptr<DeadLetterWriter>> open(const std::filesystem::path& path,
                                                        DeadLetterOptions options = {});
  ~DeadLetterWriter();
  DeadLetterWriter(const DeadLetterWriter&) = delete;
  DeadLetterWriter& operator=(const DeadLetterWriter&) = delete;

  /// Buffers the record of `event`, which `origin` gave up on with `error`. Refused
  /// (invalid_state) after close().
  Status append(const Event& event, const Error& error, const DeadLetterOrigin& origin);
  /// Writes and fsyncs every buffered record. Nothing buffered: nothing to do.
  Status flush();
  /// append() then flush().
  Status write(const Event& event, const Error& error, const DeadLetterOrigin& origin);
  /// Flushes and closes. Idempotent.
  Status close();

  /// Records made durable through this writer.
  std::uint64_t records() const noexcept;
  /// Records appended and not yet flushed.
  std::size_t pending() const noexcept;
  const std::filesystem::path& path() const noexcept;

 private:
  DeadLetterWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One record's JSON text (no newline), as DeadLetterWriter writes it; `time_ms` is
/// milliseconds since the Unix epoch.
std::string dead_letter_record(const Event& event, const Error& error,
                               const DeadLetterOrigin& origin, std::int64_t time_ms);

}  // namespace cppcdc
