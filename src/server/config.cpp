#include "server/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/file_mode.hpp"
#include "core/settings_read.hpp"
#include "core/text_util.hpp"
#include "server/admin_http.hpp"

namespace cppcdc::server {
namespace {

constexpr std::int64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
// [runtime] recoverable_error_backoff_initial_ms and _max_ms when the file says nothing.
constexpr std::uint32_t kServerBackoffInitialMs = 100;
constexpr std::uint32_t kServerBackoffMaxMs = 5'000;

std::string_view describe_type(toml::node_type type) {
  switch (type) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown value";
}

using cppcdc::detail::in_quotes;

// "file:line:col" when toml++ recorded a position, else just "file".
std::string locate(const std::string& origin, const toml::source_region& where) {
  std::string out = origin;
  if (where.begin.line > 0) {
    out += ':' + std::to_string(where.begin.line) + ':' + std::to_string(where.begin.column);
  }
  return out;
}

// For a key found inside a table that the file's top level takes (delivery_contract, or a
// section such as runtime): where it belongs, as a parenthesised hint; "" otherwise. In TOML a
// key written after a [table] header belongs to that table, so a top-level key written below
// [sink] lands in [sink].
std::string misplaced_top_level(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"delivery_contract"};
  static constexpr std::string_view kTables[] = {
      "source", "sink", "sinks", "state", "runtime", "pipeline", "dead_letter", "admin", "log"};
  for (const auto k : kKeys) {
    if (key == k) {
      return " (" + std::string(key) +
             " is a top-level key: in TOML every key after a [table] header belongs to that "
             "table, so write it above the file's first [table] header)";
    }
  }
  for (const auto t : kTables) {
    if (key == t) {
      return " ([" + std::string(key) +
             "] is a section of its own at the top level of the file, not part of this one)";
    }
  }
  return "";
}

// For a key written in the wrong section: the section that takes it, as a parenthesised hint;
// "" when the key is not one of the well-known keys of another section. Only keys that belong
// to one section are listed (a name such as "host" or "topic" may be right in several).
std::string misplaced_section_key(std::string_view section, std::string_view key) {
  struct Home {
    std::string_view key;
    std::string_view section;
  };
  static constexpr Home kHomes[] = {
      {"dsn", "source"},
      {"slot_name", "source"},
      {"publication_name", "source"},
      {"tables", "source"},
      {"server_id", "source"},
      {"source_name", "source"},
      {"gtid_mode", "source"},
      {"heartbeat_interval_ms", "source"},
      {"bootstrap_servers", "sink"},
      {"create_topics", "sink"},
      {"topic_partitions", "sink"},
      {"topic_replication_factor", "sink"},
      {"topic_config", "sink"},
      {"transactional_id", "sink"},
      {"delivery_mode", "sink"},
      {"startup_timeout_ms", "sink"},
      {"tombstones_on_delete", "sink"},
      {"kafka_properties", "sink"},
      {"signing_secret", "sink"},
      {"max_buffer_size", "runtime"},
      {"max_poll_wait_ms", "runtime"},
      {"max_event_bytes", "runtime"},
      {"transaction_boundary", "runtime"},
      {"transform_error_policy", "runtime"},
      {"control_socket", "runtime"},
      {"recoverable_error_breaker_consecutive_threshold", "runtime"},
      {"recoverable_error_backoff_initial_ms", "runtime"},
      {"recoverable_error_backoff_max_ms", "runtime"},
      {"error_linger_ms", "admin"},
  };
  // [[sinks]] entries take what [sink] takes.
  const std::string_view here = section == "sinks" ? std::string_view("sink") : section;
  for (const auto& home : kHomes) {
    if (home.key != key) continue;
    if (home.section == here) return "";
    return " (" + std::string(key) + " is a key of [" + std::string(home.section) +
           "], not of this section: move it there)";
  }
  return "";
}

}  // namespace

std::string toml_key(std::string_view key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  return bare ? std::string(key) : in_quotes(key);
}

std::pair<std::string, std::string> split_setting_path(std::string_view path) {
  // Tables whose keys are names of someone else's (librdkafka properties, topic configs,
  // HTTP headers, "schema.table" names): a dot in such a key is part of the key.
  static constexpr std::string_view kFreeForm[] = {"topic_config", "kafka_properties", "headers",
                                                   "table_conditions"};
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const auto dot = path.find('.', at);
    parts.push_back(path.substr(at, dot == std::string_view::npos ? dot : dot - at));
    if (dot == std::string_view::npos) break;
    at = dot + 1;
  }
  std::size_t key_at = parts.size() - 1;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (std::find(std::begin(kFreeForm), std::end(kFreeForm), parts[i]) != std::end(kFreeForm)) {
      key_at = i + 1;
      break;
    }
  }
  std::string table;
  for (std::size_t i = 0; i < key_at; ++i) table += (i ? "." : "") + toml_key(parts[i]);
  const std::size_t key_offset = static_cast<std::size_t>(parts[key_at].data() - path.data());
  return {table, toml_key(path.substr(key_offset))};
}

std::filesystem::path local_state_directory(const std::filesystem::path& config_dir,
                                            const std::string& stem,
                                            const std::filesystem::path& packaged_conf_dir,
                                            const std::filesystem::path& packaged_state_root) {
  const auto normal = [](const std::filesystem::path& p) {
    auto n = p.lexically_normal();
    // "/etc/cppcdc/" and "/etc/cppcdc" are one directory.
    if (!n.has_filename() && n.has_parent_path() && n != n.root_path()) n = n.parent_path();
    return n;
  };
  if (!config_dir.empty() && !packaged_conf_dir.empty() && !stem.empty() &&
      normal(config_dir) == normal(packaged_conf_dir)) {
    return normal(packaged_state_root) / stem;
  }
  return config_dir;
}

std::filesystem::path packaged_conf_dir() { return CPPCDC_PACKAGED_CONF_DIR; }
std::filesystem::path packaged_state_root() { return "/var/lib/cppcdc"; }

std::string default_control_socket_name(const std::string& origin) {
  const std::string stem = std::filesystem::path(origin).stem().string();
  return (stem.empty() || stem == "." || stem == "..") ? std::string("cppcdc.sock")
                                                       : stem + ".sock";
}

namespace {

// One table of the document, as a plugin sees it (cppcdc::Settings). Reading a key through
// it records the key as known, so that reject_unknown() can refuse everything else (typos
// must not fall back to defaults). Nested sections it hands out live as long as it does.
class Section final : public Settings {
 public:
  Section(const std::string& origin, const std::filesystem::path& base, const toml::table* table,
          std::string name)
      : origin_(origin), base_(base), table_(table), name_(std::move(name)) {}

  const std::string& name() const noexcept { return name_; }
  const std::string& origin() const noexcept { return origin_; }
  void set_state_directory(std::optional<std::filesystem::path> dir) {
    state_directory_ = std::move(dir);
  }
  std::optional<std::filesystem::path> state_directory() const override { return state_directory_; }
  const std::filesystem::path& base() const noexcept { return base_; }

  // How messages name this section instead of "[name]" (an element of an array of tables:
  // "[[sinks]] \"billing-hook\"").
  void set_display(std::string display) { display_ = std::move(display); }

  // Unknown keys go to `out` (listed together once the file is read) instead of failing on
  // the first; sections handed out below this one share it.
  void collect_unknown_keys(std::vector<std::pair<toml::source_position, std::string>>* out) {
    unknowns_ = out;
  }
  std::vector<std::pair<toml::source_position, std::string>>* unknown_keys() const {
    return unknowns_;
  }

  // "[sink] path", or just "delivery_contract" at the top level; a key that is no bare TOML
  // key is quoted as the file writes it ("[sink.topic_config] \"cleanup.policy\"").
  std::string label(std::string_view key) const { return label_in("", key); }

  // The label of `key` in the sub-table `table` of this section ("" for this section itself).
  std::string label_in(std::string_view table, std::string_view key) const {
    const std::string k = toml_key(key);
    if (!display_.empty()) {
      return display_ + " " + (table.empty() ? k : toml_key(table) + "." + k);
    }
    std::string section = name_;
    if (!table.empty()) section += (section.empty() ? "" : ".") + toml_key(table);
    if (section.empty()) return k;
    return "[" + section + "] " + k;
  }

  // For a section the file does not have: the table it has instead under a look-alike name
  // ("[state.ofset]" for [state.offset]), as an error text; "" when there is none.
  std::string look_alike_table() const {
    if (table_ != nullptr || parent_ == nullptr) return "";
    const auto dot = name_.rfind('.');
    const std::string own = dot == std::string::npos ? name_ : name_.substr(dot + 1);
    if (parent_->table_ == nullptr) return parent_->look_alike_table();
    for (auto&& [key, node] : *parent_->table_) {
      if (!node.is_table() || key.str() == own) continue;
      if (std::find(parent_->known_.begin(), parent_->known_.end(), key.str()) !=
          parent_->known_.end()) {
        continue;  // a table the file is meant to have
      }
      if (detail::edit_distance(key.str(), own) > 2) continue;
      const std::string written =
          parent_->name_.empty() ? toml_key(key.str()) : parent_->name_ + "." + toml_key(key.str());
      return locate(origin_, key.source()) + ": unknown table [" + written + "] (did you mean [" +
             name_ + "]?)";
    }
    return "";
  }

  Error error_at(std::string_view key, const toml::node* node, std::string_view what) const {
    const toml::source_region where = node != nullptr ? node->source() : toml::source_region{};
    return Error::configuration(locate(origin_, where) + ": " + label(key) + ": " +
                                std::string(what));
  }

  // --- Settings ---
  bool present() const override { return table_ != nullptr; }

  bool has(std::string_view key) const override { return take(key) != nullptr; }

  Error error(std::string_view key, std::string_view what) const override {
    if (key.find('.') != std::string_view::npos && (table_ == nullptr || !table_->contains(key))) {
      // A path into a sub-table ("kafka_properties.linger.ms"): named as the file writes it.
      return locate_setting(std::string(key), std::string(what));
    }
    return error_at(key, table_ != nullptr ? table_->get(key) : nullptr, what);
  }

  Error element_error(std::string_view key, std::size_t index,
                      std::string_view what) const override {
    return error_at(key, element(key, index), what);
  }

  Error missing(std::string_view key, std::string_view why) const override {
    if (const std::string look_alike = look_alike_table(); !look_alike.empty()) {
      // The section is missing because its header is misspelt: that is what to fix.
      return Error::configuration(look_alike + "; without [" + name_ + "], " + label(key) +
                                  " is required" +
                                  (why.empty() ? std::string() : " " + std::string(why)));
    }
    std::string hint;
    if (table_ != nullptr) {
      // A required key is often missing because it was misspelled: name the look-alike.
      for (auto&& [present, node] : *table_) {
        if (present.str() != key && detail::edit_distance(present.str(), key) <= 2) {
          hint = "; did you mean " + std::string(key) + " where the file says " +
                 std::string(present.str()) + " (" + locate(origin_, present.source()) + ")?";
          break;
        }
      }
    }
    return Error::configuration(origin_ + ": " + label(key) + ": required" +
                                (why.empty() ? std::string() : " " + std::string(why)) + hint);
  }

