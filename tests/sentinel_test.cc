// Redis Sentinel (issue 16, part 4), for real: a Redis master and replica and three
// redis-sentinel processes on loopback, and the agent given the sentinels and the master's name.
// The agent finds the master, follows a failover when the master dies, does not go back to the
// old master when it returns as a replica, and leaves a master demoted under it (writes refused
// READONLY; the router feedback reader only reads, so it checks ROLE).
//
// The agent's sentinel list also holds an address where nothing listens and a stale sentinel (a
// stand-in in this process that names whatever old master the test sets, as a sentinel that has
// not yet heard of a failover does): discovery must pass over both.
//
// Everything here is started by this test and stopped by the PID in its pid file. The servers'
// data is not saved: a restarted server starts empty.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

// The sandbox takes 28206..28210 (MariaDB primary, replicas, its own Redis, lagwatch's HTTP).
constexpr int kBasePort = 28206;
constexpr int kMaster = 28211;   // the first master, "A"
constexpr int kReplica = 28212;  // its replica, "B"
constexpr int kSentinels[] = {28213, 28214, 28215};
constexpr int kNobody = 28216;  // in the agent's sentinel list; nothing listens there
constexpr int kStale = 28217;   // the stale sentinel
constexpr int kWrongPasswordHttp = 28218;
constexpr int kPromotedHttp = 28219;
const std::string kDir = "/tmp/lw-sn-redis";  // the Redis servers' and sentinels' own dirs
const std::string kName = "lw";               // the master's name at the sentinels
const std::string kSentinelPassword = "sn-Pw-7f3kQ9zx";
const std::string kReadsSeries = "lagwatch_router_reads_total{app=\"sn\",target=\"replica\"}";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
long Ms(Steady::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}
std::string Address(int port) { return "127.0.0.1:" + std::to_string(port); }

// ---- A Redis client: one command per connection --------------------------------------------
// (Sentinel closes every client connection of a server it promotes or demotes, so a long-lived
// test connection would not survive the failovers this test makes.)

// The reply to `args` from 127.0.0.1:port on a fresh connection (AUTH first with `password`
// when given), as strings: a string, status or integer reply is one item, a list its items (a
// nested list's items joined with spaces), nil none. nullopt when the server cannot be reached,
// the connection fails, or the reply is an error (then in *error, when given).
std::optional<std::vector<std::string>> Ask(int port, const std::vector<std::string>& args,
                                            const std::string& password = "",
                                            std::string* error = nullptr) {
  const timeval tv{1, 0};
  std::unique_ptr<redisContext, decltype(&redisFree)> c(
      redisConnectWithTimeout("127.0.0.1", port, tv), &redisFree);
  if (!c || c->err) return std::nullopt;
  redisSetTimeout(c.get(), tv);
  auto send = [&](const std::vector<std::string>& cmd) -> std::optional<std::vector<std::string>> {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(
        static_cast<redisReply*>(
            redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())),
        &freeReplyObject);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      if (error) *error = r ? r->str : c->errstr;
      return std::nullopt;
    }
    auto text = [](const redisReply* e) {
      if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
      if (e->type == REDIS_REPLY_ARRAY) {
        std::string joined;
        for (size_t i = 0; i < e->elements; ++i) {
          if (e->element[i]->str) joined += std::string(i ? " " : "") + e->element[i]->str;
        }
        return joined;
      }
      return e->str ? std::string(e->str, e->len) : std::string();
    };
    std::vector<std::string> out;
    if (r->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < r->elements; ++i) out.push_back(text(r->element[i]));
    } else if (r->type != REDIS_REPLY_NIL) {
      out.push_back(text(r.get()));
    }
    return out;
  };
  if (!password.empty() && !send({"AUTH", password})) return std::nullopt;
  return send(args);
}

// Ask, failing the test unless the server answered, and not with an error.
std::vector<std::string> Must(int port, const std::vector<std::string>& args,
                              const std::string& password = "") {
  std::string error = "unreachable";
  auto r = Ask(port, args, password, &error);
  REQUIRE_MESSAGE(r.has_value(), Address(port) << " to " << args.front() << ": " << error);
  return *r;
}

// A reply of key/value pairs as a map.
std::map<std::string, std::string> Pairs(const std::vector<std::string>& flat) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

