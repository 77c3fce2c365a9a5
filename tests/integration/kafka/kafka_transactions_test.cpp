// Kafka transactions against the real broker of CPPCDC_TEST_KAFKA_BOOTSTRAP (each test skips
// without it): the "kafka_topic" checkpoint backend through the checkpoint conformance suite,
// and the transactional Kafka sink's commit, abort and fencing, checked with the independent
// reader (kafka_tool.py, confluent-kafka) in both isolation levels.

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/checkpoint_conformance.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "sink/kafka/testing.hpp"
#include "wait_until.hpp"

namespace cppcdc::conformance {
namespace {

// ---- the kafka_topic backend in the checkpoint conformance suite ---------------------------

class KafkaTopicHarness {
 public:
  static constexpr const char* kName = "kafka_topic";
  static constexpr bool kSharedStorage = true;
  static constexpr bool kNewestWriterWins = true;

  KafkaTopicHarness() : bootstrap_(kafka_it::bootstrap()), topic_(kafka_it::unique_topic("ckpt")) {}

  KafkaTopicCheckpointConfig config() const {
    KafkaTopicCheckpointConfig c;
    c.bootstrap_servers = bootstrap_;
    c.topic = topic_;
    c.timeout_ms = 60'000;
    return c;
  }

  Result<std::unique_ptr<Checkpoint>> open(const std::string& source_id) {
    if (bootstrap_.empty()) {
      return fail(Error::configuration(kafka_it::unavailable_reason()));
    }
    return open_kafka_topic_checkpoint(config(), source_id);
  }

  /// The value stored for `source_id`, changed by `damage`, written over it (a plain record
  /// with the same key, as a careless tool would).
  template <typename Damage>
  bool rewrite(const std::string& source_id, Damage damage) {
    std::optional<std::string> value;
    for (const auto& r : kafka_it::read_topic(bootstrap_, topic_, "read_committed")) {
      if (r.key == source_id) value = r.value;
    }
    if (!value) return false;
    damage(*value);
    const std::string file = testing::TempDir() + "/kafka-topic-damaged-value";
    {
      FILE* f = std::fopen(file.c_str(), "wb");
      if (f == nullptr) return false;
      std::fwrite(value->data(), 1, value->size(), f);
      std::fclose(f);
    }
    const auto o = kafka_it::run_command(kafka_it::tool() + " " + bootstrap_ + " produce " +
                                         topic_ + " " + source_id + " < " + file);
    return o.code == 0;
  }

  bool corrupt(const std::string& source_id) {
    return rewrite(source_id, [](std::string& v) { v[v.size() / 2] ^= 0x5a; });
  }
  bool truncate(const std::string& source_id) {
    return rewrite(source_id, [](std::string& v) { v.resize(v.size() / 2); });
  }
  std::string location(const std::string&) { return topic_; }
  std::string writer_lock_location(const std::string& source_id) {
    return "cppcdc-checkpoint." + source_id;
  }
  // A save is one produce and one commit of librdkafka's: there is no step between them to
  // fail on purpose, and a forked child cannot use the parent's librdkafka threads.
  std::optional<Status> save_failing_part_way(Checkpoint&, const CheckpointRecord&) {
    return std::nullopt;
  }
  std::vector<SaveCrashPoint> crash_points() { return {}; }

 private:
  std::string bootstrap_;
  std::string topic_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(KafkaTopicCheckpoint, CheckpointConformance, KafkaTopicHarness);

}  // namespace
}  // namespace cppcdc::conformance

namespace {

using namespace cppcdc;

Event row(const std::string& table, int id) {
  Event e;
  e.op = Operation::kInsert;
  e.schema = "public";
  e.table = table;
  e.source.source_name = "tx";
  e.source.offset = "0/" + std::to_string(id);
  e.primary_key = std::vector<std::string>{"id"};
  e.after = std::vector<ColumnValue>{ColumnValue{"id", std::to_string(id), false}};
  return e;
}

std::vector<std::string> values(const std::vector<kafka_it::Record>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    auto e = Event::from_json(r.value.value_or(""));
    out.push_back(e ? e->source.offset : std::string("(not an event)"));
  }
  return out;
}

struct TxFixture {
  std::string bootstrap = kafka_it::bootstrap();
  std::string topic = kafka_it::unique_topic("txsink");
  std::string checkpoints = topic + ".checkpoints";

