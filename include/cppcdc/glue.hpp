#pragma once
// AWS Glue Schema Registry framing for the Avro codec (target cppcdc_codec_glue).
//
// Glue names a schema by a schema name inside a registry (no topic/subject pair, so no subject
// naming strategy here) and each version of it by a UUID. A record in Glue's framing is
//
//   byte 0       header version, always 0x03
//   byte 1       compression: 0x00 none, 0x05 zlib (the values AWS's own serde writes)
//   bytes 2-17   the schema version UUID, its 16 bytes in the usual order (as written in text)
//   bytes 18-    the payload: one Avro datum of the avro codec's envelope (or key) schema,
//                exactly the bytes `codec = "avro"` writes bare; zlib-compressed (RFC 1950,
//                header and Adler-32 included) when byte 1 says so
//
// The payload is the avro codec's own writer's output (make_avro_encoder, cppcdc/avro.hpp); a
// consumer that reads cppcdc's Avro events needs only the framing changed.
//
// Schemas are registered, never only looked up: Glue's register call is idempotent for
// identical content (it returns the existing version's UUID), and there is no lookup-only mode
// (auto_register = false is refused with Glue rather than accepted and ignored).
//
// Errors: a record that is not Glue-framed (too short, another header version, an unknown
// compression byte, zlib data that does not inflate) is invalid_data, which is never retried:
// the same bytes will not decode later. A schema version the registry does not know is
// terminal; a UUID whose schema is not the one this build writes is terminal too (the bytes
// would be misread positionally otherwise). Transport failures of a real registry are
// transient.
//
// Threading: encoders and decoders are used by one thread at a time; a GlueSchemaRegistry may
// be shared (the implementations here serialize their own calls).

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cppcdc/codec.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

// ---- the wire format ---------------------------------------------------------------------

inline constexpr std::size_t kGlueHeaderSize = 18;
inline constexpr unsigned char kGlueHeaderVersion = 0x03;
inline constexpr unsigned char kGlueCompressionNoneByte = 0x00;
inline constexpr unsigned char kGlueCompressionZlibByte = 0x05;

/// How the payload after the header is stored.
enum class GlueCompression { kNone, kZlib };
/// "none" or "zlib".
std::string_view to_string(GlueCompression compression) noexcept;
/// "none" or "zlib"; error kind configuration listing both otherwise.
Result<GlueCompression> parse_glue_compression(std::string_view text);

/// A schema version's UUID as its 16 bytes.
struct GlueSchemaVersionId {
  std::array<unsigned char, 16> bytes{};
  bool operator==(const GlueSchemaVersionId&) const = default;
  auto operator<=>(const GlueSchemaVersionId&) const = default;
  /// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case (what Glue's API returns).
  std::string to_string() const;
  /// The text form, either case; error kind invalid_data naming the text otherwise.
  static Result<GlueSchemaVersionId> parse(std::string_view text);
};

/// A Glue-framed record taken apart.
struct GlueFrame {
  GlueCompression compression = GlueCompression::kNone;
  GlueSchemaVersionId schema_version_id;
  std::string_view payload;  ///< still compressed when `compression` is kZlib
};

/// The 18 header bytes.
std::array<char, kGlueHeaderSize> glue_header(GlueCompression compression,
                                              const GlueSchemaVersionId& id) noexcept;
/// Appends the header, then `payload` (compressed at zlib's default level when asked).
void append_glue_frame(GlueCompression compression, const GlueSchemaVersionId& id,
                       std::string_view payload, ByteBuffer& out);
/// Splits a record into header fields and payload. Error kind invalid_data for fewer than 18
/// bytes, a header version other than 3 or a compression byte other than 0 and 5.
Result<GlueFrame> split_glue_frame(std::string_view record);
/// The payload of `frame` as the datum it holds: itself, or inflated (zlib). Error kind
/// invalid_data for data that does not inflate completely, bytes after the zlib stream, or an
/// inflated size above `max_size`.
Result<std::string> glue_payload(const GlueFrame& frame, std::size_t max_size = 64u << 20);

/// Which framing a record appears to use, judged by its first bytes.
enum class WireFormat {
  kConfluent,  ///< byte 0 is 0x00 and at least 5 bytes: magic byte, 4-byte schema id
  kGlue,       ///< byte 0 is 0x03, byte 1 is 0x00 or 0x05, and at least 18 bytes
  kBare,       ///< neither
};
std::string_view to_string(WireFormat format) noexcept;
/// The framing `record` appears to use. A guess from two bytes, not a check: a bare Avro
/// datum can begin with 0x00 (cppcdc's envelope does when it has no before-image), so use it
/// only on records known to be framed by one registry or the other.
WireFormat detect_wire_format(std::string_view record) noexcept;

// ---- the registry ------------------------------------------------------------------------

