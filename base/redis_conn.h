// One way to open a Redis connection for every part of lagwatch that talks to Redis (the
// publisher, the router feedback reader): connect with a deadline, set the command timeout, and
// AUTH from the configured password file.
#pragma once

#include <string>

#include "base/clock.h"
#include "base/status.h"

struct redisContext;

namespace lagwatch {

// Where Redis is and how to log in (the `redis` section of the configuration).
struct RedisConfig {
  std::string host = "127.0.0.1";
  int port = 6379;
  // The publisher's key prefix and key expiry (docs/redis.md).
  std::string key_prefix = "slave_delay";
  int ttl_ms = 1000;
  // AUTH: the password is the first line of password_file (read when the configuration is
  // loaded); username only for Redis 6 ACLs. Empty: no AUTH.
  std::string username;
  std::string password_file;
  std::string password;
};

// Connects to config.host:port within `timeout`, makes `timeout` the deadline of every later
// command on the connection, and sends AUTH when the configuration has a password.
// On success the caller owns the context (free it with redisFree). Unavailable: refused, timed
// out, or AUTH rejected; the message names the server and carries Redis's reply (e.g.
// WRONGPASS), never the password.
Result<redisContext*> RedisConnect(const RedisConfig& config, Millis timeout);

// Sends AUTH on a fresh connection when `config` has a password; Ok when it has none.
Status RedisAuthenticate(redisContext* ctx, const RedisConfig& config);

}  // namespace lagwatch
