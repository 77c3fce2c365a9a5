// The JSON envelope codec: the bytes Event::to_json() writes, through the hot path's writer.

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

}  // namespace

std::unique_ptr<Encoder> make_json_encoder() { return std::make_unique<JsonEncoder>(); }

}  // namespace cppcdc