  Result<std::optional<std::string>> get_string(std::string_view key) const override {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<std::string>();
    if (const auto* value = node->as_string()) return std::optional<std::string>(value->get());
    return fail(wrong_type(key, *node, "a string"));
  }

  Result<std::optional<bool>> get_bool(std::string_view key) const override {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<bool>();
    if (const auto* value = node->as_boolean()) return std::optional<bool>(value->get());
    return fail(wrong_type(key, *node, "a boolean"));
  }

  // An integer within [min, max].
  Result<std::optional<std::int64_t>> get_int(std::string_view key, std::int64_t min,
                                              std::int64_t max) const override {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<std::int64_t>();
    const auto* value = node->as_integer();
    if (value == nullptr) return fail(wrong_type(key, *node, "an integer"));
    const std::int64_t v = value->get();
    if (v < min || v > max) {
      return fail(error_at(key, node,
                           "expected an integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", found " + std::to_string(v)));
    }
    return std::optional<std::int64_t>(v);
  }

  Result<std::optional<std::vector<std::string>>> get_string_list(
      std::string_view key, std::string_view element) const override {
    using Out = std::optional<std::vector<std::string>>;
    const toml::node* node = take(key);
    if (node == nullptr) return Out();
    const auto* array = node->as_array();
    if (array == nullptr) {
      return fail(error_at(key, node,
                           "expected an array of " + std::string(element) + "s, found " +
                               std::string(describe_type(node->type()))));
    }
    std::vector<std::string> out;
    for (const toml::node& item : *array) {
      const auto* text = item.as_string();
      if (text == nullptr) {
        return fail(error_at(key, &item,
                             "expected " + with_article(element) + ", found " +
                                 std::string(describe_type(item.type()))));
      }
      out.push_back(text->get());
    }
    return Out(std::move(out));
  }

  Result<std::optional<std::vector<std::pair<std::string, std::string>>>> get_string_map(
      std::string_view key, std::string_view what) const override {
    using Out = std::optional<std::vector<std::pair<std::string, std::string>>>;
    const toml::node* node = take(key);
    if (node == nullptr) return Out();
    const auto* table = node->as_table();
    if (table == nullptr) {
      return fail(error_at(key, node,
                           "expected a table of " + std::string(what) + ", found " +
                               std::string(describe_type(node->type()))));
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (auto&& [name, value] : *table) {
      if (const std::string hint = misplaced_top_level(name.str()); !hint.empty()) {
        return fail(Error::configuration(locate(origin_, name.source()) + ": " +
                                         label_in(key, name.str()) + ": not a " +
                                         std::string(what) + " entry" + hint));
      }
      if (const auto* text = value.as_string()) {
        out.emplace_back(std::string(name.str()), text->get());
        continue;
      }
      // A Kafka client's or topic's properties are strings to librdkafka and to the broker,
      // but numbers and switches among them are naturally written bare: their text is the
      // same.
      const bool client_properties = key == "kafka_properties" || key == "topic_config";
      if (client_properties && value.is_integer()) {
        out.emplace_back(std::string(name.str()), std::to_string(value.as_integer()->get()));
        continue;
      }
      if (client_properties && value.is_boolean()) {
        out.emplace_back(std::string(name.str()), value.as_boolean()->get() ? "true" : "false");
        continue;
      }
      std::string message = "the value for " + in_quotes(name.str()) + " must be a string" +
                            (client_properties ? ", an integer or a boolean" : "") + " (" +
                            std::string(what) + "), found " +
                            std::string(describe_type(value.type()));
      if (const auto* inner = value.as_table(); inner != nullptr && !inner->empty()) {
        // linger.ms = 5: TOML reads a bare dotted key as nested tables ({linger = {ms = 5}}).
        std::string dotted(name.str());
        const toml::node* leaf = &value;
        while (const auto* t = leaf->as_table()) {
          if (t->size() != 1) break;
          dotted += "." + std::string(t->begin()->first.str());
          leaf = &t->begin()->second;
        }
        std::string shown = "\"...\"";
        if (const auto* t = leaf->as_string()) shown = "\"" + t->get() + "\"";
        if (const auto* i = leaf->as_integer()) shown = std::to_string(i->get());
        if (const auto* b = leaf->as_boolean()) shown = b->get() ? "true" : "false";
        message +=
            ": TOML reads a bare dotted key as nested tables; quote the key to keep "
            "its dots (" +
            in_quotes(dotted) + " = " + shown + ")";
      } else if (value.is_floating_point() && client_properties) {
        message += ": write the number as a string";
      }
      return fail(error_at(key, &value, message));
    }
    return Out(std::move(out));
  }

  Result<std::optional<std::filesystem::path>> get_path(std::string_view key) const override {
    auto text = get_string(key);
    if (!text) return fail(text.error());
    if (!*text) return std::optional<std::filesystem::path>();
    std::filesystem::path path(**text);
    if (!path.empty() && path.is_relative() && !base_.empty()) {
      path = (base_ / path).lexically_normal();
    }
    return std::optional<std::filesystem::path>(std::move(path));
  }

  Result<const Settings*> get_section(std::string_view key) const override {
    auto child = get_table(key);
    if (!child) return fail(child.error());
    return static_cast<const Settings*>(*child);
  }

  // --- the server's own use ---

  // A sub-table, or a Section that is not present when the key is absent.
  Result<Section*> get_table(std::string_view key) const {
    const toml::node* node = take(key);
    const std::string child = name_.empty() ? std::string(key) : name_ + "." + std::string(key);
    // Asked again (a plugin that looks at a table before handing it on): the same view, so
    // the keys either read count as known.
    for (auto& c : children_) {
      if (c.name_ == child) return &c;
    }
    const toml::table* table = nullptr;
    if (node != nullptr) {
      table = node->as_table();
      if (table == nullptr) return fail(wrong_type(key, *node, "a table"));
    }
    children_.emplace_back(origin_, base_, table, child);
    children_.back().parent_ = this;
    children_.back().unknowns_ = unknowns_;
    return &children_.back();
  }

  // The node of `key` (marking it known), or nullptr.
  const toml::node* raw(std::string_view key) const { return take(key); }
  // Whether the file sets `key`, without marking it known.
  bool written(std::string_view key) const { return table_ != nullptr && table_->contains(key); }

  // A Java-style dotted key ("linger.ms = 5", "bootstrap.servers = ...") is a table to TOML
  // (linger holding ms). When this section has the key with '_' for each '.' (linger_ms), an
  // error text saying so, located at the key; "" otherwise.
  std::string dotted_look_alike(std::string_view key, const toml::node& node) const {
    const toml::table* table = node.as_table();
    if (table == nullptr) return "";
    for (auto&& [child, value] : *table) {
      const std::string meant = std::string(key) + "_" + std::string(child.str());
      std::string inner;
      if (value.is_table()) {
        inner = dotted_look_alike(meant, value);
        if (inner.empty()) continue;
        return inner;
      }
      if (std::find(known_.begin(), known_.end(), meant) == known_.end()) continue;
      const toml::source_region where =
          child.source().begin.line > 0 ? child.source() : value.source();
      // Named as the file writes it (unquoted), not as one quoted key.
      std::string written = meant;
      std::replace(written.begin(), written.end(), '_', '.');
      const std::string section = !display_.empty() ? display_ + " "
                                  : name_.empty()   ? ""
                                                    : "[" + name_ + "] ";
      return locate(origin_, where) + ": " + section + written +
             ": unknown key; TOML reads a dotted key as tables, and this section's key is " +
             meant + " (write " + meant + " = ...)";
    }
    return "";
  }

  // A key of this section that the plugin's `refusal` says is required, written below a later
  // [section.sub] header instead (bootstrap_servers after [sink.kafka_properties]): TOML puts
  // every key after a header into that table. An error text saying so; "" when there is none.
  std::string key_under_a_later_header(const std::string& refusal) const {
    if (table_ == nullptr) return "";
    for (auto&& [sub, node] : *table_) {
      const toml::table* inner = node.as_table();
      // Only the free-form maps of client properties (kafka_properties, topic_config): a
      // sub-section with keys of its own may have one of the same name ([source.snapshot]
      // tables).
      const std::string_view name = sub.str();
      const bool free_form = name == "topic_config" ||
                             (name.size() > 11 && name.substr(name.size() - 11) == "_properties");
      if (inner == nullptr || !free_form) continue;
      for (auto&& [key, value] : *inner) {
        if (table_->contains(key.str())) continue;
        if (std::find(known_.begin(), known_.end(), key.str()) == known_.end()) continue;
        if (refusal.find(label(key.str()) + ": required") == std::string::npos) continue;
        const toml::source_region where =
            key.source().begin.line > 0 ? key.source() : value.source();
        return locate(origin_, where) + ": " + label_in(sub.str(), key.str()) + ": " +
               std::string(key.str()) + " is a key of " +
               (name_.empty() ? std::string("the top level") : "[" + name_ + "]") +
               ", but TOML puts every key after the [" +
               (name_.empty() ? toml_key(sub.str()) : name_ + "." + toml_key(sub.str())) +
               "] header into that table: move it above the header";
      }
    }
    return "";
  }

  // Refuses the keys that were never asked for, listing the ones this section accepts; with
  // `nested`, also in every section handed out below this one. With a collector
  // (collect_unknown_keys), each is added to it and the file is read on; else the first fails.
  Status reject_unknown(bool nested) const {
    if (nested) {
      for (const auto& child : children_) CPPCDC_TRY(child.reject_unknown(true));
    }
    if (table_ == nullptr) return ok();
    for (auto&& [key, node] : *table_) {
      if (std::find(known_.begin(), known_.end(), key.str()) != known_.end()) continue;
      if (std::find(reported_.begin(), reported_.end(), key.str()) != reported_.end()) continue;
      std::string expected;
      for (const auto& k : known_) {
        if (k.rfind('_', 0) == 0) continue;  // cppcdc's own (inherit_sink_cluster)
        if (!expected.empty()) expected += ", ";
        expected += k;
      }
      const toml::source_region where = key.source().begin.line > 0 ? key.source() : node.source();
      std::string what = "unknown key";
      if (name_ == "state" && key.str() == "schema_history") {
        what += " (a separate schema history backend is not built yet)";
      }
      if (name_ == "pipeline" && key.str() == "transform_runtime") {
        what += " (WASM transforms are not built yet)";
      }
      if (!name_.empty()) {
        const std::string top = misplaced_top_level(key.str());
        what += top.empty() ? misplaced_section_key(name_, key.str()) : top;
      }
      // A near miss of a key this section takes is most likely a typo of it.
      const std::string closest = detail::closest_name(key.str(), known_);
      std::string text;
      if (const std::string dotted = dotted_look_alike(key.str(), node);
          !dotted.empty() && what == "unknown key") {
        text = dotted;
      } else if (node.is_table() && what == "unknown key") {
        // A [table] of its own: named as its header is written.
        const std::string header =
            name_.empty() ? toml_key(key.str()) : name_ + "." + toml_key(key.str());
        text = locate(origin_, where) + ": unknown table [" + header + "]";
        if (!closest.empty()) {
          text += " (did you mean [" + (name_.empty() ? closest : name_ + "." + closest) + "]?)";
        }
      } else {
        if (!closest.empty()) what += " (did you mean " + closest + "?)";
        text = locate(origin_, where) + ": " + label(key.str()) + ": " + what;
      }
      text += "; expected one of: " + (expected.empty() ? std::string("(none)") : expected);
      if (unknowns_ == nullptr) return fail(Error::configuration(text));
      reported_.emplace_back(key.str());
      unknowns_->emplace_back(where.begin, std::move(text));
    }
    return ok();
  }

  // After a plugin failed on this section: the first key in the file's order that it did not
  // ask for and that is a near miss of one it did (create_topic for create_topics), and a
  // one-line error text naming where it is written and what it likely means; nullopt when
  // there is none. Such a typo leaves the meant setting at its default, which is then likely what
  // the plugin refused. (The keys it did not get to are not all known: only near misses count.)
  std::optional<std::pair<std::string, std::string>> near_miss() const {
    if (table_ == nullptr) return std::nullopt;
    std::optional<toml::source_position> first;
    std::optional<std::pair<std::string, std::string>> out;
    for (auto&& [key, node] : *table_) {
      if (std::find(known_.begin(), known_.end(), key.str()) != known_.end()) continue;
      const std::string closest = detail::closest_name(key.str(), known_);
      const std::string dotted = dotted_look_alike(key.str(), node);
      if (closest.empty() && dotted.empty()) continue;
      const toml::source_region where = key.source().begin.line > 0 ? key.source() : node.source();
      const auto at = where.begin;
      if (first &&
          (first->line < at.line || (first->line == at.line && first->column <= at.column))) {
        continue;
      }
      first = at;
      out.emplace(key.str(), !dotted.empty() ? dotted
                                             : locate(origin_, where) + ": " + label(key.str()) +
                                                   ": unknown key (did you mean " + closest + "?)");
    }
    return out;
  }

  // An error a plugin returned while reading this section: located at the setting it names
  // (Error::for_setting), or at the section.
  Error locate_error(const Error& e) const {
    if (e.setting().empty()) {
      return Error::configuration(
          origin_ + ": " + (display_.empty() ? "[" + name_ + "]" : display_) + ": " + e.report());
    }
    std::string text = e.message();
    for (auto it = e.chain().rbegin(); it != e.chain().rend(); ++it) text = *it + ": " + text;
    return locate_setting(e.setting(), text);
  }

  // An error `text` about the setting at `setting_path` below this section ("snapshot.mode",
  // "kafka_properties.linger.ms"), located at its value when the file has it.
  Error locate_setting(const std::string& setting_path, const std::string& text) const {
    const Section* section = this;
    std::string key = setting_path;
    const toml::node* node = nullptr;
    std::string prefix = name_;
    std::string path;  // the sub-tables walked, as TOML dotted keys
    for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.')) {
      // A key with a dot in it ("cleanup.policy" in [sink.topic_config]) is one key.
      if (section->table_ != nullptr && section->table_->contains(key)) break;
      const std::string part = key.substr(0, dot);
      key = key.substr(dot + 1);
      prefix += (prefix.empty() ? "" : ".") + toml_key(part);
      path += toml_key(part) + ".";
      const toml::node* sub = section->table_ != nullptr ? section->table_->get(part) : nullptr;
      const toml::table* table = sub != nullptr ? sub->as_table() : nullptr;
      if (table == nullptr) {
        // Not in the file as tables: split the rest as the setting's owner would name it.
        auto [sub_table, sub_key] = split_setting_path(key);
        if (!sub_table.empty()) {
          prefix += "." + sub_table;
          path += sub_table + ".";
        }
        key = sub_key;
        section = nullptr;
        break;
      }
      scratch_.emplace_back(origin_, base_, table, prefix);
      section = &scratch_.back();
    }
    if (section != nullptr) {
      if (section->table_ != nullptr) node = section->table_->get(key);
      key = toml_key(key);
    }
    const toml::source_region where = node != nullptr ? node->source() : toml::source_region{};
    if (!display_.empty()) {
      return Error::configuration(locate(origin_, where) + ": " + display_ + " " + path + key +
                                  ": " + text);
    }
    if (prefix.empty())
      return Error::configuration(locate(origin_, where) + ": " + key + ": " + text);
    return Error::configuration(locate(origin_, where) + ": [" + prefix + "] " + key + ": " + text);
  }

 private:
  const toml::node* take(std::string_view key) const {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
    if (table_ == nullptr) return nullptr;
    return table_->get(key);
  }

  const toml::node* element(std::string_view key, std::size_t index) const {
    const toml::node* node = table_ != nullptr ? table_->get(key) : nullptr;
    if (node == nullptr) return nullptr;
    if (const auto* array = node->as_array(); array != nullptr && index < array->size()) {
      return array->get(index);
    }
    if (const auto* table = node->as_table(); table != nullptr && index < table->size()) {
      auto it = table->begin();
      std::advance(it, static_cast<std::ptrdiff_t>(index));
      return &it->second;
    }
    return node;
  }

  static std::string with_article(std::string_view noun) {
    const bool vowel =
        !noun.empty() && std::string_view("aeiou").find(noun[0]) != std::string_view::npos;
    return (vowel ? "an " : "a ") + std::string(noun);
  }

  Error wrong_type(std::string_view key, const toml::node& node, std::string_view expected) const {
    return error_at(
        key, &node,
        "expected " + std::string(expected) + ", found " + std::string(describe_type(node.type())));
  }

  const std::string& origin_;
  const std::filesystem::path& base_;
  const toml::table* table_;
  std::optional<std::filesystem::path> state_directory_;
  std::string name_;
  std::string display_;
  mutable std::vector<std::string> known_;
  mutable std::vector<std::string> reported_;  // unknown keys already collected
  const Section* parent_ = nullptr;            // the section that handed this one out
  std::vector<std::pair<toml::source_position, std::string>>* unknowns_ = nullptr;
  mutable std::list<Section> children_;  // stable addresses
  mutable std::list<Section> scratch_;   // views made only to locate an error
};

// Shorthands that unwrap a Result<std::optional<T>> into `target` when the key is present.
#define CPPCDC_CFG_ASSIGN(target, expr)                 \
  do {                                                  \
    auto cfg_value_ = (expr);                           \
    if (!cfg_value_) return fail(cfg_value_.error());   \
    if (cfg_value_->has_value()) target = **cfg_value_; \
  } while (false)

// Reads an optional integer key into `target` (left alone when the key is absent).
template <typename T>
Status assign_int(const Section& section, std::string_view key, std::int64_t min, std::int64_t max,
                  T& target) {
  auto value = section.get_int(key, min, max);
  if (!value) return fail(value.error());
  if (value->has_value()) target = static_cast<T>(**value);
  return ok();
}

// `type` (or `backend`) of a plugin section: the name, the default when absent.
Result<std::string> read_type(Section& section, std::string_view key, const std::string& fallback) {
  std::string type = fallback;
  CPPCDC_CFG_ASSIGN(type, section.get_string(key));
  return type;
}

// Looks `type` up with `find`, runs the factory on `section` and refuses unknown keys in it.
// `sink`: where an error about a setting the plugin took from [sink] (owner kSink: the
// kafka_topic backend's inherited keys) is located.
template <typename Configured, typename Find>
Result<std::shared_ptr<const Configured>> configure(Section& section, const std::string& type,
                                                    Find find, const Section* sink = nullptr) {
  auto factory = find(type);
  if (!factory) return fail(section.locate_error(factory.error()));
  auto configured = (*factory)(section);
  if (!configured) {
    // A misspelt key (transaction_id) is the likely cause of what the plugin refused
    // (transactional_id missing): it is named instead.
    const Error& e = configured.error();
    if (auto typo = section.near_miss();
        typo && e.report().find("where the file says " + typo->first) == std::string::npos) {
      return fail(Error::configuration(typo->second));
    }
    if (std::string later = section.key_under_a_later_header(e.report()); !later.empty()) {
      return fail(Error::configuration(later));
    }
    if (sink != nullptr && e.setting_owner() == SettingOwner::kSink && !e.setting().empty()) {
      return fail(sink->locate_error(e));
    }
    // Errors through Settings are located already; others are placed here.
    if (e.kind() == ErrorKind::kConfiguration && e.setting().empty() && e.chain().empty() &&
        e.message().rfind(section.origin(), 0) == 0) {
      return fail(e);
    }
    return fail(section.locate_error(e));
  }
  CPPCDC_TRY(section.reject_unknown(true));
  return std::shared_ptr<const Configured>(std::move(*configured));
}

// [runtime] keys of duplicate suppression and transaction boundaries. The spec names no keys
// for them; these follow the API's names (IdempotencyOptions, TransactionBoundaryPolicy).
Status read_runtime_delivery(const Section& runtime, RuntimeOptions& out) {
  bool enabled = out.idempotency.has_value();
  CPPCDC_CFG_ASSIGN(enabled, runtime.get_bool("idempotency"));
  IdempotencyOptions window = out.idempotency.value_or(IdempotencyOptions{});
  auto capacity = runtime.get_int("idempotency_capacity", 1, 100'000'000);
  if (!capacity) return fail(capacity.error());
  auto ttl = runtime.get_int("idempotency_ttl_ms", 0, std::numeric_limits<std::int64_t>::max());
  if (!ttl) return fail(ttl.error());
  if (!enabled && (capacity->has_value() || ttl->has_value())) {
    const char* key = capacity->has_value() ? "idempotency_capacity" : "idempotency_ttl_ms";
    return fail(runtime.error(key,
                              "set while idempotency = false turns the guard off; remove "
                              "one of the two"));
  }
  if (capacity->has_value()) window.capacity = static_cast<std::size_t>(**capacity);
  if (ttl->has_value()) window.ttl_ms = static_cast<std::uint64_t>(**ttl);
  out.idempotency = enabled ? std::optional<IdempotencyOptions>(window) : std::nullopt;

  std::optional<std::string> boundary;
  CPPCDC_CFG_ASSIGN(boundary, runtime.get_string("transaction_boundary"));
  if (boundary) {
    if (*boundary == "split") {
      out.transaction_boundary = TransactionBoundaryPolicy::kSplit;
    } else if (*boundary == "preserve_transactions") {
      out.transaction_boundary = TransactionBoundaryPolicy::kPreserveTransactions;
    } else {
      return fail(runtime.error(
          "transaction_boundary",
          "expected \"split\" or \"preserve_transactions\", found " + in_quotes(*boundary)));
    }
  }
  return ok();
}

// The back-off has two names: connection_retry_*_delay_ms (the library's ConnectionRetryPolicy,
// read with the other connection_retry keys) and recoverable_error_backoff_*_ms (the spec's
// [runtime] table, read here); both set the one back-off of the circuit breaker, so a file may
// use either name, not both.
Status assign_backoff_alias(const Section& runtime, std::string_view alias,
                            std::string_view old_name, std::uint32_t& target) {
  if (runtime.has(alias) && runtime.has(old_name)) {
    return fail(runtime.error(
        old_name, "is the same setting as " + std::string(alias) + "; set only one of them"));
  }
  return assign_int(runtime, alias, 0, kMaxU32, target);
}

// The circuit breaker shared by the source and the sinks, its back-off, and the event size
// limit (core concepts, "Circuit breaker").
Status read_breaker(const Section& runtime, RuntimeOptions& out) {
  auto& b = out.breaker;
  CPPCDC_TRY(assign_int(runtime, "recoverable_error_breaker_consecutive_threshold", 1, kMaxU32,
                        b.consecutive_threshold));
  CPPCDC_TRY(
      assign_int(runtime, "recoverable_error_breaker_cooldown_ms", 0, kMaxU32, b.cooldown_ms));
  CPPCDC_TRY(assign_int(runtime, "recoverable_error_breaker_max_open_cycles", 1, kMaxU32,
                        b.max_open_cycles));
  auto& retry = out.connection_retry;
  CPPCDC_TRY(assign_backoff_alias(runtime, "recoverable_error_backoff_initial_ms",
                                  "connection_retry_initial_delay_ms", retry.initial_delay_ms));
  CPPCDC_TRY(assign_backoff_alias(runtime, "recoverable_error_backoff_max_ms",
                                  "connection_retry_max_delay_ms", retry.max_delay_ms));
  if (retry.max_delay_ms < retry.initial_delay_ms) {
    const bool spec_names = runtime.has("recoverable_error_backoff_max_ms") ||
                            runtime.has("recoverable_error_backoff_initial_ms");
    const std::string max_key =
        spec_names ? "recoverable_error_backoff_max_ms" : "connection_retry_max_delay_ms";
    const std::string initial_key =
        spec_names ? "recoverable_error_backoff_initial_ms" : "connection_retry_initial_delay_ms";
    return fail(runtime.error(max_key, "expected at least " + initial_key + " (" +
                                           std::to_string(retry.initial_delay_ms) + "), found " +
                                           std::to_string(retry.max_delay_ms)));
  }
  return assign_int(runtime, "max_event_bytes", 0, std::numeric_limits<std::int64_t>::max(),
                    out.max_event_bytes);
}

Status read_runtime(const Section& runtime, RuntimeOptions& out,
                    std::filesystem::path& control_socket, TransformErrorPolicy& policy) {
  // The server's defaults are the spec's [runtime] table: no retry budget (the circuit
  // breaker decides when to give up), back-off from 100 ms to 5 s. The library keeps the
  // ConnectionRetryPolicy defaults of the API guide.
  out.connection_retry.max_retries.reset();
  out.connection_retry.initial_delay_ms = kServerBackoffInitialMs;
  out.connection_retry.max_delay_ms = kServerBackoffMaxMs;
  CPPCDC_TRY(assign_int(runtime, "max_buffer_size", 1, 100'000'000, out.max_buffer_size));
  CPPCDC_TRY(assign_int(runtime, "max_poll_wait_ms", 0, kMaxU32, out.max_poll_wait_ms));
  std::int64_t retries = out.connection_retry.max_retries
                             ? static_cast<std::int64_t>(*out.connection_retry.max_retries)
                             : -1;
  CPPCDC_TRY(assign_int(runtime, "connection_retry_max_retries", -1, kMaxU32, retries));
  out.connection_retry.max_retries =
      retries < 0 ? std::nullopt
                  : std::optional<std::uint32_t>(static_cast<std::uint32_t>(retries));
  CPPCDC_TRY(assign_int(runtime, "connection_retry_initial_delay_ms", 0, kMaxU32,
                        out.connection_retry.initial_delay_ms));
  CPPCDC_TRY(assign_int(runtime, "connection_retry_max_delay_ms", 0, kMaxU32,
                        out.connection_retry.max_delay_ms));
  // Their order is checked in read_breaker(), once the alias names are read too.
  std::optional<std::string> socket;
  CPPCDC_CFG_ASSIGN(socket, runtime.get_string("control_socket"));
  if (socket) {
    if (socket->empty()) {
      return fail(runtime.error("control_socket",
                                "expected a path, found an empty string (leave the key out for "
                                "the default, <config file name>.sock in the checkpoint "
                                "directory)"));
    }
    if (socket->back() == '/') {
      return fail(runtime.error(
          "control_socket",
          "expected the path of a socket file, found a directory " + in_quotes(*socket)));
    }
    control_socket = *socket;
  }
  std::optional<std::string> policy_name;
  CPPCDC_CFG_ASSIGN(policy_name, runtime.get_string("transform_error_policy"));
  if (policy_name && *policy_name != "halt" && *policy_name != "skip") {
    return fail(runtime.error("transform_error_policy",
                              "expected \"halt\" or \"skip\", found " + in_quotes(*policy_name)));
  }
  // "skip" needs [dead_letter]; read_document checks that once the whole file is read.
  policy = policy_name && *policy_name == "skip" ? TransformErrorPolicy::kSkip
                                                 : TransformErrorPolicy::kHalt;
  CPPCDC_TRY(read_runtime_delivery(runtime, out));
  CPPCDC_TRY(read_breaker(runtime, out));
  return runtime.reject_unknown(false);
}

Status read_log(const Section& log, ServerConfig& out) {
  CPPCDC_CFG_ASSIGN(out.log_format, log.get_string("format"));
  if (out.log_format != "text" && out.log_format != "json") {
    return fail(
        log.error("format", "expected \"text\" or \"json\", found " + in_quotes(out.log_format)));
  }
  CPPCDC_CFG_ASSIGN(out.log_level, log.get_string("level"));
  static constexpr std::string_view kLevels[] = {"trace", "debug",    "info", "warn",
                                                 "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), out.log_level) == std::end(kLevels)) {
    return fail(log.error("level",
                          "expected one of trace, debug, info, warn, error, critical, off; "
                          "found " +
                              in_quotes(out.log_level)));
  }
  return log.reject_unknown(false);
}

// [[pipeline.transforms]] as the transform module reads it (cppcdc/transforms.hpp), each value
// with its place in the file.
ConfigNode to_config_node(const toml::node& node, const std::string& origin) {
  std::string where = locate(origin, node.source());
  if (const auto* table = node.as_table()) {
    ConfigNode::Table members;
    for (auto&& [key, value] : *table) {
      members.push_back(ConfigMember{std::string(key.str()), to_config_node(value, origin)});
    }
    return ConfigNode::of_table(std::move(members), std::move(where));
  }
  if (const auto* array = node.as_array()) {
    ConfigNode::Array items;
    for (const toml::node& item : *array) items.push_back(to_config_node(item, origin));
    return ConfigNode::of_array(std::move(items), std::move(where));
  }
  if (const auto* text = node.as_string()) return ConfigNode::of_string(text->get(), where);
  if (const auto* integer = node.as_integer()) return ConfigNode::of_integer(integer->get(), where);
  if (const auto* number = node.as_floating_point()) {
    return ConfigNode::of_float(number->get(), where);
  }
  if (const auto* flag = node.as_boolean()) return ConfigNode::of_boolean(flag->get(), where);
  ConfigNode out;  // dates and times: no transform setting takes one
  out.where = std::move(where);
  return out;
}

// "name (when tables=..., ops=...): filter, mask" per stage.
std::vector<std::string> summarize(const std::vector<TransformStage>& stages) {
  std::vector<std::string> out;
  for (const auto& stage : stages) {
    std::string line = stage.name;
    std::string when;
    const auto list = [&when](std::string_view label, const std::vector<std::string>& items) {
      if (items.empty()) return;
      when += (when.empty() ? "" : ", ") + std::string(label) + "=";
      for (std::size_t i = 0; i < items.size(); ++i) when += (i ? "," : "") + items[i];
    };
    list("tables", stage.when.tables);
    list("schemas", stage.when.schemas);
    std::vector<std::string> ops;
    for (Operation op : stage.when.ops) ops.emplace_back(to_string(op));
    list("ops", ops);
    line += when.empty() ? " (every event)" : " (when " + when + ")";
    line += ":";
    for (std::size_t i = 0; i < stage.actions.size(); ++i) {
      line += (i ? ", " : " ") + std::string(stage.actions[i]->type());
    }
    out.push_back(std::move(line));
  }
  return out;
}

// ---- sinks, routes and dead letters -------------------------------------------------------

constexpr std::string_view kBatchingKeys[] = {"batch_max_events", "sink_flush_interval_events",
                                              "batch_max_delay_ms"};

// The batching keys every sink section takes (the router applies them, whatever the type).
Status read_batching(const Section& section, ChildBatching& out) {
  CPPCDC_TRY(assign_int(section, "batch_max_events", 1, 100'000'000, out.max_events));
  CPPCDC_TRY(
      assign_int(section, "sink_flush_interval_events", 1, 100'000'000, out.flush_interval_events));
  std::int64_t delay = 0;
  CPPCDC_TRY(assign_int(section, "batch_max_delay_ms", 0, 3'600'000, delay));
  out.max_delay = std::chrono::milliseconds(delay);
  return ok();
}

// The closest of `names` to `name`, when it is close enough to be a likely typo.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& names) {
  const std::string best = detail::closest_name(name, names, /*max_edits=*/2);
  return best.empty() ? std::string() : "; did you mean " + in_quotes(best) + "?";
}

// One sink section: `[sink]` or an element of `[[sinks]]`. A fanout's children are left as
// names in `children` (resolved once every sink is read).
Status read_sink_section(Section& section, SinkEntry& entry, std::vector<std::string>& children,
                         const DefaultTypes& defaults) {
  auto type = read_type(section, "type", defaults.sink);
  if (!type) return fail(type.error());
  entry.type = *type;
  if (entry.type == "fanout") {
    for (auto key : kBatchingKeys) {
      if (section.has(key)) {
        return fail(section.error(key, "a fanout hands every event to its children; set " +
                                           std::string(key) + " on the children instead"));
      }
    }
    auto list = section.get_string_list("sinks", "sink name");
    if (!list) return fail(list.error());
    if (!*list) {
      return fail(section.missing("sinks",
                                  "when type = \"fanout\" (the names of the [[sinks]] "
                                  "entries every event goes to)"));
    }
    if ((*list)->empty()) {
      return fail(section.error("sinks", "expected at least one sink name, found an empty array"));
    }
    children = std::move(**list);
    return section.reject_unknown(true);
  }
  CPPCDC_TRY(read_batching(section, entry.batching));
  auto factory = find_sink_type(entry.type);
  if (!factory) {
    // The registry lists the plugins; the server's own composite type is not one of them.
    const Error& e = factory.error();
    if (e.message().rfind("expected ", 0) != 0) return fail(section.locate_error(e));
    std::vector<std::string> names = sink_type_names();
    names.emplace_back("fanout");
    return fail(section.locate_error(
        Error::configuration("expected " + detail::quoted_alternatives(names) +
                             " (the last hands every event to several [[sinks]] entries), "
                             "found " +
                             in_quotes(entry.type) + did_you_mean(entry.type, names))
            .for_setting(SettingOwner::kSink, "type")));
  }
  auto configured = configure<ConfiguredSink>(section, entry.type, find_sink_type);
  if (!configured) return fail(configured.error());
  entry.configured = std::move(*configured);
  return ok();
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + in_quotes(n);
  return out;
}

// `[sink]`, then every `[[sinks]]` entry: names unique, fanouts resolved.
Status read_sinks(Section& top, ServerConfig& config, std::list<Section>& sections,
                  std::vector<Section*>& sink_sections) {
  const DefaultTypes& defaults = default_types();
  std::vector<std::vector<std::string>> children;
  {
    auto sink = top.get_table("sink");
    if (!sink) return fail(sink.error());
    Section& section = **sink;
    (void)section.has("type");  // listed first among the keys a section takes
    SinkEntry entry;
    entry.name = "default";
    CPPCDC_CFG_ASSIGN(entry.name, section.get_string("name"));
    if (entry.name.empty()) {
      return fail(section.error("name",
                                "expected a name, found an empty string (leave the key "
                                "out: [sink] is called \"default\")"));
    }
    entry.label = "[sink]";
    children.emplace_back();
    CPPCDC_TRY(read_sink_section(section, entry, children.back(), defaults));
    config.sink_type = entry.type;
    config.sink = entry.configured;
    config.sinks.push_back(std::move(entry));
    sink_sections.push_back(&section);
  }
  if (const toml::node* node = top.raw("sinks")) {
    const toml::array* array = node->as_array();
    if (array != nullptr && !array->empty() && !array->is_array_of_tables()) array = nullptr;
    if (array == nullptr) {
      return fail(top.error_at("sinks", node,
                               "expected an array of tables ([[sinks]] entries, each with a name "
                               "and a type), found " +
                                   std::string(describe_type(node->type()))));
    }
    for (std::size_t i = 0; i < array->size(); ++i) {
      Section& section =
          sections.emplace_back(top.origin(), top.base(), array->get(i)->as_table(), "sinks");
      section.collect_unknown_keys(top.unknown_keys());
      section.set_display("[[sinks]] #" + std::to_string(i + 1));
      (void)section.has("type");
      SinkEntry entry;
      auto name = section.get_string("name");
      if (!name) return fail(name.error());
      if (!*name) {
        return fail(section.missing("name",
                                    "(how [[pipeline.routes]] rules and fanouts refer to "
                                    "this sink)"));
      }
      if ((*name)->empty()) {
        return fail(section.error("name", "expected a name, found an empty string"));
      }
      entry.name = **name;
      entry.label = "[[sinks]] " + in_quotes(entry.name);
      for (std::size_t j = 0; j < config.sinks.size(); ++j) {
        if (config.sinks[j].name != entry.name) continue;
        return fail(section.error(
            "name", in_quotes(entry.name) + " is taken by " + config.sinks[j].label +
                        (j == 0 ? " (its name when it does not set one)" : std::string()) +
                        "; every sink needs a name of its own"));
      }
      section.set_display(entry.label);
      children.emplace_back();
      CPPCDC_TRY(read_sink_section(section, entry, children.back(), defaults));
      config.sinks.push_back(std::move(entry));
      sink_sections.push_back(&section);
    }
  }
  std::vector<std::string> names;
  for (const auto& s : config.sinks) names.push_back(s.name);
  for (std::size_t i = 0; i < config.sinks.size(); ++i) {
    const Section& section = *sink_sections[i];
    for (std::size_t c = 0; c < children[i].size(); ++c) {
      const std::string& child = children[i][c];
      const auto at = std::find(names.begin(), names.end(), child);
      if (at == names.end()) {
        return fail(section.element_error("sinks", c,
                                          "no sink is named " + in_quotes(child) +
                                              " (the sinks are " + quoted_list(names) + ")" +
                                              did_you_mean(child, names)));
      }
      const auto index = static_cast<std::size_t>(at - names.begin());
      if (index == i) {
        return fail(section.element_error("sinks", c, "a fanout cannot list itself"));
      }
      if (config.sinks[index].type == "fanout") {
        return fail(section.element_error(
            "sinks", c, in_quotes(child) + " is a fanout too; list its children here instead"));
      }
      auto& fanout = config.sinks[i].fanout;
      if (std::find(fanout.begin(), fanout.end(), index) != fanout.end()) {
        return fail(section.element_error("sinks", c, in_quotes(child) + " is listed twice"));
      }
      fanout.push_back(index);
    }
  }
  return ok();
}

// `[[pipeline.routes]]`: each rule's globs and the sink it names.
Status read_routes(const Section& pipeline, ServerConfig& config, std::list<Section>& sections) {
  const toml::node* node = pipeline.raw("routes");
  if (node == nullptr) return ok();
  const toml::array* array = node->as_array();
  if (array != nullptr && array->empty()) return ok();
  if (array == nullptr || !array->is_array_of_tables()) {
    return fail(pipeline.error_at("routes", node,
                                  "expected an array of tables ([[pipeline.routes]] rules, each "
                                  "with tables or schemas and a sink), found " +
                                      std::string(describe_type(node->type()))));
  }
  std::vector<std::string> names;
  for (const auto& s : config.sinks) names.push_back(s.name);
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::node* element = array->get(i);
    Section& section = sections.emplace_back(pipeline.origin(), pipeline.base(),
                                             element->as_table(), "pipeline.routes");
    section.collect_unknown_keys(pipeline.unknown_keys());
    section.set_display("[[pipeline.routes]] #" + std::to_string(i + 1));
    RouteEntry route;
    route.where = locate(pipeline.origin(), element->source());
    const std::pair<const char*, std::vector<std::string>*> lists[] = {{"tables", &route.tables},
                                                                       {"schemas", &route.schemas}};
    for (auto [key, out] : lists) {
      auto list = section.get_string_list(key, std::string(key) == "tables"
                                                   ? "table glob (\"schema.table\" or \"table\")"
                                                   : "schema glob");
      if (!list) return fail(list.error());
      if (!*list) continue;
      if ((*list)->empty()) {
        return fail(section.error(key, "expected at least one glob, found an empty array"));
      }
      for (std::size_t g = 0; g < (*list)->size(); ++g) {
        if ((**list)[g].empty()) {
          return fail(section.element_error(key, g, "expected a glob, found an empty string"));
        }
      }
      *out = std::move(**list);
    }
    auto sink = section.get_string("sink");
    if (!sink) return fail(sink.error());
    if (route.tables.empty() && route.schemas.empty()) {
      return fail(Error::configuration(
          route.where + ": [[pipeline.routes]] #" + std::to_string(i + 1) +
          ": names no tables and no schemas, so it would take every event; give it tables = "
          "[...] or schemas = [...] (events no rule takes go to [sink] anyway)"));
    }
    if (!*sink) {
      return fail(section.missing("sink",
                                  "(the name of the sink its events go to: [sink] is "
                                  "\"" +
                                      config.sinks[0].name +
                                      "\", [[sinks]] entries "
                                      "go by their name)"));
    }
    const auto at = std::find(names.begin(), names.end(), **sink);
    if (at == names.end()) {
      return fail(section.error("sink", "no sink is named " + in_quotes(**sink) +
                                            " (the sinks are " + quoted_list(names) + ")" +
                                            did_you_mean(**sink, names)));
    }
    route.sink = static_cast<std::size_t>(at - names.begin());
    CPPCDC_TRY(section.reject_unknown(false));
    config.routes.push_back(std::move(route));
  }
  return ok();
}

// Every [[sinks]] entry must receive something: from a route, as a fanout child, or as [sink].
Status check_sinks_reached(const ServerConfig& config, std::vector<Section*>& sink_sections) {
  std::vector<char> reached(config.sinks.size(), 0);
  const auto reach = [&](std::size_t i) {
    reached[i] = 1;
    for (std::size_t child : config.sinks[i].fanout) reached[child] = 1;
  };
  reach(0);
  for (const auto& route : config.routes) reach(route.sink);
  for (std::size_t i = 1; i < config.sinks.size(); ++i) {
    if (reached[i]) continue;
    return fail(sink_sections[i]->error(
        "name", "no [[pipeline.routes]] rule and no fanout sends events to " +
                    in_quotes(config.sinks[i].name) +
                    ", so it would never receive any; name it in a route's sink (or a fanout's "
                    "sinks), or remove it"));
  }
  return ok();
}

// delivery_contract = "effectively_once": the whole pipeline goes through one sink that commits
// each batch and its checkpoint record in one transaction, and the checkpoint backend keeps the
// record where that sink writes. Anything else would be two durability domains, so it is
// refused here, naming what to change.
Status check_effectively_once(Section& top, const ServerConfig& config,
                              std::vector<Section*>& sink_sections, Section* state_offset) {
  const auto contract_error = [&](const std::string& what) {
    return top.error("delivery_contract",
                     "\"effectively_once\" " + what + "; or use \"at_least_once\"");
  };
  for (std::size_t i = 0; i < config.sinks.size(); ++i) {
    if (config.sinks[i].type != "fanout") continue;
    return fail(contract_error(
        "cannot hold with the fanout " + config.sinks[i].label +
        ": one transaction cannot span its sinks; send every event to one transactional Kafka "
        "sink"));
  }
  if (config.sinks.size() > 1) {
    return fail(contract_error(
        "takes exactly one sink, and " + config.sinks[1].label +
        " is a second: each sink would commit its own transaction, and the checkpoint can be in "
        "only one of them; remove the [[sinks]] entries and [[pipeline.routes]] (the Kafka "
        "sink's topic template already gives each table its topic)"));
  }
  if (!config.routes.empty()) {
    return fail(contract_error(
        "takes exactly one sink and no routes, and the route at " + config.routes.front().where +
        " is one; remove [[pipeline.routes]] (the Kafka sink's topic template already gives "
        "each table its topic)"));
  }
  const std::string checkpoint_id = config.source->checkpoint_id();
  const auto in_sink = config.checkpoint->in_sink(checkpoint_id);
  const SinkEntry& sink = config.sinks.front();
  if (auto st = sink.configured->check_effectively_once(in_sink); !st) {
    const Error& e = st.error();
    if (e.setting_owner() == SettingOwner::kCheckpoint && state_offset != nullptr) {
      return fail(state_offset->error(e.setting().empty() ? "backend" : e.setting(),
                                      "effectively_once: " + e.message()));
    }
    if (!e.setting().empty()) {
      return fail(sink_sections.front()->error(e.setting(), "effectively_once: " + e.message()));
    }
    return fail(contract_error("cannot hold with the " + sink.type + " sink " + sink.label + ": " +
                               e.message()));
  }
  return ok();
}

// `[dead_letter]`: a JSON-lines file.
Status read_dead_letter(Section& top, ServerConfig& config) {
  auto section = top.get_table("dead_letter");
  if (!section) return fail(section.error());
  Section& dl = **section;
  if (!dl.present()) return ok();
  std::string type = "file";
  CPPCDC_CFG_ASSIGN(type, dl.get_string("type"));
  if (type != "file") {
    return fail(dl.error("type",
                         "expected \"file\" (the only dead-letter destination of this "
                         "build), found " +
                             in_quotes(type)));
  }
  DeadLetterConfig out;
  auto path = dl.get_path("path");
  if (!path) return fail(path.error());
  if (!*path) {
    return fail(dl.missing("path",
                           "(the JSON-lines file that keeps events the pipeline gives "
                           "up on)"));
  }
  if ((*path)->empty()) {
    return fail(dl.error("path", "expected a file name, found an empty string"));
  }
  out.path = **path;
  auto mode = detail::get_file_mode(dl, "file_mode");
  if (!mode) return fail(mode.error());
  out.file_mode = *mode;
  CPPCDC_TRY(dl.reject_unknown(false));
  config.dead_letter = std::move(out);
  return ok();
}

// `[admin]`: the admin HTTP server. Present means on; `listen` has a default.
Status read_admin(Section& top, ServerConfig& config) {
  auto section = top.get_table("admin");
  if (!section) return fail(section.error());
  Section& admin = **section;
  if (!admin.present()) return ok();
  AdminConfig out;
  CPPCDC_CFG_ASSIGN(out.listen, admin.get_string("listen"));
  auto address = parse_listen_address(out.listen);
  if (!address) return fail(admin.error("listen", address.error().message()));
  out.host = address->first;
  out.port = address->second;
  std::optional<std::string> token;
  std::optional<std::string> token_env;
  CPPCDC_CFG_ASSIGN(token, admin.get_string("token"));
  CPPCDC_CFG_ASSIGN(token_env, admin.get_string("token_env"));
  if (token && token_env) {
    return fail(admin.error("token_env", "set either token or token_env, not both"));
  }
  if (token) {
    if (token->empty()) {
      return fail(admin.error("token",
                              "expected a non-empty token (leave the key out for "
                              "none)"));
    }
    out.token = *token;
    out.token_origin = "token";
  }
  if (token_env) {
    const char* value = token_env->empty() ? nullptr : std::getenv(token_env->c_str());
    if (value == nullptr || *value == '\0') {
      // Not an error for the commands that only read the file (teardown, snapshot status).
      out.token_error =
          admin.error("token_env", "the environment variable " + in_quotes(*token_env) +
                                       " is not set or empty; it must hold the "
                                       "bearer token");
      out.token_origin = "token_env " + *token_env + " (not set)";
    } else {
      out.token = value;
      out.token_origin = "token_env " + *token_env;
    }
  }
  for (char c : out.token) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return fail(admin.error(token ? "token" : "token_env",
                              "the token must not contain spaces or control characters"));
    }
  }
  CPPCDC_TRY(assign_int(admin, "error_linger_ms", 0, 3'600'000, out.error_linger_ms));
  CPPCDC_TRY(admin.reject_unknown(false));
  config.admin = std::move(out);
  return ok();
}

