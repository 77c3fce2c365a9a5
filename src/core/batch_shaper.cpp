#include "core/batch_shaper.hpp"

#include <spdlog/spdlog.h>

#include "core/event_identity.hpp"
#include "core/tx_boundary.hpp"

namespace cppcdc::detail {
namespace {

// How many fingerprints ahead the guard's index slots are prefetched.
constexpr std::size_t kPrefetchAhead = 8;

}  // namespace

Status BatchShaper::configure(const RuntimeOptions& options) {
  policy_ = options.transaction_boundary;
  guard_.reset();
  if (options.idempotency) {
    auto guard = EventIdempotencyGuard::create(*options.idempotency);
    if (!guard) return fail(guard.error().context("runtime idempotency options"));
    guard_.emplace(std::move(*guard));
  }
  return ok();
}

void BatchShaper::take_held(std::vector<Event>& events, std::size_t max) {
  while (!held_.empty() && events.size() < max) {
    events.push_back(std::move(held_.front()));
    held_.pop_front();
  }
}

void BatchShaper::hold_back_open_transaction(std::vector<Event>& events, std::size_t max,
                                             bool source_finished) {
  if (policy_ != TransactionBoundaryPolicy::kPreserveTransactions || events.empty()) return;
  const auto open = trailing_open_transaction(events);
  if (!open) return;
  if (open->start == 0) {
    if (events.size() >= max) {
      // Holding it back would leave every batch empty: deliver it split.
      if (warned_tx_ != open->tx_id) {
        warned_tx_ = open->tx_id;
        spdlog::warn(
            "transaction {} has more events than max_buffer_size ({}): it cannot fit "
            "in one batch and is delivered split across batches; raise "
            "max_buffer_size above the largest transaction to keep them whole",
            open->tx_id, max);
      }
      return;
    }
    if (source_finished) return;  // nothing more will come to end it
  }
  for (std::size_t i = events.size(); i > open->start; --i) {
    held_.push_front(std::move(events[i - 1]));
  }
  events.resize(open->start);
}

std::size_t BatchShaper::suppress(std::vector<Event>& events) {
  fingerprints_.clear();
  produced_.reset();
  handed_out_at_.clear();
  if (!guard_ || events.empty()) return 0;
  fingerprints_.reserve(events.size());
  for (const auto& e : events) {
    if (is_identifiable(e)) {
      fingerprints_.emplace_back(event_identity(e));
    } else {
      fingerprints_.emplace_back();
    }
  }
  // The window's index is larger than the caches: its slots are loaded a few look-ups ahead.
  std::size_t duplicates = 0;
  std::size_t first_duplicate = events.size();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i + kPrefetchAhead < events.size() && fingerprints_[i + kPrefetchAhead]) {
      guard_->prefetch(*fingerprints_[i + kPrefetchAhead]);
    }
    const auto& fp = fingerprints_[i];
    if (fp && guard_->contains(*fp)) {
      if (duplicates++ == 0) first_duplicate = i;
    }
  }
  if (duplicates == 0) return 0;
  // Keep the batch as produced; hand out the rest.
  produced_.emplace(std::move(events));
  events.clear();
  events.reserve(produced_->size() - duplicates);
  handed_out_at_.reserve(produced_->size() - duplicates);
  for (std::size_t i = 0; i < produced_->size(); ++i) {
    const auto& fp = fingerprints_[i];
    if (i >= first_duplicate && fp && guard_->contains(*fp)) continue;
    events.push_back((*produced_)[i]);
    handed_out_at_.push_back(i);
  }
  suppressed_.fetch_add(duplicates, std::memory_order_relaxed);
  return duplicates;
}

std::size_t BatchShaper::produced_prefix(std::size_t delivered_count) const noexcept {
  if (!produced_) return delivered_count;
  if (delivered_count >= handed_out_at_.size()) return produced_->size();
  return handed_out_at_[delivered_count];
}

void BatchShaper::acknowledge(std::size_t produced_count) {
  if (guard_) {
    const std::size_t n = std::min(produced_count, fingerprints_.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kPrefetchAhead < n) {
        if (fingerprints_[i + kPrefetchAhead]) guard_->prefetch(*fingerprints_[i + kPrefetchAhead]);
        guard_->prefetch_eviction(kPrefetchAhead);
      }
      if (fingerprints_[i]) {
        guard_->remember(*fingerprints_[i]);
      } else {
        guard_->count_unidentifiable();
      }
    }
    publish_counters();
  }
  end_batch();
}

void BatchShaper::end_batch() noexcept {
  fingerprints_.clear();
  produced_.reset();
  handed_out_at_.clear();
}

void BatchShaper::publish_counters() noexcept {
  evictions_.store(guard_->eviction_count(), std::memory_order_relaxed);
  unidentifiable_.store(guard_->unidentifiable_passthrough_count(), std::memory_order_relaxed);
}

}  // namespace cppcdc::detail
