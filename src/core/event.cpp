#include "cppcdc/event.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "core/event_json.hpp"
#include "core/json_write.hpp"

namespace cppcdc {


std::string_view to_string(Operation op) noexcept {
  switch (op) {
    case Operation::kInsert: return "insert";
    case Operation::kUpdate: return "update";
    case Operation::kDelete: return "delete";
    case Operation::kRead: return "read";
    case Operation::kSchemaChange: return "schema_change";
    case Operation::kTruncate: return "truncate";
    case Operation::kMessage: return "message";
  }
  return "unknown";
}

Result<Operation> parse_operation(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (auto op : {Operation::kInsert, Operation::kUpdate, Operation::kDelete, Operation::kRead,
                  Operation::kSchemaChange, Operation::kTruncate, Operation::kMessage}) {
    if (lower == to_string(op)) return op;
  }
  return fail(Error::configuration(
      "unknown operation '" + std::string(text) +
      "' (expected insert, update, delete, read, schema_change, truncate or message)"));
}

std::string_view to_string(NoRowWrite reason) noexcept {
  switch (reason) {
    case NoRowWrite::kNotARowChange: return "not_a_row_change";
    case NoRowWrite::kNoPrimaryKey: return "no_primary_key";
    case NoRowWrite::kMissingPrimaryKey: return "missing_primary_key";
  }
  return "unknown";
}

const ColumnValue* find_column(const Row& row, std::string_view name) noexcept {
  for (const auto& c : row) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// ---- BeforeImage -----------------------------------------------------------------------

const Row* BeforeImage::row() const noexcept {
  if (auto* k = std::get_if<BeforeKeyOnly>(&v_)) return &k->key;
  if (auto* f = std::get_if<BeforeFull>(&v_)) return &f->row;
  return nullptr;
}

const Row* BeforeImage::full_row() const noexcept {
  if (auto* f = std::get_if<BeforeFull>(&v_)) return &f->row;
  return nullptr;
}

const std::vector<std::string>& BeforeImage::unavailable_columns() const noexcept {
  static const std::vector<std::string> kEmpty;
  if (auto* f = std::get_if<BeforeFull>(&v_)) return f->unavailable_columns;
  return kEmpty;
}

// ---- keys and writes -------------------------------------------------------------------

namespace {

std::optional<Row> key_from(const Row* row, const std::vector<std::string>& key_names) {
  if (row == nullptr || key_names.empty()) return std::nullopt;
  Row key;
  key.reserve(key_names.size());
  for (const auto& name : key_names) {
    const ColumnValue* v = find_column(*row, name);
    if (v == nullptr) return std::nullopt;  // all-or-nothing
    key.push_back(*v);
  }
  return key;
}

}  // namespace

std::optional<Row> Event::primary_key_values() const {
  if (!primary_key || primary_key->empty()) return std::nullopt;
  if (op == Operation::kDelete) return key_from(before.row(), *primary_key);
  return key_from(after ? &*after : nullptr, *primary_key);
}

RowWrite Event::row_write() const {
  RowWrite w;
  const bool has_key = primary_key && !primary_key->empty();
  switch (op) {
    case Operation::kSchemaChange:
    case Operation::kMessage:
      w.kind = RowWrite::Kind::kNone;
      w.reason = NoRowWrite::kNotARowChange;
      return w;
    case Operation::kTruncate:
      w.kind = RowWrite::Kind::kTruncate;
      return w;
    case Operation::kDelete: {
      if (!has_key) {
        w.reason = NoRowWrite::kNoPrimaryKey;
        return w;
      }
      w.key = primary_key_values();
      if (!w.key) {
        w.reason = NoRowWrite::kMissingPrimaryKey;
        return w;
      }
      w.kind = RowWrite::Kind::kDelete;
      return w;
    }
    case Operation::kInsert:
    case Operation::kRead:
    case Operation::kUpdate: {
      if (!after) {
        w.reason = NoRowWrite::kNotARowChange;
        return w;
      }
      if (has_key) {
        w.key = primary_key_values();
        if (!w.key) {
          w.reason = NoRowWrite::kMissingPrimaryKey;
          return w;
        }
      } else if (op == Operation::kUpdate || !unavailable_columns.empty()) {
        // An update (or a partial row) of a keyless table cannot be addressed.
        w.reason = NoRowWrite::kNoPrimaryKey;
        return w;
      }
      if (op == Operation::kUpdate && has_key) {
        auto old_key = key_from(before.row(), *primary_key);
        if (old_key && *old_key != *w.key) w.previous_key = std::move(old_key);
      }
      w.columns = &*after;
      w.kind = unavailable_columns.empty() ? RowWrite::Kind::kReplace : RowWrite::Kind::kMerge;
      return w;
    }
  }
  return w;
}

// ---- validation ------------------------------------------------------------------------

Status Event::validate() const {
  const auto bad = [&](const std::string& what) {
    return fail(Error::invalid_data("event for table '" + table + "' (" +
                                    std::string(to_string(op)) + ", offset '" + source.offset +
                                    "'): " + what));
  };
  if (envelope_version != kEnvelopeVersion) {
    return bad("envelope_version " + std::to_string(envelope_version) + " is not " +
               std::to_string(kEnvelopeVersion) + "; build events with EventBuilder");
  }
  if (table.empty()) return bad("table is empty");
  if (source.source_name.empty()) return bad("source.source_name is empty");
  switch (op) {
    case Operation::kInsert:
    case Operation::kRead:
      if (!after) return bad("after is required");
      if (!before.is_unavailable()) return bad("before must be absent");
      break;
    case Operation::kUpdate:
      if (!after) return bad("after is required");
      break;
    case Operation::kDelete:
      if (after) return bad("after must be absent");
      break;
    case Operation::kTruncate:
      if (after || !before.is_unavailable()) return bad("before and after must be absent");
      break;
    case Operation::kMessage:
      if (!before.is_unavailable()) return bad("before must be absent");
      break;
    case Operation::kSchemaChange:
      break;
  }
  for (const auto& name : unavailable_columns) {
    if (!after) return bad("unavailable_columns without an after image");
    if (find_column(*after, name) != nullptr) {
      return bad("column '" + name + "' is both present in after and listed unavailable");
    }
  }
  if (const auto* full = std::get_if<BeforeFull>(&before.variant())) {
    for (const auto& name : full->unavailable_columns) {
      if (find_column(full->row, name) != nullptr) {
        return bad("column '" + name + "' is both present in before and listed unavailable");
      }
    }
  }
  if (transaction && transaction->event_index >= transaction->total_events) {
    return bad("transaction.event_index " + std::to_string(transaction->event_index) +
               " is not below total_events " + std::to_string(transaction->total_events));
  }
  if (primary_key && shape) {
    for (const auto& k : *primary_key) {
      if (!shape->find(k)) return bad("primary key column '" + k + "' is not in the row shape");
    }
  }
  return ok();
}

// ---- JSON ------------------------------------------------------------------------------

namespace {

using detail::json_lit;
using detail::json_sint;
using detail::json_str;
using detail::json_uint;

void write_row(ByteBuffer& b, const Row& row) {
  b.ch('{');
  bool first = true;
  for (const auto& c : row) {
    if (!first) b.ch(',');
    first = false;
    json_str(b, c.name);
    b.ch(':');
    if (!c.text) {
      json_lit(b, "null");
    } else if (c.is_json) {
      b.raw(*c.text);
    } else {
      json_str(b, *c.text);
    }
  }
  b.ch('}');
}

void write_names(ByteBuffer& b, const std::vector<std::string>& names) {
  b.ch('[');
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) b.ch(',');
    json_str(b, names[i]);
  }
  b.ch(']');
}

// Everything of the envelope after "after" (from ,"op": to the closing brace). For an event
// in a transaction, `index_at` (when given) receives where its event_index's digits start
// and end in `b`.
void write_tail(ByteBuffer& b, const Event& e,
                std::pair<std::size_t, std::size_t>* index_at = nullptr) {
  json_lit(b, ",\"op\":\"");
  b.raw(to_string(e.op));
  json_lit(b, "\",\"source\":{\"source_name\":");
  json_str(b, e.source.source_name);
  json_lit(b, ",\"offset\":");
  json_str(b, e.source.offset);
  json_lit(b, ",\"timestamp\":");
  json_sint(b, e.source.timestamp);
  json_lit(b, "},\"ts\":");
  json_sint(b, e.ts);
  json_lit(b, ",\"schema\":");
  if (e.schema) {
    json_str(b, *e.schema);
  } else {
    json_lit(b, "null");
  }
  json_lit(b, ",\"table\":");
  json_str(b, e.table);
  json_lit(b, ",\"primary_key\":");
  if (e.primary_key) {
    write_names(b, *e.primary_key);
  } else {
    json_lit(b, "null");
  }
  json_lit(b, ",\"snapshot\":");
  if (e.snapshot) {
    json_lit(b, "{\"snapshot_id\":");
    json_str(b, e.snapshot->snapshot_id);
    json_lit(b, ",\"chunk\":");
    json_uint(b, e.snapshot->chunk);
    if (e.snapshot->is_last_chunk) {
      json_lit(b, ",\"is_last_chunk\":true}");
    } else {
      json_lit(b, ",\"is_last_chunk\":false}");
    }
  } else {
    json_lit(b, "null");
  }
  json_lit(b, ",\"transaction\":");
  if (e.transaction) {
    json_lit(b, "{\"tx_id\":");
    json_uint(b, e.transaction->tx_id);
    json_lit(b, ",\"total_events\":");
    json_uint(b, e.transaction->total_events);
    json_lit(b, ",\"event_index\":");
    if (index_at) index_at->first = b.size();
    json_uint(b, e.transaction->event_index);
    if (index_at) index_at->second = b.size();
    b.ch('}');
  } else {
    json_lit(b, "null");
  }
  json_lit(b, ",\"envelope_version\":");
  json_uint(b, e.envelope_version);
  if (e.before.is_key_only()) {
    json_lit(b, ",\"before_is_key_only\":true");
  } else {
    json_lit(b, ",\"before_is_key_only\":false");
  }
  if (!e.unavailable_columns.empty()) {
    json_lit(b, ",\"unavailable_columns\":");
    write_names(b, e.unavailable_columns);
  }
  if (!e.before.unavailable_columns().empty()) {
    json_lit(b, ",\"before_unavailable_columns\":");
    write_names(b, e.before.unavailable_columns());
  }
  b.ch('}');
}

// The tail of the last envelope written on this thread, and every field it was written from.
// Consecutive events of one source record share their tail but for the event_index of a
// transaction (the rows of one binlog rows event or one snapshot chunk: same source, offset,
// times, table, key, chunk, transaction), which is then copied instead of written again: in a
// transaction, the bytes before the index and those after it, with the index written between.
struct TailCache {
  bool valid = false;
  Operation op = Operation::kInsert;
  std::string source_name;
  std::string offset;
  std::int64_t timestamp = 0;
  std::int64_t ts = 0;
  std::optional<std::string> schema;
  std::string table;
  std::optional<std::vector<std::string>> primary_key;
  std::optional<SnapshotMetadata> snapshot;
  bool in_tx = false;
  std::uint64_t tx_id = 0;
  std::uint64_t total_events = 0;
  std::uint16_t envelope_version = 0;
  bool before_is_key_only = false;
  std::vector<std::string> unavailable_columns;
  std::vector<std::string> before_unavailable_columns;
  std::string bytes;  // the whole tail; in a transaction, up to the event_index
  std::string rest;   // in a transaction: after the event_index
  std::uint64_t misses = 0;  // events in a row that did not match

