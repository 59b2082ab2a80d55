// Faults injected with real signals and restarts (issue: survive faults): a hung replica, a dead
// replica, a dead and a hung primary, a read-only primary, and shutdown while servers hang. Each
// case starts and ends with both replicas ok.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <doctest/doctest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/strings.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The sandbox's configuration with one probe thread: both replicas then share one event loop, so
// "a hung replica delays no other" is tested where it could happen. Its probe timeout is scaled as
// the harness scales time bounds, up to the probe interval (the most the configuration allows):
// "a hung replica is over its limit at the crossing" needs the probe in flight to outlast the
// crossing, which comes 200 ms after the hang, and under TSan, beside the ASan suite, the
// sandbox's 150 ms came first in three tries of three. Probes that follow commits are off
// (probe.after_commit_ms 0; the stream test covers them): with the test's commits every 10 ms
// they would send the probe in flight about 10 ms after the hang, and its timeout would come
// before the crossing every time.
nlohmann::json OneLoopConfig(const Sandbox& sandbox) {
  std::ifstream in(sandbox.config_path());
  nlohmann::json j = nlohmann::json::parse(in, nullptr, true, true);
  j["probe"]["threads"] = 1;
  j["probe"]["after_commit_ms"] = 0;
  j["probe"]["timeout_ms"] = std::min(TimeBoundMs(j["probe"]["timeout_ms"].get<int64_t>()),
                                      j["probe"]["interval_ms"].get<int64_t>());
  return j;
}

// Writes `config` to the sandbox's dir; returns its path.
std::string WriteConfig(const Sandbox& sandbox, const nlohmann::json& config) {
  const std::string path = sandbox.dir() + "/one-loop.json";
  std::ofstream(path) << config.dump(2);
  return path;
}

struct Env {
  Sandbox sandbox{"/tmp/lw-ft", 27406};
  const nlohmann::json config = OneLoopConfig(sandbox);
  Agent agent{WriteConfig(sandbox, config), sandbox.dir() + "/agent.log"};
  // The table the tests' own commits go to.
  Env() {
    AdminQuery(sandbox.socket("primary"),
               "CREATE TABLE IF NOT EXISTS lwtest.hang_writes (id INT AUTO_INCREMENT PRIMARY KEY)");
  }
};

Env& E() {
  static Env env;
  return env;
}

// The probe timeout the agent runs with (OneLoopConfig).
int64_t ProbeTimeoutMs() { return E().config["probe"]["timeout_ms"].get<int64_t>(); }

std::string Key(int replica) { return E().sandbox.replica_key(replica); }
std::string PrimaryKey() {
  return "lagwatch:primary:127.0.0.1:" + std::to_string(E().sandbox.primary_port());
}
pid_t ServerPid(const std::string& name) {
  return ReadPidFile(E().sandbox.dir() + "/" + name + "/mysqld.pid");
}
int64_t Delay(Redis& redis, int replica) {
  return ParseInt<int64_t>(redis.HGetAll(Key(replica))["delay_ms"]).value_or(-1);
}
bool Is(Redis& redis, int replica, const std::string& state, const std::string& healthy) {
  return ReplicaIs(redis, E().sandbox, replica, state, healthy);
}
bool BothOk(Redis& redis) { return BothReplicasOk(redis, E().sandbox); }
long Ms(Clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// Replica `replica`'s measured_at_ms in Redis; 0 without a record.
int64_t MeasuredAt(Redis& redis, int replica) {
  return ParseInt<int64_t>(redis.HGetAll(Key(replica))["measured_at_ms"]).value_or(0);
}

// Follows replica `r`'s measured_at_ms in Redis and reports the largest gap between probes.
class CadenceWatch {
 public:
  CadenceWatch(Redis& redis, int replica) : redis_(redis), replica_(replica) {}
  void Poll() {
    const int64_t at = MeasuredAt(redis_, replica_);
    if (at == 0 || at == last_) return;
    if (last_ != 0) max_gap_ms_ = std::max(max_gap_ms_, at - last_);
    last_ = at;
    ++probes_;
  }
  int64_t max_gap_ms() const { return max_gap_ms_; }
  int probes() const { return probes_; }

 private:
  Redis& redis_;
  int replica_;
  int64_t last_ = 0;
  int64_t max_gap_ms_ = 0;
  int probes_ = 0;
};

TEST_CASE("a replica in file/position mode keeps tight position bounds") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothOk(redis); }, 10s), E().agent.Log());
  const std::string sock = E().sandbox.socket("replica1");
  AdminQuery(sock, "STOP SLAVE");
  AdminQuery(sock, "CHANGE MASTER TO MASTER_USE_GTID = no");
  AdminQuery(sock, "START SLAVE");
  REQUIRE(WaitFor([&] { return Is(redis, 1, "ok", "1"); }, 5s));
  // MariaDB keeps @@gtid_slave_pos up to date in this mode too, so the bound stays about one
  // sampling interval wide; heartbeat bounds alone would reach up to 500 ms, over the bound
  // stretched for the sanitizer suites too (450 ms: 156 in a clean-clone ASan run beside the TSan
  // build failed the unstretched 150).
  int64_t worst = 0;
  auto until = Clock::now() + 3s;
  while (Clock::now() < until) {
    worst = std::max(worst, Delay(redis, 1));
    std::this_thread::sleep_for(20ms);
  }
  MESSAGE("file/position mode: largest delay_ms at zero lag " << worst);
  CHECK(worst >= 0);
  CHECK(worst < TimeBoundMs(150));
  AdminQuery(sock, "STOP SLAVE SQL_THREAD");
  CHECK(WaitFor([&] { return Is(redis, 1, "stopped", "0") && Delay(redis, 1) > 1000; }, 3s));
  AdminQuery(sock, "STOP SLAVE");
  AdminQuery(sock, "CHANGE MASTER TO MASTER_USE_GTID = slave_pos");
  AdminQuery(sock, "START SLAVE");
  CHECK(WaitFor([&] { return BothOk(redis); }, 5s));
}

