// The CloudEvents codec (include/cppcdc/cloudevents.hpp): the envelope as the data of a
// structured-mode CloudEvents 1.0 JSON event.

#include <boost/json.hpp>
#include <ctime>

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

class CloudEventsEncoder final : public Encoder {
 public:
  explicit CloudEventsEncoder(CloudEventsOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "cloudevents"; }
  std::string_view content_type() const override { return "application/cloudevents+json"; }

  Status encode(const Event& event, ByteBuffer& out) override {
    auto id = fingerprint_event_stable(event);
    if (!id) {
      return fail(id.error().context("computing the CloudEvents id of the " +
                                     std::string(to_string(event.op)) + " of " +
                                     subject_of(event)));
    }
    head_.clear();
    head_ += "{\"specversion\":\"1.0\",\"id\":";
    detail::append_json_string(head_, *id);
    head_ += ",\"source\":";
    detail::append_json_string(head_, options_.source.empty()
                                          ? std::string(kSourcePrefix) + event.source.source_name
                                          : options_.source);
    head_ += ",\"type\":";
    detail::append_json_string(head_,
                               options_.type_prefix + "." + std::string(to_string(event.op)));
    head_ += ",\"subject\":";
    detail::append_json_string(head_, subject_of(event));
    // time is optional: left out when the clock value is no year RFC 3339 can write.
    const std::int64_t at = event.source.timestamp != 0 ? event.source.timestamp : event.ts;
    if (at >= kFirstWritableMs && at <= kLastWritableMs) {
      head_ += ",\"time\":\"";
      head_ += rfc3339(at);
      head_ += '"';
    }
    head_ += ",\"datacontenttype\":\"application/json\",\"data\":";
    out.raw(head_);
    detail::write_event_json(out, event);
    out.ch('}');
    return ok();
  }

 private:
  CloudEventsOptions options_;
  std::string head_;  // reused between events
};

Error refused(const std::string& what) {
  return Error::invalid_data("not a cppcdc CloudEvents record: " + what);
}

class CloudEventsDecoder final : public Decoder {
 public:
  explicit CloudEventsDecoder(CloudEventsOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "cloudevents"; }

  Result<Event> decode(std::string_view record) override {
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
    const std::string expected_type =
        options_.type_prefix + "." + std::string(to_string(event->op));
    if (*text("type") != expected_type) {
      return fail(refused("type \"" + std::string(*text("type")) +
                          "\" does not match the envelope's op (expected \"" + expected_type +
                          "\")"));
    }
    if (const json::string* subject = text("subject");
        subject != nullptr && *subject != subject_of(*event)) {
      return fail(refused("subject \"" + std::string(*subject) +
                          "\" does not match the envelope's table \"" + subject_of(*event) + "\""));
    }
    return event;
  }

 private:
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
