#include "core/http_retry.hpp"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace cppcdc::detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// An HTTP date in one of the three forms HTTP/1.1 accepts (RFC 9110, 5.6.7), as seconds since
// the epoch.
std::optional<std::int64_t> parse_http_date(std::string_view value) {
  static constexpr const char* kFormats[] = {
      "%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate
      "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850
      "%a %b %e %H:%M:%S %Y",       // asctime
  };
  const std::string text(value);
  for (const char* format : kFormats) {
    struct tm tm {};
    const char* end = ::strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const time_t t = ::timegm(&tm);
    if (t == static_cast<time_t>(-1)) continue;
    return static_cast<std::int64_t>(t);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> parse_retry_after(std::string_view value,
                                               std::chrono::system_clock::time_point now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    // Seconds; anything beyond a day is a day (no one waits that long; avoids overflow).
    constexpr std::uint64_t kDay = 86'400;
    std::uint64_t seconds = 0;
    for (char c : value) {
      seconds = seconds * 10 + static_cast<std::uint64_t>(c - '0');
      if (seconds > kDay) {
        seconds = kDay;
        break;
      }
    }
    return seconds * 1000;
  }
  const auto at = parse_http_date(value);
  if (!at) return std::nullopt;
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::int64_t wait = *at * 1000 - now_ms;
  return wait > 0 ? static_cast<std::uint64_t>(wait) : 0;
}

std::uint64_t backoff_ms(std::uint32_t attempt, std::uint32_t initial_ms, std::uint32_t max_ms,
                         std::optional<std::uint64_t> retry_after_ms, std::uint64_t ceiling_ms,
                         std::mt19937_64& rng) {
  std::uint64_t cap = std::max<std::uint32_t>(initial_ms, 1);
  for (std::uint32_t i = 0; i < attempt && cap < max_ms; ++i) cap *= 2;
  cap = std::min<std::uint64_t>(cap, std::max<std::uint32_t>(max_ms, 1));
  std::uniform_int_distribution<std::uint64_t> pick(cap / 2, cap);
  std::uint64_t wait = pick(rng);
  if (retry_after_ms) wait = std::max(wait, std::min(*retry_after_ms, ceiling_ms));
  return wait;
}

}  // namespace cppcdc::detail
