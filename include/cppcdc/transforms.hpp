#pragma once
// The native transforms: actions that rewrite events between the source and the router
// (core concepts, "Transform pipeline"; API guide, "Transforms").
//
//   TransformChain (a cppcdc::Transform the Pipeline runs)
//     -> stages, in order; each stage has a name, a `when` predicate and actions, in order
//        -> actions: filter, unwrap, flatten, route, metadata_projection, key_shaping, mask,
//           field_mapping, outbox (or your own TransformAction)
//
// Every event runs through every stage whose `when` matches it; an action that drops the
// event ends its way through the chain. After each stage the chain checks two rules:
//   - the key guard: when the event resolved a key before the stage (every column named in
//     primary_key present) and the stage left primary_key naming a column the payload no
//     longer carries, the stage is refused (error naming the stage and the table). A stage may
//     set primary_key to nullopt on purpose; tables without a key never trip the guard;
//   - Event::validate(): what leaves a stage is a valid envelope.
//
// Paths. A field path is a dotted list of names: its first name is a top-level column, the
// rest walk into a json/jsonb value ("address.city"); a `*` after the first name stands for
// every element of an array (and every member of an object): "tags.*". Names cannot contain
// a dot and cannot be empty. Filter fields add an image in front: "after.status",
// "before.user.country".
//
// Column bookkeeping. Actions that rename, remove or set top-level columns keep
// `unavailable_columns` (after) and the before-image's unavailable list in step: a rename
// moves the marker, a remove drops it, a set or copy into the column drops it (the column now
// has a value); a change inside a column's JSON value leaves the lists alone. An action that
// changes the set of top-level columns resets Event::shape to nullptr (the source's shape no
// longer describes the row).
//
// Errors. Construction (make_*, TransformChain::create, parse_transform_stages) returns
// configuration errors for settings that cannot do what they appear to: unknown operator or
// op names, empty filter values, invalid regular expressions, truncate = 0, redact = "",
// empty paths, a secret_env naming an unset variable. Applying fails with kind invalid_data on
// data an action cannot handle (a ciphertext that does not authenticate, a field to unwrap that
// is not an object, a rename onto an existing column, ...), and with kind configuration when
// the key guard refuses a stage (the remedy is in the configuration). Such errors name the
// stage and the event's table and offset.
//
// Threading. A chain, its stages and actions are driven by one thread at a time (the
// pipeline's). rules() / unmatched_rules() may be called from any thread at any time (the
// counters are atomics). Ownership: the chain owns its stages and actions; the dead-letter
// hook is called on the applying thread and must not keep references into its arguments.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/transform.hpp"

namespace cppcdc {

// ---- paths, globs and `when` ------------------------------------------------------------

/// A parsed field path (see above). Segments are never empty; `*` is a wildcard segment and
/// never the first one.
struct FieldPath {
  std::vector<std::string> segments;
  std::string text;  ///< as written
  bool has_wildcard() const noexcept;
  const std::string& column() const noexcept { return segments.front(); }
};

/// Parses a field path. Error kind configuration: empty path, empty segment, a wildcard as
/// the first segment, a path longer than 64 segments or 1024 bytes.
Result<FieldPath> parse_field_path(std::string_view text);

/// Which image a filter field reads.
enum class FilterImage { kAfter, kBefore };

/// A filter field "after.<path>" or "before.<path>". Error kind configuration.
Result<std::pair<FilterImage, FieldPath>> parse_filter_field(std::string_view text);

/// A compiled glob: `*` matches any run of characters (dots included), `?` one character;
/// everything else matches itself.
class Glob {
 public:
  explicit Glob(std::string pattern);
  bool matches(std::string_view text) const noexcept;
  /// Matches "schema.table" (or just "table" when `schema` is empty) without building it.
  bool matches_qualified(std::string_view schema, std::string_view table) const noexcept;
  const std::string& pattern() const noexcept { return pattern_; }

