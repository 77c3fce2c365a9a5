#include "cppcdc/idempotency.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <random>

#include "core/siphash.hpp"

namespace cppcdc {
namespace {

constexpr std::string_view kDomain = "cppcdc.fingerprint.v1";

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

void put_names(std::string& out, const std::vector<std::string>& names) {
  put_u32(out, static_cast<std::uint32_t>(names.size()));
  for (const auto& n : names) put_str(out, n);
}

void put_row(std::string& out, const Row& row) {
  put_u32(out, static_cast<std::uint32_t>(row.size()));
  for (const auto& c : row) {
    put_str(out, c.name);
    if (c.text) {
      put_u8(out, 1);
      put_str(out, *c.text);
    } else {
      put_u8(out, 0);
    }
    put_u8(out, c.is_json ? 1 : 0);
  }
}

bool row_has_all(const Row* row, const std::vector<std::string>& names) noexcept {
  if (row == nullptr) return false;
  for (const auto& n : names) {
    if (find_column(*row, n) == nullptr) return false;
  }
  return true;
}

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return out;
}

// The per-process key of the transient fingerprint, drawn once.
const detail::SipKey& process_key() {
  static const detail::SipKey key = [] {
    std::array<unsigned char, 16> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
      std::random_device rd;
      for (auto& b : bytes) b = static_cast<unsigned char>(rd());
    }
    detail::SipKey k;
    for (int i = 7; i >= 0; --i) k.k0 = (k.k0 << 8) | bytes[static_cast<std::size_t>(i)];
    for (int i = 15; i >= 8; --i) k.k1 = (k.k1 << 8) | bytes[static_cast<std::size_t>(i)];
    return k;
  }();
  return key;
}

// One reused encoding buffer per thread: fingerprinting allocates only while it grows.
std::string& scratch() {
  thread_local std::string buffer;
  buffer.clear();
  return buffer;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<IdempotencyOptions> IdempotencyOptions::create(std::size_t capacity) {
  if (capacity == 0) {
    return fail(Error::configuration(
        "idempotency capacity must be at least 1 (turn the guard off instead of sizing it 0)"));
  }
  IdempotencyOptions o;
  o.capacity = capacity;
  return o;
}

std::string TransientFingerprint::to_string() const {
  std::array<unsigned char, 16> bytes{};
  for (int i = 0; i < 8; ++i) {
    bytes[static_cast<std::size_t>(i)] = static_cast<unsigned char>(hi >> (56 - 8 * i));
    bytes[static_cast<std::size_t>(8 + i)] = static_cast<unsigned char>(lo >> (56 - 8 * i));
  }
  return to_hex(bytes.data(), bytes.size());
}

void append_fingerprint_encoding(const Event& e, std::string& out) {
  out.append(kDomain);
  put_u8(out, 0);
  put_str(out, e.source.source_name);
  put_str(out, e.source.offset);
  put_str(out, to_string(e.op));
  if (e.schema) {
    put_u8(out, 1);
    put_str(out, *e.schema);
  } else {
    put_u8(out, 0);
  }
  put_str(out, e.table);
  if (e.transaction) {
    put_u8(out, 1);
    put_u64(out, e.transaction->tx_id);
    put_u64(out, e.transaction->total_events);
    put_u64(out, e.transaction->event_index);
  } else {
    put_u8(out, 0);
  }
  put_u8(out, e.snapshot ? 1 : 0);
  if (e.primary_key) {
    put_u8(out, 1);
    put_names(out, *e.primary_key);
  } else {
    put_u8(out, 0);
  }
  if (e.before.is_full()) {
    put_u8(out, 2);
    put_row(out, *e.before.full_row());
    put_names(out, e.before.unavailable_columns());
  } else if (e.before.is_key_only()) {
    put_u8(out, 1);
    put_row(out, *e.before.row());
  } else {
    put_u8(out, 0);
  }
  if (e.after) {
    put_u8(out, 1);
    put_row(out, *e.after);
  } else {
    put_u8(out, 0);
  }
  put_names(out, e.unavailable_columns);
}

Result<std::string> fingerprint_event_stable(const Event& event) {
  std::string& bytes = scratch();
  append_fingerprint_encoding(event, bytes);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != 32) {
    return fail(Error::internal("SHA-256 of an event's fingerprint encoding failed in OpenSSL"));
  }
  return to_hex(digest.data(), size);
}

