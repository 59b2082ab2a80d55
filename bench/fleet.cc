// bench_fleet: lagwatch across a fleet (docs/benchmarks/fleet.md). N replicas in all, split into
// K replication clusters, each watched by an agent of its own (one process per cluster: the
// lagwatch@<cluster> units of a host), all publishing to one contract store, first one Redis
// (the sandbox's), then a local Redis Cluster of three masters and three replicas that this
// program starts. Run it through `bench/scale --clusters K`, which builds, brings the sandbox up
// (its replicas accept one connection per alias) and takes it down.
//
// The sandbox's two replicas stand in for the N replicas, behind loopback aliases as in
// bench_scale (bench/host.h). Cluster c gets aliases [c·N/K, (c+1)·N/K), agent_id c + 1, its own
// HTTP port, and the key prefix `slave_delay:{c<c>}`, whose hash tag keeps one cluster's keys in
// one slot of a Redis Cluster and spreads the clusters over its shards. Every agent's primary is
// the sandbox's one primary (in a fleet each cluster has its own): its heartbeat writes, position
// samples and binary log streams all land there, so the primary's CPU is shown for what it is, an
// artifact of one host.
//
// For each store: start the K agents, wait until every alias is published with state ok, warm
// up, then over the steady window measure each agent's CPU (/proc/PID/stat) and RSS, each Redis
// master's CPU and EVALSHA calls (INFO commandstats), and the key age a router sees: every 10 ms
// a reader picks 20 random aliases' keys (through RedisClient, so on the cluster each from its
// master) and records now − measured_at_ms; a missing key is counted apart. Writes
// fleet.{json,md}.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include "base/redis_client.h"
#include "base/strings.h"
#include "bench/analysis.h"
#include "bench/bench_util.h"
#include "bench/collectors.h"
#include "bench/flags.h"
#include "bench/host.h"
#include "bench/table.h"

