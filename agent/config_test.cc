#include "agent/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "agent/reload.h"
#include "heartbeat/writer.h"

namespace lagwatch {
namespace {

using nlohmann::json;

json Valid() {
  return json::parse(R"({
    "agent_id": 1,
    "primary":   { "host": "127.0.0.1", "port": 3306, "defaults_file": "/etc/lagwatch/primary.cnf" },
    "replica_defaults_file": "/etc/lagwatch/replica.cnf",
    "heartbeat": { "table": "heartbeat.mysql_heartbeat", "interval_ms": 500, "create_table": true },
    "sampler":   { "interval_ms": 20 },
    "probe":     { "interval_ms": 200, "timeout_ms": 150, "status_interval_ms": 1000 },
    "tiers": [ { "name": "tier1", "max_delay_ms": 200 },
               { "name": "tier2", "max_delay_ms": 1000 },
               { "name": "tier3", "max_delay_ms": null, "enabled": false } ],
    "replicas": [ { "host": "127.0.0.1", "port": 3307, "tier": "tier1", "weight": 50 },
                  { "host": "127.0.0.1", "port": 3308, "tier": "tier2", "weight": 50 } ],
    "redis": { "host": "127.0.0.1", "port": 6379, "key_prefix": "slave_delay", "ttl_ms": 1000 },
    "http":  { "listen": "127.0.0.1:9877" },
    "slo":   { "delay_ms": 200 }
  })");
}

// Expects `j` to be rejected with a message that starts with `key`.
void ExpectRejected(const json& j, const std::string& key);

// The valid config with `edit` applied must be rejected naming `key`.
void Rejects(const std::function<void(json&)>& edit, const std::string& key) {
  json j = Valid();
  edit(j);
  ExpectRejected(j, key);
}

void ExpectRejected(const json& j, const std::string& key) {
  auto r = ParseConfig(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  INFO("message: " << r.status().message());
  CHECK(r.status().message().rfind(key + ":", 0) == 0);
}

TEST_CASE("the documented example config parses with every value kept") {
  auto r = ParseConfig(Valid().dump());
  REQUIRE(r.ok());
  const Config& c = r.value();
  CHECK(c.agent_id == 1);
  CHECK(c.primary.Id() == "127.0.0.1:3306");
  CHECK(c.primary_defaults_file == "/etc/lagwatch/primary.cnf");
  CHECK(c.heartbeat.database == "heartbeat");
  CHECK(c.heartbeat.table == "mysql_heartbeat");
  CHECK(c.heartbeat.interval_ms == 500);
  CHECK(c.sampler_interval_ms == 20);
  CHECK(c.probe.timeout_ms == 150);
  REQUIRE(c.tiers.size() == 3);
  CHECK(c.tiers[2].max_delay_ms == std::nullopt);
  CHECK_FALSE(c.tiers[2].enabled);
  REQUIRE(c.replicas.size() == 2);
  CHECK(c.replicas[1].tier == "tier2");
  CHECK(c.Tier("tier2").max_delay_ms == 1000);
  CHECK(c.redis.ttl_ms == 1000);
  CHECK(c.http_listen == "127.0.0.1:9877");
}

TEST_CASE("comments are allowed and omitted sections take the documented defaults") {
  auto r = ParseConfig(R"({
    // the minimum
    "primary": { "host": "db1", "defaults_file": "/p.cnf" },
    "replica_defaults_file": "/r.cnf",  /* probers */
    "replicas": [ { "host": "db2" } ]
  })");
  REQUIRE(r.ok());
  CHECK(r->heartbeat.interval_ms == 500);
  CHECK(r->probe.interval_ms == 200);
  CHECK(r->probe.timeout_ms == 150);
  CHECK(r->tiers.size() == 3);
  CHECK(r->replicas[0].tier == "tier1");
  CHECK(r->replicas[0].endpoint.port == 3306);
  CHECK(r->redis.key_prefix == "slave_delay");
}

TEST_CASE("an unknown key is rejected with its path") {
  Rejects([](json& j) { j["probe"]["interval"] = 200; }, "probe.interval");
  Rejects([](json& j) { j["replicas"][1]["wieght"] = 5; }, "replicas[1].wieght");
  Rejects([](json& j) { j["verbose"] = true; }, "verbose");
}

TEST_CASE("a wrong type is rejected with the key") {
  Rejects([](json& j) { j["probe"]["interval_ms"] = "200"; }, "probe.interval_ms");
  Rejects([](json& j) { j["heartbeat"]["create_table"] = 1; }, "heartbeat.create_table");
  Rejects([](json& j) { j["replicas"][0]["port"] = 3307.5; }, "replicas[0].port");
  Rejects([](json& j) { j["replicas"] = json::object(); }, "replicas");
}

TEST_CASE("out-of-range intervals are rejected with the key") {
  Rejects([](json& j) { j["probe"]["interval_ms"] = 0; }, "probe.interval_ms");
  Rejects([](json& j) { j["heartbeat"]["interval_ms"] = 10; }, "heartbeat.interval_ms");
  Rejects([](json& j) { j["sampler"]["interval_ms"] = -5; }, "sampler.interval_ms");
  // A timeout longer than the 200 ms cadence it serves.
  Rejects([](json& j) { j["probe"]["timeout_ms"] = 300; }, "probe.timeout_ms");
  Rejects([](json& j) { j["probe"]["status_interval_ms"] = 100; }, "probe.status_interval_ms");
  // Following commits: off (0), or at least the minimum probe gap and under the interval.
  Rejects([](json& j) { j["probe"]["after_commit_ms"] = 3; }, "probe.after_commit_ms");
  Rejects([](json& j) { j["probe"]["after_commit_ms"] = 200; }, "probe.after_commit_ms");
  Rejects([](json& j) { j["probe"]["after_commit_ms"] = -1; }, "probe.after_commit_ms");
  Rejects([](json& j) { j["redis"]["ttl_ms"] = 5; }, "redis.ttl_ms");
}

TEST_CASE("commits are followed every 10 ms by default, where that is under the probe interval") {
  auto parsed = [](const std::function<void(json&)>& edit) {
    json j = Valid();
    edit(j);
    auto r = ParseConfig(j.dump());
    REQUIRE(r.ok());
    return r->probe.after_commit_ms;
  };
  CHECK(parsed([](json&) {}) == 10);
  CHECK(parsed([](json& j) { j["probe"]["after_commit_ms"] = 0; }) == 0);
  CHECK(parsed([](json& j) { j["probe"]["after_commit_ms"] = 25; }) == 25);
  // A 10 ms interval leaves no room: off, not a rejected default.
  CHECK(parsed([](json& j) {
          j["probe"] = {{"interval_ms", 10}, {"timeout_ms", 10}, {"status_interval_ms", 10}};
        }) == 0);
  CHECK(parsed([](json& j) {
          j["probe"] = {{"interval_ms", 11}, {"timeout_ms", 10}, {"status_interval_ms", 11}};
        }) == 10);
}

TEST_CASE("bad heartbeat table identifiers are rejected") {
  const std::string too_long(65, 'a');
  for (const std::string& bad : std::vector<std::string>{
           "heartbeat", "hb.t; DROP TABLE x", "a.b.c", "`hb`.`t`", ".t", "hb.", "hb.t--", "hb .t",
           "hb.t`; DROP DATABASE mysql; --", "hb.t' OR '1'='1", "hb.t\" OR 1=1", "hb.t/**/",
           "hb.t\nDROP", std::string("hb.t\0x", 6), "hb.t\u00e9", "hb." + too_long, too_long + ".t",
           "hb.t)", "hb.$(id)"}) {
    json j = Valid();
    j["heartbeat"]["table"] = bad;
    INFO("table: " << bad);
    ExpectRejected(j, "heartbeat.table");
  }
}

TEST_CASE("duplicate replicas, a replica that is the primary and unknown tiers are rejected") {
  Rejects([](json& j) { j["replicas"][1]["port"] = 3307; }, "replicas[1]");
  Rejects([](json& j) { j["replicas"][0]["port"] = 3306; }, "replicas[0]");
  Rejects([](json& j) { j["replicas"][0]["tier"] = "gold"; }, "replicas[0].tier");
  Rejects([](json& j) { j["tiers"][1]["name"] = "tier1"; }, "tiers[1].name");
}

TEST_CASE("the primary's tier and weight as a replica: the first tier and 1, or as given") {
  json j = Valid();
  auto c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  CHECK(c->primary_tier == c->tiers.front().name);
  CHECK(c->primary_weight == 1);
  j["primary"]["tier"] = "tier2";
  j["primary"]["weight"] = 30;
  c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  const auto servers = c->Servers();
  REQUIRE(servers.size() == c->replicas.size() + 1);
  CHECK(servers.front().endpoint == c->primary);
  CHECK(servers.front().tier == "tier2");
  CHECK(servers.front().weight == 30);
  CHECK(servers[1].endpoint == c->replicas.front().endpoint);
  Rejects([](json& j) { j["primary"]["tier"] = "gold"; }, "primary.tier");
  Rejects([](json& j) { j["primary"]["weight"] = 1001; }, "primary.weight");
}

TEST_CASE("discovery: off by default; its keys checked, its tier the last enabled one") {
  json j = Valid();
  auto c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  CHECK_FALSE(c->discovery.enabled);
  j["discovery"] = {{"enabled", true}, {"interval_ms", 500}, {"grace_ms", 2000}, {"weight", 7}};
  c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  CHECK(c->discovery.enabled);
  CHECK(c->discovery.interval_ms == 500);
  CHECK(c->discovery.grace_ms == 2000);
  CHECK(c->discovery.weight == 7);
  std::string last_enabled;
  for (const auto& t : c->tiers) {
    if (t.enabled) last_enabled = t.name;
  }
  CHECK(c->discovery.tier == last_enabled);
  Rejects([](json& j) { j["discovery"] = {{"enabled", "yes"}}; }, "discovery.enabled");
  Rejects([](json& j) { j["discovery"] = {{"tier", "gold"}}; }, "discovery.tier");
  Rejects([](json& j) { j["discovery"] = {{"interval_ms", 50}}; }, "discovery.interval_ms");
  Rejects(
      [](json& j) {
        j["discovery"] = {{"interval_ms", 5000}, {"grace_ms", 1000}};
      },
      "discovery.grace_ms");
  Rejects([](json& j) { j["discovery"] = {{"max_replicas", 0}}; }, "discovery.max_replicas");
  Rejects([](json& j) { j["discovery"] = {{"hosts", 1}}; }, "discovery.hosts");
}

TEST_CASE("binlog_stream: on by default, its server id derived from agent_id; keys checked") {
  json j = Valid();
  auto c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  CHECK(c->binlog_stream.enabled);
  CHECK(c->binlog_stream.heartbeat_ms == 10);
  CHECK(c->binlog_stream.max_lag_ms == 50);
  CHECK(c->binlog_stream.min_delivery_ms == 1);
  CHECK_FALSE(c->binlog_stream.watch_writes);
  CHECK(c->binlog_stream.ServerId(1) == 4294967294u);
  CHECK(c->binlog_stream.ServerId(7) == 4294967288u);
  j["binlog_stream"] = {{"enabled", false}, {"server_id", 9000},    {"heartbeat_ms", 20},
                        {"max_lag_ms", 80}, {"min_delivery_ms", 0}, {"watch_writes", true}};
  c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  CHECK_FALSE(c->binlog_stream.enabled);
  CHECK(c->binlog_stream.watch_writes);
  CHECK(c->binlog_stream.ServerId(1) == 9000u);
  CHECK(c->binlog_stream.heartbeat_ms == 20);
  CHECK(c->binlog_stream.max_lag_ms == 80);
  CHECK(c->binlog_stream.min_delivery_ms == 0);
  Rejects([](json& j) { j["binlog_stream"] = {{"enabled", 1}}; }, "binlog_stream.enabled");
  Rejects(
      [](json& j) {
        j["binlog_stream"] = {{"server_id", 4294967296LL}};
      },
      "binlog_stream.server_id");
  Rejects(
      [](json& j) {
        j["binlog_stream"] = {{"heartbeat_ms", 0}};
      },
      "binlog_stream.heartbeat_ms");
  Rejects([](json& j) { j["binlog_stream"] = {{"max_lag_ms", 0}}; }, "binlog_stream.max_lag_ms");
  Rejects(
      [](json& j) {
        j["binlog_stream"] = {{"min_delivery_ms", 1001}};
      },
      "binlog_stream.min_delivery_ms");
  Rejects([](json& j) { j["binlog_stream"] = {{"period", 5}}; }, "binlog_stream.period");
  Rejects(
      [](json& j) {
        j["binlog_stream"] = {{"watch_writes", "yes"}};
      },
      "binlog_stream.watch_writes");
}

TEST_CASE("missing required keys are named") {
  Rejects([](json& j) { j.erase("primary"); }, "primary");
  Rejects([](json& j) { j["primary"].erase("defaults_file"); }, "primary.defaults_file");
  Rejects([](json& j) { j.erase("replica_defaults_file"); }, "replica_defaults_file");
}

TEST_CASE("cluster: the key, else LAGWATCH_INSTANCE, else the configured primary's host:port") {
  json j = Valid();
  auto derived = ParseConfig(j.dump(), std::nullopt);
  REQUIRE(derived.ok());
  CHECK(derived->cluster == "127.0.0.1:3306");
  auto instance = ParseConfig(j.dump(), "shop");
  REQUIRE(instance.ok());
  CHECK(instance->cluster == "shop");
  j["cluster"] = "orders-eu.1:a_b";
  for (const auto& env : {std::optional<std::string>(), std::optional<std::string>("shop")}) {
    auto named = ParseConfig(j.dump(), env);
    REQUIRE(named.ok());
    CHECK(named->cluster == "orders-eu.1:a_b");  // the key wins over the instance name
  }
}

TEST_CASE("a bad cluster name is refused naming cluster, and where a bad default came from") {
  for (const std::string& bad : std::vector<std::string>{
           "", "shop eu", "shop/eu", "a{b}", "a\nb", "sh\u00f6p", "a\"b", std::string(65, 'c')}) {
    json j = Valid();
    j["cluster"] = bad;
    INFO("cluster: " << bad);
    ExpectRejected(j, "cluster");
    auto from_env = ParseConfig(Valid().dump(), bad);
    REQUIRE_FALSE(from_env.ok());
    CHECK(from_env.status().message().rfind("cluster: ", 0) == 0);
    CHECK(from_env.status().message().find("LAGWATCH_INSTANCE") != std::string::npos);
  }
  Rejects([](json& j) { j["cluster"] = 7; }, "cluster");
  CHECK(ParseConfig(Valid().dump(), std::string(64, 'c')).ok());
  // A primary whose host:port is too long to be the default must be named.
  json j = Valid();
  j["primary"]["host"] = std::string(60, 'h') + ".example";
  auto r = ParseConfig(j.dump(), std::nullopt);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().rfind("cluster: not set", 0) == 0);
  j["cluster"] = "long";
  CHECK(ParseConfig(j.dump(), std::nullopt).ok());
}

