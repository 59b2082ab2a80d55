// bench_stale_reads: what an application is served. Six routers read side by side from the same
// sandbox through the same faults, each following its own policy:
//   - weighted random over the replicas (a framework's read/write split; no lag awareness);
//   - Seconds_Behind_Master <= 1 s, polled every second (ProxySQL's max_replication_lag style);
//   - a naive heartbeat, NOW() - updated_at <= 500 ms, written every 500 ms, polled every 200 ms;
//   - lagwatch's healthy flag with tiers (client/: ContractReader and Route);
//   - lagwatch plus read-your-writes from the published positions only, and bounded staleness
//     (a replica serves only while its published bound plus the time since its measurement stays
//     within the limit; an answer that comes back later is discarded for the primary's);
//   - the same, asking a replica without waiting when no published position includes the
//     session's token.
// Each router has a writer session (writes its order's version on the primary, waits a think time
// from 0 to 1,000 ms, reads it back) and a reader session (reads other sessions' orders, about ten
// reads per write in all). A read is stale when it returns an older version than its session
// wrote, or, for another session's row, when the replica that answered was more than its tier's
// limit behind at that moment: every read also returns the oracle's sequence, which the primary
// advances every 5 ms, so each answer carries its own truth (bench/stale_reads_analysis.h).
//
// Faults, on replica 1 (or both for the write burst), each followed by a recovery: the IO thread
// stopped, the SQL thread stopped, FLUSH TABLES WITH READ LOCK held, the server frozen (SIGSTOP),
// and a burst of heavy writes on the primary.
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/strings.h"
#include "bench/bench_util.h"
#include "bench/flags.h"
#include "bench/stale_reads_analysis.h"
#include "bench/stale_reads_haproxy.h"
#include "client/contract_reader.h"
#include "client/read_your_writes.h"
#include "client/record.h"
#include "client/route.h"

namespace lagwatch::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kLimitUs = 200'000;  // the sandbox's tier1
constexpr int kThinkMs[] = {0, 5, 20, 50, 100, 200, 500, 1000};
constexpr int kOrders = 1000;

enum class Policy {
  kRandom,
  kSbm,
  kNaive,
  kLagwatch,
  kRywPublished,
  kRywAsk,
  // Reads through a HAProxy pool (bench/stale_reads_haproxy.h), one per way of checking.
  kHaproxyStock,
  kHaproxySbm,
  kHaproxyPull,
  kHaproxyPush,
};
// Each policy with the name --policy takes and the name the report prints, in report order.
struct PolicyInfo {
  Policy policy;
  const char* flag;
  const char* name;
};
constexpr PolicyInfo kPolicies[] = {
    {Policy::kRandom, "random", "weighted random (no lag awareness)"},
    {Policy::kSbm, "sbm", "Seconds_Behind_Master <= 1 s"},
    {Policy::kNaive, "naive", "naive NOW() - updated_at <= 500 ms"},
    {Policy::kLagwatch, "lagwatch", "lagwatch healthy"},
    {Policy::kRywPublished, "ryw-published", "lagwatch + RYW + bounded staleness (published)"},
    {Policy::kRywAsk, "ryw-ask", "lagwatch + RYW + bounded staleness (ask)"},
};
// Only when asked for (bench/stale_reads --haproxy): they need HAProxy set up.
constexpr PolicyInfo kHaproxyPolicies[] = {
    {Policy::kHaproxyStock, "haproxy-stock", "HAProxy, mysql-check (stock, inter 2s)"},
    {Policy::kHaproxySbm, "haproxy-sbm", "HAProxy, SBM <= 1 s external check (inter 2s, fall 2)"},
    {Policy::kHaproxyPull, "haproxy-pull", "HAProxy + lagwatch pull (HTTP check, inter 100ms)"},
    {Policy::kHaproxyPush, "haproxy-push", "HAProxy + lagwatch push (runtime API)"},
};
const char* PolicyName(Policy p) {
  for (const PolicyInfo& i : kPolicies) {
    if (i.policy == p) return i.name;
  }
  for (const PolicyInfo& i : kHaproxyPolicies) {
    if (i.policy == p) return i.name;
  }
  return "?";
}
std::optional<Policy> PolicyByFlag(const std::string& flag) {
  for (const PolicyInfo& i : kPolicies) {
    if (flag == i.flag) return i.policy;
  }
  for (const PolicyInfo& i : kHaproxyPolicies) {
    if (flag == i.flag) return i.policy;
  }
  return std::nullopt;
}
bool Haproxy(Policy p) {
  return p == Policy::kHaproxyStock || p == Policy::kHaproxySbm || p == Policy::kHaproxyPull ||
         p == Policy::kHaproxyPush;
}
HaproxyPool PoolOf(Policy p) {
  switch (p) {
    case Policy::kHaproxySbm:
      return HaproxyPool::kSbm;
    case Policy::kHaproxyPull:
      return HaproxyPool::kPull;
    case Policy::kHaproxyPush:
      return HaproxyPool::kPush;
    default:
      return HaproxyPool::kStock;
  }
}
bool Ryw(Policy p) { return p == Policy::kRywPublished || p == Policy::kRywAsk; }

