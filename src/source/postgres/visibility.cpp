#include "source/postgres/visibility.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace cppcdc::pg {
namespace {

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

Error bad(const std::string& what) {
  return Error::checkpoint(ErrorKind::kTerminal,
                           "the checkpoint's snapshot visibility is unreadable (" + what +
                               "); move the checkpoint file away to snapshot again from the start");
}

boost::json::value strings(const std::optional<std::vector<std::string>>& v) {
  if (!v) return nullptr;
  boost::json::array a;
  for (const auto& s : *v) a.emplace_back(s);
  return a;
}

std::vector<std::string> read_strings(const boost::json::value& v) {
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

std::optional<std::vector<std::string>> read_optional(const boost::json::object& o,
                                                      const char* name) {
  const auto* v = o.if_contains(name);
  if (!v || v->is_null()) return std::nullopt;
  return read_strings(*v);
}

bool in_range(const ReadRange& r, const std::vector<std::string>& key, const KeyCompare& compare,
              bool& failed) {
  auto cmp = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    if (auto c = compare_integer_keys(r.key_types, a, b)) return *c;
    if (!compare) {
      failed = true;
      return 0;
    }
    auto c = compare(r.key_types, a, b);
    if (!c) {
      failed = true;
      return 0;
    }
    return *c;
  };
  if (r.after && cmp(key, *r.after) <= 0) return false;
  if (r.through && cmp(key, *r.through) > 0) return false;
  return !failed;
}

}  // namespace

