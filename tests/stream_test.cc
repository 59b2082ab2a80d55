// The primary's binary log stream against a real sandbox (MariaDB 10.11): the agent registers as
// a replica with its own server id, takes its bounds from the stream (replicas[].bound "stream"),
// stays on it through an idle primary (heartbeat events), falls back to position sampling at
// once when the dump is killed or refused and comes back when it is up again; the same with
// binary log coordinates; binlog_stream.enabled false leaves no dump thread; bad keys are named;
// a listener kept from running (its agent held by a CPU cgroup, or stopped with SIGSTOP) stamps
// what it then reads no later than it came.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/gtid.h"
#include "heartbeat/stream_history.h"
#include "tests/harness.h"

namespace lagwatch::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kDir = "/tmp/lw-bs";
constexpr int kBasePort = 30506;  // the sandbox: 30506..30509, the agent's HTTP on 30510
// binlog_stream.server_id's default for agent_id 1: 4294967295 - 1.
const std::string kStreamServerId = "4294967294";

struct Env {
  Sandbox sandbox{kDir, kBasePort};
  // The table the tests' own transactions go to.
  Env() {
    AdminQuery(
        sandbox.socket("primary"),
        "CREATE TABLE IF NOT EXISTS lwtest.stream_probe (id INT AUTO_INCREMENT PRIMARY KEY)");
  }
};

Env& E() {
  static Env env;
  return env;
}

// The sandbox's config with `edit` applied.
std::string ConfigWith(const std::string& name, const std::function<void(json&)>& edit) {
  std::ifstream in(E().sandbox.config_path());
  json j = json::parse(in, nullptr, true, true);
  edit(j);
  return WriteTempFile(kDir, name + ".json", j.dump(2));
}

std::optional<json> Api(const std::string& path) {
  auto [code, body] = HttpGet(E().sandbox.http_port(), path);
  if (code != 200) return std::nullopt;
  return json::parse(body);
}

// Whether the API answers and every replica's upper bound comes from `bound`.
bool AllBoundBy(const std::string& bound) {
  auto j = Api("/api/v1/replicas");
  if (!j || (*j)["replicas"].size() != 2) return false;
  for (const auto& r : (*j)["replicas"]) {
    if (r["bound"] != bound) return false;
  }
  return true;
}

// Whether the API answers and some replica's upper bound comes from `bound`.
bool AnyBoundBy(const std::string& bound) {
  auto j = Api("/api/v1/replicas");
  if (!j) return false;
  for (const auto& r : (*j)["replicas"]) {
    if (r["bound"] == bound) return true;
  }
  return false;
}

// Where replica `r`'s upper bound comes from now (replicas[].bound), "" without an answer.
std::string BoundOf(int r) {
  auto j = Api("/api/v1/replicas");
  if (!j) return "";
  for (const auto& e : (*j)["replicas"]) {
    if (e["replica"] == E().sandbox.replica_id(r)) return e["bound"].get<std::string>();
  }
  return "";
}

bool StreamUsable() {
  auto j = Api("/api/v1/primary");
  return j && (*j)["binlog_stream"].is_object() && (*j)["binlog_stream"]["usable"] == true;
}

// Whether, within `timeout`, each replica's upper bound came from `bound` at some reading of
// the API (not necessarily the same one) and the stream was usable at the last: the stream and
// the position samples, both sound, take turns at giving the tighter bound at no lag.
bool EachBoundBy(const std::string& bound, std::chrono::milliseconds timeout) {
  std::set<std::string> seen;
  return WaitFor(
      [&] {
        auto j = Api("/api/v1/replicas");
        if (!j) return false;
        for (const auto& r : (*j)["replicas"]) {
          if (r["bound"] == bound) seen.insert(r["replica"].get<std::string>());
        }
        return seen.size() == 2 && StreamUsable();
      },
      timeout);
}

// The stream's delivery bound D (ms) as the API gives it now, or 0 without an answer.
double DeliveryBoundMs() {
  auto j = Api("/api/v1/primary");
  if (!j || !(*j)["binlog_stream"].is_object()) return 0;
  const json& d = (*j)["binlog_stream"]["delivery_bound_ms"];
  return d.is_number() ? d.get<double>() : 0;
}

// What the API says of the stream (why_not, the delivery bound), and the agent's log: for a
// failure's message.
std::string StreamState(const Agent& agent) {
  auto j = Api("/api/v1/primary");
  return "binlog_stream: " + (j ? (*j)["binlog_stream"].dump() : std::string("(no answer)")) +
         "\n" + agent.Log();
}

// How long a new agent's stream may take to become usable, with room for a sanitized agent on a
// busy host: one slow sample at start holds the stream off for lag_span (1 s, the delivery
// bound's reach), a start that has not caught up longer.
constexpr auto kStreamUsableWithin = 30s;
// The agent exports the stream's metrics once a second (Agent::Tick): a count read this long
// after what it counts includes it.
constexpr auto kExportedWithin = 1100ms;

std::string Primary(const std::string& sql) {
  return AdminQuery(E().sandbox.socket("primary"), sql).value_or("");
}

