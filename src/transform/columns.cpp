#include "transform/columns.hpp"

#include <algorithm>

namespace cppcdc::transform_detail {

Row* before_row(Event& event) {
  auto& v = before_variant(event);
  if (auto* key = std::get_if<BeforeKeyOnly>(&v)) return &key->key;
  if (auto* full = std::get_if<BeforeFull>(&v)) return &full->row;
  return nullptr;
}

std::vector<std::string>* before_unavailable(Event& event) {
  auto* full = std::get_if<BeforeFull>(&before_variant(event));
  return full != nullptr ? &full->unavailable_columns : nullptr;
}

ColumnValue* find_column_mut(Row& row, std::string_view name) noexcept {
  for (auto& c : row) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool erase_column(Row& row, std::string_view name) {
  const auto it =
      std::find_if(row.begin(), row.end(), [name](const ColumnValue& c) { return c.name == name; });
  if (it == row.end()) return false;
  row.erase(it);
  return true;
}

bool is_listed(const std::vector<std::string>& list, std::string_view name) noexcept {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool unlist(std::vector<std::string>& list, std::string_view name) {
  const auto it = std::find(list.begin(), list.end(), name);
  if (it == list.end()) return false;
  list.erase(it);
  return true;
}

bool carries_column(const Event& event, std::string_view name) {
  if (event.after && find_column(*event.after, name) != nullptr) return true;
  if (is_listed(event.unavailable_columns, name)) return true;
  if (const Row* row = event.before.row(); row != nullptr && find_column(*row, name) != nullptr) {
    return true;
  }
  return is_listed(event.before.unavailable_columns(), name);
}

bool remove_column(Event& event, std::string_view name) {
  bool removed = false;
  if (event.after) removed |= erase_column(*event.after, name);
  removed |= unlist(event.unavailable_columns, name);
  if (Row* row = before_row(event)) removed |= erase_column(*row, name);
  if (auto* list = before_unavailable(event)) removed |= unlist(*list, name);
  return removed;
}

namespace {
bool rename_in(Row& row, std::string_view from, std::string_view to) {
  ColumnValue* c = find_column_mut(row, from);
  if (c == nullptr) return false;
  c->name = std::string(to);
  return true;
}
bool rename_marker(std::vector<std::string>& list, std::string_view from, std::string_view to) {
  const auto it = std::find(list.begin(), list.end(), from);
  if (it == list.end()) return false;
  *it = std::string(to);
  return true;
}
}  // namespace

bool rename_column(Event& event, std::string_view from, std::string_view to) {
  bool renamed = false;
  if (event.after) renamed |= rename_in(*event.after, from, to);
  renamed |= rename_marker(event.unavailable_columns, from, to);
  if (Row* row = before_row(event)) renamed |= rename_in(*row, from, to);
  if (auto* list = before_unavailable(event)) renamed |= rename_marker(*list, from, to);
  return renamed;
}

void set_after_column(Event& event, std::string_view name, std::optional<std::string> text,
                      bool is_json) {
  if (!event.after) return;
  if (ColumnValue* c = find_column_mut(*event.after, name)) {
    c->text = std::move(text);
    c->is_json = is_json;
  } else {
    event.after->push_back(ColumnValue{std::string(name), std::move(text), is_json});
  }
  unlist(event.unavailable_columns, name);
}

std::optional<std::string> json_text(const boost::json::value& value) {
  if (value.is_null()) return std::nullopt;
  if (const auto* s = value.if_string()) return std::string(s->data(), s->size());
  return boost::json::serialize(value);
}

ColumnValue column_from_json(std::string name, const boost::json::value& value) {
  ColumnValue c;
  c.name = std::move(name);
  c.text = json_text(value);
  c.is_json = c.text.has_value() && !value.is_string();
  return c;
}

std::optional<boost::json::value> column_to_json(const ColumnValue& column) {
  if (!column.text) return boost::json::value(nullptr);
  if (!column.is_json) return boost::json::value(boost::json::string(*column.text));
  boost::system::error_code ec;
  auto value = boost::json::parse(*column.text, ec);
  if (ec) return std::nullopt;
  return value;
}

std::string qualified_table(const Event& event) {
  if (!event.schema || event.schema->empty()) return event.table;
  return *event.schema + "." + event.table;
}

}  // namespace cppcdc::transform_detail
