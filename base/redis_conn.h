// One way to open a Redis connection for every part of lagwatch that talks to Redis (the
// publisher, the router feedback reader, `lagwatch check`, the routers' client library): connect
// with a deadline, over TLS when configured, and AUTH from the configured password file; with
// Redis Sentinel, find the master first (over TLS too, with its own user).
//
// The bytes go over base/net_stream.h (plain or TLS); hiredis only formats commands and parses
// replies (redisFormatCommandArgv, redisReader): Debian 12's hiredis 0.14 has no TLS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/endpoint.h"
#include "base/net_stream.h"
#include "base/redis_pipeline.h"
#include "base/status.h"

struct redisReader;

namespace lagwatch {

// Where Redis is and how to log in (the `redis` section of the configuration).
struct RedisConfig {
  // One Redis server; unused when `sentinels` is set.
  std::string host = "127.0.0.1";
  int port = 6379;
  // Redis Sentinel: when non-empty, every connect asks these sentinels, in order, for the master
  // named `master_name` (RedisConnect). sentinel_password (the first line of
  // sentinel_password_file, read when the configuration is loaded) is sent to each sentinel as
  // AUTH, as sentinel_username when set (a Sentinel ACL user); empty: no AUTH.
  std::vector<Endpoint> sentinels;
  std::string master_name;
  // Redis Cluster: when non-empty, the contract's keys live on a cluster and these are its seed
  // nodes (base/redis_cluster.h); `host`, `port` and `sentinels` are then unused.
  std::vector<Endpoint> cluster;
  std::string sentinel_username;
  std::string sentinel_password_file;
  std::string sentinel_password;
  // The publisher's key prefix and key expiry (docs/redis.md).
  std::string key_prefix = "slave_delay";
  int ttl_ms = 1000;
  // AUTH on the Redis server (the master): the password is the first line of password_file
  // (read when the configuration is loaded); username only for Redis 6 ACLs. Empty: no AUTH.
  std::string username;
  std::string password_file;
  std::string password;
  // TLS to the Redis servers and to the sentinels alike (redis.tls): when enabled, every
  // connection is TLS and the server's certificate is checked (tls.server_name, else the address
  // connected to); never a fallback to plaintext. `required` does not apply.
  TlsOptions tls;

  bool operator==(const RedisConfig&) const = default;
};

// One connection to a Redis server or sentinel, opened by RedisConnect: commands are queued, then
// their replies read in order (pipelining); every read waits at most the connect's `timeout`.
// After any failure (error() not ok) the connection is of no further use: drop it and connect
// again. Thread-compatible: a connection belongs to one thread.
class RedisConnection {
 public:
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Queues the command `args` (binary-safe); nothing is sent until a reply is read.
  void Append(const std::vector<std::string>& args);
  // The next reply (sending what is queued first), or null when the connection failed: error()
  // says why. A reply that is an error (REDIS_REPLY_ERROR) is a reply, not a failure.
  RedisReply Next();
  // One command and its reply (Append, then Next).
  RedisReply Run(const std::vector<std::string>& args);
  // For a subscriber: sends what is queued, then the next message if one arrives within `wait`;
  // null with error() ok when none did, null with error() set when the connection failed.
  RedisReply Poll(Millis wait);

  // Why the connection failed: Unavailable (closed, reset), DeadlineExceeded (no reply within the
  // timeout), DataError (not Redis's protocol), or Tls (plaintext_refused: a plaintext
  // connection closed before its first reply, as a TLS-only port does; client_cert: a TLS one
  // closed before its first reply, as a server does that wants a client certificate; or any
  // other TLS failure). Ok while it works.
  const Status& error() const { return error_; }
  // "host:port" of the server.
  const std::string& server() const { return server_; }
  // The TLS session (tls false: plaintext).
  const TlsPeer& tls() const { return stream_->peer(); }

  // Opens a connection to `server` (TLS when `tls.enabled`); `timeout` bounds the connect and
  // the handshake, and every later read. `who` names the server in errors ("Redis 10.0.0.5:6379").
  static Result<std::unique_ptr<RedisConnection>> Open(const Endpoint& server,
                                                       const TlsOptions& tls, Millis timeout,
                                                       const std::string& who);

 private:
  RedisConnection(std::unique_ptr<NetStream> stream, Millis timeout, std::string who);
  // Sends the queued commands; false (error_ set) when it could not.
  bool Flush(MonoTime deadline);
  // Reads once from the stream into the reader; false (error_ set) on failure or EOF.
  bool Fill(MonoTime deadline);
  // A parsed reply if the reader has one; null otherwise (error_ set on a protocol error).
  RedisReply Parsed();
  void Fail(Status why);
  // A connection that fails (Unavailable: reset, closed) before its first reply was refused:
  // PlaintextRefused or ClientCertRefused; `st` as it is otherwise.
  Status Refused(Status st) const;
  Status PlaintextRefused(const std::string& how) const;
  Status ClientCertRefused(const std::string& how) const;
  // Whether `server` answers PING in plaintext (after a TLS handshake timed out there).
  static bool AnswersPlaintext(const Endpoint& server, Millis timeout);

  std::unique_ptr<NetStream> stream_;
  redisReader* reader_;
  const Millis timeout_;
  const std::string who_;
  const std::string server_;
  std::string out_;       // queued commands, not yet sent
  bool replied_ = false;  // a reply has come: an EOF now is not the plaintext_refused sign
  Status error_;
};

// Opens a connection to Redis, makes `timeout` the deadline of every later command on it, and
// sends AUTH when the configuration has a password (PING otherwise: one round trip either way).
//
// Without sentinels, to config.host:port. With sentinels, to the master they name: each sentinel
// in turn is asked `SENTINEL get-master-addr-by-name`, and the connection to the address it
// names is kept only if `ROLE` says master there (right after a failover a sentinel may still
// name the old master, dead or demoted); otherwise the next sentinel is asked. If none named a
// master that answers as one, the replicas each sentinel lists (`SENTINEL REPLICAS`) are asked
// for their ROLE: for about a second after promoting a replica the sentinels still name the old
// master, and the promoted one already answers as a master. Every connect and command has the
// deadline `timeout`. The master found is logged when it differs from the one found last for that
// name in this process ("Redis master for NAME is now HOST:PORT (via sentinel HOST:PORT)").
//
// Unavailable: refused, timed out, AUTH rejected, or no sentinel named a master that answered as
// one; Tls: the TLS handshake failed or the server refused plaintext (the message names the
// reason, e.g. "unknown_ca"). The message names each server tried and carries Redis's replies
// (e.g. WRONGPASS), never a password.
Result<std::unique_ptr<RedisConnection>> RedisConnect(const RedisConfig& config, Millis timeout);

// Opens a connection to the one server `server` as RedisConnect does (TLS, AUTH, deadlines),
// whatever `config` says of sentinels or clusters: for a Redis Cluster's nodes.
Result<std::unique_ptr<RedisConnection>> RedisConnectTo(const Endpoint& server,
                                                        const RedisConfig& config, Millis timeout);

// Asks the server of `conn` for its ROLE. Ok when it is a master; ServerError naming the role it
// has instead (e.g. "slave": a demoted master); Unavailable when the connection failed (it is of
// no further use); DataError for a reply that is no ROLE reply.
Status RedisCheckMaster(RedisConnection& conn);

}  // namespace lagwatch
