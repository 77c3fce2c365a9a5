// The Avro codec: the envelope as one datum of io.cppcdc.Event (event.avsc), written and read
// field by field in the schema's order, bare or in the Confluent framing.

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "codec/avro/avro_binary.hpp"
#include "core/event_json.hpp"
#include "cppcdc/avro.hpp"

namespace cppcdc {
namespace {

using avro::as_long;
using avro::as_unsigned;
using avro::write_bool;
using avro::write_bytes;
using avro::write_long;

void write_names(ByteBuffer& out, const std::vector<std::string>& names) {
  if (!names.empty()) {
    write_long(out, static_cast<std::int64_t>(names.size()));
    for (const auto& n : names) write_bytes(out, n);
  }
  write_long(out, 0);
}

/// An Avro schema reduced to what decides the binary layout of its datums, after the
/// specification's Parsing Canonical Form: full names, and of each type only its kind, fields
/// in order, symbols, items, values and sizes (docs, defaults, aliases, logical types and
/// attribute order dropped). nullopt: not an Avro schema. Two schemas with the same form read
/// each other's datums.
std::optional<boost::json::value> layout_of(const boost::json::value& v, const std::string& ns) {
  static const std::set<std::string, std::less<>> kPrimitive{"null",  "boolean", "int",   "long",
                                                             "float", "double",  "bytes", "string"};
  const auto full_name = [](const boost::json::object& o, const std::string& space)
      -> std::optional<std::pair<std::string, std::string>> {  // full name, its namespace
    const auto* name = o.if_contains("name");
    if (name == nullptr || !name->is_string()) return std::nullopt;
    std::string n(name->as_string());
    if (n.find('.') == std::string::npos) {
      std::string sp = space;
      if (const auto* given = o.if_contains("namespace"); given != nullptr && given->is_string()) {
        sp = std::string(given->as_string());
      }
      if (!sp.empty()) n = sp + "." + n;
    }
    const auto dot = n.rfind('.');
    return std::pair{n, dot == std::string::npos ? std::string() : n.substr(0, dot)};
  };
  if (v.is_string()) {
    std::string t(v.as_string());
    if (kPrimitive.count(t) != 0 || t.find('.') != std::string::npos || ns.empty()) return v;
    return boost::json::value(ns + "." + t);  // a named type, referred to by its name
  }
  if (v.is_array()) {  // a union
    boost::json::array out;
    for (const auto& branch : v.as_array()) {
      auto b = layout_of(branch, ns);
      if (!b) return std::nullopt;
      out.push_back(std::move(*b));
    }
    return out;
  }
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  const auto* type = o.if_contains("type");
  if (type == nullptr) return std::nullopt;
  if (!type->is_string()) return layout_of(*type, ns);
  const std::string_view kind = type->as_string();
  boost::json::object out;
  if (kind == "record" || kind == "error") {
    auto named = full_name(o, ns);
    const auto* fields = o.if_contains("fields");
    if (!named || fields == nullptr || !fields->is_array()) return std::nullopt;
    boost::json::array fs;
    for (const auto& f : fields->as_array()) {
      if (!f.is_object() || !f.as_object().contains("name")) return std::nullopt;
      const auto* ft = f.as_object().if_contains("type");
      if (ft == nullptr) return std::nullopt;
      auto t = layout_of(*ft, named->second);
      if (!t) return std::nullopt;
      fs.push_back(boost::json::object{{"name", f.as_object().at("name")}, {"type", *t}});
    }
    out = {{"name", named->first}, {"type", "record"}, {"fields", std::move(fs)}};
  } else if (kind == "enum") {
    auto named = full_name(o, ns);
    const auto* symbols = o.if_contains("symbols");
    if (!named || symbols == nullptr) return std::nullopt;
    out = {{"name", named->first}, {"type", "enum"}, {"symbols", *symbols}};
  } else if (kind == "fixed") {
    auto named = full_name(o, ns);
    const auto* size = o.if_contains("size");
    if (!named || size == nullptr) return std::nullopt;
    out = {{"name", named->first}, {"type", "fixed"}, {"size", *size}};
  } else if (kind == "array" || kind == "map") {
    const char* part = kind == "array" ? "items" : "values";
    const auto* inner = o.if_contains(part);
    if (inner == nullptr) return std::nullopt;
    auto t = layout_of(*inner, ns);
    if (!t) return std::nullopt;
    out = {{"type", kind}, {part, std::move(*t)}};
  } else {
    return layout_of(*type, ns);  // a primitive written as an object ({"type": "long", ...})
  }
  return boost::json::value(std::move(out));
}

/// Whether Avro schemas `a` and `b` (JSON text) lay their datums out the same way.
bool same_avro_layout(std::string_view a, std::string_view b) {
  boost::system::error_code ec1, ec2;
  const auto ja = boost::json::parse(a, ec1);
  const auto jb = boost::json::parse(b, ec2);
  if (ec1 || ec2) return false;
  const auto la = layout_of(ja, "");
  const auto lb = layout_of(jb, "");
  return la && lb && *la == *lb;
}

/// Resolves and caches the schema ids of one encoder or decoder.
class SchemaIds {
 public:
  explicit SchemaIds(const AvroCodecOptions& options) : options_(options) {}

