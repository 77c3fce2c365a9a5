#include "server/health_log.hpp"

#include <spdlog/spdlog.h>

namespace cppcdc::server {
namespace {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HealthLogger::HealthLogger(std::function<HealthVerdict()> verdict) : verdict_(std::move(verdict)) {}

HealthLogger::HealthLogger(std::function<HealthVerdict()> verdict, std::chrono::milliseconds every)
    : verdict_(std::move(verdict)) {
  thread_ = std::thread([this, every] {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      check(steady_ms());
      lock.lock();
      wake_.wait_for(lock, every, [this] { return stopping_; });
    }
  });
}

HealthLogger::~HealthLogger() { stop(); }

void HealthLogger::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthLogger::check(std::int64_t now_ms) {
  const HealthVerdict v = verdict_();
  std::string key = v.change_key();
  if (key == last_key_) return;
  if (v.is_alertable()) {
    if (!last_stalled_) stalled_since_ms_ = now_ms;
    spdlog::warn("health: {}: {}", key, v.reason);
  } else if (last_stalled_ && v.kind != HealthVerdict::Kind::kNotRunning) {
    spdlog::info("health: {} again after {} ms stalled ({}): {}", key, now_ms - stalled_since_ms_,
                 last_key_, v.reason);
  }
  last_stalled_ = v.is_alertable();
  last_key_ = std::move(key);
}

}  // namespace cppcdc::server
