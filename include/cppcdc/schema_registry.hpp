#pragma once
// Schema registries: where a codec that frames its records with a schema id (Avro, JSON
// Schema, Protobuf in the Confluent wire format) gets that id, and where a consumer finds the
// schema an id stands for.
//
// Two clients behind one interface (SchemaRegistryConfig::type):
// - "confluent": the Confluent Schema Registry REST API, served by Confluent's registry, by
//   Apicurio Registry 3 under /apis/ccompat/v7, by Karapace and by Redpanda. `url` is the API
//   root that serves /subjects, used as given (nothing is appended).
// - "apicurio": Apicurio Registry 3's native API. `url` is the server root; the client
//   appends /apis/registry/v3. A subject is an artifact id in `group`; the id on the wire is
//   the version's global id, in the same 5-byte framing.
//
// Errors keep their retryability: a transport failure, HTTP 429 and 5xx are transient and are
// retried inside each call with jittered exponential back-off that honours Retry-After; when
// the attempts run out the error is kind transient (the pipeline's breaker takes over). Not
// found, an authentication failure, an incompatible or invalid schema are terminal at once:
// no later attempt can succeed without someone changing the registry or the configuration.
// A malformed frame is invalid_data.
//
// Threading: a client may be shared between threads; its calls are serialized on an internal
// mutex (each call blocks for at most the attempts' timeouts and back-off waits).
// Ownership: the factory returns the client; it keeps its own caches.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cppcdc/buffer.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

class Settings;  // cppcdc/plugin.hpp

/// What a registered schema is written in ("AVRO", "JSON", "PROTOBUF" on the wire).
enum class SchemaType { kAvro, kJson, kProtobuf };
std::string_view to_string(SchemaType type) noexcept;

/// How a subject is named (Confluent's three strategies).
enum class SubjectNameStrategy {
  kTopicName,        ///< "<topic>-value" and "<topic>-key" (the default; Debezium's too)
  kRecordName,       ///< "<record name>": one subject per record type, across topics
  kTopicRecordName,  ///< "<topic>-<record name>"
};
std::string_view to_string(SubjectNameStrategy strategy) noexcept;
/// "topic_name", "record_name" or "topic_record_name"; error kind configuration naming the
/// three otherwise.
Result<SubjectNameStrategy> parse_subject_name_strategy(std::string_view text);

/// The subject of a value schema (`is_key` false) or a key schema (true). `record_name` is
/// the schema's fully qualified record name (for Avro, namespace.name).
std::string subject_name(SubjectNameStrategy strategy, std::string_view topic,
                         std::string_view record_name, bool is_key);

/// Retries of one registry call (transport failures, 429, 5xx only).
struct RegistryRetryPolicy {
  std::uint32_t max_retries = 5;        ///< attempts after the first; 0: none
  std::uint32_t base_backoff_ms = 100;  ///< first wait; doubles per retry
  std::uint32_t max_backoff_ms = 5000;  ///< cap of a wait (also of a Retry-After honoured)
  static RegistryRetryPolicy none() { return {0, 0, 0}; }
};

/// Which API a registry client speaks.
enum class SchemaRegistryType {
  kConfluent,  ///< "confluent": the Confluent REST API (also Apicurio's /apis/ccompat/v7)
  kApicurio,   ///< "apicurio": Apicurio Registry 3's native API (/apis/registry/v3)
};
std::string_view to_string(SchemaRegistryType type) noexcept;
/// "confluent" or "apicurio"; error kind configuration naming both otherwise.
Result<SchemaRegistryType> parse_schema_registry_type(std::string_view text);

struct SchemaRegistryConfig {
  SchemaRegistryType type = SchemaRegistryType::kConfluent;
  /// kConfluent: the API root that serves /subjects: http://registry:8081 for Confluent,
  /// http://apicurio:8080/apis/ccompat/v7 for Apicurio's Confluent-compatible API.
  /// kApicurio: the Apicurio server's root such as http://apicurio:8080, to which the client
  /// adds /apis/registry/v3 (validate() refuses a url that already holds an /apis/... path).
  std::string url;
  /// kApicurio: the artifact group the subjects (artifact ids) live in.
  std::string group = "default";
  /// HTTP basic authentication (both or neither), or a bearer token; never logged.
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::optional<std::string> bearer_token;
  /// The environment variables password and bearer_token were read from (the TOML keys
  /// password_env and bearer_token_env); empty: given directly. Only for check-config, which
  /// names the variable instead of the secret.
  std::string password_env;
  std::string bearer_token_env;
  /// TLS: CA bundle (empty: the system's), client certificate and key (PEM files). Peer and
  /// host verification are on unless `verify_tls` is false.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool verify_tls = true;
  std::uint32_t connect_timeout_ms = 5000;
  std::uint32_t request_timeout_ms = 10000;  ///< one attempt, connect included
  RegistryRetryPolicy retry;
  /// true: a schema missing from its subject is registered. false: never write to the
  /// registry; a schema that is not registered is a terminal error naming the subject.
  bool auto_register = true;
  /// Ask the registry to normalize schemas on register and lookup (Confluent's normalize
  /// query parameter; registries without it ignore it). kConfluent only: Apicurio's native
  /// API has no such parameter (its client always compares canonical content).
  bool normalize_schemas = false;
  SubjectNameStrategy subject_name_strategy = SubjectNameStrategy::kTopicName;
  /// Schemas kept by id (ids never change meaning, so entries never go stale); the oldest
  /// entry leaves when full. At least 1.
  std::size_t max_cache_entries = 1000;
  /// Optional, not owned, must outlive the client: when it becomes true, a request in flight
  /// ends within about a second and no retry wait starts, so that the call fails (transient,
  /// "stopping") instead of holding up a stop for up to (max_retries + 1) x request_timeout_ms.
  /// The cppcdc server points it at its SIGINT/SIGTERM flag.
  const std::atomic<bool>* stop = nullptr;
};