// The sections of the file's top level, in the order messages list them.
constexpr std::string_view kTopLevel[] = {
    "delivery_contract", "source",   "sink",        "sinks", "state",
    "runtime",           "pipeline", "dead_letter", "admin", "log"};

// local_state_directory() for the file `origin` in `base`, with this build's packaged paths.
std::filesystem::path local_directory(const std::string& origin,
                                      const std::filesystem::path& base) {
  return local_state_directory(base, std::filesystem::path(origin).stem().string(),
                               packaged_conf_dir(), packaged_state_root());
}

Result<ServerConfig> read_sections(
    const toml::table& document, const std::string& origin, const std::filesystem::path& base,
    std::vector<std::pair<toml::source_position, std::string>>& unknowns) {
  register_builtin_plugins();
  const DefaultTypes& defaults = default_types();
  ServerConfig config;
  config.origin = origin;
  Section top(origin, base, &document, "");
  top.collect_unknown_keys(&unknowns);
  // A misspelt section header is found before anything that section would have set is
  // missed: the top level's names are fixed.
  for (const auto name : kTopLevel) (void)top.has(name);
  CPPCDC_TRY(top.reject_unknown(false));
  // The sections are read on after one fails, so that the unknown keys of all of them are
  // found; the first error (in the order below) is the one returned. What needs a section
  // that failed is not checked.
  std::optional<Error> first;
  const auto note = [&first](const Status& st) {
    if (!st && !first) first = st.error();
  };

  CPPCDC_CFG_ASSIGN(config.delivery_contract, top.get_string("delivery_contract"));
  if (config.delivery_contract != "at_least_once" &&
      config.delivery_contract != "effectively_once") {
    return fail(top.error("delivery_contract",
                          "expected \"at_least_once\" or \"effectively_once\", found " +
                              in_quotes(config.delivery_contract)));
  }
  Section* state_offset = nullptr;

  // [state.offset] is read first, because the source may keep files beside the checkpoint
  // (Settings::state_directory), but its errors are reported after the source's and the
  // sink's, in the order the sections are usually written.
  const Status state_read = [&]() -> Status {
    auto state = top.get_table("state");
    if (!state) return fail(state.error());
    auto offset = (*state)->get_table("offset");
    if (!offset) return fail(offset.error());
    // [state] holds only [state.offset]: a misspelt header is named before its settings.
    CPPCDC_TRY((*state)->reject_unknown(false));
    if (!(*offset)->present() && config.delivery_contract == "effectively_once") {
      if (const std::string look_alike = (*offset)->look_alike_table(); !look_alike.empty()) {
        return fail(Error::configuration(look_alike));
      }
      return fail(top.error(
          "delivery_contract",
          "\"effectively_once\" commits each batch and its checkpoint in one Kafka transaction, "
          "so the checkpoint must be kept on the Kafka sink's cluster, and this file has no "
          "[state.offset] section (the default backend, local_fs, cannot join that "
          "transaction); add\n  [state.offset]\n  backend = \"kafka_topic\"\n(it takes [sink]'s "
          "bootstrap_servers and kafka_properties unless it sets its own; topic names the "
          "checkpoint topic), or use \"at_least_once\" with [state.offset] backend = "
          "\"local_fs\" and dir = \"<checkpoint directory>\""));
    }
    auto backend = read_type(**offset, "backend", defaults.checkpoint);
    if (!backend) return fail(backend.error());
    config.checkpoint_backend = *backend;
    auto sink = top.get_table("sink");
    auto configured = configure<ConfiguredCheckpoint>(**offset, *backend, find_checkpoint_backend,
                                                      sink ? *sink : nullptr);
    if (!configured) return fail(configured.error());
    config.checkpoint = std::move(*configured);
    state_offset = *offset;
    return (*state)->reject_unknown(false);
  }();
  note([&]() -> Status {
    auto source = top.get_table("source");
    if (!source) return fail(source.error());
    Section& section = **source;
    // A source may keep small files of its own beside the checkpoint (PostgreSQL: the mark of
    // a slot it created, which teardown reads); with a backend that keeps nothing on this
    // machine (kafka_topic, redis, postgresql, memory), beside the configuration file.
    if (config.checkpoint) {
      auto dir = config.checkpoint->directory();
      if (!dir && !base.empty()) dir = local_directory(origin, base);
      section.set_state_directory(dir);
    }
    if (!section.present()) {
      if (const std::string look_alike = section.look_alike_table(); !look_alike.empty()) {
        return fail(Error::configuration(look_alike));
      }
      std::string types;
      for (const auto& t : source_type_names()) types += (types.empty() ? "" : ", ") + in_quotes(t);
      return fail(Error::configuration(origin +
                                       ": [source]: required section is missing (its "
                                       "type, one of " +
                                       types + ", and that type's settings)"));
    }
    auto type = read_type(section, "type", defaults.source);
    if (!type) return fail(type.error());
    config.source_type = *type;
    config.source_name_set = section.written("source_name");
    auto configured = configure<ConfiguredSource>(section, *type, find_source_type);
    if (!configured) return fail(configured.error());
    config.source = std::move(*configured);
    return ok();
  }());
  std::list<Section> elements;  // the [[sinks]] and [[pipeline.routes]] entries
  std::vector<Section*> sink_sections;
  note(read_sinks(top, config, elements, sink_sections));
  note(state_read);

  auto runtime = top.get_table("runtime");
  if (!runtime) return fail(runtime.error());
  note(read_runtime(**runtime, config.runtime, config.control_socket,
                    config.transform_error_policy));
  if (config.control_socket.empty() && config.checkpoint) {
    // Beside the checkpoint (or the file), named after the configuration file: two files in
    // one directory, or sharing a checkpoint directory, get a socket each, so that a command
    // that finds a cppcdc answering knows which file it runs. The name is kept short because
    // a socket path has at most 107 bytes.
    auto dir = config.checkpoint->directory();
    if (!dir && !base.empty()) dir = local_directory(origin, base);
    const std::filesystem::path name = default_control_socket_name(origin);
    config.control_socket = dir ? *dir / name : name;
  }
  if (!config.control_socket.empty() && config.control_socket.is_relative() && !base.empty()) {
    config.control_socket = (base / config.control_socket).lexically_normal();
  }

  {
    auto pipeline = top.get_table("pipeline");
    if (!pipeline) return fail(pipeline.error());
    if (const toml::node* transforms = (*pipeline)->raw("transforms")) {
      config.transforms = to_config_node(*transforms, origin);
      auto stages = parse_transform_stages(*config.transforms, "[[pipeline.transforms]]");
      if (stages) {
        config.transform_summary = summarize(*stages);
      } else {
        note(fail(stages.error()));
      }
    }
    // Routes name sinks: without every sink read, they are not checked.
    (void)(*pipeline)->raw("routes");
    if (!first) note(read_routes(**pipeline, config, elements));
    note((*pipeline)->reject_unknown(false));
  }
  const bool whole = !first.has_value();  // every section above was read
  if (whole) note(check_sinks_reached(config, sink_sections));
  if (whole && config.delivery_contract == "effectively_once") {
    note(check_effectively_once(top, config, sink_sections, state_offset));
  }
  note(read_dead_letter(top, config));
  if (whole && !config.dead_letter) {
    for (std::size_t i = 0; i < config.sinks.size(); ++i) {
      const SinkEntry& sink = config.sinks[i];
      const auto key = sink.configured ? sink.configured->dead_letter_key() : std::nullopt;
      if (!key) continue;
      note(fail(sink_sections[i]->error(
          *key,
          "this sink hands the batches its destination refuses to the dead-letter file, "
          "and this configuration has no [dead_letter] section, so they would be lost; "
          "add [dead_letter] with a path, or leave the setting at its default (a refused "
          "batch stops the pipeline)")));
      break;
    }
  }
  note(read_admin(top, config));
  if (!first && config.transform_error_policy == TransformErrorPolicy::kSkip &&
      !config.dead_letter) {
    note(fail((*runtime)->error(
        "transform_error_policy",
        "\"skip\" drops a failed event and writes it to the dead-letter file, and this "
        "configuration has no [dead_letter] section, so the event would be lost; add "
        "[dead_letter] with a path, or use \"halt\" (the default: the pipeline stops without "
        "acknowledging the batch)")));
  }

  auto log = top.get_table("log");
  if (!log) return fail(log.error());
  note(read_log(**log, config));

  note(top.reject_unknown(false));
  if (first) return fail(std::move(*first));
  return config;
}

