// FileCheckpoint: one checksummed record per source in a local directory, replaced atomically.
//
// On-disk format, version 1:
//   line 1: "cppcdc-checkpoint 1 sha256=<64 lower-case hex> length=<body size in bytes>"
//   body:   one line holding a JSON object with the record's fields, ending in '\n'. The keys
//           partial_tx_events and partial_tx_id may be absent (read as 0), source_state
//           too (read as empty, and written only when not empty); all others are required.
// The digest and the length both cover the body exactly (its final newline included), so a
// torn or shortened file is told apart from a damaged one, and neither is ever read as "no
// checkpoint".

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "core/fault.hpp"
#include "core/text_util.hpp"
#include "cppcdc/checkpoint.hpp"

namespace cppcdc {
namespace {

constexpr std::string_view kMagic = "cppcdc-checkpoint";
constexpr std::uint64_t kFormatVersion = 1;
constexpr std::string_view kShaPrefix = "sha256=";
constexpr std::string_view kLengthPrefix = "length=";
constexpr std::size_t kShaHexLength = 64;
// A real record is a few hundred bytes; anything far larger is not a checkpoint file and is not
// worth reading into memory.
constexpr std::size_t kMaxFileBytes = 1U << 20;
constexpr std::string_view kRemedy =
    "restore the file from a backup, or move it away to start from the slot's confirmed "
    "position, accepting a replay";

constexpr std::string_view kKeySourceType = "source_type";
constexpr std::string_view kKeySourceId = "source_id";
constexpr std::string_view kKeyOffset = "offset";
constexpr std::string_view kKeyCommittedEvents = "committed_events";
constexpr std::string_view kKeyPartialTxEvents = "partial_tx_events";
constexpr std::string_view kKeyPartialTxId = "partial_tx_id";
constexpr std::string_view kKeySavedAtMs = "saved_at_ms";
constexpr std::string_view kKeySourceState = "source_state";

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

/// Where a record being decoded was read, for errors: "checkpoint file '<path>'", or what a
/// backend that keeps records elsewhere says (FileCheckpoint::decode_stored), and what an
/// operator can do about a damaged one.
struct Origin {
  std::string subject;
  std::string_view remedy;
};

Origin file_origin(const std::string& path) { return {"checkpoint file '" + path + "'", kRemedy}; }

/// Parses the record format (FileCheckpoint::decode and decode_stored); defined below them.
Result<CheckpointRecord> decode_record(std::string_view bytes, const Origin& origin);

/// A decode failure: terminal, names where the record lives and says how to recover.
Error damaged(const Origin& origin, std::string_view problem) {
  std::string message = origin.subject;
  message += " ";
  message += problem;
  message += "; ";
  message += origin.remedy;
  return Error::checkpoint(ErrorKind::kTerminal, std::move(message));
}

/// An operating-system failure while touching `path`. Transient: the save is rebuilt from
/// scratch on every attempt (new temporary file, full write, fresh fsync), so a retry never
/// relies on a page cache state that an earlier failed fsync may have discarded.
Error io_error(std::string_view what, const std::filesystem::path& path, int error_number) {
  std::string message = "cannot ";
  message += what;
  message += " ";
  message += quoted(path);
  message += ": ";
  message += std::strerror(error_number);
  return Error::checkpoint(ErrorKind::kTransient, std::move(message));
}

std::optional<std::string> sha256_hex(std::string_view data) {
  auto hex = detail::sha256_hex(data);
  if (hex && hex->size() != kShaHexLength) return std::nullopt;
  return hex;
}

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}


/// Splits on single spaces.
std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (true) {
    const auto space = line.find(' ', start);
    words.push_back(line.substr(start, space - start));
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  return words;
}

Result<std::string> string_field(const boost::json::object& object, std::string_view key,
                                 const Origin& origin) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr) return fail(damaged(origin, "has no '" + std::string(key) + "' key"));
  if (!value->is_string()) {
    return fail(damaged(origin, "has a '" + std::string(key) + "' key that is not a string"));
  }
  const boost::json::string& text = value->get_string();
  return std::string(text.data(), text.size());
}

