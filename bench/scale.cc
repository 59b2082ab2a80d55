// bench_scale: how lagwatch's cost and probe timing grow with the number of replicas it watches
// (docs/benchmarks.md: 1,000 replicas at 200 ms on <= 0.5 core and <= 128 MB RSS, probe-start
// jitter p99 <= 10 ms). Run it through bench/scale, which builds, brings the sandbox up and takes
// it down.
//
// The sandbox's two real replicas stand in for N replicas ("aliases"): alias i is replica
// i % 2 at its own loopback address 127.0.(1 + i/250).(1 + i%250), on that replica's port. All of
// 127.0.0.0/8 is loopback on Linux and the kernel gives such connections the source address
// 127.0.0.1, so the sandbox's 'lagwatch_probe'@'127.0.0.1' account matches and no traffic
// leaves the host; the replicas listen on 0.0.0.0 for it (scripts/sandbox --replica-bind) and
// allow one connection per alias (--max-connections). lagwatch sees N distinct "host:port"
// replicas, each with its own connection, schedule, Redis key and metric series.
//
// For each N: write a config of N aliases, start lagwatch, wait until every alias is published
// with state ok, warm up, then
//   - steady window: lagwatch's CPU (/proc/PID/stat) and RSS (/proc/PID/status), probes/s and
//     probe-start jitter (differences of lagwatch_probes_total and of the buckets of
//     lagwatch_probe_start_delay_seconds between the first and last scrape of the window),
//     Redis commands/s (INFO stats), and the time and size of each /metrics scrape;
//   - key age as routers see it: throughout the steady window a reader samples random aliases'
//     keys every 10 ms, as a router would before a read, and records now - measured_at_ms (both
//     on this host's wall clock); a missing key is counted apart;
//   - freeze window: replica1's mariadbd is SIGSTOPped; the jitter of replica2's aliases (which
//     must not suffer) and of replica1's (for information) is measured separately; then
//     SIGCONT, and the bench waits until every alias is ok again.
// Before the N runs, one pt-heartbeat --monitor and one mysqld_exporter run against replica2 for
// a while: their RSS, times N, is what one-process-per-replica tools would take.
//
// With --tls the sandbox was built with --tls: lagwatch's config (the sandbox's) speaks TLS to
// every MySQL server, verifying each alias's certificate by the address it connects to (the
// sandbox's server certificate must carry every alias as an IP subjectAltName: bench/scale
// builds it with scripts/sandbox --tls-ip-sans), and to Redis; the bench's own Redis clients and
// mysqld_exporter use TLS too. The results go to scale-tls.{json,md}; `bench_scale --compare
// PLAIN.json TLS.json OUT` renders the two runs side by side (bench/scale --tls-compare).
//
// Its flags are kUsage below.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <mysql.h>
#include <nlohmann/json.hpp>

#include "base/worker.h"
#include "bench/analysis.h"
#include "bench/bench_util.h"
#include "bench/collectors.h"
#include "bench/flags.h"
#include "bench/host.h"
#include "bench/scale_report.h"
#include "bench/scrape.h"
#include "bench/table.h"

