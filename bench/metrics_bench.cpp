// CPU per event of the admin server's counting (src/server/metrics.hpp): what the runtime's
// observer adds to every batch when [admin] is on, against the cost of one batch of events
// of the same shape. Batches of 1,000 events of 6 columns, as PostgreSQL's streaming delivers
// them: one table, or rotating over 8 tables in runs of 10 (several tables per transaction).
// The scrape (render) is measured too; it runs on the admin server's thread, not the
// pipeline's.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "server/metrics.hpp"

namespace {

using cppcdc::Event;
using cppcdc::Operation;

std::vector<Event> make_batch(int tables) {
  std::vector<Event> out;
  for (int i = 0; i < 1000; ++i) {
    Event e;
    e.schema = "public";
    e.table = "bench" + std::to_string((i / 10) % tables);
    e.op = i % 7 == 0 ? Operation::kUpdate : Operation::kInsert;
    e.source.timestamp = 1'700'000'000'000 + i / 100;  // transactions of 100 events
    cppcdc::Row row;
    for (int c = 0; c < 6; ++c) {
      row.push_back({"c" + std::to_string(c), std::string(12, 'x'), false});
    }
    e.after = std::move(row);
    out.push_back(std::move(e));
  }
  return out;
}

void BM_ObserveBatch(benchmark::State& state) {
  cppcdc::server::PipelineMetrics metrics;
  const auto batch = make_batch(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    metrics.on_delivered(batch);
    metrics.on_committed(batch, 1'700'000'000'500);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch.size()));
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ObserveBatch)->Arg(1)->Arg(8);

void BM_Scrape(benchmark::State& state) {
  cppcdc::server::PipelineMetrics metrics;
  const auto batch = make_batch(8);
  metrics.on_delivered(batch);
  metrics.on_committed(batch, 1'700'000'000'500);
  cppcdc::server::MetricsInputs in;
  in.snapshot.state = cppcdc::RuntimeState::kRunning;
  in.snapshot.last_poll_at_ms = 1'700'000'000'000;
  in.now_ms = 1'700'000'001'000;
  for (auto _ : state) benchmark::DoNotOptimize(metrics.render(in));
}
BENCHMARK(BM_Scrape);

}  // namespace

BENCHMARK_MAIN();
