// The Debezium-compatible JSON codec: Debezium's value and key shapes, schema-less or with
// Kafka Connect's schema (include/cppcdc/debezium.hpp; the field map is in docs/codecs.md).

#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "codec/debezium/typed.hpp"
#include "core/event_json.hpp"
#include "core/json_write.hpp"
#include "cppcdc/debezium.hpp"

#ifndef CPPCDC_VERSION
#define CPPCDC_VERSION "unknown"
#endif

namespace cppcdc {
namespace {

using detail::json_lit;
using detail::json_sint;
using detail::json_str;
using detail::json_uint;

enum class Connector { kPostgresql, kMysql, kMariadb };

const char* connector_name(Connector c) {
  switch (c) {
    case Connector::kPostgresql:
      return "postgresql";
    case Connector::kMysql:
      return "mysql";
    case Connector::kMariadb:
      return "mariadb";
  }
  return "postgresql";
}

/// A PostgreSQL LSN "X/Y" (hex) as the 64-bit number Debezium's source.lsn holds.
std::optional<std::uint64_t> parse_lsn(std::string_view offset) {
  const auto slash = offset.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == offset.size()) {
    return std::nullopt;
  }
  std::uint32_t hi = 0;
  std::uint32_t lo = 0;
  const char* end = offset.data() + offset.size();
  auto a = std::from_chars(offset.data(), offset.data() + slash, hi, 16);
  if (a.ec != std::errc() || a.ptr != offset.data() + slash) return std::nullopt;
  auto b = std::from_chars(offset.data() + slash + 1, end, lo, 16);
  if (b.ec != std::errc() || b.ptr != end) return std::nullopt;
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

std::string format_lsn(std::uint64_t lsn) {
  char text[32];
  std::snprintf(text, sizeof text, "%X/%X", static_cast<unsigned>(lsn >> 32),
                static_cast<unsigned>(lsn & 0xffffffffu));
  return text;
}

/// A binlog coordinate "file:pos"; nullopt for anything else (a GTID position).
std::optional<std::pair<std::string_view, std::uint64_t>> parse_coordinate(std::string_view o) {
  const auto colon = o.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == o.size()) return std::nullopt;
  std::uint64_t pos = 0;
  const char* end = o.data() + o.size();
  auto r = std::from_chars(o.data() + colon + 1, end, pos);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  // A MySQL GTID set "uuid:1-5" has a range after its colon, which from_chars stops at.
  return std::make_pair(o.substr(0, colon), pos);
}

// The server id of a MariaDB GTID "domain-server-sequence"; nullopt for any other text (a
// MySQL "uuid:n" carries none).
std::optional<std::uint64_t> mariadb_gtid_server(std::string_view g) {
  const auto first = g.find('-');
  const auto second = first == std::string_view::npos ? first : g.find('-', first + 1);
  if (second == std::string_view::npos || g.find('-', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  auto digits = [](std::string_view t, std::uint64_t& v) {
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  std::uint64_t domain = 0, server = 0, sequence = 0;
  if (!digits(g.substr(0, first), domain) ||
      !digits(g.substr(first + 1, second - first - 1), server) ||
      !digits(g.substr(second + 1), sequence)) {
    return std::nullopt;
  }
  return server;
}

// The decimal number that ends `text`, after the last of `separators`: a binlog file's
// sequence ("mysql-bin.000012"), a GTID's transaction number ("0-1-42", "uuid:42").
std::optional<std::uint64_t> trailing_number(std::string_view text, std::string_view separators) {
  const auto at = text.find_last_of(separators);
  if (at == std::string_view::npos || at == 0 || at + 1 == text.size()) return std::nullopt;
  std::uint64_t n = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data() + at + 1, end, n);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return n;
}

// Debezium's transaction.id for a MySQL or MariaDB event: the transaction's GTID when it has
// one, else "file=NAME,pos=N" naming the binlog coordinate of its BEGIN (Debezium's binlog
// connectors' form). Without a GTID the binlog source packs that coordinate in tx_id as
// (file sequence << 32) | position; nullopt when tx_id is no such number for the event's
// file (an event made elsewhere), which then keeps the decimal tx_id.
std::optional<std::string> binlog_transaction_id(const Event& e) {
  if (!e.gtid.empty()) return e.gtid;
  const auto coordinate = parse_coordinate(e.source.offset);
  if (!coordinate) return std::nullopt;
  const auto sequence = trailing_number(coordinate->first, ".");
  if (!sequence || (e.transaction->tx_id >> 32) != *sequence) return std::nullopt;
  return "file=" + std::string(coordinate->first) +
         ",pos=" + std::to_string(e.transaction->tx_id & 0xffffffffu);
}

// The tx_id a MySQL/MariaDB transaction.id gives back: the number of a "file=NAME,pos=N" id
// packed as binlog_transaction_id() reads it, a GTID's transaction number, or the decimal
// number itself. nullopt: none of these.
std::optional<std::uint64_t> binlog_tx_id(std::string_view id) {
  if (id.starts_with("file=")) {
    const auto comma = id.rfind(",pos=");
    if (comma == std::string_view::npos) return std::nullopt;
    const auto sequence = trailing_number(id.substr(5, comma - 5), ".");
    std::uint64_t pos = 0;
    const std::string_view digits = id.substr(comma + 5);
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), pos);
    if (!sequence || *sequence > 0xffffffffu || digits.empty() || r.ec != std::errc() ||
        r.ptr != digits.data() + digits.size() || pos > 0xffffffffu) {
      return std::nullopt;
    }
    return (*sequence << 32) | pos;
  }
  std::uint64_t n = 0;
  auto r = std::from_chars(id.data(), id.data() + id.size(), n);
  if (!id.empty() && r.ec == std::errc() && r.ptr == id.data() + id.size()) return n;
  return trailing_number(id, "-:");  // MariaDB "0-1-42", MySQL "uuid:42"
}

// Debezium's source.snapshot for an event of a snapshot.
const char* snapshot_text(SnapshotEdge edge) {
  switch (edge) {
    case SnapshotEdge::kFirst:
      return "first";
    case SnapshotEdge::kFirstInTable:
      return "first_in_data_collection";
    case SnapshotEdge::kLastInTable:
      return "last_in_data_collection";
    case SnapshotEdge::kLast:
      return "last";
    case SnapshotEdge::kNone:
      break;
  }
  return "true";
}

std::optional<SnapshotEdge> parse_snapshot_text(std::string_view text) {
  for (auto edge : {SnapshotEdge::kFirst, SnapshotEdge::kFirstInTable, SnapshotEdge::kLastInTable,
                    SnapshotEdge::kLast}) {
    if (text == snapshot_text(edge)) return edge;
  }
  return std::nullopt;
}

const char* op_letter(Operation op) {
  switch (op) {
    case Operation::kInsert:
      return "c";
    case Operation::kUpdate:
      return "u";
    case Operation::kDelete:
      return "d";
    case Operation::kRead:
      return "r";
    case Operation::kTruncate:
      return "t";
    case Operation::kMessage:
      return "m";
    case Operation::kSchemaChange:
      return nullptr;
  }
  return nullptr;
}

std::optional<Operation> op_of_letter(std::string_view letter) {
  if (letter == "c") return Operation::kInsert;
  if (letter == "u") return Operation::kUpdate;
  if (letter == "d") return Operation::kDelete;
  if (letter == "r") return Operation::kRead;
  if (letter == "t") return Operation::kTruncate;
  if (letter == "m") return Operation::kMessage;
  return std::nullopt;
}

/// Debezium's topic-like prefix of schema names: "<name>.<schema>.<table>".
std::string record_prefix(const Event& e) {
  std::string out = e.source.source_name;
  if (e.schema) out += "." + *e.schema;
  out += "." + e.table;
  return out;
}

/// A Connect schema field: {"type":T,"optional":B,"field":F} plus an optional name.
void schema_field(ByteBuffer& b, const char* type, bool optional, std::string_view field,
                  const char* name = nullptr) {
  json_lit(b, "{\"type\":\"");
  b.raw(type);
  json_lit(b, "\",\"optional\":");
  b.raw(optional ? "true" : "false");
  if (name != nullptr) {
    json_lit(b, ",\"name\":\"");
    b.raw(name);
    json_lit(b, "\",\"version\":1");
  }
  json_lit(b, ",\"field\":");
  json_str(b, field);
  b.ch('}');
}

/// `ms` times `factor` (ts_us, ts_ns); null when that is past a 64-bit number.
void write_scaled(ByteBuffer& out, std::int64_t ms, std::int64_t factor) {
  std::int64_t v = 0;
  if (__builtin_mul_overflow(ms, factor, &v)) {
    json_lit(out, "null");
  } else {
    json_sint(out, v);
  }
}

/// Drops what was written to `out` after its first `size` bytes.
void truncate_to(ByteBuffer& out, std::size_t size) { out.cur() -= out.size() - size; }

/// The column types of one shape under one connector's mapping.
struct ShapeTypes {
  RowShapePtr shape;  // kept, so that the pointer cannot be reused by another shape
  bool postgres = true;
  std::vector<debezium::ColumnType> types;
};

class DebeziumJsonEncoder final : public Encoder {
 public:
  explicit DebeziumJsonEncoder(DebeziumJsonOptions options)
      : options_(std::move(options)),
        pg_options_(debezium::typed_options(options_, true)),
        mysql_options_(debezium::typed_options(options_, false)) {}