constexpr const char* kUsage =
    "usage: bench_stale_reads [--quick] --dir DIR --base-port P --lagwatch BIN --out-dir DIR\n"
    "                         [--policy NAME]... [--php-worker PATH [--php-router MODE]...]\n"
    "                         [--name NAME] [--command TEXT] [--git-rev REV] [--tls]\n"
    "                         [--after-commit-ms N]\n"
    "  --policy: random, sbm, naive, lagwatch, ryw-published, ryw-ask (default: all six), and\n"
    "    haproxy-stock, haproxy-sbm, haproxy-pull, haproxy-push (reads through HAProxy 2.6 pools\n"
    "    on ports P+11..P+14; only when named)\n"
    "  --name: the results' file name, NAME-<quick|full>.{md,json} (default stale-reads)\n"
    "  --tls: the sandbox was built with --tls: the routers read Redis over TLS, the PHP\n"
    "    worker's too (its SandboxRedis reads DIR/env); results NAME-tls-<quick|full>\n"
    "  --after-commit-ms N: lagwatch runs with probe.after_commit_ms N instead of its default\n"
    "    (10 ms for a few replicas): replicas probed N ms after each commit, so published\n"
    "    positions show a session's write that soon\n";

struct Options : CommonOptions {
  std::string php_worker;  // client/php/bench/stale_reads_worker.php; empty: no PHP rows
  std::vector<std::string> php_routers;  // the worker's --router modes, one row each
  std::vector<Policy> policies;          // the in-process rows; empty: all of kPolicies
  std::string name = "stale-reads";      // the results' file name
  int after_commit_ms = 0;               // lagwatch's probe.after_commit_ms
};

std::string Socket(const Options& o, int server) {
  return o.dir + "/" + (server == 0 ? std::string("primary") : "replica" + std::to_string(server)) +
         "/mysqld.sock";
}

// Everything the threads share.
struct Shared {
  const Options& opt;
  // How a router logs in to the sandbox's Redis: its lagwatch-router user, TLS as built.
  const RedisConfig router_redis;
  std::atomic<bool> stop{false};
  std::mutex mu;
  SeqOracleLog oracle;                 // GUARDED_BY(mu)
  std::vector<ReadRecord> reads;       // GUARDED_BY(mu)
  std::optional<HaproxyRows> haproxy;  // set before the sessions start, when a row needs it
  Shared(const Options& o, RedisConfig redis) : opt(o), router_redis(std::move(redis)) {}
  void Add(const ReadRecord& r) {
    std::lock_guard lock(mu);
    reads.push_back(r);
  }
};

// One router: its policy, and what it knows of the replicas.
class Router {
 public:
  Router(int index, Policy policy, Shared& shared) : index_(index), policy_(policy), s_(shared) {
    if (policy == Policy::kLagwatch || Ryw(policy)) {
      client::ReaderOptions o;
      o.redis = s_.router_redis;
      // As the routers below route: with bounded staleness's deadline and time left.
      if (Ryw(policy)) o.bounded_staleness = client::ReaderOptions::BoundedStaleness{};
      reader_ = std::make_unique<client::ContractReader>(o);
    }
    usable_[1] = usable_[2] = true;
    if (policy == Policy::kSbm || policy == Policy::kNaive) {
      monitor_ = std::thread([this] { Monitor(); });
    }
  }
  ~Router() {
    if (monitor_.joinable()) monitor_.join();
  }
  int index() const { return index_; }
  Policy policy() const { return policy_; }

  // Where a read goes: 0 the primary, 1 or 2 a replica; `ask`: ask that replica first.
  // `fresh_until_ms`: bounded staleness (read-your-writes routers): an answer after it is
  // discarded and the read goes to the primary.
  struct Choice {
    int server = 0;
    bool ask = false;
    std::optional<int64_t> fresh_until_ms;
  };
  Choice ForRead(const client::Session& session, const client::RandomBelow& random) {
    if (reader_) {
      auto contract = reader_->Snapshot();
      client::Statement st;
      st.read = true;
      const client::Session none;
      std::optional<client::Freshness> freshness;
      if (Ryw(policy_)) freshness = client::Freshness{.now_unix_ms = NowUs() / 1000};
      const client::Decision d =
          client::Route(st, Ryw(policy_) ? session : none, *contract, random, freshness);
      auto server = [&] {
        const size_t colon = d.replica.rfind(':');
        auto port = ParseInt<int>(d.replica.substr(colon + 1));
        return port ? *port - s_.opt.base_port : 0;
      };
      if (d.target == client::Target::kReplica) return {server(), false, d.fresh_until_ms};
      if (d.target == client::Target::kAskReplica) {
        return policy_ == Policy::kRywAsk ? Choice{server(), true, d.fresh_until_ms}
                                          : Choice{0, false, std::nullopt};
      }
      return {0, false, std::nullopt};
    }
    std::vector<int> candidates;
    for (int r : {1, 2}) {
      if (policy_ == Policy::kRandom || usable_[r]) candidates.push_back(r);
    }
    if (candidates.empty()) return {0, false, std::nullopt};
    return {candidates[random(candidates.size())], false, std::nullopt};
  }