TEST_CASE("InstanceFromEnvironment reads LAGWATCH_INSTANCE; ParseConfig uses it by default") {
  REQUIRE(unsetenv("LAGWATCH_INSTANCE") == 0);
  CHECK(InstanceFromEnvironment() == std::nullopt);
  CHECK(ParseConfig(Valid().dump())->cluster == "127.0.0.1:3306");
  REQUIRE(setenv("LAGWATCH_INSTANCE", "shop", 1) == 0);
  CHECK(InstanceFromEnvironment() == "shop");
  CHECK(ParseConfig(Valid().dump())->cluster == "shop");
  REQUIRE(setenv("LAGWATCH_INSTANCE", "", 1) == 0);
  CHECK(InstanceFromEnvironment() == "");
  CHECK_FALSE(ParseConfig(Valid().dump()).ok());
  REQUIRE(unsetenv("LAGWATCH_INSTANCE") == 0);
}

TEST_CASE("the cluster cannot change on a reload: the refusal names the key") {
  Config running = ParseConfig(Valid().dump(), "shop").value();
  Config next = running;
  CHECK(FirstUnreloadableChange(running, next).empty());
  next.cluster = "orders";
  CHECK(FirstUnreloadableChange(running, next) == "cluster");
  // The stream's keys take effect at start only: a reload that changes one is refused by name.
  next = running;
  next.binlog_stream.watch_writes = !running.binlog_stream.watch_writes;
  CHECK(FirstUnreloadableChange(running, next) == "binlog_stream");
}

