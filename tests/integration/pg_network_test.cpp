// The network between cppcdc and PostgreSQL failing while `cppcdc run` streams, simulated by
// a TCP proxy (tcp_proxy.hpp) that cppcdc connects through; the workload writes to the server
// directly. Connections reset three times mid-stream, and a blackhole: packets silently go
// nowhere (no FIN, no reset), which only a client-side timeout can notice. After each, the
// replay oracle proves every row arrived, none twice, in order.

#include "own_server.hpp"
#include "tcp_proxy.hpp"

using namespace cppcdc;
using cppcdc::it::log_tail;
using cppcdc::it::wait_until;
using namespace std::chrono_literals;

namespace {

class PgNetwork : public it::OwnServerTest {
 protected:
  int port_offset(const std::string& name) const override {
    return name.find("Cut") != std::string::npos ? 107 : 108;
  }

  // cppcdc's DSN through `proxy`.
  std::string proxied_dsn(const it::TcpProxy& proxy, const std::string& extra = "") const {
    return "host=127.0.0.1 port=" + std::to_string(proxy.port()) + " dbname=" + name_ +
           " user=postgres" + extra;
  }

  // Whether the sink file holds an event of `table` yet.
  bool sink_has_table(const std::string& table) const {
    std::ifstream in(dir_ / "events.jsonl");
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    return text.find("\"table\":\"" + table + "\"") != std::string::npos;
  }

  static int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
    return n;
  }
};

}  // namespace

TEST_F(PgNetwork, ConnectionsCutThreeTimesMidStreamReconnectWithoutLossOrDuplicates) {
  it::TcpProxy proxy(port());
  write_config(proxied_dsn(proxy));
  std::vector<int> cut;
  run_with_fault([&] { cut.push_back(proxy.cut()); });
  ASSERT_EQ(cut.size(), 3u);
  for (int n : cut) {
    // Each cut found cppcdc connected again (SQL and replication connection, or at least the
    // one it was opening), so each one hit a live pipeline.
    EXPECT_GE(n, 1) << log_tail(log_path());
  }
  const std::string text = log();
  EXPECT_GE(count(text, "source reconnected"), 3) << log_tail(log_path());
  EXPECT_GE(proxy.accepted(), 8);  // 2 connections at the start and after each of 3 cuts
}

// The proxy stops moving bytes for longer than wal_receiver_timeout_ms: cppcdc must notice
// the silence (it asks for a keepalive every second) and reconnect, and its new connection
// attempts, which reach a proxy that never answers, must give up after the DSN's
// connect_timeout instead of hanging. Once the proxy forwards again, cppcdc catches up.
TEST_F(PgNetwork, BlackholedConnectionIsDetectedByTheReceiverTimeoutAndReconnected) {
  it::TcpProxy proxy(port());
  write_config(proxied_dsn(proxy, " connect_timeout=2"), "wal_receiver_timeout_ms = 3000\n");
  start_cppcdc();
  ASSERT_FALSE(HasFatalFailure());
  std::thread workload = start_workload();
  // The blackhole begins while the workload streams through the proxy.
  EXPECT_TRUE(wait_until([&] { return sink_has_table("acct"); }, 60s)) << log_tail(log_path());

  proxy.set_blackhole(true);  // returns once no byte moves any more
  const std::uint64_t bytes_at_start = proxy.bytes_forwarded();
  const bool noticed =
      wait_until([&] { return log().find("(wal_receiver_timeout_ms)") != std::string::npos; }, 10s);
  const auto noticed_at = std::chrono::steady_clock::now();
  const auto last_byte = proxy.last_forwarded();  // before the blackhole
  // The reconnection attempt made during the blackhole times out after 2 s.
  const bool connect_timed_out =
      noticed && wait_until([&] { return log().find("timeout expired") != std::string::npos; }, 8s);
  EXPECT_EQ(proxy.bytes_forwarded(), bytes_at_start);  // the blackhole held
  proxy.set_blackhole(false);
  workload.join();
  ASSERT_TRUE(noticed) << "cppcdc did not notice the dead connection within 10 s\n"
                       << log_tail(log_path());
  // Not before 3 s of silence (counted from the last byte the proxy passed on, which cppcdc
  // received no earlier). That it is noticed at all, and not only when the blackhole ends,
  // is the wait above.
  EXPECT_GE(noticed_at - last_byte, std::chrono::milliseconds(3000)) << log_tail(log_path());
  EXPECT_TRUE(connect_timed_out) << "a connection attempt during the blackhole did not time out\n"
                                 << log_tail(log_path());

  finish_and_check();
  const std::string text = log();
  EXPECT_NE(text.find("source reconnected"), std::string::npos) << log_tail(log_path());
  EXPECT_NE(text.find("presumed dead"), std::string::npos) << log_tail(log_path());
}

// application_name, connect_timeout and TCP keepalives are set on every connection cppcdc
// opens, unless the DSN sets its own (which then wins).
TEST(PgConnect, AddsNameConnectTimeoutAndKeepalivesUnlessTheDsnSetsThem) {
  const auto setting = [](PGconn* c, const std::string& key) {
    std::string value = "(unset)";
    PQconninfoOption* opts = PQconninfo(c);
    for (auto* o = opts; o && o->keyword; ++o) {
      if (key == o->keyword && o->val) value = o->val;
    }
    PQconninfoFree(opts);
    return value;
  };
  for (bool replication : {false, true}) {
    auto c = pg::detail::connect(it::admin_dsn(), replication);
    ASSERT_TRUE(c) << c.error().report();
    EXPECT_EQ(setting(c->get(), "connect_timeout"), "10");
    EXPECT_EQ(setting(c->get(), "keepalives_idle"), "30");
    EXPECT_EQ(setting(c->get(), "keepalives_interval"), "10");
    EXPECT_EQ(setting(c->get(), "keepalives_count"), "3");

    auto own = pg::detail::connect(
        it::admin_dsn() + " connect_timeout=4 keepalives_idle=7 keepalives_count=2", replication);
    ASSERT_TRUE(own) << own.error().report();
    EXPECT_EQ(setting(own->get(), "connect_timeout"), "4");
    EXPECT_EQ(setting(own->get(), "keepalives_idle"), "7");
    EXPECT_EQ(setting(own->get(), "keepalives_interval"), "10");
    EXPECT_EQ(setting(own->get(), "keepalives_count"), "2");
    EXPECT_EQ(setting(c->get(), "application_name"), "cppcdc");

    auto named = pg::detail::connect(it::admin_dsn() + " application_name=cdc_orders", replication);
    ASSERT_TRUE(named) << named.error().report();
    EXPECT_EQ(setting(named->get(), "application_name"), "cdc_orders");
  }
}
