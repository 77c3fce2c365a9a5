#pragma once
// What the HTTP sink does with an answer: deliver, retry or give up; how long to wait before a
// retry. Pure functions, no I/O.

#include "core/http_retry.hpp"

namespace cppcdc::http {

enum class Outcome {
  kDelivered,  ///< 2xx
  kRetry,      ///< 408, 429, 5xx (and transport errors, decided by the caller)
  kPermanent,  ///< everything else: 1xx, 3xx, other 4xx
};

Outcome classify_status(long status) noexcept;

// The waits between attempts (shared with the other HTTP clients).
using detail::backoff_ms;
using detail::parse_retry_after;

}  // namespace cppcdc::http
