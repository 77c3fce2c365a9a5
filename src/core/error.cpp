#include "cppcdc/error.hpp"

#include <utility>

namespace cppcdc {

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kTransient: return "transient";
    case ErrorKind::kTerminal: return "terminal";
    case ErrorKind::kConfiguration: return "configuration";
    case ErrorKind::kInvalidState: return "invalid_state";
    case ErrorKind::kInvalidData: return "invalid_data";
    case ErrorKind::kInternal: return "internal";
  }
  return "unknown";
}

std::string_view to_string(ErrorCondition condition) noexcept {
  switch (condition) {
    case ErrorCondition::kNone: return "none";
    case ErrorCondition::kSourcePositionLost: return "source_position_lost";
    case ErrorCondition::kCheckpointInUse: return "checkpoint_in_use";
  }
  return "unknown";
}

bool is_retryable(ErrorKind kind) noexcept { return kind == ErrorKind::kTransient; }

Error::Error(ErrorKind kind, std::string category, std::string message)
    : kind_(kind), category_(std::move(category)), message_(std::move(message)) {}

Error Error::transient(std::string m) { return {ErrorKind::kTransient, "transient error", std::move(m)}; }
Error Error::terminal(std::string m) { return {ErrorKind::kTerminal, "terminal error", std::move(m)}; }
Error Error::configuration(std::string m) {
  return {ErrorKind::kConfiguration, "configuration error", std::move(m)};
}
Error Error::invalid_state(std::string m) {
  return {ErrorKind::kInvalidState, "invalid state", std::move(m)};
}
Error Error::invalid_data(std::string m) {
  return {ErrorKind::kInvalidData, "invalid data", std::move(m)};
}
Error Error::internal(std::string m) { return {ErrorKind::kInternal, "internal error", std::move(m)}; }
Error Error::source(ErrorKind k, std::string m) { return {k, "source error", std::move(m)}; }
Error Error::checkpoint(ErrorKind k, std::string m) { return {k, "checkpoint error", std::move(m)}; }
Error Error::sink(ErrorKind k, std::string m) { return {k, "sink error", std::move(m)}; }

Error Error::context(std::string what) const& {
  Error copy = *this;
  return std::move(copy).context(std::move(what));
}

Error Error::context(std::string what) && {
  contexts_.insert(contexts_.begin(), std::move(what));
  return std::move(*this);
}

Error Error::for_setting(SettingOwner owner, std::string path) const& {
  Error copy = *this;
  return std::move(copy).for_setting(owner, std::move(path));
}

Error Error::for_setting(SettingOwner owner, std::string path) && {
  setting_owner_ = path.empty() ? SettingOwner::kNone : owner;
  setting_ = setting_owner_ == SettingOwner::kNone ? std::string() : std::move(path);
  return std::move(*this);
}

Error Error::with_condition(ErrorCondition condition) const& {
  Error copy = *this;
  return std::move(copy).with_condition(condition);
}

Error Error::with_condition(ErrorCondition condition) && {
  condition_ = condition;
  return std::move(*this);
}

std::string Error::to_string() const {
  if (!contexts_.empty()) return contexts_.front();
  if (!setting_.empty()) return category_ + ": " + setting_ + ": " + message_;
  return category_ + ": " + message_;
}

std::string Error::report() const { return report(setting_); }

std::string Error::report(std::string_view setting_label) const {
  std::string out;
  for (const auto& c : contexts_) {
    out += c;
    out += ": ";
  }
  out += category_;
  out += ": ";
  if (!setting_.empty() && !setting_label.empty()) {
    out += setting_label;
    out += ": ";
  }
  out += message_;
  return out;
}

}  // namespace cppcdc