 private:
  // The baselines' view, refreshed on their own schedule.
  void Monitor() {
    std::array<std::unique_ptr<Sql>, 3> sql;
    for (int r : {1, 2}) sql[r] = std::make_unique<Sql>(Socket(s_.opt, r), 1);
    const auto period = policy_ == Policy::kSbm ? 1000ms : 200ms;
    auto next = SteadyClock::now();
    while (!s_.stop) {
      for (int r : {1, 2}) {
        if (policy_ == Policy::kSbm) {
          auto res = sql[r]->Query("SHOW SLAVE STATUS");
          auto sbm = res ? res->Get("Seconds_Behind_Master") : std::nullopt;
          auto v = sbm ? ParseInt<int64_t>(*sbm) : std::nullopt;
          usable_[r] = v && *v <= 1;
        } else {
          auto res = sql[r]->Query(
              "SELECT TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(6)) FROM lwbench.naive "
              "WHERE id = 1");
          auto lag = res ? res->First() : std::nullopt;
          auto v = lag ? ParseInt<int64_t>(*lag) : std::nullopt;
          usable_[r] = v && *v <= 500'000;
        }
      }
      next += period;
      std::this_thread::sleep_until(next);
    }
  }

  const int index_;
  const Policy policy_;
  Shared& s_;
  std::unique_ptr<client::ContractReader> reader_;
  std::array<std::atomic<bool>, 3> usable_{};
  std::thread monitor_;
};

// A session's connections: the primary and both replicas (2 s timeouts: a frozen replica costs
// that much per read sent to it).
struct Connections {
  std::array<std::unique_ptr<Sql>, 3> sql;
  explicit Connections(const Options& o) {
    for (int s : {0, 1, 2}) sql[s] = std::make_unique<Sql>(Socket(o, s), 2);
  }
};

// Judges an answer: which server gave it (0 the primary), the oracle's seq and the order's version
// it returned (nullopt: the read failed), and the version the session wrote (own reads).
void Judge(ReadRecord& r, const SeqOracleLog& oracle, int server, std::optional<int64_t> seen,
           std::optional<int64_t> got, std::optional<int64_t> written) {
  if (!seen || !got) {
    r.served_by = -1;
    return;
  }
  r.served_by = server;
  if (server > 0) r.staleness_us = oracle.StalenessUs(*seen, r.answer_us).value_or(0);
  r.stale = written ? *got < *written : r.staleness_us > kLimitUs;
}

// A read through a HAProxy pool by a plain client: connect as the reader, read (the answering
// server's @@port says which it was), disconnect; once more on a failure (a connection HAProxy cut
// as its server left the pool, as a pool's reconnect would).
ReadRecord ReadThroughHaproxy(Shared& s, Router& router, ReadRecord r, int id,
                              std::optional<int64_t> written, int64_t start) {
  const std::string query =
      "SELECT o.seq, d.version, @@port AS port FROM lwbench.oracle o JOIN lwbench.orders d "
      "WHERE o.id = 1 AND d.id = " +
      std::to_string(id);
  std::optional<SqlResult> res;
  for (int attempt = 0; attempt < 2 && !res; ++attempt) {
    Sql sql(s.haproxy->Reader(PoolOf(router.policy())), 2);
    res = sql.Query(query);
  }
  r.answer_us = NowUs();
  r.latency_us = r.answer_us - start;
  auto field = [&](const char* name) {
    auto v = res ? res->Get(name) : std::nullopt;
    return v ? ParseInt<int64_t>(*v) : std::nullopt;
  };
  const auto port = field("port");
  const int server = port ? static_cast<int>(*port) - s.opt.base_port : -1;
  std::lock_guard lock(s.mu);
  if (server < 0 || server > 2) {
    r.served_by = -1;
    return r;
  }
  Judge(r, s.oracle, server, field("seq"), field("version"), written);
  return r;
}

// Reads order `id` through `router`; judged as a read of its own write (version `written`,
// `think_ms` after it) or of another session's row.
ReadRecord Read(Shared& s, Router& router, Connections& c, const client::Session& session,
                const client::RandomBelow& random, int id, std::optional<int64_t> written,
                int think_ms) {
  ReadRecord r;
  r.router = router.index();
  r.own_write = written.has_value();
  r.think_ms = think_ms;
  const int64_t start = NowUs();
  if (Haproxy(router.policy())) return ReadThroughHaproxy(s, router, r, id, written, start);
  Router::Choice choice = router.ForRead(session, random);
  if (choice.ask && session.token) {
    auto q = client::CatchUpQuery(*session.token);
    auto res = q.ok() ? c.sql[choice.server]->Query(q.value()) : std::nullopt;
    auto v = res ? res->First() : std::nullopt;
    if (!v || !client::CatchUpReached(session.token->kind(), *v)) choice.server = 0;
  }
  const std::string query =
      "SELECT o.seq, d.version FROM lwbench.oracle o JOIN lwbench.orders d WHERE o.id = 1 AND "
      "d.id = " +
      std::to_string(id);
  auto res = c.sql[choice.server]->Query(query);
  r.answer_us = NowUs();
  if (choice.server > 0 && choice.fresh_until_ms && r.answer_us / 1000 > *choice.fresh_until_ms) {
    // Too late to prove the limit: the primary's answer instead.
    choice.server = 0;
    res = c.sql[0]->Query(query);
    r.answer_us = NowUs();
  }
  r.latency_us = r.answer_us - start;
  auto seq = res ? res->Get("seq") : std::nullopt;
  auto version = res ? res->Get("version") : std::nullopt;
  auto seen = seq ? ParseInt<int64_t>(*seq) : std::nullopt;
  auto got = version ? ParseInt<int64_t>(*version) : std::nullopt;
  std::lock_guard lock(s.mu);
  Judge(r, s.oracle, choice.server, seen, got, written);
  return r;
}

