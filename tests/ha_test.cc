// Several agents on one Redis (docs/redis.md, "Several agents"): the merge of their records into
// one key, checked record by record with two in-process publishers against the sandbox's real
// Redis, and then two real agents side by side, each killed with SIGKILL in turn while the keys
// are read every few milliseconds as a router reads them.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/strings.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr int kSecondHttpPort = 28411;  // the sandbox's ports are 28406..28410

struct Env {
  Sandbox sandbox{"/tmp/lw-ha", 28406};
};

Env& E() {
  static Env env;
  return env;
}

// The sandbox's configuration as agent `agent_id`, its HTTP API on `http_port`.
std::string AgentConfig(int agent_id, int http_port) {
  std::ifstream in(E().sandbox.config_path());
  nlohmann::json j = nlohmann::json::parse(in, nullptr, true, true);
  j["agent_id"] = agent_id;
  j["http"]["listen"] = "127.0.0.1:" + std::to_string(http_port);
  const std::string path = E().sandbox.dir() + "/agent" + std::to_string(agent_id) + ".json";
  std::ofstream(path) << j.dump(2);
  return path;
}

// One agent's publisher, in this process, writing under the prefix "ha" to the sandbox's Redis.
struct Publisher {
  explicit Publisher(int64_t agent_id, int ttl_ms = 1000)
      : agent(agent_id), publisher(Config(ttl_ms), agent_id, &metrics, SystemClock::Get()) {
    publisher.Start();
  }
  static RedisConfig Config(int ttl_ms) {
    RedisConfig c;
    c.port = E().sandbox.redis_port();
    // The test's own prefix is outside the agent user's keys: it writes as the sandbox's admin.
    const RedisLogin admin = RedisAdminLogin(c.port);
    c.password = admin.password;
    c.key_prefix = "ha";
    c.ttl_ms = ttl_ms;
    return c;
  }
  // A record of replica 10.0.0.1:3306 measured `age` ago, stamped `measured_at_ms`.
  ReplicaSnapshot Record(bool healthy, int64_t measured_at_ms, Millis age = Millis(0)) const {
    ReplicaSnapshot s;
    s.id = "10.0.0.1:3306";
    s.delay_ms = healthy ? 5 : 900;
    s.state = healthy ? "ok" : "lagging";
    s.healthy = healthy;
    s.tier = "tier1";
    s.weight = 10;
    s.max_delay_ms = 200;
    s.measured_at_ms = measured_at_ms;
    s.agent_id = agent;
    s.measured_mono = SystemClock::Get().Now() - age;
    return s;
  }
  // Publishes and waits until the publisher has sent it (and Redis answered).
  void Write(const ReplicaSnapshot& s) {
    const double before = metrics.redis_publishes.Value();
    publisher.Publish(s);
    REQUIRE(WaitFor([&] { return metrics.redis_publishes.Value() > before; }, 5s));
  }

  int64_t agent;
  Metrics metrics{"test"};
  RedisPublisher publisher;
};

const std::string kKey = "ha:10.0.0.1:3306";

// The contract's fields of the key: whose record, how healthy, measured when.
std::string Shown(Redis& redis) {
  auto h = redis.HGetAll(kKey);
  if (h.empty()) return "(none)";
  return "agent=" + h["agent"] + " healthy=" + h["healthy"] + " at=" + h["measured_at_ms"];
}

TEST_CASE("an unhealthy record of one agent wins over another's healthy one, newer or not") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  Publisher a(1), b(2);
  a.Write(a.Record(true, 1000));
  CHECK(Shown(redis) == "agent=1 healthy=1 at=1000");
  b.Write(b.Record(false, 1010));
  CHECK(Shown(redis) == "agent=2 healthy=0 at=1010");
  // Agent 1 still proves it fresh, but agent 2 cannot: the key stays out of the routers' choice.
  a.Write(a.Record(true, 1020));
  CHECK(Shown(redis) == "agent=2 healthy=0 at=1010");
  // Once both agree, the newest measurement shows.
  b.Write(b.Record(true, 1030));
  CHECK(Shown(redis) == "agent=2 healthy=1 at=1030");
  a.Write(a.Record(true, 1040));
  CHECK(Shown(redis) == "agent=1 healthy=1 at=1040");
  // Each agent's own record is kept beside the contract's fields.
  auto h = redis.HGetAll(kKey);
  CHECK(h.count("agent:1") == 1);
  CHECK(h.count("agent:2") == 1);
}

TEST_CASE("a record older than its agent's stored one is refused") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  Publisher a(1);
  a.Write(a.Record(false, 2000));
  a.Write(a.Record(true, 1500));  // e.g. held back by a slow write, then sent after a newer one
  CHECK(Shown(redis) == "agent=1 healthy=0 at=2000");
  a.Write(a.Record(true, 2001));
  CHECK(Shown(redis) == "agent=1 healthy=1 at=2001");
}

