#pragma once
// Compares an event with what Debian's python3-avro decoded from the Avro codec's bytes (a JSON
// object of the datum, Avro bytes as UTF-8 text; tests/unit/codec/avro_decode.py and
// tests/integration/kafka/kafka_tool.py read-avro print it), field by field.

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/event_json.hpp"
#include "cppcdc/event.hpp"

namespace cppcdc::test {

inline std::string row_json(const Row& row) {
  ByteBuffer b;
  detail::write_row_json(b, row);
  return std::string(b.view());
}

inline std::int64_t as_int(const boost::json::value& v) {
  return v.is_int64() ? v.as_int64() : static_cast<std::int64_t>(v.as_uint64());
}

inline std::vector<std::string> names(const boost::json::value& v) {
  std::vector<std::string> out;
  for (const auto& n : v.as_array()) out.emplace_back(n.as_string());
  return out;
}

// What python3-avro read, field by field, against the event we wrote.
inline void expect_same(const boost::json::object& d, const Event& e) {
  const Row* before = e.before.row();
  if (before == nullptr) {
    EXPECT_TRUE(d.at("before").is_null());
  } else {
    EXPECT_EQ(d.at("before").as_string(), row_json(*before));
  }
  if (!e.after) {
    EXPECT_TRUE(d.at("after").is_null());
  } else {
    EXPECT_EQ(d.at("after").as_string(), row_json(*e.after));
  }
  EXPECT_EQ(d.at("op").as_string(), to_string(e.op));
  const auto& source = d.at("source").as_object();
  EXPECT_EQ(source.at("source_name").as_string(), e.source.source_name);
  EXPECT_EQ(source.at("offset").as_string(), e.source.offset);
  EXPECT_EQ(as_int(source.at("timestamp")), e.source.timestamp);
  EXPECT_EQ(as_int(d.at("ts")), e.ts);
  if (e.schema) {
    EXPECT_EQ(d.at("schema").as_string(), *e.schema);
  } else {
    EXPECT_TRUE(d.at("schema").is_null());
  }
  EXPECT_EQ(d.at("table").as_string(), e.table);
  if (e.primary_key) {
    EXPECT_EQ(names(d.at("primary_key")), *e.primary_key);
  } else {
    EXPECT_TRUE(d.at("primary_key").is_null());
  }
  if (e.snapshot) {
    const auto& s = d.at("snapshot").as_object();
    EXPECT_EQ(s.at("snapshot_id").as_string(), e.snapshot->snapshot_id);
    EXPECT_EQ(static_cast<std::uint64_t>(as_int(s.at("chunk"))), e.snapshot->chunk);
    EXPECT_EQ(s.at("is_last_chunk").as_bool(), e.snapshot->is_last_chunk);
  } else {
    EXPECT_TRUE(d.at("snapshot").is_null());
  }
  if (e.transaction) {
    const auto& t = d.at("transaction").as_object();
    EXPECT_EQ(static_cast<std::uint64_t>(as_int(t.at("tx_id"))), e.transaction->tx_id);
    EXPECT_EQ(static_cast<std::uint64_t>(as_int(t.at("total_events"))),
              e.transaction->total_events);
    EXPECT_EQ(static_cast<std::uint64_t>(as_int(t.at("event_index"))), e.transaction->event_index);
  } else {
    EXPECT_TRUE(d.at("transaction").is_null());
  }
  EXPECT_EQ(as_int(d.at("envelope_version")), e.envelope_version);
  EXPECT_EQ(d.at("before_is_key_only").as_bool(), e.before.is_key_only());
  EXPECT_EQ(names(d.at("unavailable_columns")), e.unavailable_columns);
  EXPECT_EQ(names(d.at("before_unavailable_columns")), e.before.unavailable_columns());
}

}  // namespace cppcdc::test
