// Test harness for integration tests: a sandbox (scripts/sandbox: a MariaDB primary, two GTID
// replicas and Redis on loopback), the lagwatch binary as a child process, and small clients for
// Redis, SQL over the admin socket, and HTTP. Everything it starts it stops by PID.
// Not thread-safe; one test thread.
//
// Sanitizer builds (scripts/sanitize): a sanitizer report (ASan, LSan, UBSan, TSan) in the output
// of a RunCommand child or in an Agent's log once it has stopped is printed to stderr and fails
// the current test; found after the test run (an agent stopped by a static destructor), it makes
// the test binary exit 1.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "base/redis_conn.h"

struct st_mysql;

namespace lagwatch::test {

// The lagwatch binary the tests run: $LAGWATCH_BINARY when set (a sanitizer build runs these
// programs against its own instrumented daemon: scripts/sanitize), else the one built beside them.
const char* LagwatchBinary();

// Runs `argv` and waits; returns the exit code (or 128+signal) and captured stdout+stderr.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult RunCommand(const std::vector<std::string>& argv);

// A sandbox from scripts/sandbox at `dir` with ports from `base_port` (and `options` such as
// "--tls"); `down` on destruction. Its Redis's admin login (the `default` user's password, and
// under --tls the CA and client certificate) is registered for its port, so every Redis and
// Subscriber of this harness on that port logs in as the admin (RedisAdminLogin).
//
// Two test runs on one host (say a sanitizer suite and a normal one) would share the sandbox's
// dir and ports, and the second's start-up `down` would kill the first's servers. So a Sandbox
// holds an exclusive lock on DIR.lock from before that `down` until after its own: a second
// run's Sandbox waits for it (saying so), and fails naming the lock after 15 minutes. The lock
// dies with the process, so a crashed run never blocks the next one.
class Sandbox {
 public:
  Sandbox(std::string dir, int base_port, std::vector<std::string> options = {});
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  const std::string& dir() const { return dir_; }
  int primary_port() const { return base_port_; }
  int replica_port(int i) const { return base_port_ + i; }  // i = 1 or 2
  int redis_port() const { return base_port_ + 3; }
  int http_port() const { return base_port_ + 4; }
  std::string config_path() const { return dir_ + "/lagwatch.json"; }
  std::string socket(const std::string& server) const {
    return dir_ + "/" + server + "/mysqld.sock";
  }
  std::string replica_id(int i) const { return "127.0.0.1:" + std::to_string(replica_port(i)); }
  std::string primary_id() const { return "127.0.0.1:" + std::to_string(primary_port()); }
  // The replica's Redis key under the default prefix.
  std::string replica_key(int i) const { return "slave_delay:" + replica_id(i); }
  // A VAR=value of the sandbox's DIR/env ("" when missing), e.g. "REDIS_ROUTER_PASSWORD_FILE".
  std::string Env(const std::string& var) const;
  // How the sandbox's routers reach its Redis: the lagwatch-router user, TLS as built.
  RedisConfig RouterRedis() const;
  struct RedisLogin RouterLogin() const;
  // Its TLS options for a client (CA and client certificate); enabled false without --tls.
  TlsOptions ClientTls() const;

 private:
  std::string dir_;
  int base_port_;
  int lock_fd_ = -1;
};

// Runs one statement as root over `socket`; fails the test on error. Returns the first column
// of the first row, if any.
std::optional<std::string> AdminQuery(const std::string& socket, const std::string& sql);

// One root session over `socket` kept open (for a lock that lasts as long as the session, e.g.
// FLUSH TABLES WITH READ LOCK); closed on destruction.
class AdminSession {
 public:
  explicit AdminSession(const std::string& socket);
  ~AdminSession();
  AdminSession(const AdminSession&) = delete;
  AdminSession& operator=(const AdminSession&) = delete;
  // Runs one statement; fails the test on error. The first column of the first row, if any.
  std::optional<std::string> Query(const std::string& sql);
  // The same, the whole first row ("" for NULL); empty when there is none.
  std::vector<std::string> QueryRow(const std::string& sql);
  // The first row by column name ("" for NULL); empty when there is none.
  std::map<std::string, std::string> QueryNamed(const std::string& sql);

