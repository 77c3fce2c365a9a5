#pragma once
// The Debezium-compatible codec (`codec = "debezium_json"`): each event as the JSON value a
// Debezium connector's JsonConverter writes, so that a consumer written for Debezium reads
// cppcdc's records unchanged; docs/codecs.md maps every Debezium field to its source in the
// envelope and lists what differs.
//
// Value: {"before", "after", "source", "op", "ts_ms", "transaction"}; op letters c (insert),
// u (update), d (delete), r (read), t (truncate), m (message). A schema_change has no Debezium
// value (Debezium writes those to a topic of their own): encoding one is an invalid_data error
// that says to filter them out before the sink. Row images map column names to values in
// Debezium's typed encodings (typed = true, the default): the type comes from the event's
// shape (ColumnShape type oid and modifier for PostgreSQL, data_type for MySQL / MariaDB), so
// an int4 is a JSON number, a date the days since the epoch, a numeric base64 bytes of its
// unscaled value, a timestamptz an ISO-8601 string, ... (docs/codecs.md has the table). With
// typed = false every value is the database's text. SQL NULL is null; json columns are strings
// holding the JSON text (Debezium's io.debezium.data.Json). A text that is not a value of its
// column's type (which a source does not produce) fails the encode with invalid_data naming
// the table and column. `source` has the fields of Debezium's PostgreSQL connector (lsn, txId,
// schema, ...) or of its MySQL / MariaDB connector (file, pos, gtid from Event::gtid, db, ...);
// source.snapshot names the row's Event::snapshot_edge ("first", "last", ...; "true" without).
// Key: the key columns as an object, {"id":42}; no key for a keyless event.
//
// schemas_enable = true wraps both in {"schema": ..., "payload": ...} with Kafka Connect's
// schema of each (each column's type, semantic name and parameters as Debezium declares them,
// optional when the column is nullable), as JsonConverter's schemas.enable does.
//
// Threading: one thread at a time per encoder or decoder. The encoder counts each
// transaction's events per table (transaction.data_collection_order) itself, so it must see a
// transaction's events in order (one sink does).

#include <memory>
#include <string>

#include "cppcdc/codec.hpp"

namespace cppcdc {

struct DebeziumJsonOptions {
  /// The {"schema", "payload"} form.
  bool schemas_enable = false;
  /// Which Debezium connector's source block to write: "postgresql", "mysql" or "mariadb";
  /// empty: from each event's offset (a PostgreSQL LSN "X/Y" gives "postgresql", anything
  /// else "mysql").
  std::string connector;
  /// source.db: the database the connector reads (PostgreSQL); MySQL and MariaDB write the
  /// event's schema (its database) instead.
  std::string database;
  /// Column values in Debezium's typed encodings, chosen from each column's type in the
  /// event's shape (numbers as JSON numbers, dates as day counts, decimals as bytes, ...);
  /// false: every value is the database's text and every column an optional string (the
  /// output of earlier versions). A column whose type is unknown (no shape, or a type with no
  /// typed encoding here) is written as its text either way.
  bool typed = true;
  /// Debezium's decimal.handling.mode: "precise" (bytes of the unscaled value with the scale
  /// as a schema parameter), "double" or "string".
  std::string decimal_handling_mode = "precise";
  /// Debezium's time.precision.mode: "adaptive", "adaptive_time_microseconds" or "connect";
  /// empty: the connector's default (PostgreSQL adaptive, MySQL/MariaDB
  /// adaptive_time_microseconds).
  std::string time_precision_mode;
  /// Debezium's binary.handling.mode: "bytes" (base64 in JSON, schema type bytes), "base64",
  /// "base64-url-safe" or "hex" (strings).
  std::string binary_handling_mode = "bytes";
};

/// Checks connector and the three modes. Error kind configuration naming the setting.
Status validate(const DebeziumJsonOptions& options);

std::unique_ptr<Encoder> make_debezium_json_encoder(DebeziumJsonOptions options = {});
/// Reads a Debezium value (either form) back into an event: op, before, after, source_name,
/// offset, source timestamp, ts, schema, table, transaction id and event_index, the GTID
/// (Event::gtid, when source.file is set too) and the snapshot edge. Typed values
/// are turned back into the database's text by their field schema (a date's day count into
/// "YYYY-MM-DD", a decimal's bytes into digits with its scale, ...); without the schema a
/// value reads as its JSON text (a number as its digits, a string as it is, an object or array
/// as JSON). What a Debezium value does not carry is left at its default: primary_key (it is
/// in the key), transaction total_events, snapshot, unavailable columns, whether a
/// before-image was key-only (it reads as full), and without schemas whether a string column
/// was json. docs/codecs.md lists the types whose text does not come back exactly.
std::unique_ptr<Decoder> make_debezium_json_decoder(DebeziumJsonOptions options = {});

/// Registers `codec = "debezium_json"`; codec_options: schemas_enable (bool), connector,
/// database, typed (bool), decimal_handling_mode, time_precision_mode, binary_handling_mode.
/// Idempotent.
void register_debezium_json_codec_plugin();

}  // namespace cppcdc
