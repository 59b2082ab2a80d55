// Positions kinds against a real sandbox: `positions: "none"` measures with heartbeat bounds
// only, says what that costs when the band is wider than the tier's limit, and shows the kind in
// the API, lagwatch status and lagwatch_server_info; `auto` on MariaDB uses MariaDB GTID;
// `binlog` compares binary log coordinates (through a rotation, a stopped SQL thread, and a
// missing privilege); `mysql_gtid` on MariaDB says it cannot and falls back to heartbeat bounds.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "base/binlog_coords.h"
#include "base/gtid.h"
#include "base/position.h"
#include "client/record.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kDir = "/tmp/lw-pos";

struct Env {
  Sandbox sandbox{kDir, 28106};
};

Env& E() {
  static Env env;
  return env;
}

// The sandbox's config with `positions` set.
std::string ConfigWith(const std::string& positions) {
  std::ifstream in(E().sandbox.config_path());
  json j = json::parse(in, nullptr, true, true);
  j["positions"] = positions;
  return WriteTempFile(kDir, "positions-" + positions + ".json", j.dump(2));
}

// The running agent's replicas from its API. The keys a test waits for may still be the previous
// test's agent's (they live for their TTL), so the new agent's listener may not be up yet.
json Replicas() {
  std::pair<int, std::string> reply;
  REQUIRE(WaitFor(
      [&] {
        reply = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
        return reply.first == 200;
      },
      5s));
  return json::parse(reply.second)["replicas"];
}