// The processlist id of the agent's dump thread on the primary, "" when there is none.
std::string DumpThread() {
  return Primary(
      "SELECT COALESCE(MAX(ID), '') FROM information_schema.PROCESSLIST "
      "WHERE COMMAND LIKE 'Binlog Dump%' AND USER = 'lagwatch_writer'");
}

std::optional<double> Metric(const std::string& series) {
  return MetricValue(HttpGet(E().sandbox.http_port(), "/metrics").second, series);
}

// The widest delay_ms of both replicas over `span`.
int64_t WidestDelay(Redis& redis, std::chrono::milliseconds span) {
  int64_t widest = 0;
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    for (int r : {1, 2}) {
      auto h = redis.HGetAll(E().sandbox.replica_key(r));
      if (h.count("delay_ms")) widest = std::max<int64_t>(widest, std::stoll(h["delay_ms"]));
    }
    std::this_thread::sleep_for(20ms);
  }
  return widest;
}

// Commits to the primary every 5 ms on a connection of its own until destroyed, and keeps when
// each commit returned (wall ms).
class Committer {
 public:
  Committer()
      : thread_([this](std::stop_token stop) {
          AdminSession primary(E().sandbox.socket("primary"));
          while (!stop.stop_requested()) {
            primary.Query("INSERT INTO lwtest.stream_probe VALUES (NULL)");
            {
              std::lock_guard lock(mu_);
              acks_.push_back(WallMs());
            }
            std::this_thread::sleep_for(5ms);
          }
        }) {}
  std::vector<int64_t> Acks() const {
    std::lock_guard lock(mu_);
    return acks_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<int64_t> acks_;  // GUARDED_BY(mu_)
  std::jthread thread_;        // last: stopped and joined first
};

TEST_CASE("the stream gives the bounds: registered on the primary, usable, tight, a stop seen") {
  Agent agent(E().sandbox.config_path(), kDir + "/stream.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  // Both bounds are sound and the tighter is published: at no lag the position samples (the
  // probes follow their cadence) and the stream take turns.
  REQUIRE_MESSAGE(WaitFor([] { return AnyBoundBy("stream"); }, 10s), agent.Log());
  CHECK(StreamUsable());
  auto primary = Api("/api/v1/primary");
  REQUIRE(primary);
  CAPTURE(primary->dump());
  CHECK((*primary)["binlog_stream"]["delivery_bound_ms"].get<double>() < TimeBoundMs(50));
  CHECK((*primary)["binlog_stream"]["server_id"].get<int64_t>() == std::stoll(kStreamServerId));
  // A replica of the primary as far as the primary can tell: in SHOW SLAVE HOSTS, by its id.
  RunResult hosts = RunCommand({"/usr/bin/mariadb", "-S", E().sandbox.socket("primary"), "-uroot",
                                "-N", "-e", "SHOW SLAVE HOSTS"});
  CHECK(hosts.output.find(kStreamServerId) != std::string::npos);
  CHECK(agent.Log().find("binary log stream from " + E().sandbox.primary_id()) !=
        std::string::npos);
  CHECK(WaitFor([] { return Metric("lagwatch_binlog_stream_up").value_or(0) == 1; }, 5s));
  CHECK(WaitFor([] { return Metric("lagwatch_binlog_stream_events_total").value_or(0) > 0; }, 5s));
  // At no lag the bound stays near the delivery bound and a probe's length.
  CHECK(WidestDelay(redis, 3s) < TimeBoundMs(100));

  // A stopped SQL thread: the replica falls behind the writes the stream delivers.
  AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
  CHECK_MESSAGE(
      WaitFor([&] { return redis.HGetAll(E().sandbox.replica_key(1))["healthy"] == "0"; }, 5s),
      agent.Log());
  AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
  CHECK_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  CHECK(agent.Stop() == 0);
  // The agent's dump thread went with it.
  CHECK(WaitFor([] { return DumpThread().empty(); }, 5s));
}

TEST_CASE("an idle primary: the stream's heartbeat events keep it usable without writes") {
  // One heartbeat row a minute: nothing is written while this runs. Heartbeat events every
  // 10 ms (silent after 100 ms), stretched under the sanitizers as every timing bound is: under
  // ASan on a slow host the stream went silent twice in 3 s.
  Agent agent(ConfigWith("idle",
                         [](json& j) {
                           j["heartbeat"]["interval_ms"] = 60000;
                           j["binlog_stream"]["heartbeat_ms"] = TimeBoundMs(10);
                         }),
              kDir + "/idle.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox) && StreamUsable(); },
                          kStreamUsableWithin),
                  StreamState(agent));
  // Over 3 s of the idle state (not the start, where the first heartbeat may be late on a busy
  // host): never silent. Each read waits for the export of what came before it.
  auto silent = [] {
    std::this_thread::sleep_for(kExportedWithin);
    return Metric("lagwatch_binlog_stream_fallbacks_total{reason=\"silent\"}").value_or(-1);
  };
  const double silent_before = silent();
  int usable = 0, asked = 0;
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    ++asked;
    if (StreamUsable()) ++usable;
    std::this_thread::sleep_for(100ms);
  }
  CHECK(usable == asked);
  CHECK(silent_before >= 0);
  CHECK(silent() == silent_before);
  CHECK(WidestDelay(redis, 1s) < TimeBoundMs(100));
  CHECK(agent.Stop() == 0);
}