// The first item of the server's ROLE reply ("master", "slave"), or "" when it is unreachable.
std::string RoleOf(int port) {
  auto r = Ask(port, {"ROLE"});
  return r && !r->empty() ? r->front() : "";
}

// ---- The Redis servers and sentinels -------------------------------------------------------

std::string DirOf(int port) { return kDir + "/" + std::to_string(port); }

// Whether `pid` has exited; a zombie counts (a daemon's parent is gone and may not reap it).
bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z';
}

// Sends `sig` to the daemon whose pid file is in DirOf(port), if that PID still runs from that
// dir (its cwd: an old pid file can name a reused PID), and waits up to 10 s for it to exit.
// True when it is gone (or was never there). No doctest macros: also used from destructors.
bool Stop(int port, int sig) {
  const pid_t pid = ReadPidFile(DirOf(port) + "/pid");
  if (pid <= 0 || Gone(pid)) return true;
  std::error_code ec;
  if (std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec) != DirOf(port)) {
    return true;
  }
  kill(pid, sig);
  return WaitFor([&] { return Gone(pid); }, 10s);
}

void StopForGood(int port) {
  if (!Stop(port, SIGTERM)) Stop(port, SIGKILL);
}

// Runs a daemon (it forks into the background) and waits until it answers PING.
void Launch(int port, const std::vector<std::string>& argv, const std::string& password = "") {
  RunResult r = RunCommand(argv);
  REQUIRE_MESSAGE(r.exit_code == 0, argv.front() << " for port " << port << ": " << r.output);
  REQUIRE_MESSAGE(
      WaitFor([&] { return Ask(port, {"PING"}, password).has_value(); }, 10s),
      argv.front() << " on " << Address(port) << " does not answer; see " << DirOf(port) << "/log");
}

// A redis-server on `port`, a replica of `master_port` when given, its data never saved.
void StartServer(int port, std::optional<int> master_port = std::nullopt) {
  const std::string dir = DirOf(port);
  std::filesystem::create_directories(dir);
  std::vector<std::string> argv = {"/usr/bin/redis-server",
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "yes",
                                   "--pidfile",
                                   dir + "/pid",
                                   "--logfile",
                                   dir + "/log",
                                   "--dir",
                                   dir};
  if (master_port) {
    argv.insert(argv.end(), {"--replicaof", "127.0.0.1", std::to_string(*master_port)});
  }
  Launch(port, argv);
}

// A redis-sentinel on `port` monitoring kName at kMaster with quorum 2, quick to act: the master
// is down after 500 ms without an answer. Its config file is in its dir (sentinel rewrites it).
void StartSentinel(int port) {
  const std::string dir = DirOf(port);
  std::filesystem::create_directories(dir);
  const std::string conf = dir + "/sentinel.conf";
  std::ofstream(conf) << "port " << port << "\nbind 127.0.0.1\ndaemonize yes\n"
                      << "pidfile " << dir << "/pid\nlogfile " << dir << "/log\ndir " << dir
                      << "\nrequirepass " << kSentinelPassword << "\nsentinel sentinel-pass "
                      << kSentinelPassword << "\nsentinel monitor " << kName << " 127.0.0.1 "
                      << kMaster << " 2\nsentinel down-after-milliseconds " << kName
                      << " 500\nsentinel failover-timeout " << kName << " 5000\n";
  Launch(port, {"/usr/bin/redis-sentinel", conf}, kSentinelPassword);
}

std::map<std::string, std::string> SentinelView(int sentinel) {
  auto r = Ask(sentinel, {"SENTINEL", "master", kName}, kSentinelPassword);
  return r ? Pairs(*r) : std::map<std::string, std::string>{};
}

// Every sentinel sees the master up, the replica (linked) and the two other sentinels: only then
// can they agree on a failover.
bool SentinelsReady() {
  for (int s : kSentinels) {
    auto m = SentinelView(s);
    if (m["flags"] != "master" || m["num-slaves"] != "1" || m["num-other-sentinels"] != "2") {
      return false;
    }
    auto replicas = Ask(s, {"SENTINEL", "replicas", kName}, kSentinelPassword);
    if (!replicas || replicas->size() != 1 ||
        replicas->front().find(" flags slave ") == std::string::npos) {
      return false;
    }
  }
  return true;
}