TEST_CASE("a hung replica is unreachable within a timeout, keeps aging, and delays no other") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothOk(redis); }, 10s), E().agent.Log());
  const pid_t pid = ServerPid("replica1");
  REQUIRE(pid > 0);
  auto connections = [] {
    return ParseInt<int64_t>(
               AdminQuery(E().sandbox.socket("replica1"),
                          "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                          "WHERE VARIABLE_NAME = 'CONNECTIONS'")
                   .value_or(""))
        .value_or(-1);
  };
  const int64_t connections_before = connections();

  REQUIRE(kill(pid, SIGSTOP) == 0);
  auto frozen = Clock::now();
  CadenceWatch other(redis, 2);
  bool down = WaitFor(
      [&] {
        other.Poll();
        return Is(redis, 1, "unreachable", "0");
      },
      2s);
  auto took = Clock::now() - frozen;
  MESSAGE("hung replica reported unreachable after " << Ms(took) << " ms");
  CHECK(down);
  // The probe timeout plus up to one interval (200 ms), and time to publish.
  CHECK(took < std::chrono::milliseconds(ProbeTimeoutMs() + 850));

  // Its bound keeps growing from the last moment it was known fresh; the other keeps its cadence.
  int64_t d1 = Delay(redis, 1);
  auto until = Clock::now() + 3s;
  while (Clock::now() < until) {
    other.Poll();
    std::this_thread::sleep_for(5ms);
  }
  int64_t d2 = Delay(redis, 1);
  CHECK(d2 >= d1 + 2000);
  MESSAGE("healthy replica: " << other.probes() << " probes, largest gap " << other.max_gap_ms()
                              << " ms while the other was hung");
  CHECK(other.probes() >= 12);
  CHECK(other.max_gap_ms() <= TimeBoundMs(250));
  CHECK(WaitFor([&] { return Is(redis, 2, "ok", "1"); }, 5s));  // one sample may lag

  REQUIRE(kill(pid, SIGCONT) == 0);
  auto resumed = Clock::now();
  CHECK(WaitFor([&] { return Is(redis, 1, "ok", "1"); }, 3s));
  MESSAGE("back to ok " << Ms(Clock::now() - resumed) << " ms after SIGCONT");
  CHECK(Clock::now() - resumed < 1500ms);
  // The probe that timed out was still waited for on its connection, and answered at SIGCONT:
  // no connection attempt in the 3 s hang (a new one every backoff would be ~8 handshakes the
  // server sees interrupted). Only this test's own two admin connections count.
  const int64_t attempts = connections() - connections_before;
  MESSAGE("connections to the hung replica while it hung and after: " << attempts);
  CHECK(attempts >= 1);
  CHECK(attempts <= 2);
}

