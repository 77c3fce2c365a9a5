#pragma once
// The Kafka sink: each event becomes one Kafka record, produced with librdkafka.
//
//   topic    the topic template rendered for the event (see KafkaSinkConfig::topic)
//   key      the key the sink's encoder gives (Encoder::encode_key_to, with the topic as
//            destination); the JSON codec's is the primary-key values as a JSON object,
//            {"id":"42"} (column name to the value's text, SQL NULL as null, json columns as
//            JSON), in key order. No key at all for an event the encoder says has none
//            (keyless tables, truncate, messages), so that such records spread over the
//            partitions instead of piling onto one; an encoder's error fails the write
//   value    the event encoded by the sink's encoder for the topic (Encoder::encode_to;
//            default: the JSON envelope)
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
// Transactions (delivery_mode = "transactional"): the producer has a transactional.id, and
// opening the sink calls init_transactions, which fences an earlier producer with the same id
// (a previous run killed mid-batch) and aborts what it left open. Each batch is one Kafka
// transaction, so a consumer with isolation.level = read_committed sees a batch whole or not at
// all. make_kafka_sink's sink begins the transaction at the first write() and commits it in
// flush(); make_transactional_kafka_sink's is a TransactionalSink whose commit(record) also
// writes the checkpoint record into the same transaction (effectively_once). A refused record
// or an abortable commit aborts the transaction (error kind transient: the batch is delivered
// again, and the sink can be used again after abort()); a fatal producer error (fenced by a
// newer producer with the same transactional_id, unauthorized) is terminal.
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

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {

/// How the Kafka sink produces.
enum class KafkaDeliveryMode {
  kIdempotent,     ///< "idempotent": an idempotent producer, at least once per batch
  kTransactional,  ///< "transactional": one Kafka transaction per batch
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
  /// How long opening the sink waits for the first answer of a broker (a metadata request),
  /// ms. None within it is a transient error naming bootstrap_servers, so that a wrong address
  /// stops a start before the source reads anything. 0: open does not wait (the producer
  /// connects in the background and the first write() meets the problem).
  std::int64_t startup_timeout_ms = 30'000;
  KafkaDeliveryMode delivery_mode = KafkaDeliveryMode::kIdempotent;
  /// Required with kTransactional and refused without it: unique to the pipeline and the same
  /// on every restart (it is what fences the producer of an earlier run).
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
  /// Topic configs (name, value) given to each topic the sink creates, e.g.
  /// {"cleanup.policy", "compact"} for a topic that keeps the latest row per key, or
  /// "retention.ms". Only with create_topics; a topic that already exists keeps its configs.
  /// The broker checks names and values when it creates the topic: one it refuses is a
  /// configuration error naming "topic_config.<name>" when the first record for the topic is
  /// written.
  std::vector<std::pair<std::string, std::string>> topic_config;
  /// Further librdkafka properties (name, value), e.g. TLS and SASL settings. Properties the
  /// settings above own (bootstrap.servers, partitioner, compression, linger, batch size,
  /// timeouts, acks, idempotence, transactional.id, topic auto-creation) are refused with the
  /// setting to use instead.
  std::vector<std::pair<std::string, std::string>> properties;
  /// The sink's name in the program's configuration (a [[sinks]] entry's name), put into the
  /// sink's log lines and librdkafka's; empty: the lines name the bootstrap servers only.
  std::string name;
  /// Set it (from any thread) only when the pipeline stops for good: every wait of the sink
  /// then ends within about a second (topic look-up and creation, delivery reports, a full
  /// queue, the transactional calls, recover()) with a transient error saying the call was
  /// cut short by the stop, and close() drops what was not delivered instead of waiting for
  /// it. Nothing acknowledged is lost: the batch in flight was not acknowledged and comes
  /// again after a restart. Null: no stop request is read. Not owned; must outlive the sink.
  const std::atomic<bool>* stop = nullptr;
};

/// Checks `config` without connecting: every setting and property is one librdkafka accepts,
/// the topic template names only known placeholders. Error kind configuration, naming the
/// setting (SettingOwner::kSink: "bootstrap_servers", "kafka_properties.<name>", ...).
Status validate(const KafkaSinkConfig& config);

/// The sink (see the top of this header). Blocks until a broker answers (up to
/// startup_timeout_ms; a transactional sink then also waits for init_transactions).
/// `encoder` nullptr: the JSON envelope.
/// Errors: those of validate(); transient when no broker answered within startup_timeout_ms
/// or the stop request ended the wait.
Result<std::unique_ptr<Sink>> make_kafka_sink(KafkaSinkConfig config,
                                              std::unique_ptr<Encoder> encoder = nullptr);

/// The sink for effectively_once: a TransactionalSink (sink.hpp) whose commit(record) writes
/// `record` (FileCheckpoint::encode) to topic checkpoint.location with key checkpoint.key, in
/// the batch's transaction. Needs delivery_mode = kTransactional (else a configuration error
/// naming delivery_mode). Blocks for init_transactions (up to delivery_timeout_ms); a broker
/// that cannot be reached is a transient error naming the bootstrap servers.
Result<std::unique_ptr<TransactionalSink>> make_transactional_kafka_sink(
    KafkaSinkConfig config, InSinkCheckpoint checkpoint,
    std::unique_ptr<Encoder> encoder = nullptr);

/// Whether librdkafka property `name` holds a secret (a password, a key, OAuth settings), so
/// that it is shown as "(redacted)".
bool is_secret_kafka_property(std::string_view name) noexcept;

/// Registers `type = "kafka"` with the plugin registry (cppcdc/plugin.hpp). Idempotent.
void register_kafka_sink_plugin();

// ---- the "kafka_topic" checkpoint backend -------------------------------------------------
//
// One record per checkpoint id in a compacted topic: key = the id, value =
// FileCheckpoint::encode(record) (checksummed; a damaged value is refused naming topic and key).
// load() reads every partition with isolation.level = read_committed up to the end the topic
// had when it began, waiting (up to load_timeout_ms) for transactions still open on it. save()
// commits the record in a Kafka transaction of its own, transactional.id
// "cppcdc-checkpoint.<id>": the first save of an instance fences every older instance of the
// same id, whose next save then fails (terminal) naming that transactional id. Under
// effectively_once the Kafka sink writes the same record in its batch's transaction instead
// (ConfiguredCheckpoint::in_sink), and save() is not used.
//
// Threading: load() and save() from any thread, serialised. Blocking: open() looks the topic up
// (and creates it); load() and save() do network round trips bounded by the timeouts below.

/// The header of a checkpoint record that names the Kafka sink's transactional_id: written by
/// the sink on the record it commits in its transaction, and by the backend's own save() when
/// KafkaTopicCheckpointConfig::transactional_id is set. load() refuses a start while another
/// live key of the topic carries the same transactional_id (two pipelines sharing it would
/// fence each other's producers).
inline constexpr const char* kCheckpointTransactionalIdHeader = "cppcdc.transactional_id";

/// Settings of `[state.offset] backend = "kafka_topic"`.
struct KafkaTopicCheckpointConfig {
  /// "host:port[,...]". The server defaults it (and kafka_properties) to the Kafka sink's.
  std::string bootstrap_servers;
  /// The compacted topic. Created when missing (1 partition, cleanup.policy=compact,
  /// max.message.bytes 16 MiB); an existing topic whose cleanup.policy lacks "compact" is
  /// refused (configuration error naming it).
  std::string topic = "cppcdc.checkpoints";
  /// Replication factor of a topic the backend creates; -1: the broker's default.
  std::int32_t replication_factor = -1;
  /// Bound of each network call (topic look-up and creation, a save's commit), ms.
  std::int64_t timeout_ms = 30'000;
  /// How long load() waits for transactions still open on the topic, ms.
  std::int64_t load_timeout_ms = 120'000;
  /// Further librdkafka properties (TLS, SASL). bootstrap.servers, transactional.id,
  /// isolation.level, enable.idempotence, acks and group.id are the backend's own (refused).
  std::vector<std::pair<std::string, std::string>> properties;
  /// Whether bootstrap_servers / properties are the Kafka sink's (the file left them out of
  /// [state.offset]): errors about them then name [sink]'s key, where the user wrote it.
  bool bootstrap_servers_from_sink = false;
  bool properties_from_sink = false;
  /// The transactional_id of the pipeline's Kafka sink ([sink] delivery_mode =
  /// "transactional"; the server passes it), empty when there is none. When set, save() writes
  /// it as the record's kCheckpointTransactionalIdHeader, and open(), load() and preflight
  /// refuse (configuration error naming both keys) a topic in which another key whose last
  /// record is not a tombstone carries the same transactional_id.
  std::string transactional_id;
  /// As KafkaSinkConfig::stop: once set, load() and save() stop waiting on the brokers within
  /// about a second, with a transient error saying the stop request cut them short (a save
  /// cut short may or may not have been committed; the next load() reads which). Not owned.
  const std::atomic<bool>* stop = nullptr;
};

/// Checks the properties without connecting. Error kind configuration, for_setting
/// (kCheckpoint, "kafka_properties.<name>"; kSink when the properties are the sink's).
Status validate(const KafkaTopicCheckpointConfig& config);

/// Opens the backend for `checkpoint_id`: looks the topic up and creates it when missing.
/// Errors: configuration (a topic that is not compacted, creation refused, bad properties),
/// transient (the brokers cannot be reached within timeout_ms).
Result<std::unique_ptr<Checkpoint>> open_kafka_topic_checkpoint(
    const KafkaTopicCheckpointConfig& config, const std::string& checkpoint_id);

/// Writes a tombstone for `checkpoint_id` (compaction then drops its record).
Status remove_kafka_topic_checkpoint(const KafkaTopicCheckpointConfig& config,
                                     const std::string& checkpoint_id);

/// Registers `backend = "kafka_topic"` with the plugin registry. Idempotent.
void register_kafka_topic_checkpoint_plugin();

}  // namespace cppcdc
