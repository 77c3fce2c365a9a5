// The Avro codec: the envelope as one datum of io.cppcdc.Event (event.avsc), written and read
// field by field in the schema's order, bare or in the Confluent framing.

#include <boost/json.hpp>
#include <map>
#include <set>

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
    if (!id) {
      return fail(id.error().context("resolving the Avro " + std::string(is_key ? "key" : "value") +
                                     " schema id of subject \"" + subject + "\""));
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
      boost::system::error_code ec1, ec2;
      const auto theirs = boost::json::parse(registered->schema, ec1);
      const auto ours = boost::json::parse(schema_, ec2);
      if (ec1 || ec2 || theirs != ours) {
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
