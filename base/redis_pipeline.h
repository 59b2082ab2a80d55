// Redis replies as hiredis parses them, owned: what every RedisConnection (base/redis_conn.h)
// hands back.
#pragma once

#include <memory>
#include <string>

struct redisReply;

namespace lagwatch {

struct RedisReplyDeleter {
  void operator()(redisReply* r) const;  // freeReplyObject
};
// One reply, owned.
using RedisReply = std::unique_ptr<redisReply, RedisReplyDeleter>;

// The text of a string, status or error reply.
std::string ReplyText(const redisReply& r);

}  // namespace lagwatch
