#include "base/redis_conn.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "base/log.h"
#include "base/redis_pipeline.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

timeval ToTimeval(Millis d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

// A string, status or error reply's text, safe to log (a server's text may hold anything).
std::string Text(const redisReply& r) { return EscapeControl(std::string_view(r.str, r.len)); }

// Connects to `server` within `timeout`, which also becomes the deadline of every command.
// `who` names the server in the error.
Result<Context> Open(const Endpoint& server, Millis timeout, const std::string& who) {
  Context ctx(redisConnectWithTimeout(server.host.c_str(), server.port, ToTimeval(timeout)));
  if (!ctx || ctx->err) {
    return Status::Unavailable("cannot connect to " + who + ": " +
                               (ctx ? ctx->errstr : "out of memory"));
  }
  redisSetTimeout(ctx.get(), ToTimeval(timeout));
  return ctx;
}

// AUTH [username] password, unless `password` is empty. `who` names the server in the error.
Status Auth(redisContext* ctx, const std::string& username, const std::string& password,
            const std::string& who) {
  if (password.empty()) return Status::Ok();
  std::vector<std::string> args = {"AUTH"};
  if (!username.empty()) args.push_back(username);
  args.push_back(password);
  RedisReply reply = RunCommand(ctx, args);
  if (!reply) return Status::Unavailable(who + " AUTH: " + ctx->errstr);
  if (reply->type != REDIS_REPLY_ERROR) return Status::Ok();
  return Status::Unavailable(who + " refused AUTH" + (username.empty() ? "" : " as " + username) +
                             ": " + Text(*reply));
}

// A connection to one Redis server, logged in.
Result<Context> OpenServer(const Endpoint& server, const RedisConfig& config, Millis timeout) {
  auto ctx = Open(server, timeout, "Redis " + server.Id());
  if (!ctx.ok()) return ctx;
  if (Status st = RedisAuthenticate(ctx->get(), config); !st.ok()) return st;
  return ctx;
}

// The master's address as `sentinel` knows it, or why it gave none.
Result<Endpoint> AskSentinel(const Endpoint& sentinel, const RedisConfig& config, Millis timeout) {
  const std::string who = "sentinel " + sentinel.Id();
  auto ctx = Open(sentinel, timeout, who);
  if (!ctx.ok()) return ctx.status();
  if (Status st = Auth(ctx->get(), "", config.sentinel_password, who); !st.ok()) return st;
  RedisReply r =
      RunCommand(ctx->get(), {"SENTINEL", "get-master-addr-by-name", config.master_name});
  if (!r) return Status::Unavailable(who + ": " + (*ctx)->errstr);
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError(who + ": " + Text(*r));
  if (r->type == REDIS_REPLY_NIL)
    return Status::ServerError(who + " does not monitor " + config.master_name);
  std::optional<int> port;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
    port = ParseInt<int>(std::string_view(r->element[1]->str, r->element[1]->len));
  }
  if (!port || *port < 1 || *port > 65535 || r->element[0]->len == 0) {
    return Status::DataError(who + ": unexpected reply to SENTINEL get-master-addr-by-name");
  }
  return Endpoint{Text(*r->element[0]), *port};
}

// Logs the master found for `name` when it is not the one found last in this process: the
// publisher and the router feedback reader both discover it, and one line per change is enough.
void NoteMaster(const std::string& name, const std::string& master, const std::string& sentinel) {
  static std::mutex mu;
  static std::map<std::string, std::string> last;  // GUARDED_BY(mu): master name -> host:port
  std::lock_guard lock(mu);
  std::string& previous = last[name];
  if (previous == master) return;
  Log(LogLevel::kInfo, "Redis master for " + name + " is " + (previous.empty() ? "" : "now ") +
                           master + " (via sentinel " + sentinel + ")" +
                           (previous.empty() ? "" : ", was " + previous));
  previous = master;
}

Result<Context> DiscoverMaster(const RedisConfig& config, Millis timeout) {
  std::string tried;                 // why each sentinel led to no master, for the error
  std::set<std::string> not_master;  // named by an earlier sentinel, and no good
  for (const Endpoint& sentinel : config.sentinels) {
    std::string why;
    auto master = AskSentinel(sentinel, config, timeout);
    if (!master.ok()) {
      why = master.status().message();
    } else if (not_master.count(master->Id())) {
      why = "sentinel " + sentinel.Id() + " named " + master->Id() + " too";
    } else {
      auto ctx = OpenServer(*master, config, timeout);
      Status st = ctx.ok() ? RedisCheckMaster(ctx->get()) : ctx.status();
      if (st.ok()) {
        NoteMaster(config.master_name, master->Id(), sentinel.Id());
        return ctx;
      }
      not_master.insert(master->Id());
      why = "sentinel " + sentinel.Id() + " named " + master->Id() + ": " + st.message();
    }
    tried += (tried.empty() ? "" : "; ") + why;
  }
  return Status::Unavailable("no Redis master for " + config.master_name + ": " + tried);
}

}  // namespace

Result<redisContext*> RedisConnect(const RedisConfig& config, Millis timeout) {
  auto ctx = config.sentinels.empty()
                 ? OpenServer(Endpoint{config.host, config.port}, config, timeout)
                 : DiscoverMaster(config, timeout);
  if (!ctx.ok()) return ctx.status();
  return ctx->release();
}

Status RedisAuthenticate(redisContext* ctx, const RedisConfig& config) {
  return Auth(ctx, config.username, config.password, "Redis");
}

Status RedisCheckMaster(redisContext* ctx) {
  const std::string who = "Redis " + RedisServer(ctx);
  RedisReply r = RunCommand(ctx, {"ROLE"});
  if (!r) return Status::Unavailable(who + ": ROLE: " + ctx->errstr);
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError(who + ": ROLE: " + Text(*r));
  if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
      r->element[0]->type != REDIS_REPLY_STRING) {
    return Status::DataError(who + ": unexpected reply to ROLE");
  }
  const std::string role = Text(*r->element[0]);
  if (role == "master") return Status::Ok();
  return Status::ServerError(who + " is a " + role + ", not a master");
}

std::string RedisServer(const redisContext* ctx) {
  return Endpoint{ctx->tcp.host ? ctx->tcp.host : "", ctx->tcp.port}.Id();
}

}  // namespace lagwatch