  std::string name() const override { return "debezium_json"; }
  // A key change reads as Debezium's connectors send it: delete (old key), then create.
  bool key_change_creates() const override { return true; }

  Status encode(const Event& e, ByteBuffer& out) override {
    const char* letter = op_letter(e.op);
    if (letter == nullptr) {
      return fail(Error::invalid_data(
          "a schema_change event has no Debezium value (Debezium writes schema changes to a "
          "topic of their own); keep schema_change events away from this sink with a filter "
          "transform, or use the json codec"));
    }
    const Connector connector = connector_of(e);
    const ShapeTypes* types = types_of(e, connector);
    const std::size_t start = out.size();
    if (options_.schemas_enable) {
      json_lit(out, "{\"schema\":");
      write_value_schema_cached(out, e, connector, types);
      json_lit(out, ",\"payload\":");
    }
    json_lit(out, "{\"before\":");
    if (auto st = write_row(out, e.before.row(), e, connector, types); !st) {
      truncate_to(out, start);
      return st;
    }
    json_lit(out, ",\"after\":");
    if (auto st = write_row(out, e.after ? &*e.after : nullptr, e, connector, types); !st) {
      truncate_to(out, start);
      return st;
    }
    write_rest(out, e, connector, letter);
    if (options_.schemas_enable) out.ch('}');
    return ok();
  }

