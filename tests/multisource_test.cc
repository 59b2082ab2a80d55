// Multi-source replication on MariaDB, for real (docs/measurement.md, "Replicas with several
// channels"): replica 1 of the sandbox gets two named connections. With one from the primary,
// listed second behind one from a server the agent does not know, it is judged by the primary's
// whatever the other does: stopping the other changes nothing, stopping the primary's SQL thread
// makes it stopped and lagging. With neither from the primary (one from replica 2, a chain the
// topology alone would accept, one to a dead port) it is unverified until one is again.
// The cases run in order on one sandbox; each starts its own agent.
#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <thread>

#include <doctest/doctest.h>

#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;

constexpr int kBase = 30400;       // the sandbox: 30400..30404
constexpr int kOtherPort = 30410;  // a fourth server, outside the configuration
constexpr int kDeadPort = 30411;   // nothing listens there

struct Env {
  Sandbox sandbox{"/tmp/lw-ms", kBase};
};

Env& E() {
  static Env env;
  return env;
}

std::string Primary() { return E().sandbox.socket("primary"); }
std::string Replica1() { return E().sandbox.socket("replica1"); }
std::string Key() { return E().sandbox.replica_key(1); }
std::string Metrics() { return HttpGet(E().sandbox.http_port(), "/metrics").second; }

// A replication account, not binlogged, on the server at `socket`.
void CreateAccount(const std::string& socket) {
  AdminSession a(socket);
  a.Query("SET SESSION sql_log_bin=0");
  a.Query("CREATE USER IF NOT EXISTS 'lw_ms'@'127.0.0.1' IDENTIFIED BY 'mspw'");
  a.Query("GRANT REPLICATION SLAVE ON *.* TO 'lw_ms'@'127.0.0.1'");
}

// Points replica 1's connection `name` ("" for the default one) at 127.0.0.1:`port` and starts
// it: by GTID from what it applied, or (`gtid` false) from the start of the source's binary log.
// `exists`: the connection is there already (it is stopped first).
void Connect(const std::string& name, int port, bool gtid = true, bool exists = true) {
  AdminSession a(Replica1());
  if (exists) a.Query("STOP SLAVE '" + name + "'");
  a.Query("CHANGE MASTER '" + name +
          "' TO MASTER_HOST='127.0.0.1', MASTER_PORT=" + std::to_string(port) +
          ", MASTER_USER='lw_ms', MASTER_PASSWORD='mspw', MASTER_CONNECT_RETRY=1, "
          "MASTER_USE_GTID=" +
          (gtid ? "slave_pos" : "no"));
  a.Query("START SLAVE '" + name + "'");
}

bool CaughtUp() {
  const std::string pos = AdminQuery(Primary(), "SELECT @@gtid_binlog_pos").value_or("");
  return AdminQuery(Replica1(), "SELECT MASTER_GTID_WAIT('" + pos + "', 10)") == "0";
}

bool Is(Redis& redis, const std::string& state, const std::string& healthy) {
  auto h = redis.HGetAll(Key());
  return h["state"] == state && h["healthy"] == healthy;
}

int64_t DelayMs(Redis& redis) {
  return ParseInt<int64_t>(redis.HGetAll(Key())["delay_ms"]).value_or(-1);
}

std::optional<double> SqlThreadGauge() {
  return MetricValue(Metrics(), "lagwatch_replica_sql_thread_running{replica=\"" +
                                    E().sandbox.replica_id(1) + "\"");
}

std::unique_ptr<Agent> StartAgent(Redis& redis, const std::string& name) {
  redis.Command({"FLUSHALL"});
  return std::make_unique<Agent>(E().sandbox.config_path(),
                                 E().sandbox.dir() + "/" + name + ".log");
}

