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

void check_message(std::span<const std::uint8_t> bytes) {
  auto message = cppcdc::pg::decode_pgoutput(bytes);
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
      check_message(x->payload);
    }
  }
  check_message(input);
  return 0;
}
