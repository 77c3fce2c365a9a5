#pragma once
// Private helper of the MySQL/MariaDB connector: a cursor over an immutable byte buffer that
// reads little-endian integers, the binlog's packed (length-encoded) integers and strings, and
// refuses to step past the end.
//
// Every failed read yields an Error of kind invalid_data shaped as
//   "<context>: <what> runs past the end of the <N>-byte <unit> at offset <O>"
// where <O> is the offset at which the read started. The reader never allocates on the
// success path; error text is only built once something has gone wrong.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "cppcdc/error.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::mysql::detail {

class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::string_view context,
             std::size_t base_offset = 0) noexcept
      : bytes_(bytes), context_(context), base_(base_offset) {}

  std::size_t offset() const noexcept { return pos_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  bool at_end() const noexcept { return pos_ == bytes_.size(); }
  std::string_view context() const noexcept { return context_; }
  const std::uint8_t* cursor() const noexcept { return bytes_.data() + pos_; }

  /// "<context>: <what> at offset <offset>" (offsets count from the start of the event).
  [[gnu::noinline, gnu::cold]] Error error_at(std::size_t offset, std::string_view what) const {
    std::string text;
    text.reserve(context_.size() + what.size() + 32);
    text.append(context_).append(": ").append(what).append(" at offset ");
    text.append(std::to_string(base_ + offset));
    return Error::invalid_data(std::move(text));
  }
  Error error(std::string_view what) const { return error_at(pos_, what); }

  [[gnu::noinline, gnu::cold]] Error past_end(std::string_view what) const {
    std::string text(what);
    text.append(" runs past the end of the ").append(std::to_string(bytes_.size()));
    text.append("-byte field");
    return error_at(pos_, text);
  }

  Result<std::uint8_t> u8(std::string_view what) {
    if (pos_ >= bytes_.size()) [[unlikely]]
      return fail(past_end(what));
    return bytes_[pos_++];
  }
  Result<std::uint16_t> u16(std::string_view what) { return fixed<std::uint16_t, 2>(what); }
  Result<std::uint32_t> u24(std::string_view what) { return fixed<std::uint32_t, 3>(what); }
  Result<std::uint32_t> u32(std::string_view what) { return fixed<std::uint32_t, 4>(what); }
  Result<std::uint64_t> u48(std::string_view what) { return le(6, what); }
  Result<std::uint64_t> u64(std::string_view what) { return le(8, what); }

  /// An unsigned little-endian integer of `n` (0..8) bytes.
  Result<std::uint64_t> le(std::size_t n, std::string_view what) {
    if (n > remaining()) [[unlikely]]
      return fail(past_end(what));
    std::uint64_t v = load_le(bytes_.data() + pos_, n);
    pos_ += n;
    return v;
  }

  /// A packed ("length-encoded") integer: < 0xfb itself, 0xfc + 2 bytes, 0xfd + 3, 0xfe + 8.
  Result<std::uint64_t> packed(std::string_view what) {
    if (pos_ >= bytes_.size()) [[unlikely]]
      return fail(past_end(what));
    const std::uint8_t first = bytes_[pos_];
    if (first < 0xfb) {
      ++pos_;
      return first;
    }
    std::size_t n = first == 0xfc ? 2 : first == 0xfd ? 3 : first == 0xfe ? 8 : 0;
    if (n == 0) [[unlikely]] {
      return fail(
          error("the packed integer " + std::string(what) + " starts with 0x" + hex_byte(first)));
    }
    if (n + 1 > remaining()) [[unlikely]]
      return fail(past_end(what));
    std::uint64_t v = load_le(bytes_.data() + pos_ + 1, n);
    pos_ += n + 1;
    return v;
  }

  /// The next `n` bytes.
  Result<std::span<const std::uint8_t>> take(std::size_t n, std::string_view what) {
    if (n > remaining()) [[unlikely]]
      return fail(past_end(what));
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  Result<std::string_view> str(std::size_t n, std::string_view what) {
    if (n > remaining()) [[unlikely]]
      return fail(past_end(what));
    std::string_view out(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return out;
  }
  Status skip(std::size_t n, std::string_view what) {
    if (n > remaining()) [[unlikely]]
      return fail(past_end(what));
    pos_ += n;
    return ok();
  }
  /// A packed length followed by that many bytes.
  Result<std::string_view> packed_str(std::string_view what) {
    auto n = packed(what);
    if (!n) return fail(std::move(n).error());
    return str(static_cast<std::size_t>(*n), what);
  }

  /// Everything that is left.
  std::span<const std::uint8_t> rest() noexcept {
    auto out = bytes_.subspan(pos_);
    pos_ = bytes_.size();
    return out;
  }

  static std::uint64_t load_le(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  static std::uint64_t load_be(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
    return v;
  }
  static std::string hex_byte(std::uint8_t b) {
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string{kHex[b >> 4], kHex[b & 15]};
  }

 private:
  // Fixed-width little-endian reads, inlined: they run for every column of every row.
  template <class T, std::size_t N>
  [[gnu::always_inline]] Result<T> fixed(std::string_view what) {
    if (N > remaining()) [[unlikely]]
      return fail(past_end(what));
    const auto v = static_cast<T>(load_le(bytes_.data() + pos_, N));
    pos_ += N;
    return v;
  }

  std::span<const std::uint8_t> bytes_;
  std::string_view context_;
  std::size_t base_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace cppcdc::mysql::detail
