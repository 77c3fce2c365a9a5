// A broker that goes away under a running `cppcdc run` and comes back: the Kafka sink's failures
// are retried under the shared back-off (the same batch delivered again after
// Sink::recover()), the run does not end, and nothing is lost; under effectively_once nothing is
// delivered twice either. The broker is the test's own (scripts/kafka.sh, a port next to the
// shared one), restarted twice while PostgreSQL keeps changing rows. And an outage shorter than
// delivery_timeout_ms, where no call fails but a flush waits: the health verdict and the log
// say so while it lasts.

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace std::chrono_literals;

namespace {

/// `kafka_checkpoint`: under at_least_once, the kafka_topic checkpoint backend (its own
/// producer saves the records) instead of local_fs.
void ride_out_restarts(const std::string& shared, bool exactly_once,
                       bool kafka_checkpoint = false) {
  kafka_it::OwnBroker broker(shared, exactly_once ? 42 : kafka_checkpoint ? 52 : 40);
  ASSERT_TRUE(broker.started) << "scripts/kafka.sh could not start a broker on port "
                              << broker.port;
  const std::string bootstrap = broker.bootstrap;
  const std::string db = it::test_database(exactly_once ? "kbr_eos" : "kbr_alo");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = kafka_it::unique_topic("restart");
  it::PgSession s(it::dsn_for(db));
  s.query(
      "create table t (id int primary key, v int not null); create table marker (id int primary "
      "key)");
  {
    std::ofstream cfg(dir / "cdc.toml");
    if (exactly_once) cfg << "delivery_contract = \"effectively_once\"\n\n";
    cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\ntables = [\"public.t\", \"public.marker\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap << "\"\n"
        << "create_topics = true\ntopic_partitions = 2\ntopic_replication_factor = 1\n"
        << "delivery_timeout_ms = 4000\n";
    if (exactly_once) {
      cfg << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
          << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
          << ".checkpoints\"\ntimeout_ms = 60000\n\n";
    } else if (kafka_checkpoint) {
      cfg << "\n[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source
          << ".checkpoints\"\ntimeout_ms = 60000\n\n";
    } else {
      cfg << "\n[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n";
    }
    cfg << "[runtime]\nmax_buffer_size = 200\nmax_poll_wait_ms = 100\n"
        << "recoverable_error_backoff_initial_ms = 100\nrecoverable_error_backoff_max_ms = 1000\n"
        << "recoverable_error_breaker_consecutive_threshold = 1000\n";
  }
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  it::KillAtExit guard{child};

  // Inserts, then updates of the same rows: every change must be in Kafka.
  std::atomic<bool> stop{false};
  std::atomic<int> inserted{0};
  std::thread load([&] {
    it::PgSession m(it::dsn_for(db));
    int i = 0;
    while (!stop.load()) {
      ++i;
      m.query("insert into t values (" + std::to_string(i) + ", 0)");
      if (i % 3 == 0) m.query("update t set v = v + 1 where id = " + std::to_string(i - 1));
      inserted.store(i);
      std::this_thread::sleep_for(5ms);  // pacing: the load spans the restarts
    }
  });
  struct Joiner {  // a failed assertion returns early: the load thread still ends
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, load};
  const fs::path log = dir / "cppcdc.log";
  for (int restart = 0; restart < 2; ++restart) {
    ASSERT_TRUE(it::wait_until([&] { return inserted.load() > 200 * (restart + 1); }, 60s));
    const std::size_t refused_before = kafka_it::count_in_file(log, "Connection refused");
    ASSERT_TRUE(broker.stop());
    // The sink notices (librdkafka reports the refused connections) while batches keep coming.
    ASSERT_TRUE(it::wait_until(
        [&] { return kafka_it::count_in_file(log, "Connection refused") > refused_before; }, 120s))
        << it::log_tail(log);
    ASSERT_TRUE(broker.start());
  }
  ASSERT_TRUE(it::wait_until([&] { return inserted.load() > 800; }, 60s));
  stop.store(true);
  load.join();
  s.query("insert into marker values (1)");
  ASSERT_TRUE(it::wait_until(
      [&] {
        return kafka_it::partition_count(bootstrap, source + ".public.marker") > 0 &&
               !kafka_it::read_topic(bootstrap, source + ".public.marker",
                                     exactly_once ? "read_committed" : "read_uncommitted")
                    .empty();
      },
      180s, 1s))
      << it::log_tail(log);
  // The run rode the restarts out: it is still the first process, and stops cleanly.
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);

  std::map<std::pair<std::uint64_t, std::uint64_t>, int> copies;  // (tx, index) -> count
  std::set<std::string> inserted_ids;
  std::size_t updates = 0;
  for (const auto& r : kafka_it::read_topic(bootstrap, source + ".public.t",
                                            exactly_once ? "read_committed" : "read_uncommitted")) {
    ASSERT_TRUE(r.value);
    auto e = Event::from_json(*r.value);
    ASSERT_TRUE(e) << e.error().report();
    ASSERT_TRUE(e->transaction);
    ++copies[{e->transaction->tx_id, e->transaction->event_index}];
    if (e->op == Operation::kInsert) inserted_ids.insert(e->after->front().text.value_or(""));
    if (e->op == Operation::kUpdate) ++updates;
  }
  const int total = inserted.load();
  EXPECT_EQ(inserted_ids.size(), static_cast<std::size_t>(total)) << "an insert is missing";
  EXPECT_GE(updates, static_cast<std::size_t>(total / 3 - 1)) << "an update is missing";
  std::size_t duplicates = 0;
  for (const auto& [id, n] : copies) duplicates += static_cast<std::size_t>(n - 1);
  if (exactly_once) {
    EXPECT_EQ(duplicates, 0u) << "a read_committed reader saw a change twice";
  }
  std::cout << total << " inserts, " << updates << " updates, " << duplicates << " duplicates, "
            << kafka_it::count_in_file(log, "delivering the same batch again")
            << " retried deliveries over two broker restarts" << std::endl;
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(KafkaBrokerRestart, AtLeastOnceRidesOutTwoRestartsWithoutLosingAChange) {
  KAFKA_TEST_BOOTSTRAP(shared);
  ride_out_restarts(shared, false);
}

TEST(KafkaBrokerRestart, AtLeastOnceWithTheKafkaTopicCheckpointRidesOutTwoRestarts) {
  KAFKA_TEST_BOOTSTRAP(shared);
  ride_out_restarts(shared, false, true);
}

TEST(KafkaBrokerRestart, EffectivelyOnceRidesOutTwoRestartsWithEveryChangeOnce) {
  KAFKA_TEST_BOOTSTRAP(shared);
  ride_out_restarts(shared, true);
}

}  // namespace

namespace {

struct Reply {
  int status = -1;  ///< -1: no answer
  std::string body;
};

Reply http_get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(10, 0);
  auto res = client.Get(path.c_str());
  if (!res) return {};
  return {res->status, res->body};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// The broker goes away for longer than the stall threshold (30 s) but shorter than
// delivery_timeout_ms: the sink's flush waits, nothing fails. /readyz must still turn 503
// (stalled:delivery_failing, naming the blocked stage and librdkafka's complaint), the log must
// say so once, and both must clear when the broker is back, with the change delivered.
TEST(KafkaBrokerOutage, ABlockedFlushTurnsReadinessStalledAndTheLogSaysSo) {
  KAFKA_TEST_BOOTSTRAP(shared);
  kafka_it::OwnBroker broker(shared, 48);
  ASSERT_TRUE(broker.started) << "scripts/kafka.sh could not start a broker on port "
                              << broker.port;
  const std::string db = it::test_database("kbr_outage");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = kafka_it::unique_topic("outage");
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\ntables = [\"public.t\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << broker.bootstrap << "\"\n"
        << "create_topics = true\ndelivery_timeout_ms = 600000\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n"
        << "[runtime]\nmax_poll_wait_ms = 100\n\n"
        << "[admin]\nlisten = \"127.0.0.1:0\"\n";
  }
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  const auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string marker = "admin server listening on http://127.0.0.1:";
  ASSERT_TRUE(it::wait_until([&] { return has(log_text(), marker); }, 30s)) << log_text();
  const std::string text = log_text();
  const int port = std::atoi(text.c_str() + text.find(marker) + marker.size());
  const std::string topic = source + ".public.t";
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until(
      [&] {
        return kafka_it::partition_count(broker.bootstrap, topic) > 0 &&
               kafka_it::read_topic(broker.bootstrap, topic).size() == 1;
      },
      60s, 200ms))
      << log_text();

