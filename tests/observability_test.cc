// Observability against a real sandbox: the metrics contract (promtool check metrics on a live
// scrape, every documented family for both replicas), the events channel seen by a subscriber,
// the JSON API and `lagwatch status` with one replica stalled, MySQL's applier signals left
// unasked on MariaDB, and router feedback (HINCRBY rw_stats:… through redis-cli) showing up in
// the RWSR/DSR metrics.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/applier_status.h"
#include "base/mysql_conn.h"
#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kDir = "/tmp/lw-ob";

struct Env {
  Sandbox sandbox{kDir, 27606};
  Agent agent{sandbox.config_path(), kDir + "/agent.log"};
};

Env& E() {
  static Env env;
  return env;
}

bool BothOk(Redis& redis) { return BothReplicasOk(redis, E().sandbox); }
std::string Metrics() { return HttpGet(E().sandbox.http_port(), "/metrics").second; }

// Families with a replica label, which must carry a series for each replica (a histogram by its
// _bucket series).
const std::vector<std::string> kPerReplica = {
    "lagwatch_replica_lag_upper_seconds",
    "lagwatch_replica_lag_lower_seconds",
    "lagwatch_replica_lag_seconds_bucket",
    "lagwatch_replica_state",
    "lagwatch_replica_healthy",
    "lagwatch_replica_io_thread_running",
    "lagwatch_replica_sql_thread_running",
    "lagwatch_replica_seconds_behind_master",
    "lagwatch_replica_relay_log_space_bytes",
    "lagwatch_probes_total",
    "lagwatch_probes_within_slo_total",
    "lagwatch_probe_duration_seconds_bucket",
};
// Other families docs/metrics.md documents (not all of them). Each of these and of kPerReplica
// must appear in a live scrape.
const std::vector<std::string> kOtherFamilies = {
    "lagwatch_probe_errors_total",
    "lagwatch_status_polls_total",
    "lagwatch_heartbeat_writes_total",
    "lagwatch_heartbeat_errors_total",
    "lagwatch_heartbeat_age_seconds",
    "lagwatch_heartbeat_last_seq",
    "lagwatch_primary_circuit_state",
    "lagwatch_primary_consecutive_failures",
    "lagwatch_primary_read_only",
    "lagwatch_primary_info",
    "lagwatch_primary_changes_total",
    "lagwatch_topology_state",
    "lagwatch_primary_threads_connected",
    "lagwatch_primary_max_connections",
    "lagwatch_primary_innodb_buffer_pool_read_requests_total",
    "lagwatch_primary_innodb_buffer_pool_reads_total",
    "lagwatch_replica_lag_window_seconds",
    "lagwatch_replica_slar_ratio",
    "lagwatch_sampler_samples_total",
    "lagwatch_sampler_errors_total",
    "lagwatch_redis_publishes_total",
    "lagwatch_redis_errors_total",
    "lagwatch_redis_publish_duration_seconds",
    "lagwatch_redis_record_delay_seconds",
    "lagwatch_redis_connected",
    "lagwatch_events_published_total",
    "lagwatch_crossing_verdicts_total",
    "lagwatch_config_reloads_total",
    "lagwatch_build_info",
    "lagwatch_start_time_seconds",
};

// A family's name from one of its series' names.
std::string FamilyOf(const std::string& series) {
  const std::string bucket = "_bucket";
  return series.ends_with(bucket) ? series.substr(0, series.size() - bucket.size()) : series;
}

TEST_CASE("a live scrape passes promtool check metrics and has every documented family") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothOk(redis); }, 10s), E().agent.Log());
  std::string scrape = Metrics();
  const std::string path = WriteTempFile(kDir, "scrape.txt", scrape);
  RunResult check = RunCommand({"/bin/sh", "-c", "promtool check metrics < " + path});
  INFO(check.output);
  CHECK(check.exit_code == 0);
  // The primary's own figures are read too (for the connection and buffer pool alerts).
  CHECK(MetricValue(scrape, "lagwatch_primary_max_connections") == 200);
  CHECK(MetricValue(scrape, "lagwatch_primary_threads_connected").value_or(0) >= 2);
  std::vector<std::string> families = kOtherFamilies;
  for (const auto& series : kPerReplica) families.push_back(FamilyOf(series));
  CHECK(families.size() == 42);
  for (const auto& family : families) {
    CAPTURE(family);
    CHECK(scrape.find("# TYPE " + family + " ") != std::string::npos);
  }
  for (const auto& family : kPerReplica) {
    for (int r : {1, 2}) {
      CAPTURE(family);
      CAPTURE(r);
      CHECK(scrape.find(family + "{") != std::string::npos);
      CHECK(std::regex_search(
          scrape, std::regex(family + "\\{[^}]*replica=\"" + E().sandbox.replica_id(r) + "\"")));
    }
  }
}

