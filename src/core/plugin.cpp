// The registry of plugin types (cppcdc/plugin.hpp): one table per role, guarded by a mutex.

#include "cppcdc/plugin.hpp"

#include <map>
#include <mutex>

#include "core/settings_read.hpp"
#include "core/text_util.hpp"

namespace cppcdc {
namespace {

template <typename Factory>
class Table {
 public:
  Table(std::string role, std::string key, SettingOwner owner)
      : role_(std::move(role)), key_(std::move(key)), owner_(owner) {}

  Status add(std::string name, Factory factory) {
    if (name.empty()) {
      return fail(Error::invalid_state("a " + role_ + " cannot be registered without a name"));
    }
    std::lock_guard lock(mutex_);
    if (entries_.count(name) != 0) {
      return fail(Error::invalid_state(role_ + " \"" + name +
                                       "\" is registered already; a name has one factory"));
    }
    entries_.emplace(std::move(name), std::move(factory));
    return ok();
  }

  Result<Factory> find(std::string_view name) const {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(std::string(name));
    if (it != entries_.end() && it->second) return it->second;
    const std::string available = quoted_names_locked();
    if (it != entries_.end()) {
      return fail(Error::configuration(role_ + " \"" + std::string(name) + "\" is not built yet; " +
                                       (available.empty() ? std::string("none is available")
                                                          : "available: " + available))
                      .for_setting(owner_, key_));
    }
    // A near miss of a registered name ("kafak") is most likely a typo of it.
    const std::string closest = detail::closest_name(name, names_locked(), /*max_edits=*/2);
    return fail(Error::configuration(
                    "expected " +
                    (available.empty() ? std::string("a registered ") + role_ : available) +
                    ", found \"" + std::string(name) + "\"" +
                    (closest.empty() ? std::string() : "; did you mean \"" + closest + "\"?"))
                    .for_setting(owner_, key_));
  }

  std::vector<std::string> names() const {
    std::lock_guard lock(mutex_);
    return names_locked();
  }

 private:
  std::vector<std::string> names_locked() const {
    std::vector<std::string> out;
    for (const auto& [name, factory] : entries_) {
      if (factory) out.push_back(name);
    }
    return out;  // std::map keeps them sorted
  }

  std::string quoted_names_locked() const { return detail::quoted_alternatives(names_locked()); }

