// HAProxy in front of the sandbox's replicas, driven by lagwatch (docs/operations.md, "HAProxy"):
// one HAProxy 2.6 on loopback with the backends `lagwatch haproxy-config` writes, push (the
// runtime API), agent (the agent-check port) and http (GET /check/<name>; also over TLS with basic
// auth, and with a fixed URI and send-state's header), each behind a frontend of its own, and the
// real agent binary. Replicas are stopped, locked, frozen, the agent
// is killed and HAProxy restarted and reloaded; each time the servers' states (`show servers
// state`) and where reads through each frontend land (`SELECT @@port`) are checked.
#include <crypt.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "exporters/haproxy_runtime.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kDir = "/tmp/lw-hx";
constexpr int kBasePort = 30906;    // the sandbox: 30906..30910
constexpr int kAgentCheck = 30911;  // lagwatch's agent-check port
// HAProxy's frontends, one per backend.
constexpr int kPushFront = 30912, kAgentFront = 30913, kHttpFront = 30914, kSecureFront = 30916,
              kStateFront = 30917;
// A second agent's HTTP listener, with TLS and basic auth, checked by the secure_reads backend.
constexpr int kSecureHttp = 30915;
const std::vector<std::pair<std::string, int>> kBackends = {{"push_reads", kPushFront},
                                                            {"agent_reads", kAgentFront},
                                                            {"http_reads", kHttpFront},
                                                            {"secure_reads", kSecureFront},
                                                            {"state_reads", kStateFront}};
constexpr int kResyncMs = 500;

long Ms(Clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// HAProxy in the foreground (-db), a child of the test, stopped by its PID.
class Haproxy {
 public:
  Haproxy(std::string config, std::string log, std::string socket)
      : config_(std::move(config)), log_(std::move(log)), socket_(std::move(socket)) {
    Start();
  }
  ~Haproxy() { Stop(); }
  pid_t pid() const { return pid_; }
  std::string Log() const { return Slurp(log_); }
  // The log's size in bytes, and its text from byte `from` on (what it logged since a size).
  size_t LogSize() const { return std::filesystem::file_size(log_); }
  std::string LogFrom(size_t from) const {
    std::ifstream in(log_);
    in.seekg(static_cast<std::streamoff>(from));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A restart: HAProxy stops, a new one starts (it forgets every runtime state).
  void Restart() {
    Stop();
    Start();
  }
  // A reload: a new process takes over from the old one (-sf), as `systemctl reload` does.
  void Reload() {
    const pid_t old = pid_;
    Start({"-sf", std::to_string(old)});
    int status = 0;
    for (int i = 0; i < 100 && waitpid(old, &status, WNOHANG) != old; ++i) {
      std::this_thread::sleep_for(50ms);
    }
  }

 private:
  void Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"/usr/sbin/haproxy", "-db", "-f", config_};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      for (int i = 3; i < 1024; ++i) close(i);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    const auto s = ParseHaproxySocket(socket_);
    // Up once this process answers on the socket.
    const bool up = WaitFor(
        [&] {
          auto info = HaproxyExchange(*s, "show info", Clock::now() + 1s);
          auto p = info.ok() ? ParseShowInfo(*info) : info.status();
          return p.ok() && p->pid == pid_;
        },
        10s);
    // A failure here may be in the constructor, whose object no destructor stops: stop it now.
    if (!up) Stop();
    REQUIRE_MESSAGE(up, Log());
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) != pid_; ++i) {
      std::this_thread::sleep_for(20ms);
      if (i == 150) kill(pid_, SIGKILL);
    }
    pid_ = -1;
  }

  const std::string config_, log_, socket_;
  pid_t pid_ = -1;
};

// The sandbox's configuration with the haproxy block: push to HAProxy's socket, the agent-check
// port.
std::string AgentConfig(const Sandbox& sandbox) {
  std::ifstream in(sandbox.config_path());
  nlohmann::json j = nlohmann::json::parse(in, nullptr, true, true);
  j["haproxy"] = {
      {"instances",
       {{{"name", "lb"}, {"socket", sandbox.dir() + "/hx/admin.sock"}, {"backend", "push_reads"}}}},
      {"resync_ms", kResyncMs},
      {"agent_check", {{"listen", "127.0.0.1:" + std::to_string(kAgentCheck)}}}};
  const std::string path = sandbox.dir() + "/hx-agent.json";
  std::ofstream(path) << j.dump(2);
  return path;
}