// Reads the whole file; the unknown keys of every section it got to are listed together in
// one error (by their place in the file), ahead of any other error, which may stem from them.
Result<ServerConfig> read_document(const toml::table& document, const std::string& origin,
                                   const std::filesystem::path& base) {
  std::vector<std::pair<toml::source_position, std::string>> unknowns;
  auto config = read_sections(document, origin, base, unknowns);
  if (unknowns.empty()) return config;
  std::stable_sort(unknowns.begin(), unknowns.end(), [](const auto& a, const auto& b) {
    return a.first.line != b.first.line ? a.first.line < b.first.line
                                        : a.first.column < b.first.column;
  });
  std::string text;
  if (unknowns.size() == 1) {
    text = unknowns.front().second;
  } else {
    text = origin + ": " + std::to_string(unknowns.size()) +
           " unknown keys or tables (each below; fix them together):";
    for (const auto& [where, line] : unknowns) text += "\n  " + line;
  }
  if (!config) {
    const Error& e = config.error();
    const std::string also =
        e.chain().empty() && e.kind() == ErrorKind::kConfiguration ? e.message() : e.report();
    // Not when it is one of those, said again (a misspelt [state.offset] header that
    // effectively_once requires is listed, and is what that check then names too).
    const bool repeated = std::any_of(unknowns.begin(), unknowns.end(),
                                      [&](const auto& u) { return u.second.starts_with(also); });
    if (!repeated)
      text += "\nthe file also has this error, which may come from one of those: " + also;
  }
  return fail(Error::configuration(text));
}

