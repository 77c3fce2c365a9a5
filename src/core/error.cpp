#include "cppcdc/error.hpp"

#include <memory>
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
    : d_(std::make_unique<Data>()) {
  d_->kind = kind;
  d_->category = std::move(category);
  d_->message = std::move(message);
}

Error::Error(const Error& other) : d_(other.d_ ? std::make_unique<Data>(*other.d_) : nullptr) {}

Error& Error::operator=(const Error& other) {
  if (this != &other) d_ = other.d_ ? std::make_unique<Data>(*other.d_) : nullptr;
  return *this;
}

Error::~Error() = default;

const Error::Data& Error::empty() noexcept {
  static const Data kEmpty;
  return kEmpty;
}

Error::Data& Error::own() {
  if (!d_) d_ = std::make_unique<Data>();
  return *d_;
}

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
  auto& contexts = own().contexts;
  contexts.insert(contexts.begin(), std::move(what));
  return std::move(*this);
}

Error Error::for_setting(SettingOwner owner, std::string path) const& {
  Error copy = *this;
  return std::move(copy).for_setting(owner, std::move(path));
}

Error Error::for_setting(SettingOwner owner, std::string path) && {
  Data& d = own();
  d.setting_owner = path.empty() ? SettingOwner::kNone : owner;
  d.setting = d.setting_owner == SettingOwner::kNone ? std::string() : std::move(path);
  return std::move(*this);
}

Error Error::with_condition(ErrorCondition condition) const& {
  Error copy = *this;
  return std::move(copy).with_condition(condition);
}

Error Error::with_condition(ErrorCondition condition) && {
  own().condition = condition;
  return std::move(*this);
}

std::string Error::to_string() const {
  const Data& d = data();
  if (!d.contexts.empty()) return d.contexts.front();
  if (!d.setting.empty()) return d.category + ": " + d.setting + ": " + d.message;
  return d.category + ": " + d.message;
}

std::string Error::report() const { return report(data().setting); }

std::string Error::report(std::string_view setting_label) const {
  const Data& d = data();
  std::string out;
  for (const auto& c : d.contexts) {
    out += c;
    out += ": ";
  }
  out += d.category;
  out += ": ";
  if (!d.setting.empty() && !setting_label.empty()) {
    out += setting_label;
    out += ": ";
  }
  out += d.message;
  return out;
}

}  // namespace cppcdc
