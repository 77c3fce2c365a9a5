// `codec = "cloudevents"` as a plugin; codec_options: mode, source, type_prefix.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/settings_read.hpp"
#include "cppcdc/cloudevents.hpp"

namespace cppcdc {
namespace {

class ConfiguredCloudEventsCodec final : public ConfiguredCodec {
 public:
  explicit ConfiguredCloudEventsCodec(CloudEventsOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "cloudevents"; }
  bool json_text() const override { return true; }
  bool record_headers() const override { return options_.mode == CloudEventsMode::kBinary; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"cloudevents", std::string(options_.mode == CloudEventsMode::kBinary
                                            ? "binary mode (attributes as headers)"
                                            : "structured JSON") +
                                ", source " +
                                (options_.source.empty() ? std::string("/cppcdc/<source_name>")
                                                         : "\"" + options_.source + "\"") +
                                ", type " + options_.type_prefix + ".<op>"}};
  }
  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    return make_cloudevents_encoder(options_);
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    return make_cloudevents_decoder(options_);
  }

 private:
  CloudEventsOptions options_;
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& s) {
  CloudEventsOptions o;
  std::string mode = "structured";
  CPPCDC_TRY(detail::assign_string(s, "mode", mode));
  if (mode == "binary") {
    o.mode = CloudEventsMode::kBinary;
  } else if (mode != "structured") {
    return fail(s.error("mode",
                        "expected \"structured\" (one JSON event per record) or "
                        "\"binary\" (the envelope as the record, the attributes as "
                        "headers), found \"" +
                            mode + "\""));
  }
  CPPCDC_TRY(detail::assign_string(s, "source", o.source));
  CPPCDC_TRY(detail::assign_string(s, "type_prefix", o.type_prefix));
  if (auto st = validate(o); !st) {
    const std::string key =
        o.type_prefix.empty() || o.type_prefix.find_first_of(" \t\r\n") != std::string::npos
            ? "type_prefix"
            : "source";
    return fail(s.error(key, st.error().message()));
  }
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredCloudEventsCodec>(std::move(o)));
}

}  // namespace

void register_cloudevents_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("cloudevents", configure); });
}

}  // namespace cppcdc