Result<std::uint64_t> unsigned_field(const boost::json::object& object, std::string_view key,
                                     const Origin& origin) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr) return fail(damaged(origin, "has no '" + std::string(key) + "' key"));
  if (value->is_uint64()) return value->get_uint64();
  if (value->is_int64() && value->get_int64() >= 0) {
    return static_cast<std::uint64_t>(value->get_int64());
  }
  return fail(
      damaged(origin, "has a '" + std::string(key) + "' key that is not a non-negative integer"));
}

Result<std::int64_t> signed_field(const boost::json::object& object, std::string_view key,
                                  const Origin& origin) {
  const boost::json::value* value = object.if_contains(key);
  if (value == nullptr) return fail(damaged(origin, "has no '" + std::string(key) + "' key"));
  if (value->is_int64()) return value->get_int64();
  if (value->is_uint64() &&
      value->get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(value->get_uint64());
  }
  return fail(damaged(origin, "has a '" + std::string(key) + "' key that is not an integer"));
}

/// Closes `fd` if open; keeps errno of the failure being reported intact.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) {
      const int saved = errno;
      ::close(fd_);
      errno = saved;
    }
  }
  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership: the descriptor stays open.
  void release() noexcept { fd_ = -1; }
  /// Closes now and reports the result (0, or -1 with errno set).
  int close() noexcept {
    const int fd = std::exchange(fd_, -1);
    return ::close(fd);
  }

 private:
  int fd_;
};

/// The whole file, nullopt when it does not exist.
Result<std::optional<std::string>> read_file(const std::filesystem::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(io_error("open checkpoint file", path, errno));
  }
  std::string bytes;
  std::array<char, 4096> buffer{};
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("read checkpoint file", path, errno));
    }
    if (n == 0) break;
    bytes.append(buffer.data(), static_cast<std::size_t>(n));
    if (bytes.size() > kMaxFileBytes) {
      return fail(damaged(file_origin(path.string()), "is larger than " + std::to_string(kMaxFileBytes) +
                                             " bytes, far more than any checkpoint record"));
    }
  }
  return std::optional<std::string>(std::move(bytes));
}

/// Writes all of `data`, resuming after signals and partial writes.
Status write_all(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("write", path, errno));
    }
    // A zero-byte write for a non-empty buffer would loop forever; treat it as an I/O error.
    if (n == 0) return fail(io_error("write", path, EIO));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok();
}

Status fsync_directory(const std::filesystem::path& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return fail(io_error("open directory", dir, errno));
  if (::fsync(fd.get()) != 0) return fail(io_error("fsync directory", dir, errno));
  if (fd.close() != 0) return fail(io_error("close directory", dir, errno));
  return ok();
}

/// "checkpoint-<source_id>", keeping letters, digits, '_', '.' and '-' of the id; anything
/// else becomes '_'. The record file and the lock file add their extensions.
std::string file_stem_for(std::string_view source_id) {
  std::string name = "checkpoint-";
  for (const char c : source_id) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    name.push_back(keep ? c : '_');
  }
  return name;
}

/// The pid the lock's holder wrote into the lock file, or "" when it cannot be read.
std::string lock_holder(int fd) {
  std::array<char, 32> buffer{};
  ssize_t n = -1;
  do {
    n = ::pread(fd, buffer.data(), buffer.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return "";
  std::string text(buffer.data(), static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "";
  }
  return text;
}

/// Opens (creating) `lock_path` and takes an exclusive flock on it without waiting; returns the
/// descriptor that holds it. The lock belongs to the open file description, so a second open
/// in the same process conflicts too. Error kind configuration, naming the file.
Result<int> take_writer_lock(const std::filesystem::path& lock_path, mode_t mode,
                             bool& created) {
  int raw = -1;
  created = false;
  do {
    raw = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (raw >= 0) {
      created = true;
    } else if (errno == EEXIST) {
      raw = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode);
    }
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) {
    return fail(Error::configuration("cannot open the checkpoint lock file " + quoted(lock_path) +
                                     ": " + std::strerror(errno)));
  }
  FileDescriptor fd(raw);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      const std::string holder = lock_holder(fd.get());
      return fail(Error::configuration(
          "the checkpoint lock file " + quoted(lock_path) + " is held by another process" +
          (holder.empty() ? std::string() : " (pid " + holder + ")") +
          ": another cppcdc, or another program using this checkpoint directory and source id, "
          "is writing this checkpoint (a second instance in one process counts too); stop it, "
          "or give this pipeline a checkpoint directory of its own")
                      .with_condition(ErrorCondition::kCheckpointInUse));
    }
    return fail(Error::configuration("cannot lock the checkpoint lock file " + quoted(lock_path) +
                                     ": " + std::strerror(errno)));
  }
  // For the message a second writer gets; the lock works without it.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) {
    (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  }
  const int held = fd.get();
  fd.release();
  return held;
}

}  // namespace