TEST_CASE("bad listen addresses and key prefixes are rejected") {
  Rejects([](json& j) { j["http"]["listen"] = "9877"; }, "http.listen");
  Rejects([](json& j) { j["http"]["listen"] = "127.0.0.1:99999"; }, "http.listen");
  // Key prefixes go into Redis keys and channel names: no spaces, glob characters, line breaks or
  // protocol bytes (one hash tag is allowed: "a key prefix may hold one hash tag").
  for (const std::string& bad : std::vector<std::string>{
           "slave delay", "", "a*", "a?", "a[b]", "{ta g}", "a\r\nFLUSHALL", "a\nb", "$5",
           std::string("a\0b", 3), std::string(65, 'k'), "sl\u00e4ve"}) {
    json j = Valid();
    j["redis"]["key_prefix"] = bad;
    INFO("prefix: " << bad);
    ExpectRejected(j, "redis.key_prefix");
  }
}

TEST_CASE("an accepted heartbeat table is backquoted in every statement built from it") {
  json j = Valid();
  j["heartbeat"]["table"] = "hb_$1.T_2";
  auto c = ParseConfig(j.dump());
  REQUIRE(c.ok());
  HeartbeatSql sql(c->heartbeat, c->agent_id);
  for (const std::string* stmt : {&sql.create_table, &sql.read_own_seq, &sql.upsert_prefix,
                                  &sql.probe, &sql.probe_heartbeat_only}) {
    INFO(*stmt);
    CHECK(stmt->find("`hb_$1`.`T_2`") != std::string::npos);
    CHECK(stmt->find("hb_$1.T_2") == std::string::npos);
  }
  CHECK(sql.create_database == "CREATE DATABASE IF NOT EXISTS `hb_$1`");
}

