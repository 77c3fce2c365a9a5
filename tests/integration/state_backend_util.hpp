#pragma once
// Helpers for the tests of the server-backed checkpoint backends ("postgresql", "redis"):
// the conformance harnesses (tests/conformance/checkpoint_conformance.hpp) and a small Redis
// client. The servers are the ones scripts/test.sh starts: PostgreSQL at CPPCDC_TEST_PG_DSN,
// Redis on 127.0.0.1:CPPCDC_TEST_REDIS_PORT (scripts/redis.sh). Without the variable the tests
// skip, naming it.

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/checkpoint_conformance.hpp"
#include "cppcdc/checkpoint.hpp"
#include "cppcdc/postgresql_checkpoint.hpp"
#include "cppcdc/redis_checkpoint.hpp"
#include "integration/pg_util.hpp"

namespace cppcdc::it::state {

/// The test PostgreSQL's DSN, or "" when CPPCDC_TEST_PG_DSN is not set.
inline std::string pg_dsn() {
  const char* dsn = std::getenv("CPPCDC_TEST_PG_DSN");
  return dsn != nullptr ? dsn : "";
}

/// The test Redis's port, or 0 when CPPCDC_TEST_REDIS_PORT is not set.
inline int redis_port() {
  const char* port = std::getenv("CPPCDC_TEST_REDIS_PORT");
  return port != nullptr && *port != '\0' ? std::atoi(port) : 0;
}

inline std::string pg_unavailable() {
  return pg_dsn().empty() ? "CPPCDC_TEST_PG_DSN is not set: start a server with scripts/pg.sh "
                            "start DIR PORT and export its DSN (scripts/test.sh does)"
                          : "";
}

inline std::string redis_unavailable() {
  return redis_port() == 0 ? "CPPCDC_TEST_REDIS_PORT is not set: start a server with "
                             "scripts/redis.sh start DIR PORT and export its port "
                             "(scripts/test.sh does)"
                           : "";
}

#define CPPCDC_REQUIRE_SERVER(why)                                  \
  do {                                                              \
    if (const std::string w = (why); !w.empty()) GTEST_SKIP() << w; \
  } while (0)

/// A name unique to this process and call ("ckpt_<pid>_<n>").
inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
}

/// A synchronous Redis client for the tests; failures fail the test.
class RedisClient {
 public:
  explicit RedisClient(int port) {
    context_ = redisConnect("127.0.0.1", port);
    if (context_ == nullptr || context_->err != 0) {
      ADD_FAILURE() << "cannot connect to Redis on port " << port << ": "
                    << (context_ != nullptr ? context_->errstr : "?");
    }
  }
  ~RedisClient() {
    if (context_ != nullptr) redisFree(context_);
  }
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  struct Reply {
    int type = REDIS_REPLY_NIL;
    std::string text;  // string, status or error
    long long integer = 0;
  };
  Reply command(const std::vector<std::string>& args) {
    Reply out;
    if (context_ == nullptr || context_->err != 0) return out;
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    if (reply == nullptr) {
      ADD_FAILURE() << "Redis " << args[0] << " failed: " << context_->errstr;
      return out;
    }
    out.type = reply->type;
    if (reply->str != nullptr) out.text.assign(reply->str, reply->len);
    out.integer = reply->integer;
    freeReplyObject(reply);
    if (out.type == REDIS_REPLY_ERROR) ADD_FAILURE() << "Redis " << args[0] << ": " << out.text;
    return out;
  }
  std::optional<std::string> get(const std::string& key) {
    Reply r = command({"GET", key});
    if (r.type != REDIS_REPLY_STRING) return std::nullopt;
    return r.text;
  }

 private:
  redisContext* context_ = nullptr;
};

/// The "postgresql" backend over a schema of its own (dropped at the end) in the test server's
/// database postgres.
class PostgresqlCheckpointHarness {
 public:
  static constexpr const char* kName = "postgresql";
  static constexpr bool kSharedStorage = true;
  static std::string unavailable() { return pg_unavailable(); }

  PostgresqlCheckpointHarness() : admin_(pg_dsn()) {
    options_.dsn = pg_dsn();
    options_.schema = unique_name("ckpt_conf");
  }
  ~PostgresqlCheckpointHarness() {
    admin_.query("SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + options_.schema +
                 " CASCADE");
  }
  PostgresqlCheckpointHarness(const PostgresqlCheckpointHarness&) = delete;
  PostgresqlCheckpointHarness& operator=(const PostgresqlCheckpointHarness&) = delete;

