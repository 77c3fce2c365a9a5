// GlueAvroEncoder and GlueAvroDecoder: the avro codec's bare datums (make_avro_encoder and
// make_avro_decoder, not a copy of them) inside Glue's framing.

#include <boost/json.hpp>

#include "cppcdc/avro.hpp"
#include "cppcdc/glue.hpp"

namespace cppcdc {

std::string GlueAvroConfig::effective_key_schema_name() const {
  return key_schema_name ? *key_schema_name : schema_name + "-key";
}

namespace {

// Glue's rule for registry and schema names: 1 to 255 of letters, digits and -_$#. ; the
// service enforces it, this gives the error at load instead of on the first record.
Status check_name(std::string_view field, const std::string& name) {
  if (name.empty() || name.size() > 255) {
    return fail(Error::configuration(
        "Glue " + std::string(field) + ": " +
        (name.empty() ? std::string("required (not empty)")
                      : "at most 255 characters, found " + std::to_string(name.size()))));
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '$' || c == '#' || c == '.';
    if (!ok) {
      return fail(Error::configuration(
          "Glue " + std::string(field) + ": \"" + name + "\" holds '" + std::string(1, c) +
          "'; Glue names are letters, digits and the characters - _ $ # ."));
    }
  }
  return ok();
}

}  // namespace

Status validate(const GlueAvroConfig& config) {
  CPPCDC_TRY(check_name("schema_name", config.schema_name));
  if (config.key_schema_name) {
    CPPCDC_TRY(check_name("key_schema_name", *config.key_schema_name));
  }
  if (config.effective_key_schema_name() == config.schema_name) {
    return fail(
        Error::configuration("Glue key_schema_name: equals schema_name \"" + config.schema_name +
                             "\"; keys and values have different schemas and need a schema each"));
  }
  // The default key schema name must itself be a valid name (schema_name of 252+ characters).
  return check_name("key_schema_name", config.effective_key_schema_name());
}

// ---- encoder ------------------------------------------------------------------------------

GlueAvroEncoder::GlueAvroEncoder(std::shared_ptr<GlueSchemaRegistry> registry,
                                 GlueAvroConfig config)
    : registry_(std::move(registry)), config_(std::move(config)), avro_(make_avro_encoder()) {}

GlueAvroEncoder::~GlueAvroEncoder() = default;

Result<std::unique_ptr<GlueAvroEncoder>> GlueAvroEncoder::create(
    std::shared_ptr<GlueSchemaRegistry> registry, GlueAvroConfig config) {
  if (!registry) return fail(Error::configuration("the Glue Avro encoder needs a registry"));
  CPPCDC_TRY(validate(config));
  return std::unique_ptr<GlueAvroEncoder>(
      new GlueAvroEncoder(std::move(registry), std::move(config)));
}

Result<GlueSchemaVersionId> GlueAvroEncoder::id_for(bool is_key) {
  auto& slot = is_key ? key_id_ : value_id_;
  if (slot) return *slot;
  const std::string name = is_key ? config_.effective_key_schema_name() : config_.schema_name;
  const std::string schema(is_key ? avro_key_schema() : avro_event_schema());
  auto id = registry_->register_schema_version(name, schema);
  if (!id) {
    return fail(id.error().context("registering the Avro " + std::string(is_key ? "key" : "value") +
                                   " schema as Glue schema \"" + name + "\" in the " +
                                   registry_->describe()));
  }
  slot = *id;
  return *id;
}

Status GlueAvroEncoder::resolve() {
  auto value = id_for(false);
  if (!value) return fail(std::move(value).error());
  auto key = id_for(true);
  if (!key) return fail(std::move(key).error());
  return ok();
}

Status GlueAvroEncoder::encode(const Event& event, ByteBuffer& out) {
  auto id = id_for(false);
  if (!id) return fail(std::move(id).error());
  datum_.clear();
  CPPCDC_TRY(avro_->encode(event, datum_));
  append_glue_frame(config_.compression, *id, datum_.view(), out);
  return ok();
}

Status GlueAvroEncoder::encode_to(std::string_view destination, const Event& event,
                                  ByteBuffer& out) {
  (void)destination;  // Glue names schemas, not topics: the same schema for every destination
  return encode(event, out);
}

Result<bool> GlueAvroEncoder::encode_key_to(std::string_view destination, const Event& event,
                                            ByteBuffer& out) {
  datum_.clear();
  auto keyed = avro_->encode_key_to(destination, event, datum_);
  if (!keyed) return fail(std::move(keyed).error());
  if (!*keyed) return false;  // keyless: no key at all, and no registration either
  auto id = id_for(true);
  if (!id) return fail(std::move(id).error());
  append_glue_frame(config_.compression, *id, datum_.view(), out);
  return true;
}

// ---- decoder ------------------------------------------------------------------------------

GlueAvroDecoder::GlueAvroDecoder(std::shared_ptr<GlueSchemaRegistry> registry,
                                 std::size_t max_payload)
    : registry_(std::move(registry)), max_payload_(max_payload), avro_(make_avro_decoder()) {}

GlueAvroDecoder::~GlueAvroDecoder() = default;

Result<std::string> GlueAvroDecoder::datum_of(std::string_view record, bool is_key) {
  auto frame = split_glue_frame(record);
  if (!frame) return fail(std::move(frame).error());
  const GlueSchemaVersionId& id = frame->schema_version_id;
  auto known = verified_.find(id);
  if (known == verified_.end()) {
    auto definition = registry_->schema_definition(id);
    if (!definition) {
      return fail(definition.error().context("reading Glue schema version " + id.to_string()));
    }
    boost::system::error_code ec;
    const auto theirs = boost::json::parse(*definition, ec);
    bool is_event = false, is_key_schema = false;
    if (!ec) {
      is_event = theirs == boost::json::parse(avro_event_schema());
      is_key_schema = theirs == boost::json::parse(avro_key_schema());
    }
    if (!is_event && !is_key_schema) {
      return fail(Error::terminal(
          "Glue schema version " + id.to_string() + " of the " + registry_->describe() +
          " is neither " + std::string(kAvroEventRecordName) + " nor " +
          std::string(kAvroKeyRecordName) +
          " as this build writes them, so its records cannot be read as cppcdc events; read "
          "them with the schema the version holds"));
    }
    known = verified_.emplace(id, is_key_schema).first;
  }
  if (known->second != is_key) {
    return fail(Error::terminal("Glue schema version " + id.to_string() + " holds the " +
                                (known->second ? "key" : "event") +
                                " schema, and this record was read as " +
                                (is_key ? "a key" : "an event")));
  }
  auto datum = glue_payload(*frame, max_payload_);
  if (!datum) return fail(std::move(datum).error());
  return datum;
}

Result<Event> GlueAvroDecoder::decode(std::string_view record) {
  auto datum = datum_of(record, false);
  if (!datum) return fail(std::move(datum).error());
  return avro_->decode(*datum);
}

Result<std::string> GlueAvroDecoder::decode_key(std::string_view record) {
  auto datum = datum_of(record, true);
  if (!datum) return fail(std::move(datum).error());
  return decode_avro_key(*datum);
}

}  // namespace cppcdc
