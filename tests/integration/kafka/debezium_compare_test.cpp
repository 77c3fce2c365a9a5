// The debezium_json codec against Debezium itself: the same PostgreSQL table (a column of each
// common type, tests/integration/kafka/debezium_types.sql) and the same changes
// (debezium_changes.sql) are captured by Debezium 3.6.1's PostgreSQL connector on a Kafka
// Connect standalone worker (JsonConverter, schemas.enable) and by `cppcdc run` with
// codec = "debezium_json", each into topics of its own, under three option sets (Debezium's
// defaults; decimal string, time connect, binary hex; decimal double, time
// adaptive_time_microseconds, binary base64). debezium_compare.py (python3-confluent-kafka)
// compares op, every before/after value, each column's field schema and the key, record by
// record; a difference not in its list of known ones fails the test.
//
// Needs the broker (CPPCDC_TEST_KAFKA_BOOTSTRAP), PostgreSQL (CPPCDC_TEST_PG_DSN) and the
// Debezium jars (scripts/debezium-jars.sh --fetch; the test skips, saying so, without them).
// CPPCDC_DEBEZIUM_GOLDEN_OUT=PATH also writes Debezium's records, cppcdc's envelopes and the
// column catalog to PATH: tests/golden/debezium/postgres_types.json came from it.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "wait_until.hpp"

namespace cppcdc {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The value of `key` in a keyword DSN ("host=... port=..."), or `fallback`.
std::string dsn_value(const std::string& dsn, const std::string& key, const std::string& fallback) {
  std::istringstream in(dsn);
  std::string token;
  std::string out = fallback;
  while (in >> token) {
    if (token.rfind(key + "=", 0) == 0) out = token.substr(key.size() + 1);
  }
  return out;
}

struct OptionSet {
  const char* suffix;
  std::vector<std::pair<std::string, std::string>> debezium;  // connector properties
  std::string cppcdc;                                         // codec_options lines
};

const std::vector<OptionSet>& option_sets() {
  static const std::vector<OptionSet> sets = {
      {"a", {}, ""},
      {"b",
       {{"decimal.handling.mode", "string"},
        {"time.precision.mode", "connect"},
        {"binary.handling.mode", "hex"}},
       "decimal_handling_mode = \"string\"\ntime_precision_mode = \"connect\"\n"
       "binary_handling_mode = \"hex\"\n"},
      {"c",
       {{"decimal.handling.mode", "double"},
        {"time.precision.mode", "adaptive_time_microseconds"},
        {"binary.handling.mode", "base64"}},
       "decimal_handling_mode = \"double\"\ntime_precision_mode = "
       "\"adaptive_time_microseconds\"\nbinary_handling_mode = \"base64\"\n"},
  };
  return sets;
}

TEST(DebeziumOnBroker, TypedValuesAndSchemasMatchDebeziumsPostgresConnector) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  const auto jars = kafka_it::run_command(std::string(CPPCDC_SOURCE_DIR) +
                                          "/scripts/debezium-jars.sh 2>/dev/null");
  if (jars.code != 0) {
    GTEST_SKIP() << "the Debezium jars are not fetched: scripts/debezium-jars.sh --fetch "
                    "(Maven, once) fetches them";
  }
  const std::string libs = jars.output.substr(0, jars.output.find('\n'));
  const auto started = std::chrono::steady_clock::now();

  const std::string db = it::test_database("dbzcmp");
  it::fresh_database(db);
  it::PgSession pg(it::dsn_for(db));
  const fs::path sql_dir = fs::path(CPPCDC_SOURCE_DIR) / "tests/integration/kafka";
  pg.query(read_text(sql_dir / "debezium_types.sql"));
  pg.query("create publication dbzcmp_pub for table public.dbz_types");