  Result<bool> encode_key_to(std::string_view, const Event& e, ByteBuffer& out) override {
    if (!e.primary_key || e.primary_key->empty()) return false;
    const Row* image =
        e.op == Operation::kDelete ? e.before.row() : (e.after ? &*e.after : nullptr);
    if (image == nullptr) return false;
    for (const auto& name : *e.primary_key) {
      if (find_column(*image, name) == nullptr) return false;
    }
    const Connector connector = connector_of(e);
    const ShapeTypes* types = types_of(e, connector);
    const debezium::TypedOptions& typed = typed_options(connector);
    const std::size_t start = out.size();
    if (options_.schemas_enable) {
      json_lit(out, "{\"schema\":{\"type\":\"struct\",\"fields\":[");
      bool first = true;
      for (const auto& name : *e.primary_key) {
        if (!first) out.ch(',');
        first = false;
        const ColumnValue* c = find_column(*image, name);
        debezium::write_field_schema(out, type_of(types, *c, 0), typed, false, name);
      }
      json_lit(out, "],\"optional\":false,\"name\":");
      json_str(out, record_prefix(e) + ".Key");
      json_lit(out, "},\"payload\":");
    }
    out.ch('{');
    bool first = true;
    for (const auto& name : *e.primary_key) {
      if (!first) out.ch(',');
      first = false;
      json_str(out, name);
      out.ch(':');
      const ColumnValue& c = *find_column(*image, name);
      if (auto st = write_value(out, c, type_of(types, c, 0), e, connector); !st) {
        truncate_to(out, start);
        return fail(std::move(st).error());
      }
    }
    out.ch('}');
    if (options_.schemas_enable) out.ch('}');
    return true;
  }

 private:
  Connector connector_of(const Event& e) const {
    if (options_.connector == "postgresql") return Connector::kPostgresql;
    if (options_.connector == "mysql") return Connector::kMysql;
    if (options_.connector == "mariadb") return Connector::kMariadb;
    return parse_lsn(e.source.offset) ? Connector::kPostgresql : Connector::kMysql;
  }

  const debezium::TypedOptions& typed_options(Connector c) const {
    return c == Connector::kPostgresql ? pg_options_ : mysql_options_;
  }

  /// The types of the event's shape (nullptr without a shape or with typed = false).
  const ShapeTypes* types_of(const Event& e, Connector connector) {
    if (!options_.typed || !e.shape) return nullptr;
    const bool postgres = connector == Connector::kPostgresql;
    if (last_ && last_->shape == e.shape && last_->postgres == postgres) return last_;
    key_.assign(e.shape->content_id());
    key_ += postgres ? 'p' : 'm';
    auto it = shape_types_.find(key_);
    if (it == shape_types_.end()) {
      if (shape_types_.size() >= kMaxCachedSchemas) {
        shape_types_.clear();
        last_ = nullptr;
      }
      ShapeTypes t;
      t.postgres = postgres;
      for (const auto& c : e.shape->columns()) {
        t.types.push_back(debezium::column_type(c, postgres));
      }
      it = shape_types_.emplace(key_, std::move(t)).first;
    }
    it->second.shape = e.shape;  // the same content under another pointer
    last_ = &it->second;
    return last_;
  }

