// The sink conformance suite for the Kafka sink, against the real broker of
// CPPCDC_TEST_KAFKA_BOOTSTRAP (each test skips without it). Every test writes to a fresh
// one-partition topic, so the records keep the order of the events; delivered() reads them
// back with the independent reader (kafka_tool.py, confluent-kafka), one value per line.

#include <memory>
#include <optional>
#include <string>

#include "conformance/sink_conformance.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_util.hpp"

namespace cppcdc::conformance {
namespace {

class KafkaSinkHarness {
 public:
  virtual ~KafkaSinkHarness() = default;
  static constexpr const char* kName = "kafka";

  static std::string unavailable() {
    return kafka_it::bootstrap().empty() ? kafka_it::unavailable_reason() : "";
  }

  KafkaSinkHarness()
      : bootstrap_(kafka_it::bootstrap()), topic_(kafka_it::unique_topic("conformance")) {
    kafka_it::create_topic(bootstrap_, topic_, 1);
  }

  Result<std::unique_ptr<Sink>> open() {
    KafkaSinkConfig c;
    c.bootstrap_servers = bootstrap_;
    c.topic = topic_;
    c.delivery_timeout_ms = 60'000;
    configure(c);
    // Long enough that a flush() that did not wait for the broker's acknowledgements would
    // return with the records still queued in the producer, and delivered() would miss them.
    c.linger_ms = 5'000;
    return make_kafka_sink(c);
  }

  std::string delivered() {
    std::string out;
    for (const auto& r : kafka_it::read_topic(bootstrap_, topic_, isolation())) {
      out += r.value.value_or("(null)");
      out += '\n';
    }
    return out;
  }

  /// No broker listens on port 1: nothing is ever acknowledged.
  std::optional<Result<std::unique_ptr<Sink>>> open_failing() {
    KafkaSinkConfig c;
    c.bootstrap_servers = "127.0.0.1:1";
    c.topic = "never";
    c.delivery_timeout_ms = 2'000;
    c.startup_timeout_ms = 0;  // the failure is the write's, not the open's
    return make_kafka_sink(c);
  }
  std::string failing_location() { return "127.0.0.1:1"; }

  std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured() {
    KafkaSinkConfig c;
    c.bootstrap_servers = bootstrap_;
    c.topic = topic_;
    c.properties = {{"no.such.property", "1"}};
    return make_kafka_sink(c);
  }
  std::string misconfigured_location() { return "kafka_properties.no.such.property"; }

 protected:
  virtual void configure(KafkaSinkConfig&) {}
  virtual std::string isolation() const { return "read_uncommitted"; }

 private:
  std::string bootstrap_;
  std::string topic_;
};

/// delivery_mode = "transactional" through make_kafka_sink: each batch one transaction, begun
/// by the first write() and committed by flush(); read back as read_committed consumers do.
class TransactionalKafkaSinkHarness final : public KafkaSinkHarness {
 public:
  static constexpr const char* kName = "kafka";

 protected:
  void configure(KafkaSinkConfig& c) override {
    c.delivery_mode = KafkaDeliveryMode::kTransactional;
    c.transactional_id = transactional_id_;
  }
  std::string isolation() const override { return "read_committed"; }

 private:
  std::string transactional_id_ = kafka_it::unique_topic("txid");
};

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(KafkaSink, SinkConformance, KafkaSinkHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(TransactionalKafkaSink, SinkConformance,
                               TransactionalKafkaSinkHarness);

}  // namespace cppcdc::conformance