// An agent that writes no heartbeat row after its first, so that what a stopped replica lacks is
// the test's own transactions, its configuration edited by `edit`; returned once both replicas
// are ok and its stream is usable.
std::unique_ptr<Agent> AgentWithoutHeartbeats(
    const std::string& name, Redis& redis, const std::function<void(json&)>& edit = [](json&) {}) {
  auto agent = std::make_unique<Agent>(ConfigWith(name,
                                                  [&](json& j) {
                                                    j["heartbeat"]["interval_ms"] = 60000;
                                                    edit(j);
                                                  }),
                                       kDir + "/" + name + ".log");
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox) && StreamUsable(); },
                          kStreamUsableWithin),
                  StreamState(*agent));
  return agent;
}

// Calls `record(measured_at_ms, delay_ms)` once for each record of replica 1 measured after
// `after` (wall ms) that its key shows within `span`, read every `every`.
void EachRecordAfter(Redis& redis, int64_t after, std::chrono::milliseconds span,
                     std::chrono::milliseconds every,
                     const std::function<void(int64_t at, int64_t delay)>& record) {
  int64_t last_at = 0;
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    auto h = redis.HGetAll(E().sandbox.replica_key(1));
    const auto at = ParseInt<int64_t>(h["measured_at_ms"]);
    const auto delay = ParseInt<int64_t>(h["delay_ms"]);
    if (at && delay && *at > after && *at != last_at) {
      last_at = *at;
      // What a failed check inside `record` prints beside its own values.
      INFO("the record: state " << h["state"] << ", healthy " << h["healthy"] << ", delay_lower_ms "
                                << h["delay_lower_ms"] << ", measured_at_ms " << *at);
      record(*at, *delay);
    }
    std::this_thread::sleep_for(every);
  }
}

TEST_CASE("a replica lacking one transaction is bounded from its arrival: within ms of the truth") {
  Redis redis(E().sandbox.redis_port());
  auto agent = AgentWithoutHeartbeats("exact", redis);
  // How often the stream has stopped giving bounds, whatever the reason.
  auto fallbacks = [] {
    double n = 0;
    for (const char* why : stream_reason::kAll) {
      n += Metric(std::string("lagwatch_binlog_stream_fallbacks_total{reason=\"") + why + "\"}")
               .value_or(0);
    }
    return n;
  };
  // Rounds in which the stream gave bounds throughout are checked for tightness; a round in
  // which it fell back (an agent starved beside the sanitizer suites: its listener or sampler
  // late) is checked only for soundness, and another round runs. Four such rounds are needed.
  int tight_rounds = 0;
  for (int round = 0; round < 10 && tight_rounds < 4; ++round) {
    CAPTURE(round);
    const double fallbacks_before = fallbacks();
    AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
    std::this_thread::sleep_for(100ms + std::chrono::milliseconds(37 * (round % 4)));
    const int64_t sent = WallMs();
    Primary("INSERT INTO lwtest.stream_probe VALUES (NULL)");
    const int64_t acked = WallMs();
    // The records measured from 50 ms after the write on: the truth is between measured_at -
    // acked and measured_at - sent. The bound is measured_at - arrival + D: over the truth by
    // the write's way to the listener and D, the largest delivery delay measured around the
    // arrival (a few ms on a quiet host, more beside the sanitizer suites), read as it goes.
    double bound_d = DeliveryBoundMs();
    struct Seen {
      int64_t over_sent;  // measured_at - sent
      int64_t delay;
    };
    std::vector<Seen> seen;
    EachRecordAfter(redis, acked + 50, 600ms, 5ms, [&](int64_t at, int64_t delay) {
      bound_d = std::max(bound_d, DeliveryBoundMs());
      seen.push_back({at - sent, delay});
      CAPTURE(at - sent);
      CAPTURE(delay);
      // Never more than 5 ms below the truth (the stream's target, docs/benchmarks.md): D is
      // measured, and an event read late on a busy host arrives later than D allows (3 ms once,
      // with the benchmark programs compiling beside the suite).
      CHECK(delay >= at - acked - 5);
    });
    CHECK(seen.size() >= 2);
    // Past the next export, a fallback during the window shows (read at once, one under ASan did
    // not, and its round was judged tight).
    std::this_thread::sleep_for(kExportedWithin);
    const double fell = fallbacks() - fallbacks_before;
    if (fell == 0 && StreamUsable()) {
      ++tight_rounds;
      // From the arrival, not from a position sample (up to 50 ms earlier than the write).
      std::string loose;
      for (const Seen& r : seen) {
        if (r.delay > r.over_sent + static_cast<int64_t>(bound_d) + 15) {
          loose += " (" + std::to_string(r.over_sent) + ", " + std::to_string(r.delay) + ")";
        }
      }
      CHECK_MESSAGE(loose.empty(),
                    "records over the arrival's bound (measured_at - sent, delay_ms):"
                        << loose << "; D " << bound_d << " ms\n"
                        << StreamState(*agent));
    } else {
      MESSAGE("round " << round << ": the stream fell back " << fell
                       << " times; bounds checked for soundness only\n"
                       << StreamState(*agent));
    }
    AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
    REQUIRE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s));
  }
  CHECK(tight_rounds == 4);
  CHECK(agent->Stop() == 0);
}

