// The HTTP sink as a plugin: `type = "http"`. Keys (docs/http-sink.md):
//   url, content_type, compression, headers, signing_secret, signing_secret_env,
//   connect_timeout_ms, request_timeout_ms, batch_max_events, batch_max_bytes,
//   [auth] type, token, token_env, username, password, password_env,
//   [tls] verify, ca_file, client_cert, client_key,
//   [retry] max_retries, initial_backoff_ms, max_backoff_ms, max_elapsed_ms.
// Secrets are read here (from the file or the environment) and never described.

#include "cppcdc/plugin.hpp"

#include <cstdlib>
#include <limits>
#include <mutex>

#include "cppcdc/http_client.hpp"
#include "core/settings_read.hpp"
#include "core/stop_request.hpp"
#include "cppcdc/http_sink.hpp"

namespace cppcdc {
namespace {

using detail::assign_bool;
using detail::assign_int;
using detail::in_quotes;

constexpr std::int64_t kMaxMs = std::numeric_limits<std::uint32_t>::max();

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

class ConfiguredHttpSink final : public ConfiguredSink {
 public:
  ConfiguredHttpSink(HttpSinkOptions options, std::shared_ptr<const ConfiguredCodec> codec)
      : options_(std::move(options)), codec_(std::move(codec)) {}

  Description describe() const override {
    const auto& o = options_;
    Description d;
    d.headline = "http " + http::redact_url(o.url);
    const auto add = [&](std::string label, std::string text) {
      d.details.emplace_back(std::move(label), std::move(text));
    };
    add("content_type", o.format == HttpBodyFormat::kJsonLines
                            ? "application/x-ndjson (one JSON record per line)"
                            : "application/json (a JSON array per request)");
    add("codec", codec_->name());
    for (auto& line : codec_->describe()) d.details.push_back(std::move(line));
    add("compression", o.compression == HttpCompression::kGzip ? "gzip" : "none");
    if (!o.headers.empty()) {
      std::string names;
      for (const auto& [name, value] : o.headers) names += (names.empty() ? "" : ", ") + name;
      add("headers", names + " (values not shown)");
    }
    switch (o.auth.kind) {
      case HttpAuth::Kind::kNone:
        add("auth", "none");
        break;
      case HttpAuth::Kind::kBearer:
        add("auth", "bearer (token set, not shown)");
        break;
      case HttpAuth::Kind::kBasic:
        add("auth", "basic, user " + in_quotes(o.auth.username) + " (password not shown)");
        break;
    }
    add("signing", o.signing_secrets.empty()
                       ? std::string("off (requests are not signed)")
                       : "Standard Webhooks, " +
                             plural(o.signing_secrets.size(), "secret", "secrets") +
                             " (not shown)");
    add("timeouts", "connect " + std::to_string(o.connect_timeout_ms) + " ms, request " +
                        std::to_string(o.request_timeout_ms) + " ms");
    if (http::redact_url(o.url).rfind("https", 0) == 0 || !o.tls.ca_file.empty()) {
      std::string tls = o.tls.verify ? "verify on" : "verify OFF (the receiver is not checked)";
      tls += o.tls.ca_file.empty() ? ", system CAs" : ", CA file " + o.tls.ca_file.string();
      if (!o.tls.client_cert.empty()) tls += ", client cert " + o.tls.client_cert.string();
      add("tls", tls);
    }
    add("retry",
        (o.retry.max_retries < 0 ? std::string("without end")
                                 : "up to " + plural(static_cast<std::size_t>(o.retry.max_retries),
                                                     "retry", "retries")) +
            ", back-off " + std::to_string(o.retry.initial_backoff_ms) + " to " +
            std::to_string(o.retry.max_backoff_ms) + " ms, jittered" +
            (o.retry.max_elapsed_ms == 0
                 ? std::string(", no time limit")
                 : ", for at most " + std::to_string(o.retry.max_elapsed_ms) +
                       " ms per request (then the runtime delivers the batch again)"));
    std::string batch;
    if (o.batch_max_events == 0 && o.batch_max_bytes == 0) {
      batch = "one request per delivered batch";
    } else {
      batch = "at most";
      if (o.batch_max_events != 0) batch += " " + plural(o.batch_max_events, "event", "events");
      if (o.batch_max_events != 0 && o.batch_max_bytes != 0) batch += " and";
      if (o.batch_max_bytes != 0) batch += " " + plural(o.batch_max_bytes, "byte", "bytes");
      batch += " per request";
    }
    add("requests", batch);
    add("refused batch",
        skip_refused_ ? "skip (written to the [dead_letter] file, then the pipeline goes on)"
                      : "halt (the pipeline stops; the batch is not acknowledged)");
    return d;
  }

