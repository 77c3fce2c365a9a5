// The JSON envelope codec: the bytes Event::to_json() writes, through the hot path's writer,
// and Event::from_json to read them back.

#include "core/json_write.hpp"
#include "cppcdc/codec.hpp"

namespace cppcdc {
namespace {

class JsonEncoder final : public Encoder {
 public:
  std::string name() const override { return "json"; }
  Status encode(const Event& event, ByteBuffer& out) override {
    detail::write_event_json(out, event);
    return ok();
  }
};

class JsonDecoder final : public Decoder {
 public:
  std::string name() const override { return "json"; }
  Result<Event> decode(std::string_view record) override { return Event::from_json(record); }
};

}  // namespace

std::unique_ptr<Encoder> make_json_encoder() { return std::make_unique<JsonEncoder>(); }
std::unique_ptr<Decoder> make_json_decoder() { return std::make_unique<JsonDecoder>(); }

}  // namespace cppcdc