  Result<std::int32_t> id_for(std::string_view destination, bool is_key) {
    auto& cache = is_key ? key_ids_ : value_ids_;
    if (auto it = cache.find(destination); it != cache.end()) return it->second;
    const std::string topic =
        destination.empty() ? options_.default_topic : std::string(destination);
    const SubjectNameStrategy strategy = options_.registry_config.subject_name_strategy;
    if (topic.empty() && strategy != SubjectNameStrategy::kRecordName) {
      return fail(Error::configuration(
                      "the Avro codec's subject name strategy \"" +
                      std::string(to_string(strategy)) +
                      "\" needs a topic, and this sink gives none; set subject_name_strategy = "
                      "\"record_name\" in codec_options.schema_registry, or use a Kafka sink")
                      .for_setting(SettingOwner::kSink,
                                   "codec_options.schema_registry.subject_name_strategy"));
    }
    const std::string subject =
        subject_name(strategy, topic, is_key ? kAvroKeyRecordName : kAvroEventRecordName, is_key);
    const std::string schema(is_key ? avro_key_schema() : avro_event_schema());
    auto id = resolve_schema_id(*options_.registry, options_.registry_config, subject,
                                SchemaType::kAvro, schema);
    const std::string what = "the Avro " + std::string(is_key ? "key" : "value") +
                             " schema id of subject \"" + subject + "\"";
    if (!id) return fail(id.error().context("resolving " + what));
    // The id must name the schema as written: a registry may store another form of it (Apicurio
    // with normalize_schemas sorts a record's fields by name), and records stamped with an id
    // whose fields come in another order cannot be decoded by anyone.
    auto registered = options_.registry->schema_by_id(*id);
    if (!registered) {
      return fail(
          registered.error().context("reading back " + what + " (" + std::to_string(*id) + ")"));
    }
    if (!same_avro_layout(registered->schema, schema)) {
      Error error = Error::terminal(
          options_.registry->describe() + " answered " + what + " with id " + std::to_string(*id) +
          ", whose schema lays the fields out differently from the one " + "cppcdc writes (" +
          (options_.registry_config.normalize_schemas
               ? "the registry stored a normalized form of it: set normalize_schemas = false"
               : "the registry holds another schema under that id: check the registry, or use "
                 "another subject") +
          "); records stamped with this id could not be decoded, so none are written");
      if (options_.registry_config.normalize_schemas) {
        error = std::move(error).for_setting(SettingOwner::kSink,
                                             "codec_options.schema_registry.normalize_schemas");
      }
      return fail(std::move(error));
    }
    cache.emplace(std::string(destination), *id);
    return *id;
  }

 private:
  const AvroCodecOptions& options_;
  std::map<std::string, std::int32_t, std::less<>> value_ids_;
  std::map<std::string, std::int32_t, std::less<>> key_ids_;
};

class AvroEncoder final : public Encoder {
 public:
  explicit AvroEncoder(AvroCodecOptions options) : options_(std::move(options)), ids_(options_) {}

  std::string name() const override { return "avro"; }
  std::string_view content_type() const override {
    return options_.registry ? "application/vnd.confluent.avro" : "application/avro";
  }
  bool json_text() const override { return false; }

  Status encode(const Event& event, ByteBuffer& out) override { return encode_to({}, event, out); }

  Status encode_to(std::string_view destination, const Event& event, ByteBuffer& out) override {
    if (options_.registry) {
      auto id = ids_.id_for(destination, false);
      if (!id) return fail(std::move(id).error());
      append_confluent_header(*id, out);
    }
    write_event(event, out);
    return ok();
  }

  Result<bool> encode_key_to(std::string_view destination, const Event& event,
                             ByteBuffer& out) override {
    scratch_.clear();
    if (!append_json_key(event, scratch_)) return false;
    if (options_.registry) {
      auto id = ids_.id_for(destination, true);
      if (!id) return fail(std::move(id).error());
      append_confluent_header(*id, out);
    }
    write_long(out, 1);  // the union's "string" branch
    write_bytes(out, scratch_.view());
    return true;
  }

 private:
  void write_image(ByteBuffer& out, const Row* row) {
    if (row == nullptr) {
      write_long(out, 0);
      return;
    }
    scratch_.clear();
    detail::write_row_json(scratch_, *row);
    write_long(out, 1);
    write_bytes(out, scratch_.view());
  }

