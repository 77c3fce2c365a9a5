#include "cppcdc/idempotency.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "core/event_identity.hpp"
#include "core/probe_table.hpp"
#include "core/siphash.hpp"

namespace cppcdc {
namespace {

constexpr std::string_view kDomain = "cppcdc.fingerprint.v1";

// The canonical encoding (idempotency.hpp), written in two passes: Sizer counts the bytes,
// Writer fills a buffer sized once, so encoding costs one allocation at most.
struct Sizer {
  std::size_t n = 0;
  void u8(std::uint8_t) { n += 1; }
  void u32(std::uint32_t) { n += 4; }
  void u64(std::uint64_t) { n += 8; }
  void raw(std::string_view s) { n += s.size(); }
};

struct Writer {
  char* p;
  void u8(std::uint8_t v) { *p++ = static_cast<char>(v); }
  // Little-endian: one store where the machine is little-endian.
  void u32(std::uint32_t v) {
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
  void u64(std::uint64_t v) {
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
  }
  void raw(std::string_view s) {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
};

template <class Out>
void put_str(Out& out, std::string_view s) {
  out.u32(static_cast<std::uint32_t>(s.size()));
  out.raw(s);
}

template <class Out>
void put_names(Out& out, const std::vector<std::string>& names) {
  out.u32(static_cast<std::uint32_t>(names.size()));
  for (const auto& n : names) put_str(out, n);
}

template <class Out>
void put_row(Out& out, const Row& row) {
  out.u32(static_cast<std::uint32_t>(row.size()));
  for (const auto& c : row) {
    put_str(out, c.name);
    if (c.text) {
      out.u8(1);
      put_str(out, *c.text);
    } else {
      out.u8(0);
    }
    out.u8(c.is_json ? 1 : 0);
  }
}

// Where an event stands, the start of both encodings: a domain, then source, offset, op,
// schema and table.
template <class Out>
void put_place(Out& out, std::string_view domain, const Event& e) {
  out.raw(domain);
  out.u8(0);
  put_str(out, e.source.source_name);
  put_str(out, e.source.offset);
  put_str(out, to_string(e.op));
  if (e.schema) {
    out.u8(1);
    put_str(out, *e.schema);
  } else {
    out.u8(0);
  }
  put_str(out, e.table);
}

template <class Out>
void encode(const Event& e, Out& out) {
  put_place(out, kDomain, e);
  if (e.transaction) {
    out.u8(1);
    out.u64(e.transaction->tx_id);
    out.u64(e.transaction->total_events);
    out.u64(e.transaction->event_index);
  } else {
    out.u8(0);
  }
  out.u8(e.snapshot ? 1 : 0);
  if (e.primary_key) {
    out.u8(1);
    put_names(out, *e.primary_key);
  } else {
    out.u8(0);
  }
  if (e.before.is_full()) {
    out.u8(2);
    put_row(out, *e.before.full_row());
    put_names(out, e.before.unavailable_columns());
  } else if (e.before.is_key_only()) {
    out.u8(1);
    put_row(out, *e.before.row());
  } else {
    out.u8(0);
  }
  if (e.after) {
    out.u8(1);
    put_row(out, *e.after);
  } else {
    out.u8(0);
  }
  put_names(out, e.unavailable_columns);
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
  Sizer sizer;
  encode(e, sizer);
  const std::size_t at = out.size();
  out.resize(at + sizer.n);
  Writer writer{out.data() + at};
  encode(e, writer);
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

namespace detail {

namespace {

// The hash of an event's place (source, offset, op, schema, table) in its own domain, kept for
// the last place seen on this thread: the events of one source record (a rows event of many
// rows) share it, and comparing the strings costs less than hashing them again.
struct PlaceHash {
  bool valid = false;
  Operation op = Operation::kInsert;
  std::string source_name;
  std::string offset;
  std::optional<std::string> schema;
  std::string table;
  std::array<std::uint64_t, 2> hash{};
  // The identity key of the last transaction seen at this place (event_identity); a new
  // place invalidates it.
  bool group_valid = false;
  std::uint64_t tx_id = 0;
  std::uint64_t total = 0;
  std::array<std::uint64_t, 2> key{};

  const std::array<std::uint64_t, 2>& of(const Event& e) {
    if (valid && op == e.op && offset == e.source.offset && table == e.table &&
        schema == e.schema && source_name == e.source.source_name) {
      return hash;
    }
    constexpr std::string_view kPlaceDomain = "cppcdc.identity.place.v1";
    Sizer sizer;
    put_place(sizer, kPlaceDomain, e);
    std::string& bytes = scratch();
    bytes.resize(sizer.n);
    Writer writer{bytes.data()};
    put_place(writer, kPlaceDomain, e);
    hash = siphash24_128(process_key(), bytes);
    op = e.op;
    source_name = e.source.source_name;
    offset = e.source.offset;
    schema = e.schema;
    table = e.table;
    valid = true;
    group_valid = false;
    return hash;
  }
};

}  // namespace

EventIdentity event_identity(const Event& e) {
  if (!e.transaction) return EventIdentity{fingerprint_event_transient(e), 0};
  // A domain of its own, so that a group's key never equals a full encoding's hash by
  // construction. The keyed 128-bit hash of the place's hash, the transaction id and its event
  // count is the key the events of one place and transaction share (kept for the last such
  // group seen on this thread); the event's sequence number tells them apart.
  thread_local PlaceHash place;
  const auto& p = place.of(e);
  const TransactionMetadata& t = *e.transaction;
  if (!place.group_valid || place.tx_id != t.tx_id || place.total != t.total_events) {
    constexpr std::string_view kIdentityDomain = "cppcdc.identity.tx.v4";
    char bytes[kIdentityDomain.size() + 4 * 8];
    Writer writer{bytes};
    writer.raw(kIdentityDomain);
    writer.u64(p[0]);
    writer.u64(p[1]);
    writer.u64(t.tx_id);
    writer.u64(t.total_events);
    place.key = siphash24_128(process_key(), std::string_view(bytes, sizeof bytes));
    place.tx_id = t.tx_id;
    place.total = t.total_events;
    place.group_valid = true;
  }
  return EventIdentity{TransientFingerprint{place.key[0], place.key[1]}, t.event_index};
}

Status check_idempotency_options(const IdempotencyOptions& options) {
  if (options.capacity == 0) {
    return fail(Error::configuration(
        "idempotency guard capacity must be at least 1 (turn the guard off instead of sizing "
        "it 0)"));
  }
  if (options.capacity > std::numeric_limits<std::uint32_t>::max() / 4) {
    return fail(Error::configuration("idempotency guard capacity " +
                                     std::to_string(options.capacity) + " is too large"));
  }
  return ok();
}

}  // namespace detail

bool is_identifiable(const Event& e) noexcept {
  if (e.transaction) return true;
  if (!e.primary_key || e.primary_key->empty()) return false;
  if (e.op == Operation::kDelete) return row_has_all(e.before.row(), *e.primary_key);
  return row_has_all(e.after ? &*e.after : nullptr, *e.primary_key);
}

EventIdempotencyGuard::EventIdempotencyGuard(std::size_t capacity, Clock clock)
    : capacity_(capacity), clock_(clock ? std::move(clock) : Clock(steady_ms)) {}

Result<EventIdempotencyGuard> EventIdempotencyGuard::create(std::size_t capacity) {
  return create(IdempotencyOptions{capacity, 0});
}

Result<EventIdempotencyGuard> EventIdempotencyGuard::create(const IdempotencyOptions& options,
                                                            Clock clock) {
  CPPCDC_TRY(detail::check_idempotency_options(options));
  EventIdempotencyGuard guard(options.capacity, std::move(clock));
  guard.ttl_ms_ = options.ttl_ms;
  return guard;
}

Status EventIdempotencyGuard::set_ttl_ms(std::uint64_t ttl_ms) {
  if (ttl_ms == 0) {
    return fail(Error::configuration("idempotency guard ttl_ms must be at least 1"));
  }
  if (ttl_ms_ == 0 && count_ > 0) {
    // Without an age limit entries were not stamped: their age counts from now.
    const std::int64_t now = clock_();
    for (std::size_t i = 0; i < count_; ++i) ring_[(head_ + i) % ring_.size()].at_ms = now;
  }
  ttl_ms_ = ttl_ms;
  return ok();
}

namespace {

constexpr std::uint64_t tag_of(const TransientFingerprint& fp) noexcept { return fp.lo << 32; }
constexpr std::uint64_t kTagMask = 0xffffffff00000000ULL;
constexpr std::uint32_t position_of(std::uint64_t slot) noexcept {
  return static_cast<std::uint32_t>(slot);
}

}  // namespace

std::size_t EventIdempotencyGuard::find_slot(const TransientFingerprint& fp) const noexcept {
  if (slots_.empty()) return slots_.size();
  const std::size_t mask = slots_.size() - 1;
  const std::uint64_t tag = tag_of(fp);
  for (std::size_t i = fp.lo & mask;; i = (i + 1) & mask) {
    const std::uint64_t v = slots_[i];
    if (v == 0) return slots_.size();
    if ((v & kTagMask) == tag && ring_[position_of(v) - 1].fingerprint == fp) return i;
  }
}

void EventIdempotencyGuard::index(std::uint32_t at) {
  const std::size_t mask = slots_.size() - 1;
  const auto& fp = ring_[at].fingerprint;
  std::size_t i = fp.lo & mask;
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = tag_of(fp) | (static_cast<std::uint64_t>(at) + 1);
}

void EventIdempotencyGuard::unindex(std::size_t slot) noexcept {
  // The home of an entry comes from its tag.
  detail::erase_probed(slots_, slot, [](std::uint64_t v) { return v >> 32; });
}

void EventIdempotencyGuard::drop_oldest() {
  // The oldest entry's slot is found by its position alone: no other entry is read.
  const std::size_t mask = slots_.size() - 1;
  const std::uint64_t want = static_cast<std::uint64_t>(head_) + 1;
  for (std::size_t i = ring_[head_].fingerprint.lo & mask;; i = (i + 1) & mask) {
    if (slots_[i] == 0) break;  // not indexed (cannot happen)
    if (position_of(slots_[i]) == want) {
      unindex(i);
      break;
    }
  }
  head_ = (head_ + 1) % ring_.size();
  --count_;
}

void EventIdempotencyGuard::grow() {
  const std::size_t size = std::min(capacity_, std::max<std::size_t>(1024, ring_.size() * 2));
  std::vector<Entry> next;
  next.reserve(size);
  for (std::size_t i = 0; i < count_; ++i) next.push_back(ring_[(head_ + i) % ring_.size()]);
  next.resize(size);
  ring_ = std::move(next);
  head_ = 0;
  std::size_t table = 1;
  while (table < 2 * size) table <<= 1;
  slots_.assign(table, 0);
  for (std::size_t i = 0; i < count_; ++i) index(static_cast<std::uint32_t>(i));
}

void EventIdempotencyGuard::expire() {
  if (ttl_ms_ == 0 || count_ == 0) return;
  const std::int64_t now = clock_();
  while (count_ > 0 && now - ring_[head_].at_ms >= static_cast<std::int64_t>(ttl_ms_)) {
    drop_oldest();
  }
}

void EventIdempotencyGuard::prefetch(const TransientFingerprint& fingerprint) const noexcept {
  if (!slots_.empty()) __builtin_prefetch(&slots_[fingerprint.lo & (slots_.size() - 1)]);
}

void EventIdempotencyGuard::prefetch_eviction(std::size_t ahead) const noexcept {
  if (count_ < capacity_ || ring_.empty() || ahead >= count_) return;
  const auto& fp = ring_[(head_ + ahead) % ring_.size()].fingerprint;
  __builtin_prefetch(&slots_[fp.lo & (slots_.size() - 1)]);
}

bool EventIdempotencyGuard::contains(const TransientFingerprint& fingerprint) {
  expire();
  return find_slot(fingerprint) != slots_.size();
}

void EventIdempotencyGuard::remember(const TransientFingerprint& fingerprint) {
  expire();
  if (find_slot(fingerprint) != slots_.size()) return;  // already in the window
  if (count_ == capacity_) {
    drop_oldest();
    ++evictions_;
  } else if (count_ == ring_.size()) {
    grow();
  }
  const std::size_t at = (head_ + count_) % ring_.size();
  ring_[at] = Entry{fingerprint, ttl_ms_ == 0 ? 0 : clock_()};
  ++count_;
  index(static_cast<std::uint32_t>(at));
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
