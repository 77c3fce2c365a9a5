#pragma once
// Duplicate suppression for at-least-once delivery (API guide, "Sink-Side Idempotency Guard",
// "Idempotency guard safety", "Restart Replay Window").
//
// Two fingerprints of an event:
//   - fingerprint_event_stable: SHA-256 over the canonical encoding below, as 64 lowercase hex
//     digits. The same event gives the same text in every process, on every machine and in
//     every build, so it may be stored (a sink's own table of events it has applied) and
//     compared after a restart. The encoding is versioned; changing it is a breaking change
//     that golden vectors in the unit tests catch.
//   - fingerprint_event_transient: 128 bits from SipHash-2-4 over the same encoding, keyed with
//     a random key drawn once per process. Cheaper, and only comparable inside one process.
//
// EventIdempotencyGuard remembers transient fingerprints in a bounded window (capacity, and
// optionally an age limit) and answers "was this event seen already?". It only ever suppresses
// events it can identify: an event with transaction metadata (tx_id and event_index), or one
// whose primary-key columns are all present in its row image. Anything else (a keyless row with
// no transaction metadata) is always let through and counted, because two distinct rows can be
// byte for byte identical and dropping one of them loses data for good, while letting a
// duplicate through is the at-least-once behaviour the pipeline promises anyway.
//
// The window lives in memory: it forgets everything on a restart. Duplicates replayed from the
// last checkpoint after a restart are not caught by it; a sink that cannot apply an event twice
// stores fingerprint_event_stable values durably instead.
//
// Canonical encoding, version 1 (the bytes hashed by both fingerprints), in this order:
//   "cppcdc.fingerprint.v1" followed by one 0x00 byte
//   str    source.source_name
//   str    source.offset
//   str    op as in the envelope ("insert", "update", ...)
//   opt    schema                      (opt: 0x00 when absent, else 0x01 then str)
//   str    table
//   u8     0x00, or 0x01 then u64 tx_id, u64 total_events, u64 event_index (transaction)
//   u8     0x01 for a snapshot row, else 0x00 (the snapshot id and chunk are not encoded)
//   u8     0x00 when primary_key is absent, else 0x01 then u32 n and n x str (the names)
//   u8     before-image kind: 0x00 unavailable, 0x01 key only, 0x02 full; then for 0x01 and
//          0x02 a row, and for 0x02 u32 n and n x str (its unavailable columns)
//   u8     0x00 when after is absent, else 0x01 then a row
//   u32 n and n x str                  (unavailable_columns)
// where str is u32 byte length then the bytes, u32 and u64 are little-endian, and a row is
// u32 n then per column: str name, u8 0x00 for SQL NULL or 0x01 then str text, u8 is_json.
// Not encoded: ts and source.timestamp (a replay of the same change may be stamped with another
// time), envelope_version, the row shape, and the runtime's resume fields. The position
// (source.offset), the transaction sequence and the images together keep apart events that
// share a coarse offset.
//
// Threading: the fingerprint functions may be called from any thread. A guard is not
// synchronised: one thread at a time.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

/// The guard window the runtime uses unless told otherwise (RuntimeOptions::idempotency).
inline constexpr std::size_t kDefaultIdempotencyCapacity = 100'000;

/// The runtime's duplicate suppression window.
struct IdempotencyOptions {
  /// Most fingerprints remembered; the oldest is evicted for a new one (at least 1).
  std::size_t capacity = kDefaultIdempotencyCapacity;
  /// Forget a fingerprint this many ms after it was remembered; 0: only capacity evicts.
  std::uint64_t ttl_ms = 0;

  /// Options with `capacity` (and no age limit). Error kind configuration when it is 0.
  static Result<IdempotencyOptions> create(std::size_t capacity);
};

/// 128-bit fingerprint, comparable only within the process that computed it.
struct TransientFingerprint {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  friend bool operator==(const TransientFingerprint&, const TransientFingerprint&) = default;
  /// 32 lowercase hex digits, hi first.
  std::string to_string() const;
};

/// SHA-256 of the canonical encoding (above), as 64 lowercase hex digits. Errors (kind
/// internal) only when OpenSSL's digest fails.
Result<std::string> fingerprint_event_stable(const Event& event);

/// SipHash-2-4 (128-bit output) of the canonical encoding under this process's random key.
TransientFingerprint fingerprint_event_transient(const Event& event);

