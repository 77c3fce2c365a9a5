// The cost of the [admin] metrics on the throughput of cppcdc's own pipeline, end to end but
// without a database: a source that makes bench6-shaped row events as fast as it is polled
// (transactions of 1,000 rows, 6 columns, like workload (a) of bench/run.sh), the real Runtime
// (batching, checkpoints through an in-memory backend, acknowledgements) and the real file sink
// (JSON lines, fsync per batch) into a file under TMPDIR. Each repetition runs the plain
// pipeline and the same pipeline with the server's PipelineMetrics as its observer and a thread
// rendering /metrics once a second (what [admin] does), in alternating order.
//
// Why not PostgreSQL: on a 2-core machine the walsender's decoding sets the pace of the
// streaming workload and varies by a third between runs, which hides a 2 % difference (see
// bench/README.md). Here cppcdc's own work is all there is, so the ratio is the metrics' share
// of it (an upper bound of their share of a run that also waits for a database).
//
// Usage: cppcdc_bench_pipeline_metrics [EVENTS] [REPEAT] [plain|metrics]
//   (default 1000000 events, 7 times, both variants; naming one runs only it, for a profiler)
// Prints each run's wall and CPU time, then the medians and the ratio of throughputs
// (with metrics / without; the goal: at least 0.98).

#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/source.hpp"
#include "server/metrics.hpp"

namespace {

using namespace cppcdc;

constexpr std::size_t kTxRows = 1000;

// Hands out `total` insert events of table public.bench6, made as they are polled.
class GeneratingSource final : public Source {
 public:
  explicit GeneratingSource(std::uint64_t total) : total_(total) {}
  std::string type() const override { return "bench"; }
  std::string source_id() const override { return "bench-1"; }
  Status start(const std::optional<CheckpointRecord>&) override { return ok(); }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    char text[64];
    while (next_ < total_ && out.size() < max) {
      const std::uint64_t id = next_ + 1;
      Event e;
      e.op = Operation::kInsert;
      e.schema = "public";
      e.table = "bench6";
      e.source.source_name = "bench";
      e.source.offset = std::to_string(id);
      e.source.timestamp = 1'700'000'000'000 + static_cast<std::int64_t>(id / kTxRows);
      // A resumable boundary after each whole transaction, as a real source marks them.
      if (id % kTxRows == 0) e.resume_offset = e.source.offset;
      e.transaction = TransactionMetadata{id / kTxRows + 1, kTxRows, (id - 1) % kTxRows};
      e.primary_key = std::vector<std::string>{"id"};
      Row row;
      row.reserve(6);
      row.push_back({"id", std::to_string(id), false});
      std::snprintf(text, sizeof text, "%016llx%016llx",
                    static_cast<unsigned long long>(id * 0x9E3779B97F4A7C15ull),
                    static_cast<unsigned long long>(id * 0xC2B2AE3D27D4EB4Full));
      row.push_back({"name", std::string(text), false});
      std::snprintf(text, sizeof text, "%llu.%02llu",
                    static_cast<unsigned long long>(id * 125 / 100),
                    static_cast<unsigned long long>(id * 125 % 100));
      row.push_back({"amount", std::string(text), false});
      row.push_back({"created_at", std::string("2024-01-01 00:16:40.123+00"), false});
      row.push_back({"qty", std::to_string(id % 1000), false});
      row.push_back({"active", std::string(id % 2 == 0 ? "t" : "f"), false});
      e.after = std::move(row);
      out.push_back(std::move(e));
      ++next_;
    }
    return ok();
  }
  Status confirm(std::string_view) override { return ok(); }
  bool finished() override { return next_ >= total_; }
  void close() override {}

