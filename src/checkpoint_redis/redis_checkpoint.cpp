// The "redis" checkpoint backend: cppcdc/redis_checkpoint.hpp says what it stores, how the
// lease fences a second writer and how it classifies failures.

#include "cppcdc/redis_checkpoint.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "checkpoint_redis/hiredis_util.hpp"
#include "core/fault.hpp"
#include "core/process_identity.hpp"

namespace cppcdc {
namespace {

using redisckpt::ContextPtr;
using redisckpt::ReplyPtr;
using Clock = std::chrono::steady_clock;

// The header line a record key holds when there is no record, for the save script's check.
constexpr std::string_view kNoRecord = "-";

// KEYS[1] record, KEYS[2] lease; ARGV[1] token, ARGV[2] lease ms, ARGV[3] the header line the
// writer last saw (kNoRecord: none), ARGV[4] the new record. The lease is written before the
// record, so a script that fails (out of memory, say) has not touched the record.
constexpr std::string_view kSaveScript = R"lua(
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then
  return redis.error_reply('CPPCDC_LOCKED ' .. holder)
end
local current = redis.call('GET', KEYS[1])
local header = '-'
if current then
  local newline = string.find(current, '\n', 1, true)
  header = newline and string.sub(current, 1, newline - 1) or current
end
if header ~= ARGV[3] then
  return redis.error_reply('CPPCDC_CHANGED ' .. header)
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[1], ARGV[4])
return 'OK'
)lua";

// KEYS[1] lease; ARGV[1] token, ARGV[2] lease ms. Renews this token's lease, takes a lapsed
// one again; returns 1, or the other holder's token.
constexpr std::string_view kRenewScript = R"lua(
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return holder
)lua";

// KEYS[1] lease; ARGV[1] token. Deletes the lease only while this token holds it.
constexpr std::string_view kReleaseScript = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
)lua";

/// The first line of an encoded record (what the save script compares).
std::string header_of(std::string_view bytes) {
  return std::string(bytes.substr(0, bytes.find('\n')));
}

std::string new_token() {
  std::random_device device;
  std::string nonce;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 2; ++i) {
    const unsigned value = device();
    for (int shift = 28; shift >= 0; shift -= 4) nonce += kHex[(value >> shift) & 15];
  }
  return detail::process_identity() + " nonce " + nonce;
}

/// A connection with the lease taken; used by open() and remove().
class Lease {
 public:
  Lease(const RedisCheckpointOptions& options, const std::string& id)
      : options_(options),
        record_key_(redis_checkpoint_key(options, id)),
        lock_key_(redis_lock_key(options, id)),
        token_(new_token()),
        ttl_(std::to_string(options.lock_ttl_ms)) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { release(); }

