// parse_transform_stages: stages from a configuration tree (the server hands over
// [[pipeline.transforms]] of cdc.toml). Every error names where, the stage, the action and the
// key.

#include <algorithm>
#include <cstdlib>

#include "core/text_util.hpp"
#include "cppcdc/transforms.hpp"

namespace cppcdc {
namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// A table of the tree, read key by key; keys nobody read are refused at the end.
class Reader {
 public:
  Reader(const ConfigNode& node, std::string label) : node_(node), label_(std::move(label)) {}

  const std::string& label() const noexcept { return label_; }
  const ConfigNode& node() const noexcept { return node_; }

  Error error_at(const ConfigNode* at, std::string_view key, std::string_view what) const {
    const std::string& where = at != nullptr && !at->where.empty() ? at->where : node_.where;
    return Error::configuration(where + ": " + label_ + (key.empty() ? "" : ": ") +
                                std::string(key) + ": " + std::string(what));
  }
  Error error(std::string_view key, std::string_view what) const {
    return error_at(node_.find(key), key, what);
  }

  const ConfigNode* take(std::string_view key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
    return node_.find(key);
  }

  Result<std::optional<std::string>> string(std::string_view key) {
    const ConfigNode* n = take(key);
    if (n == nullptr) return std::optional<std::string>();
    if (const auto* s = n->string()) return std::optional<std::string>(*s);
    return fail(wrong(key, *n, "a string"));
  }

  Result<std::optional<bool>> boolean(std::string_view key) {
    const ConfigNode* n = take(key);
    if (n == nullptr) return std::optional<bool>();
    if (const auto* b = n->bool_value()) return std::optional<bool>(*b);
    return fail(wrong(key, *n, "a boolean"));
  }

  Result<std::optional<std::vector<std::string>>> strings(std::string_view key) {
    using Out = std::optional<std::vector<std::string>>;
    const ConfigNode* n = take(key);
    if (n == nullptr) return Out();
    const auto* array = n->array();
    if (array == nullptr) return fail(wrong(key, *n, "an array of strings"));
    std::vector<std::string> out;
    for (const auto& item : *array) {
      const auto* s = item.string();
      if (s == nullptr) return fail(error_at(&item, key, "expected a string, found " +
                                                             std::string(item.type_name())));
      out.push_back(*s);
    }
    return Out(std::move(out));
  }

  Result<std::optional<std::vector<Operation>>> ops(std::string_view key) {
    using Out = std::optional<std::vector<Operation>>;
    auto names = strings(key);
    if (!names) return fail(names.error());
    if (!*names) return Out();
    std::vector<Operation> out;
    const auto* array = node_.find(key)->array();
    for (std::size_t i = 0; i < (*names)->size(); ++i) {
      auto op = parse_operation((**names)[i]);
      if (!op) {
        return fail(error_at(&(*array)[i], key,
                             "unknown operation " + quoted((**names)[i]) +
                                 "; expected insert, update, delete, read, schema_change, "
                                 "truncate or message"));
      }
      out.push_back(*op);
    }
    return Out(std::move(out));
  }

  // A table of strings, in the order written.
  Result<std::vector<std::pair<std::string, std::string>>> string_table(std::string_view key) {
    std::vector<std::pair<std::string, std::string>> out;
    const ConfigNode* n = take(key);
    if (n == nullptr) return out;
    const auto* table = n->table();
    if (table == nullptr) return fail(wrong(key, *n, "a table"));
    for (const auto& [k, v] : *table) {
      const auto* s = v.string();
      if (s == nullptr) {
        return fail(error_at(&v, std::string(key) + "." + k,
                             "expected a string, found " + std::string(v.type_name())));
      }
      out.emplace_back(k, *s);
    }
    return out;
  }

  Status reject_unknown() const {
    const auto* table = node_.table();
    if (table == nullptr) return ok();
    for (const auto& [k, v] : *table) {
      if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
      std::string expected;
      for (const auto& name : known_) expected += (expected.empty() ? "" : ", ") + name;
      const std::string closest = detail::closest_name(k, known_);
      return fail(error_at(&v, k,
                           "unknown key" +
                               (closest.empty() ? std::string()
                                                : " (did you mean " + closest + "?)") +
                               "; expected one of: " + expected));
    }
    return ok();
  }