TEST_CASE("http limits default to 4 connections, 16 KiB requests, 5 s; bad ones name the key") {
  auto r = ParseConfig(Valid().dump());
  REQUIRE(r.ok());
  CHECK(r->http.max_connections == 4);
  CHECK(r->http.max_request_bytes == 16384);
  CHECK(r->http.request_timeout_ms == 5000);
  CHECK(r->http.web_config_file.empty());
  CHECK_FALSE(r->http.web.tls());
  CHECK_FALSE(r->http.web.auth());
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, json>>{{"max_connections", 0},
                                                 {"max_connections", 65},
                                                 {"max_request_bytes", 100},
                                                 {"request_timeout_ms", 50},
                                                 {"web_config_file", ""},
                                                 {"web_config_file", 7}}) {
    json j = Valid();
    j["http"][key] = value;
    ExpectRejected(j, "http." + key);
  }
}

TEST_CASE("http.web_config_file is read with the config; its errors name the key and the file") {
  char dir[] = "/tmp/lw-config-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string web = std::string(dir) + "/web.yml";
  json j = Valid();
  j["http"]["web_config_file"] = web;
  ExpectRejected(j, "http.web_config_file");
  CHECK(ParseConfig(j.dump()).status().message().find(web + ": cannot open") != std::string::npos);

  const std::string hash = "$2y$04$" + std::string(53, 'a');
  std::ofstream(web) << "basic_auth_users:\n  prometheus: " << hash << "\n";
  auto r = ParseConfig(j.dump());
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->http.web.basic_auth_users.at("prometheus") == hash);

  std::ofstream(web) << "basic_auth_users:\n  prometheus: secret\n";
  ExpectRejected(j, "http.web_config_file");
  std::remove(web.c_str());
  rmdir(dir);
}

