// unwrap, flatten, route, metadata_projection, key_shaping, field_mapping and outbox.

#include <algorithm>
#include <charconv>
#include <memory>

#include "core/json_write.hpp"
#include "cppcdc/transforms.hpp"
#include "transform/columns.hpp"
#include "transform/crypto.hpp"

namespace cppcdc {
namespace {

using namespace transform_detail;

Error bad_data(std::string_view stage, const Event& event, const std::string& what) {
  return Error::invalid_data("stage \"" + std::string(stage) + "\", table " +
                             qualified_table(event) + ": " + what);
}

Status check_column_name(std::string_view key, const std::string& name) {
  if (name.empty()) {
    return fail(Error::configuration("a column name is empty").context(std::string(key)));
  }
  return ok();
}

// The JSON object in column `name` of `row`; nullopt when the column is absent.
Result<std::optional<boost::json::object>> object_column(const Row& row, std::string_view name,
                                                         std::string_view stage,
                                                         const Event& event) {
  using Out = std::optional<boost::json::object>;
  const ColumnValue* c = find_column(row, name);
  if (c == nullptr) return Out();
  if (!c->text) return Out(boost::json::object());
  auto json = c->is_json ? column_to_json(*c) : std::nullopt;
  if (!json || !json->is_object()) {
    return fail(bad_data(stage, event,
                         "column \"" + std::string(name) + "\" does not hold a JSON object"));
  }
  return Out(std::move(json->as_object()));
}

// ---- unwrap ----

class UnwrapAction final : public TransformAction {
 public:
  explicit UnwrapAction(UnwrapConfig c) : config_(std::move(c)) {}
  std::string_view type() const noexcept override { return "unwrap"; }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    if (is_listed(event.unavailable_columns, config_.field)) {
      return fail(bad_data(stage, event,
                           "column \"" + config_.field +
                               "\" to unwrap is unavailable in this event (unchanged TOAST)"));
    }
    bool changed = false;
    if (event.after) {
      auto object = object_column(*event.after, config_.field, stage, event);
      if (!object) return fail(object.error());
      if (!*object) {
        return fail(bad_data(stage, event, "column \"" + config_.field + "\" to unwrap is absent"));
      }
      *event.after = to_row(**object);
      event.unavailable_columns.clear();
      changed = true;
    }
    auto& before = before_variant(event);
    if (auto* full = std::get_if<BeforeFull>(&before);
        full != nullptr && find_column(full->row, config_.field) != nullptr) {
      auto object = object_column(full->row, config_.field, stage, event);
      if (!object) return fail(object.error());
      before = BeforeFull{to_row(**object), {}};
      changed = true;
    } else if (full != nullptr) {
      before = BeforeUnavailable{};
    }
    // A key-only before-image (a delete, or an update that changed the key, under the default
    // replica identity) has no object to unwrap and stays: its key columns are what says which
    // row went. So a delete keeps its key even with drop_primary_key, as nothing else in it
    // would identify the row.
    const bool key_only_delete = !event.after && event.before.is_key_only();
    if (changed) event.shape = nullptr;
    if (config_.drop_primary_key && !key_only_delete) event.primary_key.reset();
    return ActionResult::kKeep;
  }

 private:
  static Row to_row(const boost::json::object& object) {
    Row row;
    row.reserve(object.size());
    for (const auto& member : object) {
      row.push_back(column_from_json(std::string(member.key()), member.value()));
    }
    return row;
  }
  UnwrapConfig config_;
};

// ---- flatten ----

class FlattenAction final : public TransformAction {
 public:
  explicit FlattenAction(FlattenConfig c) : config_(std::move(c)) {}
  std::string_view type() const noexcept override { return "flatten"; }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    bool changed = false;
    if (event.after) {
      auto st = flatten(*event.after, event, stage, changed);
      if (!st) return fail(st.error());
    }
    if (auto* full = std::get_if<BeforeFull>(&before_variant(event))) {
      auto st = flatten(full->row, event, stage, changed);
      if (!st) return fail(st.error());
    }
    if (changed) event.shape = nullptr;
    return ActionResult::kKeep;
  }