  const std::string role_;
  const std::string key_;
  const SettingOwner owner_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory, std::less<>> entries_;
};

Table<SourceFactory>& sources() {
  static Table<SourceFactory> table("source type", "type", SettingOwner::kSource);
  return table;
}
Table<SinkFactory>& sinks() {
  static Table<SinkFactory> table("sink type", "type", SettingOwner::kSink);
  return table;
}
Table<CheckpointFactory>& checkpoints() {
  static Table<CheckpointFactory> table("checkpoint backend", "backend", SettingOwner::kCheckpoint);
  return table;
}

Table<CodecFactory>& codecs() {
  static Table<CodecFactory> table("codec", "codec", SettingOwner::kSink);
  return table;
}

}  // namespace

Status register_codec(std::string name, CodecFactory factory) {
  return codecs().add(std::move(name), std::move(factory));
}
Result<CodecFactory> find_codec(std::string_view name) { return codecs().find(name); }
std::vector<std::string> codec_names() { return codecs().names(); }

Result<std::shared_ptr<const ConfiguredCodec>> configure_codec(const Settings& settings,
                                                               bool json_text_only,
                                                               bool carries_headers) {
  auto name = settings.get_string("codec");
  if (!name) return fail(name.error());
  const std::string chosen = name->value_or("json");
  auto factory = find_codec(chosen);
  if (!factory) return fail(settings.error("codec", factory.error().message()));
  auto options = settings.get_section("codec_options");
  if (!options) return fail(options.error());
  auto configured = (*factory)(**options);
  if (!configured) return fail(std::move(configured).error());
  if (json_text_only && !(*configured)->json_text()) {
    return fail(settings.error(
        "codec", "codec " + detail::in_quotes(chosen) +
                     " writes binary records, which this sink type cannot frame (it writes one "
                     "JSON text per line or per body element); use a JSON codec here (\"json\", "
                     "\"debezium_json\" or \"cloudevents\" in structured mode), or a Kafka "
                     "sink for binary records"));
  }
  if (!carries_headers && (*configured)->record_headers()) {
    return fail(settings.error(
        "codec", "codec " + detail::in_quotes(chosen) +
                     " as configured puts part of each record into headers, which this sink "
                     "type has nowhere to put (for cloudevents: codec_options.mode = "
                     "\"structured\" writes one JSON document per event)"));
  }
  return std::shared_ptr<const ConfiguredCodec>(std::move(*configured));
}

Status ConfiguredSink::check_effectively_once(const std::optional<InSinkCheckpoint>&) const {
  return fail(Error::configuration(
      "this sink type makes a batch durable without a transaction that could hold the "
      "checkpoint too, so it cannot honour delivery_contract = \"effectively_once\"; use "
      "\"at_least_once\", or a Kafka sink with delivery_mode = \"transactional\""));
}

CheckpointPreflight ConfiguredCheckpoint::preflight(const std::string& checkpoint_id) const {
  using Outcome = PreflightCheck::Outcome;
  CheckpointPreflight out;
  const std::string where = describe(checkpoint_id);
  if (!durable()) {
    out.checks.push_back({Outcome::kPass, "checkpoint: " + where, ""});
    return out;
  }
  if (!may_hold_record(checkpoint_id)) {
    out.checks.push_back({Outcome::kPass, "no checkpoint yet (" + where + "): a first start", ""});
    return out;
  }
  auto opened = open(checkpoint_id);
  if (!opened) {
    out.checks.push_back(
        preflight_failure("the checkpoint (" + where + ") cannot be opened", opened.error()));
    return out;
  }
  auto loaded = (*opened)->load();
  if (!loaded) {
    out.checks.push_back(
        preflight_failure("the checkpoint (" + where + ") cannot be read", loaded.error()));
  } else if (!*loaded) {
    out.checks.push_back({Outcome::kPass, "no checkpoint yet (" + where + "): a first start", ""});
  } else {
    out.record = **loaded;
    out.checks.push_back(
        {Outcome::kPass, "checkpoint at " + out.record->offset + " (" + where + ")", ""});
  }
  return out;
}

PreflightCheck preflight_failure(const std::string& what, const Error& error) {
  using Outcome = PreflightCheck::Outcome;
  if (error.condition() == ErrorCondition::kCheckpointInUse) {
    return {Outcome::kWarn, what + ": " + error.report(),
            "a running cppcdc holds it, so its state was not compared; run preflight while "
            "the pipeline is stopped to compare it"};
  }
  std::string remedy;
  switch (error.kind()) {
    case ErrorKind::kTransient:
      remedy =
          "make sure the server named above is up and reachable from here, then run "
          "preflight again";
      break;
    case ErrorKind::kConfiguration:
      remedy = "change the setting or grant named above; a start would stop the same way";
      break;
    default:
      remedy = "see the error above; a start would stop the same way";
  }
  return {Outcome::kFail, what + ": " + error.report(), remedy,
          error.kind() == ErrorKind::kTransient};
}

std::optional<PreflightCheck> foreign_checkpoint_check(
    const std::optional<CheckpointRecord>& checkpoint, std::string_view source_type,
    const std::string& key, std::string_view key_setting) {
  if (!checkpoint || checkpoint->source_type == source_type) return std::nullopt;
  // Not this pipeline's position at all: comparing it with the server would only mislead,
  // and removing it (teardown, or the remedies of the other checks) would send the other
  // pipeline back to a full snapshot.
  return PreflightCheck{PreflightCheck::Outcome::kFail,
                        "the checkpoint stored under this pipeline's key (" + key +
                            ") was written by a " + checkpoint->source_type + " source ('" +
                            checkpoint->source_id + "', at " + checkpoint->offset +
                            "): another pipeline shares the key",
                        "give this pipeline its own " + std::string(key_setting) +
                            ", or its own checkpoint location ([state.offset]); do not remove "
                            "that record, it is the other pipeline's"};
}

Status register_source_type(std::string name, SourceFactory factory) {
  return sources().add(std::move(name), std::move(factory));
}
Status register_sink_type(std::string name, SinkFactory factory) {
  return sinks().add(std::move(name), std::move(factory));
}
Status register_checkpoint_backend(std::string name, CheckpointFactory factory) {
  return checkpoints().add(std::move(name), std::move(factory));
}

Result<SourceFactory> find_source_type(std::string_view name) { return sources().find(name); }
Result<SinkFactory> find_sink_type(std::string_view name) { return sinks().find(name); }
Result<CheckpointFactory> find_checkpoint_backend(std::string_view name) {
  return checkpoints().find(name);
}

std::vector<std::string> source_type_names() { return sources().names(); }
std::vector<std::string> sink_type_names() { return sinks().names(); }
std::vector<std::string> checkpoint_backend_names() { return checkpoints().names(); }

}  // namespace cppcdc