// The valid config with its Redis server replaced by sentinels.
json WithSentinels() {
  json j = Valid();
  j["redis"].erase("host");
  j["redis"].erase("port");
  j["redis"]["sentinels"] = {"10.0.0.5:26379", "[::1]:26380", "sentinel-3.example.com:26379"};
  j["redis"]["master_name"] = "lag-master";
  return j;
}

// WithSentinels() with `edit` applied must be rejected naming `key`.
void RejectsSentinels(const std::function<void(json&)>& edit, const std::string& key) {
  json j = WithSentinels();
  edit(j);
  ExpectRejected(j, key);
}

TEST_CASE("redis.sentinels and redis.master_name are read; without them there are none") {
  auto r = ParseConfig(WithSentinels().dump());
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  REQUIRE(r->redis.sentinels.size() == 3);
  CHECK(r->redis.sentinels[0] == Endpoint{"10.0.0.5", 26379});
  CHECK(r->redis.sentinels[1] == Endpoint{"::1", 26380});
  CHECK(r->redis.sentinels[2] == Endpoint{"sentinel-3.example.com", 26379});
  CHECK(r->redis.master_name == "lag-master");
  CHECK(r->redis.sentinel_password_file.empty());
  CHECK(r->redis.key_prefix == "slave_delay");

  auto plain = ParseConfig(Valid().dump());
  REQUIRE(plain.ok());
  CHECK(plain->redis.sentinels.empty());
  CHECK(plain->redis.master_name.empty());
}

TEST_CASE("bad sentinel lists are rejected naming the key or the entry") {
  for (const json& bad : {json::array(), json("10.0.0.5:26379"), json(26379), json::object()}) {
    json j = WithSentinels();
    j["redis"]["sentinels"] = bad;
    INFO("sentinels: " << bad.dump());
    ExpectRejected(j, "redis.sentinels");
  }
  for (const json& bad : {json("10.0.0.5"), json("10.0.0.5:0"), json("10.0.0.5:65536"),
                          json(":26379"), json("10.0.0.5:-1"), json("a b:26379"), json(""),
                          json(26379), json("10.0.0.5:26379\nx"), json("[::1:26379")}) {
    json j = WithSentinels();
    j["redis"]["sentinels"][1] = bad;
    INFO("sentinel: " << bad.dump());
    ExpectRejected(j, "redis.sentinels[1]");
  }
  RejectsSentinels([](json& j) { j["redis"]["sentinels"][2] = "10.0.0.5:26379"; },
                   "redis.sentinels[2]");
}

