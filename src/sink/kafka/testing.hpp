#pragma once
// Test hooks of the Kafka sink (not for production code).

#include "cppcdc/sink.hpp"

namespace cppcdc::kafka_sink {

/// Makes librdkafka raise the fatal error `err` (an rd_kafka_resp_err_t) on the producer of a
/// transactional Kafka sink (make_transactional_kafka_sink), through librdkafka's
/// rd_kafka_test_fatal_error, as librdkafka does by itself after some broker failures.
/// Returns false when `sink` is not a Kafka sink, or a fatal error was raised on it before.
bool raise_fatal_error_for_test(TransactionalSink& sink, int err);

}  // namespace cppcdc::kafka_sink
