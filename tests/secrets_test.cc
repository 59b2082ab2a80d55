// Secrets and least privilege against a real sandbox (issue: hostile input and security): Redis
// AUTH from a password file, no password anywhere the agent shows itself (log, /metrics, the API,
// `lagwatch status`, ps and its environment), the sandbox's grants being exactly those of
// docs/configuration.md, and a missing grant reported by name while the agent keeps measuring.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kDir = "/tmp/lw-sec";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every `password=` value in the sandbox's option files.
std::vector<std::string> OptionFilePasswords(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* f : {"/primary.cnf", "/replica.cnf"}) {
    std::istringstream in(ReadFile(dir + f));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("password=", 0) == 0) out.push_back(line.substr(9));
    }
  }
  return out;
}

// The first line of a password file.
std::string PasswordIn(const std::string& path) {
  std::string pw = ReadFile(path);
  while (!pw.empty() && pw.back() == '\n') pw.pop_back();
  return pw;
}

struct Env {
  // Its Redis wants AUTH from everyone: the agent logs in as lagwatch-agent with the password in
  // a mode-0600 file (the sandbox's lagwatch.json says so).
  Sandbox sandbox{kDir, 27906};
  std::string config_path = sandbox.config_path();
  std::string redis_password = PasswordIn(sandbox.Env("REDIS_AGENT_PASSWORD_FILE"));
  // Every Redis password of the sandbox: the agent's, the routers', the admin's.
  std::vector<std::string> redis_passwords = {redis_password,
                                              PasswordIn(sandbox.Env("REDIS_ROUTER_PASSWORD_FILE")),
                                              PasswordIn(sandbox.Env("REDIS_ADMIN_PASSWORD_FILE"))};
};

Env& E() {
  static Env env;
  return env;
}

std::string State(int replica) {
  const int port = E().sandbox.redis_port();
  return RedisCli(port, RedisAdminLogin(port), {"HGET", E().sandbox.replica_key(replica), "state"})
      .output;
}

TEST_CASE("a wrong Redis password is refused and counted; the right one publishes") {
  E();  // the sandbox first: bringing it up empties its directory
  const std::string wrong = kDir + "/wrong.pw";
  WriteTempFile(kDir, "wrong.pw", "not-the-password\n");
  chmod(wrong.c_str(), 0600);
  std::ifstream in(E().config_path);
  json j = json::parse(in);
  j["redis"]["password_file"] = wrong;
  const std::string wrong_config = WriteTempFile(kDir, "wrong.json", j.dump(2));
  {
    Agent agent(wrong_config, kDir + "/wrong.log");
    const int port = E().sandbox.http_port();
    CHECK(WaitFor(
        [&] {
          auto v = MetricValue(HttpGet(port, "/metrics").second,
                               "lagwatch_redis_errors_total{reason=\"connect\"}");
          return v && *v >= 1;
        },
        10s));
    CHECK(MetricValue(HttpGet(port, "/metrics").second, "lagwatch_redis_connected") == 0.0);
    // The refusal names the server that refused.
    CHECK(agent.Log().find("Redis 127.0.0.1:" + std::to_string(E().sandbox.redis_port()) +
                           " refused AUTH") != std::string::npos);
    CHECK(agent.Stop() == 0);
  }
  Agent agent(E().config_path, kDir + "/agent.log");
  CHECK_MESSAGE(WaitFor([&] { return State(1).find("ok") == 0 && State(2).find("ok") == 0; }, 10s),
                agent.Log());
}

TEST_CASE("no password shows in the log, /metrics, the API, lagwatch status or ps") {
  Agent agent(E().config_path, kDir + "/agent2.log");
  const int port = E().sandbox.http_port();
  REQUIRE(WaitFor([&] { return HttpGet(port, "/readyz").first == 200; }, 10s));
  std::vector<std::string> secrets = OptionFilePasswords(kDir);
  secrets.insert(secrets.end(), E().redis_passwords.begin(), E().redis_passwords.end());
  REQUIRE(secrets.size() >= 5);

  std::vector<std::pair<std::string, std::string>> places;
  places.emplace_back("the agent's log", agent.Log());
  for (const char* path : {"/metrics", "/api/v1/replicas", "/api/v1/primary", "/api/v1/router",
                           "/readyz", "/healthz"}) {
    places.emplace_back(path, HttpGet(port, path).second);
  }
  places.emplace_back("lagwatch status", RunCommand({LagwatchBinary(), "status", "--url",
                                                     "http://127.0.0.1:" + std::to_string(port)})
                                             .output);
  places.emplace_back("ps", RunCommand({"/usr/bin/ps", "-eww", "-o", "pid,args"}).output);
  places.emplace_back("its environment",
                      ReadFile("/proc/" + std::to_string(agent.pid()) + "/environ"));
  places.emplace_back("its command line",
                      ReadFile("/proc/" + std::to_string(agent.pid()) + "/cmdline"));
  for (const auto& secret : secrets) {
    REQUIRE(secret.size() >= 12);
    // The check can fail: the secret is where it belongs.
    CHECK((ReadFile(kDir + "/primary.cnf") + ReadFile(kDir + "/replica.cnf") +
           ReadFile(kDir + "/redis-agent.pw") + ReadFile(kDir + "/redis-router.pw") +
           ReadFile(kDir + "/redis-admin.pw"))
              .find(secret) != std::string::npos);
    for (const auto& [where, text] : places) {
      CAPTURE(where);
      CHECK(!text.empty());
      CHECK(text.find(secret) == std::string::npos);
    }
  }
}