 private:
  // An unavailable (unchanged TOAST) field stays listed and is left alone: its members are
  // not known, and the marker tells the sink to keep what it has.
  Status flatten(Row& row, const Event& event, std::string_view stage, bool& changed) {
    auto object = object_column(row, config_.field, stage, event);
    if (!object) return fail(object.error());
    if (!*object) return ok();
    erase_column(row, config_.field);
    for (const auto& member : **object) {
      std::string name = config_.prefix + std::string(member.key());
      if (find_column(row, name) != nullptr || is_listed(event.unavailable_columns, name)) {
        return fail(bad_data(stage, event,
                             "flattening \"" + config_.field + "\" gives column \"" + name +
                                 "\", which the row already has (set a prefix)"));
      }
      row.push_back(column_from_json(std::move(name), member.value()));
    }
    changed = true;
    return ok();
  }
  FlattenConfig config_;
};

// ---- route ----

class RouteAction final : public TransformAction {
 public:
  explicit RouteAction(RouteConfig c) : config_(std::move(c)) {
    if (config_.schema) rule_ += "schema -> " + *config_.schema;
    if (config_.table) rule_ += (rule_.empty() ? "" : ", ") + ("table -> " + *config_.table);
  }
  std::string_view type() const noexcept override { return "route"; }

  Result<ActionResult> apply(Event& event, std::string_view /*stage*/) override {
    counter_.evaluated();
    if (config_.schema) event.schema = *config_.schema;
    if (config_.table) event.table = *config_.table;
    counter_.hit();
    return ActionResult::kKeep;
  }

  void collect_rules(std::string_view stage, std::vector<TransformRuleStats>& out) const override {
    TransformRuleStats s;
    s.transform = std::string(stage);
    s.action = "route";
    s.kind = "route";
    s.rule = rule_;
    s.hits = counter_.hits.load(std::memory_order_relaxed);
    s.evaluations = counter_.evaluations.load(std::memory_order_relaxed);
    s.unmatched = s.hits == 0;
    s.consequence =
        "events are going to the default destination, not the configured one (the stage's "
        "when matched no event)";
    out.push_back(std::move(s));
  }

 private:
  RouteConfig config_;
  std::string rule_;
  RuleCounter counter_;
};

// ---- metadata_projection ----

// The column an action adds to `row` must be new: overwriting a column of the source row
// would ship the metadata (or key) in its place without a word.
Status target_is_free(const Event& event, const Row& row, const std::string& target,
                      std::string_view stage) {
  if (find_column(row, target) == nullptr && !is_listed(event.unavailable_columns, target)) {
    return ok();
  }
  return fail(bad_data(stage, event,
                       "target_field \"" + target +
                           "\" names a column the row already has; choose another target_field"));
}

// A JSON string; the escaping path (and its scratch room) only when some byte needs it.
void append_string(std::string& out, std::string_view s) {
  if (detail::json_needs_escape(s)) {
    detail::append_json_string(out, s);
    return;
  }
  out += '"';
  out.append(s);
  out += '"';
}