// Writes its own order, waits a think time, reads it back; think times in turn.
void WriterSession(Shared& s, Router& router, int order_id, uint64_t seed) {
  Connections c(s.opt);
  client::Session session;
  auto random = client::SeededRandom(seed);
  int64_t version = 0;
  for (size_t n = 0; !s.stop; ++n) {
    if (!c.sql[0]->Exec("UPDATE lwbench.orders SET version = version + 1 WHERE id = " +
                        std::to_string(order_id))) {
      Pause(100ms);
      continue;
    }
    ++version;
    if (Ryw(router.policy())) {
      std::optional<Position> token;
      auto res = c.sql[0]->Query(client::TokenQuery(PositionsKind::kMariaDbGtid));
      if (auto text = res ? res->First() : std::nullopt) {
        if (auto p = client::ParsePosition(PositionsKind::kMariaDbGtid, *text); p.ok()) {
          token = p.value();
        }
      }
      session.Wrote(token, SystemClock::Get().Now());
    }
    const int think = kThinkMs[n % std::size(kThinkMs)];
    std::this_thread::sleep_for(std::chrono::milliseconds(think));
    s.Add(Read(s, router, c, session, random, order_id, version, think));
  }
}

// Reads other sessions' orders, one every 25 ms; a read that takes longer skips the turns it missed
// rather than catching up in a burst.
void ReaderSession(Shared& s, Router& router, int routers, uint64_t seed) {
  Connections c(s.opt);
  const client::Session none;
  auto random = client::SeededRandom(seed);
  auto next = SteadyClock::now();
  while (!s.stop) {
    const int id = 1 + static_cast<int>(random(static_cast<uint64_t>(routers)));
    s.Add(Read(s, router, c, none, random, id, std::nullopt, 0));
    next = std::max(next + 25ms, SteadyClock::now());
    std::this_thread::sleep_until(next);
  }
}

// A router in other processes: the shipped PHP library through php-cli
// (client/php/bench/stale_reads_worker.php), a writer and a reader process like the sessions
// above, each printing one JSON line per read into its log; judged after the run like the reads
// of the routers in this process.
class PhpRouter {
 public:
  PhpRouter(int index, const Options& o, int routers, const std::vector<std::string>& extra)
      : index_(index),
        base_port_(o.base_port),
        stop_file_(o.dir + "/php-stop-" + std::to_string(index)) {
    std::remove(stop_file_.c_str());
    for (const std::string role : {"writer", "reader"}) {
      std::vector<std::string> argv = {
          "php",         o.php_worker,
          "--dir",       o.dir,
          "--base-port", std::to_string(o.base_port),
          "--role",      role,
          "--order-id",  std::to_string(index + 1),
          "--orders",    std::to_string(routers),
          "--seed",      std::to_string((role == "writer" ? 1000 : 2000) + index),
          "--stop-file", stop_file_,
          "--app",       "bench"};
      argv.insert(argv.end(), extra.begin(), extra.end());
      logs_.push_back(o.out_dir + "/stale-reads-php" + std::to_string(index) + "-" + role + ".log");
      std::remove(logs_.back().c_str());
      workers_.push_back(Child::Spawn(argv, logs_.back()));
    }
  }
  // Asks the workers to stop (the stop file) and waits for them; SIGTERM after 5 s.
  void Stop() {
    std::ofstream(stop_file_) << "stop\n";
    for (auto& w : workers_) {
      if (!w->Wait(5s)) w->Stop();
    }
  }
  // The reads the workers printed, judged against `oracle`. Throws when a worker printed none
  // (it failed: see its log); `junk` counts lines that are not a read (warnings).
  std::vector<ReadRecord> Collect(const SeqOracleLog& oracle, int64_t& junk) const {
    std::vector<ReadRecord> out;
    for (const std::string& log : logs_) {
      std::ifstream in(log);
      size_t before = out.size();
      for (std::string line; std::getline(in, line);) {
        if (auto r = Parse(line, oracle)) {
          out.push_back(*r);
        } else {
          ++junk;
        }
      }
      if (out.size() == before)
        throw std::runtime_error("no reads from the PHP worker: see " + log);
    }
    return out;
  }

