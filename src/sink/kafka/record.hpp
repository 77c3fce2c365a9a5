#pragma once
// What the Kafka sink sends besides the encoded value: the record key and the header values.

#include <string>

#include "cppcdc/event.hpp"

namespace cppcdc::kafka_sink {

/// Header names.
inline constexpr const char* kHeaderOp = "op";
inline constexpr const char* kHeaderSourceOffset = "source.offset";
inline constexpr const char* kHeaderEnvelopeVersion = "envelope_version";

/// Writes the record key of `event` to `out` (replacing its content): a JSON object of the
/// primary-key columns in key order, {"id":"7","region":"eu"}, each value as the envelope
/// writes it (text as a JSON string, SQL NULL as null, json columns as JSON). Returns false,
/// leaving `out` empty, when the event has no complete key (no key declared, or a key column
/// absent from the image that carries the key: `after`, or the before-image of a delete), as
/// Event::primary_key_values() decides.
bool write_record_key(const Event& event, std::string& out);

}  // namespace cppcdc::kafka_sink
