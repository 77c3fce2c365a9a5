#include "core/reader_handoff.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace cppcdc::detail {

ReaderHandoff::~ReaderHandoff() { close(); }

Status ReaderHandoff::open(Limits limits) {
  close();
  if (::pipe(wake_) != 0) {
    wake_[0] = wake_[1] = -1;
    return fail(Error::internal(std::string("pipe() failed: ") + std::strerror(errno)));
  }
  stop_.store(false);
  bulk_.store(false);
  assembling_.store(false);
  std::lock_guard lock(mutex_);
  limits_ = limits;
  if (limits_.max_events == 0) limits_.max_events = 1;
  queue_.clear();
  publish_queued();
  last_take_.store(0);
  deferred_error_.reset();
  error_.reset();
  reader_done_ = false;
  signalled_ = false;
  open_ = true;
  return ok();
}

void ReaderHandoff::close() {
  for (int& fd : wake_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  std::vector<std::vector<Event>> done;
  std::lock_guard lock(mutex_);
  open_ = false;
  done.swap(recycled_);
  recycled_events_ = 0;
}  // `done` is released after the lock

void ReaderHandoff::finish(std::optional<Error> error) {
  std::lock_guard lock(mutex_);
  if (error) error_ = std::move(error);
  reader_done_ = true;
  not_empty_.notify_all();
}

void ReaderHandoff::release_recycled() {
  std::vector<std::vector<Event>> done;
  std::lock_guard lock(mutex_);
  done.swap(recycled_);
  recycled_events_ = 0;
}  // `done` is released after the lock

void ReaderHandoff::take_recycled(std::vector<std::vector<Event>>& out) {
  // Called often (per binlog event): never waits for the consumer, who may hold the lock.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || recycled_.empty()) return;
  for (auto& batch : recycled_) out.push_back(std::move(batch));
  recycled_.clear();
  recycled_events_ = 0;
}

void ReaderHandoff::wait_drained(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  not_full_.wait_for(lock, timeout, [&] { return stop_.load() || queue_.empty(); });
}

void ReaderHandoff::set_bulk(bool on) {
  bulk_.store(on);
  if (!on) {
    std::lock_guard lock(mutex_);
    not_empty_.notify_all();
  }
}

Result<bool> ReaderHandoff::wait_readable(int fd, int timeout_ms) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  if (::poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
    return fail(Error::source(ErrorKind::kTransient,
                              std::string("poll() failed: ") + std::strerror(errno)));
  }
  if (fds[1].revents & POLLIN) {
    char drain[64];
    [[maybe_unused]] auto d = ::read(wake_[0], drain, sizeof drain);
  }
  return (fds[0].revents & POLLIN) != 0;
}

void ReaderHandoff::nap(int ms) { [[maybe_unused]] auto woken = wait_readable(-1, ms); }

