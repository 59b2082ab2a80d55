// Redis AUTH for lagwatch's connections (redis.password_file, redis.username).
#pragma once

#include "agent/config.h"
#include "agent/status.h"

struct redisContext;

namespace lagwatch {

// Sends AUTH on a fresh connection when `config` has a password; Ok when it has none. The
// Unavailable status carries Redis's reply (e.g. WRONGPASS), never the password.
Status RedisAuthenticate(redisContext* ctx, const RedisConfig& config);

}  // namespace lagwatch
