#pragma once
// Checkpoint backends: where the durable resume position lives.
//
// A checkpoint record names the source it belongs to and the position a restart resumes from
// (for PostgreSQL: the end LSN of the last fully acknowledged transaction, "X/Y" text). It
// advances only after the consumer acknowledged the events before it (invariant 1), and the
// source is told to release log only up to a durably saved record (invariant 2).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/result.hpp"

namespace cppcdc {

struct CheckpointRecord {
  /// Source type: "postgres", "mysql", "mariadb", "sqlserver", or a custom name.
  std::string source_type;
  /// Source identity the position is valid for (PostgreSQL: the replication slot name).
  /// A record for another identity is never compared with this one.
  std::string source_id;
  /// Resume position in the source's native text form (PostgreSQL LSN "0/16B2E48").
  std::string offset;
  /// Total events acknowledged through this checkpoint over the pipeline's life.
  std::uint64_t committed_events = 0;
  /// Events of the transaction that follows `offset` that were already acknowledged (a batch
  /// ended inside it), and that transaction's id. A restart re-reads the transaction from its
  /// start and drops that many of its events instead of delivering them twice. 0 when the
  /// acknowledged events end on a transaction boundary.
  std::uint64_t partial_tx_events = 0;
  std::uint64_t partial_tx_id = 0;
  /// Source-defined progress that belongs with `offset`, opaque to the runtime (PostgreSQL:
  /// the snapshot in progress, as JSON). Empty when there is none. It comes from the
  /// resume_state of the event whose resume_offset became `offset`.
  std::string source_state;
  /// Wall-clock time of the save, ms since the Unix epoch.
  std::int64_t saved_at_ms = 0;

  friend bool operator==(const CheckpointRecord&, const CheckpointRecord&) = default;
};

/// Where a transactional sink writes the checkpoint record inside its own transaction, for a
/// checkpoint backend that keeps its records in the sink's own system (kafka_topic: a topic
/// of a Kafka cluster). Under effectively_once the data and the position must commit in one
/// transaction, so the position has to live where the sink writes. The core does not read the
/// fields: the sink type and the backend agree on what they mean.
struct InSinkCheckpoint {
  std::string backend;   ///< the backend's name ("kafka_topic")
  std::string system;    ///< which system holds the records (Kafka: the bootstrap servers)
  std::string location;  ///< where in it (Kafka: the topic)
  std::string key;       ///< the record's key (the checkpoint id)
  // The record's bytes are FileCheckpoint::encode(record) (checksummed); the backend decodes
  // them with FileCheckpoint::decode() when it loads.
};

/// A checkpoint backend. The public calls are not virtual: save() always runs the invariant 6
/// guard (check_monotonic) before the backend's do_save(), so no backend can skip it.
///
/// Threading: load() and save() may be called from any thread; saves are serialised here.
class Checkpoint {
 public:
  virtual ~Checkpoint() = default;
  /// The last saved record, or nullopt when none was ever saved. A record that exists but
  /// cannot be read is an error (kind terminal), never nullopt.
  Result<std::optional<CheckpointRecord>> load() { return do_load(); }
  /// Durably replaces the record. Refuses a regression (invariant 6) with kind terminal, and
  /// refuses to overwrite a record that cannot be read (the damage would be hidden); the
  /// previous record is kept in both cases.
  Status save(const CheckpointRecord& record);
  /// Backend name for logs ("memory", "local_fs").
  virtual std::string name() const = 0;
  /// Whether take_over() has work to do for this backend. A program that sees true checks
  /// that no other instance of the pipeline runs (the source's check_not_in_use()), then
  /// calls take_over(), then load().
  virtual bool takes_over() const { return false; }
  /// Ends what a killed earlier run of this pipeline left half-done on the backend, so that
  /// load() does not wait for it. Call it only when no other instance of the pipeline can be
  /// running: it may fence that instance's next save. kafka_topic: its producer's
  /// init_transactions, which aborts a save a killed run left open (a read of committed
  /// records would wait for the broker's transaction timeout otherwise). Errors as save()'s.
  /// The default: nothing to do.
  virtual Status take_over() { return ok(); }

 protected:
  /// load() itself.
  virtual Result<std::optional<CheckpointRecord>> do_load() = 0;
  /// The record save() compares the new one with: what the backend holds now. The default is
  /// do_load(); a backend that caches what it last wrote may answer from the cache.
  virtual Result<std::optional<CheckpointRecord>> current_record() { return do_load(); }
  /// Durably replaces the record. Called by save() only after the guard passed, one call at a
  /// time.
  virtual Status do_save(const CheckpointRecord& record) = 0;

