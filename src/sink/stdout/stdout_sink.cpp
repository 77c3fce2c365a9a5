// JSON-lines sink on standard output: one envelope per line; flush() hands the lines to the
// C library and flushes stdout. Nothing is durable here; flush() only means "delivered to
// whatever reads our stdout".

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
    if (!buffer_.empty()) {
      std::clearerr(stdout);
      const std::size_t n = std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
      buffer_.consume(n);
      if (!buffer_.empty()) return fail(error("cannot write to standard output"));
    }
    if (std::fflush(stdout) != 0) return fail(error("cannot flush standard output"));
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
};

}  // namespace

std::unique_ptr<Sink> make_stdout_sink(std::unique_ptr<Encoder> encoder) {
  return std::make_unique<StdoutSink>(encoder ? std::move(encoder) : make_json_encoder());
}

}  // namespace cppcdc
