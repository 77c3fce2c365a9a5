#pragma once
// The process-wide stop request. A program's SIGINT/SIGTERM handler sets it (the server's does,
// next to its own flag); parts that may wait for long on something outside the process (the
// HTTP sink between retries) read it, so that a stop is not held up by them. Never reset.
// A lock-free atomic: safe to store from a signal handler.

#include <atomic>

namespace cppcdc::detail {

inline std::atomic<bool> g_process_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace cppcdc::detail
