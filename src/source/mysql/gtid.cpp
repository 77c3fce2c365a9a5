// MariaDB GTID positions and MySQL GTID sets (gtid.hpp).

#include "source/mysql/gtid.hpp"

#include <algorithm>
#include <charconv>

namespace cppcdc::mysql {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string_view::npos ? p : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

Error bad(std::string_view kind, std::string_view text, std::string_view part,
          std::string_view why) {
  return Error::invalid_data("the " + std::string(kind) + " '" + std::string(text) + "' " +
                             (part.empty() ? "" : "has '" + std::string(part) + "': ") +
                             std::string(why));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// 8-4-4-4-12 hex digits; MySQL also accepts the 32 digits without dashes.
bool normalize_uuid(std::string_view s, std::string& out) {
  std::string digits;
  if (s.size() == 36) {
    for (std::size_t i = 0; i < 36; ++i) {
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (s[i] != '-') return false;
      } else {
        if (!is_hex(s[i])) return false;
        digits += s[i];
      }
    }
  } else if (s.size() == 32) {
    for (char c : s) {
      if (!is_hex(c)) return false;
    }
    digits.assign(s);
  } else {
    return false;
  }
  digits = lower(digits);
  out = digits.substr(0, 8) + "-" + digits.substr(8, 4) + "-" + digits.substr(12, 4) + "-" +
        digits.substr(16, 4) + "-" + digits.substr(20);
  return true;
}

// MySQL 8.3 tags: a letter or underscore, then up to 31 letters, digits or underscores.
bool valid_tag(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::string MariaGtid::text() const {
  return std::to_string(domain_id) + "-" + std::to_string(server_id) + "-" +
         std::to_string(sequence);
}

Result<MariaGtid> MariaGtid::parse(std::string_view text) {
  const auto t = trim(text);
  const auto parts = split(t, '-');
  MariaGtid g;
  if (parts.size() != 3 || !parse_number(parts[0], g.domain_id) ||
      !parse_number(parts[1], g.server_id) || !parse_number(parts[2], g.sequence)) {
    return fail(bad("MariaDB GTID", text, "",
                    "expected domain-server-sequence, three unsigned numbers such as 0-1-42"));
  }
  return g;
}

Result<MariaGtidPosition> MariaGtidPosition::parse(std::string_view text) {
  MariaGtidPosition pos;
  const auto t = trim(text);
  if (t.empty()) return pos;
  for (auto part : split(t, ',')) {
    part = trim(part);
    auto g = MariaGtid::parse(part);
    if (!g) {
      return fail(bad("MariaDB GTID position", text, part,
                      "expected domain-server-sequence, three unsigned numbers such as 0-1-42"));
    }
    if (pos.domains_.count(g->domain_id) != 0) {
      return fail(bad("MariaDB GTID position", text, part,
                      "its domain " + std::to_string(g->domain_id) + " is listed twice"));
    }
    pos.domains_[g->domain_id] = *g;
  }
  return pos;
}

std::string MariaGtidPosition::text() const {
  std::string out;
  for (const auto& [domain, g] : domains_) {
    if (!out.empty()) out += ',';
    out += g.text();
  }
  return out;
}

void MariaGtidPosition::apply(const MariaGtid& gtid) { domains_[gtid.domain_id] = gtid; }

bool MariaGtidPosition::contains(const MariaGtid& gtid) const noexcept {
  const auto it = domains_.find(gtid.domain_id);
  return it != domains_.end() && it->second.sequence >= gtid.sequence;
}

std::vector<MariaGtid> MariaGtidPosition::gtids() const {
  std::vector<MariaGtid> out;
  out.reserve(domains_.size());
  for (const auto& [domain, g] : domains_) out.push_back(g);
  return out;
}

Result<MySqlGtidSet> MySqlGtidSet::parse(std::string_view text) {
  MySqlGtidSet set;
  const auto t = trim(text);
  if (t.empty()) return set;
  for (auto part : split(t, ',')) {
    part = trim(part);
    const auto fields = split(part, ':');
    std::string uuid;
    if (!normalize_uuid(trim(fields[0]), uuid)) {
      return fail(bad("MySQL GTID set", text, part, "it does not start with a server uuid"));
    }
    if (fields.size() < 2) {
      return fail(bad("MySQL GTID set", text, part, "the uuid has no transaction numbers"));
    }
    std::string tag;
    bool any_for_tag = false;
    for (std::size_t i = 1; i < fields.size(); ++i) {
      const auto f = trim(fields[i]);
      if (!f.empty() && !(f[0] >= '0' && f[0] <= '9')) {
        if (!valid_tag(f)) {
          return fail(bad("MySQL GTID set", text, part,
                          "'" + std::string(f) + "' is neither an interval nor a valid tag"));
        }
        if (i > 1 && !any_for_tag) {
          return fail(bad("MySQL GTID set", text, part, "a tag has no transaction numbers"));
        }
        tag = lower(f);
        any_for_tag = false;
        continue;
      }
      const auto dash = f.find('-');
      std::uint64_t first = 0, last = 0;
      const bool good =
          dash == std::string_view::npos
              ? parse_number(f, first) && (last = first, true)
              : parse_number(f.substr(0, dash), first) && parse_number(f.substr(dash + 1), last);
      if (!good || first < 1 || last < first || last >= (1ull << 63)) {
        return fail(
            bad("MySQL GTID set", text, part,
                "'" + std::string(f) + "' is not an interval N or N-M with 1 <= N <= M < 2^63"));
      }
      set.add_interval(uuid, first, last, tag);
      any_for_tag = true;
    }
    if (!any_for_tag) {
      return fail(bad("MySQL GTID set", text, part, "a tag has no transaction numbers"));
    }
  }
  return set;
}

void MySqlGtidSet::add_interval(std::string_view uuid, std::uint64_t first, std::uint64_t last,
                                std::string_view tag) {
  if (first < 1 || last < first) return;
  std::string u;
  if (!normalize_uuid(uuid, u)) return;
  auto& iv = sets_[Key{u, lower(tag)}];
  // Insert, then merge overlapping or adjacent intervals.
  auto it = std::lower_bound(iv.begin(), iv.end(), std::make_pair(first, last));
  iv.insert(it, {first, last});
  Intervals merged;
  merged.reserve(iv.size());
  for (const auto& x : iv) {
    if (!merged.empty() && x.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, x.second);
    } else {
      merged.push_back(x);
    }
  }
  iv = std::move(merged);
}

bool MySqlGtidSet::contains(std::string_view uuid, std::uint64_t gno, std::string_view tag) const {
  std::string u;
  if (!normalize_uuid(uuid, u)) return false;
  const auto it = sets_.find(Key{u, lower(tag)});
  if (it == sets_.end()) return false;
  const auto& iv = it->second;
  auto p = std::upper_bound(iv.begin(), iv.end(), std::make_pair(gno, UINT64_MAX));
  if (p == iv.begin()) return false;
  --p;
  return p->first <= gno && gno <= p->second;
}

bool MySqlGtidSet::contains(const MySqlGtidSet& other) const {
  for (const auto& [key, ivs] : other.sets_) {
    const auto it = sets_.find(key);
    if (it == sets_.end()) return false;
    for (const auto& x : ivs) {
      const auto& mine = it->second;
      auto p = std::upper_bound(mine.begin(), mine.end(), std::make_pair(x.first, UINT64_MAX));
      if (p == mine.begin()) return false;
      --p;
      if (!(p->first <= x.first && x.second <= p->second)) return false;
    }
  }
  return true;
}

std::string MySqlGtidSet::text() const {
  std::string out;
  const std::string* last_uuid = nullptr;
  for (const auto& [key, ivs] : sets_) {
    if (last_uuid == nullptr || *last_uuid != key.first) {
      if (!out.empty()) out += ',';
      out += key.first;
      last_uuid = &key.first;
    }
    if (!key.second.empty()) out.append(":").append(key.second);
    for (const auto& [a, b] : ivs) {
      out += ':';
      out += std::to_string(a);
      if (b != a) out.append("-").append(std::to_string(b));
    }
  }
  return out;
}

}  // namespace cppcdc::mysql