  ASSERT_TRUE(broker.stop());
  s.query("insert into t values (2)");
  Reply ready;
  ASSERT_TRUE(it::wait_until(
      [&] {
        ready = http_get(port, "/readyz");
        return ready.status == 503;
      },
      120s, 500ms))
      << ready.body << "\n"
      << log_text();
  EXPECT_TRUE(has(ready.body, "stalled:delivery_failing")) << ready.body;
  EXPECT_TRUE(has(ready.body, "now in flush")) << ready.body;
  EXPECT_TRUE(has(ready.body, "the sink reports: kafka:")) << ready.body;
  EXPECT_TRUE(has(ready.body, "Connection refused")) << ready.body;
  ASSERT_TRUE(it::wait_until(
      [&] { return has(log_text(), "health: stalled:delivery_failing: a delivery attempt"); }, 10s))
      << log_text();
  // The sink says on its own that its records get no delivery report, and librdkafka's
  // complaint, at most 10 s into the wait (not at delivery_timeout_ms, ten minutes here).
  ASSERT_TRUE(it::wait_until(
      [&] {
        const std::string t = log_text();
        return has(t, "records to \"" + broker.bootstrap + "\" have no delivery report after") &&
               has(t, "waiting up to delivery_timeout_ms (600000 ms)");
      },
      30s))
      << log_text();
  // Nothing failed: the change waits in the producer, and comes through once the broker is back.
  EXPECT_FALSE(has(log_text(), "delivering the same batch again")) << log_text();

