// libFuzzer target for the Protobuf codec's readers (make_protobuf_decoder, decode_protobuf_key,
// read_protobuf_message_index): any bytes decode or give an invalid_data Error. A decoded event
// is written again and read back to an equal event, and writing that one gives the same bytes
// (a fixpoint after one round: the reader drops unknown fields and accepts an op in any case).
// A message-index array that reads is written again and reads back to the same path, and what
// follows it is the rest of the input.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/protobuf.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static auto decoder = cppcdc::make_protobuf_decoder();
  static auto encoder = cppcdc::make_protobuf_encoder();

  auto indexes = cppcdc::read_protobuf_message_index(bytes);
  if (!indexes) {
    CPPCDC_FUZZ_CHECK(indexes.error().kind() == cppcdc::ErrorKind::kInvalidData);
  } else {
    const auto& [path, rest] = *indexes;
    CPPCDC_FUZZ_CHECK(!path.empty());
    CPPCDC_FUZZ_CHECK(rest.data() + rest.size() == bytes.data() + bytes.size());
    std::string written;
    cppcdc::append_protobuf_message_index(path, written);
    auto again = cppcdc::read_protobuf_message_index(written);
    CPPCDC_FUZZ_CHECK(again.has_value());
    CPPCDC_FUZZ_CHECK(again->first == path);
    CPPCDC_FUZZ_CHECK(again->second.empty());
  }

  auto key = cppcdc::decode_protobuf_key(bytes);
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