// The events of replica `r` in `events`, in order.
std::vector<nlohmann::json> EventsOf(const std::vector<nlohmann::json>& events, int r) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e["replica"] == E().sandbox.replica_id(r)) out.push_back(e);
  }
  return out;
}

// Commits on the primary every 10 ms on a session of its own until destroyed (in its own thread,
// which makes no test assertion: it counts what failed).
class Writes {
 public:
  Writes() {
    thread_ = std::thread([this] {
      MYSQL* m = mysql_init(nullptr);
      if (!m || !mysql_real_connect(m, nullptr, "root", nullptr, nullptr, 0,
                                    E().sandbox.socket("primary").c_str(), 0)) {
        ++failed_;
      } else {
        while (!stop_) {
          if (mysql_query(m, "INSERT INTO lwtest.hang_writes VALUES (NULL)") != 0) ++failed_;
          std::this_thread::sleep_for(10ms);
        }
      }
      if (m) mysql_close(m);
    });
  }
  ~Writes() { Stop(); }
  // Stops the thread; how many statements failed.
  int Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return failed_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

// Waits for replica `r`'s next probe to be published (its measured_at_ms to change); false if
// none comes within 2 s.
bool NextProbe(Redis& redis, int r) {
  const int64_t before = MeasuredAt(redis, r);
  return WaitFor([&] { return MeasuredAt(redis, r) != before; }, 2s);
}

TEST_CASE("a hung replica is over its limit at the crossing, before its probe times out") {
  Redis redis(E().sandbox.redis_port());
  Subscriber sub(E().sandbox.redis_port(), "slave_delay:events");
  Writes writes;
  const pid_t pid = ServerPid("replica1");
  // Hung right after a probe answered, while the primary commits every 10 ms: the next probe is
  // in flight when what it lacks passes 200 ms, and its timeout (ProbeTimeoutMs) comes after. The
  // probe that answered may have been an early one (the next is then sooner and times out
  // first): up to five tries for one that shows the crossing.
  bool crossed = false;
  for (int attempt = 1; attempt <= 5 && !crossed; ++attempt) {
    REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
    std::this_thread::sleep_for(300ms);  // subscribed, and the writes flowing, before the fault
    REQUIRE(NextProbe(redis, 1));
    const int64_t answered_at = MeasuredAt(redis, 1);
    if (!BothOk(redis)) {  // that answer judged by a busy host: not the fault under test
      MESSAGE("try " << attempt << ": not both ok before the hang");
      continue;
    }
    REQUIRE(kill(pid, SIGSTOP) == 0);
    const int64_t hung_at = WallMs();
    // The events of what was measured after that answer, this try's: not what came before it,
    // not even an event of the answer itself that arrives late (once under ASan, a recovery from
    // a lagging verdict that a busy host caused just before).
    auto hang_events = [&] {
      std::vector<nlohmann::json> after;
      for (const auto& e : EventsOf(sub.Events(), 1)) {
        if (e.value("measured_at_ms", int64_t{0}) > answered_at) after.push_back(e);
      }
      return after;
    };
    auto unreachable = [&] {
      for (const auto& e : hang_events()) {
        if (e["state"] == "unreachable") return true;
      }
      return false;
    };
    const bool seen = WaitFor(unreachable, 3s);
    REQUIRE(kill(pid, SIGCONT) == 0);
    const auto events = hang_events();
    INFO(nlohmann::json(events).dump());
    REQUIRE(seen);
    REQUIRE(!events.empty());
    CHECK(events[0]["previous_state"] == "ok");
    if (events[0]["state"] == "unreachable") {
      MESSAGE("try " << attempt << ": the probe in flight timed out before the crossing (hung "
                     << hung_at - answered_at << " ms after the answer)");
      continue;
    }
    // The bound passed 200 ms while the probe in flight had no answer: healthy=0 right then, the
    // bound just over the limit, and before the probe's timeout made it unreachable.
    crossed = true;
    REQUIRE(events.size() >= 2);
    CHECK(events[0]["state"] == "lagging");
    CHECK(events[0]["healthy"] == 0);
    CHECK(events[0]["delay_ms"].get<int64_t>() > 200);
    CHECK(events[0]["delay_ms"].get<int64_t>() < 200 + ProbeTimeoutMs());
    CHECK(events[1]["state"] == "unreachable");
    const int64_t before_timeout =
        events[1]["measured_at_ms"].get<int64_t>() - events[0]["measured_at_ms"].get<int64_t>();
    MESSAGE("healthy=0 at the crossing, " << events[0]["measured_at_ms"].get<int64_t>() - hung_at
                                          << " ms after the replica hung and " << before_timeout
                                          << " ms before the probe timed out");
    // Strictly before: the verdict is the crossing's, not the timeout's. How long before depends
    // on when the probe in flight was sent (a TSan run saw the hang land late after the answer,
    // that probe sent 53 ms after the hang, and its timeout 4 ms after the crossing).
    CHECK(before_timeout > 0);
  }
  CHECK(writes.Stop() == 0);
  CHECK(crossed);
  CHECK(WaitFor([&] { return BothOk(redis); }, 5s));
}

std::string Seq(Redis& redis, int replica) { return redis.HGetAll(Key(replica))["seq"]; }

TEST_CASE("a hung replica's bound grows from the first commit it lacks, not from its last answer") {
  // The primary writes only the agent's heartbeat, every 500 ms: a replica that hangs between two
  // lacks nothing until the next, and its bound says so instead of growing from its last answer.
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  const pid_t pid = ServerPid("replica1");
  // The first probe that read a new heartbeat (up to 200 ms after it was written), then 100 ms:
  // hung at least 200 ms before the next heartbeat is written, with nothing written in between.
  const std::string seq = Seq(redis, 1);
  REQUIRE(WaitFor([&] { return Seq(redis, 1) != seq; }, 2s));
  const auto answered = Clock::now();
  const int64_t answered_at = MeasuredAt(redis, 1);
  std::this_thread::sleep_until(answered + 100ms);
  REQUIRE(kill(pid, SIGSTOP) == 0);
  const int64_t hung_at = WallMs();
  std::vector<std::pair<int64_t, int64_t>> records;  // measured_at_ms, delay_ms
  const auto until = Clock::now() + 1500ms;
  while (Clock::now() < until) {
    auto h = redis.HGetAll(Key(1));
    const auto at = ParseInt<int64_t>(h["measured_at_ms"]);
    const auto delay = ParseInt<int64_t>(h["delay_ms"]);
    if (at && delay && *at > hung_at && (records.empty() || records.back().first != *at)) {
      records.emplace_back(*at, *delay);
    }
    std::this_thread::sleep_for(2ms);
  }
  REQUIRE(kill(pid, SIGCONT) == 0);
  std::string shown;
  for (const auto& [at, delay] : records) {
    shown += " " + std::to_string(at - hung_at) + ":" + std::to_string(delay);
  }
  INFO("hung " << hung_at - answered_at << " ms after its last answer; time since the hang : "
               << "delay_ms of each record:" << shown);
  REQUIRE(records.size() >= 3);
  for (const auto& [at, delay] : records) {
    const int64_t since_hung = at - hung_at;
    // What it lacks was written after the hang (the next heartbeat, within 500 ms of it): the
    // truth is under the time since the hang, and over that less 500 ms. A bound from the last
    // answer would be the time since the hang plus the 100 ms before it.
    CHECK(delay <= since_hung + TimeBoundMs(40));
    CHECK(delay >= since_hung - 500 - TimeBoundMs(40));
  }
  CHECK(WaitFor([&] { return BothOk(redis); }, 5s));
}

TEST_CASE("a replica that catches up is healthy again one round trip after its first good answer") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  Subscriber sub(E().sandbox.redis_port(), "slave_delay:events");
  std::this_thread::sleep_for(300ms);
  const std::string sock = E().sandbox.socket("replica1");
  AdminQuery(sock, "STOP SLAVE SQL_THREAD");
  REQUIRE(WaitFor([&] { return Is(redis, 1, "stopped", "0"); }, 3s));
  // A commit it lacks for the next 500 ms (the heartbeat's own may come just outside them): over
  // its 200 ms limit when it restarts.
  AdminQuery(E().sandbox.socket("primary"), "INSERT INTO lwtest.hang_writes VALUES (NULL)");
  std::this_thread::sleep_for(500ms);
  AdminQuery(sock, "START SLAVE SQL_THREAD");
  REQUIRE(WaitFor([&] { return Is(redis, 1, "ok", "1"); }, 3s));
  // The event goes out with the key, but reaches the subscriber's thread a moment later.
  std::vector<nlohmann::json> events;
  CHECK(WaitFor(
      [&] {
        events = EventsOf(sub.Events(), 1);
        return !events.empty() && events.back()["state"] == "ok";
      },
      2s));
  INFO(nlohmann::json(events).dump());
  // stopped -> lagging (the first answer within 80 % of the limit: a recovery streak of 1) -> ok
  // (the second, probed at once instead of at the next 200 ms tick).
  REQUIRE(events.size() >= 3);
  const auto& lagging = events[events.size() - 2];
  const auto& ok = events.back();
  CHECK(lagging["state"] == "lagging");
  CHECK(ok["state"] == "ok");
  CHECK(ok["healthy"] == 1);
  const int64_t streak_ms =
      ok["measured_at_ms"].get<int64_t>() - lagging["measured_at_ms"].get<int64_t>();
  MESSAGE("recovery streak completed " << streak_ms << " ms after the first good answer");
  CHECK(streak_ms < TimeBoundMs(100));
}

