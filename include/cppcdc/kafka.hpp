#pragma once
// The Kafka sink: each event becomes one Kafka record, produced with librdkafka.
//
//   topic    the topic template rendered for the event (see KafkaSinkConfig::topic)
//   key      the event's primary-key values as a JSON object, {"id":"42"} (column name to the
//            value's text, SQL NULL as null, json columns as JSON), in key order; no key at all
//            for an event without a complete key (keyless tables, truncate, messages), so that
//            such records spread over the partitions instead of piling onto one
//   value    the event encoded by the sink's encoder (default: the JSON envelope)
//   headers  "op" (insert, update, ...), "source.offset" (the change's position in the source
//            log, as the envelope's source.offset) and "envelope_version" (decimal)
//
// Delivery (at least once): write() hands records to the producer, flush() returns only once
// the broker acknowledged every record written since the last flush (acks = all, idempotent
// producer: no duplicates or reordering from the producer's own retries). A record that
// cannot be delivered fails flush(): the batch is not acknowledged and comes again after a
// restart. After any failed write() or flush() the sink refuses further work with the same
// error (records of the failed batch may still have reached Kafka, so nothing may be
// acknowledged past it): close it and open a new one.
//
// Errors:
//   configuration  a setting librdkafka refuses, a topic that does not exist (and
//                  create_topics is off), a topic or cluster the credentials may not write to;
//                  the message names the topic or setting and what to change
//   terminal       the broker refuses a record for good (larger than the topic accepts), or the
//                  producer hit a fatal error (e.g. fenced)
//   transient      the brokers cannot be reached or did not acknowledge within
//                  delivery_timeout_ms; the message names the bootstrap servers and the last
//                  error librdkafka reported
//   invalid_state  write() or flush() after close()
//
// Threading: one thread at a time uses a sink (the runtime's delivery thread). librdkafka runs
// its own threads internally; delivery reports are handled on the caller's thread inside
// write() and flush(). Blocking: write() blocks while the producer's queue is full and, on the
// first record for a topic, for one metadata round trip (or the topic's creation);
// flush() blocks until every record is acknowledged or failed (bounded by delivery_timeout_ms).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/codec.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {

/// How the Kafka sink produces.
enum class KafkaDeliveryMode {
  kIdempotent,     ///< "idempotent": an idempotent producer, at least once per batch
  kTransactional,  ///< "transactional": one Kafka transaction per batch (not built yet)
};

/// "idempotent" or "transactional".
std::string_view to_string(KafkaDeliveryMode mode) noexcept;

/// Settings of the Kafka sink; the names follow `[sink]` of cdc.toml (type = "kafka").
struct KafkaSinkConfig {
  /// "host:port[,host:port...]". Required.
  std::string bootstrap_servers;
  /// Topic per event: literal text with the placeholders ${source_name}, ${schema} and
  /// ${table}. An event without a schema leaves out ${schema} together with one dot next to
  /// it. Characters Kafka does not allow in topic names (anything but ASCII letters, digits,
  /// '.', '_' and '-') become '_'.
  std::string topic = "${source_name}.${schema}.${table}";
  /// librdkafka's partitioner for keyed records: "murmur2_random" (the Java client's murmur2
  /// hash, so Java producers and consumers agree on partitions), "murmur2", "consistent",
  /// "consistent_random", "fnv1a", "fnv1a_random" or "random". Keyless records go to a random
  /// partition.
  std::string partitioner = "murmur2_random";
  /// "none", "gzip", "snappy", "lz4" or "zstd".
  std::string compression = "none";
  /// How long the producer waits to fill a batch (librdkafka linger.ms); nullopt: librdkafka's
  /// default (5 ms).
  std::optional<std::int64_t> linger_ms;
  /// Largest batch of records per partition in bytes (librdkafka batch.size); nullopt:
  /// librdkafka's default (1,000,000).
  std::optional<std::int64_t> batch_size;
  /// How long a record may take from write() to the broker's acknowledgement, retries
  /// included (librdkafka message.timeout.ms); past it flush() fails (transient). Also bounds
  /// the metadata look-up and topic creation of write().
  std::int64_t delivery_timeout_ms = 120'000;
  /// kTransactional is refused for now (configuration error).
  KafkaDeliveryMode delivery_mode = KafkaDeliveryMode::kIdempotent;
  /// For kTransactional only.
  std::string transactional_id;
  /// After a delete with a key, also send a tombstone (same key, no value), so that a
  /// compacted topic drops the row.
  bool tombstones_on_delete = false;
  /// Create a topic the first time a record is written to it, if it does not exist, with
  /// topic_partitions partitions and topic_replication_factor replicas (-1: the broker's
  /// defaults). When false a missing topic is a configuration error naming it.
  bool create_topics = false;
  std::int32_t topic_partitions = -1;
  std::int32_t topic_replication_factor = -1;
  /// Further librdkafka properties (name, value), e.g. TLS and SASL settings. Properties the
  /// settings above own (bootstrap.servers, partitioner, compression, linger, batch size,
  /// timeouts, acks, idempotence, transactional.id, topic auto-creation) are refused with the
  /// setting to use instead.
  std::vector<std::pair<std::string, std::string>> properties;
};

/// Checks `config` without connecting: every setting and property is one librdkafka accepts,
/// the topic template names only known placeholders. Error kind configuration, naming the
/// setting (SettingOwner::kSink: "bootstrap_servers", "kafka_properties.<name>", ...).
Status validate(const KafkaSinkConfig& config);

/// The sink (see the top of this header). The producer starts connecting in the background; no
/// call waits for the network before the first write(). `encoder` nullptr: the JSON envelope.
/// Errors: those of validate().
Result<std::unique_ptr<Sink>> make_kafka_sink(KafkaSinkConfig config,
                                              std::unique_ptr<Encoder> encoder = nullptr);

/// Whether librdkafka property `name` holds a secret (a password, a key, OAuth settings), so
/// that it is shown as "(redacted)".
bool is_secret_kafka_property(std::string_view name) noexcept;

/// Registers `type = "kafka"` with the plugin registry (cppcdc/plugin.hpp). Idempotent.
void register_kafka_sink_plugin();

}  // namespace cppcdc
