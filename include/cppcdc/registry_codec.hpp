#pragma once
// What the codec plugins that frame their records with a registry's schema ids (avro,
// json_schema, protobuf) share: one registry client per configured codec, made on first use
// and handed to all its encoders and decoders, and the start-up check of the subjects the
// codec writes to. Each codec derives from RegistryBackedCodec and says which schemas it
// writes (registry_schemas()); the plugins cannot share a file otherwise (a plugin sees only
// the public headers, the core and its own directory).
//
// Threading: registry_client() may be called from several threads; the client is made once.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cppcdc/plugin.hpp"
#include "cppcdc/schema_registry.hpp"

namespace cppcdc {

/// The value and key schemas a registry-backed codec writes to each topic, and how its
/// messages name them.
struct RegistryCodecSchemas {
  std::string codec_label;    ///< "Avro": "the Avro codec's registry subjects ..."
  std::string schemas_label;  ///< "Avro schemas": "... holds or accepts the Avro schemas of"
  SchemaType type = SchemaType::kAvro;
  std::string value_record;  ///< the record (message) name subjects are named after
  std::string value_schema;
  std::string key_record;
  std::string key_schema;
};

class RegistryBackedCodec : public ConfiguredCodec {
 public:
  /// No registry: no checks. Otherwise the value and key subject of every topic (one pair
  /// under record_name) go through preflight_schema_registry; a kWarn line when the topics
  /// are not known yet.
  std::vector<PreflightCheck> preflight(const std::vector<std::string>& topics) const override;
  /// The same check of the same subjects (value and key), as an error: the first subject that
  /// fails. ok without a registry or without topics.
  Status check_destinations(const std::vector<std::string>& topics) const override;

 protected:
  explicit RegistryBackedCodec(std::optional<SchemaRegistryConfig> registry)
      : registry_config_(std::move(registry)) {}

  const std::optional<SchemaRegistryConfig>& registry_config() const { return registry_config_; }
  /// The value and key subject of each of `topics` (one pair under record_name).
  std::vector<SubjectSchema> subjects_of(const std::vector<std::string>& topics) const;
  /// The codec's one client (make_schema_registry_client), made on the first call; nullptr
  /// when the codec has no registry.
  Result<std::shared_ptr<SchemaRegistryClient>> registry_client() const;
  /// What this codec writes (for the preflight).
  virtual RegistryCodecSchemas registry_schemas() const = 0;

 private:
  std::optional<SchemaRegistryConfig> registry_config_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<SchemaRegistryClient> client_;
};

}  // namespace cppcdc