TEST_CASE("a killed replica is unreachable at once and back to ok after restart, agent untouched") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  REQUIRE(kill(ServerPid("replica1"), SIGKILL) == 0);
  auto killed = Clock::now();
  CHECK(WaitFor([&] { return Is(redis, 1, "unreachable", "0"); }, 2s));
  MESSAGE("killed replica reported unreachable after " << Ms(Clock::now() - killed) << " ms");
  CHECK(WaitFor([&] { return Is(redis, 2, "ok", "1"); }, 5s));  // one sample may lag
  std::this_thread::sleep_for(2s);  // several reconnect attempts, with backoff
  CHECK(Is(redis, 1, "unreachable", "0"));

  SandboxUp(E().sandbox);
  auto restarted = Clock::now();
  CHECK(WaitFor([&] { return Is(redis, 1, "ok", "1"); }, 5s));
  MESSAGE("back to ok " << Ms(Clock::now() - restarted) << " ms after the restart");
  CHECK(kill(E().agent.pid(), 0) == 0);
}

TEST_CASE("a dead primary opens the circuit; replicas are primary_unknown, not lagging") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  CHECK(redis.HGetAll(PrimaryKey())["state"] == "up");

  REQUIRE(kill(ServerPid("primary"), SIGKILL) == 0);
  CHECK(WaitFor([&] { return redis.HGetAll(PrimaryKey())["state"] == "down"; }, 5s));
  auto p = redis.HGetAll(PrimaryKey());
  CHECK(ParseInt<int>(p["consecutive_failures"]).value_or(0) >= 3);
  CHECK(ParseInt<int64_t>(p["last_write_ms"]).value_or(0) > 0);
  CHECK(redis.PTtl(PrimaryKey()) <= 1000);

  // Nothing more was committed, so both replicas hold all there is: primary_unknown, and by the
  // documented default they stay healthy. Their bound still grows (nothing proves freshness).
  CHECK(WaitFor([&] { return Is(redis, 1, "primary_unknown", "1"); }, 3s));
  CHECK(Is(redis, 2, "primary_unknown", "1"));
  auto metrics = HttpGet(E().sandbox.http_port(), "/metrics").second;
  CHECK(MetricValue(metrics, "lagwatch_primary_circuit_state{state=\"down\"}") == 1);

  SandboxUp(E().sandbox);
  auto restarted = Clock::now();
  CHECK(WaitFor([&] { return redis.HGetAll(PrimaryKey())["state"] == "up" && BothOk(redis); }, 8s));
  MESSAGE("primary up and replicas ok " << Ms(Clock::now() - restarted)
                                        << " ms after the primary restarted");
}