  KafkaSinkConfig sink_config(const std::string& transactional_id) const {
    KafkaSinkConfig c;
    c.bootstrap_servers = bootstrap;
    c.topic = topic;
    c.delivery_mode = KafkaDeliveryMode::kTransactional;
    c.transactional_id = transactional_id;
    c.delivery_timeout_ms = 60'000;
    return c;
  }
  KafkaTopicCheckpointConfig checkpoint_config() const {
    KafkaTopicCheckpointConfig c;
    c.bootstrap_servers = bootstrap;
    c.topic = checkpoints;
    return c;
  }
  InSinkCheckpoint target() const { return {"kafka_topic", bootstrap, checkpoints, "slot_a"}; }
};

CheckpointRecord record_at(const std::string& offset, std::uint64_t events) {
  CheckpointRecord r;
  r.source_type = "postgres";
  r.source_id = "slot_a";
  r.offset = offset;
  r.committed_events = events;
  r.saved_at_ms = 1700000000000;
  return r;
}

TEST(KafkaTransactions,
     AnAbortedBatchIsInvisibleToReadCommittedReadersAndTheCommittedOneCarriesItsCheckpoint) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.topic, 1));
  // The backend creates the compacted checkpoint topic.
  auto checkpoint = open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_a");
  ASSERT_TRUE(checkpoint) << checkpoint.error().report();
  auto sink =
      make_transactional_kafka_sink(f.sink_config(kafka_it::unique_topic("txid")), f.target());
  ASSERT_TRUE(sink) << sink.error().report();
  TransactionalSink& s = **sink;

  const std::vector<Event> aborted = {row("t", 1), row("t", 2)};
  ASSERT_TRUE(s.begin());
  ASSERT_TRUE(s.write(aborted));
  ASSERT_TRUE(s.flush());  // delivered into the transaction
  ASSERT_TRUE(s.abort());

  const std::vector<Event> committed = {row("t", 3), row("t", 4), row("t", 5)};
  ASSERT_TRUE(s.begin());
  ASSERT_TRUE(s.write(committed));
  ASSERT_TRUE(s.flush());
  const auto st = s.commit(record_at("0/5", 3));
  ASSERT_TRUE(st) << st.error().report();
  ASSERT_TRUE(s.close());

  EXPECT_EQ(values(kafka_it::read_topic(bootstrap, f.topic, "read_committed")),
            (std::vector<std::string>{"0/3", "0/4", "0/5"}));
  // The aborted records are in the log: the transactions are real.
  EXPECT_EQ(values(kafka_it::read_topic(bootstrap, f.topic, "read_uncommitted")),
            (std::vector<std::string>{"0/1", "0/2", "0/3", "0/4", "0/5"}));
  // The checkpoint committed with the batch is what the backend loads.
  auto loaded = (*checkpoint)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, record_at("0/5", 3));
}

// SIGTERM while a batch is in flight to a cluster that answers: the sink still waits for its
// records and commits its transaction (while delivery reports keep coming, up to 10 s; a first
// version gave a fixed second, which a loaded CI machine overran), so a routine restart
// delivers nothing twice. Before, the first look at the stop
// request ended the flush and the batch was delivered again after the restart.
TEST(KafkaTransactions, AStopRequestDuringABatchLetsAClusterThatAnswersTakeItWhole) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.topic, 1));
  auto checkpoint = open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_a");
  ASSERT_TRUE(checkpoint) << checkpoint.error().report();
  std::atomic<bool> stop{false};
  auto config = f.sink_config(kafka_it::unique_topic("txid"));
  config.stop = &stop;
  auto sink = make_transactional_kafka_sink(config, f.target());
  ASSERT_TRUE(sink) << sink.error().report();
  TransactionalSink& s = **sink;
  std::vector<Event> batch;
  for (int i = 1; i <= 3000; ++i) batch.push_back(row("t", i));
  ASSERT_TRUE(s.begin());
  ASSERT_TRUE(s.write(batch));
  stop.store(true);  // the records are still on their way
  const auto flushed = s.flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  const auto committed = s.commit(record_at("0/3000", 3000));
  ASSERT_TRUE(committed) << committed.error().report();
  ASSERT_TRUE(s.close());
  EXPECT_EQ(kafka_it::read_topic(bootstrap, f.topic, "read_committed").size(), 3000u);
  auto loaded = (*checkpoint)->load();
  ASSERT_TRUE(loaded && loaded->has_value());
  EXPECT_EQ((*loaded)->offset, "0/3000");
}

