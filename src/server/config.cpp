#include "server/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace cppcdc::server {
namespace {

constexpr std::int64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();

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

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// "file:line:col" when toml++ recorded a position, else just "file".
std::string locate(const std::string& origin, const toml::source_region& where) {
  std::string out = origin;
  if (where.begin.line > 0) {
    out += ':' + std::to_string(where.begin.line) + ':' + std::to_string(where.begin.column);
  }
  return out;
}

// Levenshtein distance, for "did you mean" hints on short key names.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// One table of the document. Reading a key through it records the key as known, so that
// reject_unknown() can refuse everything else (typos must not fall back to defaults).
class Section {
 public:
  Section(const std::string& origin, const toml::table* table, std::string name)
      : origin_(origin), table_(table), name_(std::move(name)) {}

  bool present() const noexcept { return table_ != nullptr; }

  // "[sink] path", or just "delivery_contract" at the top level.
  std::string label(std::string_view key) const {
    if (name_.empty()) return std::string(key);
    return "[" + name_ + "] " + std::string(key);
  }

  Error error(std::string_view key, const toml::node* node, const std::string& what) const {
    const toml::source_region where = node != nullptr ? node->source() : toml::source_region{};
    return Error::configuration(locate(origin_, where) + ": " + label(key) + ": " + what);
  }

  Error missing(std::string_view key, const std::string& why) const {
    std::string hint;
    if (table_ != nullptr) {
      // A required key is often missing because it was misspelled: name the look-alike.
      for (auto&& [present, node] : *table_) {
        if (present.str() != key && edit_distance(present.str(), key) <= 2) {
          hint = "; did you mean " + std::string(key) + " where the file says " +
                 std::string(present.str()) + " (" + locate(origin_, present.source()) + ")?";
          break;
        }
      }
    }
    return Error::configuration(origin_ + ": " + label(key) + ": required" +
                                (why.empty() ? std::string() : " " + why) + hint);
  }

  Error missing_section(const std::string& what) const {
    return Error::configuration(origin_ + ": [" + name_ + "]: required section is missing" +
                                (what.empty() ? std::string() : " (" + what + ")"));
  }

  const toml::node* take(std::string_view key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
    if (table_ == nullptr) return nullptr;
    return table_->get(key);
  }

  Result<std::optional<std::string>> get_string(std::string_view key) {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<std::string>();
    if (const auto* value = node->as_string()) return std::optional<std::string>(value->get());
    return fail(wrong_type(key, *node, "a string"));
  }

  Result<std::optional<bool>> get_bool(std::string_view key) {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<bool>();
    if (const auto* value = node->as_boolean()) return std::optional<bool>(value->get());
    return fail(wrong_type(key, *node, "a boolean"));
  }

  // An integer within [min, max].
  Result<std::optional<std::int64_t>> get_int(std::string_view key, std::int64_t min,
                                              std::int64_t max) {
    const toml::node* node = take(key);
    if (node == nullptr) return std::optional<std::int64_t>();
    const auto* value = node->as_integer();
    if (value == nullptr) return fail(wrong_type(key, *node, "an integer"));
    const std::int64_t v = value->get();
    if (v < min || v > max) {
      return fail(error(key, node,
                        "expected an integer from " + std::to_string(min) + " to " +
                            std::to_string(max) + ", found " + std::to_string(v)));
    }
    return std::optional<std::int64_t>(v);
  }

  // A sub-table, or a Section that is not present when the key is absent.
  Result<Section> get_table(std::string_view key) {
    const toml::node* node = take(key);
    const std::string child = name_.empty() ? std::string(key) : name_ + "." + std::string(key);
    if (node == nullptr) return Section(origin_, nullptr, child);
    if (const auto* table = node->as_table()) return Section(origin_, table, child);
    return fail(wrong_type(key, *node, "a table"));
  }