TEST_CASE("a hung primary is the same: no replica is called lagging, during or after, unproven") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  const pid_t pid = ServerPid("primary");
  REQUIRE(kill(pid, SIGSTOP) == 0);
  bool lagging_seen = false;
  bool unknown = WaitFor(
      [&] {
        lagging_seen = lagging_seen || Is(redis, 1, "lagging", "0") || Is(redis, 2, "lagging", "0");
        return Is(redis, 1, "primary_unknown", "1") && Is(redis, 2, "primary_unknown", "1") &&
               redis.HGetAll(PrimaryKey())["state"] == "down";
      },
      6s);
  REQUIRE(kill(pid, SIGCONT) == 0);
  CHECK(unknown);
  CHECK_FALSE(lagging_seen);
  // The replicas kept up through the freeze: once the primary answers they are ok, never lagging
  // and never unhealthy on the way (the bound grew with the outage, not with them) unless proven
  // behind. A commit acknowledged just before the freeze whose events the primary had not yet
  // sent is missing from both replicas until it returns: they are then truly stale by the
  // freeze, their lower bound says so (the sample that read it was answered before the freeze),
  // and lagging is right, until it recovers (health.recover_probes good probes). Any other
  // lagging or unhealthy record fails the test. In the sanitizer suites, a lagging record whose
  // bound is within the limit stretched (TimeBoundMs) is a slow host's, not one that grew with
  // the outage (about 2 s): counted, not failed (209 ms under ASan beside the TSan suite, at a
  // 200 ms limit). In the normal suite no record is within that: the limit is not stretched.
  std::string unproven;
  int proven = 0, slow_host = 0;
  bool proven_behind[3] = {false, false, false};
  auto look = [&] {
    for (int r : {1, 2}) {
      auto h = redis.HGetAll(Key(r));
      if (h["state"] != "lagging" && h["healthy"] != "0") continue;
      const int64_t lower = ParseInt<int64_t>(h["delay_lower_ms"]).value_or(0);
      const int64_t limit = ParseInt<int64_t>(h["max_delay_ms"]).value_or(-1);
      if (h["state"] == "lagging" && limit >= 0 && lower > limit) proven_behind[r] = true;
      const int64_t delay = ParseInt<int64_t>(h["delay_ms"]).value_or(-1);
      if (h["state"] == "lagging" && proven_behind[r]) {
        ++proven;
      } else if (h["state"] == "lagging" && limit >= 0 && delay > limit &&
                 delay <= TimeBoundMs(limit)) {
        ++slow_host;
      } else {
        unproven += " replica" + std::to_string(r) + ": state " + h["state"] + " healthy " +
                    h["healthy"] + " delay_ms " + h["delay_ms"] + " delay_lower_ms " +
                    h["delay_lower_ms"] + ";";
      }
    }
  };
  CHECK(WaitFor(
      [&] {
        look();
        return redis.HGetAll(PrimaryKey())["state"] == "up" && BothOk(redis);
      },
      8s));
  // Watch a little longer: the first probes after the primary's return are the ones at risk.
  const auto until = Clock::now() + 1s;
  while (Clock::now() < until) {
    look();
    std::this_thread::sleep_for(5ms);
  }
  if (proven > 0) MESSAGE(proven << " polls saw a replica proven behind after the freeze");
  if (slow_host > 0)
    MESSAGE(slow_host << " polls saw a replica lagging within the stretched limit");
  CHECK_MESSAGE(unproven.empty(), "not proven behind:" << unproven);
}

