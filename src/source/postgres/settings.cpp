// Source type "postgres" as a plugin (cppcdc/plugin.hpp): reads its settings into a
// PostgresSourceConfig, describes it, and builds the source with make_postgres_source().

#include "source/postgres/settings.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/settings_read.hpp"
#include "core/text_util.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/postgres/lsn.hpp"

namespace cppcdc::pg {
namespace {

using cppcdc::detail::assign_bool;
using cppcdc::detail::assign_int;
using cppcdc::detail::assign_string;
using cppcdc::detail::in_quotes;

constexpr std::int64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;

bool is_slot_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// "schema.table" names, "table" meaning schema public; each once.
Status read_tables(const Settings& settings, std::vector<std::string>& out) {
  auto list = settings.get_string_list("tables", "\"schema.table\" string");
  if (!list) return fail(list.error());
  if (!*list) {
    return fail(settings.missing("tables", "(a non-empty array of \"schema.table\" names)"));
  }
  if ((*list)->empty()) {
    return fail(settings.error(
        "tables", "expected at least one \"schema.table\" name, found an empty array"));
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const std::string& name = (**list)[i];
    const std::string qualified = name.find('.') == std::string::npos ? "public." + name : name;
    const auto qdot = qualified.find('.');
    if (name.empty() || qdot == 0 || qdot + 1 == qualified.size() ||
        qualified.find('.', qdot + 1) != std::string::npos) {
      return fail(settings.element_error(
          "tables", i,
          "expected \"schema.table\" (or \"table\" for schema public), found " + in_quotes(name)));
    }
    if (!seen.insert(qualified).second) {
      return fail(settings.element_error("tables", i,
                                         "table " + in_quotes(qualified) + " is listed twice"));
    }
    out.push_back(qualified);
  }
  return ok();
}

// The nested `snapshot` section: mode, chunk_size, tables (each also captured),
// table_conditions.
Status read_snapshot(const Settings& snap, PostgresSourceConfig& out) {
  auto mode = snap.get_string("mode");
  if (!mode) return fail(mode.error());
  if (*mode) {
    const auto known = parse_snapshot_mode(**mode);
    if (!known) {
      using M = SnapshotMode;
      const std::vector<std::string_view> names{to_string(M::kInitial), to_string(M::kNever),
                                                to_string(M::kInitialOnly),
                                                to_string(M::kWhenNeeded),
                                                to_string(M::kIncremental)};
      return fail(snap.error("mode", "expected " + detail::quoted_alternatives(names) +
                                         ", found " + in_quotes(**mode)));
    }
    out.snapshot_mode = *known;
  }
  CPPCDC_TRY(assign_int(snap, "chunk_size", 1, 10'000'000, out.snapshot_chunk_size));
  if (snap.has("tables")) {
    CPPCDC_TRY(read_tables(snap, out.snapshot_tables));
    for (std::size_t i = 0; i < out.snapshot_tables.size(); ++i) {
      const auto& t = out.snapshot_tables[i];
      if (std::find(out.tables.begin(), out.tables.end(), t) == out.tables.end()) {
        return fail(snap.element_error("tables", i,
                                       "table " + in_quotes(t) +
                                           " is not captured; add it to the captured tables "
                                           "first"));
      }
    }
  }
  auto conditions = snap.get_string_map("table_conditions", "\"schema.table\" = \"SQL condition\"");
  if (!conditions) return fail(conditions.error());
  if (*conditions) {
    for (std::size_t i = 0; i < (*conditions)->size(); ++i) {
      auto [name, condition] = (**conditions)[i];
      if (name.find('.') == std::string::npos) name = "public." + name;
      if (condition.empty()) {
        return fail(snap.element_error(
            "table_conditions", i,
            "the condition for " + in_quotes(name) + " must be a non-empty SQL string"));
      }
      if (std::find(out.tables.begin(), out.tables.end(), name) == out.tables.end()) {
        return fail(snap.element_error("table_conditions", i,
                                       "table " + in_quotes(name) + " is not captured"));
      }
      out.snapshot_table_conditions.emplace_back(name, std::move(condition));
    }
  }
  return ok();
}

class ConfiguredPostgresSource final : public ConfiguredPostgres {
 public:
  explicit ConfiguredPostgresSource(PostgresSourceConfig config) : config_(std::move(config)) {}

  const PostgresSourceConfig& config() const noexcept override { return config_; }

  std::string checkpoint_id() const override { return config_.slot_name; }
  std::string source_name() const override { return config_.source_name; }
  std::vector<std::string> captured_tables() const override { return config_.tables; }

