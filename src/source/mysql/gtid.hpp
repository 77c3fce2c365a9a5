#pragma once
// GTID positions of MariaDB and GTID sets of MySQL: parse, print, apply, contains.
//
// MariaDB: a position lists, per replication domain, the last GTID applied:
// "0-1-100,1-2-7" (domain-server-sequence). Printed with domains in ascending order.
// MySQL: a set of transaction numbers per source uuid (and, from 8.3, per uuid and tag):
// "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9,uuid2:1-3", tagged "uuid:tag:1-5". Printed
// canonically: uuids in ascending order, lower case, intervals merged and ascending, the
// untagged intervals of a uuid first, then its tags in ascending order
// ("uuid:1-5:tag_a:1-2:tag_b:7").
//
// Errors: Error::invalid_data naming the text and the offending part. Values; not
// thread-safe for concurrent mutation.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/result.hpp"

namespace cppcdc::mysql {

struct MariaGtid {
  std::uint32_t domain_id = 0;
  std::uint32_t server_id = 0;
  std::uint64_t sequence = 0;
  std::string text() const;  ///< "0-1-42"
  /// Parses "domain-server-sequence".
  static Result<MariaGtid> parse(std::string_view text);
  friend bool operator==(const MariaGtid&, const MariaGtid&) = default;
};

class MariaGtidPosition {
 public:
  /// "" is the empty position; a domain listed twice is an error.
  static Result<MariaGtidPosition> parse(std::string_view text);
  std::string text() const;
  /// Records `gtid` as its domain's last GTID.
  void apply(const MariaGtid& gtid);
  /// True when the position's GTID of the same domain has a sequence >= gtid's.
  bool contains(const MariaGtid& gtid) const noexcept;
  /// The last GTID per domain, ascending by domain.
  std::vector<MariaGtid> gtids() const;
  bool empty() const noexcept { return domains_.empty(); }
  friend bool operator==(const MariaGtidPosition&, const MariaGtidPosition&) = default;

 private:
  std::map<std::uint32_t, MariaGtid> domains_;
};

class MySqlGtidSet {
 public:
  /// "" is the empty set. Whitespace (MySQL prints ",\n") is allowed around the parts.
  static Result<MySqlGtidSet> parse(std::string_view text);
  std::string text() const;
  /// Adds [first, last] (inclusive; 1 <= first <= last) for `uuid` (any case) and `tag`
  /// ("" = untagged). Invalid arguments are ignored; parse() validates text.
  void add_interval(std::string_view uuid, std::uint64_t first, std::uint64_t last,
                    std::string_view tag = {});
  void add(std::string_view uuid, std::uint64_t gno, std::string_view tag = {}) {
    add_interval(uuid, gno, gno, tag);
  }
  bool contains(std::string_view uuid, std::uint64_t gno, std::string_view tag = {}) const;
  /// True when every transaction of `other` is in this set.
  bool contains(const MySqlGtidSet& other) const;
  bool empty() const noexcept { return sets_.empty(); }
  friend bool operator==(const MySqlGtidSet&, const MySqlGtidSet&) = default;

 private:
  using Key = std::pair<std::string, std::string>;  // lower-case uuid, lower-case tag
  using Intervals = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // inclusive
  std::map<Key, Intervals> sets_;
};

}  // namespace cppcdc::mysql
