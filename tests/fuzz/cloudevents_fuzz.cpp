// libFuzzer target for the cloudevents codec's readers (make_cloudevents_decoder), both modes:
// any input decodes or gives an invalid_data Error. A decoded event written again reads back,
// and a second round gives the same event and the same bytes (and, in binary mode, the same
// headers).
//
// Input layout: an input whose first byte is below 0x80 is a structured JSON event, whole (so
// plain JSON files serve as corpus). A first byte from 0x80 up selects binary mode (bit 0: HTTP
// header names, else Kafka's); after it come header lines "name\tvalue\n" up to an empty line,
// then the record body.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/cloudevents.hpp"
#include "fuzz_check.hpp"

namespace {

using cppcdc::ByteBuffer;
using cppcdc::Event;
using cppcdc::HeaderBinding;
using cppcdc::RecordHeader;

void structured(std::string_view text) {
  static auto decoder = cppcdc::make_cloudevents_decoder();
  static auto encoder = cppcdc::make_cloudevents_encoder();
  auto event = decoder->decode(text);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return;
  }
  // One round may drop what the envelope reader normalises; a second changes nothing.
  ByteBuffer first;
  CPPCDC_FUZZ_CHECK(encoder->encode(*event, first).has_value());
  auto once = decoder->decode(first.view());
  CPPCDC_FUZZ_CHECK(once.has_value());
  ByteBuffer second;
  CPPCDC_FUZZ_CHECK(encoder->encode(*once, second).has_value());
  auto twice = decoder->decode(second.view());
  CPPCDC_FUZZ_CHECK(twice.has_value());
  CPPCDC_FUZZ_CHECK(*twice == *once);
  CPPCDC_FUZZ_CHECK(second.view() == first.view());
}

// Encodes `event` in binary mode: the body into `body`, the headers into `headers`.
void write_binary(cppcdc::Encoder& encoder, HeaderBinding binding, const Event& event,
                  ByteBuffer& body, std::vector<RecordHeader>& headers) {
  CPPCDC_FUZZ_CHECK(encoder.encode(event, body).has_value());
  CPPCDC_FUZZ_CHECK(encoder.append_headers(binding, event, headers).has_value());
}

void binary(HeaderBinding binding, std::string_view rest) {
  cppcdc::CloudEventsOptions options;
  options.mode = cppcdc::CloudEventsMode::kBinary;
  static auto decoder = cppcdc::make_cloudevents_decoder(options);
  static auto encoder = cppcdc::make_cloudevents_encoder(options);
  std::vector<RecordHeader> headers;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty()) break;
    const auto tab = line.find('\t');
    headers.push_back({std::string(line.substr(0, tab)), tab == std::string_view::npos
                                                             ? std::string()
                                                             : std::string(line.substr(tab + 1))});
  }
  auto event = decoder->decode_with_headers(rest, binding, headers);
  if (!event) {
    CPPCDC_FUZZ_CHECK(event.error().kind() == cppcdc::ErrorKind::kInvalidData);
    return;
  }
  ByteBuffer first;
  std::vector<RecordHeader> first_headers;
  write_binary(*encoder, binding, *event, first, first_headers);
  auto once = decoder->decode_with_headers(first.view(), binding, first_headers);
  CPPCDC_FUZZ_CHECK(once.has_value());
  ByteBuffer second;
  std::vector<RecordHeader> second_headers;
  write_binary(*encoder, binding, *once, second, second_headers);
  auto twice = decoder->decode_with_headers(second.view(), binding, second_headers);
  CPPCDC_FUZZ_CHECK(twice.has_value());
  CPPCDC_FUZZ_CHECK(*twice == *once);
  CPPCDC_FUZZ_CHECK(second.view() == first.view());
  CPPCDC_FUZZ_CHECK(second_headers == first_headers);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size == 0 || data[0] < 0x80) {
    structured(text);
  } else {
    binary((data[0] & 1) != 0 ? HeaderBinding::kHttp : HeaderBinding::kKafka, text.substr(1));
  }
  return 0;
}
