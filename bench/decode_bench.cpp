// CPU cost per event of cppcdc's hot path, in isolation: no socket, no sink I/O.
//
// Input: pgoutput streams recorded from a real PostgreSQL 15 by tools/pg_record_frames (one
// CopyData payload per line, hex), under bench/frames/ (or the directory given by the
// CPPCDC_BENCH_FRAMES environment variable). Each recording holds one transaction of row
// changes to one table. The Relation message is fed once, as a walsender does once per
// session; each benchmark iteration then replays the transaction's frames (Begin, the row
// changes, Commit), so Begin/Commit costs are spread over the rows of one transaction.
//
// Benchmarks, per recording (N = rows of the transaction, reported as the "events" counter):
//   decode/<rec>    decode_copy_frame + decode_pgoutput
//   assemble/<rec>  the above + TransactionAssembler::feed (events built and released)
//   pipeline/<rec>  the above + Event::append_json into a reused buffer, like the file sink
//   json/<rec>      Event::append_json alone over the transaction's prebuilt events
// CPU time per event is the counter "per_event" (CPU time per iteration / N). With
// --benchmark_repetitions, a "min" statistic is reported next to mean/median/stddev: on a
// shared machine the minimum is the closest to the undisturbed cost.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "source/postgres/assembler.hpp"
#include "source/postgres/pgoutput.hpp"

