// The JSON Schema codec: the JSON envelope (and the json codec's key object) behind the
// Confluent header, the id naming event.schema.json (event_key.schema.json) in a registry or
// given as a fixed id.

#include <boost/json.hpp>
#include <limits>
#include <map>
#include <set>

#include "core/json_write.hpp"
#include "cppcdc/json_schema.hpp"

namespace cppcdc {

Status validate(const JsonSchemaCodecOptions& options) {
  const bool fixed = options.schema_id.has_value() || options.key_schema_id.has_value();
  if (options.registry && fixed) {
    return fail(
        Error::configuration("the JSON Schema codec takes its ids from a schema registry or from "
                             "schema_id and key_schema_id, not both")
            .for_setting(SettingOwner::kSink, options.schema_id ? "codec_options.schema_id"
                                                                : "codec_options.key_schema_id"));
  }
  if (!options.registry && !fixed) {
    return fail(Error::configuration(
                    "the JSON Schema codec needs the schema ids it frames records with: a schema "
                    "registry (codec_options.schema_registry), or fixed schema_id and "
                    "key_schema_id")
                    .for_setting(SettingOwner::kSink, "codec_options.schema_registry"));
  }
  if (!options.registry) {
    for (const auto& [id, name] : {std::pair{options.schema_id, "schema_id"},
                                   std::pair{options.key_schema_id, "key_schema_id"}}) {
      if (!id) {
        return fail(Error::configuration(
                        std::string("fixed schema ids need both schema_id and key_schema_id; ") +
                        name + " is missing")
                        .for_setting(SettingOwner::kSink, std::string("codec_options.") + name));
      }
      if (*id < 0) {
        return fail(Error::configuration(std::string(name) + " must be 0 or more, not " +
                                         std::to_string(*id))
                        .for_setting(SettingOwner::kSink, std::string("codec_options.") + name));
      }
    }
  }
  return ok();
}

namespace {

const char* part_name(bool is_key) { return is_key ? "key" : "value"; }

/// The schema ids of one encoder: the fixed ones, or resolved per destination and cached.
class SchemaIds {
 public:
  explicit SchemaIds(const JsonSchemaCodecOptions& options) : options_(options) {}

  Result<std::int32_t> id_for(std::string_view destination, bool is_key) {
    if (!options_.registry) return is_key ? *options_.key_schema_id : *options_.schema_id;
    auto& cache = is_key ? key_ids_ : value_ids_;
    if (auto it = cache.find(destination); it != cache.end()) return it->second;
    const std::string topic =
        destination.empty() ? options_.default_topic : std::string(destination);
    const SubjectNameStrategy strategy = options_.registry_config.subject_name_strategy;
    if (topic.empty() && strategy != SubjectNameStrategy::kRecordName) {
      return fail(Error::configuration(
                      "the JSON Schema codec's subject name strategy \"" +
                      std::string(to_string(strategy)) +
                      "\" needs a topic, and this sink gives none; set subject_name_strategy = "
                      "\"record_name\" in codec_options.schema_registry, or use a Kafka sink")
                      .for_setting(SettingOwner::kSink,
                                   "codec_options.schema_registry.subject_name_strategy"));
    }
    const std::string subject =
        subject_name(strategy, topic, is_key ? kJsonSchemaKeyTitle : kJsonSchemaEventTitle, is_key);
    const std::string schema(is_key ? json_schema_key_schema() : json_schema_event_schema());
    auto id = resolve_schema_id(*options_.registry, options_.registry_config, subject,
                                SchemaType::kJson, schema);
    if (!id) {
      return fail(id.error().context("resolving the JSON Schema " + std::string(part_name(is_key)) +
                                     " schema id of subject \"" + subject + "\""));
    }
    cache.emplace(std::string(destination), *id);
    return *id;
  }

 private:
  const JsonSchemaCodecOptions& options_;
  std::map<std::string, std::int32_t, std::less<>> value_ids_;
  std::map<std::string, std::int32_t, std::less<>> key_ids_;
};

class JsonSchemaEncoder final : public Encoder {
 public:
  explicit JsonSchemaEncoder(JsonSchemaCodecOptions options)
      : options_(std::move(options)), valid_(validate(options_)), ids_(options_) {}

  std::string name() const override { return "json_schema"; }
  std::string_view content_type() const override {
    return "application/vnd.confluent.jsonschema+json";
  }
  bool json_text() const override { return false; }

  Status encode(const Event& event, ByteBuffer& out) override { return encode_to({}, event, out); }

  Status encode_to(std::string_view destination, const Event& event, ByteBuffer& out) override {
    if (!valid_) return fail(valid_.error());
    auto id = ids_.id_for(destination, false);
    if (!id) return fail(std::move(id).error());
    append_confluent_header(*id, out);
    detail::write_event_json(out, event);
    return ok();
  }

