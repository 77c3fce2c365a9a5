// `cppcdc migrate-state` (migrate_state.hpp): read the record at the old backend, decide what
// the target's own record allows, write, read back, and say all of it in a JSON report.

#include "server/migrate_state.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <compare>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/position.hpp"
#include "server/config.hpp"
#include "server/control_socket.hpp"
#include "server/run.hpp"

namespace cppcdc::server {
namespace {

namespace json = boost::json;

std::string utc_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

json::value describe_record(const std::optional<CheckpointRecord>& record) {
  if (!record) return nullptr;
  json::object o;
  o["source_type"] = record->source_type;
  o["source_id"] = record->source_id;
  o["offset"] = record->offset;
  o["committed_events"] = record->committed_events;
  o["partial_tx_events"] = record->partial_tx_events;
  o["partial_tx_id"] = record->partial_tx_id;
  o["saved_at_ms"] = record->saved_at_ms;
  // The source's own state (snapshot progress, a MySQL/MariaDB schema history) travels byte
  // for byte inside the record; its size says whether there was any.
  o["source_state_bytes"] = record->source_state.size();
  return o;
}

/// The command's account: printed as it goes, and kept for the JSON report.
class Migration {
 public:
  explicit Migration(const MigrateStateOptions& options) : options_(options) {
    report_["started_at"] = utc_now();
    report_["dry_run"] = options.dry_run;
    report_["forced"] = options.force;
  }

  json::object& report() { return report_; }

  /// Ends the command: the outcome and reason into the report, the report written, the exit
  /// code returned (a report that cannot be written turns success into kExitFailure).
  int finish(std::string outcome, int code, const std::string& reason = {}) {
    report_["outcome"] = outcome;
    if (!reason.empty()) report_["reason"] = reason;
    report_["finished_at"] = utc_now();
    if (code != kExitOk && !reason.empty()) std::fprintf(stderr, "cppcdc: %s\n", reason.c_str());
    if (options_.output) {
      const std::filesystem::path& path = *options_.output;
      const std::filesystem::path tmp = path.string() + ".tmp";
      {
        std::ofstream out(tmp, std::ios::trunc);
        out << json::serialize(report_) << '\n';
        out.close();
        if (!out) {
          std::fprintf(stderr, "cppcdc: cannot write the report to '%s'; check the directory\n",
                       tmp.c_str());
          return code == kExitOk ? kExitFailure : code;
        }
      }
      std::error_code ec;
      std::filesystem::rename(tmp, path, ec);
      if (ec) {
        std::fprintf(stderr, "cppcdc: cannot move the report to '%s': %s\n", path.c_str(),
                     ec.message().c_str());
        return code == kExitOk ? kExitFailure : code;
      }
      std::printf("report: %s\n", path.c_str());
    }
    return code;
  }

  int fail_with(const Error& error, const std::string& doing) {
    return finish("failed", exit_code_for(error.kind()), doing + ": " + render_error(error));
  }