 private:
  std::string pattern_;
};

/// Matches `table` against `pattern`: a pattern with a dot is matched against
/// "schema.table", one without against the table name alone.
bool table_glob_matches(const Glob& pattern, const Event& event) noexcept;

/// The `when` predicate of a stage. Each non-empty list must match (tables: any glob matches
/// the qualified name; schemas: any glob matches the schema; ops: the op is listed). All
/// empty: every event.
struct WhenConfig {
  std::vector<std::string> tables;
  std::vector<std::string> schemas;
  std::vector<Operation> ops;
};

class WhenPredicate {
 public:
  WhenPredicate() = default;
  explicit WhenPredicate(const WhenConfig& config);
  bool matches(const Event& event) const noexcept;
  bool matches_everything() const noexcept {
    return tables_.empty() && schemas_.empty() && ops_ == 0;
  }

 private:
  std::vector<Glob> tables_;
  std::vector<Glob> schemas_;
  std::uint32_t ops_ = 0;  // bit per Operation
};

// ---- rule hit counters --------------------------------------------------------------------

/// One counted rule. kind is "mask", "filter" or "route".
struct TransformRuleStats {
  std::string transform;  ///< the stage name
  std::string action;     ///< the action type ("mask", "filter", "route")
  std::string kind;       ///< "mask" | "filter" | "route"
  std::string rule;       ///< the pattern as configured ("email", "after.status eq active")
  std::uint64_t hits = 0;
  /// Filter rules: times the rule was evaluated (a short-circuited rule is not). Others:
  /// events the rule was tried on.
  std::uint64_t evaluations = 0;
  /// True when the rule never fired. Filter rules are unmatched only once evaluated.
  bool unmatched = false;
  /// What silently happens while it stays unmatched, in words.
  std::string consequence;
};

/// A rule that never fired (TransformRuleStats with unmatched set).
struct UnmatchedRule {
  std::string transform;
  std::string kind;
  std::string rule;
  std::string consequence;
};

/// A counter an action keeps per rule; safe to read from any thread.
struct RuleCounter {
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> evaluations{0};
  void hit() noexcept { hits.fetch_add(1, std::memory_order_relaxed); }
  void evaluated() noexcept { evaluations.fetch_add(1, std::memory_order_relaxed); }
};

// ---- actions ------------------------------------------------------------------------------

/// What an action does with an event.
enum class ActionResult { kKeep, kDrop };

/// One action. apply() rewrites `event` in place; returning kDrop removes it from the batch
/// (it is still acknowledged with its batch). `stage` is the name of the stage running it,
/// for messages.
class TransformAction {
 public:
  virtual ~TransformAction() = default;
  /// The action type name ("mask", "filter", ...).
  virtual std::string_view type() const noexcept = 0;
  virtual Result<ActionResult> apply(Event& event, std::string_view stage) = 0;
  /// Whether the action may change the values of primary-key columns on purpose and refuses
  /// itself the changes that would merge rows (mask: a hash keeps one key per row, null or
  /// redact would give every row the same). For any other action the chain refuses an event
  /// whose key columns keep their names but change their values in that action: a consumer
  /// upserting by key would otherwise file the row under another row's key.
  virtual bool rewrites_key_values() const noexcept { return false; }
  /// Appends this action's counted rules (empty for actions without rules).
  virtual void collect_rules(std::string_view stage, std::vector<TransformRuleStats>& out) const {
    (void)stage;
    (void)out;
  }
};

/// filter: drops events, and optionally projects columns.
enum class FilterOperator { kEq, kNe, kContains, kRegex, kLt, kLe, kGt, kGe };
/// "eq", "ne", "contains", "regex", "lt", "le", "gt", "ge".
std::string_view to_string(FilterOperator op) noexcept;
/// Parses an operator name (case-insensitive). Error kind configuration, listing the names.
Result<FilterOperator> parse_filter_operator(std::string_view name);

/// A content rule: `field` ("after.<path>" or "before.<path>") compared with `value`.
/// eq/ne compare text (a JSON value by its text; a JSON string by its content); contains is a
/// substring test; regex searches with an ECMAScript expression; lt/le/gt/ge compare numbers
/// when both sides parse as decimal numbers, else the texts byte by byte. A field that is
/// absent or SQL NULL matches no operator (ne included). With a wildcard, any element counts.
struct FilterRule {
  std::string field;
  FilterOperator op = FilterOperator::kEq;
  std::string value;  ///< must not be empty
};

enum class FilterMode { kAll, kAny };

struct FilterConfig {
  std::vector<Operation> include_ops;     ///< empty: every op
  std::vector<Operation> exclude_ops;
  std::vector<std::string> include_tables;   ///< table globs (see table_glob_matches)
  std::vector<std::string> exclude_tables;
  std::vector<std::string> include_schemas;  ///< schema globs
  std::vector<std::string> exclude_schemas;
  std::vector<FilterRule> filters;  ///< an event is kept when they match per `mode`
  FilterMode mode = FilterMode::kAll;
  /// Projection of the row images: keep only these top-level columns / drop these. Setting
  /// both is an error.
  std::optional<std::vector<std::string>> include_columns;
  std::vector<std::string> exclude_columns;
};
/// Counted rules: each content rule (hit: evaluated and true) and each exclude pattern
/// (hit: it excluded an event).
Result<std::unique_ptr<TransformAction>> make_filter(FilterConfig config);

/// unwrap: after becomes the members of the JSON object in column `field` (same for a full
/// before-image that carries it; SQL NULL gives no members). The unavailable lists are emptied
/// (the other columns are gone). A key-only before-image stays as it is. With
/// drop_primary_key, primary_key becomes nullopt, except on a delete whose before-image is
/// key-only (its key is all that says which row went). Without it the chain refuses the event
/// when the key columns are not members of the object, or are members with other values.
struct UnwrapConfig {
  std::string field;
  bool drop_primary_key = false;
};
Result<std::unique_ptr<TransformAction>> make_unwrap(UnwrapConfig config);

/// flatten: the members of the JSON object in column `field` become top-level columns named
/// prefix + member name, and `field` itself is removed. A member whose name is taken by a
/// column is an error at apply. A string member becomes its text, null SQL NULL, any other
/// value stays JSON.
struct FlattenConfig {
  std::string field;
  std::string prefix;
};
Result<std::unique_ptr<TransformAction>> make_flatten(FlattenConfig config);

/// route: rewrites the event's schema and/or table (the router and sinks see the new names).
/// At least one must be set. One counted rule (hit: an event rewritten).
struct RouteConfig {
  std::optional<std::string> schema;
  std::optional<std::string> table;
};
Result<std::unique_ptr<TransformAction>> make_route(RouteConfig config);

/// metadata_projection: writes a JSON object column `target_field` holding the chosen
/// metadata. Field names: "schema", "table", "operation", "source_name", "source_timestamp",
/// "offset", "ts", "tx_id", "snapshot". Events without an after image are left alone. A row
/// that already has a column named target_field is an error (invalid_data).
struct MetadataProjectionConfig {
  std::string target_field = "_meta";
  std::vector<std::string> fields = {"schema", "table", "operation", "source_timestamp",
                                     "offset"};
};
Result<std::unique_ptr<TransformAction>> make_metadata_projection(MetadataProjectionConfig config);

/// key_shaping: writes a deterministic key into column `target_field` of after:
///   kPrimaryKey: a JSON object of the key columns and their values, in key order;
///   kFingerprint: the lower-case hex SHA-256 of the schema, table, op, source offset,
///     transaction tx_id/event_index and the row images (stable across restarts).
/// An event without a resolvable key is left alone in kPrimaryKey mode. An event without an
/// after image (a delete) gets the column in its before-image instead, in kPrimaryKey mode
/// only (a fingerprint names one event), and with set_primary_key its key too, so that a
/// delete is keyed like its row's inserts. A row that already has a column named
/// target_field is an error (invalid_data).
/// With set_primary_key, primary_key becomes [target_field].
enum class KeyMode { kPrimaryKey, kFingerprint };
struct KeyShapingConfig {
  std::string target_field = "_key";
  KeyMode mode = KeyMode::kPrimaryKey;
  bool set_primary_key = false;
};
Result<std::unique_ptr<TransformAction>> make_key_shaping(KeyShapingConfig config);

/// mask: rewrites values by path in after and in the before-image.
///   kPassthrough       leaves the value alone
///   kNull              SQL NULL (JSON null inside a JSON value)
///   kRedact            the marker text (must not be empty)
///   kTruncate          the first `length` characters (UTF-8 code points; must be >= 1)
///   kUnsaltedSha256    lower-case hex SHA-256 of the value's text (reversible for enumerable
///                      values by a lookup table: prefer kHmacSha256)
///   kHmacSha256        lower-case hex HMAC-SHA256 keyed with `secret`
///   kEncrypt           AES-256-GCM, "enc:v1:<nonce>:<ciphertext>" with base64 nonce (12
///                      bytes, random per value) and base64 ciphertext followed by its 16-byte
///                      tag; the associated data binds it to the table and the rule's path, so
///                      a value moved to another table or path does not decrypt. The key is
///                      the SHA-256 digest of `secret`.
///   kDecrypt           the reverse; a value that is not in that format or does not
///                      authenticate is an error (kind invalid_data)
/// A top-level column's result is plain text (is_json off); inside a JSON value the result is
/// a JSON string. SQL NULL stays NULL. A rule on a json/jsonb column covers its whole value.
/// A rule (or the default rule) that reaches a primary-key column must keep one key per row:
/// kNull, kRedact and kTruncate (rows would share a key) and kEncrypt (a fresh nonce per event
/// would give every version of a row a different key) are refused at apply (invalid_data).
struct MaskRule {
  enum class Kind {
    kPassthrough, kNull, kRedact, kTruncate, kUnsaltedSha256, kHmacSha256, kEncrypt, kDecrypt
  };
  Kind kind = Kind::kPassthrough;
  std::string marker;       ///< kRedact
  std::size_t length = 0;   ///< kTruncate
  std::string secret;       ///< kHmacSha256, kEncrypt, kDecrypt (the bytes of the key material)