  bool matches(const Event& e) const {
    if (!valid || op != e.op || timestamp != e.source.timestamp || ts != e.ts ||
        envelope_version != e.envelope_version || before_is_key_only != e.before.is_key_only() ||
        in_tx != e.transaction.has_value()) {
      return false;
    }
    if (in_tx && (tx_id != e.transaction->tx_id || total_events != e.transaction->total_events)) {
      return false;
    }
    return offset == e.source.offset && snapshot == e.snapshot && table == e.table &&
           source_name == e.source.source_name && schema == e.schema &&
           primary_key == e.primary_key && unavailable_columns == e.unavailable_columns &&
           before_unavailable_columns == e.before.unavailable_columns();
  }
  // `written`: the tail as write_tail wrote it; `index_at`: where its event_index's digits
  // are in it (in a transaction).
  void keep(const Event& e, std::string_view written,
            std::pair<std::size_t, std::size_t> index_at) {
    op = e.op;
    source_name = e.source.source_name;
    offset = e.source.offset;
    timestamp = e.source.timestamp;
    ts = e.ts;
    schema = e.schema;
    table = e.table;
    primary_key = e.primary_key;
    snapshot = e.snapshot;
    in_tx = e.transaction.has_value();
    tx_id = in_tx ? e.transaction->tx_id : 0;
    total_events = in_tx ? e.transaction->total_events : 0;
    envelope_version = e.envelope_version;
    before_is_key_only = e.before.is_key_only();
    unavailable_columns = e.unavailable_columns;
    before_unavailable_columns = e.before.unavailable_columns();
    if (in_tx) {
      bytes.assign(written.substr(0, index_at.first));
      rest.assign(written.substr(index_at.second));
    } else {
      bytes.assign(written);
      rest.clear();
    }
    valid = true;
  }
};

void write_event_impl(ByteBuffer& b, const Event& e) {
  json_lit(b, "{\"before\":");
  if (const Row* before = e.before.row()) {
    write_row(b, *before);
  } else {
    json_lit(b, "null");
  }
  json_lit(b, ",\"after\":");
  if (e.after) {
    write_row(b, *e.after);
  } else {
    json_lit(b, "null");
  }
  thread_local TailCache cache;
  // Where every event has a place of its own (PostgreSQL: a position per change), comparing
  // and keeping each tail would cost more than it saves: after two misses in a row, only
  // every 16th event is compared (and its tail kept), until one matches again.
  const bool probe = cache.misses <= 2 || cache.misses % 16 == 0;
  if (probe && cache.matches(e)) {
    cache.misses = 0;
    b.raw(cache.bytes);
    if (e.transaction) {
      json_uint(b, e.transaction->event_index);
      b.raw(cache.rest);
    }
    return;
  }
  ++cache.misses;
  if (!probe) {
    write_tail(b, e);
    return;
  }
  const std::size_t start = b.size();
  std::pair<std::size_t, std::size_t> index_at{start, start};
  write_tail(b, e, &index_at);
  cache.keep(e, b.view().substr(start), {index_at.first - start, index_at.second - start});
}

}  // namespace

