// Redis Sentinel over TLS with ACL users everywhere, for real: a Redis master and replica that
// speak TLS only (client certificates required, replication over TLS as its own user), three
// sentinels on TLS ports that let the agent in only as lagwatch-sentinel (a user that may ask for
// the master and nothing else) and reach the servers as sentinel-user; the agent logs in to the
// sentinels and the master it finds with usernames, over TLS, and follows a failover. Everything
// here is started by this test (certificates by openssl) and stopped by its PID.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kDir = "/tmp/lw-st";
constexpr int kBasePort = 30306;  // the sandbox (MySQL, plaintext): 30306..30310
constexpr int kMaster = 30311;
constexpr int kReplica = 30312;
constexpr int kSentinels[] = {30313, 30314, 30315};
const std::string kName = "lwt";
const std::string kAdminPw = "st-admin-Pw-4k2";
const std::string kSentinelUserPw = "st-sentinel-user-Pw-8x1";
const std::string kReplicaUserPw = "st-replica-user-Pw-2m7";
const std::string kLagwatchSentinelPw = "st-lagwatch-sentinel-Pw-5q3";

struct Env {
  Sandbox sandbox{kDir, kBasePort};
  TestPki pki{kDir + "/pki"};
  std::string ca = pki.Ca("ca");
  std::string server = pki.Cert("server", "ca", "IP:127.0.0.1");
  std::string client = pki.Cert("client", "ca", "IP:127.0.0.1");
  // The sandbox's agent and router users, as docs/operations.md writes them, and the users
  // replication and the sentinels need on the servers.
  std::string acl = [&] {
    const std::string path = kDir + "/servers.acl";
    std::ifstream sandbox_acl(sandbox.dir() + "/redis/users.acl");
    std::ofstream out(path);
    for (std::string line; std::getline(sandbox_acl, line);) {
      if (line.rfind("user default ", 0) != 0) out << line << "\n";
    }
    out << "user default on >" << kAdminPw << " ~* &* +@all\n"
        << "user sentinel-user on >" << kSentinelUserPw
        << " allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish "
           "+info +client|setname +client|kill +script|kill\n"
        << "user replica-user on >" << kReplicaUserPw << " +psync +replconf +ping\n";
    return path;
  }();
  std::unique_ptr<RedisServer> master = Server(kMaster, false);
  std::unique_ptr<RedisServer> replica = Server(kReplica, true);
  std::vector<std::unique_ptr<RedisServer>> sentinels = [&] {
    std::vector<std::unique_ptr<RedisServer>> out;
    for (int port : kSentinels) out.push_back(Sentinel(port));
    return out;
  }();

  std::vector<std::string> TlsArgs(int port) const {
    return {"--port",
            "0",
            "--tls-port",
            std::to_string(port),
            "--tls-cert-file",
            pki.Pem("server"),
            "--tls-key-file",
            pki.Key("server"),
            "--tls-ca-cert-file",
            ca,
            "--tls-auth-clients",
            "yes",
            "--tls-replication",
            "yes"};
  }
  std::unique_ptr<RedisServer> Server(int port, bool replica_of_master) const {
    std::vector<std::string> args = TlsArgs(port);
    args.insert(args.end(),
                {"--aclfile", acl, "--masteruser", "replica-user", "--masterauth", kReplicaUserPw});
    if (replica_of_master)
      args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(kMaster)});
    return std::make_unique<RedisServer>(kDir + "/" + std::to_string(port), port, args);
  }
  std::unique_ptr<RedisServer> Sentinel(int port) const {
    const std::string dir = kDir + "/" + std::to_string(port);
    RunCommand({"/bin/mkdir", "-p", dir});
    const std::string conf = dir + "/sentinel.conf";
    std::ofstream(conf) << "port 0\ntls-port " << port << "\nbind 127.0.0.1\ndir " << dir
                        << "\nlogfile " << dir << "/log\ntls-cert-file " << pki.Pem("server")
                        << "\ntls-key-file " << pki.Key("server") << "\ntls-ca-cert-file " << ca
                        << "\ntls-auth-clients yes\ntls-replication yes\n"
                        << "user default off\n"
                        << "user sentinels on >" << kSentinelUserPw << " allchannels +@all\n"
                        << "user admin on >" << kAdminPw << " ~* &* +@all\n"
                        << "user lagwatch-sentinel on >" << kLagwatchSentinelPw
                        << " -@all +auth +hello +ping +sentinel|get-master-addr-by-name "
                           "+sentinel|replicas\n"
                        << "sentinel sentinel-user sentinels\nsentinel sentinel-pass "
                        << kSentinelUserPw << "\nsentinel monitor " << kName << " 127.0.0.1 "
                        << kMaster << " 2\nsentinel auth-user " << kName
                        << " sentinel-user\nsentinel auth-pass " << kName << " " << kSentinelUserPw
                        << "\nsentinel down-after-milliseconds " << kName
                        << " 500\nsentinel failover-timeout " << kName << " 5000\n";
    return std::make_unique<RedisServer>(dir, port, std::vector<std::string>{conf}, true);
  }
  TlsOptions ClientTls() const {
    TlsOptions t;
    t.enabled = true;
    t.ca_file = ca;
    t.cert_file = pki.Pem("client");
    t.key_file = pki.Key("client");
    return t;
  }
};