namespace lagwatch::bench {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kMaxAliases = 250 * 254;
// Scrapes inside the steady window besides its first and last: one every 12 s in a 60 s window,
// close to the common 15 s scrape interval.
constexpr int kMiddleScrapes = 4;
constexpr auto kScrapeTimeout = milliseconds(60'000);
constexpr auto kComparisonRun = seconds(10);  // pt-heartbeat / mysqld_exporter before RSS
// On a shared machine, each N waits up to this long for other work to calm down.
constexpr auto kQuietWait = seconds(60);
constexpr double kQuietCores = 0.3;

// What -h and --help print.
constexpr const char* kUsage =
    "usage: bench_scale --dir DIR --base-port P --lagwatch BIN --out-dir DIR [--quick]\n"
    "                   [--n LIST] [--seconds S] [--freeze-seconds S] [--warmup-seconds S]\n"
    "                   [--primary-freeze-seconds S]\n"
    "                   [--command TEXT] [--git-rev REV] [--tls]\n"
    "       bench_scale --compare PLAIN.json TLS.json OUT\n"
    "Runs against a sandbox already up (scripts/sandbox up --dir DIR --base-port P\n"
    "--replica-bind 0.0.0.0 --max-connections M --thread-pool). Normally started by\n"
    "bench/scale.\n"
    "--tls: the sandbox was built with --tls and --tls-ip-sans listing every alias (127.0.x.y);\n"
    "  results go to scale-tls.{json,md} instead of scale.{json,md}.\n"
    "--compare: the plaintext and the TLS run's results side by side, to OUT.{json,md}.\n";

struct Options : CommonOptions {
  std::vector<int> ns = {10, 100, 1000};
  // Negative: the mode's default (see Durations).
  int seconds = -1, freeze_seconds = -1, warmup_seconds = -1, primary_freeze_seconds = -1;
};

struct Durations {
  int steady_s, freeze_s, warmup_s, primary_freeze_s;
};
Durations DurationsFor(const Options& o) {
  const Durations d = o.quick ? Durations{20, 10, 5, 5} : Durations{60, 20, 10, 10};
  return {o.seconds >= 0 ? o.seconds : d.steady_s,
          o.freeze_seconds >= 0 ? o.freeze_seconds : d.freeze_s,
          o.warmup_seconds >= 0 ? o.warmup_seconds : d.warmup_s,
          o.primary_freeze_seconds >= 0 ? o.primary_freeze_seconds : d.primary_freeze_s};
}

struct Paths {
  std::string dir;
  int base_port;
  std::string Server(const std::string& name) const { return dir + "/" + name; }
  std::string Sock(const std::string& name) const { return Server(name) + "/mysqld.sock"; }
  std::string Primary() const { return Sock("primary"); }
  std::string ReplicaName(int i) const { return "replica" + std::to_string(i + 1); }
  std::string Replica(int i) const { return Sock(ReplicaName(i)); }
  int ReplicaPort(int i) const { return base_port + 1 + i; }
  // The judge's Redis login (the sandbox's admin: key states, INFO) and a router's (key age).
  RedisConfig admin_redis;
  RedisConfig router_redis;
  // The sandbox's client TLS (scripts/sandbox up --tls); enabled false without it.
  TlsOptions tls;
  int HttpPort() const { return base_port + 4; }  // lagwatch's, in the sandbox's config
  int ExporterPort() const { return base_port + 5; }
  std::string SandboxConfig() const { return dir + "/lagwatch.json"; }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// ---------------------------------------------------------------------------------------------
// lagwatch under test

std::vector<Alias> MakeAliases(const Paths& p, int n) {
  const int ports[2] = {p.ReplicaPort(0), p.ReplicaPort(1)};
  return bench::MakeAliases(n, ports);
}

std::vector<std::string> Ids(const std::vector<Alias>& aliases, int replica = -1) {
  std::vector<std::string> ids;
  for (const auto& a : aliases) {
    if (replica < 0 || a.replica == replica) ids.push_back(a.Id());
  }
  return ids;
}

// The sandbox's config with the aliases as replicas; returns the file written.
std::string WriteConfig(const Paths& p, const json& base, const std::vector<Alias>& aliases) {
  json c = base;
  c["replicas"] = json::array();
  for (const auto& a : aliases) {
    c["replicas"].push_back(
        {{"host", a.host}, {"port", a.port}, {"tier", "tier1"}, {"weight", 50}});
  }
  const std::string path = p.dir + "/scale-" + std::to_string(aliases.size()) + ".json";
  std::ofstream(path) << c.dump(2) << "\n";
  return path;
}

// How many of `ids` have a Redis key with state "ok" (published, fresh, replicating, in time).
size_t CountOk(Redis& redis, const std::string& prefix, const std::vector<std::string>& ids) {
  std::vector<std::string> keys;
  for (const auto& id : ids) keys.push_back(prefix + ":" + id);
  auto hashes = redis.HGetAll(keys);
  if (!hashes) return 0;
  return static_cast<size_t>(std::count_if(hashes->begin(), hashes->end(), [](const auto& h) {
    auto it = h.find("state");
    return it != h.end() && it->second == "ok";
  }));
}

// Waits until every one of `ids` is ok; returns the seconds it took, or nullopt on timeout.
std::optional<double> WaitAllOk(Redis& redis, const std::string& prefix,
                                const std::vector<std::string>& ids, Child& lagwatch,
                                milliseconds timeout, size_t* ok_at_end) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    *ok_at_end = CountOk(redis, prefix, ids);
    if (*ok_at_end == ids.size()) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!lagwatch.Running()) throw std::runtime_error("lagwatch exited while starting up");
    if (std::chrono::steady_clock::now() - start > timeout) {
      if (!redis.last_error().empty()) Progress("the last Redis failure: " + redis.last_error());
      return std::nullopt;
    }
    Pause(milliseconds(250));
  }
}

Scrape ScrapeLagwatch(const Paths& p) {
  HttpResult r = HttpGet(p.HttpPort(), "/metrics", kScrapeTimeout);
  if (r.status != 200) {
    throw std::runtime_error("lagwatch /metrics: " +
                             (r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error));
  }
  Scrape s;
  s.sent_us = r.sent_us;
  s.duration_ms = r.duration_ms;
  if (auto err = ParseScrape(r.body, &s)) throw std::runtime_error("lagwatch /metrics: " + *err);
  return s;
}

int64_t RedisCommandsProcessed(Redis& redis) {
  auto info = redis.Info("stats");
  if (!info) throw std::runtime_error("redis INFO stats failed: " + redis.last_error());
  const std::string field = "total_commands_processed:";
  const size_t at = info->find(field);
  if (at == std::string::npos) throw std::runtime_error("redis INFO stats: no " + field);
  return std::strtoll(info->c_str() + at + field.size(), nullptr, 10);
}

// Everything read at one moment; windows are differences of two.
struct Point {
  int64_t t_us = 0;
  std::map<std::string, double> cpu_s;  // lagwatch, mariadbd (all three), redis, bench
  HostCpu host;
  int64_t redis_commands = 0;
  Scrape scrape;
};

struct Pids {
  pid_t lagwatch;
  std::vector<pid_t> mariadbd;
  pid_t redis;
};

