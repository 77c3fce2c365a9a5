#pragma once
// Errors of the cppcdc public API.
//
// No exception crosses the public API: every fallible call returns `cppcdc::Result<T>`
// (see result.hpp) whose error side is an `Error`. An `Error` has one root cause (a kind, a
// category label and a message) and an optional chain of context layers describing what was
// being attempted, outermost first. The retry decision (`kind()`) is always taken from the
// root cause, so adding context can never turn a transient failure into a fatal one or the
// reverse (API guide, "Errors and what an operator sees").

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

/// Stable lower-case name of a kind ("transient", "terminal", ...).
std::string_view to_string(ErrorKind kind) noexcept;

/// True only for kTransient.
bool is_retryable(ErrorKind kind) noexcept;

class Error {
 public:
  /// Root cause with an explicit category label, e.g. Error(kTerminal, "checkpoint error", ...).
  /// The category appears in report() in front of the message ("checkpoint error: disk full").
  Error(ErrorKind kind, std::string category, std::string message);

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

  /// Kind of the root cause.
  ErrorKind kind() const noexcept { return kind_; }
  bool retryable() const noexcept { return is_retryable(kind_); }

  /// The root cause's message, without category or context.
  const std::string& message() const noexcept { return message_; }
  const std::string& category() const noexcept { return category_; }

  /// Context layers, outermost first (empty when none was added).
  const std::vector<std::string>& chain() const noexcept { return contexts_; }

  /// The outermost layer only: the outermost context, or "category: message" when there is
  /// no context. Log report() instead; this hides the cause.
  std::string to_string() const;

  /// The whole chain on one line: "ctx1: ctx2: category: message".
  std::string report() const;

 private:
  ErrorKind kind_;
  std::string category_;
  std::string message_;
  std::vector<std::string> contexts_;  // outermost first
};

}  // namespace cppcdc
