// `codec = "json"`: the envelope as JSON. It takes no codec_options.

#include "cppcdc/plugin.hpp"

#include <mutex>

namespace cppcdc {
namespace {

class ConfiguredJsonCodec final : public ConfiguredCodec {
 public:
  std::string name() const override { return "json"; }
  bool json_text() const override { return true; }
  Result<std::unique_ptr<Encoder>> make_encoder() const override { return make_json_encoder(); }
  Result<std::unique_ptr<Decoder>> make_decoder() const override { return make_json_decoder(); }
};

}  // namespace

void register_json_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)register_codec("json", [](const Settings&) -> Result<std::unique_ptr<ConfiguredCodec>> {
      return std::unique_ptr<ConfiguredCodec>(std::make_unique<ConfiguredJsonCodec>());
    });
  });
}

}  // namespace cppcdc