void append_number(std::string& out, std::int64_t v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

enum class MetaField { kSchema, kTable, kOperation, kSourceName, kSourceTimestamp, kOffset, kTs,
                       kTxId, kSnapshot };

constexpr std::pair<std::string_view, MetaField> kMetaFields[] = {
    {"schema", MetaField::kSchema},
    {"table", MetaField::kTable},
    {"operation", MetaField::kOperation},
    {"source_name", MetaField::kSourceName},
    {"source_timestamp", MetaField::kSourceTimestamp},
    {"offset", MetaField::kOffset},
    {"ts", MetaField::kTs},
    {"tx_id", MetaField::kTxId},
    {"snapshot", MetaField::kSnapshot},
};

class MetadataProjectionAction final : public TransformAction {
 public:
  std::string_view type() const noexcept override { return "metadata_projection"; }

  static Result<std::unique_ptr<TransformAction>> create(MetadataProjectionConfig config) {
    CPPCDC_TRY(check_column_name("target_field", config.target_field));
    if (config.fields.empty()) {
      return fail(Error::configuration("name at least one metadata field").context("fields"));
    }
    auto a = std::make_unique<MetadataProjectionAction>();
    a->target_ = std::move(config.target_field);
    for (const auto& f : config.fields) {
      const auto* it = std::find_if(std::begin(kMetaFields), std::end(kMetaFields),
                                    [&](const auto& p) { return p.first == f; });
      if (it == std::end(kMetaFields)) {
        return fail(Error::configuration(
                        "unknown metadata field \"" + f +
                        "\"; expected schema, table, operation, source_name, source_timestamp, "
                        "offset, ts, tx_id or snapshot")
                        .context("fields"));
      }
      // '{' or ',' and the quoted name, which needs no escaping, built once.
      std::string prefix(a->fields_.empty() ? "{\"" : ",\"");
      prefix.append(it->first);
      prefix += "\":";
      a->reserve_ += prefix.size() + 12;
      a->fields_.emplace_back(std::move(prefix), it->second);
    }
    a->reserve_ += 64;  // the strings (schema, table, offset) are usually short
    return std::unique_ptr<TransformAction>(std::move(a));
  }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    if (!event.after) return ActionResult::kKeep;
    CPPCDC_TRY(target_is_free(event, *event.after, target_, stage));
    std::string json;
    json.reserve(reserve_);
    for (const auto& [prefix, field] : fields_) {
      json.append(prefix);
      switch (field) {
        case MetaField::kSchema:
          if (event.schema) {
            append_string(json, *event.schema);
          } else {
            json += "null";
          }
          break;
        case MetaField::kTable: append_string(json, event.table); break;
        case MetaField::kOperation: append_string(json, to_string(event.op)); break;
        case MetaField::kSourceName: append_string(json, event.source.source_name); break;
        case MetaField::kSourceTimestamp: append_number(json, event.source.timestamp); break;
        case MetaField::kOffset: append_string(json, event.source.offset); break;
        case MetaField::kTs: append_number(json, event.ts); break;
        case MetaField::kTxId:
          if (event.transaction) {
            append_number(json, static_cast<std::int64_t>(event.transaction->tx_id));
          } else {
            json += "null";
          }
          break;
        case MetaField::kSnapshot: json += event.snapshot ? "true" : "false"; break;
      }
    }
    json += '}';
    event.shape = nullptr;
    set_after_column(event, target_, std::move(json), /*is_json=*/true);
    return ActionResult::kKeep;
  }

 private:
  std::string target_;
  std::vector<std::pair<std::string, MetaField>> fields_;  // (prefix, field)
  std::size_t reserve_ = 0;                                // room the object usually needs
};

// ---- key_shaping ----

class KeyShapingAction final : public TransformAction {
 public:
  explicit KeyShapingAction(KeyShapingConfig c) : config_(std::move(c)) {}
  std::string_view type() const noexcept override { return "key_shaping"; }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    if (!event.after) return delete_key(event, stage);
    CPPCDC_TRY(target_is_free(event, *event.after, config_.target_field, stage));
    std::string value;
    if (config_.mode == KeyMode::kPrimaryKey) {
      auto key = event.primary_key_values();
      if (!key) return ActionResult::kKeep;
      value = key_object(*key);
    } else {
      if (!sha_.start()) return fail(Error::internal("SHA-256 failed in OpenSSL"));
      const auto part = [this](std::string_view s) {
        (void)sha_.update(s);
        (void)sha_.update(std::string_view("\0", 1));
      };
      part(event.schema ? *event.schema : std::string_view("\x01", 1));
      part(event.table);
      part(to_string(event.op));
      part(event.source.offset);
      part(event.transaction ? std::to_string(event.transaction->tx_id) + "/" +
                                   std::to_string(event.transaction->event_index)
                             : std::string("\x01"));
      const auto row = [&](const Row* r) {
        if (r == nullptr) {
          part("\x02");
          return;
        }
        for (const auto& c : *r) {
          part(c.name);
          part(c.text ? std::string_view(*c.text) : std::string_view("\x01", 1));
        }
        part("\x03");
      };
      row(event.before.row());
      row(&*event.after);
      if (!sha_.finish_hex(value)) return fail(Error::internal("SHA-256 failed in OpenSSL"));
    }
    event.shape = nullptr;
    set_after_column(event, config_.target_field, std::move(value),
                     config_.mode == KeyMode::kPrimaryKey);
    if (config_.set_primary_key) {
      event.primary_key = std::vector<std::string>{config_.target_field};
      event.shape = nullptr;
    }
    return ActionResult::kKeep;
  }

 private:
  static std::string key_object(const std::vector<ColumnValue>& key) {
    std::string value = "{";
    for (std::size_t i = 0; i < key.size(); ++i) {
      const ColumnValue& c = key[i];
      if (i > 0) value += ',';
      detail::append_json_string(value, c.name);
      value += ':';
      if (!c.text) {
        value += "null";
      } else if (c.is_json) {
        value += *c.text;
      } else {
        detail::append_json_string(value, *c.text);
      }
    }
    value += '}';
    return value;
  }

  // A delete has no after image: in primary_key mode its before-image (key-only under the
  // default replica identity) gets the same key column its row's inserts and updates got, so
  // that with set_primary_key the delete is keyed like them. A fingerprint names one event,
  // so a delete has none.
  Result<ActionResult> delete_key(Event& event, std::string_view stage) {
    if (config_.mode != KeyMode::kPrimaryKey) return ActionResult::kKeep;
    Row* before = before_row(event);
    if (before == nullptr) return ActionResult::kKeep;
    auto key = event.primary_key_values();
    if (!key) return ActionResult::kKeep;
    CPPCDC_TRY(target_is_free(event, *before, config_.target_field, stage));
    before->push_back(ColumnValue{config_.target_field, key_object(*key), true});
    if (config_.set_primary_key) event.primary_key = std::vector<std::string>{config_.target_field};
    event.shape = nullptr;
    return ActionResult::kKeep;
  }

  KeyShapingConfig config_;
  Sha256 sha_;
};

