#include "base/redis_conn.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <poll.h>

#include <hiredis/hiredis.h>
#include <openssl/crypto.h>

#include "base/log.h"
#include "base/redis_pipeline.h"
#include "base/strings.h"

namespace lagwatch {

RedisConnection::RedisConnection(std::unique_ptr<NetStream> stream, Millis timeout, std::string who)
    : stream_(std::move(stream)),
      reader_(redisReaderCreate()),
      timeout_(timeout),
      who_(std::move(who)),
      server_(stream_->address()) {}

RedisConnection::~RedisConnection() { redisReaderFree(reader_); }

Result<std::unique_ptr<RedisConnection>> RedisConnection::Open(const Endpoint& server,
                                                               const TlsOptions& tls,
                                                               Millis timeout,
                                                               const std::string& who) {
  // The steady clock directly: I/O deadlines bound real poll(2) waits (base/net_stream.h).
  const MonoTime deadline = std::chrono::steady_clock::now() + timeout;
  auto stream = NetStream::Connect(server.host, server.port, deadline, who);
  if (!stream.ok()) return Status::Unavailable(stream.status().message());
  if (tls.enabled) {
    if (Status st = (*stream)->StartTls(tls, server.host, deadline); !st.ok()) {
      if (st.code() == Status::Code::kTls) return st;
      // A plaintext Redis reads a ClientHello as the start of an inline command and waits for
      // its end: the handshake times out with not a byte back. Whether it is one is asked.
      if (st.code() == Status::Code::kDeadlineExceeded && AnswersPlaintext(server, timeout)) {
        return Status::Tls(
            tls_reason::kNotTls,
            who +
                " answers in plaintext (not_tls): it does not serve TLS on this port "
                "(turn redis.tls off, or use its tls-port)");
      }
      return Status::Unavailable(st.message());
    }
  }
  return std::unique_ptr<RedisConnection>(
      new RedisConnection(std::move(stream).value(), timeout, who));
}

bool RedisConnection::AnswersPlaintext(const Endpoint& server, Millis timeout) {
  auto plain = Open(server, TlsOptions{}, timeout, "Redis " + server.Id());
  if (!plain.ok()) return false;
  RedisReply r = (*plain)->Run({"PING"});
  // +PONG, or an error such as NOAUTH: either way Redis's protocol, in plaintext.
  return r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR);
}

void RedisConnection::Append(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int n =
      redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
  if (n < 0 || !cmd) {
    Fail(Status::Unavailable(who_ + ": out of memory formatting " + (args.empty() ? "" : args[0])));
    return;
  }
  out_.append(cmd, static_cast<size_t>(n));
  redisFreeCommand(cmd);
}

RedisReply RedisConnection::Next() {
  const MonoTime deadline = std::chrono::steady_clock::now() + timeout_;
  if (!Flush(deadline)) return nullptr;
  for (;;) {
    RedisReply r = Parsed();
    if (r || !error_.ok()) return r;
    if (!Fill(deadline)) return nullptr;
  }
}

RedisReply RedisConnection::Run(const std::vector<std::string>& args) {
  Append(args);
  return Next();
}

RedisReply RedisConnection::Poll(Millis wait) {
  const MonoTime now = std::chrono::steady_clock::now();
  if (!Flush(now + timeout_)) return nullptr;
  RedisReply r = Parsed();
  if (r || !error_.ok()) return r;
  if (!stream_->HasBuffered()) {
    Status ready = WaitFd(stream_->fd(), POLLIN, now + wait);
    if (ready.code() == Status::Code::kDeadlineExceeded) return nullptr;
    if (!ready.ok()) {
      Fail(ready);
      return nullptr;
    }
  }
  // Readable: a message, or the part of one (the rest follows within the timeout).
  if (!Fill(now + wait + timeout_)) return nullptr;
  return Parsed();
}

bool RedisConnection::Flush(MonoTime deadline) {
  if (!error_.ok()) return false;
  if (out_.empty()) return true;
  Status st = stream_->WriteAll(out_, deadline);
  out_.clear();
  if (!st.ok()) Fail(Refused(std::move(st)));
  return st.ok();
}

bool RedisConnection::Fill(MonoTime deadline) {
  char buf[16384];
  auto n = stream_->Read(buf, sizeof buf, deadline);
  if (!n.ok()) {
    const Status& st = n.status();
    Fail(st.code() == Status::Code::kDeadlineExceeded
             ? Status::DeadlineExceeded(who_ + ": no reply in time")
             : Refused(st));
    return false;
  }
  if (*n == 0) {
    Fail(Refused(Status::Unavailable(who_ + " closed the connection")));
    return false;
  }
  if (redisReaderFeed(reader_, buf, *n) != REDIS_OK) {
    Fail(Status::DataError(who_ + ": " + reader_->errstr));
    return false;
  }
  return true;
}

