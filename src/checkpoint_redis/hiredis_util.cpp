#include "checkpoint_redis/hiredis_util.hpp"

#include <sys/time.h>

#include <string>
#include <utility>

namespace cppcdc::redisckpt {
namespace {

timeval to_timeval(std::uint32_t ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.rfind(prefix, 0) == 0;
}

/// A failed context: transient, naming the server; a timeout says which one.
Error context_error(const redisContext* context, const RedisCheckpointOptions& options,
                    const std::string& what) {
  std::string problem = context != nullptr ? context->errstr : "cannot allocate a context";
  if (problem.empty()) problem = "the connection failed";
  if (problem.find("Resource temporarily unavailable") != std::string::npos) {
    problem = "no answer within " + std::to_string(options.timeout_ms) + " ms (timeout_ms)";
  } else if (problem.find("timed out") != std::string::npos) {
    problem +=
        " (after connect_timeout_ms = " + std::to_string(options.connect_timeout_ms) + " ms)";
  }
  return Error::checkpoint(ErrorKind::kTransient,
                           what + ": " + server_name(options) + ": " + problem +
                               " (check that the server is running and reachable from this "
                               "host)");
}

}  // namespace

std::string server_name(const RedisCheckpointOptions& options) {
  const bool v6 = options.host.find(':') != std::string::npos;
  return "Redis at " + (v6 ? "[" + options.host + "]" : options.host) + ":" +
         std::to_string(options.port) + ", db " + std::to_string(options.db);
}

std::string reply_text(const redisReply& reply) {
  if (reply.str == nullptr) return "";
  return std::string(reply.str, reply.len);
}

Result<ContextPtr> connect(const RedisCheckpointOptions& options) {
  ContextPtr context(redisConnectWithTimeout(options.host.c_str(), options.port,
                                             to_timeval(options.connect_timeout_ms)));
  if (!context || context->err != 0) {
    return fail(context_error(context.get(), options, "connecting"));
  }
  if (redisSetTimeout(context.get(), to_timeval(options.timeout_ms)) != REDIS_OK ||
      redisEnableKeepAlive(context.get()) != REDIS_OK) {
    return fail(context_error(context.get(), options, "setting up the connection"));
  }
  auto step = [&](const std::vector<std::string_view>& args, const std::string& what) -> Status {
    auto reply = command(context.get(), options, args, what);
    if (!reply) return fail(std::move(reply).error());
    if ((*reply)->type == REDIS_REPLY_ERROR) return fail(reply_error(**reply, options, what));
    return ok();
  };
  if (!options.password.empty()) {
    if (options.username.empty()) {
      CPPCDC_TRY(step({"AUTH", options.password}, "authenticating"));
    } else {
      CPPCDC_TRY(step({"AUTH", options.username, options.password}, "authenticating"));
    }
  }
  if (options.db != 0) {
    const std::string db = std::to_string(options.db);
    CPPCDC_TRY(step({"SELECT", db}, "selecting database " + db));
  }
  CPPCDC_TRY(step({"PING"}, "PING"));
  return context;
}

Result<ReplyPtr> command(redisContext* context, const RedisCheckpointOptions& options,
                         const std::vector<std::string_view>& args, const std::string& what) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (!reply) return fail(context_error(context, options, what));
  return reply;
}

Error reply_error(const redisReply& reply, const RedisCheckpointOptions& options,
                  const std::string& what) {
  const std::string message = reply_text(reply);
  const std::string text = what + ": " + server_name(options) + " answered: " + message;
  auto configuration = [&](std::string setting, const std::string& remedy) {
    Error error = Error::checkpoint(ErrorKind::kConfiguration, text + "; " + remedy);
    if (setting.empty()) return error;
    return std::move(error).for_setting(SettingOwner::kCheckpoint, std::move(setting));
  };
  if (starts_with(message, "WRONGPASS") || starts_with(message, "NOAUTH") ||
      starts_with(message, "ERR invalid password") || starts_with(message, "ERR AUTH") ||
      starts_with(message, "ERR Client sent AUTH") ||
      starts_with(message, "ERR invalid username-password")) {
    return configuration("password", "set the password (and the user name) the server expects");
  }
  if (starts_with(message, "NOPERM")) {
    return configuration("key_prefix",
                         "the ACL user needs +get +set +eval +pexpire +pttl +del +ping on keys ~" +
                             options.key_prefix + "*");
  }
  if (starts_with(message, "ERR DB index") || starts_with(message, "ERR invalid DB index") ||
      starts_with(message, "ERR SELECT is not allowed")) {
    return configuration("db", "choose a database number the server has (databases setting)");
  }
  if (starts_with(message, "MOVED") || starts_with(message, "ASK") ||
      starts_with(message, "CROSSSLOT")) {
    return configuration("host", "Redis Cluster is not supported; use a standalone server");
  }
  if (starts_with(message, "ERR unknown command")) {
    return configuration("",
                         "the server does not offer a command this backend needs "
                         "(EVAL, SET with NX/PX); it needs Redis 2.6.12 or later with "
                         "scripting");
  }
  for (const char* transient :
       {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "OOM", "CLUSTERDOWN", "MISCONF"}) {
    if (starts_with(message, transient)) return Error::checkpoint(ErrorKind::kTransient, text);
  }
  return Error::checkpoint(ErrorKind::kTerminal, text);
}

}  // namespace cppcdc::redisckpt
