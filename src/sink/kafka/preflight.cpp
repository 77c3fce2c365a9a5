// The Kafka sink's preflight (preflight.hpp). It uses a plain producer handle with the sink's
// connection settings (TLS, SASL) but neither idempotence nor a transactional.id, and asks
// the brokers only read-only questions: metadata (with automatic topic creation off) and the
// brokers' configuration. It never calls init_transactions, which would fence a running
// pipeline's producer.

#include "sink/kafka/preflight.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/event.hpp"
#include "sink/kafka/kafka_conf.hpp"
#include "sink/kafka/topic_template.hpp"

namespace cppcdc::kafka_sink {
namespace {

using Clock = std::chrono::steady_clock;
using Outcome = PreflightCheck::Outcome;

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// librdkafka's warnings and errors while connecting: the last one explains a silence.
struct LogTail {
  std::mutex mutex;
  std::string last;
};

void collect_log(const rd_kafka_t* rk, int level, const char*, const char* message) {
  if (level > 4) return;
  auto* tail = static_cast<LogTail*>(rd_kafka_opaque(rk));
  if (tail == nullptr) return;
  std::lock_guard lock(tail->mutex);
  tail->last = message;
}

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

std::string seconds(std::chrono::milliseconds ms) {
  const auto s = ms.count() / 1000;
  const auto tenths = (ms.count() % 1000) / 100;
  return std::to_string(s) + (tenths != 0 ? "." + std::to_string(tenths) : "") + " s";
}

class Probe {
 public:
  Probe(const KafkaSinkConfig& config, Clock::time_point deadline)
      : config_(config), deadline_(deadline) {}

  // A producer handle without idempotence or transactions; nullopt with a FAIL line in `out`
  // when librdkafka refuses the settings (check-config would have said so already).
  bool start(std::vector<PreflightCheck>& out) {
    KafkaSinkConfig plain = config_;
    plain.delivery_mode = KafkaDeliveryMode::kIdempotent;
    plain.transactional_id.clear();
    auto conf = build_conf(plain);
    char err[512];
    if (conf && rd_kafka_conf_set(conf->get(), "enable.idempotence", "false", err, sizeof err) !=
                    RD_KAFKA_CONF_OK) {
      conf = fail(Error::configuration(err));
    }
    if (!conf) {
      out.push_back({Outcome::kFail, "the Kafka sink's settings: " + conf.error().report(),
                     "fix them (cppcdc check-config shows where)"});
      return false;
    }
    rd_kafka_conf_set_opaque(conf->get(), &tail_);
    rd_kafka_conf_set_log_cb(conf->get(), &collect_log);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf->get(), err, sizeof err);
    if (rk == nullptr) {
      out.push_back({Outcome::kFail, std::string("librdkafka cannot create a client: ") + err,
                     "fix the settings in [sink.kafka_properties]"});
      return false;
    }
    (void)conf->release();
    rk_.reset(rk);
    return true;
  }

  rd_kafka_t* get() const { return rk_.get(); }

  int remaining_ms(std::chrono::milliseconds cap) const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return static_cast<int>(std::max<std::int64_t>(1, std::min(left, cap).count()));
  }

  std::string last_log() {
    std::lock_guard lock(tail_.mutex);
    return tail_.last;
  }

  // Destroys the handle while tail_ still lives.
  ~Probe() { rk_.reset(); }

 private:
  const KafkaSinkConfig& config_;
  Clock::time_point deadline_;
  LogTail tail_;
  Handle rk_;
};

struct TopicLookup {
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;  // of the request
  rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
  int partitions = 0;
};

