// The Kafka sink as a plugin: `type = "kafka"` and the settings of KafkaSinkConfig, with
// `[sink.kafka_properties]` for further librdkafka properties.

#include "cppcdc/plugin.hpp"

#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "core/settings_read.hpp"
#include "core/stop_request.hpp"
#include "cppcdc/kafka.hpp"
#include "sink/kafka/kafka_conf.hpp"
#include "sink/kafka/preflight.hpp"
#include "sink/kafka/topic_template.hpp"

namespace cppcdc {
namespace {

using detail::in_quotes;

bool same_cluster(std::string_view a, std::string_view b);
std::string resolution_of(std::string_view list);

class ConfiguredKafkaSink final : public ConfiguredSink {
 public:
  ConfiguredKafkaSink(KafkaSinkConfig config, std::shared_ptr<const ConfiguredCodec> codec)
      : config_(std::move(config)), codec_(std::move(codec)) {}

  Description describe() const override {
    Description d;
    d.headline = "kafka " + config_.bootstrap_servers;
    auto add = [&](std::string label, std::string text) {
      d.details.emplace_back(std::move(label), std::move(text));
    };
    add("topic", in_quotes(config_.topic));
    add("codec", codec_->name());
    for (auto& line : codec_->describe()) d.details.push_back(std::move(line));
    add("delivery", std::string(to_string(config_.delivery_mode)) +
                        " producer, acks = all, delivery timeout " +
                        std::to_string(config_.delivery_timeout_ms) + " ms");
    add("start", config_.startup_timeout_ms > 0
                     ? "waits up to " + std::to_string(config_.startup_timeout_ms) +
                           " ms for a broker to answer"
                     : std::string("does not wait for the brokers (startup_timeout_ms = 0)"));
    if (config_.delivery_mode == KafkaDeliveryMode::kTransactional) {
      add("transactions",
          "one per batch (under effectively_once, a stretch with no position to resume "
          "after, such as a keyless table's snapshot or a MariaDB/MySQL snapshot, spans "
          "several batches in one), "
          "transactional_id " +
              in_quotes(config_.transactional_id) +
              " (readers need isolation.level = read_committed)");
    }
    add("partitioner", config_.partitioner);
    add("compression", config_.compression);
    add("batching", "linger " +
                        (config_.linger_ms ? std::to_string(*config_.linger_ms) + " ms"
                                           : std::string("5 ms (librdkafka's default)")) +
                        ", batch size " +
                        (config_.batch_size ? std::to_string(*config_.batch_size) + " bytes"
                                            : std::string("1000000 bytes (librdkafka's default)")));
    add("tombstones", config_.tombstones_on_delete ? "after every delete" : "none");
    if (config_.create_topics) {
      auto or_default = [](std::int32_t v) {
        return v < 0 ? std::string("the broker's default") : std::to_string(v);
      };
      add("missing topics",
          "created (partitions: " + or_default(config_.topic_partitions) +
              ", replication factor: " + or_default(config_.topic_replication_factor) + ")");
      for (const auto& [name, value] : config_.topic_config) {
        add("topic config", name + " = " + in_quotes(value));
      }
    } else {
      add("missing topics", "an error (create_topics = false)");
    }
    for (const auto& [name, value] : config_.properties) {
      add("property",
          name + " = " +
              (is_secret_kafka_property(name) ? std::string("(redacted)") : in_quotes(value)));
    }
    return d;
  }

  Result<std::unique_ptr<Sink>> open(const SinkOpenContext& context) const override {
    auto encoder = codec_->make_encoder();
    if (!encoder) return fail(std::move(encoder).error());
    // What the codec needs for the topics the captured tables go to (a schema registry's
    // subjects), checked now as preflight checks it: a table that stays quiet must not let a
    // missing subject wait for its first record. An unreachable registry is no reason to stop
    // here (the first record retries it, as before).
    const std::vector<std::string> topics = topics_of(context.source_name, context.tables);
    if (auto checked = codec_->check_destinations(topics); !checked) {
      if (checked.error().kind() != ErrorKind::kTransient) {
        return fail(std::move(checked).error().context("checking the " + codec_->name() +
                                                       " codec's schema registry subjects"));
      }
      spdlog::warn(
          "{}: could not check the {} codec's schema registry subjects at start, they "
          "are checked at the first record of each topic: {}",
          context.name == "default" ? std::string("[sink]")
                                    : "[[sinks]] \"" + context.name + "\"",
          codec_->name(), checked.error().report());
    }
    KafkaSinkConfig config = config_;
    config.name = context.name;
    // The program's stop request (SIGINT/SIGTERM) ends the sink's waits on the brokers.
    config.stop = &detail::g_process_stop_requested;
    if (context.checkpoint) {
      CPPCDC_TRY(check_effectively_once(context.checkpoint));
      auto sink = make_transactional_kafka_sink(std::move(config), *context.checkpoint,
                                                std::move(*encoder));
      if (!sink) return fail(std::move(sink).error());
      return std::unique_ptr<Sink>(std::move(*sink));
    }
    return make_kafka_sink(std::move(config), std::move(*encoder));
  }

