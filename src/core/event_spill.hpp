#pragma once
// EventSpill: a temporary file that holds events a source cannot keep in memory, such as the
// changes of one very large transaction waiting for its commit (private to src/).
//
// The file is created in `dir` and unlinked at once, so it disappears when it is closed, when
// the process exits, and when the process is killed: nothing is ever left behind to clean up.
// Records are written one after another, then read back once in the same order. Each record
// is a 4-byte little-endian body length and a body: an event in a compact binary form of every
// Event field (append), or bytes of the caller's own making (append_record; the MySQL source
// keeps a large transaction's rows events undecoded so). For events, row shapes are not
// written, only an index into a table of the shapes seen, which stays in memory (a
// transaction touches few shapes), so read-back events share the very same RowShape objects.
//
// Errors: kind internal, naming the directory and the system error; a full disk says so and
// names the remedy (the spill directory setting, or free space).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::detail {

/// Rough heap and inline footprint of an event in bytes (strings, rows, the object itself),
/// for memory bounds; not exact, but proportional to what the event holds.
std::size_t approx_event_bytes(const Event& e) noexcept;
/// What one std::string field adds to approx_event_bytes (the object, and its heap block past
/// the small-string buffer): lets a caller that changes a measured event's string field
/// adjust the measure instead of measuring the event again.
std::size_t approx_string_bytes(const std::string& s) noexcept;

/// The system's temporary directory ($TMPDIR, else /tmp), without throwing.
inline std::filesystem::path default_spill_dir() {
  std::error_code ec;
  auto dir = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : dir;
}

class EventSpill {
 public:
  /// Creates (and unlinks) a file in `dir`. `dir` must exist and be writable.
  static Result<std::unique_ptr<EventSpill>> create(const std::filesystem::path& dir);
  ~EventSpill();
  EventSpill(const EventSpill&) = delete;
  EventSpill& operator=(const EventSpill&) = delete;

  /// Appends an event (writing phase only).
  Status append(const Event& e);
  /// Ends writing and starts reading from the first event.
  Status start_reading();
  /// Reads the next event into `out`; false when all were read. The next record must be one
  /// that append() wrote.
  Result<bool> next(Event& out);

  /// Appends a record of the caller's own making: `head` then `tail`, read back whole by
  /// next_record() in its place among the events (writing phase only). The caller knows which
  /// records are events and which its own, in the order it wrote them. invalid_data beyond
  /// 4 GiB.
  Status append_record(std::string_view head, std::span<const std::uint8_t> tail = {});
  /// The next record, which append_record() wrote: its bytes, valid until the next call of
  /// next(), next_record() or start_reading(); nullopt when all were read.
  Result<std::optional<std::string_view>> next_record();

  /// Where the next appended event will start in the file, in bytes (writing phase).
  std::uint64_t end_offset() const noexcept { return file_bytes_ + buffer_.size(); }
  /// Drops every event from the one that started at byte `offset` on, leaving `events`
  /// (writing phase; `offset` and `events` as end_offset() and events_written() were when
  /// that event was appended). invalid_state while reading or for a place past the end;
  /// internal on an I/O error.
  Status truncate(std::uint64_t events, std::uint64_t offset);

  /// Records appended: events and append_record()'s records together.
  std::uint64_t events_written() const noexcept { return written_; }
  std::uint64_t bytes_written() const noexcept { return file_bytes_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }

 private:
  EventSpill(int fd, std::filesystem::path dir) : fd_(fd), dir_(std::move(dir)) {}
  Status flush();
  std::size_t begin_record();
  Status end_record(std::size_t start, const char* what);
  Result<std::optional<std::string_view>> read_body();
  Error damaged(const std::string& what) const;
  Status fill(std::size_t need);
  Error io_error(const std::string& what, int err) const;

  int fd_ = -1;
  std::filesystem::path dir_;
  bool reading_ = false;
  std::string buffer_;       // pending writes, or read-ahead while reading
  std::size_t read_pos_ = 0;  // next unread byte of buffer_ while reading
  std::uint64_t written_ = 0;
  std::uint64_t read_ = 0;
  std::uint64_t file_bytes_ = 0;
  std::vector<RowShapePtr> shapes_;
  std::unordered_map<const RowShape*, std::uint32_t> shape_index_;
};

}  // namespace cppcdc::detail
