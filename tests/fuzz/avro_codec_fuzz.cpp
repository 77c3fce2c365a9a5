// libFuzzer target for the Avro codec's reader (make_avro_decoder, decode_avro_key): any bytes
// decode or give an invalid_data Error. A decoded event is written again and read back to an
// equal event, and writing that one gives the same bytes (a fixpoint after one round: the
// reader accepts an op in any case, the writer writes it in lower case).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/avro.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static auto decoder = cppcdc::make_avro_decoder();
  static auto encoder = cppcdc::make_avro_encoder();

  auto key = cppcdc::decode_avro_key(bytes);
  if (!key) CPPCDC_FUZZ_CHECK(key.error().kind() == cppcdc::ErrorKind::kInvalidData);

  auto event = decoder->decode(bytes);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return 0;
  }
  (void)event->validate();
  cppcdc::ByteBuffer once;
  CPPCDC_FUZZ_CHECK(encoder->encode(*event, once).has_value());
  auto again = decoder->decode(once.view());
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(*again == *event);
  cppcdc::ByteBuffer twice;
  CPPCDC_FUZZ_CHECK(encoder->encode(*again, twice).has_value());
  CPPCDC_FUZZ_CHECK(once.view() == twice.view());
  return 0;
}
