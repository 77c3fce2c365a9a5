#include "sink/kafka/record.hpp"

#include "core/json_write.hpp"
#include "cppcdc/codec.hpp"

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
  ByteBuffer key;
  if (!append_json_key(event, key)) return false;
  out.assign(key.view());
  return true;
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

bool key_moved(const Event& event) {
  if (event.op != Operation::kUpdate || !event.primary_key || !event.after) return false;
  const Row* before = event.before.row();
  if (before == nullptr) return false;
  bool differs = false;
  for (const std::string& name : *event.primary_key) {
    const ColumnValue* old_value = find_column(*before, name);
    const ColumnValue* new_value = find_column(*event.after, name);
    if (old_value == nullptr || new_value == nullptr) return false;
    if (!(*old_value == *new_value)) differs = true;
  }
  return differs;
}

Event deletion_of_previous_key(const Event& update) {
  // A copy with what a delete cannot have taken away, so that everything else the update
  // carries (its GTID included: trial of issue 18, the delete had none) is the delete's too.
  Event deleted = update;
  deleted.op = Operation::kDelete;
  deleted.after.reset();
  deleted.unavailable_columns.clear();
  deleted.resume_offset.clear();
  deleted.resume_state.clear();
  deleted.snapshot_edge = SnapshotEdge::kNone;
  return deleted;
}

Event creation_under_new_key(const Event& update) {
  Event created = update;
  created.op = Operation::kInsert;
  created.before = BeforeImage();
  return created;
}

}  // namespace cppcdc::kafka_sink