TEST_CASE("state and health changes are published as JSON events; the API and status show them") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  Subscriber sub(E().sandbox.redis_port(), "slave_delay:events");
  std::this_thread::sleep_for(300ms);  // subscribed before anything changes
  AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
  auto is_stopped = [](const json& e) {
    return e.value("state", "") == "stopped" && e.value("replica", "") == E().sandbox.replica_id(1);
  };
  bool seen = WaitFor(
      [&] {
        auto ev = sub.Events();
        return std::any_of(ev.begin(), ev.end(), is_stopped);
      },
      3s);
  // Replica1's events (the primary's, "event": "primary", are not at issue here, nor a flip of
  // replica2's on a host so busy that its answer came after its bound's crossing).
  std::vector<json> events;
  for (const auto& e : sub.Events()) {
    if (e.value("replica", "") == E().sandbox.replica_id(1)) events.push_back(e);
  }
  INFO(json(events).dump());
  REQUIRE(seen);
  REQUIRE(!events.empty());
  const json& first = events.front();
  CHECK(first["previous_state"] == "ok");
  CHECK(first["previous_healthy"] == 1);
  CHECK(first["healthy"] == 0);
  CHECK(first["agent"] == 1);
  CHECK(first["cluster"] == E().sandbox.primary_id());
  CHECK(first["delay_ms"].is_number_integer());
  CHECK(first["measured_at_ms"].is_number_integer());

  // The API in this known state: replica1 stopped and unhealthy (over 1 s by now), replica2 ok.
  json api;
  auto replica1_over_1s = [&] {
    auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
    if (code != 200) return false;
    api = json::parse(body);
    for (const auto& r : api["replicas"]) {
      if (r["replica"] == E().sandbox.replica_id(1)) return r["delay_ms"].get<int64_t>() > 1000;
    }
    return false;
  };
  REQUIRE(WaitFor(replica1_over_1s, 3s));
  REQUIRE(api["replicas"].size() == 2);
  std::map<std::string, json> by_id;
  for (const auto& r : api["replicas"]) by_id[r["replica"]] = r;
  const json& r1 = by_id[E().sandbox.replica_id(1)];
  const json& r2 = by_id[E().sandbox.replica_id(2)];
  CHECK(r1["state"] == "stopped");
  CHECK(r1["healthy"] == 0);
  CHECK(r1["delay_ms"].get<int64_t>() > 1000);
  CHECK(r1["replication"]["sql_thread_running"] == false);
  CHECK(r1["replication"]["seconds_behind_master"].is_null());
  CHECK(r2["state"] == "ok");
  CHECK(r2["healthy"] == 1);
  for (const char* field : {"delay_ms", "delay_lower_ms", "state", "healthy", "tier", "weight",
                            "max_delay_ms", "seq", "measured_at_ms", "delay_us", "measured_at_us",
                            "agent", "last_error", "last_error_at_ms"}) {
    CAPTURE(field);
    CHECK(r2.contains(field));
  }
  auto [pcode, pbody] = HttpGet(E().sandbox.http_port(), "/api/v1/primary");
  REQUIRE(pcode == 200);
  json primary = json::parse(pbody);
  CHECK(primary["state"] == "up");
  CHECK(primary["heartbeat"]["last_seq"].get<int64_t>() > 0);
  CHECK(HttpGet(E().sandbox.http_port(), "/readyz").first == 200);
  CHECK(HttpGet(E().sandbox.http_port(), "/healthz").first == 200);

  RunResult status =
      RunCommand({LagwatchBinary(), "status", "--config", E().sandbox.config_path()});
  INFO(status.output);
  CHECK(status.exit_code == 1);
  CHECK(std::regex_search(status.output,
                          std::regex(E().sandbox.replica_id(1) + " +tier1 +stopped +NO")));
  CHECK(
      std::regex_search(status.output, std::regex(E().sandbox.replica_id(2) + " +tier1 +ok +yes")));

  AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 5s));
  status = RunCommand({LagwatchBinary(), "status", "--url",
                       "http://127.0.0.1:" + std::to_string(E().sandbox.http_port())});
  CHECK(status.exit_code == 0);
  auto back = sub.Events();
  CHECK(back.back()["state"] == "ok");
  CHECK(back.back()["healthy"] == 1);
}

