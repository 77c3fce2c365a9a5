#pragma once
// A blocking call that a stop request must not hold up: a connection attempt to an address
// that never answers blocks in libpq or Connector/C for up to its connect timeout (10 s by
// default), and neither library looks at a flag meanwhile. unless_stopped() runs such a call on
// a thread of its own and waits for it, looking at the process's stop request
// (stop_request.hpp) every kStopPollInterval. When the request comes first, the caller gets
// nullopt at once and the call is abandoned: its thread goes on until the call returns (its
// own timeout bounds it) and then destroys the result, which closes the connection it made.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "core/stop_request.hpp"

namespace cppcdc::detail {

/// How often a wait of unless_stopped() looks at the stop request.
inline constexpr std::chrono::milliseconds kStopPollInterval{50};

/// `work()`'s result, or nullopt when the process's stop request was set before it returned
/// (also when it was set before the call). `work` is moved to the thread; its result must be
/// movable, and destroying it must release whatever it holds (a connection).
template <typename Work>
auto unless_stopped(Work work) -> std::optional<std::invoke_result_t<Work&>> {
  using T = std::invoke_result_t<Work&>;
  if (g_process_stop_requested.load()) return std::nullopt;
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<T> result;
    bool abandoned = false;
  };
  auto state = std::make_shared<State>();
  std::thread([state, work = std::move(work)]() mutable {
    T result = work();
    std::unique_lock lock(state->mutex);
    if (state->abandoned) return;  // `result` is destroyed after the lock is released
    state->result.emplace(std::move(result));
    state->done.notify_all();
  }).detach();
  std::unique_lock lock(state->mutex);
  while (!state->result) {
    if (g_process_stop_requested.load()) {
      state->abandoned = true;
      return std::nullopt;
    }
    state->done.wait_for(lock, kStopPollInterval);
  }
  return std::move(state->result);
}

}  // namespace cppcdc::detail