  // Refuses the first key that was never asked for, listing the ones this section accepts.
  Status reject_unknown() const {
    if (table_ == nullptr) return ok();
    for (auto&& [key, node] : *table_) {
      if (std::find(known_.begin(), known_.end(), key.str()) != known_.end()) continue;
      std::string expected;
      for (const auto& k : known_) {
        if (!expected.empty()) expected += ", ";
        expected += k;
      }
      const toml::source_region where = key.source().begin.line > 0 ? key.source() : node.source();
      std::string what = "unknown key";
      if (name_.empty() && (key.str() == "sinks" || key.str() == "pipeline" ||
                            key.str() == "admin" || key.str() == "schema_history")) {
        what += " (routes, transforms, extra sinks and the admin server are not built yet)";
      }
      return fail(Error::configuration(locate(origin_, where) + ": " + label(key.str()) + ": " +
                                       what + "; expected one of: " + expected));
    }
    return ok();
  }

 private:
  Error wrong_type(std::string_view key, const toml::node& node, std::string_view expected) const {
    return error(
        key, &node,
        "expected " + std::string(expected) + ", found " + std::string(describe_type(node.type())));
  }

  const std::string& origin_;
  const toml::table* table_;
  std::string name_;
  std::vector<std::string> known_;
};

// Shorthands that unwrap a Result<std::optional<T>> into `target` when the key is present.
#define CPPCDC_CFG_ASSIGN(target, expr)                 \
  do {                                                  \
    auto cfg_value_ = (expr);                           \
    if (!cfg_value_) return fail(cfg_value_.error());   \
    if (cfg_value_->has_value()) target = **cfg_value_; \
  } while (false)

// Reads an optional integer key into `target` (left alone when the key is absent). One call
// per key: no temporary is shared between keys, so an absent key can never take the value
// of the key read before it.
template <typename T>
Status assign_int(Section& section, std::string_view key, std::int64_t min, std::int64_t max,
                  T& target) {
  auto value = section.get_int(key, min, max);
  if (!value) return fail(value.error());
  if (value->has_value()) target = static_cast<T>(**value);
  return ok();
}

bool is_slot_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

Status read_tables(Section& source, std::vector<std::string>& out) {
  const toml::node* node = source.take("tables");
  if (node == nullptr) {
    return fail(source.missing("tables", "(a non-empty array of \"schema.table\" names)"));
  }
  const auto* array = node->as_array();
  if (array == nullptr) {
    return fail(source.error("tables", node,
                             "expected an array of \"schema.table\" strings, found " +
                                 std::string(describe_type(node->type()))));
  }
  if (array->empty()) {
    return fail(source.error("tables", node,
                             "expected at least one \"schema.table\" name, found an empty array"));
  }
  std::set<std::string> seen;
  for (const toml::node& element : *array) {
    const auto* text = element.as_string();
    if (text == nullptr) {
      return fail(source.error("tables", &element,
                               "expected a \"schema.table\" string, found " +
                                   std::string(describe_type(element.type()))));
    }
    const std::string& name = text->get();
    std::string qualified;
    const auto dot = name.find('.');
    if (dot == std::string::npos) {
      qualified = "public." + name;
    } else {
      qualified = name;
    }
    const auto qdot = qualified.find('.');
    if (name.empty() || qdot == 0 || qdot + 1 == qualified.size() ||
        qualified.find('.', qdot + 1) != std::string::npos) {
      return fail(source.error("tables", &element,
                               "expected \"schema.table\" (or \"table\" for schema public), "
                               "found " +
                                   in_quotes(name)));
    }
    if (!seen.insert(qualified).second) {
      return fail(
          source.error("tables", &element, "table " + in_quotes(qualified) + " is listed twice"));
    }
    out.push_back(std::move(qualified));
  }
  return ok();
}

// Snapshot mode names in quotes, in the given order: "a", "b" or "c".
std::string quoted_modes(std::initializer_list<pg::SnapshotMode> modes) {
  std::string out;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (i > 0) out += i + 1 == modes.size() ? " or " : ", ";
    out += in_quotes(pg::to_string(modes.begin()[i]));
  }
  return out;
}