  Result<std::unique_ptr<Checkpoint>> open(const std::string& source_id) {
    return open_postgresql_checkpoint(options_, source_id);
  }
  /// Flips a bit of a byte near the end of the stored record (inside the JSON body).
  bool corrupt(const std::string& source_id) {
    return changed(admin_.query("UPDATE " + table() +
                                    " SET record = set_byte(record, length(record) - 5, "
                                    "get_byte(record, length(record) - 5) # 32) WHERE id = $1 "
                                    "RETURNING 1",
                                {source_id}));
  }
  bool truncate(const std::string& source_id) {
    return changed(admin_.query("UPDATE " + table() +
                                    " SET record = substring(record from 1 for length(record) / 2) "
                                    "WHERE id = $1 RETURNING 1",
                                {source_id}));
  }
  std::string location(const std::string& source_id) {
    return postgresql_checkpoint_location(options_, source_id);
  }
  std::string writer_lock_location(const std::string& source_id) { return location(source_id); }
  /// A deferred constraint trigger that raises at COMMIT: the save's UPDATE ran, its COMMIT
  /// fails, the transaction is rolled back.
  std::optional<Status> save_failing_part_way(Checkpoint& checkpoint,
                                              const CheckpointRecord& record) {
    admin_.query("CREATE FUNCTION " + options_.schema +
                 ".fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION "
                 "'injected failure at commit'; END$$");
    admin_.query("CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT OR UPDATE ON " + table() +
                 " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION " + options_.schema +
                 ".fail_commit()");
    Status status = checkpoint.save(record);
    if (!status) {
      EXPECT_NE(status.error().report().find("injected failure at commit"), std::string::npos)
          << status.error().report();
    }
    admin_.query("DROP TRIGGER fail_commit ON " + table());
    return status;
  }
  std::vector<conformance::SaveCrashPoint> crash_points() {
    return {{"checkpoint.postgresql.before_commit", false},
            {"checkpoint.postgresql.after_commit", true}};
  }

  const PostgresqlCheckpointOptions& options() const { return options_; }
  std::string table() const { return options_.schema + ".checkpoints"; }
  PgSession& admin() { return admin_; }

 private:
  static bool changed(const std::vector<std::vector<std::optional<std::string>>>& rows) {
    return rows.size() == 1;
  }

  PostgresqlCheckpointOptions options_;
  PgSession admin_;
};

/// The "redis" backend under a key prefix of its own (its keys deleted at the end), with a
/// lease of 1.5 s so that the second-writer check waits little.
class RedisCheckpointHarness {
 public:
  static constexpr const char* kName = "redis";
  static constexpr bool kSharedStorage = true;
  static std::string unavailable() { return redis_unavailable(); }

  RedisCheckpointHarness() : client_(redis_port()) {
    options_.port = static_cast<std::uint16_t>(redis_port());
    options_.key_prefix = unique_name("cppcdc-test") + ":";
    options_.lock_ttl_ms = 1500;
  }
  ~RedisCheckpointHarness() {
    auto keys = client_.command({"EVAL",
                                 "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
                                 "n = n + redis.call('DEL', k) end return n",
                                 "0", options_.key_prefix + "*"});
    (void)keys;
  }
  RedisCheckpointHarness(const RedisCheckpointHarness&) = delete;
  RedisCheckpointHarness& operator=(const RedisCheckpointHarness&) = delete;

  Result<std::unique_ptr<Checkpoint>> open(const std::string& source_id) {
    return open_redis_checkpoint(options_, source_id);
  }
  bool corrupt(const std::string& source_id) {
    const std::string key = location(source_id);
    auto value = client_.get(key);
    if (!value || value->size() < 10) return false;
    const std::size_t at = value->size() - 5;
    client_.command({"SETRANGE", key, std::to_string(at),
                     std::string(1, static_cast<char>((*value)[at] ^ 0x20))});
    return true;
  }
  bool truncate(const std::string& source_id) {
    const std::string key = location(source_id);
    auto value = client_.get(key);
    if (!value || value->size() < 2) return false;
    client_.command({"SET", key, value->substr(0, value->size() / 2)});
    return true;
  }
  std::string location(const std::string& source_id) {
    return redis_checkpoint_key(options_, source_id);
  }
  std::string writer_lock_location(const std::string& source_id) {
    return redis_lock_key(options_, source_id);
  }
  /// The server refuses writes (maxmemory of 1 byte, noeviction) while the save runs: the
  /// save's script fails at its first write, before the record is touched. (A save is one
  /// script and its record one SET, so there is no later point to fail at.)
  std::optional<Status> save_failing_part_way(Checkpoint& checkpoint,
                                              const CheckpointRecord& record) {
    client_.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    client_.command({"CONFIG", "SET", "maxmemory", "1"});
    Status status = checkpoint.save(record);
    client_.command({"CONFIG", "SET", "maxmemory", "0"});
    if (!status) {
      EXPECT_NE(status.error().report().find("OOM"), std::string::npos) << status.error().report();
    }
    return status;
  }
  std::vector<conformance::SaveCrashPoint> crash_points() {
    return {{"checkpoint.redis.before_eval", false}, {"checkpoint.redis.after_eval", true}};
  }

  const RedisCheckpointOptions& options() const { return options_; }
  RedisCheckpointOptions& options() { return options_; }
  RedisClient& client() { return client_; }

 private:
  RedisCheckpointOptions options_;
  RedisClient client_;
};

}  // namespace cppcdc::it::state
