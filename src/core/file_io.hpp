#pragma once
// Low-level helpers for append-only line files made durable with fsync (the file sink, the
// dead-letter writer). They return errno values; callers turn them into their own errors.

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <string>

namespace cppcdc::detail {

/// Writes [data + written, data + size) at the file's end, retrying EINTR and short writes.
/// `written` counts the bytes that reached the file, also when an error stops the loop part
/// way. Returns 0 or the errno of the failed write.
inline int write_fully(int fd, const char* data, std::size_t size, std::size_t& written) {
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<std::size_t>(n);
  }
  return 0;
}

/// fdatasync (fsync for special files that do not support it), retrying EINTR. Returns 0 or
/// the errno.
inline int sync_data(int fd) {
  while (::fdatasync(fd) != 0) {
    if (errno == EINTR) continue;
    if (errno == EINVAL) {
      if (::fsync(fd) == 0) return 0;
      if (errno == EINTR) continue;
    }
    return errno;
  }
  return 0;
}

/// Reads up to `size` bytes at `offset` (pread loop). Returns the bytes read, or -1 (errno
/// set).
inline ssize_t read_at(int fd, char* buf, std::size_t size, off_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, buf + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

/// How many of the `size` bytes of the file at `path` are complete lines: the offset just past
/// its last '\n' (0 when it has none), or `size` when the file ends with one. Reads through a
/// read-only descriptor of its own. Returns 0 and sets `keep`, or an errno (the file could
/// not be opened or read).
inline int complete_lines_length(const std::filesystem::path& path, off_t size, off_t& keep) {
  keep = size;
  if (size == 0) return 0;
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  int err = 0;
  char last = '\0';
  if (read_at(fd, &last, 1, size - 1) != 1) {
    err = errno != 0 ? errno : EIO;
  } else if (last != '\n') {
    constexpr std::size_t kChunk = 64 * 1024;
    std::string buf(kChunk, '\0');
    off_t end = size;
    keep = 0;
    while (end > 0 && err == 0) {
      const std::size_t len = static_cast<std::size_t>(std::min<off_t>(end, kChunk));
      const off_t start = end - static_cast<off_t>(len);
      const ssize_t n = read_at(fd, buf.data(), len, start);
      if (n < 0 || static_cast<std::size_t>(n) != len) {
        err = n < 0 ? errno : EIO;  // EIO: the file shrank under us
        break;
      }
      for (std::size_t i = len; i > 0; --i) {
        if (buf[i - 1] == '\n') {
          keep = start + static_cast<off_t>(i);
          end = 0;
          break;
        }
      }
      if (end != 0) end = start;
    }
  }
  ::close(fd);
  return err;
}

}  // namespace cppcdc::detail
