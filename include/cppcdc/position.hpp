#pragma once
// Positions in a source's log, as the core sees them: opaque values that only their connector
// parses, orders and prints.
//
// Two kinds cross the core:
//   - checkpoint offsets (CheckpointRecord::offset, Event::resume_offset): text in the source's
//     own notation (a PostgreSQL LSN "0/16B2E48", a binlog "mysql-bin.000012:4567", a GTID set,
//     a SQL Server commit LSN). The core stores and compares them only through the
//     PositionOrder registered for the record's source type.
//   - log positions (Event::log_position, Watermark::position): LogPosition, a small binary
//     value an event carries on the hot path, ordered by the connector's incremental snapshot
//     backend. A connector that encodes a totally ordered position big-endian (LogPosition::
//     from_u64) gets a correct byte-wise order for free.
//
// Threading: LogPosition is a plain value. The registry functions may be called from any
// thread; an order, once registered, is shared and must be immutable.

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/result.hpp"

namespace cppcdc {

/// An opaque log position of up to kMaxBytes bytes, stored inline (no allocation). Empty means
/// unknown. Equality is byte equality; ordering belongs to the connector that made it.
class LogPosition {
 public:
  /// Enough for a GTID (16-byte server uuid + 8-byte sequence) with room to spare.
  static constexpr std::size_t kMaxBytes = 32;

  constexpr LogPosition() = default;

  /// Copies `bytes`; nullopt when longer than kMaxBytes.
  static std::optional<LogPosition> from_bytes(std::string_view bytes) noexcept {
    if (bytes.size() > kMaxBytes) return std::nullopt;
    LogPosition p;
    if (!bytes.empty()) std::memcpy(p.data_.data(), bytes.data(), bytes.size());
    p.size_ = static_cast<std::uint8_t>(bytes.size());
    return p;
  }
  /// Eight bytes, big-endian, so that byte-wise order is numeric order. 0 is not special: use a
  /// default-constructed LogPosition for "unknown".
  static constexpr LogPosition from_u64(std::uint64_t value) noexcept {
    LogPosition p;
    for (int i = 7; i >= 0; --i) {
      p.data_[static_cast<std::size_t>(i)] = static_cast<char>(value & 0xff);
      value >>= 8;
    }
    p.size_ = 8;
    return p;
  }
  /// The value from_u64 stored; nullopt for any other shape.
  constexpr std::optional<std::uint64_t> as_u64() const noexcept {
    if (size_ != 8) return std::nullopt;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(data_[i]);
    return v;
  }

  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr std::size_t size() const noexcept { return size_; }
  std::string_view bytes() const noexcept { return {data_.data(), size_}; }

  /// Byte-wise (unsigned) order; a prefix sorts first. The right order for big-endian
  /// encodings; connectors with other encodings order positions themselves.
  static std::strong_ordering compare_bytes(const LogPosition& a, const LogPosition& b) noexcept {
    const std::size_t n = a.size_ < b.size_ ? a.size_ : b.size_;
    const int c = n == 0 ? 0 : std::memcmp(a.data_.data(), b.data_.data(), n);
    if (c != 0) return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
    return a.size_ <=> b.size_;
  }

  friend bool operator==(const LogPosition& a, const LogPosition& b) noexcept {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_.data(), b.data_.data(),
                                                              a.size_) == 0);
  }

 private:
  std::array<char, kMaxBytes> data_{};
  std::uint8_t size_ = 0;
};

/// How one source type's checkpoint offsets parse and order. A connector implements it once
/// and registers it under every source type it writes into checkpoints (register_position_order).
/// Implementations are immutable and thread-safe.
class PositionOrder {
 public:
  virtual ~PositionOrder() = default;

  /// Checks that `offset` is a well-formed offset of this source. Error kind invalid_data,
  /// naming the text and the expected notation.
  virtual Status parse(std::string_view offset) const = 0;

  /// Orders two offsets: less, equivalent or greater, or unordered when the notation does not
  /// relate them (a GTID set and a file position, two binlog families). Error kind
  /// invalid_data when either does not parse.
  virtual Result<std::partial_ordering> compare(std::string_view a, std::string_view b) const = 0;

  /// Invariant 6 for this source: may a durable checkpoint at `next` replace one at
  /// `previous`? On refusal the error's message says why in a few words (the caller adds both
  /// positions). The default refuses an unparsable `next` and a `next` ordered before
  /// `previous`, and accepts unordered pairs and an unparsable `previous`.
  virtual Status check_replace(std::string_view previous, std::string_view next) const;
};

/// Registers `order` for `source_type` (CheckpointRecord::source_type), replacing an earlier
/// one. Thread-safe.
void register_position_order(std::string source_type, std::shared_ptr<const PositionOrder> order);

/// The order registered for `source_type`, or nullptr when none is (such records are not
/// compared). Thread-safe.
std::shared_ptr<const PositionOrder> find_position_order(std::string_view source_type);

}  // namespace cppcdc