TopicLookup look_up(rd_kafka_t* rk, const std::string& name, int timeout_ms) {
  TopicLookup out;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, name.c_str(), nullptr);
  if (rkt == nullptr) {
    out.err = rd_kafka_last_error();
    return out;
  }
  const rd_kafka_metadata_t* md = nullptr;
  out.err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
  rd_kafka_topic_destroy(rkt);
  if (out.err != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (name == md->topics[i].topic) {
      out.topic_err = md->topics[i].err;
      out.partitions = md->topics[i].partition_cnt;
    }
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

// The named settings of a broker (its id) or a topic (its name); empty when they cannot be
// read (not authorized, say).
std::map<std::string, std::string> resource_settings(rd_kafka_t* rk, rd_kafka_ResourceType_t type,
                                                     const std::string& id, int timeout_ms) {
  std::map<std::string, std::string> out;
  rd_kafka_ConfigResource_t* resource = rd_kafka_ConfigResource_new(type, id.c_str());
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* options =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char err[256];
  (void)rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, err, sizeof err);
  rd_kafka_DescribeConfigs(rk, &resource, 1, options, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, timeout_ms + 1000);
  if (ev != nullptr && rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::size_t n = 0;
    const rd_kafka_ConfigResource_t** resources =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    for (std::size_t i = 0; i < n; ++i) {
      if (rd_kafka_ConfigResource_error(resources[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      std::size_t m = 0;
      const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(resources[i], &m);
      for (std::size_t j = 0; j < m; ++j) {
        const char* value = rd_kafka_ConfigEntry_value(entries[j]);
        if (value != nullptr) out[rd_kafka_ConfigEntry_name(entries[j])] = value;
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_queue_destroy(queue);
  rd_kafka_ConfigResource_destroy(resource);
  return out;
}

std::map<std::string, std::string> broker_settings(rd_kafka_t* rk, std::int32_t broker_id,
                                                   int timeout_ms) {
  return resource_settings(rk, RD_KAFKA_RESOURCE_BROKER, std::to_string(broker_id), timeout_ms);
}

// Asks the brokers whether they would create topic `name` as the sink would (partitions,
// replication factor, topic_config), without creating it (validate_only). nullopt: accepted
// (or no answer: the start finds out); else the refusal and the setting it concerns.
std::optional<std::pair<std::string, std::string>> creation_refused(rd_kafka_t* rk,
                                                                    const KafkaSinkConfig& config,
                                                                    const std::string& name,
                                                                    int timeout_ms) {
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(name.c_str(), config.topic_partitions,
                                                  config.topic_replication_factor, err, sizeof err);
  if (nt == nullptr) return std::make_pair(std::string(err), std::string("topic_partitions"));
  for (const auto& [config_name, value] : config.topic_config) {
    if (rd_kafka_NewTopic_set_config(nt, config_name.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_NewTopic_destroy(nt);
      return std::make_pair("librdkafka refuses topic config " + in_quotes(config_name),
                            "topic_config." + config_name);
    }
  }
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  (void)rd_kafka_AdminOptions_set_validate_only(options, 1, err, sizeof err);
  (void)rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, err, sizeof err);
  rd_kafka_CreateTopics(rk, &nt, 1, options, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, timeout_ms + 1000);
  std::optional<std::pair<std::string, std::string>> refused;
  if (ev != nullptr && rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::size_t n = 0;
    const rd_kafka_topic_result_t** topics =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    for (std::size_t i = 0; i < n && !refused; ++i) {
      const rd_kafka_resp_err_t e = rd_kafka_topic_result_error(topics[i]);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) continue;
      const char* msg = rd_kafka_topic_result_error_string(topics[i]);
      const std::string detail =
          std::string(rd_kafka_err2name(e)) + (msg ? ": " + std::string(msg) : "");
      std::string setting = "create_topics";
      if (e == RD_KAFKA_RESP_ERR_INVALID_PARTITIONS) setting = "topic_partitions";
      if (e == RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR) setting = "topic_replication_factor";
      if (e == RD_KAFKA_RESP_ERR_INVALID_CONFIG || e == RD_KAFKA_RESP_ERR_POLICY_VIOLATION) {
        setting = "topic_config";
        for (const auto& [config_name, value] : config.topic_config) {
          if (detail.find(config_name) != std::string::npos) {
            setting = "topic_config." + config_name;
            break;
          }
        }
      }
      refused = std::make_pair(detail, setting);
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(nt);
  return refused;
}

// The cleanup.policy a topic has (existing) or would get (created with topic_config), when it
// compacts; empty otherwise.
std::string compaction_of(const std::map<std::string, std::string>& settings) {
  const auto it = settings.find("cleanup.policy");
  if (it == settings.end() || it->second.find("compact") == std::string::npos) return {};
  return it->second;
}

bool is_pattern(const std::string& table) {
  return table.find_first_of("*?[") != std::string::npos;
}

// "schema.table" split at its first dot (MySQL: "database.table").
Event event_for(const std::string& source_name, const std::string& table) {
  Event e;
  e.source.source_name = source_name;
  const auto dot = table.find('.');
  if (dot == std::string::npos) {
    e.table = table;
  } else {
    e.schema = table.substr(0, dot);
    e.table = table.substr(dot + 1);
  }
  return e;
}

// The brokers answer, or the FAIL line saying why not. On success `broker_ids` holds the
// brokers the cluster announced and `cluster_id` its id ("" when it has none).
bool brokers_answer(Probe& probe, const KafkaSinkConfig& config, std::vector<PreflightCheck>& out,
                    std::vector<std::int32_t>& broker_ids, std::string& cluster_id) {
  const auto started = Clock::now();
  const rd_kafka_metadata_t* md = nullptr;
  const int wait = probe.remaining_ms(kPreflightConnectBudget);
  const rd_kafka_resp_err_t err = rd_kafka_metadata(probe.get(), 0, nullptr, &md, wait);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  const std::string servers = in_quotes(config.bootstrap_servers);
  if (err == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
    out.push_back({Outcome::kFail,
                   "bootstrap_servers " + servers + " answers, but not as a Kafka broker (" +
                       rd_kafka_err2name(err) + ": " + rd_kafka_err2str(err) + ")",
                   unsupported_feature_hint(config.bootstrap_servers)});
    return false;
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string last = probe.last_log();
    out.push_back({Outcome::kFail,
                   "the Kafka brokers " + servers + " did not answer within " + seconds(took) +
                       " (" + rd_kafka_err2name(err) + ": " + rd_kafka_err2str(err) + ")" +
                       (last.empty() ? std::string() : "; librdkafka: " + last),
                   "check that bootstrap_servers names host:port of a broker listener and that "
                   "the brokers run and can be reached from here (TLS and SASL settings go in "
                   "[sink.kafka_properties]); a start would retry and then stop"});
    return false;
  }
  for (int i = 0; i < md->broker_cnt; ++i) broker_ids.push_back(md->brokers[i].id);
  rd_kafka_metadata_destroy(md);
  if (char* id = rd_kafka_clusterid(probe.get(), probe.remaining_ms(std::chrono::seconds(2)))) {
    cluster_id = id;
    rd_kafka_mem_free(probe.get(), id);
  }
  out.push_back({Outcome::kPass,
                 "the Kafka brokers " + servers + " answer (cluster " +
                     (cluster_id.empty() ? std::string("without an id") : in_quotes(cluster_id)) +
                     ", " + std::to_string(broker_ids.size()) + " broker" +
                     (broker_ids.size() == 1 ? "" : "s") + ")",
                 ""});
  return true;
}

// A compacted topic takes only keyed records: a row of a table without a primary key that
// goes there is refused (INVALID_RECORD) and stops the pipeline. When the source said which
// of the topic's tables are keyless, that is a failure naming them; when it could not, a
// warning.
void check_compaction(const std::string& what, const std::string& policy, const char* is,
                      const std::vector<std::string>& tables,
                      const std::optional<std::vector<std::string>>& keyless, bool one_sink_only,
                      std::vector<PreflightCheck>& out) {
  if (policy.empty()) return;
  // Under effectively_once the pipeline has exactly one sink: no route can take a table
  // elsewhere, so the remedies do not offer one.
  const std::string elsewhere =
      one_sink_only ? "leave it out of [source] tables (effectively_once allows one sink only, "
                      "so it cannot be routed to another topic that is not compacted)"
                    : "route it to a topic that is not compacted (a [[pipeline.routes]] entry "
                      "to another sink)";
  const std::string compacted = what + " " + is + " compacted (cleanup.policy=" + policy + ")";
  if (!keyless) {
    out.push_back({Outcome::kWarn,
                   compacted + ", and a compacted topic refuses records without a key: a change "
                               "of a table without a primary key routed there would stop the "
                               "pipeline",
                   "make sure every table routed to it has a primary key (or is keyed by a "
                   "key_shaping transform); for a keyless table: " +
                       elsewhere});
    return;
  }
  std::string without;
  for (const auto& t : tables) {
    if (std::find(keyless->begin(), keyless->end(), t) != keyless->end()) {
      without += (without.empty() ? "" : ", ") + t;
    }
  }
  if (without.empty()) {
    out.push_back({Outcome::kPass, compacted + ", and every table going there has a key", ""});
    return;
  }
  out.push_back(
      {Outcome::kFail,
       compacted + ", but " + without +
           " has no key (no primary key, or replica identity NOTHING): the broker "
           "refuses its records without a key (INVALID_RECORD), which stops the "
           "pipeline at the first change of it",
       "give " + without + " a primary key, key it with a key_shaping transform, or " + elsewhere});
}

void check_topics(Probe& probe, const KafkaSinkConfig& config, const SinkPreflightContext& context,
                  std::vector<PreflightCheck>& out) {
  auto parsed = TopicTemplate::parse(config.topic);
  if (!parsed) {
    out.push_back({Outcome::kFail,
                   "topic " + in_quotes(config.topic) + ": " + parsed.error().message(),
                   "fix topic"});
    return;
  }
  const TopicTemplate& tmpl = *parsed;
  if (context.source_name_is_default && config.topic.find("${source_name}") != std::string::npos) {
    out.push_back(
        {Outcome::kWarn,
         "the topic template " + in_quotes(config.topic) +
             " starts from source_name, which is "
             "its default here (" +
             in_quotes(context.source_name) +
             "): another pipeline left at the default that captures tables of the same names "
             "writes into the same topics",
         "set [source] source_name to a name unique to this pipeline (events carry it too); "
         "ignore this when no other pipeline writes to this cluster"});
  }
  std::map<std::string, std::vector<std::string>> topics;  // topic -> tables
  std::map<std::string, std::string> raw_names;            // topic -> its name before sanitizing
  std::vector<std::string> patterns;
  for (const auto& table : context.tables) {
    if (is_pattern(table) || (tmpl.has_placeholders() && context.source_name.empty())) {
      patterns.push_back(table);
      continue;
    }
    std::string raw;
    auto name = tmpl.render(event_for(context.source_name, table), nullptr, &raw);
    if (!name) {
      out.push_back({Outcome::kFail,
                     "the topic for " + table + " (template " + in_quotes(config.topic) +
                         "): " + name.error().message(),
                     "change topic"});
      continue;
    }
    auto& tables_of_topic = topics[*name];
    tables_of_topic.push_back(table);
    // Tables that meet in one topic only once Kafka's refused characters became '_' would
    // mix their rows under the same keys; the sink refuses them at run time too.
    auto [first, added] = raw_names.emplace(*name, raw);
    if (!added && first->second != raw) {
      out.push_back({Outcome::kFail,
                     "tables " + tables_of_topic.front() + " and " + table + " both map to topic " +
                         in_quotes(*name) +
                         " once characters Kafka does not allow become '_', and their keys "
                         "would mix",
                     "give one of them its own topic: a [[pipeline.routes]] rule with its own "
                     "sink, or a route transform that renames the table"});
    }
  }
  if (context.tables.empty() || !patterns.empty()) {
    std::string which;
    for (const auto& p : patterns) which += (which.empty() ? "" : ", ") + p;
    out.push_back({Outcome::kPass,
                   "topics of " + (which.empty() ? std::string("the captured tables") : which) +
                       " are named from the events at run time (template " +
                       in_quotes(config.topic) + "): not looked up",
                   ""});
  }
  for (const auto& [name, tables] : topics) {
    std::string of;
    for (const auto& t : tables) of += (of.empty() ? "" : ", ") + t;
    const std::string what = "topic " + in_quotes(name) + " (for " + of + ")";
    const TopicLookup found =
        look_up(probe.get(), name, probe.remaining_ms(std::chrono::seconds(5)));
    if (found.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.push_back({Outcome::kFail,
                     what + " could not be looked up: " + rd_kafka_err2str(found.err),
                     "make sure the brokers answer, then run preflight again"});
      continue;
    }
    switch (found.topic_err) {
      case RD_KAFKA_RESP_ERR_NO_ERROR:
      case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
        out.push_back({Outcome::kPass,
                       what + " exists (" + std::to_string(found.partitions) + " partition" +
                           (found.partitions == 1 ? "" : "s") + ")",
                       ""});
        check_compaction(
            what,
            compaction_of(resource_settings(probe.get(), RD_KAFKA_RESOURCE_TOPIC, name,
                                            probe.remaining_ms(std::chrono::seconds(5)))),
            "is", tables, context.keyless_tables, context.checkpoint.has_value(), out);
        break;
      case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        if (config.create_topics) {
          const auto refused = creation_refused(probe.get(), config, name,
                                                probe.remaining_ms(std::chrono::seconds(5)));
          if (refused) {
            out.push_back({Outcome::kFail,
                           what +
                               " does not exist, and the brokers would refuse to create it "
                               "as configured (" +
                               refused->first + "): its first record would stop the pipeline",
                           "change [sink] " + refused->second +
                               " (asked without creating anything: CreateTopics validate_only)"});
            break;
          }
          out.push_back({Outcome::kPass,
                         what + " does not exist yet: the sink creates it at its first record "
                                "(create_topics = true; the brokers accept its settings)",
                         ""});
          std::map<std::string, std::string> planned(config.topic_config.begin(),
                                                     config.topic_config.end());
          check_compaction(what, compaction_of(planned), "will be", tables, context.keyless_tables,
                           context.checkpoint.has_value(), out);
        } else {
          out.push_back({Outcome::kFail,
                         what + " does not exist, and with create_topics = false the sink "
                                "creates no topic: its first record would stop the pipeline",
                         "create the topic (kafka-topics.sh --create --topic " + name +
                             "), or set create_topics = true in the sink"});
        }
        break;
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        out.push_back({Outcome::kFail, what + ": not authorized to see it",
                       "grant the sink's principal DESCRIBE and WRITE on the topic (and "
                       "IDEMPOTENT_WRITE on the cluster)"});
        break;
      default:
        out.push_back({Outcome::kFail,
                       what + ": the brokers answer " + rd_kafka_err2name(found.topic_err) + " (" +
                           rd_kafka_err2str(found.topic_err) + ")",
                       "see the broker's log; a start would stop the same way"});
    }
  }
}

void check_transactions(Probe& probe, const KafkaSinkConfig& config,
                        const std::vector<std::int32_t>& broker_ids,
                        std::vector<PreflightCheck>& out) {
  const std::string id = in_quotes(config.transactional_id);
  std::map<std::string, std::string> settings;
  if (!broker_ids.empty()) {
    settings = broker_settings(probe.get(), broker_ids.front(),
                               probe.remaining_ms(std::chrono::seconds(5)));
  }
  const std::int64_t ours = transaction_timeout_ms(config);
  if (auto it = settings.find("transaction.max.timeout.ms"); it != settings.end()) {
    const std::int64_t most = std::atoll(it->second.c_str());
    if (most > 0 && ours > most) {
      out.push_back({Outcome::kFail,
                     "the sink's transaction timeout (" + std::to_string(ours) +
                         " ms) is over the brokers' transaction.max.timeout.ms (" + it->second +
                         " ms): the brokers would refuse its transactions",
                     "lower delivery_timeout_ms (or kafka_properties transaction.timeout.ms) to "
                     "at most " +
                         it->second + ", or raise transaction.max.timeout.ms on the brokers"});
    } else {
      out.push_back({Outcome::kPass,
                     "transaction timeout " + std::to_string(ours) +
                         " ms is within the brokers' transaction.max.timeout.ms (" + it->second +
                         " ms)",
                     ""});
    }
  }
  const TopicLookup log =
      look_up(probe.get(), "__transaction_state", probe.remaining_ms(std::chrono::seconds(5)));
  const bool log_exists =
      log.err == RD_KAFKA_RESP_ERR_NO_ERROR && log.topic_err == RD_KAFKA_RESP_ERR_NO_ERROR;
  if (!log_exists) {
    if (auto it = settings.find("transaction.state.log.replication.factor");
        it != settings.end() &&
        std::atoll(it->second.c_str()) > static_cast<std::int64_t>(broker_ids.size())) {
      out.push_back({Outcome::kFail,
                     "the brokers' transaction.state.log.replication.factor is " + it->second +
                         " but the cluster has " + std::to_string(broker_ids.size()) +
                         " broker(s): the transaction log cannot be created, so the sink's "
                         "first transaction would wait until it times out",
                     "set transaction.state.log.replication.factor and "
                     "transaction.state.log.min.isr to at most the number of brokers"});
    }
  }
  out.push_back({Outcome::kPass,
                 "transactional_id " + id +
                     ": not tried here (taking it would fence a running pipeline's producer); "
                     "a start takes it and fences an older producer with the same id",
                 ""});
}

// Under effectively_once: the checkpoint topic's brokers answer as the same cluster.
void check_same_cluster(const KafkaSinkConfig& config, const InSinkCheckpoint& checkpoint,
                        const std::string& cluster_id, Clock::time_point deadline,
                        std::vector<PreflightCheck>& out) {
  if (cluster_id.empty() || checkpoint.system == config.bootstrap_servers) return;
  KafkaSinkConfig other = config;
  other.bootstrap_servers = checkpoint.system;
  Probe probe(other, deadline);
  std::vector<PreflightCheck> ignored;
  if (!probe.start(ignored)) return;
  char* id = rd_kafka_clusterid(probe.get(), probe.remaining_ms(std::chrono::seconds(5)));
  if (id == nullptr) return;  // the backend's own checks say why it does not answer
  const std::string theirs = id;
  rd_kafka_mem_free(probe.get(), id);
  if (theirs == cluster_id) {
    out.push_back({Outcome::kPass,
                   "the checkpoint topic's brokers " + in_quotes(checkpoint.system) +
                       " are the sink's cluster (" + in_quotes(cluster_id) + ")",
                   ""});
  } else {
    out.push_back({Outcome::kFail,
                   "the checkpoint topic's brokers " + in_quotes(checkpoint.system) +
                       " are cluster " + in_quotes(theirs) + ", the sink's are " +
                       in_quotes(cluster_id) + ": one Kafka transaction cannot span two clusters",
                   "point [state.offset] bootstrap_servers at the sink's cluster (or remove it: it "
                   "then defaults to the sink's)"});
  }
}

}  // namespace

std::string unsupported_feature_hint(const std::string& bootstrap_servers) {
  return "librdkafka says the server lacks a feature every broker since Kafka 0.11 has, which "
         "is what a KRaft controller port (or another listener that is not a broker's) gives: "
         "check that bootstrap_servers (" +
         in_quotes(bootstrap_servers) +
         ") names a broker listener (the broker's listeners / advertised.listeners, not "
         "controller.listener.names)";
}

std::vector<PreflightCheck> preflight(const KafkaSinkConfig& config,
                                      const SinkPreflightContext& context) {
  std::vector<PreflightCheck> out;
  const auto deadline = Clock::now() + kPreflightBudget;
  Probe probe(config, deadline);
  if (!probe.start(out)) return out;
  std::vector<std::int32_t> broker_ids;
  std::string cluster_id;
  if (!brokers_answer(probe, config, out, broker_ids, cluster_id)) return out;
  check_topics(probe, config, context, out);
  if (config.delivery_mode == KafkaDeliveryMode::kTransactional) {
    check_transactions(probe, config, broker_ids, out);
  }
  if (context.checkpoint && context.checkpoint->backend == "kafka_topic") {
    check_same_cluster(config, *context.checkpoint, cluster_id, deadline, out);
  }
  return out;
}

}  // namespace cppcdc::kafka_sink
