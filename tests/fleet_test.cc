// Two clusters on one host (docs/operations.md, "Fleets"): two agents on one sandbox, each under
// its own cluster name, Redis prefix and HTTP port, as lagwatch@shop and lagwatch@orders would
// run. Every series, record, event and API answer carries its agent's cluster, and `lagwatch
// status --all` shows both, and an agent that does not answer, from the configuration directory.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kDir = "/tmp/lw-fleet";
const std::string kEtc = kDir + "/etc";  // stands for /etc/lagwatch
constexpr int kBasePort = 31006;         // the sandbox: 31006..31009, shop's HTTP on 31010
constexpr int kOrdersHttp = 31011;
constexpr int kGoneHttp = 31012;  // a configured agent that is not running

// The sandbox's configuration, edited by `edit`, written to kEtc/NAME.json.
std::string WriteConfig(const Sandbox& sandbox, const std::string& name,
                        const std::function<void(json&)>& edit) {
  std::ifstream in(sandbox.config_path());
  json j = json::parse(in, nullptr, true, true);
  edit(j);
  std::filesystem::create_directories(kEtc);
  const std::string path = kEtc + "/" + name + ".json";
  std::ofstream(path) << j.dump(2);
  return path;
}

struct Env {
  Sandbox sandbox{kDir, kBasePort};
  // shop.json names no cluster: the agent is "shop" by LAGWATCH_INSTANCE, as lagwatch@shop is.
  std::string shop_path = WriteConfig(sandbox, "shop", [](json&) {});
  // orders.json names its cluster, and has a prefix of its own (the two watch the same servers:
  // under one prefix their records would be one key's); the sandbox's agent user may write only
  // under slave_delay:, so it logs in as the admin.
  std::string orders_path = WriteConfig(sandbox, "orders", [this](json& j) {
    j["cluster"] = "orders";
    j["agent_id"] = 2;
    j["http"]["listen"] = "127.0.0.1:" + std::to_string(kOrdersHttp);
    j["redis"]["key_prefix"] = "orders";
    j["redis"].erase("username");
    const std::string pw = kDir + "/redis-default.pw";
    std::ofstream(pw) << RedisAdminLogin(sandbox.redis_port()).password << "\n";
    chmod(pw.c_str(), 0600);
    j["redis"]["password_file"] = pw;
  });
  Agent shop{shop_path, kDir + "/shop.log", {"LAGWATCH_INSTANCE=shop"}};
  Agent orders{orders_path, kDir + "/orders.log"};
};

Env& E() {
  static Env env;
  return env;
}

std::string Get(int port, const std::string& path) {
  auto [code, body] = HttpGet(port, path);
  REQUIRE_MESSAGE(code == 200, path << " answered " << code);
  return body;
}

bool BothHealthy(Redis& redis, const std::string& prefix) {
  for (int r : {1, 2}) {
    if (redis.HGetAll(prefix + ":" + E().sandbox.replica_id(r))["healthy"] != "1") return false;
  }
  return true;
}

TEST_CASE("each agent's records, pointer and events carry its own cluster") {
  Redis redis(E().sandbox.redis_port());
  INFO(E().shop.Log() << E().orders.Log());
  REQUIRE(WaitFor([&] { return BothHealthy(redis, "slave_delay") && BothHealthy(redis, "orders"); },
                  10s));
  for (int r : {1, 2}) {
    CHECK(redis.HGetAll("slave_delay:" + E().sandbox.replica_id(r))["cluster"] == "shop");
    CHECK(redis.HGetAll("orders:" + E().sandbox.replica_id(r))["cluster"] == "orders");
  }
  CHECK(redis.HGetAll("slave_delay:primary")["cluster"] == "shop");
  CHECK(redis.HGetAll("orders:primary")["cluster"] == "orders");
  // One primary, two agents: its hash (no prefix) is written by both.
  const std::string primary_cluster =
      redis.HGetAll("lagwatch:primary:" + E().sandbox.primary_id())["cluster"];
  CHECK((primary_cluster == "shop" || primary_cluster == "orders"));

  Subscriber shop_events(E().sandbox.redis_port(), "slave_delay:events");
  Subscriber orders_events(E().sandbox.redis_port(), "orders:events");
  std::this_thread::sleep_for(300ms);  // subscribed before anything changes
  AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
  auto stopped = [](Subscriber& s) {
    for (const auto& e : s.Events()) {
      if (e.value("state", "") == "stopped") return true;
    }
    return false;
  };
  const bool seen = WaitFor([&] { return stopped(shop_events) && stopped(orders_events); }, 5s);
  AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
  REQUIRE(seen);
  for (const auto& e : shop_events.Events()) CHECK(e["cluster"] == "shop");
  for (const auto& e : orders_events.Events()) CHECK(e["cluster"] == "orders");
  CHECK(WaitFor([&] { return BothHealthy(redis, "slave_delay") && BothHealthy(redis, "orders"); },
                10s));
}