  ASSERT_TRUE(broker.start());
  ASSERT_TRUE(it::wait_until([&] { return http_get(port, "/readyz").status == 200; }, 120s, 500ms))
      << http_get(port, "/readyz").body << "\n"
      << log_text();
  // Healthy or idle (the change was polled before the outage): either ends the stall.
  ASSERT_TRUE(it::wait_until(
      [&] {
        return has(log_text(), "again after") &&
               has(log_text(), "ms stalled (stalled:delivery_failing)");
      },
      10s))
      << log_text();
  EXPECT_TRUE(has(log_text(), "takes records again")) << log_text();
  EXPECT_EQ(kafka_it::read_topic(broker.bootstrap, topic).size(), 2u);
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << it::log_tail(log);
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// SIGTERM while the sink waits on brokers it cannot reach (here the topic look-up of the first
// record, create_topics on, delivery_timeout_ms ten minutes): `cppcdc run` stops within seconds,
// exits 0 and says that the batch comes again. It used to wait out delivery_timeout_ms and exit 1
// without a word (a service manager's stop timeout kills it first). No broker is needed.
TEST(KafkaBrokerOutage, SigtermDuringAWaitOnUnreachableBrokersStopsPromptlyAndCleanly) {
  const std::string db = it::test_database("kbr_sigterm");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << db << "\"\ntables = [\"public.t\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:1\"\n"
        << "create_topics = true\ndelivery_timeout_ms = 600000\nstartup_timeout_ms = 0\n\n"
        << "[state.offset]\nbackend = \"local_fs\"\ndir = \"state\"\n\n"
        << "[runtime]\nmax_poll_wait_ms = 100\n\n"
        << "[admin]\nlisten = \"127.0.0.1:0\"\n";
  }
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  const auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string marker = "admin server listening on http://127.0.0.1:";
  ASSERT_TRUE(it::wait_until([&] { return has(log_text(), marker); }, 30s)) << log_text();
  const std::string text = log_text();
  const int port = std::atoi(text.c_str() + text.find(marker) + marker.size());
  s.query("insert into t values (1)");
  // The sink names what it waits for; the verdict carries it.
  Reply ready;
  ASSERT_TRUE(it::wait_until(
      [&] {
        ready = http_get(port, "/readyz");
        return has(ready.body, "for the metadata of topic");
      },
      60s, 200ms))
      << ready.body << "\n"
      << log_text();
  // Again and again while it stops, as GNU timeout (twice) and impatient people do: a repeated
  // signal must not kill the process half-way (it used to: exit 143, no last line, the lock
  // file and the control socket left behind).
  const auto signalled = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(child, SIGTERM), 0);
  int status = -1;
  const bool exited = it::wait_until(
      [&] {
        if (waitpid(child, &status, WNOHANG) == child) return true;
        kill(child, SIGTERM);
        return false;
      },
      30s, 10ms);
  ASSERT_TRUE(exited) << "cppcdc did not stop within 30 s of SIGTERM\n" << log_text();
  child = -1;
  // Promptly: the brokers are known to be unreachable, so no wait of the stop (a final flush,
  // an abort) may run out its timeout (a trial saw 7.8 s, five of them one producer's flush).
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 4s) << log_text();
  // The stop left the batch behind while the brokers were away: exit 1, so a supervisor sees
  // it (fresh-user trial of issue 15: it exited 0).
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << "\n" << log_text();
  EXPECT_TRUE(has(log_text(), "exit status 1: the stop came while a sink was not taking"))
      << log_text();
  EXPECT_TRUE(has(log_text(), "stopping with 1 unacknowledged event (not delivered to"))
      << log_text();
  EXPECT_TRUE(has(log_text(), "cut short by the stop request")) << log_text();
  EXPECT_TRUE(has(log_text(), "cppcdc stopped by signal")) << log_text();
  EXPECT_FALSE(fs::exists(dir / "state" / "cdc.sock")) << "the control socket was left behind";
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The same under effectively_once, with the broker gone after the pipeline started: the batch
// in flight waits in its transaction, the reconciliation marker's producer holds the marker, and
// the kafka_topic checkpoint backend has its own producer. SIGTERM must end all of that at once
// (a trial waited 7.8 s: the sink flushed the marker producer for 5 s while the brokers were
// unreachable). Nothing is lost: the checkpoint did not pass the batch, which comes again.
TEST(KafkaBrokerOutage, SigtermDuringAnOutageUnderEffectivelyOnceStopsPromptly) {
  KAFKA_TEST_BOOTSTRAP(shared);
  kafka_it::OwnBroker broker(shared, 50);
  ASSERT_TRUE(broker.started) << "scripts/kafka.sh could not start a broker on port "
                              << broker.port;
  const std::string db = it::test_database("kbr_eos_sigterm");
  it::fresh_database(db);
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = kafka_it::unique_topic("eos-sigterm");
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  {
    std::ofstream cfg(dir / "cdc.toml");
    cfg << "delivery_contract = \"effectively_once\"\n\n"
        << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
        << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
        << "source_name = \"" << source << "\"\ntables = [\"public.t\"]\n\n"
        << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << broker.bootstrap << "\"\n"
        << "create_topics = true\ndelivery_timeout_ms = 600000\n"
        << "delivery_mode = \"transactional\"\ntransactional_id = \"" << source << "\"\n\n"
        << "[state.offset]\nbackend = \"kafka_topic\"\ntopic = \"" << source << ".checkpoints\"\n\n"
        << "[runtime]\nmax_poll_wait_ms = 100\n\n"
        << "[admin]\nlisten = \"127.0.0.1:0\"\n";
  }
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  const auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string marker = "admin server listening on http://127.0.0.1:";
  ASSERT_TRUE(it::wait_until([&] { return has(log_text(), marker); }, 30s)) << log_text();
  const std::string text = log_text();
  const int port = std::atoi(text.c_str() + text.find(marker) + marker.size());
  const std::string topic = source + ".public.t";
  s.query("insert into t values (1)");
  ASSERT_TRUE(it::wait_until(
      [&] {
        return kafka_it::partition_count(broker.bootstrap, topic) > 0 &&
               kafka_it::read_topic(broker.bootstrap, topic, "read_committed").size() == 1;
      },
      60s, 200ms))
      << log_text();

  const std::size_t refused_before = kafka_it::count_in_file(log, "Connection refused");
  ASSERT_TRUE(broker.stop());
  // The sink knows the brokers are unreachable (librdkafka reported the refused connections).
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::count_in_file(log, "Connection refused") > refused_before; }, 60s))
      << log_text();
  // A batch goes into the transaction and waits for the brokers (the marker is written first).
  // Or, when the source's idle position moved just before (the server's own WAL records), the
  // commit of that idle checkpoint waits for them first and holds the poll back: a stop during
  // an outage as well.
  s.query("insert into t values (2)");
  bool batch_in_flight = false;
  ASSERT_TRUE(it::wait_until(
      [&] {
        const std::string body = http_get(port, "/admin/snapshot").body;
        batch_in_flight = has(body, "\"in_flight\":1");
        return batch_in_flight || has(body, "in commit of an idle checkpoint");
      },
      30s, 20ms))
      << http_get(port, "/admin/snapshot").body << "\n"
      << log_text();
  const auto signalled = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(child, SIGTERM), 0);
  int status = -1;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 60s, 10ms))
      << "cppcdc did not stop within 60 s of SIGTERM\n"
      << log_text();
  child = -1;
  const auto took = std::chrono::steady_clock::now() - signalled;
  // Before the marker producer's 5 s flush could have ended (and well before any of the
  // producers' own timeouts): nothing waits on brokers the sink knows to be unreachable.
  EXPECT_LT(took, 4s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms\n"
                      << log_text();
  std::cout << "stopped " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after SIGTERM" << std::endl;
  // A batch left behind exits 1; a stop during an idle checkpoint's commit leaves no event.
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == (batch_in_flight ? 1 : 0))
      << status << "\n"
      << log_text();
  if (batch_in_flight) {
    EXPECT_TRUE(has(log_text(), "stopping with 1 unacknowledged event")) << log_text();
  }
  EXPECT_TRUE(has(log_text(), "cppcdc stopped by signal")) << log_text();

  // Nothing was lost: the second row comes with the broker back and a new run.
  ASSERT_TRUE(broker.start());
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 120);
  ASSERT_TRUE(it::wait_until(
      [&] { return kafka_it::read_topic(broker.bootstrap, topic, "read_committed").size() == 2; },
      120s, 500ms))
      << log_text();
  EXPECT_EQ(it::stop_cppcdc_process(child, SIGTERM), 0) << log_text();
  it::drop_slots(db);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