/// Whether the guard may suppress `event`: it has transaction metadata, or a primary key whose
/// columns are all present in its row image (the before-image for a delete, else after).
bool is_identifiable(const Event& event) noexcept;

/// The canonical encoding (above) of `event`, appended to `out`. For tests and for sinks that
/// want to hash it with something else.
void append_fingerprint_encoding(const Event& event, std::string& out);

/// A bounded window of recently processed events (see the top of this file).
///
///   auto guard = EventIdempotencyGuard::create(100'000).value();
///   (void)guard.set_ttl_ms(60'000);
///   for (const Event& e : batch.events()) {
///     if (!guard.should_process(e)) continue;  // seen already: skip the side effect
///     apply(e);
///   }
class EventIdempotencyGuard {
 public:
  /// Monotonic milliseconds; the default reads std::chrono::steady_clock.
  using Clock = std::function<std::int64_t()>;

  /// A guard remembering at most `capacity` events. Error kind configuration when 0.
  static Result<EventIdempotencyGuard> create(std::size_t capacity);
  /// A guard with the options' capacity and age limit, reading `clock` (default: steady).
  static Result<EventIdempotencyGuard> create(const IdempotencyOptions& options,
                                              Clock clock = {});

  /// Forget fingerprints `ttl_ms` after they were remembered. Error kind configuration when 0.
  Status set_ttl_ms(std::uint64_t ttl_ms);

  /// False when `event` is identifiable and was remembered within the window (a duplicate:
  /// skip it). Otherwise true, and an identifiable event is remembered; an unidentifiable one
  /// is counted in unidentifiable_passthrough_count().
  bool should_process(const Event& event);

  /// The two halves of should_process, for a consumer that records an event only once its
  /// effect is durable: is_duplicate looks without remembering or counting anything;
  /// mark_processed remembers (or, for an unidentifiable event, counts it).
  bool is_duplicate(const Event& event);
  void mark_processed(const Event& event);

  /// The same on a fingerprint the caller computed with fingerprint_event_transient (for an
  /// identifiable event only).
  bool contains(const TransientFingerprint& fingerprint);
  void remember(const TransientFingerprint& fingerprint);
  /// Hints for a caller about to look up or remember many fingerprints (no effect on the
  /// window): prefetch() starts loading the index slot of `fingerprint`; prefetch_eviction()
  /// that of the entry a full window evicts `ahead` insertions from now.
  void prefetch(const TransientFingerprint& fingerprint) const noexcept;
  void prefetch_eviction(std::size_t ahead) const noexcept;
  /// Counts one event let through because nothing identifies it.
  void count_unidentifiable() noexcept { ++unidentifiable_; }

  /// Fingerprints pushed out of a full window (not those that aged out). Once the window is
  /// full every new fingerprint pushes one out, so the count grows with ordinary traffic; it
  /// only says the window holds `capacity` events, not that a duplicate got through.
  std::uint64_t eviction_count() const noexcept { return evictions_; }
  /// Events let through because they carry neither transaction metadata nor a complete key.
  std::uint64_t unidentifiable_passthrough_count() const noexcept { return unidentifiable_; }
  /// Fingerprints remembered now (those past the age limit may still be counted until the
  /// next call that looks at the window).
  std::size_t size() const noexcept { return count_; }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  EventIdempotencyGuard(std::size_t capacity, Clock clock);
  struct Entry {
    TransientFingerprint fingerprint;
    std::int64_t at_ms = 0;
  };
  void expire();
  void drop_oldest();
  std::size_t find_slot(const TransientFingerprint& fingerprint) const noexcept;
  void index(std::uint32_t at);
  void unindex(std::size_t slot) noexcept;
  void grow();

  std::size_t capacity_;
  std::uint64_t ttl_ms_ = 0;
  Clock clock_;
  // The window: a circular buffer of entries, oldest at head_, grown on demand up to
  // capacity_, and an open-addressing index over it (linear probing, at most half full). A
  // slot holds the low 32 bits of the fingerprint's `lo` (its home slot and a quick filter)
  // above the entry's position + 1; 0 when free.
  std::vector<Entry> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::vector<std::uint64_t> slots_;
  std::uint64_t evictions_ = 0;
  std::uint64_t unidentifiable_ = 0;
};

}  // namespace cppcdc
