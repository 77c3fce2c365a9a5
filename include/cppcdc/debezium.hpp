#pragma once
// The Debezium-compatible codec (`codec = "debezium_json"`): each event as the JSON value a
// Debezium connector's JsonConverter writes, so that a consumer written for Debezium reads
// cppcdc's records unchanged; docs/codecs.md maps every Debezium field to its source in the
// envelope and lists what differs.
//
// Value: {"before", "after", "source", "op", "ts_ms", "transaction"}; op letters c (insert),
// u (update), d (delete), r (read), t (truncate), m (message). A schema_change has no Debezium
// value (Debezium writes those to a topic of their own): encoding one is an invalid_data error
// that says to filter them out before the sink. Row images map column names to the values'
// text (SQL NULL as null), as the envelope has them; json columns are strings holding the JSON
// text (Debezium's io.debezium.data.Json). `source` has the fields of Debezium's PostgreSQL
// connector (lsn, txId, schema, ...) or of its MySQL / MariaDB connector (file, pos, db, ...).
// Key: the key columns as an object, {"id":"42"}; no key for a keyless event.
//
// schemas_enable = true wraps both in {"schema": ..., "payload": ...} with Kafka Connect's
// schema of each (every column an optional string, json columns named io.debezium.data.Json,
// key columns required), as JsonConverter's schemas.enable does.
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
};

/// Checks connector. Error kind configuration naming the setting.
Status validate(const DebeziumJsonOptions& options);

std::unique_ptr<Encoder> make_debezium_json_encoder(DebeziumJsonOptions options = {});
/// Reads a Debezium value (either form) back into an event: op, before, after, source_name,
/// offset, source timestamp, ts, schema, table, transaction id and event_index. What a
/// Debezium value does not carry is left at its default: primary_key (it is in the key),
/// transaction total_events, snapshot, unavailable columns, whether a before-image was
/// key-only (it reads as full), and without schemas whether a string column was json.
std::unique_ptr<Decoder> make_debezium_json_decoder(DebeziumJsonOptions options = {});

/// Registers `codec = "debezium_json"`; codec_options: schemas_enable (bool), connector,
/// database. Idempotent.
void register_debezium_json_codec_plugin();

}  // namespace cppcdc
