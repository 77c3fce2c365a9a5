// JSON-lines sink on standard output: one envelope per line; flush() writes the lines to
// file descriptor 1 (after flushing stdio's stdout). Nothing is durable here; flush() only means
// "delivered to whatever reads our stdout".

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cppcdc/codec.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class StdoutSink final : public Sink {
 public:
  explicit StdoutSink(std::unique_ptr<Encoder> encoder) : encoder_(std::move(encoder)) {}

  Status write(std::span<const Event> events) override {
    if (closed_) return fail(closed_error());
    return encode_lines(*encoder_, events, buffer_);
  }

  Status flush() override {
    if (closed_) return fail(closed_error());
    // Whatever else the process left in stdio's buffer goes first; the lines then go to the
    // descriptor directly, so that the bytes counted as written are the ones that reached it
    // (stdio may hold some back and drop them after an error).
    std::clearerr(stdout);
    if (std::fflush(stdout) != 0) return fail(error("cannot flush standard output"));
    while (!buffer_.empty()) {
      const ssize_t n = ::write(STDOUT_FILENO, buffer_.data(), buffer_.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail(error("cannot write to standard output"));
      }
      if (n == 0) return fail(error("cannot write to standard output"));
      mid_line_ = buffer_.data()[n - 1] != '\n';
      buffer_.consume(static_cast<std::size_t>(n));
    }
    return ok();
  }

  /// Before the runtime writes a failed batch again: the lines still buffered go, since the
  /// batch comes whole. What already left cannot be called back, so those lines come twice
  /// (at least once); a line cut in the middle is finished first, so the reader never sees a
  /// torn line followed by the batch.
  Status recover() override {
    if (closed_) return fail(closed_error());
    if (!mid_line_) {
      buffer_.clear();
      return ok();
    }
    const std::string_view rest = buffer_.view();
    const std::size_t eol = rest.find('\n');
    if (eol != std::string_view::npos) buffer_.cur() = buffer_.cur() - (rest.size() - eol - 1);
    return ok();
  }

  /// Flushes; stdout itself stays open (it is the process's). Later calls do nothing.
  Status close() override {
    if (closed_) return ok();
    Status st = flush();
    closed_ = true;
    return st;
  }

  std::string name() const override { return "stdout"; }

 private:
  static Error closed_error() { return Error::invalid_state("the stdout sink is closed"); }
  static Error error(const std::string& what) {
    const int err = errno;
    return Error::sink(ErrorKind::kTransient,
                       what + ": " + (err != 0 ? std::strerror(err) : "unknown error"));
  }

  std::unique_ptr<Encoder> encoder_;
  ByteBuffer buffer_;  // encoded lines not yet handed to stdio; reused across batches
  bool closed_ = false;
  bool mid_line_ = false;  // the bytes handed to stdio so far end inside a line
};

}  // namespace

std::unique_ptr<Sink> make_stdout_sink(std::unique_ptr<Encoder> encoder) {
  return std::make_unique<StdoutSink>(encoder ? std::move(encoder) : make_json_encoder());
}

}  // namespace cppcdc