  std::vector<PreflightCheck> preflight(const SinkPreflightContext& context) const override {
    auto checks = kafka_sink::preflight(config_, context);
    // The codec's own checks (a schema registry), for the topics the captured tables go to.
    for (auto& check : codec_->preflight(topics_of(context.source_name, context.tables))) {
      checks.push_back(std::move(check));
    }
    return checks;
  }

  // The topics the events of `tables` ("schema.table") from `source_name` go to: the topic
  // itself when it has no placeholders; none when the names are not known.
  std::vector<std::string> topics_of(const std::string& source_name,
                                     const std::vector<std::string>& tables) const {
    std::vector<std::string> topics;
    if (auto parsed = kafka_sink::TopicTemplate::parse(config_.topic); parsed) {
      if (!parsed->has_placeholders()) {
        topics.push_back(config_.topic);
      } else if (!source_name.empty()) {
        for (const auto& table : tables) {
          if (table.find_first_of("*?[") != std::string::npos) continue;  // a pattern
          Event e;
          e.source.source_name = source_name;
          const auto dot = table.find('.');
          if (dot != std::string::npos) e.schema = table.substr(0, dot);
          e.table = dot == std::string::npos ? table : table.substr(dot + 1);
          if (auto topic = parsed->render(e); topic) topics.push_back(std::move(*topic));
        }
      }
    }
    return topics;
  }

  std::optional<std::int64_t> transaction_timeout_ms() const override {
    if (config_.delivery_mode != KafkaDeliveryMode::kTransactional) return std::nullopt;
    return kafka_sink::transaction_timeout_ms(config_);
  }

  Status check_effectively_once(const std::optional<InSinkCheckpoint>& checkpoint) const override {
    if (config_.delivery_mode != KafkaDeliveryMode::kTransactional) {
      return fail(Error::configuration(
                      "needs delivery_mode = \"transactional\" and a transactional_id unique to "
                      "this pipeline, so that each batch and its checkpoint commit in one Kafka "
                      "transaction")
                      .for_setting(SettingOwner::kSink, "delivery_mode"));
    }
    if (!checkpoint || checkpoint->backend != "kafka_topic") {
      return fail(Error::configuration(
                      "needs the checkpoint in a Kafka topic on the sink's cluster, written in the "
                      "same transaction: set backend = \"kafka_topic\" (its bootstrap_servers "
                      "default to the sink's)")
                      .for_setting(SettingOwner::kCheckpoint, "backend"));
    }
    if (!same_cluster(checkpoint->system, config_.bootstrap_servers)) {
      return fail(
          Error::configuration(
              "the checkpoint topic is on " + in_quotes(checkpoint->system) +
              " but the sink writes to " + in_quotes(config_.bootstrap_servers) +
              ", and the two lists share no broker address (" + resolution_of(checkpoint->system) +
              "; " + resolution_of(config_.bootstrap_servers) +
              "), so they are taken for two clusters; one Kafka transaction cannot span two "
              "clusters: remove bootstrap_servers here (it then defaults to the sink's), write "
              "the sink's list here, or use \"at_least_once\"")
              .for_setting(SettingOwner::kCheckpoint, "bootstrap_servers"));
    }
    return ok();
  }

 private:
  KafkaSinkConfig config_;
  std::shared_ptr<const ConfiguredCodec> codec_;
};

/// The brokers of a bootstrap list, order, spaces and case aside ("proto://" dropped).
std::set<std::string> brokers_of(std::string_view list) {
  std::set<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string item;
    for (char c : list.substr(start, comma - start)) {
      if (c != ' ' && c != '\t')
        item += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (const auto scheme = item.find("://"); scheme != std::string::npos) {
      item = item.substr(scheme + 3);
    }
    if (!item.empty()) out.insert(item);
    start = comma + 1;
  }
  return out;
}

/// The addresses "ip:port" a broker entry "host:port" resolves to (getaddrinfo, which reads
/// /etc/hosts and may ask DNS); the entry itself when it does not resolve.
std::set<std::string> addresses_of(const std::string& broker) {
  std::string host = broker;
  std::string port = "9092";
  if (const auto colon = broker.rfind(':');
      colon != std::string::npos && broker.find(']', colon) == std::string::npos) {
    host = broker.substr(0, colon);
    port = broker.substr(colon + 1);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::set<std::string> out;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0) {
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char text[NI_MAXHOST];
      char service[NI_MAXSERV];
      if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, service, sizeof service,
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        out.insert(std::string(text) + ":" + service);
      }
    }
    ::freeaddrinfo(found);
  }
  if (out.empty()) out.insert(broker);
  return out;
}

/// How a bootstrap list resolves, for messages: "localhost:9092 = 127.0.0.1:9092 or ::1:9092".
std::string resolution_of(std::string_view list) {
  std::string out;
  for (const auto& broker : brokers_of(list)) {
    std::string addresses;
    for (const auto& a : addresses_of(broker)) addresses += (addresses.empty() ? "" : " or ") + a;
    out += (out.empty() ? "" : "; ") + broker + " = " + addresses;
  }
  return out;
}