namespace lagwatch::bench {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kUsage =
    "usage: bench_fleet [--quick] --dir DIR --base-port P --lagwatch BIN --out-dir DIR\n"
    "                   --clusters K [--n N] [--store single|cluster]... [--seconds S]\n"
    "                   [--command TEXT] [--git-rev REV]\n"
    "  N replicas (default 1000) in K clusters, one agent each; --store: one Redis (the\n"
    "  sandbox's), a local Redis Cluster (3 masters, 3 replicas, ports P+30..P+35, bus +10), or "
    "both\n"
    "  (the default), one after the other. Steady window 20 s (--quick) or 60 s.\n";

constexpr double kQuietCores = 0.3;
constexpr auto kKeyAgePeriod = milliseconds(10);
constexpr size_t kKeyAgeBatch = 20;

struct Options : CommonOptions {
  int clusters = 0;
  int n = 1000;
  std::vector<std::string> stores;
  int seconds = -1;
};

std::string Prefix(int cluster) { return "slave_delay:{c" + std::to_string(cluster) + "}"; }

// A Redis Cluster of three masters and three replicas on 127.0.0.1 (ports base..base+5, their
// cluster bus at +10: the default +10000 is in Linux's ephemeral range), made with redis-cli
// --cluster create; stopped with this object.
class LocalCluster {
 public:
  LocalCluster(const std::string& dir, int base) : base_(base) {
    std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
    for (int i = 0; i < 6; ++i) {
      const int port = base + i;
      const std::string d = dir + "/rc-" + std::to_string(port);
      std::filesystem::remove_all(d);
      std::filesystem::create_directories(d);
      nodes_.push_back(Child::Spawn({"redis-server",
                                     "--port",
                                     std::to_string(port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     d,
                                     "--cluster-enabled",
                                     "yes",
                                     "--cluster-config-file",
                                     d + "/nodes.conf",
                                     "--cluster-port",
                                     std::to_string(port + 10),
                                     "--cluster-node-timeout",
                                     "5000",
                                     "--repl-diskless-sync-delay",
                                     "0"},
                                    d + "/log"));
      create.push_back("127.0.0.1:" + std::to_string(port));
      seeds_.push_back({"127.0.0.1", port});
    }
    Pause(milliseconds(500));
    create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    auto made = Child::Spawn(create, dir + "/rc-create.log");
    if (made->Wait(seconds(30)) != 0) {
      throw std::runtime_error("redis-cli --cluster create failed: see " + dir + "/rc-create.log");
    }
    const auto until = std::chrono::steady_clock::now() + seconds(30);
    while (!Ok()) {
      if (std::chrono::steady_clock::now() > until) {
        throw std::runtime_error("the Redis Cluster did not come up: see " + dir);
      }
      Pause(milliseconds(200));
    }
  }
  const std::vector<Endpoint>& seeds() const { return seeds_; }
  // The process of the node on `port`.
  pid_t PidOf(int port) const { return nodes_[static_cast<size_t>(port - base_)]->pid(); }

 private:
  bool Ok() const {
    for (const Endpoint& e : seeds_) {
      auto conn = RedisConnectTo(e, RedisConfig{}, milliseconds(500));
      if (!conn.ok()) return false;
      RedisReply r = (*conn)->Run({"CLUSTER", "INFO"});
      if (!r || ReplyText(*r).find("cluster_state:ok") == std::string::npos) return false;
    }
    return true;
  }
  int base_;
  std::vector<std::unique_ptr<Child>> nodes_;
  std::vector<Endpoint> seeds_;
};

// `field` of every key in `keys`, through `client` (each from its master); nullopt per missing
// key. Throws on a connection failure.
std::vector<std::optional<std::string>> HGetEach(RedisClient& client,
                                                 const std::vector<std::string>& keys,
                                                 const std::string& field) {
  std::vector<RedisUnit> units;
  for (const auto& k : keys) units.push_back({k, {{"HGET", k, field}}});
  auto replies = client.Run(units);
  if (!replies.ok()) throw std::runtime_error(replies.status().message());
  std::vector<std::optional<std::string>> out;
  for (const auto& r : *replies) {
    const RedisReply& reply = r.front();
    out.push_back(reply->type == REDIS_REPLY_STRING ? std::optional(ReplyText(*reply))
                                                    : std::nullopt);
  }
  return out;
}

// What the server of `conn` has done so far: EVALSHA calls (INFO commandstats) and bytes read
// from its clients (INFO stats), what the publishing costs it and the network.
struct ServerCounts {
  double evalsha = 0;
  double net_input_bytes = 0;
};
ServerCounts CountsOf(RedisConnection& conn) {
  auto field = [](const std::string& text, const std::string& name) {
    const size_t at = text.find(name);
    return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + name.size(), nullptr);
  };
  ServerCounts c;
  if (RedisReply r = conn.Run({"INFO", "commandstats"}); r && r->type == REDIS_REPLY_STRING) {
    c.evalsha = field(ReplyText(*r), "cmdstat_evalsha:calls=");
  }
  if (RedisReply r = conn.Run({"INFO", "stats"}); r && r->type == REDIS_REPLY_STRING) {
    c.net_input_bytes = field(ReplyText(*r), "total_net_input_bytes:");
  }
  return c;
}

// The key age a router sees, sampled on a thread of its own.
class KeyAges {
 public:
  KeyAges(RedisConfig store, std::vector<std::string> keys)
      : store_(std::move(store)), keys_(std::move(keys)) {}
  void Start() {
    StartTicking(worker_, kKeyAgePeriod, [this](const std::stop_token&) { Tick(); });
  }
  json Stop() {
    worker_.Stop();
    const Percentiles p = Summarize(ages_ms_);
    return {{"samples", p.n},  {"missing", missing_}, {"errors", errors_},
            {"p50_ms", p.p50}, {"p99_ms", p.p99},     {"max_ms", p.max}};
  }