std::optional<XidSnapshot> XidSnapshot::parse(std::string_view text) {
  const auto c1 = text.find(':');
  if (c1 == std::string_view::npos) return std::nullopt;
  const auto c2 = text.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return std::nullopt;
  XidSnapshot s;
  auto xmin = parse_u64(text.substr(0, c1));
  auto xmax = parse_u64(text.substr(c1 + 1, c2 - c1 - 1));
  if (!xmin || !xmax || *xmin > *xmax) return std::nullopt;
  s.xmin = *xmin;
  s.xmax = *xmax;
  std::string_view rest = text.substr(c2 + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    auto x = parse_u64(rest.substr(0, comma));
    if (!x) return std::nullopt;
    s.xip.push_back(*x);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(s.xip.begin(), s.xip.end());
  return s;
}

std::string XidSnapshot::to_string() const {
  std::string out = std::to_string(xmin) + ":" + std::to_string(xmax) + ":";
  for (std::size_t i = 0; i < xip.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(xip[i]);
  }
  return out;
}

std::uint64_t XidSnapshot::extend(std::uint32_t xid) const noexcept {
  constexpr std::uint64_t kSpan = std::uint64_t{1} << 32;
  const std::uint64_t base = (xmax & ~(kSpan - 1)) | xid;
  // The candidate in [xmax - 2^31, xmax + 2^31).
  if (base >= xmax + (kSpan >> 1) && base >= kSpan) return base - kSpan;
  if (base + (kSpan >> 1) < xmax) return base + kSpan;
  return base;
}

bool XidSnapshot::visible(std::uint32_t xid) const noexcept {
  const std::uint64_t full = extend(xid);
  if (full < xmin) return true;
  if (full >= xmax) return false;
  return !std::binary_search(xip.begin(), xip.end(), full);
}

std::optional<int> compare_integer_keys(const std::vector<std::string>& types,
                                        const std::vector<std::string>& a,
                                        const std::vector<std::string>& b) {
  if (a.size() != types.size() || b.size() != types.size()) return std::nullopt;
  for (std::size_t k = 0; k < types.size(); ++k) {
    const auto& t = types[k];
    if (t != "smallint" && t != "integer" && t != "bigint") return std::nullopt;
  }
  for (std::size_t k = 0; k < types.size(); ++k) {
    std::int64_t x = 0, y = 0;
    auto [px, ex] = std::from_chars(a[k].data(), a[k].data() + a[k].size(), x);
    auto [py, ey] = std::from_chars(b[k].data(), b[k].data() + b[k].size(), y);
    if (ex != std::errc() || ey != std::errc() || px != a[k].data() + a[k].size() ||
        py != b[k].data() + b[k].size()) {
      return std::nullopt;
    }
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

void ReadVisibility::begin_read(const XidSnapshot& snapshot, Lsn until) {
  ++version_;
  reads_.push_back(SnapshotRead{snapshot, until, {}});
}

void ReadVisibility::add_range(ReadRange range) {
  if (reads_.empty()) return;
  ++version_;
  for (std::size_t i = 0; i + 1 < reads_.size(); ++i) {
    auto& rs = reads_[i].ranges;
    for (auto it = rs.begin(); it != rs.end();) {
      if (it->table != range.table) {
        ++it;
      } else if (!range.after) {
        it = rs.erase(it);
      } else {
        if (!it->through) it->through = range.after;
        ++it;
      }
    }
  }
  auto& last = reads_.back().ranges;
  std::erase_if(last, [&](const ReadRange& r) { return r.table == range.table; });
  last.push_back(std::move(range));
}

bool ReadVisibility::already_read(std::uint32_t xid, const std::string& table, const Row* before,
                                  const Row* after, const KeyCompare& compare) {
  // The ranges of the table whose read sees the transaction.
  std::vector<const ReadRange*> seen;
  for (const auto& read : reads_) {
    for (const auto& r : read.ranges) {
      if (r.table == table && read.snapshot.visible(xid)) seen.push_back(&r);
    }
  }
  if (seen.empty()) return false;
  const ReadRange& first = *seen.front();
  if (first.key.empty()) return first.whole();  // a table without a key: read whole
  std::optional<std::vector<std::string>> old_key, new_key;
  if (before) old_key = key_values(*before, first.key);
  if (after) new_key = key_values(*after, first.key);
  if ((before && !old_key) || (after && !new_key)) return false;  // cannot tell
  const auto covered = [&](const std::vector<std::string>& key) {
    for (const ReadRange* r : seen) {
      bool failed = false;
      if (in_range(*r, key, compare, failed)) return true;
    }
    return false;
  };
  const bool moves = !after || (old_key && new_key && *old_key != *new_key);
  auto known = delivered_.find(table);
  const bool remembered =
      known != delivered_.end() && ((old_key && known->second.count(*old_key) > 0) ||
                                    (new_key && known->second.count(*new_key) > 0));
  if (moves || remembered) {
    // Delivered; later changes of keys a read covers follow it.
    const bool keep_old = old_key && covered(*old_key);
    const bool keep_new = new_key && covered(*new_key);  // before remember() may end the ranges
    if (keep_old) remember(table, std::move(*old_key));
    if (keep_new) remember(table, std::move(*new_key));
    return false;
  }
  return new_key && covered(*new_key);
}

void ReadVisibility::remember(const std::string& table, std::vector<std::string> key) {
  auto& keys = delivered_[table];
  if (!keys.insert(std::move(key)).second) return;
  ++version_;
  if (keys.size() <= kMaxRemembered) return;
  truncated(table);
}

std::size_t ReadVisibility::remembered(const std::string& table) const {
  auto it = delivered_.find(table);
  return it == delivered_.end() ? 0 : it->second.size();
}

bool ReadVisibility::truncate_already_read(std::uint32_t xid, const std::string& table) const {
  for (const auto& read : reads_) {
    for (const auto& r : read.ranges) {
      if (r.table == table && r.key.empty() && r.whole() && read.snapshot.visible(xid)) {
        return true;
      }
    }
  }
  return false;
}

void ReadVisibility::truncated(const std::string& table) {
  ++version_;
  for (auto& read : reads_) {
    std::erase_if(read.ranges, [&](const ReadRange& r) { return r.table == table; });
  }
  delivered_.erase(table);
}

bool ReadVisibility::passed(Lsn commit_lsn) {
  const bool dropped =
      std::erase_if(reads_, [&](const SnapshotRead& r) { return r.until <= commit_lsn; }) > 0;
  if (reads_.empty()) delivered_.clear();
  if (dropped) ++version_;
  return dropped;
}

boost::json::object ReadVisibility::to_json() const {
  boost::json::array out;
  for (const auto& read : reads_) {
    boost::json::object o;
    o["xids"] = read.snapshot.to_string();
    o["until"] = read.until.to_string();
    boost::json::array ranges;
    for (const auto& r : read.ranges) {
      boost::json::object ro;
      ro["table"] = r.table;
      ro["key"] = strings(r.key);
      ro["key_types"] = strings(r.key_types);
      ro["after"] = strings(r.after);
      ro["through"] = strings(r.through);
      ranges.emplace_back(std::move(ro));
    }
    o["ranges"] = std::move(ranges);
    out.emplace_back(std::move(o));
  }
  boost::json::object keys;
  for (const auto& [table, set] : delivered_) {
    boost::json::array a;
    for (const auto& k : set) a.emplace_back(strings(k));
    keys[table] = std::move(a);
  }
  boost::json::object root;
  root["reads"] = std::move(out);
  root["delivered_keys"] = std::move(keys);
  return root;
}

std::string ReadVisibility::to_state() const {
  if (empty()) return "";
  boost::json::object root;
  root["visibility"] = to_json();
  return boost::json::serialize(root);
}

Result<ReadVisibility> ReadVisibility::from_state(const std::string& state) {
  if (state.empty()) return ReadVisibility();
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(state, ec);
  if (ec || !v.is_object()) return ReadVisibility();  // not ours to judge
  return from_json(v.as_object().if_contains("visibility"));
}

Result<ReadVisibility> ReadVisibility::from_json(const boost::json::value* v) {
  ReadVisibility out;
  if (!v || v->is_null()) return out;
  try {
    const auto& root = v->as_object();
    for (const auto& item : root.at("reads").as_array()) {
      const auto& o = item.as_object();
      SnapshotRead read;
      auto snap = XidSnapshot::parse(std::string(o.at("xids").as_string()));
      if (!snap) return fail(bad("xids is not a transaction snapshot"));
      read.snapshot = std::move(*snap);
      auto until = Lsn::parse(std::string(o.at("until").as_string()));
      if (!until) return fail(bad("until is not an LSN"));
      read.until = *until;
      for (const auto& ri : o.at("ranges").as_array()) {
        const auto& ro = ri.as_object();
        ReadRange r;
        r.table = std::string(ro.at("table").as_string());
        r.key = read_strings(ro.at("key"));
        r.key_types = read_strings(ro.at("key_types"));
        r.after = read_optional(ro, "after");
        r.through = read_optional(ro, "through");
        read.ranges.push_back(std::move(r));
      }
      out.reads_.push_back(std::move(read));
    }
    if (const auto* keys = root.if_contains("delivered_keys")) {
      for (const auto& [table, list] : keys->as_object()) {
        auto& set = out.delivered_[std::string(table)];
        for (const auto& k : list.as_array()) set.insert(read_strings(k));
      }
    }
  } catch (const std::exception& e) {
    return fail(bad(e.what()));
  }
  return out;
}

std::optional<std::vector<std::string>> key_values(const Row& row,
                                                   const std::vector<std::string>& key) {
  std::vector<std::string> out;
  out.reserve(key.size());
  for (const auto& k : key) {
    const ColumnValue* v = find_column(row, k);
    if (!v || !v->text) return std::nullopt;
    out.push_back(*v->text);
  }
  return out;
}

}  // namespace cppcdc::pg