// A second agent (agent_id 2) whose HTTP listener has TLS (a certificate of a test CA) and basic
// auth (user haproxy), as docs/configuration.md "HTTP security" sets it up; its files in DIR/hx.
std::string SecureAgentConfig(const Sandbox& sandbox) {
  const std::string d = sandbox.dir() + "/hx";
  TestPki pki(d);
  pki.Ca("ca");
  pki.Cert("web", "ca", "IP:127.0.0.1");
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2y$", 10, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const std::string password = "haproxy-check-pw";
  const char* hash = crypt_rn(password.c_str(), salt, &data, sizeof data);
  REQUIRE(hash != nullptr);
  std::ofstream(d + "/web.yml") << "tls_server_config:\n  cert_file: " << pki.Pem("web")
                                << "\n  key_file: " << pki.Key("web")
                                << "\nbasic_auth_users:\n  haproxy: " << hash << "\n";
  WriteTempFile(d, "check.pw", password + "\n");
  REQUIRE(chmod((d + "/check.pw").c_str(), 0600) == 0);
  REQUIRE(chmod(pki.Key("web").c_str(), 0600) == 0);
  std::ifstream in(sandbox.config_path());
  nlohmann::json j = nlohmann::json::parse(in, nullptr, true, true);
  j["agent_id"] = 2;
  j["http"] = {{"listen", "127.0.0.1:" + std::to_string(kSecureHttp)},
               {"web_config_file", d + "/web.yml"}};
  const std::string path = sandbox.dir() + "/hx-secure.json";
  std::ofstream(path) << j.dump(2);
  return path;
}