RedisReply RedisConnection::Parsed() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
    Fail(Status::DataError(who_ + " sent what is not Redis's protocol: " + reader_->errstr));
    return nullptr;
  }
  if (raw) replied_ = true;
  return RedisReply(static_cast<redisReply*>(raw));
}

void RedisConnection::Fail(Status why) {
  if (error_.ok()) error_ = std::move(why);
}

Status RedisConnection::Refused(Status st) const {
  if (replied_ || st.code() != Status::Code::kUnavailable) return st;
  return stream_->peer().tls ? ClientCertRefused(st.message()) : PlaintextRefused(st.message());
}

Status RedisConnection::PlaintextRefused(const std::string& how) const {
  return Status::Tls(
      tls_reason::kPlaintextRefused,
      who_ + " ended the connection before its first reply (plaintext_refused): " + how +
          "; a TLS-only port refuses plaintext (set redis.tls if it serves TLS)");
}

Status RedisConnection::ClientCertRefused(const std::string& how) const {
  // TLS 1.3 finishes the handshake before the server checks the client's certificate: a server
  // that wants one (tls-auth-clients yes) or refuses it alerts and closes at the first read, and
  // the alert may be lost to the reset.
  return Status::Tls(tls_reason::kClientCert,
                     who_ +
                         " ended the TLS connection before its first reply (client_cert): " + how +
                         "; it wants a client certificate it trusts (redis.tls.cert_file "
                         "and key_file)");
}