TEST_CASE("positions none: heartbeat bounds only, the cost named, the kind shown everywhere") {
  Agent agent(ConfigWith("none"), kDir + "/none.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  // The sandbox's heartbeats are every 500 ms and tier1's limit is 200 ms: the warning names both.
  CHECK(agent.Log().find("no positions, so its bounds are a band up to heartbeat.interval_ms = "
                         "500 ms wide, above tier1's limit of 200 ms") != std::string::npos);
  for (const auto& r : Replicas()) {
    CAPTURE(r.dump());
    CHECK(r["positions"] == "none");
  }
  // Heartbeat bounds: the upper bound reaches past what GTID bounds would allow at zero lag
  // (about one sampling interval), up to one heartbeat interval, over a few seconds of probes.
  int64_t widest = 0;
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    for (int r : {1, 2}) {
      auto h = redis.HGetAll(E().sandbox.replica_key(r));
      if (h.count("delay_ms")) widest = std::max<int64_t>(widest, std::stoll(h["delay_ms"]));
    }
    std::this_thread::sleep_for(20ms);
  }
  CHECK(widest > 100);
  CHECK(widest < 1000);
  const std::string metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  CHECK(metrics.find("positions=\"none\",role=\"replica\",server=\"" + E().sandbox.replica_id(1)) !=
        std::string::npos);
  CHECK(metrics.find("positions=\"none\",role=\"primary\"") != std::string::npos);
  RunResult status = RunCommand({LagwatchBinary(), "status", "--config", ConfigWith("none")});
  INFO(status.output);
  CHECK(status.output.find("POSITIONS") != std::string::npos);
  CHECK(status.output.find(" none ") != std::string::npos);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("positions auto on MariaDB: mariadb_gtid everywhere, no band warning") {
  Agent agent(ConfigWith("auto"), kDir + "/auto.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  for (const auto& r : Replicas()) CHECK(r["positions"] == "mariadb_gtid");
  CHECK(agent.Log().find("no positions") == std::string::npos);
  const std::string metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  CHECK(metrics.find("positions=\"mariadb_gtid\",role=\"primary\"") != std::string::npos);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("positions other than the five kinds are refused, naming the key") {
  for (const char* kind : {"gtid", "MARIADB_GTID", "file"}) {
    RunResult check = RunCommand({LagwatchBinary(), "--check-config", ConfigWith(kind)});
    CAPTURE(kind);
    CHECK(check.exit_code == 2);
    CHECK(check.output.find("positions: ") != std::string::npos);
  }
}

// Whether the agent's API answers and shows every replica with positions `kind`.
bool AllReplicasUse(const std::string& kind) {
  auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
  if (code != 200) return false;
  json replicas = json::parse(body)["replicas"];
  if (replicas.size() != 2) return false;
  for (const auto& r : replicas) {
    if (r["positions"] != kind) return false;
  }
  return true;
}

// Fails the test if the statement fails.
void Primary(const std::string& sql) { AdminQuery(E().sandbox.socket("primary"), sql); }

// Every delay_ms both replicas published over `span`, sampled every 20 ms.
std::vector<int64_t> Delays(Redis& redis, std::chrono::milliseconds span) {
  std::vector<int64_t> delays;
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    for (int r : {1, 2}) {
      auto h = redis.HGetAll(E().sandbox.replica_key(r));
      if (h.count("delay_ms")) delays.push_back(std::stoll(h["delay_ms"]));
    }
    std::this_thread::sleep_for(20ms);
  }
  return delays;
}

// Checks that position bounds, not heartbeat bounds, measure both replicas at no lag: nine in
// ten bounds in `delays` are under tier1's 200 ms (no false exclusion). Heartbeat bounds sweep
// up to the 500 ms heartbeat period: with positions "none" 83 of 294 were under 200. A fraction
// rather than the widest, because a host stall widens a bound as it should: a sampling interval
// plus a probe and the status poll's round trip is 10-40 ms here, but 205 was seen once under
// ASan beside the TSan suite, right after a rotation.
void ExpectPositionBounds(const std::vector<int64_t>& delays, const std::string& when) {
  REQUIRE(!delays.empty());
  const auto tight = std::count_if(delays.begin(), delays.end(), [](int64_t d) { return d < 200; });
  MESSAGE(when << ": " << tight << " of " << delays.size() << " bounds under 200 ms, widest "
               << *std::max_element(delays.begin(), delays.end()) << " ms");
  CHECK(tight * 10 >= static_cast<int64_t>(delays.size()) * 9);
}

TEST_CASE("positions binlog: coordinates bound the lag tightly, through a rotation and a stop") {
  // The sandbox's writer account reads the primary's coordinates (SHOW BINLOG STATUS) with
  // BINLOG MONITOR.
  Agent agent(ConfigWith("binlog"), kDir + "/binlog.log");
  Redis redis(E().sandbox.redis_port());
  // Published by this agent (the previous test's keys live on for up to a second).
  REQUIRE_MESSAGE(WaitFor([&] { return AllReplicasUse("binlog"); }, 10s), agent.Log());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  // lagwatch_server_info once each server's flavor has been asked.
  CHECK(WaitFor(
      [&] {
        const std::string metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
        return metrics.find("positions=\"binlog\",role=\"primary\"") != std::string::npos &&
               metrics.find("positions=\"binlog\",role=\"replica\",server=\"" +
                            E().sandbox.replica_id(1)) != std::string::npos &&
               metrics.find("positions=\"binlog\",role=\"replica\",server=\"" +
                            E().sandbox.replica_id(2)) != std::string::npos;
      },
      5s));
  ExpectPositionBounds(Delays(redis, 3s), "binlog positions at no lag");
  // Through a rotation the replicas stay healthy and measured by coordinates (the new file's
  // first events are no transactions: no false lag).
  Primary("FLUSH BINARY LOGS");
  ExpectPositionBounds(Delays(redis, 2s), "after a rotation");
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));

  // A stopped SQL thread: the replica falls behind as the heartbeats go on.
  AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
  CHECK_MESSAGE(
      WaitFor([&] { return redis.HGetAll(E().sandbox.replica_key(1))["healthy"] == "0"; }, 5s),
      agent.Log());
  AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
  CHECK_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  CHECK(agent.Log().find("cannot sample") == std::string::npos);
  CHECK(agent.Log().find("bad_position") == std::string::npos);
  CHECK(agent.Stop() == 0);

  // The preflight says the same: coordinates on the primary and on each replica.
  RunResult check = RunCommand({LagwatchBinary(), "check", "--config", ConfigWith("binlog")});
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("positions:   binlog (set in the configuration): ") != std::string::npos);
  CHECK(check.output.find("positions:   binlog: the executed source coordinates = ") !=
        std::string::npos);
}

// Runs an agent with `positions` set to `kind`, which the sandbox cannot give: it must say so
// (each of `said` in its log), measure both replicas anyway, and show them with positions "none".
void ExpectHeartbeatBoundsInstead(const std::string& kind, const std::vector<std::string>& said) {
  Agent agent(ConfigWith(kind), kDir + "/" + kind + "-refused.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  for (const std::string& text : said) {
    const std::string missing = text + " not in the log:\n";
    CHECK_MESSAGE(WaitFor([&] { return agent.Log().find(text) != std::string::npos; }, 5s),
                  missing << agent.Log());
  }
  CHECK(WaitFor([&] { return AllReplicasUse("none"); }, 5s));
  CHECK(agent.Stop() == 0);
}

