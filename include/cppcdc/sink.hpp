#pragma once
// Sink: where delivered batches go. The runtime (or your loop) calls write() with a batch,
// then flush(), and acknowledges only after flush() returned: a sink must make the batch
// durable in flush() (the file sink writes and fsyncs there).

#include <filesystem>
#include <memory>
#include <span>
#include <string>

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
  /// Flushes and releases resources. Idempotent.
  virtual Status close() = 0;
  /// Name for logs ("file:/path", "stdout").
  virtual std::string name() const = 0;
};

/// JSON lines on standard output, one envelope per line. flush() flushes stdout.
std::unique_ptr<Sink> make_stdout_sink();

/// JSON lines appended to a file, one envelope per line. flush() writes and fsyncs. On open,
/// a torn final line left by a crash (bytes after the last newline) is cut off: that event
/// was never acknowledged and is delivered again. Errors: configuration (cannot open/create
/// the file, naming it), transient (write or fsync failed).
Result<std::unique_ptr<Sink>> make_file_sink(const std::filesystem::path& path);

}  // namespace cppcdc
