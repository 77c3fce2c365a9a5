// JSON-lines file sink: one envelope per line, appended; flush() writes and fsyncs.
//
// Crash safety: a line is only acknowledged after flush() returned, so a crash can leave at
// most an incomplete final line (bytes after the last '\n') belonging to an unacknowledged
// batch. Opening the file cuts that tail off; the runtime delivers those events again.
//
// Speed: for a regular file, write() hands the lines it encoded to a writer thread in chunks
// of kChunkBytes as it goes, so that the kernel's copy of one chunk into the page cache runs
// while the next is encoded; flush() waits for that thread, writes the rest itself and syncs.
// What reaches the file before flush() is an unacknowledged batch's, as if a crash had come
// in flush(): a write() that fails (an event that cannot be encoded) cuts the file back to its
// size after the last successful flush, as recover() does.

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/fault.hpp"
#include "core/file_io.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

Error io_error(std::string_view what, const std::filesystem::path& path, int err) {
  return Error::sink(ErrorKind::kTransient,
                     std::string(what) + " '" + path.string() + "': " + errno_text(err));
}

Status write_all(int fd, const char* data, std::size_t size, std::size_t& written,
                 const std::filesystem::path& path) {
  if (const int err = detail::write_fully(fd, data, size, written); err != 0) {
    return fail(io_error("cannot write to", path, err));
  }
  return ok();
}

Status sync_fd(int fd, const std::filesystem::path& path) {
  if (const int err = detail::sync_data(fd); err != 0) {
    if (err == EINVAL) {
      // The file system cannot sync this file at all: the same on every retry.
      return fail(Error::sink(ErrorKind::kConfiguration,
                              "cannot fsync '" + path.string() + "': " + errno_text(err) +
                                  "; its file system does not support fsync, so nothing "
                                  "written there could be made durable: choose a path on "
                                  "another file system")
                      .for_setting(SettingOwner::kSink, "path"));
    }
    return fail(io_error("cannot fsync", path, err));
  }
  return ok();
}

// Cuts bytes after the last newline (a line torn by a crash). Error kind configuration: the
// file exists but cannot be repaired, which needs an operator.
Status repair_torn_tail(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(Error::sink(ErrorKind::kConfiguration,
                            "cannot stat '" + path.string() + "': " + errno_text(errno)));
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) return ok();
  off_t keep = st.st_size;
  if (const int err = detail::complete_lines_length(path, st.st_size, keep); err != 0) {
    return fail(Error::sink(ErrorKind::kConfiguration,
                            "cannot read '" + path.string() + "': " + errno_text(err) +
                                "; the file sink needs read access to check the last line"));
  }
  if (keep == st.st_size) return ok();
  while (::ftruncate(fd, keep) != 0) {
    if (errno == EINTR) continue;
    return fail(Error::sink(
        ErrorKind::kConfiguration,
        "cannot truncate the torn last line of '" + path.string() + "': " + errno_text(errno)));
  }
  if (auto synced = sync_fd(fd, path); !synced) return synced;
  spdlog::warn(
      "file sink: cut {} bytes of an incomplete last line from '{}' (left by a crash before "
      "its batch was acknowledged); that event will be delivered again",
      static_cast<long long>(st.st_size - keep), path.string());
  return ok();
}

/// What open() created and close() removes again when nothing was ever written: the file,
/// then the directories, innermost first.
struct Created {
  bool file = false;
  std::vector<std::filesystem::path> directories;
};

/// Removes `created` if the file is still empty; errors are ignored (it is only tidying).
void remove_if_empty(const std::filesystem::path& path, const Created& created) {
  if (!created.file) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_size != 0) return;
  if (::unlink(path.c_str()) != 0) return;
  for (const auto& dir : created.directories) {
    if (::rmdir(dir.c_str()) != 0) return;  // not empty (someone else's files): keep it
  }
}

