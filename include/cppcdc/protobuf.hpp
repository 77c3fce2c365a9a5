#pragma once
// The Protobuf codec (`codec = "protobuf"`): each event as one Protocol Buffers message
// cppcdc.v1.Event of src/codec/protobuf/event.proto (protobuf_event_schema()), serialized by
// libprotobuf from the classes protoc generates from that file at build time. As in the Avro
// codec, the row images `before` and `after` are bytes holding the image as UTF-8 JSON text
// ({"id":"42","note":null}), so one schema serves every table; the other fields carry the
// envelope's fields of the same names, the unsigned counters as uint64.
//
// The record key is cppcdc.v1.EventKey (event_key.proto): one string field `key` holding the key
// columns as the JSON object the JSON codec writes for keys. A keyless event has no key record
// at all (Encoder::encode_key_to returns false).
//
// Framing:
//   bare (the default)   the serialized message alone
//   Confluent            with a schema registry: magic byte 0, the schema id as 4 bytes
//                        big-endian (append_confluent_header), then the message-index array
//                        that locates the message in its .proto file, then the message. The
//                        array is the index path of the message (top-level position, then
//                        nested positions) read off the generated descriptor, written as
//                        zig-zag varints: its length, then each index; the path [0] (the
//                        file's first message) is the single byte 0. Event is the fifth
//                        top-level message of event.proto, path [4], bytes 02 08; EventKey is
//                        the first of event_key.proto, byte 00.
//                        The schemas are registered as schemaType PROTOBUF with the .proto
//                        text, under the subjects of the naming strategy (record names are the
//                        messages' full names, cppcdc.v1.Event and cppcdc.v1.EventKey);
//                        auto_register = false only looks them up.
//
// Threading: an encoder or decoder is used by one thread at a time. The registry client may be
// shared. Blocking: the first record per destination waits for the registry.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/codec.hpp"
#include "cppcdc/schema_registry.hpp"

namespace cppcdc {

/// The .proto files the codec was built from, as the repository holds them (the text that is
/// registered).
std::string_view protobuf_event_schema() noexcept;
std::string_view protobuf_key_schema() noexcept;
/// The messages' full names ("cppcdc.v1.Event", "cppcdc.v1.EventKey"), from their descriptors;
/// the record_name subject strategies use them.
std::string_view protobuf_event_message_name() noexcept;
std::string_view protobuf_key_message_name() noexcept;
/// The messages' index paths in their files, from their descriptors ([4] and [0]).
std::vector<int> protobuf_event_message_index();
std::vector<int> protobuf_key_message_index();

/// Appends the Confluent message-index array of `path` to `out` (see the top; an empty path is
/// written like [0]).
void append_protobuf_message_index(std::span<const int> path, std::string& out);
/// Reads a message-index array from the front of `bytes`: the path, and the bytes after it.
/// Error kind invalid_data for a truncated or overlong varint, a negative count or index, or a
/// count larger than the bytes that follow could hold.
Result<std::pair<std::vector<int>, std::string_view>> read_protobuf_message_index(
    std::string_view bytes);

struct ProtobufCodecOptions {
  /// Confluent framing through this registry; nullptr: bare messages.
  std::shared_ptr<SchemaRegistryClient> registry;
  /// Its settings (auto_register, subject_name_strategy); used when `registry` is set.
  SchemaRegistryConfig registry_config;
  /// The topic used for subject names when a sink gives no destination; empty: such records
  /// need the record_name strategy.
  std::string default_topic;
};

/// Encoder and decoder. The encoder fails invalid_data for an event whose text fields (table,
/// schema, source, column names, ...) are not valid UTF-8, which a proto3 string cannot hold;
/// with a registry, as resolve_schema_id fails (transient, terminal naming the subject), and
/// configuration when the subject needs a topic and none is known. The decoder refuses
/// (invalid_data) bytes that are not such a message and, framed, a short frame, a magic byte
/// other than 0 and a message-index path that is not the Event's; with a registry an id it
/// does not know or whose schema is not event.proto is terminal.
std::unique_ptr<Encoder> make_protobuf_encoder(ProtobufCodecOptions options = {});
std::unique_ptr<Decoder> make_protobuf_decoder(ProtobufCodecOptions options = {});
/// Reads a key record (as encode_key_to wrote it, framed when `options.registry` is set) back
/// into the key's JSON object text.
Result<std::string> decode_protobuf_key(std::string_view record,
                                        const ProtobufCodecOptions& options = {});

/// Registers `codec = "protobuf"`. Idempotent. Its codec_options: the
/// [sink.codec_options.schema_registry] table of the avro codec (read_schema_registry_settings);
/// absent: bare messages.
void register_protobuf_codec_plugin();

}  // namespace cppcdc
