// libFuzzer target for the path parser of the filter and mask actions (parse_field_path,
// parse_filter_field) and the walk of a path through a JSON column value.
//
// Input: a path, optionally followed by a newline and the JSON text of a jsonb column. A path
// that parses has non-empty names that joined with dots give the input back, and never starts
// with the wildcard; one that does not is a configuration error. Then a mask (redact) and a
// filter (eq) on that path run over an event whose column "c" holds the JSON: neither fails,
// the event still validates, and a column still marked JSON still parses as JSON.

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/transforms.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cppcdc;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view path_text = input.substr(0, newline);
  const std::string_view json_text =
      newline == std::string_view::npos ? std::string_view("{}") : input.substr(newline + 1);

  auto path = parse_field_path(path_text);
  if (!path) {
    CPPCDC_FUZZ_CHECK(path.error().kind() == ErrorKind::kConfiguration);
  } else {
    std::string joined;
    for (const auto& s : path->segments) {
      CPPCDC_FUZZ_CHECK(!s.empty());
      CPPCDC_FUZZ_CHECK(s.find('.') == std::string::npos);
      joined += (joined.empty() ? "" : ".") + s;
    }
    CPPCDC_FUZZ_CHECK(joined == path_text);
    CPPCDC_FUZZ_CHECK(path->segments.front() != "*");
  }
  auto field = parse_filter_field(path_text);
  if (field) {
    CPPCDC_FUZZ_CHECK(path_text.rfind("after.", 0) == 0 || path_text.rfind("before.", 0) == 0);
  }
  if (!path) return 0;

  boost::system::error_code ec;
  boost::json::parse(json_text, ec);
  const bool json_ok = !ec;
  Event event;
  event.table = "t";
  event.schema = "public";
  event.source.source_name = "fuzz";
  event.primary_key = std::vector<std::string>{"id"};
  event.after = Row{ColumnValue{"id", "1", false},
                    ColumnValue{"c", std::string(json_ok ? json_text : "{}"), true}};

  MaskConfig mask;
  mask.rules.emplace_back(std::string(path_text), MaskRule::redact("x"));
  auto mask_action = make_mask(std::move(mask));
  CPPCDC_FUZZ_CHECK(mask_action.has_value());
  FilterConfig filter;
  filter.filters.push_back({"after." + std::string(path_text), FilterOperator::kEq, "x"});
  auto filter_action = make_filter(std::move(filter));
  CPPCDC_FUZZ_CHECK(filter_action.has_value());

  if (path->column() == "id") return 0;  // masking the key is the key guard's business
  auto masked = (*mask_action)->apply(event, "fuzz");
  CPPCDC_FUZZ_CHECK(masked.has_value());
  CPPCDC_FUZZ_CHECK(event.validate().has_value());
  for (const auto& c : *event.after) {
    if (!c.is_json || !c.text) continue;
    boost::json::parse(*c.text, ec);
    CPPCDC_FUZZ_CHECK(!ec);
  }
  auto filtered = (*filter_action)->apply(event, "fuzz");
  CPPCDC_FUZZ_CHECK(filtered.has_value());
  return 0;
}
