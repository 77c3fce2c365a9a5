#include "cppcdc/codec.hpp"

namespace cppcdc {

Status encode_lines(Encoder& encoder, std::span<const Event> events, ByteBuffer& out) {
  const std::size_t before = out.size();
  for (const Event& event : events) {
    if (auto st = encoder.encode(event, out); !st) {
      out.cur() -= out.size() - before;
      return fail(st.error().context("encoding an event of " + event.table + " as " +
                                     encoder.name()));
    }
    out.ch('\n');
  }
  return ok();
}

}  // namespace cppcdc