namespace detail {
void write_event_json(ByteBuffer& b, const Event& e) { write_event_impl(b, e); }
}  // namespace detail

void Event::append_json(std::string& out) const {
  // Built in a per-thread scratch buffer through a raw cursor, then copied out in one piece.
  thread_local ByteBuffer scratch;
  scratch.clear();
  write_event_impl(scratch, *this);
  out.append(scratch.view());
}

std::string Event::to_json() const {
  std::string out;
  out.reserve(256);
  append_json(out);
  return out;
}

namespace {

namespace json = boost::json;

// The DOM keeps no number's text (boost::json reads each as a double or a 64-bit integer:
// 1e400 becomes an infinity it would print as a bare Infinity, a long integer loses digits),
// but a json or jsonb column's value must come back as the text to_json() wrote verbatim.
// So the text of each such value is taken from the envelope itself, by a scanner that only
// ever runs over text boost::json has accepted as JSON.

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_space(std::string_view t, std::size_t i) {
  while (i < t.size() && is_json_space(t[i])) ++i;
  return i;
}

// `i` is at a string's opening quote; returns the index after its closing quote.
std::size_t skip_string(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') {
      ++i;
    } else if (t[i] == '"') {
      return i + 1;
    }
  }
  return t.size();
}

// `i` is at the first byte of a value; returns the index after its last byte.
std::size_t skip_value(std::string_view t, std::size_t i) {
  if (i >= t.size()) return i;
  if (t[i] == '"') return skip_string(t, i);
  if (t[i] == '{' || t[i] == '[') {
    std::size_t depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      ++i;
    }
    return i;
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_json_space(t[i])) ++i;
  return i;
}

