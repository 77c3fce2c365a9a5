#pragma once
// Snapshot progress for a person: rows done of the estimated total, rate and time left. On a
// terminal (stderr is a TTY) a line redrawn in place twice a second; otherwise an info log
// line every 5 s. Used by the blocking and the incremental snapshot.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/text_util.hpp"

namespace cppcdc::detail {

// Progress for a person: rows done of the estimate, rate and time left. On a terminal, a
// line redrawn in place twice a second; otherwise a log line every 5 s.
class ProgressLog {
 public:
  ProgressLog(std::string table, double estimate, std::uint64_t done)
      : table_(std::move(table)),
        estimate_(estimate),
        start_done_(done),
        tty_(::isatty(STDERR_FILENO) == 1) {}
  void update(std::uint64_t done, bool final) {
    const auto now = std::chrono::steady_clock::now();
    if (tty_ && !final && now - last_ >= std::chrono::milliseconds(500)) {
      last_ = now;
      const double secs = std::chrono::duration<double>(now - start_).count();
      const double rate = secs > 0 ? static_cast<double>(done - start_done_) / secs : 0;
      std::string line = "\r\033[Ksnapshot " + table_ + ": " + std::to_string(done);
      if (estimate_ > 0) {
        line += " / ~" + std::to_string(static_cast<std::uint64_t>(estimate_)) + " rows (" +
                std::to_string(static_cast<int>(
                    std::min(100.0, 100.0 * static_cast<double>(done) / estimate_))) +
                "%)";
      } else {
        line += " rows";
      }
      line += ", " + std::to_string(static_cast<std::uint64_t>(rate)) + " rows/s";
      if (estimate_ > static_cast<double>(done) && rate > 0) {
        line += ", ~" +
                std::to_string(
                    static_cast<std::uint64_t>((estimate_ - static_cast<double>(done)) / rate)) +
                " s left";
      }
      [[maybe_unused]] auto w = ::write(STDERR_FILENO, line.data(), line.size());
      drawn_ = true;
      return;
    }
    if (tty_ && drawn_ && final) {
      [[maybe_unused]] auto w = ::write(STDERR_FILENO, "\r\033[K", 4);
    }
    if (tty_ && !final) return;
    if (!final && now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(done - start_done_) / secs : 0;
    // The estimate is the server's statistics, which can lag a table that grew: past it, the
    // line says the estimate was low rather than "1208 rows of about 897".
    const std::string estimated = std::to_string(static_cast<std::uint64_t>(estimate_));
    std::string of;
    if (estimate_ > 0) {
      of = static_cast<double>(done) <= estimate_ ? " of about " + estimated
                                                  : " (more than the estimated " + estimated + ")";
    }
    std::string eta;
    if (!final && estimate_ > static_cast<double>(done) && rate > 0) {
      eta = ", about " +
            std::to_string(
                static_cast<std::uint64_t>((estimate_ - static_cast<double>(done)) / rate)) +
            " s left";
    }
    spdlog::info("snapshot of {}: {}{}{} ({:.0f} rows/s){}", table_,
                 estimate_ > 0 ? std::to_string(done) + " rows" : detail::counted(done, "row"), of,
                 final ? " read, complete" : " read", rate, eta);
  }

 private:
  std::string table_;
  double estimate_;
  std::uint64_t start_done_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

}  // namespace cppcdc::detail