#undef CPPCDC_CFG_ASSIGN

// sun_path is a fixed 108-byte array: a longer path cannot be bound or connected to.
Status check_control_socket_length(const ServerConfig& config) {
  const std::string& path = config.control_socket.native();
  if (path.size() <= kMaxControlSocketPath) return ok();
  return fail(Error::configuration(
      config.origin + ": [runtime] control_socket: the control socket's path " + in_quotes(path) +
      " is " + std::to_string(path.size()) +
      " bytes long, but a Unix socket path can have at most " +
      std::to_string(kMaxControlSocketPath) +
      "; set [runtime] control_socket to a shorter path (its default is "
      "<config file name>.sock in the checkpoint directory)"));
}

// `[state.offset] backend = "kafka_topic"` keeps its records on the sink's cluster unless told
// otherwise: the bootstrap_servers and kafka_properties it does not set are [sink]'s.
void inherit_sink_cluster(toml::table& document) {
  toml::table* state = document["state"].as_table();
  toml::table* offset = state != nullptr ? (*state)["offset"].as_table() : nullptr;
  const toml::table* sink = document["sink"].as_table();
  if (offset == nullptr || sink == nullptr) return;
  const auto backend = (*offset)["backend"].value<std::string>();
  if (!backend || *backend != "kafka_topic") return;
  // Which keys were taken, under a key of the backend's own (the kafka_topic backend names
  // [sink]'s key in its errors about them: where the user wrote the value).
  toml::array inherited;
  for (const char* key : {"bootstrap_servers", "kafka_properties"}) {
    const toml::node* node = sink->get(key);
    if (node != nullptr && !offset->contains(key)) {
      offset->insert(key, *node);
      inherited.push_back(key);
    }
  }
  if (!inherited.empty()) offset->insert_or_assign("_inherited_from_sink", std::move(inherited));
  // A transactional Kafka sink's transactional_id: the backend writes it beside the record and
  // refuses a start while another key of the topic was committed with the same one.
  const auto type = (*sink)["type"].value<std::string>();
  const auto mode = (*sink)["delivery_mode"].value<std::string>();
  const auto transactional_id = (*sink)["transactional_id"].value<std::string>();
  if (type && *type == "kafka" && mode && *mode == "transactional" && transactional_id &&
      !transactional_id->empty()) {
    offset->insert_or_assign("_sink_transactional_id", *transactional_id);
  }
}

