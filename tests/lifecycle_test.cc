// Lifecycle: systemd notification (READY after the first probe round, STATUS, WATCHDOG) through a
// socket the test creates as NOTIFY_SOCKET, and SIGHUP reloads that add, remove and change
// replicas without touching the unchanged ones, and reject what cannot apply.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kDir = "/tmp/lw-lc";

// A datagram socket standing in for systemd's notification socket.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv = {0, 100'000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  // The next datagram, or "" after ~100 ms without one.
  std::string Receive() {
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

struct Env {
  Sandbox sandbox{kDir, 27506};
  std::string config_path = kDir + "/reload.json";
  json base;
  NotifySocket notify{kDir + "/notify.sock"};
  std::unique_ptr<Agent> agent;

  Env() {
    std::ifstream in(sandbox.config_path());
    base = json::parse(in, nullptr, true, true);
    WriteConfig(base);
    agent = std::make_unique<Agent>(
        config_path, kDir + "/agent.log",
        std::vector<std::string>{"NOTIFY_SOCKET=" + kDir + "/notify.sock", "WATCHDOG_USEC=400000"});
  }
  void WriteConfig(const json& j) { std::ofstream(config_path) << j.dump(2); }
};

Env& E() {
  static Env env;
  return env;
}

std::string Key(int replica) { return E().sandbox.replica_key(replica); }

// Sends SIGHUP and waits until the agent's log, past what it held before, contains
// `expect_in_log`.
void Hup(const std::string& expect_in_log) {
  auto before = E().agent->Log().size();
  REQUIRE(kill(E().agent->pid(), SIGHUP) == 0);
  bool logged = WaitFor(
      [&] { return E().agent->Log().find(expect_in_log, before) != std::string::npos; }, 3s);
  INFO(E().agent->Log().substr(before));
  REQUIRE(logged);
}

TEST_CASE("READY=1 comes after the first probe round, with STATUS, then WATCHDOG=1 pings") {
  auto& env = E();
  std::string ready_msg;
  auto until = Clock::now() + 10s;
  while (ready_msg.empty() && Clock::now() < until) {
    std::string m = env.notify.Receive();
    if (m.find("READY=1") != std::string::npos) ready_msg = m;
  }
  INFO(env.agent->Log());
  REQUIRE_FALSE(ready_msg.empty());
  // Every replica had been probed: its record reaches Redis right behind the notification.
  Redis redis(env.sandbox.redis_port());
  CHECK(WaitFor([&] { return !redis.HGetAll(Key(1)).empty() && !redis.HGetAll(Key(2)).empty(); },
                500ms));
  CHECK(ready_msg.find("STATUS=2/2 replicas healthy; primary up; redis connected") !=
        std::string::npos);
  auto metrics = HttpGet(env.sandbox.http_port(), "/metrics").second;
  for (int r : {1, 2}) {
    CHECK(MetricValue(metrics, "lagwatch_probes_total{replica=\"" + env.sandbox.replica_id(r))
              .value_or(0) >= 1);
  }

  int pings = 0;
  auto window = Clock::now() + 2s;
  while (Clock::now() < window) {
    if (env.notify.Receive().find("WATCHDOG=1") != std::string::npos) ++pings;
  }
  MESSAGE(pings << " watchdog pings in 2 s with WATCHDOG_USEC=400000");
  CHECK(pings >= 5);
  CHECK(pings <= 15);
}

TEST_CASE("SIGHUP applies a changed weight to that replica only") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return redis.HGetAll(Key(2))["weight"] == "50"; }, 5s));
  json j = E().base;
  j["replicas"][1]["weight"] = 7;
  E().WriteConfig(j);
  Hup("configuration reloaded: 0 added, 0 removed, 1 restarted, 2 unchanged");
  CHECK(WaitFor([&] { return redis.HGetAll(Key(2))["weight"] == "7"; }, 2s));
  CHECK(redis.HGetAll(Key(1))["weight"] == "50");
  CHECK(WaitFor([&] { return redis.HGetAll(Key(2))["state"] == "ok"; }, 2s));
}

TEST_CASE("SIGHUP removes a replica from Redis and /metrics, and adds it back in another tier") {
  Redis redis(E().sandbox.redis_port());
  json j = E().base;
  json removed = j["replicas"][1];
  j["replicas"].erase(1);
  E().WriteConfig(j);
  Hup("configuration reloaded: 0 added, 1 removed");
  CHECK(WaitFor([&] { return redis.HGetAll(Key(2)).empty(); }, 1s));
  CHECK(redis.SMembers("slave_delay:replicas") ==
        std::vector<std::string>{E().sandbox.replica_id(1)});
  auto metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  CHECK(metrics.find(E().sandbox.replica_id(2)) == std::string::npos);
  CHECK(redis.HGetAll(Key(1))["state"] == "ok");

  removed["tier"] = "tier2";
  j["replicas"].push_back(removed);
  E().WriteConfig(j);
  Hup("configuration reloaded: 1 added, 0 removed");
  CHECK(WaitFor(
      [&] {
        auto h = redis.HGetAll(Key(2));
        return h["tier"] == "tier2" && h["max_delay_ms"] == "1000" && h["state"] == "ok";
      },
      2s));
  auto members = redis.SMembers("slave_delay:replicas");
  CHECK(members.size() == 2);
}

TEST_CASE("an invalid or unreloadable config is rejected and the running one stays") {
  Redis redis(E().sandbox.redis_port());
  std::ofstream(E().config_path) << "{ \"agent_id\": 1,, }";
  Hup("reload rejected");
  json j = E().base;
  j["redis"]["ttl_ms"] = 5000;
  E().WriteConfig(j);
  Hup("reload rejected, keeping the running configuration: redis: cannot change at run time");
  j = E().base;
  j["replicas"][0]["port"] = "x";
  E().WriteConfig(j);
  Hup("replicas[0].port: must be an integer");

  auto metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  CHECK(MetricValue(metrics, "lagwatch_config_reloads_total{result=\"failure\"}") == 3);
  CHECK(MetricValue(metrics, "lagwatch_config_reloads_total{result=\"success\"}") == 3);
  CHECK(kill(E().agent->pid(), 0) == 0);
  // Still the configuration of the last good reload: replica2 in tier2.
  CHECK(redis.HGetAll(Key(2))["tier"] == "tier2");
  CHECK(WaitFor([&] { return redis.HGetAll(Key(1))["state"] == "ok"; }, 2s));
}

TEST_CASE("SIGTERM sends STOPPING=1 and exits 0") {
  REQUIRE(kill(E().agent->pid(), SIGTERM) == 0);
  bool stopping = false;
  auto until = Clock::now() + 2s;
  while (!stopping && Clock::now() < until) {
    stopping = E().notify.Receive().find("STOPPING=1") != std::string::npos;
  }
  CHECK(stopping);
  CHECK(E().agent->Stop() == 0);
}

}  // namespace
}  // namespace lagwatch::test