  Result<std::unique_ptr<Sink>> open(const SinkOpenContext& context) const override {
    HttpSinkOptions options = options_;
    options.stop = &detail::g_process_stop_requested;
    if (skip_refused_) {
      if (!context.dead_letter) {
        return fail(Error::configuration("\"skip\" needs a dead-letter destination, and "
                                         "none was given")
                        .for_setting(SettingOwner::kSink, "refused_batch_policy"));
      }
      options.on_rejected = context.dead_letter;
    }
    auto encoder = codec_->make_encoder();
    if (!encoder) return fail(std::move(encoder).error());
    return make_http_sink(std::move(options), std::move(*encoder));
  }

  std::optional<std::string> dead_letter_key() const override {
    if (!skip_refused_) return std::nullopt;
    return std::string("refused_batch_policy");
  }

  void skip_refused() { skip_refused_ = true; }

 private:
  HttpSinkOptions options_;
  std::shared_ptr<const ConfiguredCodec> codec_;
  bool skip_refused_ = false;
};

// A secret given inline (`key`) or through the environment (`env_key`), not both.
Result<std::optional<std::string>> read_secret(const Settings& s, std::string_view key,
                                               std::string_view env_key) {
  auto value = s.get_string(key);
  if (!value) return fail(value.error());
  auto env = s.get_string(env_key);
  if (!env) return fail(env.error());
  if (*value && *env) {
    return fail(s.error(
        env_key, "set either " + std::string(key) + " or " + std::string(env_key) + ", not both"));
  }
  if (*env) {
    const char* from_env = (*env)->empty() ? nullptr : std::getenv((*env)->c_str());
    if (from_env == nullptr) {
      return fail(s.error(env_key, "the environment variable " + in_quotes(**env) + " is not set"));
    }
    return std::optional<std::string>(from_env);
  }
  return *value;
}

// A string or an array of strings.
Result<std::vector<std::string>> read_one_or_many(const Settings& s, std::string_view key,
                                                  std::string_view element) {
  if (!s.has(key)) return std::vector<std::string>{};
  if (auto one = s.get_string(key); one) return std::vector<std::string>{**one};
  auto many = s.get_string_list(key, element);
  if (!many) {
    return fail(s.error(key, "expected " + std::string(element) + " string or an array of them"));
  }
  return **many;
}

Status read_auth(const Settings& auth, HttpAuth& out) {
  if (!auth.present()) return ok();
  auto type = auth.get_string("type");
  if (!type) return fail(type.error());
  if (!*type) return fail(auth.missing("type", "(\"bearer\" or \"basic\")"));
  if (**type == "none") {
    out.kind = HttpAuth::Kind::kNone;
    return ok();
  }
  if (**type == "bearer") {
    out.kind = HttpAuth::Kind::kBearer;
    auto token = read_secret(auth, "token", "token_env");
    if (!token) return fail(token.error());
    if (!*token) return fail(auth.missing("token", "with type = \"bearer\" (or token_env)"));
    if ((*token)->empty()) return fail(auth.error("token", "the token is empty"));
    out.token = std::move(**token);
    return ok();
  }
  if (**type == "basic") {
    out.kind = HttpAuth::Kind::kBasic;
    auto user = auth.get_string("username");
    if (!user) return fail(user.error());
    if (!*user || (*user)->empty()) {
      return fail(auth.missing("username", "with type = \"basic\""));
    }
    out.username = std::move(**user);
    auto password = read_secret(auth, "password", "password_env");
    if (!password) return fail(password.error());
    if (!*password) {
      return fail(auth.missing("password", "with type = \"basic\" (or password_env)"));
    }
    out.password = std::move(**password);
    return ok();
  }
  return fail(
      auth.error("type", "expected \"bearer\", \"basic\" or \"none\", found " + in_quotes(**type)));
}

Status read_tls(const Settings& tls, HttpTlsOptions& out) {
  if (!tls.present()) return ok();
  CPPCDC_TRY(assign_bool(tls, "verify", out.verify));
  for (const auto& [key, target] :
       {std::pair<const char*, std::filesystem::path*>{"ca_file", &out.ca_file},
        {"client_cert", &out.client_cert},
        {"client_key", &out.client_key}}) {
    auto path = tls.get_path(key);
    if (!path) return fail(path.error());
    if (*path) {
      if ((*path)->empty()) return fail(tls.error(key, "expected a file name, found \"\""));
      *target = std::move(**path);
    }
  }
  return ok();
}

Result<std::unique_ptr<ConfiguredSink>> configure(const Settings& settings) {
  HttpSinkOptions o;
  auto url = settings.get_string("url");
  if (!url) return fail(url.error());
  if (!*url || (*url)->empty()) {
    return fail(settings.missing("url",
                                 "when type = \"http\" (the receiver's http(s):// "
                                 "address)"));
  }
  o.url = std::move(**url);

  auto content_type = settings.get_string("content_type");
  if (!content_type) return fail(content_type.error());
  if (*content_type) {
    if (**content_type == "application/json") {
      o.format = HttpBodyFormat::kJsonArray;
    } else if (**content_type == "application/x-ndjson") {
      o.format = HttpBodyFormat::kJsonLines;
    } else {
      return fail(settings.error("content_type",
                                 "expected \"application/json\" or \"application/x-ndjson\", "
                                 "found " +
                                     in_quotes(**content_type)));
    }
  }
  auto compression = settings.get_string("compression");
  if (!compression) return fail(compression.error());
  if (*compression) {
    if (**compression == "gzip") {
      o.compression = HttpCompression::kGzip;
    } else if (**compression != "none") {
      return fail(settings.error(
          "compression", "expected \"none\" or \"gzip\", found " + in_quotes(**compression)));
    }
  }
  auto headers = settings.get_string_map("headers", "\"Header-Name\" = \"value\"");
  if (!headers) return fail(headers.error());
  if (*headers) o.headers = std::move(**headers);

  auto secrets = read_one_or_many(settings, "signing_secret", "a \"whsec_...\"");
  if (!secrets) return fail(secrets.error());
  auto secret_envs = read_one_or_many(settings, "signing_secret_env", "an environment variable");
  if (!secret_envs) return fail(secret_envs.error());
  if (!secrets->empty() && !secret_envs->empty()) {
    return fail(settings.error("signing_secret_env",
                               "set either signing_secret or signing_secret_env, not both"));
  }
  o.signing_secrets = std::move(*secrets);
  for (const auto& name : *secret_envs) {
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') {
      return fail(settings.error("signing_secret_env",
                                 "the environment variable " + in_quotes(name) + " is " +
                                     (value == nullptr ? "not set" : "empty") +
                                     "; set it to the receiver's \"whsec_...\" secret"));
    }
    o.signing_secrets.emplace_back(value);
  }

