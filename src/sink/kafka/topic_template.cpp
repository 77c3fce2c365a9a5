#include "sink/kafka/topic_template.hpp"

namespace cppcdc::kafka_sink {

bool is_topic_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string sanitize_topic(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (!is_topic_char(c)) c = '_';
  }
  return out;
}

Result<TopicTemplate> TopicTemplate::parse(std::string_view text) {
  if (text.empty()) {
    return fail(Error::configuration("expected a topic name or template, found an empty string"));
  }
  TopicTemplate t;
  t.text_ = std::string(text);
  std::size_t i = 0;
  std::string literal;
  while (i < text.size()) {
    if (text.compare(i, 2, "${") != 0) {
      literal += text[i++];
      continue;
    }
    const std::size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      return fail(Error::configuration("the placeholder starting at \"" +
                                       std::string(text.substr(i)) + "\" has no closing '}'"));
    }
    const std::string_view name = text.substr(i + 2, close - i - 2);
    Part part;
    if (name == "source_name") {
      part = Part::kSourceName;
    } else if (name == "schema") {
      part = Part::kSchema;
    } else if (name == "table") {
      part = Part::kTable;
    } else {
      return fail(Error::configuration("unknown placeholder ${" + std::string(name) +
                                       "}; the topic template knows ${source_name}, ${schema} "
                                       "and ${table}"));
    }
    if (!literal.empty()) t.pieces_.push_back({Part::kLiteral, std::move(literal)});
    literal.clear();
    t.pieces_.push_back({part, {}});
    i = close + 1;
  }
  if (!literal.empty()) t.pieces_.push_back({Part::kLiteral, std::move(literal)});
  return t;
}

bool TopicTemplate::has_placeholders() const noexcept {
  for (const auto& p : pieces_) {
    if (p.part != Part::kLiteral) return true;
  }
  return false;
}

Result<std::string> TopicTemplate::render(const Event& event, bool* sanitized,
                                          std::string* unsanitized) const {
  std::string out;
  bool skip_dot = false;  // an absent schema drops the dot that follows it
  for (const auto& p : pieces_) {
    std::string_view value;
    switch (p.part) {
      case Part::kLiteral:
        value = p.literal;
        break;
      case Part::kSourceName:
        value = event.source.source_name;
        break;
      case Part::kTable:
        value = event.table;
        break;
      case Part::kSchema:
        if (!event.schema || event.schema->empty()) {
          skip_dot = true;
          continue;
        }
        value = *event.schema;
        break;
    }
    if (skip_dot) {
      skip_dot = false;
      if (!value.empty() && value.front() == '.') {
        value.remove_prefix(1);
      } else if (!out.empty() && out.back() == '.') {
        out.pop_back();  // the absent schema came last (or before a non-dot): drop the dot before
      }
    }
    out += value;
  }
  if (skip_dot && !out.empty() && out.back() == '.') out.pop_back();
  if (unsanitized != nullptr) *unsanitized = out;
  bool changed = false;
  for (char& c : out) {
    if (!is_topic_char(c)) {
      c = '_';
      changed = true;
    }
  }
  if (sanitized != nullptr) *sanitized = changed;
  if (out.empty() || out == "." || out == "..") {
    return fail(Error::invalid_data("the topic template \"" + text_ + "\" gives the topic name \"" +
                                    out + "\" for table \"" + event.table +
                                    "\", which Kafka does not accept"));
  }
  if (out.size() > kMaxTopicLength) {
    return fail(Error::invalid_data("the topic template \"" + text_ + "\" gives a topic name of " +
                                    std::to_string(out.size()) + " characters for table \"" +
                                    event.table + "\"; Kafka accepts at most " +
                                    std::to_string(kMaxTopicLength)));
  }
  return out;
}

}  // namespace cppcdc::kafka_sink
