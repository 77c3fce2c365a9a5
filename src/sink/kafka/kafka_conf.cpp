#include "sink/kafka/kafka_conf.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text_util.hpp"
#include "sink/kafka/topic_template.hpp"

namespace cppcdc {

bool is_secret_kafka_property(std::string_view name) noexcept {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  constexpr std::array<std::string_view, 7> kSecret = {
      "password",    "secret",  "sasl.oauthbearer.config",
      "ssl.key.pem", "ssl_key", "ssl.keystore.location",
      "token"};
  for (const auto s : kSecret) {
    if (lower.find(s) != std::string::npos) return true;
  }
  return false;
}

namespace kafka_sink {
namespace {

Error bad(std::string setting, std::string message) {
  return Error::sink(ErrorKind::kConfiguration, std::move(message))
      .for_setting(SettingOwner::kSink, std::move(setting));
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

// Properties of Kafka's Java producer that librdkafka does not know, with what to write
// instead: users copy them from Java client configurations.
const char* java_client_hint(std::string_view name) noexcept {
  static constexpr std::pair<std::string_view, const char*> kJava[] = {
      {"key.serializer",
       "a Java client property; librdkafka has none: the sink writes the key as the primary-key "
       "values in JSON"},
      {"value.serializer",
       "a Java client property; librdkafka has none: [sink.codec] chooses the value's encoding"},
      {"max.block.ms",
       "a Java client property; librdkafka has no equivalent: a full local queue makes the sink "
       "wait, bounded by delivery_timeout_ms"},
      {"buffer.memory",
       "a Java client property; librdkafka's equivalent is queue.buffering.max.kbytes"},
      {"max.request.size", "a Java client property; librdkafka's equivalent is message.max.bytes"},
      {"partitioner.class", "a Java client property; set the sink's partitioner instead"},
      {"interceptor.classes", "a Java client property; librdkafka has no equivalent"},
      {"ssl.truststore.password",
       "a Java client property; librdkafka reads the CA from ssl.ca.location (PEM), without a "
       "password"},
      {"ssl.truststore.type", "a Java client property; librdkafka reads PEM from ssl.ca.location"},
      {"ssl.keystore.type",
       "a Java client property; librdkafka reads PKCS#12 from ssl.keystore.location, or PEM from "
       "ssl.certificate.location and ssl.key.location"},
  };
  for (const auto& [property, hint] : kJava) {
    if (property == name) return hint;
  }
  return nullptr;
}

}  // namespace

const char* owning_setting(std::string_view name) noexcept {
  static constexpr std::pair<std::string_view, const char*> kOwned[] = {
      {"bootstrap.servers", "bootstrap_servers"},
      {"metadata.broker.list", "bootstrap_servers"},
      {"partitioner", "partitioner"},
      {"compression.codec", "compression"},
      {"compression.type", "compression"},
      {"linger.ms", "linger_ms"},
      {"queue.buffering.max.ms", "linger_ms"},
      {"batch.size", "batch_size"},
      {"message.timeout.ms", "delivery_timeout_ms"},
      {"delivery.timeout.ms", "delivery_timeout_ms"},
      {"transactional.id", "transactional_id"},
      {"allow.auto.create.topics", "create_topics"},
      {"enable.idempotence", ""},
      {"acks", ""},
      {"request.required.acks", ""},
  };
  for (const auto& [property, setting] : kOwned) {
    if (property == name) return setting;
  }
  return nullptr;
}

std::int64_t transaction_timeout_ms(const KafkaSinkConfig& config) {
  for (const auto& [name, value] : config.properties) {
    if (name == "transaction.timeout.ms") return std::atoll(value.c_str());
  }
  return std::max<std::int64_t>(kDefaultTransactionTimeoutMs, config.delivery_timeout_ms);
}

Result<ConfPtr> build_conf(const KafkaSinkConfig& config) {
  if (config.bootstrap_servers.empty()) {
    return fail(bad("bootstrap_servers",
                    "expected \"host:port\" of one or more brokers (comma-separated), found an "
                    "empty string"));
  }
  if (auto parsed = TopicTemplate::parse(config.topic); !parsed) {
    return fail(bad("topic", parsed.error().message()));
  }
  if (!one_of(config.partitioner, {"murmur2_random", "murmur2", "consistent", "consistent_random",
                                   "fnv1a", "fnv1a_random", "random"})) {
    return fail(bad("partitioner",
                    "expected \"murmur2_random\", \"murmur2\", \"consistent\", "
                    "\"consistent_random\", \"fnv1a\", \"fnv1a_random\" or \"random\", found " +
                        in_quotes(config.partitioner)));
  }
  if (!one_of(config.compression, {"none", "gzip", "snappy", "lz4", "zstd"})) {
    return fail(
        bad("compression", "expected \"none\", \"gzip\", \"snappy\", \"lz4\" or \"zstd\", found " +
                               in_quotes(config.compression)));
  }
  if (config.delivery_mode == KafkaDeliveryMode::kTransactional) {
    if (config.transactional_id.empty()) {
      return fail(bad("transactional_id",
                      "is required with delivery_mode = \"transactional\": a name unique to this "
                      "pipeline (\"cppcdc-orders\"), the same on every restart, so that a "
                      "restarted cppcdc fences the producer of the run before it"));
    }
  } else if (!config.transactional_id.empty()) {
    return fail(bad("transactional_id",
                    "is used only with delivery_mode = \"transactional\": set that mode (each "
                    "batch one Kafka transaction; delivery_contract = \"effectively_once\" "
                    "needs it), or remove transactional_id"));
  }
  if (config.delivery_timeout_ms < 1 || config.delivery_timeout_ms > 2'147'483'647) {
    return fail(bad("delivery_timeout_ms",
                    "expected a number of milliseconds from 1 to 2147483647, found " +
                        std::to_string(config.delivery_timeout_ms)));
  }
  if (config.topic_partitions == 0 || config.topic_partitions < -1) {
    return fail(bad("topic_partitions", "expected -1 (the broker's default) or at least 1, found " +
                                            std::to_string(config.topic_partitions)));
  }
  if (config.topic_replication_factor == 0 || config.topic_replication_factor < -1) {
    return fail(
        bad("topic_replication_factor", "expected -1 (the broker's default) or at least 1, found " +
                                            std::to_string(config.topic_replication_factor)));
  }

  ConfPtr conf(rd_kafka_conf_new());
  char err[512];
  const auto set = [&](const std::string& name, const std::string& value,
                       const std::string& setting) -> Status {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), err, sizeof err) ==
        RD_KAFKA_CONF_OK) {
      return ok();
    }
    const std::string shown = is_secret_kafka_property(name) ? "(redacted)" : in_quotes(value);
    std::string hint;
    if (std::string_view(err).find("No such configuration property") != std::string_view::npos) {
      // A misspelt name: the closest of the properties librdkafka knows (its dump lists every
      // one, each followed by its value).
      std::size_t count = 0;
      const char** dump = rd_kafka_conf_dump(conf.get(), &count);
      std::vector<std::string> known;
      for (std::size_t i = 0; i + 1 < count; i += 2) known.emplace_back(dump[i]);
      rd_kafka_conf_dump_free(dump, count);
      if (const char* java = java_client_hint(name); java != nullptr) {
        hint = std::string(" (") + java + ")";
      } else if (const std::string closest = detail::closest_name(name, known); !closest.empty()) {
        hint = " (did you mean " + closest + "?)";
      }
    }
    return fail(bad(setting, "librdkafka refuses " + name + " = " + shown + ": " + err + hint));
  };
  CPPCDC_TRY(set("bootstrap.servers", config.bootstrap_servers, "bootstrap_servers"));
  CPPCDC_TRY(set("client.id", "cppcdc", "bootstrap_servers"));
  CPPCDC_TRY(set("enable.idempotence", "true", "delivery_mode"));
  CPPCDC_TRY(set("acks", "all", "delivery_mode"));
  CPPCDC_TRY(set("partitioner", config.partitioner, "partitioner"));
  CPPCDC_TRY(set("compression.codec", config.compression, "compression"));
  CPPCDC_TRY(
      set("message.timeout.ms", std::to_string(config.delivery_timeout_ms), "delivery_timeout_ms"));
  if (config.linger_ms) {
    CPPCDC_TRY(set("linger.ms", std::to_string(*config.linger_ms), "linger_ms"));
  }
  if (config.batch_size) {
    CPPCDC_TRY(set("batch.size", std::to_string(*config.batch_size), "batch_size"));
  }
  if (config.delivery_mode == KafkaDeliveryMode::kTransactional) {
    CPPCDC_TRY(set("transactional.id", config.transactional_id, "transactional_id"));
    // librdkafka refuses a producer whose records may wait longer than its transactions may
    // last (message.timeout.ms over transaction.timeout.ms, 60 s by default): the transaction
    // timeout follows delivery_timeout_ms unless kafka_properties sets it.
    for (const auto& [name, value] : config.properties) {
      if (name != "transaction.timeout.ms") continue;
      std::int64_t ms = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc() || end != value.data() + value.size() || ms < 1) {
        return fail(bad("kafka_properties.transaction.timeout.ms",
                        "expected a whole number of milliseconds (\"900000\" for 15 minutes), "
                        "found " +
                            in_quotes(value)));
      }
    }
    const std::int64_t tx_timeout = transaction_timeout_ms(config);
    if (tx_timeout < config.delivery_timeout_ms) {
      return fail(bad("delivery_timeout_ms",
                      std::to_string(config.delivery_timeout_ms) +
                          " ms is longer than kafka_properties.transaction.timeout.ms (" +
                          std::to_string(tx_timeout) +
                          " ms), and a record may not outlive its transaction: lower "
                          "delivery_timeout_ms or raise transaction.timeout.ms"));
    }
    CPPCDC_TRY(set("transaction.timeout.ms", std::to_string(tx_timeout), "delivery_timeout_ms"));
  }
  // The sink creates topics itself (create_topics) or refuses missing ones: the broker's
  // auto-creation (with its defaults) never decides.
  CPPCDC_TRY(set("allow.auto.create.topics", "false", "create_topics"));
  // A keyless record goes to a random partition of its own rather than to the partition the
  // previous keyless records stuck to.
  CPPCDC_TRY(set("sticky.partitioning.linger.ms", "0", "partitioner"));

  for (const auto& [name, value] : config.properties) {
    const std::string setting = "kafka_properties." + name;
    if (const char* owner = owning_setting(name); owner != nullptr) {
      if (*owner == '\0') {
        return fail(bad(setting, "the sink sets " + name +
                                     " itself (acks = all with an idempotent producer: no record "
                                     "is acknowledged before every in-sync replica has it)"));
      }
      return fail(bad(setting, "set " + std::string(owner) + " instead of " + name));
    }
    CPPCDC_TRY(set(name, value, setting));
  }
  return conf;
}

