#pragma once
// Waiting before an HTTP request is tried again: the Retry-After header and jittered
// exponential back-off. Shared by the clients that talk HTTP (the HTTP sink, the schema
// registry client). Pure functions, no I/O.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace cppcdc::detail {

/// The wait a Retry-After header value asks for, in ms: delay-seconds ("120") or an HTTP date
/// ("Wed, 21 Oct 2015 07:28:00 GMT", also the obsolete RFC 850 and asctime forms), relative to
/// `now`. A date in the past gives 0. nullopt for a value that is neither.
std::optional<std::uint64_t> parse_retry_after(std::string_view value,
                                               std::chrono::system_clock::time_point now);

/// The wait before retry `attempt` (0 for the first retry): drawn uniformly from
/// [cap / 2, cap] with cap = min(max_ms, initial_ms * 2^attempt); then at least
/// min(retry_after_ms, ceiling_ms) when the server sent a Retry-After.
std::uint64_t backoff_ms(std::uint32_t attempt, std::uint32_t initial_ms, std::uint32_t max_ms,
                         std::optional<std::uint64_t> retry_after_ms, std::uint64_t ceiling_ms,
                         std::mt19937_64& rng);

}  // namespace cppcdc::detail