/// What the Glue encoders and decoders need from a Glue schema registry.
class GlueSchemaRegistry {
 public:
  virtual ~GlueSchemaRegistry() = default;
  /// Registers `definition` (Avro schema text) as a version of `schema_name`, creating the
  /// schema when it does not exist, and returns the version's UUID. Idempotent: a definition
  /// already registered under the name returns the UUID it has. Errors: transient (transport,
  /// throttling, 5xx), terminal (refused: access, an incompatible or invalid definition).
  virtual Result<GlueSchemaVersionId> register_schema_version(const std::string& schema_name,
                                                              const std::string& definition) = 0;
  /// The definition of a schema version. A version the registry does not hold is terminal.
  virtual Result<std::string> schema_definition(const GlueSchemaVersionId& id) = 0;
  /// "AWS Glue registry cdc (eu-west-1)", for messages; never credentials.
  virtual std::string describe() const = 0;
};

/// Caches another registry's answers for the life of the process: a (name, definition) pair
/// registered once maps to its UUID, and a UUID's definition never changes (a version is
/// immutable), so neither entry goes stale. Errors are not cached.
class CachedGlueSchemaRegistry final : public GlueSchemaRegistry {
 public:
  explicit CachedGlueSchemaRegistry(std::shared_ptr<GlueSchemaRegistry> inner);
  Result<GlueSchemaVersionId> register_schema_version(const std::string& schema_name,
                                                      const std::string& definition) override;
  Result<std::string> schema_definition(const GlueSchemaVersionId& id) override;
  std::string describe() const override;

 private:
  std::shared_ptr<GlueSchemaRegistry> inner_;
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, GlueSchemaVersionId> ids_;
  std::map<GlueSchemaVersionId, std::string> definitions_;
};

/// An in-memory Glue registry, for tests and for trying the framing without AWS. Version UUIDs
/// are derived from the schema name and the definition (SHA-256, marked as an RFC 9562
/// version 8 UUID), so the same schema gets the same UUID in every process. Counts its calls.
class InMemoryGlueSchemaRegistry final : public GlueSchemaRegistry {
 public:
  Result<GlueSchemaVersionId> register_schema_version(const std::string& schema_name,
                                                      const std::string& definition) override;
  Result<std::string> schema_definition(const GlueSchemaVersionId& id) override;
  std::string describe() const override { return "in-memory Glue schema registry"; }

  /// Puts a version under an explicit UUID (a schema another writer registered).
  void put(const std::string& schema_name, const GlueSchemaVersionId& id, std::string definition);
  /// The next `count` calls fail with `error` (a registry outage, say).
  void fail_next(std::size_t count, Error error);

  std::size_t registrations() const;  ///< register_schema_version calls that reached it
  std::size_t fetches() const;        ///< schema_definition calls that reached it
  /// The schema names and how many versions each holds.
  std::map<std::string, std::size_t> schemas() const;

 private:
  std::optional<Error> take_failure();

  mutable std::mutex mutex_;
  std::map<GlueSchemaVersionId, std::pair<std::string, std::string>> versions_;
  std::size_t registrations_ = 0;
  std::size_t fetches_ = 0;
  std::size_t failures_left_ = 0;
  std::optional<Error> failure_;
};

/// The AWS Glue service itself: its JSON API over HTTPS (POST to the endpoint with
/// X-Amz-Target AWSGlue.<operation>), signed with AWS Signature Version 4.
struct AwsGlueRegistryConfig {
  /// The Glue registry holding the schemas. Required.
  std::string registry_name;
  /// The AWS region ("eu-west-1"). Required: it is part of the signature.
  std::string region;
  /// Where requests go; empty: https://glue.<region>.amazonaws.com/. A scheme, a host and an
  /// optional port (a VPC endpoint, or a test double on loopback); no path.
  std::string endpoint;
  /// Credentials; empty: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (the
  /// last optional) from the environment when the client is made. Never logged.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string ca_file;  ///< TLS: CA bundle (empty: the system's)
  bool verify_tls = true;
  std::uint32_t connect_timeout_ms = 5000;
  std::uint32_t request_timeout_ms = 10000;  ///< one attempt, connect included
  std::uint32_t max_retries = 5;             ///< after the first attempt; transient errors only
  std::uint32_t base_backoff_ms = 100;
  std::uint32_t max_backoff_ms = 5000;
  /// How long a new version may stay PENDING before registration gives up (transient).
  std::uint32_t pending_timeout_ms = 30000;
};

/// Checks names, region and endpoint (error kind configuration naming the field).
Status validate(const AwsGlueRegistryConfig& config);

