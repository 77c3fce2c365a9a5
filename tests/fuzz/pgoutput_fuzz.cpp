// libFuzzer target for the pgoutput decoder and the CopyBoth frame codec. Any input must
// either decode or yield an Error; a crash, sanitizer report or leak is a bug. Every message
// that decodes is also rendered with describe(), which must produce valid JSON.

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <variant>

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
  return 0;
}