namespace {

namespace fs = std::filesystem;
using namespace cppcdc;
using namespace cppcdc::pg;

using Bytes = std::vector<std::uint8_t>;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool from_hex(const std::string& line, Bytes& out) {
  out.clear();
  if (line.size() % 2 != 0) return false;
  out.reserve(line.size() / 2);
  for (std::size_t i = 0; i < line.size(); i += 2) {
    const int hi = hex_value(line[i]);
    const int lo = hex_value(line[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<std::uint8_t>(hi << 4 | lo));
  }
  return true;
}

/// The catalog as the SQL look-up would answer for the benchmark tables: `id` is the primary
/// key and NOT NULL; type names are not needed on the per-event path.
class StandInCatalog final : public CatalogLookup {
 public:
  Result<RelationDetails> describe(const RelationMsg& rel) override {
    RelationDetails d;
    for (const auto& c : rel.columns) {
      d.type_names.emplace_back();
      d.not_null.push_back(c.name == "id");
      if (c.name == "id") d.primary_key.push_back("id");
    }
    return d;
  }
};

struct Recording {
  std::string name;
  std::vector<Bytes> setup;  // Relation/Type frames, fed once
  std::vector<Bytes> tx;     // Begin, row changes, Commit
  std::size_t rows = 0;
  std::size_t columns = 0;
};

bool load(const fs::path& path, Recording& rec, std::string& why) {
  std::ifstream in(path);
  if (!in) {
    why = "cannot open " + path.string();
    return false;
  }
  rec.name = path.stem().string();
  std::string line;
  Bytes bytes;
  bool in_tx = false;
  bool done = false;
  while (!done && std::getline(in, line)) {
    if (line.empty()) continue;
    if (!from_hex(line, bytes)) {
      why = path.string() + ": a line is not hex";
      return false;
    }
    auto frame = decode_copy_frame(bytes);
    if (!frame) {
      why = path.string() + ": " + frame.error().report();
      return false;
    }
    const auto* x = std::get_if<XLogData>(&*frame);
    if (x == nullptr) continue;  // keepalive
    auto msg = decode_pgoutput(x->payload);
    if (!msg) {
      why = path.string() + ": " + msg.error().report();
      return false;
    }
    if (const auto* r = std::get_if<RelationMsg>(&*msg)) {
      rec.setup.push_back(bytes);
      rec.columns = r->columns.size();
      continue;
    }
    if (std::holds_alternative<TypeMsg>(*msg) || std::holds_alternative<OriginMsg>(*msg)) {
      rec.setup.push_back(bytes);
      continue;
    }
    if (std::holds_alternative<BeginMsg>(*msg)) in_tx = true;
    if (!in_tx) continue;
    rec.tx.push_back(bytes);
    if (std::holds_alternative<InsertMsg>(*msg) || std::holds_alternative<UpdateMsg>(*msg) ||
        std::holds_alternative<DeleteMsg>(*msg)) {
      ++rec.rows;
    }
    if (std::holds_alternative<CommitMsg>(*msg)) done = true;
  }
  if (!done || rec.rows == 0 || rec.setup.empty()) {
    why = path.string() + ": no Relation message and complete transaction with row changes";
    return false;
  }
  return true;
}

/// Decoder + assembler primed with the recording's Relation message.
struct Pipeline {
  StandInCatalog catalog;
  TransactionAssembler assembler{"postgres",
                                 [](const std::string&, const std::string&) { return true; },
                                 catalog};
  std::vector<Event> events;

  explicit Pipeline(const Recording& rec) {
    for (const auto& b : rec.setup) feed(b);
    events.clear();
  }

  // Decodes and feeds one frame; aborts the benchmark on any error (the input is known good).
  void feed(const Bytes& b) {
    auto frame = decode_copy_frame(b);
    if (!frame) std::abort();
    const auto& x = std::get<XLogData>(*frame);
    auto msg = decode_pgoutput(x.payload);
    if (!msg) std::abort();
    // Moved in, as the source's reader does: the message's values become the event's.
    if (!assembler.feed(std::move(*msg), x.data_start, events)) std::abort();
  }
};

void set_counters(benchmark::State& state, const Recording& rec) {
  const auto n = static_cast<double>(rec.rows);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rec.rows));
  state.counters["events"] = n;
  // CPU seconds per event (printed with an SI prefix, e.g. "412n" for 412 ns).
  state.counters["per_event"] = benchmark::Counter(
      n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void bm_decode(benchmark::State& state, const Recording* rec) {
  for (auto _ : state) {
    for (const auto& b : rec->tx) {
      auto frame = decode_copy_frame(b);
      if (!frame) std::abort();
      auto msg = decode_pgoutput(std::get<XLogData>(*frame).payload);
      benchmark::DoNotOptimize(msg);
    }
  }
  set_counters(state, *rec);
}

void bm_assemble(benchmark::State& state, const Recording* rec) {
  Pipeline p(*rec);
  for (auto _ : state) {
    for (const auto& b : rec->tx) p.feed(b);
    benchmark::DoNotOptimize(p.events.data());
    p.events.clear();
  }
  set_counters(state, *rec);
}

void bm_pipeline(benchmark::State& state, const Recording* rec) {
  Pipeline p(*rec);
  std::string sink;  // like the file sink's batch buffer: reused, cleared after each write
  for (auto _ : state) {
    for (const auto& b : rec->tx) p.feed(b);
    for (const auto& e : p.events) {
      e.append_json(sink);
      sink.push_back('\n');
    }
    benchmark::DoNotOptimize(sink.data());
    if (sink.size() > (4u << 20)) sink.clear();
    p.events.clear();
  }
  set_counters(state, *rec);
}

void bm_json(benchmark::State& state, const Recording* rec) {
  Pipeline p(*rec);
  for (const auto& b : rec->tx) p.feed(b);
  std::string sink;
  for (auto _ : state) {
    for (const auto& e : p.events) {
      e.append_json(sink);
      sink.push_back('\n');
    }
    benchmark::DoNotOptimize(sink.data());
    if (sink.size() > (4u << 20)) sink.clear();
  }
  set_counters(state, *rec);
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("CPPCDC_BENCH_FRAMES");
  const fs::path dir = env != nullptr && *env != '\0' ? fs::path(env) : fs::path(CPPCDC_BENCH_FRAMES_DIR);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".frames") files.push_back(e.path());
  }
  if (files.empty()) {
    std::cerr << "no *.frames recordings in " << dir << " (record them with bench/run.sh "
              << "--record-frames, or set CPPCDC_BENCH_FRAMES)\n";
    return 2;
  }
  std::sort(files.begin(), files.end());
  // Recordings live for the whole run: the benchmarks keep pointers to them.
  static std::vector<Recording> recordings;
  recordings.reserve(files.size());
  for (const auto& f : files) {
    Recording rec;
    std::string why;
    if (!load(f, rec, why)) {
      std::cerr << why << "\n";
      return 2;
    }
    recordings.push_back(std::move(rec));
  }
  for (const auto& rec : recordings) {
    const std::string suffix = "/" + rec.name;
    for (auto* b : {benchmark::RegisterBenchmark(("decode" + suffix).c_str(), bm_decode, &rec),
                    benchmark::RegisterBenchmark(("assemble" + suffix).c_str(), bm_assemble, &rec),
                    benchmark::RegisterBenchmark(("pipeline" + suffix).c_str(), bm_pipeline, &rec),
                    benchmark::RegisterBenchmark(("json" + suffix).c_str(), bm_json, &rec)}) {
      b->ComputeStatistics("min", [](const std::vector<double>& v) {
        return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
      });
    }
  }
  benchmark::AddCustomContext("frames_dir", dir.string());
  for (const auto& rec : recordings) {
    benchmark::AddCustomContext(rec.name, std::to_string(rec.rows) + " rows x " +
                                              std::to_string(rec.columns) + " columns per "
                                              "transaction");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
