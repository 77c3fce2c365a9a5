// `codec = "debezium_json"` as a plugin; codec_options: schemas_enable, connector, database,
// typed, decimal_handling_mode, time_precision_mode, binary_handling_mode.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "core/settings_read.hpp"
#include "cppcdc/debezium.hpp"

namespace cppcdc {
namespace {

class ConfiguredDebeziumCodec final : public ConfiguredCodec {
 public:
  explicit ConfiguredDebeziumCodec(DebeziumJsonOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "debezium_json"; }
  bool json_text() const override { return true; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"debezium",
             std::string(options_.schemas_enable ? "schema and payload (schemas_enable = true)"
                                                 : "payload only (schemas_enable = false)") +
                 ", source block of " +
                 (options_.connector.empty() ? std::string("the connector each offset names")
                                             : "the " + options_.connector + " connector") +
                 (options_.database.empty() ? std::string()
                                            : ", source.db \"" + options_.database + "\"")}};
  }
  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    return make_debezium_json_encoder(options_);
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    return make_debezium_json_decoder(options_);
  }

 private:
  DebeziumJsonOptions options_;
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& s) {
  DebeziumJsonOptions o;
  CPPCDC_TRY(detail::assign_bool(s, "schemas_enable", o.schemas_enable));
  CPPCDC_TRY(detail::assign_string(s, "connector", o.connector));
  CPPCDC_TRY(detail::assign_string(s, "database", o.database));
  CPPCDC_TRY(detail::assign_bool(s, "typed", o.typed));
  CPPCDC_TRY(detail::assign_string(s, "decimal_handling_mode", o.decimal_handling_mode));
  CPPCDC_TRY(detail::assign_string(s, "time_precision_mode", o.time_precision_mode));
  CPPCDC_TRY(detail::assign_string(s, "binary_handling_mode", o.binary_handling_mode));
  if (auto st = validate(o); !st) {
    return fail(s.error(st.error().setting(), st.error().message()));
  }
  return std::unique_ptr<ConfiguredCodec>(std::make_unique<ConfiguredDebeziumCodec>(std::move(o)));
}

}  // namespace

void register_debezium_json_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("debezium_json", configure); });
}

}  // namespace cppcdc
