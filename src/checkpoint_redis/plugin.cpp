// [state.offset] backend = "redis": settings `url` (redis://[[user][:password]@]host[:port][/db])
// or `host` / `port` / `db`; `password_env` (the name of an environment variable holding the
// password); `key_prefix` (default "cppcdc:"); `lock_ttl_ms`, `connect_timeout_ms`,
// `timeout_ms`; `tls` (only false: this build has no TLS for Redis).

#include "cppcdc/plugin.hpp"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "checkpoint_redis/hiredis_util.hpp"
#include "core/settings_read.hpp"
#include "cppcdc/redis_checkpoint.hpp"

namespace cppcdc {
namespace {

using detail::in_quotes;

class ConfiguredRedisCheckpoint final : public ConfiguredCheckpoint {
 public:
  ConfiguredRedisCheckpoint(RedisCheckpointOptions options, bool from_url, std::string password_key)
      : options_(std::move(options)), from_url_(from_url), password_key_(std::move(password_key)) {}

  std::string describe(const std::string& checkpoint_id) const override {
    std::string out = "redis key " + redis_checkpoint_key(options_, checkpoint_id) + " on " +
                      options_.host + ":" + std::to_string(options_.port) + " db " +
                      std::to_string(options_.db) + " (lease " +
                      redis_lock_key(options_, checkpoint_id) + ", " +
                      std::to_string(options_.lock_ttl_ms) + " ms";
    if (!options_.username.empty()) out += ", user " + options_.username;
    if (!options_.password.empty()) out += ", password from " + password_key_;
    return out + ")";
  }
  bool durable() const override { return true; }
  Status remove(const std::string& checkpoint_id) const override {
    auto removed = remove_redis_checkpoint(options_, checkpoint_id);
    if (!removed) return fail(located(std::move(removed).error()));
    return ok();
  }
  Result<std::shared_ptr<Checkpoint>> open(const std::string& checkpoint_id) const override {
    auto opened = open_redis_checkpoint(options_, checkpoint_id);
    if (!opened) return fail(located(std::move(opened).error()));
    return std::shared_ptr<Checkpoint>(std::move(*opened));
  }

 private:
  // The library names the option an error is about (password, host, db); the configuration
  // may have set it through another key (the URL, password_env).
  Error located(Error error) const {
    const std::string& setting = error.setting();
    if (setting == "password") {
      return std::move(error).for_setting(SettingOwner::kCheckpoint, password_key_);
    }
    if (from_url_ && (setting == "host" || setting == "port" || setting == "db")) {
      return std::move(error).for_setting(SettingOwner::kCheckpoint, "url");
    }
    return error;
  }

  RedisCheckpointOptions options_;
  bool from_url_;
  std::string password_key_;  // "url" or "password_env"
};

Result<std::unique_ptr<ConfiguredCheckpoint>> configure_redis(const Settings& settings) {
  RedisCheckpointOptions options;
  {
    auto tls = settings.get_bool("tls");
    if (!tls) return fail(tls.error());
    if (tls->value_or(false)) {
      return fail(settings.error(
          "tls",
          "TLS is not supported for Redis: this build's hiredis (Debian 12, 0.14) has "
          "none; reach Redis over a trusted network or a TLS tunnel (stunnel, spiped) "
          "and set tls = false"));
    }
  }
  auto url = settings.get_string("url");
  if (!url) return fail(url.error());
  const bool from_url = url->has_value();
  std::string password_key = "password_env";
  if (from_url) {
    for (const char* key : {"host", "port", "db"}) {
      if (settings.has(key)) {
        return fail(settings.error(key, "set either url or host/port/db, not both"));
      }
    }
    auto parsed = parse_redis_url(**url, options);
    if (!parsed) return fail(settings.error("url", parsed.error().message()));
    if (!options.password.empty()) password_key = "url";
  } else {
    CPPCDC_TRY(detail::assign_string(settings, "host", options.host));
    if (options.host.empty()) {
      return fail(settings.error("host", "expected a host name or address, found \"\""));
    }
    CPPCDC_TRY(detail::assign_int(settings, "port", 1, 65535, options.port));
    CPPCDC_TRY(detail::assign_int(settings, "db", 0, 0x7fffffff, options.db));
  }
  {
    auto env = settings.get_string("password_env");
    if (!env) return fail(env.error());
    if (*env) {
      if (from_url && !options.password.empty()) {
        return fail(
            settings.error("password_env", "the url carries a password too; set only one of them"));
      }
      const char* value = (*env)->empty() ? nullptr : std::getenv((*env)->c_str());
      if (value == nullptr) {
        return fail(settings.error("password_env", "the environment variable " + in_quotes(**env) +
                                                       " is not set; export it (the Redis "
                                                       "password) or remove password_env"));
      }
      options.password = value;
      password_key = "password_env";
    }
  }
  CPPCDC_TRY(detail::assign_string(settings, "key_prefix", options.key_prefix));
  CPPCDC_TRY(detail::assign_int(settings, "lock_ttl_ms", 1'000, 3'600'000, options.lock_ttl_ms));
  CPPCDC_TRY(
      detail::assign_int(settings, "connect_timeout_ms", 1, 600'000, options.connect_timeout_ms));
  CPPCDC_TRY(detail::assign_int(settings, "timeout_ms", 1, 600'000, options.timeout_ms));
  return std::unique_ptr<ConfiguredCheckpoint>(std::make_unique<ConfiguredRedisCheckpoint>(
      std::move(options), from_url, std::move(password_key)));
}

}  // namespace

void register_redis_checkpoint_plugin() {
  static std::once_flag once;
  std::call_once(once, [] { (void)register_checkpoint_backend("redis", configure_redis); });
}

}  // namespace cppcdc