// The members of the JSON object `t` (valid JSON, optionally surrounded by whitespace) in
// the order written: each key decoded, each value as its text.
using RawMembers = std::vector<std::pair<std::string, std::string_view>>;
RawMembers raw_members(std::string_view t) {
  RawMembers out;
  std::size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return out;
  i = skip_space(t, i + 1);
  while (i < t.size() && t[i] == '"') {
    const std::size_t key_end = skip_string(t, i);
    const std::string_view quoted = t.substr(i, key_end - i);
    std::string key;
    if (quoted.size() >= 2 && quoted.find('\\') == std::string_view::npos) {
      key.assign(quoted.substr(1, quoted.size() - 2));
    } else {
      boost::system::error_code ec;
      const json::value decoded = json::parse(quoted, ec);
      if (ec || !decoded.is_string()) return out;
      key.assign(decoded.get_string());
    }
    i = skip_space(t, key_end);
    if (i >= t.size() || t[i] != ':') return out;
    i = skip_space(t, i + 1);
    const std::size_t value_end = skip_value(t, i);
    out.emplace_back(std::move(key), t.substr(i, value_end - i));
    i = skip_space(t, value_end);
    if (i >= t.size() || t[i] != ',') break;
    i = skip_space(t, i + 1);
  }
  return out;
}

