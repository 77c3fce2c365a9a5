#pragma once
// The Avro codec (`codec = "avro"`): each event as one Avro binary datum of a fixed envelope
// schema, io.cppcdc.Event (src/codec/avro/event.avsc, also avro_event_schema()). The row images
// `before` and `after` are Avro bytes holding the image as UTF-8 JSON text, exactly as the JSON
// envelope writes it ({"id":"42","note":null}), so one schema serves every table and never
// changes when a table does. The other fields carry the envelope's fields of the same names;
// the unsigned 64-bit counters (transaction.tx_id, total_events, event_index, snapshot.chunk)
// are stored as the same 64 bits in an Avro long (values above 2^63 - 1 read as negative).
//
// The record key is io.cppcdc.EventKey (event_key.avsc): one nullable string field `key`
// holding the key columns as the JSON object the JSON codec uses for keys. A keyless event has
// no key at all (Encoder::encode_key_to returns false), never a datum with a null key.
//
// Framing:
//   bare (the default)   the datum alone; the reader needs the schema out of band
//   Confluent            with a schema registry: magic byte 0, the schema id as 4 bytes
//                        big-endian (append_confluent_header, schema_registry.hpp), the datum.
//                        The value schema lives under the value subject, the key schema under
//                        the key subject ("<topic>-value" / "<topic>-key" by default), both
//                        resolved once per destination and cached; auto_register = false only
//                        looks them up, so a schema that is not registered fails the first
//                        record for that destination (and the preflight) naming the subject.
//   AWS Glue             with schema_registry.type = "glue": Glue's 18-byte header around the
//                        same datum (cppcdc/glue.hpp, its own target cppcdc_codec_glue)
//
// Threading: an encoder or decoder is used by one thread at a time. The registry client may be
// shared (it serializes its own calls). Blocking: the first record per destination waits for
// the registry (bounded by its timeouts and retries).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/codec.hpp"
#include "cppcdc/plugin.hpp"
#include "cppcdc/schema_registry.hpp"

namespace cppcdc {

/// The envelope schema and the key schema, as the .avsc files hold them.
std::string_view avro_event_schema() noexcept;
std::string_view avro_key_schema() noexcept;
/// Their full names, which the record_name subject strategies use.
inline constexpr std::string_view kAvroEventRecordName = "io.cppcdc.Event";
inline constexpr std::string_view kAvroKeyRecordName = "io.cppcdc.EventKey";

struct AvroCodecOptions {
  /// Confluent framing through this registry; nullptr: bare Avro.
  std::shared_ptr<SchemaRegistryClient> registry;
  /// Its settings (auto_register, subject_name_strategy); used when `registry` is set.
  SchemaRegistryConfig registry_config;
  /// The topic used for subject names when a sink gives no destination (file-like sinks, or
  /// the library's encode()); empty: such records need the record_name strategy.
  std::string default_topic;
};

/// Encoder and decoder. Errors of the encoder: invalid_data never (every event has an Avro
/// form); with a registry, those of resolve_schema_id (transient, terminal naming the subject)
/// and configuration when the subject needs a topic and none is known. The decoder refuses
/// (invalid_data) bytes that are not a complete datum of the schema, trailing bytes, and with
/// a registry a frame whose id the registry does not map to the envelope schema (terminal).
std::unique_ptr<Encoder> make_avro_encoder(AvroCodecOptions options = {});
std::unique_ptr<Decoder> make_avro_decoder(AvroCodecOptions options = {});
/// Reads a key record (as encode_key_to wrote it, framed when `options.registry` is set) back
/// into the key's JSON object text.
Result<std::string> decode_avro_key(std::string_view record, const AvroCodecOptions& options = {});

/// Registers `codec = "avro"`. Idempotent. Its codec_options:
///   [sink.codec_options.schema_registry]  url (required in the table), auto_register,
///       subject_name_strategy, normalize_schemas, username, password, bearer_token, ca_file,
///       cert_file, key_file, verify_tls, connect_timeout_ms, request_timeout_ms,
///       max_cache_entries (SchemaRegistryConfig); absent: bare Avro.
void register_avro_codec_plugin();

/// Framings of other registries plug into `codec = "avro"` here: with
/// `[sink.codec_options.schema_registry] type = "<type>"` and a factory registered for that
/// type, the codec is configured by that factory, which reads codec_options itself (AWS Glue,
/// "glue": cppcdc/glue.hpp). A second registration of a type is refused (configuration error).
Status register_avro_registry_framing(std::string type, CodecFactory factory);

}  // namespace cppcdc