FileCheckpoint::FileCheckpoint(std::filesystem::path dir, std::filesystem::path path,
                               std::filesystem::path lock_path, int lock_fd, unsigned file_mode,
                               bool created_lock, std::vector<std::filesystem::path> created_dirs)
    : dir_(std::move(dir)),
      path_(std::move(path)),
      lock_path_(std::move(lock_path)),
      lock_fd_(lock_fd),
      file_mode_(file_mode),
      created_lock_(created_lock),
      created_dirs_(std::move(created_dirs)) {}

FileCheckpoint::~FileCheckpoint() {
  // Leaves no litter when no record was ever written: the lock file and the directories
  // this instance created are removed again, while the lock is still held (a directory that
  // someone else put files into in the meantime stays).
  if (created_lock_ && !saved_.load()) {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec) && !ec && ::unlink(lock_path_.c_str()) == 0) {
      for (const auto& created : created_dirs_) {
        if (::rmdir(created.c_str()) != 0) break;
      }
    }
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the writer lock
}

std::filesystem::path FileCheckpoint::path_for(const std::filesystem::path& dir,
                                               std::string_view source_id) {
  return dir / (file_stem_for(source_id) + ".ckpt");
}

Result<std::unique_ptr<FileCheckpoint>> FileCheckpoint::open(std::filesystem::path dir,
                                                             std::string source_id,
                                                             unsigned file_mode) {
  if (dir.empty()) {
    return fail(Error::configuration("the checkpoint directory is empty; set a directory")
                    .for_setting(SettingOwner::kCheckpoint, "dir"));
  }
  if (source_id.empty()) {
    return fail(Error::configuration("the checkpoint source_id for directory " + quoted(dir) +
                                     " is empty"));
  }
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
    return fail(Error::configuration("checkpoint directory " + quoted(dir) +
                                     " exists but is not a directory")
                    .for_setting(SettingOwner::kCheckpoint, "dir"));
  }
  ec.clear();
  std::vector<std::filesystem::path> created_dirs;
  for (auto missing = dir; !missing.empty() && !std::filesystem::exists(missing, ec);
       missing = missing.parent_path()) {
    created_dirs.push_back(missing);
    if (missing == missing.parent_path()) break;
  }
  ec.clear();
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(Error::configuration("cannot create checkpoint directory " + quoted(dir) + ": " +
                                     ec.message())
                    .for_setting(SettingOwner::kCheckpoint, "dir"));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return fail(Error::configuration("checkpoint directory " + quoted(dir) + " is not a directory")
                    .for_setting(SettingOwner::kCheckpoint, "dir"));
  }
  const std::string stem = file_stem_for(source_id);
  std::filesystem::path path = dir / (stem + ".ckpt");
  std::filesystem::path lock_path = dir / (stem + ".lock");
  const auto mode = static_cast<mode_t>(file_mode & 0666);
  bool created_lock = false;
  auto lock_fd = take_writer_lock(lock_path, mode, created_lock);
  if (!lock_fd) {
    for (const auto& created : created_dirs) {
      if (::rmdir(created.c_str()) != 0) break;
    }
    return fail(std::move(lock_fd).error());
  }
  return std::unique_ptr<FileCheckpoint>(
      new FileCheckpoint(std::move(dir), std::move(path), std::move(lock_path), *lock_fd, mode,
                         created_lock, std::move(created_dirs)));
}

