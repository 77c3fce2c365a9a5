#pragma once
// Events for codec round trips: a fixed one that uses every envelope field, and random ones
// drawn from a seeded generator (every op, all three before-image shapes, SQL NULL, json
// columns, escapes and non-ASCII text, counters above 2^63).

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"

namespace cppcdc::test {

inline Event full_event() {
  Event e;
  e.op = Operation::kUpdate;
  e.before = BeforeFull{
      {{"id", "42", false}, {"status", "pending", false}, {"doc", std::nullopt, false}}, {"big"}};
  e.after = Row{{"id", "42", false},
                {"status", "shipped \"fast\"\n", false},
                {"doc", R"({"a":[1,2.50,12345678901234567890123],"b":null})", true},
                {"note", std::nullopt, false},
                {"city", "Zürich ✓", false}};
  e.source = {"postgres", "0/1B2C3D4E", 1784583185586};
  e.ts = 1784583185599;
  e.schema = "public";
  e.table = "orders";
  e.primary_key = std::vector<std::string>{"id"};
  e.transaction = TransactionMetadata{3084, 2, 1};
  e.unavailable_columns = {"blob"};
  return e;
}

class EventGenerator {
 public:
  explicit EventGenerator(std::uint32_t seed) : rng_(seed) {}

  Event next() {
    Event e;
    static constexpr Operation kOps[] = {
        Operation::kInsert,       Operation::kUpdate,   Operation::kDelete, Operation::kRead,
        Operation::kSchemaChange, Operation::kTruncate, Operation::kMessage};
    e.op = kOps[pick(7)];
    e.table = text(1, 12);
    if (pick(4) != 0) e.schema = text(0, 8);
    e.source = {pick(2) ? "postgres" : "mariadb", text(1, 20), big_signed()};
    e.ts = big_signed();
    const int columns = static_cast<int>(pick(8));
    std::vector<std::string> names;
    for (int i = 0; i < columns; ++i) names.push_back("c" + std::to_string(i) + text(0, 3));
    if (pick(3) != 0 && !names.empty()) {
      e.primary_key = std::vector<std::string>{names[0]};
      if (names.size() > 1 && pick(2)) e.primary_key->push_back(names[1]);
    } else if (pick(5) == 0) {
      e.primary_key = std::vector<std::string>{};
    }
    if (pick(4) != 0) e.after = row(names);
    switch (pick(3)) {
      case 0:
        break;
      case 1: {
        Row key;
        if (!names.empty()) key.push_back(value(names[0]));
        e.before = BeforeKeyOnly{std::move(key)};
        break;
      }
      default: {
        std::vector<std::string> missing;
        if (pick(3) == 0) missing.push_back("gone" + text(0, 4));
        e.before = BeforeFull{row(names), std::move(missing)};
      }
    }
    if (pick(3) == 0) e.unavailable_columns = {"t" + text(0, 5), "u"};
    if (pick(3) == 0) {
      e.transaction = TransactionMetadata{rng_(), pick(1000), pick(1000)};
      if (pick(4) == 0) e.transaction->tx_id = UINT64_MAX - pick(10);
    }
    if (pick(5) == 0) e.snapshot = SnapshotMetadata{text(0, 10), rng_(), pick(2) == 1};
    e.envelope_version = pick(10) == 0 ? static_cast<std::uint16_t>(pick(65536)) : kEnvelopeVersion;
    return e;
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  std::int64_t big_signed() {
    switch (pick(4)) {
      case 0:
        return 0;
      case 1:
        return -static_cast<std::int64_t>(pick(1'000'000));
      case 2:
        return static_cast<std::int64_t>(rng_());
      default:
        return 1'700'000'000'000 + static_cast<std::int64_t>(pick(1'000'000'000));
    }
  }
  std::string text(int min, int max) {
    static const std::vector<std::string> kPieces = {
        "a", "Z", "0", " ", "\"", "\\", "\n", "\t", "\x01", "é", "✓", "𝄞", "{", "}", ",", ":", "/"};
    const int n = min + static_cast<int>(pick(static_cast<std::uint64_t>(max - min + 1)));
    std::string out;
    for (int i = 0; i < n; ++i) out += kPieces[pick(kPieces.size())];
    return out;
  }
  ColumnValue value(const std::string& name) {
    static const std::vector<std::string> kJson = {
        "1",  "-0.5e10", "12345678901234567890123",      "true",
        "[]", "{}",      R"({"k":[1,"two",{"x":null}]})"};  // (JSON null and strings read back as
                                                            // NULL and text)
    switch (pick(5)) {
      case 0:
        return {name, std::nullopt, false};
      case 1:
        return {name, kJson[pick(kJson.size())], true};
      default:
        return {name, text(0, 16), false};
    }
  }
  Row row(const std::vector<std::string>& names) {
    Row r;
    for (const auto& n : names) r.push_back(value(n));
    return r;
  }

  std::mt19937_64 rng_;
};

}  // namespace cppcdc::test
