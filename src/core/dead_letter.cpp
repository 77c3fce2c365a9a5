// The dead-letter file (cppcdc/dead_letter.hpp): JSON lines appended and fsynced.

#include "cppcdc/dead_letter.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <system_error>
#include <vector>

#include "core/file_io.hpp"
#include "core/json_write.hpp"

namespace cppcdc {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "2026-01-01T12:00:00.123Z".
std::string utc_text(std::int64_t ms) {
  std::int64_t secs = ms / 1000;
  std::int64_t rest = ms % 1000;
  if (rest < 0) {
    rest += 1000;
    --secs;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(rest));
  return out;
}

Error open_error(const std::filesystem::path& path, const std::string& what) {
  return Error::configuration("dead-letter file '" + path.string() + "': " + what);
}

}  // namespace

std::string dead_letter_record(const Event& event, const Error& error,
                               const DeadLetterOrigin& origin, std::int64_t time_ms) {
  std::string out = "{\"time\":";
  detail::append_json_string(out, utc_text(time_ms));
  out += origin.kind == DeadLetterOrigin::Kind::kStage ? ",\"stage\":" : ",\"sink\":";
  detail::append_json_string(out, origin.name);
  out += ",\"error_kind\":";
  detail::append_json_string(out, to_string(error.kind()));
  out += ",\"error\":";
  detail::append_json_string(out, error.report());
  out += ",\"event\":";
  event.append_json(out);
  out += '}';
  return out;
}

struct DeadLetterWriter::Impl {
  std::filesystem::path path;
  int fd = -1;
  std::string buffer;       // records not yet written
  std::size_t pending = 0;  // records in buffer, or written but not yet fsynced
  bool unsynced = false;
  std::uint64_t records = 0;
  // What open() created, removed again at close() when nothing was ever written.
  bool created_file = false;
  std::vector<std::filesystem::path> created_dirs;

  Error io_error(std::string_view what, int err) const {
    return Error(ErrorKind::kTransient, "dead-letter error",
                 std::string(what) + " '" + path.string() + "': " + errno_text(err));
  }

  void remove_if_empty() {
    if (!created_file) return;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || st.st_size != 0) return;
    if (::unlink(path.c_str()) != 0) return;
    for (const auto& dir : created_dirs) {
      if (::rmdir(dir.c_str()) != 0) return;
    }
  }
};

DeadLetterWriter::DeadLetterWriter() : impl_(std::make_unique<Impl>()) {}

DeadLetterWriter::~DeadLetterWriter() {
  if (impl_ && impl_->fd >= 0) {
    if (impl_->pending > 0) {
      spdlog::warn("dead-letter file '{}': {} records were never flushed", impl_->path.string(),
                   impl_->pending);
    }
    ::close(impl_->fd);
    impl_->remove_if_empty();
  }
}

Result<std::unique_ptr<DeadLetterWriter>> DeadLetterWriter::open(const std::filesystem::path& path,
                                                                 DeadLetterOptions options) {
  if (path.empty()) return fail(Error::configuration("the dead-letter file needs a file name"));
  std::unique_ptr<DeadLetterWriter> writer(new DeadLetterWriter());
  auto& d = *writer->impl_;
  d.path = path;
  const std::filesystem::path parent = path.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    for (auto dir = parent; !dir.empty() && !std::filesystem::exists(dir, ec);
         dir = dir.parent_path()) {
      d.created_dirs.push_back(dir);
      if (dir == dir.parent_path()) break;
    }
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return fail(open_error(path, "cannot create its directory '" + parent.string() + "': " +
                                       ec.message() + "; create it or choose another path"));
    }
  }
  const auto mode = static_cast<mode_t>(options.file_mode & 07777);
  for (int round = 0; round < 8 && d.fd < 0; ++round) {
    d.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, mode);
    if (d.fd >= 0) {
      d.created_file = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EEXIST) break;
    do {
      d.fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    } while (d.fd < 0 && errno == EINTR);
    if (d.fd < 0 && errno != ENOENT) break;
  }
  if (d.fd < 0) {
    const int err = errno;
    d.remove_if_empty();
    return fail(open_error(path, "cannot open it for appending: " + errno_text(err) +
                                     "; check that the path is a writable file or choose another "
                                     "path"));
  }
  // A torn last line belongs to a batch that was never acknowledged: cut it off.
  struct stat st {};
  if (::fstat(d.fd, &st) != 0)
    return fail(open_error(path, "cannot stat it: " + errno_text(errno)));
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    off_t keep = st.st_size;
    if (const int err = detail::complete_lines_length(path, st.st_size, keep); err != 0) {
      return fail(open_error(path, "cannot read it to check its last line: " + errno_text(err)));
    }
    if (keep != st.st_size) {
      while (::ftruncate(d.fd, keep) != 0) {
        if (errno == EINTR) continue;
        return fail(open_error(path, "cannot cut its torn last line: " + errno_text(errno)));
      }
      if (const int err = detail::sync_data(d.fd); err != 0)
        return fail(d.io_error("cannot fsync", err));
      spdlog::warn(
          "dead-letter file '{}': cut {} bytes of an incomplete last line (left by a "
          "crash before its batch was acknowledged; the event is written again)",
          path.string(), static_cast<long long>(st.st_size - keep));
    }
  }
  return writer;
}

Status DeadLetterWriter::append(const Event& event, const Error& error,
                                const DeadLetterOrigin& origin) {
  auto& d = *impl_;
  if (d.fd < 0) {
    return fail(Error::invalid_state("dead-letter file '" + d.path.string() + "' is closed"));
  }
  d.buffer += dead_letter_record(event, error, origin, now_ms());
  d.buffer += '\n';
  ++d.pending;
  return ok();
}

Status DeadLetterWriter::flush() {
  auto& d = *impl_;
  if (d.fd < 0) {
    return fail(Error::invalid_state("dead-letter file '" + d.path.string() + "' is closed"));
  }
  if (!d.buffer.empty()) {
    std::size_t written = 0;
    const int err = detail::write_fully(d.fd, d.buffer.data(), d.buffer.size(), written);
    d.buffer.erase(0, written);  // a retry continues after what reached the file
    d.unsynced = d.unsynced || written > 0;
    if (err != 0) return fail(d.io_error("cannot write to", err));
  }
  if (d.unsynced) {
    if (const int err = detail::sync_data(d.fd); err != 0)
      return fail(d.io_error("cannot fsync", err));
    d.unsynced = false;
  }
  d.records += d.pending;
  d.pending = 0;
  return ok();
}

Status DeadLetterWriter::write(const Event& event, const Error& error,
                               const DeadLetterOrigin& origin) {
  CPPCDC_TRY(append(event, error, origin));
  return flush();
}

Status DeadLetterWriter::close() {
  auto& d = *impl_;
  if (d.fd < 0) return ok();
  Status st = flush();
  if (::close(d.fd) != 0 && st) st = fail(d.io_error("cannot close", errno));
  d.fd = -1;
  d.remove_if_empty();
  return st;
}

std::uint64_t DeadLetterWriter::records() const noexcept { return impl_->records; }
std::size_t DeadLetterWriter::pending() const noexcept { return impl_->pending; }
const std::filesystem::path& DeadLetterWriter::path() const noexcept { return impl_->path; }

}  // namespace cppcdc