class FileSink final : public Sink {
 public:
  FileSink(std::filesystem::path path, int fd, std::unique_ptr<Encoder> encoder, Created created,
           bool syncable)
      : path_(std::move(path)),
        fd_(fd),
        syncable_(syncable),
        encoder_(std::move(encoder)),
        created_(std::move(created)) {
    note_durable_size();
  }
  ~FileSink() override {
    stop_writer();
    if (fd_ >= 0) {
      ::close(fd_);
      remove_if_empty(path_, created_);
    }
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  Status write(std::span<const Event> events) override {
    if (fd_ < 0) return fail(Error::invalid_state("file sink '" + path_.string() + "' is closed"));
    if (!syncable_) return encode_lines(*encoder_, events, buffer_);
    // Encoded a slice at a time; each full chunk goes to the writer thread.
    for (std::size_t at = 0; at < events.size(); at += kSliceEvents) {
      const std::size_t n = std::min(kSliceEvents, events.size() - at);
      if (auto st = encode_lines(*encoder_, events.subspan(at, n), buffer_); !st) {
        if (auto cut = discard_unflushed(); !cut) return cut;
        return st;
      }
      if (buffer_.size() >= kChunkBytes) hand_to_writer();
    }
    return ok();
  }

  Status flush() override {
    if (fd_ < 0) return fail(Error::invalid_state("file sink '" + path_.string() + "' is closed"));
    if (auto st = wait_for_writer(); !st) return st;
    if (!buffer_.empty()) {
      // Two halves with a crash point between them, so tests can leave a torn line behind.
      const std::size_t half = buffer_.size() / 2;
      std::size_t written = 0;
      Status st = write_all(fd_, buffer_.data(), half, written, path_);
      if (st) {
        CPPCDC_FAULT_POINT("file_sink.mid_write");
        st = write_all(fd_, buffer_.data(), buffer_.size(), written, path_);
      }
      // Bytes that reached the file are never written twice: a retry continues after them.
      buffer_.consume(written);
      unsynced_ = unsynced_ || written > 0;
      if (!st) return st;
    }
    if (unsynced_ && syncable_) {
      if (auto st = sync_fd(fd_, path_); !st) return st;
      unsynced_ = false;
      CPPCDC_FAULT_POINT("file_sink.after_fsync");
    }
    note_durable_size();
    return ok();
  }

  /// The runtime writes the whole batch again after this. What a failed attempt left behind
  /// goes: the lines still buffered, and for a regular file the bytes it appended after the
  /// last successful flush (cut off again, so the retried batch appears once and no torn line
  /// stays in the middle of the file). Without this every failed attempt added another copy
  /// of the batch once the disk took writes again.
  Status recover() override {
    if (fd_ < 0) return fail(Error::invalid_state("file sink '" + path_.string() + "' is closed"));
    return discard_unflushed();
  }

  Status close() override {
    if (fd_ < 0) return ok();
    Status st = flush();
    stop_writer();
    if (::close(fd_) != 0 && st) st = fail(io_error("cannot close", path_, errno));
    fd_ = -1;
    remove_if_empty(path_, created_);
    return st;
  }

  std::string name() const override { return "file:" + path_.string(); }

 private:
  // write() encodes this many events between looks at the buffer's size.
  static constexpr std::size_t kSliceEvents = 256;
  // Encoded lines go to the writer thread in chunks of at least this many bytes.
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  // Everything since the last successful flush goes: the lines buffered or queued for the
  // writer, and the bytes appended to the file (cut off again, so that the retried batch
  // appears once and no torn line stays in the middle of the file).
  Status discard_unflushed() {
    {
      std::unique_lock lock(writer_mutex_);
      writer_idle_.wait(lock, [&] { return !writer_busy_; });
      for (auto& chunk : pending_) {
        chunk.clear();
        free_chunks_.push_back(std::move(chunk));
      }
      pending_.clear();
      writer_error_.reset();
      if (writer_wrote_) unsynced_ = true;
      writer_wrote_ = false;
    }
    buffer_.clear();
    if (!syncable_ || !durable_size_) return ok();
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return fail(io_error("cannot stat", path_, errno));
    if (st.st_size <= *durable_size_) return ok();
    while (::ftruncate(fd_, *durable_size_) != 0) {
      if (errno == EINTR) continue;
      return fail(io_error("cannot cut the lines of a failed write from", path_, errno));
    }
    // The next flush syncs the cut together with the batch written again.
    unsynced_ = true;
    return ok();
  }

  // Queues the buffered lines for the writer thread (started on first use) and takes an empty
  // buffer (one the writer is done with, when there is one).
  void hand_to_writer() {
    std::lock_guard lock(writer_mutex_);
    if (!writer_.joinable()) writer_ = std::thread([this] { writer_main(); });
    pending_.push_back(std::move(buffer_));
    if (!free_chunks_.empty()) {
      buffer_ = std::move(free_chunks_.back());
      free_chunks_.pop_back();
    } else {
      buffer_ = ByteBuffer();
    }
    writer_wake_.notify_one();
  }

  // Waits until the writer thread has written everything queued (or failed). After a failure
  // the chunk it failed on (without its bytes that reached the file) and the rest go back in
  // front of the buffer, so that flush() writes them again and no byte appears twice.
  Status wait_for_writer() {
    std::unique_lock lock(writer_mutex_);
    writer_idle_.wait(lock, [&] { return !writer_busy_ && (pending_.empty() || writer_error_); });
    if (writer_wrote_) unsynced_ = true;
    writer_wrote_ = false;
    if (!writer_error_) return ok();
    Error error = std::move(*writer_error_);
    writer_error_.reset();
    ByteBuffer joined;
    for (auto& chunk : pending_) {
      joined.raw(chunk.view());
      chunk.clear();
      free_chunks_.push_back(std::move(chunk));
    }
    pending_.clear();
    joined.raw(buffer_.view());
    buffer_ = std::move(joined);
    return fail(std::move(error));
  }

  void writer_main() {
    std::unique_lock lock(writer_mutex_);
    for (;;) {
      writer_wake_.wait(lock,
                        [&] { return writer_stop_ || (!pending_.empty() && !writer_error_); });
      if (writer_stop_) return;
      ByteBuffer& chunk = pending_.front();  // deque: stays where it is while others are queued
      writer_busy_ = true;
      lock.unlock();
      std::size_t written = 0;
      Status st = write_all(fd_, chunk.data(), chunk.size(), written, path_);
      // Starts the disk write of what is in the page cache now, without waiting for it, so
      // that the flush's fdatasync finds most of the batch on disk already: the disk works
      // while the next chunk is encoded. Only a hint (errors ignored); durability still
      // comes from that fdatasync.
      if (written > 0) (void)::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
      lock.lock();
      writer_busy_ = false;
      writer_wrote_ = writer_wrote_ || written > 0;
      if (!st) {
        chunk.consume(written);  // bytes that reached the file are never written twice
        writer_error_ = std::move(st).error();
      } else {
        chunk.clear();
        free_chunks_.push_back(std::move(chunk));
        pending_.pop_front();
      }
      if (pending_.empty() || writer_error_) writer_idle_.notify_all();
    }
  }

  void stop_writer() {
    {
      std::lock_guard lock(writer_mutex_);
      writer_stop_ = true;
      writer_wake_.notify_all();
    }
    if (writer_.joinable()) writer_.join();
  }

  // The file's size after a flush that succeeded: everything up to it is acknowledged work.
  void note_durable_size() {
    struct stat st {};
    if (syncable_ && ::fstat(fd_, &st) == 0) durable_size_ = st.st_size;
  }

  std::filesystem::path path_;
  int fd_;
  bool syncable_;          // a regular file: flush() fsyncs it
  bool unsynced_ = false;  // bytes were written since the last successful fsync
  std::unique_ptr<Encoder> encoder_;
  ByteBuffer buffer_;  // encoded lines not yet written or queued; reused across batches
  // The writer thread (regular files): it writes pending_, oldest first. Guarded by
  // writer_mutex_: pending_, free_chunks_ and the flags.
  std::thread writer_;
  std::mutex writer_mutex_;
  std::condition_variable writer_wake_;  // for the writer: a chunk, or stop
  std::condition_variable writer_idle_;  // for write()/flush(): pending_ written, or an error
  std::deque<ByteBuffer> pending_;
  std::vector<ByteBuffer> free_chunks_;  // written chunks, for reuse
  bool writer_busy_ = false;             // the writer is writing pending_.front()
  bool writer_wrote_ = false;            // it wrote bytes since flush() last looked
  bool writer_stop_ = false;
  std::optional<Error> writer_error_;  // a failed write; the writer waits until it is taken
  Created created_;
  std::optional<off_t> durable_size_;  // see note_durable_size(); set at open
};

}  // namespace

