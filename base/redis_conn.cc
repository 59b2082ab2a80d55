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

// A connection to `sentinel`, logged in.
Result<Context> OpenSentinel(const Endpoint& sentinel, const RedisConfig& config, Millis timeout) {
  const std::string who = "sentinel " + sentinel.Id();
  auto ctx = Open(sentinel, timeout, who);
  if (!ctx.ok()) return ctx;
  if (Status st = Auth(ctx->get(), "", config.sentinel_password, who); !st.ok()) return st;
  return ctx;
}

// A "host:port" pair of a reply's strings as an endpoint; nullopt when it is not one.
std::optional<Endpoint> AddressOf(const redisReply* host, const redisReply* port) {
  if (!host || !port || host->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_STRING ||
      host->len == 0) {
    return std::nullopt;
  }
  auto p = ParseInt<int>(std::string_view(port->str, port->len));
  if (!p || *p < 1 || *p > 65535) return std::nullopt;
  return Endpoint{Text(*host), *p};
}

// The master's address as the sentinel on `ctx` (`who`) knows it, or why it gave none.
Result<Endpoint> NamedMaster(redisContext* ctx, const std::string& who, const RedisConfig& config) {
  RedisReply r = RunCommand(ctx, {"SENTINEL", "get-master-addr-by-name", config.master_name});
  if (!r) return Status::Unavailable(who + ": " + ctx->errstr);
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError(who + ": " + Text(*r));
  if (r->type == REDIS_REPLY_NIL)
    return Status::ServerError(who + " does not monitor " + config.master_name);
  std::optional<Endpoint> master;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
    master = AddressOf(r->element[0], r->element[1]);
  }
  if (!master) {
    return Status::DataError(who + ": unexpected reply to SENTINEL get-master-addr-by-name");
  }
  return *master;
}

// The master's replicas as the sentinel on `ctx` lists them (SENTINEL REPLICAS: per replica a
// flat list of fields, "ip" and "port" among them); empty on any error or odd reply.
std::vector<Endpoint> ListedReplicas(redisContext* ctx, const RedisConfig& config) {
  std::vector<Endpoint> out;
  RedisReply r = RunCommand(ctx, {"SENTINEL", "REPLICAS", config.master_name});
  if (!r || r->type != REDIS_REPLY_ARRAY) return out;
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* fields = r->element[i];
    if (fields->type != REDIS_REPLY_ARRAY) continue;
    const redisReply *ip = nullptr, *port = nullptr;
    for (size_t k = 0; k + 1 < fields->elements; k += 2) {
      const redisReply* name = fields->element[k];
      if (name->type != REDIS_REPLY_STRING) continue;
      const std::string_view n(name->str, name->len);
      if (n == "ip") ip = fields->element[k + 1];
      if (n == "port") port = fields->element[k + 1];
    }
    if (auto a = AddressOf(ip, port)) out.push_back(*a);
  }
  return out;
}

// Logs the master found for `name` when it is not the one found last in this process: the
// publisher and the router feedback reader both discover it, and one line per change is enough.
void NoteMaster(const std::string& name, const std::string& master, const std::string& via) {
  static std::mutex mu;
  static std::map<std::string, std::string> last;  // GUARDED_BY(mu): master name -> host:port
  std::lock_guard lock(mu);
  std::string& previous = last[name];
  if (previous == master) return;
  Log(LogLevel::kInfo, "Redis master for " + name + " is " + (previous.empty() ? "" : "now ") +
                           master + " (via " + via + ")" +
                           (previous.empty() ? "" : ", was " + previous));
  previous = master;
}

Result<Context> DiscoverMaster(const RedisConfig& config, Millis timeout) {
  std::string tried;                 // why each sentinel led to no master, for the error
  std::set<std::string> not_master;  // tried, and no good
  // A server kept only if it answers as a master.
  auto master_at = [&](const Endpoint& server) -> Result<Context> {
    auto ctx = OpenServer(server, config, timeout);
    Status st = ctx.ok() ? RedisCheckMaster(ctx->get()) : ctx.status();
    if (st.ok()) return ctx;
    not_master.insert(server.Id());
    return st;
  };
  std::vector<std::pair<Endpoint, Context>> answered;  // the sentinels that answered
  for (const Endpoint& sentinel : config.sentinels) {
    const std::string who = "sentinel " + sentinel.Id();
    std::string why;
    auto session = OpenSentinel(sentinel, config, timeout);
    auto master = session.ok() ? NamedMaster(session->get(), who, config)
                               : Result<Endpoint>(session.status());
    if (!master.ok()) {
      why = master.status().message();
    } else if (not_master.count(master->Id())) {
      why = who + " named " + master->Id() + " too";
    } else if (auto ctx = master_at(*master); ctx.ok()) {
      NoteMaster(config.master_name, master->Id(), who);
      return ctx;
    } else {
      why = who + " named " + master->Id() + ": " + ctx.status().message();
    }
    if (session.ok()) answered.emplace_back(sentinel, std::move(session).value());
    tried += (tried.empty() ? "" : "; ") + why;
  }
  // Right after a failover the sentinels still name the old master for about a second: they name
  // the new one only once they have seen it promoted. A replica they list that already answers as
  // a master is that new one.
  for (auto& [sentinel, session] : answered) {
    for (const Endpoint& replica : ListedReplicas(session.get(), config)) {
      if (not_master.count(replica.Id())) continue;
      if (auto ctx = master_at(replica); ctx.ok()) {
        NoteMaster(config.master_name, replica.Id(),
                   "sentinel " + sentinel.Id() + "'s replicas: promoted, not yet named");
        return ctx;
      }
    }
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