// The generated backend of `mode`, named `backend` (`extra`: more flags).
std::string Generated(const std::string& config, const std::string& mode,
                      const std::string& backend, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      LagwatchBinary(), "haproxy-config", "--config", config, "--mode", mode, "--backend", backend};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = RunCommand(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

// HAProxy's whole configuration: a stats socket lagwatch may use, one frontend per backend, and
// the generated backends: push, agent and http from the first agent's configuration, http over
// TLS with basic auth from the second's, and http with a fixed URI and send-state.
std::string HaproxyConfig(const Sandbox& sandbox, const std::string& agent_config,
                          const std::string& secure_config) {
  const std::string d = sandbox.dir() + "/hx";
  std::string cfg = "global\n    stats socket " + d +
                    "/admin.sock mode 600 level admin\n"
                    "    nbthread 1\n    hard-stop-after 2s\n"
                    "defaults\n    mode tcp\n    timeout client 1h\n";
  for (const auto& [backend, port] : kBackends) {
    cfg += "frontend " + backend + "_front\n    bind 127.0.0.1:" + std::to_string(port) +
           "\n    default_backend " + backend + "\n";
  }
  cfg += Generated(agent_config, "push", "push_reads");
  cfg += Generated(agent_config, "agent", "agent_reads");
  cfg += Generated(agent_config, "http", "http_reads");
  cfg += Generated(
      secure_config, "http", "secure_reads",
      {"--ca-file", d + "/ca.pem", "--user", "haproxy", "--password-file", d + "/check.pw"});
  // The HTTP check with a fixed URI, the server named by send-state's header instead.
  std::string state = Generated(agent_config, "http", "state_reads");
  const std::string uri_lf = "uri-lf /check/%[srv_name]";
  const size_t at = state.find(uri_lf);
  REQUIRE(at != std::string::npos);
  state.replace(at, uri_lf.size(), "uri /check");
  const size_t expect = state.find("    http-check expect");
  REQUIRE(expect != std::string::npos);
  state.insert(expect, "    http-check send-state\n");
  cfg += state;
  // A check answered after `timeout check` marks its server down (fall 1) and cuts its sessions:
  // the sanitized agents answer slower, so their checks get the time the other bounds get.
  const std::string check_timeout = "timeout check 1s\n";
  for (size_t at = cfg.find(check_timeout); at != std::string::npos;
       at = cfg.find(check_timeout, at + 1)) {
    cfg.replace(at, check_timeout.size(),
                "timeout check " + std::to_string(TimeBoundMs(1000)) + "ms\n");
  }
  const std::string path = d + "/haproxy.cfg";
  std::ofstream(path) << cfg;
  return path;
}

struct Env {
  Sandbox sandbox{kDir, kBasePort};
  const std::string agent_config = AgentConfig(sandbox);
  std::optional<Agent> agent{std::in_place, agent_config, kDir + "/agent.log"};
  const std::string secure_config = SecureAgentConfig(sandbox);
  Agent secure_agent{secure_config, kDir + "/agent-secure.log"};
  const std::string haproxy_config = HaproxyConfig(sandbox, agent_config, secure_config);
  Haproxy haproxy{haproxy_config, kDir + "/hx/haproxy.log", kDir + "/hx/admin.sock"};
};

Env& E() {
  static Env env;
  return env;
}

std::string Replica(int i) { return E().sandbox.replica_id(i); }
std::string Primary() { return E().sandbox.primary_id(); }
std::string Sock(const std::string& server) { return E().sandbox.socket(server); }

// `command` on the test HAProxy's admin socket: its answer.
Result<std::string> Admin(const std::string& command, Clock::duration patience = 2s) {
  return HaproxyExchange(*ParseHaproxySocket(kDir + "/hx/admin.sock"), command,
                         Clock::now() + patience);
}

// The servers of `backend` in the pool now: running, and in no maintenance or drain but the
// configuration's (a `disabled` server that was set ready keeps that bit and serves).
std::set<std::string> Pool(const std::string& backend) {
  auto reply = Admin("show servers state " + backend);
  if (!reply.ok()) return {"(" + reply.status().ToString() + ")"};
  auto servers = ParseServersState(*reply, backend);
  if (!servers.ok()) return {"(" + servers.status().ToString() + ")"};
  std::set<std::string> in;
  for (const auto& s : *servers) {
    if (s.op_state == 2 && (s.admin_state & ~0x04) == 0) in.insert(s.name);
  }
  return in;
}

// A set as "{a, b}": server names, ports.
template <typename T>
std::string Show(const std::set<T>& items) {
  std::ostringstream out;
  out << "{";
  for (auto it = items.begin(); it != items.end(); ++it) {
    out << (it == items.begin() ? "" : ", ") << *it;
  }
  out << "}";
  return out.str();
}

// Every backend's pool is `want`; how long that took (nullopt: not within `timeout`).
std::optional<long> PoolsBecome(
    const std::set<std::string>& want, Clock::duration timeout,
    const std::vector<std::pair<std::string, int>>& backends = kBackends) {
  const auto t0 = Clock::now();
  const bool ok = WaitFor(
      [&] {
        for (const auto& [backend, port] : backends) {
          if (Pool(backend) != want) return false;
        }
        return true;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  if (!ok) {
    for (const auto& [backend, port] : backends) {
      MESSAGE(backend << ": " << Show(Pool(backend)) << ", want " << Show(want));
    }
    return std::nullopt;
  }
  return Ms(Clock::now() - t0);
}

std::set<std::string> AtRest() { return {Replica(1), Replica(2), Primary() + "_primary"}; }

// A client connection through the frontend on `port`, as the sandbox's probe user, kept open as a
// pool keeps it.
class Session {
 public:
  explicit Session(int port) : m_(mysql_init(nullptr)) {
    unsigned timeout = 2;
    mysql_options(m_, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(m_, MYSQL_OPT_READ_TIMEOUT, &timeout);
    const std::string cnf = E().sandbox.dir() + "/replica.cnf";
    mysql_options(m_, MYSQL_READ_DEFAULT_FILE, cnf.c_str());
    connected_ = mysql_real_connect(m_, "127.0.0.1", nullptr, nullptr, nullptr,
                                    static_cast<unsigned>(port), nullptr, 0) != nullptr;
  }
  ~Session() { mysql_close(m_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // The port of the server that answers SELECT @@port; 0 when none does (never connected, or
  // the connection was cut: no reconnection).
  int Port() {
    if (!connected_ || mysql_query(m_, "SELECT @@port") != 0) return 0;
    int port = 0;
    if (MYSQL_RES* res = mysql_store_result(m_)) {
      if (MYSQL_ROW row = mysql_fetch_row(res); row && row[0]) port = std::atoi(row[0]);
      mysql_free_result(res);
    }
    return port;
  }

 private:
  MYSQL* m_;
  bool connected_ = false;
};

// One read on a connection of its own through the frontend on `port`: the port of the server
// that answered (0: no answer).
int ReadThrough(int port) { return Session(port).Port(); }

// The lines of HAProxy's log from byte `from` on that name a server of `backend` ("Server
// backend/name is DOWN, reason: ...").
std::string HaproxyLines(const std::string& backend, size_t from) {
  std::istringstream in(E().haproxy.LogFrom(from));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(" " + backend + "/") != std::string::npos) out += line + "\n";
  }
  return out;
}

// HAProxy's statistics of `backend` and its servers (`show stat`, with the header): weights,
// current sessions, check transitions, for a failure's message.
std::string StatLines(const std::string& backend) {
  auto reply = Admin("show stat");
  if (!reply.ok()) return reply.status().ToString();
  std::istringstream in(*reply);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0 || line.rfind(backend + ",", 0) == 0) out += line + "\n";
  }
  return out;
}

// Eight reads through each frontend, each on a connection of its own, land on `ports`. A pool
// that changed while it was read (HAProxy logged a server of it going down or up: its own check
// timing out on a busy host, say) is read again once it is `pool` again, at most twice; each
// retry is printed with HAProxy's reason.
void CheckReadsLandOn(const std::set<int>& ports, const std::set<std::string>& pool) {
  for (const auto& [backend, port] : kBackends) {
    CAPTURE(backend);
    for (int attempt = 1;; ++attempt) {
      const size_t from = E().haproxy.LogSize();
      // Eight sessions open at once: leastconn spreads them over the pool whatever sessions
      // of earlier steps are still open (read one after another, eight reads all went to one
      // replica once under ASan, the other one up and in the pool; its statistics were not
      // printed then).
      std::vector<std::unique_ptr<Session>> open;
      for (int i = 0; i < 8; ++i) open.push_back(std::make_unique<Session>(port));
      std::set<int> landed;
      for (auto& session : open) landed.insert(session->Port());
      open.clear();
      const std::string changes = HaproxyLines(backend, from);
      if (changes.empty() || attempt == 3) {
        INFO("HAProxy's log while reading: " << changes);
        INFO("HAProxy's statistics after: " << StatLines(backend));
        CHECK(Show(landed) == Show(ports));
        break;
      }
      MESSAGE(backend << "'s pool changed while it was read (read " << Show(landed)
                      << "); read again. HAProxy's log:\n"
                      << changes);
      REQUIRE(PoolsBecome(pool, 5s, {{backend, port}}));
    }
  }
}

std::optional<double> Metric(const std::string& series) {
  return MetricValue(HttpGet(E().sandbox.http_port(), "/metrics").second, series);
}

int Port(int i) { return E().sandbox.replica_port(i); }

// A planned switchover, as tests/topology_test.cc makes it: `from` read-only, `to` catches up and
// is promoted, the others re-pointed to it (a replication account on every server, not binlogged).
void Switchover(const std::string& from, const std::string& to, const std::string& other) {
  for (const auto& server : {from, to, other}) {
    AdminSession a(Sock(server));
    a.Query("SET SESSION sql_log_bin=0");
    a.Query("CREATE USER IF NOT EXISTS 'lw_sw'@'127.0.0.1' IDENTIFIED BY 'swpw'");
    a.Query("GRANT REPLICATION SLAVE ON *.* TO 'lw_sw'@'127.0.0.1'");
  }
  AdminQuery(Sock(from), "SET GLOBAL read_only=1");
  const std::string position = AdminQuery(Sock(from), "SELECT @@gtid_binlog_pos").value_or("");
  REQUIRE(AdminQuery(Sock(to), "SELECT MASTER_GTID_WAIT('" + position + "', 10)") == "0");
  // `other` too, before it is re-pointed (tests/topology_test.cc's Switchover says why).
  REQUIRE(AdminQuery(Sock(other), "SELECT MASTER_GTID_WAIT('" + position + "', 10)") == "0");
  {
    AdminSession a(Sock(to));
    a.Query("STOP SLAVE");
    a.Query("RESET SLAVE ALL");
    a.Query("SET GLOBAL read_only=0");
  }
  const std::string port = AdminQuery(Sock(to), "SELECT @@port").value_or("");
  for (const auto& [server, use_gtid] : {std::pair{other, "slave_pos"}, {from, "current_pos"}}) {
    AdminSession a(Sock(server));
    a.Query("STOP SLAVE");
    a.Query("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" + port +
            ", MASTER_USER='lw_sw', MASTER_PASSWORD='swpw', MASTER_USE_GTID=" + use_gtid +
            ", MASTER_CONNECT_RETRY=1");
    a.Query("START SLAVE");
  }
}

TEST_CASE("the generated backends pass haproxy -c, and each lists every server twice") {
  RunResult r = RunCommand({"/usr/sbin/haproxy", "-c", "-f", E().haproxy_config});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string cfg = Slurp(E().haproxy_config);
  for (const auto& id : {Primary(), Replica(1), Replica(2)}) {
    CAPTURE(id);
    CHECK(cfg.find("    server " + id + " " + id + " weight 100") != std::string::npos);
    CHECK(cfg.find("    server " + id + "_primary " + id + " backup") != std::string::npos);
  }
  // The secure backend's check: TLS verified with the test CA, the user's credentials.
  CHECK(cfg.find(" check-ssl verify required ca-file " + kDir + "/hx/ca.pem ") !=
        std::string::npos);
  CHECK(cfg.find("hdr Authorization \"Basic aGFwcm94eTpoYXByb3h5LWNoZWNrLXB3\"") !=
        std::string::npos);
}

TEST_CASE(
    "at rest both replicas are in every pool, the primary as a backup, and reads land on the "
    "replicas") {
  const auto took = PoolsBecome(AtRest(), 15s);
  REQUIRE_MESSAGE(took, E().agent->Log());
  MESSAGE("pools at rest " << *took << " ms after the test began");
  CheckReadsLandOn({Port(1), Port(2)}, AtRest());
}

TEST_CASE(
    "a replica whose SQL thread stops leaves every pool at once and comes back when it "
    "starts") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  // Open connections through every frontend, as a pool keeps them: one on each replica. Opened
  // until each replica has one (leastconn spreads new sessions, but sessions of earlier steps
  // that HAProxy had not yet closed put two on one replica once under ASan); the others are
  // closed once both are there.
  std::map<std::string, std::vector<std::unique_ptr<Session>>> sessions;
  for (const auto& [backend, port] : kBackends) {
    std::vector<std::unique_ptr<Session>> others;
    std::set<int> kept;
    for (int i = 0; i < 8 && kept.size() < 2; ++i) {
      auto session = std::make_unique<Session>(port);
      const int on = session->Port();
      if ((on == Port(1) || on == Port(2)) && kept.insert(on).second) {
        sessions[backend].push_back(std::move(session));
      } else {
        others.push_back(std::move(session));
      }
    }
    CAPTURE(backend);
    REQUIRE_MESSAGE(kept.size() == 2, StatLines(backend));
  }
  const size_t log_before = E().haproxy.LogSize();
  AdminQuery(Sock("replica1"), "STOP SLAVE SQL_THREAD");
  const auto left = PoolsBecome({Replica(2), Primary() + "_primary"}, 5s);
  CHECK_MESSAGE(left, E().agent->Log());
  if (left) MESSAGE("SQL thread stopped: replica1 out of every pool within " << *left << " ms");
  CheckReadsLandOn({Port(2)}, {Replica(2), Primary() + "_primary"});
  // The connections to replica1 were cut (a pooled connection would keep reading stale data), the
  // others still read. Waited for, briefly: HAProxy cuts them as it takes the server out, but
  // one backend's (secure_reads) was still open when read at once under ASan, once.
  for (auto& [backend, list] : sessions) {
    CAPTURE(backend);
    std::multiset<int> ports;
    const bool cut = WaitFor(
        [&] {
          ports.clear();
          for (auto& session : list) ports.insert(session->Port());
          return ports == std::multiset<int>{0, Port(2)};
        },
        std::chrono::milliseconds(TimeBoundMs(1000)));
    std::string seen;
    for (int p : ports) seen += " " + std::to_string(p);
    // HAProxy logs each server it marks down, with the check's reason and duration.
    CHECK_MESSAGE(cut, "the sessions' servers' ports:" << seen << "\nHAProxy's log since:\n"
                                                       << E().haproxy.LogFrom(log_before));
  }
  // Both replicas out: reads go to the primary, the backup.
  AdminQuery(Sock("replica2"), "STOP SLAVE SQL_THREAD");
  CHECK(PoolsBecome({Primary() + "_primary"}, 5s));
  CheckReadsLandOn({E().sandbox.primary_port()}, {Primary() + "_primary"});
  AdminQuery(Sock("replica1"), "START SLAVE SQL_THREAD");
  AdminQuery(Sock("replica2"), "START SLAVE SQL_THREAD");
  const auto back = PoolsBecome(AtRest(), 10s);
  CHECK(back);
  if (back) MESSAGE("SQL threads started: both replicas back within " << *back << " ms");
  CheckReadsLandOn({Port(1), Port(2)}, AtRest());
  // The push went through the runtime API with no error, each within milliseconds.
  CHECK(Metric("lagwatch_haproxy_up{haproxy=\"lb\"}") == 1);
  CHECK(Metric("lagwatch_haproxy_commands_total{haproxy=\"lb\"}").value_or(0) >= 4);
  CHECK(Metric("lagwatch_haproxy_checks_total{answer=\"down\",protocol=\"agent\"}").value_or(0) >
        0);
  CHECK(Metric("lagwatch_haproxy_checks_total{answer=\"down\",protocol=\"http\"}").value_or(0) > 0);
  const std::string metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  const auto count = MetricValue(metrics, "lagwatch_haproxy_push_seconds_count{haproxy=\"lb\"}");
  const auto sum = MetricValue(metrics, "lagwatch_haproxy_push_seconds_sum{haproxy=\"lb\"}");
  REQUIRE(count.value_or(0) > 0);
  MESSAGE("push: " << *count << " verdict changes sent, " << *sum / *count * 1000
                   << " ms on average from the verdict to HAProxy's acknowledgement");
  CHECK(*sum / *count < 0.05);
  // The new series pass promtool as the others do.
  const std::string path = WriteTempFile(kDir, "scrape.txt", metrics);
  RunResult promtool = RunCommand({"/bin/sh", "-c", "promtool check metrics < " + path});
  INFO(promtool.output);
  CHECK(promtool.exit_code == 0);
}

TEST_CASE("a replica held by FLUSH TABLES WITH READ LOCK leaves the pools, and returns after") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  {
    AdminSession lock(Sock("replica2"));
    lock.Query("FLUSH TABLES WITH READ LOCK");
    CHECK_MESSAGE(PoolsBecome({Replica(1), Primary() + "_primary"}, 5s), E().agent->Log());
    CheckReadsLandOn({Port(1)}, {Replica(1), Primary() + "_primary"});
    lock.Query("UNLOCK TABLES");
  }
  CHECK(PoolsBecome(AtRest(), 10s));
}