// [source.snapshot]: mode, chunk_size, tables (each also captured), table_conditions.
Status read_snapshot(Section& snap, pg::PostgresSourceConfig& out) {
  std::optional<std::string> mode;
  CPPCDC_CFG_ASSIGN(mode, snap.get_string("mode"));
  if (mode) {
    using M = pg::SnapshotMode;
    constexpr M kModes[] = {M::kNever, M::kInitial, M::kInitialOnly, M::kWhenNeeded,
                            M::kIncremental};
    const auto* known = std::find_if(std::begin(kModes), std::end(kModes),
                                     [&](M m) { return *mode == pg::to_string(m); });
    if (known != std::end(kModes)) {
      out.snapshot_mode = *known;
    } else {
      return fail(snap.error("mode", snap.take("mode"),
                             "expected " +
                                 quoted_modes({M::kInitial, M::kNever, M::kInitialOnly,
                                               M::kWhenNeeded, M::kIncremental}) +
                                 ", found " + in_quotes(*mode)));
    }
  }
  CPPCDC_TRY(assign_int(snap, "chunk_size", 1, 10'000'000, out.snapshot_chunk_size));
  if (snap.present() && snap.take("tables") != nullptr) {
    CPPCDC_TRY(read_tables(snap, out.snapshot_tables));
    for (const auto& t : out.snapshot_tables) {
      if (std::find(out.tables.begin(), out.tables.end(), t) == out.tables.end()) {
        return fail(snap.error("tables", snap.take("tables"),
                               "table " + in_quotes(t) +
                                   " is not captured; add it to [source] tables first"));
      }
    }
  }
  const toml::node* conditions = snap.take("table_conditions");
  if (conditions != nullptr) {
    const auto* table = conditions->as_table();
    if (table == nullptr) {
      return fail(snap.error("table_conditions", conditions,
                             "expected a table of \"schema.table\" = \"SQL condition\""));
    }
    for (auto&& [key, node] : *table) {
      const auto* text = node.as_string();
      std::string name(key.str());
      if (name.find('.') == std::string::npos) name = "public." + name;
      if (text == nullptr || text->get().empty()) {
        return fail(snap.error("table_conditions", &node,
                               "the condition for " + in_quotes(name) +
                                   " must be a non-empty SQL string"));
      }
      if (std::find(out.tables.begin(), out.tables.end(), name) == out.tables.end()) {
        return fail(snap.error("table_conditions", &node,
                               "table " + in_quotes(name) + " is not captured"));
      }
      out.snapshot_table_conditions.emplace_back(name, text->get());
    }
  }
  return snap.reject_unknown();
}

