#pragma once
// The CloudEvents codec (`codec = "cloudevents"`): each event as one CloudEvents 1.0 event in
// the structured JSON format, the cppcdc envelope (what Event::to_json() writes) as its data:
//
//   {"specversion":"1.0","id":"<64 hex>","source":"/cppcdc/<source_name>",
//    "type":"io.cppcdc.<op>","subject":"<schema>.<table>","time":"2026-12-03T08:33:56.123Z",
//    "datacontenttype":"application/json","data":{ ...the envelope... }}
//
// id: fingerprint_event_stable (cppcdc/idempotency.hpp), the same for the same change when it
// is delivered again, so a consumer may drop repeats by id. source: CloudEventsOptions::source
// or "/cppcdc/" followed by the event's source_name. type: type_prefix, a dot and the op name
// (insert, update, delete, read, truncate, message, schema_change). subject: the table,
// schema-qualified when it has a schema. time: the source's commit time (source.timestamp),
// or when that is 0 the time cppcdc made the event (ts), RFC 3339 in UTC with milliseconds.
// Records are JSON text on one line, so the file, stdout and HTTP sinks carry them too; an
// HTTP body of several is a JSON array, sent as application/cloudevents-batch+json.
//
// Binary mode (CloudEventsMode::kBinary): the record is the envelope alone, and the attributes
// travel as headers (Encoder::append_headers): on Kafka ce_specversion, ce_id, ce_source,
// ce_type, ce_subject, ce_time and content-type (application/json); over HTTP the same with
// "ce-" and values percent-encoded (space, '"', '%' and bytes outside printable ASCII), the
// request's Content-Type being application/json. Only sinks that carry headers take it (Kafka;
// HTTP with one event per request).
//
// Threading: one thread at a time per encoder or decoder.

#include <memory>
#include <string>

#include "cppcdc/codec.hpp"

namespace cppcdc {

/// How an event is written: one JSON document (structured) or data plus headers (binary).
enum class CloudEventsMode { kStructured, kBinary };

struct CloudEventsOptions {
  CloudEventsMode mode = CloudEventsMode::kStructured;
  /// The `source` attribute of every event (a URI reference, e.g. "//db.example.com/app");
  /// empty: "/cppcdc/<source_name>" from each event.
  std::string source;
  /// The `type` attribute is this, a dot and the op name. Not empty; no spaces.
  std::string type_prefix = "io.cppcdc";
};

/// Checks type_prefix and source. Error kind configuration naming the setting.
Status validate(const CloudEventsOptions& options);

std::unique_ptr<Encoder> make_cloudevents_encoder(CloudEventsOptions options = {});
/// Reads a structured CloudEvents JSON event back into the event of its data. Refused (kind
/// invalid_data, naming the attribute): specversion other than "1.0", a missing id, source or
/// type, a datacontenttype other than JSON, data that is not an envelope object, and a type or
/// subject that contradicts the envelope's op or table. In binary mode decode() reads the
/// envelope alone, and decode_with_headers() also checks the headers the same way (HTTP header
/// names case-insensitively, values percent-decoded).
std::unique_ptr<Decoder> make_cloudevents_decoder(CloudEventsOptions options = {});

/// Registers `codec = "cloudevents"`; codec_options: mode ("structured" or "binary"), source,
/// type_prefix. Idempotent.
void register_cloudevents_codec_plugin();

}  // namespace cppcdc
