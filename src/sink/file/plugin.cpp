// The file sink as a plugin: `type = "file"` with `path` and `file_mode`.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/file_mode.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class ConfiguredFileSink final : public ConfiguredSink {
 public:
  ConfiguredFileSink(std::filesystem::path path, unsigned file_mode)
      : path_(std::move(path)), file_mode_(file_mode) {}
  Description describe() const override {
    return {"file " + path_.string(), {{"file_mode", detail::format_file_mode(file_mode_)}}};
  }
  Result<std::unique_ptr<Sink>> open(const SinkOpenContext&) const override {
    return make_file_sink(path_, nullptr, FileSinkOptions{file_mode_});
  }

 private:
  std::filesystem::path path_;
  unsigned file_mode_;
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
  return std::unique_ptr<ConfiguredSink>(std::make_unique<ConfiguredFileSink>(**path, *mode));
}

}  // namespace

void register_file_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_sink_type("file", configure); });
}

}  // namespace cppcdc