  /// The type of `c`, the column at `index` of its row (the shape's order, usually).
  const debezium::ColumnType& type_of(const ShapeTypes* types, const ColumnValue& c,
                                      std::size_t index) const {
    if (types == nullptr) return c.is_json ? json_type_ : text_type_;
    const auto& columns = types->shape->columns();
    std::size_t i = index;
    if (i >= columns.size() || columns[i].name != c.name) {
      const auto found = types->shape->find(c.name);
      if (!found) return c.is_json ? json_type_ : text_type_;
      i = *found;
    }
    return types->types[i];
  }

  Status write_value(ByteBuffer& out, const ColumnValue& c, const debezium::ColumnType& type,
                     const Event& e, Connector connector) const {
    if (!c.text) {
      json_lit(out, "null");
      return ok();
    }
    if (type.kind == debezium::Kind::kString) {
      json_str(out, *c.text);  // json columns too: Debezium's Json type is a string
      return ok();
    }
    if (!type.postgres && c.text->compare(0, 10, "0000-00-00") == 0 &&
        (type.kind == debezium::Kind::kDate || type.kind == debezium::Kind::kTimestamp ||
         type.kind == debezium::Kind::kZonedTimestamp)) {
      // MySQL's zero date: null, as Debezium writes it for a nullable column.
      if (!e.shape || e.shape->find(c.name).has_value() == false ||
          e.shape->columns()[*e.shape->find(c.name)].nullable) {
        json_lit(out, "null");
        return ok();
      }
    }
    auto st = debezium::write_value(out, type, typed_options(connector), *c.text);
    if (!st) {
      std::string table = e.schema ? *e.schema + "." + e.table : e.table;
      return fail(Error::invalid_data("debezium_json: column " + c.name + " of " + table + ": " +
                                      st.error().message()));
    }
    return ok();
  }

  Status write_row(ByteBuffer& out, const Row* row, const Event& e, Connector connector,
                   const ShapeTypes* types) const {
    if (row == nullptr) {
      json_lit(out, "null");
      return ok();
    }
    out.ch('{');
    for (std::size_t i = 0; i < row->size(); ++i) {
      const ColumnValue& c = (*row)[i];
      if (i) out.ch(',');
      json_str(out, c.name);
      out.ch(':');
      CPPCDC_TRY(write_value(out, c, type_of(types, c, i), e, connector));
    }
    out.ch('}');
    return ok();
  }

  const char* snapshot_of(const Event& e) const {
    // Only the rows the source marked (Event::snapshot_edge) are first or last: a chunk flagged
    // is_last_chunk has no more say about which of its rows ends the table.
    if (e.snapshot || e.op == Operation::kRead) return snapshot_text(e.snapshot_edge);
    return "false";
  }

  void write_rest(ByteBuffer& out, const Event& e, Connector connector, const char* letter) {
    json_lit(out, ",\"source\":{\"version\":\"cppcdc-" CPPCDC_VERSION "\",\"connector\":\"");
    out.raw(connector_name(connector));
    json_lit(out, "\",\"name\":");
    json_str(out, e.source.source_name);
    json_lit(out, ",\"ts_ms\":");
    json_sint(out, e.source.timestamp);
    json_lit(out, ",\"snapshot\":\"");
    out.raw(snapshot_of(e));
    json_lit(out, "\",\"db\":");
    if (connector == Connector::kPostgresql) {
      json_str(out, options_.database);
    } else {
      json_str(out, e.schema.value_or(""));
    }
    json_lit(out, ",\"sequence\":null,\"ts_us\":");
    write_scaled(out, e.source.timestamp, 1000);
    json_lit(out, ",\"ts_ns\":");
    write_scaled(out, e.source.timestamp, 1000000);
    if (connector == Connector::kPostgresql) {
      json_lit(out, ",\"schema\":");
      json_str(out, e.schema.value_or(""));
      json_lit(out, ",\"table\":");
      json_str(out, e.table);
      json_lit(out, ",\"txId\":");
      if (e.transaction) {
        json_uint(out, e.transaction->tx_id);
      } else {
        json_lit(out, "null");
      }
      json_lit(out, ",\"lsn\":");
      if (auto lsn = parse_lsn(e.source.offset)) {
        json_uint(out, *lsn);
      } else {
        json_lit(out, "null");
      }
      json_lit(out, ",\"xmin\":null,\"origin\":null,\"origin_lsn\":null}");
    } else {
      json_lit(out, ",\"table\":");
      json_str(out, e.table);
      json_lit(out, ",\"server_id\":");
      json_uint(out, mariadb_gtid_server(e.gtid).value_or(0));
      json_lit(out, ",\"gtid\":");
      const auto coordinate = parse_coordinate(e.source.offset);
      if (!e.gtid.empty()) {
        json_str(out, e.gtid);  // the transaction's own GTID
      } else if (coordinate) {
        json_lit(out, "null");
      } else {
        json_str(out, e.source.offset);  // a GTID position (a snapshot's, or a resume point)
      }
      if (coordinate) {
        json_lit(out, ",\"file\":");
        json_str(out, coordinate->first);
        json_lit(out, ",\"pos\":");
        json_uint(out, coordinate->second);
      } else {
        json_lit(out, ",\"file\":\"\",\"pos\":0");
      }
      json_lit(out, ",\"row\":0,\"thread\":null,\"query\":null}");
    }
    json_lit(out, ",\"transaction\":");
    if (e.transaction) {
      json_lit(out, "{\"id\":");
      std::optional<std::string> id;
      if (connector != Connector::kPostgresql) id = binlog_transaction_id(e);
      if (id) {
        json_str(out, *id);
      } else {
        out.ch('"');
        json_uint(out, e.transaction->tx_id);
        out.ch('"');
      }
      const auto [total, per_table] = orders(e);
      json_lit(out, ",\"total_order\":");
      json_uint(out, total);
      json_lit(out, ",\"data_collection_order\":");
      json_uint(out, per_table);
      out.ch('}');
    } else {
      json_lit(out, "null");
    }
    json_lit(out, ",\"op\":\"");
    out.raw(letter);
    json_lit(out, "\",\"ts_ms\":");
    json_sint(out, e.ts);
    json_lit(out, ",\"ts_us\":");
    write_scaled(out, e.ts, 1000);
    json_lit(out, ",\"ts_ns\":");
    write_scaled(out, e.ts, 1000000);
    out.ch('}');
  }

