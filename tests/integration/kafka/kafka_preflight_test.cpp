// `cppcdc preflight` with a Kafka sink and the kafka_topic checkpoint backend, against the real
// broker: the brokers must answer within a bounded time (a wrong bootstrap_servers is a FAIL,
// exit 3, not a warning), a KRaft controller port is named as such, the topics are looked up,
// and nothing is created on the cluster (neither the checkpoint topic nor a data topic).
// The source is a PostgreSQL database of the test server (CPPCDC_TEST_PG_DSN) that is ready
// for capture, so that the source's own checks pass and the Kafka lines decide the outcome.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)
#define EXPECT_LACKS(haystack, needle) \
  EXPECT_EQ(std::string(haystack).find(needle), std::string::npos) << (haystack)

/// The controller port scripts/kafka.sh gives a broker: its port + 1.
std::string controller_of(const std::string& bootstrap) {
  const auto colon = bootstrap.rfind(':');
  return bootstrap.substr(0, colon + 1) +
         std::to_string(std::stoi(bootstrap.substr(colon + 1)) + 1);
}

/// A port on 127.0.0.1 where nothing listens (bound, then closed).
std::string unused_address() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

class KafkaPreflight : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = it::test_database("kpf");
    it::fresh_database(db_);
    it::PgSession(it::dsn_for(db_)).query("create table t (id int primary key, v text)");
    // Short: the default control socket (cdc.sock) must fit a Unix socket path.
    static int n = 0;
    dir_ = fs::temp_directory_path() /
           ("cppcdc-kpf-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    tag_ = kafka_it::unique_topic("kpf");
  }
  void TearDown() override {
    it::drop_slots(db_);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  /// A cdc.toml with a Kafka sink on `sink_servers` (`sink_extra` added to [sink]) and the
  /// checkpoint in topic `checkpoint_topic()` (its bootstrap_servers the sink's).
  fs::path config(const std::string& sink_servers, const std::string& sink_extra = "",
                  const std::string& top = "") {
    const fs::path path = dir_ / "cdc.toml";
    std::ofstream(path) << top << "[source]\ndsn = \"" << it::dsn_for(db_)
                        << "\"\ntables = [\"public.t\"]\nslot_name = \"kpf_" << ::getpid()
                        << "\"\nsource_name = \"" << tag_ << "\"\n\n[sink]\ntype = \"kafka\"\n"
                        << "bootstrap_servers = \"" << sink_servers << "\"\n"
                        << sink_extra << "\n[state.offset]\nbackend = \"kafka_topic\"\ntopic = \""
                        << checkpoint_topic() << "\"\n";
    return path;
  }
  std::string checkpoint_topic() const { return tag_ + ".checkpoints"; }
  std::string data_topic() const { return tag_ + ".public.t"; }

  struct Timed {
    it::CliOutcome outcome;
    double seconds = 0;
  };
  static Timed preflight(const fs::path& config) {
    const auto started = Clock::now();
    Timed t;
    t.outcome = it::run_cli({"preflight", "--config", config.string()}, 120);
    t.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return t;
  }

  std::string db_;
  fs::path dir_;
  std::string tag_;
};

TEST_F(KafkaPreflight, AnUnreachableBrokerIsAFailWithinFifteenSecondsNotAWarning) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const auto t = preflight(config(unused_address()));
  const std::string& out = t.outcome.output;
  EXPECT_EQ(t.outcome.code, 3) << out;
  EXPECT_CONTAINS(out, "FAIL  the Kafka brokers \"127.0.0.1:");
  EXPECT_CONTAINS(out, "FAIL  the brokers of the checkpoint topic, \"127.0.0.1:");
  EXPECT_CONTAINS(out, "did not answer within");
  EXPECT_CONTAINS(out, "remedy: check that bootstrap_servers names host:port of a broker");
  EXPECT_LACKS(out, "a running cppcdc holds it");
  EXPECT_LACKS(out, "all checks passed");
  // Sink and backend wait at most 7 s each for a first answer.
  EXPECT_LT(t.seconds, 20.0) << out;
}