  static MaskRule passthrough() { return {}; }
  static MaskRule null() { return {Kind::kNull, {}, 0, {}}; }
  static MaskRule redact(std::string marker) { return {Kind::kRedact, std::move(marker), 0, {}}; }
  static MaskRule truncate(std::size_t n) { return {Kind::kTruncate, {}, n, {}}; }
  static MaskRule unsalted_sha256() { return {Kind::kUnsaltedSha256, {}, 0, {}}; }
  static MaskRule hmac_sha256(std::string secret) {
    return {Kind::kHmacSha256, {}, 0, std::move(secret)};
  }
  static MaskRule encrypt(std::string secret) { return {Kind::kEncrypt, {}, 0, std::move(secret)}; }
  static MaskRule decrypt(std::string secret) { return {Kind::kDecrypt, {}, 0, std::move(secret)}; }
};
/// "passthrough", "null", "redact", "truncate", "unsalted_sha256", "hmac_sha256", "encrypt",
/// "decrypt".
std::string_view to_string(MaskRule::Kind kind) noexcept;

struct MaskConfig {
  /// (path, rule), applied in this order.
  std::vector<std::pair<std::string, MaskRule>> rules;
  /// For top-level columns no rule names: kPassthrough (default) or any other rule
  /// (e.g. unsalted_sha256 to hash everything not configured).
  MaskRule default_rule;
};
/// Validates (empty path, redact "", truncate 0, empty secret, duplicate path: configuration
/// errors). Counted rules: one per path (hit: an event carried a value there).
Result<std::unique_ptr<TransformAction>> make_mask(MaskConfig config);

/// field_mapping on top-level columns of after (and of a before-image carrying them), applied
/// in this order: copy (to <- from), rename (from -> to), set (after only; the literal text,
/// or SQL NULL), remove. Nested paths are allowed in `set` and `remove`: they change a field
/// inside a JSON column. With strict, a copy, rename or remove naming a column the event does
/// not carry is an error; without it the entry is skipped. Copying or renaming onto a column
/// that exists is always an error.
struct FieldMappingConfig {
  std::vector<std::pair<std::string, std::string>> copy;    ///< (from, to)
  std::vector<std::pair<std::string, std::string>> rename;  ///< (from, to)
  std::vector<std::pair<std::string, std::optional<std::string>>> set;  ///< (path, value)
  std::vector<std::string> remove;                           ///< paths
  bool strict = false;
};
Result<std::unique_ptr<TransformAction>> make_field_mapping(FieldMappingConfig config);

/// outbox: an insert (or snapshot read) of an outbox row becomes the domain event it carries.
/// The event's table becomes the row's aggregate type (table_prefix in front), the schema is
/// kept, and after holds the event id, aggregate id, event type and payload columns (with
/// expand_payload, the payload's object members instead of the payload column); primary_key
/// becomes [aggregate_id_column]. Updates and deletes of outbox rows are dropped (deleting
/// sent rows is the usual clean-up). A missing column or a NULL aggregate type is an error.
/// Put the outbox table in the stage's `when` so other tables pass through.
struct OutboxConfig {
  std::string id_column = "id";
  std::string aggregate_type_column = "aggregatetype";
  std::string aggregate_id_column = "aggregateid";
  std::string type_column = "type";
  std::string payload_column = "payload";
  std::string table_prefix;
  bool expand_payload = false;
};
Result<std::unique_ptr<TransformAction>> make_outbox(OutboxConfig config);

// ---- stages and the chain -----------------------------------------------------------------

struct TransformStage {
  std::string name;  ///< must not be empty; unique within a chain
  WhenConfig when;
  std::vector<std::unique_ptr<TransformAction>> actions;  ///< at least one
};

/// `[runtime] transform_error_policy`.
enum class TransformErrorPolicy {
  kHalt,  ///< the batch fails: nothing of it is written or acknowledged (default)
  kSkip,  ///< the failed event is dropped, logged and handed to the dead-letter hook
};
/// "halt", "skip".
std::string_view to_string(TransformErrorPolicy policy) noexcept;

/// Receives an event the chain dropped under kSkip: the event as it entered the chain, or,
/// when stages with a mask action ran on it before the failing stage, as it left the last of
/// them (values masked before the failure stay masked); the error; and the stage that failed. It must store the event durably before returning ok
/// (the batch is acknowledged afterwards), or, when the chain has a DeadLetterFlush, before
/// that returns; an error from either fails the batch as kHalt would. A DeadLetterWriter
/// (dead_letter.hpp) does both: append() as the hook, flush() as the flush.
using DeadLetterHook =
    std::function<Status(const Event& event, const Error& error, std::string_view stage)>;
/// Called once at the end of TransformChain::apply() when the hook received events during it:
/// makes everything the hook received durable, so that one fsync covers a batch.
using DeadLetterFlush = std::function<Status()>;

struct TransformChainConfig {
  std::vector<TransformStage> stages;
  TransformErrorPolicy error_policy = TransformErrorPolicy::kHalt;
  /// Required with kSkip (create() refuses kSkip without one: events must not vanish).
  DeadLetterHook dead_letter;
  /// Optional: lets the hook buffer (see DeadLetterFlush).
  DeadLetterFlush dead_letter_flush;
  /// Name of the chain for Transform::name().
  std::string name = "transforms";
};

/// The chain as a pipeline Transform (pass it in PipelineConfig::transforms; keep a raw
/// pointer to read its counters).
class TransformChain final : public Transform {
 public:
  /// Error kind configuration: an empty or repeated stage name, a stage without actions, a null
  /// action, kSkip without a dead-letter hook.
  static Result<std::unique_ptr<TransformChain>> create(TransformChainConfig config);
  ~TransformChain() override;