  void write_event(const Event& e, ByteBuffer& out) {
    write_image(out, e.before.row());
    write_image(out, e.after ? &*e.after : nullptr);
    write_bytes(out, to_string(e.op));
    write_bytes(out, e.source.source_name);
    write_bytes(out, e.source.offset);
    write_long(out, e.source.timestamp);
    write_long(out, e.ts);
    if (e.schema) {
      write_long(out, 1);
      write_bytes(out, *e.schema);
    } else {
      write_long(out, 0);
    }
    write_bytes(out, e.table);
    if (e.primary_key) {
      write_long(out, 1);
      write_names(out, *e.primary_key);
    } else {
      write_long(out, 0);
    }
    if (e.snapshot) {
      write_long(out, 1);
      write_bytes(out, e.snapshot->snapshot_id);
      write_long(out, as_long(e.snapshot->chunk));
      write_bool(out, e.snapshot->is_last_chunk);
    } else {
      write_long(out, 0);
    }
    if (e.transaction) {
      write_long(out, 1);
      write_long(out, as_long(e.transaction->tx_id));
      write_long(out, as_long(e.transaction->total_events));
      write_long(out, as_long(e.transaction->event_index));
    } else {
      write_long(out, 0);
    }
    write_long(out, e.envelope_version);
    write_bool(out, e.before.is_key_only());
    write_names(out, e.unavailable_columns);
    write_names(out, e.before.unavailable_columns());
  }