TEST_CASE("sentinels exclude redis.host and redis.port and need a master name") {
  RejectsSentinels([](json& j) { j["redis"]["host"] = "10.0.0.9"; }, "redis.host");
  RejectsSentinels([](json& j) { j["redis"]["port"] = 6379; }, "redis.port");
  RejectsSentinels([](json& j) { j["redis"].erase("master_name"); }, "redis.master_name");
  for (const std::string& bad :
       std::vector<std::string>{"", "my master", "m*", "{m}", "m\r\nx", std::string(65, 'm')}) {
    json j = WithSentinels();
    j["redis"]["master_name"] = bad;
    INFO("master_name: " << bad);
    ExpectRejected(j, "redis.master_name");
  }
  RejectsSentinels([](json& j) { j["redis"]["master_name"] = 7; }, "redis.master_name");
  RejectsSentinels([](json& j) { j["redis"]["sentinel_password_file"] = ""; },
                   "redis.sentinel_password_file");
}

TEST_CASE("redis.cluster names a Redis Cluster's seed nodes, alone") {
  json j = Valid();
  j["redis"].erase("host");
  j["redis"].erase("port");
  j["redis"]["cluster"] = {"10.0.0.5:7000", "[::1]:7001"};
  j["redis"]["key_prefix"] = "slave_delay:{shard7}";
  auto r = ParseConfig(j.dump());
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  REQUIRE(r->redis.cluster.size() == 2);
  CHECK(r->redis.cluster[1] == Endpoint{"::1", 7001});
  CHECK(r->redis.key_prefix == "slave_delay:{shard7}");
  for (const char* k : {"host", "sentinels", "master_name"}) {
    json bad = j;
    bad["redis"][k] = k == std::string("sentinels") ? json{"10.0.0.5:26379"} : json("x");
    INFO("with " << k);
    ExpectRejected(bad, std::string("redis.") + k);
  }
  for (const json& bad : {json::array(), json("10.0.0.5:7000")}) {
    json b = j;
    b["redis"]["cluster"] = bad;
    ExpectRejected(b, "redis.cluster");
  }
  json dup = j;
  dup["redis"]["cluster"][1] = "10.0.0.5:7000";
  ExpectRejected(dup, "redis.cluster[1]");
}

TEST_CASE("a key prefix may hold one hash tag, nothing else of braces") {
  for (const std::string good : {"slave_delay", "{shard7}", "lw:{a.b-c}:x", "{s}x"}) {
    json j = Valid();
    j["redis"]["key_prefix"] = good;
    auto r = ParseConfig(j.dump());
    CHECK_MESSAGE(r.ok(), good);
  }
  for (const std::string& bad : std::vector<std::string>{"", "{}", "{a", "a}", "x{a}{b}", "x{a b}",
                                                         "{a}}", "x{{a}}", std::string(65, 'p')}) {
    json j = Valid();
    j["redis"]["key_prefix"] = bad;
    INFO("key_prefix: " << bad);
    ExpectRejected(j, "redis.key_prefix");
  }
}

TEST_CASE("master_name and sentinel_password_file without sentinels are rejected") {
  Rejects([](json& j) { j["redis"]["master_name"] = "lag-master"; }, "redis.master_name");
  Rejects([](json& j) { j["redis"]["sentinel_password_file"] = "/etc/lagwatch/sentinel.pw"; },
          "redis.sentinel_password_file");
}

TEST_CASE("the sentinel password file is a secret file and its first line is the password") {
  char dir[] = "/tmp/lw-config-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d = dir;
  json j = WithSentinels();
  j["primary"]["defaults_file"] = d + "/primary.cnf";
  j["replica_defaults_file"] = d + "/replica.cnf";
  j["redis"]["sentinel_password_file"] = d + "/sentinel.pw";
  for (const char* name : {"primary.cnf", "replica.cnf", "sentinel.pw"}) {
    std::ofstream(d + "/" + name) << "s3ntinel pass\nsecond line\n";
    REQUIRE(chmod((d + "/" + name).c_str(), 0600) == 0);
  }
  const std::string path = d + "/lagwatch.json";
  std::ofstream(path) << j.dump();
  auto r = LoadConfig(path);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->redis.sentinel_password == "s3ntinel pass");
  CHECK(r->redis.password.empty());

  REQUIRE(chmod((d + "/sentinel.pw").c_str(), 0644) == 0);
  auto insecure = LoadConfig(path);
  REQUIRE_FALSE(insecure.ok());
  CHECK(insecure.status().message().rfind("redis.sentinel_password_file:", 0) == 0);
  for (const char* name : {"primary.cnf", "replica.cnf", "sentinel.pw", "lagwatch.json"}) {
    std::remove((d + "/" + name).c_str());
  }
  rmdir(dir);
}

