#pragma once
// The JSON Schema codec (`codec = "json_schema"`): the JSON envelope in the Confluent wire
// format, as Confluent's JSON Schema serializers frame it. Each record is
//
//   0x00, the schema id (4 bytes big-endian), then the envelope byte for byte as the json codec
//   writes it (Event::to_json())
//
// and each key the same framing around the json codec's key object ({"id":"42"}). The schemas
// are draft-07 JSON Schemas kept in the repository (src/codec/json_schema/event.schema.json and
// event_key.schema.json, built in): one envelope schema for every table (a row image is an
// object of any members), titled io.cppcdc.Event and io.cppcdc.EventKey (the record names the
// record_name subject strategies use, as Confluent takes a JSON Schema's title).
//
// Where the ids come from (exactly one of):
//   a schema registry   the envelope schema under the value subject and the key schema under
//                       the key subject, as schemaType JSON ("<topic>-value" / "<topic>-key"
//                       by default), resolved once per destination and cached; with
//                       auto_register = false they are only looked up, and a subject that
//                       does not hold exactly this schema fails the first record for that
//                       destination (and the preflight) naming the subject
//   fixed ids           schema_id and key_schema_id, registered by someone else beforehand;
//                       nothing is asked of any registry
// Options with neither (or both) make every encode and decode fail with a configuration error.
//
// The decoder strips the framing and reads the envelope (Event::from_json). It refuses bytes
// too short for the framing or without the magic byte 0 (invalid_data), a schema id other than
// the configured one (fixed ids: invalid_data), and with a registry an id the registry does not
// have (its error, terminal) or whose schema is not this envelope schema (terminal).
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
#include "cppcdc/schema_registry.hpp"

namespace cppcdc {

/// The envelope schema and the key schema, as the .schema.json files hold them.
std::string_view json_schema_event_schema() noexcept;
std::string_view json_schema_key_schema() noexcept;
/// Their titles, which the record_name subject strategies use.
inline constexpr std::string_view kJsonSchemaEventTitle = "io.cppcdc.Event";
inline constexpr std::string_view kJsonSchemaKeyTitle = "io.cppcdc.EventKey";

struct JsonSchemaCodecOptions {
  /// Schema ids from this registry; nullptr: the fixed ids below.
  std::shared_ptr<SchemaRegistryClient> registry;
  /// Its settings (auto_register, subject_name_strategy); used when `registry` is set.
  SchemaRegistryConfig registry_config;
  /// The topic used for subject names when a sink gives no destination (the library's
  /// encode()); empty: such records need the record_name strategy.
  std::string default_topic;
  /// Fixed ids of the envelope schema and the key schema (0 to 2^31 - 1), without a registry.
  std::optional<std::int32_t> schema_id;
  std::optional<std::int32_t> key_schema_id;
};

/// Checks that the options name the ids one way: a registry, or both fixed ids (not both
/// ways, no negative id). Error kind configuration naming the setting (schema_registry,
/// schema_id, key_schema_id).
Status validate(const JsonSchemaCodecOptions& options);

/// Encoder and decoder (see the top of this file). Errors of the encoder: configuration when
/// validate() fails or a subject needs a topic and none is known; with a registry those of
/// resolve_schema_id (transient, terminal naming the subject). It never fails invalid_data.
std::unique_ptr<Encoder> make_json_schema_encoder(JsonSchemaCodecOptions options);
std::unique_ptr<Decoder> make_json_schema_decoder(JsonSchemaCodecOptions options);
/// Reads a key record (as encode_key_to wrote it) back into the key's JSON object text, after
/// checking its framing and id as the decoder does (against the key schema).
Result<std::string> decode_json_schema_key(std::string_view record,
                                           const JsonSchemaCodecOptions& options);

/// Registers `codec = "json_schema"`. Idempotent. Its codec_options: either
///   [sink.codec_options.schema_registry]  the same keys as the avro codec's (url required;
///       auto_register, subject_name_strategy, ...: read_schema_registry_settings), or
///   schema_id and key_schema_id           fixed ids (both), without a registry.
void register_json_schema_codec_plugin();

}  // namespace cppcdc
