#pragma once
// Plugins: how a program that is configured from a file (the `cppcdc` server) builds sources,
// sinks, checkpoint backends and codecs by type name, without knowing any of them.
//
// A plugin registers a factory per type name (register_source_type("postgres", ...)). The
// program hands the factory a Settings view of the part's configuration section; the factory
// validates it and returns a Configured* object: the part described and ready to be built,
// with nothing connected or opened yet (so `cppcdc check-config` can show it). The program
// then builds it when it runs.
//
// Built-in plugins register themselves through an explicit call (pg::register_plugin(),
// register_file_sink_plugin(), ...), never from static initialisers: objects of a static
// library that nobody references are dropped by the linker. The server calls them all once
// at start; an embedder that builds its parts directly needs none of this.
//
// Errors: a factory reports a bad setting through Settings::error / missing (the program knows
// where the setting is written and says so), or with Error::for_setting(owner, name). Messages
// never spell a configuration file's syntax.
//
// Threading: the registry functions are thread-safe. A Settings view is used from one thread,
// during the factory call only (do not keep it). Configured* objects are used from one thread.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/codec.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/source.hpp"

namespace cppcdc {

/// A read-only view of one configuration section (the `[source]` table of cdc.toml, say). Keys
/// are the setting names relative to the section. Every getter returns nullopt for an absent
/// key and a configuration error (naming where the key is written) for a value of the wrong
/// type. Reading a key marks it as known: after the factory returns, the program refuses keys
/// that no one read, so a misspelt setting cannot silently fall back to its default.
class Settings {
 public:
  virtual ~Settings() = default;

  /// False when the section is absent: every key then reads as absent.
  virtual bool present() const = 0;
  /// Whether `key` is set (marks it as known).
  virtual bool has(std::string_view key) const = 0;

  virtual Result<std::optional<std::string>> get_string(std::string_view key) const = 0;
  virtual Result<std::optional<bool>> get_bool(std::string_view key) const = 0;
  /// An integer within [min, max]; outside is an error naming both bounds.
  virtual Result<std::optional<std::int64_t>> get_int(std::string_view key, std::int64_t min,
                                                      std::int64_t max) const = 0;
  /// An array of strings. `element` describes one element for messages, with its article left
  /// out (e.g. "\"schema.table\" string" gives "expected an array of \"schema.table\" strings"
  /// and "expected a \"schema.table\" string").
  virtual Result<std::optional<std::vector<std::string>>> get_string_list(
      std::string_view key, std::string_view element) const = 0;
  /// A table of string values, in the order written. `what` describes the table for messages
  /// ("\"schema.table\" = \"SQL condition\"").
  virtual Result<std::optional<std::vector<std::pair<std::string, std::string>>>> get_string_map(
      std::string_view key, std::string_view what) const = 0;
  /// A path; a relative one is resolved against the configuration's base directory (the
  /// directory of the configuration file), so the same file always finds the same files.
  virtual Result<std::optional<std::filesystem::path>> get_path(std::string_view key) const = 0;
  /// A nested section (`[source.snapshot]` is "snapshot" of `[source]`); an absent one gives a
  /// view whose present() is false. The view lives as long as this one.
  virtual Result<const Settings*> get_section(std::string_view key) const = 0;

  /// A configuration error about `key`'s value: `what` says what is wrong ("expected ...,
  /// found ..."); the program adds where the key is written and how its file spells it.
  virtual Error error(std::string_view key, std::string_view what) const = 0;