  // The 1-based positions of the record of `e` among its transaction's records, and among
  // those of the same table, counting records as Debezium does: an update that moved its row
  // to another key is two records (a delete under the old key, then a create under the new
  // one, both encoded from events with the update's event index), so every later record of
  // the transaction comes one further. Anything else that does not move forward (an event
  // index lower than the last one, or the same one again: a batch delivered again) starts the
  // count over.
  std::pair<std::uint64_t, std::uint64_t> orders(const Event& e) {
    const std::uint64_t index = e.transaction->event_index;
    const bool same_tx = current_tx_ && *current_tx_ == e.transaction->tx_id;
    const bool second_of_split = same_tx && index == last_index_ &&
                                 last_op_ == Operation::kDelete && e.op == Operation::kInsert;
    if (!same_tx || index < last_index_ || (index == last_index_ && !second_of_split)) {
      current_tx_ = e.transaction->tx_id;
      per_table_.clear();
      split_records_ = 0;
    } else if (second_of_split) {
      ++split_records_;
    }
    last_index_ = index;
    last_op_ = e.op;
    return {index + 1 + split_records_, ++per_table_[record_prefix(e)]};
  }

  void write_columns_schema(ByteBuffer& out, const Event& e, Connector connector,
                            const ShapeTypes* types, const char* field) {
    // The columns: the shape's when known, else those of the images, in order.
    struct Column {
      const ColumnValue* value = nullptr;  // from an image, when the shape lacks it
      std::string name;
      bool is_json = false;
      std::optional<bool> nullable;
      std::size_t index = 0;
    };
    std::vector<Column> columns;
    std::set<std::string, std::less<>> seen;
    if (e.shape) {
      std::size_t i = 0;
      for (const auto& c : e.shape->columns()) {
        columns.push_back({nullptr, c.name, c.is_json, c.nullable, i++});
        seen.insert(c.name);
      }
    }
    for (const Row* row : {e.after ? &*e.after : nullptr, e.before.row()}) {
      if (row == nullptr) continue;
      for (const auto& c : *row) {
        if (seen.insert(c.name).second) columns.push_back({&c, c.name, c.is_json, {}, 0});
      }
    }
    json_lit(out, "{\"type\":\"struct\",\"fields\":[");
    bool first = true;
    for (const auto& c : columns) {
      if (!first) out.ch(',');
      first = false;
      bool key = false;
      if (e.primary_key) {
        for (const auto& k : *e.primary_key) key = key || k == c.name;
      }
      const debezium::ColumnType* type = &(c.is_json ? json_type_ : text_type_);
      if (types != nullptr && c.value == nullptr) type = &types->types[c.index];
      // Debezium: optional unless the column is NOT NULL; without a shape, unless a key column.
      const bool optional = options_.typed && c.nullable ? *c.nullable : !key;
      debezium::write_field_schema(out, *type, typed_options(connector), optional, c.name);
    }
    json_lit(out, "],\"optional\":true,\"name\":");
    json_str(out, record_prefix(e) + ".Value");
    json_lit(out, ",\"field\":\"");
    out.raw(field);
    json_lit(out, "\"}");
  }