TEST(KafkaTransactions, ANewSinkWithTheSameTransactionalIdFencesTheOldOneAndAbortsWhatItLeftOpen) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.topic, 1));
  auto checkpoint = open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_a");
  ASSERT_TRUE(checkpoint) << checkpoint.error().report();
  const std::string txid = kafka_it::unique_topic("txid");

  auto zombie = make_transactional_kafka_sink(f.sink_config(txid), f.target());
  ASSERT_TRUE(zombie) << zombie.error().report();
  ASSERT_TRUE((*zombie)->begin());
  ASSERT_TRUE((*zombie)->write(std::vector<Event>{row("t", 1)}));
  ASSERT_TRUE((*zombie)->flush());  // in the log, in an open transaction

  // A restarted pipeline: its init fences the zombie and aborts the open transaction.
  auto next = make_transactional_kafka_sink(f.sink_config(txid), f.target());
  ASSERT_TRUE(next) << next.error().report();
  ASSERT_TRUE((*next)->begin());
  ASSERT_TRUE((*next)->write(std::vector<Event>{row("t", 2)}));
  ASSERT_TRUE((*next)->flush());
  ASSERT_TRUE((*next)->commit(record_at("0/2", 1)));

  const auto refused = (*zombie)->commit(record_at("0/1", 1));
  ASSERT_FALSE(refused) << "the fenced producer committed";
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTerminal) << refused.error().report();
  EXPECT_NE(refused.error().report().find(txid), std::string::npos) << refused.error().report();
  EXPECT_NE(refused.error().report().find("took over"), std::string::npos)
      << refused.error().report();
  (void)(*zombie)->close();
  ASSERT_TRUE((*next)->close());

  EXPECT_EQ(values(kafka_it::read_topic(bootstrap, f.topic, "read_committed")),
            (std::vector<std::string>{"0/2"}));
  auto loaded = (*checkpoint)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->offset, "0/2");
}