// Writes `text` to the file at `path` (a cgroup's control file), failing the test if it cannot.
void WriteControl(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << std::flush;
  REQUIRE_MESSAGE(out.good(), "cannot write " << text << " to " << path);
}

// A CPU cgroup for process `pid` that holds it back: Starve() moves it in and leaves it 1 ms of
// CPU a second; once that is spent none of its threads runs (they are runnable and wait).
// Release() moves it out, and it runs at once. Only that process is held back, not its
// neighbours. cgroup v1's cpu controller or v2's cpu.max, as the host mounts them. The process
// must have no realtime threads: CFS bandwidth does not hold SCHED_FIFO threads (and a v1 group
// without a realtime budget refuses them).
class CpuThrottle {
 public:
  explicit CpuThrottle(pid_t pid) : pid_(pid) {
    v2_ = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
    root_ = v2_ ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
    dir_ = root_ + "/lw-starve-" + std::to_string(getpid());
    if (v2_) WriteControl(root_ + "/cgroup.subtree_control", "+cpu");
    std::error_code ec;
    std::filesystem::create_directory(dir_, ec);
    REQUIRE_MESSAGE(!ec, "cannot create " << dir_ << ": " << ec.message());
    if (v2_) {
      WriteControl(dir_ + "/cpu.max", "1000 1000000");
    } else {
      WriteControl(dir_ + "/cpu.cfs_period_us", "1000000");
      WriteControl(dir_ + "/cpu.cfs_quota_us", "1000");
    }
  }
  ~CpuThrottle() {
    std::ofstream(root_ + "/cgroup.procs") << pid_;  // fails harmlessly once it has exited
    ::rmdir(dir_.c_str());
  }
  // Returns once the process has spent its 1 ms and is held (cpu.stat's nr_throttled counts it).
  void Starve() {
    const int64_t before = Stat("nr_throttled");
    WriteControl(dir_ + "/cgroup.procs", std::to_string(pid_));
    REQUIRE_MESSAGE(WaitFor([&] { return Stat("nr_throttled") > before; }, 5s),
                    "the agent was never held back in " << dir_);
  }
  void Release() { WriteControl(root_ + "/cgroup.procs", std::to_string(pid_)); }

 private:
  int64_t Stat(const std::string& name) const {
    std::ifstream in(dir_ + "/cpu.stat");
    std::string key;
    int64_t value = 0;
    while (in >> key >> value) {
      if (key == name) return value;
    }
    return 0;
  }

  const pid_t pid_;
  bool v2_ = false;
  std::string root_, dir_;
};

// Rounds until one gave stream bounds, at most 4: replica 1 stops applying, the agent is held back
// (`hold`) from before a transaction commits to 100 ms after (`release`), and every record of the
// second after the write must be no more than 5 ms below the truth's lower end; one round must
// have given stream bounds.
void HeldBackRounds(Agent& agent, Redis& redis, const std::function<void()>& hold,
                    const std::function<void()>& release) {
  int stream_rounds = 0;
  for (int round = 0; round < 4 && stream_rounds == 0; ++round) {
    CAPTURE(round);
    AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
    std::this_thread::sleep_for(100ms);
    hold();
    Primary("INSERT INTO lwtest.stream_probe VALUES (NULL)");
    const int64_t acked = WallMs();
    std::this_thread::sleep_for(100ms);
    release();
    // Every record measured after the write, for a second: the stream is used again within ms
    // of the release (its heartbeats every 10 ms are signs of life).
    int records = 0, from_stream = 0;
    int64_t over = INT64_MAX;
    EachRecordAfter(redis, acked, 1s, 5ms, [&](int64_t at, int64_t delay) {
      ++records;
      if (BoundOf(1) == "stream") ++from_stream;
      CAPTURE(at - acked);
      CAPTURE(delay);
      // The truth is at least measured_at - acked; 5 ms is the stream's target.
      CHECK(delay >= at - acked - 5);
      over = std::min(over, delay - (at - acked));
    });
    MESSAGE("round " << round << ": " << records << " records after the write, " << from_stream
                     << " with a stream bound; the closest " << over
                     << " ms over the truth's lower end");
    CHECK(records >= 2);
    if (from_stream > 0) ++stream_rounds;
    AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
    REQUIRE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s));
  }
  CHECK_MESSAGE(stream_rounds == 1, StreamState(agent));
}

TEST_CASE("a listener kept from running: what it reads late is stamped no later than it came") {
  // The agent held back by a CPU cgroup: the listener, the sampler and the prober are runnable
  // but do not run, and the transaction is read about 100 ms after it arrived. Stamped at the
  // read, replica 1 (which lacks it) would be bounded that much below the truth once the stream
  // is used again: it was in 2 of 4 runs (-100 ms); in the others the listener read it before it
  // was held, or the stream was not used for it (a sample delivered late made its delivery bound
  // too long). (The agent's threads at normal priority: CFS bandwidth holds no realtime thread.)
  Redis redis(E().sandbox.redis_port());
  auto agent =
      AgentWithoutHeartbeats("starved", redis, [](json& j) { j["probe"]["realtime"] = false; });
  CpuThrottle throttle(agent->pid());
  HeldBackRounds(
      *agent, redis, [&] { throttle.Starve(); }, [&] { throttle.Release(); });
  CHECK(agent->Stop() == 0);
}