 private:
  std::optional<ReadRecord> Parse(const std::string& line, const SeqOracleLog& oracle) const {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto integer = [&](const char* key) -> std::optional<int64_t> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_number_integer()) return std::nullopt;
      return it->get<int64_t>();
    };
    if (!j.is_object() || !j.contains("own") || !j["own"].is_boolean() || !integer("start_us") ||
        !integer("answer_us") || !j.contains("server")) {
      return std::nullopt;
    }
    ReadRecord r;
    r.router = index_;
    r.own_write = j["own"].get<bool>();
    r.think_ms = static_cast<int>(integer("think_ms").value_or(0));
    r.answer_us = *integer("answer_us");
    r.latency_us = r.answer_us - *integer("start_us");
    std::optional<int64_t> written = r.own_write ? integer("written") : std::nullopt;
    if (r.own_write && !written) return std::nullopt;
    int server = -1;
    if (j["server"].is_string()) {
      const std::string id = j["server"].get<std::string>();
      if (id == "primary") {
        server = 0;
      } else if (auto port = ParseInt<int>(id.substr(id.rfind(':') + 1))) {
        server = *port - base_port_;
      }
      if (server < 0 || server > 2) return std::nullopt;
    }
    Judge(r, oracle, server, server < 0 ? std::nullopt : integer("seq"),
          server < 0 ? std::nullopt : integer("version"), written);
    return r;
  }

  const int index_;
  const int base_port_;
  const std::string stop_file_;
  std::vector<std::string> logs_;
  std::vector<std::unique_ptr<Child>> workers_;
};

// A PHP row's name in the report, by the worker's --router mode.
std::string PhpRowName(const std::string& mode) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"lagwatch", "PHP router (client/php)"},
      {"laravel-stock", "Laravel read/write split, sticky (stock)"},
      {"laravel", "Laravel + lagwatch (client/php)"},
      {"doctrine-stock", "Doctrine PrimaryReadReplicaConnection (stock)"},
      {"doctrine", "Doctrine + lagwatch (client/php)"},
  };
  for (const auto& [m, name] : kNames) {
    if (mode == m) return name;
  }
  return "PHP " + mode;
}

// The primary's oracle write every 5 ms, and the naive heartbeat every 500 ms.
void Oracle(Shared& s) {
  Sql sql(Socket(s.opt, 0), 5);
  int64_t seq = 1;
  auto next = SteadyClock::now();
  for (int n = 0; !s.stop; ++n) {
    {
      std::lock_guard lock(s.mu);
      s.oracle.Sent(seq, NowUs());
    }
    sql.Exec("UPDATE lwbench.oracle SET seq = " + std::to_string(seq) + " WHERE id = 1");
    if (n % 100 == 0) sql.Exec("UPDATE lwbench.naive SET updated_at = NOW(6) WHERE id = 1");
    ++seq;
    next += 5ms;
    std::this_thread::sleep_until(std::max(next, SteadyClock::now()));
  }
}

void Setup(const Options& o) {
  for (const char* q : {
           "CREATE DATABASE IF NOT EXISTS lwbench",
           "DROP TABLE IF EXISTS lwbench.oracle, lwbench.naive, lwbench.orders, lwbench.filler",
           "CREATE TABLE lwbench.oracle (id INT PRIMARY KEY, seq BIGINT NOT NULL)",
           "INSERT INTO lwbench.oracle VALUES (1, 0)",
           "CREATE TABLE lwbench.naive (id INT PRIMARY KEY, updated_at DATETIME(6) NOT NULL)",
           "INSERT INTO lwbench.naive VALUES (1, NOW(6))",
           "CREATE TABLE lwbench.orders (id INT PRIMARY KEY, version BIGINT NOT NULL)",
           "CREATE TABLE lwbench.filler (id INT PRIMARY KEY, v BIGINT NOT NULL)",
       }) {
    AdminQuery(Socket(o, 0), q);
  }
  AdminQuery(Socket(o, 0), "INSERT INTO lwbench.orders SELECT seq, 0 FROM lwbench.seq_1_to_" +
                               std::to_string(kOrders));
  AdminQuery(Socket(o, 0), "INSERT INTO lwbench.filler SELECT seq, 0 FROM lwbench.seq_1_to_200000");
  const std::string pos = *AdminQuery(Socket(o, 0), "SELECT @@gtid_binlog_pos").First();
  for (int r : {1, 2}) {
    auto res = AdminQuery(Socket(o, r), "SELECT MASTER_GTID_WAIT('" + pos + "', 60)").First();
    if (res != "0") throw std::runtime_error("replica " + std::to_string(r) + " did not catch up");
  }
}

// The faults, in the order they run; RunFault holds each for a while and undoes it.
struct Fault {
  const char* name;
  int replica;  // the faulted replica, 0 for both
};
constexpr Fault kFaults[] = {
    {"io-stall", 1}, {"sql-stop", 1}, {"ftwrl", 1}, {"hung-replica", 1}, {"write-burst", 0}};

