#include "exporters/redis_auth.h"

#include <string>
#include <vector>

#include <hiredis/hiredis.h>

namespace lagwatch {

Status RedisAuthenticate(redisContext* ctx, const RedisConfig& config) {
  if (config.password.empty()) return Status::Ok();
  std::vector<const char*> argv = {"AUTH"};
  std::vector<size_t> lens = {4};
  if (!config.username.empty()) {
    argv.push_back(config.username.data());
    lens.push_back(config.username.size());
  }
  argv.push_back(config.password.data());
  lens.push_back(config.password.size());
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (!reply) return Status::Unavailable(std::string("Redis AUTH: ") + ctx->errstr);
  Status st = Status::Ok();
  if (reply->type == REDIS_REPLY_ERROR) {
    st = Status::Unavailable("Redis refused AUTH" +
                             std::string(config.username.empty() ? "" : " as " + config.username) +
                             ": " + std::string(reply->str, reply->len));
  }
  freeReplyObject(reply);
  return st;
}

}  // namespace lagwatch