TEST_CASE("a record expires its TTL after its measurement, however late it is written") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  Publisher a(1, 1000);
  a.Write(a.Record(true, 3000, Millis(600)));
  const long long pttl = redis.PTtl(kKey);
  MESSAGE("record written 600 ms after its measurement: PTTL " << pttl << " ms");
  CHECK(pttl > 0);
  CHECK(pttl <= 400);
  // One already older than its TTL is not written at all.
  redis.Command({"DEL", kKey});
  a.publisher.Publish(a.Record(true, 3001, Millis(1100)));
  a.Write(a.Record(true, 3002, Millis(800)));  // a later one, to know the first was handled
  // Both were handed over one after the other: the newer replaced the older before the write,
  // or the older was dropped as too old. Either way the stale one never shows.
  CHECK(Shown(redis) == "agent=1 healthy=1 at=3002");
  CHECK(redis.PTtl(kKey) <= 200);
}

TEST_CASE("when one agent's record expires, the other agent's record takes the key") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  Publisher a(1), b(2);
  b.Write(b.Record(false, 4000, Millis(700)));  // 300 ms left
  a.Write(a.Record(true, 4010));
  CHECK(Shown(redis) == "agent=2 healthy=0 at=4000");
  std::this_thread::sleep_for(400ms);
  a.Write(a.Record(true, 4020));
  CHECK(Shown(redis) == "agent=1 healthy=1 at=4020");
  CHECK(redis.HGetAll(kKey).count("agent:2") == 0);
  CHECK(redis.PTtl(kKey) > 500);
}

TEST_CASE("a replica one agent stops watching keeps the other's record; when both stop it goes") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  Publisher a(1), b(2);
  a.publisher.SetReplicas({"10.0.0.1:3306"});
  b.publisher.SetReplicas({"10.0.0.1:3306"});
  a.Write(a.Record(true, 5000));
  b.Write(b.Record(true, 5010));
  a.publisher.SetReplicas({});
  CHECK(WaitFor([&] { return redis.HGetAll(kKey).count("agent:1") == 0; }, 5s));
  CHECK(Shown(redis) == "agent=2 healthy=1 at=5010");
  b.publisher.SetReplicas({});
  CHECK(WaitFor([&] { return redis.HGetAll(kKey).empty(); }, 5s));
}

TEST_CASE("an agent record that does not decode is dropped, and the script survives a flush") {
  Redis redis(E().sandbox.redis_port());
  redis.Command({"DEL", kKey});
  redis.Command({"HSET", kKey, "agent:9", "{not json", "agent:8", "{\"e\":\"x\"}"});
  Publisher a(1);
  a.Write(a.Record(true, 6000));
  auto h = redis.HGetAll(kKey);
  CHECK(h.count("agent:9") == 0);
  CHECK(h.count("agent:8") == 0);
  CHECK(Shown(redis) == "agent=1 healthy=1 at=6000");
  // A flushed script cache (SCRIPT FLUSH, or a Redis that lost it) costs a reconnect, not records.
  CHECK(redis.Command({"SCRIPT", "FLUSH"}) == "OK");
  a.publisher.Publish(a.Record(true, 6001));
  CHECK(WaitFor([&] { return Shown(redis) == "agent=1 healthy=1 at=6001"; }, 5s));
}