TEST_CASE(
    "while the primary is silent, a replica is published behind by a round trip, not a round") {
  // Kept healthy while the primary is unknown, a replica is published as behind by the time since
  // the other servers were last found read-only. They are all probed together every sampling
  // interval (20 ms), and a record waits for the others' answers of its round, so it says about a
  // round trip: without that wait it says the round before, about 20 ms.
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  const pid_t pid = ServerPid("primary");
  REQUIRE(kill(pid, SIGSTOP) == 0);
  std::map<int, std::set<std::string>> seen;  // per replica, the records' measured_at_ms
  std::vector<int64_t> delays;
  std::string states;
  const auto until = Clock::now() + 1500ms;
  while (Clock::now() < until) {
    for (int r : {1, 2}) {
      auto h = redis.HGetAll(Key(r));
      if (h["state"] != "primary_unknown" || !seen[r].insert(h["measured_at_ms"]).second) continue;
      CHECK(h["healthy"] == "1");
      delays.push_back(ParseInt<int64_t>(h["delay_ms"]).value_or(-1));
      states += " " + h["delay_ms"];
    }
    std::this_thread::sleep_for(2ms);
  }
  REQUIRE(kill(pid, SIGCONT) == 0);
  INFO("delay_ms of the primary_unknown records:" << states);
  // 1.5 s at one record per round for each of two replicas, less the first ~100 ms.
  REQUIRE(delays.size() >= 20);
  std::sort(delays.begin(), delays.end());
  CHECK(delays.front() >= 0);
  MESSAGE("primary_unknown records: " << delays.size() << ", delay_ms median "
                                      << delays[delays.size() / 2] << ", max " << delays.back());
  CHECK(delays[delays.size() / 2] <= 10);  // half a round
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
}

