// The CloudEvents codec (include/cppcdc/cloudevents.hpp): the envelope as the data of a
// structured-mode CloudEvents 1.0 JSON event.

#include <boost/json.hpp>
#include <cctype>
#include <ctime>
#include <optional>

#include "core/event_json.hpp"
#include "core/json_write.hpp"
#include "cppcdc/cloudevents.hpp"
#include "cppcdc/idempotency.hpp"

namespace cppcdc {
namespace {

namespace json = boost::json;

constexpr std::string_view kSpecVersion = "1.0";
constexpr std::string_view kSourcePrefix = "/cppcdc/";
/// 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z in ms since the epoch.
constexpr std::int64_t kFirstWritableMs = -62'135'596'800'000;
constexpr std::int64_t kLastWritableMs = 253'402'300'799'999;

std::string subject_of(const Event& e) { return e.schema ? *e.schema + "." + e.table : e.table; }

/// RFC 3339 in UTC with milliseconds, "2026-12-03T08:33:56.123Z".
std::string rfc3339(std::int64_t ms) {
  std::int64_t seconds = ms / 1000;
  std::int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    seconds -= 1;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, static_cast<int>(millis));
  return std::string(buf, static_cast<std::size_t>(n));
}

/// The attributes of the CloudEvent of `event` other than specversion and datacontenttype.
struct Attributes {
  std::string id;
  std::string source;
  std::string type;
  std::string subject;
  std::optional<std::string> time;  // left out when the clock value is no year RFC 3339 has
};

Result<Attributes> attributes_of(const Event& event, const CloudEventsOptions& options) {
  auto id = fingerprint_event_stable(event);
  if (!id) {
    return fail(id.error().context("computing the CloudEvents id of the " +
                                   std::string(to_string(event.op)) + " of " + subject_of(event)));
  }
  Attributes a;
  a.id = std::move(*id);
  a.source = options.source.empty() ? std::string(kSourcePrefix) + event.source.source_name
                                    : options.source;
  a.type = options.type_prefix + "." + std::string(to_string(event.op));
  a.subject = subject_of(event);
  const std::int64_t at = event.source.timestamp != 0 ? event.source.timestamp : event.ts;
  if (at >= kFirstWritableMs && at <= kLastWritableMs) a.time = rfc3339(at);
  return a;
}

/// An HTTP header value as the CloudEvents HTTP binding wants it: space, '"', '%' and every
/// byte outside printable ASCII as %XX (UTF-8 bytes, upper-case hex).
std::string percent_encoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x21 || b > 0x7E || b == '"' || b == '%') {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0x0F];
    } else {
      out += c;
    }
  }
  return out;
}

class CloudEventsEncoder final : public Encoder {
 public:
  explicit CloudEventsEncoder(CloudEventsOptions options)
      : options_(std::move(options)), binary_(options_.mode == CloudEventsMode::kBinary) {}
  std::string name() const override { return "cloudevents"; }
  std::string_view content_type() const override {
    return binary_ ? "application/json" : "application/cloudevents+json";
  }
  std::string_view array_content_type() const override {
    // An array of structured events is CloudEvents' JSON batch format.
    return binary_ ? "application/json" : "application/cloudevents-batch+json";
  }
  bool record_headers() const override { return binary_; }

  Status encode(const Event& event, ByteBuffer& out) override {
    if (binary_) {
      // The record is the data alone; the attributes go into headers (append_headers).
      detail::write_event_json(out, event);
      return ok();
    }
    auto attributes = attributes_of(event, options_);
    if (!attributes) return fail(attributes.error());
    head_.clear();
    head_ += "{\"specversion\":\"1.0\",\"id\":";
    detail::append_json_string(head_, attributes->id);
    head_ += ",\"source\":";
    detail::append_json_string(head_, attributes->source);
    head_ += ",\"type\":";
    detail::append_json_string(head_, attributes->type);
    head_ += ",\"subject\":";
    detail::append_json_string(head_, attributes->subject);
    if (attributes->time) {
      head_ += ",\"time\":\"";
      head_ += *attributes->time;
      head_ += '"';
    }
    head_ += ",\"datacontenttype\":\"application/json\",\"data\":";
    out.raw(head_);
    detail::write_event_json(out, event);
    out.ch('}');
    return ok();
  }

  Status append_headers(HeaderBinding binding, const Event& event,
                        std::vector<RecordHeader>& out) override {
    if (!binary_) return ok();
    auto attributes = attributes_of(event, options_);
    if (!attributes) return fail(attributes.error());
    const bool http = binding == HeaderBinding::kHttp;
    const char* prefix = http ? "ce-" : "ce_";
    const auto add = [&](std::string_view name, const std::string& value) {
      out.push_back({prefix + std::string(name), http ? percent_encoded(value) : value});
    };
    add("specversion", std::string(kSpecVersion));
    add("id", attributes->id);
    add("source", attributes->source);
    add("type", attributes->type);
    add("subject", attributes->subject);
    if (attributes->time) add("time", *attributes->time);
    // Over HTTP the request's Content-Type says it (the sink sets it from content_type()).
    if (!http) out.push_back({"content-type", "application/json"});
    return ok();
  }

 private:
  CloudEventsOptions options_;
  bool binary_;
  std::string head_;  // reused between events
};

Error refused(const std::string& what) {
  return Error::invalid_data("not a cppcdc CloudEvents record: " + what);
}