Point Capture(const Pids& pids, Redis& redis, const Paths& p) {
  Point pt;
  pt.t_us = NowUs();
  auto cpu = [](pid_t pid) {
    auto s = CpuSeconds(pid);
    if (!s) throw std::runtime_error("process " + std::to_string(pid) + " is gone");
    return *s;
  };
  pt.cpu_s["lagwatch"] = cpu(pids.lagwatch);
  for (pid_t m : pids.mariadbd) pt.cpu_s["mariadbd"] += cpu(m);
  pt.cpu_s["redis"] = cpu(pids.redis);
  pt.cpu_s["bench"] = cpu(getpid());
  pt.host = ReadHostCpu();
  pt.redis_commands = RedisCommandsProcessed(redis);
  pt.scrape = ScrapeLagwatch(p);
  return pt;
}

double Cores(const Point& a, const Point& b, const std::string& who) {
  return (b.cpu_s.at(who) - a.cpu_s.at(who)) / (static_cast<double>(b.t_us - a.t_us) / 1e6);
}

// What the whole host did over a window: busy cores, split into the processes of this benchmark
// and everything else (other work on the machine, and kernel time not charged to a process).
json HostJson(const Point& a, const Point& b) {
  const double busy = (b.host.busy - a.host.busy) / (b.host.total - a.host.total) *
                      static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  json j = {{"busy_cores", busy}, {"load_average_at_end", LoadAverage()}};
  double ours = 0;
  for (const auto& [who, cpu] : a.cpu_s) {
    j[who + "_cores"] = Cores(a, b, who);
    ours += Cores(a, b, who);
  }
  j["other_cores"] = std::max(0.0, busy - ours);
  return j;
}

json JitterJson(const BucketCounts& h) {
  bool beyond50 = false, beyond99 = false;
  auto p50 = Quantile(h, 0.50, &beyond50);
  auto p99 = Quantile(h, 0.99, &beyond99);
  auto share = ShareAtMost(h, 0.010);
  // [[upper bound in ms ("+Inf" for the last), observations at or under it], ...], in order.
  json buckets = json::array();
  for (size_t i = 0; i < h.bounds_s.size(); ++i) {
    buckets.push_back(
        {std::isinf(h.bounds_s[i]) ? json("+Inf") : json(h.bounds_s[i] * 1000), h.cumulative[i]});
  }
  return {{"starts", h.total()},
          {"p50_ms", p50 ? json(*p50 * 1000) : json(nullptr)},
          {"p50_beyond_last_bucket", beyond50},
          {"p99_ms", p99 ? json(*p99 * 1000) : json(nullptr)},
          {"p99_beyond_last_bucket", beyond99},
          {"share_le_10ms", share ? json(*share) : json(nullptr)},
          {"cumulative_buckets_ms", buckets}};
}

// Probes/s and jitter of `ids` between two scrapes; `planned_per_s` for that set.
json ProbesJson(const Scrape& a, const Scrape& b, const std::vector<std::string>& ids,
                double planned_per_s) {
  ScrapeDelta d = Diff(a, b, ids);
  if (d.missing) {
    throw std::runtime_error(std::to_string(d.missing) + " replicas missing from /metrics");
  }
  return {{"aliases", ids.size()},
          {"seconds", d.seconds},
          {"planned_per_s", planned_per_s},
          {"attempted_per_s", d.probes / d.seconds},
          {"answered_per_s", d.answered / d.seconds},
          {"failed_share", d.probes > 0 ? 1.0 - d.answered / d.probes : 0.0},
          {"jitter", JitterJson(d.start_delay)}};
}

// From a measurement to Redis having its record, over a window: the part of a key's age beyond
// the probe interval that the publisher adds.
json RecordDelayJson(const BucketCounts& h) {
  bool beyond50 = false, beyond99 = false;
  auto p50 = Quantile(h, 0.50, &beyond50);
  auto p99 = Quantile(h, 0.99, &beyond99);
  auto share = ShareAtMost(h, 0.010);
  return {{"records", h.total()},
          {"p50_ms", p50 ? json(*p50 * 1000) : json(nullptr)},
          {"p99_ms", p99 ? json(*p99 * 1000) : json(nullptr)},
          {"p99_beyond_last_bucket", beyond99},
          {"share_le_10ms", share ? json(*share) : json(nullptr)}};
}

json ScrapesJson(const std::vector<Scrape>& scrapes) {
  std::vector<double> ms;
  for (const auto& s : scrapes) ms.push_back(s.duration_ms);
  return {{"count", ms.size()},
          {"ms", ms},
          {"median_ms", Median(ms)},
          {"max_ms", *std::max_element(ms.begin(), ms.end())},
          {"bytes", scrapes.back().bytes}};
}

// Reads kKeyAgeBatch random aliases' keys every kKeyAgePeriod, pipelined, on its own connection
// and thread, and keeps each key's age (now - measured_at_ms) at the moment it was read.
constexpr auto kKeyAgePeriod = milliseconds(10);
constexpr size_t kKeyAgeBatch = 20;