 private:
  std::mutex save_mutex_;
};

/// Checks invariant 6 (a durable checkpoint never moves the stream position backwards) for a
/// replacement of `previous` by `next`, as strictly as the source allows: the PositionOrder
/// registered for the source type (position.hpp) decides. Types without a registered order and
/// a changed source_id are not compared. Error kind: terminal, naming both positions.
Status check_monotonic(const std::optional<CheckpointRecord>& previous,
                       const CheckpointRecord& next);

/// Keeps the record in memory. For tests and local development only.
class InMemoryCheckpoint final : public Checkpoint {
 public:
  std::string name() const override { return "memory"; }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override;
  Status do_save(const CheckpointRecord& record) override;

 private:
  std::mutex mutex_;
  std::optional<CheckpointRecord> record_;
};

/// One file under a directory (the "local_fs" checkpoint backend):
/// `<dir>/checkpoint-<source_id>.ckpt`. Each save writes a temporary file in the same
/// directory, fsyncs it, renames it over the old one and fsyncs the directory, so a crash
/// leaves either the old or the new record. The file carries a SHA-256 over its body; a
/// corrupt, truncated or unparsable file is an error naming the file (kind terminal) and is
/// never treated as a fresh start.
///
/// One writer at a time: open() takes an exclusive, non-blocking flock(2) on
/// `<dir>/checkpoint-<source_id>.lock` and holds it until the FileCheckpoint is destroyed, so
/// a second instance on the same directory and source_id (another process, or another
/// instance in this one) cannot open while the first lives. The lock file holds the owner's
/// pid for the error message and is left in place once a record exists (a lock dies with its
/// process, so a stale file blocks nobody). A forked child shares its parent's lock.
class FileCheckpoint final : public Checkpoint {
 public:
  /// Creates `dir` when missing and takes the writer lock. Files it creates (record, lock)
  /// get the permission bits `file_mode` (before the umask; the default keeps them the
  /// owner's). When nothing was saved by the time the FileCheckpoint is destroyed, the lock
  /// file and the directories that open() created are removed again: a run that failed to
  /// start leaves no empty state directory. Error kind: configuration
  /// (cannot create / not a directory; the lock file cannot be opened, or another writer holds
  /// it: the message names the lock file).
  static Result<std::unique_ptr<FileCheckpoint>> open(std::filesystem::path dir,
                                                      std::string source_id,
                                                      unsigned file_mode = 0600);
  ~FileCheckpoint() override;
  FileCheckpoint(const FileCheckpoint&) = delete;
  FileCheckpoint& operator=(const FileCheckpoint&) = delete;

  std::string name() const override { return "local_fs"; }
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The record file open(dir, source_id) uses, `<dir>/checkpoint-<source_id>.ckpt` (characters
  /// of `source_id` other than letters, digits, '_', '.' and '-' become '_').
  static std::filesystem::path path_for(const std::filesystem::path& dir,
                                        std::string_view source_id);
  /// The writer lock file, `<dir>/checkpoint-<source_id>.lock`.
  const std::filesystem::path& lock_path() const noexcept { return lock_path_; }

  /// Serialises a record to the file format (header line with checksum, then JSON body).
  static std::string encode(const CheckpointRecord& record);
  /// Parses the file format; `origin` names the file in errors.
  static Result<CheckpointRecord> decode(std::string_view bytes, const std::string& origin);
  /// decode() for a backend that keeps the same bytes somewhere other than a file (a table
  /// row, a Redis key): a damaged record is an error (kind terminal) that begins with
  /// `stored_as` ("checkpoint row 'x' of table ...") and ends with `remedy`, what an operator
  /// can do about it. The format has no size limit of its own (a record of several MB, such
  /// as a MySQL source's schema history, decodes).
  static Result<CheckpointRecord> decode_stored(std::string_view bytes, std::string_view stored_as,
                                                std::string_view remedy);

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override;
  Result<std::optional<CheckpointRecord>> current_record() override;
  Status do_save(const CheckpointRecord& record) override;

 private:
  FileCheckpoint(std::filesystem::path dir, std::filesystem::path path,
                 std::filesystem::path lock_path, int lock_fd, unsigned file_mode,
                 bool created_lock, std::vector<std::filesystem::path> created_dirs);
  /// load() without taking the mutex; refreshes the cache below.
  Result<std::optional<CheckpointRecord>> load_locked();

  std::filesystem::path dir_;
  std::filesystem::path path_;
  std::filesystem::path lock_path_;
  int lock_fd_;  // holds the flock; closed (releasing it) by the destructor
  unsigned file_mode_;
  // What open() created (the lock file; directories, innermost first): removed by the
  // destructor when no record was ever written (saved_ false and no record file).
  bool created_lock_;
  std::vector<std::filesystem::path> created_dirs_;
  std::atomic<bool> saved_{false};
  std::mutex mutex_;
  // What the file holds as far as this process knows (the last record saved or loaded), so
  // save() need not re-read it for the invariant 6 comparison. Guarded by mutex_; only
  // meaningful while cache_valid_ is true.
  bool cache_valid_ = false;
  std::optional<CheckpointRecord> cached_;
};

}  // namespace cppcdc
