#pragma once

// Throttling for Source::lag(): a scrape may ask every second, and while the database is down
// each attempt could wait for a connection timeout. LagSampler keeps the last figures for
// `refresh` and, after a failed read, answers nullopt for `backoff` without trying again.
//
// Threading: get() may be called from any thread; reads are serialised under the sampler's
// mutex, so `read` may use state (a monitoring connection) that only it touches. A read that
// blocks delays the callers of get(), never the pipeline.

#include <chrono>
#include <mutex>
#include <optional>

#include "cppcdc/error.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc::detail {

class LagSampler {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LagSampler(Clock::duration refresh = std::chrono::seconds(2),
                      Clock::duration backoff = std::chrono::seconds(15))
      : refresh_(refresh), backoff_(backoff) {}

  /// The cached figures while fresher than `refresh`; nullopt during the back-off that follows
  /// a failed read; otherwise the result of `read()`, a callable returning
  /// Result<std::optional<SourceLag>>: figures, nullopt (nothing to report, cached like
  /// figures), or an error (nullopt now, and no read for `backoff`).
  template <class Read>
  std::optional<SourceLag> get(Read&& read) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (read_at_ && now - *read_at_ < refresh_) return cache_;
    if (now < retry_after_) return std::nullopt;
    read_at_ = now;
    cache_.reset();
    Result<std::optional<SourceLag>> figures = read();
    if (!figures) {
      retry_after_ = now + backoff_;
      return std::nullopt;
    }
    cache_ = *figures;
    return cache_;
  }

 private:
  const Clock::duration refresh_;
  const Clock::duration backoff_;
  std::mutex mutex_;
  std::optional<Clock::time_point> read_at_;
  Clock::time_point retry_after_{};
  std::optional<SourceLag> cache_;
};

}  // namespace cppcdc::detail