// The text of the member `key` of an object as written; like boost::json, the last of
// repeated keys counts. Empty when absent.
std::string_view raw_member(const RawMembers& members, std::string_view key) {
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return {};
}

// A json value embedded verbatim must keep the envelope on one line; outside strings (which
// cannot hold a raw control character) a CR or LF is only whitespace, so it becomes a space.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// `raw` is the object's own text in the envelope (the text `v` was parsed from).
Result<Row> row_from_json(const json::value& v, const char* field, std::string_view raw) {
  if (!v.is_object()) {
    return fail(Error::invalid_data(std::string("envelope field '") + field +
                                    "' is not an object"));
  }
  Row row;
  std::optional<RawMembers> members;  // scanned when the first json value needs its text
  for (const auto& kv : v.as_object()) {
    ColumnValue c;
    c.name = std::string(kv.key());
    if (kv.value().is_null()) {
      // SQL NULL
    } else if (kv.value().is_string()) {
      c.text = std::string(kv.value().as_string());
    } else {
      c.is_json = true;
      if (!members) members = raw_members(raw);
      const std::string_view text = raw_member(*members, c.name);
      c.text = text.empty() ? json::serialize(kv.value()) : one_line(text);
    }
    row.push_back(std::move(c));
  }
  return row;
}

Result<std::vector<std::string>> names_from_json(const json::value& v, const char* field) {
  if (!v.is_array()) {
    return fail(Error::invalid_data(std::string("envelope field '") + field +
                                    "' is not an array of strings"));
  }
  std::vector<std::string> out;
  for (const auto& e : v.as_array()) {
    if (!e.is_string()) {
      return fail(Error::invalid_data(std::string("envelope field '") + field +
                                      "' holds a non-string"));
    }
    out.emplace_back(e.as_string());
  }
  return out;
}

Result<std::uint64_t> uint_field(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  if (v == nullptr) return fail(Error::invalid_data(std::string("missing field '") + name + "'"));
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return fail(Error::invalid_data(std::string("field '") + name + "' is not an unsigned integer"));
}

Result<std::int64_t> int_field(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  if (v == nullptr) return fail(Error::invalid_data(std::string("missing field '") + name + "'"));
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(v->as_uint64());
  }
  return fail(Error::invalid_data(std::string("field '") + name + "' is not an integer"));
}

Result<std::string> string_field(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  if (v == nullptr || !v->is_string()) {
    return fail(Error::invalid_data(std::string("field '") + name + "' is missing or not a string"));
  }
  return std::string(v->as_string());
}

