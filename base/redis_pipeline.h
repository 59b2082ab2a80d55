// Pipelined Redis commands over one hiredis connection (base/redis_conn.h opens it), shared by
// everything that talks to Redis (the connection set-up, the publisher, the router feedback
// reader): queue commands, then read their replies in order. Not thread-safe: a connection
// belongs to one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

struct redisContext;
struct redisReply;

namespace lagwatch {

struct RedisReplyDeleter {
  void operator()(redisReply* r) const;  // freeReplyObject
};
// One reply, owned.
using RedisReply = std::unique_ptr<redisReply, RedisReplyDeleter>;

// Appends the command `args` (binary-safe) to `c`'s output buffer; nothing is sent until a reply
// is read. False if hiredis could not (out of memory).
bool AppendCommand(redisContext* c, const std::vector<std::string>& args);

// The next reply (sending what is queued first), or null when the connection failed: `c->errstr`
// says why, and the connection is of no further use.
RedisReply NextReply(redisContext* c);

// The text of a string, status or error reply.
std::string ReplyText(const redisReply& r);

// One command and its reply (AppendCommand, then NextReply): null when the connection failed.
RedisReply RunCommand(redisContext* c, const std::vector<std::string>& args);

}  // namespace lagwatch
