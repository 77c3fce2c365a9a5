// libFuzzer target for the json_schema codec's reader (make_json_schema_decoder and
// decode_json_schema_key, fixed ids 1 and 2): any bytes decode or give an invalid_data Error.
// Each input is read as it is (framing and id checks) and behind a valid value header (the
// envelope reader). A decoded event is written again, which gives the header and exactly
// to_json(), and reads back to an equal event; a second round writes the same bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/json_schema.hpp"
#include "fuzz_check.hpp"

namespace {

cppcdc::JsonSchemaCodecOptions options() {
  cppcdc::JsonSchemaCodecOptions o;
  o.schema_id = 1;
  o.key_schema_id = 2;
  return o;
}

void check(std::string_view bytes) {
  static auto decoder = cppcdc::make_json_schema_decoder(options());
  static auto encoder = cppcdc::make_json_schema_encoder(options());

  auto key = cppcdc::decode_json_schema_key(bytes, options());
  if (!key) CPPCDC_FUZZ_CHECK(key.error().kind() == cppcdc::ErrorKind::kInvalidData);

  auto event = decoder->decode(bytes);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return;
  }
  cppcdc::ByteBuffer once;
  CPPCDC_FUZZ_CHECK(encoder->encode(*event, once).has_value());
  CPPCDC_FUZZ_CHECK(once.view() == std::string("\0\0\0\0\x01", 5) + event->to_json());
  auto again = decoder->decode(once.view());
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(*again == *event);
  cppcdc::ByteBuffer twice;
  CPPCDC_FUZZ_CHECK(encoder->encode(*again, twice).has_value());
  CPPCDC_FUZZ_CHECK(once.view() == twice.view());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  std::string framed("\0\0\0\0\x01", 5);
  framed.append(bytes);
  check(framed);
  return 0;
}
