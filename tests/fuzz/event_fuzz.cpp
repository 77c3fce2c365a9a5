// libFuzzer target for Event::from_json, the envelope parser. Any input must parse or give an
// invalid_data Error. An event that parses must also survive a round trip: to_json() writes
// valid JSON that parses again to an equal event and is written again byte for byte the same.
// The serialiser's per-thread tail cache (whatever the previous input left in it) must write
// what a fresh serialisation writes.

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/event.hpp"
#include "fuzz_check.hpp"

namespace {

// An event no envelope can parse to (its table name is not UTF-8): serialising it replaces
// whatever the tail cache held.
const cppcdc::Event& cache_breaker() {
  static const cppcdc::Event event = [] {
    cppcdc::Event e;
    e.table = "\xff";
    e.after = cppcdc::Row{};
    return e;
  }();
  return event;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto event = cppcdc::Event::from_json(text);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return 0;
  }
  // The accessors must cope with whatever parsed.
  (void)event->validate();
  (void)event->row_write();
  (void)event->primary_key_values();

  const std::string json = event->to_json();  // may come from the tail cache
  (void)cache_breaker().to_json();
  const std::string fresh = event->to_json();
  CPPCDC_FUZZ_CHECK(json == fresh);
  boost::system::error_code ec;
  (void)boost::json::parse(json, ec);
  CPPCDC_FUZZ_CHECK(!ec);

  auto again = cppcdc::Event::from_json(json);
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(*again == *event);
  CPPCDC_FUZZ_CHECK(again->to_json() == json);
  return 0;
}