std::string FileCheckpoint::encode(const CheckpointRecord& record) {
  boost::json::object object;
  object[kKeySourceType] = record.source_type;
  object[kKeySourceId] = record.source_id;
  object[kKeyOffset] = record.offset;
  object[kKeyCommittedEvents] = record.committed_events;
  object[kKeyPartialTxEvents] = record.partial_tx_events;
  object[kKeyPartialTxId] = record.partial_tx_id;
  object[kKeySavedAtMs] = record.saved_at_ms;
  if (!record.source_state.empty()) object[kKeySourceState] = record.source_state;
  std::string body = boost::json::serialize(object);
  body.push_back('\n');

  // OpenSSL cannot realistically fail here; if it did, the all-zero digest makes the file
  // unreadable, and save() refuses to write a record that does not read back.
  const std::string digest = sha256_hex(body).value_or(std::string(kShaHexLength, '0'));
  std::string out(kMagic);
  out += " ";
  out += std::to_string(kFormatVersion);
  out += " ";
  out += kShaPrefix;
  out += digest;
  out += " ";
  out += kLengthPrefix;
  out += std::to_string(body.size());
  out += "\n";
  out += body;
  return out;
}

Result<CheckpointRecord> FileCheckpoint::decode(std::string_view bytes, const std::string& origin) {
  return decode_record(bytes, file_origin(origin));
}

Result<CheckpointRecord> FileCheckpoint::decode_stored(std::string_view bytes,
                                                       std::string_view stored_as,
                                                       std::string_view remedy) {
  return decode_record(bytes, Origin{std::string(stored_as), remedy});
}

namespace {

Result<CheckpointRecord> decode_record(std::string_view bytes, const Origin& origin) {
  if (bytes.empty()) return fail(damaged(origin, "is empty"));
  const auto newline = bytes.find('\n');
  if (newline == std::string_view::npos) {
    if (bytes.starts_with(kMagic) || kMagic.starts_with(bytes)) {
      return fail(damaged(origin, "ends inside its header line (truncated)"));
    }
    return fail(damaged(origin, "has no header line (not a cppcdc checkpoint file)"));
  }
  const std::string_view header = bytes.substr(0, newline);
  const std::string_view body = bytes.substr(newline + 1);

  const auto words = split_words(header);
  if (words[0] != kMagic) {
    return fail(damaged(origin, "does not start with the '" + std::string(kMagic) +
                                    "' header (not a cppcdc checkpoint file)"));
  }
  if (words.size() < 2) return fail(damaged(origin, "has a header without a format version"));
  const auto version = detail::parse_decimal(words[1]);
  if (!version) {
    return fail(damaged(origin, "has a malformed format version '" + std::string(words[1]) + "'"));
  }
  if (*version != kFormatVersion) {
    return fail(damaged(origin, "has unknown format version " + std::to_string(*version) +
                                    " (this build reads version " + std::to_string(kFormatVersion) +
                                    ")"));
  }
  if (words.size() != 4 || !words[2].starts_with(kShaPrefix) ||
      !words[3].starts_with(kLengthPrefix)) {
    return fail(damaged(origin, "has a malformed header line"));
  }
  const std::string_view expected_digest = words[2].substr(kShaPrefix.size());
  if (expected_digest.size() != kShaHexLength || !is_lower_hex(expected_digest)) {
    return fail(damaged(origin, "has a malformed checksum in its header"));
  }
  const auto length = detail::parse_decimal(words[3].substr(kLengthPrefix.size()));
  if (!length) return fail(damaged(origin, "has a malformed body length in its header"));

  if (body.size() < *length) {
    return fail(damaged(origin, "is truncated: the header announces " + std::to_string(*length) +
                                    " body bytes but only " + std::to_string(body.size()) +
                                    " follow"));
  }
  if (body.size() > *length) {
    return fail(damaged(origin, "has " + std::to_string(body.size() - *length) +
                                    " unexpected bytes after its " + std::to_string(*length) +
                                    "-byte body"));
  }
  const auto actual_digest = sha256_hex(body);
  if (!actual_digest) {
    return fail(Error::checkpoint(ErrorKind::kInternal,
                                  "cannot compute SHA-256 to verify " + origin.subject +
                                      " (OpenSSL digest failed)"));
  }
  if (*actual_digest != expected_digest) {
    return fail(damaged(origin, "is corrupt: the SHA-256 of its body does not match the header"));
  }

  // Past the checksum the body is what we wrote, so the rest only fails for files written by
  // something else (or a bug); still never guess.
  if (!body.ends_with('\n')) return fail(damaged(origin, "has a body without a final newline"));
  boost::system::error_code ec;
  const boost::json::value json = boost::json::parse(body.substr(0, body.size() - 1), ec);
  if (ec) return fail(damaged(origin, "has a body that is not valid JSON (" + ec.message() + ")"));
  if (!json.is_object()) return fail(damaged(origin, "has a body that is not a JSON object"));
  const boost::json::object& object = json.get_object();

  CheckpointRecord record;
  auto source_type = string_field(object, kKeySourceType, origin);
  if (!source_type) return fail(std::move(source_type).error());
  record.source_type = std::move(*source_type);
  auto source_id = string_field(object, kKeySourceId, origin);
  if (!source_id) return fail(std::move(source_id).error());
  record.source_id = std::move(*source_id);
  auto offset = string_field(object, kKeyOffset, origin);
  if (!offset) return fail(std::move(offset).error());
  record.offset = std::move(*offset);
  const auto committed = unsigned_field(object, kKeyCommittedEvents, origin);
  if (!committed) return fail(committed.error());
  record.committed_events = *committed;
  // The partial-transaction pair came after the first five keys; a body without it describes a
  // position on a transaction boundary.
  for (const auto& [key, field] : {std::pair{kKeyPartialTxEvents, &record.partial_tx_events},
                                   std::pair{kKeyPartialTxId, &record.partial_tx_id}}) {
    if (!object.contains(key)) continue;
    const auto value = unsigned_field(object, key, origin);
    if (!value) return fail(value.error());
    *field = *value;
  }
  const auto saved_at = signed_field(object, kKeySavedAtMs, origin);
  if (!saved_at) return fail(saved_at.error());
  record.saved_at_ms = *saved_at;
  if (object.contains(kKeySourceState)) {
    auto state = string_field(object, kKeySourceState, origin);
    if (!state) return fail(std::move(state).error());
    record.source_state = std::move(*state);
  }
  return record;
}

}  // namespace

