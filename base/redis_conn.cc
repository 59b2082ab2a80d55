#include "base/redis_conn.h"

#include <string>
#include <vector>

#include <sys/time.h>

#include <hiredis/hiredis.h>

namespace lagwatch {
namespace {

timeval ToTimeval(Millis d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

}  // namespace

Result<redisContext*> RedisConnect(const RedisConfig& config, Millis timeout) {
  const std::string where = "Redis " + config.host + ":" + std::to_string(config.port);
  redisContext* ctx = redisConnectWithTimeout(config.host.c_str(), config.port, ToTimeval(timeout));
  if (!ctx || ctx->err) {
    std::string why = ctx ? ctx->errstr : "out of memory";
    if (ctx) redisFree(ctx);
    return Status::Unavailable("cannot connect to " + where + ": " + why);
  }
  redisSetTimeout(ctx, ToTimeval(timeout));
  if (Status st = RedisAuthenticate(ctx, config); !st.ok()) {
    redisFree(ctx);
    return st;
  }
  return ctx;
}

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