  std::string name() const override;
  /// Runs every event through the stages and removes dropped events, in place (no copy of an
  /// event except, under kSkip, the one kept for the dead-letter hook). Errors carry the
  /// stage name and the event's table and offset.
  Status apply(std::vector<Event>& events) override;
  /// Runs one event; kDrop when it was filtered out (or skipped under kSkip).
  Result<ActionResult> apply_one(Event& event);

  /// Every counted rule with its counters (for the admin snapshot).
  std::vector<TransformRuleStats> rules() const;
  /// The rules that never fired (filter rules only once evaluated).
  std::vector<UnmatchedRule> unmatched_rules() const;
  /// Logs one warning per unmatched rule, with its consequence (spdlog default logger). Before
  /// the first event (when every rule is unmatched) it logs one informational line instead.
  void warn_on_unmatched_rules() const;
  /// Events dropped under kSkip so far.
  std::uint64_t skipped_events() const noexcept;

  std::size_t stage_count() const noexcept;

 private:
  TransformChain();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- configuration from a file ------------------------------------------------------------

struct ConfigMember;

/// A configuration value with where it is written, so a program can hand the transform
/// settings of its own file format over (the cppcdc server converts TOML into it).
struct ConfigNode {
  using Array = std::vector<ConfigNode>;
  using Table = std::vector<ConfigMember>;  ///< in the order written
  enum class Type { kNone, kString, kInteger, kFloat, kBoolean, kArray, kTable };