// The database a libpq connection string connects to: its dbname (key = value form, or the
// path of a postgresql:// URI), else what libpq falls back to (PGDATABASE, then the user:
// user, PGUSER). Empty when none says.
std::string database_of_dsn(const std::string& dsn) {
  std::string dbname;
  std::string user;
  const auto percent_decoded = [](std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] == '%' && i + 2 < in.size() &&
          std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
        out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += in[i];
      }
    }
    return out;
  };
  if (dsn.rfind("postgresql://", 0) == 0 || dsn.rfind("postgres://", 0) == 0) {
    const std::string_view rest = std::string_view(dsn).substr(dsn.find("://") + 3);
    const std::size_t query = rest.find('?');
    const std::string_view before_query = rest.substr(0, query);
    const std::size_t at = before_query.find('@');
    if (at != std::string_view::npos) {
      user = percent_decoded(before_query.substr(0, before_query.find_first_of(":@")));
    }
    const std::size_t slash = before_query.find('/', at == std::string_view::npos ? 0 : at);
    if (slash != std::string_view::npos) dbname = percent_decoded(before_query.substr(slash + 1));
    if (query != std::string_view::npos) {
      std::string_view params = rest.substr(query + 1);
      while (!params.empty()) {
        const std::string_view param = params.substr(0, params.find('&'));
        params.remove_prefix(std::min(params.size(), param.size() + 1));
        const std::size_t eq = param.find('=');
        if (eq == std::string_view::npos) continue;
        if (param.substr(0, eq) == "dbname") dbname = percent_decoded(param.substr(eq + 1));
        if (param.substr(0, eq) == "user") user = percent_decoded(param.substr(eq + 1));
      }
    }
  } else {
    // key = value pairs; a value may be single-quoted, with \' and \\ inside.
    std::size_t i = 0;
    const auto skip_space = [&] {
      while (i < dsn.size() && std::isspace(static_cast<unsigned char>(dsn[i]))) ++i;
    };
    while (true) {
      skip_space();
      if (i >= dsn.size()) break;
      const std::size_t key_start = i;
      while (i < dsn.size() && dsn[i] != '=' && !std::isspace(static_cast<unsigned char>(dsn[i]))) {
        ++i;
      }
      const std::string key = dsn.substr(key_start, i - key_start);
      skip_space();
      if (i >= dsn.size() || dsn[i] != '=') break;
      ++i;
      skip_space();
      std::string value;
      if (i < dsn.size() && dsn[i] == '\'') {
        ++i;
        while (i < dsn.size() && dsn[i] != '\'') {
          if (dsn[i] == '\\' && i + 1 < dsn.size()) ++i;
          value += dsn[i++];
        }
        ++i;
      } else {
        while (i < dsn.size() && !std::isspace(static_cast<unsigned char>(dsn[i]))) {
          if (dsn[i] == '\\' && i + 1 < dsn.size()) ++i;
          value += dsn[i++];
        }
      }
      if (key == "dbname") dbname = value;
      if (key == "user") user = value;
    }
  }
  if (!dbname.empty()) return dbname;
  if (const char* env = std::getenv("PGDATABASE"); env != nullptr && *env != '\0') return env;
  if (!user.empty()) return user;
  if (const char* env = std::getenv("PGUSER"); env != nullptr && *env != '\0') return env;
  return {};
}