/// Checks a configuration (url scheme and, per type, its path; auth pairs, cache size,
/// timeouts; group and normalize_schemas by type). Error kind configuration naming the
/// setting.
Status validate(const SchemaRegistryConfig& config);

/// A schema as the registry holds it.
struct RegisteredSchema {
  std::int32_t id = 0;
  SchemaType type = SchemaType::kAvro;
  std::string schema;                   ///< the schema text as the registry returns it
  std::string subject;                  ///< empty when read by id
  std::optional<std::int32_t> version;  ///< the subject's version, when read by subject
};

class SchemaRegistryClient {
 public:
  virtual ~SchemaRegistryClient() = default;
  /// Registers `schema` under `subject` (an identical schema already there keeps its id) and
  /// returns its id. Terminal errors: 409 (incompatible with the subject's compatibility
  /// rule), 422 (not a valid schema), 401/403.
  virtual Result<std::int32_t> register_schema(const std::string& subject, SchemaType type,
                                               const std::string& schema) = 0;
  /// The id of `schema` under `subject`, without writing. A subject or schema the registry
  /// does not have is a terminal error that names the subject.
  virtual Result<std::int32_t> lookup_schema(const std::string& subject, SchemaType type,
                                             const std::string& schema) = 0;
  /// The schema with `id` (cached for the process's lifetime, up to max_cache_entries).
  virtual Result<RegisteredSchema> schema_by_id(std::int32_t id) = 0;
  /// The subjects the registry holds (also the cheapest check that it answers).
  virtual Result<std::vector<std::string>> subjects() = 0;
  /// The subject's newest version (never cached: it can change at any time).
  virtual Result<RegisteredSchema> latest_schema(const std::string& subject) = 0;
  /// Whether `schema` may be registered under `subject` by its compatibility rule; true for a
  /// subject that does not exist yet; nullopt when the registry does not offer the check.
  virtual Result<std::optional<bool>> is_compatible(const std::string& subject, SchemaType type,
                                                    const std::string& schema) = 0;
  /// "schema registry http://host:8081" (no credentials), for messages.
  virtual std::string describe() const = 0;
};

/// A client of the API `config.type` names, for `config` (validated). Connects lazily:
/// nothing is sent before the first call.
Result<std::unique_ptr<SchemaRegistryClient>> make_schema_registry_client(
    const SchemaRegistryConfig& config);

/// The id a writer stamps on its records: registered when `config.auto_register`, looked up
/// (never written) otherwise.
Result<std::int32_t> resolve_schema_id(SchemaRegistryClient& client,
                                       const SchemaRegistryConfig& config,
                                       const std::string& subject, SchemaType type,
                                       const std::string& schema);

/// One subject a writer will use and the schema it will write there.
struct SubjectSchema {
  std::string subject;
  SchemaType type = SchemaType::kAvro;
  std::string schema;
};

/// The start-up check of a writer: the registry answers at url; with auto_register, each schema is
/// compatible with its subject (a registry without the check passes); without it, each
/// schema is registered under its subject. Writes nothing. Errors name the subject and the
/// remedy (register the schema, set auto_register, fix the credentials, ...).
Status preflight_schema_registry(SchemaRegistryClient& client, const SchemaRegistryConfig& config,
                                 std::span<const SubjectSchema> subjects);

/// Reads the schemas of `ids` into the client's cache, so the first record of each does not
/// wait for the registry. Stops at the first error.
Status warm_schema_cache(SchemaRegistryClient& client, std::span<const std::int32_t> ids);

/// Reads the `schema_registry` table of a codec's codec_options (the fields of
/// SchemaRegistryConfig under the same names, subject_name_strategy as text, the retry policy
/// left at its default; `stop` set to the process-wide stop request that the cppcdc server's
/// signal handler sets); nullopt when the table is absent. Errors are configuration errors
/// naming the key (url missing, a bad strategy, what validate() refuses).
Result<std::optional<SchemaRegistryConfig>> read_schema_registry_settings(
    const Settings& codec_options);
/// check-config lines of a codec that uses `config`: the registry's url (without credentials)
/// and how subjects are named and resolved.
std::vector<std::pair<std::string, std::string>> describe_schema_registry(
    const SchemaRegistryConfig& config);

/// The Confluent wire format: magic byte 0, the schema id as 4 bytes big-endian, then the
/// payload.
inline constexpr std::size_t kConfluentHeaderSize = 5;
/// The five header bytes for `schema_id`; the append_ functions below write exactly these.
std::array<char, kConfluentHeaderSize> confluent_header(std::int32_t schema_id) noexcept;
void append_confluent_header(std::int32_t schema_id, std::string& out);
void append_confluent_header(std::int32_t schema_id, ByteBuffer& out);
/// Splits a framed record into its schema id and payload. Error kind invalid_data for fewer
/// than 5 bytes or a magic byte other than 0 (such bytes never decode, so never retry them).
Result<std::pair<std::int32_t, std::string_view>> split_confluent_frame(std::string_view record);

}  // namespace cppcdc
