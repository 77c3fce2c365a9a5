// Faults on the PostgreSQL side while `cppcdc run` streams: the walsender terminated, and the
// server restarted with fast and with immediate shutdown. The connector reconnects under the
// connection retry policy; the replay oracle proves nothing was lost, and because every batch
// the server loop delivered was acknowledged before the fault, nothing is delivered twice.
// These tests restart PostgreSQL, so they run against a server of their own (own_server.hpp).

#include "own_server.hpp"

using namespace cppcdc;

namespace {

class PgFaults : public it::OwnServerTest {
 protected:
  int port_offset(const std::string& name) const override {
    return name.find("Walsender") != std::string::npos ? 100
           : name.find("Fast") != std::string::npos    ? 101
                                                       : 102;
  }

  void restart_server(const char* mode) {
    const std::string cmd =
        "cd /tmp && runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D " + pg_dir() +
        "/data -m " + mode + " -w restart >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
};

}  // namespace

TEST_F(PgFaults, WalsenderTerminatedMidStreamReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] {
    it::PgSession admin(dsn("postgres"));
    admin.query("select pg_terminate_backend(active_pid) from pg_replication_slots where "
                "slot_name = '" + name_ + "' and active_pid is not null");
  });
}

TEST_F(PgFaults, FastShutdownRestartReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] { restart_server("fast"); });
}

TEST_F(PgFaults, ImmediateShutdownRestartReconnectsWithoutLossOrDuplicates) {
  run_with_fault([&] { restart_server("immediate"); });
}