Status read_source(Section& source, pg::PostgresSourceConfig& out) {
  if (!source.present()) {
    return fail(source.missing_section("with type = \"postgres\", dsn and tables"));
  }
  std::string type = "postgres";
  CPPCDC_CFG_ASSIGN(type, source.get_string("type"));
  if (type == "mysql" || type == "mariadb" || type == "sqlserver") {
    return fail(source.error(
        "type", source.take("type"),
        "source type " + in_quotes(type) + " is not built yet; only \"postgres\" is available"));
  }
  if (type != "postgres") {
    return fail(source.error("type", source.take("type"),
                             "expected \"postgres\", found " + in_quotes(type)));
  }

  std::optional<std::string> dsn;
  CPPCDC_CFG_ASSIGN(dsn, source.get_string("dsn"));
  if (!dsn) {
    return fail(source.missing("dsn", "(a libpq connection string or postgresql:// URI)"));
  }
  if (dsn->empty()) {
    return fail(source.error("dsn", source.take("dsn"),
                             "expected a libpq connection string, found an empty string"));
  }
  out.dsn = std::move(*dsn);

  CPPCDC_CFG_ASSIGN(out.slot_name, source.get_string("slot_name"));
  if (out.slot_name.empty() || out.slot_name.size() > 63 ||
      !std::all_of(out.slot_name.begin(), out.slot_name.end(), is_slot_char)) {
    return fail(source.error("slot_name", source.take("slot_name"),
                             "expected 1 to 63 characters from a-z, 0-9 and _ (a PostgreSQL "
                             "replication slot name), found " +
                                 in_quotes(out.slot_name)));
  }
  CPPCDC_CFG_ASSIGN(out.publication_name, source.get_string("publication_name"));
  if (out.publication_name.empty() || out.publication_name.size() > 63) {
    return fail(
        source.error("publication_name", source.take("publication_name"),
                     "expected a name of 1 to 63 bytes, found " + in_quotes(out.publication_name)));
  }
  if (auto st = read_tables(source, out.tables); !st) return st;
  CPPCDC_CFG_ASSIGN(out.create_slot, source.get_bool("create_slot"));
  CPPCDC_CFG_ASSIGN(out.create_publication, source.get_bool("create_publication"));
  CPPCDC_CFG_ASSIGN(out.accept_slot_ahead_of_checkpoint,
                    source.get_bool("accept_slot_ahead_of_checkpoint"));
  CPPCDC_CFG_ASSIGN(out.capture_logical_messages, source.get_bool("capture_logical_messages"));
  CPPCDC_CFG_ASSIGN(out.stream_in_progress, source.get_bool("stream_in_progress"));
  {
    auto snap = source.get_table("snapshot");
    if (!snap) return fail(snap.error());
    CPPCDC_TRY(read_snapshot(*snap, out));
  }
  CPPCDC_CFG_ASSIGN(out.source_name, source.get_string("source_name"));
  if (out.source_name.empty()) {
    return fail(source.error("source_name", source.take("source_name"),
                             "expected a non-empty name, found an empty string"));
  }
  CPPCDC_TRY(assign_int(source, "status_interval_ms", 1, kMaxU32, out.status_interval_ms));
  CPPCDC_TRY(assign_int(source, "wal_receiver_timeout_ms", 0, kMaxU32,
                        out.wal_receiver_timeout_ms));
  std::optional<std::string> transport;
  CPPCDC_CFG_ASSIGN(transport, source.get_string("wal_transport"));
  if (transport) {
    if (*transport == "streaming_replication") {
      out.transport = pg::WalTransport::kStreamingReplication;
    } else if (*transport == "sql_peek") {
      out.transport = pg::WalTransport::kSqlPeek;
    } else {
      return fail(source.error("wal_transport", source.take("wal_transport"),
                               "expected \"streaming_replication\" or \"sql_peek\", found " +
                                   in_quotes(*transport)));
    }
  }
  if (out.stream_in_progress && out.transport == pg::WalTransport::kSqlPeek) {
    return fail(source.error("stream_in_progress", source.take("stream_in_progress"),
                             "in-progress transactions are streamed only over "
                             "wal_transport = \"streaming_replication\"; remove "
                             "stream_in_progress or that wal_transport"));
  }
  CPPCDC_TRY(assign_int(source, "peek_interval_ms", 1, kMaxU32, out.peek_interval_ms));
  CPPCDC_TRY(assign_int(source, "peek_statement_timeout_ms", 100, kMaxU32,
                        out.peek_statement_timeout_ms));
  CPPCDC_TRY(assign_int(source, "peek_max_changes", 1, kMaxU32, out.peek_max_changes));
  constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;
  CPPCDC_TRY(assign_int(source, "spill_threshold_bytes", 0, kMaxBytes, out.spill_threshold_bytes));
  CPPCDC_TRY(assign_int(source, "max_queued_bytes", 1, kMaxBytes, out.max_queued_bytes));
  std::optional<std::string> spill_dir;
  CPPCDC_CFG_ASSIGN(spill_dir, source.get_string("spill_dir"));
  if (spill_dir) {
    if (spill_dir->empty()) {
      return fail(source.error("spill_dir", source.take("spill_dir"),
                               "expected a directory, found an empty string (leave the key out "
                               "for the system's temporary directory)"));
    }
    out.spill_dir = *spill_dir;
  }
  return source.reject_unknown();
}

