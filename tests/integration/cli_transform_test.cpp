// `cppcdc run` with a [[pipeline.transforms]] chain: rows captured from a real PostgreSQL reach
// the file sink masked, filtered, unwrapped from the outbox and stamped with metadata; a rule
// that never matched is logged at stop with its consequence.

#include <openssl/hmac.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "pg_util.hpp"
#include "replay.hpp"

namespace fs = std::filesystem;
using namespace cppcdc;

namespace {

std::string hmac_hex(const std::string& key, const std::string& data) {
  unsigned char mac[32];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

const std::optional<std::string>* column(const Event& e, std::string_view name) {
  if (!e.after) return nullptr;
  const ColumnValue* c = find_column(*e.after, name);
  return c != nullptr ? &c->text : nullptr;
}

}  // namespace

TEST(CliTransforms, ChainIsAppliedToCapturedRowsInTheFileSink) {
  const std::string db = it::test_database("xform");
  it::fresh_database(db);
  it::PgSession s(it::dsn_for(db));
  s.query("create table customers (id int primary key, email text, ssn text, status text, "
          "doc jsonb)");
  s.query("create table audit (id int primary key, what text)");
  s.query("create table outbox (id text primary key, aggregatetype text, aggregateid text, "
          "type text, payload jsonb)");

  const fs::path dir = fs::temp_directory_path() / ("cppcdc-it-xform-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string key = "it-pii-key";
  ::setenv("CPPCDC_IT_PII_KEY", key.c_str(), 1);  // the child inherits it
  std::ofstream(dir / "cdc.toml")
      << "[source]\ntype = \"postgres\"\ndsn = \"" << it::dsn_for(db) << "\"\n"
      << "slot_name = \"xform_slot\"\npublication_name = \"xform_pub\"\n"
      << "tables = [\"public.customers\", \"public.audit\", \"public.outbox\"]\n"
      << "[source.snapshot]\nmode = \"never\"\n"
      << "\n[sink]\ntype = \"file\"\npath = \"" << (dir / "events.jsonl").string() << "\"\n"
      << "\n[state.offset]\nbackend = \"local_fs\"\ndir = \"" << (dir / "state").string() << "\"\n"
      << R"(
[runtime]
max_poll_wait_ms = 100

[[pipeline.transforms]]
name = "pii"
  [pipeline.transforms.when]
  tables = ["public.cust*"]
  [[pipeline.transforms.actions]]
  type = "mask"
  rules = { "email" = { hmac_sha256 = { secret_env = "CPPCDC_IT_PII_KEY" } }, "ssn" = "null", "doc.cards.*.number" = { truncate = 4 }, "emial" = "null" }
  [[pipeline.transforms.actions]]
  type = "filter"
  filters = [{ field = "after.status", op = "ne", value = "spam" }]

[[pipeline.transforms]]
name = "drop-audit"
  [[pipeline.transforms.actions]]
  type = "filter"
  exclude_tables = ["public.audit"]

[[pipeline.transforms]]
name = "outbox"
  [pipeline.transforms.when]
  tables = ["public.outbox"]
  [[pipeline.transforms.actions]]
  type = "outbox"

[[pipeline.transforms]]
name = "meta"
  [[pipeline.transforms.actions]]
  type = "metadata_projection"
  target_field = "_cdc"
  fields = ["table", "schema", "operation", "offset"]
)";

  auto check = it::run_cli({"check-config", "--config", (dir / "cdc.toml").string()});
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_NE(check.output.find("pii (when tables=public.cust*): mask, filter"), std::string::npos)
      << check.output;
  EXPECT_EQ(check.output.find(key), std::string::npos) << "the secret is never shown";

  pid_t child = -1;
  it::start_cppcdc_process(child, dir, it::admin_dsn(), "xform_slot");
  s.query("insert into customers values (1, 'ann@example.com', '123-45-6789', 'active', "
          "'{\"cards\":[{\"number\":\"4111111111111111\"},{\"number\":\"5500000000000004\"}]}')");
  s.query("insert into customers values (2, 'spam@example.com', null, 'spam', null)");
  s.query("insert into audit values (1, 'login')");
  s.query("insert into outbox values ('ev-1', 'order', '42', 'OrderCreated', "
          "'{\"total\": 9.5}')");
  s.query("delete from outbox where id = 'ev-1'");
  s.query("update customers set status = 'vip' where id = 1");
  s.query("insert into customers values (99, 'last@example.com', null, 'sentinel', null)");

  const fs::path out = dir / "events.jsonl";
  const auto has_sentinel = [&] {
    for (const auto& e : it::read_sink(out.string())) {
      if (const auto* st = column(e, "status"); st != nullptr && *st == "sentinel") return true;
    }
    return false;
  };
  ASSERT_TRUE(it::wait_until(has_sentinel, std::chrono::seconds(30)))
      << it::log_tail(dir / "cppcdc.log");
  const int status = it::stop_cppcdc_process(child, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << it::log_tail(dir / "cppcdc.log");

  const auto events = it::read_sink(out.string());
  // customers 1 insert, outbox -> order, customers 1 update, sentinel; spam, audit and the
  // outbox delete were dropped.
  ASSERT_EQ(events.size(), 4u) << it::log_tail(dir / "cppcdc.log");
  const Event& ann = events[0];
  EXPECT_EQ(ann.table, "customers");
  EXPECT_EQ(**column(ann, "email"), hmac_hex(key, "ann@example.com"));
  EXPECT_FALSE(column(ann, "ssn")->has_value());
  EXPECT_EQ(**column(ann, "doc"), R"({"cards":[{"number":"4111"},{"number":"5500"}]})");
  EXPECT_EQ(**column(ann, "_cdc"),
            R"({"table":"customers","schema":"public","operation":"insert","offset":")" +
                ann.source.offset + "\"}");
  const Event& order = events[1];
  EXPECT_EQ(order.table, "order");
  EXPECT_EQ(*order.primary_key, std::vector<std::string>{"aggregateid"});
  EXPECT_EQ(**column(order, "aggregateid"), "42");
  EXPECT_EQ(**column(order, "type"), "OrderCreated");
  EXPECT_NE(column(order, "_cdc"), nullptr);
  const Event& update = events[2];
  EXPECT_EQ(update.op, Operation::kUpdate);
  EXPECT_EQ(**column(update, "status"), "vip");
  EXPECT_EQ(**column(update, "email"), hmac_hex(key, "ann@example.com")) << "stable pseudonym";
  for (const auto& e : events) EXPECT_TRUE(e.validate()) << e.to_json();

  const std::string log = it::log_tail(dir / "cppcdc.log");
  EXPECT_NE(log.find("\"pii\": mask rule \"emial\" never matched"), std::string::npos) << log;
  EXPECT_NE(log.find("clear text"), std::string::npos) << log;
  EXPECT_EQ(log.find("\"drop-audit\""), std::string::npos) << "that rule fired: " << log;
  EXPECT_EQ(log.find(key), std::string::npos) << log;

  it::drop_slots(db);
  fs::remove_all(dir);
}
