#pragma once
// What the HTTP sink does with an answer: deliver, retry or give up; how long to wait before a
// retry. Pure functions, no I/O.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace cppcdc::http {

enum class Outcome {
  kDelivered,  ///< 2xx
  kRetry,      ///< 408, 429, 5xx (and transport errors, decided by the caller)
  kPermanent,  ///< everything else: 1xx, 3xx, other 4xx
};

Outcome classify_status(long status) noexcept;

/// The wait a Retry-After header value asks for, in ms: delay-seconds ("120") or an HTTP date
/// ("Wed, 21 Oct 2015 07:28:00 GMT", also the obsolete RFC 850 and asctime forms), relative to
/// `now`. A date in the past gives 0. nullopt for a value that is neither.
std::optional<std::uint64_t> parse_retry_after(std::string_view value,
                                               std::chrono::system_clock::time_point now);

/// The wait before retry `attempt` (0 for the first retry): drawn uniformly from
/// [cap / 2, cap] with cap = min(max_ms, initial_ms * 2^attempt); then at least
/// min(retry_after_ms, ceiling_ms) when the receiver sent a Retry-After.
std::uint64_t backoff_ms(std::uint32_t attempt, std::uint32_t initial_ms, std::uint32_t max_ms,
                         std::optional<std::uint64_t> retry_after_ms, std::uint64_t ceiling_ms,
                         std::mt19937_64& rng);

}  // namespace cppcdc::http
