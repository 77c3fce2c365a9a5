// Field paths, globs and `when` predicates.

#include <algorithm>
#include <cctype>

#include "cppcdc/transforms.hpp"

namespace cppcdc {
namespace {

constexpr std::size_t kMaxPathSegments = 64;
constexpr std::size_t kMaxPathBytes = 1024;

// Iterative glob match with one back-tracking point (the classic two-pointer algorithm):
// linear in practice, never exponential. `next` yields the text's bytes one by one.
template <class Text>
bool glob_match(std::string_view pattern, const Text& text, std::size_t size) noexcept {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t mark = 0;
  while (t < size) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text(t))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool FieldPath::has_wildcard() const noexcept {
  return std::find(segments.begin(), segments.end(), "*") != segments.end();
}

Result<FieldPath> parse_field_path(std::string_view text) {
  const auto bad = [&](std::string what) {
    return fail(Error::configuration("field path \"" +
                                     std::string(text.substr(0, std::min<std::size_t>(
                                                                    text.size(), 80))) +
                                     "\": " + what));
  };
  if (text.empty()) return bad("empty path (it could never match)");
  if (text.size() > kMaxPathBytes) {
    return bad("longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  FieldPath path;
  path.text = std::string(text);
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    const std::string_view segment =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (segment.empty()) {
      return bad("empty name at byte " + std::to_string(start) +
                 " (names are separated by single dots)");
    }
    if (path.segments.size() == kMaxPathSegments) {
      return bad("more than " + std::to_string(kMaxPathSegments) + " names");
    }
    path.segments.emplace_back(segment);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (path.segments.front() == "*") {
    return bad("the first name must be a column, not the wildcard *");
  }
  return path;
}

Result<std::pair<FilterImage, FieldPath>> parse_filter_field(std::string_view text) {
  FilterImage image;
  std::string_view rest;
  if (text.rfind("after.", 0) == 0) {
    image = FilterImage::kAfter;
    rest = text.substr(6);
  } else if (text.rfind("before.", 0) == 0) {
    image = FilterImage::kBefore;
    rest = text.substr(7);
  } else {
    return fail(Error::configuration(
        "filter field \"" + std::string(text.substr(0, std::min<std::size_t>(text.size(), 80))) +
        "\": expected \"after.<column>\" or \"before.<column>\" (a dotted path into that image)"));
  }
  auto path = parse_field_path(rest);
  if (!path) return fail(path.error());
  return std::pair<FilterImage, FieldPath>(image, std::move(*path));
}

Glob::Glob(std::string pattern) : pattern_(std::move(pattern)) {}

bool Glob::matches(std::string_view text) const noexcept {
  return glob_match(
      pattern_, [text](std::size_t i) { return text[i]; }, text.size());
}

bool Glob::matches_qualified(std::string_view schema, std::string_view table) const noexcept {
  if (schema.empty()) return matches(table);
  const std::size_t split = schema.size();
  return glob_match(
      pattern_,
      [schema, table, split](std::size_t i) {
        if (i < split) return schema[i];
        if (i == split) return '.';
        return table[i - split - 1];
      },
      schema.size() + 1 + table.size());
}

bool table_glob_matches(const Glob& pattern, const Event& event) noexcept {
  if (pattern.pattern().find('.') == std::string::npos) return pattern.matches(event.table);
  return pattern.matches_qualified(event.schema ? std::string_view(*event.schema)
                                                : std::string_view(),
                                   event.table);
}

WhenPredicate::WhenPredicate(const WhenConfig& config) {
  for (const auto& t : config.tables) tables_.emplace_back(t);
  for (const auto& s : config.schemas) schemas_.emplace_back(s);
  for (Operation op : config.ops) ops_ |= 1u << static_cast<unsigned>(op);
}

bool WhenPredicate::matches(const Event& event) const noexcept {
  if (ops_ != 0 && (ops_ & (1u << static_cast<unsigned>(event.op))) == 0) return false;
  if (!schemas_.empty()) {
    const std::string_view schema = event.schema ? std::string_view(*event.schema) : "";
    if (std::none_of(schemas_.begin(), schemas_.end(),
                     [schema](const Glob& g) { return g.matches(schema); })) {
      return false;
    }
  }
  if (!tables_.empty() &&
      std::none_of(tables_.begin(), tables_.end(),
                   [&event](const Glob& g) { return table_glob_matches(g, event); })) {
    return false;
  }
  return true;
}

std::string_view to_string(FilterOperator op) noexcept {
  switch (op) {
    case FilterOperator::kEq: return "eq";
    case FilterOperator::kNe: return "ne";
    case FilterOperator::kContains: return "contains";
    case FilterOperator::kRegex: return "regex";
    case FilterOperator::kLt: return "lt";
    case FilterOperator::kLe: return "le";
    case FilterOperator::kGt: return "gt";
    case FilterOperator::kGe: return "ge";
  }
  return "?";
}

Result<FilterOperator> parse_filter_operator(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (auto op : {FilterOperator::kEq, FilterOperator::kNe, FilterOperator::kContains,
                  FilterOperator::kRegex, FilterOperator::kLt, FilterOperator::kLe,
                  FilterOperator::kGt, FilterOperator::kGe}) {
    if (lower == to_string(op)) return op;
  }
  return fail(Error::configuration("unknown filter operator \"" + std::string(name) +
                                   "\"; expected one of eq, ne, contains, regex, lt, le, gt, ge"));
}

std::string_view to_string(MaskRule::Kind kind) noexcept {
  switch (kind) {
    case MaskRule::Kind::kPassthrough: return "passthrough";
    case MaskRule::Kind::kNull: return "null";
    case MaskRule::Kind::kRedact: return "redact";
    case MaskRule::Kind::kTruncate: return "truncate";
    case MaskRule::Kind::kUnsaltedSha256: return "unsalted_sha256";
    case MaskRule::Kind::kHmacSha256: return "hmac_sha256";
    case MaskRule::Kind::kEncrypt: return "encrypt";
    case MaskRule::Kind::kDecrypt: return "decrypt";
  }
  return "?";
}

std::string_view to_string(TransformErrorPolicy policy) noexcept {
  return policy == TransformErrorPolicy::kSkip ? "skip" : "halt";
}

// Defined here, not in the class: ConfigNode must be complete before its Table is used.
const ConfigNode::Table* ConfigNode::table() const noexcept {
  return type == Type::kTable ? &members : nullptr;
}
const ConfigNode::Array* ConfigNode::array() const noexcept {
  return type == Type::kArray ? &items : nullptr;
}
const std::string* ConfigNode::string() const noexcept {
  return type == Type::kString ? &text : nullptr;
}
const std::int64_t* ConfigNode::int_value() const noexcept {
  return type == Type::kInteger ? &integer : nullptr;
}
const double* ConfigNode::float_value() const noexcept {
  return type == Type::kFloat ? &number : nullptr;
}
const bool* ConfigNode::bool_value() const noexcept {
  return type == Type::kBoolean ? &boolean : nullptr;
}

const ConfigNode* ConfigNode::find(std::string_view key) const noexcept {
  const Table* t = table();
  if (t == nullptr) return nullptr;
  for (const auto& [k, v] : *t) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string_view ConfigNode::type_name() const noexcept {
  switch (type) {
    case Type::kNone: return "nothing";
    case Type::kString: return "a string";
    case Type::kInteger: return "an integer";
    case Type::kFloat: return "a float";
    case Type::kBoolean: return "a boolean";
    case Type::kArray: return "an array";
    case Type::kTable: return "a table";
  }
  return "an unknown value";
}

ConfigNode ConfigNode::of_string(std::string v, std::string where) {
  ConfigNode n;
  n.type = Type::kString;
  n.text = std::move(v);
  n.where = std::move(where);
  return n;
}
ConfigNode ConfigNode::of_integer(std::int64_t v, std::string where) {
  ConfigNode n;
  n.type = Type::kInteger;
  n.integer = v;
  n.where = std::move(where);
  return n;
}
ConfigNode ConfigNode::of_float(double v, std::string where) {
  ConfigNode n;
  n.type = Type::kFloat;
  n.number = v;
  n.where = std::move(where);
  return n;
}
ConfigNode ConfigNode::of_boolean(bool v, std::string where) {
  ConfigNode n;
  n.type = Type::kBoolean;
  n.boolean = v;
  n.where = std::move(where);
  return n;
}
ConfigNode ConfigNode::of_array(Array v, std::string where) {
  ConfigNode n;
  n.type = Type::kArray;
  n.items = std::move(v);
  n.where = std::move(where);
  return n;
}
ConfigNode ConfigNode::of_table(Table v, std::string where) {
  ConfigNode n;
  n.type = Type::kTable;
  n.members = std::move(v);
  n.where = std::move(where);
  return n;
}

}  // namespace cppcdc
