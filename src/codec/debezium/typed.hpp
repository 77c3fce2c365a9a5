#pragma once
// Debezium's typed column encodings for the debezium_json codec: which Kafka Connect type (and
// semantic name) a column of a PostgreSQL or MySQL/MariaDB shape gets, the JSON value written
// for the database's text of it, the field schema declaring it, and the way back from such a
// value to the database's text (docs/codecs.md, "debezium_json", has the table).

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cppcdc/buffer.hpp"
#include "cppcdc/debezium.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/row_shape.hpp"

namespace cppcdc::debezium {

enum class Kind : std::uint8_t {
  kString,  // the text as it is (a semantic name may say what it holds)
  kInt16,   // integers: the text as a JSON number
  kInt32,
  kInt64,
  kFloat32,  // floating point: a JSON number; NaN and the infinities as strings
  kFloat64,
  kBoolean,          // PostgreSQL boolean ("t"/"f")
  kBit1,             // PostgreSQL bit(1) ("1"/"0") or MySQL BIT(1) ("\x01"): a boolean
  kDecimal,          // a fixed scale: by decimal_handling_mode
  kVariableDecimal,  // PostgreSQL numeric without a scale: a struct {scale, value} when precise
  kMoney,            // PostgreSQL money ("-$1,234.56"): a decimal of scale 2
  kDate,             // days since the epoch
  kTime,             // a time of day (MySQL: a signed duration), by time_precision_mode
  kTimestamp,        // a timestamp without zone, by time_precision_mode
  kZonedTimestamp,   // timestamptz / MySQL TIMESTAMP: an ISO-8601 string in UTC
  kZonedTime,        // timetz: an ISO-8601 time in UTC
  kInterval,         // PostgreSQL interval: microseconds (io.debezium.time.MicroDuration)
  kBinary,           // bytea / MySQL binary strings ("\x..."): by binary_handling_mode
  kBits,             // bit(n) / varbit ("0101") or MySQL BIT(n) ("\x..."): io.debezium.data.Bits
  kYear,             // MySQL YEAR: int32 io.debezium.time.Year
  kArray,            // a one-dimensional PostgreSQL array of `element`
};

/// How the codec writes one column; worked out once per shape.
struct ColumnType {
  Kind kind = Kind::kString;
  Kind element = Kind::kString;    ///< kArray: the elements' kind (a scalar kind)
  bool postgres = true;            ///< the text is PostgreSQL's (else MySQL's)
  const char* semantic = nullptr;  ///< kString: the schema name (io.debezium.data.Json, ...)
  int precision = -1;   ///< decimal precision; fractional digits of times (-1: the default)
  int scale = -1;       ///< decimal scale
  int length = -1;      ///< kBits: the declared number of bits
  std::string allowed;  ///< MySQL ENUM/SET: the labels, comma-separated
};

/// The options that decide encodings, parsed once.
struct TypedOptions {
  enum class Decimal { kPrecise, kDouble, kString } decimal = Decimal::kPrecise;
  enum class Time { kAdaptive, kAdaptiveTimeMicroseconds, kConnect } time = Time::kAdaptive;
  enum class Binary { kBytes, kBase64, kBase64UrlSafe, kHex } binary = Binary::kBytes;
};

/// Reads the option strings (validated by validate()); `postgres` picks the connector's
/// default time_precision_mode when it is empty (PostgreSQL adaptive, MySQL
/// adaptive_time_microseconds).
TypedOptions typed_options(const DebeziumJsonOptions& options, bool postgres);

/// The encoding of `column`; kString when its type is unknown or has no typed encoding here.
ColumnType column_type(const ColumnShape& column, bool postgres);

/// Writes the JSON value for `text` (the database's text of a non-NULL value). Error: a
/// message saying why the text is not a value of the type (the caller names the column).
Status write_value(ByteBuffer& out, const ColumnType& type, const TypedOptions& options,
                   std::string_view text);

/// Writes the Connect field schema: {"type", "optional", "name", "version", "parameters",
/// "field"} as Debezium's JsonConverter writes them.
void write_field_schema(ByteBuffer& out, const ColumnType& type, const TypedOptions& options,
                        bool optional, std::string_view field);

/// The database's text for a typed value read back under its field schema (`schema` may be
/// null: no schema, the value's own JSON decides). Sets `is_json` for io.debezium.data.Json.
/// Error: a message saying what is wrong.
Result<std::string> text_of(const boost::json::value& value, const boost::json::object* schema,
                            bool postgres, bool& is_json);

// Exposed for the tests.
std::string base64(std::string_view bytes, bool url_safe = false);
std::optional<std::string> unbase64(std::string_view text);
/// Days since 1970-01-01 of a proleptic Gregorian date (astronomical year: 1 BC is year 0).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d);

}  // namespace cppcdc::debezium