class KeyAgeSampler {
 public:
  // `redis`: a router's login (SandboxRedis(..., RedisUser::kRouter)).
  KeyAgeSampler(RedisConfig redis, const std::string& prefix, const std::vector<std::string>& ids)
      : redis_(std::move(redis)) {
    for (const auto& id : ids) keys_.push_back(prefix + ":" + id);
  }
  void Start() {
    StartTicking(worker_, kKeyAgePeriod, [this](const std::stop_token&) { Tick(); });
  }
  // Stops sampling; the results are read after this (the join orders the accesses).
  json Stop() {
    worker_.Stop();
    const Percentiles p = Summarize(ages_ms_);
    return {{"samples", p.n},       {"missing", missing_},
            {"errors", errors_},    {"last_error", redis_.last_error()},
            {"p50_ms", p.p50},      {"p99_ms", p.p99},
            {"max_ms", p.max},      {"period_ms", kKeyAgePeriod.count()},
            {"batch", kKeyAgeBatch}};
  }

 private:
  void Tick() {
    std::vector<std::string> batch;
    std::uniform_int_distribution<size_t> pick(0, keys_.size() - 1);
    for (size_t i = 0; i < kKeyAgeBatch; ++i) batch.push_back(keys_[pick(rng_)]);
    auto hashes = redis_.HGetAll(batch);
    const double now_ms = static_cast<double>(NowUs()) / 1000.0;
    if (!hashes) {
      ++errors_;
      return;
    }
    for (const auto& h : *hashes) {
      auto it = h.find("measured_at_ms");
      if (it == h.end()) {
        ++missing_;
        continue;
      }
      ages_ms_.push_back(now_ms - std::strtod(it->second.c_str(), nullptr));
    }
  }

  Redis redis_;
  std::vector<std::string> keys_;
  std::mt19937_64 rng_{42};
  std::vector<double> ages_ms_;
  size_t missing_ = 0, errors_ = 0;
  Worker worker_;
};

