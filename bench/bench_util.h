// Small building blocks for the benchmarks: wall-clock time, interruptible pauses, a blocking
// MariaDB client over the admin unix socket, the sandbox's logins, a Redis client, and child
// processes that are always stopped by PID.
//
// Every timestamp in the benchmarks is CLOCK_REALTIME in microseconds (std::chrono::system_clock),
// the clock lagwatch stamps `measured_at_ms` with, so the two are comparable on one host.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json_fwd.hpp>

#include "base/net_stream.h"
#include "base/redis_conn.h"

typedef struct st_mysql MYSQL;

namespace lagwatch::bench {

// Unix time in microseconds, from the system clock.
int64_t NowUs();
// "2026-11-30T02:12:05Z" (UTC).
std::string IsoUtc(int64_t unix_us);
// NowUs() when the program started.
int64_t StartUs();
// "[  12.3s] msg" on stderr: a benchmark's progress, in seconds since StartUs().
void Progress(const std::string& msg);

// The whole of a (small) file; empty if it cannot be read.
std::string ReadFile(const std::string& path);
// `s` without trailing newlines, carriage returns and spaces.
std::string Trim(std::string s);
// How often `needle` occurs in `text` (overlaps counted).
size_t CountSubstr(const std::string& text, const std::string& needle);
// "0.52 0.58 0.59" from /proc/loadavg: other work on the host skews every timing here.
std::string LoadAverage();

// Writes a benchmark's results to `base`.json, and rendered by `markdown` to `base`.md; prints
// them rendered by `text` on stdout, and says where they went.
void WriteResults(const std::string& base, const nlohmann::json& results,
                  const std::function<std::string(const nlohmann::json&)>& markdown,
                  const std::function<std::string(const nlohmann::json&)>& text);

// Set by SIGINT/SIGTERM (see InstallSignalHandlers); everything long-running checks it.
bool Interrupted();

// Thrown by a benchmark's waits once it was interrupted; RunBenchmarkMain turns it into exit 130.
struct InterruptedError : std::runtime_error {
  InterruptedError() : std::runtime_error("interrupted") {}
};

// The body of a benchmark's main(): installs the signal handlers and initialises the MariaDB
// client library around `run`, and turns an interruption (130) or an exception (1) into an exit
// code with a message prefixed by `program`.
int RunBenchmarkMain(const std::string& program, const std::function<int()>& run);
void InstallSignalHandlers();

// The main thread's waits, which have no stop_token to wait on (a signal handler cannot request a
// stop): sleep until `deadline` (or for `d`) in small slices, and throw InterruptedError as soon
// as the process was interrupted. Threads wait with SystemClock::Get().SleepUntil (base/clock.h).
void PauseUntil(std::chrono::steady_clock::time_point deadline);
void Pause(std::chrono::milliseconds d);

// A query result, every value as text (nullopt = SQL NULL).
struct SqlResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
  // The value in the first row under `column`; nullopt if absent or NULL.
  std::optional<std::string> Get(const std::string& column) const;
  // The first column of the first row; nullopt if absent or NULL.
  std::optional<std::string> First() const;
};

// One blocking connection as root over a unix socket (unix_socket auth), autocommit.
// Not thread-safe: one per thread.
class Sql {
 public:
  // As root over the server's unix socket (the sandbox's root logs in by unix_socket).
  explicit Sql(std::string socket, unsigned timeout_s = 10);
  // As `user` over TCP to host:port (e.g. through a load balancer).
  struct Tcp {
    std::string host;
    int port = 0;
    std::string user;
    std::string password;
  };
  explicit Sql(Tcp tcp, unsigned timeout_s = 10);
  ~Sql();
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  // Connects if not connected. Returns false (see error()) on failure.
  bool Connect();
  // Runs `sql`; on failure drops the connection (the next call reconnects) and returns nullopt.
  std::optional<SqlResult> Query(const std::string& sql);
  // Runs `sql`, discarding any result.
  bool Exec(const std::string& sql) { return Query(sql).has_value(); }
  uint64_t last_insert_id() const { return last_insert_id_; }
  const std::string& error() const { return error_; }
  // The MariaDB error number of the last failure (e.g. 1290 read-only, 2002 cannot connect).
  unsigned error_number() const { return errno_; }

 private:
  void Disconnect();

  std::string socket_;
  std::optional<Tcp> tcp_;
  unsigned timeout_s_;
  MYSQL* conn_ = nullptr;
  uint64_t last_insert_id_ = 0;
  std::string error_;
  unsigned errno_ = 0;
};

// Runs one statement on a fresh admin connection; throws std::runtime_error on failure.
SqlResult AdminQuery(const std::string& socket, const std::string& sql);

// What scripts/sandbox wrote into DIR/env (VAR=value lines): ports, the Redis users' password
// files, and whether (and with which files) it was built with --tls.
class SandboxEnv {
 public:
  // Reads DIR/env; throws std::runtime_error when there is none (no sandbox in `dir`).
  explicit SandboxEnv(std::string dir);
  const std::string& dir() const { return dir_; }
  // The value of VAR; throws naming DIR/env when it has no such line (a sandbox made by an older
  // scripts/sandbox: run it down and up again).
  std::string Get(const std::string& var) const;
  // Built with --tls (TLS=1): MySQL refuses plaintext TCP (require_secure_transport) and Redis
  // listens on a TLS port only, client certificate required.
  bool Tls() const;
  // TLS as a client of the sandbox's servers: its CA, the client certificate and key, the
  // server's certificate verified (chain and name); enabled false without --tls.
  TlsOptions ClientTls() const;

 private:
  std::string dir_;
  std::string text_;
};

