#include "sink/kafka/record.hpp"

#include "core/json_write.hpp"

namespace cppcdc::kafka_sink {

bool write_record_key(const Event& event, std::string& out) {
  out.clear();
  if (!event.primary_key || event.primary_key->empty()) return false;
  const Row* image =
      event.op == Operation::kDelete ? event.before.row() : (event.after ? &*event.after : nullptr);
  if (image == nullptr) return false;
  out += '{';
  bool first = true;
  for (const std::string& name : *event.primary_key) {
    const ColumnValue* column = find_column(*image, name);
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

}  // namespace cppcdc::kafka_sink