namespace {

// A string, status or error reply's text, safe to log (a server's text may hold anything).
std::string SafeText(const redisReply& r) { return EscapeControl(std::string_view(r.str, r.len)); }

// AUTH [username] password, or PING when `password` is empty: either way a first round trip,
// so that a server that refuses the connection (a TLS-only port reached in plaintext) says so
// here. `who` names the server in the error.
Status Auth(RedisConnection& conn, const std::string& username, const std::string& password,
            const std::string& who) {
  if (password.empty()) {
    RedisReply pong = conn.Run({"PING"});
    if (!pong) return conn.error();
    // NOAUTH and the like: a server that wants AUTH, refused here as AUTH would be.
    if (pong->type == REDIS_REPLY_ERROR) {
      return Status::Unavailable(who + " refused PING: " + SafeText(*pong));
    }
    return Status::Ok();
  }
  std::vector<std::string> args = {"AUTH"};
  if (!username.empty()) args.push_back(username);
  args.push_back(password);
  RedisReply reply = conn.Run(args);
  OPENSSL_cleanse(args.back().data(), args.back().size());
  if (!reply) return conn.error();
  if (reply->type != REDIS_REPLY_ERROR) return Status::Ok();
  return Status::Unavailable(who + " refused AUTH" + (username.empty() ? "" : " as " + username) +
                             ": " + SafeText(*reply));
}

using Conn = std::unique_ptr<RedisConnection>;

// A connection to one Redis server, logged in.
Result<Conn> OpenServer(const Endpoint& server, const RedisConfig& config, Millis timeout) {
  const std::string who = "Redis " + server.Id();
  auto conn = RedisConnection::Open(server, config.tls, timeout, who);
  if (!conn.ok()) return conn;
  if (Status st = Auth(**conn, config.username, config.password, who); !st.ok()) return st;
  return conn;
}

// A connection to `sentinel`, logged in.
Result<Conn> OpenSentinel(const Endpoint& sentinel, const RedisConfig& config, Millis timeout) {
  const std::string who = "sentinel " + sentinel.Id();
  auto conn = RedisConnection::Open(sentinel, config.tls, timeout, who);
  if (!conn.ok()) return conn;
  if (Status st = Auth(**conn, config.sentinel_username, config.sentinel_password, who); !st.ok()) {
    return st;
  }
  return conn;
}

// A "host:port" pair of a reply's strings as an endpoint; nullopt when it is not one.
std::optional<Endpoint> AddressOf(const redisReply* host, const redisReply* port) {
  if (!host || !port || host->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_STRING ||
      host->len == 0) {
    return std::nullopt;
  }
  auto p = ParseInt<int>(std::string_view(port->str, port->len));
  if (!p || *p < 1 || *p > 65535) return std::nullopt;
  return Endpoint{SafeText(*host), *p};
}

// The master's address as the sentinel on `conn` (`who`) knows it, or why it gave none.
Result<Endpoint> NamedMaster(RedisConnection& conn, const std::string& who,
                             const RedisConfig& config) {
  RedisReply r = conn.Run({"SENTINEL", "get-master-addr-by-name", config.master_name});
  if (!r) return conn.error();
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError(who + ": " + SafeText(*r));
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

// The master's replicas as the sentinel on `conn` lists them (SENTINEL REPLICAS: per replica a
// flat list of fields, "ip" and "port" among them); empty on any error or odd reply.
std::vector<Endpoint> ListedReplicas(RedisConnection& conn, const RedisConfig& config) {
  std::vector<Endpoint> out;
  RedisReply r = conn.Run({"SENTINEL", "REPLICAS", config.master_name});
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

Result<Conn> DiscoverMaster(const RedisConfig& config, Millis timeout) {
  std::string tried;                 // why each sentinel led to no master, for the error
  const char* tls_reason = nullptr;  // the first TLS failure's reason: TLS is what to fix
  std::set<std::string> not_master;  // tried, and no good
  auto note_tls = [&](const Status& st) {
    if (!tls_reason && st.code() == Status::Code::kTls) tls_reason = st.tls_reason();
  };
  // A server kept only if it answers as a master.
  auto master_at = [&](const Endpoint& server) -> Result<Conn> {
    auto conn = OpenServer(server, config, timeout);
    Status st = conn.ok() ? RedisCheckMaster(**conn) : conn.status();
    if (st.ok()) return conn;
    note_tls(st);
    not_master.insert(server.Id());
    return st;
  };
  std::vector<std::pair<Endpoint, Conn>> answered;  // the sentinels that answered
  for (const Endpoint& sentinel : config.sentinels) {
    const std::string who = "sentinel " + sentinel.Id();
    std::string why;
    auto session = OpenSentinel(sentinel, config, timeout);
    auto master =
        session.ok() ? NamedMaster(**session, who, config) : Result<Endpoint>(session.status());
    if (!master.ok()) {
      why = master.status().message();
      note_tls(master.status());
    } else if (not_master.count(master->Id())) {
      why = who + " named " + master->Id() + " too";
    } else if (auto conn = master_at(*master); conn.ok()) {
      NoteMaster(config.master_name, master->Id(), who);
      return conn;
    } else {
      why = who + " named " + master->Id() + ": " + conn.status().message();
    }
    if (session.ok()) answered.emplace_back(sentinel, std::move(session).value());
    tried += (tried.empty() ? "" : "; ") + why;
  }
  // Right after a failover the sentinels still name the old master for about a second: they name
  // the new one only once they have seen it promoted. A replica they list that already answers as
  // a master is that new one.
  for (auto& [sentinel, session] : answered) {
    for (const Endpoint& replica : ListedReplicas(*session, config)) {
      if (not_master.count(replica.Id())) continue;
      if (auto conn = master_at(replica); conn.ok()) {
        NoteMaster(config.master_name, replica.Id(),
                   "sentinel " + sentinel.Id() + "'s replicas: promoted, not yet named");
        return conn;
      }
    }
  }
  std::string msg = "no Redis master for " + config.master_name + ": " + tried;
  return tls_reason ? Status::Tls(tls_reason, std::move(msg)) : Status::Unavailable(std::move(msg));
}

}  // namespace

Result<std::unique_ptr<RedisConnection>> RedisConnect(const RedisConfig& config, Millis timeout) {
  return config.sentinels.empty() ? OpenServer(Endpoint{config.host, config.port}, config, timeout)
                                  : DiscoverMaster(config, timeout);
}

Result<std::unique_ptr<RedisConnection>> RedisConnectTo(const Endpoint& server,
                                                        const RedisConfig& config, Millis timeout) {
  return OpenServer(server, config, timeout);
}

Status RedisCheckMaster(RedisConnection& conn) {
  const std::string who = "Redis " + conn.server();
  RedisReply r = conn.Run({"ROLE"});
  if (!r) return Status::Unavailable(who + ": ROLE: " + conn.error().message());
  if (r->type == REDIS_REPLY_ERROR) return Status::ServerError(who + ": ROLE: " + SafeText(*r));
  if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
      r->element[0]->type != REDIS_REPLY_STRING) {
    return Status::DataError(who + ": unexpected reply to ROLE");
  }
  const std::string role = SafeText(*r->element[0]);
  if (role == "master") return Status::Ok();
  return Status::ServerError(who + " is a " + role + ", not a master");
}

}  // namespace lagwatch