json RunN(const Options& opt, const Durations& dur, const Paths& p, const json& base_config, int n,
          const std::string& logs) {
  const int interval_ms = base_config.value(json::json_pointer("/probe/interval_ms"), 200);
  const std::string prefix =
      base_config.value(json::json_pointer("/redis/key_prefix"), std::string("slave_delay"));
  const double per_alias_per_s = 1000.0 / interval_ms;
  const std::vector<Alias> aliases = MakeAliases(p, n);
  const std::vector<std::string> all = Ids(aliases), r1 = Ids(aliases, 0), r2 = Ids(aliases, 1);
  const std::string config = WriteConfig(p, base_config, aliases);
  const std::string log = logs + "/lagwatch-" + std::to_string(n) + ".log";
  json res = {
      {"n", n}, {"planned_probes_per_s", n * per_alias_per_s}, {"config", config}, {"log", log}};

  res["host_busy_cores_before"] = WaitQuiet(kQuietWait, kQuietCores);
  Progress("N=" + std::to_string(n) + ": starting lagwatch (host " +
           Num(res["host_busy_cores_before"].get<double>(), 2) + " cores busy before)");
  auto lagwatch = Child::Spawn({opt.lagwatch, "--config", config}, log);
  const Pids pids{lagwatch->pid(),
                  {SandboxServerPid(p.dir, "primary"), SandboxServerPid(p.dir, "replica1"),
                   SandboxServerPid(p.dir, "replica2")},
                  SandboxServerPid(p.dir, "redis")};
  Redis redis(p.admin_redis);

  // Startup: every alias published as ok. Not reaching it is a result, not a failure.
  size_t ok = 0;
  auto startup_s = WaitAllOk(redis, prefix, all, *lagwatch, milliseconds(60'000 + 30 * n), &ok);
  res["startup"] = {
      {"all_ok_after_s", startup_s ? json(*startup_s) : json(nullptr)}, {"ok", ok}, {"aliases", n}};
  Progress("N=" + std::to_string(n) + ": " + std::to_string(ok) + "/" + std::to_string(n) +
           " aliases ok" +
           (startup_s ? " after " + Num(*startup_s, 1) + " s" : " (gave up waiting)") +
           "; warming up " + std::to_string(dur.warmup_s) + " s");
  Pause(seconds(dur.warmup_s));

  // Steady window.
  Progress("N=" + std::to_string(n) + ": steady window " + std::to_string(dur.steady_s) + " s");
  const auto steady_start = std::chrono::steady_clock::now();
  KeyAgeSampler key_age(p.router_redis, prefix, all);
  key_age.Start();
  const Point a = Capture(pids, redis, p);
  std::vector<Scrape> scrapes = {a.scrape};
  for (int k = 1; k <= kMiddleScrapes; ++k) {
    PauseUntil(steady_start + milliseconds(dur.steady_s * 1000 * k / (kMiddleScrapes + 1)));
    scrapes.push_back(ScrapeLagwatch(p));
  }
  PauseUntil(steady_start + seconds(dur.steady_s));
  const Point b = Capture(pids, redis, p);
  const json key_ages = key_age.Stop();
  scrapes.push_back(b.scrape);
  if (!lagwatch->Running()) throw std::runtime_error("lagwatch exited; see " + log);
  const Memory mem = MemoryOf(lagwatch->pid());
  const double window_s = static_cast<double>(b.t_us - a.t_us) / 1e6;
  res["steady"] = {
      {"seconds", window_s},
      {"probes", ProbesJson(a.scrape, b.scrape, all, n * per_alias_per_s)},
      {"cpu_cores", Cores(a, b, "lagwatch")},
      {"rss_mb", mem.rss_mb},
      {"rss_peak_mb", mem.hwm_mb},
      {"threads", mem.threads},
      {"fds", OpenFds(lagwatch->pid())},
      {"redis_commands_per_s", static_cast<double>(b.redis_commands - a.redis_commands) / window_s},
      {"scrapes", ScrapesJson(scrapes)},
      {"key_age", key_ages},
      {"record_delay", RecordDelayJson(Diff(a.scrape.record_delay, b.scrape.record_delay))},
      {"host", HostJson(a, b)}};

  // One of the sandbox's servers stopped (SIGSTOP) for `secs` between two captures of the agent;
  // `before_resume` runs just before it resumes. WaitBack then waits until every alias of `ids`
  // is ok again: the seconds that took (nullopt: not within the timeout), and how many were.
  auto freeze = [&](const std::string& server, int secs,
                    const std::function<void()>& before_resume) {
    Progress("N=" + std::to_string(n) + ": " + server + " frozen (SIGSTOP) for " +
             std::to_string(secs) + " s");
    const pid_t pid = SandboxServerPid(p.dir, server);
    std::pair<Point, Point> points;
    points.first = Capture(pids, redis, p);
    Frozen frozen(pid);
    Pause(seconds(secs));
    points.second = Capture(pids, redis, p);
    before_resume();
    return points;  // `frozen` resumes it on the way out
  };
  auto wait_back = [&](const std::string& server, const std::vector<std::string>& ids, size_t* ok) {
    Progress("N=" + std::to_string(n) + ": " + server + " resumed (SIGCONT); waiting for " +
             std::to_string(ids.size()) + " aliases");
    return WaitAllOk(redis, prefix, ids, *lagwatch, milliseconds(60'000 + 30 * n), ok);
  };

  // Freeze window: replica1 hangs; replica2's aliases must not notice.
  if (dur.freeze_s > 0) {
    size_t r2_ok = 0, r1_ok = 0;
    const auto [fa, fb] =
        freeze("replica1", dur.freeze_s, [&] { r2_ok = CountOk(redis, prefix, r2); });
    const auto back_s = wait_back("replica1", r1, &r1_ok);
    res["freeze"] = {
        {"seconds", static_cast<double>(fb.t_us - fa.t_us) / 1e6},
        {"replica2", ProbesJson(fa.scrape, fb.scrape, r2, r2.size() * per_alias_per_s)},
        {"replica1", ProbesJson(fa.scrape, fb.scrape, r1, r1.size() * per_alias_per_s)},
        {"replica2_ok_at_end", r2_ok},
        {"cpu_cores", Cores(fa, fb, "lagwatch")},
        {"replica1_all_ok_after_cont_s", back_s ? json(*back_s) : json(nullptr)},
        {"replica1_ok_after_wait", r1_ok}};
  }

  // Primary window: the primary hangs. No one server is writable, so every alias is probed at
  // the fast cadence, together, and each answer waits for its round (docs/measurement.md,
  // "States"): what that costs, and whether keys stay fresh meanwhile.
  if (dur.primary_freeze_s > 0) {
    KeyAgeSampler ages(p.router_redis, prefix, all);
    ages.Start();
    const auto [pa, pb] = freeze("primary", dur.primary_freeze_s, [] {});
    const json frozen_ages = ages.Stop();
    size_t back_ok = 0;
    const auto back_s = wait_back("primary", all, &back_ok);
    res["primary_freeze"] = {{"seconds", static_cast<double>(pb.t_us - pa.t_us) / 1e6},
                             {"probes", ProbesJson(pa.scrape, pb.scrape, all, n * per_alias_per_s)},
                             {"cpu_cores", Cores(pa, pb, "lagwatch")},
                             {"key_age", frozen_ages},
                             {"all_ok_after_cont_s", back_s ? json(*back_s) : json(nullptr)},
                             {"ok_after_wait", back_ok}};
  }

  if (!lagwatch->Running()) throw std::runtime_error("lagwatch exited; see " + log);
  res["lagwatch_peak_rss_mb"] = MemoryOf(lagwatch->pid()).hwm_mb;
  const auto stop_start = std::chrono::steady_clock::now();
  res["lagwatch_exit_code"] = lagwatch->Stop(milliseconds(20'000));
  res["lagwatch_stop_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_start).count();
  const std::string text = ReadFile(log);
  res["log_warn_lines"] = CountSubstr(text, " WARN ");
  res["log_error_lines"] = CountSubstr(text, " ERROR ");
  return res;
}

// ---------------------------------------------------------------------------------------------
// One process per replica, for comparison

std::string RandomPassword() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 24; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

// Writes `content` to a new file that is never readable by others, not even briefly.
void WriteSecretFile(const std::string& path, const std::string& content) {
  std::filesystem::remove(path);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  const bool ok = write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

void WaitReplicasCaughtUp(const Paths& p) {
  auto pos = AdminQuery(p.Primary(), "SELECT @@gtid_binlog_pos").First().value_or("");
  for (int i = 0; i < 2; ++i) {
    auto r = AdminQuery(p.Replica(i), "SELECT MASTER_GTID_WAIT('" + pos + "', 30)").First();
    if (r.value_or("-1") != "0") throw std::runtime_error(p.ReplicaName(i) + " did not catch up");
  }
}

// pt-heartbeat as an operator runs it (see docs/architecture.md), over the admin sockets as root.
std::vector<std::string> PtArgs(const std::string& mode, const std::string& sock) {
  std::vector<std::string> a = {
      "pt-heartbeat", "--no-version-check", mode, "--interval", "0.5", "--database", "lwtest",
      "--table",      "pt_heartbeat",       "-S", sock,         "-u",  "root"};
  if (mode == "--update") a.push_back("--create-table");
  if (mode == "--monitor") a.insert(a.end(), {"--skew", "0", "--master-server-id", "1"});
  return a;
}

json RunComparison(const Paths& p, const std::string& logs) {
  Progress("comparison: pt-heartbeat --update/--monitor and mysqld_exporter against replica2");
  // mysqld_exporter cannot use unix_socket authentication: a dedicated account, created on the
  // primary so it replicates.
  const std::string password = RandomPassword();
  Sql primary(p.Primary());
  for (const std::string& stmt :
       {std::string("CREATE OR REPLACE USER 'lw_exporter'@'127.0.0.1' IDENTIFIED BY '") + password +
            "' WITH MAX_USER_CONNECTIONS 3",
        std::string("GRANT PROCESS, REPLICATION CLIENT, SLAVE MONITOR, SELECT ON *.* TO "
                    "'lw_exporter'@'127.0.0.1'")}) {
    if (!primary.Exec(stmt)) throw std::runtime_error(primary.error());
  }
  WaitReplicasCaughtUp(p);
  const std::string cnf = p.dir + "/exporter.cnf";
  // Under --tls (require_secure_transport) the exporter's TLS: the sandbox's CA and client
  // certificate; it verifies the server's certificate for 127.0.0.1.
  const std::string tls = p.tls.enabled
                              ? "ssl-ca=" + p.tls.ca_file + "\nssl-cert=" + p.tls.cert_file +
                                    "\nssl-key=" + p.tls.key_file + "\n"
                              : "";
  WriteSecretFile(cnf, "[client]\nuser=lw_exporter\npassword=" + password +
                           "\nhost=127.0.0.1\nport=" + std::to_string(p.ReplicaPort(1)) + "\n" +
                           tls);

  auto update = Child::Spawn(PtArgs("--update", p.Primary()), logs + "/pt-heartbeat-update.log");
  Pause(milliseconds(1500));  // the table and its first row
  auto monitor =
      Child::Spawn(PtArgs("--monitor", p.Replica(1)), logs + "/pt-heartbeat-monitor.log");
  const std::vector<std::string> exporter_args = {
      "prometheus-mysqld-exporter", "--config.my-cnf=" + cnf,
      "--web.listen-address=127.0.0.1:" + std::to_string(p.ExporterPort())};
  auto exporter = Child::Spawn(exporter_args, logs + "/mysqld-exporter.log");
  const auto started = std::chrono::steady_clock::now();

  // Scrape the exporter a few times, as Prometheus would, before reading its RSS.
  std::vector<json> scrapes;
  for (int i = 0; i < 4; ++i) {
    Pause(milliseconds(2000));
    HttpResult r = HttpGet(p.ExporterPort(), "/metrics", milliseconds(10'000));
    scrapes.push_back({{"status", r.status},
                       {"ms", r.duration_ms},
                       {"bytes", r.body.size()},
                       {"mysql_up", r.body.find("\nmysql_up 1") != std::string::npos}});
  }
  PauseUntil(started + kComparisonRun);
  for (Child* c : {update.get(), monitor.get(), exporter.get()}) {
    if (!c->Running()) {
      throw std::runtime_error(c->name() + " exited early; see the logs in " + logs);
    }
  }
  const Memory mon = MemoryOf(monitor->pid()), upd = MemoryOf(update->pid()),
               exporter_mem = MemoryOf(exporter->pid());
  json out = {
      {"pt_heartbeat_monitor", {{"rss_mb", mon.rss_mb}, {"command", PtArgs("--monitor", "")}}},
      {"pt_heartbeat_update", {{"rss_mb", upd.rss_mb}}},
      {"mysqld_exporter",
       {{"rss_mb", exporter_mem.rss_mb}, {"scrapes", scrapes}, {"command", exporter_args}}},
      {"ran_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
  exporter->Stop();
  monitor->Stop();
  update->Stop();
  Progress("comparison: pt-heartbeat --monitor " + Num(mon.rss_mb, 1) + " MB, mysqld_exporter " +
           Num(exporter_mem.rss_mb, 1) + " MB RSS");
  return out;
}

// Under --tls lagwatch verifies each alias's certificate by the address it connects to: the
// sandbox's server certificate must name every alias (scripts/sandbox --tls-ip-sans). Throws,
// naming the first that is missing, rather than let N probes fail with name_mismatch.
void CheckCertificateCoversAliases(const Paths& p, const std::vector<Alias>& aliases) {
  const std::string cert = p.dir + "/tls/server.pem";
  const CommandResult r =
      RunCommand({"openssl", "x509", "-in", cert, "-noout", "-ext", "subjectAltName"});
  if (r.exit_code != 0) throw std::runtime_error("cannot read " + cert + ": " + r.output);
  std::set<std::string> ips;
  for (size_t at = r.output.find("IP Address:"); at != std::string::npos;
       at = r.output.find("IP Address:", at + 1)) {
    const size_t from = at + std::string("IP Address:").size();
    ips.insert(r.output.substr(from, r.output.find_first_of(", \n", from) - from));
  }
  for (const Alias& a : aliases) {
    if (!ips.contains(a.host)) {
      throw std::runtime_error(cert + " has no subjectAltName IP:" + a.host + " (" +
                               std::to_string(ips.size()) +
                               " IP SANs): build the sandbox with scripts/sandbox up --tls "
                               "--tls-ip-sans listing every alias, as bench/scale --tls does");
    }
  }
  Progress("TLS: the server certificate names all " + std::to_string(aliases.size()) +
           " aliases (" + std::to_string(ips.size()) + " IP subjectAltNames)");
}

// ---------------------------------------------------------------------------------------------

json Targets(const json& runs) {
  json out = json::array();
  for (const auto& r : runs) {
    if (r["n"] != 1000) continue;
    const json& st = r["steady"];
    auto add = [&](const std::string& what, const std::string& target, const std::string& value,
                   bool pass) {
      out.push_back({{"what", what}, {"target", target}, {"value", value}, {"pass", pass}});
    };
    const double cpu = st["cpu_cores"];
    add("CPU", "<= 0.5 core", Num(cpu, 2) + " core", cpu <= 0.5);
    const double rss = st["rss_mb"], peak = r["lagwatch_peak_rss_mb"];
    add("RSS (peak over the run)", "<= 128 MB",
        Num(peak, 1) + " MB (" + Num(rss, 1) + " MB at the end of the steady window)", peak <= 128);
    // Exact, not interpolated: 10 ms is a bucket bound.
    const json& j = st["probes"]["jitter"];
    const double share = j["share_le_10ms"].is_number() ? j["share_le_10ms"].get<double>() : 0.0;
    add("probe-start jitter p99, steady", "<= 10 ms (>= 99% of starts in the 10 ms bucket)",
        Num(share * 100, 2) + "% <= 10 ms", share >= 0.99);
    if (r.contains("freeze")) {
      const json& fj = r["freeze"]["replica2"]["jitter"];
      const double fs = fj["share_le_10ms"].is_number() ? fj["share_le_10ms"].get<double>() : 0.0;
      add("jitter p99 of replica2's aliases while replica1 is frozen",
          "<= 10 ms (a hung replica never delays another's probe)", Num(fs * 100, 2) + "% <= 10 ms",
          fs >= 0.99);
    }
    if (r.contains("primary_freeze")) {
      const json& pf = r["primary_freeze"];
      const json& pa = pf["key_age"];
      add("while the primary is frozen: no key missing", "0 missing (keys expire after 1 s)",
          std::to_string(pa["missing"].get<size_t>()) + " missing over " +
              std::to_string(pa["samples"].get<size_t>()) + " reads (key age p99 " +
              Num(pa["p99_ms"].get<double>(), 0) + ", max " + Num(pa["max_ms"].get<double>(), 0) +
              " ms; CPU " + Num(pf["cpu_cores"].get<double>(), 2) + " core, " +
              Num(pf["probes"]["answered_per_s"].get<double>(), 0) + " probes/s answered)",
          pa["missing"] == 0);
    }
    const double scrape = st["scrapes"]["max_ms"];
    add("/metrics scrape (slowest)", "<= 100 ms", Num(scrape, 0) + " ms", scrape <= 100);
    const json& age = st["key_age"];
    const double age_p99 = age["p99_ms"], age_max = age["max_ms"];
    add("key age as routers see it (now - measured_at_ms)",
        "p99 <= 215 ms, max <= 300 ms, no key missing",
        "p50 " + Num(age["p50_ms"].get<double>(), 0) + ", p99 " + Num(age_p99, 0) + ", max " +
            Num(age_max, 0) + " ms over " + std::to_string(age["samples"].get<size_t>()) +
            " reads; " + std::to_string(age["missing"].get<size_t>()) + " missing",
        age_p99 <= 215 && age_max <= 300 && age["missing"] == 0);
    // Answered, not attempted: a probe that timed out measured nothing.
    const double planned = st["probes"]["planned_per_s"], got = st["probes"]["answered_per_s"];
    add("probes/s achieved (answered)", ">= 99% of " + Num(planned, 0) + "/s planned",
        Num(got, 0) + "/s (" + Num(got / planned * 100, 1) + "%; attempted " +
            Num(st["probes"]["attempted_per_s"].get<double>(), 0) + "/s)",
        got >= 0.99 * planned);
  }
  return out;
}

int RunBenchmark(const Options& opt) {
  const Durations dur = DurationsFor(opt);
  const SandboxEnv env = opt.Sandbox();
  const Paths p{opt.dir, opt.base_port, SandboxRedis(env, RedisUser::kAdmin),
                SandboxRedis(env, RedisUser::kRouter), env.ClientTls()};
  const std::string name = opt.tls ? "scale-tls" : "scale";
  const std::string logs = opt.out_dir + "/logs-" + name;
  std::filesystem::create_directories(logs);
  for (const auto& e : std::filesystem::directory_iterator(logs)) std::filesystem::remove(e);

  const int max_n = *std::max_element(opt.ns.begin(), opt.ns.end());
  const rlim_t fd_limit = RaiseFdLimit(static_cast<rlim_t>(max_n) + 1024);
  // Each real replica gets one connection per alias of it, plus replication, the admin socket
  // and the comparison tools.
  const int needed_connections = (max_n + 1) / 2 + 20;
  for (int i = 0; i < 2; ++i) {
    const int have = std::atoi(
        AdminQuery(p.Replica(i), "SELECT @@max_connections").First().value_or("0").c_str());
    if (have < needed_connections) {
      throw std::runtime_error(p.ReplicaName(i) + " allows " + std::to_string(have) +
                               " connections, N=" + std::to_string(max_n) + " needs " +
                               std::to_string(needed_connections) +
                               ": rebuild the sandbox with a larger --max-connections");
    }
  }

  const json base_config = json::parse(ReadFile(p.SandboxConfig()), nullptr, true, true);
  if (p.tls.enabled) CheckCertificateCoversAliases(p, MakeAliases(p, max_n));
  json results = {
      {"benchmark", "scale"},
      {"mode", opt.quick ? "quick" : "full"},
      {"tls", opt.tls},
      {"results_file", name + ".json"},
      {"date", IsoUtc(StartUs())},
      {"command", opt.command},
      {"git_rev", opt.git_rev},
      {"durations_s",
       {{"steady", dur.steady_s},
        {"freeze", dur.freeze_s},
        {"warmup", dur.warmup_s},
        {"primary_freeze", dur.primary_freeze_s}}},
      {"probe_interval_ms", base_config.value(json::json_pointer("/probe/interval_ms"), 200)},
      {"fd_limit", fd_limit},
      {"quiet_wait", {{"max_s", kQuietWait.count()}, {"below_cores", kQuietCores}}},
      {"logs", logs}};
  utsname u{};
  uname(&u);
  results["host"] = {{"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
                     {"kernel", std::string(u.sysname) + " " + u.release},
                     {"load_average_at_start", LoadAverage()},
                     {"busy_cores_before", HostBusyCores(milliseconds(3000))}};
  results["versions"] = {
      {"lagwatch", CommandVersion({opt.lagwatch, "--version"})},
      {"mariadb", AdminQuery(p.Primary(), "SELECT VERSION()").First().value_or("?")},
      {"pt-heartbeat", CommandVersion({"pt-heartbeat", "--version"})},
      {"mysqld_exporter", CommandVersion({"prometheus-mysqld-exporter", "--version"})}};
  results["sandbox"] = {{"primary", "127.0.0.1:" + std::to_string(p.base_port)},
                        {"replica1", "127.0.0.1:" + std::to_string(p.ReplicaPort(0))},
                        {"replica2", "127.0.0.1:" + std::to_string(p.ReplicaPort(1))}};

  results["comparison"] = RunComparison(p, logs);
  results["runs"] = json::array();
  for (int n : opt.ns) {
    results["runs"].push_back(RunN(opt, dur, p, base_config, n, logs));
    Pause(milliseconds(2000));  // let the servers close the last run's connections
  }
  results["targets"] = Targets(results["runs"]);

  const std::string base = opt.out_dir + "/" + name;
  WriteResults(base, results, RenderScaleMarkdown, RenderScaleText);
  return 0;
}

// --compare: two runs' results (plaintext, then TLS) side by side, to `out`.{json,md}.
int RunCompare(const std::string& plain, const std::string& tls, const std::string& out) {
  auto load = [](const std::string& path) {
    const std::string text = ReadFile(path);
    if (text.empty()) throw std::runtime_error("cannot read " + path);
    return json::parse(text);
  };
  WriteResults(out, CompareScaleRuns(load(plain), load(tls)), RenderScaleCompareMarkdown,
               RenderScaleCompareText);
  return 0;
}

// "10,100,1000" -> {10, 100, 1000}; empty on a malformed list.
std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > kMaxAliases) return {};
    out.push_back(static_cast<int>(v));
  }
  return out;
}

}  // namespace
}  // namespace lagwatch::bench

int main(int argc, char** argv) {
  using namespace lagwatch::bench;
  if (argc >= 2 && std::string(argv[1]) == "--compare") {
    if (argc != 5) {
      std::cerr << kUsage;
      return 2;
    }
    return RunBenchmarkMain("bench_scale", [&] { return RunCompare(argv[2], argv[3], argv[4]); });
  }
  Options opt;
  auto flag = [&](FlagReader& flags) {
    const std::string& a = flags.flag();
    if (a == "--n") {
      opt.ns = ParseList(flags.Value());
    } else if (a == "--seconds") {
      opt.seconds = flags.Seconds();
    } else if (a == "--freeze-seconds") {
      opt.freeze_seconds = flags.Seconds();
    } else if (a == "--primary-freeze-seconds") {
      opt.primary_freeze_seconds = flags.Seconds();
    } else if (a == "--warmup-seconds") {
      opt.warmup_seconds = flags.Seconds();
    } else {
      return false;
    }
    return true;
  };
  return BenchmarkMain(argc, argv, opt,
                       {.name = "bench_scale",
                        .usage = kUsage,
                        .flag = flag,
                        .valid = [&] { return !opt.ns.empty() && opt.seconds != 0; },
                        .run = [&] { return RunBenchmark(opt); }});
}