// `text` is the envelope `o` was parsed from.
Result<Event> event_from_object(const json::object& o, std::string_view text) {
  Event e;
  std::optional<RawMembers> members;  // scanned when a row is present
  const auto raw_row = [&](std::string_view key) {
    if (!members) members = raw_members(text);
    return raw_member(*members, key);
  };
  auto op = string_field(o, "op");
  if (!op) return fail(op.error());
  auto parsed_op = parse_operation(*op);
  if (!parsed_op) return fail(Error::invalid_data("unknown op '" + *op + "'"));
  e.op = *parsed_op;

  auto version = uint_field(o, "envelope_version");
  if (!version) return fail(version.error());
  if (*version > std::numeric_limits<std::uint16_t>::max()) {
    return fail(Error::invalid_data("field 'envelope_version' is out of range: " +
                                    std::to_string(*version)));
  }
  e.envelope_version = static_cast<std::uint16_t>(*version);

  const auto* src = o.if_contains("source");
  if (src == nullptr || !src->is_object()) return fail(Error::invalid_data("missing field 'source'"));
  auto sn = string_field(src->as_object(), "source_name");
  if (!sn) return fail(sn.error());
  auto off = string_field(src->as_object(), "offset");
  if (!off) return fail(off.error());
  auto sts = int_field(src->as_object(), "timestamp");
  if (!sts) return fail(sts.error());
  e.source = {*sn, *off, *sts};

  auto ts = int_field(o, "ts");
  if (!ts) return fail(ts.error());
  e.ts = *ts;
  auto table = string_field(o, "table");
  if (!table) return fail(table.error());
  e.table = *table;
  if (auto* s = o.if_contains("schema"); s && s->is_string()) e.schema = std::string(s->as_string());

  if (auto* pk = o.if_contains("primary_key"); pk && !pk->is_null()) {
    auto names = names_from_json(*pk, "primary_key");
    if (!names) return fail(names.error());
    e.primary_key = std::move(*names);
  }
  if (auto* a = o.if_contains("after"); a && !a->is_null()) {
    auto row = row_from_json(*a, "after", raw_row("after"));
    if (!row) return fail(row.error());
    e.after = std::move(*row);
  }
  bool key_only = false;
  if (auto* k = o.if_contains("before_is_key_only")) {
    if (!k->is_bool()) return fail(Error::invalid_data("field 'before_is_key_only' is not a bool"));
    key_only = k->as_bool();
  }
  std::vector<std::string> before_unavailable;
  if (auto* bu = o.if_contains("before_unavailable_columns")) {
    auto names = names_from_json(*bu, "before_unavailable_columns");
    if (!names) return fail(names.error());
    before_unavailable = std::move(*names);
  }
  std::optional<Row> before_row;
  if (auto* b = o.if_contains("before"); b && !b->is_null()) {
    auto row = row_from_json(*b, "before", raw_row("before"));
    if (!row) return fail(row.error());
    before_row = std::move(*row);
  }
  auto before = detail::make_before_image(std::move(before_row), key_only,
                                          std::move(before_unavailable));
  if (!before) return fail(before.error());
  e.before = std::move(*before);
  if (auto* u = o.if_contains("unavailable_columns")) {
    auto names = names_from_json(*u, "unavailable_columns");
    if (!names) return fail(names.error());
    e.unavailable_columns = std::move(*names);
  }
  if (auto* t = o.if_contains("transaction"); t && !t->is_null()) {
    if (!t->is_object()) return fail(Error::invalid_data("field 'transaction' is not an object"));
    const auto& to = t->as_object();
    auto id = uint_field(to, "tx_id");
    auto total = uint_field(to, "total_events");
    auto index = uint_field(to, "event_index");
    if (!id) return fail(id.error());
    if (!total) return fail(total.error());
    if (!index) return fail(index.error());
    e.transaction = TransactionMetadata{*id, *total, *index};
  }
  if (auto* s = o.if_contains("snapshot"); s && !s->is_null()) {
    if (!s->is_object()) return fail(Error::invalid_data("field 'snapshot' is not an object"));
    SnapshotMetadata m;
    const auto& so = s->as_object();
    if (auto* id = so.if_contains("snapshot_id"); id && id->is_string()) {
      m.snapshot_id = std::string(id->as_string());
    }
    if (auto chunk = uint_field(so, "chunk")) m.chunk = *chunk;
    if (auto* last = so.if_contains("is_last_chunk"); last && last->is_bool()) {
      m.is_last_chunk = last->as_bool();
    }
    e.snapshot = std::move(m);
  }
  return e;
}

}  // namespace

