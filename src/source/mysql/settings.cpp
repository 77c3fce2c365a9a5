// Source types "mysql" and "mariadb" as plugins (cppcdc/plugin.hpp): reads the settings into
// a MysqlSourceConfig, describes it (the password never), and builds the source.

#include "source/mysql/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "core/settings_read.hpp"
#include "core/text_util.hpp"
#include "source/mysql/pipeline_lock.hpp"

namespace cppcdc::mysql {
namespace {

using cppcdc::detail::assign_bool;
using cppcdc::detail::assign_int;
using cppcdc::detail::assign_string;
using cppcdc::detail::in_quotes;

constexpr std::int64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;

// A "database.table" name (globs allowed): exactly one dot, both parts non-empty.
bool is_table_name(std::string_view name) {
  const auto dot = name.find('.');
  return dot != std::string_view::npos && dot != 0 && dot + 1 < name.size() &&
         name.find('.', dot + 1) == std::string_view::npos;
}

Status read_table_list(const Settings& settings, std::string_view key,
                       std::vector<std::string>& out) {
  auto list = settings.get_string_list(key, "\"database.table\" string");
  if (!list) return fail(list.error());
  if (!*list) return ok();
  if ((*list)->empty()) {
    return fail(
        settings.error(key, "expected at least one \"database.table\" name, found an empty array"));
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const std::string& name = (**list)[i];
    if (!is_table_name(name)) {
      return fail(settings.element_error(
          key, i,
          "expected \"database.table\" (globs * and ? allowed, e.g. \"shop.*\"), found " +
              in_quotes(name)));
    }
    if (!seen.insert(name).second) {
      return fail(settings.element_error(key, i, "table " + in_quotes(name) + " is listed twice"));
    }
    out.push_back(name);
  }
  return ok();
}

Status read_snapshot(const Settings& snap, MysqlSourceConfig& out) {
  const bool mariadb = out.flavor == ServerFlavor::kMariaDb;
  auto mode = snap.get_string("mode");
  if (!mode) return fail(mode.error());
  if (*mode) {
    using M = SnapshotMode;
    std::vector<std::string_view> names{to_string(M::kInitial), to_string(M::kNever),
                                        to_string(M::kInitialOnly), to_string(M::kWhenNeeded)};
    if (mariadb) names.push_back(to_string(M::kIncremental));
    const auto known = parse_snapshot_mode(**mode);
    if (!known || (*known == M::kIncremental && !mariadb)) {
      return fail(snap.error(
          "mode", "expected " + cppcdc::detail::quoted_alternatives(names) + ", found " +
                      in_quotes(**mode) +
                      (known ? " (incremental snapshots are built for MariaDB only so far; use "
                               "type = \"mariadb\" against a MariaDB server, or a blocking "
                               "snapshot)"
                             : "")));
    }
    out.snapshot_mode = *known;
  }
  {
    auto signal = snap.get_string("signal_table");
    if (!signal) return fail(signal.error());
    if (*signal) {
      if (!is_table_name(**signal) || (*signal)->find_first_of("*?") != std::string::npos) {
        return fail(snap.error("signal_table", "expected \"database.table\" (no globs), found " +
                                                   in_quotes(**signal)));
      }
      out.snapshot_signal_table = **signal;
    }
  }
  if (out.snapshot_mode == SnapshotMode::kIncremental && out.snapshot_signal_table.empty()) {
    return fail(snap.missing("signal_table",
                             "(snapshot mode incremental writes its watermarks to this "
                             "\"database.table\"; it is created when missing)"));
  }
  CPPCDC_TRY(assign_int(snap, "chunk_size", 1, 10'000'000, out.snapshot_chunk_size));
  CPPCDC_TRY(read_table_list(snap, "tables", out.snapshot_tables));
  auto conditions =
      snap.get_string_map("table_conditions", "\"database.table\" = \"SQL condition\"");
  if (!conditions) return fail(conditions.error());
  if (*conditions) {
    for (std::size_t i = 0; i < (*conditions)->size(); ++i) {
      auto [name, condition] = (**conditions)[i];
      if (!is_table_name(name)) {
        return fail(snap.element_error(
            "table_conditions", i, "expected a \"database.table\" key, found " + in_quotes(name)));
      }
      if (condition.empty()) {
        return fail(snap.element_error(
            "table_conditions", i,
            "the condition for " + in_quotes(name) + " must be a non-empty SQL string"));
      }
      out.snapshot_table_conditions.emplace_back(name, std::move(condition));
    }
  }
  return ok();
}

std::string_view ssl_mode_name(SslMode mode) {
  switch (mode) {
    case SslMode::kDisabled:
      return "disabled";
    case SslMode::kPreferred:
      return "preferred";
    case SslMode::kRequired:
      return "required";
    case SslMode::kVerifyCa:
      return "verify_ca";
    case SslMode::kVerifyIdentity:
      return "verify_identity";
  }
  return "?";
}

std::string_view gtid_mode_name(GtidMode mode) {
  switch (mode) {
    case GtidMode::kAuto:
      return "auto";
    case GtidMode::kOn:
      return "on";
    case GtidMode::kOff:
      return "off";
  }
  return "?";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

class ConfiguredMysqlSource final : public ConfiguredMysql {
 public:
  explicit ConfiguredMysqlSource(MysqlSourceConfig config) : config_(std::move(config)) {}

  const MysqlSourceConfig& config() const noexcept override { return config_; }
  std::string checkpoint_id() const override { return config_.source_id; }
  std::string source_name() const override {
    return config_.source_name.empty() ? std::string(to_string(config_.flavor))
                                       : config_.source_name;
  }
  std::vector<std::string> captured_tables() const override { return config_.tables; }

  std::string summary() const override {
    // The log line puts the source type before this already.
    return config_.user + "@" + config_.host + ":" + std::to_string(config_.port) +
           " tables=" + joined(config_.tables) +
           " server_id=" + std::to_string(effective_server_id(config_));
  }

  Description describe() const override {
    const auto& c = config_;
    Description d;
    d.headline = std::string(to_string(c.flavor)) + " (source_name " +
                 in_quotes(c.source_name.empty() ? to_string(c.flavor) : c.source_name) + ")";
    auto add = [&d](std::string label, std::string text) {
      d.details.emplace_back(std::move(label), std::move(text));
    };
    add("server", c.user + "@" + c.host + ":" + std::to_string(c.port) +
                      (c.password.empty() ? " (no password)" : " (password set)"));
    add("tls", std::string(ssl_mode_name(c.ssl_mode)) +
                   (c.ssl_ca.empty() ? std::string() : ", CA " + c.ssl_ca));
    add("tables", joined(c.tables));
    add("server id", std::to_string(effective_server_id(c)) +
                         (c.server_id == 0 ? " (derived from source_id)" : ""));
    add("gtid mode", std::string(gtid_mode_name(c.gtid_mode)));
    add("spill",
        "transactions over " + std::to_string(c.spill_threshold_bytes) + " bytes to " +
            (c.spill_dir.empty() ? std::string("the system's temporary directory") : c.spill_dir));
    add("decoding", c.share_decoding ? "shared with the poll thread while it has little queued"
                                     : "on the reader thread only (share_decoding = false)");
    add("heartbeat", std::to_string(c.heartbeat_interval_ms) + " ms, receive timeout " +
                         (c.receive_timeout_ms ? std::to_string(c.receive_timeout_ms) + " ms"
                                               : std::string("none")));
    add("snapshot", std::string(to_string(c.snapshot_mode)) + ", chunks of " +
                        std::to_string(c.snapshot_chunk_size) + " rows" +
                        (c.snapshot_tables.empty() ? std::string(", all captured tables")
                                                   : ", tables " + joined(c.snapshot_tables)));
    for (const auto& [table, condition] : c.snapshot_table_conditions) {
      add("", "only rows of " + table + " where " + condition);
    }
    if (!c.snapshot_signal_table.empty()) {
      add("", "incremental snapshot watermarks in " + c.snapshot_signal_table);
    }
    add("queue", "up to " + std::to_string(c.max_queued_bytes) +
                     " bytes of decoded events waiting for the sink");
    return d;
  }

  std::optional<std::string> no_incremental_snapshots_reason() const override {
    if (config_.flavor != ServerFlavor::kMariaDb) {
      return std::string("the mysql source takes no incremental snapshots yet (MariaDB only)");
    }
    if (config_.snapshot_mode == SnapshotMode::kInitialOnly) {
      return std::string("snapshot mode initial_only never streams");
    }
    if (config_.snapshot_signal_table.empty()) {
      return std::string(
          "[source.snapshot] signal_table is not set (the \"database.table\" "
          "its watermarks are written to)");
    }
    return std::nullopt;
  }

  Result<std::unique_ptr<Source>> build() const override { return make_mysql_source(config_); }
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
  Status check_not_in_use() const override { return detail::check_pipeline_not_running(config_); }
  Result<std::vector<TeardownStep>> teardown(bool dry_run,
                                             bool include_preexisting) const override {
    (void)dry_run;
    (void)include_preexisting;
    return detail::teardown_steps(config_);
  }

 private:
  MysqlSourceConfig config_;
};

}  // namespace

Result<MysqlSourceConfig> read_mysql_settings(const Settings& source, ServerFlavor flavor) {
  MysqlSourceConfig out;
  out.flavor = flavor;
  CPPCDC_TRY(assign_string(source, "host", out.host));
  if (out.host.empty()) return fail(source.error("host", "expected a host name, found \"\""));
  CPPCDC_TRY(assign_int(source, "port", 1, 65535, out.port));
  {
    auto user = source.get_string("user");
    if (!user) return fail(user.error());
    if (!*user || (*user)->empty()) {
      return fail(source.missing("user", "(the replication user's name)"));
    }
    out.user = std::move(**user);
  }
  {
    auto password = source.get_string("password");
    if (!password) return fail(password.error());
    auto env = source.get_string("password_env");
    if (!env) return fail(env.error());
    if (*password && *env) {
      return fail(source.error("password_env", "set either password or password_env, not both"));
    }
    if (*password) out.password = std::move(**password);
    if (*env) {
      const char* value = (*env)->empty() ? nullptr : std::getenv((*env)->c_str());
      if (value == nullptr) {
        return fail(source.error("password_env",
                                 "the environment variable " + in_quotes(**env) + " is not set"));
      }
      out.password = value;
    }
  }
  CPPCDC_TRY(read_table_list(source, "tables", out.tables));
  if (out.tables.empty()) {
    return fail(source.missing(
        "tables", "(a non-empty array of \"database.table\" names; globs such as \"shop.*\")"));
  }
  CPPCDC_TRY(assign_int(source, "server_id", 0, kMaxU32, out.server_id));
  {
    auto mode = source.get_string("gtid_mode");
    if (!mode) return fail(mode.error());
    if (*mode) {
      if (**mode == "auto") {
        out.gtid_mode = GtidMode::kAuto;
      } else if (**mode == "on") {
        out.gtid_mode = GtidMode::kOn;
      } else if (**mode == "off") {
        out.gtid_mode = GtidMode::kOff;
      } else {
        return fail(source.error(
            "gtid_mode", "expected \"auto\", \"on\" or \"off\", found " + in_quotes(**mode)));
      }
    }
  }
  {
    auto mode = source.get_string("ssl_mode");
    if (!mode) return fail(mode.error());
    if (*mode) {
      bool found = false;
      for (auto m : {SslMode::kDisabled, SslMode::kPreferred, SslMode::kRequired,
                     SslMode::kVerifyCa, SslMode::kVerifyIdentity}) {
        if (**mode == ssl_mode_name(m)) {
          out.ssl_mode = m;
          found = true;
        }
      }
      if (!found) {
        return fail(source.error("ssl_mode",
                                 "expected \"disabled\", \"preferred\", \"required\", "
                                 "\"verify_ca\" or \"verify_identity\", found " +
                                     in_quotes(**mode)));
      }
    }
  }
  for (auto [key, target] : {std::pair<std::string_view, std::string*>{"ssl_ca", &out.ssl_ca},
                             {"ssl_cert", &out.ssl_cert},
                             {"ssl_key", &out.ssl_key}}) {
    auto path = source.get_path(key);
    if (!path) return fail(path.error());
    if (*path) *target = (*path)->string();
  }
  if ((out.ssl_mode == SslMode::kVerifyCa || out.ssl_mode == SslMode::kVerifyIdentity) &&
      out.ssl_ca.empty()) {
    return fail(source.missing("ssl_ca", "(the CA file that verifies the server's certificate)"));
  }
  CPPCDC_TRY(assign_int(source, "heartbeat_interval_ms", 1, 3'600'000, out.heartbeat_interval_ms));
  CPPCDC_TRY(assign_int(source, "connect_timeout_ms", 1, kMaxU32, out.connect_timeout_ms));
  CPPCDC_TRY(assign_int(source, "receive_timeout_ms", 0, kMaxU32, out.receive_timeout_ms));
  if (out.receive_timeout_ms != 0 && out.receive_timeout_ms <= out.heartbeat_interval_ms) {
    return fail(source.error("receive_timeout_ms", "expected more than heartbeat_interval_ms (" +
                                                       std::to_string(out.heartbeat_interval_ms) +
                                                       "), found " +
                                                       std::to_string(out.receive_timeout_ms)));
  }
  {
    auto snap = source.get_section("snapshot");
    if (!snap) return fail(snap.error());
    CPPCDC_TRY(read_snapshot(**snap, out));
  }
  CPPCDC_TRY(assign_string(source, "source_name", out.source_name));
  CPPCDC_TRY(assign_string(source, "source_id", out.source_id));
  if (out.source_id.empty()) {
    return fail(source.error("source_id", "expected a non-empty name, found an empty string"));
  }
  CPPCDC_TRY(assign_int(source, "max_queued_events", 1, kMaxU32, out.max_queued_events));
  CPPCDC_TRY(assign_int(source, "max_queued_bytes", 1, kMaxBytes, out.max_queued_bytes));
  CPPCDC_TRY(assign_int(source, "spill_threshold_bytes", 0, kMaxBytes, out.spill_threshold_bytes));
  CPPCDC_TRY(assign_bool(source, "share_decoding", out.share_decoding));
  auto spill_dir = source.get_path("spill_dir");
  if (!spill_dir) return fail(spill_dir.error());
  if (*spill_dir) {
    if ((*spill_dir)->empty()) {
      return fail(source.error("spill_dir",
                               "expected a directory, found an empty string (leave "
                               "the key out for the system's temporary directory)"));
    }
    out.spill_dir = (*spill_dir)->string();
  }
  return out;
}

Result<std::unique_ptr<ConfiguredSource>> configure_mysql_source(const Settings& settings,
                                                                 ServerFlavor flavor) {
  auto config = read_mysql_settings(settings, flavor);
  if (!config) return fail(config.error());
  return std::unique_ptr<ConfiguredSource>(
      std::make_unique<ConfiguredMysqlSource>(std::move(*config)));
}

}  // namespace cppcdc::mysql
