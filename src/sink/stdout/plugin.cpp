// The stdout sink as a plugin: `type = "stdout"`; its one setting is the codec.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class ConfiguredStdoutSink final : public ConfiguredSink {
 public:
  explicit ConfiguredStdoutSink(std::shared_ptr<const ConfiguredCodec> codec)
      : codec_(std::move(codec)) {}
  Description describe() const override {
    Description d{"stdout", {{"codec", codec_->name()}}};
    for (auto& line : codec_->describe()) d.details.push_back(std::move(line));
    return d;
  }
  Result<std::unique_ptr<Sink>> open(const SinkOpenContext&) const override {
    auto encoder = codec_->make_encoder();
    if (!encoder) return fail(std::move(encoder).error());
    return make_stdout_sink(std::move(*encoder));
  }

 private:
  std::shared_ptr<const ConfiguredCodec> codec_;
};

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings& settings) {
  auto codec = configure_codec(settings, true);
  if (!codec) return fail(std::move(codec).error());
  return std::unique_ptr<ConfiguredSink>(std::make_unique<ConfiguredStdoutSink>(std::move(*codec)));
}

}  // namespace

void register_stdout_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_json_codec_plugin();
    (void)register_sink_type("stdout", configure);
  });
}

}  // namespace cppcdc
