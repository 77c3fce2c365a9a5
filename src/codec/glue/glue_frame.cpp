// Glue's wire format: the 18-byte header, the zlib payload, schema version UUIDs, and the
// guess at a record's framing.

#include <zlib.h>

#include <cstring>

#include "cppcdc/glue.hpp"

namespace cppcdc {

std::string_view to_string(GlueCompression compression) noexcept {
  return compression == GlueCompression::kZlib ? "zlib" : "none";
}

Result<GlueCompression> parse_glue_compression(std::string_view text) {
  if (text == "none") return GlueCompression::kNone;
  if (text == "zlib") return GlueCompression::kZlib;
  return fail(
      Error::configuration("expected \"none\" or \"zlib\", found \"" + std::string(text) + "\""));
}

std::string GlueSchemaVersionId::to_string() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

Result<GlueSchemaVersionId> GlueSchemaVersionId::parse(std::string_view text) {
  auto bad = [&] {
    return fail(Error::invalid_data("\"" + std::string(text.substr(0, 64)) +
                                    "\" is not a UUID (8-4-4-4-12 hexadecimal digits)"));
  };
  if (text.size() != 36) return bad();
  GlueSchemaVersionId id;
  std::size_t out = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return bad();
      ++i;
      continue;
    }
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = nibble(text[i]);
    const int lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return bad();
    id.bytes[out++] = static_cast<unsigned char>(hi << 4 | lo);
    i += 2;
  }
  return id;
}

std::array<char, kGlueHeaderSize> glue_header(GlueCompression compression,
                                              const GlueSchemaVersionId& id) noexcept {
  std::array<char, kGlueHeaderSize> h{};
  h[0] = static_cast<char>(kGlueHeaderVersion);
  h[1] = static_cast<char>(compression == GlueCompression::kZlib ? kGlueCompressionZlibByte
                                                                 : kGlueCompressionNoneByte);
  std::memcpy(h.data() + 2, id.bytes.data(), id.bytes.size());
  return h;
}

void append_glue_frame(GlueCompression compression, const GlueSchemaVersionId& id,
                       std::string_view payload, ByteBuffer& out) {
  const auto header = glue_header(compression, id);
  out.raw({header.data(), header.size()});
  if (compression == GlueCompression::kNone) {
    out.raw(payload);
    return;
  }
  uLongf size = compressBound(static_cast<uLong>(payload.size()));
  out.need(size);
  // compress2 into reserved room cannot fail: the bound is zlib's own worst case, and the
  // input is in memory.
  const int rc = compress2(reinterpret_cast<Bytef*>(out.cur()), &size,
                           reinterpret_cast<const Bytef*>(payload.data()),
                           static_cast<uLong>(payload.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) throw std::bad_alloc();  // Z_MEM_ERROR is the only possible failure
  out.cur() += size;
}

Result<GlueFrame> split_glue_frame(std::string_view record) {
  if (record.size() < kGlueHeaderSize) {
    return fail(Error::invalid_data("a Glue-framed record has at least " +
                                    std::to_string(kGlueHeaderSize) + " bytes; this one has " +
                                    std::to_string(record.size())));
  }
  const auto version = static_cast<unsigned char>(record[0]);
  if (version != kGlueHeaderVersion) {
    return fail(Error::invalid_data(
        "the record does not start with Glue's header version byte 3 (found " +
        std::to_string(version) +
        (version == 0 ? ", the Confluent magic byte: is this a Confluent-framed record?)" : ")")));
  }
  GlueFrame frame;
  const auto compression = static_cast<unsigned char>(record[1]);
  if (compression == kGlueCompressionZlibByte) {
    frame.compression = GlueCompression::kZlib;
  } else if (compression != kGlueCompressionNoneByte) {
    return fail(Error::invalid_data("the Glue header's compression byte is " +
                                    std::to_string(compression) + "; it is 0 (none) or 5 (zlib)"));
  }
  std::memcpy(frame.schema_version_id.bytes.data(), record.data() + 2, 16);
  frame.payload = record.substr(kGlueHeaderSize);
  return frame;
}

Result<std::string> glue_payload(const GlueFrame& frame, std::size_t max_size) {
  if (frame.compression == GlueCompression::kNone) return std::string(frame.payload);
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw std::bad_alloc();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(frame.payload.data()));
  z.avail_in = static_cast<uInt>(frame.payload.size());
  std::string out;
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t produced = sizeof chunk - z.avail_out;
    if (out.size() + produced > max_size) {
      inflateEnd(&z);
      return fail(Error::invalid_data("the Glue payload inflates to more than " +
                                      std::to_string(max_size) + " bytes"));
    }
    out.append(chunk, produced);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // input ends inside the stream
  }
  const std::size_t left = z.avail_in;
  const char* message = z.msg;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return fail(Error::invalid_data(
        std::string("the Glue payload is marked zlib but does not inflate: ") +
        (rc == Z_BUF_ERROR ? "the zlib stream is truncated"
                           : (message != nullptr ? message : "zlib error " + std::to_string(rc)))));
  }
  if (left != 0) {
    return fail(Error::invalid_data(std::to_string(left) +
                                    " bytes follow the end of the Glue payload's zlib stream"));
  }
  return out;
}

std::string_view to_string(WireFormat format) noexcept {
  switch (format) {
    case WireFormat::kConfluent:
      return "confluent";
    case WireFormat::kGlue:
      return "glue";
    case WireFormat::kBare:
      break;
  }
  return "bare";
}

WireFormat detect_wire_format(std::string_view record) noexcept {
  if (record.size() >= 5 && record[0] == '\0') return WireFormat::kConfluent;
  if (record.size() >= kGlueHeaderSize &&
      static_cast<unsigned char>(record[0]) == kGlueHeaderVersion) {
    const auto c = static_cast<unsigned char>(record[1]);
    if (c == kGlueCompressionNoneByte || c == kGlueCompressionZlibByte) return WireFormat::kGlue;
  }
  return WireFormat::kBare;
}

}  // namespace cppcdc
