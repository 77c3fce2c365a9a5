// filter: drop events by op, table, schema and content; project columns.

#include <algorithm>
#include <charconv>
#include <memory>
#include <regex>

#include "cppcdc/transforms.hpp"
#include "transform/columns.hpp"

namespace cppcdc {
namespace {

using transform_detail::column_to_json;
using transform_detail::for_each_json_match;
using transform_detail::json_text;

std::optional<double> as_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double v = 0;
  const char* begin = text.data();
  if (*begin == '+') ++begin;
  const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A plain decimal ("-12", "+3.50", ".5"; no exponent) split into sign, integer digits
// without leading zeros and fraction digits without trailing zeros.
struct Decimal {
  bool negative = false;
  std::string_view integer;
  std::string_view fraction;
};

std::optional<Decimal> as_decimal(std::string_view text) {
  Decimal d;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    d.negative = text.front() == '-';
    text.remove_prefix(1);
  }
  const auto dot = text.find('.');
  std::string_view integer = text.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  const auto digits = [](std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((integer.empty() && fraction.empty()) || !digits(integer) || !digits(fraction)) {
    return std::nullopt;
  }
  while (!integer.empty() && integer.front() == '0') integer.remove_prefix(1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  d.integer = integer;
  d.fraction = fraction;
  if (integer.empty() && fraction.empty()) d.negative = false;  // -0 is 0
  return d;
}

// Exact order of two plain decimals (no rounding through a double, so 9007199254740993 and
// ...992 stay apart); nullopt when either is not one.
std::optional<int> compare_decimals(std::string_view a, std::string_view b) {
  const auto x = as_decimal(a);
  const auto y = as_decimal(b);
  if (!x || !y) return std::nullopt;
  if (x->negative != y->negative) return x->negative ? -1 : 1;
  int magnitude = 0;
  if (x->integer.size() != y->integer.size()) {
    magnitude = x->integer.size() < y->integer.size() ? -1 : 1;
  } else if (const int c = x->integer.compare(y->integer); c != 0) {
    magnitude = c < 0 ? -1 : 1;
  } else if (const int f = x->fraction.compare(y->fraction); f != 0) {
    magnitude = f < 0 ? -1 : 1;  // "5" < "51", and trailing zeros are gone
  }
  return x->negative ? -magnitude : magnitude;
}

struct CompiledRule {
  FilterImage image = FilterImage::kAfter;
  FieldPath path;
  FilterOperator op = FilterOperator::kEq;
  std::string value;
  std::optional<double> number;
  std::optional<std::regex> regex;
  std::string text;  // "after.status eq active"
  std::unique_ptr<RuleCounter> counter = std::make_unique<RuleCounter>();

  bool test(std::string_view v) const {
    switch (op) {
      case FilterOperator::kEq: return v == value;
      case FilterOperator::kNe: return v != value;
      case FilterOperator::kContains: return v.find(value) != std::string_view::npos;
      case FilterOperator::kRegex: return std::regex_search(v.begin(), v.end(), *regex);
      default: break;
    }
    int order = 0;
    const auto exact = number ? compare_decimals(v, value) : std::nullopt;
    const auto lhs = number && !exact ? as_number(v) : std::nullopt;
    if (exact) {
      order = *exact;
    } else if (number && lhs) {
      order = *lhs < *number ? -1 : (*lhs > *number ? 1 : 0);
    } else {
      const int c = v.compare(value);
      order = c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    switch (op) {
      case FilterOperator::kLt: return order < 0;
      case FilterOperator::kLe: return order <= 0;
      case FilterOperator::kGt: return order > 0;
      case FilterOperator::kGe: return order >= 0;
      default: return false;
    }
  }

  bool evaluate(const Event& event) const {
    const Row* row = image == FilterImage::kAfter ? (event.after ? &*event.after : nullptr)
                                            : event.before.row();
    if (row == nullptr) return false;
    const ColumnValue* column = find_column(*row, path.column());
    if (column == nullptr || !column->text) return false;
    if (path.segments.size() == 1) return test(*column->text);
    if (!column->is_json) return false;
    auto json = column_to_json(*column);
    if (!json) return false;
    bool matched = false;
    for_each_json_match(*json, std::span<const std::string>(path.segments).subspan(1),
                        [&](const boost::json::value& v) {
                          if (matched) return;
                          auto t = json_text(v);
                          if (t && test(*t)) matched = true;
                        });
    return matched;
  }
};

struct Pattern {
  Glob glob;
  std::string rule;
  std::unique_ptr<RuleCounter> counter = std::make_unique<RuleCounter>();
};

std::uint32_t op_bits(const std::vector<Operation>& ops) {
  std::uint32_t bits = 0;
  for (Operation op : ops) bits |= 1u << static_cast<unsigned>(op);
  return bits;
}

class FilterAction final : public TransformAction {
 public:
  std::string_view type() const noexcept override { return "filter"; }

  static Result<std::unique_ptr<TransformAction>> create(FilterConfig config) {
    auto a = std::make_unique<FilterAction>();
    a->include_ops_ = op_bits(config.include_ops);
    for (Operation op : config.exclude_ops) {
      a->exclude_ops_.push_back({op, std::make_unique<RuleCounter>()});
    }
    const auto globs = [](const std::vector<std::string>& in, std::string_view key)
        -> Result<std::vector<Glob>> {
      std::vector<Glob> out;
      for (const auto& p : in) {
        if (p.empty()) {
          return fail(Error::configuration("an empty pattern (it would match nothing)")
                          .context(std::string(key)));
        }
        out.emplace_back(p);
      }
      return out;
    };
    auto inc_t = globs(config.include_tables, "include_tables");
    if (!inc_t) return fail(inc_t.error());
    a->include_tables_ = std::move(*inc_t);
    auto inc_s = globs(config.include_schemas, "include_schemas");
    if (!inc_s) return fail(inc_s.error());
    a->include_schemas_ = std::move(*inc_s);
    for (const auto& [list, key, out] :
         {std::tuple{&config.exclude_tables, "exclude_tables", &a->exclude_tables_},
          std::tuple{&config.exclude_schemas, "exclude_schemas", &a->exclude_schemas_}}) {
      for (const auto& p : *list) {
        if (p.empty()) {
          return fail(Error::configuration("an empty pattern (it would match nothing)")
                          .context(std::string(key)));
        }
        out->push_back(Pattern{Glob(p), std::string(key) + " " + p});
      }
    }
    for (std::size_t i = 0; i < config.filters.size(); ++i) {
      const FilterRule& r = config.filters[i];
      const auto where = "filters[" + std::to_string(i) + "]";
      auto field = parse_filter_field(r.field);
      if (!field) return fail(field.error().context(where + ".field"));
      if (r.value.empty()) {
        return fail(Error::configuration(
                        "an empty value (compare with a real value; an absent or NULL field "
                        "matches no operator)")
                        .context(where + ".value"));
      }
      CompiledRule c;
      c.image = field->first;
      c.path = std::move(field->second);
      c.op = r.op;
      c.value = r.value;
      c.number = as_number(r.value);
      if (r.op == FilterOperator::kRegex) {
        try {
          c.regex.emplace(r.value, std::regex::ECMAScript | std::regex::optimize);
        } catch (const std::regex_error& e) {
          return fail(Error::configuration("invalid regular expression \"" + r.value +
                                           "\": " + e.what())
                          .context(where + ".value"));
        }
      }
      c.text = r.field + " " + std::string(to_string(r.op)) + " " + r.value;
      a->rules_.push_back(std::move(c));
    }
    a->mode_ = config.mode;
    if (config.include_columns && !config.exclude_columns.empty()) {
      return fail(Error::configuration("set include_columns or exclude_columns, not both")
                      .context("exclude_columns"));
    }
    for (const auto& [key, list] :
         {std::pair{"include_columns", config.include_columns.value_or(std::vector<std::string>{})},
          std::pair{"exclude_columns", config.exclude_columns}}) {
      for (const auto& c : list) {
        if (c.empty()) return fail(Error::configuration("a column name is empty").context(key));
      }
    }
    a->include_columns_ = std::move(config.include_columns);
    a->exclude_columns_ = std::move(config.exclude_columns);
    return std::unique_ptr<TransformAction>(std::move(a));
  }

  Result<ActionResult> apply(Event& event, std::string_view /*stage*/) override {
    const std::uint32_t bit = 1u << static_cast<unsigned>(event.op);
    if (include_ops_ != 0 && (include_ops_ & bit) == 0) return ActionResult::kDrop;
    for (auto& [op, counter] : exclude_ops_) {
      if (op == event.op) {
        counter->hit();
        return ActionResult::kDrop;
      }
    }
    if (!include_tables_.empty() &&
        std::none_of(include_tables_.begin(), include_tables_.end(),
                     [&](const Glob& g) { return table_glob_matches(g, event); })) {
      return ActionResult::kDrop;
    }
    for (auto& p : exclude_tables_) {
      if (table_glob_matches(p.glob, event)) {
        p.counter->hit();
        return ActionResult::kDrop;
      }
    }
    const std::string_view schema = event.schema ? std::string_view(*event.schema) : "";
    if (!include_schemas_.empty() &&
        std::none_of(include_schemas_.begin(), include_schemas_.end(),
                     [&](const Glob& g) { return g.matches(schema); })) {
      return ActionResult::kDrop;
    }
    for (auto& p : exclude_schemas_) {
      if (p.glob.matches(schema)) {
        p.counter->hit();
        return ActionResult::kDrop;
      }
    }
    if (!rules_.empty()) {
      bool keep = mode_ == FilterMode::kAll;
      for (auto& r : rules_) {
        r.counter->evaluated();
        const bool matched = r.evaluate(event);
        if (matched) r.counter->hit();
        if (mode_ == FilterMode::kAll && !matched) {
          keep = false;
          break;
        }
        if (mode_ == FilterMode::kAny && matched) {
          keep = true;
          break;
        }
      }
      if (!keep) return ActionResult::kDrop;
    }
    project(event);
    return ActionResult::kKeep;
  }

  void collect_rules(std::string_view stage, std::vector<TransformRuleStats>& out) const override {
    const auto add = [&](const std::string& rule, const RuleCounter& c, bool evaluated_only,
                         std::string consequence) {
      TransformRuleStats s;
      s.transform = std::string(stage);
      s.action = "filter";
      s.kind = "filter";
      s.rule = rule;
      s.hits = c.hits.load(std::memory_order_relaxed);
      s.evaluations = c.evaluations.load(std::memory_order_relaxed);
      s.unmatched = s.hits == 0 && (!evaluated_only || s.evaluations > 0);
      s.consequence = std::move(consequence);
      out.push_back(std::move(s));
    };
    const std::string excluded =
        "rows meant to be excluded are being delivered (the pattern has excluded nothing)";
    for (const auto& [op, c] : exclude_ops_) {
      add("exclude_ops " + std::string(to_string(op)), *c, false, excluded);
    }
    for (const auto& p : exclude_tables_) add(p.rule, *p.counter, false, excluded);
    for (const auto& p : exclude_schemas_) add(p.rule, *p.counter, false, excluded);
    for (const auto& r : rules_) {
      add(r.text, *r.counter, true,
          mode_ == FilterMode::kAll
              ? "no event it was evaluated on satisfied it, so all of them were dropped; a "
                "misspelt field or value filters out the rows meant to be kept"
              : "it let no event through; rows it was meant to keep are being dropped unless "
                "another rule keeps them");
    }
  }

 private:
  void project(Event& event) const {
    if (include_columns_) {
      bool changed = false;
      const auto keep = [&](std::string_view name) {
        return std::find(include_columns_->begin(), include_columns_->end(), name) !=
               include_columns_->end();
      };
      const auto prune_row = [&](Row& row) {
        const auto before = row.size();
        row.erase(std::remove_if(row.begin(), row.end(),
                                 [&](const ColumnValue& c) { return !keep(c.name); }),
                  row.end());
        changed |= row.size() != before;
      };
      const auto prune_list = [&](std::vector<std::string>& list) {
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [&](const std::string& n) { return !keep(n); }),
                   list.end());
      };
      if (event.after) prune_row(*event.after);
      prune_list(event.unavailable_columns);
      if (Row* row = transform_detail::before_row(event)) prune_row(*row);
      if (auto* list = transform_detail::before_unavailable(event)) prune_list(*list);
      if (changed) event.shape = nullptr;
    } else {
      bool changed = false;
      for (const auto& name : exclude_columns_) {
        changed |= transform_detail::remove_column(event, name);
      }
      if (changed) event.shape = nullptr;
    }
  }

  std::uint32_t include_ops_ = 0;
  std::vector<std::pair<Operation, std::unique_ptr<RuleCounter>>> exclude_ops_;
  std::vector<Glob> include_tables_;
  std::vector<Pattern> exclude_tables_;
  std::vector<Glob> include_schemas_;
  std::vector<Pattern> exclude_schemas_;
  std::vector<CompiledRule> rules_;
  FilterMode mode_ = FilterMode::kAll;
  std::optional<std::vector<std::string>> include_columns_;
  std::vector<std::string> exclude_columns_;
};

}  // namespace

Result<std::unique_ptr<TransformAction>> make_filter(FilterConfig config) {
  return FilterAction::create(std::move(config));
}

}  // namespace cppcdc