// ---- field_mapping ----

class FieldMappingAction final : public TransformAction {
 public:
  std::string_view type() const noexcept override { return "field_mapping"; }

  static Result<std::unique_ptr<TransformAction>> create(FieldMappingConfig config) {
    auto a = std::make_unique<FieldMappingAction>();
    const auto top = [](std::string_view key, const std::string& name) -> Status {
      auto path = parse_field_path(name);
      if (!path) return fail(path.error().context(std::string(key)));
      if (path->segments.size() != 1) {
        return fail(Error::configuration("\"" + name + "\" must name a top-level column (no dots)")
                        .context(std::string(key)));
      }
      return ok();
    };
    for (const auto& [from, to] : config.copy) {
      CPPCDC_TRY(top("copy", from));
      CPPCDC_TRY(top("copy", to));
    }
    for (const auto& [from, to] : config.rename) {
      CPPCDC_TRY(top("rename", from));
      CPPCDC_TRY(top("rename", to));
    }
    for (const auto& [path, value] : config.set) {
      auto p = parse_field_path(path);
      if (!p) return fail(p.error().context("set"));
      if (p->has_wildcard()) {
        return fail(Error::configuration("\"" + path + "\": a wildcard cannot be set").context("set"));
      }
      a->set_.push_back({std::move(*p), value});
    }
    for (const auto& path : config.remove) {
      auto p = parse_field_path(path);
      if (!p) return fail(p.error().context("remove"));
      a->remove_.push_back(std::move(*p));
    }
    a->copy_ = std::move(config.copy);
    a->rename_ = std::move(config.rename);
    a->strict_ = config.strict;
    return std::unique_ptr<TransformAction>(std::move(a));
  }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    bool changed = false;
    // A delete under the default replica identity carries only its key: there is no row to
    // map, so strict has nothing to hold it to (the key columns stay as they are).
    const bool has_row = event.after.has_value() || event.before.is_full();
    const auto absent = [&](std::string_view what, const std::string& name) -> Status {
      if (!strict_ || !has_row) return ok();
      return fail(bad_data(stage, event,
                           std::string(what) + " names column \"" + name +
                               "\", which this event does not carry (strict)"));
    };
    const auto taken = [&](std::string_view what, const std::string& name) -> Status {
      if (!carries_column(event, name)) return ok();
      return fail(bad_data(stage, event,
                           std::string(what) + " onto column \"" + name +
                               "\", which the event already carries"));
    };
    for (const auto& entry : copy_) {
      // Named references, not a structured binding: lambdas below capture them (clang 14).
      const std::string& from = entry.first;
      const std::string& to = entry.second;
      if (!carries_column(event, from)) {
        CPPCDC_TRY(absent("copy", from));
        continue;
      }
      CPPCDC_TRY(taken("copy", to));
      const auto copy_into = [&](Row& row) {
        if (const ColumnValue* c = find_column(row, from)) {
          ColumnValue copy = *c;
          copy.name = to;
          row.push_back(std::move(copy));
        }
      };
      if (event.after) copy_into(*event.after);
      if (is_listed(event.unavailable_columns, from)) event.unavailable_columns.push_back(to);
      if (Row* row = before_row(event)) copy_into(*row);
      if (auto* list = before_unavailable(event); list != nullptr && is_listed(*list, from)) {
        list->push_back(to);
      }
      changed = true;
    }
    for (const auto& [from, to] : rename_) {
      if (!carries_column(event, from)) {
        CPPCDC_TRY(absent("rename", from));
        continue;
      }
      CPPCDC_TRY(taken("rename", to));
      changed |= rename_column(event, from, to);
    }
    for (const auto& entry : set_) {
      const FieldPath& path = entry.first;
      const std::optional<std::string>& value = entry.second;
      if (!event.after) continue;
      if (path.segments.size() == 1) {
        if (find_column(*event.after, path.column()) == nullptr) changed = true;
        set_after_column(event, path.column(), value, false);
        continue;
      }
      ColumnValue* c = find_column_mut(*event.after, path.column());
      if (c == nullptr) {
        CPPCDC_TRY(absent("set", path.column()));
        continue;
      }
      if (!c->text || !c->is_json) {
        if (strict_) {
          return fail(bad_data(stage, event,
                               "set \"" + path.text + "\": column \"" + path.column() +
                                   "\" is " + (c->text ? "not JSON" : "NULL") +
                                   " in this event, so it has no member to set (strict)"));
        }
        continue;
      }
      auto json = column_to_json(*c);
      if (!json) continue;
      const std::span<const std::string> segments(path.segments);
      for_each_json_match(*json, segments.subspan(1, segments.size() - 2),
                          [&](boost::json::value& parent) {
                            if (auto* object = parent.if_object()) {
                              if (value) {
                                (*object)[path.segments.back()] = boost::json::string(*value);
                              } else {
                                (*object)[path.segments.back()] = nullptr;
                              }
                            }
                          });
      c->text = boost::json::serialize(*json);
    }
    for (const auto& path : remove_) {
      if (path.segments.size() == 1) {
        if (!remove_column(event, path.column())) {
          CPPCDC_TRY(absent("remove", path.column()));
        } else {
          changed = true;
        }
        continue;
      }
      if (!carries_column(event, path.column())) {
        CPPCDC_TRY(absent("remove", path.column()));
        continue;
      }
      for (Row* row : {event.after ? &*event.after : nullptr, before_row(event)}) {
        if (row == nullptr) continue;
        ColumnValue* c = find_column_mut(*row, path.column());
        if (c != nullptr && c->text && !c->is_json && strict_) {
          return fail(bad_data(stage, event,
                               "remove \"" + path.text + "\": column \"" + path.column() +
                                   "\" is not JSON in this event, so it has no member to "
                                   "remove (strict)"));
        }
        if (c == nullptr || !c->text || !c->is_json) continue;
        auto json = column_to_json(*c);
        if (!json) continue;
        const std::span<const std::string> segments(path.segments);
        for_each_json_match(*json, segments.subspan(1, segments.size() - 2),
                            [&](boost::json::value& parent) {
                              if (auto* object = parent.if_object()) {
                                object->erase(path.segments.back());
                              }
                            });
        c->text = boost::json::serialize(*json);
      }
    }
    if (changed) event.shape = nullptr;
    return ActionResult::kKeep;
  }

 private:
  std::vector<std::pair<std::string, std::string>> copy_;
  std::vector<std::pair<std::string, std::string>> rename_;
  std::vector<std::pair<FieldPath, std::optional<std::string>>> set_;
  std::vector<FieldPath> remove_;
  bool strict_ = false;
};

