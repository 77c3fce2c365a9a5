#pragma once
// The replay oracle: applies a sink file's events with row_write() semantics to an in-memory
// copy of the tables, for comparison with the source's real contents.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "cppcdc/event.hpp"
#include "pg_util.hpp"

namespace cppcdc::it {

using ReplayRow = std::map<std::string, std::optional<std::string>>;
using ReplayTable = std::map<std::string, ReplayRow>;  // key text -> row

inline std::string key_text(const Row& key) {
  std::string out;
  for (const auto& c : key) {
    out += c.name + "=" + (c.text ? *c.text : std::string("\\N")) + ";";
  }
  return out;
}

struct Replay {
  std::map<std::string, ReplayTable> tables;  // "schema.table" -> rows
  std::vector<std::string> problems;
  /// During an incremental snapshot a partial update (unchanged TOAST) can reach a row the
  /// consumer has not been given yet; its chunk row follows with the whole row. When set,
  /// such merges are counted instead of reported.
  bool merges_may_precede_rows = false;
  std::size_t merges_before_rows = 0;

  void apply(const Event& e) {
    const std::string name = e.schema.value_or("") + "." + e.table;
    ReplayTable& t = tables[name];
    const RowWrite w = e.row_write();
    switch (w.kind) {
      case RowWrite::Kind::kReplace: {
        if (!w.key) {
          problems.push_back("keyless replace on " + name);
          return;
        }
        if (w.previous_key) t.erase(key_text(*w.previous_key));
        ReplayRow row;
        for (const auto& c : *w.columns) row[c.name] = c.text;
        t[key_text(*w.key)] = std::move(row);
        return;
      }
      case RowWrite::Kind::kMerge: {
        const std::string from = key_text(w.previous_key ? *w.previous_key : *w.key);
        auto it = t.find(from);
        if (it == t.end() && merges_may_precede_rows) {
          ++merges_before_rows;
          return;
        }
        if (it == t.end()) {
          problems.push_back("merge into a missing row " + from + " of " + name + ": " +
                             e.to_json().substr(0, 300));
          return;
        }
        ReplayRow row = std::move(it->second);
        t.erase(it);
        for (const auto& c : *w.columns) row[c.name] = c.text;
        t[key_text(*w.key)] = std::move(row);
        return;
      }
      case RowWrite::Kind::kDelete:
        t.erase(key_text(*w.key));
        return;
      case RowWrite::Kind::kTruncate:
        t.clear();
        return;
      case RowWrite::Kind::kNone:
        if (w.reason == NoRowWrite::kNotARowChange) return;  // schema_change, message
        problems.push_back("no write for an event of " + name + " (" +
                           std::string(to_string(w.reason)) + ")");
        return;
    }
  }
};

/// The next line of a JSON-lines file that a sink may still be writing, or that a SIGKILL left
/// torn: false at the end, and for a last line without its newline, which is no record yet
/// (a write in progress; after a crash the file sink cuts it off when it opens the file again
/// and delivers that event again).
inline bool read_complete_line(std::istream& in, std::string& line) {
  return std::getline(in, line) && !in.eof();
}

/// Reads a JSON-lines sink file into events; every complete line must parse.
inline std::vector<Event> read_sink(const std::string& path) {
  std::vector<Event> events;
  std::ifstream in(path);
  std::string line;
  std::size_t n = 0;
  while (read_complete_line(in, line)) {
    ++n;
    auto e = Event::from_json(line);
    if (!e) {
      ADD_FAILURE() << path << " line " << n << ": " << e.error().report();
      continue;
    }
    events.push_back(std::move(*e));
  }
  return events;
}

/// The table's rows as the source has them, keyed like Replay (by `key_columns`).
inline ReplayTable source_rows(PgSession& s, const std::string& table,
                               const std::vector<std::string>& key_columns) {
  ReplayTable out;
  auto res = pg::detail::exec(s.get(), "select * from " + table, "reading " + table);
  if (!res) {
    ADD_FAILURE() << res.error().report();
    return out;
  }
  const PGresult* r = res->get();
  for (int i = 0; i < PQntuples(r); ++i) {
    ReplayRow row;
    for (int c = 0; c < PQnfields(r); ++c) row[PQfname(r, c)] = pg::detail::get(r, i, c);
    Row key;
    for (const auto& k : key_columns) key.push_back(ColumnValue{k, row[k], false});
    out[key_text(key)] = std::move(row);
  }
  return out;
}

/// Compares replayed and source tables; returns a description of the first differences.
inline std::string diff_tables(const ReplayTable& replayed, const ReplayTable& source) {
  std::ostringstream out;
  int shown = 0;
  for (const auto& [key, row] : source) {
    auto it = replayed.find(key);
    if (it == replayed.end()) {
      if (shown++ < 5) out << "missing row " << key << "\n";
    } else if (it->second != row) {
      if (shown++ < 5) out << "different row " << key << "\n";
    }
  }
  for (const auto& [key, row] : replayed) {
    if (!source.count(key) && shown++ < 5) out << "extra row " << key << "\n";
  }
  return out.str();
}

}  // namespace cppcdc::it
