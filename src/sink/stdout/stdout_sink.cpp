// JSON-lines sink on standard output: one envelope per line; flush() hands the lines to the
// C library and flushes stdout. Nothing is durable here; flush() only means "delivered to
// whatever reads our stdout".

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/json_write.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class StdoutSink final : public Sink {
 public:
  Status write(std::span<const Event> events) override {
    for (const Event& event : events) {
      detail::write_event_json(buffer_, event);
      buffer_.ch('\n');
    }
    return ok();
  }

  Status flush() override {
    if (!buffer_.empty()) {
      std::clearerr(stdout);
      const std::size_t n = std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
      buffer_.consume(n);
      if (!buffer_.empty()) return fail(error("cannot write to standard output"));
    }
    if (std::fflush(stdout) != 0) return fail(error("cannot flush standard output"));
    return ok();
  }

  Status close() override { return flush(); }

  std::string name() const override { return "stdout"; }

 private:
  static Error error(const std::string& what) {
    const int err = errno;
    return Error::sink(ErrorKind::kTransient,
                       what + ": " + (err != 0 ? std::strerror(err) : "unknown error"));
  }

  detail::RawBuffer buffer_;  // serialised lines not yet handed to stdio; reused across batches
};

}  // namespace

std::unique_ptr<Sink> make_stdout_sink() { return std::make_unique<StdoutSink>(); }

}  // namespace cppcdc