namespace {

// A configuration whose Kafka parts point where no broker listens (127.0.0.1:1).
fs::path unreachable_kafka_config(const std::string& db, const std::string& checkpoint,
                                  const std::string& sink_extra) {
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-" + db);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream cfg(dir / "cdc.toml");
  cfg << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
      << "slot_name = \"" << db << "\"\npublication_name = \"" << db << "_pub\"\n"
      << "source_name = \"" << db << "\"\ntables = [\"public.t\"]\n\n"
      << "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:1\"\n"
      << sink_extra << "\n[state.offset]\n"
      << checkpoint << "\n[admin]\nlisten = \"127.0.0.1:0\"\n";
  return dir;
}

std::string slots_of(const std::string& db) {
  it::PgSession admin(it::admin_dsn());
  return admin.scalar("select count(*) from pg_replication_slots where slot_name = '" + db + "'");
}

}  // namespace

// A wrong broker address (here a port nobody listens on) stops the start when the sink opens,
// naming bootstrap_servers, before the source creates its replication slot or reads a row. A
// trial run used to create the slot, take the snapshot and then spend about 20 minutes in
// 120-second delivery attempts before giving up.
TEST(KafkaBrokerOutage, ABootstrapAddressNoBrokerAnswersStopsTheStartBeforeTheSourceIsTouched) {
  const std::string db = it::test_database("kbr_wrongport");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  s.query("insert into t values (1)");
  const fs::path dir = unreachable_kafka_config(db, "backend = \"local_fs\"\ndir = \"state\"\n",
                                                "startup_timeout_ms = 2000\n");
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = it::run_cli({"run", "--config", (dir / "cdc.toml").string()}, 60);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s) << run.output;
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_TRUE(
      has(run.output, "no broker of bootstrap_servers \"127.0.0.1:1\" answered within 2000 ms"))
      << run.output;
  EXPECT_TRUE(has(run.output, "Connection refused")) << run.output;
  EXPECT_TRUE(has(run.output, "nothing was read from the source")) << run.output;
  EXPECT_EQ(slots_of(db), "0") << "the start created a replication slot before the sink opened";
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// While the kafka_topic checkpoint backend waits for brokers at the start: the admin server
// already answers (/readyz 503 naming the step), and SIGTERM ends the wait with exit 0 (it was
// exit 1 with an error line, and nothing listened on the admin address for those seconds).
TEST(KafkaBrokerOutage, WhileTheCheckpointOpensTheProbesAnswerAndSigtermStopsCleanly) {
  const std::string db = it::test_database("kbr_ckptopen");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  const fs::path dir =
      unreachable_kafka_config(db, "backend = \"kafka_topic\"\ntimeout_ms = 600000\n", "");
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 0);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  const auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string marker = "admin server listening on http://127.0.0.1:";
  ASSERT_TRUE(it::wait_until([&] { return has(log_text(), marker); }, 30s)) << log_text();
  const std::string text = log_text();
  const int port = std::atoi(text.c_str() + text.find(marker) + marker.size());
  Reply ready;
  ASSERT_TRUE(it::wait_until(
      [&] {
        ready = http_get(port, "/readyz");
        return ready.status == 503 && has(ready.body, "starting: opening the checkpoint");
      },
      30s, 200ms))
      << ready.status << " " << ready.body << "\n"
      << log_text();
  EXPECT_EQ(http_get(port, "/livez").status, 200);
  ASSERT_EQ(kill(child, SIGTERM), 0);
  int status = -1;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 30s, 100ms))
      << "cppcdc did not stop within 30 s of SIGTERM\n"
      << log_text();
  child = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log_text();
  EXPECT_TRUE(has(log_text(), "cppcdc stopped by signal while opening the checkpoint"))
      << log_text();
  EXPECT_FALSE(has(log_text(), " error ")) << log_text();
  EXPECT_EQ(slots_of(db), "0");
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// With no broker up (a refused connection: librdkafka reports "all brokers down" at once), the
// kafka_topic backend keeps asking until its timeout_ms is over, as the sink does for its
// startup_timeout_ms, and then says what it waited for; a SIGTERM ends that wait at once. A
// trial saw the start fail after about a second while the message spoke of 30 s, so a systemd
// unit crash-looped while its broker restarted.
TEST(KafkaBrokerOutage, TheCheckpointBackendWaitsItsTimeoutForABrokerAndSigtermEndsTheWait) {
  const std::string db = it::test_database("kbr_ckptwait");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table t (id int primary key)");
  fs::path dir = unreachable_kafka_config(db, "backend = \"kafka_topic\"\ntimeout_ms = 5000\n", "");
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = it::run_cli({"run", "--config", (dir / "cdc.toml").string()}, 120);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 5s) << run.output;
  EXPECT_LT(took, 60s) << run.output;
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_TRUE(has(run.output, "no broker answers yet")) << run.output;
  EXPECT_TRUE(has(run.output,
                  "waited timeout_ms (5000 ms) for a broker of bootstrap_servers to answer; "
                  "none did"))
      << run.output;
  EXPECT_EQ(slots_of(db), "0");

  dir = unreachable_kafka_config(db, "backend = \"kafka_topic\"\ntimeout_ms = 600000\n", "");
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), db, 0);
  it::KillAtExit guard{child};
  const fs::path log = dir / "cppcdc.log";
  const auto log_text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(it::wait_until(
      [&] { return has(log_text(), "waiting up to timeout_ms (600000 ms) for one"); }, 30s))
      << log_text();
  ASSERT_EQ(kill(child, SIGTERM), 0);
  const auto term = std::chrono::steady_clock::now();
  int status = -1;
  ASSERT_TRUE(it::wait_until([&] { return waitpid(child, &status, WNOHANG) == child; }, 30s, 50ms))
      << log_text();
  child = -1;
  EXPECT_LT(std::chrono::steady_clock::now() - term, 5s) << log_text();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << log_text();
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}
