#include "core/batch_shaper.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/event_identity.hpp"
#include "core/tx_boundary.hpp"

namespace cppcdc::detail {
namespace {

// How many events ahead the window's index slots are loaded.
constexpr std::size_t kPrefetchAhead = 8;

std::int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status BatchShaper::configure(const RuntimeOptions& options) {
  policy_ = options.transaction_boundary;
  window_.reset();
  if (options.idempotency) {
    auto window = DuplicateWindow::create(*options.idempotency);
    if (!window) return fail(window.error().context("runtime idempotency options"));
    window_.emplace(std::move(*window));
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

void BatchShaper::prefetch_ahead(std::size_t i) const noexcept {
  // A new key kPrefetchAhead events on: its slot of the window's index (larger than the
  // caches) is loaded meanwhile. The events of one run share their key: nothing to load.
  const std::size_t j = i + kPrefetchAhead;
  if (j >= identities_.size() || !identities_[j]) return;
  if (identities_[j - 1] && identities_[j - 1]->key == identities_[j]->key) return;
  window_->prefetch(identities_[j]->key);
}

std::size_t BatchShaper::suppress(std::vector<Event>& events) {
  identities_.clear();
  produced_.reset();
  handed_out_at_.clear();
  if (!window_ || events.empty()) return 0;
  window_->expire(steady_now_ms());
  identities_.reserve(events.size());
  for (const Event& e : events) {
    if (is_identifiable(e)) {
      identities_.emplace_back(event_identity(e));
    } else {
      identities_.emplace_back();
    }
  }
  std::size_t duplicates = 0;
  std::size_t first_duplicate = events.size();
  for (std::size_t i = 0; i < events.size(); ++i) {
    prefetch_ahead(i);
    const auto& id = identities_[i];
    if (id && window_->contains(*id) && duplicates++ == 0) first_duplicate = i;
  }
  if (duplicates == 0) return 0;
  // Keep the batch as produced; hand out the rest.
  produced_.emplace(std::move(events));
  events.clear();
  events.reserve(produced_->size() - duplicates);
  handed_out_at_.reserve(produced_->size() - duplicates);
  for (std::size_t i = 0; i < produced_->size(); ++i) {
    const auto& id = identities_[i];
    if (i >= first_duplicate && id && window_->contains(*id)) continue;
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
  if (window_) {
    const std::size_t n = std::min(produced_count, identities_.size());
    const std::int64_t now = steady_now_ms();
    window_->expire(now);
    std::uint64_t unidentifiable = 0;
    for (std::size_t i = 0; i < n; ++i) {
      prefetch_ahead(i);
      if (i + kPrefetchAhead < n) window_->prefetch_eviction(kPrefetchAhead);
      if (identities_[i]) {
        window_->remember(*identities_[i], now);
      } else {
        ++unidentifiable;
      }
    }
    evictions_.store(window_->evictions(), std::memory_order_relaxed);
    unidentifiable_.fetch_add(unidentifiable, std::memory_order_relaxed);
  }
  end_batch();
}

void BatchShaper::end_batch() noexcept {
  identities_.clear();
  produced_.reset();
  handed_out_at_.clear();
}

}  // namespace cppcdc::detail