namespace {

void discard_log(const rd_kafka_t*, int, const char*, const char*) {}

// The user's kafka_properties key that librdkafka's refusal `message` names (it writes names in
// backquotes, some under an alias: `max.in.flight`, `retries`), or "" when it names none.
std::string property_named_in(const KafkaSinkConfig& config, std::string_view message) {
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"max.in.flight", "max.in.flight.requests.per.connection"},
      {"retries", "message.send.max.retries"},
  };
  std::size_t at = 0;
  while ((at = message.find('`', at)) != std::string_view::npos) {
    const std::size_t end = message.find('`', at + 1);
    if (end == std::string_view::npos) break;
    const std::string_view named = message.substr(at + 1, end - at - 1);
    at = end + 1;
    for (const auto& [name, value] : config.properties) {
      if (name == named) return name;
      for (const auto& [a, b] : kAliases) {
        if ((named == a && name == b) || (named == b && name == a)) return name;
      }
    }
  }
  return "";
}

std::string remedy_for(const KafkaSinkConfig& config, const std::string& property) {
  if (property == "max.in.flight.requests.per.connection" || property == "max.in.flight") {
    return "set it to at most 5, or remove it: the sink's producer is always idempotent";
  }
  if (property == "retries" || property == "message.send.max.retries") {
    return "remove it (or set at least 1): an idempotent or transactional producer must retry, "
           "and delivery_timeout_ms bounds how long";
  }
  if (property == "socket.timeout.ms") {
    return "set it to at most the transaction timeout (" +
           std::to_string(transaction_timeout_ms(config)) +
           " ms) + 100 ms, or raise kafka_properties.transaction.timeout.ms";
  }
  return "change or remove it";
}

}  // namespace