// SHOW GRANTS for `user`@127.0.0.1 on the primary, one line per grant.
std::string Grants(const std::string& user) {
  return RunCommand({"/usr/bin/mariadb", "--no-defaults", "-S", E().sandbox.socket("primary"),
                     "-uroot", "-N", "-e", "SHOW GRANTS FOR '" + user + "'@'127.0.0.1'"})
      .output;
}

TEST_CASE("the sandbox grants exactly the documented privileges: no SUPER, no ALL") {
  const std::string writer = Grants("lagwatch_writer");
  const std::string probe = Grants("lagwatch_probe");
  INFO(writer << probe);
  for (const std::string& g : {writer, probe}) {
    CHECK(g.find("ALL PRIVILEGES") == std::string::npos);
    CHECK(g.find("SUPER") == std::string::npos);
  }
  CHECK(writer.find("GRANT SELECT, INSERT, UPDATE, CREATE ON `heartbeat`.*") != std::string::npos);
  // BINLOG MONITOR: the primary's binary log coordinates, for positions "binlog"; REPLICATION
  // SLAVE: the binary log stream (MariaDB lists both in one line).
  CHECK(writer.find("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.*") != std::string::npos);
  CHECK(probe.find("GRANT SLAVE MONITOR ON *.*") != std::string::npos);
  CHECK(probe.find("GRANT SELECT ON `heartbeat`.*") != std::string::npos);
}

TEST_CASE("a missing grant is named, and the agent keeps measuring") {
  Agent agent(E().config_path, kDir + "/agent3.log");
  const int port = E().sandbox.http_port();
  REQUIRE(WaitFor([&] { return State(1).find("ok") == 0; }, 10s));
  const std::string primary = E().sandbox.socket("primary");
  AdminQuery(primary, "REVOKE SLAVE MONITOR ON *.* FROM 'lagwatch_probe'@'127.0.0.1'");
  // The next status poll is refused: the API and the log name the privilege.
  bool named = WaitFor(
      [&] {
        return HttpGet(port, "/api/v1/replicas").second.find("SLAVE MONITOR") != std::string::npos;
      },
      10s);
  // Lag is still measured (the probe itself needs only SELECT on the heartbeat table): ok while
  // the grant is missing (within a moment: a sanitized agent on a busy host may call a replica
  // lagging briefly).
  CHECK_MESSAGE(WaitFor([&] { return State(1).find("ok") == 0; }, 5s), State(1));
  AdminQuery(primary, "GRANT SLAVE MONITOR ON *.* TO 'lagwatch_probe'@'127.0.0.1'");
  CHECK_MESSAGE(named, agent.Log());
  CHECK(agent.Log().find("SLAVE MONITOR") != std::string::npos);
  // Counted as a server error of whichever replica polled first.
  const std::string metrics = HttpGet(port, "/metrics").second;
  double errors = 0;
  for (int r : {1, 2}) {
    errors +=
        MetricValue(metrics, "lagwatch_probe_errors_total{reason=\"server_error\",replica=\"" +
                                 E().sandbox.replica_id(r))
            .value_or(0);
  }
  CHECK(errors >= 1);

  // Without SELECT on the heartbeat table the probe itself is refused, by name, not a crash.
  AdminQuery(primary, "REVOKE SELECT ON heartbeat.* FROM 'lagwatch_probe'@'127.0.0.1'");
  bool select_named = WaitFor(
      [&] {
        return HttpGet(port, "/api/v1/replicas").second.find("SELECT command denied") !=
               std::string::npos;
      },
      10s);
  AdminQuery(primary, "GRANT SELECT ON heartbeat.* TO 'lagwatch_probe'@'127.0.0.1'");
  CHECK_MESSAGE(select_named, agent.Log());
  CHECK(WaitFor([&] { return State(1).find("ok") == 0 && State(2).find("ok") == 0; }, 10s));
  CHECK(agent.Stop() == 0);
}

