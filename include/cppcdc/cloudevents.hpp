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
// Records are JSON text on one line, so the file, stdout and HTTP sinks carry them too.
// Only the structured mode is written; the binary mode (attributes as ce_ headers) is not.
//
// Threading: one thread at a time per encoder or decoder.

#include <memory>
#include <string>

#include "cppcdc/codec.hpp"

namespace cppcdc {

struct CloudEventsOptions {
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
/// subject that contradicts the envelope's op or table.
std::unique_ptr<Decoder> make_cloudevents_decoder(CloudEventsOptions options = {});

/// Registers `codec = "cloudevents"`; codec_options: source, type_prefix. Idempotent.
void register_cloudevents_codec_plugin();

}  // namespace cppcdc
