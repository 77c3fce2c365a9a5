#pragma once
// ByteBuffer: a growable byte buffer written through a raw cursor. Encoders (codec.hpp) append
// records to one; sinks hand its bytes on. It exists so that the hot path pays neither
// std::string's zero-filling on resize nor a bounds check per byte.
//
// Writing: call need(n) before writing up to n bytes at cur(), then advance cur(); or use
// raw() and ch(), which do both. Memory: malloc'd, grown by doubling from 1 KiB, kept across
// clear() so that a buffer reused per batch stops allocating. Not thread-safe; movable, not
// copyable. Allocation failure throws std::bad_alloc, as std::string would.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

namespace cppcdc {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ByteBuffer(ByteBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        cur_(std::exchange(other.cur_, nullptr)),
        end_(std::exchange(other.end_, nullptr)) {}
  ByteBuffer& operator=(ByteBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      cur_ = std::exchange(other.cur_, nullptr);
      end_ = std::exchange(other.end_, nullptr);
    }
    return *this;
  }
  ~ByteBuffer() { std::free(data_); }

  /// Forgets the content, keeps the memory.
  void clear() noexcept { cur_ = data_; }
  std::string_view view() const noexcept { return {data_, static_cast<std::size_t>(cur_ - data_)}; }
  const char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(cur_ - data_); }
  bool empty() const noexcept { return cur_ == data_; }
  /// Drops the first `n` bytes (at most size()), keeping the rest in order.
  void consume(std::size_t n) noexcept {
    const std::size_t used = size();
    if (n >= used) {
      cur_ = data_;
      return;
    }
    std::memmove(data_, data_ + n, used - n);
    cur_ = data_ + (used - n);
  }
  /// Makes room for `n` more bytes at cur().
  void need(std::size_t n) {
    if (static_cast<std::size_t>(end_ - cur_) < n) grow(n);
  }
  /// The write cursor: after need(n), up to n bytes may be written here and the cursor moved
  /// past them.
  char*& cur() noexcept { return cur_; }
  void raw(std::string_view s) {
    need(s.size());
    if (!s.empty()) std::memcpy(cur_, s.data(), s.size());
    cur_ += s.size();
  }
  void ch(char c) {
    need(1);
    *cur_++ = c;
  }

 private:
  // Out of line and cold, so that need() (a compare and a branch) is inlined where it is used.
  [[gnu::noinline, gnu::cold]] void grow(std::size_t n) {
    const auto used = static_cast<std::size_t>(cur_ - data_);
    std::size_t cap = static_cast<std::size_t>(end_ - data_);
    cap = cap ? cap * 2 : 1024;
    if (cap < used + n) cap = used + n;
    char* d = static_cast<char*>(std::realloc(data_, cap));
    if (!d) throw std::bad_alloc();
    data_ = d;
    cur_ = d + used;
    end_ = d + cap;
  }

  char* data_ = nullptr;
  char* cur_ = nullptr;
  char* end_ = nullptr;
};

}  // namespace cppcdc
