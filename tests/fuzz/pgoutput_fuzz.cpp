// libFuzzer target for the pgoutput decoder, the CopyBoth frame codec and the COPY text rows
// of the blocking snapshot. Any input must either decode or yield an Error; a crash,
// sanitizer report or leak is a bug. Every message that decodes is also rendered with
// describe(), which must produce valid JSON. As a COPY row, the input's fields must lie
// inside it and decode to no more bytes than they have, and the input taken as one value
// must come back unchanged from its escaped form.

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "source/postgres/copy_text.hpp"
#include "source/postgres/pgoutput.hpp"

namespace {

// Each message is decoded twice: as outside a stream block, and as inside one (protocol v2:
// changes then carry an xid after their tag).
void check_message(std::span<const std::uint8_t> bytes, bool in_stream) {
  std::uint32_t xid = 0;
  auto message = cppcdc::pg::decode_pgoutput(bytes, in_stream ? &xid : nullptr);
  if (!message) {
    // Errors must name an offset.
    if (message.error().message().find("at offset ") == std::string::npos) std::abort();
    return;
  }
  const std::string line = cppcdc::pg::describe(*message);
  boost::system::error_code ec;
  (void)boost::json::parse(line, ec);
  if (ec || line.find('\n') != std::string::npos) std::abort();
}

void check_copy_row(std::string_view input) {
  std::vector<cppcdc::pg::CopyField> fields;
  cppcdc::pg::split_copy_row(input, fields);
  std::string value;
  for (const auto& f : fields) {
    if (f.raw.data() < input.data() || f.raw.data() + f.raw.size() > input.data() + input.size()) {
      std::abort();
    }
    cppcdc::pg::unescape_copy_field(f.raw, value);
    if (value.size() > f.raw.size()) std::abort();
  }
  // The input as one value, escaped the way COPY TO escapes it.
  std::string line;
  for (const char c : input) {
    switch (c) {
      case '\\': line += "\\\\"; break;
      case '\b': line += "\\b"; break;
      case '\f': line += "\\f"; break;
      case '\n': line += "\\n"; break;
      case '\r': line += "\\r"; break;
      case '\t': line += "\\t"; break;
      case '\v': line += "\\v"; break;
      default: line += c;
    }
  }
  line += '\n';
  cppcdc::pg::split_copy_row(line, fields);
  if (fields.size() != 1 || fields[0].null) std::abort();
  cppcdc::pg::copy_field_text(fields[0], value);
  if (value != input) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  auto frame = cppcdc::pg::decode_copy_frame(input);
  if (frame) {
    if (const auto* x = std::get_if<cppcdc::pg::XLogData>(&*frame)) {
      if (x->payload.data() + x->payload.size() != data + size) std::abort();
      check_message(x->payload, false);
      check_message(x->payload, true);
    }
  }
  check_message(input, false);
  check_message(input, true);
  check_copy_row(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