ReaderHandoff::Taken ReaderHandoff::take(std::vector<Event>& out, std::size_t max_events,
                                         std::chrono::milliseconds wait) {
  Taken taken;
  if (deferred_error_) {
    taken.error = std::move(deferred_error_);
    deferred_error_.reset();
    return taken;
  }
  // The largest poll seen: a poll that tops up a batch asks for the rest only.
  if (max_events > last_take_.load(std::memory_order_relaxed)) {
    last_take_.store(max_events, std::memory_order_relaxed);
  }
  std::unique_lock lock(mutex_);
  not_empty_.wait_for(lock, wait, [&] { return !queue_.empty() || reader_done_ || signalled_; });
  signalled_ = false;
  if (bulk_.load()) {
    // A bulk reader reads as fast as it can and nobody waits for a single row: let a batch
    // fill (briefly), so that the sink's flush and the checkpoint's fsync are paid per large
    // batch rather than per chunk.
    linger_for_more(lock, kBulkLinger, std::min(max_events, limits_.max_events / 2),
                    [&] { return bulk_.load(); });
  } else if (assembling_.load(std::memory_order_relaxed)) {
    // More is on its way (the reader is inside a transaction): a short wait for a fuller poll.
    linger_for_more(
        lock, limits_.assembling_linger, std::min(max_events, limits_.max_events) / 2,
        [&] { return !signalled_ && !stop_.load() && assembling_.load(std::memory_order_relaxed); },
        &lingers_);
    signalled_ = false;
  }
  // Batches are taken off the queue under the lock and their events moved after it (the
  // reader is not held up meanwhile); deferred batches at the front are made here, without
  // the lock too (only this thread takes from the front).
  std::vector<BatchQueue::Detached> detached;
  while (true) {
    taken.events += queue_.take(out, max_events - taken.events, &detached, taken.events);
    queue_.set_poll_size(max_events);
    std::unique_ptr<DeferredBatch> deferred;
    std::size_t estimate = 0;  // of the deferred batch's events
    if (taken.events < max_events) {
      estimate = queue_.front_deferred();
      if (estimate > 0 && (taken.events == 0 || taken.events + estimate <= max_events)) {
        deferred = queue_.pop_deferred();
      }
    }
    if (detached.empty() && !deferred) break;
    publish_queued();
    not_full_.notify_all();
    lock.unlock();
    BatchQueue::append_detached(out, detached, max_events);
    std::vector<Event> overflow;
    std::vector<std::size_t> overflow_sizes;
    if (deferred) {
      // Room for the batch's events once, when the poll holds some already; into an empty
      // poll the batch itself chooses its vector (it may have a spent one whose memory is
      // mapped).
      if (!out.empty()) BatchQueue::grow_for_poll(out, out.size() + estimate, max_events);
      const std::size_t before = out.size();
      auto made = deferred->produce(out);
      deferred.reset();
      if (!made) {
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
        // With events before it, this poll returns those and the next reports the error.
        (taken.events == 0 ? taken.error : deferred_error_) = std::move(made.error());
        return taken;
      }
      // More than the poll asked for (the estimate was low): the rest goes back to the
      // front of the queue, for the next poll.
      const std::size_t room = max_events - taken.events;
      if (*made > room) {
        const auto cut = out.begin() + static_cast<std::ptrdiff_t>(before + room);
        overflow.assign(std::make_move_iterator(cut), std::make_move_iterator(out.end()));
        out.erase(cut, out.end());
        overflow_sizes.reserve(overflow.size());
        for (const auto& e : overflow) overflow_sizes.push_back(approx_event_bytes(e));
      }
      taken.events += std::min(*made, room);
    }
    lock.lock();
    if (!overflow.empty()) {
      queue_.push_front(std::move(overflow), std::move(overflow_sizes));
      break;
    }
    if (taken.events >= max_events) break;
  }
  publish_queued();
  if (taken.events > 0) {
    not_full_.notify_all();
    return taken;
  }
  if (reader_done_) {
    taken.reader_done = true;
    taken.error = error_;
  }
  return taken;
}

void ReaderHandoff::recycle(std::vector<Event>&& events) {
  {
    std::lock_guard lock(mutex_);
    if (open_ && !reader_done_ && recycled_events_ < kMaxRecycled) {
      recycled_events_ += events.size();
      recycled_.push_back(std::move(events));
      return;
    }
  }
  events.clear();
}

bool ReaderHandoff::empty() {
  std::lock_guard lock(mutex_);
  return queue_.empty();
}

void ReaderHandoff::request_stop() {
  stop_.store(true);
  wake();
  std::lock_guard lock(mutex_);
  not_full_.notify_all();
  not_empty_.notify_all();
}

void ReaderHandoff::wake() noexcept {
  if (wake_[1] >= 0) {
    const char b = 1;
    [[maybe_unused]] auto r = ::write(wake_[1], &b, 1);
  }
}

}  // namespace cppcdc::detail