TEST_CASE("a frozen replica (SIGSTOP) leaves the pools, and returns when it runs again") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  const pid_t pid = ReadPidFile(kDir + "/replica1/mysqld.pid");
  REQUIRE(pid > 0);
  kill(pid, SIGSTOP);
  const auto left = PoolsBecome({Replica(2), Primary() + "_primary"}, 5s);
  CHECK_MESSAGE(left, E().agent->Log());
  if (left) MESSAGE("replica frozen: out of every pool within " << *left << " ms");
  CheckReadsLandOn({Port(2)}, {Replica(2), Primary() + "_primary"});
  kill(pid, SIGCONT);
  CHECK(PoolsBecome(AtRest(), 15s));
}

TEST_CASE("a manual change is undone at the next resync") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  const std::string corrections = "lagwatch_haproxy_corrections_total{haproxy=\"lb\"}";
  const std::string commands = "lagwatch_haproxy_commands_total{haproxy=\"lb\"}";
  const double corrections_before = Metric(corrections).value_or(-1);
  const double commands_before = Metric(commands).value_or(-1);
  auto r = Admin("set server push_reads/" + Replica(1) + " state maint", 1s);
  REQUIRE(r.ok());
  REQUIRE(Pool("push_reads").count(Replica(1)) == 0);
  const auto back = PoolsBecome(AtRest(), 3s, {{"push_reads", kPushFront}});
  REQUIRE(back);
  CHECK(*back <= kResyncMs + 1000);  // a resync, with room for a loaded host
  // Counted as a correction once HAProxy has answered, a moment after it acted. Unless a new
  // verdict came first (a record late or flapping on a busy host: once under ASan): its push sends
  // the server's state, which undoes the change by hand before the resync sees it. Then commands
  // were sent and there was nothing to correct.
  const bool counted =
      WaitFor([&] { return Metric(corrections).value_or(-1) > corrections_before; }, 2s);
  const double sent = Metric(commands).value_or(-1) - commands_before;
  if (!counted) MESSAGE("not a correction: " << sent << " commands sent by pushes meanwhile");
  CHECK_MESSAGE((counted || sent > 0), E().agent->Log());
}