// ---- outbox ----

class OutboxAction final : public TransformAction {
 public:
  explicit OutboxAction(OutboxConfig c) : config_(std::move(c)) {}
  std::string_view type() const noexcept override { return "outbox"; }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    if (event.op != Operation::kInsert && event.op != Operation::kRead) {
      return ActionResult::kDrop;
    }
    if (!event.after) return ActionResult::kDrop;
    const auto column = [&](const std::string& name) -> Result<const ColumnValue*> {
      const ColumnValue* c = find_column(*event.after, name);
      if (c == nullptr) {
        return fail(bad_data(stage, event,
                             "the outbox row has no column \"" + name +
                                 "\" (set the outbox action's column names)"));
      }
      return c;
    };
    auto type_col = column(config_.aggregate_type_column);
    if (!type_col) return fail(type_col.error());
    if (!(*type_col)->text || (*type_col)->text->empty()) {
      return fail(bad_data(stage, event,
                           "the outbox row's \"" + config_.aggregate_type_column +
                               "\" is NULL or empty; it names the table the event is routed to"));
    }
    Row out;
    for (const std::string* name :
         {&config_.id_column, &config_.aggregate_id_column, &config_.type_column}) {
      auto c = column(*name);
      if (!c) return fail(c.error());
      out.push_back(**c);
    }
    auto payload = column(config_.payload_column);
    if (!payload) return fail(payload.error());
    if (config_.expand_payload) {
      auto json = column_to_json(**payload);
      if (!json || !(json->is_object() || json->is_null())) {
        return fail(bad_data(stage, event,
                             "expand_payload needs a JSON object in \"" + config_.payload_column +
                                 "\""));
      }
      if (json->is_object()) {
        for (const auto& member : json->as_object()) {
          if (find_column(out, member.key()) != nullptr) {
            return fail(bad_data(stage, event,
                                 "the payload member \"" + std::string(member.key()) +
                                     "\" has the name of an outbox column"));
          }
          out.push_back(column_from_json(std::string(member.key()), member.value()));
        }
      }
    } else {
      out.push_back(**payload);
    }
    event.table = config_.table_prefix + *(*type_col)->text;
    event.after = std::move(out);
    event.unavailable_columns.clear();
    event.before = BeforeImage();
    event.primary_key = std::vector<std::string>{config_.aggregate_id_column};
    event.shape = nullptr;
    return ActionResult::kKeep;
  }

 private:
  OutboxConfig config_;
};

}  // namespace