TEST_CASE(
    "an agent stopped (SIGSTOP): what it reads after SIGCONT is stamped no later than it came") {
  // Time stopped is neither running nor waiting for a CPU, so the thread's counters do not see
  // it: a read that slept through the stop is taken for one that waited for input, unless the
  // resume is seen (SIGCONT, left pending for the listener: heartbeat/arrival_stamp.h).
  Redis redis(E().sandbox.redis_port());
  auto agent = AgentWithoutHeartbeats("stopped", redis);
  const pid_t pid = agent->pid();
  HeldBackRounds(
      *agent, redis, [&] { REQUIRE(::kill(pid, SIGSTOP) == 0); },
      [&] { REQUIRE(::kill(pid, SIGCONT) == 0); });
  CHECK(agent->Stop() == 0);
}

TEST_CASE("binlog_stream.watch_writes: a hung replica is bounded from its own binary log") {
  // The primary takes a commit every 5 ms; replica 1 hangs (SIGSTOP) 150 ms after an answer.
  // From its last answer its bound would be the time since the hang plus those 150 ms; its own
  // binary log, followed by the watch, shows what it applied up to the hang.
  Agent agent(ConfigWith("witness",
                         [](json& j) {
                           j["heartbeat"]["interval_ms"] = 60000;
                           j["binlog_stream"]["watch_writes"] = true;
                         }),
              kDir + "/witness.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor(
                      [&] {
                        return BothReplicasOk(redis, E().sandbox) && StreamUsable() &&
                               agent.Log().find("writes watched on 127.0.0.1:" +
                                                std::to_string(kBasePort + 1)) != std::string::npos;
                      },
                      kStreamUsableWithin),
                  StreamState(agent));
  Committer committer;
  const pid_t pid = ReadPidFile(E().sandbox.dir() + "/replica1/mysqld.pid");
  REQUIRE(pid > 0);
  auto measured_at = [&] {
    return ParseInt<int64_t>(redis.HGetAll(E().sandbox.replica_key(1))["measured_at_ms"])
        .value_or(0);
  };
  int rounds = 0;
  for (int round = 0; round < 8 && rounds < 3; ++round) {
    CAPTURE(round);
    REQUIRE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s));
    const int64_t before = measured_at();
    REQUIRE(WaitFor([&] { return measured_at() != before; }, 2s));
    const auto answered = std::chrono::steady_clock::now();
    std::this_thread::sleep_until(answered + 150ms);
    REQUIRE(kill(pid, SIGSTOP) == 0);
    const int64_t hung_at = WallMs();
    struct Seen {
      int64_t at, delay;
    };
    std::vector<Seen> seen;
    EachRecordAfter(redis, hung_at + 20, 600ms, 2ms, [&](int64_t at, int64_t delay) {
      seen.push_back({at, delay});
    });
    REQUIRE(kill(pid, SIGCONT) == 0);
    // The second commit acknowledged after the hang was sent after it: the replica lacks it, so
    // the truth at `at` is at least at - its acknowledgement.
    int64_t lacked_by = 0;
    {
      const std::vector<int64_t> acks = committer.Acks();
      auto it = std::upper_bound(acks.begin(), acks.end(), hung_at);
      REQUIRE(std::distance(it, acks.end()) >= 2);
      lacked_by = *std::next(it);
    }
    std::string shown;
    for (const Seen& r : seen) {
      shown += " " + std::to_string(r.at - hung_at) + ":" + std::to_string(r.delay);
    }
    INFO("ms since the hang : delay_ms of each record:" << shown << "\n" << StreamState(agent));
    CHECK(seen.size() >= 2);
    for (const Seen& r : seen) {
      CHECK(r.delay >= r.at - lacked_by - 5);  // never more than 5 ms under the truth
    }
    if (!StreamUsable()) continue;  // starved beside the sanitizer suites: soundness only
    ++rounds;
    MESSAGE("ms since the hang : delay_ms:" << shown);
    // From the hang, with one commit's interval and the delivery bound: far from the 150 ms
    // before it that a bound from the last answer carries.
    for (const Seen& r : seen) CHECK(r.delay <= r.at - hung_at + TimeBoundMs(60));
  }
  CHECK(rounds == 3);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("a replica proven lagging is excluded at its bound's crossing, not a round trip later") {
  Agent agent(E().sandbox.config_path(), kDir + "/proven.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox) && StreamUsable(); },
                          kStreamUsableWithin),
                  StreamState(agent));
  std::optional<Committer> committer(std::in_place);
  // Each stall: the probes answer, their lower bound grows, and the record that excludes the
  // replica is published by the timer at the crossing, not by the probe sent just past it.
  const std::string line = "replica 127.0.0.1:" + std::to_string(kBasePort + 1) + " is now lagging";
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    REQUIRE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s));
    AdminQuery(E().sandbox.socket("replica1"), "STOP SLAVE SQL_THREAD");
    CHECK(WaitFor([&] { return redis.HGetAll(E().sandbox.replica_key(1))["healthy"] == "0"; }, 5s));
    AdminQuery(E().sandbox.socket("replica1"), "START SLAVE SQL_THREAD");
  }
  committer.reset();
  REQUIRE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s));
  const std::string log = agent.Log();
  // The verdict at the crossing states a bound over the limit. (The first healthy=0 record the
  // loop above saw need not: a status poll landing before the crossing excludes the replica as
  // stopped, at any bound; and hysteresis keeps it lagging while a later answer tightens it.)
  constexpr std::string_view kBound = "delay_ms<=";
  int at_crossing = 0;
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) {
    const std::string rest = log.substr(at, log.find('\n', at) - at);
    // "(at the crossing)", or "(no answer yet at the crossing)" with a probe in flight.
    if (rest.find("at the crossing)") == std::string::npos) continue;
    if (rest.find("(at the crossing)") != std::string::npos) ++at_crossing;
    const size_t bound = rest.find(kBound);
    REQUIRE_MESSAGE(bound != std::string::npos, rest);
    CHECK_MESSAGE(std::strtoll(rest.c_str() + bound + kBound.size(), nullptr, 10) > 200, rest);
  }
  // A loop made late by the sanitizer suites beside may leave a probe in flight at one crossing.
  CHECK_MESSAGE(at_crossing >= 1, log);
  CHECK(agent.Stop() == 0);
}