  Result<bool> encode_key_to(std::string_view destination, const Event& event,
                             ByteBuffer& out) override {
    if (!valid_) return fail(valid_.error());
    scratch_.clear();
    if (!append_json_key(event, scratch_)) return false;
    auto id = ids_.id_for(destination, true);
    if (!id) return fail(std::move(id).error());
    append_confluent_header(*id, out);
    out.raw(scratch_.view());
    return true;
  }

 private:
  JsonSchemaCodecOptions options_;
  Status valid_;
  SchemaIds ids_;
  ByteBuffer scratch_;
};

/// Strips the Confluent header and checks the id: equal to the fixed id, or (once per id)
/// mapped by the registry to `schema` as a JSON Schema.
class FrameCheck {
 public:
  FrameCheck(const JsonSchemaCodecOptions& options, bool is_key)
      : options_(options), valid_(validate(options)), is_key_(is_key) {}

  Result<std::string_view> payload(std::string_view record) {
    if (!valid_) return fail(valid_.error());
    auto frame = split_confluent_frame(record);
    if (!frame) return fail(std::move(frame).error());
    const auto [id, payload] = *frame;
    if (!options_.registry) {
      const std::int32_t expected = is_key_ ? *options_.key_schema_id : *options_.schema_id;
      if (id != expected) {
        return fail(Error::invalid_data(
            "the record names schema id " + std::to_string(id) + ", not the " +
            (is_key_ ? "key_schema_id " : "schema_id ") + std::to_string(expected) +
            " this decoder reads; it was written under another schema"));
      }
      return payload;
    }
    if (verified_.count(id) == 0) {
      auto registered = options_.registry->schema_by_id(id);
      if (!registered) {
        return fail(registered.error().context("reading JSON Schema id " + std::to_string(id)));
      }
      const std::string_view title = is_key_ ? kJsonSchemaKeyTitle : kJsonSchemaEventTitle;
      const std::string_view ours = is_key_ ? json_schema_key_schema() : json_schema_event_schema();
      boost::system::error_code ec1, ec2;
      const auto theirs_parsed = boost::json::parse(registered->schema, ec1);
      const auto ours_parsed = boost::json::parse(ours, ec2);
      if (registered->type != SchemaType::kJson || ec1 || ec2 || theirs_parsed != ours_parsed) {
        return fail(Error::terminal(
            "schema id " + std::to_string(id) + " of " + options_.registry->describe() +
            " is not the JSON Schema " + std::string(title) + " as this build writes it (it is " +
            (registered->type == SchemaType::kJson
                 ? std::string("another JSON Schema")
                 : "a schema of type " + std::string(to_string(registered->type))) +
            "), so the record is not read as one"));
      }
      verified_.insert(id);
    }
    return payload;
  }

 private:
  const JsonSchemaCodecOptions& options_;
  Status valid_;
  bool is_key_;
  std::set<std::int32_t> verified_;
};

class JsonSchemaDecoder final : public Decoder {
 public:
  explicit JsonSchemaDecoder(JsonSchemaCodecOptions options)
      : options_(std::move(options)), frames_(options_, false) {}
  std::string name() const override { return "json_schema"; }
  Result<Event> decode(std::string_view record) override {
    auto payload = frames_.payload(record);
    if (!payload) return fail(std::move(payload).error().context("reading a JSON Schema event"));
    auto e = Event::from_json(*payload);
    if (!e) return fail(std::move(e).error().context("reading a JSON Schema event"));
    return e;
  }

 private:
  JsonSchemaCodecOptions options_;
  FrameCheck frames_;
};

}  // namespace

std::unique_ptr<Encoder> make_json_schema_encoder(JsonSchemaCodecOptions options) {
  return std::make_unique<JsonSchemaEncoder>(std::move(options));
}

std::unique_ptr<Decoder> make_json_schema_decoder(JsonSchemaCodecOptions options) {
  return std::make_unique<JsonSchemaDecoder>(std::move(options));
}

Result<std::string> decode_json_schema_key(std::string_view record,
                                           const JsonSchemaCodecOptions& options) {
  FrameCheck frames(options, true);
  auto payload = frames.payload(record);
  if (!payload) return fail(std::move(payload).error().context("reading a JSON Schema key"));
  boost::system::error_code ec;
  const boost::json::value key = boost::json::parse(*payload, ec);
  if (ec || !key.is_object() || key.as_object().empty()) {
    return fail(Error::invalid_data(
        "reading a JSON Schema key: the payload is not a JSON object of key columns" +
        (ec ? " (" + ec.message() + ")" : std::string())));
  }
  return std::string(*payload);
}

}  // namespace cppcdc