/// A client of the Glue service for `config`, with credentials taken as described there
/// (missing credentials are a configuration error naming the variables). Registering a version
/// reads first (GetSchemaByDefinition: read permission suffices for a schema already there),
/// then registers (RegisterSchemaVersion, creating the schema with CreateSchema, DataFormat
/// AVRO, compatibility BACKWARD, when it does not exist) and waits while the new version is
/// PENDING (GetSchemaVersion). Errors: transport failures, HTTP 5xx and 429, Throttling-
/// and ConcurrentModificationException are transient and retried with jittered back-off;
/// everything else Glue refuses (access, invalid input, EntityNotFoundException for a version)
/// is terminal and carries Glue's error type and message. Connects lazily.
Result<std::shared_ptr<GlueSchemaRegistry>> make_aws_glue_schema_registry(
    const AwsGlueRegistryConfig& config);

// ---- the codec ---------------------------------------------------------------------------

/// What a Glue Avro encoder registers and how it frames.
struct GlueAvroConfig {
  GlueAvroConfig() = default;
  explicit GlueAvroConfig(std::string schema_name_) : schema_name(std::move(schema_name_)) {}
  GlueAvroConfig with_compression(GlueCompression c) const {
    GlueAvroConfig copy = *this;
    copy.compression = c;
    return copy;
  }
  GlueAvroConfig with_key_schema_name(std::string name) const {
    GlueAvroConfig copy = *this;
    copy.key_schema_name = std::move(name);
    return copy;
  }

  /// The Glue schema the envelope (value) schema is registered under. Required.
  std::string schema_name;
  /// The schema of keys; nullopt: "{schema_name}-key".
  std::optional<std::string> key_schema_name;
  GlueCompression compression = GlueCompression::kNone;

  /// key_schema_name or its default.
  std::string effective_key_schema_name() const;
};

/// Checks a config: a schema name (and key schema name) of 1 to 255 characters from Glue's
/// alphabet (letters, digits, '-', '_', '$', '#', '.'), distinct from each other. Error kind
/// configuration naming the field.
Status validate(const GlueAvroConfig& config);

/// Writes events and keys in Glue's framing around the avro codec's datums. Schema versions
/// are registered on first use (value on the first event, key on the first keyed event) and
/// kept; a failed registration fails that record and is tried again on the next.
class GlueAvroEncoder final : public Encoder {
 public:
  /// An encoder that registers lazily; `config` must validate (error kind configuration).
  static Result<std::unique_ptr<GlueAvroEncoder>> create(
      std::shared_ptr<GlueSchemaRegistry> registry, GlueAvroConfig config);
  ~GlueAvroEncoder() override;

  /// Registers both schemas now (what create() leaves to the first records): a start-up check.
  Status resolve();
  std::optional<GlueSchemaVersionId> value_schema_version() const { return value_id_; }
  std::optional<GlueSchemaVersionId> key_schema_version() const { return key_id_; }

  std::string name() const override { return "avro"; }
  std::string_view content_type() const override { return "application/avro"; }
  bool json_text() const override { return false; }
  Status encode(const Event& event, ByteBuffer& out) override;
  Status encode_to(std::string_view destination, const Event& event, ByteBuffer& out) override;
  /// False (nothing appended) for a keyless event; the key datum in Glue's framing otherwise.
  Result<bool> encode_key_to(std::string_view destination, const Event& event,
                             ByteBuffer& out) override;

 private:
  GlueAvroEncoder(std::shared_ptr<GlueSchemaRegistry> registry, GlueAvroConfig config);
  Result<GlueSchemaVersionId> id_for(bool is_key);

  std::shared_ptr<GlueSchemaRegistry> registry_;
  GlueAvroConfig config_;
  std::unique_ptr<Encoder> avro_;  // the avro codec's bare writer
  std::optional<GlueSchemaVersionId> value_id_;
  std::optional<GlueSchemaVersionId> key_id_;
  ByteBuffer datum_;
};

/// Reads what GlueAvroEncoder writes. The writer schema is resolved by the header's UUID
/// (cached per UUID); a UUID whose definition is not the envelope schema this build writes is
/// a terminal error naming the UUID, since the avro reader reads positionally.
class GlueAvroDecoder final : public Decoder {
 public:
  explicit GlueAvroDecoder(std::shared_ptr<GlueSchemaRegistry> registry,
                           std::size_t max_payload = 64u << 20);
  ~GlueAvroDecoder() override;
  std::string name() const override { return "avro"; }
  Result<Event> decode(std::string_view record) override;
  /// A key record back into the key's JSON object text ({"id":"42"}).
  Result<std::string> decode_key(std::string_view record);

 private:
  Result<std::string> datum_of(std::string_view record, bool is_key);

  std::shared_ptr<GlueSchemaRegistry> registry_;
  std::size_t max_payload_;
  std::unique_ptr<Decoder> avro_;
  std::map<GlueSchemaVersionId, bool> verified_;  // UUID -> is the key schema
};

/// Registers the Glue framing with the avro codec: `codec = "avro"` with
/// `[sink.codec_options.schema_registry] type = "glue"` (docs/schema-registry.md). Idempotent.
void register_glue_avro_codec_plugin();

}  // namespace cppcdc