  /// The directory where this pipeline keeps its state on this machine (the checkpoint
  /// backend's), when it keeps one there; nullopt otherwise (the default). A source may keep
  /// small files of its own in it that must outlive the process (PostgreSQL: a record of the
  /// replication slot it created, for `cppcdc teardown`). The directory may not exist yet.
  virtual std::optional<std::filesystem::path> state_directory() const { return std::nullopt; }
  /// The same about element `index` (0-based) of an array or table value.
  virtual Error element_error(std::string_view key, std::size_t index,
                              std::string_view what) const = 0;
  /// A configuration error for a required key that is absent; `why` follows "required" (e.g.
  /// "(a libpq connection string)"). The program may point at a look-alike key.
  virtual Error missing(std::string_view key, std::string_view why) const = 0;
};

/// A check-config style description: a headline, then labelled detail lines.
struct Description {
  /// After the part's role: "postgres (source_name \"db\")", "file /var/out.jsonl".
  std::string headline;
  /// (label, text) pairs, shown one per line in order. Secrets are redacted.
  std::vector<std::pair<std::string, std::string>> details;
};

/// One line of a preflight (`cppcdc preflight`): a read-only check against the live system.
struct PreflightCheck {
  enum class Outcome { kPass, kWarn, kFail };
  Outcome outcome = Outcome::kPass;
  /// What was checked and what was found, one line ("wal_level is logical").
  std::string what;
  /// For kWarn and kFail: what to do about it, one line (may be empty for kWarn).
  std::string remedy;
  /// For kFail: the server did not answer (the same check may pass later, unchanged), as
  /// opposed to a server that answered and refused. `cppcdc teardown` exits 1 on the first
  /// and 3 on the second.
  bool unreachable = false;
};

/// What `cppcdc preflight` tells a sink about its pipeline (ConfiguredSink::preflight).
struct SinkPreflightContext {
  /// The sink's name in the configuration ("default" for the default sink).
  std::string name;
  /// The events' source.source_name, and the captured "schema.table" names (patterns where
  /// the source takes patterns) whose events reach this sink: the routes already applied (a
  /// table the routes send elsewhere is not here). Empty: unknown.
  std::string source_name;
  std::vector<std::string> tables;
  /// Those of `tables` whose events carry no key (ConfiguredSource::keyless_tables), so a
  /// keyed destination knows they arrive without one. nullopt: not known (the source type
  /// cannot tell, its server did not answer, or transforms may rename or re-key events on
  /// their way to the sink).
  std::optional<std::vector<std::string>> keyless_tables;
  /// True when source_name is its source type's default (the file does not set it).
  bool source_name_is_default = false;
  /// Set under delivery_contract = "effectively_once" (as SinkOpenContext::checkpoint).
  std::optional<InSinkCheckpoint> checkpoint;
};

/// What a checkpoint backend's preflight found (ConfiguredCheckpoint::preflight).
struct CheckpointPreflight {
  std::vector<PreflightCheck> checks;
  /// The stored record, when one was read (the source compares it with its server).
  std::optional<CheckpointRecord> record;
  /// The index in `checks` of the warning about a batch a run left in flight (the Kafka
  /// sink's reconciliation marker under effectively_once), reported as a stopped run's; nullopt
  /// when there is none. A running pipeline has one too, its batch in flight now: the caller
  /// words that check so when the source shows the pipeline running.
  std::optional<std::size_t> in_flight_check;
  /// With in_flight_check: what was found, for that wording ("reconciliation marker ...").
  std::string in_flight;
};

/// The part of an initial snapshot that has no resume position until it ends
/// (ConfiguredSource::unresumable_snapshot): a restart reads it again from its start, so a
/// transactional sink under effectively_once holds it in one open transaction.
struct UnresumableSnapshot {
  /// The tables concerned ("schema.table", as the snapshot names them).
  std::vector<std::string> tables;
  /// True: the whole snapshot is one such stretch (the MySQL/MariaDB blocking snapshot, one
  /// consistent view with a position only after its last row). False: each of `tables` is one
  /// (PostgreSQL tables without a primary key, read whole).
  bool whole_snapshot = false;
};

/// One thing `cppcdc teardown` removes from the source's server, or keeps and why.
struct TeardownStep {
  enum class Outcome {
    kWouldDrop,  ///< plan (dry run): will be dropped
    kDropped,    ///< done
    kKept,       ///< left alone on purpose; `detail` says why and how to include it
    kAbsent,     ///< nothing to drop
    kFailed,     ///< could not be dropped; `detail` says why
  };
  Outcome outcome = Outcome::kAbsent;
  std::string what;    ///< "replication slot cppcdc"
  std::string detail;  ///< reason, remedy or error
  /// The checkpoint's position lives in this object (PostgreSQL: the replication slot): while
  /// it is kept, so is the checkpoint; once it is dropped, the checkpoint is useless and goes.
  bool holds_position = false;
};

/// A source type's validated settings; builds the Source.
class ConfiguredSource {
 public:
  virtual ~ConfiguredSource() = default;
  /// The identity a checkpoint is kept under for this source (Source::source_id(); for
  /// PostgreSQL the slot name). Checkpoint backends name their record after it.
  virtual std::string checkpoint_id() const = 0;
  /// One line for the log when the pipeline starts ("slot=x publication=y tables=a,b ...").
  /// Secrets are redacted.
  virtual std::string summary() const = 0;
  /// The effective settings, defaults included, for `cppcdc check-config`.
  virtual Description describe() const = 0;
  /// The name its events carry as source.source_name (what `${source_name}` of a Kafka topic
  /// template becomes), and the tables it captures ("schema.table"); empty when the source
  /// type does not say. Used by the sinks' preflight (SinkPreflightContext).
  virtual std::string source_name() const { return {}; }
  virtual std::vector<std::string> captured_tables() const { return {}; }
  /// Why this source takes no incremental snapshot commands (a few words, e.g. its snapshot
  /// mode), or nullopt when it takes them.
  virtual std::optional<std::string> no_incremental_snapshots_reason() const = 0;
  /// Builds the source. Nothing connects before Source::start().
  virtual Result<std::unique_ptr<Source>> build() const = 0;
  /// Connects and checks everything Source::start() would check, creating and changing
  /// nothing, and returns one line per check in a stable order. A failed check is a kFail
  /// line, never an error: the checks that can still run go on. `checkpoint`: the stored
  /// record, when one could be read (a source compares it with the server's state). Blocks
  /// for network round trips (connect timeouts apply). The default says the source type has
  /// no preflight yet.
  virtual std::vector<PreflightCheck> preflight(
      const std::optional<CheckpointRecord>& checkpoint) const {
    (void)checkpoint;
    return {{PreflightCheck::Outcome::kWarn, "this source type has no preflight checks yet",
             "start it (cppcdc run) to find problems"}};
  }
  /// The captured tables ("schema.table") whose events will carry no key (primary_key null):
  /// read from the live server, changing nothing, for `cppcdc preflight`. nullopt: not known
  /// (the default; also when the server cannot be read: preflight() reports why). Blocks for
  /// network round trips like preflight().
  virtual std::optional<std::vector<std::string>> keyless_tables() const { return std::nullopt; }
  /// What of the initial snapshot that a start with `checkpoint` (the stored record; nullopt:
  /// a first start) would take has no resume position until it ends, read from the live
  /// server, changing nothing. nullopt: no such stretch (no snapshot would be taken, or every
  /// table of it resumes mid-way), or not known (the default; also when the server cannot be
  /// read). Blocks for network round trips like preflight().
  virtual std::optional<UnresumableSnapshot> unresumable_snapshot(
      const std::optional<CheckpointRecord>& checkpoint) const {
    (void)checkpoint;
    return std::nullopt;
  }
  /// Whether another process already reads from what this source would read from (for
  /// PostgreSQL: its replication slot is active). `cppcdc run` calls it before the sinks open,
  /// so that a copied configuration stops before they can disturb the running pipeline (a
  /// transactional Kafka sink's start fences the other run's producer). Changes nothing. ok():
  /// nothing shows the source in use. Else an Error of kind configuration naming what is in
  /// use, by whom, and what to do; or the connection's own error when the server cannot be
  /// reached (transient: the caller waits under the retry policy and asks again) or refuses
  /// the source's login (terminal): the start would fail so too, after the sinks opened.
  /// Blocks for network round trips (connect timeouts apply), and briefly longer while what is
  /// in use may be a process that just ended. The default: ok (nothing to check).
  virtual Status check_not_in_use() const { return ok(); }
  /// Removes from the server what the source created for this pipeline and holds there (for
  /// PostgreSQL its replication slot and publication), and nothing it did not create unless
  /// `include_preexisting`. With `dry_run`, changes nothing and returns the plan. Returns one
  /// step per object; a failure is a kFailed step, an Error only when the server cannot be
  /// reached at all. Never called while the pipeline runs (the caller makes sure). The
  /// default: the source holds nothing on its server.
  virtual Result<std::vector<TeardownStep>> teardown(bool dry_run, bool include_preexisting) const {
    (void)dry_run;
    (void)include_preexisting;
    return std::vector<TeardownStep>{};
  }
};

/// Stores events a sink gave up on for good (a permanent refusal by its destination) with
/// the error, durably, before it returns ok; the sink then counts them as delivered. An error
/// from it is the sink's failure (the batch is not acknowledged).
using SinkDeadLetterHook = std::function<Status(std::span<const Event> events, const Error& error)>;

/// What the program hands a sink it opens for a pipeline.
struct SinkOpenContext {
  /// The sink's name in the configuration (the default sink's is "default").
  std::string name;
  /// The program's dead-letter destination, already bound to this sink's name; null when
  /// the configuration has none. A sink whose dead_letter_key() is set is opened with it.
  SinkDeadLetterHook dead_letter;
  /// Set under delivery_contract = "effectively_once": the sink must open as a
  /// TransactionalSink whose commit(record) writes the record there (check_effectively_once
  /// said it can).
  std::optional<InSinkCheckpoint> checkpoint;
  /// As SinkPreflightContext's: the events' source.source_name and the captured "schema.table"
  /// names routed to this sink (empty: unknown), so that open() can check before the source
  /// starts what its codec needs for their destinations (ConfiguredCodec::check_destinations).
  std::string source_name;
  std::vector<std::string> tables;
};

/// A sink type's validated settings; opens the Sink.
class ConfiguredSink {
 public:
  virtual ~ConfiguredSink() = default;
  virtual Description describe() const = 0;
  /// Opens the sink (a file sink opens its file here). Error kind configuration when the
  /// settings need something `context` lacks (dead letters, say).
  virtual Result<std::unique_ptr<Sink>> open(const SinkOpenContext& context) const = 0;
  /// The setting that makes this sink hand refused events to the dead-letter destination
  /// (the program then requires one and names this key when it is missing); nullopt: it never
  /// does.
  virtual std::optional<std::string> dead_letter_key() const { return std::nullopt; }
  /// Checks, read-only, what open() and the first batch would meet at the sink's destination
  /// (its servers answer, its topics or paths), creating and changing nothing there, and
  /// returns one line per check. A failed check is a kFail line, never an error. Blocks for
  /// network round trips; an implementation bounds its total time and says so in its lines.
  /// The default: no checks (a sink with no server of its own).
  virtual std::vector<PreflightCheck> preflight(const SinkPreflightContext& context) const {
    (void)context;
    return {};
  }
  /// Whether this sink can honour delivery_contract = "effectively_once" with the checkpoint
  /// kept at `checkpoint` (nullopt: the backend keeps it outside every sink). ok: opened with
  /// SinkOpenContext::checkpoint set to it, the sink is a TransactionalSink that commits each
  /// batch together with its record there. Otherwise a configuration error naming the setting
  /// to change (the sink's own or the backend's, SettingOwner::kCheckpoint). The default: the
  /// sink cannot (it makes batches durable without a transaction).
  virtual Status check_effectively_once(const std::optional<InSinkCheckpoint>& checkpoint) const;
  /// How long one transaction of this sink may stay open before its destination aborts it, in
  /// ms (a Kafka producer's transaction.timeout.ms), for the warnings about stretches that
  /// one transaction must hold; nullopt (the default): the sink opens no transactions.
  virtual std::optional<std::int64_t> transaction_timeout_ms() const { return std::nullopt; }
};

/// A checkpoint backend's validated settings; opens the Checkpoint for a source.
class ConfiguredCheckpoint {
 public:
  virtual ~ConfiguredCheckpoint() = default;
  /// Where the record of `checkpoint_id` is kept, for messages ("local_fs /dir/checkpoint-x.ckpt",
  /// "memory (not durable: ...)").
  virtual std::string describe(const std::string& checkpoint_id) const = 0;
  /// False when nothing survives the process (memory).
  virtual bool durable() const = 0;
  /// A local directory the backend keeps its state in, if any (the server puts its control
  /// socket there by default).
  virtual std::optional<std::filesystem::path> directory() const { return std::nullopt; }
  /// Whether a record of `checkpoint_id` may exist, answered without opening anything (a
  /// local_fs backend looks for the file); true when the backend cannot tell.
  virtual bool may_hold_record(const std::string& checkpoint_id) const {
    (void)checkpoint_id;
    return true;
  }
  /// Deletes the record of `checkpoint_id` (and what the backend keeps beside it for that
  /// source, such as a lock file). Refused (configuration error) while a writer holds it.
  /// Absent records are not an error. The default: nothing durable to delete.
  virtual Status remove(const std::string& checkpoint_id) const {
    (void)checkpoint_id;
    return ok();
  }
  /// Opens the backend for the source with `checkpoint_id`.
  virtual Result<std::shared_ptr<Checkpoint>> open(const std::string& checkpoint_id) const = 0;
  /// For `cppcdc preflight`: checks what open() and load() of `checkpoint_id` would meet and
  /// reads the record, creating nothing a start would create (no topic, table or directory).
  /// Failed checks are kFail lines naming the error and its remedy; only a writer that holds
  /// the record (ErrorCondition::kCheckpointInUse) is a kWarn saying a running cppcdc holds it.
  /// The default (src/core/plugin.cpp): a pass line for a backend that is not durable or has
  /// no record yet (may_hold_record), else open() and load(); fine for a backend whose open()
  /// creates nothing. Blocks for network round trips.
  virtual CheckpointPreflight preflight(const std::string& checkpoint_id) const;
  /// Where a transactional sink may write the record of `checkpoint_id` inside its own
  /// transaction (see InSinkCheckpoint); nullopt (the default) when the backend keeps records
  /// only where no sink writes, so effectively_once cannot be had with it.
  virtual std::optional<InSinkCheckpoint> in_sink(const std::string& checkpoint_id) const {
    (void)checkpoint_id;
    return std::nullopt;
  }
};

/// A preflight line for `error` met while checking `what`: kWarn when another writer holds a
/// checkpoint (ErrorCondition::kCheckpointInUse), else kFail with the error and a remedy by
/// its kind.
PreflightCheck preflight_failure(const std::string& what, const Error& error);

/// A source's preflight line for a stored `checkpoint` that a source of another type wrote
/// under this pipeline's key (two pipelines sharing a checkpoint topic, table or directory
/// with their default keys): a kFail saying another pipeline shares the key, whose remedy
/// names `key_setting` (the source setting the key comes from, e.g. "slot_name") and never
/// suggests removing the record (it is the other pipeline's). nullopt when there is no record
/// or this source type (`source_type`, Source::type()) wrote it.
std::optional<PreflightCheck> foreign_checkpoint_check(
    const std::optional<CheckpointRecord>& checkpoint, std::string_view source_type,
    const std::string& key, std::string_view key_setting);

/// A codec's validated options (`[sink.codec_options]`); makes its encoders and decoders.
/// A sink reads its codec with configure_codec() and makes one encoder per opened sink.
class ConfiguredCodec {
 public:
  virtual ~ConfiguredCodec() = default;
  /// The name it is registered under ("json").
  virtual std::string name() const = 0;
  /// Whether its records are JSON text without line breaks (Encoder::json_text()).
  virtual bool json_text() const = 0;
  /// Whether its records carry headers (Encoder::record_headers()).
  virtual bool record_headers() const { return false; }
  /// (label, text) lines for check-config; secrets redacted.
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
  /// A new encoder. Connects to nothing (a registry-backed codec resolves its schema ids on
  /// first use per destination).
  virtual Result<std::unique_ptr<Encoder>> make_encoder() const = 0;
  /// A new decoder for what make_encoder()'s encoders write.
  virtual Result<std::unique_ptr<Decoder>> make_decoder() const = 0;
  /// Read-only start-up checks of what the codec needs beyond the sink (a schema registry),
  /// for records sent to `destinations` (Kafka topics; empty when the sink has none). The
  /// default: none.
  virtual std::vector<PreflightCheck> preflight(
      const std::vector<std::string>& destinations) const {
    (void)destinations;
    return {};
  }
  /// The part of preflight() a start must not get past: a sink's open() calls it for the
  /// destinations it knows, so that `cppcdc run` stops before the source starts, with the
  /// error preflight() reports (a schema missing from its registry subject under
  /// auto_register = false names the subject), instead of at the first record of a table
  /// that may stay quiet for hours. Blocks for network round trips. The default: ok.
  virtual Status check_destinations(const std::vector<std::string>& destinations) const {
    (void)destinations;
    return ok();
  }
};

using CodecFactory =
    std::function<Result<std::unique_ptr<ConfiguredCodec>>(const Settings& options)>;

/// Registers a codec under `name` (the value of a sink's `codec` key). Same rules as
/// register_sink_type: a null factory reserves the name, a second registration is refused.
Status register_codec(std::string name, CodecFactory factory);
/// The codec factory of `name`; unknown names are a configuration error about setting "codec"
/// of the sink that lists the available codecs.
Result<CodecFactory> find_codec(std::string_view name);
/// The names that have a factory, sorted.
std::vector<std::string> codec_names();

/// A sink's codec: reads `codec` (default "json") from the sink's own settings and hands the
/// `codec_options` section (absent: an empty one) to that codec's factory. Errors: an unknown
/// codec names the `codec` key and lists the known codecs; a bad option names its key under
/// codec_options. `json_text_only`: refuse codecs whose records are not JSON text (line-framed
/// and JSON-body sinks), naming the `codec` key. `carries_headers`: the sink sends the headers
/// of Encoder::append_headers; without it, codecs whose records have headers are refused the
/// same way.
Result<std::shared_ptr<const ConfiguredCodec>> configure_codec(const Settings& sink_settings,
                                                               bool json_text_only,
                                                               bool carries_headers = false);

/// Registers the built-in "json" codec. Idempotent. The built-in sink plugins call it.
void register_json_codec_plugin();

using SourceFactory =
    std::function<Result<std::unique_ptr<ConfiguredSource>>(const Settings& settings)>;
using SinkFactory =
    std::function<Result<std::unique_ptr<ConfiguredSink>>(const Settings& settings)>;
using CheckpointFactory =
    std::function<Result<std::unique_ptr<ConfiguredCheckpoint>>(const Settings& settings)>;

/// Registers `factory` under the type name `name`. A null factory reserves the name for a type
/// this build does not include: looking it up then says so instead of listing it as unknown.
/// A second registration of a name is refused (kind invalid_state), so two plugins cannot
/// silently replace each other.
Status register_source_type(std::string name, SourceFactory factory);
Status register_sink_type(std::string name, SinkFactory factory);
Status register_checkpoint_backend(std::string name, CheckpointFactory factory);

/// The factory registered under `name`. Unknown or reserved names are a configuration error
/// about setting "type" (sources, sinks) or "backend" (checkpoints) that lists the available
/// names.
Result<SourceFactory> find_source_type(std::string_view name);
Result<SinkFactory> find_sink_type(std::string_view name);
Result<CheckpointFactory> find_checkpoint_backend(std::string_view name);

/// The names that have a factory, sorted (reserved names are left out).
std::vector<std::string> source_type_names();
std::vector<std::string> sink_type_names();
std::vector<std::string> checkpoint_backend_names();

/// The built-in sinks and checkpoint backends ("file", "stdout"; "local_fs", "memory").
/// Idempotent. (Connectors register themselves: pg::register_plugin().)
void register_file_sink_plugin();
void register_stdout_sink_plugin();
void register_checkpoint_plugins();

}  // namespace cppcdc