TEST_CASE(
    "each server's flavor is detected: MariaDB, read by SHOW REPLICA STATUS, in API and metrics") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  // What the sandbox's servers say of themselves, asked directly.
  const std::string version =
      AdminQuery(E().sandbox.socket("replica1"), "SELECT VERSION()").value();
  REQUIRE(version.find("MariaDB") != std::string::npos);

  auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
  REQUIRE(code == 200);
  json api = json::parse(body);
  REQUIRE(api["replicas"].size() == 2);
  for (const auto& r : api["replicas"]) {
    CAPTURE(r.dump());
    CHECK(r["server"]["flavor"] == "MariaDB");
    CHECK(r["server"]["version"] == version);
    // MariaDB 10.11 has SHOW REPLICA STATUS (10.5.1+), and it is what lagwatch polls with.
    CHECK(r["replication"]["statement"] == "SHOW REPLICA STATUS");
    CHECK(r["replication"]["known"] == true);
    CHECK(r["replication"]["io_thread"] == "Yes");
  }
  auto [pcode, pbody] = HttpGet(E().sandbox.http_port(), "/api/v1/primary");
  REQUIRE(pcode == 200);
  CHECK(json::parse(pbody)["server"]["flavor"] == "MariaDB");

  const std::string scrape = Metrics();
  for (const auto& [server, role] : {std::pair{E().sandbox.replica_id(1), "replica"},
                                     {E().sandbox.replica_id(2), "replica"},
                                     {E().sandbox.primary_id(), "primary"}}) {
    CAPTURE(server);
    CHECK(MetricValue(scrape,
                      "lagwatch_server_info{flavor=\"MariaDB\",positions=\"mariadb_gtid\",role=\"" +
                          std::string(role) + "\",server=\"" + server + "\",version=\"" + version +
                          "\"}") == 1);
  }
  // The log says it.
  CHECK(E().agent.Log().find("replica " + E().sandbox.replica_id(1) + " is MariaDB " + version) !=
        std::string::npos);
  CHECK(E().agent.Log().find("replication status by SHOW REPLICA STATUS") != std::string::npos);
}

TEST_CASE(
    "MariaDB replicas are never asked for MySQL's applier signals: the API says why, no series") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  // Every statement replica1 receives over more than two status intervals (probe.
  // status_interval_ms is 1000 in the sandbox), from its general log.
  const std::string socket = E().sandbox.socket("replica1");
  AdminQuery(socket, "SET GLOBAL log_output = 'TABLE'");
  AdminQuery(socket, "TRUNCATE TABLE mysql.general_log");
  AdminQuery(socket, "SET GLOBAL general_log = ON");
  std::this_thread::sleep_for(2500ms);
  AdminQuery(socket, "SET GLOBAL general_log = OFF");
  auto logged = [&](const std::string& like) {
    const std::string sql =
        "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE '" + like + "'";
    return std::stoi(AdminQuery(socket, sql).value_or("-1"));
  };
  CHECK(logged("SHOW REPLICA STATUS%") >= 2);  // the log saw the status polls
  CHECK(logged("%performance_schema%") == 0);
  AdminQuery(socket, "TRUNCATE TABLE mysql.general_log");

  // MariaDB 10.11 has none of the columns the statement reads (tables of two of its names, with
  // other columns, and no replication_connection_status).
  CHECK(AdminQuery(socket,
                   "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                   "'performance_schema' AND COLUMN_NAME IN ('APPLYING_TRANSACTION', "
                   "'PROCESSING_TRANSACTION', 'COUNT_RECEIVED_HEARTBEATS')") == "0");
  CHECK(AdminQuery(socket,
                   "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                   "'performance_schema' AND TABLE_NAME = 'replication_applier_status_by_worker' "
                   "AND COLUMN_NAME = 'LAST_SEEN_TRANSACTION'") == "1");
  // Sent by hand as the probe account, which has no SELECT on performance_schema, the statement
  // is refused for the grant: what lagwatch would count as "denied".
  MysqlTarget target;
  target.endpoint = {"127.0.0.1", E().sandbox.replica_port(1)};
  target.defaults_file = E().sandbox.dir() + "/replica.cnf";
  target.label = "replica1";
  MysqlConn probe(target);
  auto asked = probe.Query(ApplierStatusStatement(), MonoTime::clock::now() + 5s);
  INFO(asked.status().ToString());
  REQUIRE_FALSE(asked.ok());
  CHECK(asked.status().code() == Status::Code::kServerError);
  CHECK(std::string(ApplierErrorReason(probe.last_errno())) == "denied");

  auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/replicas");
  REQUIRE(code == 200);
  json api = json::parse(body);
  REQUIRE(api["replicas"].size() == 2);
  for (const auto& r : api["replicas"]) {
    CAPTURE(r["applier"].dump());
    CHECK(r["applier"]["available"] == false);
    CHECK(r["applier"]["reason"].get<std::string>().find("not asked: MariaDB") == 0);
    CHECK(r["applier"]["workers"].is_null());
    CHECK(r["applier"]["channels"].is_null());
  }
  // Nothing asked, nothing refused; no per-replica applier series at all.
  const std::string scrape = Metrics();
  for (const char* reason : {"denied", "no_table", "server_error", "bad_data"}) {
    CAPTURE(reason);
    CHECK(MetricValue(scrape, std::string("lagwatch_mysql_applier_signal_errors_total{reason=\"") +
                                  reason + "\"}") == 0);
  }
  CHECK(scrape.find("lagwatch_mysql_applier_workers") == std::string::npos);
  CHECK(scrape.find("lagwatch_mysql_applier_oldest_applying_age_seconds") == std::string::npos);
  CHECK(E().agent.Log().find("applier signals") == std::string::npos);
}