TEST_CASE("after HAProxy restarts or reloads, lagwatch's verdicts are back within a resync") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  const double restarts = Metric("lagwatch_haproxy_restarts_total{haproxy=\"lb\"}").value_or(-1);
  // A restarted HAProxy starts every normal entry in maintenance (the generated `disabled`), so
  // nothing lagwatch has not judged is read from; each mode puts the replicas back.
  auto t0 = Clock::now();
  E().haproxy.Restart();
  REQUIRE_MESSAGE(PoolsBecome(AtRest(), 5s), E().haproxy.Log() << E().agent->Log());
  MESSAGE("HAProxy restarted: every pool right " << Ms(Clock::now() - t0) << " ms after it "
                                                 << "stopped");
  // The stop, the start, at most one reconnect backoff (2 s at most) and a resync.
  CHECK(Ms(Clock::now() - t0) <= 2000 + 2 * kResyncMs);
  // A reload: a new process, the old one's runtime state forgotten. The replica is out when it
  // happens, to show the state that comes back is lagwatch's, not the configuration's.
  AdminQuery(Sock("replica1"), "STOP SLAVE SQL_THREAD");
  REQUIRE(PoolsBecome({Replica(2), Primary() + "_primary"}, 5s));
  t0 = Clock::now();
  E().haproxy.Reload();
  REQUIRE(PoolsBecome({Replica(2), Primary() + "_primary"}, 5s));
  MESSAGE("HAProxy reloaded: every pool right " << Ms(Clock::now() - t0) << " ms after");
  CheckReadsLandOn({Port(2)}, {Replica(2), Primary() + "_primary"});
  AdminQuery(Sock("replica1"), "START SLAVE SQL_THREAD");
  CHECK(PoolsBecome(AtRest(), 10s));
  CHECK(WaitFor(
      [&] {
        return Metric("lagwatch_haproxy_restarts_total{haproxy=\"lb\"}").value_or(-1) >=
               restarts + 2;
      },
      3s));
}

