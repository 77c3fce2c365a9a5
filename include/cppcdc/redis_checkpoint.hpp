#pragma once
// The "redis" checkpoint backend: the record in a Redis string key.
//
// Storage. Two keys per checkpoint id, both under `key_prefix` (default "cppcdc:"):
//
//   <prefix>checkpoint:<id>   FileCheckpoint::encode(record): a header line with a SHA-256 over
//                             the JSON body, so damage is detected (kind terminal, naming the
//                             key), never read as a fresh start. `GET` shows it. A record can
//                             be several MB (a MySQL source's schema history): one bulk string.
//   <prefix>lock:<id>         the writer lease: the holder's token ("pid P on HOST nonce N"),
//                             with a time to live of `lock_ttl_ms`
//
// Saving. One EVAL of a small Lua script, which Redis runs atomically: it refuses when the
// lease is held by another token, or when the record's header line is not the one this
// writer last read or wrote (another writer changed it); otherwise it renews the lease and
// replaces the record with one SET. Nothing else ever writes the record, so it is replaced
// whole or not at all.
//
// Fencing a second writer: open() takes the lease with SET NX PX. A background thread (its
// own connection) renews it every lock_ttl_ms / 3 while the Checkpoint lives; the destructor
// deletes it (only when it still holds this token). When the lease is held, open() waits up
// to lock_ttl_ms for it to lapse (a crashed writer's lease does, so a restart soon after a
// crash succeeds) and then refuses with kind configuration, naming the lease key and the
// holder's token. Default TTL 15 s.
//
// A writer paused longer than the TTL (SIGSTOP, a frozen VM, a network partition): its
// renewals stop, the lease lapses, and another writer may take it and save. When the paused
// one resumes, its next save is refused by the script (lease held by another token, or the
// record changed under it: kind terminal, naming the key and the holder), and its renewal
// thread logs that the lease was lost; it never overwrites the newer record. A lapsed lease
// that nobody took is taken again by the next renewal or save, after the script's check that
// the record did not change.
//
// Durability is the Redis server's: a save is acknowledged once the server applied it in
// memory. With AOF and `appendfsync always` it is on disk before the reply; with `everysec`
// a crash of the machine (not only of Redis) can lose up to about a second of saves, which
// resumes from an older position (events replayed, nothing lost); without AOF, everything
// since the last RDB snapshot. open() logs a warning when the server reports appendonly no.
// Replication to replicas is asynchronous: a failover may lose the last saves in the same way.
//
// Not supported: TLS (Debian 12's hiredis 0.14 has no TLS; a rediss:// URL or tls = true is a
// configuration error), Redis Cluster (both keys are used by one script; address a standalone
// server or the current primary), Unix sockets.
//
// Connections: TCP with a connect timeout (connect_timeout_ms) and a timeout for each command
// (timeout_ms); AUTH (with a user name for an ACL user, Redis 6+) and SELECT when configured.
// A connection lost between calls is reopened by the next call; one lost during a save is
// reopened once within it, and the stored header line tells whether the save got through
// (success) or nothing changed (then it is sent again).
//
// Errors (cppcdc::Error, category "checkpoint error"):
//   - transient: cannot connect, connection lost, a timeout (naming host:port); the server
//     loading, busy, read-only (a replica) or out of memory;
//   - configuration: authentication refused (about `password`), a database number the
//     server does not have (`db`), an ACL that forbids a command or key (`key_prefix`),
//     scripting unavailable; a second writer at open();
//   - terminal: a stored record that does not decode (naming the key); a save refused
//     because another writer holds the lease or changed the record.
//
// Threading: as Checkpoint (load and save from any thread; one connection under a mutex),
// plus the renewal thread, which owns its connection. Ownership: the Checkpoint owns both
// connections and joins the thread in its destructor.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

struct RedisCheckpointOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  /// Logical database (SELECT), 0 when not given.
  std::uint32_t db = 0;
  /// ACL user name (Redis 6+); empty: AUTH with the password alone (the default user).
  std::string username;
  /// Empty: no AUTH.
  std::string password;
  /// Prefix of both keys.
  std::string key_prefix = "cppcdc:";
  /// Lifetime of the writer lease, in ms (renewed every third of it).
  std::uint32_t lock_ttl_ms = 15'000;
  /// Longest wait for the TCP connection, in ms.
  std::uint32_t connect_timeout_ms = 5'000;
  /// Longest wait for the answer to one command, in ms.
  std::uint32_t timeout_ms = 10'000;
};

/// Parses `redis://[[username][:password]@]host[:port][/db]` into the connection fields of
/// `options` (host, port, db, username, password; percent-escapes in the user name and
/// password are decoded). `rediss://` (TLS) and anything else is refused: kind configuration,
/// a message that never repeats the password.
Status parse_redis_url(std::string_view url, RedisCheckpointOptions& options);

/// Opens the backend for `checkpoint_id` (Checkpoint::name() is "redis"): connects, takes the
/// lease (waiting up to lock_ttl_ms for a held one), starts the renewal thread.
Result<std::unique_ptr<Checkpoint>> open_redis_checkpoint(const RedisCheckpointOptions& options,
                                                          const std::string& checkpoint_id);

/// The record's key, `<key_prefix>checkpoint:<id>`.
std::string redis_checkpoint_key(const RedisCheckpointOptions& options,
                                 const std::string& checkpoint_id);
/// The lease's key, `<key_prefix>lock:<id>`.
std::string redis_lock_key(const RedisCheckpointOptions& options, const std::string& checkpoint_id);

/// Deletes the record of `checkpoint_id`, holding the lease while it does (so never while a
/// writer holds it: configuration error, after waiting as open() does). An absent record is
/// not an error.
Status remove_redis_checkpoint(const RedisCheckpointOptions& options,
                               const std::string& checkpoint_id);

/// Registers `[state.offset] backend = "redis"` (settings `url` or `host`/`port`/`db`,
/// `password_env`, `key_prefix`, `lock_ttl_ms`, `connect_timeout_ms`, `timeout_ms`, `tls`)
/// with the plugin registry (cppcdc/plugin.hpp). Idempotent.
void register_redis_checkpoint_plugin();

}  // namespace cppcdc
