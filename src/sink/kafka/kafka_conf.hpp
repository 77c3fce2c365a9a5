#pragma once
// KafkaSinkConfig (cppcdc/kafka.hpp) turned into a librdkafka producer configuration, checked
// on the way: the one place that decides which librdkafka properties the sink sets.

#include <librdkafka/rdkafka.h>

#include <memory>
#include <string_view>

#include "cppcdc/kafka.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::kafka_sink {

struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const noexcept { rd_kafka_conf_destroy(conf); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;

/// The producer configuration for `config`: bootstrap servers, acks = all, idempotence, the
/// partitioner, compression, linger, batch size, message timeout, no automatic topic creation
/// by the broker, keyless records spread record by record (no sticky partition), then the
/// pass-through properties. Errors: kind configuration, for_setting(kSink, <setting>) naming
/// the setting at fault ("kafka_properties.<name>" for a pass-through property).
/// librdkafka's default transaction.timeout.ms.
inline constexpr std::int64_t kDefaultTransactionTimeoutMs = 60'000;

/// The transaction timeout a transactional producer gets, in ms: kafka_properties'
/// transaction.timeout.ms when set, else the longer of librdkafka's default and
/// delivery_timeout_ms (librdkafka refuses a record timeout over the transaction timeout).
std::int64_t transaction_timeout_ms(const KafkaSinkConfig& config);

Result<ConfPtr> build_conf(const KafkaSinkConfig& config);

/// Makes (and destroys) a producer from a copy of `conf`, built from `config`, without
/// brokers, as run would make it: librdkafka checks combinations of properties only when it
/// makes the producer (max.in.flight over 5 or retries = 0 with idempotence, socket.timeout.ms
/// over transaction.timeout.ms + 100). Its refusal is a configuration error for the
/// kafka_properties key it names, with the remedy.
Status check_producer(const KafkaSinkConfig& config, const rd_kafka_conf_t* conf);

/// The sink setting that owns librdkafka property `name` ("compression" for
/// "compression.codec"), "" for a property the sink fixes itself (acks, enable.idempotence),
/// or nullptr when the property is free to pass through.
const char* owning_setting(std::string_view name) noexcept;

}  // namespace cppcdc::kafka_sink