/// Whether two bootstrap lists reach the same cluster: they name the same brokers, or one of
/// their brokers resolves to an address and port that one of the other's resolves to (a broker
/// belongs to one cluster, so a shared one means a shared cluster). "localhost:9092" and
/// "127.0.0.1:9092" are the same; two names of different hosts are not, even if both hosts
/// are brokers of one cluster (then write the same names in both lists).
bool same_cluster(std::string_view a, std::string_view b) {
  const auto left = brokers_of(a);
  const auto right = brokers_of(b);
  if (left == right) return true;
  std::set<std::string> seen;
  for (const auto& broker : left) {
    for (auto& address : addresses_of(broker)) seen.insert(std::move(address));
  }
  for (const auto& broker : right) {
    for (const auto& address : addresses_of(broker)) {
      if (seen.count(address) != 0) return true;
    }
  }
  return false;
}

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings& settings) {
  KafkaSinkConfig c;
  auto servers = settings.get_string("bootstrap_servers");
  if (!servers) return fail(servers.error());
  if (!*servers) {
    return fail(settings.missing("bootstrap_servers",
                                 "when type = \"kafka\" (\"host:port\" of one or more brokers)"));
  }
  c.bootstrap_servers = std::move(**servers);
  if (c.bootstrap_servers.empty()) {
    return fail(settings.error("bootstrap_servers",
                               "expected \"host:port\" of one or more brokers, found an empty "
                               "string"));
  }
  CPPCDC_TRY(detail::assign_string(settings, "topic", c.topic));
  CPPCDC_TRY(detail::assign_string(settings, "partitioner", c.partitioner));
  CPPCDC_TRY(detail::assign_string(settings, "compression", c.compression));
  auto linger = settings.get_int("linger_ms", 0, 900'000);
  if (!linger) return fail(linger.error());
  c.linger_ms = *linger;
  auto batch = settings.get_int("batch_size", 1, 2'147'483'647);
  if (!batch) return fail(batch.error());
  c.batch_size = *batch;
  CPPCDC_TRY(
      detail::assign_int(settings, "delivery_timeout_ms", 1, 2'147'483'647, c.delivery_timeout_ms));
  CPPCDC_TRY(
      detail::assign_int(settings, "startup_timeout_ms", 0, 2'147'483'647, c.startup_timeout_ms));

  std::string mode = "idempotent";
  CPPCDC_TRY(detail::assign_string(settings, "delivery_mode", mode));
  if (mode == "idempotent") {
    c.delivery_mode = KafkaDeliveryMode::kIdempotent;
  } else if (mode == "transactional") {
    c.delivery_mode = KafkaDeliveryMode::kTransactional;
  } else {
    return fail(settings.error(
        "delivery_mode", "expected \"idempotent\" or \"transactional\", found " + in_quotes(mode)));
  }
  CPPCDC_TRY(detail::assign_string(settings, "transactional_id", c.transactional_id));
  CPPCDC_TRY(detail::assign_bool(settings, "tombstones_on_delete", c.tombstones_on_delete));
  CPPCDC_TRY(detail::assign_bool(settings, "create_topics", c.create_topics));
  const bool sized = settings.has("topic_partitions") || settings.has("topic_replication_factor");
  CPPCDC_TRY(detail::assign_int(settings, "topic_partitions", -1, 1'000'000, c.topic_partitions));
  CPPCDC_TRY(detail::assign_int(settings, "topic_replication_factor", -1, 32'767,
                                c.topic_replication_factor));
  auto topic_config = settings.get_string_map("topic_config", "\"topic config\" = \"value\"");
  if (!topic_config) return fail(topic_config.error());
  if (*topic_config) {
    if (!c.create_topics) {
      return fail(settings.error("topic_config",
                                 "applies only to topics the sink creates; set create_topics = "
                                 "true, or set the configs on the topics yourself"));
    }
    c.topic_config = std::move(**topic_config);
  }
  if (sized && !c.create_topics) {
    return fail(settings.error(
        settings.has("topic_partitions") ? "topic_partitions" : "topic_replication_factor",
        "applies only to topics the sink creates; set create_topics = "
        "true, or remove it"));
  }
  auto properties =
      settings.get_string_map("kafka_properties", "\"librdkafka property\" = \"value\"");
  if (!properties) return fail(properties.error());
  if (*properties) c.properties = std::move(**properties);

  if (auto st = validate(c); !st) {
    const Error& e = st.error();
    // Name the setting where the configuration file writes it.
    if (!e.setting().empty()) return fail(settings.error(e.setting(), e.message()));
    return fail(e);
  }
  auto codec = configure_codec(settings, false, true);
  if (!codec) return fail(std::move(codec).error());
  return std::unique_ptr<ConfiguredSink>(
      std::make_unique<ConfiguredKafkaSink>(std::move(c), std::move(*codec)));
}

}  // namespace

void register_kafka_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_json_codec_plugin();
    (void)register_sink_type("kafka", configure);
  });
}

}  // namespace cppcdc
