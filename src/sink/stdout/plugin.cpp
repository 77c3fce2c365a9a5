// The stdout sink as a plugin: `type = "stdout"`, no settings.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/sink.hpp"

namespace cppcdc {
namespace {

class ConfiguredStdoutSink final : public ConfiguredSink {
 public:
  Description describe() const override { return {"stdout", {}}; }
  Result<std::unique_ptr<Sink>> open(const SinkOpenContext&) const override { return make_stdout_sink(); }
};

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings&) {
  return std::unique_ptr<ConfiguredSink>(std::make_unique<ConfiguredStdoutSink>());
}

}  // namespace

void register_stdout_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_sink_type("stdout", configure); });
}

}  // namespace cppcdc