 private:
  const MigrateStateOptions& options_;
  json::object report_;
};

bool runs(const ServerConfig& config) {
  return call_control_socket(config.control_socket, R"({"command":"ping"})",
                             std::chrono::seconds(2))
             .outcome == ControlReply::Outcome::kAnswered;
}

}  // namespace

int migrate_state(const MigrateStateOptions& options) {
  auto from = load_server_config(options.from_config);
  if (!from) {
    std::fprintf(stderr, "%s\n", render_error(from.error()).c_str());
    return kExitConfiguration;
  }
  auto to = load_server_config(options.to_config);
  if (!to) {
    std::fprintf(stderr, "%s\n", render_error(to.error()).c_str());
    return kExitConfiguration;
  }
  // The backends log their connections at info; this command prints its own account.
  spdlog::set_level(spdlog::level::warn);

  Migration m(options);
  const std::string id = from->source->checkpoint_id();
  const std::string to_id = to->source->checkpoint_id();
  const std::string from_where = from->checkpoint->describe(id);
  const std::string to_where = to->checkpoint->describe(to_id);
  m.report()["checkpoint_id"] = id;
  m.report()["from"] = json::object{
      {"config", from->origin}, {"backend", from->checkpoint_backend}, {"location", from_where}};
  m.report()["to"] = json::object{
      {"config", to->origin}, {"backend", to->checkpoint_backend}, {"location", to_where}};
  json::object& from_report = m.report()["from"].as_object();
  json::object& to_report = m.report()["to"].as_object();

  if (id != to_id) {
    return m.finish("refused", kExitConfiguration,
                    "the two configurations capture different sources: " + from->origin +
                        " keeps its checkpoint as '" + id + "', " + to->origin + " as '" + to_id +
                        "'; a record belongs to its source (the PostgreSQL slot, the "
                        "MySQL/MariaDB source_id), so give " +
                        to->origin + " the same [source] identity");
  }
  if (!from->checkpoint->durable() || !to->checkpoint->durable()) {
    const ServerConfig& memory = from->checkpoint->durable() ? *to : *from;
    return m.finish("refused", kExitConfiguration,
                    memory.origin + " keeps its checkpoint in memory ([state.offset] backend = \"" +
                        memory.checkpoint_backend +
                        "\"), where nothing outlives the process: name a durable backend");
  }
  if (from_where == to_where) {
    return m.finish("refused", kExitConfiguration,
                    "both configurations keep the checkpoint at the same place (" + from_where +
                        "): there is nothing to move; name another [state.offset] in " +
                        to->origin);
  }
  for (const ServerConfig* config : {&*from, &*to}) {
    if (runs(*config)) {
      return m.finish("refused", kExitRefused,
                      "a cppcdc runs the pipeline of " + config->origin + " (it answers on " +
                          config->control_socket.string() +
                          "): stop it before moving its state; nothing was changed");
    }
  }
  // A run of the same pipeline from another file or machine answers on no socket of ours; the
  // source shows it (a PostgreSQL slot in use, a MySQL/MariaDB named lock held), and its
  // checkpoint (a kafka_topic one has no writer lock) would move on under the copy. Only a
  // verdict of "in use" refuses; a server out of reach does not block the move.
  if (auto busy = from->source->check_not_in_use();
      !busy && busy.error().kind() == ErrorKind::kConfiguration) {
    return m.finish("refused", kExitRefused,
                    "the pipeline of " + from->origin +
                        " runs elsewhere, so its checkpoint is moving: " + busy.error().report() +
                        "; stop it before moving its state; nothing was changed");
  }

  // The source: read under its backend's writer lock (held until the end, so that no
  // pipeline of the old configuration moves it meanwhile), never written.
  auto source = from->checkpoint->open(id);
  if (!source) return m.fail_with(source.error(), "cannot open the checkpoint at " + from_where);
  auto record = (*source)->load();
  if (!record) return m.fail_with(record.error(), "cannot read the checkpoint at " + from_where);
  from_report["record"] = describe_record(*record);
  if (!*record) {
    return m.finish("failed", kExitTerminal,
                    "the checkpoint at " + from_where + " holds no record for '" + id +
                        "': there is nothing to migrate (check [state.offset] in " + from->origin +
                        ")");
  }
  const CheckpointRecord wanted = **record;

  auto target = to->checkpoint->open(id);
  if (!target) return m.fail_with(target.error(), "cannot open the checkpoint at " + to_where);
  auto existing = (*target)->load();
  bool must_remove = false;  // the target's record has to go before the write (force only)
  std::string refusal;
  if (!existing) {
    to_report["record_before"] = nullptr;
    to_report["record_before_error"] = render_error(existing.error());
    refusal = "the checkpoint at " + to_where + " holds a record that cannot be read (" +
              render_error(existing.error()) + ")";
    must_remove = true;
  } else {
    to_report["record_before"] = describe_record(*existing);
    if (*existing && **existing == wanted) {
      to_report["record_after"] = describe_record(*existing);
      from_report["unchanged"] = true;
      std::printf(
          "the checkpoint at %s already holds the record of %s (position %s); nothing "
          "was written\n",
          to_where.c_str(), from_where.c_str(), wanted.offset.c_str());
      return m.finish("already_current", kExitOk);
    }
    if (*existing && ((*existing)->source_type != wanted.source_type ||
                      (*existing)->source_id != wanted.source_id)) {
      refusal = "the checkpoint at " + to_where + " holds a record of another source (" +
                (*existing)->source_type + " '" + (*existing)->source_id + "' at " +
                (*existing)->offset + ")";
      must_remove = true;
    } else if (*existing) {
      // Newer by the source's own order of positions. A pair it cannot order (unparsable, or
      // a GTID set against a file position) is not overwritten without --force either.
      const auto order = find_position_order(wanted.source_type);
      std::optional<std::partial_ordering> relation;
      if (order) {
        if (auto c = order->compare((*existing)->offset, wanted.offset)) relation = *c;
      }
      if (!relation || *relation == std::partial_ordering::unordered) {
        refusal = "the checkpoint at " + to_where + " holds position " + (*existing)->offset +
                  ", which cannot be ordered against " + wanted.offset + " from " + from_where;
        must_remove = true;
      } else if (*relation == std::partial_ordering::greater) {
        refusal = "the checkpoint at " + to_where + " is ahead of the one at " + from_where +
                  " (position " + (*existing)->offset + " against " + wanted.offset +
                  "): writing would move the pipeline back and deliver again what it already "
                  "delivered";
        must_remove = true;
      } else if (!check_monotonic(*existing, wanted)) {
        refusal = "the checkpoint guard refuses to replace position " + (*existing)->offset +
                  " at " + to_where + " with " + wanted.offset;
        must_remove = true;
      }
    }
  }
  if (must_remove && !options.force) {
    return m.finish("refused", kExitRefused,
                    refusal +
                        "; nothing was changed. Pass --force to replace it with the record "
                        "at " +
                        from_where);
  }
  if (options.dry_run) {
    std::printf(
        "dry run: would %s the checkpoint at %s with the record at %s (position %s); "
        "nothing was changed\n",
        must_remove ? "replace (--force)" : "write", to_where.c_str(), from_where.c_str(),
        wanted.offset.c_str());
    return m.finish("dry_run", kExitOk);
  }

  if (must_remove) {
    // The guard of Checkpoint::save() would refuse the replacement, as it should for a
    // pipeline: the forced copy deletes the record first. Should the command die between the
    // two steps, the target holds nothing and the source still holds the record: run again.
    target->reset();
    if (auto removed = to->checkpoint->remove(id); !removed) {
      return m.fail_with(removed.error(), "cannot remove the record at " + to_where);
    }
    target = to->checkpoint->open(id);
    if (!target) return m.fail_with(target.error(), "cannot open the checkpoint at " + to_where);
    std::printf("removed the record at %s (--force)\n", to_where.c_str());
  }
  if (auto saved = (*target)->save(wanted); !saved) {
    return m.fail_with(saved.error(), "cannot write the checkpoint at " + to_where);
  }
  auto written = (*target)->load();
  if (!written) {
    return m.fail_with(written.error(), "cannot read back the checkpoint written at " + to_where);
  }
  to_report["record_after"] = describe_record(*written);
  if (!*written || **written != wanted) {
    return m.finish("failed", kExitTerminal,
                    "the record read back from " + to_where +
                        " differs from the one written; do not start the pipeline on " +
                        to->origin + " before finding out why");
  }
  // The source is as it was (its record read again through the same handle).
  auto again = (*source)->load();
  const bool unchanged = again && *again && **again == wanted;
  from_report["unchanged"] = unchanged;
  if (!unchanged) {
    return m.finish(
        "failed", kExitTerminal,
        "the record at " + from_where + " changed while it was copied; run the command again");
  }
  std::printf(
      "migrated the checkpoint of '%s' (position %s, %zu bytes of source state) from %s "
      "to %s\n",
      id.c_str(), wanted.offset.c_str(), wanted.source_state.size(), from_where.c_str(),
      to_where.c_str());
  std::printf(
      "start the pipeline with %s; the record at %s is left as it was: delete it by "
      "hand once the new pipeline runs (not with cppcdc teardown, which also drops the "
      "replication slot the new pipeline uses)\n",
      to->origin.c_str(), from_where.c_str());
  return m.finish("migrated", kExitOk);
}

}  // namespace cppcdc::server