Status read_sink(Section& sink, SinkConfig& out) {
  CPPCDC_CFG_ASSIGN(out.type, sink.get_string("type"));
  std::optional<std::string> path;
  CPPCDC_CFG_ASSIGN(path, sink.get_string("path"));
  if (out.type == "file") {
    if (!path) return fail(sink.missing("path", "when type = \"file\""));
    if (path->empty()) {
      return fail(
          sink.error("path", sink.take("path"), "expected a file name, found an empty string"));
    }
    out.path = *path;
  } else if (out.type == "stdout") {
    if (path) {
      return fail(sink.error("path", sink.take("path"),
                             "only used when type = \"file\" (type is \"stdout\")"));
    }
  } else {
    return fail(sink.error("type", sink.take("type"),
                           "expected \"file\" or \"stdout\", found " + in_quotes(out.type)));
  }
  return sink.reject_unknown();
}

Status read_state(Section& state, StateConfig& out) {
  auto offset = state.get_table("offset");
  if (!offset) return fail(offset.error());
  CPPCDC_CFG_ASSIGN(out.offset.backend, offset->get_string("backend"));
  std::optional<std::string> dir;
  CPPCDC_CFG_ASSIGN(dir, offset->get_string("dir"));
  if (out.offset.backend == "local_fs") {
    if (!dir) {
      return fail(offset->missing("dir", "when backend = \"local_fs\" (the checkpoint directory)"));
    }
    if (dir->empty()) {
      return fail(
          offset->error("dir", offset->take("dir"), "expected a directory, found an empty string"));
    }
    out.offset.dir = *dir;
  } else if (out.offset.backend == "memory") {
    if (dir) {
      return fail(offset->error("dir", offset->take("dir"),
                                "only used when backend = \"local_fs\" (backend is \"memory\")"));
    }
  } else {
    return fail(offset->error(
        "backend", offset->take("backend"),
        "expected \"local_fs\" or \"memory\", found " + in_quotes(out.offset.backend)));
  }
  if (auto st = offset->reject_unknown(); !st) return st;
  return state.reject_unknown();
}

Status read_runtime(Section& runtime, RuntimeOptions& out, std::filesystem::path& control_socket) {
  CPPCDC_TRY(assign_int(runtime, "max_buffer_size", 1, 100'000'000, out.max_buffer_size));
  CPPCDC_TRY(assign_int(runtime, "max_poll_wait_ms", 0, kMaxU32, out.max_poll_wait_ms));
  std::int64_t retries = out.connection_retry.max_retries
                             ? static_cast<std::int64_t>(*out.connection_retry.max_retries)
                             : -1;
  CPPCDC_TRY(assign_int(runtime, "connection_retry_max_retries", -1, kMaxU32, retries));
  out.connection_retry.max_retries =
      retries < 0 ? std::nullopt : std::optional<std::uint32_t>(static_cast<std::uint32_t>(retries));
  CPPCDC_TRY(assign_int(runtime, "connection_retry_initial_delay_ms", 0, kMaxU32,
                        out.connection_retry.initial_delay_ms));
  CPPCDC_TRY(assign_int(runtime, "connection_retry_max_delay_ms", 0, kMaxU32,
                        out.connection_retry.max_delay_ms));
  if (out.connection_retry.max_delay_ms < out.connection_retry.initial_delay_ms) {
    return fail(runtime.error("connection_retry_max_delay_ms",
                              runtime.take("connection_retry_max_delay_ms"),
                              "expected at least connection_retry_initial_delay_ms (" +
                                  std::to_string(out.connection_retry.initial_delay_ms) +
                                  "), found " + std::to_string(out.connection_retry.max_delay_ms)));
  }
  std::optional<std::string> socket;
  CPPCDC_CFG_ASSIGN(socket, runtime.get_string("control_socket"));
  if (socket) {
    if (socket->empty()) {
      return fail(runtime.error("control_socket", runtime.take("control_socket"),
                                "expected a path, found an empty string (leave the key out for "
                                "the default, <[state.offset] dir>/cppcdc.sock)"));
    }
    if (socket->back() == '/') {
      return fail(runtime.error(
          "control_socket", runtime.take("control_socket"),
          "expected the path of a socket file, found a directory " + in_quotes(*socket)));
    }
    control_socket = *socket;
  }
  return runtime.reject_unknown();
}

