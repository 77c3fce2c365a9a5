// The Debezium-compatible JSON codec: Debezium's value and key shapes, schema-less or with
// Kafka Connect's schema (include/cppcdc/debezium.hpp; the field map is in docs/codecs.md).

#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

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

class DebeziumJsonEncoder final : public Encoder {
 public:
  explicit DebeziumJsonEncoder(DebeziumJsonOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "debezium_json"; }

  Status encode(const Event& e, ByteBuffer& out) override {
    const char* letter = op_letter(e.op);
    if (letter == nullptr) {
      return fail(Error::invalid_data(
          "a schema_change event has no Debezium value (Debezium writes schema changes to a "
          "topic of their own); keep schema_change events away from this sink with a filter "
          "transform, or use the json codec"));
    }
    const Connector connector = connector_of(e);
    if (options_.schemas_enable) {
      json_lit(out, "{\"schema\":");
      write_value_schema_cached(out, e, connector);
      json_lit(out, ",\"payload\":");
    }
    write_image(out, e.before.row());
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
    if (options_.schemas_enable) {
      json_lit(out, "{\"schema\":{\"type\":\"struct\",\"fields\":[");
      bool first = true;
      for (const auto& name : *e.primary_key) {
        if (!first) out.ch(',');
        first = false;
        const ColumnValue* c = find_column(*image, name);
        schema_field(out, "string", false, name, c->is_json ? "io.debezium.data.Json" : nullptr);
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
      write_value(out, *find_column(*image, name));
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

  static void write_value(ByteBuffer& out, const ColumnValue& c) {
    if (!c.text) {
      json_lit(out, "null");
    } else {
      json_str(out, *c.text);  // json columns too: Debezium's Json type is a string
    }
  }

  static void write_image(ByteBuffer& out, const Row* row) {
    json_lit(out, "{\"before\":");
    write_row(out, row);
  }

  static void write_row(ByteBuffer& out, const Row* row) {
    if (row == nullptr) {
      json_lit(out, "null");
      return;
    }
    out.ch('{');
    bool first = true;
    for (const auto& c : *row) {
      if (!first) out.ch(',');
      first = false;
      json_str(out, c.name);
      out.ch(':');
      write_value(out, c);
    }
    out.ch('}');
  }

  const char* snapshot_of(const Event& e) const {
    if (e.snapshot) return e.snapshot->is_last_chunk ? "last" : "true";
    return e.op == Operation::kRead ? "true" : "false";
  }

  void write_rest(ByteBuffer& out, const Event& e, Connector connector, const char* letter) {
    json_lit(out, ",\"after\":");
    write_row(out, e.after ? &*e.after : nullptr);
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
      json_lit(out, ",\"sequence\":null,\"schema\":");
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
      json_lit(out, ",\"xmin\":null}");
    } else {
      json_str(out, e.schema.value_or(""));
      json_lit(out, ",\"sequence\":null,\"table\":");
      json_str(out, e.table);
      json_lit(out, ",\"server_id\":0,\"gtid\":");
      const auto coordinate = parse_coordinate(e.source.offset);
      if (coordinate) {
        json_lit(out, "null,\"file\":");
        json_str(out, coordinate->first);
        json_lit(out, ",\"pos\":");
        json_uint(out, coordinate->second);
      } else {
        json_str(out, e.source.offset);
        json_lit(out, ",\"file\":\"\",\"pos\":0");
      }
      json_lit(out, ",\"row\":0,\"thread\":null,\"query\":null}");
    }
    json_lit(out, ",\"op\":\"");
    out.raw(letter);
    json_lit(out, "\",\"ts_ms\":");
    json_sint(out, e.ts);
    json_lit(out, ",\"transaction\":");
    if (e.transaction) {
      json_lit(out, "{\"id\":\"");
      json_uint(out, e.transaction->tx_id);
      json_lit(out, "\",\"total_order\":");
      json_uint(out, e.transaction->event_index + 1);
      json_lit(out, ",\"data_collection_order\":");
      json_uint(out, data_collection_order(e));
      out.ch('}');
    } else {
      json_lit(out, "null");
    }
    out.ch('}');
  }

  // The 1-based position of `e` among its transaction's events of the same table.
  std::uint64_t data_collection_order(const Event& e) {
    if (!current_tx_ || *current_tx_ != e.transaction->tx_id) {
      current_tx_ = e.transaction->tx_id;
      per_table_.clear();
    }
    return ++per_table_[record_prefix(e)];
  }

  void write_columns_schema(ByteBuffer& out, const Event& e, const char* field) {
    // The columns: the shape's when known, else those of the images, in order.
    std::vector<std::pair<std::string, bool>> columns;  // name, json
    std::set<std::string, std::less<>> seen;
    if (e.shape) {
      for (const auto& c : e.shape->columns()) {
        columns.emplace_back(c.name, c.is_json);
        seen.insert(c.name);
      }
    }
    for (const Row* row : {e.after ? &*e.after : nullptr, e.before.row()}) {
      if (row == nullptr) continue;
      for (const auto& c : *row) {
        if (seen.insert(c.name).second) columns.emplace_back(c.name, c.is_json);
      }
    }
    json_lit(out, "{\"type\":\"struct\",\"fields\":[");
    bool first = true;
    for (const auto& [name, is_json] : columns) {
      if (!first) out.ch(',');
      first = false;
      bool key = false;
      if (e.primary_key) {
        for (const auto& k : *e.primary_key) key = key || k == name;
      }
      schema_field(out, "string", !key, name, is_json ? "io.debezium.data.Json" : nullptr);
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
  void write_value_schema_cached(ByteBuffer& out, const Event& e, Connector connector) {
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
      write_value_schema(built, e, connector);
      it = schemas_.emplace(signature_, std::string(built.view())).first;
    }
    out.raw(it->second);
  }

  void write_value_schema(ByteBuffer& out, const Event& e, Connector connector) {
    json_lit(out, "{\"type\":\"struct\",\"fields\":[");
    write_columns_schema(out, e, "before");
    out.ch(',');
    write_columns_schema(out, e, "after");
    json_lit(out, ",{\"type\":\"struct\",\"fields\":[");
    schema_field(out, "string", false, "version");
    out.ch(',');
    schema_field(out, "string", false, "connector");
    out.ch(',');
    schema_field(out, "string", false, "name");
    out.ch(',');
    schema_field(out, "int64", false, "ts_ms");
    out.ch(',');
    schema_field(out, "string", true, "snapshot", "io.debezium.data.Enum");
    out.ch(',');
    schema_field(out, "string", false, "db");
    out.ch(',');
    schema_field(out, "string", true, "sequence");
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
    json_lit(out, ",\"field\":\"source\"},");
    schema_field(out, "string", false, "op");
    out.ch(',');
    schema_field(out, "int64", true, "ts_ms");
    json_lit(out, ",{\"type\":\"struct\",\"fields\":[");
    schema_field(out, "string", false, "id");
    out.ch(',');
    schema_field(out, "int64", false, "total_order");
    out.ch(',');
    schema_field(out, "int64", false, "data_collection_order");
    json_lit(out,
             "],\"optional\":true,\"name\":\"event.block\",\"version\":1,"
             "\"field\":\"transaction\"}],\"optional\":false,\"name\":");
    json_str(out, record_prefix(e) + ".Envelope");
    json_lit(out, ",\"version\":1}");
  }

  static constexpr std::size_t kMaxCachedSchemas = 1024;

  DebeziumJsonOptions options_;
  std::string signature_;
  std::unordered_map<std::string, std::string> schemas_;
  std::optional<std::uint64_t> current_tx_;
  std::map<std::string, std::uint64_t, std::less<>> per_table_;
};

// ---- reading ---------------------------------------------------------------------------------

namespace json = boost::json;

Error bad(const std::string& what) { return Error::invalid_data("not a Debezium value: " + what); }

/// Column names the value schema marks io.debezium.data.Json, under `field` (before/after).
std::set<std::string> json_columns(const json::object* schema, std::string_view field) {
  std::set<std::string> out;
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
      const auto* type_name = c.as_object().if_contains("name");
      const auto* column = c.as_object().if_contains("field");
      if (type_name && type_name->is_string() &&
          type_name->as_string() == "io.debezium.data.Json" && column && column->is_string()) {
        out.emplace(column->as_string());
      }
    }
  }
  return out;
}

Result<std::optional<Row>> read_row(const json::object& payload, const char* field,
                                    const std::set<std::string>& json_names) {
  const auto* v = payload.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<Row>();
  if (!v->is_object()) return fail(bad(std::string("'") + field + "' is not an object"));
  Row row;
  for (const auto& kv : v->as_object()) {
    ColumnValue c;
    c.name = std::string(kv.key());
    if (kv.value().is_null()) {
    } else if (kv.value().is_string()) {
      c.text = std::string(kv.value().as_string());
      c.is_json = json_names.count(c.name) != 0;
    } else {
      c.text = json::serialize(kv.value());
      c.is_json = true;
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
    auto before = read_row(*payload, "before", json_columns(schema, "before"));
    if (!before) return fail(std::move(before).error());
    auto after = read_row(*payload, "after", json_columns(schema, "after"));
    if (!after) return fail(std::move(after).error());
    e.after = std::move(*after);
    auto image = detail::make_before_image(std::move(*before), false, {});
    if (!image) return fail(std::move(image).error());
    e.before = std::move(*image);
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
    e.source.source_name = std::string(*name);
    e.source.timestamp = int_at(source, "ts_ms").value_or(0);
    e.table = std::string(*table);
    if (*connector == "postgresql") {
      if (const auto* s = string_at(source, "schema"); s && !s->empty()) e.schema = std::string(*s);
      if (auto lsn = int_at(source, "lsn"))
        e.source.offset = format_lsn(static_cast<std::uint64_t>(*lsn));
    } else {
      if (const auto* db = string_at(source, "db"); db && !db->empty()) e.schema = std::string(*db);
      const auto* file = string_at(source, "file");
      if (file != nullptr && !file->empty()) {
        e.source.offset =
            std::string(*file) + ":" + std::to_string(int_at(source, "pos").value_or(0));
      } else if (const auto* gtid = string_at(source, "gtid")) {
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
      const auto digits = text.substr(0, text.find(':'));  // Debezium's PostgreSQL "txId:lsn"
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.tx_id);
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
        return fail(bad("transaction id '" + std::string(text) + "' is not a number"));
      }
      t.event_index = static_cast<std::uint64_t>(*order - 1);
      e.transaction = t;
    }
    return e;
  }
};

}  // namespace

Status validate(const DebeziumJsonOptions& options) {
  if (!options.connector.empty() && options.connector != "postgresql" &&
      options.connector != "mysql" && options.connector != "mariadb") {
    return fail(Error::configuration("expected \"postgresql\", \"mysql\" or \"mariadb\", found \"" +
                                     options.connector + "\"")
                    .for_setting(SettingOwner::kSink, "connector"));
  }
  return ok();
}

std::unique_ptr<Encoder> make_debezium_json_encoder(DebeziumJsonOptions options) {
  return std::make_unique<DebeziumJsonEncoder>(std::move(options));
}

std::unique_ptr<Decoder> make_debezium_json_decoder(DebeziumJsonOptions) {
  return std::make_unique<DebeziumJsonDecoder>();
}

}  // namespace cppcdc