Result<std::unique_ptr<TransformAction>> make_unwrap(UnwrapConfig config) {
  CPPCDC_TRY(check_column_name("field", config.field));
  return std::unique_ptr<TransformAction>(std::make_unique<UnwrapAction>(std::move(config)));
}

Result<std::unique_ptr<TransformAction>> make_flatten(FlattenConfig config) {
  CPPCDC_TRY(check_column_name("field", config.field));
  return std::unique_ptr<TransformAction>(std::make_unique<FlattenAction>(std::move(config)));
}

Result<std::unique_ptr<TransformAction>> make_route(RouteConfig config) {
  if (!config.schema && !config.table) {
    return fail(Error::configuration("set schema, table or both (the names events get)"));
  }
  if (config.schema && config.schema->empty()) {
    return fail(Error::configuration("an empty name").context("schema"));
  }
  if (config.table && config.table->empty()) {
    return fail(Error::configuration("an empty name").context("table"));
  }
  return std::unique_ptr<TransformAction>(std::make_unique<RouteAction>(std::move(config)));
}

Result<std::unique_ptr<TransformAction>> make_metadata_projection(
    MetadataProjectionConfig config) {
  return MetadataProjectionAction::create(std::move(config));
}

Result<std::unique_ptr<TransformAction>> make_key_shaping(KeyShapingConfig config) {
  CPPCDC_TRY(check_column_name("target_field", config.target_field));
  return std::unique_ptr<TransformAction>(std::make_unique<KeyShapingAction>(std::move(config)));
}

Result<std::unique_ptr<TransformAction>> make_field_mapping(FieldMappingConfig config) {
  return FieldMappingAction::create(std::move(config));
}

Result<std::unique_ptr<TransformAction>> make_outbox(OutboxConfig config) {
  for (const auto& [key, name] :
       {std::pair{"id_column", &config.id_column},
        std::pair{"aggregate_type_column", &config.aggregate_type_column},
        std::pair{"aggregate_id_column", &config.aggregate_id_column},
        std::pair{"type_column", &config.type_column},
        std::pair{"payload_column", &config.payload_column}}) {
    CPPCDC_TRY(check_column_name(key, *name));
  }
  return std::unique_ptr<TransformAction>(std::make_unique<OutboxAction>(std::move(config)));
}

}  // namespace cppcdc
