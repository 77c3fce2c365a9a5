// [[pipeline.transforms]] and [runtime] transform_error_policy in cdc.toml: what loads, what
// check-config shows, and errors that name the file, line and key.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "server/config.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kBase = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.customers"]

[state.offset]
dir = "/tmp/state"
)";

std::string error_of(const std::string& extra) {
  auto config = parse_server_config(std::string(kBase) + extra, "cdc.toml");
  if (config) return "(loaded)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration);
  return render_error(config.error());
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(TransformConfig, AChainLoadsAndCheckConfigListsIt) {
  ::setenv("CPPCDC_TEST_PII_KEY", "k3y", 1);
  auto config = parse_server_config(std::string(kBase) + R"(
[[pipeline.transforms]]
name = "pii"
  [pipeline.transforms.when]
  tables = ["public.customers"]
  ops = ["insert", "UPDATE"]
  [[pipeline.transforms.actions]]
  type = "mask"
  rules = { "email" = { hmac_sha256 = { secret_env = "CPPCDC_TEST_PII_KEY" } }, "ssn" = "null" }

[[pipeline.transforms]]
name = "meta"
  [[pipeline.transforms.actions]]
  type = "filter"
  exclude_ops = ["delete"]
  filters = [{ field = "after.amount", op = "gt", value = 100 }]
  [[pipeline.transforms.actions]]
  type = "metadata_projection"
  target_field = "_src"
  fields = ["offset", "table"]
)",
                                    "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  ASSERT_TRUE(config->transforms);
  const std::string text = describe_config(*config);
  EXPECT_CONTAINS(text, "2 stage(s)");
  EXPECT_CONTAINS(text, "pii (when tables=public.customers, ops=insert,update): mask");
  EXPECT_CONTAINS(text, "meta (every event): filter, metadata_projection");
  EXPECT_CONTAINS(text, "  error policy:     halt");
  EXPECT_EQ(text.find("k3y"), std::string::npos) << "no secret in check-config";
}

TEST(TransformConfig, ErrorsNameFileLineAndKey) {
  const std::string head =
      "\n[[pipeline.transforms]]\nname = \"s\"\n[[pipeline.transforms.actions]]\n";
  // Line numbers: kBase has 6 lines, then a blank one; the action table opens on line 10.
  EXPECT_CONTAINS(error_of(head + "type = \"filter\"\nfilters = [{ field = \"after.x\", op = "
                                  "\"equals\", value = \"1\" }]\n"),
                  "cdc.toml:12:");
  EXPECT_CONTAINS(error_of(head + "type = \"filter\"\nfilters = [{ field = \"after.x\", op = "
                                  "\"equals\", value = \"1\" }]\n"),
                  "unknown filter operator \"equals\"");
  EXPECT_CONTAINS(error_of(head + "type = \"filter\"\nfilters = [{ field = \"after.x\", op = "
                                  "\"eq\", value = \"\" }]\n"),
                  "cdc.toml:12:52: [[pipeline.transforms]] \"s\" action 1 (filter): "
                  "filters[0].value: an empty value");
  EXPECT_CONTAINS(error_of(head + "type = \"filter\"\nfilters = [{ field = \"after.x\", op = "
                                  "\"regex\", value = \"([\" }]\n"),
                  "invalid regular expression");
  EXPECT_CONTAINS(error_of(head + "type = \"mask\"\nrules = { \"name\" = { truncate = 0 } }\n"),
                  "cdc.toml:12:20: [[pipeline.transforms]] \"s\" action 1 (mask): rules.name: "
                  "truncate to 0");
  EXPECT_CONTAINS(error_of(head + "type = \"mask\"\nrules = { \"name\" = { redact = \"\" } }\n"),
                  "rules.name: redact with an empty marker");
  EXPECT_CONTAINS(error_of(head + "type = \"mask\"\nrules = { \"\" = \"null\" }\n"),
                  "rules.: field path \"\": empty path");
  EXPECT_CONTAINS(error_of(head + "type = \"filter\"\ninclude_ops = [\"upsert\"]\n"),
                  "cdc.toml:12:16: [[pipeline.transforms]] \"s\" action 1 (filter): include_ops: "
                  "unknown operation \"upsert\"");
  EXPECT_CONTAINS(error_of(head + "type = \"mask\"\nrulez = {}\n"), "rules: required");
  EXPECT_CONTAINS(error_of(head + "type = \"masc\"\n"), "unknown action \"masc\"");
  EXPECT_CONTAINS(error_of("\n[pipeline]\ntransform_runtime = {}\n"),
                  "WASM transforms are not built yet");
}

TEST(TransformConfig, SkipNeedsADeadLetterFileAndLoadsWithOne) {
  const std::string report = error_of("\n[runtime]\ntransform_error_policy = \"skip\"\n");
  EXPECT_CONTAINS(report, "cdc.toml:9:26: [runtime] transform_error_policy:");
  EXPECT_CONTAINS(report, "no [dead_letter] section");
  EXPECT_CONTAINS(error_of("\n[runtime]\ntransform_error_policy = \"stop\"\n"),
                  "expected \"halt\" or \"skip\"");
  EXPECT_EQ(error_of("\n[runtime]\ntransform_error_policy = \"halt\"\n"), "(loaded)");
  auto config = parse_server_config(std::string(kBase) +
                                        "\n[runtime]\ntransform_error_policy = \"skip\"\n"
                                        "\n[dead_letter]\npath = \"/var/lib/cppcdc/dead.jsonl\"\n",
                                    "cdc.toml");
  ASSERT_TRUE(config) << config.error().report();
  EXPECT_EQ(config->transform_error_policy, TransformErrorPolicy::kSkip);
  ASSERT_TRUE(config->dead_letter);
  EXPECT_EQ(config->dead_letter->path, "/var/lib/cppcdc/dead.jsonl");
  EXPECT_EQ(config->dead_letter->file_mode, 0600u);
  const std::string described = describe_config(*config);
  EXPECT_CONTAINS(described, "  error policy:     skip\n");
  EXPECT_CONTAINS(described,
                  "dead letters:       /var/lib/cppcdc/dead.jsonl (JSON lines, "
                  "file_mode 0600)");
}

// ---- the documented examples ------------------------------------------------------------------

// The ```toml blocks of a Markdown file, in order.
std::vector<std::string> toml_blocks(const std::string& relative) {
  std::ifstream in(std::string(CPPCDC_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::vector<std::string> blocks;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("```toml", 0) == 0) {
      inside = true;
      blocks.emplace_back();
    } else if (inside && line.rfind("```", 0) == 0) {
      inside = false;
    } else if (inside) {
      blocks.back() += line + "\n";
    }
  }
  return blocks;
}

// Every example of the transform and routing pages (and the README's transform example) loads
// as written, after a source and a checkpoint: a page that documents a key the reader refuses,
// or an example with a typo, fails here.
TEST(TransformConfig, EveryDocumentedExampleLoads) {
  ::setenv("CDC_PII_KEY", "doc-example-hmac-key", 1);
  ::setenv("CDC_CARD_KEY", "doc-example-card-key", 1);
  ::setenv("BILLING_WHSEC", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
  std::size_t checked = 0;
  for (const char* page : {"docs/transforms.md", "docs/routing.md", "README.md"}) {
    for (const auto& block : toml_blocks(page)) {
      if (block.find("[[pipeline.") == std::string::npos &&
          block.find("[dead_letter]") == std::string::npos) {
        continue;  // other topics' examples (sources, sinks) are checked elsewhere
      }
      std::string document = std::string(kBase) + "\n" + block;
      if (block.find("[sink]") == std::string::npos) {
        document += "\n[sink]\ntype = \"stdout\"\n";
      }
      if (block.find("[[pipeline.routes]]") != std::string::npos &&
          block.find("[[sinks]]") == std::string::npos) {
        continue;  // a routes fragment without its sinks
      }
      auto config = parse_server_config(document, std::string(page));
      EXPECT_TRUE(config) << page << " example:\n"
                          << block << "\n"
                          << (config ? std::string() : render_error(config.error()));
      ++checked;
    }
  }
  ::unsetenv("CDC_PII_KEY");
  ::unsetenv("CDC_CARD_KEY");
  ::unsetenv("BILLING_WHSEC");
  EXPECT_GE(checked, 11u);  // the nine actions, the routes and the dead letters
}

}  // namespace
}  // namespace cppcdc::server