void RunFault(const Options& o, const Fault& f, std::chrono::milliseconds hold) {
  const std::string r1 = Socket(o, 1);
  if (std::string(f.name) == "io-stall") {
    AdminQuery(r1, "STOP SLAVE IO_THREAD");
    Pause(hold);
    AdminQuery(r1, "START SLAVE IO_THREAD");
  } else if (std::string(f.name) == "sql-stop") {
    AdminQuery(r1, "STOP SLAVE SQL_THREAD");
    Pause(hold);
    AdminQuery(r1, "START SLAVE SQL_THREAD");
  } else if (std::string(f.name) == "ftwrl") {
    Sql lock(r1, 10);
    lock.Exec("FLUSH TABLES WITH READ LOCK");
    Pause(hold);
    lock.Exec("UNLOCK TABLES");
  } else if (std::string(f.name) == "hung-replica") {
    Frozen frozen(SandboxServerPid(o.dir, "replica1"));
    Pause(hold);
  } else {
    // A burst: one statement changing 200,000 rows, applied row by row on the replicas.
    const auto until = SteadyClock::now() + hold;
    while (SteadyClock::now() < until) {
      AdminQuery(Socket(o, 0), "UPDATE lwbench.filler SET v = v + 1");
    }
  }
}

json Report(const Options& o, const std::vector<std::string>& names,
            const std::vector<Phase>& phases, const std::vector<std::string>& groups,
            const std::vector<ReadRecord>& reads, double seconds) {
  const auto sums = Summarise(reads, phases, kLimitUs);
  json routers = json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    json per_phase = json::array();
    for (size_t p = 0; p < groups.size(); ++p) {
      auto it = sums.find({static_cast<int>(i), static_cast<int>(p)});
      if (it == sums.end()) continue;
      const Summary& s = it->second;
      json by_think = json::object();
      for (const auto& [think, v] : s.own_by_think) {
        by_think[std::to_string(think)] = {{"reads", v.first}, {"stale", v.second}};
      }
      const int64_t served = s.replica_reads + s.primary_reads;
      const int64_t others = s.others_replica_reads + s.others_primary_reads;
      per_phase.push_back(
          {{"phase", groups[p]},
           {"reads", s.reads},
           {"failed", s.failed},
           {"stale", s.stale},
           {"stale_own", s.stale_own},
           {"stale_others", s.stale_others},
           {"stale_pct", s.reads ? 100.0 * static_cast<double>(s.stale) / s.reads : 0.0},
           {"over_limit_25ms", s.over_limit_25},
           {"rwsr", served ? static_cast<double>(s.replica_reads) / served : 0.0},
           {"rwsr_others", others ? static_cast<double>(s.others_replica_reads) / others : 0.0},
           {"primary_reads", s.primary_reads},
           {"p50_ms", QuantileMs(s.latencies_us, 0.5)},
           {"p99_ms", QuantileMs(s.latencies_us, 0.99)},
           {"last_bad_use_ms", s.last_bad_use_ms ? json(*s.last_bad_use_ms) : json(nullptr)},
           {"own_by_think_ms", by_think}});
    }
    routers.push_back({{"router", names[i]}, {"phases", per_phase}});
  }
  return {{"benchmark", "stale_reads"},
          {"mode", o.quick ? "quick" : "full"},
          {"tls", o.tls},
          {"command", o.command},
          {"git_rev", o.git_rev},
          {"date", IsoUtc(StartUs())},
          {"load_average", LoadAverage()},
          {"seconds", seconds},
          {"limit_ms", kLimitUs / 1000},
          {"reads", reads.size()},
          {"routers", routers}};
}