Env& E() {
  static Env env;
  return env;
}

RedisLogin Admin() { return {"default", kAdminPw, E().ClientTls()}; }
RedisLogin SentinelAdmin() { return {"admin", kAdminPw, E().ClientTls()}; }

// The master's port as the first sentinel names it (0 when none answers).
int NamedMaster() {
  Redis s(kSentinels[0], SentinelAdmin());
  const std::string r = s.Command({"SENTINEL", "get-master-addr-by-name", kName});
  const size_t nl = r.find('\n');
  return nl == std::string::npos ? 0 : ParseInt<int>(r.substr(nl + 1)).value_or(0);
}

// Every sentinel sees the master, its replica and the two other sentinels.
bool SentinelsReady() {
  for (int p : kSentinels) {
    Redis s(p, SentinelAdmin());
    const std::string m = s.Command({"SENTINEL", "master", kName});
    if (m.find("num-slaves\n1") == std::string::npos ||
        m.find("num-other-sentinels\n2") == std::string::npos ||
        m.find("flags\nmaster\n") == std::string::npos) {
      return false;
    }
  }
  return true;
}

// The agent's configuration: the sandbox's MySQL side, Redis through the sentinels over TLS,
// logging in as lagwatch-sentinel there and as lagwatch-agent on the master.
std::string Config() {
  std::ifstream in(E().sandbox.config_path());
  json j = json::parse(in, nullptr, true, true);
  json redis = j["redis"];
  redis.erase("host");
  redis.erase("port");
  redis["sentinels"] = json::array();
  for (int p : kSentinels) redis["sentinels"].push_back("127.0.0.1:" + std::to_string(p));
  redis["master_name"] = kName;
  redis["sentinel_username"] = "lagwatch-sentinel";
  const std::string pw = WriteTempFile(kDir, "sentinel.pw", kLagwatchSentinelPw + "\n");
  REQUIRE(chmod(pw.c_str(), 0600) == 0);
  redis["sentinel_password_file"] = pw;
  redis["tls"] = {{"enabled", true},
                  {"ca_file", E().ca},
                  {"cert_file", E().pki.Pem("client")},
                  {"key_file", E().pki.Key("client")}};
  j["redis"] = redis;
  return WriteTempFile(kDir, "lagwatch.json", j.dump(2));
}

// Whether the server on `port` holds both replicas' keys with a record measured after `since`.
bool KeysFreshOn(int port, int64_t since_ms) {
  Redis r(port, Admin());
  for (int i : {1, 2}) {
    auto h = r.HGetAll(E().sandbox.replica_key(i));
    auto at = ParseInt<int64_t>(h["measured_at_ms"]);
    if (!at || *at < since_ms || h["healthy"] != "1") return false;
  }
  return true;
}

int64_t NowMs() { return UnixMillis(SystemClock::Get().WallNow()); }

TEST_CASE(
    "through TLS sentinels with ACL users the agent publishes on the master and follows a "
    "failover") {
  REQUIRE_MESSAGE(WaitFor(SentinelsReady, 60s), "the sentinels never saw the whole set");
  const std::string config = Config();
  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", config});
  INFO(check.output);
  CHECK(check.output.find("redis master " + kName + " of 3 sentinels as lagwatch-agent") !=
        std::string::npos);
  CHECK(check.output.find("server:      127.0.0.1:" + std::to_string(kMaster)) !=
        std::string::npos);
  CHECK(check.output.find("tls:         TLSv1.3") != std::string::npos);
  CHECK(check.output.find("Redis usable") != std::string::npos);

  Agent agent(config, kDir + "/agent.log");
  const int64_t start = NowMs();
  REQUIRE_MESSAGE(WaitFor([&] { return KeysFreshOn(kMaster, start); }, 20s), agent.Log());
  CHECK(agent.Log().find("Redis master for " + kName +
                         " is 127.0.0.1:" + std::to_string(kMaster)) != std::string::npos);

  // The agent's sentinel user may ask for the master, and do nothing else there.
  Redis as_agent(kSentinels[0],
                 RedisLogin{"lagwatch-sentinel", kLagwatchSentinelPw, E().ClientTls()});
  CHECK(as_agent.Command({"SENTINEL", "get-master-addr-by-name", kName}).find("127.0.0.1") == 0);
  CHECK(as_agent.Command({"SENTINEL", "failover", kName}).rfind("NOPERM", 0) == 0);
  CHECK(as_agent.Command({"SENTINEL", "remove", kName}).rfind("NOPERM", 0) == 0);

  // The master dies: the sentinels promote the replica and the agent writes there, over TLS.
  E().master->Stop();
  const int64_t killed = NowMs();
  REQUIRE_MESSAGE(WaitFor([] { return NamedMaster() == kReplica; }, 30s),
                  "no failover to " << kReplica);
  CHECK_MESSAGE(WaitFor([&] { return KeysFreshOn(kReplica, killed); }, 20s), agent.Log());
  CHECK(agent.Log().find("is now 127.0.0.1:" + std::to_string(kReplica)) != std::string::npos);
  CHECK(agent.Stop() == 0);
}

}  // namespace
}  // namespace lagwatch::test