TransientFingerprint fingerprint_event_transient(const Event& event) {
  std::string& bytes = scratch();
  append_fingerprint_encoding(event, bytes);
  const auto h = detail::siphash24_128(process_key(), bytes);
  return TransientFingerprint{h[0], h[1]};
}

bool is_identifiable(const Event& e) noexcept {
  if (e.transaction) return true;
  if (!e.primary_key || e.primary_key->empty()) return false;
  if (e.op == Operation::kDelete) return row_has_all(e.before.row(), *e.primary_key);
  return row_has_all(e.after ? &*e.after : nullptr, *e.primary_key);
}

EventIdempotencyGuard::EventIdempotencyGuard(std::size_t capacity, Clock clock)
    : capacity_(capacity), clock_(clock ? std::move(clock) : Clock(steady_ms)) {
  members_.reserve(std::min<std::size_t>(capacity, 1 << 16));
}

Result<EventIdempotencyGuard> EventIdempotencyGuard::create(std::size_t capacity) {
  return create(IdempotencyOptions{capacity, 0});
}

Result<EventIdempotencyGuard> EventIdempotencyGuard::create(const IdempotencyOptions& options,
                                                            Clock clock) {
  if (options.capacity == 0) {
    return fail(Error::configuration(
        "idempotency guard capacity must be at least 1 (turn the guard off instead of sizing "
        "it 0)"));
  }
  EventIdempotencyGuard guard(options.capacity, std::move(clock));
  guard.ttl_ms_ = options.ttl_ms;
  return guard;
}

Status EventIdempotencyGuard::set_ttl_ms(std::uint64_t ttl_ms) {
  if (ttl_ms == 0) {
    return fail(Error::configuration("idempotency guard ttl_ms must be at least 1"));
  }
  ttl_ms_ = ttl_ms;
  return ok();
}

void EventIdempotencyGuard::expire() {
  if (ttl_ms_ == 0 || order_.empty()) return;
  const std::int64_t now = clock_();
  while (!order_.empty() &&
         now - order_.front().at_ms >= static_cast<std::int64_t>(ttl_ms_)) {
    members_.erase(order_.front().fingerprint);
    order_.pop_front();
  }
}

bool EventIdempotencyGuard::contains(const TransientFingerprint& fingerprint) {
  expire();
  return members_.contains(fingerprint);
}

void EventIdempotencyGuard::remember(const TransientFingerprint& fingerprint) {
  expire();
  if (!members_.insert(fingerprint).second) return;  // already in the window
  while (order_.size() >= capacity_) {
    members_.erase(order_.front().fingerprint);
    order_.pop_front();
    ++evictions_;
  }
  order_.push_back(Entry{fingerprint, clock_()});
}

bool EventIdempotencyGuard::should_process(const Event& event) {
  if (!is_identifiable(event)) {
    ++unidentifiable_;
    return true;
  }
  const auto fp = fingerprint_event_transient(event);
  if (contains(fp)) return false;
  remember(fp);
  return true;
}

bool EventIdempotencyGuard::is_duplicate(const Event& event) {
  return is_identifiable(event) && contains(fingerprint_event_transient(event));
}

void EventIdempotencyGuard::mark_processed(const Event& event) {
  if (!is_identifiable(event)) {
    ++unidentifiable_;
    return;
  }
  remember(fingerprint_event_transient(event));
}

}  // namespace cppcdc
