// `codec = "avro"` with `[sink.codec_options.schema_registry] type = "glue"` in cdc.toml: the
// keys, their defaults and check-config's lines, the errors at load that name the key and the
// remedy (auto_register = false refused, Confluent-only keys refused, names and endpoint
// checked), and a codec made from the configuration writing Glue frames through the Glue
// DOUBLE (tests/unit/codec_glue/glue_double.py; not AWS).

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "cppcdc/glue.hpp"
#include "cppcdc/plugin.hpp"
#include "server/config.hpp"
#include "unit/codec/generated_events.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kHead = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[state.offset]
dir = "/tmp/state"

[sink]
type = "kafka"
bootstrap_servers = "127.0.0.1:1"
codec = "avro"

[sink.codec_options.schema_registry]
type = "glue"
)";

constexpr const char* kGood = R"(registry_name = "cdc"
region = "eu-west-1"
schema_name = "cdc-events"
)";

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string error_of(const std::string& table) {
  auto config = parse_server_config(kHead + table, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

std::string described(const std::string& table) {
  auto config = parse_server_config(kHead + table, "cdc.toml");
  if (!config) return "(error) " + config.error().report();
  return describe_config(*config);
}

TEST(GlueConfig, TheKeysAndWhatCheckConfigShows) {
  const std::string d = described(kGood);
  EXPECT_TRUE(std::regex_search(d, std::regex("codec: +avro\n"))) << d;
  EXPECT_CONTAINS(d, "AWS Glue (header version 3, compression none, 16-byte schema version UUID)");
  EXPECT_CONTAINS(d, "AWS Glue registry \"cdc\" (eu-west-1)");
  EXPECT_CONTAINS(d, "\"cdc-events\" (value), \"cdc-events-key\" (key)");
  const std::string z = described(std::string(kGood) +
                                  "compression = \"zlib\"\nkey_schema_name = \"cdc-keys\"\n"
                                  "endpoint = \"https://glue-vpce.example.internal\"\n"
                                  "auto_register = true\n");
  EXPECT_CONTAINS(z, "compression zlib");
  EXPECT_CONTAINS(z, "\"cdc-keys\" (key)");
  EXPECT_CONTAINS(z, "endpoint https://glue-vpce.example.internal");
}

TEST(GlueConfig, ErrorsAtLoadNameTheKeyAndTheRemedy) {
  struct Case {
    std::string table;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {std::string(kGood) + "auto_register = false\n",
       {"auto_register", "always registers", "no lookup-only mode", "glue:RegisterSchemaVersion"}},
      {"region = \"eu-west-1\"\nschema_name = \"s\"\n", {"registry_name", "required"}},
      {"registry_name = \"cdc\"\nschema_name = \"s\"\n", {"region", "required"}},
      {"registry_name = \"cdc\"\nregion = \"eu-west-1\"\n", {"schema_name", "required"}},
      {std::string(kGood) + "compression = \"gzip\"\n",
       {"compression", "expected \"none\" or \"zlib\", found \"gzip\""}},
      {std::string(kGood) + "url = \"http://registry:8081\"\n",
       {"url", "not a setting of type = \"glue\"", "region"}},
      {std::string(kGood) + "subject_name_strategy = \"record_name\"\n",
       {"subject_name_strategy", "schema_name"}},
      {std::string(kGood) + "endpoint = \"glue.example.com\"\n",
       {"endpoint", "not an http:// or https:// URL"}},
      {std::string(kGood) + "key_schema_name = \"cdc-events\"\n",
       {"key_schema_name", "equals schema_name"}},
      {"registry_name = \"my registry\"\nregion = \"eu-west-1\"\nschema_name = \"s\"\n",
       {"registry_name", "holds ' '"}},
      {std::string(kGood) + "regoin = \"x\"\n", {"regoin"}},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.table);
    EXPECT_CONTAINS(e, "cdc.toml");
    for (const auto& n : c.needles) EXPECT_CONTAINS(e, n);
  }
  // A type nobody registered lists the ones there are.
  const std::string t = error_of("kind = \"x\"\n");
  EXPECT_NE(t, "(no error)");
  auto config = parse_server_config(
      std::string(kHead).replace(std::string(kHead).find("\"glue\""), 6, "\"glu\"") + kGood,
      "cdc.toml");
  ASSERT_FALSE(config);
  EXPECT_CONTAINS(config.error().report(), "\"glue\"");
  EXPECT_CONTAINS(config.error().report(), "found \"glu\"");
}

// The double of tests/unit/codec_glue (a separate Python process on loopback).
class GlueDouble {
 public:
  GlueDouble() {
    port_file_ = std::filesystem::path(::testing::TempDir()) /
                 ("glue-config-double-" + std::to_string(::getpid()));
    std::filesystem::remove(port_file_);
    std::vector<std::string> argv = {
        "/usr/bin/python3",
        std::string(CPPCDC_SOURCE_DIR) + "/tests/unit/codec_glue/glue_double.py", "--port-file",
        port_file_.string()};
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> raw;
      for (auto& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(port_file_) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls for the file
    }
    std::ifstream in(port_file_);
    in >> port_;
  }
  ~GlueDouble() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    std::filesystem::remove(port_file_);
  }
  int port() const { return port_; }

 private:
  std::filesystem::path port_file_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// codec_options as the avro codec's factory receives them: a minimal Settings over string
// and boolean values (cdc.toml's own Settings view is internal to the server's loader, whose
// handling of these keys the tests above cover).
class FakeSettings final : public Settings {
 public:
  FakeSettings() : present_(false) {}
  explicit FakeSettings(std::map<std::string, std::string> values)
      : present_(true), values_(std::move(values)) {}
  std::map<std::string, FakeSettings> sections;

  bool present() const override { return present_; }
  bool has(std::string_view key) const override { return values_.count(std::string(key)) != 0; }
  Result<std::optional<std::string>> get_string(std::string_view key) const override {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Result<std::optional<bool>> get_bool(std::string_view key) const override {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::optional<bool>();
    return std::optional<bool>(it->second == "true");
  }
  Result<std::optional<std::int64_t>> get_int(std::string_view key, std::int64_t,
                                              std::int64_t) const override {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::optional<std::int64_t>();
    return std::optional<std::int64_t>(std::stoll(it->second));
  }
  Result<std::optional<std::vector<std::string>>> get_string_list(std::string_view,
                                                                  std::string_view) const override {
    return std::optional<std::vector<std::string>>();
  }
  Result<std::optional<std::vector<std::pair<std::string, std::string>>>> get_string_map(
      std::string_view, std::string_view) const override {
    return std::optional<std::vector<std::pair<std::string, std::string>>>();
  }
  Result<std::optional<std::filesystem::path>> get_path(std::string_view key) const override {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::optional<std::filesystem::path>();
    return std::optional<std::filesystem::path>(it->second);
  }
  Result<const Settings*> get_section(std::string_view key) const override {
    auto it = sections.find(std::string(key));
    if (it == sections.end()) return &absent_;
    return &it->second;
  }
  Error error(std::string_view key, std::string_view what) const override {
    return Error::configuration(std::string(key) + ": " + std::string(what));
  }
  Error element_error(std::string_view key, std::size_t, std::string_view what) const override {
    return error(key, what);
  }
  Error missing(std::string_view key, std::string_view why) const override {
    return error(key, std::string("required ") + std::string(why));
  }

 private:
  bool present_;
  std::map<std::string, std::string> values_;
  static const FakeSettings absent_;
};
const FakeSettings FakeSettings::absent_{};

TEST(GlueConfig, TheConfiguredCodecWritesGlueFramesThroughTheDouble) {
  GlueDouble d;
  ASSERT_GT(d.port(), 0);
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  register_builtin_plugins();
  auto factory = find_codec("avro");
  ASSERT_TRUE(factory);
  FakeSettings options(std::map<std::string, std::string>{});
  options.sections.emplace(
      "schema_registry",
      FakeSettings({{"type", "glue"},
                    {"registry_name", "cdc"},
                    {"region", "eu-west-1"},
                    {"schema_name", "cdc-events"},
                    {"compression", "zlib"},
                    {"endpoint", "http://127.0.0.1:" + std::to_string(d.port())}}));
  auto codec = (*factory)(options);
  ASSERT_TRUE(codec) << codec.error().report();
  auto encoder = (*codec)->make_encoder();
  ASSERT_TRUE(encoder) << encoder.error().report();
  auto decoder = (*codec)->make_decoder();
  ASSERT_TRUE(decoder) << decoder.error().report();
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ByteBuffer value, key;
  auto st = (*encoder)->encode_to("orders", test::full_event(), value);
  ASSERT_TRUE(st) << st.error().report();
  auto keyed = (*encoder)->encode_key_to("orders", test::full_event(), key);
  ASSERT_TRUE(keyed && *keyed);
  EXPECT_EQ(detect_wire_format(value.view()), WireFormat::kGlue);
  EXPECT_EQ(static_cast<unsigned char>(value.view()[1]), 5) << "zlib";
  EXPECT_EQ(detect_wire_format(key.view()), WireFormat::kGlue);
  auto back = (*decoder)->decode(value.view());
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(*back, test::full_event());
  const auto checks = (*codec)->preflight({"orders"});
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].outcome, PreflightCheck::Outcome::kWarn);
  EXPECT_CONTAINS(checks[0].what, "not contacted by preflight");
}

}  // namespace
}  // namespace cppcdc::server