  std::string summary() const override {
    std::string tables;
    for (const auto& t : config_.tables) tables += (tables.empty() ? "" : ",") + t;
    return "slot=" + config_.slot_name + " publication=" + config_.publication_name +
           " tables=" + tables + " dsn=\"" + redact_dsn(config_.dsn) + "\"";
  }

  Description describe() const override {
    const auto& src = config_;
    const auto yes_no = [](bool b) { return b ? std::string("yes") : std::string("no"); };
    Description d;
    d.headline = "postgres (source_name " + in_quotes(src.source_name) + ")";
    auto add = [&d](std::string label, std::string text) {
      d.details.emplace_back(std::move(label), std::move(text));
    };
    add("dsn", redact_dsn(src.dsn));
    add("slot", src.slot_name + " (create if missing: " + yes_no(src.create_slot) + ")");
    add("publication",
        src.publication_name + " (create if missing: " + yes_no(src.create_publication) + ")");
    add("receiver timeout", src.wal_receiver_timeout_ms
                                ? std::to_string(src.wal_receiver_timeout_ms) + " ms"
                                : std::string("none (wait forever)"));
    std::string tables;
    for (const auto& t : src.tables) tables += (tables.empty() ? "" : ", ") + t;
    add("tables", tables);
    if (src.transport == WalTransport::kSqlPeek) {
      add("wal transport", "sql_peek (every " + std::to_string(src.peek_interval_ms) +
                               " ms when idle, up to " + std::to_string(src.peek_max_changes) +
                               " changes per peek, statement_timeout " +
                               std::to_string(src.peek_statement_timeout_ms) + " ms)");
    } else {
      add("wal transport",
          std::string("streaming_replication") +
              (src.stream_in_progress ? ", large transactions streamed while in progress" : ""));
    }
    add("status interval", std::to_string(src.status_interval_ms) + " ms");
    add("queue", "up to " + std::to_string(src.max_queued_bytes) +
                     " bytes of decoded events waiting for the sink");
    add("spill", "transactions over " + std::to_string(src.spill_threshold_bytes) +
                     " bytes go to " +
                     (src.spill_dir.empty() ? std::string("the system's temporary directory")
                                            : src.spill_dir));
    std::string snapshot_tables;
    for (const auto& t : src.snapshot_tables) {
      snapshot_tables += (snapshot_tables.empty() ? "" : ", ") + t;
    }
    add("snapshot", std::string(to_string(src.snapshot_mode)) + ", chunks of " +
                        std::to_string(src.snapshot_chunk_size) + " rows" +
                        (snapshot_tables.empty() ? std::string(", all captured tables")
                                                 : ", tables " + snapshot_tables));
    for (const auto& [table, condition] : src.snapshot_table_conditions) {
      add("", "only rows of " + table + " where " + condition);
    }
    add("logical messages", src.capture_logical_messages
                                ? "captured (op message, table <prefix>__messages)"
                                : "not captured");
    return d;
  }

  std::optional<std::string> no_incremental_snapshots_reason() const override {
    if (config_.snapshot_mode != SnapshotMode::kInitialOnly) return std::nullopt;
    return "snapshot mode \"" + std::string(to_string(config_.snapshot_mode)) +
           "\" reads the tables once and stops";
  }

  Result<std::unique_ptr<Source>> build() const override { return make_postgres_source(config_); }
  std::vector<PreflightCheck> preflight(
      const std::optional<CheckpointRecord>& checkpoint) const override {
    return run_preflight(config_, checkpoint);
  }
  std::optional<std::vector<std::string>> keyless_tables() const override {
    return read_keyless_tables(config_);
  }
  std::optional<UnresumableSnapshot> unresumable_snapshot(
      const std::optional<CheckpointRecord>& checkpoint) const override {
    return read_unresumable_snapshot(config_, checkpoint);
  }
  Status check_not_in_use() const override { return check_slot_not_in_use(config_); }
  Result<std::vector<TeardownStep>> teardown(bool dry_run,
                                             bool include_preexisting) const override {
    return run_teardown(config_, dry_run, include_preexisting);
  }

