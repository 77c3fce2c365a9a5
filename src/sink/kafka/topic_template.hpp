#pragma once
// The Kafka sink's topic template: "${source_name}.${schema}.${table}" and the like, parsed
// once, rendered per event.

#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::kafka_sink {

/// The longest topic name Kafka accepts.
inline constexpr std::size_t kMaxTopicLength = 249;

class TopicTemplate {
 public:
  /// Parses `text`. Errors (kind configuration, the message only; the caller names the
  /// setting): an unknown or unterminated placeholder, an empty template.
  static Result<TopicTemplate> parse(std::string_view text);

  /// The topic for `event`. An absent schema leaves out ${schema} and one dot next to it (the
  /// one after it, or else the one before it). Characters Kafka refuses in topic names become
  /// '_'. Errors (kind invalid_data): the result is empty, "." or "..", or longer than
  /// kMaxTopicLength. `sanitized`, when given, tells whether a character was replaced;
  /// `unsanitized`, when given, receives the name before any was.
  Result<std::string> render(const Event& event, bool* sanitized = nullptr,
                             std::string* unsanitized = nullptr) const;

  /// Whether render() depends on the event (the template has a placeholder).
  bool has_placeholders() const noexcept;

  const std::string& text() const noexcept { return text_; }

 private:
  enum class Part { kLiteral, kSourceName, kSchema, kTable };
  struct Piece {
    Part part = Part::kLiteral;
    std::string literal;
  };
  std::string text_;
  std::vector<Piece> pieces_;
};

/// Whether `c` may appear in a Kafka topic name (ASCII letters, digits, '.', '_', '-').
bool is_topic_char(char c) noexcept;

/// `name` with every character Kafka refuses in a topic name replaced by '_'.
std::string sanitize_topic(std::string_view name);

}  // namespace cppcdc::kafka_sink