  // The value schema depends on the connector, the record prefix, the columns (with their
  // json-ness), the key columns and the shape: the same for every event of a table until the
  // table changes. Kept by a signature of all of these (bounded), since writing it costs far
  // more than the payload.
  void write_value_schema_cached(ByteBuffer& out, const Event& e, Connector connector,
                                 const ShapeTypes* types) {
    signature_.clear();
    const auto add = [this](std::string_view text) {
      const auto n = static_cast<std::uint32_t>(text.size());
      signature_.append(reinterpret_cast<const char*>(&n), sizeof n);
      signature_.append(text);
    };
    signature_ += static_cast<char>('0' + static_cast<int>(connector));
    add(e.source.source_name);
    signature_ += e.schema ? '1' : '0';
    add(e.schema.value_or(""));
    add(e.table);
    add(e.shape ? e.shape->content_id() : std::string_view());
    for (const Row* row : {e.after ? &*e.after : nullptr, e.before.row()}) {
      signature_ += row == nullptr ? 'n' : 'r';
      if (row == nullptr) continue;
      for (const auto& c : *row) {
        add(c.name);
        signature_ += c.is_json ? 'j' : 't';
      }
    }
    signature_ += e.primary_key ? 'k' : '-';
    if (e.primary_key) {
      for (const auto& k : *e.primary_key) add(k);
    }
    auto it = schemas_.find(signature_);
    if (it == schemas_.end()) {
      if (schemas_.size() >= kMaxCachedSchemas) schemas_.clear();
      ByteBuffer built;
      write_value_schema(built, e, connector, types);
      it = schemas_.emplace(signature_, std::string(built.view())).first;
    }
    out.raw(it->second);
  }

  void write_value_schema(ByteBuffer& out, const Event& e, Connector connector,
                          const ShapeTypes* types) {
    json_lit(out, "{\"type\":\"struct\",\"fields\":[");
    write_columns_schema(out, e, connector, types, "before");
    out.ch(',');
    write_columns_schema(out, e, connector, types, "after");
    json_lit(out, ",{\"type\":\"struct\",\"fields\":[");
    schema_field(out, "string", false, "version");
    out.ch(',');
    schema_field(out, "string", false, "connector");
    out.ch(',');
    schema_field(out, "string", false, "name");
    out.ch(',');
    schema_field(out, "int64", false, "ts_ms");
    json_lit(out,
             ",{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.data.Enum\","
             "\"version\":1,\"parameters\":{\"allowed\":\"true,first,first_in_data_collection,"
             "last_in_data_collection,last,false,incremental\"},\"default\":\"false\","
             "\"field\":\"snapshot\"},");
    schema_field(out, "string", false, "db");
    out.ch(',');
    schema_field(out, "string", true, "sequence");
    out.ch(',');
    schema_field(out, "int64", true, "ts_us");
    out.ch(',');
    schema_field(out, "int64", true, "ts_ns");
    out.ch(',');
    if (connector == Connector::kPostgresql) {
      schema_field(out, "string", false, "schema");
      out.ch(',');
      schema_field(out, "string", false, "table");
      out.ch(',');
      schema_field(out, "int64", true, "txId");
      out.ch(',');
      schema_field(out, "int64", true, "lsn");
      out.ch(',');
      schema_field(out, "int64", true, "xmin");
      out.ch(',');
      schema_field(out, "string", true, "origin");
      out.ch(',');
      schema_field(out, "int64", true, "origin_lsn");
      json_lit(out, "],\"optional\":false,\"name\":\"io.debezium.connector.postgresql.Source\"");
    } else {
      schema_field(out, "string", true, "table");
      out.ch(',');
      schema_field(out, "int64", false, "server_id");
      out.ch(',');
      schema_field(out, "string", true, "gtid");
      out.ch(',');
      schema_field(out, "string", false, "file");
      out.ch(',');
      schema_field(out, "int64", false, "pos");
      out.ch(',');
      schema_field(out, "int32", false, "row");
      out.ch(',');
      schema_field(out, "int64", true, "thread");
      out.ch(',');
      schema_field(out, "string", true, "query");
      json_lit(out, "],\"optional\":false,\"name\":\"io.debezium.connector.");
      out.raw(connector_name(connector));
      json_lit(out, ".Source\"");
    }
    json_lit(out, ",\"version\":1,\"field\":\"source\"},{\"type\":\"struct\",\"fields\":[");
    schema_field(out, "string", false, "id");
    out.ch(',');
    schema_field(out, "int64", false, "total_order");
    out.ch(',');
    schema_field(out, "int64", false, "data_collection_order");
    json_lit(out,
             "],\"optional\":true,\"name\":\"event.block\",\"version\":1,"
             "\"field\":\"transaction\"},");
    schema_field(out, "string", false, "op");
    out.ch(',');
    schema_field(out, "int64", true, "ts_ms");
    out.ch(',');
    schema_field(out, "int64", true, "ts_us");
    out.ch(',');
    schema_field(out, "int64", true, "ts_ns");
    json_lit(out, "],\"optional\":false,\"name\":");
    json_str(out, record_prefix(e) + ".Envelope");
    json_lit(out, ",\"version\":2}");
  }