TEST_CASE(
    "probe.after_commit_ms, on by default: a commit is in both replicas' published positions "
    "at once") {
  // The sandbox's config leaves probe.after_commit_ms at its default (10 ms for a few servers).
  Agent agent(ConfigWith("after-commit",
                         [](json& j) {
                           j["heartbeat"]["interval_ms"] = 60000;  // the test's commits only
                           REQUIRE_FALSE(j["probe"].contains("after_commit_ms"));
                         }),
              kDir + "/after-commit.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox) && StreamUsable(); },
                          kStreamUsableWithin),
                  StreamState(agent));
  // Whether a replica's published position has everything of `wrote` (MariaDB GTIDs).
  auto has = [&](int r, const GtidPos& wrote) {
    auto pos = GtidPos::Parse(redis.HGetAll(E().sandbox.replica_key(r))["position"]);
    return pos.ok() && pos->Reaches(wrote);
  };
  std::vector<int64_t> took;
  for (int i = 0; i < 5; ++i) {
    // Just after a probe of replica 1: on the probe schedule alone the next is 170-200 ms away.
    const std::string before = redis.HGetAll(E().sandbox.replica_key(1))["measured_at_ms"];
    REQUIRE(WaitFor(
        [&] { return redis.HGetAll(E().sandbox.replica_key(1))["measured_at_ms"] != before; }, 2s));
    const auto start = std::chrono::steady_clock::now();
    Primary("INSERT INTO lwtest.stream_probe VALUES (NULL)");
    auto wrote = GtidPos::Parse(Primary("SELECT @@gtid_binlog_pos"));
    REQUIRE(wrote.ok());
    REQUIRE(!wrote->empty());
    CHECK(WaitFor([&] { return has(1, *wrote) && has(2, *wrote); }, 2s));
    took.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
  }
  std::string list;
  for (int64_t ms : took) list += " " + std::to_string(ms);
  MESSAGE("a commit in both replicas' published positions after (ms):" << list);
  // 10 ms after the commit's arrival, a round trip, the publication: well under the probe
  // schedule's 170-200 ms, with room for a busy host. The median: one commit of five that a
  // loaded host (a sanitized agent on 2 shared cores) delays past a tick says nothing of the
  // others, each of which would take 170-200 ms on the schedule alone.
  std::sort(took.begin(), took.end());
  CHECK_MESSAGE(took[took.size() / 2] < 140, StreamState(agent));
  CHECK(agent.Stop() == 0);
}