TEST_CASE("router feedback written with HINCRBY in a transaction shows up as reads, RWSR and DSR") {
  const int port = E().sandbox.redis_port();
  // As a router counts: its own Redis user, which may HINCRBY rw_stats keys in MULTI/EXEC and
  // little else. One transaction per batch, so the agent never reads half of one (on a slow host
  // it read the replica reads of separate commands before the primary's, and the first
  // snapshot of an app is its baseline).
  Redis router_redis(port, E().sandbox.RouterLogin());
  auto hincrby = [&](const std::vector<std::pair<std::string, int>>& counts) {
    REQUIRE(router_redis.Command({"MULTI"}) == "OK");
    for (const auto& [field, by] : counts) {
      const std::string queued =
          router_redis.Command({"HINCRBY", "rw_stats:shop", field, std::to_string(by)});
      REQUIRE_MESSAGE(queued == "QUEUED", queued);
    }
    const std::string done = router_redis.Command({"EXEC"});
    REQUIRE_MESSAGE(done.find("NOPERM") == std::string::npos, done);
    REQUIRE_MESSAGE(done.find("ERR") == std::string::npos, done);
  };
  const std::string replica = "reads_replica:" + E().sandbox.replica_id(1);
  hincrby({{"reads_replica", 95},
           {replica, 95},
           {"reads_master", 5},
           {"degrade_attempts", 10},
           {"degrade_successes", 10}});
  // A malformed value is counted and skipped, never fatal.
  RedisCli(port, RedisAdminLogin(port), {"HSET", "rw_stats:junk", "reads_master", "lots"});
  auto value = [](const std::string& series) { return MetricValue(Metrics(), series); };
  REQUIRE(WaitFor(
      [&] { return value("lagwatch_router_reads_total{app=\"shop\",target=\"replica\"}") == 95; },
      12s));
  CHECK(value("lagwatch_router_reads_total{app=\"shop\",target=\"master\"}") == 5);
  CHECK(value("lagwatch_router_replica_reads_total{app=\"shop\",replica=\"" +
              E().sandbox.replica_id(1) + "\"}") == 95);
  CHECK(value("lagwatch_router_degrade_attempts_total{app=\"shop\"}") == 10);
  CHECK(WaitFor(
      [&] {
        return value("lagwatch_router_feedback_errors_total{reason=\"malformed\"}").value_or(0) >=
               1;
      },
      12s));

  // Rolling windows need traffic inside them: 80 of the next 100 reads go to replicas and 9 of
  // 10 degradations succeed.
  hincrby({{"reads_replica", 80},
           {"reads_master", 20},
           {"degrade_attempts", 10},
           {"degrade_successes", 9}});
  auto near = [](std::optional<double> v, double want) { return v && std::abs(*v - want) < 1e-9; };
  CHECK(WaitFor(
      [&] {
        return near(value("lagwatch_router_rwsr_ratio{app=\"shop\",window=\"1m\"}"), 0.8) &&
               near(value("lagwatch_router_dsr_ratio{app=\"shop\",window=\"5m\"}"), 0.9);
      },
      12s));
  auto [code, body] = HttpGet(E().sandbox.http_port(), "/api/v1/router");
  REQUIRE(code == 200);
  json router = json::parse(body);
  json shop;
  for (const auto& app : router["apps"]) {
    if (app["app"] == "shop") shop = app;
  }
  REQUIRE(shop.is_object());
  CHECK(shop["reads_all"] == 200);
  CHECK(near(shop["windows"]["5m"]["rwsr"].get<double>(), 0.8));
  CHECK(kill(E().agent.pid(), 0) == 0);
}

TEST_CASE("lagwatch status exits 3 when no agent answers") {
  RunResult r = RunCommand({LagwatchBinary(), "status", "--url", "http://127.0.0.1:1"});
  CHECK(r.exit_code == 3);
  CHECK(RunCommand({LagwatchBinary(), "status", "--url", "ftp://x"}).exit_code == 2);
}

}  // namespace
}  // namespace lagwatch::test
