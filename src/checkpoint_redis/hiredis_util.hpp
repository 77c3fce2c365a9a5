#pragma once
// The hiredis calls the "redis" checkpoint backend needs: a connection with timeouts, AUTH and
// SELECT; binary-safe commands; failures turned into classified checkpoint errors.

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cppcdc/redis_checkpoint.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc::redisckpt {

struct ContextDeleter {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/// "Redis at host:port, db N", for messages.
std::string server_name(const RedisCheckpointOptions& options);

/// Connects (connect_timeout_ms), sets the command timeout (timeout_ms) and TCP keepalive,
/// sends AUTH and SELECT when configured, and PING. Errors as command() and reply_error().
Result<ContextPtr> connect(const RedisCheckpointOptions& options);

/// Runs one command with binary-safe arguments. An error reply is returned as a reply (see
/// reply_error()); an error here means the connection failed (kind transient, naming the
/// server); the context is then unusable.
Result<ReplyPtr> command(redisContext* context, const RedisCheckpointOptions& options,
                         const std::vector<std::string_view>& args, const std::string& what);

/// The error for an error reply: configuration for refused authentication (setting
/// "password"), an unknown database ("db"), an ACL refusal ("key_prefix"), redirection to a
/// cluster node ("host") and an unknown command; transient for a server loading, busy,
/// read-only or out of memory; terminal otherwise.
Error reply_error(const redisReply& reply, const RedisCheckpointOptions& options,
                  const std::string& what);

/// The text of a string, status or error reply.
std::string reply_text(const redisReply& reply);

}  // namespace cppcdc::redisckpt