// Reads every replica key every few ms, as a router would, and keeps what a router would suffer
// while agent `victim` is killed (Killed() says when).
class KeyWatch {
 public:
  KeyWatch(std::vector<std::string> keys, std::string victim)
      : keys_(std::move(keys)), victim_(std::move(victim)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~KeyWatch() { Finish(); }
  void Killed() { killed_ = true; }
  void Finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int missing = 0;  // polls that found a key absent
  // Longest time a key said healthy without a newer measurement: a healthy verdict that is not
  // renewed is what would keep a router on a replica that fell behind.
  int64_t longest_stale_ms = 0;
  // Polls where one agent's record went back (measured_at_ms older than the poll before it
  // showed of the same agent). The key itself steps back when it moves to another agent's older
  // record that is unhealthy (docs/redis.md); one agent's never does.
  int backwards = 0;
  int flips = 0;  // changes of `healthy`
  // Of the flips, those from the killed agent's unhealthy record to a live agent's healthy one:
  // the dead record lapsed (its TTL), which no agent announces as a change of its verdict.
  int lapses = 0;
  // Longest time a key still showed the killed agent's record after the kill.
  int64_t dead_shown_ms = 0;
  int polls = 0;

 private:
  void Run() {
    Redis redis(E().sandbox.redis_port());
    std::vector<int64_t> last_at(keys_.size(), 0), shown_at(keys_.size(), 0);
    std::vector<SteadyClock::time_point> advanced(keys_.size(), SteadyClock::now());
    std::vector<std::string> healthy(keys_.size()), shown_by(keys_.size());
    std::optional<SteadyClock::time_point> killed_at;
    while (!stop_) {
      if (killed_ && !killed_at) killed_at = SteadyClock::now();
      for (size_t i = 0; i < keys_.size(); ++i) {
        auto h = redis.HGetAll(keys_[i]);
        const auto now = SteadyClock::now();
        ++polls;
        if (h.empty()) {
          ++missing;
          continue;
        }
        const int64_t at = ParseInt<int64_t>(h["measured_at_ms"]).value_or(0);
        if (h["agent"] == shown_by[i] && at < shown_at[i]) ++backwards;
        shown_at[i] = at;
        if (at > last_at[i]) {
          last_at[i] = at;
          advanced[i] = now;
        }
        if (h["healthy"] == "1") {
          longest_stale_ms = std::max<int64_t>(
              longest_stale_ms,
              std::chrono::duration_cast<std::chrono::milliseconds>(now - advanced[i]).count());
        }
        if (killed_at && h["agent"] == victim_) {
          dead_shown_ms = std::max<int64_t>(
              dead_shown_ms,
              std::chrono::duration_cast<std::chrono::milliseconds>(now - *killed_at).count());
        }
        if (!healthy[i].empty() && healthy[i] != h["healthy"]) {
          ++flips;
          if (killed_at && shown_by[i] == victim_ && h["agent"] != victim_ && h["healthy"] == "1") {
            ++lapses;
          }
        }
        healthy[i] = h["healthy"];
        shown_by[i] = h["agent"];
      }
      std::this_thread::sleep_for(5ms);
    }
  }
  std::vector<std::string> keys_;
  const std::string victim_;
  std::atomic<bool> killed_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Kills agent `victim_id` (`victim`) with SIGKILL while the other runs, and checks what routers
// saw meanwhile.
void KillOneWhileRoutersRead(std::unique_ptr<Agent>& victim, int victim_id) {
  Subscriber events(E().sandbox.redis_port(), "slave_delay:events");
  KeyWatch watch({E().sandbox.replica_key(1), E().sandbox.replica_key(2)},
                 std::to_string(victim_id));
  std::this_thread::sleep_for(1s);
  REQUIRE(kill(victim->pid(), SIGKILL) == 0);
  watch.Killed();
  victim->Stop();  // reaps it
  victim.reset();
  std::this_thread::sleep_for(3s);
  watch.Finish();
  const size_t verdict_changes = events.Events().size();
  MESSAGE("agent " << victim_id << " killed: " << watch.polls << " polls, " << watch.missing
                   << " found a key missing, longest " << watch.longest_stale_ms
                   << " ms healthy without a newer measurement, " << watch.flips
                   << " flips of healthy (" << watch.lapses << " as the dead agent's unhealthy "
                   << "record lapsed), its record shown " << watch.dead_shown_ms
                   << " ms after the kill, " << watch.backwards << " went backwards; the agents "
                   << "changed their own verdicts " << verdict_changes << " times");
  CHECK(watch.missing == 0);
  CHECK(watch.backwards == 0);
  // The merge never makes the key flip between two agents' verdicts: every change of `healthy`
  // is one an agent made to its own verdict (at zero lag there are none, unless a busy host made
  // an agent's probe answer too late), or the dead agent's last record lapsing after its TTL
  // (1 s): unhealthy wins the merge, so a verdict it made just before it was killed (seen once,
  // under ASan on a loaded host) holds the key until then.
  CHECK(static_cast<size_t>(watch.flips - watch.lapses) <= verdict_changes);
  CHECK(watch.lapses <= 2);
  CHECK(watch.dead_shown_ms < 1000 + 800);
  // The survivor rewrites each key after every probe (200 ms); generous for a loaded host.
  CHECK(watch.longest_stale_ms < 800);
}

TEST_CASE("two agents publish the same keys; either one killed, routers never miss a key") {
  Redis redis(E().sandbox.redis_port());
  const std::string dir = E().sandbox.dir();
  auto a = std::make_unique<Agent>(AgentConfig(1, E().sandbox.http_port()), dir + "/agent1.log");
  auto b = std::make_unique<Agent>(AgentConfig(2, kSecondHttpPort), dir + "/agent2.log");
  auto both_publish = [&] {
    auto h1 = redis.HGetAll(E().sandbox.replica_key(1));
    auto h2 = redis.HGetAll(E().sandbox.replica_key(2));
    return BothReplicasOk(redis, E().sandbox) && h1.count("agent:1") && h1.count("agent:2") &&
           h2.count("agent:1") && h2.count("agent:2");
  };
  REQUIRE_MESSAGE(WaitFor(both_publish, 15s), a->Log() << b->Log());

  KillOneWhileRoutersRead(a, 1);
  // The dead agent's record leaves the hash once its TTL has passed.
  CHECK(
      WaitFor([&] { return redis.HGetAll(E().sandbox.replica_key(1)).count("agent:1") == 0; }, 3s));
  a = std::make_unique<Agent>(AgentConfig(1, E().sandbox.http_port()), dir + "/agent1.log");
  REQUIRE_MESSAGE(WaitFor(both_publish, 15s), a->Log());
  KillOneWhileRoutersRead(b, 2);
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
}

}  // namespace
}  // namespace lagwatch::test
