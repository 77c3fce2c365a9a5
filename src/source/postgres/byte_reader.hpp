#pragma once
// Private helper of the PostgreSQL connector: a cursor over an immutable byte buffer that
// reads big-endian integers and NUL-terminated strings and refuses to step past the end.
//
// Every failed read yields an Error of kind invalid_data shaped as
//   "<context>: <what> runs past the end of the <N>-byte message at offset <O>"
// where <O> is the offset at which the read started. The reader never allocates on the
// success path; error text is only built once something has gone wrong.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "cppcdc/error.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::pg::detail {

class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::string_view context) noexcept
      : bytes_(bytes), context_(context) {}

  std::size_t offset() const noexcept { return pos_; }
  std::size_t size() const noexcept { return bytes_.size(); }
  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  bool at_end() const noexcept { return pos_ == bytes_.size(); }
  std::string_view context() const noexcept { return context_; }

  /// "<context>: <what> at offset <offset>".
  Error error_at(std::size_t offset, std::string_view what) const {
    std::string text;
    text.reserve(context_.size() + what.size() + 32);
    text.append(context_).append(": ").append(what).append(" at offset ");
    text.append(std::to_string(offset));
    return Error::invalid_data(std::move(text));
  }

  /// "<context>: <what> runs past the end of the <N>-byte message at offset <current>".
  [[gnu::noinline, gnu::cold]] Error past_end(std::string_view what) const {
    std::string text(what);
    text.append(" runs past the end of the ").append(std::to_string(bytes_.size()));
    text.append("-byte message");
    return error_at(pos_, text);
  }

  Result<std::uint8_t> u8(std::string_view what) { return read_be<std::uint8_t>(what); }
  Result<std::int16_t> i16(std::string_view what) { return read_be<std::int16_t>(what); }
  Result<std::uint32_t> u32(std::string_view what) { return read_be<std::uint32_t>(what); }
  Result<std::int32_t> i32(std::string_view what) { return read_be<std::int32_t>(what); }
  Result<std::uint64_t> u64(std::string_view what) { return read_be<std::uint64_t>(what); }
  Result<std::int64_t> i64(std::string_view what) { return read_be<std::int64_t>(what); }

  /// A NUL-terminated string; the view excludes the terminator, which is consumed.
  Result<std::string_view> cstring(std::string_view what) {
    const std::size_t left = remaining();
    const void* nul = left == 0 ? nullptr : std::memchr(bytes_.data() + pos_, 0, left);
    if (nul == nullptr) {
      std::string text(what);
      text.append(" has no terminating NUL before the end of the ");
      text.append(std::to_string(bytes_.size())).append("-byte message");
      return fail(error_at(pos_, text));
    }
    const auto* begin = reinterpret_cast<const char*>(bytes_.data() + pos_);
    const auto length =
        static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - (bytes_.data() + pos_));
    pos_ += length + 1;
    return std::string_view(begin, length);
  }

  /// The next `n` bytes.
  Result<std::span<const std::uint8_t>> take(std::size_t n, std::string_view what) {
    if (n > remaining()) [[unlikely]] return fail(past_end(what));
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  /// Everything that is left.
  std::span<const std::uint8_t> rest() noexcept {
    auto out = bytes_.subspan(pos_);
    pos_ = bytes_.size();
    return out;
  }

  /// Fails when bytes are left over after a complete message.
  Status expect_end() const {
    if (at_end()) return {};
    std::string text = std::to_string(remaining());
    text.append(remaining() == 1 ? " trailing byte" : " trailing bytes");
    text.append(" after the end of the message");
    return fail(error_at(pos_, text));
  }

 private:
  // Inlined into every decoder: it runs several times per column of every row.
  template <class T>
  [[gnu::always_inline]] Result<T> read_be(std::string_view what) {
    static_assert(std::is_integral_v<T>);
    if (sizeof(T) > remaining()) [[unlikely]] return fail(past_end(what));
    using U = std::make_unsigned_t<T>;
    U value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    if constexpr (sizeof(T) == 2) {
      value = __builtin_bswap16(value);
    } else if constexpr (sizeof(T) == 4) {
      value = __builtin_bswap32(value);
    } else if constexpr (sizeof(T) == 8) {
      value = __builtin_bswap64(value);
    }
    pos_ += sizeof(T);
    // Two's complement reinterpretation; well defined since C++20.
    return static_cast<T>(value);
  }

  std::span<const std::uint8_t> bytes_;
  std::string_view context_;
  std::size_t pos_ = 0;
};

}  // namespace cppcdc::pg::detail