Status read_log(Section& log, ServerConfig& out) {
  CPPCDC_CFG_ASSIGN(out.log_format, log.get_string("format"));
  if (out.log_format != "text" && out.log_format != "json") {
    return fail(log.error("format", log.take("format"),
                          "expected \"text\" or \"json\", found " + in_quotes(out.log_format)));
  }
  CPPCDC_CFG_ASSIGN(out.log_level, log.get_string("level"));
  static constexpr std::string_view kLevels[] = {"trace", "debug",    "info", "warn",
                                                 "error", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), out.log_level) == std::end(kLevels)) {
    return fail(log.error("level", log.take("level"),
                          "expected one of trace, debug, info, warn, error, critical, off; "
                          "found " +
                              in_quotes(out.log_level)));
  }
  return log.reject_unknown();
}

Result<ServerConfig> read_document(const toml::table& document, const std::string& origin) {
  ServerConfig config;
  config.origin = origin;
  Section top(origin, &document, "");

  CPPCDC_CFG_ASSIGN(config.delivery_contract, top.get_string("delivery_contract"));
  if (config.delivery_contract == "effectively_once") {
    return fail(top.error("delivery_contract", top.take("delivery_contract"),
                          "\"effectively_once\" needs a transactional sink that commits the "
                          "checkpoint with the data; the file and stdout sinks cannot honour "
                          "it, so only \"at_least_once\" is available"));
  }
  if (config.delivery_contract != "at_least_once") {
    return fail(
        top.error("delivery_contract", top.take("delivery_contract"),
                  "expected \"at_least_once\", found " + in_quotes(config.delivery_contract)));
  }

  auto source = top.get_table("source");
  if (!source) return fail(source.error());
  if (auto st = read_source(*source, config.source); !st) return fail(st.error());

  auto sink = top.get_table("sink");
  if (!sink) return fail(sink.error());
  if (auto st = read_sink(*sink, config.sink); !st) return fail(st.error());

  auto state = top.get_table("state");
  if (!state) return fail(state.error());
  if (auto st = read_state(*state, config.state); !st) return fail(st.error());

  auto runtime = top.get_table("runtime");
  if (!runtime) return fail(runtime.error());
  if (auto st = read_runtime(*runtime, config.runtime, config.control_socket); !st) {
    return fail(st.error());
  }
  if (config.control_socket.empty()) {
    // Beside the checkpoint: one pipeline per checkpoint directory can run with the default.
    // The name is kept short because a socket path has at most 107 bytes.
    config.control_socket = config.state.offset.backend == "local_fs"
                                ? config.state.offset.dir / "cppcdc.sock"
                                : std::filesystem::path("cppcdc.sock");
  }

  auto log = top.get_table("log");
  if (!log) return fail(log.error());
  if (auto st = read_log(*log, config); !st) return fail(st.error());

  if (auto st = top.reject_unknown(); !st) return fail(st.error());
  return config;
}

#undef CPPCDC_CFG_ASSIGN

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// libpq keywords whose value is a secret: the password, and the passphrase of an encrypted
// client key (sslpassword).
bool is_secret_key(std::string_view key) {
  return iequals(key, "password") || iequals(key, "sslpassword");
}

// key=value connection string: replaces the value of every secret keyword.
std::string redact_keyword_dsn(std::string_view dsn) {
  std::string out;
  out.reserve(dsn.size());
  std::size_t i = 0;
  while (i < dsn.size()) {
    // Copy whitespace between pairs.
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    const std::size_t key_start = i;
    while (i < dsn.size() && dsn[i] != '=' && !is_space(dsn[i])) ++i;
    const std::string_view key = dsn.substr(key_start, i - key_start);
    out.append(key);
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    if (i >= dsn.size() || dsn[i] != '=') continue;  // malformed; keep scanning
    out += dsn[i++];
    while (i < dsn.size() && is_space(dsn[i])) out += dsn[i++];
    const std::size_t value_start = i;
    if (i < dsn.size() && dsn[i] == '\'') {
      ++i;
      while (i < dsn.size() && dsn[i] != '\'') i += (dsn[i] == '\\' && i + 1 < dsn.size()) ? 2 : 1;
      if (i < dsn.size()) ++i;  // closing quote
    } else {
      while (i < dsn.size() && !is_space(dsn[i]))
        i += (dsn[i] == '\\' && i + 1 < dsn.size()) ? 2 : 1;
    }
    if (is_secret_key(key)) {
      out += "****";
    } else {
      out.append(dsn.substr(value_start, i - value_start));
    }
  }
  return out;
}