// `codec = "debezium_json"` writes the source block of the connector the source is, unless
// its codec_options say otherwise: connector from the source type (MariaDB's is "mariadb",
// which no offset tells apart from MySQL's), and for PostgreSQL source.db, the database the
// dsn connects to.
void inherit_debezium_source(toml::table& document) {
  const toml::table* source = document["source"].as_table();
  if (source == nullptr) return;
  const std::string type = (*source)["type"].value<std::string>().value_or(default_types().source);
  std::string connector;
  if (type == "postgres") connector = "postgresql";
  if (type == "mysql" || type == "mariadb") connector = type;
  if (connector.empty()) return;
  std::string database;
  if (type == "postgres")
    database = database_of_dsn((*source)["dsn"].value<std::string>().value_or(""));
  const auto inherit = [&](toml::table& sink) {
    if (sink["codec"].value<std::string>().value_or("") != "debezium_json") return;
    if (sink.contains("codec_options") && !sink["codec_options"].is_table()) return;
    if (!sink.contains("codec_options")) sink.insert("codec_options", toml::table{});
    toml::table& options = *sink["codec_options"].as_table();
    if (!options.contains("connector")) options.insert("connector", connector);
    const auto chosen = options["connector"].value<std::string>();
    if (chosen && *chosen == "postgresql" && type == "postgres" && !database.empty() &&
        !options.contains("database")) {
      options.insert("database", database);
    }
  };
  if (toml::table* sink = document["sink"].as_table()) inherit(*sink);
  if (toml::array* sinks = document["sinks"].as_array()) {
    for (auto& entry : *sinks) {
      if (toml::table* sink = entry.as_table()) inherit(*sink);
    }
  }
}