TEST_F(KafkaPreflight, ARightBootstrapCreatesNoTopicAndAMissingTopicIsAFail) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const auto t = preflight(config(bootstrap));
  const std::string& out = t.outcome.output;
  EXPECT_EQ(t.outcome.code, 3) << out;  // the data topic is missing, create_topics = false
  EXPECT_CONTAINS(out, "ok    the Kafka brokers \"" + bootstrap + "\" answer (cluster ");
  EXPECT_CONTAINS(out, "ok    the brokers of the checkpoint topic, \"" + bootstrap + "\", answer");
  EXPECT_CONTAINS(out, "the checkpoint topic \"" + checkpoint_topic() +
                           "\" does not exist yet: the first start creates it");
  EXPECT_CONTAINS(out, "FAIL  topic \"" + data_topic() +
                           "\" (for public.t) does not exist, and with create_topics = false");
  EXPECT_CONTAINS(out, "remedy: create the topic");
  EXPECT_LACKS(out, "a running cppcdc holds it");
  // Read-only: neither topic exists afterwards.
  EXPECT_EQ(kafka_it::partition_count(bootstrap, checkpoint_topic()), -1);
  EXPECT_EQ(kafka_it::partition_count(bootstrap, data_topic()), -1);
}

TEST_F(KafkaPreflight, TwoTablesThatMeetInOneTopicOnlyBySanitizingAreAFail) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  it::PgSession(it::dsn_for(db_))
      .query("create table a_b (id int primary key); create table \"a b\" (id int primary key)");
  const fs::path path = config(bootstrap, "create_topics = true\n");
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string toml = text.str();
  const std::string tables = "tables = [\"public.t\"]";
  ASSERT_NE(toml.find(tables), std::string::npos);
  toml.replace(toml.find(tables), tables.size(), "tables = [\"public.a_b\", \"public.a b\"]");
  std::ofstream(path) << toml;
  const auto t = preflight(path);
  const std::string& out = t.outcome.output;
  EXPECT_EQ(t.outcome.code, 3) << out;
  EXPECT_CONTAINS(
      out, "FAIL  tables public.a_b and public.a b both map to topic \"" + tag_ + ".public.a_b\"");
  EXPECT_CONTAINS(out, "remedy: give one of them its own topic");
}

TEST_F(KafkaPreflight, TransactionalWithCreateTopicsPassesAndReadsTheStoredCheckpoint) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  // A stored record, written the way a run writes it.
  KafkaTopicCheckpointConfig c;
  c.bootstrap_servers = bootstrap;
  c.topic = checkpoint_topic();
  {
    auto ckpt = open_kafka_topic_checkpoint(c, "kpf_" + std::to_string(::getpid()));
    ASSERT_TRUE(ckpt) << ckpt.error().report();
    CheckpointRecord record;
    record.source_type = "postgres";
    record.source_id = "kpf_" + std::to_string(::getpid());
    record.offset = "0/16B3748";
    record.saved_at_ms = 1;
    ASSERT_TRUE((*ckpt)->save(record));
  }
  const auto t = preflight(config(bootstrap,
                                  "create_topics = true\ndelivery_mode = \"transactional\"\n"
                                  "transactional_id = \"" +
                                      tag_ + "\"\n",
                                  "delivery_contract = \"effectively_once\"\n"));
  const std::string& out = t.outcome.output;
  EXPECT_CONTAINS(
      out, "ok    the checkpoint topic \"" + checkpoint_topic() + "\" exists and is compacted");
  EXPECT_CONTAINS(out, "ok    checkpoint at 0/16B3748 (kafka_topic");
  EXPECT_CONTAINS(
      out, "topic \"" + data_topic() + "\" (for public.t) does not exist yet: the sink creates it");
  EXPECT_CONTAINS(out, "within the brokers' transaction.max.timeout.ms");
  EXPECT_CONTAINS(out, "transactional_id \"" + tag_ + "\": not tried here");
  // The source compares the record with its slot, which does not exist: that is the source's
  // FAIL; the Kafka lines above all passed.
  EXPECT_LACKS(out, "FAIL  the Kafka");
  EXPECT_LACKS(out, "FAIL  topic");
  EXPECT_EQ(kafka_it::partition_count(bootstrap, data_topic()), -1);
}

