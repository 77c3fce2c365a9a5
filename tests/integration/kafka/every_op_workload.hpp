#pragma once
// The events the end-to-end codec tests write to the broker and compare with what an
// independent reader decoded.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"

namespace cppcdc::kafka_it {

/// Events of every op for the codec tests: json columns, SQL NULL, escapes and non-ASCII text,
/// both before-image shapes, an unavailable TOAST column, a transaction id above 2^63,
/// snapshot metadata, and keyless events (a truncate, a message).
inline std::vector<Event> every_op_workload(const std::string& source_name) {
  std::vector<Event> out;
  const auto source = [&](int n) {
    return SourceMetadata{source_name, "0/" + std::to_string(0x5000 + n), 1700000000000 + n};
  };
  for (int id = 1; id <= 2; ++id) {
    EventBuilder b("orders", Operation::kInsert);
    b.schema("public")
        .source(source(id))
        .ts(1700000000500 + id)
        .primary_key({"id"})
        .transaction(TransactionMetadata{static_cast<std::uint64_t>(800 + id), 1, 0})
        .after(Row{{"id", std::to_string(id), false},
                   {"note", "n\"ote ✓\n" + std::to_string(id), false},
                   {"doc", R"({"n":)" + std::to_string(id) + R"(,"tags":["a",null]})", true},
                   {"gone", std::nullopt, false}});
    out.push_back(b.build());
  }
  EventBuilder u("orders", Operation::kUpdate);
  u.schema("public")
      .source(source(3))
      .ts(1700000000600)
      .primary_key({"id"})
      .transaction(TransactionMetadata{18446744073709551615ULL, 2, 1})
      .before(BeforeFull{Row{{"id", "1", false}, {"note", "old", false}}, {"big"}})
      .after(Row{{"id", "1", false}, {"note", "new", false}})
      .unavailable_columns({"big"});
  out.push_back(u.build());
  EventBuilder d("orders", Operation::kDelete);
  d.schema("public")
      .source(source(4))
      .ts(1700000000700)
      .primary_key({"id"})
      .before(BeforeKeyOnly{Row{{"id", "2", false}}});
  out.push_back(d.build());
  EventBuilder r("orders", Operation::kRead);
  r.schema("public")
      .source(source(5))
      .ts(1700000000800)
      .primary_key({"id"})
      .snapshot(SnapshotMetadata{"snap-1", 3, true})
      .after(Row{{"id", "9", false}, {"note", std::nullopt, false}});
  out.push_back(r.build());
  EventBuilder t("orders", Operation::kTruncate);
  t.schema("public").source(source(6)).ts(1700000000900).primary_key({"id"});
  out.push_back(t.build());
  EventBuilder m("audit__messages", Operation::kMessage);
  m.source(source(7))
      .ts(1700000001000)
      .after(
          Row{{"prefix", "audit", false}, {"content", "hi", false}, {"transactional", "t", false}});
  out.push_back(m.build());
  return out;
}

}  // namespace cppcdc::kafka_it