TEST_CASE(
    "with the agent dead, push and agent-check pools keep their last state, the http pool "
    "fails closed; a new agent takes over") {
  REQUIRE(PoolsBecome(AtRest(), 10s));
  kill(E().agent->pid(), SIGKILL);
  E().agent.reset();
  std::this_thread::sleep_for(1500ms);
  CHECK(Pool("push_reads") == AtRest());
  CHECK(Pool("agent_reads") == AtRest());
  CHECK(Pool("http_reads").empty());  // every check fails: no server, not even the backup
  CHECK(ReadThrough(kPushFront) != 0);
  CHECK(ReadThrough(kHttpFront) == 0);
  E().agent.emplace(E().agent_config, kDir + "/agent2.log");
  const auto back = PoolsBecome(AtRest(), 15s);
  CHECK_MESSAGE(back, E().agent->Log());
  if (back) MESSAGE("a new agent: every pool right within " << *back << " ms of its start");
}

TEST_CASE("after a switchover the pools follow the primary, HAProxy's configuration untouched") {
  REQUIRE(PoolsBecome(AtRest(), 15s));
  Switchover("primary", "replica1", "replica2");
  // replica1 is the primary: its backup entry serves, the old primary is read from once it is
  // judged a usable replica of the new one.
  const std::set<std::string> moved = {Primary(), Replica(2), Replica(1) + "_primary"};
  const auto took = PoolsBecome(moved, 15s);
  CHECK_MESSAGE(took, E().agent->Log());
  if (took) MESSAGE("switchover: every pool follows within " << *took << " ms");
  CheckReadsLandOn({E().sandbox.primary_port(), Port(2)}, moved);
  Switchover("replica1", "primary", "replica2");
  CHECK(PoolsBecome(AtRest(), 15s));
  CheckReadsLandOn({Port(1), Port(2)}, AtRest());
}

}  // namespace
}  // namespace lagwatch::test
