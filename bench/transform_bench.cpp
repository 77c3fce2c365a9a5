// Google Benchmark: CPU per event of each native transform action, on the 6-column row of
// workloads (a)/(b) (id, name, amount, created_at, qty, active) as the PostgreSQL source
// produces it. Each iteration copies a batch of 1,000 events into the work vector (what the
// pipeline does before its transforms) and runs the chain over it; "copy_only" is that copy
// alone, so an action's own cost is its time minus copy_only's.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cppcdc/transforms.hpp"

namespace {

using namespace cppcdc;

constexpr int kBatch = 1000;

std::vector<Event> batch() {
  std::vector<Event> out;
  out.reserve(kBatch);
  for (int i = 1; i <= kBatch; ++i) {
    Event e;
    e.op = Operation::kInsert;
    e.schema = "public";
    e.table = "bench6";
    e.source = SourceMetadata{"postgres", "0/1" + std::to_string(1000000 + i), 1700000000000};
    e.ts = 1700000000123;
    e.primary_key = std::vector<std::string>{"id"};
    e.transaction = TransactionMetadata{4242, kBatch, static_cast<std::uint64_t>(i - 1)};
    e.after = Row{{"id", std::to_string(i), false},
                  {"name", "c4ca4238a0b923820dcc509a6f75849b", false},
                  {"amount", std::to_string(i) + ".25", false},
                  {"created_at", "2024-01-01 00:00:00.001+00", false},
                  {"qty", std::to_string(i % 1000), false},
                  {"active", i % 2 == 0 ? "t" : "f", false}};
    out.push_back(std::move(e));
  }
  return out;
}

std::unique_ptr<TransformChain> chain_of(std::vector<std::unique_ptr<TransformAction>> actions) {
  TransformChainConfig config;
  int n = 0;
  for (auto& a : actions) {
    TransformStage s;
    s.name = "stage" + std::to_string(++n);
    s.actions.push_back(std::move(a));
    config.stages.push_back(std::move(s));
  }
  auto chain = TransformChain::create(std::move(config));
  if (!chain) std::abort();
  return std::move(*chain);
}

template <class T>
std::unique_ptr<TransformAction> must(Result<T> r) {
  if (!r) std::abort();
  return std::move(*r);
}

void run(benchmark::State& state, TransformChain* chain) {
  const std::vector<Event> source = batch();
  std::vector<Event> work;
  for (auto _ : state) {
    work.assign(source.begin(), source.end());
    if (chain != nullptr && !chain->apply(work)) state.SkipWithError("apply failed");
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

std::vector<std::unique_ptr<TransformAction>> one(std::unique_ptr<TransformAction> a) {
  std::vector<std::unique_ptr<TransformAction>> v;
  v.push_back(std::move(a));
  return v;
}

FilterConfig filter_config() {
  FilterConfig c;
  c.include_tables = {"public.bench*"};
  c.filters.push_back({"after.qty", FilterOperator::kGe, "0"});
  return c;
}

MaskConfig hmac_config() {
  MaskConfig c;
  c.rules.emplace_back("name", MaskRule::hmac_sha256("bench-secret"));
  return c;
}

void BM_copy_only(benchmark::State& state) { run(state, nullptr); }

#define ACTION_BENCH(NAME, MAKE)                            \
  void BM_##NAME(benchmark::State& state) {                 \
    auto chain = chain_of(one(must(MAKE)));                 \
    run(state, chain.get());                                \
  }                                                         \
  BENCHMARK(BM_##NAME)

BENCHMARK(BM_copy_only);
ACTION_BENCH(filter_table_and_content, make_filter(filter_config()));
FilterConfig regex_config() {
  FilterConfig c;
  c.filters.push_back({"after.name", FilterOperator::kRegex, "^[0-9a-f]+$"});
  return c;
}
ACTION_BENCH(filter_regex, make_filter(regex_config()));
ACTION_BENCH(mask_redact, make_mask(MaskConfig{{{"name", MaskRule::redact("***")}}, {}}));
ACTION_BENCH(mask_unsalted_sha256, make_mask(MaskConfig{{{"name", MaskRule::unsalted_sha256()}}, {}}));
ACTION_BENCH(mask_hmac_sha256, make_mask(hmac_config()));
ACTION_BENCH(mask_encrypt, make_mask(MaskConfig{{{"name", MaskRule::encrypt("bench")}}, {}}));
ACTION_BENCH(metadata_projection, make_metadata_projection({}));
ACTION_BENCH(key_shaping_primary_key, make_key_shaping({"_key", KeyMode::kPrimaryKey, false}));
ACTION_BENCH(key_shaping_fingerprint, make_key_shaping({"_fp", KeyMode::kFingerprint, false}));
ACTION_BENCH(route, make_route({std::string("out"), std::nullopt}));
ACTION_BENCH(field_mapping_rename, make_field_mapping(FieldMappingConfig{
                                       {}, {{"qty", "quantity"}}, {}, {}, false}));

// The chain of the end-to-end transform run: filter + mask (HMAC) + metadata_projection.
void BM_chain_filter_mask_meta(benchmark::State& state) {
  std::vector<std::unique_ptr<TransformAction>> actions;
  actions.push_back(must(make_filter(filter_config())));
  actions.push_back(must(make_mask(hmac_config())));
  actions.push_back(must(make_metadata_projection({})));
  auto chain = chain_of(std::move(actions));
  run(state, chain.get());
}
BENCHMARK(BM_chain_filter_mask_meta);

}  // namespace

BENCHMARK_MAIN();