// Under effectively_once, the snapshot of a table without a primary key cannot resume inside
// the table, so one Kafka transaction holds all of it: preflight warns, naming the table (not
// the keyed one), the producer's effective transaction.timeout.ms and the remedy. Under
// at_least_once, or without a snapshot, there is no such warning.
TEST_F(KafkaPreflight, UnderEffectivelyOnceAKeylessTablesSnapshotIsAWarningNamingTheTimeout) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  it::PgSession(it::dsn_for(db_))
      .query("create table nokey (a int); alter table nokey replica identity full");
  const auto write = [&](const std::string& contract, const std::string& snapshot_mode) {
    const fs::path path = dir_ / "cdc.toml";
    std::ofstream(path) << "delivery_contract = \"" << contract << "\"\n\n[source]\ndsn = \""
                        << it::dsn_for(db_)
                        << "\"\ntables = [\"public.t\", \"public.nokey\"]\nslot_name = \"kpf_"
                        << ::getpid() << "\"\nsource_name = \"" << tag_ << "\"\n"
                        << "[source.snapshot]\nmode = \"" << snapshot_mode << "\"\n\n"
                        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                        << "\"\ncreate_topics = true\ndelivery_mode = \"transactional\"\n"
                        << "transactional_id = \"" << tag_ << "\"\n"
                        << "[sink.kafka_properties]\n\"transaction.timeout.ms\" = \"150000\"\n\n"
                        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \""
                        << checkpoint_topic() << "\"\n";
    return path;
  };
  auto out = preflight(write("effectively_once", "initial")).outcome.output;
  EXPECT_CONTAINS(out,
                  "warn  effectively_once: table public.nokey has no primary key, so the "
                  "snapshot cannot resume inside it and delivers it whole in one Kafka "
                  "transaction, which must commit within the sink's transaction.timeout.ms "
                  "(150000 ms) or the broker aborts it and the run fails");
  EXPECT_CONTAINS(out,
                  "remedy: give it a primary key; or, if reading it takes longer, raise "
                  "[sink.kafka_properties] \"transaction.timeout.ms\"");
  EXPECT_LACKS(out, "public.t has no primary key");
  out = preflight(write("effectively_once", "never")).outcome.output;
  EXPECT_LACKS(out, "effectively_once: table");
  out = preflight(write("at_least_once", "initial")).outcome.output;
  EXPECT_LACKS(out, "effectively_once: table");
}

// With create_topics, a topic that does not exist yet is checked by asking the brokers to
// validate its creation (nothing is created): a replication factor above the broker count and
// a topic config the broker does not know are FAILs naming the setting. A topic that will be
// compacted passes when every table going there has a key.
TEST_F(KafkaPreflight, TopicCreationTheBrokersWouldRefuseIsAFailAndCompactionOfKeyedTablesPasses) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  {
    const auto t =
        preflight(config(bootstrap, "create_topics = true\ntopic_replication_factor = 3\n"));
    const std::string& out = t.outcome.output;
    EXPECT_EQ(t.outcome.code, 3) << out;
    EXPECT_CONTAINS(out, "FAIL  topic \"" + data_topic() +
                             "\" (for public.t) does not exist, and the brokers would refuse");
    EXPECT_CONTAINS(out, "INVALID_REPLICATION_FACTOR");
    EXPECT_CONTAINS(out, "remedy: change [sink] topic_replication_factor");
  }
  {
    const auto t = preflight(config(bootstrap,
                                    "create_topics = true\n[sink.topic_config]\n"
                                    "\"cleanup.polcy\" = \"compact\"\n"));
    const std::string& out = t.outcome.output;
    EXPECT_EQ(t.outcome.code, 3) << out;
    EXPECT_CONTAINS(out, "the brokers would refuse to create it");
    EXPECT_CONTAINS(out, "remedy: change [sink] topic_config");
  }
  {
    const auto t = preflight(config(bootstrap,
                                    "create_topics = true\n[sink.topic_config]\n"
                                    "\"cleanup.policy\" = \"compact\"\n"));
    const std::string& out = t.outcome.output;
    EXPECT_CONTAINS(out, "does not exist yet: the sink creates it at its first record") << out;
    // public.t has a primary key: the source says so, and compaction is fine.
    EXPECT_CONTAINS(out, "ok    topic \"" + data_topic() +
                             "\" (for public.t) will be compacted (cleanup.policy=compact), and "
                             "every table going there has a key");
    EXPECT_LACKS(out, "FAIL  topic");
  }
  EXPECT_EQ(kafka_it::partition_count(bootstrap, data_topic()), -1);
}