  Type type = Type::kNone;
  std::string text;          ///< kString
  std::int64_t integer = 0;  ///< kInteger
  double number = 0;         ///< kFloat
  bool boolean = false;      ///< kBoolean
  Array items;               ///< kArray
  Table members;             ///< kTable
  /// "file:line:column" (or just the file) of the value, for messages.
  std::string where;

  static ConfigNode of_string(std::string v, std::string where = {});
  static ConfigNode of_integer(std::int64_t v, std::string where = {});
  static ConfigNode of_float(double v, std::string where = {});
  static ConfigNode of_boolean(bool v, std::string where = {});
  static ConfigNode of_array(Array v, std::string where = {});
  static ConfigNode of_table(Table v, std::string where = {});

  /// The value when it has that type, else nullptr.
  const Table* table() const noexcept;
  const Array* array() const noexcept;
  const std::string* string() const noexcept;
  const std::int64_t* int_value() const noexcept;
  const double* float_value() const noexcept;
  const bool* bool_value() const noexcept;
  /// The member `key` of a table, or nullptr.
  const ConfigNode* find(std::string_view key) const noexcept;
  /// "a table", "a string", ... for messages.
  std::string_view type_name() const noexcept;
};

/// One member of a table: its key and value.
struct ConfigMember {
  std::string key;
  ConfigNode value;
};

/// Builds stages from an array of stage tables, each with `name`, an optional `when` table
/// (tables, schemas, ops) and an `actions` array of tables with `type` and the action's keys
/// (docs/transforms.md lists them). `label` is how messages name the array
/// ("[[pipeline.transforms]]"). Reads secret_env variables from the environment. Every error
/// has kind configuration and names where, the stage, the action and the key, e.g.
///   cdc.toml:14:11: [[pipeline.transforms]] "pii" action 1 (mask): rules.email: ...
/// Unknown keys are refused.
Result<std::vector<TransformStage>> parse_transform_stages(const ConfigNode& stages,
                                                           std::string_view label);

}  // namespace cppcdc