// librdkafka 2.0.2 can turn the abort after a broker outage into a fatal INVALID_TXN_STATE.
// recover() then replaces the producer: the new one's init_transactions aborts what the old
// one left open, and the batch delivered again commits once. After a fence, replacing would
// take the transactional id back from its new owner: recover() refuses.
TEST(KafkaTransactions, AFatalInvalidTxnStateReplacesTheProducerAndTheBatchCommitsOnce) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.topic, 1));
  auto checkpoint = open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_a");
  ASSERT_TRUE(checkpoint) << checkpoint.error().report();
  auto sink =
      make_transactional_kafka_sink(f.sink_config(kafka_it::unique_topic("txid")), f.target());
  ASSERT_TRUE(sink) << sink.error().report();
  TransactionalSink& s = **sink;

  const std::vector<Event> batch = {row("t", 1), row("t", 2)};
  ASSERT_TRUE(s.begin());
  ASSERT_TRUE(s.write(batch));
  ASSERT_TRUE(s.flush());  // in the log, in the open transaction
  ASSERT_TRUE(kafka_sink::raise_fatal_error_for_test(s, RD_KAFKA_RESP_ERR_INVALID_TXN_STATE));
  const auto refused = s.commit(record_at("0/2", 2));
  ASSERT_FALSE(refused) << "a producer in a fatal state committed";
  EXPECT_NE(refused.error().report().find("INVALID_TXN_STATE"), std::string::npos)
      << refused.error().report();

  const auto recovered = s.recover();
  ASSERT_TRUE(recovered) << recovered.error().report();
  ASSERT_TRUE(s.begin());
  ASSERT_TRUE(s.write(batch));
  ASSERT_TRUE(s.flush());
  const auto committed = s.commit(record_at("0/2", 2));
  ASSERT_TRUE(committed) << committed.error().report();
  ASSERT_TRUE(s.close());

  EXPECT_EQ(values(kafka_it::read_topic(bootstrap, f.topic, "read_committed")),
            (std::vector<std::string>{"0/1", "0/2"}));
  EXPECT_EQ(values(kafka_it::read_topic(bootstrap, f.topic, "read_uncommitted")),
            (std::vector<std::string>{"0/1", "0/2", "0/1", "0/2"}))
      << "the old producer's open transaction is not in the log";
  auto loaded = (*checkpoint)->load();
  ASSERT_TRUE(loaded) << loaded.error().report();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->offset, "0/2");

  const std::string fenced_txid = kafka_it::unique_topic("txid");
  auto fenced = make_transactional_kafka_sink(f.sink_config(fenced_txid), f.target());
  ASSERT_TRUE(fenced) << fenced.error().report();
  ASSERT_TRUE((*fenced)->begin());
  ASSERT_TRUE(kafka_sink::raise_fatal_error_for_test(**fenced, RD_KAFKA_RESP_ERR_PRODUCER_FENCED));
  const auto not_replaced = (*fenced)->recover();
  ASSERT_FALSE(not_replaced) << "a fenced producer was replaced";
  EXPECT_EQ(not_replaced.error().kind(), ErrorKind::kTerminal) << not_replaced.error().report();
  // The error names the transactional_id and says who has it now.
  EXPECT_NE(not_replaced.error().report().find("transactional_id \"" + fenced_txid + "\""),
            std::string::npos)
      << not_replaced.error().report();
  EXPECT_NE(not_replaced.error().report().find("another process uses this transactional_id"),
            std::string::npos)
      << not_replaced.error().report();
  (void)(*fenced)->close();
}

// A transaction that stays open past transaction.timeout.ms (a stretch without a position:
// batches carried in one transaction, as a keyless table's snapshot under effectively_once) is
// aborted by the broker, which bumps the producer's epoch; librdkafka 2.0.2 then reports
// _FENCED, as for a second producer with the same transactional_id. The error must name the
// time limit and its remedy, not another process (a user trial was told it was fenced).
TEST(KafkaTransactions, ATransactionOpenPastItsTimeoutIsReportedAsTheTimeoutNotAsAFence) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.topic, 1));
  KafkaSinkConfig config = f.sink_config(kafka_it::unique_topic("txid"));
  config.delivery_timeout_ms = 1'000;
  config.properties.emplace_back("transaction.timeout.ms", "1000");
  auto sink = make_transactional_kafka_sink(config, f.target());
  ASSERT_TRUE(sink) << sink.error().report();
  TransactionalSink& s = **sink;
  ASSERT_TRUE(s.begin());
  // Batches go on into the open transaction, as carried ones do, until the broker aborted it
  // (it looks for timed-out transactions every 10 s by default).
  int id = 0;
  Status written = ok();
  const bool refused = test::wait_until(
      [&] {
        ++id;
        written = s.write(std::vector<Event>{row("t", id)});
        if (written) written = s.flush();
        return !written;
      },
      std::chrono::seconds(90), std::chrono::milliseconds(500));
  ASSERT_TRUE(refused) << "the broker did not abort a transaction open for 90 s with "
                          "transaction.timeout.ms = 1000";
  const std::string report = written.error().report();
  EXPECT_EQ(written.error().kind(), ErrorKind::kTerminal) << report;
  EXPECT_NE(report.find("transaction.timeout.ms (1000 ms)"), std::string::npos) << report;
  EXPECT_NE(report.find("[sink.kafka_properties]"), std::string::npos) << report;
  EXPECT_NE(report.find("transaction.max.timeout.ms"), std::string::npos) << report;
  EXPECT_NE(report.find("fewer rows"), std::string::npos) << report;
  EXPECT_EQ(report.find("took over"), std::string::npos) << report;
  // The commit says the same.
  const auto committed = s.commit(record_at("0/1", 1));
  ASSERT_FALSE(committed);
  EXPECT_NE(committed.error().report().find("transaction.timeout.ms (1000 ms)"),
            std::string::npos)
      << committed.error().report();
  (void)s.close();
  EXPECT_TRUE(kafka_it::read_topic(bootstrap, f.topic, "read_committed").empty());
}