 private:
  std::uint64_t total_;
  std::uint64_t next_ = 0;
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Timing {
  double wall = 0;
  double cpu = 0;
};

Timing run_once(std::uint64_t events, bool metrics, const std::filesystem::path& file) {
  std::filesystem::remove(file);
  RuntimeConfig config;
  config.source = std::make_unique<GeneratingSource>(events);
  config.checkpoint = std::make_shared<InMemoryCheckpoint>();
  config.options.max_buffer_size = 10'000;
  std::shared_ptr<server::PipelineMetrics> observer;
  if (metrics) {
    observer = std::make_shared<server::PipelineMetrics>();
    config.observer = observer;
  }
  auto runtime = Runtime::create(std::move(config));
  if (!runtime) {
    std::fprintf(stderr, "%s\n", runtime.error().report().c_str());
    std::exit(1);
  }
  auto sink = make_file_sink(file);
  if (!sink) {
    std::fprintf(stderr, "%s\n", sink.error().report().c_str());
    std::exit(1);
  }
  std::atomic<bool> done{false};
  std::thread scraper;
  std::atomic<std::size_t> scraped_bytes{0};
  if (metrics) {
    scraper = std::thread([&] {
      while (!done.load()) {
        for (int i = 0; i < 100 && !done.load(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (done.load()) break;
        server::MetricsInputs in;
        in.snapshot = (*runtime)->admin_snapshot();
        in.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
        scraped_bytes += observer->render(in).size();
      }
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  if (auto started = (*runtime)->start(); !started) {
    std::fprintf(stderr, "%s\n", started.error().report().c_str());
    std::exit(1);
  }
  std::atomic<bool> cancel{false};
  auto delivered = (*runtime)->run_to_completion(**sink, cancel);
  if (!delivered || *delivered != events) {
    std::fprintf(stderr, "run failed: %s\n",
                 delivered ? "not every event was delivered" : delivered.error().report().c_str());
    std::exit(1);
  }
  (void)(*sink)->close();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - c0;
  done.store(true);
  if (scraper.joinable()) scraper.join();
  if (metrics && observer->committed("public.bench6", Operation::kInsert) != events) {
    std::fprintf(
        stderr, "the metrics counted %llu events, not %llu\n",
        static_cast<unsigned long long>(observer->committed("public.bench6", Operation::kInsert)),
        static_cast<unsigned long long>(events));
    std::exit(1);
  }
  std::filesystem::remove(file);
  return {wall, cpu};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // one "first start" line per run otherwise
  const std::uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 7;
  // A third argument runs one variant only ("plain" or "metrics"), for a profiler.
  const std::string only = argc > 3 ? argv[3] : "";
  const auto file = std::filesystem::temp_directory_path() / "cppcdc-bench-pipeline.jsonl";
  std::vector<double> plain_wall, plain_cpu, with_wall, with_cpu;
  (void)run_once(events / 10, false, file);  // warm-up: page cache, allocator
  for (int r = 0; r < repeat; ++r) {
    // Alternate the order, so that neither variant always runs second.
    for (int k = 0; k < 2; ++k) {
      const bool metrics = (r + k) % 2 == 1;
      if ((only == "plain" && metrics) || (only == "metrics" && !metrics)) continue;
      const Timing t = run_once(events, metrics, file);
      (metrics ? with_wall : plain_wall).push_back(t.wall);
      (metrics ? with_cpu : plain_cpu).push_back(t.cpu);
      std::printf("run %d %-13s %7.3f s wall %7.3f s CPU  %9.0f events/s\n", r + 1,
                  metrics ? "with metrics" : "plain", t.wall, t.cpu,
                  static_cast<double>(events) / t.wall);
      std::fflush(stdout);
    }
  }
  if (!only.empty()) return 0;
  const double pw = median(plain_wall), ww = median(with_wall);
  const double pc = median(plain_cpu), wc = median(with_cpu);
  std::printf("\n%llu events, %d runs each, medians:\n", static_cast<unsigned long long>(events),
              repeat);
  std::printf("  plain         %7.3f s wall %7.3f s CPU  %9.0f events/s\n", pw, pc,
              static_cast<double>(events) / pw);
  std::printf("  with metrics  %7.3f s wall %7.3f s CPU  %9.0f events/s\n", ww, wc,
              static_cast<double>(events) / ww);
  std::printf("  throughput with / without: %.4f (goal: at least 0.98); CPU ratio %.4f\n", pw / ww,
              wc / pc);
  return 0;
}