  Error wrong(std::string_view key, const ConfigNode& n, std::string_view expected) const {
    return error_at(&n, key,
                    "expected " + std::string(expected) + ", found " + std::string(n.type_name()));
  }

 private:
  const ConfigNode& node_;
  std::string label_;
  std::vector<std::string> known_;
};

#define CPPCDC_READ(target, expr)                      \
  do {                                                 \
    auto read_value_ = (expr);                         \
    if (!read_value_) return fail(read_value_.error()); \
    if (read_value_->has_value()) target = **read_value_; \
  } while (false)

// The node an action's error names (its outermost context: "rules.email", "filters[1].value",
// "include_tables"), or nullptr.
const ConfigNode* lookup(const ConfigNode& table, std::string_view key) {
  if (key.rfind("rules.", 0) == 0) {
    const ConfigNode* rules = table.find("rules");
    return rules != nullptr ? rules->find(key.substr(6)) : nullptr;
  }
  const ConfigNode* node = &table;
  std::size_t i = 0;
  while (i < key.size() && node != nullptr) {
    if (key[i] == '[') {
      const std::size_t close = key.find(']', i);
      if (close == std::string_view::npos) return node;
      const std::size_t index = std::strtoul(std::string(key.substr(i + 1, close - i - 1)).c_str(),
                                             nullptr, 10);
      const auto* array = node->array();
      if (array == nullptr || index >= array->size()) return node;
      node = &(*array)[index];
      i = close + 1;
      continue;
    }
    if (key[i] == '.') ++i;
    const std::size_t end = key.find_first_of(".[", i);
    const std::string_view name = key.substr(i, end == std::string_view::npos ? end : end - i);
    const ConfigNode* next = node->find(name);
    if (next == nullptr) return node;
    node = next;
    i = end == std::string_view::npos ? key.size() : end;
  }
  return node;
}

// An error from make_*: located at the key its outermost context names.
Error locate(const Reader& action, const Error& e) {
  if (e.chain().empty()) return action.error_at(nullptr, "", e.message());
  const std::string& key = e.chain().front();
  std::string text = e.message();
  for (std::size_t i = e.chain().size(); i-- > 1;) text = e.chain()[i] + ": " + text;
  return action.error_at(lookup(action.node(), key), key, text);
}

Result<std::string> secret_from_env(Reader& reader, const ConfigNode& spec, const std::string& key) {
  Reader inner(spec, reader.label());
  std::optional<std::string> name;
  CPPCDC_READ(name, inner.string("secret_env"));
  if (!name || name->empty()) {
    return fail(reader.error_at(&spec, key,
                                "expected { secret_env = \"VARIABLE\" } naming the environment "
                                "variable that holds the secret"));
  }
  if (auto st = inner.reject_unknown(); !st) return fail(st.error());
  const char* value = std::getenv(name->c_str());
  if (value == nullptr || *value == '\0') {
    return fail(reader.error_at(spec.find("secret_env"), key,
                                "the environment variable " + *name +
                                    " is not set or empty; it must hold the secret"));
  }
  return std::string(value);
}

Result<MaskRule> read_mask_rule(Reader& reader, const ConfigNode& node, const std::string& key) {
  if (const auto* s = node.string()) {
    if (*s == "null") return MaskRule::null();
    if (*s == "unsalted_sha256") return MaskRule::unsalted_sha256();
    if (*s == "passthrough") return MaskRule::passthrough();
    return fail(reader.error_at(
        &node, key,
        "unknown rule " + quoted(*s) +
            "; expected \"null\", \"unsalted_sha256\", \"passthrough\", { redact = \"marker\" }, "
            "{ truncate = N }, { hmac_sha256 = { secret_env = \"VAR\" } }, "
            "{ encrypt = { secret_env = \"VAR\" } } or { decrypt = { secret_env = \"VAR\" } }"));
  }
  const auto* table = node.table();
  if (table == nullptr || table->size() != 1) {
    return fail(reader.error_at(&node, key,
                                "expected a rule name or a table with one rule, found " +
                                    std::string(node.type_name())));
  }
  const auto& [name, value] = table->front();
  if (name == "redact") {
    if (const auto* marker = value.string()) return MaskRule::redact(*marker);
    return fail(reader.wrong(key + ".redact", value, "a string (the marker)"));
  }
  if (name == "truncate") {
    const auto* n = value.int_value();
    if (n == nullptr) return fail(reader.wrong(key + ".truncate", value, "an integer"));
    if (*n < 0) {
      return fail(reader.error_at(&value, key + ".truncate", "expected at least 1, found " +
                                                                 std::to_string(*n)));
    }
    return MaskRule::truncate(static_cast<std::size_t>(*n));
  }
  if (name == "hmac_sha256" || name == "encrypt" || name == "decrypt") {
    auto secret = secret_from_env(reader, value, key + "." + name);
    if (!secret) return fail(secret.error());
    if (name == "hmac_sha256") return MaskRule::hmac_sha256(std::move(*secret));
    if (name == "encrypt") return MaskRule::encrypt(std::move(*secret));
    return MaskRule::decrypt(std::move(*secret));
  }
  return fail(reader.error_at(&value, key,
                              "unknown rule " + quoted(name) +
                                  "; expected redact, truncate, hmac_sha256, encrypt or decrypt"));
}

Result<std::unique_ptr<TransformAction>> read_action(Reader& r, const std::string& type) {
  if (type == "filter") {
    FilterConfig c;
    CPPCDC_READ(c.include_ops, r.ops("include_ops"));
    CPPCDC_READ(c.exclude_ops, r.ops("exclude_ops"));
    CPPCDC_READ(c.include_tables, r.strings("include_tables"));
    CPPCDC_READ(c.exclude_tables, r.strings("exclude_tables"));
    CPPCDC_READ(c.include_schemas, r.strings("include_schemas"));
    CPPCDC_READ(c.exclude_schemas, r.strings("exclude_schemas"));
    std::optional<std::string> mode;
    CPPCDC_READ(mode, r.string("filter_mode"));
    if (mode && *mode != "all" && *mode != "any") {
      return fail(r.error("filter_mode", "expected \"all\" or \"any\", found " + quoted(*mode)));
    }
    c.mode = mode && *mode == "any" ? FilterMode::kAny : FilterMode::kAll;
    std::optional<std::vector<std::string>> include_columns;
    CPPCDC_READ(include_columns, r.strings("include_columns"));
    c.include_columns = std::move(include_columns);
    CPPCDC_READ(c.exclude_columns, r.strings("exclude_columns"));
    if (const ConfigNode* filters = r.take("filters")) {
      const auto* array = filters->array();
      if (array == nullptr) return fail(r.wrong("filters", *filters, "an array of tables"));
      for (std::size_t i = 0; i < array->size(); ++i) {
        const ConfigNode& item = (*array)[i];
        const std::string key = "filters[" + std::to_string(i) + "]";
        if (item.table() == nullptr) return fail(r.wrong(key, item, "a table"));
        Reader f(item, r.label() + ": " + key);
        FilterRule rule;
        std::optional<std::string> field;
        std::optional<std::string> op;
        CPPCDC_READ(field, f.string("field"));
        CPPCDC_READ(op, f.string("op"));
        if (!field) return fail(f.error_at(&item, "field", "required (\"after.<column>\")"));
        if (!op) return fail(f.error_at(&item, "op", "required (eq, ne, contains, regex, lt, le, gt, ge)"));
        auto parsed = parse_filter_operator(*op);
        if (!parsed) return fail(f.error("op", parsed.error().message()));
        const ConfigNode* value = f.take("value");
        if (value == nullptr) return fail(f.error_at(&item, "value", "required"));
        if (const auto* s = value->string()) {
          rule.value = *s;
        } else if (const auto* n = value->int_value()) {
          rule.value = std::to_string(*n);
        } else if (const auto* d = value->float_value()) {
          rule.value = std::to_string(*d);
        } else {
          return fail(f.wrong("value", *value, "a string or a number"));
        }
        CPPCDC_TRY(f.reject_unknown());
        rule.field = std::move(*field);
        rule.op = *parsed;
        c.filters.push_back(std::move(rule));
      }
    }
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_filter(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "unwrap" || type == "flatten") {
    std::optional<std::string> field;
    CPPCDC_READ(field, r.string("field"));
    if (!field) return fail(r.error_at(nullptr, "field", "required (the JSON column)"));
    Result<std::unique_ptr<TransformAction>> a;
    if (type == "unwrap") {
      UnwrapConfig c{*field, false};
      CPPCDC_READ(c.drop_primary_key, r.boolean("drop_primary_key"));
      CPPCDC_TRY(r.reject_unknown());
      a = make_unwrap(std::move(c));
    } else {
      FlattenConfig c{*field, {}};
      CPPCDC_READ(c.prefix, r.string("prefix"));
      CPPCDC_TRY(r.reject_unknown());
      a = make_flatten(std::move(c));
    }
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "route") {
    RouteConfig c;
    CPPCDC_READ(c.schema, r.string("schema"));
    CPPCDC_READ(c.table, r.string("table"));
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_route(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "metadata_projection") {
    MetadataProjectionConfig c;
    CPPCDC_READ(c.target_field, r.string("target_field"));
    CPPCDC_READ(c.fields, r.strings("fields"));
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_metadata_projection(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "key_shaping") {
    KeyShapingConfig c;
    CPPCDC_READ(c.target_field, r.string("target_field"));
    std::optional<std::string> mode;
    CPPCDC_READ(mode, r.string("mode"));
    if (mode && *mode != "primary_key" && *mode != "fingerprint") {
      return fail(
          r.error("mode", "expected \"primary_key\" or \"fingerprint\", found " + quoted(*mode)));
    }
    c.mode = mode && *mode == "fingerprint" ? KeyMode::kFingerprint : KeyMode::kPrimaryKey;
    CPPCDC_READ(c.set_primary_key, r.boolean("set_primary_key"));
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_key_shaping(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "mask") {
    MaskConfig c;
    const ConfigNode* rules = r.take("rules");
    if (rules == nullptr) {
      return fail(r.error_at(nullptr, "rules", "required (a table of path = rule)"));
    }
    const auto* table = rules->table();
    if (table == nullptr) return fail(r.wrong("rules", *rules, "a table of path = rule"));
    for (const auto& [path, node] : *table) {
      auto rule = read_mask_rule(r, node, "rules." + path);
      if (!rule) return fail(rule.error());
      c.rules.emplace_back(path, std::move(*rule));
    }
    if (const ConfigNode* def = r.take("default_rule")) {
      auto rule = read_mask_rule(r, *def, "default_rule");
      if (!rule) return fail(rule.error());
      c.default_rule = std::move(*rule);
    }
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_mask(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "field_mapping") {
    FieldMappingConfig c;
    auto copy = r.string_table("copy");
    if (!copy) return fail(copy.error());
    c.copy = std::move(*copy);
    auto rename = r.string_table("rename");
    if (!rename) return fail(rename.error());
    c.rename = std::move(*rename);
    auto set = r.string_table("set");
    if (!set) return fail(set.error());
    for (auto& [k, v] : *set) c.set.emplace_back(k, std::move(v));
    std::vector<std::string> set_null;
    CPPCDC_READ(set_null, r.strings("set_null"));
    for (auto& k : set_null) c.set.emplace_back(k, std::nullopt);
    CPPCDC_READ(c.remove, r.strings("remove"));
    CPPCDC_READ(c.strict, r.boolean("strict"));
    CPPCDC_TRY(r.reject_unknown());
    if (c.copy.empty() && c.rename.empty() && c.set.empty() && c.remove.empty()) {
      return fail(r.error_at(nullptr, "",
                             "field_mapping does nothing; give copy, rename, set, set_null or "
                             "remove"));
    }
    auto a = make_field_mapping(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  if (type == "outbox") {
    OutboxConfig c;
    CPPCDC_READ(c.id_column, r.string("id_column"));
    CPPCDC_READ(c.aggregate_type_column, r.string("aggregate_type_column"));
    CPPCDC_READ(c.aggregate_id_column, r.string("aggregate_id_column"));
    CPPCDC_READ(c.type_column, r.string("type_column"));
    CPPCDC_READ(c.payload_column, r.string("payload_column"));
    CPPCDC_READ(c.table_prefix, r.string("table_prefix"));
    CPPCDC_READ(c.expand_payload, r.boolean("expand_payload"));
    CPPCDC_TRY(r.reject_unknown());
    auto a = make_outbox(std::move(c));
    if (!a) return fail(locate(r, a.error()));
    return a;
  }
  return fail(r.error("type", "unknown action " + quoted(type) +
                                  "; expected filter, unwrap, flatten, route, "
                                  "metadata_projection, key_shaping, mask, field_mapping or outbox"));
}

}  // namespace

Result<std::vector<TransformStage>> parse_transform_stages(const ConfigNode& stages,
                                                           std::string_view label) {
  std::vector<TransformStage> out;
  const auto* array = stages.array();
  if (array == nullptr) {
    return fail(Error::configuration(stages.where + ": " + std::string(label) +
                                     ": expected an array of tables, found " +
                                     std::string(stages.type_name())));
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    const ConfigNode& node = (*array)[i];
    const std::string stage_label = std::string(label) + " " + std::to_string(i + 1);
    if (node.table() == nullptr) {
      return fail(Error::configuration(node.where + ": " + stage_label +
                                       ": expected a table, found " +
                                       std::string(node.type_name())));
    }
    Reader stage(node, stage_label);
    TransformStage s;
    std::optional<std::string> name;
    CPPCDC_READ(name, stage.string("name"));
    if (!name || name->empty()) {
      return fail(stage.error_at(stage.take("name"), "name",
                                 "required (a non-empty name for logs, errors and counters)"));
    }
    for (const auto& earlier : out) {
      if (earlier.name == *name) {
        return fail(stage.error("name", "the name " + quoted(*name) +
                                            " is taken by an earlier stage"));
      }
    }
    s.name = *name;
    const std::string named = std::string(label) + " " + quoted(*name);
    Reader named_stage(node, named);
    named_stage.take("name");
    if (const ConfigNode* when = named_stage.take("when")) {
      if (when->table() == nullptr) return fail(named_stage.wrong("when", *when, "a table"));
      Reader w(*when, named + ": when");
      CPPCDC_READ(s.when.tables, w.strings("tables"));
      CPPCDC_READ(s.when.schemas, w.strings("schemas"));
      CPPCDC_READ(s.when.ops, w.ops("ops"));
      CPPCDC_TRY(w.reject_unknown());
      for (const auto& list : {&s.when.tables, &s.when.schemas}) {
        for (const auto& p : *list) {
          if (p.empty()) {
            return fail(w.error(list == &s.when.tables ? "tables" : "schemas",
                                "an empty pattern (it would match nothing)"));
          }
        }
      }
    }
    const ConfigNode* actions = named_stage.take("actions");
    if (actions == nullptr) {
      return fail(named_stage.error_at(nullptr, "actions",
                                       "required (at least one [[...actions]] table with a type)"));
    }
    const auto* list = actions->array();
    if (list == nullptr || list->empty()) {
      return fail(named_stage.error_at(actions, "actions",
                                       "expected at least one action table, found " +
                                           std::string(actions->type_name())));
    }
    CPPCDC_TRY(named_stage.reject_unknown());
    for (std::size_t j = 0; j < list->size(); ++j) {
      const ConfigNode& item = (*list)[j];
      if (item.table() == nullptr) {
        return fail(named_stage.wrong("actions", item, "a table"));
      }
      const ConfigNode* type = item.find("type");
      if (type == nullptr || type->string() == nullptr) {
        return fail(Reader(item, named + " action " + std::to_string(j + 1))
                        .error_at(type, "type", "required (the action's name, e.g. \"filter\")"));
      }
      Reader action(item, named + " action " + std::to_string(j + 1) + " (" + *type->string() + ")");
      action.take("type");
      auto built = read_action(action, *type->string());
      if (!built) return fail(built.error());
      s.actions.push_back(std::move(*built));
    }
    out.push_back(std::move(s));
  }
  return out;
}

#undef CPPCDC_READ

}  // namespace cppcdc