TEST_CASE("a read-only primary is not written to; positions keep the replicas measured") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  const std::string sock = E().sandbox.socket("primary");
  auto writes = [] {
    return MetricValue(HttpGet(E().sandbox.http_port(), "/metrics").second,
                       "lagwatch_heartbeat_writes_total")
        .value_or(-1);
  };
  AdminQuery(sock, "SET GLOBAL read_only = 1");
  CHECK(WaitFor([&] { return redis.HGetAll(PrimaryKey())["read_only"] == "1"; }, 3s));
  double w1 = writes();
  std::this_thread::sleep_for(1500ms);
  CHECK(writes() == w1);
  // No heartbeat is written, and the replicas are not made to lag by that (waited for: one
  // sample may lag on a busy host; a bound that grew without heartbeats would never settle).
  CHECK_MESSAGE(WaitFor([&] { return BothOk(redis) && Delay(redis, 1) < 200; }, 5s),
                ReplicaStates(redis, E().sandbox));
  CHECK(E().agent.Log().find("is read_only") != std::string::npos);

  AdminQuery(sock, "SET GLOBAL read_only = 0");
  CHECK(WaitFor([&] { return writes() > w1; }, 3s));
  CHECK(redis.HGetAll(PrimaryKey())["read_only"] == "0");
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
}

// The system clock, but the first Now() after Stall() takes `stall` (the thread kept from
// running as it looks at the time).
class StallingClock final : public lagwatch::Clock {
 public:
  MonoTime Now() const override {
    if (stall_.exchange(false)) std::this_thread::sleep_for(150ms);
    return SystemClock::Get().Now();
  }
  WallTime WallNow() const override { return SystemClock::Get().WallNow(); }
  bool SleepUntil(const std::stop_token& stop, MonoTime deadline) const override {
    return SystemClock::Get().SleepUntil(stop, deadline);
  }
  void Stall() { stall_ = true; }

 private:
  mutable std::atomic<bool> stall_{false};
};

TEST_CASE("a statement's answer waiting when its deadline is found passed is read, not dropped") {
  // A thread held back past a statement's deadline (a busy host, a CPU quota) finds the answer
  // waiting: taking that for the server's lateness would fail a heartbeat or a position sample
  // that the server answered at once.
  MysqlTarget target;
  target.endpoint = {"127.0.0.1", E().sandbox.replica_port(1)};
  target.defaults_file = E().sandbox.dir() + "/replica.cnf";
  target.label = "replica1";
  StallingClock clock;
  MysqlConn conn(target, {}, clock);
  REQUIRE(conn.Query("SELECT 1", clock.Now() + 5s).ok());  // connected
  // 20 ms allowed for an answer that takes 30 ms (so that it is waited for); the first look at
  // the time takes 150 ms, and the answer came meanwhile.
  const MonoTime deadline = clock.Now() + 20ms;
  clock.Stall();
  auto answered = conn.Query("SELECT SLEEP(0.03), 7", deadline);
  INFO(answered.status().ToString());
  REQUIRE(answered.ok());
  REQUIRE(answered->rows.size() == 1);
  CHECK(answered->rows[0][1].value_or("") == "7");
  // A server that has not answered by then still misses the deadline.
  const auto sent = Clock::now();
  const MonoTime soon = clock.Now() + 20ms;
  clock.Stall();
  auto late = conn.Query("SELECT SLEEP(0.5)", soon);
  CHECK(late.status().code() == Status::Code::kDeadlineExceeded);
  CHECK(Clock::now() - sent < 400ms);
}

TEST_CASE("SIGTERM stops the agent within 1 s even while the primary and a replica hang") {
  Redis redis(E().sandbox.redis_port());
  REQUIRE(WaitFor([&] { return BothOk(redis); }, 10s));
  const pid_t primary = ServerPid("primary");
  const pid_t replica = ServerPid("replica1");
  REQUIRE(kill(primary, SIGSTOP) == 0);
  REQUIRE(kill(replica, SIGSTOP) == 0);
  std::this_thread::sleep_for(700ms);  // queries in flight against both
  auto t0 = Clock::now();
  int code = E().agent.Stop();
  auto took = Clock::now() - t0;
  kill(primary, SIGCONT);
  kill(replica, SIGCONT);
  MESSAGE("stopped in " << Ms(took) << " ms");
  CHECK(code == 0);
  CHECK(took < 1s);
}

}  // namespace
}  // namespace lagwatch::test