namespace detail {

std::optional<std::string_view> raw_json_member(std::string_view object_text,
                                                std::string_view key) {
  const RawMembers members = raw_members(object_text);
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return std::nullopt;
}

Result<BeforeImage> make_before_image(std::optional<Row> row, bool key_only,
                                      std::vector<std::string> unavailable) {
  if (!row) {
    if (key_only || !unavailable.empty()) {
      return fail(Error::invalid_data("before is null but before_is_key_only or "
                                      "before_unavailable_columns describe an image"));
    }
    return BeforeImage{};
  }
  if (key_only) {
    if (!unavailable.empty()) {
      return fail(
          Error::invalid_data("a key-only before image cannot list before_unavailable_columns"));
    }
    return BeforeImage{BeforeKeyOnly{std::move(*row)}};
  }
  return BeforeImage{BeforeFull{std::move(*row), std::move(unavailable)}};
}

Result<Row> parse_row_json(std::string_view text, const char* field) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) {
    return fail(Error::invalid_data(std::string("field '") + field +
                                    "' is not valid JSON: " + ec.message()));
  }
  return row_from_json(v, field, text);
}

void write_row_json(ByteBuffer& b, const Row& row) { write_row(b, row); }

}  // namespace detail

Result<Event> Event::from_json(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return fail(Error::invalid_data("envelope is not valid JSON: " + ec.message()));
  if (!v.is_object()) return fail(Error::invalid_data("envelope is not a JSON object"));
  auto e = event_from_object(v.as_object(), text);
  if (!e) return fail(e.error().context("parsing an event envelope"));
  return e;
}

namespace {
int edge_rank(SnapshotEdge edge) noexcept {
  switch (edge) {
    case SnapshotEdge::kFirst:
      return 4;
    case SnapshotEdge::kLast:
      return 3;
    case SnapshotEdge::kFirstInTable:
      return 2;
    case SnapshotEdge::kLastInTable:
      return 1;
    case SnapshotEdge::kNone:
      break;
  }
  return 0;
}
}  // namespace

void mark_snapshot_edge(Event& e, SnapshotEdge edge) noexcept {
  if (edge_rank(edge) > edge_rank(e.snapshot_edge)) e.snapshot_edge = edge;
}

bool operator==(const Event& a, const Event& b) {
  return a.op == b.op && a.before == b.before && a.after == b.after && a.source == b.source &&
         a.ts == b.ts && a.schema == b.schema && a.table == b.table &&
         a.primary_key == b.primary_key && a.snapshot == b.snapshot &&
         a.transaction == b.transaction && a.envelope_version == b.envelope_version &&
         a.unavailable_columns == b.unavailable_columns;
}

// ---- builder ---------------------------------------------------------------------------

EventBuilder::EventBuilder(std::string table, Operation op) {
  event_.table = std::move(table);
  event_.op = op;
  event_.envelope_version = kEnvelopeVersion;
}
EventBuilder& EventBuilder::source(SourceMetadata s) { event_.source = std::move(s); return *this; }
EventBuilder& EventBuilder::schema(std::string s) { event_.schema = std::move(s); return *this; }
EventBuilder& EventBuilder::before(BeforeImage b) { event_.before = std::move(b); return *this; }
EventBuilder& EventBuilder::after(Row a) { event_.after = std::move(a); return *this; }
EventBuilder& EventBuilder::primary_key(std::vector<std::string> c) {
  event_.primary_key = std::move(c);
  return *this;
}
EventBuilder& EventBuilder::ts(std::int64_t ms) { event_.ts = ms; return *this; }
EventBuilder& EventBuilder::transaction(TransactionMetadata tx) {
  event_.transaction = tx;
  return *this;
}
EventBuilder& EventBuilder::snapshot(SnapshotMetadata s) {
  event_.snapshot = std::move(s);
  return *this;
}
EventBuilder& EventBuilder::unavailable_columns(std::vector<std::string> c) {
  event_.unavailable_columns = std::move(c);
  return *this;
}
EventBuilder& EventBuilder::shape(RowShapePtr s) { event_.shape = std::move(s); return *this; }
EventBuilder& EventBuilder::resume_offset(std::string o) {
  event_.resume_offset = std::move(o);
  return *this;
}
Event EventBuilder::build() { return std::move(event_); }
Result<Event> EventBuilder::build_validated() {
  Event e = std::move(event_);
  CPPCDC_TRY(e.validate());
  return e;
}

}  // namespace cppcdc