std::string Render(const json& r, bool markdown) {
  std::string out;
  char line[512];
  out += markdown ? "# Stale reads served, router by router\n\n" : "";
  out += "mode " + r["mode"].get<std::string>() + (r.value("tls", false) ? ", TLS to Redis" : "") +
         ", " + std::to_string(r["reads"].get<size_t>()) + " reads in " +
         std::to_string(static_cast<int>(r["seconds"].get<double>())) + " s, tier limit " +
         std::to_string(r["limit_ms"].get<int>()) + " ms, " + r["date"].get<std::string>() +
         ", load " + r["load_average"].get<std::string>() + ", rev " +
         r["git_rev"].get<std::string>() + "\n\n";
  // One table per phase: the routers side by side.
  std::vector<std::string> phase_names;
  for (const auto& p : r["routers"][0]["phases"]) phase_names.push_back(p["phase"]);
  for (const std::string& phase : phase_names) {
    out += (markdown ? "## " : "== ") + phase + "\n\n";
    out +=
        markdown
            ? "| router | reads | failed | stale | stale % | own writes stale | others stale | "
              ">limit+25ms | RWSR | others' RWSR | on primary | p50 ms | p99 ms | last bad use ms "
              "|\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            : "";
    for (const auto& router : r["routers"]) {
      for (const auto& p : router["phases"]) {
        if (p["phase"] != phase) continue;
        const std::string bad =
            p["last_bad_use_ms"].is_null() ? "-" : std::to_string(p["last_bad_use_ms"].get<int>());
        std::snprintf(
            line, sizeof line,
            markdown ? "| %s | %lld | %lld | %lld | %.2f | %lld | %lld | %lld | %.1f%% | %.1f%% | "
                       "%lld | %.1f | %.1f | %s |\n"
                     : "%-48s reads %6lld failed %4lld stale %5lld (%6.2f%%) own %4lld "
                       "others %5lld >lim+25 %5lld RWSR %5.1f%% others' %5.1f%% primary %5lld "
                       "p50 %5.1f p99 %6.1f last-bad %s\n",
            router["router"].get<std::string>().c_str(), p["reads"].get<long long>(),
            p["failed"].get<long long>(), p["stale"].get<long long>(), p["stale_pct"].get<double>(),
            p["stale_own"].get<long long>(), p["stale_others"].get<long long>(),
            p["over_limit_25ms"].get<long long>(), 100 * p["rwsr"].get<double>(),
            100 * p.value("rwsr_others", 0.0), p["primary_reads"].get<long long>(),
            p["p50_ms"].get<double>(), p["p99_ms"].get<double>(), bad.c_str());
        out += line;
      }
    }
    out += "\n";
  }
  // Own writes read back stale, by think time, over the whole run.
  out += markdown ? "## Own writes read back stale, by think time (whole run)\n\n| router |"
                  : "== own writes read back stale, by think time (whole run)\n";
  if (markdown) {
    for (int t : kThinkMs) out += " " + std::to_string(t) + " ms |";
    out += "\n|---|";
    for (size_t i = 0; i < std::size(kThinkMs); ++i) out += "---|";
    out += "\n";
  }
  for (const auto& router : r["routers"]) {
    out += markdown ? "| " + router["router"].get<std::string>() + " |"
                    : router["router"].get<std::string>() + ":";
    for (int t : kThinkMs) {
      long long n = 0, stale = 0;
      for (const auto& p : router["phases"]) {
        auto it = p["own_by_think_ms"].find(std::to_string(t));
        if (it == p["own_by_think_ms"].end()) continue;
        n += (*it)["reads"].get<long long>();
        stale += (*it)["stale"].get<long long>();
      }
      if (markdown) {
        std::snprintf(line, sizeof line, " %lld/%lld |", stale, n);
      } else {
        std::snprintf(line, sizeof line, " %dms %lld/%lld", t, stale, n);
      }
      out += line;
    }
    out += "\n";
  }
  return out;
}

// Until every pool reads from a replica (push: lagwatch has set its servers; pull: the first
// checks passed; stock and SBM: theirs), or 15 s: the steady state starts with the pools settled.
void WaitForPools(const HaproxyRows& rows, int base_port) {
  const auto until = SteadyClock::now() + 15s;
  for (HaproxyPool p :
       {HaproxyPool::kStock, HaproxyPool::kSbm, HaproxyPool::kPull, HaproxyPool::kPush}) {
    for (;;) {
      Sql sql(rows.Reader(p), 2);
      auto res = sql.Query("SELECT @@port AS port");
      auto port = res ? res->Get("port") : std::nullopt;
      if (port && *port != std::to_string(base_port)) break;
      if (SteadyClock::now() > until) {
        Progress("pool on port " + std::to_string(rows.PoolPort(p)) +
                 " still reads the primary after 15 s");
        break;
      }
      Pause(100ms);
    }
  }
}