TEST_CASE("a killed dump thread: sampling at once, the stream back after a reconnect") {
  Agent agent(E().sandbox.config_path(), kDir + "/kill.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(EachBoundBy("stream", kStreamUsableWithin), StreamState(agent));
  const std::string before = DumpThread();
  REQUIRE(!before.empty());
  Primary("KILL " + before);
  // Reconnected: another thread, the stream's bounds again, the replicas healthy throughout.
  CHECK_MESSAGE(WaitFor(
                    [&] {
                      const std::string now = DumpThread();
                      return !now.empty() && now != before;
                    },
                    kStreamUsableWithin),
                StreamState(agent));
  CHECK_MESSAGE(EachBoundBy("stream", kStreamUsableWithin), StreamState(agent));
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
  CHECK(WaitFor([] { return Metric("lagwatch_binlog_stream_starts_total").value_or(0) >= 2; }, 5s));
  CHECK(Metric("lagwatch_binlog_stream_errors_total{reason=\"cut\"}").value_or(0) +
            Metric("lagwatch_binlog_stream_errors_total{reason=\"server_error\"}").value_or(0) >=
        1);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("a stream begun on a busy primary is proven caught up at once, not at the next sample") {
  // A primary that commits every 5 ms sends no heartbeat event, so a sample sent after the
  // stream began, and delivered by it, is what proves it caught up. Samples here come every 2 s:
  // without a sample urged at each start, the stream would wait up to 2 s (1 s on average) after
  // each restart before it gives bounds again.
  Agent agent(ConfigWith("catchup",
                         [](json& j) {
                           j["sampler"]["interval_ms"] = 2000;
                           j["binlog_stream"]["heartbeat_ms"] = 1000;
                         }),
              kDir + "/catchup.log");
  std::optional<Committer> committer(std::in_place);
  // The log lines of a start: "binary log stream from <primary> (<kind>, server id <id>) from
  // <position>" (an end names the primary too, with its error).
  auto starts = [&] {
    std::istringstream log(agent.Log());
    size_t n = 0;
    for (std::string line; std::getline(log, line);) {
      if (line.find("binary log stream from") != std::string::npos &&
          line.find(", server id ") != std::string::npos) {
        ++n;
      }
    }
    return n;
  };
  // From a start seen in the log to the stream usable, polled every 5 ms.
  auto usable_after_start = [&](size_t start) -> std::optional<int64_t> {
    if (!WaitFor([&] { return starts() >= start; }, 10s)) return std::nullopt;
    const auto seen = std::chrono::steady_clock::now();
    while (!StreamUsable()) {
      if (std::chrono::steady_clock::now() - seen > 10s) return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 seen)
        .count();
  };
  std::vector<int64_t> took;
  auto first = usable_after_start(1);
  CHECK_MESSAGE(first.has_value(), StreamState(agent));
  if (first) took.push_back(*first);
  for (size_t restart = 2; restart <= 4; ++restart) {
    const std::string dump = DumpThread();
    REQUIRE_MESSAGE(!dump.empty(), StreamState(agent));
    Primary("KILL " + dump);
    auto t = usable_after_start(restart);
    CHECK_MESSAGE(t.has_value(), StreamState(agent));
    if (t) took.push_back(*t);
  }
  committer.reset();
  std::string list;
  for (int64_t ms : took) list += " " + std::to_string(ms);
  MESSAGE("usable after each start (ms):" << list);
  REQUIRE(took.size() == 4);
  // The urged sample's round trip and the next commit, within 5 ms: far under the 2 s a sample
  // waits, with room for a busy host.
  for (int64_t ms : took) CHECK_MESSAGE(ms < TimeBoundMs(500), StreamState(agent));
  CHECK(agent.Stop() == 0);
}

TEST_CASE("without REPLICATION SLAVE the dump is refused, named, and sampling gives the bounds") {
  Primary("REVOKE REPLICATION SLAVE ON *.* FROM 'lagwatch_writer'@'127.0.0.1'");
  Agent agent(E().sandbox.config_path(), kDir + "/refused.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([&] { return BothReplicasOk(redis, E().sandbox); }, 10s), agent.Log());
  CHECK_MESSAGE(
      WaitFor([&] { return agent.Log().find("REPLICATION SLAVE") != std::string::npos; }, 5s),
      agent.Log());
  CHECK(WaitFor(
      [] {
        return Metric("lagwatch_binlog_stream_errors_total{reason=\"refused\"}").value_or(0) >= 1;
      },
      5s));
  CHECK(WaitFor([] { return AllBoundBy("positions"); }, 5s));
  CHECK(!StreamUsable());
  CHECK(Metric("lagwatch_binlog_stream_up").value_or(-1) == 0);
  CHECK(agent.Stop() == 0);
  Primary("GRANT REPLICATION SLAVE ON *.* TO 'lagwatch_writer'@'127.0.0.1'");
}

TEST_CASE("binary log coordinates: the stream follows file and position, through a rotation") {
  Agent agent(ConfigWith("binlog", [](json& j) { j["positions"] = "binlog"; }),
              kDir + "/binlog.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(EachBoundBy("stream", kStreamUsableWithin), StreamState(agent));
  auto primary = Api("/api/v1/primary");
  REQUIRE(primary);
  const std::string pos = (*primary)["binlog_stream"]["position"].get<std::string>();
  CAPTURE(pos);
  CHECK(pos.find(":") != std::string::npos);  // "mysql-bin.000001:1234"
  Primary("FLUSH BINARY LOGS");
  CHECK(WidestDelay(redis, 2s) < TimeBoundMs(200));
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
  // Usable on the new file (a moment's fallback, e.g. silent under ASan on a busy host, is the
  // design's; never coming back is not).
  CHECK_MESSAGE(WaitFor([] { return StreamUsable(); }, 5s), StreamState(agent));
  primary = Api("/api/v1/primary");
  CHECK((*primary)["binlog_stream"]["position"].get<std::string>() != pos);
  CHECK(agent.Stop() == 0);
}

TEST_CASE("binlog_stream.enabled false: position sampling only, no dump thread") {
  Agent agent(ConfigWith("off", [](json& j) { j["binlog_stream"]["enabled"] = false; }),
              kDir + "/off.log");
  Redis redis(E().sandbox.redis_port());
  REQUIRE_MESSAGE(WaitFor([] { return AllBoundBy("positions"); }, 10s), agent.Log());
  auto primary = Api("/api/v1/primary");
  REQUIRE(primary);
  CHECK((*primary)["binlog_stream"].is_null());
  CHECK(DumpThread().empty());
  CHECK(agent.Stop() == 0);
}

TEST_CASE("bad binlog_stream keys are named and refused") {
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{{"heartbeat_ms", 0},
                                                                     {"max_lag_ms", "50"},
                                                                     {"server_id", -1},
                                                                     {"enabled", 1},
                                                                     {"heartbeats", 10}}) {
    CAPTURE(key);
    RunResult check =
        RunCommand({LagwatchBinary(), "--check-config",
                    ConfigWith("bad-" + key, [&](json& j) { j["binlog_stream"][key] = value; })});
    CHECK(check.exit_code == 2);
    CHECK(check.output.find("binlog_stream") != std::string::npos);
  }
}

TEST_CASE("without BINLOG MONITOR the stream starts by GTID state, as a replica would") {
  // The log's end (SHOW BINLOG STATUS) needs BINLOG MONITOR, which only positions `binlog`
  // requires: without it the dump is asked for the GTID state, and the stream works as before.
  Primary("REVOKE BINLOG MONITOR ON *.* FROM 'lagwatch_writer'@'127.0.0.1'");
  Agent agent(E().sandbox.config_path(), kDir + "/no-monitor.log");
  Redis redis(E().sandbox.redis_port());
  CHECK_MESSAGE(EachBoundBy("stream", kStreamUsableWithin), StreamState(agent));
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
  CHECK(Metric("lagwatch_binlog_stream_errors_total{reason=\"refused\"}").value_or(0) == 0);
  CHECK(agent.Stop() == 0);
  Primary("GRANT BINLOG MONITOR ON *.* TO 'lagwatch_writer'@'127.0.0.1'");
}

TEST_CASE("a stream begun at the end of a long binary log measures no read of it as delivery") {
  // Asked for a GTID state, a dump thread finds it by reading the current binary log file from
  // its beginning before it sends anything: tens of ms for tens of MB, after the stream began.
  // The samples sent meanwhile measured that read as the stream's delivery delay D, and D held
  // it for lag_span (1 s) after each start on a long file: after every move of the primary
  // (`bench/accuracy`'s moves, D 4-11 ms for a second after a move). The stream starts by file
  // and offset at the log's end instead, the GTID state there read before it begins.
  Primary(
      "CREATE TABLE IF NOT EXISTS lwtest.stream_bulk (id INT AUTO_INCREMENT PRIMARY KEY, "
      "v VARCHAR(64)) ENGINE=InnoDB");
  // About 120 MB of binary log (600,000 row events) in the current file: reading it takes the
  // primary about 100 ms, twice the stream's max_lag_ms.
  Primary("FLUSH BINARY LOGS");
  for (int i = 0; i < 6; ++i) {
    Primary(
        "BEGIN NOT ATOMIC DECLARE i INT DEFAULT 0; START TRANSACTION; WHILE i < 100000 DO "
        "INSERT INTO lwtest.stream_bulk (v) VALUES (REPEAT('a', 60)); SET i = i + 1; END WHILE; "
        "COMMIT; END");
  }
  const std::string file = Primary("SHOW MASTER STATUS");
  CAPTURE(file);
  Redis redis(E().sandbox.redis_port());
  std::optional<Committer> committer(std::in_place);
  Agent agent(E().sandbox.config_path(), kDir + "/long-log.log");
  REQUIRE_MESSAGE(
      WaitFor([&] { return agent.Log().find("binary log stream from") != std::string::npos; }, 30s),
      agent.Log());
  // D as the API gives it (usable or not) every 20 ms for the 1.5 s after the start, and when the
  // stream was first usable.
  const auto started = std::chrono::steady_clock::now();
  double widest = 0;
  std::optional<int64_t> usable_ms;
  while (std::chrono::steady_clock::now() - started < 1500ms) {
    auto j = Api("/api/v1/primary");
    if (j && (*j)["binlog_stream"].is_object()) {
      const json& s = (*j)["binlog_stream"];
      if (s["delivery_bound_ms"].is_number()) {
        widest = std::max(widest, s["delivery_bound_ms"].get<double>());
      }
      if (!usable_ms && s["usable"] == true) {
        usable_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  committer.reset();
  MESSAGE("after a start on a long binary log: usable after "
          << usable_ms.value_or(-1) << " ms, D at most " << widest << " ms");
  // Read after the start, the file made the first samples' lag its reading time, over
  // max_lag_ms: the stream was `slow` for lag_span (1 s) and D that long (80 MB: usable after
  // 1,073 and 1,298 ms, D up to 116 and 337 ms). Now a sample's round trip and the next commit
  // (every 5 ms): 0 ms and D 1-5 ms on an idle host, 42 ms and D 48 ms in a CI run beside the
  // other suites, with room for a busier one.
  CHECK_MESSAGE(usable_ms.has_value(), StreamState(agent));
  CHECK_MESSAGE(usable_ms.value_or(1500) < TimeBoundMs(500), StreamState(agent));
  CHECK_MESSAGE(widest < static_cast<double>(TimeBoundMs(100)), StreamState(agent));
  CHECK_MESSAGE(BothReplicasSettleOk(redis, E().sandbox), ReplicaStates(redis, E().sandbox));
  CHECK(agent.Stop() == 0);
  Primary("DROP TABLE lwtest.stream_bulk");
}

}  // namespace
}  // namespace lagwatch::test