// postgres:// or postgresql:// URI: the user-info password and `password` query parameters.
std::string redact_uri_dsn(std::string_view dsn, std::size_t authority_start) {
  std::string out(dsn);
  const std::size_t query = out.find('?', authority_start);
  const std::size_t authority_limit = query == std::string::npos ? out.size() : query;
  const std::size_t at = out.rfind('@', authority_limit == 0 ? 0 : authority_limit - 1);
  if (at != std::string::npos && at >= authority_start) {
    const std::size_t colon = out.find(':', authority_start);
    if (colon != std::string::npos && colon < at) {
      out.replace(colon + 1, at - colon - 1, "****");
    }
  }
  std::size_t pos = out.find('?', authority_start);
  while (pos != std::string::npos && pos < out.size()) {
    const std::size_t name_start = pos + 1;
    const std::size_t eq = out.find('=', name_start);
    std::size_t end = out.find('&', name_start);
    if (end == std::string::npos) end = out.size();
    if (eq != std::string::npos && eq < end &&
        is_secret_key(std::string_view(out).substr(name_start, eq - name_start))) {
      out.replace(eq + 1, end - eq - 1, "****");
      end = eq + 1 + 4;
    }
    pos = end < out.size() ? end : std::string::npos;
  }
  return out;
}

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
      "<[state.offset] dir>/cppcdc.sock)"));
}

}  // namespace

std::string redact_dsn(std::string_view dsn) {
  for (std::string_view scheme : {"postgresql://", "postgres://"}) {
    if (dsn.size() >= scheme.size() && iequals(dsn.substr(0, scheme.size()), scheme)) {
      return redact_uri_dsn(dsn, scheme.size());
    }
  }
  return redact_keyword_dsn(dsn);
}

Result<ServerConfig> parse_server_config(std::string_view toml_text, const std::string& origin) {
  toml::table document;
  try {
    document = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    std::string hint;
    // toml++ reads a bare word after '=' as a number or a boolean and reports that; the usual
    // cause is a string without its quotes (mode = incremental).
    const std::string what(e.description());
    if (what.find("parsing") != std::string::npos &&
        (what.find("floating-point") != std::string::npos ||
         what.find("integer") != std::string::npos || what.find("boolean") != std::string::npos ||
         what.find("expected") != std::string::npos ||
         what.find("value type") != std::string::npos)) {
      hint = " (a text value needs double quotes: key = \"value\")";
    }
    return fail(Error::configuration(locate(origin, e.source()) + ": invalid TOML: " + what +
                                     hint));
  }
  auto config = read_document(document, origin);
  if (config && config->control_socket.is_absolute()) {
    CPPCDC_TRY(check_control_socket_length(*config));
  }
  return config;
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
  auto config = parse_server_config(text, origin);
  if (!config) return config;
  // Relative paths in the file are relative to the file, not to wherever cppcdc is started
  // from: the same config must always find the same checkpoint.
  const auto base = std::filesystem::absolute(path).parent_path();
  if (!config->sink.path.empty() && config->sink.path.is_relative()) {
    config->sink.path = (base / config->sink.path).lexically_normal();
  }
  auto& dir = config->state.offset.dir;
  if (!dir.empty() && dir.is_relative()) dir = (base / dir).lexically_normal();
  auto& spill = config->source.spill_dir;
  if (!spill.empty() && std::filesystem::path(spill).is_relative()) {
    spill = (base / spill).lexically_normal().string();
  }
  auto& socket = config->control_socket;
  if (socket.is_relative()) socket = (base / socket).lexically_normal();
  CPPCDC_TRY(check_control_socket_length(*config));
  return config;
}

