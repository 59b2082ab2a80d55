#include "base/redis_pipeline.h"

#include <hiredis/hiredis.h>

namespace lagwatch {

void RedisReplyDeleter::operator()(redisReply* r) const { freeReplyObject(r); }

bool AppendCommand(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()) ==
         REDIS_OK;
}

RedisReply NextReply(redisContext* c) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK) return nullptr;
  return RedisReply(static_cast<redisReply*>(raw));
}

std::string ReplyText(const redisReply& r) { return std::string(r.str, r.len); }

RedisReply RunCommand(redisContext* c, const std::vector<std::string>& args) {
  return AppendCommand(c, args) ? NextReply(c) : nullptr;
}

}  // namespace lagwatch