  static constexpr std::size_t kMaxCachedSchemas = 1024;

  DebeziumJsonOptions options_;
  debezium::TypedOptions pg_options_;
  debezium::TypedOptions mysql_options_;
  debezium::ColumnType text_type_;
  debezium::ColumnType json_type_ = [] {
    debezium::ColumnType t;
    t.semantic = "io.debezium.data.Json";
    return t;
  }();
  std::string signature_;
  std::unordered_map<std::string, std::string> schemas_;
  std::string key_;
  std::unordered_map<std::string, ShapeTypes> shape_types_;
  const ShapeTypes* last_ = nullptr;
  std::optional<std::uint64_t> current_tx_;
  std::map<std::string, std::uint64_t, std::less<>> per_table_;
  std::uint64_t last_index_ = 0;            // the event index of the last record of current_tx_
  std::uint64_t split_records_ = 0;         // records of current_tx_ beyond one per event so far
  Operation last_op_ = Operation::kInsert;  // the op of the last record of current_tx_
};

// ---- reading ---------------------------------------------------------------------------------

namespace json = boost::json;

Error bad(const std::string& what) { return Error::invalid_data("not a Debezium value: " + what); }

/// The field schemas of the columns under `field` (before/after) of a value schema.
std::map<std::string, const json::object*, std::less<>> column_schemas(const json::object* schema,
                                                                       std::string_view field) {
  std::map<std::string, const json::object*, std::less<>> out;
  if (schema == nullptr) return out;
  const auto* fields = schema->if_contains("fields");
  if (fields == nullptr || !fields->is_array()) return out;
  for (const auto& f : fields->as_array()) {
    if (!f.is_object()) continue;
    const auto* name = f.as_object().if_contains("field");
    if (name == nullptr || !name->is_string() || name->as_string() != field) continue;
    const auto* columns = f.as_object().if_contains("fields");
    if (columns == nullptr || !columns->is_array()) continue;
    for (const auto& c : columns->as_array()) {
      if (!c.is_object()) continue;
      const auto* column = c.as_object().if_contains("field");
      if (column && column->is_string())
        out.emplace(std::string(column->as_string()), &c.as_object());
    }
  }
  return out;
}

Result<std::optional<Row>> read_row(
    const json::object& payload, const char* field,
    const std::map<std::string, const json::object*, std::less<>>& schemas, bool postgres) {
  const auto* v = payload.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<Row>();
  if (!v->is_object()) return fail(bad(std::string("'") + field + "' is not an object"));
  Row row;
  for (const auto& kv : v->as_object()) {
    ColumnValue c;
    c.name = std::string(kv.key());
    if (!kv.value().is_null()) {
      const auto it = schemas.find(c.name);
      auto text = debezium::text_of(kv.value(), it == schemas.end() ? nullptr : it->second,
                                    postgres, c.is_json);
      if (!text) return fail(bad("column " + c.name + ": " + text.error().message()));
      c.text = std::move(*text);
    }
    row.push_back(std::move(c));
  }
  return std::optional<Row>(std::move(row));
}

const json::string* string_at(const json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? &v->as_string() : nullptr;
}

std::optional<std::int64_t> int_at(const json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return std::nullopt;
}

class DebeziumJsonDecoder final : public Decoder {
 public:
  std::string name() const override { return "debezium_json"; }