  /// Connects and takes the lease, waiting up to lock_ttl_ms (or the lease's remaining time,
  /// when longer) for a held one to lapse.
  Status acquire() {
    CPPCDC_TRY(reconnect());
    std::optional<Clock::time_point> deadline;
    std::string holder;
    for (;;) {
      auto set = run({"SET", lock_key_, token_, "NX", "PX", ttl_}, "taking the writer lease");
      if (!set) return fail(std::move(set).error());
      if ((*set)->type == REDIS_REPLY_ERROR) {
        return fail(redisckpt::reply_error(**set, options_, "taking the writer lease"));
      }
      if ((*set)->type == REDIS_REPLY_STATUS) break;  // OK; nil: held
      auto held = run({"GET", lock_key_}, "reading the writer lease");
      if (!held) return fail(std::move(held).error());
      if ((*held)->type == REDIS_REPLY_STRING) holder = redisckpt::reply_text(**held);
      auto left = run({"PTTL", lock_key_}, "reading the writer lease");
      if (!left) return fail(std::move(left).error());
      const long long remaining = (*left)->type == REDIS_REPLY_INTEGER ? (*left)->integer : 0;
      const auto now = Clock::now();
      if (!deadline) {
        const auto wait = std::max<long long>(options_.lock_ttl_ms, remaining) + 250;
        deadline = now + std::chrono::milliseconds(wait);
        // A lease left by a writer that was killed lapses only after its TTL: say why this
        // start pauses, once, instead of sitting silent for that long.
        spdlog::info(
            "redis checkpoint: waiting up to {} s for the lease on {} held by '{}' to expire (a "
            "previous run that did not stop cleanly, or another cppcdc writing this checkpoint)",
            (wait + 999) / 1000, lock_key_, holder.empty() ? std::string("?") : holder);
      }
      if (now >= *deadline) {
        return fail(
            Error::checkpoint(ErrorKind::kConfiguration,
                              "the checkpoint key '" + record_key_ + "' (" +
                                  redisckpt::server_name(options_) +
                                  ") is in use by another writer: the lease '" + lock_key_ +
                                  "' is held by '" + holder +
                                  "' and was renewed while this process waited for it; stop that "
                                  "cppcdc first (one writer per checkpoint)")
                .with_condition(ErrorCondition::kCheckpointInUse));
      }
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(100), *deadline - now));
    }
    held_ = true;
    return ok();
  }

  /// Deletes the lease while this token holds it.
  void release() {
    if (held_ && usable()) {
      (void)run({"EVAL", kReleaseScript, "1", lock_key_, token_}, "releasing the writer lease");
    }
    held_ = false;
  }

  /// Runs a command on the connection; a failed connection is dropped (the next reconnect()
  /// opens a new one).
  Result<ReplyPtr> run(const std::vector<std::string_view>& args, const std::string& what) {
    if (!context_) return fail(Error::checkpoint(ErrorKind::kTransient, what + ": not connected"));
    auto reply = redisckpt::command(context_.get(), options_, args, what);
    if (!reply) context_.reset();
    return reply;
  }

  Status reconnect() {
    if (usable()) return ok();
    auto context = redisckpt::connect(options_);
    if (!context) {
      return fail(
          std::move(context).error().context("opening the checkpoint key '" + record_key_ + "'"));
    }
    context_ = std::move(*context);
    return ok();
  }

  bool usable() const { return context_ && context_->err == 0; }

  const RedisCheckpointOptions& options() const { return options_; }
  const std::string& record_key() const { return record_key_; }
  const std::string& lock_key() const { return lock_key_; }
  const std::string& token() const { return token_; }
  const std::string& ttl() const { return ttl_; }

 private:
  RedisCheckpointOptions options_;
  std::string record_key_;
  std::string lock_key_;
  std::string token_;
  std::string ttl_;
  ContextPtr context_;
  bool held_ = false;
};

/// Renews the lease every lock_ttl_ms / 3 on a connection of its own, until stopped.
class LeaseRenewal {
 public:
  LeaseRenewal(RedisCheckpointOptions options, std::string lock_key, std::string token)
      : options_(std::move(options)), lock_key_(std::move(lock_key)), token_(std::move(token)) {
    thread_ = std::thread([this] { loop(); });
  }
  LeaseRenewal(const LeaseRenewal&) = delete;
  LeaseRenewal& operator=(const LeaseRenewal&) = delete;
  ~LeaseRenewal() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    const auto period =
        std::chrono::milliseconds(std::max<std::uint32_t>(options_.lock_ttl_ms / 3, 1));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      renew();
      lock.lock();
    }
  }

  void renew() {
    if (!context_ || context_->err != 0) {
      auto context = redisckpt::connect(options_);
      if (!context) {
        spdlog::debug("redis checkpoint: cannot renew the lease {}: {}", lock_key_,
                      context.error().report());
        context_.reset();
        return;
      }
      context_ = std::move(*context);
    }
    const std::string ttl = std::to_string(options_.lock_ttl_ms);
    auto reply = redisckpt::command(context_.get(), options_,
                                    {"EVAL", kRenewScript, "1", lock_key_, token_, ttl},
                                    "renewing the writer lease");
    if (!reply) {
      context_.reset();
      return;
    }
    if ((*reply)->type == REDIS_REPLY_STRING && !lost_) {
      lost_ = true;
      spdlog::warn(
          "redis checkpoint: the writer lease '{}' is now held by '{}' (this process's lapsed "
          "while it was paused or cut off): its next checkpoint save will be refused",
          lock_key_, redisckpt::reply_text(**reply));
    } else if ((*reply)->type == REDIS_REPLY_ERROR) {
      spdlog::warn("redis checkpoint: {}",
                   redisckpt::reply_error(**reply, options_, "renewing the writer lease").report());
    }
  }

  RedisCheckpointOptions options_;
  std::string lock_key_;
  std::string token_;
  ContextPtr context_;  // the thread's own
  bool lost_ = false;   // the thread's own
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