 private:
  ::st_mysql* mysql_ = nullptr;  // MYSQL
};

// A fourth mariadbd beside a sandbox's three, for tests that need a server the agent does not
// know: its own datadir under DIR/NAME, its own port, `report_host` 127.0.0.1 (so it is listed by
// the primary's SHOW SLAVE HOSTS once it replicates). Started by the constructor (install, start,
// wait until it answers); stopped by PID on destruction, before the sandbox removes DIR.
class ExtraServer {
 public:
  ExtraServer(const Sandbox& sandbox, std::string name, int port, int server_id);
  ~ExtraServer();
  ExtraServer(const ExtraServer&) = delete;
  ExtraServer& operator=(const ExtraServer&) = delete;
  std::string socket() const { return dir_ + "/mysqld.sock"; }
  int port() const { return port_; }
  std::string id() const { return "127.0.0.1:" + std::to_string(port_); }
  // Replicates from the sandbox server at `source_port` by GTID from the start of its binary log,
  // as `user`/`password` (an account the test made there); waits until the IO thread runs.
  void ReplicateFrom(int source_port, const std::string& user, const std::string& password);

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = -1;
};

// A redis-server (or, with `sentinel`, a redis-sentinel on the config file in `args`) of a
// test's own on 127.0.0.1:port: `args` follow the listening ones (e.g. TLS files; the caller
// sets --port/--tls-port itself), run in the foreground as a child with its log in DIR/log.
// Ready once the port accepts TCP connections. Stopped by its PID (SIGTERM, then SIGKILL after
// 10 s) on destruction or Stop().
class RedisServer {
 public:
  RedisServer(std::string dir, int port, std::vector<std::string> args, bool sentinel = false);
  ~RedisServer() { Stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Stop();

 private:
  std::string dir_;
  int port_;
  pid_t pid_ = -1;
};

// A Redis Cluster of three masters and three replicas on 127.0.0.1, ports base_port..base_port+5
// (each node's cluster bus on its port + 40: the default, + 10000, falls in Linux's ephemeral
// port range, where a client connection may already hold it), made with `redis-cli --cluster create
// --cluster-replicas 1`; ready when every node reports cluster_state:ok. `node_timeout_ms` is
// cluster-node-timeout: a killed master's replica takes over within about twice that. The nodes
// run with cluster-require-full-coverage no and cluster-allow-reads-when-down yes (docs/redis.md).
// `args` are added to every node's (e.g. --requirepass); `cli_args` to every redis-cli call (e.g.
// -a).
class RedisCluster3x2 {
 public:
  RedisCluster3x2(std::string dir, int base_port, std::vector<std::string> args = {},
                  std::vector<std::string> cli_args = {}, int node_timeout_ms = 1000);
  std::vector<Endpoint> seeds() const;
  // redis-cli against the node on `port` with `args`; its output.
  std::string Cli(int port, const std::vector<std::string>& args) const;
  // The port of the master that serves `key` now, as CLUSTER SLOTS on `ask_port` says.
  int MasterPortOf(const std::string& key, int ask_port) const;
  // SIGKILLs the node on `port` (it stays down).
  void Kill(int port);
  // Whether every node still running reports cluster_state:ok.
  bool AllOk() const;
  int base_port() const { return base_port_; }

 private:
  std::string dir_;
  int base_port_;
  std::vector<std::string> cli_args_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// Certificates made with the openssl CLI for a test, in `dir` (EC P-256 keys):
//   Ca("ca")                          -> dir/ca.pem (+ ca.key), a self-signed CA
//   Cert("srv", "ca", "IP:127.0.0.1") -> dir/srv.pem (+ srv.key), signed by that CA, valid
//                                        `days` days from now; expired: valid 2020-01-01..02
// Fails the test when openssl does.
class TestPki {
 public:
  explicit TestPki(std::string dir);
  std::string Ca(const std::string& name);
  std::string Cert(const std::string& name, const std::string& ca, const std::string& san,
                   int days = 30, bool expired = false);
  std::string Key(const std::string& name) const { return dir_ + "/" + name + ".key"; }
  std::string Pem(const std::string& name) const { return dir_ + "/" + name + ".pem"; }

