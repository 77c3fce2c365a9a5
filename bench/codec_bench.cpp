// Google Benchmark: CPU per event of each codec's encoder (value and key, as the Kafka sink asks
// for both), on the 6-column row of workloads (a)/(b) (id, name, amount, created_at, qty,
// active) and on a 50-column row (the same six columns repeated with numbered names), both as
// the PostgreSQL source produces them. Each iteration encodes a batch of 1,000 insert events
// into one reused buffer; items per second is events per second.
//
//   codec/json/6, codec/avro/6, codec/protobuf/6, codec/json_schema/6, codec/debezium_json/6,
//   and the same at 50 columns (avro and protobuf bare, json_schema with fixed ids: no registry);
//   codec/debezium_json_schemas/N is debezium_json with schemas_enable (a schema per record),
//   codec/debezium_json_text/N with typed = false (every value its text). The rows have a shape
//   (PostgreSQL types), so debezium_json writes typed values. codec/json_rows_event/N: the
//   JSON envelope of rows whose position is shared by 50 in a row, as the rows of one binlog
//   rows event are (the envelope's tail is then reused but for event_index).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/avro.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/debezium.hpp"
#include "cppcdc/json_schema.hpp"
#include "cppcdc/protobuf.hpp"

namespace {

using namespace cppcdc;

constexpr int kBatch = 1000;

/// The shape of the batch's rows as the PostgreSQL source describes it (debezium_json types
/// its values by it): id int4, then text, numeric(12,2), timestamptz, int4 and boolean columns.
RowShapePtr shape_of(int columns) {
  std::vector<ColumnShape> cols;
  const auto column = [&](std::string name, std::uint32_t oid, std::int32_t mod) {
    ColumnShape c;
    c.name = std::move(name);
    c.type_oid = oid;
    c.type_modifier = mod;
    c.nullable = cols.empty() ? false : true;
    cols.push_back(std::move(c));
  };
  column("id", 23, -1);
  for (int c = 1; c < columns; ++c) {
    const std::string suffix = columns == 6 ? "" : "_" + std::to_string(c);
    switch (c % 5) {
      case 1:
        column("name" + suffix, 25, -1);
        break;
      case 2:
        column("amount" + suffix, 1700, ((12 << 16) | 2) + 4);
        break;
      case 3:
        column("created_at" + suffix, 1184, -1);
        break;
      case 4:
        column("qty" + suffix, 23, -1);
        break;
      default:
        column("active" + suffix, 16, -1);
    }
  }
  return std::make_shared<const RowShape>("public", columns == 6 ? "bench6" : "bench50",
                                          std::move(cols), std::vector<std::string>{"id"});
}

std::vector<Event> batch(int columns, int place_run) {
  std::vector<Event> out;
  out.reserve(kBatch);
  const RowShapePtr shape = shape_of(columns);
  for (int i = 1; i <= kBatch; ++i) {
    Event e;
    e.op = Operation::kInsert;
    e.schema = "public";
    e.table = columns == 6 ? "bench6" : "bench50";
    const int place = (i - 1) / place_run * place_run + 1;  // runs of place_run share one
    e.source = SourceMetadata{"postgres", "0/1" + std::to_string(1000000 + place), 1700000000000};
    e.ts = 1700000000123;
    e.primary_key = std::vector<std::string>{"id"};
    e.shape = shape;
    e.transaction = TransactionMetadata{4242, kBatch, static_cast<std::uint64_t>(i - 1)};
    Row row{{"id", std::to_string(i), false}};
    for (int c = 1; c < columns; ++c) {
      const std::string suffix = columns == 6 ? "" : "_" + std::to_string(c);
      switch (c % 5) {
        case 1:
          row.push_back({"name" + suffix, "c4ca4238a0b923820dcc509a6f75849b", false});
          break;
        case 2:
          row.push_back({"amount" + suffix, std::to_string(i) + ".25", false});
          break;
        case 3:
          row.push_back({"created_at" + suffix, "2024-01-01 00:00:00.001+00", false});
          break;
        case 4:
          row.push_back({"qty" + suffix, std::to_string(i % 1000), false});
          break;
        default:
          row.push_back({"active" + suffix, i % 2 == 0 ? "t" : "f", false});
      }
    }
    e.after = std::move(row);
    out.push_back(std::move(e));
  }
  return out;
}

void run(benchmark::State& state, std::unique_ptr<Encoder> encoder, int place_run = 1) {
  const std::vector<Event> events = batch(static_cast<int>(state.range(0)), place_run);
  ByteBuffer value;
  ByteBuffer key;
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const Event& e : events) {
      value.clear();
      key.clear();
      if (!encoder->encode_to("bench.topic", e, value)) std::abort();
      auto keyed = encoder->encode_key_to("bench.topic", e, key);
      if (!keyed || !*keyed) std::abort();
      bytes += value.size() + key.size();
    }
    benchmark::DoNotOptimize(value.data());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / kBatch;
}

void BM_json(benchmark::State& s) { run(s, make_json_encoder()); }
// As a binlog source produces them: the rows of one rows event (here 50) share their position.
void BM_json_rows_event(benchmark::State& s) { run(s, make_json_encoder(), 50); }
void BM_avro(benchmark::State& s) { run(s, make_avro_encoder()); }
void BM_protobuf(benchmark::State& s) { run(s, make_protobuf_encoder()); }
void BM_json_schema(benchmark::State& s) {
  JsonSchemaCodecOptions o;
  o.schema_id = 1;
  o.key_schema_id = 2;
  run(s, make_json_schema_encoder(std::move(o)));
}
void BM_debezium_json(benchmark::State& s) { run(s, make_debezium_json_encoder()); }
void BM_debezium_json_text(benchmark::State& s) {
  DebeziumJsonOptions o;
  o.typed = false;
  run(s, make_debezium_json_encoder(o));
}
void BM_debezium_json_schemas(benchmark::State& s) {
  DebeziumJsonOptions o;
  o.schemas_enable = true;
  run(s, make_debezium_json_encoder(o));
}

BENCHMARK(BM_json)->Name("codec/json")->Arg(6)->Arg(50);
BENCHMARK(BM_json_rows_event)->Name("codec/json_rows_event")->Arg(6)->Arg(50);
BENCHMARK(BM_avro)->Name("codec/avro")->Arg(6)->Arg(50);
BENCHMARK(BM_protobuf)->Name("codec/protobuf")->Arg(6)->Arg(50);
BENCHMARK(BM_json_schema)->Name("codec/json_schema")->Arg(6)->Arg(50);
BENCHMARK(BM_debezium_json)->Name("codec/debezium_json")->Arg(6)->Arg(50);
BENCHMARK(BM_debezium_json_text)->Name("codec/debezium_json_text")->Arg(6)->Arg(50);
BENCHMARK(BM_debezium_json_schemas)->Name("codec/debezium_json_schemas")->Arg(6)->Arg(50);

}  // namespace

BENCHMARK_MAIN();