class RedisCheckpoint final : public Checkpoint {
 public:
  RedisCheckpoint(const RedisCheckpointOptions& options, const std::string& id)
      : lease_(options, id),
        location_("checkpoint key '" + lease_.record_key() + "' (" +
                  redisckpt::server_name(options) + ")") {}
  ~RedisCheckpoint() override {
    renewal_.reset();  // before the lease goes
    const std::lock_guard<std::mutex> lock(mutex_);
    lease_.release();
  }

  Status start() {
    CPPCDC_TRY(lease_.acquire());
    warn_without_aof();
    renewal_ = std::make_unique<LeaseRenewal>(lease_.options(), lease_.lock_key(), lease_.token());
    return ok();
  }

  std::string name() const override { return "redis"; }

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return load_locked();
  }

  Result<std::optional<CheckpointRecord>> current_record() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (cache_valid_) return cached_;
    return load_locked();
  }

  Status do_save(const CheckpointRecord& record) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::string bytes = FileCheckpoint::encode(record);
    // Never store what load() would refuse (a string that is not valid UTF-8, say).
    const auto read_back = FileCheckpoint::decode_stored(bytes, location_, "");
    if (!read_back || *read_back != record) {
      return fail(Error::checkpoint(
          ErrorKind::kInvalidData,
          "the checkpoint of source '" + record.source_id +
              "' does not read back after encoding (are all its strings valid UTF-8?); the "
              "previous record is kept"));
    }
    if (!cache_valid_) {
      auto loaded = load_locked();
      if (!loaded) return fail(std::move(loaded).error());
    }
    const std::string expected = cached_header_;
    cache_valid_ = false;  // until the outcome is known
    CPPCDC_FAULT_POINT("checkpoint.redis.before_eval");
    Status saved = eval_save(bytes, expected);
    if (!saved && !lease_.usable()) {
      // The connection went during the save: the stored header line tells whether the
      // script ran.
      const Error lost = std::move(saved).error();
      if (auto reopened = lease_.reconnect(); !reopened) {
        return fail(std::move(reopened).error().context(lost.report()));
      }
      auto stored = read_locked();
      if (!stored) return fail(std::move(stored).error());
      const std::string found = *stored ? header_of(**stored) : std::string(kNoRecord);
      if (found == header_of(bytes)) {
        remember(record, found);
        return ok();
      }
      if (found != expected) return fail(changed(found));
      saved = eval_save(bytes, expected);
    }
    if (!saved) return saved;
    CPPCDC_FAULT_POINT("checkpoint.redis.after_eval");
    remember(record, header_of(bytes));
    return ok();
  }

 private:
  Status eval_save(const std::string& bytes, const std::string& expected) {
    CPPCDC_TRY(lease_.reconnect());
    auto reply = lease_.run({"EVAL", kSaveScript, "2", lease_.record_key(), lease_.lock_key(),
                             lease_.token(), lease_.ttl(), expected, bytes},
                            "saving the checkpoint to " + location_);
    if (!reply) return fail(std::move(reply).error());
    if ((*reply)->type != REDIS_REPLY_ERROR) return ok();
    const std::string message = redisckpt::reply_text(**reply);
    // Redis may put its own prefix before a script's error.
    if (const auto at = message.find("CPPCDC_LOCKED "); at != std::string::npos) {
      return fail(Error::checkpoint(
          ErrorKind::kTerminal,
          "refusing to save " + location_ + ": the writer lease '" + lease_.lock_key() +
              "' is held by '" + message.substr(at + 14) +
              "', not this process (its lease lapsed while it was paused or cut off, and "
              "another writer took over); stop one of them"));
    }
    if (const auto at = message.find("CPPCDC_CHANGED "); at != std::string::npos) {
      return fail(changed(message.substr(at + 15)));
    }
    return fail(
        redisckpt::reply_error(**reply, lease_.options(), "saving the checkpoint to " + location_));
  }

  Error changed(const std::string& found_header) const {
    return Error::checkpoint(
        ErrorKind::kTerminal,
        "refusing to save " + location_ +
            ": another writer changed it since this one read it "
            "(it now starts '" +
            found_header.substr(0, 40) +
            "'); two cppcdc processes wrote this checkpoint; stop one of them and restart the "
            "other");
  }

  /// The stored bytes, nullopt when the key does not exist; one retry on a new connection.
  Result<std::optional<std::string>> read_locked() {
    for (int attempt = 0;; ++attempt) {
      CPPCDC_TRY(lease_.reconnect());
      auto reply = lease_.run({"GET", lease_.record_key()}, "reading " + location_);
      if (!reply) {
        if (attempt == 0) continue;
        return fail(std::move(reply).error());
      }
      if ((*reply)->type == REDIS_REPLY_NIL) return std::optional<std::string>();
      if ((*reply)->type == REDIS_REPLY_STRING) {
        return std::optional<std::string>(redisckpt::reply_text(**reply));
      }
      if ((*reply)->type == REDIS_REPLY_ERROR) {
        return fail(redisckpt::reply_error(**reply, lease_.options(), "reading " + location_));
      }
      return fail(
          Error::checkpoint(ErrorKind::kTerminal, location_ + " is not a string key; " + remedy()));
    }
  }

  Result<std::optional<CheckpointRecord>> load_locked() {
    cache_valid_ = false;
    auto stored = read_locked();
    if (!stored) return fail(std::move(stored).error());
    if (!*stored) {
      remember(std::nullopt, std::string(kNoRecord));
      return std::optional<CheckpointRecord>();
    }
    auto record = FileCheckpoint::decode_stored(**stored, location_, remedy());
    if (!record) return fail(std::move(record).error());
    remember(*record, header_of(**stored));
    return std::optional<CheckpointRecord>(std::move(*record));
  }

  void remember(std::optional<CheckpointRecord> record, std::string header) {
    cached_ = std::move(record);
    cached_header_ = std::move(header);
    cache_valid_ = true;
  }

  std::string remedy() const {
    return "restore the key from a backup, or delete it (DEL " + lease_.record_key() +
           ") to start from the source's own position, accepting a replay";
  }

  /// A warning when the server keeps no append-only file (CONFIG may be refused: then
  /// nothing is said).
  void warn_without_aof() {
    auto reply = lease_.run({"CONFIG", "GET", "appendonly"}, "reading appendonly");
    if (!reply || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) return;
    const redisReply* value = (*reply)->element[1];
    if (value->type == REDIS_REPLY_STRING && redisckpt::reply_text(*value) == "no") {
      spdlog::warn(
          "redis checkpoint: {} runs without an append-only file (appendonly no): checkpoints "
          "saved since its last RDB snapshot are lost when it restarts; run it with appendonly "
          "yes and appendfsync always or everysec",
          redisckpt::server_name(lease_.options()));
    }
  }

  Lease lease_;  // the main connection; used under mutex_
  std::string location_;
  std::unique_ptr<LeaseRenewal> renewal_;
  std::mutex mutex_;
  // What the key holds as far as this writer knows (the last record saved or loaded) and its
  // header line (kNoRecord: none). Guarded by mutex_; meaningful while cache_valid_.
  bool cache_valid_ = false;
  std::optional<CheckpointRecord> cached_;
  std::string cached_header_;
};

}  // namespace