TEST_CASE(
    "tls blocks: off by default; the top-level one is every server's, overridden key by key") {
  auto plain = ParseConfig(Valid().dump());
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->mysql_tls.enabled);
  CHECK_FALSE(plain->redis.tls.enabled);
  CHECK_FALSE(plain->MysqlTlsFor(Endpoint{"127.0.0.1", 3307}).enabled);

  json j = Valid();
  j["tls"] = {{"enabled", true}, {"ca_file", "/etc/lagwatch/ca.pem"}, {"min_version", "1.3"}};
  j["replicas"][1]["tls"] = {{"enabled", false}};
  j["primary"]["tls"] = {{"cert_file", "/etc/lagwatch/c.pem"}, {"key_file", "/etc/lagwatch/c.key"}};
  j["redis"]["tls"] = {
      {"enabled", true}, {"server_name", "redis.example"}, {"verify_server_cert", true}};
  auto c = ParseConfig(j.dump());
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->mysql_tls.enabled);
  CHECK(c->mysql_tls.verify);
  CHECK(c->mysql_tls.required);
  CHECK(c->mysql_tls.min_version == 13);
  CHECK(c->primary_tls.enabled);  // the top level's, with its own client certificate
  CHECK(c->primary_tls.ca_file == "/etc/lagwatch/ca.pem");
  CHECK(c->primary_tls.cert_file == "/etc/lagwatch/c.pem");
  CHECK(c->replicas[0].tls == c->mysql_tls);
  CHECK_FALSE(c->replicas[1].tls.enabled);
  CHECK(c->MysqlTlsFor(c->primary) == c->primary_tls);
  CHECK_FALSE(c->MysqlTlsFor(c->replicas[1].endpoint).enabled);
  CHECK(c->MysqlTlsFor(Endpoint{"10.9.9.9", 3306}) == c->mysql_tls);  // discovered: the default
  CHECK(c->Servers()[0].tls == c->primary_tls);
  CHECK(c->redis.tls.enabled);
  CHECK(c->redis.tls.server_name == "redis.example");
  CHECK(c->redis.tls.min_version == 12);
}

TEST_CASE("bad tls blocks are rejected naming the key") {
  Rejects([](json& j) { j["tls"] = {{"enabled", "yes"}}; }, "tls.enabled");
  Rejects([](json& j) { j["tls"] = {{"min_version", "1.1"}}; }, "tls.min_version");
  Rejects([](json& j) { j["tls"] = {{"server_name", "x"}}; }, "tls.server_name");
  Rejects([](json& j) { j["redis"]["tls"] = {{"required", false}}; }, "redis.tls.required");
  Rejects([](json& j) { j["tls"] = {{"cert_file", "/c.pem"}}; }, "tls.cert_file");
  Rejects([](json& j) { j["redis"]["tls"] = {{"key_file", "/c.key"}}; }, "redis.tls.key_file");
  Rejects([](json& j) { j["replicas"][0]["tls"] = {{"ca_file", ""}}; }, "replicas[0].tls.ca_file");
  Rejects([](json& j) { j["primary"]["tls"] = "on"; }, "primary.tls");
  Rejects([](json& j) { j["redis"]["tls"] = {{"server_name", "a b"}}; }, "redis.tls.server_name");
  Rejects([](json& j) { j["redis"]["sentinel_username"] = "lw"; }, "redis.sentinel_username");
}

TEST_CASE("TLS files are checked at load: unreadable certificates, exposed keys") {
  char dir[] = "/tmp/lw-config-tls-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d = dir;
  json j = Valid();
  j["primary"]["defaults_file"] = d + "/primary.cnf";
  j["replica_defaults_file"] = d + "/replica.cnf";
  for (const char* name : {"primary.cnf", "replica.cnf", "client.key"}) {
    std::ofstream(d + "/" + name) << "secret\n";
    REQUIRE(chmod((d + "/" + name).c_str(), 0600) == 0);
  }
  std::ofstream(d + "/client.pem") << "cert\n";
  j["redis"]["tls"] = {{"enabled", true},
                       {"ca_file", d + "/missing-ca.pem"},
                       {"cert_file", d + "/client.pem"},
                       {"key_file", d + "/client.key"}};
  const std::string path = d + "/lagwatch.json";
  std::ofstream(path) << j.dump();
  auto missing = LoadConfig(path);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().rfind("redis.tls.ca_file: cannot read", 0) == 0);

  j["redis"]["tls"]["ca_file"] = d + "/client.pem";
  std::ofstream(path) << j.dump();
  CHECK(LoadConfig(path).ok());
  REQUIRE(chmod((d + "/client.key").c_str(), 0644) == 0);
  auto exposed = LoadConfig(path);
  REQUIRE_FALSE(exposed.ok());
  CHECK(exposed.status().message().rfind("redis.tls.key_file:", 0) == 0);
  for (const char* name :
       {"primary.cnf", "replica.cnf", "client.key", "client.pem", "lagwatch.json"}) {
    std::remove((d + "/" + name).c_str());
  }
  rmdir(dir);
}