TEST_CASE("a multi-source replica is judged by the primary's connection, though listed second") {
  ExtraServer other(E().sandbox, "other", kOtherPort, 9);
  // Its own GTID domain, as multi-source replication needs (it writes nothing anyway).
  AdminQuery(other.socket(), "SET GLOBAL gtid_domain_id=9");
  CreateAccount(Primary());
  CreateAccount(other.socket());
  // The sandbox's default connection from the primary becomes 'main'; the default connection
  // ('' sorts first in SHOW ALL SLAVES STATUS) comes from the other server.
  AdminQuery(Replica1(), "STOP ALL SLAVES");
  AdminQuery(Replica1(), "RESET SLAVE '' ALL");
  Connect("main", E().sandbox.primary_port(), /*gtid=*/true, /*exists=*/false);
  Connect("", kOtherPort, /*gtid=*/false, /*exists=*/false);
  REQUIRE(CaughtUp());
  {
    AdminSession a(Replica1());
    a.Query("SET @@default_master_connection=''");
    CHECK(a.QueryNamed("SHOW SLAVE STATUS")["Master_Port"] == std::to_string(kOtherPort));
  }

  Redis redis(E().sandbox.redis_port());
  auto agent = StartAgent(redis, "listed-second");
  CHECK_MESSAGE(WaitFor([&] { return Is(redis, "ok", "1"); }, 15s), agent->Log());
  CHECK(agent->Log().find("replica " + E().sandbox.replica_id(1) +
                          ": channel 'main' (one of 2) replicates from the primary (matched by "
                          "server id)") != std::string::npos);
  CHECK(agent->Log().find("every connection read by SHOW ALL SLAVES STATUS") != std::string::npos);

  // The other connection stopped: nothing of the primary's stops. Over two status polls and more
  // the record never says stopped; a sample may lag on a busy host, so ok is waited for after.
  AdminQuery(Replica1(), "STOP SLAVE ''");
  std::set<std::string> states;
  const auto until = std::chrono::steady_clock::now() + 2500ms;
  while (std::chrono::steady_clock::now() < until) {
    states.insert(redis.HGetAll(Key())["state"]);
    std::this_thread::sleep_for(50ms);
  }
  CHECK_MESSAGE(states.count("stopped") == 0, agent->Log());
  CHECK_MESSAGE(WaitFor([&] { return Is(redis, "ok", "1") && DelayMs(redis) < 500; }, 5s),
                RecordVerdict(redis.HGetAll(Key())));
  CHECK(SqlThreadGauge() == 1);

  // The primary's SQL thread stopped: stopped, and the lag grows.
  AdminQuery(Replica1(), "STOP SLAVE 'main' SQL_THREAD");
  CHECK_MESSAGE(WaitFor([&] { return Is(redis, "stopped", "0") && DelayMs(redis) > 1500; }, 10s),
                redis.HGetAll(Key())["state"] << " " << DelayMs(redis) << "\n"
                                              << agent->Log());
  CHECK(SqlThreadGauge() == 0);
  AdminQuery(Replica1(), "START SLAVE 'main' SQL_THREAD");
  CHECK(WaitFor([&] { return Is(redis, "ok", "1") && DelayMs(redis) < 500; }, 10s));

  // lagwatch check says which channel it judged.
  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", E().sandbox.config_path()});
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("status:      SHOW ALL SLAVES STATUS") != std::string::npos);
  CHECK(check.output.find("channel:     channel 'main' (one of 2) replicates from the primary "
                          "(matched by server id); the others are ignored") != std::string::npos);
  CHECK(agent->Stop() == 0);
}

TEST_CASE("a multi-source replica with no connection from the primary is unverified") {
  CreateAccount(E().sandbox.socket("replica2"));
  Redis redis(E().sandbox.redis_port());
  auto agent = StartAgent(redis, "none-from-primary");
  REQUIRE_MESSAGE(WaitFor([&] { return Is(redis, "ok", "1"); }, 15s), agent->Log());
  // The default connection from replica 2 (a configured replica of the primary: a chain the
  // topology accepts), 'main' to a port nothing listens on. Both connections then carry the
  // primary's domain 0, so replica 1 must drop what it has from the other path
  // (gtid_ignore_duplicates: https://mariadb.com/kb/en/gtid/#gtid_ignore_duplicates), or a
  // duplicate GTID stops its SQL thread under gtid_strict_mode; set while every connection is
  // stopped.
  {
    AdminSession a(Replica1());
    a.Query("STOP ALL SLAVES");
    a.Query("SET GLOBAL gtid_ignore_duplicates=ON");
    a.Query("START ALL SLAVES");
  }
  Connect("", E().sandbox.replica_port(2));
  Connect("main", kDeadPort);
  CHECK_MESSAGE(WaitFor([&] { return Is(redis, "unverified", "0"); }, 10s),
                redis.HGetAll(Key())["state"] << "\n"
                                              << agent->Log());
  std::this_thread::sleep_for(1500ms);
  CHECK(Is(redis, "unverified", "0"));
  CHECK(agent->Log().find("replica " + E().sandbox.replica_id(1) +
                          ": none of its 2 replication channels replicates from the primary") !=
        std::string::npos);
  const auto gauge = SqlThreadGauge();  // NaN: no judged channel, no thread to state
  REQUIRE(gauge);
  CHECK(std::isnan(*gauge));

  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", E().sandbox.config_path()});
  CHECK_MESSAGE(check.output.find("WARN: none of its 2 replication channels replicates from the "
                                  "primary: the agent reports it unverified") != std::string::npos,
                check.output);

  // The primary's connection back: judged by it again.
  Connect("main", E().sandbox.primary_port());
  CHECK_MESSAGE(WaitFor([&] { return Is(redis, "ok", "1"); }, 10s), agent->Log());
  CHECK(agent->Stop() == 0);
}

}  // namespace
}  // namespace lagwatch::test
