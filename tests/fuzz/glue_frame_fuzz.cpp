// libFuzzer target for the Glue framing's readers (split_glue_frame, glue_payload,
// detect_wire_format, GlueAvroDecoder) over an in-memory registry holding the envelope and key
// schemas as "cdc-events" and "cdc-events-key" (the golden files' UUIDs). Any bytes decode or
// give an Error: invalid_data for a malformed frame or datum, terminal only for a UUID the
// registry does not map to the schema read. A frame that splits is its header and payload
// again byte for byte, and detect_wire_format calls it Glue; a decoded event is written again
// with the frame's compression and reads back equal, and a second write gives the same bytes.
// Each input is also tried as the payload behind a valid value header, plain and zlib-
// compressed, and behind a valid key header.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cppcdc/avro.hpp"
#include "cppcdc/glue.hpp"
#include "fuzz_check.hpp"

namespace {

using cppcdc::ErrorKind;
using cppcdc::GlueCompression;

struct Fixture {
  std::shared_ptr<cppcdc::InMemoryGlueSchemaRegistry> registry =
      std::make_shared<cppcdc::InMemoryGlueSchemaRegistry>();
  std::unique_ptr<cppcdc::GlueAvroEncoder> plain;
  std::unique_ptr<cppcdc::GlueAvroEncoder> zlib;
  std::unique_ptr<cppcdc::GlueAvroDecoder> decoder;
  cppcdc::GlueSchemaVersionId value_id;
  cppcdc::GlueSchemaVersionId key_id;

  Fixture() {
    plain =
        std::move(*cppcdc::GlueAvroEncoder::create(registry, cppcdc::GlueAvroConfig("cdc-events")));
    zlib = std::move(*cppcdc::GlueAvroEncoder::create(
        registry, cppcdc::GlueAvroConfig("cdc-events").with_compression(GlueCompression::kZlib)));
    CPPCDC_FUZZ_CHECK(plain->resolve().has_value());
    CPPCDC_FUZZ_CHECK(zlib->resolve().has_value());
    value_id = *plain->value_schema_version();
    key_id = *plain->key_schema_version();
    decoder = std::make_unique<cppcdc::GlueAvroDecoder>(registry, 1u << 20);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// Terminal is allowed only where the frame names a version that is not the schema read.
void check_error(const cppcdc::Error& e, std::string_view bytes, bool is_key) {
  if (e.kind() == ErrorKind::kInvalidData) return;
  CPPCDC_FUZZ_CHECK(e.kind() == ErrorKind::kTerminal);
  auto frame = cppcdc::split_glue_frame(bytes);
  CPPCDC_FUZZ_CHECK(frame.has_value());
  const auto& wanted = is_key ? fixture().key_id : fixture().value_id;
  CPPCDC_FUZZ_CHECK(frame->schema_version_id != wanted);
}

void check(std::string_view bytes) {
  Fixture& f = fixture();
  auto frame = cppcdc::split_glue_frame(bytes);
  const bool looks_glue = cppcdc::detect_wire_format(bytes) == cppcdc::WireFormat::kGlue;
  CPPCDC_FUZZ_CHECK(looks_glue == frame.has_value());
  if (!frame) {
    CPPCDC_FUZZ_CHECK(frame.error().kind() == ErrorKind::kInvalidData);
  } else {
    const auto header = cppcdc::glue_header(frame->compression, frame->schema_version_id);
    CPPCDC_FUZZ_CHECK(std::string(header.data(), header.size()) + std::string(frame->payload) ==
                      bytes);
    auto payload = cppcdc::glue_payload(*frame, 1u << 20);
    if (!payload) CPPCDC_FUZZ_CHECK(payload.error().kind() == ErrorKind::kInvalidData);
    auto id = cppcdc::GlueSchemaVersionId::parse(frame->schema_version_id.to_string());
    CPPCDC_FUZZ_CHECK(id.has_value() && *id == frame->schema_version_id);
  }

  auto key = f.decoder->decode_key(bytes);
  if (!key) check_error(key.error(), bytes, true);

  auto event = f.decoder->decode(bytes);
  if (!event) {
    check_error(event.error(), bytes, false);
    return;
  }
  auto& encoder = frame->compression == GlueCompression::kZlib ? f.zlib : f.plain;
  cppcdc::ByteBuffer once;
  CPPCDC_FUZZ_CHECK(encoder->encode(*event, once).has_value());
  auto again = f.decoder->decode(once.view());
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(*again == *event);
  cppcdc::ByteBuffer twice;
  CPPCDC_FUZZ_CHECK(encoder->encode(*again, twice).has_value());
  CPPCDC_FUZZ_CHECK(once.view() == twice.view());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Fixture& f = fixture();
  check(bytes);
  cppcdc::ByteBuffer framed;
  cppcdc::append_glue_frame(GlueCompression::kNone, f.value_id, bytes, framed);
  check(framed.view());
  framed.clear();
  cppcdc::append_glue_frame(GlueCompression::kZlib, f.value_id, bytes, framed);
  check(framed.view());
  framed.clear();
  cppcdc::append_glue_frame(GlueCompression::kNone, f.key_id, bytes, framed);
  check(framed.view());
  return 0;
}
