// libFuzzer target for MySQL binary JSON (source/mysql/json_binary.cpp). Any input must convert
// or yield an invalid_data error that leaves the output as it was; what converts must be JSON
// (Boost.JSON parses it; strings may carry invalid UTF-8 as the server stored it).

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_check.hpp"
#include "source/mysql/json_binary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string out = "prefix";
  auto st = cppcdc::mysql::json_binary_to_text(std::span<const std::uint8_t>(data, size), out);
  if (!st) {
    CPPCDC_FUZZ_CHECK(st.error().kind() == cppcdc::ErrorKind::kInvalidData);
    CPPCDC_FUZZ_CHECK(out == "prefix");
    return 0;
  }
  CPPCDC_FUZZ_CHECK(out.compare(0, 6, "prefix") == 0);
  boost::json::parse_options opt;
  opt.allow_invalid_utf8 = true;
  opt.max_depth = 256;
  boost::system::error_code ec;
  (void)boost::json::parse(std::string_view(out).substr(6), ec, {}, opt);
  CPPCDC_FUZZ_CHECK(!ec);
  return 0;
}
