#include "base/redis_pipeline.h"

#include <hiredis/hiredis.h>

namespace lagwatch {

void RedisReplyDeleter::operator()(redisReply* r) const { freeReplyObject(r); }

std::string ReplyText(const redisReply& r) { return std::string(r.str, r.len); }

}  // namespace lagwatch