/// %XX sequences back to bytes (a malformed one is kept as it is).
std::string percent_decoded(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

class CloudEventsDecoder final : public Decoder {
 public:
  explicit CloudEventsDecoder(CloudEventsOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "cloudevents"; }

  Result<Event> decode(std::string_view record) override {
    if (options_.mode == CloudEventsMode::kBinary) {
      // The record is the data; without its headers only the envelope can be checked.
      auto event = Event::from_json(record);
      if (!event) return fail(event.error().context("reading a binary-mode CloudEvents record"));
      return event;
    }
    return decode_structured(record);
  }

  Result<Event> decode_with_headers(std::string_view record, HeaderBinding binding,
                                    std::span<const RecordHeader> headers) override {
    if (options_.mode != CloudEventsMode::kBinary) return decode_structured(record);
    const bool http = binding == HeaderBinding::kHttp;
    const auto header = [&](std::string_view attribute) -> std::optional<std::string> {
      const std::string wanted = (http ? "ce-" : "ce_") + std::string(attribute);
      for (const auto& h : headers) {
        if (http ? same_name(h.name, wanted) : h.name == wanted) {
          return http ? percent_decoded(h.value) : h.value;
        }
      }
      return std::nullopt;
    };
    const auto version = header("specversion");
    if (!version || *version != kSpecVersion) {
      return fail(refused("the header " + std::string(http ? "ce-" : "ce_") +
                          "specversion is missing or not \"1.0\""));
    }
    for (const char* required : {"id", "source", "type"}) {
      const auto value = header(required);
      if (!value || value->empty()) {
        return fail(refused(std::string("the header ") + (http ? "ce-" : "ce_") + required +
                            " is missing or empty"));
      }
    }
    if (!http) {
      for (const auto& h : headers) {
        if (h.name == "content-type" && h.value != "application/json" &&
            !h.value.ends_with("+json")) {
          return fail(refused("the header content-type is not JSON"));
        }
      }
    }
    auto event = Event::from_json(record);
    if (!event) return fail(event.error().context("reading a binary-mode CloudEvents record"));
    CPPCDC_TRY(check_against(*event, *header("type"), header("subject")));
    return event;
  }

 private:
  /// The type and subject attributes must agree with the envelope.
  Status check_against(const Event& event, std::string_view type,
                       const std::optional<std::string>& subject) const {
    const std::string expected_type = options_.type_prefix + "." + std::string(to_string(event.op));
    if (type != expected_type) {
      return fail(refused("type \"" + std::string(type) +
                          "\" does not match the envelope's op (expected \"" + expected_type +
                          "\")"));
    }
    if (subject && *subject != subject_of(event)) {
      return fail(refused("subject \"" + *subject + "\" does not match the envelope's table \"" +
                          subject_of(event) + "\""));
    }
    return ok();
  }

  Result<Event> decode_structured(std::string_view record) {
    boost::system::error_code ec;
    json::value v = json::parse(record, ec);
    if (ec) return fail(refused("the record is not JSON (" + ec.message() + ")"));
    auto* obj = v.if_object();
    if (obj == nullptr) return fail(refused("the record is not a JSON object"));
    const auto text = [&](std::string_view name) -> const json::string* {
      const json::value* field = obj->if_contains(name);
      return field != nullptr ? field->if_string() : nullptr;
    };
    const json::string* version = text("specversion");
    if (version == nullptr || *version != kSpecVersion) {
      return fail(refused("specversion is missing or not \"1.0\""));
    }
    for (const char* required : {"id", "source", "type"}) {
      const json::string* s = text(required);
      if (s == nullptr || s->empty()) {
        return fail(refused(std::string("the attribute ") + required +
                            " is missing or not a non-empty string"));
      }
    }
    if (const json::value* type = obj->if_contains("datacontenttype"); type != nullptr) {
      const json::string* s = type->if_string();
      if (s == nullptr || (*s != "application/json" && !s->ends_with("+json"))) {
        return fail(refused("datacontenttype is not JSON"));
      }
    }
    const json::value* data = obj->if_contains("data");
    if (data == nullptr || !data->is_object()) {
      return fail(refused("data is missing or not an object (data_base64 is not read)"));
    }
    // The data's own text: a DOM would round long numbers (json column values) to doubles.
    const auto raw = detail::raw_json_member(record, "data");
    auto event = Event::from_json(raw ? *raw : std::string_view(json::serialize(*data)));
    if (!event) return fail(event.error().context("reading the data of a CloudEvents record"));
    std::optional<std::string> subject;
    if (const json::string* s = text("subject"); s != nullptr) subject = std::string(*s);
    CPPCDC_TRY(check_against(*event, std::string_view(*text("type")), subject));
    return event;
  }

  CloudEventsOptions options_;
};

}  // namespace

Status validate(const CloudEventsOptions& options) {
  if (options.type_prefix.empty() ||
      options.type_prefix.find_first_of(" \t\r\n") != std::string::npos) {
    return fail(Error::configuration("type_prefix must be a non-empty name without spaces, "
                                     "e.g. \"com.example.cdc\"")
                    .for_setting(SettingOwner::kSink, "codec_options.type_prefix"));
  }
  if (options.source.find_first_of(" \t\r\n") != std::string::npos) {
    return fail(Error::configuration("source must be a URI reference without spaces, e.g. "
                                     "\"//db.example.com/app\"")
                    .for_setting(SettingOwner::kSink, "codec_options.source"));
  }
  return ok();
}

std::unique_ptr<Encoder> make_cloudevents_encoder(CloudEventsOptions options) {
  return std::make_unique<CloudEventsEncoder>(std::move(options));
}

std::unique_ptr<Decoder> make_cloudevents_decoder(CloudEventsOptions options) {
  return std::make_unique<CloudEventsDecoder>(std::move(options));
}

}  // namespace cppcdc