int RunBenchmark(const Options& o) {
  const SandboxEnv env = o.Sandbox();
  const bool with_haproxy = std::any_of(o.policies.begin(), o.policies.end(), Haproxy);
  std::optional<HaproxyRows> haproxy_rows;
  if (with_haproxy) {
    Progress("setting up HAProxy's pools");
    haproxy_rows = PrepareHaproxy(o.dir, o.base_port, Socket(o, 0), o.lagwatch);
  }
  Progress("setting up the tables");
  Setup(o);
  std::string config = with_haproxy ? haproxy_rows->lagwatch : o.dir + "/lagwatch.json";
  if (o.after_commit_ms > 0) {
    json j = json::parse(ReadFile(config), nullptr, true, true);
    j["probe"]["after_commit_ms"] = o.after_commit_ms;
    config = o.dir + "/lagwatch-after-commit.json";
    std::ofstream(config) << j.dump(2);
  }
  auto agent = Child::Spawn({o.lagwatch, "--config", config}, o.out_dir + "/stale-reads-agent.log");
  {
    Redis redis(SandboxRedis(env, RedisUser::kAdmin));
    const auto until = SteadyClock::now() + 30s;
    for (;;) {
      auto keys = redis.HGetAll({"slave_delay:127.0.0.1:" + std::to_string(o.base_port + 1),
                                 "slave_delay:127.0.0.1:" + std::to_string(o.base_port + 2)});
      if (keys && (*keys)[0]["healthy"] == "1" && (*keys)[1]["healthy"] == "1") break;
      if (SteadyClock::now() > until) {
        throw std::runtime_error(
            "lagwatch's replicas never healthy" +
            (redis.last_error().empty() ? "" : " (" + redis.last_error() + ")"));
      }
      Pause(50ms);
    }
  }
  Shared shared(o, SandboxRedis(env, RedisUser::kRouter));
  std::unique_ptr<Child> haproxy;
  if (with_haproxy) {
    shared.haproxy = haproxy_rows;
    haproxy = StartHaproxy(*haproxy_rows, o.out_dir + "/stale-reads-haproxy.log");
    WaitForPools(*haproxy_rows, o.base_port);
  }
  // The rows: the policies in this process, then the PHP routers (arguments for the worker).
  std::vector<std::string> names;
  std::vector<Policy> policies = o.policies;
  if (policies.empty()) {
    for (const PolicyInfo& i : kPolicies) policies.push_back(i.policy);
  }
  for (Policy p : policies) names.push_back(PolicyName(p));
  std::vector<std::pair<std::string, std::vector<std::string>>> php_rows;
  for (const std::string& mode : o.php_routers) {
    php_rows.push_back({PhpRowName(mode), {"--router", mode}});
  }
  for (const auto& row : php_rows) names.push_back(row.first);
  const int n = static_cast<int>(names.size());
  std::vector<std::unique_ptr<Router>> routers;
  for (size_t i = 0; i < policies.size(); ++i) {
    routers.push_back(std::make_unique<Router>(static_cast<int>(i), policies[i], shared));
  }
  std::thread oracle([&] { Oracle(shared); });
  Pause(200ms);  // the oracle's first writes
  std::vector<std::thread> sessions;
  for (auto& owned : routers) {
    Router* router = owned.get();
    const int i = router->index();
    sessions.emplace_back([&, router, i] { WriterSession(shared, *router, i + 1, 1000 + i); });
    sessions.emplace_back([&, router, i] { ReaderSession(shared, *router, n, 2000 + i); });
  }
  std::vector<std::unique_ptr<PhpRouter>> php;
  for (size_t k = 0; k < php_rows.size(); ++k) {
    php.push_back(std::make_unique<PhpRouter>(static_cast<int>(policies.size() + k), o, n,
                                              php_rows[k].second));
  }
  auto stop_all = [&] {
    shared.stop = true;
    for (auto& p : php) p->Stop();
    for (auto& t : sessions) t.join();
    oracle.join();
  };
  const auto steady = o.quick ? 20s : 120s;
  const auto hold = o.quick ? 5s : 8s;
  const auto recover = o.quick ? 8s : 12s;
  const int cycles = o.quick ? 1 : 3;
  std::vector<Phase> phases;
  std::vector<std::string> groups;
  const int64_t begun = NowUs();
  try {
    Progress("steady state");
    groups.push_back("steady");
    phases.push_back({"steady", NowUs(), NowUs(), 0, 0});
    Pause(steady);
    for (const Fault& f : kFaults) {
      Progress(std::string("fault ") + f.name);
      groups.push_back(f.name);
      for (int c = 0; c < cycles; ++c) {
        phases.push_back({f.name, NowUs(), 0, f.replica, static_cast<int>(groups.size()) - 1});
        RunFault(o, f, hold);
        phases.back().end_us = NowUs();
        Pause(recover);
      }
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  routers.clear();
  agent->Stop();
  if (haproxy) haproxy->Stop();
  int64_t junk = 0;
  for (const auto& p : php) {
    auto reads = p->Collect(shared.oracle, junk);
    shared.reads.insert(shared.reads.end(), reads.begin(), reads.end());
  }
  if (junk > 0) Progress(std::to_string(junk) + " lines of the PHP workers' logs were not reads");
  const double seconds = static_cast<double>(NowUs() - begun) / 1e6;
  const json result = Report(o, names, phases, groups, shared.reads, seconds);
  WriteResults(
      o.out_dir + "/" + o.name + (o.tls ? "-tls-" : "-") + (o.quick ? "quick" : "full"), result,
      [](const json& r) { return Render(r, true); },
      [](const json& r) { return Render(r, false); });
  return 0;
}

}  // namespace
}  // namespace lagwatch::bench

int main(int argc, char** argv) {
  using namespace lagwatch::bench;
  Options opt;
  return BenchmarkMain(argc, argv, opt,
                       {.name = "bench_stale_reads",
                        .usage = kUsage,
                        .flag =
                            [&](FlagReader& f) {
                              if (f.flag() == "--php-worker") {
                                opt.php_worker = f.Value();
                              } else if (f.flag() == "--php-router") {
                                opt.php_routers.push_back(f.Value());
                              } else if (f.flag() == "--name") {
                                opt.name = f.Value();
                              } else if (f.flag() == "--after-commit-ms") {
                                const auto ms = lagwatch::ParseInt<int>(f.Value());
                                if (!ms || *ms < 0) {
                                  std::fprintf(stderr,
                                               "bench_stale_reads: --after-commit-ms needs a "
                                               "number of ms\n");
                                  std::exit(2);
                                }
                                opt.after_commit_ms = *ms;
                              } else if (f.flag() == "--policy") {
                                const std::string v = f.Value();
                                auto policy = PolicyByFlag(v);
                                if (!policy) {
                                  std::fprintf(stderr, "bench_stale_reads: unknown --policy '%s'\n",
                                               v.c_str());
                                  std::exit(2);
                                }
                                opt.policies.push_back(*policy);
                              } else {
                                return false;
                              }
                              return true;
                            },
                        .valid =
                            [&] {
                              return (opt.php_routers.empty() || !opt.php_worker.empty()) &&
                                     lagwatch::IsToken(opt.name, "_.-", 1, 64);
                            },
                        .run = [&] { return RunBenchmark(opt); }});
}