Result<std::unique_ptr<Sink>> make_file_sink(const std::filesystem::path& path,
                                             std::unique_ptr<Encoder> encoder,
                                             FileSinkOptions options) {
  if (!encoder) encoder = make_json_encoder();
  if (path.empty()) {
    return fail(Error::sink(ErrorKind::kConfiguration, "the file sink needs a file name")
                    .for_setting(SettingOwner::kSink, "path"));
  }
  const std::filesystem::path parent = path.parent_path();
  Created created;
  if (!parent.empty()) {
    std::error_code ec;
    for (auto dir = parent; !dir.empty() && !std::filesystem::exists(dir, ec);
         dir = dir.parent_path()) {
      created.directories.push_back(dir);
      if (dir == dir.parent_path()) break;
    }
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return fail(Error::sink(ErrorKind::kConfiguration,
                              "cannot create directory '" + parent.string() + "' for the file " +
                                  "sink '" + path.string() + "': " + ec.message() +
                                  "; create it or choose another path")
                      .for_setting(SettingOwner::kSink, "path"));
    }
  }
  int fd = -1;
  const auto mode = static_cast<mode_t>(options.file_mode & 07777);
  // Exclusive first, to learn whether this open creates the file (close() removes a file it
  // created if nothing was written to it). A file removed between the two opens is created on
  // the next round; a few rounds bound that race.
  for (int round = 0; round < 8 && fd < 0; ++round) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, mode);
    if (fd >= 0) {
      created.file = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EEXIST) break;
    do {
      fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno != ENOENT) break;
  }
  if (fd < 0) {
    return fail(Error::sink(ErrorKind::kConfiguration,
                            "cannot open '" + path.string() +
                                "' for appending: " + errno_text(errno) +
                                "; check that the path is a writable file or choose another "
                                "path")
                    .for_setting(SettingOwner::kSink, "path"));
  }
  if (auto st = repair_torn_tail(fd, path); !st) {
    ::close(fd);
    remove_if_empty(path, created);
    return fail(std::move(st).error());
  }
  // A character device (/dev/null), a pipe or a socket holds nothing that fsync could make
  // durable, and fsync on one fails (EINVAL) on every attempt: such a path is written without it.
  struct stat st {};
  const bool regular = ::fstat(fd, &st) != 0 || S_ISREG(st.st_mode);
  if (!regular) {
    spdlog::warn(
        "file sink: '{}' is not a regular file; lines are written without fsync, and "
        "an event is acknowledged once written there",
        path.string());
  }
  return std::unique_ptr<Sink>(
      new FileSink(path, fd, std::move(encoder), std::move(created), regular));
}

}  // namespace cppcdc
