// The Kafka sink with the avro codec in AWS Glue's framing against the real broker, schemas in
// the in-memory Glue registry (a FAKE: no Glue server runs here). What the broker holds is read
// back by Debian's python3-confluent-kafka, the Glue header taken apart by Python's struct,
// uuid and zlib, and the datums decoded by python3-avro (kafka_tool.py read-avro ... glue; no
// cppcdc code on that side), then compared field by field; each record's UUID must be the one
// the registry holds for the value or key schema.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "avro_expect.hpp"
#include "cppcdc/avro.hpp"
#include "cppcdc/glue.hpp"
#include "cppcdc/kafka.hpp"
#include "integration/kafka/kafka_util.hpp"

namespace cppcdc {
namespace {

std::vector<Event> glue_workload() {
  std::vector<Event> out;
  for (int id = 1; id <= 3; ++id) {
    EventBuilder b("orders", Operation::kInsert);
    b.schema("public")
        .source(SourceMetadata{"shop", "0/" + std::to_string(0x5000 + id), 1700000000000 + id})
        .ts(1700000000500 + id)
        .primary_key({"id"})
        .after(Row{{"id", std::to_string(id), false},
                   {"note", "glue \"n\" ✓ " + std::to_string(id), false},
                   {"doc", R"({"n":)" + std::to_string(id) + "}", true},
                   {"gone", std::nullopt, false}});
    out.push_back(b.build());
  }
  EventBuilder t("orders", Operation::kTruncate);
  t.schema("public").source(SourceMetadata{"shop", "0/6000", 1700000000200}).ts(1700000000700);
  out.push_back(t.build());  // keyless: no key on the broker
  return out;
}

TEST(KafkaGlueOnBroker, GlueFramedAvroIsWhatPythonReadsWithTheRegistrysUuids) {
  KAFKA_TEST_BOOTSTRAP(bootstrap);
  for (GlueCompression compression : {GlueCompression::kNone, GlueCompression::kZlib}) {
    SCOPED_TRACE(std::string(to_string(compression)));
    auto registry = std::make_shared<InMemoryGlueSchemaRegistry>();
    auto encoder = GlueAvroEncoder::create(
        registry, GlueAvroConfig("cdc-events").with_compression(compression));
    ASSERT_TRUE(encoder);
    const std::string topic = kafka_it::unique_topic("avro-glue");
    ASSERT_TRUE(kafka_it::create_topic(bootstrap, topic, 1));
    const auto events = glue_workload();
    {
      KafkaSinkConfig c;
      c.bootstrap_servers = bootstrap;
      c.topic = topic;
      c.delivery_timeout_ms = 60'000;
      auto sink = make_kafka_sink(std::move(c), std::move(*encoder));
      ASSERT_TRUE(sink) << sink.error().report();
      auto written = (*sink)->write(events);
      ASSERT_TRUE(written) << written.error().report();
      auto flushed = (*sink)->flush();
      ASSERT_TRUE(flushed) << flushed.error().report();
    }
    auto value_id =
        registry->register_schema_version("cdc-events", std::string(avro_event_schema()));
    auto key_id =
        registry->register_schema_version("cdc-events-key", std::string(avro_key_schema()));
    ASSERT_TRUE(value_id && key_id);

    const std::string dir = std::string(CPPCDC_SOURCE_DIR) + "/src/codec/avro/";
    const auto o =
        kafka_it::run_command(kafka_it::tool() + " " + bootstrap + " read-avro " + topic + " " +
                              dir + "event.avsc " + dir + "event_key.avsc glue");
    ASSERT_EQ(o.code, 0) << "Python could not read topic " << topic << ": " << o.output;
    const auto records = kafka_it::json_lines(o.output);
    ASSERT_EQ(records.size(), events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      SCOPED_TRACE(events[i].to_json());
      test::expect_same(records[i].at("value").as_object(), events[i]);
      EXPECT_EQ(records[i].at("value_schema_id").as_string(), value_id->to_string());
      ByteBuffer json_key;
      if (append_json_key(events[i], json_key)) {
        ASSERT_TRUE(records[i].at("key").is_object());
        EXPECT_EQ(records[i].at("key").at("key").as_string(), json_key.view());
        EXPECT_EQ(records[i].at("key_schema_id").as_string(), key_id->to_string());
      } else {
        EXPECT_TRUE(records[i].at("key").is_null()) << "a keyless event has no key";
      }
    }
  }
}

}  // namespace
}  // namespace cppcdc