  AvroCodecOptions options_;
  SchemaIds ids_;
  ByteBuffer scratch_;
};

// ---- reading ---------------------------------------------------------------------------------

#define CPPCDC_AVRO_READ(var, expr)                      \
  auto var##_r = (expr);                                 \
  if (!var##_r) return fail(std::move(var##_r).error()); \
  auto var = *var##_r

Result<std::string> read_string(avro::Reader& r, const char* what) {
  CPPCDC_AVRO_READ(v, r.read_bytes(what));
  return std::string(v);
}

Result<std::vector<std::string>> read_names(avro::Reader& r, const char* what) {
  std::vector<std::string> out;
  for (;;) {
    CPPCDC_AVRO_READ(count, r.read_block_count(what));
    if (count == 0) return out;
    for (std::int64_t i = 0; i < count; ++i) {
      CPPCDC_AVRO_READ(name, r.read_bytes(what));
      out.emplace_back(name);
    }
  }
}

Result<std::optional<Row>> read_image(avro::Reader& r, const char* what) {
  CPPCDC_AVRO_READ(branch, r.read_union(what, 2));
  if (branch == 0) return std::optional<Row>();
  CPPCDC_AVRO_READ(text, r.read_bytes(what));
  auto row = detail::parse_row_json(text, what);
  if (!row) return fail(std::move(row).error());
  return std::optional<Row>(std::move(*row));
}

Result<Event> read_event(std::string_view datum) {
  avro::Reader r(datum);
  Event e;
  CPPCDC_AVRO_READ(before, read_image(r, "before"));
  CPPCDC_AVRO_READ(after, read_image(r, "after"));
  e.after = std::move(after);
  CPPCDC_AVRO_READ(op_text, r.read_bytes("op"));
  auto op = parse_operation(op_text);
  if (!op) return fail(Error::invalid_data("unknown op '" + std::string(op_text) + "'"));
  e.op = *op;
  CPPCDC_AVRO_READ(source_name, read_string(r, "source.source_name"));
  CPPCDC_AVRO_READ(offset, read_string(r, "source.offset"));
  CPPCDC_AVRO_READ(timestamp, r.read_long("source.timestamp"));
  e.source = {std::move(source_name), std::move(offset), timestamp};
  CPPCDC_AVRO_READ(ts, r.read_long("ts"));
  e.ts = ts;
  CPPCDC_AVRO_READ(has_schema, r.read_union("schema", 2));
  if (has_schema == 1) {
    CPPCDC_AVRO_READ(schema, read_string(r, "schema"));
    e.schema = std::move(schema);
  }
  CPPCDC_AVRO_READ(table, read_string(r, "table"));
  e.table = std::move(table);
  CPPCDC_AVRO_READ(has_key, r.read_union("primary_key", 2));
  if (has_key == 1) {
    CPPCDC_AVRO_READ(key, read_names(r, "primary_key"));
    e.primary_key = std::move(key);
  }
  CPPCDC_AVRO_READ(has_snapshot, r.read_union("snapshot", 2));
  if (has_snapshot == 1) {
    SnapshotMetadata s;
    CPPCDC_AVRO_READ(id, read_string(r, "snapshot.snapshot_id"));
    CPPCDC_AVRO_READ(chunk, r.read_long("snapshot.chunk"));
    CPPCDC_AVRO_READ(last, r.read_bool("snapshot.is_last_chunk"));
    s.snapshot_id = std::move(id);
    s.chunk = as_unsigned(chunk);
    s.is_last_chunk = last;
    e.snapshot = std::move(s);
  }
  CPPCDC_AVRO_READ(has_tx, r.read_union("transaction", 2));
  if (has_tx == 1) {
    CPPCDC_AVRO_READ(tx_id, r.read_long("transaction.tx_id"));
    CPPCDC_AVRO_READ(total, r.read_long("transaction.total_events"));
    CPPCDC_AVRO_READ(index, r.read_long("transaction.event_index"));
    e.transaction = TransactionMetadata{as_unsigned(tx_id), as_unsigned(total), as_unsigned(index)};
  }
  CPPCDC_AVRO_READ(version, r.read_int("envelope_version"));
  if (version < 0 || version > 0xffff) {
    return fail(Error::invalid_data("field 'envelope_version' is out of range: " +
                                    std::to_string(version)));
  }
  e.envelope_version = static_cast<std::uint16_t>(version);
  CPPCDC_AVRO_READ(key_only, r.read_bool("before_is_key_only"));
  CPPCDC_AVRO_READ(unavailable, read_names(r, "unavailable_columns"));
  e.unavailable_columns = std::move(unavailable);
  CPPCDC_AVRO_READ(before_unavailable, read_names(r, "before_unavailable_columns"));
  auto image =
      detail::make_before_image(std::move(before), key_only, std::move(before_unavailable));
  if (!image) return fail(std::move(image).error());
  e.before = std::move(*image);
  if (!r.at_end()) {
    return fail(Error::invalid_data(std::to_string(r.remaining()) +
                                    " bytes follow the end of the Avro event datum"));
  }
  return e;
}

/// Strips the Confluent frame and checks, once per id, that the registry maps the id to
/// `schema`.
class FrameCheck {
 public:
  FrameCheck(const AvroCodecOptions& options, std::string_view schema, std::string_view name)
      : options_(options), schema_(schema), name_(name) {}

  Result<std::string_view> payload(std::string_view record) {
    if (!options_.registry) return record;
    auto frame = split_confluent_frame(record);
    if (!frame) return fail(std::move(frame).error());
    const auto [id, payload] = *frame;
    if (verified_.count(id) == 0) {
      auto registered = options_.registry->schema_by_id(id);
      if (!registered) {
        return fail(registered.error().context("reading Avro schema id " + std::to_string(id)));
      }
      if (!same_avro_layout(registered->schema, schema_)) {
        return fail(Error::terminal("schema id " + std::to_string(id) + " of " +
                                    options_.registry->describe() + " is not " +
                                    std::string(name_) +
                                    " as this build writes it, so the record cannot be read as "
                                    "one; read it with the schema the id names"));
      }
      verified_.insert(id);
    }
    return payload;
  }

 private:
  const AvroCodecOptions& options_;
  std::string_view schema_;
  std::string_view name_;
  std::set<std::int32_t> verified_;
};

class AvroDecoder final : public Decoder {
 public:
  explicit AvroDecoder(AvroCodecOptions options)
      : options_(std::move(options)),
        frames_(options_, avro_event_schema(), kAvroEventRecordName) {}
  std::string name() const override { return "avro"; }
  Result<Event> decode(std::string_view record) override {
    auto datum = frames_.payload(record);
    if (!datum) return fail(std::move(datum).error());
    auto e = read_event(*datum);
    if (!e) return fail(std::move(e).error().context("reading an Avro event"));
    return e;
  }

 private:
  AvroCodecOptions options_;
  FrameCheck frames_;
};

}  // namespace

std::unique_ptr<Encoder> make_avro_encoder(AvroCodecOptions options) {
  return std::make_unique<AvroEncoder>(std::move(options));
}

std::unique_ptr<Decoder> make_avro_decoder(AvroCodecOptions options) {
  return std::make_unique<AvroDecoder>(std::move(options));
}

Result<std::string> decode_avro_key(std::string_view record, const AvroCodecOptions& options) {
  FrameCheck frames(options, avro_key_schema(), kAvroKeyRecordName);
  auto datum = frames.payload(record);
  if (!datum) return fail(std::move(datum).error());
  avro::Reader r(*datum);
  CPPCDC_AVRO_READ(branch, r.read_union("key", 2));
  if (branch == 0) return fail(Error::invalid_data("the Avro key record holds a null key"));
  CPPCDC_AVRO_READ(key, read_string(r, "key"));
  if (!r.at_end()) {
    return fail(Error::invalid_data(std::to_string(r.remaining()) +
                                    " bytes follow the end of the Avro key datum"));
  }
  return key;
}

}  // namespace cppcdc