// Parses the text; relative paths are resolved against `base` unless it is empty.
Result<ServerConfig> parse_config(std::string_view toml_text, const std::string& origin,
                                  const std::filesystem::path& base) {
  toml::table document;
  try {
    document = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    std::string hint;
    // toml++ reads a bare word after '=' as a number or a boolean and reports that; the usual
    // cause is a string without its quotes (mode = incremental).
    std::string what(e.description());
    if (what.find("redefine") != std::string::npos) {
      // toml++ 3.3 quotes the key of a duplicate badly ('"sosocket.timeout.ms"' for
      // "socket.timeout.ms"); the line and column say which one, so the message does not
      // repeat it.
      what =
          "this key (or table) was already given earlier in the same table; TOML takes "
          "each once: remove one of the two";
    } else if (what.find("parsing") != std::string::npos &&
               what.find("header") == std::string::npos &&
               (what.find("floating-point") != std::string::npos ||
                what.find("integer") != std::string::npos ||
                what.find("boolean") != std::string::npos ||
                what.find("expected") != std::string::npos ||
                what.find("value type") != std::string::npos)) {
      hint = " (a text value needs double quotes: key = \"value\")";
    }
    return fail(
        Error::configuration(locate(origin, e.source()) + ": invalid TOML: " + what + hint));
  }
  // Keys starting with '_' in [state.offset] are the ones inherit_sink_cluster adds; one
  // written in the file would pass for what the sink says.
  if (const toml::table* state = document["state"].as_table()) {
    if (const toml::table* offset = (*state)["offset"].as_table()) {
      for (auto&& [key, node] : *offset) {
        if (key.str().empty() || key.str().front() != '_') continue;
        return fail(Error::configuration(
            locate(origin, key.source().begin.line > 0 ? key.source() : node.source()) +
            ": [state.offset] " + std::string(key.str()) +
            ": keys starting with '_' are set by cppcdc itself (from [sink]), not in the file; "
            "remove it"));
      }
    }
  }
  inherit_sink_cluster(document);
  inherit_debezium_source(document);
  auto config = read_document(document, origin, base);
  if (config && config->control_socket.is_absolute()) {
    CPPCDC_TRY(check_control_socket_length(*config));
  }
  return config;
}

}  // namespace

Result<ServerConfig> parse_server_config(std::string_view toml_text, const std::string& origin) {
  return parse_config(toml_text, origin, {});
}

Result<ServerConfig> load_server_config(const std::filesystem::path& path) {
  const std::string origin = path.string();
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return fail(Error::configuration("cannot read " + origin + ": " + std::strerror(errno) +
                                     "; pass the path of cdc.toml with --config"));
  }
  std::string text;
  char buffer[8192];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int err = errno;
  std::fclose(file);
  if (failed) {
    return fail(Error::configuration("cannot read " + origin + ": " + std::strerror(err)));
  }
  // Relative paths in the file are relative to the file, not to wherever cppcdc is started
  // from: the same config must always find the same checkpoint.
  auto config = parse_config(text, origin, std::filesystem::absolute(path).parent_path());
  if (!config) return config;
  CPPCDC_TRY(check_control_socket_length(*config));
  return config;
}

std::string setting_label(SettingOwner owner, const std::string& path) {
  std::string section;
  switch (owner) {
    case SettingOwner::kNone:
      return "";
    case SettingOwner::kSource:
      section = "source";
      break;
    case SettingOwner::kSink:
      section = "sink";
      break;
    case SettingOwner::kCheckpoint:
      section = "state.offset";
      break;
  }
  const auto [table, key] = split_setting_path(path);
  if (!table.empty()) section += "." + table;
  return "[" + section + "] " + key;
}

std::string render_error(const Error& error) {
  return error.report(setting_label(error.setting_owner(), error.setting()));
}

Status check_admin_token(const ServerConfig& config) {
  if (config.admin && config.admin->token_error) return fail(*config.admin->token_error);
  return {};
}

std::string describe_config(const ServerConfig& config) {
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  // "role:" padded to the value column (a longer one followed by one space), then the text.
  auto entry = [&line](std::string label, const std::string& text) {
    label.resize(std::max<std::size_t>(label.size() + 1, 20), ' ');
    line(label + text);
  };
  entry("configuration:", config.origin);
  entry("delivery_contract:", config.delivery_contract);
  const Description source = config.source->describe();
  entry("source:", source.headline);
  for (const auto& [label, text] : source.details) {
    if (label.empty()) {
      line("    " + text);
    } else {
      entry("  " + label + ":", text);
    }
  }
  // Each sink: its headline, its plugin's details, its batching.
  const auto describe_sink = [&](const SinkEntry& s, const std::string& label,
                                 const std::string& indent) {
    if (s.type == "fanout") {
      std::vector<std::string> names;
      for (std::size_t c : s.fanout) names.push_back(config.sinks[c].name);
      entry(label, "fanout to " + quoted_list(names) + " (every event to each)");
      return;
    }
    const Description d = s.configured->describe();
    entry(label, d.headline);
    for (const auto& [key, text] : d.details) entry(indent + key + ":", text);
    std::string batching;
    const auto add = [&batching](const std::string& text) {
      batching += (batching.empty() ? "" : ", ") + text;
    };
    if (s.batching.max_events) add("batch_max_events " + std::to_string(s.batching.max_events));
    if (s.batching.flush_interval_events) {
      add("sink_flush_interval_events " + std::to_string(s.batching.flush_interval_events));
    }
    if (s.batching.max_delay.count()) {
      add("batch_max_delay_ms " + std::to_string(s.batching.max_delay.count()));
    }
    if (!batching.empty()) entry(indent + "batching:", batching);
  };
  const SinkEntry& main_sink = config.sinks.front();
  describe_sink(main_sink, "sink:", "  ");
  if (config.sinks.size() > 1 || !config.routes.empty()) {
    entry("  name:", in_quotes(main_sink.name) + " (events no route takes go here)");
  }
  for (std::size_t i = 1; i < config.sinks.size(); ++i) {
    describe_sink(config.sinks[i], "sinks." + config.sinks[i].name + ":", "  ");
  }
  if (!config.routes.empty()) {
    entry("routes:", detail::counted(config.routes.size(), "rule") +
                         ", tried in order, the first match wins; the rest go to " +
                         in_quotes(main_sink.name));
    for (std::size_t i = 0; i < config.routes.size(); ++i) {
      const auto& r = config.routes[i];
      std::string line = "    " + std::to_string(i + 1) + ".";
      if (!r.tables.empty()) line += " tables=" + join_names(r.tables);
      if (!r.schemas.empty()) line += " schemas=" + join_names(r.schemas);
      line += " -> " + in_quotes(config.sinks[r.sink].name);
      out += line + "\n";
    }
  }
  entry("checkpoint:", config.checkpoint->describe(config.source->checkpoint_id()));
  const auto& rt = config.runtime;
  entry("runtime:", "max_buffer_size " + std::to_string(rt.max_buffer_size) +
                        ", max_poll_wait_ms " + std::to_string(rt.max_poll_wait_ms));
  entry("  duplicates:",
        rt.idempotency
            ? "suppressed, window of " + std::to_string(rt.idempotency->capacity) + " events" +
                  (rt.idempotency->ttl_ms
                       ? ", forgotten after " + std::to_string(rt.idempotency->ttl_ms) + " ms"
                       : std::string())
            : std::string("not suppressed (idempotency = false)"));
  entry("  transactions:", std::string(to_string(rt.transaction_boundary)) +
                               (rt.transaction_boundary == TransactionBoundaryPolicy::kSplit
                                    ? " (a batch may end inside a transaction)"
                                    : " (every batch ends on a transaction boundary)"));
  const auto& retry = rt.connection_retry;
  entry("  connection retry:",
        (retry.max_retries ? std::to_string(*retry.max_retries) + " retries in a row"
                           : std::string("no retry budget (the circuit breaker decides)")) +
            ", initial delay " + std::to_string(retry.initial_delay_ms) + " ms, max delay " +
            std::to_string(retry.max_delay_ms) + " ms");
  const auto& breaker = rt.breaker;
  entry("  circuit breaker:", "opens after " + std::to_string(breaker.consecutive_threshold) +
                                  " recoverable errors in a row, cooldown " +
                                  std::to_string(breaker.cooldown_ms) + " ms, error state after " +
                                  std::to_string(breaker.max_open_cycles) + " open cycles");
  entry("  max event bytes:",
        rt.max_event_bytes == 0 ? std::string("no limit") : std::to_string(rt.max_event_bytes));
  entry("  control socket:", config.control_socket.string() +
                                 " (`cppcdc snapshot ...` commands reach the running pipeline "
                                 "here)");
  if (config.transform_summary.empty()) {
    entry("transforms:", "none");
  } else {
    entry("transforms:", std::to_string(config.transform_summary.size()) + " stage(s), in order");
    for (const auto& stage : config.transform_summary) line("    " + stage);
  }
  entry("  error policy:", std::string(to_string(config.transform_error_policy)));
  if (config.dead_letter) {
    entry("dead letters:", config.dead_letter->path.string() + " (JSON lines, file_mode " +
                               detail::format_file_mode(config.dead_letter->file_mode) + ")");
  } else {
    entry("dead letters:", "none ([dead_letter] is not configured)");
  }
  if (config.admin) {
    entry("admin:",
          "http://" + config.admin->listen + " (/livez /readyz /metrics /admin/...), " +
              (config.admin->token.empty()
                   ? std::string(is_loopback_host(config.admin->host)
                                     ? "no token"
                                     : "no token (WARNING: not a loopback address, so anyone "
                                       "who reaches it can read the metrics and steer "
                                       "snapshots; set token or token_env, or listen on "
                                       "127.0.0.1)")
                   : "bearer token from " + config.admin->token_origin) +
              ", error_linger_ms " + std::to_string(config.admin->error_linger_ms) +
              (config.admin->error_linger_ms > 0
                   ? std::string(" (/livez 503 for that long before exiting on an error)")
                   : std::string(" (exits at once on an error)")));
  } else {
    entry("admin:", "off ([admin] is not configured)");
  }
  entry("log:", "format " + config.log_format + ", level " + config.log_level);
  return out;
}

// Defined here rather than in admin_http.cpp so that the configuration reader (and its fuzz
// target) needs no HTTP server code.
bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Result<std::pair<std::string, int>> parse_listen_address(std::string_view text) {
  std::string host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail(
          Error::configuration("expected \"[ipv6]:port\", found \"" + std::string(text) + "\""));
    }
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return fail(Error::configuration(
          "expected \"host:port\" (e.g. \"127.0.0.1:9464\"), found \"" + std::string(text) + "\""));
    }
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (host.empty()) {
    return fail(Error::configuration("the host is missing in \"" + std::string(text) +
                                     "\" (use 0.0.0.0 for every address, 127.0.0.1 for "
                                     "loopback only)"));
  }
  int port = -1;
  if (!port_text.empty() && port_text.size() <= 5 &&
      port_text.find_first_not_of("0123456789") == std::string_view::npos) {
    port = std::stoi(std::string(port_text));
  }
  if (port < 0 || port > 65535) {
    return fail(Error::configuration("expected a port from 0 to 65535 after the host, found \"" +
                                     std::string(port_text) + "\""));
  }
  return std::make_pair(std::move(host), port);
}

}  // namespace cppcdc::server
