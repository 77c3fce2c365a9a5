#pragma once
// What the Kafka sink sends besides the encoded value: the record key and the header values.

#include <string>
#include <string_view>

#include "cppcdc/event.hpp"

namespace cppcdc::kafka_sink {

/// Header names.
inline constexpr const char* kHeaderOp = "op";
inline constexpr const char* kHeaderSourceOffset = "source.offset";
inline constexpr const char* kHeaderEnvelopeVersion = "envelope_version";
/// The headers Debezium's connectors put on the two records of a key change, for codecs
/// that write such a change as a delete and a create (Encoder::key_change_creates): the
/// delete under the old key (and its tombstone) carries the new key, the create under the
/// new key carries the old one. Each value is that record key as the codec encoded it.
inline constexpr const char* kHeaderDebeziumNewKey = "__debezium.newkey";
inline constexpr const char* kHeaderDebeziumOldKey = "__debezium.oldkey";

/// Writes the record key of `event` to `out` (replacing its content): a JSON object of the
/// primary-key columns in key order, {"id":"7","region":"eu"}, each value as the envelope
/// writes it (text as a JSON string, SQL NULL as null, json columns as JSON). Returns false,
/// leaving `out` empty, when the event has no complete key (no key declared, or a key column
/// absent from the image that carries the key: `after`, or the before-image of a delete), as
/// Event::primary_key_values() decides.
bool write_record_key(const Event& event, std::string& out);

/// For an update that moved its row to another key: writes the key the row had before (same
/// shape as write_record_key, taken from the before-image, which holds the key columns
/// whenever the source saw the key change) to `out` and returns true. `key` is the update's
/// own record key as write_record_key wrote it (empty: the update has none). Returns false,
/// leaving `out` empty, for every other event: not an update, no before-image, an incomplete
/// old key, or an old key equal to the new one.
bool write_previous_record_key(const Event& event, std::string_view key, std::string& out);

/// Whether `event` is an update whose before-image holds every key column with some value
/// other than the after-image's: the row may have moved to another key. A cheap test before
/// the old key is encoded (the sink then compares the encoded keys).
bool key_moved(const Event& event);

/// The delete the sink sends under the previous key of such an update, so that a compacted
/// topic does not keep the row under its old key for ever: op delete, the update's
/// before-image, no after-image, and everything else of the update (table, key columns,
/// source, transaction, GTID, timestamps). Not a resumable boundary (no resume_offset).
Event deletion_of_previous_key(const Event& update);

/// The record the sink sends under the new key of such an update when its encoder says a key
/// change creates the row there (Encoder::key_change_creates): the update as an insert, with
/// no before-image, and everything else (after-image, source, transaction, timestamps,
/// resume offset) as the update has it.
Event creation_under_new_key(const Event& update);

}  // namespace cppcdc::kafka_sink
