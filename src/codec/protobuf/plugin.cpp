// `codec = "protobuf"` as a plugin: bare messages, or Confluent's Protobuf framing when
// `[sink.codec_options.schema_registry]` is set.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/protobuf.hpp"

namespace cppcdc {
namespace {

class ConfiguredProtobufCodec final : public ConfiguredCodec {
 public:
  explicit ConfiguredProtobufCodec(std::optional<SchemaRegistryConfig> registry)
      : registry_config_(std::move(registry)) {}

  std::string name() const override { return "protobuf"; }
  bool json_text() const override { return false; }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    if (!registry_config_) {
      return {{"framing", "bare Protobuf messages " + std::string(protobuf_event_message_name()) +
                              " (no schema registry)"}};
    }
    auto lines = describe_schema_registry(*registry_config_);
    lines.insert(lines.begin(),
                 {"framing", "Confluent (magic byte 0, 4-byte schema id, message indexes)"});
    return lines;
  }

  Result<std::unique_ptr<Encoder>> make_encoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_protobuf_encoder(std::move(*options));
  }
  Result<std::unique_ptr<Decoder>> make_decoder() const override {
    auto options = options_();
    if (!options) return fail(std::move(options).error());
    return make_protobuf_decoder(std::move(*options));
  }

  std::vector<PreflightCheck> preflight(const std::vector<std::string>& topics) const override {
    using Outcome = PreflightCheck::Outcome;
    if (!registry_config_) return {};
    auto options = options_();
    if (!options) return {preflight_failure("the schema registry", options.error())};
    const auto strategy = registry_config_->subject_name_strategy;
    std::vector<std::string> names = topics;
    if (strategy == SubjectNameStrategy::kRecordName) names = {""};
    if (names.empty()) {
      return {{Outcome::kWarn,
               "the Protobuf codec's registry subjects depend on the topic, which the template "
               "leaves open here",
               "the subjects are checked when the first record of each topic is written"}};
    }
    std::vector<SubjectSchema> subjects;
    for (const auto& topic : names) {
      subjects.push_back({subject_name(strategy, topic, protobuf_event_message_name(), false),
                          SchemaType::kProtobuf, std::string(protobuf_event_schema())});
      subjects.push_back({subject_name(strategy, topic, protobuf_key_message_name(), true),
                          SchemaType::kProtobuf, std::string(protobuf_key_schema())});
    }
    const std::string what = options->registry->describe();
    if (auto st = preflight_schema_registry(*options->registry, *registry_config_, subjects); !st) {
      return {preflight_failure(what, st.error())};
    }
    return {{Outcome::kPass,
             what + " holds or accepts the Protobuf schemas of " + std::to_string(subjects.size()) +
                 " subjects",
             ""}};
  }

 private:
  // One client per configured codec, made on first use and shared by its encoders and decoders.
  Result<ProtobufCodecOptions> options_() const {
    ProtobufCodecOptions options;
    if (!registry_config_) return options;
    std::lock_guard lock(mutex_);
    if (!client_) {
      auto client = make_schema_registry_client(*registry_config_);
      if (!client) return fail(std::move(client).error());
      client_ = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
    }
    options.registry = client_;
    options.registry_config = *registry_config_;
    return options;
  }

  std::optional<SchemaRegistryConfig> registry_config_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<SchemaRegistryClient> client_;
};

Result<std::unique_ptr<ConfiguredCodec>> configure(const Settings& options) {
  auto registry = read_schema_registry_settings(options);
  if (!registry) return fail(std::move(registry).error());
  return std::unique_ptr<ConfiguredCodec>(
      std::make_unique<ConfiguredProtobufCodec>(std::move(*registry)));
}

}  // namespace

void register_protobuf_codec_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_codec("protobuf", configure); });
}

}  // namespace cppcdc