 private:
  PostgresSourceConfig config_;
};

}  // namespace

Result<PostgresSourceConfig> read_postgres_settings(const Settings& source) {
  PostgresSourceConfig out;
  auto dsn = source.get_string("dsn");
  if (!dsn) return fail(dsn.error());
  if (!*dsn) return fail(source.missing("dsn", "(a libpq connection string or postgresql:// URI)"));
  if ((*dsn)->empty()) {
    return fail(source.error("dsn", "expected a libpq connection string, found an empty string"));
  }
  out.dsn = std::move(**dsn);
  if (auto dir = source.state_directory()) out.state_dir = *dir;

  CPPCDC_TRY(assign_string(source, "slot_name", out.slot_name));
  if (out.slot_name.empty() || out.slot_name.size() > 63 ||
      !std::all_of(out.slot_name.begin(), out.slot_name.end(), is_slot_char)) {
    return fail(source.error("slot_name",
                             "expected 1 to 63 characters from a-z, 0-9 and _ (a PostgreSQL "
                             "replication slot name), found " +
                                 in_quotes(out.slot_name)));
  }
  CPPCDC_TRY(assign_string(source, "publication_name", out.publication_name));
  if (out.publication_name.empty() || out.publication_name.size() > 63) {
    return fail(source.error("publication_name", "expected a name of 1 to 63 bytes, found " +
                                                     in_quotes(out.publication_name)));
  }
  CPPCDC_TRY(read_tables(source, out.tables));
  CPPCDC_TRY(assign_bool(source, "create_slot", out.create_slot));
  CPPCDC_TRY(assign_bool(source, "create_publication", out.create_publication));
  CPPCDC_TRY(
      assign_bool(source, "accept_slot_ahead_of_checkpoint", out.accept_slot_ahead_of_checkpoint));
  CPPCDC_TRY(assign_bool(source, "capture_logical_messages", out.capture_logical_messages));
  CPPCDC_TRY(assign_bool(source, "stream_in_progress", out.stream_in_progress));
  {
    auto snap = source.get_section("snapshot");
    if (!snap) return fail(snap.error());
    CPPCDC_TRY(read_snapshot(**snap, out));
  }
  CPPCDC_TRY(assign_string(source, "source_name", out.source_name));
  if (out.source_name.empty()) {
    return fail(source.error("source_name", "expected a non-empty name, found an empty string"));
  }
  CPPCDC_TRY(assign_int(source, "status_interval_ms", 1, kMaxU32, out.status_interval_ms));
  CPPCDC_TRY(
      assign_int(source, "wal_receiver_timeout_ms", 0, kMaxU32, out.wal_receiver_timeout_ms));
  auto transport = source.get_string("wal_transport");
  if (!transport) return fail(transport.error());
  if (*transport) {
    if (**transport == "streaming_replication") {
      out.transport = WalTransport::kStreamingReplication;
    } else if (**transport == "sql_peek") {
      out.transport = WalTransport::kSqlPeek;
    } else {
      return fail(source.error(
          "wal_transport",
          "expected \"streaming_replication\" or \"sql_peek\", found " + in_quotes(**transport)));
    }
  }
  if (out.stream_in_progress && out.transport == WalTransport::kSqlPeek) {
    return fail(source.error("stream_in_progress",
                             "in-progress transactions are streamed only over "
                             "wal_transport = \"streaming_replication\"; remove "
                             "stream_in_progress or that wal_transport"));
  }
  CPPCDC_TRY(assign_int(source, "peek_interval_ms", 1, kMaxU32, out.peek_interval_ms));
  CPPCDC_TRY(
      assign_int(source, "peek_statement_timeout_ms", 100, kMaxU32, out.peek_statement_timeout_ms));
  CPPCDC_TRY(assign_int(source, "peek_max_changes", 1, kMaxU32, out.peek_max_changes));
  CPPCDC_TRY(assign_int(source, "spill_threshold_bytes", 0, kMaxBytes, out.spill_threshold_bytes));
  CPPCDC_TRY(assign_int(source, "max_queued_bytes", 1, kMaxBytes, out.max_queued_bytes));
  auto spill_dir = source.get_path("spill_dir");
  if (!spill_dir) return fail(spill_dir.error());
  if (*spill_dir) {
    if ((*spill_dir)->empty()) {
      return fail(source.error("spill_dir",
                               "expected a directory, found an empty string (leave the key out "
                               "for the system's temporary directory)"));
    }
    out.spill_dir = (*spill_dir)->string();
  }
  return out;
}

Result<std::unique_ptr<ConfiguredSource>> configure_postgres_source(const Settings& settings) {
  auto config = read_postgres_settings(settings);
  if (!config) return fail(config.error());
  return std::unique_ptr<ConfiguredSource>(
      std::make_unique<ConfiguredPostgresSource>(std::move(*config)));
}

void register_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_positions();
    (void)register_source_type("postgres", configure_postgres_source);
  });
}

}  // namespace cppcdc::pg