std::string redis_checkpoint_key(const RedisCheckpointOptions& options,
                                 const std::string& checkpoint_id) {
  return options.key_prefix + "checkpoint:" + checkpoint_id;
}

std::string redis_lock_key(const RedisCheckpointOptions& options,
                           const std::string& checkpoint_id) {
  return options.key_prefix + "lock:" + checkpoint_id;
}

Result<std::unique_ptr<Checkpoint>> open_redis_checkpoint(const RedisCheckpointOptions& options,
                                                          const std::string& checkpoint_id) {
  auto checkpoint = std::make_unique<RedisCheckpoint>(options, checkpoint_id);
  CPPCDC_TRY(checkpoint->start());
  return std::unique_ptr<Checkpoint>(std::move(checkpoint));
}

Status remove_redis_checkpoint(const RedisCheckpointOptions& options,
                               const std::string& checkpoint_id) {
  Lease lease(options, checkpoint_id);
  CPPCDC_TRY(lease.acquire());
  auto deleted = lease.run({"DEL", lease.record_key()}, "deleting the checkpoint key");
  if (!deleted) return fail(std::move(deleted).error());
  if ((*deleted)->type == REDIS_REPLY_ERROR) {
    return fail(redisckpt::reply_error(**deleted, options, "deleting the checkpoint key"));
  }
  return ok();
}

}  // namespace cppcdc
