// Positions kinds against a real sandbox: `positions: "none"` measures with heartbeat bounds
// only, says what that costs when the band is wider than the tier's limit, and shows the kind in
// the API, lagwatch status and lagwatch_server_info; `auto` on MariaDB uses MariaDB GTID.
#include <chrono>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

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

json Replicas() {
  auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
  REQUIRE(code == 200);
  return json::parse(body)["replicas"];
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
  RunResult status = RunCommand({LAGWATCH_BINARY, "status", "--config", ConfigWith("none")});
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

TEST_CASE("positions kinds not built yet are refused, naming the key") {
  for (const char* kind : {"binlog", "mysql_gtid", "gtid"}) {
    RunResult check = RunCommand({LAGWATCH_BINARY, "--check-config", ConfigWith(kind)});
    CAPTURE(kind);
    CHECK(check.exit_code == 2);
    CHECK(check.output.find("positions: ") != std::string::npos);
  }
}

}  // namespace
}  // namespace lagwatch::test