// Who a benchmark's Redis client logs in as (scripts/sandbox's ACL users).
enum class RedisUser {
  // `default`, the sandbox's admin (REDIS_ADMIN_PASSWORD_FILE): the judge's and measurement
  // clients, which read whatever they check and ask INFO.
  kAdmin,
  // REDIS_ROUTER_USER (REDIS_ROUTER_PASSWORD_FILE): a router's view, read the contract and count
  // reads, nothing more; for what emulates a router.
  kRouter,
};

// The sandbox's Redis login: 127.0.0.1:REDIS_PORT as `who`, password read from its file, TLS
// with ClientTls() when the sandbox was built with --tls; key_prefix slave_delay and ttl_ms 1000,
// the sandbox config's. Throws std::runtime_error when DIR/env or a password file is missing.
RedisConfig SandboxRedis(const SandboxEnv& env, RedisUser who);
RedisConfig SandboxRedis(const std::string& dir, RedisUser who);

// A synchronous Redis client over lagwatch's own connection (base/redis_conn.h), logged in as
// `config` says (SandboxRedis); connects on first use and again after any failure. Not
// thread-safe.
class Redis {
 public:
  explicit Redis(RedisConfig config);
  ~Redis();
  Redis(const Redis&) = delete;
  Redis& operator=(const Redis&) = delete;

  // HGETALL of each key in one pipelined round trip. An empty map is a missing key. Returns
  // nullopt on a connection error or an error reply (NOAUTH, NOPERM: see last_error()), and
  // reconnects on the next call.
  std::optional<std::vector<std::map<std::string, std::string>>> HGetAll(
      const std::vector<std::string>& keys);
  // `INFO section` as "field:value" lines; nullopt on a failure (see last_error()).
  std::optional<std::string> Info(const std::string& section);
  // Why the last call that failed did (a connect refused, AUTH or a command refused); empty if
  // none has.
  const std::string& last_error() const { return last_error_; }

 private:
  bool Connect();
  void Fail(std::string why);
  RedisConfig config_;
  std::unique_ptr<RedisConnection> conn_;
  std::string last_error_;
};

// The answer to an HTTP GET.
struct HttpResult {
  int status = 0;  // 0: no HTTP answer (see error)
  std::string body;
  int64_t sent_us = 0;     // NowUs() just before the request was written
  double duration_ms = 0;  // connect to the end of the body
  std::string error;
};

// GET `path` from 127.0.0.1:port as HTTP/1.0 (the server closes when done), reading the whole
// body; gives up after `timeout`. Any fault shows as status 0 with `error` set.
HttpResult HttpGet(int port, const std::string& path, std::chrono::milliseconds timeout);

// A child process started by this program, stopped by its PID on Stop() or destruction.
// Children get their own process group (a terminal's Ctrl-C reaches only us; we stop them) and
// die with us if we are killed (PR_SET_PDEATHSIG). Start children from the main thread only:
// the death signal follows the thread that forked.
class Child {
 public:
  // Runs argv[0] (a path or a name looked up in PATH) with stdout and stderr appended to
  // `log_path`. Throws std::runtime_error if fork fails.
  static std::unique_ptr<Child> Spawn(const std::vector<std::string>& argv,
                                      const std::string& log_path);
  // Runs argv on a new pseudo-terminal, so the child's stdio is line-buffered; read its output
  // from pty_fd() (non-blocking).
  static std::unique_ptr<Child> SpawnOnPty(const std::vector<std::string>& argv);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int pty_fd() const { return pty_fd_; }
  const std::string& name() const { return name_; }
  // True while the child has not exited (reaps it if it has).
  bool Running();
  // SIGTERM, wait up to `grace`, then SIGKILL; reaps. Returns the exit code (128+signal if
  // killed), or -1 if already reaped. Idempotent.
  int Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // SIGKILL at once (a crash, `kill -9`), and reaps: Stop() with no grace.
  int Kill() { return Stop(std::chrono::milliseconds(0)); }
  // Waits for the child to exit by itself (up to `timeout`); returns the exit code or nullopt.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

 private:
  Child(pid_t pid, int pty_fd, std::string name)
      : pid_(pid), pty_fd_(pty_fd), name_(std::move(name)) {}
  bool Reap(bool block);

  pid_t pid_ = -1;
  int pty_fd_ = -1;
  std::string name_;
  std::optional<int> exit_code_;
};

// The PID in a sandbox server's pid file (scripts/sandbox: DIR/NAME/mysqld.pid, DIR/redis/
// redis.pid), checked to be the server the sandbox started there (its working directory is its
// datadir, as scripts/sandbox checks too) before anyone signals it; throws if there is none.
pid_t SandboxServerPid(const std::string& dir, const std::string& name);

// SIGSTOPs a process for the lifetime of this object and SIGCONTs it on every way out (an
// exception, an interrupt). The constructor returns once every thread of the process is stopped
// (/proc/PID/task/*/stat), so the process does nothing after stopped_us(); it throws (after a
// SIGCONT) if that takes over 2 s. Should the program die without unwinding, the benches' exit
// traps run `scripts/sandbox down`, which sends SIGCONT with its SIGTERM.
class Frozen {
 public:
  explicit Frozen(pid_t pid);
  ~Frozen();
  Frozen(const Frozen&) = delete;
  Frozen& operator=(const Frozen&) = delete;
  // NowUs() once every thread was seen stopped.
  int64_t stopped_us() const { return stopped_us_; }

 private:
  pid_t pid_;
  int64_t stopped_us_ = 0;
};

// Runs argv to completion (stdout+stderr captured), for short helper commands.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult RunCommand(const std::vector<std::string>& argv);
// The first line a tool prints for `argv` (e.g. {"sysbench", "--version"}), or
// "unknown (that line)" when it fails.
std::string CommandVersion(const std::vector<std::string>& argv);

}  // namespace lagwatch::bench