Result<std::optional<CheckpointRecord>> FileCheckpoint::do_load() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return load_locked();
}

Result<std::optional<CheckpointRecord>> FileCheckpoint::load_locked() {
  cache_valid_ = false;
  auto bytes = read_file(path_);
  if (!bytes) return fail(std::move(bytes).error());
  if (!*bytes) {
    cached_.reset();
    cache_valid_ = true;
    return std::optional<CheckpointRecord>();
  }
  auto record = decode(**bytes, path_.string());
  if (!record) return fail(std::move(record).error());
  cached_ = *record;
  cache_valid_ = true;
  return std::optional<CheckpointRecord>(std::move(*record));
}

Result<std::optional<CheckpointRecord>> FileCheckpoint::current_record() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (cache_valid_) return cached_;
  return load_locked();
}

Status FileCheckpoint::do_save(const CheckpointRecord& record) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::string bytes = encode(record);
  // Guard against writing something load() would then refuse (e.g. a string that is not valid
  // UTF-8, which JSON cannot carry).
  const auto read_back = decode(bytes, path_.string());
  if (!read_back || *read_back != record) {
    return fail(Error::checkpoint(
        ErrorKind::kInvalidData,
        "the checkpoint of source '" + record.source_id +
            "' does not read back after encoding (are all its strings valid UTF-8?); the "
            "previous record is kept"));
  }

  saved_.store(true);  // from here the directory holds (or may hold) a record: it stays
  std::filesystem::path tmp = path_;
  tmp += ".tmp";
  {
    FileDescriptor fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC,
                             static_cast<mode_t>(file_mode_)));
    if (!fd.valid()) return fail(io_error("create", tmp, errno));
    Status written = write_all(fd.get(), bytes, tmp);
    CPPCDC_FAULT_POINT("checkpoint.after_tmp_write");
    if (written && ::fsync(fd.get()) != 0) written = fail(io_error("fsync", tmp, errno));
    if (written && fd.close() != 0) written = fail(io_error("close", tmp, errno));
    if (!written) {
      ::unlink(tmp.c_str());
      return written;
    }
  }
  CPPCDC_FAULT_POINT("checkpoint.before_rename");
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int error_number = errno;
    ::unlink(tmp.c_str());
    return fail(io_error("rename " + tmp.string() + " over", path_, error_number));
  }
  CPPCDC_FAULT_POINT("checkpoint.after_rename");
  // The file now holds the new record whether or not the directory sync below succeeds.
  cached_ = record;
  cache_valid_ = true;
  return fsync_directory(dir_);
}

}  // namespace cppcdc
