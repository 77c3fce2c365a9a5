#pragma once
// Avro's binary encoding, the part the envelope schema needs: zig-zag varints for int and long,
// length-prefixed bytes and strings, booleans, union branch indexes and arrays written as one
// block. The reader checks every length against what is left, so any input is safe to read.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "cppcdc/buffer.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::avro {

/// Appends `v` as an Avro long (zig-zag, then 7 bits per byte, low bits first).
inline void write_long(ByteBuffer& out, std::int64_t v) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  out.need(10);
  char*& p = out.cur();
  while (z >= 0x80) {
    *p++ = static_cast<char>((z & 0x7f) | 0x80);
    z >>= 7;
  }
  *p++ = static_cast<char>(z);
}

inline void write_bool(ByteBuffer& out, bool v) { out.ch(v ? '\1' : '\0'); }

/// bytes and string: the length as a long, then the bytes.
inline void write_bytes(ByteBuffer& out, std::string_view v) {
  write_long(out, static_cast<std::int64_t>(v.size()));
  out.raw(v);
}

/// A value stored in a long although its type is unsigned 64-bit: the same 64 bits, so that
/// values above 2^63 - 1 read back as negative longs and convert back exactly.
inline std::int64_t as_long(std::uint64_t v) noexcept {
  std::int64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}
inline std::uint64_t as_unsigned(std::int64_t v) noexcept {
  std::uint64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

/// Reads Avro binary from a byte range. Every failure is invalid_data naming what was read.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  bool at_end() const noexcept { return pos_ == data_.size(); }

  Result<std::int64_t> read_long(const char* what) {
    std::uint64_t z = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ >= data_.size()) return truncated(what);
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      if (shift == 63 && (b & 0x7e) != 0) return bad(what, "a long longer than 64 bits");
      z |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
      }
    }
    return bad(what, "a long longer than ten bytes");
  }

  Result<std::int32_t> read_int(const char* what) {
    auto v = read_long(what);
    if (!v) return fail(v.error());
    if (*v < INT32_MIN || *v > INT32_MAX) return bad(what, "an int out of range");
    return static_cast<std::int32_t>(*v);
  }

  Result<bool> read_bool(const char* what) {
    if (pos_ >= data_.size()) return truncated(what);
    const char b = data_[pos_++];
    if (b != 0 && b != 1) return bad(what, "a boolean byte other than 0 or 1");
    return b == 1;
  }

  /// bytes or string: a view into the input.
  Result<std::string_view> read_bytes(const char* what) {
    auto n = read_long(what);
    if (!n) return fail(n.error());
    if (*n < 0) return bad(what, "a negative length");
    if (static_cast<std::uint64_t>(*n) > remaining()) return truncated(what);
    const std::string_view out = data_.substr(pos_, static_cast<std::size_t>(*n));
    pos_ += static_cast<std::size_t>(*n);
    return out;
  }

  /// A union's branch index, which must be below `branches`.
  Result<std::int64_t> read_union(const char* what, std::int64_t branches) {
    auto i = read_long(what);
    if (!i) return fail(i.error());
    if (*i < 0 || *i >= branches) return bad(what, "a union branch index out of range");
    return *i;
  }

  /// The item count of the next array block (0: the array ends). A negative count (a block
  /// that also gives its size in bytes) is read as its absolute value, its size skipped.
  /// Counts larger than the bytes left cannot be real (every item takes a byte at least).
  Result<std::int64_t> read_block_count(const char* what) {
    auto n = read_long(what);
    if (!n) return fail(n.error());
    std::int64_t count = *n;
    if (count < 0) {
      if (count == INT64_MIN) return bad(what, "an array block count out of range");
      count = -count;
      auto size = read_long(what);
      if (!size) return fail(size.error());
      if (*size < 0) return bad(what, "a negative array block size");
    }
    if (static_cast<std::uint64_t>(count) > remaining()) return truncated(what);
    return count;
  }

 private:
  Error truncated_error(const char* what) const {
    return Error::invalid_data(std::string("Avro record ends inside field '") + what +
                               "' (at byte " + std::to_string(pos_) + " of " +
                               std::to_string(data_.size()) + ")");
  }
  tl::unexpected<Error> truncated(const char* what) const { return fail(truncated_error(what)); }
  tl::unexpected<Error> bad(const char* what, const char* problem) const {
    return fail(Error::invalid_data(std::string("Avro field '") + what + "' holds " + problem +
                                    " (at byte " + std::to_string(pos_) + ")"));
  }

  std::string_view data_;
  std::size_t pos_ = 0;
};

}  // namespace cppcdc::avro
