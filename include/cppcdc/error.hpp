#pragma once
// Errors of the cppcdc public API.
//
// No exception crosses the public API: every fallible call returns `cppcdc::Result<T>`
// (see result.hpp) whose error side is an `Error`. An `Error` has one root cause (a kind, a
// category label and a message) and an optional chain of context layers describing what was
// being attempted, outermost first. The retry decision (`kind()`) is always taken from the
// root cause, so adding context can never turn a transient failure into a fatal one or the
// reverse (API guide, "Errors and what an operator sees").

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cppcdc {

/// Coarse classification that drives retries.
enum class ErrorKind {
  /// Likely to succeed when retried with backoff (connection reset, timeout, server restart).
  kTransient,
  /// Will fail the same way every time until an operator acts (authentication failed,
  /// missing table, slot invalidated, corrupt checkpoint). Never retried.
  kTerminal,
  /// The configuration is invalid. Deterministic; never retried.
  kConfiguration,
  /// A call that is not valid in the current lifecycle state, or a misuse of a token.
  kInvalidState,
  /// Input that can never be processed as it is (malformed protocol frame, oversized event).
  kInvalidData,
  /// A broken internal invariant: a bug in cppcdc.
  kInternal,
};

/// The configurable part of a pipeline a setting belongs to (Error::setting_owner()).
enum class SettingOwner {
  kNone,        ///< the error is about no particular setting
  kSource,      ///< the source's settings (PostgresSourceConfig, a source plugin's section)
  kSink,        ///< the sink's settings
  kCheckpoint,  ///< the checkpoint backend's settings
};

/// A fact about a root cause that the runtime acts on beyond its kind (Error::condition()).
/// Connectors set it where they recognise the situation; the core never reads a message to
/// find it out.
enum class ErrorCondition {
  kNone,
  /// The log position the source has to resume from no longer exists on the database (a
  /// PostgreSQL replication slot that was invalidated, binlogs purged past a MariaDB/MySQL
  /// position): changes are missing and only a new snapshot recovers. Always terminal. The
  /// health verdict reports it as StallCause::kSourcePositionLost (runtime.hpp).
  kSourcePositionLost,
  /// A checkpoint backend refused to open a record because another writer holds it (a lock
  /// file, an advisory lock, a lease): a cppcdc of the same pipeline is most likely running.
  /// Always configuration. `cppcdc preflight` tells this apart from every other open error.
  kCheckpointInUse,
};

/// "none", "source_position_lost", "checkpoint_in_use".
std::string_view to_string(ErrorCondition condition) noexcept;

/// Stable lower-case name of a kind ("transient", "terminal", ...).
std::string_view to_string(ErrorKind kind) noexcept;

/// True only for kTransient.
bool is_retryable(ErrorKind kind) noexcept;

/// Ownership and size: an Error is one pointer to what it holds (so a Result, which keeps an
/// Error's storage, stays small, and a successful Status is cheap to make); copies are deep.
/// A moved-from Error reads as an internal error with empty texts.
class Error {
 public:
  /// Root cause with an explicit category label, e.g. Error(kTerminal, "checkpoint error", ...).
  /// The category appears in report() in front of the message ("checkpoint error: disk full").
  Error(ErrorKind kind, std::string category, std::string message);
  Error(const Error& other);
  Error& operator=(const Error& other);
  Error(Error&& other) noexcept = default;
  Error& operator=(Error&& other) noexcept = default;
  ~Error();

  // Shorthands for the usual categories.
  static Error transient(std::string message);          // "transient error"
  static Error terminal(std::string message);           // "terminal error"
  static Error configuration(std::string message);      // "configuration error"
  static Error invalid_state(std::string message);      // "invalid state"
  static Error invalid_data(std::string message);       // "invalid data"
  static Error internal(std::string message);           // "internal error"
  static Error source(ErrorKind kind, std::string message);      // "source error"
  static Error checkpoint(ErrorKind kind, std::string message);  // "checkpoint error"
  static Error sink(ErrorKind kind, std::string message);        // "sink error"

  /// Wraps this error in one more layer describing what was being attempted. The returned
  /// error keeps this one's root cause and therefore its kind.
  [[nodiscard]] Error context(std::string what) const&;
  [[nodiscard]] Error context(std::string what) &&;

  /// Marks the root cause as being about one setting of `owner`: `path` is the setting's name
  /// as that part's configuration spells it, relative to it ("tables", "slot_name"; a nested
  /// setting joins its names with dots: "snapshot.mode"). Library messages name settings only
  /// this way, never by a configuration file's syntax: report() shows "path: message", and a
  /// program that reads settings from a file renders the path as its own key
  /// (report(label)); `cppcdc` shows "[source] tables: ...". The kind is unchanged.
  [[nodiscard]] Error for_setting(SettingOwner owner, std::string path) const&;
  [[nodiscard]] Error for_setting(SettingOwner owner, std::string path) &&;

  /// Tags the root cause with a condition the runtime recognises (see ErrorCondition). The
  /// kind is unchanged, and context layers added later keep the condition.
  [[nodiscard]] Error with_condition(ErrorCondition condition) const&;
  [[nodiscard]] Error with_condition(ErrorCondition condition) &&;
  /// The root cause's condition, kNone unless a connector set one.
  ErrorCondition condition() const noexcept { return data().condition; }

  /// The part whose setting the root cause is about, or kNone.
  SettingOwner setting_owner() const noexcept { return data().setting_owner; }
  /// The setting's path (see for_setting), or empty.
  const std::string& setting() const noexcept { return data().setting; }

  /// Kind of the root cause.
  ErrorKind kind() const noexcept { return data().kind; }
  bool retryable() const noexcept { return is_retryable(data().kind); }

  /// The root cause's message, without category or context.
  const std::string& message() const noexcept { return data().message; }
  const std::string& category() const noexcept { return data().category; }

  /// Context layers, outermost first (empty when none was added).
  const std::vector<std::string>& chain() const noexcept { return data().contexts; }

  /// The outermost layer only: the outermost context, or "category: message" when there is
  /// no context. Log report() instead; this hides the cause.
  std::string to_string() const;

  /// The whole chain on one line: "ctx1: ctx2: category: message", or with a setting
  /// "ctx1: ctx2: category: setting: message".
  std::string report() const;
  /// report() with `setting_label` in place of the setting's path (no label when empty).
  std::string report(std::string_view setting_label) const;

 private:
  struct Data {
    ErrorKind kind = ErrorKind::kInternal;
    std::string category;
    std::string message;
    std::vector<std::string> contexts;  // outermost first
    SettingOwner setting_owner = SettingOwner::kNone;
    std::string setting;
    ErrorCondition condition = ErrorCondition::kNone;
  };
  // What a moved-from Error reads.
  static const Data& empty() noexcept;
  const Data& data() const noexcept { return d_ ? *d_ : empty(); }
  Data& own();  // for the && modifiers: a moved-from Error gets data of its own first

  std::unique_ptr<Data> d_;
};

}  // namespace cppcdc