TEST_CASE("every sample each agent exposes has its cluster, first; the API names it") {
  for (const auto& [port, cluster] :
       {std::pair{E().sandbox.http_port(), "shop"}, std::pair{kOrdersHttp, "orders"}}) {
    CAPTURE(cluster);
    const std::string metrics = Get(port, "/metrics");
    const std::string first = std::string("{cluster=\"") + cluster + "\"";
    size_t samples = 0;
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      ++samples;
      CAPTURE(line);
      CHECK(line.find(first) == line.find('{'));
    }
    CHECK(samples > 200);
    CHECK(MetricValue(metrics, "lagwatch_build_info" + first + "}") == 1);
    CHECK(MetricValue(metrics, "lagwatch_replica_healthy{cluster=\"" + std::string(cluster) +
                                   "\",replica=\"" + E().sandbox.replica_id(2) + "\"}") == 1);
    for (const char* path : {"/api/v1/replicas", "/api/v1/primary", "/api/v1/router"}) {
      CAPTURE(path);
      CHECK(json::parse(Get(port, path))["cluster"] == cluster);
    }
  }
}

TEST_CASE("lagwatch status names the cluster; --all shows every configured agent") {
  RunResult one;
  const bool healthy = WaitFor(
      [&] {
        one = RunCommand({LagwatchBinary(), "status", "--config", E().shop_path});
        return one.exit_code == 0 &&
               RunCommand({LagwatchBinary(), "status", "--config", E().orders_path}).exit_code == 0;
      },
      10s);
  INFO(one.output);
  REQUIRE(healthy);
  CHECK(one.output.rfind("cluster shop\nprimary " + E().sandbox.primary_id(), 0) == 0);

  // A third agent configured but not running, and a file that is not a lagwatch configuration.
  const std::string gone = WriteConfig(E().sandbox, "gone", [](json& j) {
    j["http"]["listen"] = "127.0.0.1:" + std::to_string(kGoneHttp);
  });
  std::ofstream(kEtc + "/dashboards.json") << R"({"title": "not ours"})";
  RunResult all = RunCommand({LagwatchBinary(), "status", "--all", "--dir", kEtc});
  INFO(all.output);
  CHECK(all.exit_code == 3);  // one is down
  const size_t gone_at = all.output.find("== " + gone +
                                         " (http://127.0.0.1:31012)\n"
                                         "cluster gone: NOT ANSWERING: ");
  const size_t orders_at = all.output.find("== " + E().orders_path +
                                           " (http://127.0.0.1:31011)\n"
                                           "cluster orders\nprimary ");
  const size_t shop_at = all.output.find("== " + E().shop_path +
                                         " (http://127.0.0.1:31010)\n"
                                         "cluster shop\nprimary ");
  CHECK(gone_at == 0);
  CHECK(orders_at != std::string::npos);
  CHECK(shop_at != std::string::npos);
  CHECK(orders_at < shop_at);
  CHECK(all.output.find("dashboards") == std::string::npos);
  for (int r : {1, 2}) {  // each agent's table has both replicas
    const std::string row = E().sandbox.replica_id(r) + " ";
    CHECK(all.output.find(row, orders_at) < shop_at);
    CHECK(all.output.find(row, shop_at) != std::string::npos);
  }

  std::filesystem::remove(gone);
  // Every agent answers: 0 once every replica is healthy too (as above, a sanitized agent on a
  // busy host may call one lagging for a moment: that is exit code 1, not this case's subject).
  RunResult up;
  CHECK(WaitFor(
      [&] {
        up = RunCommand({LagwatchBinary(), "status", "--all", "--dir", kEtc});
        return up.exit_code == 0;
      },
      10s));
  INFO(up.output);
  CHECK(up.output.find("NOT ") == std::string::npos);
}

TEST_CASE("a bad LAGWATCH_INSTANCE fails --check-config naming cluster; the key overrides it") {
  REQUIRE(setenv("LAGWATCH_INSTANCE", "shop eu", 1) == 0);
  RunResult bad = RunCommand({LagwatchBinary(), "--check-config", E().shop_path});
  RunResult named = RunCommand({LagwatchBinary(), "--check-config", E().orders_path});
  REQUIRE(unsetenv("LAGWATCH_INSTANCE") == 0);
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find(": cluster: not set, and the default from LAGWATCH_INSTANCE") !=
        std::string::npos);
  INFO(named.output);
  CHECK(named.exit_code == 0);
  CHECK(named.output == E().orders_path + ": ok (2 replicas)\n");  // nothing new printed
}

TEST_CASE("SIGHUP does not rename a cluster: the refusal names the key") {
  std::ifstream in(E().orders_path);
  json j = json::parse(in, nullptr, true, true);
  j["cluster"] = "orders-eu";
  std::ofstream(E().orders_path) << j.dump(2);
  const size_t before = E().orders.Log().size();
  REQUIRE(kill(E().orders.pid(), SIGHUP) == 0);
  CHECK(WaitFor(
      [&] {
        return E().orders.Log().find("cluster: cannot change at run time", before) !=
               std::string::npos;
      },
      3s));
  CHECK(json::parse(Get(kOrdersHttp, "/api/v1/replicas"))["cluster"] == "orders");
}

}  // namespace
}  // namespace lagwatch::test