// Preflight follows the routes: each sink is checked for the tables routed to it, and a table
// without a key bound for a compacted topic is a FAIL naming the table and the sink (the broker
// would refuse its records), while the same table routed to a plain topic passes.
TEST_F(KafkaPreflight, RoutesDecideEachSinksTablesAndAKeylessTableForACompactedTopicFails) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  it::PgSession(it::dsn_for(db_))
      .query("create table nokey (id int, v text); alter table nokey replica identity full");
  const std::string compacted = tag_ + ".compacted";
  const auto write = [&](const std::string& routes) {
    const fs::path path = dir_ / "routes.toml";
    std::ofstream(path) << "[source]\ndsn = \"" << it::dsn_for(db_)
                        << "\"\ntables = [\"public.t\", \"public.nokey\"]\nslot_name = \"kpf_"
                        << ::getpid() << "\"\nsource_name = \"" << tag_
                        << "\"\n\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                        << "\"\ntopic = \"" << compacted
                        << "\"\ncreate_topics = true\n[sink.topic_config]\n"
                           "\"cleanup.policy\" = \"compact\"\n\n[[sinks]]\nname = \"plain\"\n"
                           "type = \"kafka\"\nbootstrap_servers = \""
                        << bootstrap << "\"\ncreate_topics = true\n\n"
                        << routes << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \""
                        << checkpoint_topic() << "\"\n";
    return path;
  };
  {
    // The keyless table goes to "plain", the keyed one to the compacted [sink].
    const auto t =
        preflight(write("[[pipeline.routes]]\ntables = [\"public.nokey\"]\n"
                        "sink = \"plain\"\n\n"));
    const std::string& out = t.outcome.output;
    EXPECT_EQ(t.outcome.code, 0) << out;
    EXPECT_CONTAINS(out, "ok    [sink]: topic \"" + compacted +
                             "\" (for public.t) will be compacted (cleanup.policy=compact), and "
                             "every table going there has a key");
    EXPECT_CONTAINS(out, "ok    [[sinks]] \"plain\": topic \"" + tag_ +
                             ".public.nokey\" (for public.nokey) does not exist yet");
    // Neither sink is asked about a topic the routes send nothing to.
    EXPECT_LACKS(out, tag_ + ".public.t\"");
    EXPECT_LACKS(out, "public.t, public.nokey");
  }
  {
    // A route that sends the keyed table to "plain" leaves the keyless one to the compacted
    // [sink]: a FAIL naming it.
    const auto t =
        preflight(write("[[pipeline.routes]]\ntables = [\"public.t\"]\n"
                        "sink = \"plain\"\n\n"));
    const std::string& out = t.outcome.output;
    EXPECT_EQ(t.outcome.code, 3) << out;
    EXPECT_CONTAINS(out, "FAIL  [sink]: topic \"" + compacted +
                             "\" (for public.nokey) will be compacted (cleanup.policy=compact), "
                             "but public.nokey has no key");
    EXPECT_CONTAINS(out,
                    "remedy: give public.nokey a primary key, key it with a key_shaping "
                    "transform, or route it to a topic that is not compacted");
    EXPECT_CONTAINS(out, "ok    [[sinks]] \"plain\": topic \"" + tag_ +
                             ".public.t\" (for public.t) does not exist yet");
  }
  {
    // A route whose globs match no captured table: its sink gets nothing, and preflight says so.
    const auto t =
        preflight(write("[[pipeline.routes]]\ntables = [\"public.nokye\"]\n"
                        "sink = \"plain\"\n\n"));
    const std::string& out = t.outcome.output;
    EXPECT_CONTAINS(out, "warn  [[sinks]] \"plain\": no captured table is routed to it") << out;
    EXPECT_CONTAINS(out, "(for public.t, public.nokey) will be compacted");
  }
  {
    // Under effectively_once the pipeline has one sink: the remedy offers no route (which the
    // loader would refuse) but leaving the table out.
    const fs::path path = dir_ / "eos.toml";
    std::ofstream(path) << "delivery_contract = \"effectively_once\"\n\n[source]\ndsn = \""
                        << it::dsn_for(db_)
                        << "\"\ntables = [\"public.t\", \"public.nokey\"]\nslot_name = \"kpf_"
                        << ::getpid() << "\"\nsource_name = \"" << tag_
                        << "\"\n\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                        << "\"\ntopic = \"" << compacted
                        << "\"\ncreate_topics = true\ndelivery_mode = \"transactional\"\n"
                           "transactional_id = \""
                        << tag_ << "\"\n[sink.topic_config]\n\"cleanup.policy\" = \"compact\"\n\n"
                        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \""
                        << checkpoint_topic() << "\"\n";
    const auto t = preflight(path);
    const std::string& out = t.outcome.output;
    EXPECT_EQ(t.outcome.code, 3) << out;
    EXPECT_CONTAINS(out, "but public.nokey has no key");
    EXPECT_CONTAINS(out, "or leave it out of [source] tables (effectively_once allows one sink");
    EXPECT_LACKS(out, "[[pipeline.routes]]");
  }
  EXPECT_EQ(kafka_it::partition_count(bootstrap, compacted), -1);
}

