// libFuzzer target for the debezium_json codec's reader (make_debezium_json_decoder): any input
// decodes or gives an invalid_data Error. A decoded event is written again (both forms) and
// read back; one more round changes nothing (the first round may drop what Debezium's shape
// cannot say, such as a non-string column value's json-ness without a schema).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/debezium.hpp"
#include "fuzz_check.hpp"

namespace {

/// Options with schemas_enable, connector and database set, the rest at their defaults.
cppcdc::DebeziumJsonOptions dbz_options(bool schemas, std::string connector = "",
                                        std::string database = "") {
  cppcdc::DebeziumJsonOptions o;
  o.schemas_enable = schemas;
  o.connector = std::move(connector);
  o.database = std::move(database);
  return o;
}

cppcdc::Event round(cppcdc::Encoder& encoder, cppcdc::Decoder& decoder, const cppcdc::Event& e) {
  cppcdc::ByteBuffer out;
  CPPCDC_FUZZ_CHECK(encoder.encode(e, out).has_value());
  auto back = decoder.decode(out.view());
  CPPCDC_FUZZ_CHECK(back.has_value());
  return *back;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static auto decoder = cppcdc::make_debezium_json_decoder();
  auto event = decoder->decode(text);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return 0;
  }
  (void)event->validate();
  for (const bool schemas : {false, true}) {
    auto encoder = cppcdc::make_debezium_json_encoder(dbz_options(schemas, "", ""));
    const cppcdc::Event first = round(*encoder, *decoder, *event);
    const cppcdc::Event second = round(*encoder, *decoder, first);
    CPPCDC_FUZZ_CHECK(second == first);
    cppcdc::ByteBuffer key;
    CPPCDC_FUZZ_CHECK(encoder->encode_key(first, key).has_value());
  }
  return 0;
}