// Master A with replica B, and the three sentinels; what a previous run left behind is stopped
// first. Stops everything on destruction, leaving kDir (the logs, the sentinels' rewritten
// configs) to look at until the next run.
class RedisSet {
 public:
  RedisSet() {
    StopAll();
    std::filesystem::remove_all(kDir);
    try {
      StartServer(kMaster);
      StartServer(kReplica, kMaster);
      for (int s : kSentinels) StartSentinel(s);
      REQUIRE_MESSAGE(WaitFor(SentinelsReady, 60s), "the sentinels never saw the whole set");
    } catch (...) {  // a failed REQUIRE: no destructor will run
      StopAll();
      throw;
    }
  }
  ~RedisSet() { StopAll(); }
  RedisSet(const RedisSet&) = delete;
  RedisSet& operator=(const RedisSet&) = delete;

 private:
  static void StopAll() {
    for (int port : {kSentinels[0], kSentinels[1], kSentinels[2], kMaster, kReplica}) {
      StopForGood(port);
    }
  }
};

// ---- A stale sentinel ----------------------------------------------------------------------

// Speaks just enough of the protocol for RedisConnect: AUTH with the sentinels' password, and
// SENTINEL get-master-addr-by-name answered with 127.0.0.1 and the port set by Name(), as a
// sentinel does that has not heard of the latest failover. One connection at a time, on its own
// thread.
class StaleSentinel {
 public:
  StaleSentinel(int port, int names) : names_(names) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE_MESSAGE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
                    "cannot bind " << Address(port));
    REQUIRE(listen(fd_, 16) == 0);
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }
  ~StaleSentinel() {
    thread_.request_stop();
    thread_.join();
    close(fd_);
  }
  StaleSentinel(const StaleSentinel&) = delete;
  StaleSentinel& operator=(const StaleSentinel&) = delete;

  void Name(int port) { names_ = port; }
  // The replica its SENTINEL REPLICAS lists (0: none).
  void List(int port) { lists_ = port; }
  int questions() const { return questions_; }

 private:
  void Serve(std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      const timeval tv{1, 0};
      setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      Converse(conn);
      close(conn);
    }
  }

  // Answers commands until the client closes (or is silent for a second).
  void Converse(int conn) {
    std::string in;
    char buf[4096];
    for (;;) {
      while (auto cmd = TakeCommand(in)) {
        const std::string reply = Answer(*cmd);
        if (send(conn, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return;
      }
      const ssize_t n = recv(conn, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  // The first whole command in `in` (a list of bulk strings, as hiredis sends), removed from it;
  // nullopt while it is incomplete.
  static std::optional<std::vector<std::string>> TakeCommand(std::string& in) {
    size_t at = 0;
    auto line = [&]() -> std::optional<std::string> {
      const size_t end = in.find("\r\n", at);
      if (end == std::string::npos) return std::nullopt;
      std::string l = in.substr(at + 1, end - at - 1);  // without the leading '*' or '$'
      at = end + 2;
      return l;
    };
    auto count = line();
    if (!count) return std::nullopt;
    std::vector<std::string> args;
    for (int i = ParseInt<int>(*count).value_or(0); i > 0; --i) {
      auto len = line();
      const size_t n = len ? ParseInt<size_t>(*len).value_or(0) : 0;
      if (!len || in.size() < at + n + 2) return std::nullopt;
      args.push_back(in.substr(at, n));
      at += n + 2;
    }
    in.erase(0, at);
    return args;
  }

  std::string Answer(const std::vector<std::string>& cmd) {
    if (cmd.size() == 2 && cmd[0] == "AUTH") {
      return cmd[1] == kSentinelPassword ? "+OK\r\n" : "-WRONGPASS invalid password\r\n";
    }
    if (cmd.size() == 3 && cmd[0] == "SENTINEL" && cmd[1] == "get-master-addr-by-name") {
      ++questions_;
      const std::string port = std::to_string(names_.load());
      return "*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(port.size()) + "\r\n" + port + "\r\n";
    }
    if (cmd.size() == 3 && cmd[0] == "SENTINEL" && cmd[1] == "REPLICAS") {
      // As a sentinel lists them: per replica its fields, "ip" and "port" among others.
      const int listed = lists_.load();
      if (listed == 0) return "*0\r\n";
      const std::string port = std::to_string(listed);
      return "*1\r\n*6\r\n$4\r\nname\r\n$5\r\nother\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$"
             "4\r\nport\r\n$" +
             std::to_string(port.size()) + "\r\n" + port + "\r\n";
    }
    return "-ERR unknown command\r\n";
  }

  int fd_ = -1;
  std::atomic<int> names_;
  std::atomic<int> lists_{0};
  std::atomic<int> questions_{0};
  std::jthread thread_;
};

// ---- The agent -----------------------------------------------------------------------------

// A file holding `password`, readable by its owner only (the agent refuses others).
std::string PasswordFile(const Sandbox& sandbox, const std::string& name,
                         const std::string& password) {
  const std::string path = WriteTempFile(sandbox.dir(), name, password + "\n");
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  return path;
}

// The sandbox's configuration with Redis found through the sentinels (after an address where
// nothing listens and the stale sentinel).
std::string SentinelConfig(const Sandbox& sandbox, const std::string& name, int agent_id,
                           int http_port, const std::string& password,
                           std::vector<int> sentinels = {kNobody, kStale, kSentinels[0],
                                                         kSentinels[1], kSentinels[2]}) {
  std::ifstream in(sandbox.config_path());
  json j = json::parse(in, nullptr, true, true);
  j["agent_id"] = agent_id;
  j["http"]["listen"] = Address(http_port);
  j["redis"].erase("host");
  j["redis"].erase("port");
  // This test's Redis servers have no ACL users: the agent logs in as `default`, without AUTH
  // (Sentinel with ACL users and TLS is tests/sentinel_tls_test.cc's).
  j["redis"].erase("username");
  j["redis"].erase("password_file");
  j["redis"]["sentinels"] = json::array();
  for (int s : sentinels) j["redis"]["sentinels"].push_back(Address(s));
  j["redis"]["master_name"] = kName;
  j["redis"]["sentinel_password_file"] = PasswordFile(sandbox, name + ".pw", password);
  return WriteTempFile(sandbox.dir(), name + ".json", j.dump(2));
}

struct Env {
  Sandbox sandbox{"/tmp/lw-sn", kBasePort};  // its lock also guards kDir
  RedisSet redis;
  StaleSentinel stale{kStale, kReplica};
  Agent agent{SentinelConfig(sandbox, "sentinel", 1, sandbox.http_port(), kSentinelPassword),
              sandbox.dir() + "/agent.log"};
};

Env& E() {
  static Env env;
  return env;
}

std::string ReplicaKey(int i) { return E().sandbox.replica_key(i); }

// Whether one of the sentinels names the server on `port` as the master.
bool ASentinelNames(int port) {
  for (int s : kSentinels) {
    auto r = Ask(s, {"SENTINEL", "get-master-addr-by-name", kName}, kSentinelPassword);
    if (r && r->size() == 2 && (*r)[1] == std::to_string(port)) return true;
  }
  return false;
}

// Both sandbox replicas' keys on the Redis server at `port` were measured after `since_ms`.
bool KeysFreshOn(int port, int64_t since_ms) {
  for (int i : {1, 2}) {
    auto r = Ask(port, {"HGETALL", ReplicaKey(i)});
    if (!r) return false;
    auto at = ParseInt<int64_t>(Pairs(*r)["measured_at_ms"]);
    if (!at || *at <= since_ms) return false;
  }
  return true;
}

std::optional<double> Metric(const std::string& series) {
  return MetricValue(HttpGet(E().sandbox.http_port(), "/metrics").second, series);
}

bool Logged(const std::string& text) { return E().agent.Log().find(text) != std::string::npos; }

// The connections on the server at `port` that are neither a sentinel's, nor its replication
// link, nor the one asking: the agent's (nothing else connects to it).
int OtherClients(int port) {
  auto r = Ask(port, {"CLIENT", "LIST"});
  if (!r || r->empty()) return -1;
  int n = 0;
  std::istringstream lines(r->front());
  for (std::string l; std::getline(lines, l);) {
    if (l.empty() || l.find(" name=sentinel-") != std::string::npos ||
        l.find(" flags=M ") != std::string::npos ||
        l.find(" cmd=client|list ") != std::string::npos) {
      continue;
    }
    ++n;
  }
  return n;
}

TEST_CASE("the agent finds the master through the sentinels, passing over a dead and a stale one") {
  const int64_t since = NowMs();
  REQUIRE_MESSAGE(WaitFor([&] { return KeysFreshOn(kMaster, since); }, 30s), E().agent.Log());
  const auto pttl = ParseInt<int>(Must(kMaster, {"PTTL", ReplicaKey(1)}).front());
  CHECK((pttl > 0 && pttl <= 1000));
  // The stale sentinel named the replica; the agent asked it, saw that it is no master, and took
  // the next sentinel's answer.
  CHECK(E().stale.questions() > 0);
  CHECK(Logged("Redis master for lw is 127.0.0.1:28211 (via sentinel 127.0.0.1:28213)"));
  CHECK(Logged("connected to Redis 127.0.0.1:28211"));

  // The router feedback reader found it too.
  Must(kMaster, {"HINCRBY", "rw_stats:sn", "reads_replica", "5"});
  CHECK_MESSAGE(WaitFor([] { return Metric(kReadsSeries) == 5; }, 30s), E().agent.Log());
}

TEST_CASE("a wrong sentinel password is named in the log, the password never") {
  const std::string wrong = "wrong-Pw-q8Zr2m";
  Agent other(SentinelConfig(E().sandbox, "wrong-password", 2, kWrongPasswordHttp, wrong),
              E().sandbox.dir() + "/wrong-password.log");
  CHECK_MESSAGE(WaitFor(
                    [&] {
                      return other.Log().find("sentinel 127.0.0.1:28213 refused AUTH: WRONGPASS") !=
                             std::string::npos;
                    },
                    20s),
                other.Log());
  CHECK(other.Log().find("no Redis master for lw") != std::string::npos);
  other.Stop();
  CHECK(other.Log().find(wrong) == std::string::npos);
  CHECK(other.Log().find(kSentinelPassword) == std::string::npos);
}

TEST_CASE("the master dies: the sentinels promote the replica and the keys come back on it") {
  REQUIRE(WaitFor([] { return KeysFreshOn(kMaster, NowMs() - 1000); }, 10s));
  E().stale.Name(kMaster);  // from now on it names the dead master
  REQUIRE(Stop(kMaster, SIGKILL));
  const auto killed = Steady::now();
  REQUIRE_MESSAGE(WaitFor([] { return RoleOf(kReplica) == "master"; }, 60s),
                  "no failover within 60 s; see " << DirOf(kSentinels[0]) << "/log");
  const auto promoted = Steady::now();
  const int64_t promoted_ms = NowMs();
  // The sentinels name it about a second later; the agent finds it among their replicas sooner.
  std::optional<Steady::time_point> named, fresh;
  REQUIRE_MESSAGE(WaitFor(
                      [&] {
                        if (!named && ASentinelNames(kReplica)) named = Steady::now();
                        if (!fresh && KeysFreshOn(kReplica, promoted_ms)) fresh = Steady::now();
                        return named && fresh;
                      },
                      30s),
                  E().agent.Log());
  MESSAGE("replica promoted " << Ms(promoted - killed) << " ms after the master was killed; "
                              << "fresh keys on it " << Ms(*fresh - promoted)
                              << " ms after it answered as master; a sentinel named it "
                              << Ms(*named - promoted) << " ms after it answered as master");
  // Generous: the agent retries every 200 ms at most, each try a few round trips on loopback.
  CHECK(*fresh - promoted < 3s);
  CHECK(Logged("Redis master for lw is now 127.0.0.1:28212"));
  const int64_t later = NowMs();
  CHECK(WaitFor([&] { return KeysFreshOn(kReplica, later); }, 5s));

  // The feedback reader follows too: the new master holds the replicated 5, now 12.
  Must(kReplica, {"HINCRBY", "rw_stats:sn", "reads_replica", "7"});
  CHECK_MESSAGE(WaitFor([] { return Metric(kReadsSeries) == 12; }, 30s), E().agent.Log());
}

TEST_CASE("the old master comes back as a replica; the agent stays on the new master") {
  StartServer(kMaster);  // as it first ran: a master (empty, nothing was saved)
  const auto restarted = Steady::now();
  REQUIRE_MESSAGE(WaitFor(
                      [] {
                        auto r = Ask(kMaster, {"ROLE"});
                        return r && r->size() >= 3 && (*r)[0] == "slave" &&
                               (*r)[2] == std::to_string(kReplica);
                      },
                      60s),
                  "the sentinels did not make the old master a replica");
  MESSAGE("old master made a replica " << Ms(Steady::now() - restarted) << " ms after its restart");
  const int64_t since = NowMs();
  CHECK(WaitFor([&] { return KeysFreshOn(kReplica, since); }, 10s));
  CHECK(RoleOf(kReplica) == "master");
  CHECK(OtherClients(kMaster) == 0);
  CHECK(Metric("lagwatch_redis_connected") == 1);
}

TEST_CASE("a master demoted under the agent: it leaves on READONLY, the feedback reader on ROLE") {
  // An operator's switchover, sentinels not involved: the sentinels forget the master, A is
  // promoted by hand, the sentinels are pointed at it, and B is demoted. Unlike a failover,
  // nothing closes B's client connections: B refuses the agent's writes and answers its reads.
  for (int s : kSentinels) Must(s, {"SENTINEL", "REMOVE", kName}, kSentinelPassword);
  Must(kMaster, {"REPLICAOF", "NO", "ONE"});
  for (int s : kSentinels) {
    Must(s, {"SENTINEL", "MONITOR", kName, "127.0.0.1", std::to_string(kMaster), "2"},
         kSentinelPassword);
  }
  E().stale.Name(kReplica);  // it names B, about to be demoted
  const double readonly_before =
      Metric("lagwatch_redis_errors_total{reason=\"readonly\"}").value_or(-1);
  Must(kReplica, {"REPLICAOF", "127.0.0.1", std::to_string(kMaster)});
  const int64_t demoted_ms = NowMs();
  const auto demoted = Steady::now();

  REQUIRE_MESSAGE(WaitFor([&] { return KeysFreshOn(kMaster, demoted_ms); }, 30s), E().agent.Log());
  MESSAGE("fresh keys on the master " << Ms(Steady::now() - demoted)
                                      << " ms after the old one was demoted");
  CHECK(Metric("lagwatch_redis_errors_total{reason=\"readonly\"}").value_or(0) > readonly_before);
  CHECK(
      Logged("Redis master for lw is now 127.0.0.1:28211 (via sentinel 127.0.0.1:28213), was "
             "127.0.0.1:28212"));
  // Neither the publisher nor the feedback reader stays on B.
  CHECK_MESSAGE(WaitFor([] { return OtherClients(kReplica) == 0; }, 20s),
                Ask(kReplica, {"CLIENT", "LIST"}).value_or(std::vector<std::string>{""}).front());
  CHECK(Logged("router feedback: Redis 127.0.0.1:28212 is a slave, not a master"));
}

TEST_CASE("a master promoted but not yet named by the sentinels is found among their replicas") {
  // What the sentinels say for about a second after a failover: the old master's address (here
  // nobody's), and the promoted replica among the replicas, where it answers ROLE as a master.
  E().stale.Name(kNobody);
  E().stale.List(kMaster);
  Agent other(
      SentinelConfig(E().sandbox, "promoted", 2, kPromotedHttp, kSentinelPassword, {kStale}),
      E().sandbox.dir() + "/promoted.log");
  const int64_t since = NowMs();
  CHECK_MESSAGE(WaitFor(
                    [&] {
                      auto r = Ask(kMaster, {"HGETALL", ReplicaKey(1)});
                      return r && Pairs(*r).count("agent:2") && KeysFreshOn(kMaster, since);
                    },
                    20s),
                other.Log());
  CHECK_MESSAGE(
      other.Log().find("Redis master for lw is 127.0.0.1:28211 (via sentinel "
                       "127.0.0.1:28217's replicas: promoted, not yet named)") != std::string::npos,
      other.Log());
  other.Stop();
  E().stale.List(0);
}

}  // namespace
}  // namespace lagwatch::test
