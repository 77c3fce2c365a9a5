// Embedding cppcdc: capture PostgreSQL changes with the library and acknowledge each batch
// only after this program has made it durable on its own.
//
//   example_embedded_consumer "host=127.0.0.1 port=5432 dbname=app user=cdc" public.orders
//       /tmp/consumer-state /tmp/consumer-out.jsonl
//
// Each batch is appended to the output file and fsync'ed; only then is the batch
// acknowledged, which saves the checkpoint and lets PostgreSQL release the WAL. Stop with
// Ctrl-C: the loop finishes the batch in hand, acknowledges it and stops cleanly.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/runtime.hpp"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

// The consumer's own durable write: append every event as a JSON line, then fsync.
bool write_durably(int fd, const std::vector<cppcdc::Event>& events) {
  std::string out;
  for (const auto& e : events) {
    e.append_json(out);
    out += '\n';
  }
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DSN SCHEMA.TABLE STATE_DIR OUTPUT_FILE\n", argv[0]);
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  cppcdc::pg::PostgresSourceConfig source;
  source.dsn = argv[1];
  source.tables = {argv[2]};
  source.slot_name = "cppcdc_example";
  source.publication_name = "cppcdc_example_pub";
  auto pg = cppcdc::pg::make_postgres_source(source);
  auto checkpoint = cppcdc::FileCheckpoint::open(argv[3], source.slot_name);
  if (!pg || !checkpoint) {
    std::fprintf(stderr, "%s\n",
                 (!pg ? pg.error() : checkpoint.error()).report().c_str());
    return 2;
  }
  cppcdc::RuntimeConfig config;
  config.source = std::move(*pg);
  config.checkpoint = std::move(*checkpoint);
  auto runtime = cppcdc::Runtime::create(std::move(config));
  if (!runtime) return 2;
  if (auto st = (*runtime)->start(); !st) {
    std::fprintf(stderr, "%s\n", st.error().report().c_str());
    return 1;
  }
  const int fd = ::open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) {
    std::perror(argv[4]);
    return 2;
  }
  std::uint64_t total = 0;
  while (!g_stop) {
    auto batch = (*runtime)->poll_event_batch();
    if (!batch) {
      std::fprintf(stderr, "%s\n", batch.error().report().c_str());
      return 1;
    }
    if (batch->empty()) continue;
    if (!write_durably(fd, batch->events())) {
      std::perror("writing the batch");
      (*runtime)->force_stop();  // not acknowledged: the batch is delivered again next time
      return 1;
    }
    if (auto st = (*runtime)->commit_ack(batch->ack_mode()); !st) {
      std::fprintf(stderr, "%s\n", st.error().report().c_str());
      return 1;
    }
    total += batch->size();
    std::fprintf(stderr, "acknowledged %zu events (%llu in total)\n", batch->size(),
                 static_cast<unsigned long long>(total));
  }
  ::close(fd);
  if (auto st = (*runtime)->stop(); !st) {
    std::fprintf(stderr, "%s\n", st.error().report().c_str());
    return 1;
  }
  return 0;
}