TEST_CASE("positions binlog without BINLOG MONITOR: an error naming the grant, heartbeat bounds") {
  Primary("REVOKE BINLOG MONITOR ON *.* FROM 'lagwatch_writer'@'127.0.0.1'");
  ExpectHeartbeatBoundsInstead("binlog", {"cannot sample binlog positions", "grant BINLOG MONITOR",
                                          "although positions is \"binlog\""});
  Primary("GRANT BINLOG MONITOR ON *.* TO 'lagwatch_writer'@'127.0.0.1'");
}

TEST_CASE("positions mysql_gtid on MariaDB: it says it cannot, and measures by heartbeats") {
  ExpectHeartbeatBoundsInstead(
      "mysql_gtid", {"cannot sample mysql_gtid positions", "although positions is \"mysql_gtid\""});
}

// Read-your-writes (docs/redis.md, "Read-your-writes"): a write's token, taken on the writing
// session, is included in a replica's published position once the replica has the write, and
// never while it is held behind (asking the replica itself agrees both times: a zero-timeout
// MASTER_GTID_WAIT, or with coordinates its executed position from SHOW SLAVE STATUS, since
// MASTER_POS_WAIT takes a timeout of 0 as "wait forever"); for MariaDB GTIDs and for binary log
// coordinates.
void CheckReadYourWrites(const std::string& kind) {
  CAPTURE(kind);
  Agent agent(ConfigWith(kind == "mariadb_gtid" ? "auto" : kind), kDir + "/ryw-" + kind + ".log");
  Redis redis(E().sandbox.redis_port());
  auto key = [&](int r) { return redis.HGetAll(E().sandbox.replica_key(r)); };
  REQUIRE_MESSAGE(WaitFor(
                      [&] {
                        return key(1)["position_kind"] == kind && key(2)["position_kind"] == kind &&
                               BothReplicasOk(redis, E().sandbox);
                      },
                      10s),
                  agent.Log());
  AdminSession primary(E().sandbox.socket("primary"));
  primary.Query("CREATE TABLE IF NOT EXISTS lwtest.ryw (id INT AUTO_INCREMENT PRIMARY KEY, v INT)");
  const std::string created = *primary.Query("SELECT @@gtid_binlog_pos");
  REQUIRE(AdminQuery(E().sandbox.socket("replica2"),
                     "SELECT MASTER_GTID_WAIT('" + created + "', 10)") == "0");

  // The token as the contract says to take it, and what a replica's published position must be
  // to include it.
  std::optional<Position> token;
  std::string wait_sql;
  // Whether the replica itself says it has the token.
  auto has = [&](int r) {
    AdminSession replica(E().sandbox.socket("replica" + std::to_string(r)));
    if (kind == "mariadb_gtid") return replica.Query(wait_sql) == "0";
    auto st = replica.QueryNamed("SHOW SLAVE STATUS");
    auto executed = ParseBinlogCoords(st["Relay_Master_Log_File"], st["Exec_Master_Log_Pos"]);
    return executed.ok() && Position(executed.value()).Includes(*token);
  };
  auto includes = [&](int r) {
    auto h = key(r);
    if (h["position_kind"] != kind || !token) return false;
    auto pos = client::ParsePosition(token->kind(), h["position"]);
    return pos.ok() && pos->Includes(*token);
  };
  {
    AdminSession held(E().sandbox.socket("replica2"));
    held.Query("FLUSH TABLES WITH READ LOCK");
    primary.Query("INSERT INTO lwtest.ryw (v) VALUES (1)");
    if (kind == "mariadb_gtid") {
      const std::string gtid = *primary.Query("SELECT @@last_gtid");
      auto parsed = GtidPos::Parse(gtid);
      REQUIRE(parsed.ok());
      token = Position(parsed.value());
      wait_sql = "SELECT MASTER_GTID_WAIT('" + gtid + "', 0)";
    } else {
      const auto row = primary.QueryRow("SHOW MASTER STATUS");
      REQUIRE(row.size() >= 2);
      auto parsed = ParseBinlogCoords(row[0], row[1]);
      REQUIRE(parsed.ok());
      token = Position(parsed.value());
    }
    CHECK_MESSAGE(WaitFor([&] { return includes(1); }, 3s), key(1)["position"]);
    CHECK(has(1));
    bool ever = false;
    for (int i = 0; i < 50; ++i) {  // a second of samples
      ever = ever || includes(2);
      std::this_thread::sleep_for(20ms);
    }
    CHECK_FALSE(ever);
    CHECK_FALSE(has(2));
  }
  CHECK_MESSAGE(WaitFor([&] { return includes(2); }, 5s), key(2)["position"]);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("read-your-writes: the published position includes a write's token once it is applied") {
  CheckReadYourWrites("mariadb_gtid");
  CheckReadYourWrites("binlog");
}

}  // namespace
}  // namespace lagwatch::test
