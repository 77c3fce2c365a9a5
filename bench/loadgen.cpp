// Paced load for the latency run: single-row INSERT transactions at a fixed rate.
//
//   cppcdc_bench_loadgen --conninfo STR --table NAME --rate 1000 --seconds 60 --out FILE
//
// Transaction i (ids 1..N) is due at start + i/rate; when the generator falls behind it sends
// the next one at once (no burst limit, no skipping) and reports the achieved rate. Each
// statement is an autocommit INSERT of (id, clock_timestamp(), payload) with
// synchronous_commit = on for this session, so the commit record is flushed before the
// statement returns and the walsender is woken right away (under synchronous_commit = off the
// server itself may hold the commit back for up to wal_writer_delay).
//
// FILE gets one line per transaction: "id send_ns ack_ns", CLOCK_REALTIME nanoseconds taken
// just before the statement was sent and just after its commit was acknowledged. A summary
// line of JSON goes to stdout.

#include <libpq-fe.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

std::int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_monotonic(std::int64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: cppcdc_bench_loadgen --conninfo STR --table NAME --rate TX_PER_S "
               "--seconds S --out FILE\n");
  return 2;
}

bool exec_ok(PGconn* conn, const char* sql) {
  PGresult* r = PQexec(conn, sql);
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  if (!ok) std::fprintf(stderr, "%s: %s", sql, PQerrorMessage(conn));
  PQclear(r);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string conninfo, table, out_path;
  double rate = 1000;
  double seconds = 60;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--conninfo") conninfo = v;
    else if (a == "--table") table = v;
    else if (a == "--rate") rate = std::atof(v);
    else if (a == "--seconds") seconds = std::atof(v);
    else if (a == "--out") out_path = v;
    else return usage();
  }
  if (conninfo.empty() || table.empty() || out_path.empty() || rate <= 0 || seconds <= 0) {
    return usage();
  }

  PGconn* conn = PQconnectdb(conninfo.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::fprintf(stderr, "connect failed: %s", PQerrorMessage(conn));
    PQfinish(conn);
    return 1;
  }
  if (!exec_ok(conn, "set synchronous_commit = on")) return 1;
  const std::string sql = "insert into " + table +
                          " (id, created_at, payload) values ($1::bigint, clock_timestamp(), $2)";
  PGresult* prep = PQprepare(conn, "ins", sql.c_str(), 2, nullptr);
  if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
    std::fprintf(stderr, "prepare failed: %s", PQerrorMessage(conn));
    return 1;
  }
  PQclear(prep);

  const auto total = static_cast<std::int64_t>(rate * seconds);
  const double interval_ns = 1e9 / rate;
  struct Sample {
    std::int64_t send_ns, ack_ns;
  };
  std::vector<Sample> samples;
  samples.reserve(static_cast<std::size_t>(total));
  std::int64_t late = 0;  // transactions sent more than one interval after they were due

  const std::int64_t start = monotonic_ns();
  for (std::int64_t id = 1; id <= total; ++id) {
    const auto due = start + static_cast<std::int64_t>(static_cast<double>(id - 1) * interval_ns);
    if (monotonic_ns() < due) {
      sleep_until_monotonic(due);
    } else if (monotonic_ns() - due > static_cast<std::int64_t>(interval_ns)) {
      ++late;
    }
    const std::string id_text = std::to_string(id);
    const std::string payload = "row " + id_text;
    const char* params[2] = {id_text.c_str(), payload.c_str()};
    const std::int64_t send = realtime_ns();
    PGresult* r = PQexecPrepared(conn, "ins", 2, params, nullptr, nullptr, 0);
    const std::int64_t ack = realtime_ns();
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      std::fprintf(stderr, "insert %lld failed: %s", static_cast<long long>(id),
                   PQerrorMessage(conn));
      PQclear(r);
      PQfinish(conn);
      return 1;
    }
    PQclear(r);
    samples.push_back({send, ack});
  }
  const double elapsed_s = static_cast<double>(monotonic_ns() - start) / 1e9;
  PQfinish(conn);

  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s: %s\n", out_path.c_str(), std::strerror(errno));
    return 1;
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    std::fprintf(out, "%zu %lld %lld\n", i + 1, static_cast<long long>(samples[i].send_ns),
                 static_cast<long long>(samples[i].ack_ns));
  }
  std::fclose(out);
  std::printf("{\"transactions\":%lld,\"elapsed_s\":%.3f,\"achieved_tx_per_s\":%.1f,"
              "\"late\":%lld}\n",
              static_cast<long long>(total), elapsed_s, static_cast<double>(total) / elapsed_s,
              static_cast<long long>(late));
  return 0;
}