  const std::string tag = kafka_it::unique_topic("dbzcmp");
  const fs::path dir = fs::temp_directory_path() / ("cppcdc-dbzcmp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  // Debezium: one standalone worker, one connector per option set.
  const std::string admin = it::admin_dsn();
  std::ofstream(dir / "worker.properties")
      << "bootstrap.servers=" << bootstrap << "\n"
      << "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
      << "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
      << "key.converter.schemas.enable=true\nvalue.converter.schemas.enable=true\n"
      << "offset.storage.file.filename=" << (dir / "connect.offsets").string() << "\n"
      << "offset.flush.interval.ms=1000\n"
      << "listeners=http://127.0.0.1:0\nplugin.discovery=service_load\n";
  std::vector<std::string> connector_files;
  std::vector<std::string> slots;
  for (const auto& set : option_sets()) {
    const std::string name = "dbzcmp_" + std::to_string(::getpid()) + "_" + set.suffix;
    slots.push_back(name);
    const fs::path file = dir / (name + ".properties");
    std::ofstream out(file);
    out << "name=" << name << "\n"
        << "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
        << "tasks.max=1\n"
        << "database.hostname=" << dsn_value(admin, "host", "127.0.0.1") << "\n"
        << "database.port=" << dsn_value(admin, "port", "5432") << "\n"
        << "database.user=" << dsn_value(admin, "user", "postgres") << "\n"
        << "database.dbname=" << db << "\ndatabase.sslmode=disable\n"
        << "topic.prefix=" << tag << "-dbz-" << set.suffix << "\n"
        << "plugin.name=pgoutput\nslot.name=" << name << "\n"
        << "publication.name=dbzcmp_pub\npublication.autocreate.mode=disabled\n"
        << "snapshot.mode=no_data\ntable.include.list=public.dbz_types\n"
        << "poll.interval.ms=50\n";
    for (const auto& [k, v] : set.debezium) out << k << "=" << v << "\n";
    connector_files.push_back(file.string());
  }
  std::ofstream(dir / "log4j2.properties")
      << "rootLogger.level=INFO\nrootLogger.appenderRef.file.ref=file\n"
      << "appender.file.type=File\nappender.file.name=file\n"
      << "appender.file.fileName=" << (dir / "connect.log").string() << "\n"
      << "appender.file.layout.type=PatternLayout\n"
      << "appender.file.layout.pattern=[%d] %p %m (%c)%n\n";
  const pid_t worker = fork();
  if (worker == 0) {
    const std::string log = (dir / "worker.out").string();
    freopen(log.c_str(), "w", stdout);
    freopen(log.c_str(), "a", stderr);
    const std::string log4j = "-Dlog4j2.configurationFile=" + (dir / "log4j2.properties").string();
    const std::string cp = libs + "/*";
    const std::string worker_props = (dir / "worker.properties").string();
    std::vector<const char*> argv = {"java",
                                     "-Xms256M",
                                     "-Xmx1G",
                                     log4j.c_str(),
                                     "-cp",
                                     cp.c_str(),
                                     "org.apache.kafka.connect.cli.ConnectStandalone",
                                     worker_props.c_str()};
    for (const auto& f : connector_files) argv.push_back(f.c_str());
    argv.push_back(nullptr);
    execvp("java", const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  ASSERT_GT(worker, 0);
  const auto stop_worker = [&] {
    kill(worker, SIGTERM);
    int status = 0;
    waitpid(worker, &status, 0);
  };
  it::PgSession server(admin);
  std::string in_list;
  for (const auto& s : slots) in_list += (in_list.empty() ? "'" : ",'") + s + "'";
  const bool streaming = test::wait_until(
      [&] {
        return server.scalar(
                   "select count(*) from pg_replication_slots where active and "
                   "slot_name in (" +
                   in_list + ")") == std::to_string(slots.size());
      },
      std::chrono::seconds(120));
  if (!streaming) {
    stop_worker();
    FAIL() << "Debezium's connectors did not start streaming\n"
           << it::log_tail(dir / "connect.log") << it::log_tail(dir / "worker.out");
  }
  const double worker_start_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  // cppcdc: one pipeline, a fanout to one Kafka sink per option set and one json sink (the
  // envelope: the texts the encoder starts from).
  const std::string slot = "dbzcmp_cppcdc_" + std::to_string(::getpid());
  std::ofstream cfg(dir / "cdc.toml");
  cfg << "[source]\ndsn = \"" << it::dsn_for(db) << "\"\ntables = [\"public.dbz_types\"]\n"
      << "slot_name = \"" << slot << "\"\nsource_name = \"" << tag << "\"\n\n"
      << "[sink]\ntype = \"fanout\"\nsinks = [\"a\", \"b\", \"c\", \"envelope\"]\n\n";
  for (const auto& set : option_sets()) {
    cfg << "[[sinks]]\nname = \"" << set.suffix << "\"\ntype = \"kafka\"\n"
        << "bootstrap_servers = \"" << bootstrap << "\"\ncreate_topics = true\n"
        << "topic = \"" << tag << "-cdc-" << set.suffix << ".${schema}.${table}\"\n"
        << "codec = \"debezium_json\"\n[sinks.codec_options]\nschemas_enable = true\n"
        << "database = \"" << db << "\"\n"
        << set.cppcdc << "\n";
  }
  cfg << "[[sinks]]\nname = \"envelope\"\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
      << "\"\ncreate_topics = true\ntopic = \"" << tag << "-env.${schema}.${table}\"\n\n"
      << "[state.offset]\ndir = \"" << (dir / "state").string() << "\"\n";
  cfg.close();
  pid_t child = -1;
  it::start_cppcdc_process(child, dir, admin, slot);

  const auto changes_at = std::chrono::steady_clock::now();
  pg.query(read_text(sql_dir / "debezium_changes.sql"));

  // The column catalog, for the golden file.
  boost::json::array columns;
  for (const auto& r :
       pg.query("select attname, atttypid, atttypmod, format_type(atttypid, atttypmod), attnotnull "
                "from pg_attribute where attrelid = 'public.dbz_types'::regclass and attnum > 0 "
                "and not attisdropped order by attnum")) {
    columns.push_back({{"name", *r[0]},
                       {"type_oid", std::stoll(*r[1])},
                       {"type_modifier", std::stoll(*r[2])},
                       {"data_type", *r[3]},
                       {"nullable", *r[4] != "t"}});
  }
  std::ofstream(dir / "catalog.json") << boost::json::serialize(columns);

  std::string cmd = kafka_it::python() + " " + (sql_dir / "debezium_compare.py").string() + " " +
                    bootstrap + " 7";
  for (const auto& set : option_sets()) {
    cmd += " " + tag + "-dbz-" + set.suffix + ".public.dbz_types:" + tag + "-cdc-" + set.suffix +
           ".public.dbz_types";
  }
  if (const char* golden = std::getenv("CPPCDC_DEBEZIUM_GOLDEN_OUT")) {
    cmd += " --envelope " + tag + "-env.public.dbz_types --golden " + std::string(golden) +
           " --catalog " + (dir / "catalog.json").string();
  }
  const auto compared = kafka_it::run_command(cmd + " 2>&1");
  const double compare_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - changes_at).count();
  it::stop_cppcdc_process(child, SIGTERM);
  stop_worker();
  it::drop_slots(db);
  std::cout << compared.output << "(Debezium's worker streaming after " << worker_start_s
            << " s; changes to compared records " << compare_s << " s)\n";
  EXPECT_EQ(compared.code, 0) << compared.output << it::log_tail(dir / "cppcdc.log")
                              << it::log_tail(dir / "connect.log");
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace cppcdc
