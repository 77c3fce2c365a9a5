#pragma once
// Events told apart by their table name, for queue tests: events(first, n) gives n events
// whose tables are "t<first>", "t<first+1>", ...

#include <string>
#include <vector>

#include "cppcdc/event.hpp"

namespace cppcdc::test {

inline std::vector<Event> events(int first, int n) {
  std::vector<Event> out;
  for (int i = first; i < first + n; ++i) {
    Event e;
    e.table = "t" + std::to_string(i);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cppcdc::test
