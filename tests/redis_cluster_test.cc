// Redis Cluster for real (base/redis_cluster.h): a local cluster of three masters and three
// replicas made with redis-cli --cluster create; keys routed to their masters across the shards,
// a slot resharded while it is used (ASK during the migration, MOVED after), and a master killed
// while it is used (its replica promoted, the client following the new map).
#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "base/redis_client.h"
#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;

constexpr int kBasePort = 30606;  // 30606..30611, cluster bus 40606..40611

RedisCluster3x2& Cluster() {
  static RedisCluster3x2 cluster("/tmp/lw-rc", kBasePort);
  return cluster;
}

RedisConfig Config() {
  RedisConfig c;
  c.cluster = Cluster().seeds();
  return c;
}

std::string Str(const RedisReply& r) { return r ? ReplyText(*r) : "<none>"; }

TEST_CASE("redis cluster: each key goes to its own master, pipelined across the shards") {
  auto cluster = RedisClient::Open(Config(), 2000ms);
  REQUIRE_MESSAGE(cluster.ok(), cluster.status().message());
  CHECK((*cluster)->masters().size() == 3);
  std::vector<RedisUnit> sets, gets;
  for (int i = 0; i < 60; ++i) {
    const std::string key = "lw:key:" + std::to_string(i);
    sets.push_back({key, {{"SET", key, "v" + std::to_string(i)}}});
    gets.push_back({key, {{"GET", key}}});
  }
  auto set = (*cluster)->Run(sets);
  REQUIRE_MESSAGE(set.ok(), set.status().message());
  auto got = (*cluster)->Run(gets);
  REQUIRE(got.ok());
  std::set<int> masters_used;
  for (int i = 0; i < 60; ++i) {
    const std::string key = "lw:key:" + std::to_string(i);
    REQUIRE((*got)[static_cast<size_t>(i)].size() == 1);
    CHECK(Str((*got)[static_cast<size_t>(i)][0]) == "v" + std::to_string(i));
    // The key is on the master the cluster itself names, and nowhere else.
    const int port = Cluster().MasterPortOf(key, kBasePort);
    masters_used.insert(port);
    CHECK(std::string(Trim(Cluster().Cli(port, {"GET", key}))) == "v" + std::to_string(i));
  }
  CHECK(masters_used.size() == 3);
  // A unit of several commands for one key's slot runs back to back on its master.
  auto multi = (*cluster)->Run({{"{lw}:a", {{"SET", "{lw}:a", "1"}, {"INCR", "{lw}:a"}}}});
  REQUIRE(multi.ok());
  CHECK((*multi)[0][1]->integer == 2);
}

TEST_CASE("redis cluster: a slot resharded while in use is followed (ASK, then MOVED)") {
  auto cluster = RedisClient::Open(Config(), 2000ms);
  REQUIRE(cluster.ok());
  const std::string key = "lw:resharded";
  REQUIRE((*cluster)->Run({{key, {{"SET", key, "before"}}}}).ok());
  const int from = Cluster().MasterPortOf(key, kBasePort);
  int to = 0;
  for (int port :
       {kBasePort, kBasePort + 1, kBasePort + 2, kBasePort + 3, kBasePort + 4, kBasePort + 5}) {
    if (port != from && Cluster().Cli(port, {"ROLE"}).find("master") != std::string::npos) {
      to = port;
      break;
    }
  }
  REQUIRE(to != 0);
  const std::string slot(Trim(Cluster().Cli(from, {"CLUSTER", "KEYSLOT", key})));
  const std::string to_id(Trim(Cluster().Cli(to, {"CLUSTER", "MYID"})));
  const std::string from_id(Trim(Cluster().Cli(from, {"CLUSTER", "MYID"})));
  // The migration as redis-cli --cluster reshard makes it, stopped halfway: the key has moved,
  // the slot not yet.
  Cluster().Cli(to, {"CLUSTER", "SETSLOT", slot, "IMPORTING", from_id});
  Cluster().Cli(from, {"CLUSTER", "SETSLOT", slot, "MIGRATING", to_id});
  const std::string migrated =
      Cluster().Cli(from, {"MIGRATE", "127.0.0.1", std::to_string(to), key, "0", "5000"});
  REQUIRE_MESSAGE(migrated.find("OK") != std::string::npos, migrated);
  auto during = (*cluster)->Run({{key, {{"GET", key}}}, {key, {{"SET", key, "during"}}}});
  REQUIRE(during.ok());
  CHECK(Str((*during)[0][0]) == "before");  // read from the target after ASK
  CHECK(Str((*during)[1][0]) == "OK");
  CHECK(std::string(Trim(Cluster().Cli(to, {"-c", "GET", key}))) == "during");
  // The migration finishes: every master learns the slot's new owner; the old one says MOVED.
  for (int port : {from, to}) Cluster().Cli(port, {"CLUSTER", "SETSLOT", slot, "NODE", to_id});
  REQUIRE(WaitFor([&] { return Cluster().MasterPortOf(key, kBasePort) == to; }, 10s));
  auto after = (*cluster)->Run({{key, {{"GET", key}}}});
  REQUIRE(after.ok());
  CHECK(Str((*after)[0][0]) == "during");
  // Put the slot back, so that the other cases see the usual layout.
  Cluster().Cli(from, {"CLUSTER", "SETSLOT", slot, "IMPORTING", to_id});
  Cluster().Cli(to, {"CLUSTER", "SETSLOT", slot, "MIGRATING", from_id});
  Cluster().Cli(to, {"MIGRATE", "127.0.0.1", std::to_string(from), key, "0", "5000"});
  for (int port : {from, to}) Cluster().Cli(port, {"CLUSTER", "SETSLOT", slot, "NODE", from_id});
  REQUIRE(WaitFor([&] { return Cluster().MasterPortOf(key, kBasePort) == from; }, 10s));
}

TEST_CASE("redis cluster: a killed master's replica is promoted and the client follows it") {
  auto cluster = RedisClient::Open(Config(), 500ms);
  REQUIRE(cluster.ok());
  const std::string key = "lw:failover";
  REQUIRE((*cluster)->Run({{key, {{"SET", key, "1"}}}}).ok());
  const int victim = Cluster().MasterPortOf(key, kBasePort);
  const int ask = victim == kBasePort ? kBasePort + 1 : kBasePort;
  Cluster().Kill(victim);
  // Writes fail while the cluster has no master for the slot, then succeed on the promoted
  // replica: the client reads the map again by itself.
  const auto start = std::chrono::steady_clock::now();
  bool written = false;
  while (!written && std::chrono::steady_clock::now() - start < 15s) {
    auto r = (*cluster)->Run({{key, {{"INCR", key}}}});
    written = r.ok() && (*r)[0][0] && (*r)[0][0]->type == REDIS_REPLY_INTEGER;
    if (!written) std::this_thread::sleep_for(50ms);
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(written, "no write within 15 s of the master's death");
  MESSAGE("written again " << took << " s after the master was killed");
  const int promoted = Cluster().MasterPortOf(key, ask);
  CHECK(promoted != victim);
  CHECK(promoted != 0);
  for (const Endpoint& m : (*cluster)->masters()) CHECK(m.port != victim);
}

}  // namespace
}  // namespace lagwatch::test
