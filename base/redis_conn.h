// One way to open a Redis connection for every part of lagwatch that talks to Redis (the
// publisher, the router feedback reader): connect with a deadline, set the command timeout, and
// AUTH from the configured password file; with Redis Sentinel, find the master first.
#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/status.h"

struct redisContext;

namespace lagwatch {

// Where Redis is and how to log in (the `redis` section of the configuration).
struct RedisConfig {
  // One Redis server; unused when `sentinels` is set.
  std::string host = "127.0.0.1";
  int port = 6379;
  // Redis Sentinel: when non-empty, every connect asks these sentinels, in order, for the master
  // named `master_name` (RedisConnect). sentinel_password (the first line of
  // sentinel_password_file, read when the configuration is loaded) is sent to each sentinel as
  // AUTH; empty: no AUTH.
  std::vector<Endpoint> sentinels;
  std::string master_name;
  std::string sentinel_password_file;
  std::string sentinel_password;
  // The publisher's key prefix and key expiry (docs/redis.md).
  std::string key_prefix = "slave_delay";
  int ttl_ms = 1000;
  // AUTH on the Redis server (the master): the password is the first line of password_file
  // (read when the configuration is loaded); username only for Redis 6 ACLs. Empty: no AUTH.
  std::string username;
  std::string password_file;
  std::string password;

  bool operator==(const RedisConfig&) const = default;
};

// Opens a connection to Redis, makes `timeout` the deadline of every later command on it, and
// sends AUTH when the configuration has a password.
//
// Without sentinels, to config.host:port. With sentinels, to the master they name: each sentinel
// in turn is asked `SENTINEL get-master-addr-by-name`, and the connection to the address it
// names is kept only if `ROLE` says master there (right after a failover a sentinel may still
// name the old master, dead or demoted); otherwise the next sentinel is asked. If none named a
// master that answers as one, the replicas each sentinel lists (`SENTINEL REPLICAS`) are asked
// for their ROLE: for about a second after promoting a replica the sentinels still name the old
// master, and the promoted one already answers as a master. Every connect and command has the
// deadline `timeout`. The master found is logged when it differs from the one found last for that
// name in this process ("Redis master for NAME is now HOST:PORT (via sentinel HOST:PORT)").
//
// On success the caller owns the context (free it with redisFree). Unavailable: refused, timed
// out, AUTH rejected, or no sentinel named a master that answered as one; the message names
// each server tried and carries Redis's replies (e.g. WRONGPASS), never a password.
Result<redisContext*> RedisConnect(const RedisConfig& config, Millis timeout);

// Sends AUTH on a fresh connection when `config` has a password; Ok when it has none.
Status RedisAuthenticate(redisContext* ctx, const RedisConfig& config);

// Asks the server of `ctx` for its ROLE. Ok when it is a master; ServerError naming the role it
// has instead (e.g. "slave": a demoted master); Unavailable when the connection failed (it is of
// no further use); DataError for a reply that is no ROLE reply.
Status RedisCheckMaster(redisContext* ctx);

// "host:port" of the server `ctx` is connected to.
std::string RedisServer(const redisContext* ctx);

}  // namespace lagwatch