Status check_producer(const KafkaSinkConfig& config, const rd_kafka_conf_t* conf) {
#if defined(__SANITIZE_THREAD__)
  // librdkafka starts its threads with C11 thrd_create, which ThreadSanitizer does not
  // intercept: under it, loading a configuration makes no producer.
  return ok();
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return ok();
#endif
#endif
  // The producer run makes, from a copy of its configuration, without brokers: librdkafka
  // checks the combination of properties (idempotence, transactions, timeouts) only here.
  ConfPtr copy(rd_kafka_conf_dup(conf));
  char err[512];
  if (rd_kafka_conf_set(copy.get(), "bootstrap.servers", "", err, sizeof err) != RD_KAFKA_CONF_OK) {
    return ok();
  }
  rd_kafka_conf_set_log_cb(copy.get(), &discard_log);
  err[0] = '\0';
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, copy.get(), err, sizeof err);
  if (rk != nullptr) {
    (void)copy.release();
    rd_kafka_destroy(rk);
    return ok();
  }
  const std::string property = property_named_in(config, err);
  if (property.empty()) {
    return fail(Error::sink(ErrorKind::kConfiguration,
                            std::string("librdkafka refuses to make the producer: ") + err)
                    .for_setting(SettingOwner::kSink, "kafka_properties"));
  }
  return fail(Error::sink(ErrorKind::kConfiguration,
                          std::string("librdkafka refuses to make the producer: ") + err + "; " +
                              remedy_for(config, property))
                  .for_setting(SettingOwner::kSink, "kafka_properties." + property));
}

}  // namespace kafka_sink
}  // namespace cppcdc
