#pragma once
// Codecs: how a sink turns events into bytes (Encoder) and how a consumer turns those bytes
// back into events (Decoder). A sink owns one encoder and asks it for one record per event
// (and, for a keyed destination such as Kafka, for the record's key); the sink frames records
// (the file and stdout sinks put a newline after each, a message sink sends each as one
// message).
//
// Built-in codecs, selected per sink with `codec = "..."` (cppcdc/plugin.hpp: register_codec):
//   json           the envelope, byte for byte what Event::to_json() writes (make_json_encoder)
//   avro           Avro binary with the fixed envelope schema (codec/avro/*.avsc), bare or in
//                  the Confluent framing when a schema registry is configured
//   json_schema    the envelope behind the Confluent header, its draft-07 JSON Schema
//                  (codec/json_schema/*.schema.json) registered or given by id
//   protobuf       Protocol Buffers message cppcdc.v1.Event (codec/protobuf/event.proto), bare
//                  or in Confluent's Protobuf framing (with the message-index array)
//   debezium_json  Debezium's value and key shapes (docs/codecs.md)
//   cloudevents    CloudEvents 1.0, structured (one JSON event) or binary (attributes as
//                  headers, the envelope as the record)
//
// Keys (encode_key_to) have three outcomes, which a keyed sink must keep apart:
//   true     a key was appended to `out`: publish with it
//   false    the event has no key (truncate, schema_change, message, a table without a
//            declared key, an image lacking a key column): nothing is appended, and the sink
//            publishes without a key (never with an empty one)
//   error    the event has a key but it could not be encoded: do not publish
//
// Headers: a codec may also put data beside a record's bytes (CloudEvents' binary mode puts its
// attributes there). A sink that can carry them (Kafka record headers, HTTP request headers)
// asks append_headers() for each record, naming its transport so that the names follow its
// conventions; a sink that cannot refuses such an encoder at configuration time.
//
// Threading: an encoder or a decoder is used by one thread at a time (its sink's).
// Ownership: the factories return owned objects; an encoder keeps no reference to an event.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/buffer.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

/// The transport a record's headers go over (their naming rules differ).
enum class HeaderBinding {
  kKafka,  ///< Kafka record headers (CloudEvents: "ce_id", "content-type")
  kHttp,   ///< HTTP request headers, one record per request (CloudEvents: "ce-id"; values
           ///< percent-encoded where HTTP needs it)
};

/// One header of a record: name and value as they go on the wire.
struct RecordHeader {
  std::string name;
  std::string value;
  bool operator==(const RecordHeader&) const = default;
};

class Encoder {
 public:
  virtual ~Encoder() = default;
  /// Name for logs and config ("json").
  virtual std::string name() const = 0;
  /// The media type of one record ("application/json", "application/avro", ...).
  virtual std::string_view content_type() const { return "application/json"; }
  /// True when every record is UTF-8 JSON text without a line break, so that line-framed
  /// sinks (file, stdout) and JSON bodies (HTTP) can carry it. Binary codecs say false, and
  /// those sinks refuse them at configuration time.
  virtual bool json_text() const { return true; }
  /// The media type of a JSON array of records (an HTTP body carrying several):
  /// "application/json" by default.
  virtual std::string_view array_content_type() const { return "application/json"; }
  /// How a keyed sink writes an update that moved its row to another key. Such a sink (Kafka)
  /// splits it in two records: a delete under the old key, then the row under the new key.
  /// false (the default): that second record is the update itself (op update, with its
  /// before-image). true: the codec's format calls it a creation (Debezium's connectors send
  /// `c` with no before-image there), and the sink encodes it as an insert of the update's
  /// after-image (same source, transaction and timestamps). Sinks that do not split a key
  /// change write the update whatever this says.
  virtual bool key_change_creates() const { return false; }
  /// True when records carry headers (append_headers). A sink that packs several records into
  /// one message whose headers are shared (an HTTP request) must then send one per message.
  virtual bool record_headers() const { return false; }
  /// Appends the headers of the record for `event` (the one encode_to() just wrote) to `out`,
  /// named for `binding`. The default appends none. Errors as encode().
  virtual Status append_headers(HeaderBinding binding, const Event& event,
                                std::vector<RecordHeader>& out) {
    (void)binding;
    (void)event;
    (void)out;
    return ok();
  }

  /// Appends the record for `event` to `out`, without any framing. Error kind invalid_data
  /// when the event cannot be represented (the sink then fails the batch; nothing is
  /// acknowledged); a codec with a schema registry may fail transient or terminal while
  /// resolving its schema id.
  virtual Status encode(const Event& event, ByteBuffer& out) = 0;
  /// The same for a named destination (the Kafka sink passes the topic, which a registry's
  /// topic_name subject strategy needs). The default ignores `destination`.
  virtual Status encode_to(std::string_view destination, const Event& event, ByteBuffer& out) {
    (void)destination;
    return encode(event, out);
  }
  /// Appends the record key of `event` for `destination` (see the three outcomes at the top).
  /// The default writes a JSON object of the key columns in key order, {"id":"7"}, each value
  /// as the envelope writes it (text as a JSON string, SQL NULL as null, json columns as JSON),
  /// taken from `after`, or from the before-image for a delete (Event::primary_key_values()).
  /// On false or error `out` is left as it was.
  virtual Result<bool> encode_key_to(std::string_view destination, const Event& event,
                                     ByteBuffer& out);
  /// encode_key_to without a destination.
  Result<bool> encode_key(const Event& event, ByteBuffer& out) {
    return encode_key_to({}, event, out);
  }
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;
  /// The event a record of the matching encoder holds (one record, without the sink's
  /// framing). The result equals the encoded event (operator==), except for what no record
  /// carries (shape, resume_offset, resume_state, log_position; gtid and snapshot_edge, which
  /// operator== leaves out, only debezium_json carries). Error kind invalid_data,
  /// naming the field, for bytes that are not such a record (any bytes are safe to pass);
  /// a registry-backed decoder may also fail transient or terminal fetching a schema.
  virtual Result<Event> decode(std::string_view record) = 0;
  /// decode() of a record that came with `headers` (as Encoder::append_headers wrote them for
  /// `binding`; header names compared case-insensitively for HTTP). A decoder whose records
  /// need their headers checks them here; the default ignores them.
  virtual Result<Event> decode_with_headers(std::string_view record, HeaderBinding binding,
                                            std::span<const RecordHeader> headers) {
    (void)binding;
    (void)headers;
    return decode(record);
  }
};

/// The JSON envelope, one object per event, exactly as Event::to_json() writes it.
std::unique_ptr<Encoder> make_json_encoder();
/// Reads what make_json_encoder() writes (Event::from_json).
std::unique_ptr<Decoder> make_json_decoder();

/// Appends the default record key of `event` (see Encoder::encode_key_to) to `out`; false,
/// appending nothing, when the event has no complete key.
bool append_json_key(const Event& event, ByteBuffer& out);

/// Appends each event's record followed by a newline to `out` (the framing of the line-based
/// sinks). On an encoding error nothing of this batch stays in `out`, and the error names the
/// event's table and the encoder.
Status encode_lines(Encoder& encoder, std::span<const Event> events, ByteBuffer& out);

}  // namespace cppcdc