TEST_CASE("haproxy: off by default; instances, resync, the agent-check port read and checked") {
  Config c = ParseConfig(Valid().dump()).value();
  CHECK(c.haproxy.backend == "mysql_reads");
  CHECK(c.haproxy.push.instances.empty());
  CHECK(c.haproxy.push.resync_ms == 1000);
  CHECK(c.haproxy.push.timeout_ms == 500);
  CHECK(c.haproxy.push.ttl_ms == 1000);  // redis.ttl_ms
  CHECK(c.haproxy.agent_check.listen.empty());
  json j = Valid();
  j["redis"]["ttl_ms"] = 2000;
  j["haproxy"] = json::parse(R"({
    "backend": "reads",
    "instances": [ { "name": "lb1", "socket": "/run/haproxy/admin.sock" },
                   { "name": "lb2", "socket": "10.0.0.5:9999", "backend": "reads_b" } ],
    "resync_ms": 2000, "timeout_ms": 300,
    "agent_check": { "listen": "127.0.0.1:9878", "max_connections": 16, "timeout_ms": 500 } })");
  auto r = ParseConfig(j.dump());
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  const HaproxyConfig& h = r->haproxy;
  CHECK(h.backend == "reads");
  REQUIRE(h.push.instances.size() == 2);
  CHECK(h.push.instances[0] == HaproxyInstance{"lb1", "/run/haproxy/admin.sock", "reads"});
  CHECK(h.push.instances[1] == HaproxyInstance{"lb2", "10.0.0.5:9999", "reads_b"});
  CHECK(h.push.resync_ms == 2000);
  CHECK(h.push.timeout_ms == 300);
  CHECK(h.push.ttl_ms == 2000);
  CHECK(h.agent_check == AgentCheckOptions{"127.0.0.1:9878", 16, 500});

  Rejects([](json& j) { j["haproxy"] = {{"backend", "a b"}}; }, "haproxy.backend");
  Rejects([](json& j) { j["haproxy"] = {{"backend", "reads;shutdown"}}; }, "haproxy.backend");
  Rejects([](json& j) { j["haproxy"] = {{"resync_ms", 10}}; }, "haproxy.resync_ms");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"resync_ms", 500}, {"timeout_ms", 501}};
      },
      "haproxy.timeout_ms");
  Rejects([](json& j) { j["haproxy"] = {{"instances", "lb1"}}; }, "haproxy.instances");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"instances", {{{"socket", "/s"}}}}};
      },
      "haproxy.instances[0].name");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"instances", {{{"name", "a/b"}, {"socket", "/s"}}}}};
      },
      "haproxy.instances[0].name");
  Rejects(
      [](json& j) {
        j["haproxy"] = {
            {"instances", {{{"name", "a"}, {"socket", "/s"}}, {{"name", "a"}, {"socket", "/t"}}}}};
      },
      "haproxy.instances[1].name");
  for (const char* socket : {"admin.sock", "run/admin.sock", "10.0.0.5", "host:0", "/a\nb"}) {
    CAPTURE(socket);
    Rejects(
        [&](json& j) {
          j["haproxy"] = {{"instances", {{{"name", "a"}, {"socket", socket}}}}};
        },
        "haproxy.instances[0].socket");
  }
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"instances", {{{"name", "a"}, {"socket", "/s"}, {"backend", "x y"}}}}};
      },
      "haproxy.instances[0].backend");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"instances", {{{"name", "a"}, {"socket", "/s"}, {"other", 1}}}}};
      },
      "haproxy.instances[0].other");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"agent_check", json::object()}};
      },
      "haproxy.agent_check.listen");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"agent_check", {{"listen", "9878"}}}};
      },
      "haproxy.agent_check.listen");
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"agent_check", {{"listen", "127.0.0.1:9877"}}}};
      },
      "haproxy.agent_check.listen");  // http.listen's
  Rejects(
      [](json& j) {
        j["haproxy"] = {{"agent_check", {{"listen", "127.0.0.1:1"}, {"max_connections", 0}}}};
      },
      "haproxy.agent_check.max_connections");
  Rejects([](json& j) { j["haproxy"] = {{"agent", 1}}; }, "haproxy.agent");
}

TEST_CASE("a syntax error is reported, not thrown") {
  auto r = ParseConfig("{ \"agent_id\": 1,, }");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("syntax") != std::string::npos);
}

}  // namespace
}  // namespace lagwatch