  CPPCDC_TRY(assign_int(settings, "connect_timeout_ms", 1, kMaxMs, o.connect_timeout_ms));
  CPPCDC_TRY(assign_int(settings, "request_timeout_ms", 1, kMaxMs, o.request_timeout_ms));
  CPPCDC_TRY(assign_int(settings, "batch_max_events", 0, std::numeric_limits<std::int32_t>::max(),
                        o.batch_max_events));
  CPPCDC_TRY(assign_int(settings, "batch_max_bytes", 0, std::numeric_limits<std::int64_t>::max(),
                        o.batch_max_bytes));

  auto auth = settings.get_section("auth");
  if (!auth) return fail(auth.error());
  CPPCDC_TRY(read_auth(**auth, o.auth));
  auto tls = settings.get_section("tls");
  if (!tls) return fail(tls.error());
  CPPCDC_TRY(read_tls(**tls, o.tls));
  auto retry = settings.get_section("retry");
  if (!retry) return fail(retry.error());
  if ((*retry)->present()) {
    CPPCDC_TRY(assign_int(**retry, "max_retries", -1, std::numeric_limits<std::int32_t>::max(),
                          o.retry.max_retries));
    CPPCDC_TRY(assign_int(**retry, "initial_backoff_ms", 0, kMaxMs, o.retry.initial_backoff_ms));
    CPPCDC_TRY(assign_int(**retry, "max_backoff_ms", 0, kMaxMs, o.retry.max_backoff_ms));
    CPPCDC_TRY(assign_int(**retry, "max_elapsed_ms", 0, kMaxMs, o.retry.max_elapsed_ms));
  }

  // A batch the receiver refuses for good: "halt" (the default) stops the pipeline without
  // acknowledging it, "skip" writes it to the dead-letter file and goes on.
  bool skip_refused = false;
  auto refused = settings.get_string("refused_batch_policy");
  if (!refused) return fail(refused.error());
  if (*refused) {
    if (**refused == "skip") {
      skip_refused = true;
    } else if (**refused != "halt") {
      return fail(settings.error("refused_batch_policy",
                                 "expected \"halt\" or \"skip\", found " + in_quotes(**refused)));
    }
  }

  auto codec = configure_codec(settings, true, true);
  if (!codec) return fail(std::move(codec).error());
  // The checks make_http_sink runs (URL, headers, secrets, files, what the codec needs of the
  // batches), now, so that check-config reports them; nothing connects.
  {
    HttpSinkOptions probe = o;
    auto encoder = (*codec)->make_encoder();
    if (!encoder) return fail(encoder.error());
    auto sink = make_http_sink(std::move(probe), std::move(*encoder));
    if (!sink) return fail(sink.error());
  }
  auto configured = std::make_unique<ConfiguredHttpSink>(std::move(o), std::move(*codec));
  if (skip_refused) configured->skip_refused();
  return std::unique_ptr<ConfiguredSink>(std::move(configured));
}

}  // namespace

void register_http_sink_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_json_codec_plugin();
    (void)register_sink_type("http", configure);
  });
}

}  // namespace cppcdc