std::string describe_config(const ServerConfig& config) {
  std::string out;
  auto line = [&out](const std::string& text) {
    out += text;
    out += '\n';
  };
  const auto& src = config.source;
  const auto yes_no = [](bool b) { return b ? std::string("yes") : std::string("no"); };
  line("configuration:      " + config.origin);
  line("delivery_contract:  " + config.delivery_contract);
  line("source:             postgres (source_name " + in_quotes(src.source_name) + ")");
  line("  dsn:              " + redact_dsn(src.dsn));
  line("  slot:             " + src.slot_name + " (create if missing: " + yes_no(src.create_slot) +
       ")");
  line("  publication:      " + src.publication_name +
       " (create if missing: " + yes_no(src.create_publication) + ")");
  line("  receiver timeout: " + (src.wal_receiver_timeout_ms
                                     ? std::to_string(src.wal_receiver_timeout_ms) + " ms"
                                     : std::string("none (wait forever)")));
  std::string tables;
  for (const auto& t : src.tables) tables += (tables.empty() ? "" : ", ") + t;
  line("  tables:           " + tables);
  if (src.transport == pg::WalTransport::kSqlPeek) {
    line("  wal transport:    sql_peek (every " + std::to_string(src.peek_interval_ms) +
         " ms when idle, up to " + std::to_string(src.peek_max_changes) +
         " changes per peek, statement_timeout " + std::to_string(src.peek_statement_timeout_ms) +
         " ms)");
  } else {
    line(std::string("  wal transport:    streaming_replication") +
         (src.stream_in_progress ? ", large transactions streamed while in progress" : ""));
  }
  line("  status interval:  " + std::to_string(src.status_interval_ms) + " ms");
  line("  queue:            up to " + std::to_string(src.max_queued_bytes) +
       " bytes of decoded events waiting for the sink");
  line("  spill:            transactions over " + std::to_string(src.spill_threshold_bytes) +
       " bytes go to " +
       (src.spill_dir.empty() ? std::string("the system's temporary directory")
                              : src.spill_dir));
  {
    std::string tables;
    for (const auto& t : src.snapshot_tables) tables += (tables.empty() ? "" : ", ") + t;
    line("  snapshot:         " + std::string(pg::to_string(src.snapshot_mode)) +
         ", chunks of " + std::to_string(src.snapshot_chunk_size) + " rows" +
         (tables.empty() ? std::string(", all captured tables") : ", tables " + tables));
    for (const auto& [table, condition] : src.snapshot_table_conditions) {
      line("    only rows of " + table + " where " + condition);
    }
  }
  line(std::string("  logical messages: ") +
       (src.capture_logical_messages ? "captured (op message, table <prefix>__messages)"
                                     : "not captured"));
  if (config.sink.type == "file") {
    line("sink:               file " + config.sink.path.string());
  } else {
    line("sink:               stdout");
  }
  if (config.state.offset.backend == "local_fs") {
    line("checkpoint:         local_fs " +
         (config.state.offset.dir / ("checkpoint-" + src.slot_name + ".ckpt")).string());
  } else {
    line("checkpoint:         memory (not durable: a restart starts from the slot's position)");
  }
  const auto& rt = config.runtime;
  line("runtime:            max_buffer_size " + std::to_string(rt.max_buffer_size) +
       ", max_poll_wait_ms " + std::to_string(rt.max_poll_wait_ms));
  const auto& retry = rt.connection_retry;
  line("  connection retry: " +
       (retry.max_retries ? std::to_string(*retry.max_retries) + " retries"
                          : std::string("forever")) +
       ", initial delay " + std::to_string(retry.initial_delay_ms) + " ms, max delay " +
       std::to_string(retry.max_delay_ms) + " ms");
  line("  control socket:   " + config.control_socket.string() +
       " (`cppcdc snapshot ...` commands reach the running pipeline here)");
  line("log:                format " + config.log_format + ", level " + config.log_level);
  return out;
}

}  // namespace cppcdc::server
