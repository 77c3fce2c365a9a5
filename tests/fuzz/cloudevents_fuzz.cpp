// libFuzzer target for the cloudevents codec's reader (make_cloudevents_decoder): any input
// decodes or gives an invalid_data Error. A decoded event written again reads back, and a
// second round gives the same event and the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/cloudevents.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static auto decoder = cppcdc::make_cloudevents_decoder();
  static auto encoder = cppcdc::make_cloudevents_encoder();
  auto event = decoder->decode(text);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return 0;
  }
  // One round may drop what the envelope reader normalises; a second changes nothing.
  cppcdc::ByteBuffer first;
  CPPCDC_FUZZ_CHECK(encoder->encode(*event, first).has_value());
  auto once = decoder->decode(first.view());
  CPPCDC_FUZZ_CHECK(once.has_value());
  cppcdc::ByteBuffer second;
  CPPCDC_FUZZ_CHECK(encoder->encode(*once, second).has_value());
  auto twice = decoder->decode(second.view());
  CPPCDC_FUZZ_CHECK(twice.has_value());
  CPPCDC_FUZZ_CHECK(*twice == *once);
  CPPCDC_FUZZ_CHECK(second.view() == first.view());
  return 0;
}