TEST(KafkaTransactions, ACheckpointTopicThatIsNotCompactedIsRefusedNamingIt) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  ASSERT_TRUE(kafka_it::create_topic(bootstrap, f.checkpoints, 1));  // cleanup.policy=delete
  auto checkpoint = open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_a");
  ASSERT_FALSE(checkpoint) << "a topic that deletes by age was accepted";
  EXPECT_EQ(checkpoint.error().kind(), ErrorKind::kConfiguration);
  const std::string report = checkpoint.error().report();
  EXPECT_NE(report.find(f.checkpoints), std::string::npos) << report;
  EXPECT_NE(report.find("cleanup.policy"), std::string::npos) << report;
}

// The backend's own saves carry the sink's transactional_id (header cppcdc.transactional_id),
// as the sink's records do: another key opened with the same transactional_id is refused
// (configuration, naming both keys and the id) until the first key is tombstoned; another
// transactional_id, none at all, or the key itself again are not.
TEST(KafkaTransactions, AnotherKeyWithTheSameTransactionalIdIsRefusedUntilTheFirstIsRemoved) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  TxFixture f;
  KafkaTopicCheckpointConfig c = f.checkpoint_config();
  c.transactional_id = "tid-" + f.topic;
  {
    auto a = open_kafka_topic_checkpoint(c, "slot_a");
    ASSERT_TRUE(a) << a.error().report();
    ASSERT_TRUE((*a)->load());
    auto saved = (*a)->save(record_at("0/10", 1));
    ASSERT_TRUE(saved) << saved.error().report();
  }
  std::optional<std::string> header;
  for (const auto& r : kafka_it::read_topic(bootstrap, f.checkpoints, "read_committed")) {
    if (r.key == "slot_a") header = r.header(kCheckpointTransactionalIdHeader);
  }
  EXPECT_EQ(header, c.transactional_id) << "the header of the backend's save";

  auto b = open_kafka_topic_checkpoint(c, "slot_b");
  ASSERT_FALSE(b) << "a second key with the same transactional_id was accepted";
  EXPECT_EQ(b.error().kind(), ErrorKind::kConfiguration);
  const std::string report = b.error().report();
  EXPECT_NE(report.find("\"slot_a\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"slot_b\""), std::string::npos) << report;
  EXPECT_NE(report.find(c.transactional_id), std::string::npos) << report;

  KafkaTopicCheckpointConfig other = c;
  other.transactional_id = "tid-other-" + f.topic;
  EXPECT_TRUE(open_kafka_topic_checkpoint(other, "slot_b"));
  EXPECT_TRUE(open_kafka_topic_checkpoint(f.checkpoint_config(), "slot_b"));
  {
    auto again = open_kafka_topic_checkpoint(c, "slot_a");
    ASSERT_TRUE(again) << again.error().report();
    auto loaded = (*again)->load();
    ASSERT_TRUE(loaded) << loaded.error().report();
    ASSERT_TRUE(*loaded);
    EXPECT_EQ((*loaded)->offset, "0/10");
  }

  ASSERT_TRUE(remove_kafka_topic_checkpoint(c, "slot_a"));
  auto after = open_kafka_topic_checkpoint(c, "slot_b");
  EXPECT_TRUE(after) << after.error().report();
}

TEST(KafkaTransactions, AnUnreachableClusterIsATransientErrorNamingIt) {
  KafkaTopicCheckpointConfig c;
  c.bootstrap_servers = "127.0.0.1:1";
  c.timeout_ms = 1'500;
  auto checkpoint = open_kafka_topic_checkpoint(c, "slot_a");
  ASSERT_FALSE(checkpoint);
  EXPECT_EQ(checkpoint.error().kind(), ErrorKind::kTransient) << checkpoint.error().report();
  EXPECT_NE(checkpoint.error().report().find("127.0.0.1:1"), std::string::npos)
      << checkpoint.error().report();
}

}  // namespace