 private:
  std::string dir_;
};

// The lagwatch daemon as a child process, stderr captured to `log_path`.
class Agent {
 public:
  // `env`: extra "NAME=value" entries for the child's environment.
  Agent(const std::string& config_path, std::string log_path, std::vector<std::string> env = {});
  ~Agent();  // SIGTERM, then waits
  pid_t pid() const { return pid_; }
  // Stops with SIGTERM; returns the exit status.
  int Stop();
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// How the harness's Redis clients log in to the Redis on a port: user (empty: default),
// password, TLS. Sandboxes register theirs; an unregistered port gets no AUTH and plaintext.
struct RedisLogin {
  std::string user;
  std::string password;
  TlsOptions tls;
};
void RegisterRedisAdminLogin(int port, RedisLogin login);
RedisLogin RedisAdminLogin(int port);

// redis-cli on 127.0.0.1:port as `login` (TLS flags when it has TLS; the password through the
// environment, never argv); its exit code and output.
RunResult RedisCli(int port, const RedisLogin& login, const std::vector<std::string>& args);

// A client of the Redis on 127.0.0.1:port, over lagwatch's own connection (base/redis_conn.h),
// logged in as `login` (the port's admin login by default). Fails the test when it cannot.
class Redis {
 public:
  explicit Redis(int port);
  Redis(int port, const RedisLogin& login);
  ~Redis();
  std::map<std::string, std::string> HGetAll(const std::string& key);
  long long PTtl(const std::string& key);
  std::vector<std::string> SMembers(const std::string& key);
  // Any command; the reply as text (a string, status or error's text, an integer in decimal,
  // "(nil)", or an array's elements joined by newlines).
  std::string Command(const std::vector<std::string>& args);

 private:
  std::unique_ptr<RedisConnection> conn_;
};

// A subscriber to one channel on its own connection, collecting messages from a background
// thread until destroyed.
class Subscriber {
 public:
  Subscriber(int port, const std::string& channel);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;
  // The messages so far, parsed as JSON (lagwatch's events).
  std::vector<nlohmann::json> Events();

 private:
  std::unique_ptr<RedisConnection> conn_;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::vector<std::string> messages_;
  std::thread thread_;
};

// Whether replica `i`'s Redis record says `state` and `healthy` ("1"/"0").
bool ReplicaIs(Redis& redis, const Sandbox& sandbox, int i, const std::string& state,
               const std::string& healthy);
// Both sandbox replicas are ok and healthy in Redis.
bool BothReplicasOk(Redis& redis, const Sandbox& sandbox);
// Whether a replica's record says `state` and `healthy` ("1"/"0").
bool RecordIs(const std::map<std::string, std::string>& record, const std::string& state,
              const std::string& healthy);
// A record's verdict as a failed check prints it: "state=ok healthy=1 delay_ms=12".
std::string RecordVerdict(const std::map<std::string, std::string>& record);
// What both replicas' records say ("replica1 state=ok healthy=1 delay_ms=12; replica2 ..."), for
// a failed check's message.
std::string ReplicaStates(Redis& redis, const Sandbox& sandbox);
// Waits up to `within` for both replicas to be ok and healthy. For checks after a disturbance
// that should leave them healthy: on a host busy with other suites, a replica's apply or a probe
// can run late enough to make one sample lag at zero lag, so a single sample is not the verdict.
bool BothReplicasSettleOk(Redis& redis, const Sandbox& sandbox,
                          std::chrono::milliseconds within = std::chrono::seconds(5));

// GET http://127.0.0.1:port/path; returns the status code and body (code 0 on connect failure).
std::pair<int, std::string> HttpGet(int port, const std::string& path);

// A time bound of a check on the daemon's timing (a widest delay, a longest gap), in ms,
// multiplied by LAGWATCH_TEST_TIME_SCALE (default 1). scripts/sanitize sets it: the sanitized
// daemon is unoptimized and instrumented, several times slower, and shares two cores with the
// other suites. The timing promises are the normal suite's to check; the sanitizer suites check
// that the same code runs without a report, and still fail a bound stretched that far.
int64_t TimeBoundMs(int64_t ms);

// The wall clock now, in unix ms: the clock of a record's measured_at_ms.
int64_t WallMs();

// Polls `cond` every 20 ms until it holds or `timeout` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

std::string WriteTempFile(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace lagwatch::test

namespace lagwatch::test {
// The value of the first sample in a Prometheus text exposition of the metric named by `series`
// that carries every label `series` gives (`name` or `name{a="x",b="y"}`; the sample may have
// more labels, in any order: the agent's `cluster` label among them), or nullopt.
std::optional<double> MetricValue(const std::string& exposition, const std::string& series);
}  // namespace lagwatch::test

namespace lagwatch::test {
// The PID in a pid file, or 0.
pid_t ReadPidFile(const std::string& path);
// Restarts whatever of the sandbox is down (scripts/sandbox up); fails the test on error.
void SandboxUp(const Sandbox& sandbox);
}  // namespace lagwatch::test
