#include "cppcdc/registry_codec.hpp"

#include <spdlog/spdlog.h>

#include "cppcdc/http_client.hpp"

namespace cppcdc {

Result<std::shared_ptr<SchemaRegistryClient>> RegistryBackedCodec::registry_client() const {
  if (!registry_config_) return std::shared_ptr<SchemaRegistryClient>();
  std::lock_guard lock(mutex_);
  if (!client_) {
    auto client = make_schema_registry_client(*registry_config_);
    if (!client) return fail(std::move(client).error());
    client_ = std::shared_ptr<SchemaRegistryClient>(std::move(*client));
  }
  return client_;
}

std::vector<SubjectSchema> RegistryBackedCodec::subjects_of(
    const std::vector<std::string>& topics) const {
  std::vector<SubjectSchema> subjects;
  if (!registry_config_) return subjects;
  const RegistryCodecSchemas schemas = registry_schemas();
  const auto strategy = registry_config_->subject_name_strategy;
  std::vector<std::string> names = topics;
  if (strategy == SubjectNameStrategy::kRecordName) names = {""};
  for (const auto& topic : names) {
    subjects.push_back({subject_name(strategy, topic, schemas.value_record, false), schemas.type,
                        schemas.value_schema});
    subjects.push_back({subject_name(strategy, topic, schemas.key_record, true), schemas.type,
                        schemas.key_schema});
  }
  return subjects;
}

Status RegistryBackedCodec::check_destinations(const std::vector<std::string>& topics) const {
  const std::vector<SubjectSchema> subjects = subjects_of(topics);
  if (subjects.empty()) return ok();
  auto client = registry_client();
  if (!client) return fail(std::move(client).error());
  // Said before the first request: a registry that accepts connections but never answers
  // holds this up for up to (retries + 1) x request_timeout_ms, and an operator should see why.
  spdlog::info(
      "checking {} subject(s) at the schema registry {} (request_timeout_ms {} per attempt, "
      "{} retries; a stop request ends the wait)",
      subjects.size(), http::redact_url(registry_config_->url),
      registry_config_->request_timeout_ms, registry_config_->retry.max_retries);
  return preflight_schema_registry(**client, *registry_config_, subjects);
}

std::vector<PreflightCheck> RegistryBackedCodec::preflight(
    const std::vector<std::string>& topics) const {
  using Outcome = PreflightCheck::Outcome;
  if (!registry_config_) return {};
  auto client = registry_client();
  if (!client) return {preflight_failure("the schema registry", client.error())};
  const RegistryCodecSchemas schemas = registry_schemas();
  const auto strategy = registry_config_->subject_name_strategy;
  std::vector<std::string> names = topics;
  if (strategy == SubjectNameStrategy::kRecordName) names = {""};
  if (names.empty()) {
    return {{Outcome::kWarn,
             "the " + schemas.codec_label +
                 " codec's registry subjects depend on the topic, which the template leaves "
                 "open here",
             "the subjects are checked when the first record of each topic is written"}};
  }
  const std::vector<SubjectSchema> subjects = subjects_of(names);
  const std::string what = (*client)->describe();
  if (auto st = preflight_schema_registry(**client, *registry_config_, subjects); !st) {
    return {preflight_failure(what, st.error())};
  }
  std::vector<PreflightCheck> out{{Outcome::kPass,
                                   what + " holds or accepts the " + schemas.schemas_label +
                                       " of " + std::to_string(subjects.size()) + " subjects",
                                   ""}};
  // What a lookup cannot show: Apicurio's Confluent-compatible API (seen with 2.4) registers
  // the normalized form of an Avro schema and answers with its id, whose schema then differs
  // from the one cppcdc writes, so a run refuses it at the first record of a new subject.
  if (registry_config_->normalize_schemas && schemas.codec_label == "Avro" &&
      registry_config_->url.find("/apis/ccompat/") != std::string::npos) {
    out.push_back({Outcome::kWarn,
                   "normalize_schemas = true with Apicurio's Confluent-compatible API: Apicurio "
                   "2.4 registers a normalized Avro schema under an id whose schema differs "
                   "from the one cppcdc writes, and the run stops at the first record of such "
                   "a subject",
                   "set normalize_schemas = false for Apicurio (it compares canonical content "
                   "anyway)"});
  }
  return out;
}

}  // namespace cppcdc
