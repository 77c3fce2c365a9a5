#pragma once
// Shared by the snapshot visibility tests (pg_snapshot_visibility_test.cpp and the Kafka
// variant): two tables (acct, keyed by id; bag, keyless with a unique v) written to by an
// application while cppcdc snapshots them, and the oracle that replays what a consumer got.

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "replay.hpp"

namespace cppcdc::it {

inline constexpr int kKeyed = 12000;
inline constexpr int kKeyless = 3000;

// The application: transactions of inserts, updates and deletes on both tables. Keys of new
// acct rows are fresh (above every existing one, or negative: before any saved cursor); bag's
// `v` is unique too, so every row has one identity.
class VisibilityWriter {
 public:
  explicit VisibilityWriter(const std::string& db) : s_(dsn_for(db)), rng_(777) {
    for (int i = 1; i <= kKeyed; ++i) acct_.push_back(i);
    for (int i = 1; i <= kKeyless; ++i) bag_.push_back(i);
  }
  void transactions(int n) {
    for (int t = 0; t < n; ++t) {
      std::string sql = "begin;";
      for (int i = 0; i < 6; ++i) sql += statement();
      s_.query(sql + "commit;");
    }
  }

 private:
  std::string statement() {
    const int pick = static_cast<int>(rng_() % 8);
    const auto any = [&](std::vector<int>& ids) -> std::size_t { return rng_() % ids.size(); };
    switch (pick) {
      case 0: {
        const int id = next_high_++;
        acct_.push_back(id);
        return "insert into acct values (" + std::to_string(id) + ", 0, 'new');";
      }
      case 1: {
        const int id = next_low_--;
        acct_.push_back(id);
        return "insert into acct values (" + std::to_string(id) + ", 0, 'low');";
      }
      case 2:
        return "update acct set n = n + 1, note = 'u" + std::to_string(rng_()) +
               "' where id = " + std::to_string(acct_[any(acct_)]) + ";";
      case 3: {
        const std::size_t at = any(acct_);
        const int id = acct_[at];
        acct_.erase(acct_.begin() + static_cast<long>(at));
        return "delete from acct where id = " + std::to_string(id) + ";";
      }
      case 4: {
        const int v = next_bag_++;
        bag_.push_back(v);
        return "insert into bag values (" + std::to_string(v) + ", 'new');";
      }
      case 5:
      case 6:
        return "update bag set note = 'u" + std::to_string(rng_()) +
               "' where v = " + std::to_string(bag_[any(bag_)]) + ";";
      default: {
        const std::size_t at = any(bag_);
        const int v = bag_[at];
        bag_.erase(bag_.begin() + static_cast<long>(at));
        return "delete from bag where v = " + std::to_string(v) + ";";
      }
    }
  }

  PgSession s_;
  std::mt19937 rng_;
  std::vector<int> acct_, bag_;
  int next_high_ = 1'000'000, next_low_ = -1, next_bag_ = 1'000'000;
};

inline std::string value(const Row* row, const char* column) {
  const ColumnValue* c = row ? find_column(*row, column) : nullptr;
  return c && c->text ? *c->text : "";
}

// Replays `events` and compares with the source's acct (keyed, by id) and bag (keyless, by
// its unique v): every row as the source has it, no update or delete of a row not held, and
// no row both read and inserted.
inline void expect_replay_equals_source(const std::vector<Event>& events, PgSession& s) {
  Replay replay;
  std::map<std::string, std::optional<std::string>> bag;  // v -> note
  std::set<std::string> read_ids, inserted_ids, read_bag, inserted_bag;
  std::size_t bag_problems = 0;
  for (const auto& e : events) {
    if (e.table == "acct") {
      replay.apply(e);
      if (e.op == Operation::kRead) read_ids.insert(value(e.after ? &*e.after : nullptr, "id"));
      if (e.op == Operation::kInsert) {
        inserted_ids.insert(value(e.after ? &*e.after : nullptr, "id"));
      }
      continue;
    }
    if (e.table != "bag") continue;
    // The keyless table by its unique `v`: a row must not arrive while it is held, an update
    // or delete must find the row its before-image names, with the same values.
    const std::string before_v = value(e.before.row(), "v");
    const std::string after_v = value(e.after ? &*e.after : nullptr, "v");
    const auto held = [&](const std::string& v) {
      auto it = bag.find(v);
      const ColumnValue* note = e.before.row() ? find_column(*e.before.row(), "note") : nullptr;
      if (it == bag.end() || !note || it->second != note->text) {
        if (bag_problems++ < 5) ADD_FAILURE() << "no such row in bag: " << e.to_json();
        return false;
      }
      return true;
    };
    switch (e.op) {
      case Operation::kRead:
      case Operation::kInsert:
        (e.op == Operation::kRead ? read_bag : inserted_bag).insert(after_v);
        if (e.op == Operation::kInsert && bag.count(after_v) && bag_problems++ < 5) {
          ADD_FAILURE() << "a bag row arrived while held: " << e.to_json();
        }
        // A read of a row held already is a re-read (an unacknowledged batch read again).
        bag[after_v] = value(e.after ? &*e.after : nullptr, "note");
        break;
      case Operation::kUpdate:
        if (held(before_v)) {
          bag.erase(before_v);
          bag[after_v] = value(&*e.after, "note");
        }
        break;
      case Operation::kDelete:
        if (held(before_v)) bag.erase(before_v);
        break;
      default:
        break;
    }
  }
  for (const auto& p : replay.problems) ADD_FAILURE() << p;
  const auto acct_source = source_rows(s, "public.acct", {"id"});
  EXPECT_EQ(diff_tables(replay.tables["public.acct"], acct_source), "");
  std::map<std::string, std::optional<std::string>> bag_source;
  for (const auto& r : s.query("select v, note from bag")) bag_source[r[0].value_or("")] = r[1];
  EXPECT_EQ(bag.size(), bag_source.size());
  EXPECT_TRUE(bag == bag_source) << "the keyless table replays to other rows than the source's";
  EXPECT_EQ(bag_problems, 0u);
  std::vector<std::string> both;
  for (const auto& id : inserted_ids) {
    if (read_ids.count(id)) both.push_back("acct " + id);
  }
  for (const auto& v : inserted_bag) {
    if (read_bag.count(v)) both.push_back("bag " + v);
  }
  EXPECT_TRUE(both.empty()) << both.size() << " rows arrived as a read and as an insert, e.g. "
                            << both.front();
}

}  // namespace cppcdc::it