 private:
  void Tick() {
    try {
      if (!client_) {
        auto c = RedisClient::Open(store_, milliseconds(200));
        if (!c.ok()) {
          ++errors_;
          return;
        }
        client_ = std::move(c).value();
      }
      std::vector<std::string> batch;
      std::uniform_int_distribution<size_t> pick(0, keys_.size() - 1);
      for (size_t i = 0; i < kKeyAgeBatch; ++i) batch.push_back(keys_[pick(rng_)]);
      const auto values = HGetEach(*client_, batch, "measured_at_ms");
      const double now_ms = static_cast<double>(NowUs()) / 1000.0;
      for (const auto& v : values) {
        if (!v) {
          ++missing_;
          continue;
        }
        ages_ms_.push_back(now_ms - std::strtod(v->c_str(), nullptr));
      }
    } catch (const std::exception&) {
      ++errors_;
      client_.reset();
    }
  }
  const RedisConfig store_;
  const std::vector<std::string> keys_;
  std::unique_ptr<RedisClient> client_;
  std::mt19937_64 rng_{42};
  std::vector<double> ages_ms_;
  size_t missing_ = 0, errors_ = 0;
  Worker worker_;
};

struct Store {
  std::string name;                // "single" or "cluster"
  RedisConfig config;              // how the agents and the reader reach it
  std::vector<pid_t> master_pids;  // by master, for CPU
  std::vector<Endpoint> masters;
};

json RunStore(const Options& o, const Store& store, const json& base_config,
              const std::vector<Alias>& aliases) {
  const int k = o.clusters;
  const int n = static_cast<int>(aliases.size());
  std::vector<std::string> configs, keys;
  for (int c = 0; c < k; ++c) {
    json cfg = base_config;
    cfg["agent_id"] = c + 1;
    cfg["cluster"] = "c" + std::to_string(c);
    cfg["http"]["listen"] = "127.0.0.1:" + std::to_string(o.base_port + 200 + c);
    cfg["replicas"] = json::array();
    for (int i = c * n / k; i < (c + 1) * n / k; ++i) {
      cfg["replicas"].push_back({{"host", aliases[static_cast<size_t>(i)].host},
                                 {"port", aliases[static_cast<size_t>(i)].port},
                                 {"tier", "tier1"},
                                 {"weight", 50}});
      keys.push_back(Prefix(c) + ":" + aliases[static_cast<size_t>(i)].Id());
    }
    json redis = cfg["redis"];
    for (const char* key : {"host", "port", "username", "password_file", "cluster"}) {
      redis.erase(key);
    }
    if (store.name == "cluster") {
      redis["cluster"] = json::array();
      for (const Endpoint& e : store.config.cluster) redis["cluster"].push_back(e.Id());
    } else {
      redis["host"] = store.config.host;
      redis["port"] = store.config.port;
      redis["password_file"] = o.dir + "/redis-admin.pw";  // the admin: any prefix
    }
    redis["key_prefix"] = Prefix(c);
    cfg["redis"] = redis;
    const std::string path = o.dir + "/fleet-" + store.name + "-" + std::to_string(c) + ".json";
    std::ofstream(path) << cfg.dump(2) << "\n";
    configs.push_back(path);
  }

  json res = {{"store", store.name}, {"clusters", k}, {"replicas", n}};
  res["host_busy_cores_before"] = WaitQuiet(seconds(60), kQuietCores);
  Progress(store.name + ": starting " + std::to_string(k) + " agents");
  std::vector<std::unique_ptr<Child>> agents;
  for (int c = 0; c < k; ++c) {
    agents.push_back(
        Child::Spawn({o.lagwatch, "--config", configs[static_cast<size_t>(c)]},
                     o.out_dir + "/fleet-" + store.name + "-" + std::to_string(c) + ".log"));
    Pause(milliseconds(50));
  }
  auto client = RedisClient::Open(store.config, milliseconds(2000));
  if (!client.ok()) throw std::runtime_error(store.name + ": " + client.status().message());
  const auto started = std::chrono::steady_clock::now();
  size_t ok = 0;
  for (;;) {
    ok = 0;
    for (size_t at = 0; at < keys.size(); at += 500) {
      std::vector<std::string> part(
          keys.begin() + static_cast<long>(at),
          keys.begin() + static_cast<long>(std::min(keys.size(), at + 500)));
      for (const auto& v : HGetEach(**client, part, "state")) ok += v && *v == "ok";
    }
    if (ok == keys.size() || std::chrono::steady_clock::now() - started > seconds(180)) break;
    Pause(milliseconds(500));
  }
  res["all_ok_after_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  res["ok_at_start"] = ok;
  Progress(store.name + ": " + std::to_string(ok) + "/" + std::to_string(keys.size()) +
           " keys ok; warming up");
  Pause(seconds(o.quick ? 5 : 10));

  const int steady_s = o.seconds >= 0 ? o.seconds : (o.quick ? 20 : 60);
  Progress(store.name + ": steady window " + std::to_string(steady_s) + " s");
  KeyAges ages(store.config, keys);
  ages.Start();
  auto cpu = [&](const std::vector<pid_t>& pids) {
    std::vector<double> v;
    for (pid_t p : pids) v.push_back(CpuSeconds(p).value_or(0));
    return v;
  };
  std::vector<pid_t> agent_pids;
  for (auto& a : agents) agent_pids.push_back(a->pid());
  const pid_t primary = SandboxServerPid(o.dir, "primary");
  std::vector<ServerCounts> calls_a;
  for (const Endpoint& m : store.masters) {
    auto conn = (*client)->Connection(m);
    calls_a.push_back(conn.ok() ? CountsOf(**conn) : ServerCounts{});
  }
  const auto a_agents = cpu(agent_pids), a_redis = cpu(store.master_pids),
             a_primary = cpu({primary});
  const HostCpu host_a = ReadHostCpu();
  const int64_t t_a = NowUs();
  Pause(seconds(steady_s));
  const int64_t t_b = NowUs();
  const HostCpu host_b = ReadHostCpu();
  const auto b_agents = cpu(agent_pids), b_redis = cpu(store.master_pids),
             b_primary = cpu({primary});
  std::vector<ServerCounts> calls_b;
  for (const Endpoint& m : store.masters) {
    auto conn = (*client)->Connection(m);
    calls_b.push_back(conn.ok() ? CountsOf(**conn) : ServerCounts{});
  }
  const json key_age = ages.Stop();
  const double window = static_cast<double>(t_b - t_a) / 1e6;

  json per_agent = json::array();
  double total_cpu = 0, total_rss = 0;
  for (size_t c = 0; c < agents.size(); ++c) {
    if (!agents[c]->Running()) throw std::runtime_error(store.name + ": an agent exited");
    const double cores = (b_agents[c] - a_agents[c]) / window;
    const Memory mem = MemoryOf(agent_pids[c]);
    total_cpu += cores;
    total_rss += mem.rss_mb;
    per_agent.push_back({{"cpu_cores", cores}, {"rss_mb", mem.rss_mb}, {"threads", mem.threads}});
  }
  json shards = json::array();
  for (size_t m = 0; m < store.masters.size(); ++m) {
    shards.push_back({{"master", store.masters[m].Id()},
                      {"cpu_cores", (b_redis[m] - a_redis[m]) / window},
                      {"evalsha_per_s", (calls_b[m].evalsha - calls_a[m].evalsha) / window},
                      {"net_input_bytes_per_s",
                       (calls_b[m].net_input_bytes - calls_a[m].net_input_bytes) / window}});
  }
  res["steady"] = {{"seconds", window},
                   {"agents_cpu_cores", total_cpu},
                   {"agents_rss_mb", total_rss},
                   {"per_agent", per_agent},
                   {"shards", shards},
                   {"primary_cpu_cores", (b_primary[0] - a_primary[0]) / window},
                   {"host_busy_cores", (host_b.busy - host_a.busy) / (host_b.total - host_a.total) *
                                           static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN))},
                   {"key_age", key_age}};
  size_t warns = 0;
  for (size_t c = 0; c < agents.size(); ++c) {
    agents[c]->Stop(milliseconds(10'000));
    warns += CountSubstr(
        ReadFile(o.out_dir + "/fleet-" + store.name + "-" + std::to_string(c) + ".log"), " WARN ");
  }
  res["log_warn_lines"] = warns;
  return res;
}

std::string Render(const json& r, bool markdown) {
  std::string out;
  out += std::string(markdown ? "# " : "") + "lagwatch fleet benchmark (" +
         r["mode"].get<std::string>() + ", " + r["date"].get<std::string>() + ", git " +
         r["git_rev"].get<std::string>() + "): " + std::to_string(r["replicas"].get<int>()) +
         " replicas in " + std::to_string(r["clusters"].get<int>()) +
         " clusters, one agent each, probe interval 200 ms\n\n";
  Table t;
  t.left_cols = 1;
  t.rows.push_back({"store", "agents CPU cores", "per agent avg / max", "agents RSS MB",
                    "per agent avg / max", "key age p50 / p99 / max ms", "missing",
                    "Redis per master: cores, EVALSHA/s, kB/s in", "primary cores",
                    "host busy cores"});
  for (const json& s : r["stores"]) {
    const json& st = s["steady"];
    double max_cpu = 0, max_rss = 0;
    for (const json& a : st["per_agent"]) {
      max_cpu = std::max(max_cpu, a["cpu_cores"].get<double>());
      max_rss = std::max(max_rss, a["rss_mb"].get<double>());
    }
    const double k = static_cast<double>(st["per_agent"].size());
    std::string shards;
    for (const json& sh : st["shards"]) {
      shards += (shards.empty() ? "" : "; ") + Num(sh["cpu_cores"].get<double>(), 3) + ", " +
                Num(sh["evalsha_per_s"].get<double>(), 0) + ", " +
                Num(sh["net_input_bytes_per_s"].get<double>() / 1000, 0);
    }
    const json& ka = st["key_age"];
    t.rows.push_back({s["store"].get<std::string>(), Num(st["agents_cpu_cores"].get<double>(), 3),
                      Num(st["agents_cpu_cores"].get<double>() / k, 4) + " / " + Num(max_cpu, 4),
                      Num(st["agents_rss_mb"].get<double>(), 1),
                      Num(st["agents_rss_mb"].get<double>() / k, 1) + " / " + Num(max_rss, 1),
                      Num(ka["p50_ms"].get<double>(), 0) + " / " +
                          Num(ka["p99_ms"].get<double>(), 0) + " / " +
                          Num(ka["max_ms"].get<double>(), 0),
                      std::to_string(ka["missing"].get<size_t>()), shards,
                      Num(st["primary_cpu_cores"].get<double>(), 3),
                      Num(st["host_busy_cores"].get<double>(), 2)});
  }
  out += markdown ? t.Markdown() : t.Text();
  out += "\ntargets (as for one agent, docs/benchmarks.md):\n";
  for (const json& s : r["stores"]) {
    const json& ka = s["steady"]["key_age"];
    const bool age_ok = ka["p99_ms"].get<double>() <= 215;
    const bool none_missing = ka["missing"].get<size_t>() == 0;
    out += std::string(markdown ? "- " : "  ") + (age_ok ? "PASS" : "FAIL") + "  " +
           s["store"].get<std::string>() + ": key age p99 " + Num(ka["p99_ms"].get<double>(), 0) +
           " ms (target <= 215 ms)\n";
    out += std::string(markdown ? "- " : "  ") + (none_missing ? "PASS" : "FAIL") + "  " +
           s["store"].get<std::string>() + ": " + std::to_string(ka["missing"].get<size_t>()) +
           " keys missing of " + std::to_string(ka["samples"].get<size_t>()) + " read (target 0)\n";
  }
  return out;
}

int RunFleet(const Options& o) {
  if (o.clusters < 1 || o.clusters > 200 || o.n < o.clusters) {
    throw std::runtime_error("--clusters must be 1..200 and at most --n");
  }
  RaiseFdLimit(static_cast<rlim_t>(o.n) + 4096);
  const SandboxEnv env = o.Sandbox();
  std::ifstream in(o.dir + "/lagwatch.json");
  const json base = json::parse(in, nullptr, true, true);
  const int ports[2] = {o.base_port + 1, o.base_port + 2};
  const std::vector<Alias> aliases = MakeAliases(o.n, ports);
  std::vector<std::string> stores = o.stores;
  if (stores.empty()) stores = {"single", "cluster"};
  json runs = json::array();
  for (const std::string& name : stores) {
    Store store;
    store.name = name;
    std::unique_ptr<LocalCluster> cluster;
    if (name == "cluster") {
      Progress("starting a Redis Cluster of 3 masters and 3 replicas");
      cluster = std::make_unique<LocalCluster>(o.dir, o.base_port + 30);
      store.config.cluster = cluster->seeds();
      auto c = RedisClient::Open(store.config, milliseconds(2000));
      if (!c.ok()) throw std::runtime_error(c.status().message());
      store.masters = (*c)->masters();
      for (const Endpoint& m : store.masters) store.master_pids.push_back(cluster->PidOf(m.port));
    } else if (name == "single") {
      store.config = SandboxRedis(env, RedisUser::kAdmin);
      store.masters = {{store.config.host, store.config.port}};
      store.master_pids = {SandboxServerPid(o.dir, "redis")};
    } else {
      throw std::runtime_error("unknown --store " + name);
    }
    runs.push_back(RunStore(o, store, base, aliases));
  }
  json result = {{"benchmark", "fleet"},    {"mode", o.quick ? "quick" : "full"},
                 {"date", IsoUtc(NowUs())}, {"command", o.command},
                 {"git_rev", o.git_rev},    {"clusters", o.clusters},
                 {"replicas", o.n},         {"stores", runs}};
  WriteResults(
      o.out_dir + "/fleet", result, [](const json& r) { return Render(r, true); },
      [](const json& r) { return Render(r, false); });
  return 0;
}

}  // namespace
}  // namespace lagwatch::bench

int main(int argc, char** argv) {
  using namespace lagwatch::bench;
  Options opt;
  return BenchmarkMain(argc, argv, opt,
                       {.name = "bench_fleet",
                        .usage = kUsage,
                        .flag =
                            [&](FlagReader& f) {
                              if (f.flag() == "--clusters") {
                                opt.clusters = f.Int();
                              } else if (f.flag() == "--n") {
                                opt.n = f.Int();
                              } else if (f.flag() == "--store") {
                                opt.stores.push_back(f.Value());
                              } else if (f.flag() == "--seconds") {
                                opt.seconds = f.Seconds();
                              } else {
                                return false;
                              }
                              return true;
                            },
                        .valid = [&] { return opt.clusters > 0; },
                        .run = [&] { return RunFleet(opt); }});
}