TEST_F(KafkaPreflight, ACheckpointTopicThatIsNotCompactedIsAFailNamingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, checkpoint_topic(), 1));
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, data_topic(), 1));
  const auto t = preflight(config(bootstrap));
  const std::string& out = t.outcome.output;
  EXPECT_EQ(t.outcome.code, 3) << out;
  EXPECT_CONTAINS(out, "FAIL  the checkpoint topic \"" + checkpoint_topic() + "\" on \"" +
                           bootstrap + "\" has cleanup.policy=delete");
  EXPECT_CONTAINS(out, "--add-config cleanup.policy=compact");
  EXPECT_CONTAINS(out, "ok    topic \"" + data_topic() + "\" (for public.t) exists (1 partition)");
}

TEST_F(KafkaPreflight, AKraftControllerPortIsNamedAsSuch) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const std::string controller = controller_of(bootstrap);
  const auto t = preflight(config(controller));
  const std::string& out = t.outcome.output;
  EXPECT_EQ(t.outcome.code, 3) << out;
  EXPECT_CONTAINS(
      out, "FAIL  bootstrap_servers \"" + controller + "\" answers, but not as a Kafka broker");
  EXPECT_CONTAINS(out, "KRaft controller port");
  EXPECT_LT(t.seconds, 20.0) << out;
  // One FAIL for one mistake: the checkpoint backend took the address from [sink].
  EXPECT_CONTAINS(out, "1 check failed");
  EXPECT_CONTAINS(out,
                  "the checkpoint topic was not checked: its brokers are [sink] "
                  "bootstrap_servers");
}

TEST_F(KafkaPreflight, DefaultSourceNameInTheTopicTemplateIsAWarning) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  fs::path path = config(bootstrap, "create_topics = true\n");
  // The same file without source_name.
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.erase(text.find("source_name = "),
             text.find('\n', text.find("source_name = ")) - text.find("source_name = ") + 1);
  std::ofstream(path, std::ios::trunc) << text;
  const auto t = preflight(path);
  EXPECT_CONTAINS(t.outcome.output,
                  "warn  the topic template \"${source_name}.${schema}.${table}\""
                  " starts from source_name, which is its default here "
                  "(\"postgres\")");
  EXPECT_CONTAINS(t.outcome.output, "remedy: set [source] source_name");
}

// At run time too, the controller port is named: the sink's first record.
TEST(KafkaSinkOnController, OpeningTheSinkSaysBootstrapServersMayBeAControllerPort) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  KafkaSinkConfig config;
  config.bootstrap_servers = controller_of(bootstrap);
  auto opened = make_kafka_sink(config);
  ASSERT_FALSE(opened) << "a sink opened on a controller port";
  EXPECT_EQ(opened.error().kind(), ErrorKind::kConfiguration) << opened.error().report();
  EXPECT_EQ(opened.error().setting(), "bootstrap_servers") << opened.error().report();
  EXPECT_CONTAINS(opened.error().report(), "KRaft controller port");
}

// The same when open does not wait for the brokers (startup_timeout_ms = 0): the first record
// says it.
TEST(KafkaSinkOnController, TheFirstRecordSaysBootstrapServersMayBeAControllerPort) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  KafkaSinkConfig config;
  config.bootstrap_servers = controller_of(bootstrap);
  config.delivery_timeout_ms = 10'000;
  config.startup_timeout_ms = 0;
  auto sink = make_kafka_sink(config);
  ASSERT_TRUE(sink) << sink.error().report();
  Event e;
  e.source.source_name = "db";
  e.schema = "public";
  e.table = "t";
  e.op = Operation::kInsert;
  const std::vector<Event> events{e};
  Status st = (*sink)->write(events);
  if (st) st = (*sink)->flush();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kConfiguration) << st.error().report();
  EXPECT_EQ(st.error().setting(), "bootstrap_servers") << st.error().report();
  EXPECT_CONTAINS(st.error().report(), "not as a Kafka broker");
  EXPECT_CONTAINS(st.error().report(), "KRaft controller port");
}

}  // namespace
}  // namespace cppcdc
