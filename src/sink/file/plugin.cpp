// The file sink as a plugin: `type = "file"` with `path`.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class ConfiguredFileSink final : public ConfiguredSink {
 public:
  explicit ConfiguredFileSink(std::filesystem::path path) : path_(std::move(path)) {}
  Description describe() const override { return {"file " + path_.string(), {}}; }
  Result<std::unique_ptr<Sink>> open() const override { return make_file_sink(path_); }

 private:
  std::filesystem::path path_;
};

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings& settings) {
  auto path = settings.get_path("path");
  if (!path) return fail(path.error());
  if (!*path) return fail(settings.missing("path", "when type = \"file\""));
  if ((*path)->empty()) {
    return fail(settings.error("path", "expected a file name, found an empty string"));
  }
  return std::unique_ptr<ConfiguredSink>(std::make_unique<ConfiguredFileSink>(**path));
}

}  // namespace

void register_file_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_sink_type("file", configure); });
}

}  // namespace cppcdc
