// `cppcdc run` with a registry-backed codec and auto_register = false checks the value and key
// subjects of every captured table's topic before the source starts, as `cppcdc preflight`
// does: a table that stays quiet must not run for hours and then stop at its first change.
// And the registry's password may come from the environment (password_env). Against the
// schema registry DOUBLE (tests/integration/schema_registry_double.py) and the real broker.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cppcdc/avro.hpp"
#include "cppcdc/schema_registry.hpp"
#include "integration/kafka/kafka_util.hpp"
#include "integration/pg_util.hpp"
#include "schema_registry_double.hpp"

namespace cppcdc {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

struct Pipeline {
  std::string db;
  std::string tag;
  std::string topic;
  std::filesystem::path dir;
  std::filesystem::path config;
};

// A pipeline capturing one empty table into Kafka with the avro codec, looking its schemas up
// in `registry` (never registering); `registry_extra` goes into the registry's table.
Pipeline make_pipeline(const std::string& name, const RegistryDouble& registry,
                       const std::string& bootstrap, const std::string& registry_extra = "") {
  Pipeline p;
  p.db = it::test_database(name);
  it::fresh_database(p.db);
  it::PgSession(it::dsn_for(p.db)).query("create table t (id int primary key)");
  p.tag = kafka_it::unique_topic(name);
  p.topic = p.tag + ".public.t";
  p.dir = std::filesystem::temp_directory_path() /
          ("cppcdc-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p.dir);
  std::filesystem::create_directories(p.dir);
  p.config = p.dir / "cdc.toml";
  std::ofstream(p.config) << "[source]\ndsn = \"" << it::dsn_for(p.db)
                          << "\"\ntables = [\"public.t\"]\nslot_name = \"" << name << "_"
                          << ::getpid() << "\"\nsource_name = \"" << p.tag
                          << "\"\n\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \"" << bootstrap
                          << "\"\ncreate_topics = true\ncodec = \"avro\"\n"
                          << "[sink.codec_options.schema_registry]\nurl = \"" << registry.url()
                          << "\"\nauto_register = false\n"
                          << registry_extra << "\n[state.offset]\ndir = \""
                          << (p.dir / "state").string() << "\"\n";
  return p;
}

std::unique_ptr<SchemaRegistryClient> client_of(const RegistryDouble& registry,
                                                const std::string& user = "",
                                                const std::string& password = "") {
  SchemaRegistryConfig c;
  c.url = registry.url();
  if (!user.empty()) {
    c.username = user;
    c.password = password;
  }
  auto client = make_schema_registry_client(c);
  EXPECT_TRUE(client) << client.error().report();
  return client ? std::move(*client) : nullptr;
}

TEST(KafkaRegistryStart, RunStopsAtOnceNamingAMissingValueOrKeySubjectOfAQuietTable) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry;
  ASSERT_TRUE(registry.up());
  const Pipeline p = make_pipeline("kregstart", registry, bootstrap);

  // No subject at all, and no row will ever come: the run stops before the source starts.
  auto started = std::chrono::steady_clock::now();
  const auto missing = it::run_cli({"run", "--config", p.config.string()}, 60);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_NE(missing.code, 0) << missing.output;
  EXPECT_NE(missing.code, 124) << "still running when killed: " << missing.output;
  EXPECT_LT(took, std::chrono::seconds(40));
  EXPECT_CONTAINS(missing.output, p.topic + "-value");
  EXPECT_CONTAINS(missing.output, "auto_register is false");
  EXPECT_EQ(registry.writes(), 0u) << "auto_register = false: nothing is written";

  // The value subject registered, the key subject not: preflight and run both name it.
  auto client = client_of(registry);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->register_schema(p.topic + "-value", SchemaType::kAvro,
                                      std::string(avro_event_schema())));
  const auto preflight = it::run_cli({"preflight", "--config", p.config.string()}, 120);
  EXPECT_EQ(preflight.code, 3) << preflight.output;
  EXPECT_CONTAINS(preflight.output, p.topic + "-key");
  started = std::chrono::steady_clock::now();
  const auto key_missing = it::run_cli({"run", "--config", p.config.string()}, 60);
  took = std::chrono::steady_clock::now() - started;
  EXPECT_NE(key_missing.code, 0) << key_missing.output;
  EXPECT_NE(key_missing.code, 124) << "still running when killed: " << key_missing.output;
  EXPECT_LT(took, std::chrono::seconds(40));
  EXPECT_CONTAINS(key_missing.output, p.topic + "-key");
  it::drop_slots(p.db);
  if (!HasFailure()) std::filesystem::remove_all(p.dir);
}

// password_env: the password is read from the variable and sent (the double refuses requests
// without the right Authorization header with 401).
TEST(KafkaRegistryStart, ThePasswordFromTheEnvironmentIsSentToTheRegistry) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  RegistryDouble registry({"--user", "cdc", "--password", "s3cret-env"});
  ASSERT_TRUE(registry.up());
  const Pipeline p =
      make_pipeline("kregenv", registry, bootstrap,
                    "username = \"cdc\"\npassword_env = \"CPPCDC_TEST_KREGENV_PASSWORD\"\n");
  auto client = client_of(registry, "cdc", "s3cret-env");
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->register_schema(p.topic + "-value", SchemaType::kAvro,
                                      std::string(avro_event_schema())));
  ASSERT_TRUE(
      client->register_schema(p.topic + "-key", SchemaType::kAvro, std::string(avro_key_schema())));

  ::setenv("CPPCDC_TEST_KREGENV_PASSWORD", "wrong", 1);
  const auto wrong = it::run_cli({"preflight", "--config", p.config.string()}, 120);
  EXPECT_EQ(wrong.code, 3) << wrong.output;
  EXPECT_CONTAINS(wrong.output, "401");

  ::setenv("CPPCDC_TEST_KREGENV_PASSWORD", "s3cret-env", 1);
  const auto right = it::run_cli({"preflight", "--config", p.config.string()}, 120);
  EXPECT_CONTAINS(right.output, "holds or accepts the Avro schemas of 2 subjects");
  const auto shown = it::run_cli({"check-config", "--config", p.config.string()}, 60);
  EXPECT_EQ(shown.output.find("s3cret-env"), std::string::npos) << shown.output;
  EXPECT_CONTAINS(shown.output, "CPPCDC_TEST_KREGENV_PASSWORD");
  ::unsetenv("CPPCDC_TEST_KREGENV_PASSWORD");
  it::drop_slots(p.db);
  if (!HasFailure()) std::filesystem::remove_all(p.dir);
}

}  // namespace
}  // namespace cppcdc
