// The file sink as a plugin: `type = "file"` with `path`, `file_mode` and `codec`.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/file_mode.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class ConfiguredFileSink final : public ConfiguredSink {
 public:
  ConfiguredFileSink(std::filesystem::path path, unsigned file_mode,
                     std::shared_ptr<const ConfiguredCodec> codec)
      : path_(std::move(path)), file_mode_(file_mode), codec_(std::move(codec)) {}
  Description describe() const override {
    Description d{"file " + path_.string(),
                  {{"file_mode", detail::format_file_mode(file_mode_)}, {"codec", codec_->name()}}};
    for (auto& line : codec_->describe()) d.details.push_back(std::move(line));
    return d;
  }
  Result<std::unique_ptr<Sink>> open(const SinkOpenContext&) const override {
    auto encoder = codec_->make_encoder();
    if (!encoder) return fail(std::move(encoder).error());
    return make_file_sink(path_, std::move(*encoder), FileSinkOptions{file_mode_});
  }

 private:
  std::filesystem::path path_;
  unsigned file_mode_;
  std::shared_ptr<const ConfiguredCodec> codec_;
};

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings& settings) {
  auto path = settings.get_path("path");
  if (!path) return fail(path.error());
  if (!*path) return fail(settings.missing("path", "when type = \"file\""));
  if ((*path)->empty()) {
    return fail(settings.error("path", "expected a file name, found an empty string"));
  }
  auto mode = detail::get_file_mode(settings, "file_mode");
  if (!mode) return fail(mode.error());
  auto codec = configure_codec(settings, true);
  if (!codec) return fail(std::move(codec).error());
  return std::unique_ptr<ConfiguredSink>(
      std::make_unique<ConfiguredFileSink>(**path, *mode, std::move(*codec)));
}

}  // namespace

void register_file_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_json_codec_plugin();
    (void)register_sink_type("file", configure);
  });
}

}  // namespace cppcdc
