// The Kafka sink alone, against the producer ceiling (bench/kafka_run.sh runs it next to
// kafka-producer-perf-test): EVENTS bench6-shaped insert events (the row workload (a) of
// bench/run.sh produces), written to TOPIC in batches of BATCH events, each batch flushed
// (idempotent: every record acknowledged; transactional: each batch one committed
// transaction), as the runtime drives a sink. The events are made once, before the clock
// starts, and written over and over: what is timed is the sink (encoding, keys, headers,
// librdkafka, the broker), as kafka-producer-perf-test times only its producer.
//
// Usage: cppcdc_bench_kafka_sink BOOTSTRAP TOPIC EVENTS [BATCH] [idempotent|transactional]
//                                [json|avro]
// Prints one line: events/s, and the mean record size (key + value, as the codec writes them)
// for the ceiling's --record-size. The codec is json unless "avro" is given (bare Avro).

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cppcdc/avro.hpp"
#include "cppcdc/event.hpp"
#include "cppcdc/kafka.hpp"

namespace {

using namespace cppcdc;

Event bench6_event(std::uint64_t id) {
  char text[64];
  Event e;
  e.op = Operation::kInsert;
  e.schema = "public";
  e.table = "bench6";
  e.source.source_name = "bench";
  e.source.offset = "0/" + std::to_string(0x1000000 + id);
  e.source.timestamp = 1'700'000'000'000 + static_cast<std::int64_t>(id / 1000);
  e.ts = e.source.timestamp + 5;
  e.transaction = TransactionMetadata{id / 1000 + 1, 1000, (id - 1) % 1000};
  e.primary_key = std::vector<std::string>{"id"};
  Row row;
  row.push_back({"id", std::to_string(id), false});
  std::snprintf(text, sizeof text, "%016llx%016llx",
                static_cast<unsigned long long>(id * 0x9E3779B97F4A7C15ull),
                static_cast<unsigned long long>(id * 0xC2B2AE3D27D4EB4Full));
  row.push_back({"name", std::string(text), false});
  std::snprintf(text, sizeof text, "%llu.%02llu", static_cast<unsigned long long>(id * 125 / 100),
                static_cast<unsigned long long>(id * 125 % 100));
  row.push_back({"amount", std::string(text), false});
  row.push_back({"created_at", std::string("2024-01-01 00:16:40.123+00"), false});
  row.push_back({"qty", std::to_string(id % 1000), false});
  row.push_back({"active", std::string(id % 2 == 0 ? "t" : "f"), false});
  e.after = std::move(row);
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s BOOTSTRAP TOPIC EVENTS [BATCH] [idempotent|transactional] "
                 "[json|avro]\n",
                 argv[0]);
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  const std::uint64_t events = std::strtoull(argv[3], nullptr, 10);
  const std::size_t batch = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 10'000;
  const bool transactional = argc > 5 && std::string(argv[5]) == "transactional";
  const std::string codec = argc > 6 ? argv[6] : "json";
  if (codec != "json" && codec != "avro") {
    std::fprintf(stderr, "codec must be json or avro, not %s\n", codec.c_str());
    return 2;
  }
  const auto make_encoder = [&]() {
    return codec == "avro" ? make_avro_encoder() : make_json_encoder();
  };

  KafkaSinkConfig config;
  config.bootstrap_servers = argv[1];
  config.topic = argv[2];
  config.create_topics = true;
  config.topic_partitions = 1;
  if (transactional) {
    config.delivery_mode = KafkaDeliveryMode::kTransactional;
    config.transactional_id = std::string("bench-") + argv[2];
  }
  auto sink = make_kafka_sink(config, make_encoder());
  if (!sink) {
    std::fprintf(stderr, "%s\n", sink.error().report().c_str());
    return 1;
  }
  std::vector<Event> pool;
  pool.reserve(batch);
  std::size_t bytes = 0;
  auto sizer = make_encoder();
  for (std::uint64_t id = 1; id <= batch; ++id) {
    pool.push_back(bench6_event(id));
    ByteBuffer record;
    (void)sizer->encode_to(argv[2], pool.back(), record);
    (void)sizer->encode_key_to(argv[2], pool.back(), record);
    bytes += record.size();
  }
  // One batch first, untimed: the topic is created and the producer connected.
  if (auto st = (*sink)->write(pool); !st || !(st = (*sink)->flush())) {
    std::fprintf(stderr, "%s\n", st.error().report().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t written = 0;
  while (written < events) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(batch, events - written));
    Status st = (*sink)->write(std::span<const Event>(pool.data(), n));
    if (st) st = (*sink)->flush();
    if (!st) {
      std::fprintf(stderr, "%s\n", st.error().report().c_str());
      return 1;
    }
    written += n;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)(*sink)->close();
  std::printf("%s sink, %s: %llu events in %.3f s, %.0f events/s, mean record %zu bytes\n",
              transactional ? "transactional" : "idempotent", codec.c_str(),
              static_cast<unsigned long long>(events), seconds,
              static_cast<double>(events) / seconds, bytes / pool.size());
  return 0;
}
