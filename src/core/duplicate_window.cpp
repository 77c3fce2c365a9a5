#include "core/duplicate_window.hpp"

#include <utility>

#include "core/probe_table.hpp"

namespace cppcdc::detail {
namespace {

constexpr std::uint64_t kOccupied = 0x80000000ULL;
constexpr std::uint64_t tag_of(const TransientFingerprint& key) noexcept {
  return ((key.lo & 0x7fffffffULL) | kOccupied) << 32;
}
constexpr std::uint32_t seq_of(std::uint64_t slot) noexcept {
  return static_cast<std::uint32_t>(slot);
}
constexpr std::size_t kFirstTableSize = 1024;

}  // namespace

Result<DuplicateWindow> DuplicateWindow::create(const IdempotencyOptions& options) {
  CPPCDC_TRY(check_idempotency_options(options));
  return DuplicateWindow(options.capacity, options.ttl_ms);
}

const std::vector<std::uint32_t>& DuplicateWindow::runs_of(const TransientFingerprint& key) {
  if (cache_valid_ && cache_key_ == key) return cache_runs_;
  cache_runs_.clear();
  cache_key_ = key;
  cache_valid_ = true;
  if (slots_.empty()) return cache_runs_;
  const std::size_t mask = slots_.size() - 1;
  const std::uint64_t tag = tag_of(key);
  for (std::size_t i = key.lo & mask; slots_[i] != 0; i = (i + 1) & mask) {
    const std::uint64_t v = slots_[i];
    if ((v & 0xffffffff00000000ULL) == tag && run(seq_of(v)).key == key) {
      cache_runs_.push_back(seq_of(v));
    }
  }
  return cache_runs_;
}

void DuplicateWindow::index(std::uint32_t seq) {
  const std::size_t mask = slots_.size() - 1;
  const TransientFingerprint& key = run(seq).key;
  std::size_t i = key.lo & mask;
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = tag_of(key) | seq;
}

void DuplicateWindow::unindex(std::uint32_t seq) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = run(seq).key.lo & mask;
  for (;; hole = (hole + 1) & mask) {
    if (slots_[hole] == 0) return;  // not indexed (cannot happen)
    if (seq_of(slots_[hole]) == seq) break;
  }
  erase_probed(slots_, hole, [](std::uint64_t v) { return (v >> 32) & 0x7fffffffULL; });
}

void DuplicateWindow::drop_head_run() {
  const Run& head = runs_.front();
  if (cache_valid_ && cache_key_ == head.key) cache_valid_ = false;
  count_ -= head.count;
  unindex(head_seq_);
  runs_.pop_front();
  ++head_seq_;
}

void DuplicateWindow::grow_table() {
  std::size_t size = slots_.empty() ? kFirstTableSize : slots_.size() * 2;
  while (size < 2 * (runs_.size() + 1)) size *= 2;
  slots_.assign(size, 0);
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    index(static_cast<std::uint32_t>(head_seq_ + i));
  }
}

void DuplicateWindow::expire(std::int64_t now_ms) {
  if (ttl_ms_ == 0) return;
  while (!runs_.empty() && now_ms - runs_.front().at_ms >= static_cast<std::int64_t>(ttl_ms_)) {
    drop_head_run();
  }
}

void DuplicateWindow::prefetch(const TransientFingerprint& key) const noexcept {
  if (!slots_.empty()) __builtin_prefetch(&slots_[key.lo & (slots_.size() - 1)]);
}

void DuplicateWindow::prefetch_eviction(std::size_t ahead) const noexcept {
  // A head run longer than `ahead` outlives the next `ahead` evictions: nothing to load. Else
  // the run `ahead` places on is the one dropped then when runs are of one event (a hint: for
  // longer runs it comes later).
  if (count_ < capacity_ || slots_.empty() || runs_.front().count > ahead) return;
  if (ahead < runs_.size()) __builtin_prefetch(&slots_[runs_[ahead].key.lo & (slots_.size() - 1)]);
}

bool DuplicateWindow::contains(const EventIdentity& id) {
  for (const std::uint32_t seq : runs_of(id.key)) {
    const Run& r = run(seq);
    if (id.index >= r.first && id.index - r.first < r.count) return true;
  }
  return false;
}

void DuplicateWindow::remember(const EventIdentity& id, std::int64_t now_ms) {
  if (contains(id)) return;
  if (count_ == capacity_) {
    // The oldest event goes: the head run shrinks from its front, and leaves when empty.
    Run& head = runs_.front();
    ++head.first;
    --head.count;
    --count_;
    ++evictions_;
    if (head.count == 0) drop_head_run();
  }
  const std::int64_t at = ttl_ms_ == 0 ? 0 : now_ms;
  if (!runs_.empty()) {
    Run& tail = runs_.back();
    if (tail.key == id.key && tail.at_ms == at && tail.first + tail.count == id.index) {
      ++tail.count;
      ++count_;
      return;
    }
  }
  if (2 * (runs_.size() + 1) > slots_.size()) grow_table();
  runs_.push_back(Run{id.key, id.index, 1, at});
  const auto seq = static_cast<std::uint32_t>(head_seq_ + runs_.size() - 1);
  index(seq);
  ++count_;
  if (cache_valid_ && cache_key_ == id.key) cache_runs_.push_back(seq);
}

}  // namespace cppcdc::detail
