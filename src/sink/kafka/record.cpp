#include "sink/kafka/record.hpp"

#include "core/json_write.hpp"

namespace cppcdc::kafka_sink {

namespace {

bool write_key_of(const std::vector<std::string>& key_columns, const Row& image, std::string& out) {
  out += '{';
  bool first = true;
  for (const std::string& name : key_columns) {
    const ColumnValue* column = find_column(image, name);
    if (column == nullptr) {
      out.clear();
      return false;
    }
    if (!first) out += ',';
    first = false;
    detail::append_json_string(out, name);
    out += ':';
    if (!column->text) {
      out += "null";
    } else if (column->is_json) {
      out += *column->text;
    } else {
      detail::append_json_string(out, *column->text);
    }
  }
  out += '}';
  return true;
}

}  // namespace

bool write_record_key(const Event& event, std::string& out) {
  out.clear();
  if (!event.primary_key || event.primary_key->empty()) return false;
  const Row* image =
      event.op == Operation::kDelete ? event.before.row() : (event.after ? &*event.after : nullptr);
  if (image == nullptr) return false;
  return write_key_of(*event.primary_key, *image, out);
}

bool write_previous_record_key(const Event& event, std::string_view key, std::string& out) {
  out.clear();
  if (event.op != Operation::kUpdate || key.empty()) return false;
  const Row* before = event.before.row();
  if (before == nullptr) return false;
  if (!write_key_of(*event.primary_key, *before, out) || out == key) {
    out.clear();
    return false;
  }
  return true;
}

Event deletion_of_previous_key(const Event& update) {
  Event deleted;
  deleted.op = Operation::kDelete;
  deleted.before = update.before;
  deleted.source = update.source;
  deleted.ts = update.ts;
  deleted.schema = update.schema;
  deleted.table = update.table;
  deleted.primary_key = update.primary_key;
  deleted.snapshot = update.snapshot;
  deleted.transaction = update.transaction;
  deleted.envelope_version = update.envelope_version;
  deleted.shape = update.shape;
  return deleted;
}

}  // namespace cppcdc::kafka_sink