  Result<Event> decode(std::string_view record) override {
    boost::system::error_code ec;
    json::value root = json::parse(record, ec);
    if (ec) return fail(bad("not valid JSON: " + ec.message()));
    if (!root.is_object()) return fail(bad("not a JSON object"));
    const json::object* payload = &root.as_object();
    const json::object* schema = nullptr;
    if (const auto* p = payload->if_contains("payload"); p && payload->contains("schema")) {
      if (!p->is_object()) return fail(bad("'payload' is not an object"));
      const auto* s = payload->if_contains("schema");
      if (s->is_object()) schema = &s->as_object();
      payload = &p->as_object();
    }
    Event e;
    const auto* op = string_at(*payload, "op");
    if (op == nullptr) return fail(bad("'op' is missing"));
    const auto parsed = op_of_letter(*op);
    if (!parsed) return fail(bad("unknown op '" + std::string(*op) + "'"));
    e.op = *parsed;
    const auto* source_value = payload->if_contains("source");
    if (source_value == nullptr || !source_value->is_object()) {
      return fail(bad("'source' is missing"));
    }
    const auto& source = source_value->as_object();
    const auto* connector = string_at(source, "connector");
    const auto* name = string_at(source, "name");
    const auto* table = string_at(source, "table");
    if (connector == nullptr || name == nullptr || table == nullptr) {
      return fail(bad("'source' lacks connector, name or table"));
    }
    const bool postgres = *connector == "postgresql";
    auto before = read_row(*payload, "before", column_schemas(schema, "before"), postgres);
    if (!before) return fail(std::move(before).error());
    auto after = read_row(*payload, "after", column_schemas(schema, "after"), postgres);
    if (!after) return fail(std::move(after).error());
    e.after = std::move(*after);
    auto image = detail::make_before_image(std::move(*before), false, {});
    if (!image) return fail(std::move(image).error());
    e.before = std::move(*image);
    e.source.source_name = std::string(*name);
    e.source.timestamp = int_at(source, "ts_ms").value_or(0);
    if (const auto* snap = string_at(source, "snapshot")) {
      if (auto edge = parse_snapshot_text(*snap)) e.snapshot_edge = *edge;
    }
    e.table = std::string(*table);
    if (postgres) {
      if (const auto* s = string_at(source, "schema"); s && !s->empty()) e.schema = std::string(*s);
      if (auto lsn = int_at(source, "lsn"))
        e.source.offset = format_lsn(static_cast<std::uint64_t>(*lsn));
    } else {
      if (const auto* db = string_at(source, "db"); db && !db->empty()) e.schema = std::string(*db);
      const auto* file = string_at(source, "file");
      const auto* gtid = string_at(source, "gtid");
      if (file != nullptr && !file->empty()) {
        e.source.offset =
            std::string(*file) + ":" + std::to_string(int_at(source, "pos").value_or(0));
        // With a file position, source.gtid is the transaction's GTID.
        if (gtid != nullptr) e.gtid = std::string(*gtid);
      } else if (gtid != nullptr) {
        e.source.offset = std::string(*gtid);
      }
    }
    e.ts = int_at(*payload, "ts_ms").value_or(0);
    if (const auto* tx = payload->if_contains("transaction"); tx && tx->is_object()) {
      const auto* id = string_at(tx->as_object(), "id");
      const auto order = int_at(tx->as_object(), "total_order");
      if (id == nullptr || !order || *order < 1) {
        return fail(bad("'transaction' lacks id or total_order"));
      }
      TransactionMetadata t;
      const std::string_view text(id->data(), id->size());
      if (postgres) {
        const auto digits = text.substr(0, text.find(':'));  // also "txId:lsn"
        auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.tx_id);
        if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
          return fail(bad("transaction id '" + std::string(text) + "' is not a number"));
        }
      } else if (auto n = binlog_tx_id(text)) {
        t.tx_id = *n;
      } else {
        return fail(bad("transaction id '" + std::string(text) +
                        "' is neither a GTID, nor \"file=NAME,pos=N\", nor a number"));
      }
      t.event_index = static_cast<std::uint64_t>(*order - 1);
      e.transaction = t;
    }
    return e;
  }
};

}  // namespace

Status validate(const DebeziumJsonOptions& options) {
  const auto one_of = [](const std::string& value, std::initializer_list<std::string_view> allowed,
                         bool empty_ok, const char* setting) -> Status {
    if (empty_ok && value.empty()) return ok();
    std::string list;
    std::size_t i = 0;
    for (const auto a : allowed) {
      if (value == a) return ok();
      list += (i == 0                    ? ""
               : i + 1 == allowed.size() ? " or "
                                         : ", ") +
              ("\"" + std::string(a) + "\"");
      ++i;
    }
    return fail(Error::configuration("expected " + list + ", found \"" + value + "\"")
                    .for_setting(SettingOwner::kSink, setting));
  };
  CPPCDC_TRY(one_of(options.connector, {"postgresql", "mysql", "mariadb"}, true, "connector"));
  CPPCDC_TRY(one_of(options.decimal_handling_mode, {"precise", "double", "string"}, false,
                    "decimal_handling_mode"));
  CPPCDC_TRY(one_of(options.time_precision_mode,
                    {"adaptive", "adaptive_time_microseconds", "connect"}, true,
                    "time_precision_mode"));
  CPPCDC_TRY(one_of(options.binary_handling_mode, {"bytes", "base64", "base64-url-safe", "hex"},
                    false, "binary_handling_mode"));
  return ok();
}

std::unique_ptr<Encoder> make_debezium_json_encoder(DebeziumJsonOptions options) {
  return std::make_unique<DebeziumJsonEncoder>(std::move(options));
}

std::unique_ptr<Decoder> make_debezium_json_decoder(DebeziumJsonOptions) {
  return std::make_unique<DebeziumJsonDecoder>();
}

}  // namespace cppcdc
