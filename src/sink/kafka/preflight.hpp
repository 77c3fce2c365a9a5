#pragma once
// The Kafka sink's `cppcdc preflight` checks (ConfiguredSink::preflight): read-only, bounded in
// time, creating nothing on the cluster.

#include <chrono>
#include <string>
#include <vector>

#include "cppcdc/kafka.hpp"
#include "cppcdc/plugin.hpp"

namespace cppcdc::kafka_sink {

/// The longest the sink's preflight takes in all: the brokers' first answer is awaited for at
/// most kPreflightConnectBudget, the rest shares what is left of kPreflightBudget.
inline constexpr std::chrono::milliseconds kPreflightBudget{15'000};
inline constexpr std::chrono::milliseconds kPreflightConnectBudget{7'000};

/// One line per check: the brokers answer (a controller or other non-broker port is named as
/// such), the topic of every captured table (exists; or will be created with create_topics;
/// or is missing), and with delivery_mode = "transactional" what the brokers' settings allow
/// (transaction timeouts, the transaction log's replication). Never an error.
std::vector<PreflightCheck> preflight(const KafkaSinkConfig& config,
                                      const SinkPreflightContext& context);

/// The remedy for librdkafka's _UNSUPPORTED_FEATURE ("requires Apache Kafka broker version >=
/// 0.11.0"), which a Kafka 4 cluster gives when bootstrap_servers names its KRaft controller
/// port (or another listener that is not a broker's).
std::string unsupported_feature_hint(const std::string& bootstrap_servers);

}  // namespace cppcdc::kafka_sink