TEST_CASE("lagwatch check: every server can be monitored, shown without a secret") {
  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", E().config_path});
  INFO(check.output);
  CHECK(check.exit_code == 0);
  const std::string& out = check.output;
  CHECK(out.find("primary " + E().sandbox.primary_id()) != std::string::npos);
  for (int r : {1, 2}) CHECK(out.find("replica " + E().sandbox.replica_id(r)) != std::string::npos);
  CHECK(out.find("server:      MariaDB 10.") != std::string::npos);
  CHECK(out.find("user:        lagwatch_writer@127.0.0.1") != std::string::npos);
  CHECK(out.find("user:        lagwatch_probe@127.0.0.1") != std::string::npos);
  CHECK(out.find("status:      SHOW REPLICA STATUS") != std::string::npos);
  CHECK(out.find("Slave_*/Master_* names") != std::string::npos);
  CHECK(out.find("threads:     IO Yes, SQL Yes") != std::string::npos);
  CHECK(out.find("source:      " + E().sandbox.primary_id()) != std::string::npos);
  CHECK(out.find("positions:   mariadb_gtid (auto: MariaDB): 0-") != std::string::npos);
  CHECK(out.find("positions:   mariadb_gtid: @@gtid_slave_pos = 0-") != std::string::npos);
  CHECK(out.find("row for agent 1, seq ") != std::string::npos);
  CHECK(out.find("SELECT, INSERT, UPDATE, CREATE on `heartbeat`.`mysql_heartbeat`: granted") !=
        std::string::npos);
  CHECK(out.find("PROBLEM") == std::string::npos);
  CHECK(out.find("3 servers: 3 can be monitored, 0 cannot") != std::string::npos);
  // The grants are shown, their password hashes not; nor any password.
  CHECK(out.find("IDENTIFIED BY <redacted>") != std::string::npos);
  CHECK(out.find("PASSWORD '") == std::string::npos);
  const auto passwords = OptionFilePasswords(E().sandbox.dir());
  REQUIRE(passwords.size() == 2);
  for (const auto& pw : passwords) CHECK(out.find(pw) == std::string::npos);
  for (const auto& pw : E().redis_passwords) CHECK(out.find(pw) == std::string::npos);
}

TEST_CASE("lagwatch check names what stops a server being monitored and exits 1") {
  const std::string primary = E().sandbox.socket("primary");
  AdminQuery(primary, "REVOKE SLAVE MONITOR ON *.* FROM 'lagwatch_probe'@'127.0.0.1'");
  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", E().config_path});
  AdminQuery(primary, "GRANT SLAVE MONITOR ON *.* TO 'lagwatch_probe'@'127.0.0.1'");
  INFO(check.output);
  CHECK(check.exit_code == 1);
  CHECK(check.output.find("PROBLEM: SHOW REPLICA STATUS failed") != std::string::npos);
  CHECK(check.output.find("grant SLAVE MONITOR") != std::string::npos);
  CHECK(check.output.find("3 servers: 1 can be monitored, 2 cannot") != std::string::npos);

  // A replica nothing listens for.
  std::ifstream in(E().config_path);
  json j = json::parse(in, nullptr, true, true);
  j["replicas"][1]["port"] = E().sandbox.primary_port() + 9;
  const std::string gone = WriteTempFile(kDir, "gone.json", j.dump());
  check = RunCommand({LagwatchBinary(), "check", "--config", gone});
  INFO(check.output);
  CHECK(check.exit_code == 1);
  CHECK(check.output.find("PROBLEM: cannot connect or query") != std::string::npos);
  CHECK(check.output.find("3 servers: 2 can be monitored, 1 cannot") != std::string::npos);

  // A bad configuration names the key and exits 2; no argument is a usage error.
  j["probe"] = {{"interval_ms", "fast"}};
  const std::string bad = WriteTempFile(kDir, "bad.json", j.dump());
  check = RunCommand({LagwatchBinary(), "check", "--config", bad});
  CHECK(check.exit_code == 2);
  CHECK(check.output.find("probe.interval_ms") != std::string::npos);
  CHECK(RunCommand({LagwatchBinary(), "check"}).exit_code == 2);
}

}  // namespace
}  // namespace lagwatch::test
