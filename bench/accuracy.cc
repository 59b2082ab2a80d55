// bench_accuracy: measures how well lagwatch, pt-heartbeat, Seconds_Behind_Master and a naive
// `NOW() − updated_at` heartbeat report replica lag, against an oracle, side by side on one
// sandbox (scripts/sandbox), through lag scenarios (steady, SQL-thread stalls, FLUSH TABLES WITH
// READ LOCK, sysbench write load), faults (a frozen primary, a hung replica, agents killed) and
// moves of the primary (a planned switchover and a failover, the oracle following the new
// primary). Run it through bench/accuracy, which builds, brings the sandbox up and takes it down.
// See bench/analysis.h for the ground truth and the measures.
//
// The usual agent ("lagwatch") takes its bounds from the primary's binary log stream where it can
// (the sandbox's writer account has REPLICATION SLAVE); "lagwatch (sampling)" (agent_id 4,
// binlog_stream.enabled false, its own Redis key prefix and HTTP port) runs beside it with the
// position samples alone, so the two bounds are compared in one run.
//
// With --positions binlog the sandbox replicates by file and position, and a second lagwatch
// agent ("lagwatch (binlog)": agent_id 2, "positions": "binlog", its own Redis key prefix and
// HTTP port) runs next to the usual one and is measured as a system of its own; the sampling
// agent then compares coordinates too.
//
// Its flags are kUsage below.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <mysql.h>
#include <nlohmann/json.hpp>

#include "bench/analysis.h"
#include "bench/bench_util.h"
#include "bench/collectors.h"
#include "bench/flags.h"
#include "bench/report.h"
#include "bench/table.h"

namespace lagwatch::bench {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kOraclePeriod = std::chrono::microseconds(5000);
constexpr auto kRedisPeriod = std::chrono::microseconds(2000);
constexpr auto kSqlPollPeriod = std::chrono::microseconds(200'000);
constexpr auto kNaiveWritePeriod = std::chrono::microseconds(500'000);
constexpr auto kDeliveryPollPeriod = std::chrono::microseconds(100'000);
constexpr int64_t kDetectGraceUs = 1'000'000;
// A change of `healthy` is a flap when the oracle's upper bound was at most this at both records
// (half the 200 ms limit: no verdict should change there).
constexpr int64_t kFarFromLimitUs = 100'000;
constexpr int kReplicas = 2;
// A hung replica's truth points (bench/analysis.h), as often as the oracle's reads.
constexpr int64_t kHangStepUs = 5000;

constexpr const char* kKeyPrefix = "slave_delay";  // the sandbox's config's

// The second agent of a --positions binlog run: what its config changes in the sandbox's.
constexpr const char* kBinlogSystem = "lagwatch (binlog)";
constexpr const char* kBinlogPositions = "binlog";
constexpr const char* kBinlogKeyPrefix = "slave_delay_binlog";
constexpr int kBinlogAgentId = 2;
constexpr int kSandboxHttpOffset = 4;  // the sandbox's own lagwatch HTTP port: base port + 4
constexpr int kBinlogHttpOffset = 5;   // base port + 5: the sandbox uses P..P+4

// The agent-kill scenario's second agent, next to the usual one: the sandbox's config with
// another agent_id and HTTP port, the same Redis keys.
constexpr const char* kSecondAgent = "lagwatch (agent 3)";
constexpr int kSecondAgentId = 3;
constexpr int kSecondAgentHttpOffset = 6;
// The sampling agent: lagwatch without the binary log stream (binlog_stream.enabled false), the
// bound of the position samples alone, beside the usual agent, which follows the stream; with
// --positions binlog it compares coordinates, like the binlog agent.
constexpr const char* kSamplingSystem = "lagwatch (sampling)";
constexpr const char* kSamplingKeyPrefix = "slave_delay_sampling";
constexpr int kSamplingAgentId = 4;
constexpr int kSamplingHttpOffset = 7;

// What --scenarios can name: the heartbeat-cost windows, then the scenarios, in the order they run.
constexpr const char* kPhases[] = {"cost",       "steady",         "stall",        "ftwrl",
                                   "sysbench",   "primary-freeze", "hung-replica", "agent-kill",
                                   "switchover", "failover"};

// The servers of the sandbox by index: the primary at the start, then the replicas.
constexpr const char* kServers[] = {"primary", "replica1", "replica2"};
constexpr int kServerCount = 3;

// The account replicas use to follow a new primary (created on every server, not binlogged).
constexpr const char* kSwitchUser = "lw_sw";
constexpr const char* kSwitchPassword = "swpw";
// pt-heartbeat --update's account: no SUPER, so read_only stops it (--check-read-only pauses it
// while its server is read-only), as in production; not the root the bench's writers use.
constexpr const char* kPtUser = "lw_pt";
constexpr const char* kPtPassword = "ptpw";
// A tier's limit in the sandbox's config (tier1, both replicas and primary.tier's default).
constexpr int64_t kTierLimitUs = 200'000;

// What -h and --help print.
constexpr const char* kUsage =
    "usage: bench_accuracy --dir DIR --base-port P --lagwatch BIN --out-dir DIR\n"
    "                      [--quick] [--command TEXT] [--git-rev REV] [--sysbench-rate TPS]\n"
    "                      [--positions binlog] [--scenarios NAME,...] [--tls]\n"
    "                      [--after-commit-ms N] [--watch-writes]\n"
    "Runs against a sandbox already up (scripts/sandbox up --dir DIR --base-port P).\n"
    "--tls: the sandbox was built with --tls (scripts/sandbox up ... --tls): lagwatch talks TLS\n"
    "  to MySQL and Redis as its config says, the bench's Redis clients and the moves'\n"
    "  replication too; pt-heartbeat, SBM, naive and the oracle use the unix sockets as in\n"
    "  the plaintext run. Results go to accuracy-<quick|full>[-binlog]-tls[-partial].{json,md}.\n"
    "--scenarios NAME,...: only these, in the usual order: cost (the heartbeat cost windows),\n"
    "  steady, stall, ftwrl, sysbench, primary-freeze, hung-replica, agent-kill, switchover,\n"
    "  failover; results go to\n"
    "  accuracy-<quick|full>[-binlog]-partial.{json,md}. Default: all of them.\n"
    "--positions binlog: the sandbox must replicate by file and position (scripts/sandbox up\n"
    "  ... --replication binlog); a second lagwatch agent, \"lagwatch (binlog)\", runs next to\n"
    "  the usual one from a copy of DIR/lagwatch.json with agent_id 2, \"positions\": \"binlog\",\n"
    "  redis.key_prefix slave_delay_binlog and http.listen 127.0.0.1:P+5 (written to the log\n"
    "  dir), and is measured as a system of its own; results go to\n"
    "  accuracy-<quick|full>-binlog.{json,md}.\n"
    "--after-commit-ms N: \"lagwatch\" runs from a copy of DIR/lagwatch.json with\n"
    "  probe.after_commit_ms N (5 or more; written to the log dir) instead of its default (10):\n"
    "  every replica is also probed N ms after each transaction the stream delivers. Results go "
    "to\n"
    "  accuracy-<quick|full>[-binlog][-tls]-after-commit[-partial].{json,md}.\n"
    "--watch-writes: \"lagwatch\" runs from a copy of DIR/lagwatch.json with\n"
    "  binlog_stream.watch_writes true (written to the log dir): the other servers' binary logs\n"
    "  are followed, and a write on one of them has every server probed at once. Results go to\n"
    "  accuracy-<quick|full>[-binlog][-tls][-after-commit]-watch-writes[-partial].{json,md}.\n"
    "Normally started by bench/accuracy.\n";

struct Options : CommonOptions {
  int sysbench_rate = 100;  // replicas keep up here at 100 tps (not at 200) with the oracle running
  std::string positions;    // "" (one agent, positions auto) or "binlog" (a second agent)
  int after_commit_ms = 0;  // "lagwatch"'s probe.after_commit_ms (0: the sandbox's config as is)
  bool watch_writes = false;        // "lagwatch" with binlog_stream.watch_writes
  std::vector<std::string> phases;  // --scenarios: some of kPhases; empty: all of them
  bool Runs(const std::string& phase) const {
    return phases.empty() || std::find(phases.begin(), phases.end(), phase) != phases.end();
  }
};

// A disturbance repeated: `count` times held `hold_s` seconds, `gap_s` seconds between.
struct Cycles {
  int count;
  double hold_s, gap_s;
  // Adds name_cycles, name_hold_s and name_gap_s to `plan`.
  void AddTo(json& plan, const std::string& name) const {
    plan[name + "_cycles"] = count;
    plan[name + "_hold_s"] = hold_s;
    plan[name + "_gap_s"] = gap_s;
  }
};

// "3", "1.5": seconds as the descriptions say them.
std::string Secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

milliseconds Ms(double s) { return milliseconds(std::llround(s * 1000.0)); }

// How long each phase runs, by mode.
struct Plan {
  int idle_s, cost_s, steady_s;
  Cycles stall, ftwrl;
  int sysbench_s;
  // The fault scenarios: the primary's server frozen; replica1's; the agents killed in turn (hold:
  // how long one stays dead; gap: after it publishes again).
  Cycles primary_freeze, hung_replica, agent_kill;
  // Moves of the primary: a cycle moves it to replica1 (hold: how long replica2 is then held
  // back by FLUSH TABLES WITH READ LOCK) and back (gap: the settling time after each move).
  Cycles switchover, failover;
  json ToJson() const {
    json j = {{"idle_baseline_s", idle_s},   {"cost_window_s", cost_s},
              {"steady_s", steady_s},        {"stall_cycles", stall.count},
              {"stall_s", stall.hold_s},     {"stall_gap_s", stall.gap_s},
              {"ftwrl_cycles", ftwrl.count}, {"ftwrl_hold_s", ftwrl.hold_s},
              {"ftwrl_gap_s", ftwrl.gap_s},  {"sysbench_s", sysbench_s}};
    primary_freeze.AddTo(j, "primary_freeze");
    hung_replica.AddTo(j, "hung_replica");
    agent_kill.AddTo(j, "agent_kill");
    switchover.AddTo(j, "switchover");
    failover.AddTo(j, "failover");
    return j;
  }
};
Plan PlanFor(bool quick) {
  if (quick) {
    return Plan{3,         10,          60,        {4, 3, 5},   {3, 2, 5},  60,
                {2, 2, 4}, {2, 1.5, 4}, {2, 3, 3}, {1, 3.5, 5}, {1, 3.5, 5}};
  }
  return Plan{10,        20,          600,       {10, 3, 5},  {8, 2, 5},  180,
              {8, 2, 4}, {8, 1.5, 4}, {4, 4, 4}, {3, 3.5, 5}, {2, 3.5, 5}};
}

struct Paths {
  std::string dir;
  int base_port;
  bool binlog_replication = false;  // the replicas replicate by file and position
  // The judge's Redis login (the sandbox's admin; TLS when the sandbox has it).
  RedisConfig redis;
  // The sandbox's client TLS (scripts/sandbox up --tls); enabled false without it.
  TlsOptions tls;
  std::string Sock(const std::string& server) const { return dir + "/" + server + "/mysqld.sock"; }
  std::string Primary() const { return Sock("primary"); }
  std::string Replica(int i) const { return Sock("replica" + std::to_string(i + 1)); }
  int ReplicaPort(int i) const { return base_port + 1 + i; }
  std::string Config() const { return dir + "/lagwatch.json"; }
  std::string RedisKey(int i, const std::string& prefix = kKeyPrefix) const {
    return prefix + ":127.0.0.1:" + std::to_string(ReplicaPort(i));
  }
  // By server index (kServers): 0 is the primary the sandbox started with.
  std::string Server(int s) const { return Sock(kServers[s]); }
  int ServerPort(int s) const { return base_port + s; }
  std::string ServerId(int s) const { return "127.0.0.1:" + std::to_string(ServerPort(s)); }
  // The key lagwatch gives the server while it is a replica.
  std::string ServerKey(int s, const std::string& prefix = kKeyPrefix) const {
    return prefix + ":" + ServerId(s);
  }
};

// "a,b,c" as {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// True if every one of `phases` is in kPhases; names the first that is not on stderr.
bool KnownPhases(const std::vector<std::string>& phases) {
  for (const auto& name : phases) {
    if (std::find(std::begin(kPhases), std::end(kPhases), name) == std::end(kPhases)) {
      std::cerr << "bench_accuracy: --scenarios: no scenario '" << name << "'\n";
      return false;
    }
  }
  return true;
}

// True if 127.0.0.1:port can be bound now (nothing listens there).
bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// Polls `cond` every 50 ms for up to `timeout`; throws on interrupt.
template <class F>
bool WaitUntil(F cond, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    Pause(milliseconds(50));
  }
}

// CPU seconds and resident memory of a live process, from /proc.
json ProcUsage(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return nullptr;
  std::istringstream in(stat.substr(paren + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string x; in >> x;) f.push_back(x);
  if (f.size() < 22) return nullptr;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime + stime
  const double rss_mb = std::stod(f[21]) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1048576.0;
  std::istringstream up(ReadFile("/proc/uptime"));
  double uptime = 0;
  up >> uptime;
  const double alive_s = uptime - std::stod(f[19]) / ticks;  // field 22: start time
  return {{"cpu_s", cpu},
          {"alive_s", alive_s},
          {"cpu_share", alive_s > 0 ? cpu / alive_s : 0.0},
          {"rss_mb", rss_mb}};
}

json PercentilesJson(const Percentiles& p) {
  if (p.n == 0) return nullptr;
  return {{"n", p.n},     {"p50", p.p50}, {"p95", p.p95},
          {"p99", p.p99}, {"max", p.max}, {"min", p.min}};
}

// ---------------------------------------------------------------------------------------------
// Sandbox preparation and the heartbeat-cost windows

// Waits for both replicas to apply everything the primary has binlogged: by GTID, or by binary
// log file and position when the sandbox replicates that way.
void WaitReplicasCaughtUp(const Paths& p, int timeout_s) {
  std::string pos, wait;
  if (p.binlog_replication) {
    const SqlResult st = AdminQuery(p.Primary(), "SHOW MASTER STATUS");
    const std::string file = st.Get("File").value_or("");
    const std::string offset = st.Get("Position").value_or("");
    if (file.empty() || offset.empty()) throw std::runtime_error("primary: no SHOW MASTER STATUS");
    pos = file + ":" + offset;
    wait = "MASTER_POS_WAIT('" + file + "', " + offset + ", " + std::to_string(timeout_s) + ")";
  } else {
    pos = AdminQuery(p.Primary(), "SELECT @@gtid_binlog_pos").First().value_or("");
    wait = "MASTER_GTID_WAIT('" + pos + "', " + std::to_string(timeout_s) + ")";
  }
  for (int i = 0; i < kReplicas; ++i) {
    auto r = AdminQuery(p.Replica(i), "SELECT " + wait).First();
    // MASTER_GTID_WAIT: 0 once reached, -1 on timeout. MASTER_POS_WAIT: the number of events
    // waited for, -1 on timeout, NULL if the SQL thread is not running.
    const bool reached =
        p.binlog_replication ? r && !r->empty() && r->front() != '-' : r.value_or("-1") == "0";
    if (!reached) {
      throw std::runtime_error("replica" + std::to_string(i + 1) + " did not reach " + pos);
    }
  }
}

// The oracle's apply times (bench/analysis.h): a trigger on lwtest.oracle on every replica, none
// on the primary. A replica runs a trigger for row events only if the primary ran none for them
// (slave_run_triggers_for_rbr=YES; ENFORCE, which should run it regardless, did not on MariaDB
// 10.11: https://mariadb.com/kb/en/running-triggers-on-the-slave-for-row-based-events/), so the
// trigger is created and dropped on each server alone (sql_log_bin=0) as it becomes a replica or
// the primary. The variable is global: set again on a server that was restarted. The trigger's
// rows are keyed by the server's port: inside the replication thread @@server_id is the
// primary's.
constexpr const char* kRunTriggers = "SET GLOBAL slave_run_triggers_for_rbr = 'YES'";

void ApplyTimes(Sql& sql, const std::string& who, bool on) {
  for (const std::string& stmt :
       {std::string("SET SESSION sql_log_bin = 0"),
        std::string(on ? "CREATE TRIGGER IF NOT EXISTS lwtest.oracle_applied AFTER INSERT ON "
                         "lwtest.oracle FOR EACH ROW INSERT INTO lwtest.applied VALUES (@@port, "
                         "NEW.id, CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED))"
                       : "DROP TRIGGER IF EXISTS lwtest.oracle_applied"),
        std::string("SET SESSION sql_log_bin = 1")}) {
    // SYSDATE(6), not NOW(6): in the replication thread NOW() is the primary's statement time.
    if (!sql.Exec(stmt)) throw std::runtime_error(who + ": " + sql.error());
  }
}

// The oracle rows the server at `socket` applied, with when (its lwtest.applied rows; empty if
// it cannot be read: truth then comes from the reads alone).
std::vector<AppliedRow> ReadApplied(const std::string& socket) {
  Sql sql(socket);
  auto r = sql.Query("SELECT id, t_us FROM lwtest.applied WHERE port = @@port");
  std::vector<AppliedRow> out;
  if (!r) {
    Progress("lwtest.applied on " + socket +
             " unreadable (truth from reads alone): " + sql.error());
    return out;
  }
  out.reserve(r->rows.size());
  for (const auto& row : r->rows) {
    if (row.size() != 2 || !row[0] || !row[1]) continue;
    out.push_back(
        {std::strtoll(row[0]->c_str(), nullptr, 10), std::strtoll(row[1]->c_str(), nullptr, 10)});
  }
  return out;
}

void PrepareTables(const Paths& p) {
  for (const std::string& server : {p.Primary(), p.Replica(0), p.Replica(1)}) {
    Sql sql(server);
    if (!sql.Exec(kRunTriggers)) throw std::runtime_error(sql.error());
  }
  Sql sql(p.Primary());
  for (const char* stmt : {
           "CREATE DATABASE IF NOT EXISTS lwtest",
           "DROP TABLE IF EXISTS lwtest.oracle, lwtest.applied, lwtest.naive, "
           "lwtest.pt_heartbeat, lwtest.sbtest1, lwtest.sbtest2",
           "CREATE TABLE lwtest.oracle (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
           "t_us BIGINT NOT NULL) ENGINE=InnoDB",
           // A replica's row per oracle row it applied, keyed by its port (its trigger's).
           "CREATE TABLE lwtest.applied (port INT UNSIGNED NOT NULL, id BIGINT UNSIGNED NOT "
           "NULL, t_us BIGINT NOT NULL, PRIMARY KEY (port, id)) ENGINE=InnoDB",
           "CREATE TABLE lwtest.naive (id INT NOT NULL PRIMARY KEY, updated_at DATETIME(6) NOT "
           "NULL) ENGINE=InnoDB",
           "INSERT INTO lwtest.naive VALUES (1, NOW(6))",
           "CREATE USER IF NOT EXISTS 'lw_pt'@'localhost' IDENTIFIED BY 'ptpw'",
           "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON lwtest.* TO 'lw_pt'@'localhost'",
           "GRANT BINLOG MONITOR, SLAVE MONITOR ON *.* TO 'lw_pt'@'localhost'",
       }) {
    if (!sql.Exec(stmt)) throw std::runtime_error(sql.error());
  }
  WaitReplicasCaughtUp(p, 30);
  for (int i = 0; i < kReplicas; ++i) {
    Sql replica(p.Replica(i));
    ApplyTimes(replica, "replica" + std::to_string(i + 1), true);
  }
}

struct CostReading {
  int64_t t_us = 0;
  int64_t binlog_bytes = 0;
  int64_t transactions = 0;  // sum of seq_no over @@gtid_binlog_pos
  int64_t questions = 0;
  int64_t bytes_sent = 0;  // the primary's Bytes_sent: to every client, a binary log dump included
  double cpu_s = 0;        // the primary's mariadbd
};

CostReading ReadCost(const Paths& p, Sql& primary) {
  CostReading c;
  const json usage = ProcUsage(SandboxServerPid(p.dir, "primary"));
  if (usage.is_object()) c.cpu_s = usage["cpu_s"].get<double>();
  auto sent = primary.Query("SHOW GLOBAL STATUS LIKE 'Bytes_sent'");
  if (sent) c.bytes_sent = std::strtoll(sent->Get("Value").value_or("0").c_str(), nullptr, 10);
  auto q = primary.Query("SHOW GLOBAL STATUS LIKE 'Questions'");
  auto logs = primary.Query("SHOW BINARY LOGS");
  auto pos = primary.Query("SELECT @@gtid_binlog_pos");
  c.t_us = NowUs();
  if (!q || !logs || !pos) throw std::runtime_error("reading binlog size: " + primary.error());
  c.questions = std::strtoll(q->Get("Value").value_or("0").c_str(), nullptr, 10);
  size_t size_col = 0;
  while (size_col < logs->columns.size() && logs->columns[size_col] != "File_size") ++size_col;
  for (const auto& row : logs->rows) {
    if (size_col < row.size() && row[size_col]) {
      c.binlog_bytes += std::strtoll(row[size_col]->c_str(), nullptr, 10);
    }
  }
  // "0-1-123,1-2-7": domain-server-seq per domain.
  std::stringstream s(pos->First().value_or(""));
  std::string gtid;
  while (std::getline(s, gtid, ',')) {
    auto dash = gtid.rfind('-');
    if (dash != std::string::npos)
      c.transactions += std::strtoll(gtid.c_str() + dash + 1, nullptr, 10);
  }
  return c;
}

// Binlog growth and primary statements over `secs` with whatever is running now.
json MeasureCost(const Paths& p, const std::string& who, int secs, const std::string& note) {
  Progress("heartbeat cost: " + who + " for " + std::to_string(secs) + " s");
  Sql primary(p.Primary());
  CostReading a = ReadCost(p, primary);
  Pause(seconds(secs));
  CostReading b = ReadCost(p, primary);
  const double dt = static_cast<double>(b.t_us - a.t_us) / 1e6;
  const int64_t bytes = b.binlog_bytes - a.binlog_bytes;
  const int64_t trx = b.transactions - a.transactions;
  // The reading's own four statements are counted once in the difference.
  const int64_t questions = std::max<int64_t>(0, b.questions - a.questions - 4);
  json j = {{"system", who},
            {"seconds", dt},
            {"binlog_bytes", bytes},
            {"transactions", trx},
            {"statements", questions},
            {"binlog_bytes_per_s", static_cast<double>(bytes) / dt},
            {"binlog_bytes_per_day", static_cast<double>(bytes) / dt * 86400.0},
            {"statements_per_s", static_cast<double>(questions) / dt},
            {"primary_cpu_share", (b.cpu_s - a.cpu_s) / dt},
            {"bytes_sent_per_s", static_cast<double>(b.bytes_sent - a.bytes_sent) / dt},
            {"note", note}};
  j["bytes_per_transaction"] = trx > 0 ? json(static_cast<double>(bytes) / trx) : json(nullptr);
  return j;
}

// ---------------------------------------------------------------------------------------------
// The systems under test, as child processes

std::vector<std::string> PtUpdateArgs(const Paths& p) {
  return {"pt-heartbeat",
          "--no-version-check",
          "--update",
          "--interval",
          "0.5",
          "--database",
          "lwtest",
          "--table",
          "pt_heartbeat",
          "--create-table",
          "--check-read-only",
          "--sentinel",
          p.dir + "/pt-heartbeat-sentinel",
          "-S",
          p.Primary(),
          "-u",
          kPtUser,
          "-p",
          kPtPassword};
}

std::vector<std::string> PtMonitorArgs(const Paths& p, int replica) {
  return {"pt-heartbeat",
          "--no-version-check",
          "--monitor",
          "--interval",
          "0.5",
          "--skew",
          "0",
          "--master-server-id",
          "1",
          "--database",
          "lwtest",
          "--table",
          "pt_heartbeat",
          "--sentinel",
          p.dir + "/pt-heartbeat-sentinel",
          "-S",
          p.Replica(replica),
          "-u",
          "root"};
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

bool PtRowExists(const Paths& p) {
  Sql sql(p.Primary());
  auto r = sql.Query("SELECT COUNT(*) FROM lwtest.pt_heartbeat");
  return r && r->First().value_or("0") != "0";
}

// A lagwatch agent under test: the usual one (the sandbox's config), the binlog one, or the
// agent-kill scenario's second one.
struct Agent {
  std::string name;  // the system's name in the results
  std::string config;
  std::string key_prefix;
  std::string log;
  int id = 1;  // its agent_id, which its Redis records carry as `agent`
  std::unique_ptr<Child> child;
  std::string config_key = "lagwatch_config";  // where the results keep its config
  std::vector<std::string> Args(const std::string& bin) const { return {bin, "--config", config}; }
};

// True once both replicas' keys under the agent's prefix hold a record of its own measured at or
// after `since_us` (another agent may write the same keys).
bool LagwatchPublishing(const Paths& p, const Agent& agent, int64_t since_us) {
  Redis redis(p.redis);
  auto r = redis.HGetAll({p.RedisKey(0, agent.key_prefix), p.RedisKey(1, agent.key_prefix)});
  if (!r) return false;
  for (const auto& h : *r) {
    auto at = h.find("measured_at_ms");
    auto by = h.find("agent");
    if (at == h.end() || std::strtoll(at->second.c_str(), nullptr, 10) < since_us / 1000 ||
        by == h.end() || by->second != std::to_string(agent.id)) {
      return false;
    }
  }
  return true;
}

// The last non-empty line of a log, for an error message.
std::string LastLine(const std::string& text) {
  std::string t = Trim(text);
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Starts `agent` and waits until it publishes both replicas; throws, naming the agent, if it
// exits first or does not publish within 30 s. `how` is for the progress line.
void StartAgent(const Paths& p, const std::string& bin, Agent& agent, const std::string& how) {
  Progress("starting " + agent.name + " " + how);
  const int64_t since = NowUs();
  agent.child = Child::Spawn(agent.Args(bin), agent.log);
  const bool published =
      WaitUntil([&] { return LagwatchPublishing(p, agent, since) || !agent.child->Running(); },
                milliseconds(30'000));
  if (!agent.child->Running()) {
    const int code = agent.child->Stop();
    throw std::runtime_error(agent.name + " did not publish both replicas: it exited with code " +
                             std::to_string(code) +
                             " at startup; its log ends with: " + LastLine(ReadFile(agent.log)) +
                             " (config " + agent.config + ", log " + agent.log + ")");
  }
  if (!published) {
    throw std::runtime_error(agent.name + " did not publish both replicas (" + agent.key_prefix +
                             ":127.0.0.1:<port>) within 30 s; see " + agent.log);
  }
}

// The note of an agent's heartbeat-cost row, from its config: the usual agent's has no
// `positions` (auto: MariaDB GTID on the sandbox), the binlog one's says which and its agent id.
std::string CostNote(const json& c) {
  const auto hb = c.value(json::json_pointer("/heartbeat/interval_ms"), 500);
  const auto sampler = c.value(json::json_pointer("/sampler/interval_ms"), 50);
  const bool stream = c.value(json::json_pointer("/binlog_stream/enabled"), true);
  const std::string note = "heartbeat " + std::to_string(hb) + " ms, ";
  const std::string tail = stream ? ", binary log stream" : ", no binary log stream";
  if (!c.contains("positions")) {
    return note + "GTID sampler " + std::to_string(sampler) + " ms" + tail;
  }
  return note + "positions " + c.value("positions", std::string("?")) + " sampler " +
         std::to_string(sampler) + " ms" + tail + " (agent_id " +
         std::to_string(c.value("agent_id", 0)) + ")";
}

// Starts `agent` alone, lets it settle, and measures its heartbeat cost on the primary.
json MeasureAgentCost(const Paths& p, const std::string& bin, Agent& agent, const json& config,
                      int secs) {
  StartAgent(p, bin, agent, "alone");
  Pause(milliseconds(1500));
  return MeasureCost(p, agent.name, secs, CostNote(config));
}

// A second agent's config, written to `path`: the sandbox's with `changes` merged in (JSON merge
// patch; at least its own agent_id, hence its own heartbeat row in the same table) and its HTTP
// listener on base port + `http_offset`, checked free. `who` names it in an error.
json WriteAgentConfig(const Paths& p, const std::string& path, const std::string& who,
                      int http_offset, const json& changes) {
  json c = json::parse(ReadFile(p.Config()), nullptr, true, true);
  const int http = p.base_port + http_offset;
  if (!PortFree(http)) {
    throw std::runtime_error("port " + std::to_string(http) + " (the http listener of " + who +
                             ") on 127.0.0.1 is in use");
  }
  c.merge_patch(changes);
  c["http"]["listen"] = "127.0.0.1:" + std::to_string(http);
  // An agent with a key prefix of its own logs in to Redis as the sandbox's admin: the agent's
  // ACL user may write the default prefix's keys and channel only.
  if (c["redis"].value("key_prefix", std::string(kKeyPrefix)) != kKeyPrefix) {
    c["redis"].erase("username");
    c["redis"]["password_file"] = p.redis.password_file;
  }
  std::ofstream out(path, std::ios::trunc);
  out << c.dump(2) << "\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

struct Scenario {
  std::string name;
  std::string description;
  std::string affected{};  // "replica1", "primary", or "" if none
  int64_t from_us = 0;
  int64_t to_us = 0;
  json events = json::array();
  json notes = json::array();
  // Its table's columns (report.cc): "lag" (error, detection, recovery, exclusions),
  // "primary-freeze" (error, exclusions, lagwatch's states) or "agent-kill" (lagwatch's keys).
  std::string table = "lag";
  std::vector<Hang> hangs{};  // the affected server's, when it was SIGSTOPped
  // The moves of the primary (switchover, failover), in order.
  struct Move {
    std::string kind;         // "switchover" or "failover"
    int from = 0, to = 0;     // server indexes (kServers)
    int64_t begin_us = 0;     // the old primary made read-only, or killed
    int64_t writable_us = 0;  // the new primary's SET GLOBAL read_only=0 returned
    // Each server that replicates from the new primary: when its START SLAVE returned.
    std::vector<std::pair<int, int64_t>> repointed;
    std::string lag;  // what held replica2 back after the move, if anything
    int64_t hb_written_us = 0, hb_seen_us = 0, pointer_us = 0;  // MoveWatcher's; 0: not seen
    int64_t end_us = 0;  // the next move's begin, or the scenario's end
  };
  std::vector<Move> moves{};
  // Per agent that follows the stream: its D over the scenario while the stream was usable
  // (StreamStatePoller), as percentiles, and the share of readings it was not.
  json delivery_bound_ms = json::object();
  void End() {
    to_us = NowUs();
    if (!moves.empty() && !moves.back().end_us) moves.back().end_us = to_us;
    notes.push_back("host load average at the end (1/5/15 min): " + LoadAverage());
  }
  void Event(const std::string& what) {
    events.push_back({{"t_s", static_cast<double>(NowUs() - from_us) / 1e6}, {"what", what}});
  }
};

// How a scenario disturbs in each of its cycles: Begin() starts the disturbance, the hold passes,
// End() ends it, then the gap. Each records what it did as events of the scenario. Destroying one
// between Begin() and End() (an interrupt, an error) undoes what needs undoing.
class Disturbance {
 public:
  virtual ~Disturbance() = default;
  virtual void Begin(Scenario& s) = 0;
  virtual void End(Scenario& s) = 0;
};

// Statements on replica1's admin connection: `begin`, then `end`; `held` (if set) is an event once
// `begin` has returned. `undo` runs should the scenario be left between them (e.g. restarts the
// SQL thread after an interrupted stall); if not set, closing the connection is enough (it
// releases a read lock).
class SqlDisturbance : public Disturbance {
 public:
  SqlDisturbance(const Paths& p, std::string begin, std::string held, std::string end,
                 std::string undo)
      : admin_(p.Replica(0)),
        begin_(std::move(begin)),
        held_(std::move(held)),
        end_(std::move(end)),
        undo_(std::move(undo)) {}
  ~SqlDisturbance() override {
    if (begun_ && !undo_.empty()) admin_.Exec(undo_);
  }
  void Begin(Scenario& s) override {
    s.Event(begin_);
    Run(begin_);
    begun_ = true;
    if (!held_.empty()) s.Event(held_);
  }
  void End(Scenario& s) override {
    s.Event(end_);
    Run(end_);
    begun_ = false;
  }

 private:
  void Run(const std::string& stmt) {
    if (!admin_.Exec(stmt)) throw std::runtime_error(admin_.error());
  }
  Sql admin_;
  std::string begin_, held_, end_, undo_;
  bool begun_ = false;
};

// kill -STOP of a sandbox server's mariadbd (Frozen: every thread seen stopped), then kill -CONT;
// each hang, from the moment it was seen stopped to just before SIGCONT, goes to the scenario's
// `hangs` (the oracle's truth through a hang: bench/analysis.h). SIGCONT on every way out.
class FreezeDisturbance : public Disturbance {
 public:
  FreezeDisturbance(const Paths& p, std::string server)
      : server_(std::move(server)), pid_(SandboxServerPid(p.dir, server_)) {}
  void Begin(Scenario& s) override {
    s.Event("kill -STOP " + server_ + " (pid " + std::to_string(pid_) + ")");
    frozen_.emplace(pid_);
    s.Event(server_ + ": every thread stopped");
  }
  void End(Scenario& s) override {
    const Hang hang{frozen_->stopped_us(), NowUs()};
    s.Event("kill -CONT " + server_);
    frozen_.reset();
    s.hangs.push_back(hang);
  }

 private:
  std::string server_;
  pid_t pid_;
  std::optional<Frozen> frozen_;
};

// kill -9 of a lagwatch agent, then its restart once the hold is over (StartAgent: until it
// publishes both replicas again); the agents take turns, one a cycle.
class AgentKill : public Disturbance {
 public:
  AgentKill(const Paths& p, std::string bin, std::vector<Agent*> agents)
      : p_(p), bin_(std::move(bin)), agents_(std::move(agents)) {}
  void Begin(Scenario& s) override {
    Agent& a = *agents_[next_];
    s.Event("kill -9 " + a.name + " (pid " + std::to_string(a.child->pid()) + ")");
    a.child->Kill();
  }
  void End(Scenario& s) override {
    Agent& a = *agents_[next_];
    s.Event("restarting " + a.name);
    StartAgent(p_, bin_, a, "again");
    s.Event(a.name + " publishing again");
    next_ = (next_ + 1) % agents_.size();
  }

 private:
  const Paths& p_;
  std::string bin_;
  std::vector<Agent*> agents_;
  size_t next_ = 0;
};

Scenario RunSteady(const Plan& plan) {
  Scenario s{"steady", "oracle writes every 5 ms and the systems' own heartbeats; nothing else", "",
             NowUs()};
  Progress("scenario steady: " + std::to_string(plan.steady_s) + " s");
  Pause(seconds(plan.steady_s));
  s.End();
  return s;
}

// Scenario `s` (named, described up to how often, its affected server set): disturbed by `d` as
// `c` says; with replica1 disturbed, replica2 is the control.
Scenario RunDisturbance(Scenario s, Disturbance& d, const Cycles& c) {
  s.description += ", " + std::to_string(c.count) + " times, " + Secs(c.hold_s + c.gap_s) +
                   " s apart" + (s.affected == "replica1" ? "; replica2 untouched (control)" : "");
  s.from_us = NowUs();
  Progress("scenario " + s.name + ": " + std::to_string(c.count) + " cycles");
  Pause(seconds(1));
  for (int i = 0; i < c.count; ++i) {
    d.Begin(s);
    Pause(Ms(c.hold_s));
    d.End(s);
    Pause(Ms(c.gap_s));
  }
  s.End();
  return s;
}

Scenario RunStall(const Paths& p, const Plan& plan) {
  const std::string what =
      "STOP SLAVE SQL_THREAD on replica1 for " + Secs(plan.stall.hold_s) + " s, then START";
  SqlDisturbance d(p, "STOP SLAVE SQL_THREAD", "", "START SLAVE SQL_THREAD",
                   "START SLAVE SQL_THREAD");
  return RunDisturbance({"stall", what, "replica1"}, d, plan.stall);
}

Scenario RunFtwrl(const Paths& p, const Plan& plan) {
  const std::string what =
      "FLUSH TABLES WITH READ LOCK held " + Secs(plan.ftwrl.hold_s) + " s on replica1";
  SqlDisturbance d(p, "FLUSH TABLES WITH READ LOCK", "lock held", "UNLOCK TABLES", "");
  return RunDisturbance({"ftwrl", what, "replica1"}, d, plan.ftwrl);
}

Scenario RunPrimaryFreeze(const Paths& p, const Plan& plan) {
  const std::string what = "kill -STOP the primary's mariadbd for " +
                           Secs(plan.primary_freeze.hold_s) +
                           " s, then kill -CONT (nothing commits meanwhile: both replicas have "
                           "everything, true staleness stays 0)";
  FreezeDisturbance d(p, "primary");
  Scenario s{"primary-freeze", what, "primary"};
  s.table = "primary-freeze";
  return RunDisturbance(std::move(s), d, plan.primary_freeze);
}

Scenario RunHungReplica(const Paths& p, const Plan& plan) {
  const std::string what = "kill -STOP replica1's mariadbd for " + Secs(plan.hung_replica.hold_s) +
                           " s, then kill -CONT";
  FreezeDisturbance d(p, "replica1");
  return RunDisturbance({"hung-replica", what, "replica1"}, d, plan.hung_replica);
}

// Two agents active-active: `agent` and a second one from the sandbox's config with agent_id 3 and
// its own HTTP port, both writing the same Redis keys; each killed (kill -9) and restarted in
// turn. The second agent runs only for this scenario; its config and log go to `logs`.
Scenario RunAgentKill(const Paths& p, const Plan& plan, const std::string& bin, Agent& agent,
                      const std::string& logs) {
  Agent second{kSecondAgent,     logs + "/lagwatch-agent3.json",
               agent.key_prefix, logs + "/lagwatch-agent3.log",
               kSecondAgentId,   nullptr};
  const json config = WriteAgentConfig(p, second.config, second.name, kSecondAgentHttpOffset,
                                       {{"agent_id", second.id}});
  StartAgent(p, bin, second, "next to " + agent.name + ", writing the same keys");
  Pause(seconds(2));
  const std::string what =
      "two agents write the same keys (" + agent.name + ", agent_id " + std::to_string(agent.id) +
      ", and a second one, agent_id " + std::to_string(second.id) + ", HTTP " +
      config["http"]["listen"].get<std::string>() + "); kill -9 of one, restarted " +
      Secs(plan.agent_kill.hold_s) + " s later, the two in turn";
  AgentKill d(p, bin, {&agent, &second});
  Scenario s{"agent-kill", what, ""};
  s.table = "agent-kill";
  s = RunDisturbance(std::move(s), d, plan.agent_kill);
  const int code = second.child->Stop();
  const std::string log = ReadFile(second.log);
  s.notes.push_back(second.name + " (config " + second.config +
                    "): stopped after the scenario, exit code " + std::to_string(code) +
                    "; its log has " + std::to_string(CountSubstr(log, " WARN ")) + " WARN and " +
                    std::to_string(CountSubstr(log, " ERROR ")) + " ERROR lines");
  s.notes.push_back(agent.name +
                    " was restarted in this scenario: its process usage below is "
                    "since its last restart");
  return s;
}

// ---------------------------------------------------------------------------------------------
// Moves of the primary

// What follows the primary besides lagwatch: the oracle's writer and the naive heartbeat's
// writer (both root, which read_only does not stop: they are moved off a primary before it is
// made read-only). pt-heartbeat --update stays where it was started, as configured.
struct Followers {
  OracleWriter* oracle;
  std::function<void(const std::string&)> naive;  // moves the naive writer ("" : nowhere)
  void MoveTo(const std::string& socket) {
    oracle->MoveTo(socket);
    naive(socket);
  }
};

// Statements that move the primary, on the sandbox's servers as root, each recorded as an event.
class Switcher {
 public:
  Switcher(const Paths& p, Followers f, int agent_id) : p_(p), f_(std::move(f)), agent_(agent_id) {
    for (int i = 0; i < kServerCount; ++i) {
      server_ids_[static_cast<size_t>(i)] =
          std::stoll(AdminQuery(p.Server(i), "SELECT @@server_id").First().value_or("0"));
    }
  }

  // The replication account on every server, not binlogged (each creates its own).
  void CreateSwitchUser() {
    for (int i = 0; i < kServerCount; ++i) {
      Sql sql(p_.Server(i));
      for (const std::string& stmt :
           {std::string("SET SESSION sql_log_bin=0"),
            "CREATE USER IF NOT EXISTS '" + std::string(kSwitchUser) +
                "'@'127.0.0.1' IDENTIFIED BY '" + kSwitchPassword + "'",
            "GRANT REPLICATION SLAVE ON *.* TO '" + std::string(kSwitchUser) + "'@'127.0.0.1'",
            std::string("SET SESSION sql_log_bin=1")}) {
        Run(sql, kServers[i], stmt);
      }
    }
  }

  // A planned switchover from `from` to `to` (the third server follows `to` by slave_pos, `from`
  // by current_pos), recorded in `s` as a move; starts its MoveWatcher (stopped by Finish).
  Scenario::Move& Switchover(Scenario& s, int from, int to) {
    Scenario::Move& m = BeginMove(s, "switchover", from, to);
    f_.MoveTo("");  // nothing of the bench's in flight to `from` from here on
    Sql old_primary(p_.Server(from));
    m.begin_us = NowUs();
    Run(old_primary, kServers[from], "SET GLOBAL read_only=1");
    const std::string pos = Value(old_primary, kServers[from], "SELECT @@gtid_binlog_pos");
    s.Event(std::string(kServers[from]) + ": SET GLOBAL read_only=1; gtid_binlog_pos " + pos);
    Sql new_primary(p_.Server(to));
    const std::string waited =
        Value(new_primary, kServers[to], "SELECT MASTER_GTID_WAIT('" + pos + "', 5)");
    if (waited != "0") {
      throw std::runtime_error(std::string(kServers[to]) + " did not reach " + pos +
                               " within 5 s of " + kServers[from] + " going read-only");
    }
    Promote(s, m, new_primary);
    Repoint(s, m, 3 - from - to, "slave_pos");
    Repoint(s, m, from, "current_pos");
    return m;
  }

  // kill -9 of the primary `from`, then `to` promoted once it has applied what it received (1 s
  // after the kill at the earliest) and the third server re-pointed to it; `from` stays down.
  // Returns `to`'s gtid_binlog_pos when it was promoted.
  std::string Failover(Scenario& s, int from, int to) {
    Scenario::Move& m = BeginMove(s, "failover", from, to);
    const pid_t pid = SandboxServerPid(p_.dir, kServers[from]);
    m.begin_us = NowUs();
    if (kill(pid, SIGKILL) != 0) throw std::runtime_error("cannot kill -9 " + std::to_string(pid));
    s.Event(std::string("kill -9 ") + kServers[from] + " (pid " + std::to_string(pid) + ")");
    // Gone, or a zombie not yet reaped by its parent.
    auto gone = [pid] {
      const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
      const size_t paren = stat.rfind(')');
      return paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0;
    };
    if (!WaitUntil(gone, milliseconds(5000))) {
      throw std::runtime_error(std::string(kServers[from]) + " still alive 5 s after kill -9");
    }
    f_.MoveTo("");
    Pause(seconds(1));
    Sql new_primary(p_.Server(to));
    // Everything it received applied: its IO thread's position is its SQL thread's.
    const bool drained = WaitUntil(
        [&] {
          auto st = new_primary.Query("SHOW SLAVE STATUS");
          auto sp = new_primary.Query("SELECT @@gtid_slave_pos");
          return st && sp && st->Get("Gtid_IO_Pos") == sp->First();
        },
        milliseconds(5000));
    s.Event(std::string(kServers[to]) +
            (drained ? ": relay log applied" : ": relay log NOT applied within 5 s"));
    const std::string pos = Value(new_primary, kServers[to], "SELECT @@gtid_binlog_pos");
    Promote(s, m, new_primary);
    Repoint(s, m, 3 - from - to, "slave_pos");
    return pos;
  }

  // Brings the killed `server` back (scripts/sandbox up: it comes back writable), makes it
  // read-only at once, and has it replicate from `primary`, whose history from `promoted_pos` on
  // it may contradict (transactions it committed and died with): gtid_strict_mode off and
  // gtid_slave_pos set to `promoted_pos`, as an operator would. Waits until it has caught up.
  void Rejoin(Scenario& s, int server, int primary, const std::string& promoted_pos) {
    s.Event(std::string("scripts/sandbox up: restarting ") + kServers[server]);
    const CommandResult up = RunCommand(
        {"scripts/sandbox", "up", "--dir", p_.dir, "--base-port", std::to_string(p_.base_port)});
    if (up.exit_code != 0) {
      throw std::runtime_error("scripts/sandbox up failed (exit " + std::to_string(up.exit_code) +
                               "): " + LastLineOf(up.output));
    }
    Sql sql(p_.Server(server));
    Run(sql, kServers[server], "SET GLOBAL read_only=1");
    Run(sql, kServers[server], kRunTriggers);
    const std::string own = Value(sql, kServers[server], "SELECT @@gtid_binlog_pos");
    s.Event(std::string(kServers[server]) +
            " up again; SET GLOBAL read_only=1; its gtid_binlog_pos " + own + ", " +
            kServers[primary] + "'s at promotion " + promoted_pos);
    Run(sql, kServers[server], "SET GLOBAL gtid_strict_mode=0");
    Run(sql, kServers[server], "SET GLOBAL gtid_slave_pos='" + promoted_pos + "'");
    Scenario::Move& m = s.moves.back();
    Repoint(s, m, server, "slave_pos", primary);
    WaitCaughtUp(s, server, primary, 20);
  }

  // Waits until `server` has applied all `primary` has binlogged; throws with its replication
  // errors if not within `timeout_s`.
  void WaitCaughtUp(Scenario& s, int server, int primary, int timeout_s) {
    const std::string pos =
        AdminQuery(p_.Server(primary), "SELECT @@gtid_binlog_pos").First().value_or("");
    Sql sql(p_.Server(server));
    const std::string r =
        Value(sql, kServers[server],
              "SELECT MASTER_GTID_WAIT('" + pos + "', " + std::to_string(timeout_s) + ")");
    auto st = sql.Query("SHOW SLAVE STATUS");
    const std::string io = st ? st->Get("Slave_IO_Running").value_or("?") : "?";
    const std::string sq = st ? st->Get("Slave_SQL_Running").value_or("?") : "?";
    if (r != "0" || sq != "Yes" || io != "Yes") {
      throw std::runtime_error(
          std::string(kServers[server]) + " did not catch up with " + kServers[primary] + " (" +
          pos + ") within " + std::to_string(timeout_s) + " s: Slave_IO_Running " + io +
          ", Slave_SQL_Running " + sq + ", Last_IO_Error " +
          (st ? st->Get("Last_IO_Error").value_or("") : "") + ", Last_SQL_Error " +
          (st ? st->Get("Last_SQL_Error").value_or("") : ""));
    }
    s.Event(std::string(kServers[server]) + " caught up with " + kServers[primary] +
            " (Slave_IO_Running and Slave_SQL_Running Yes)");
  }

  // Stops the watcher of the last move and records what it saw.
  void Finish(Scenario& s) {
    if (!watcher_) return;
    watcher_->Stop();
    Scenario::Move& m = s.moves.back();
    m.hb_written_us = watcher_->heartbeat_written_us();
    m.hb_seen_us = watcher_->heartbeat_seen_us();
    m.pointer_us = watcher_->pointer_seen_us();
    watcher_.reset();
  }

  void Exec(Scenario& s, int server, const std::string& stmt) {
    Sql sql(p_.Server(server));
    Run(sql, kServers[server], stmt);
    s.Event(std::string(kServers[server]) + ": " + stmt);
  }

 private:
  static void Run(Sql& sql, const std::string& who, const std::string& stmt) {
    if (!sql.Exec(stmt)) throw std::runtime_error(who + ": " + sql.error());
  }
  static std::string Value(Sql& sql, const std::string& who, const std::string& query) {
    auto r = sql.Query(query);
    if (!r) throw std::runtime_error(who + ": " + sql.error());
    return r->First().value_or("");
  }
  static std::string LastLineOf(const std::string& text) {
    std::string t = Trim(text);
    const size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
  }

  Scenario::Move& BeginMove(Scenario& s, const std::string& kind, int from, int to) {
    Finish(s);
    if (!s.moves.empty()) s.moves.back().end_us = NowUs();
    s.moves.push_back({});
    Scenario::Move& m = s.moves.back();
    m.kind = kind;
    m.from = from;
    m.to = to;
    s.Event(kind + ": " + kServers[from] + " -> " + kServers[to]);
    return m;
  }

  // `to` stops replicating and is made writable; the bench's writers follow it.
  void Promote(Scenario& s, Scenario::Move& m, Sql& sql) {
    const std::string who = kServers[m.to];
    Run(sql, who, "STOP SLAVE");
    Run(sql, who, "RESET SLAVE ALL");
    Run(sql, who, "SET GLOBAL read_only=0");
    m.writable_us = NowUs();
    ApplyTimes(sql, who, false);  // before the oracle's writer comes
    watcher_ = std::make_unique<MoveWatcher>(
        p_.Server(m.to), server_ids_[static_cast<size_t>(m.to)], agent_, p_.redis,
        std::string(kKeyPrefix) + ":primary", p_.ServerId(m.to));
    watcher_->Start();
    f_.MoveTo(p_.Server(m.to));
    s.Event(who + ": STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0 (writable)");
  }

  // `server` replicates from the move's new primary (or `primary`, if given) from now on.
  void Repoint(Scenario& s, Scenario::Move& m, int server, const std::string& use_gtid,
               int primary = -1) {
    if (primary < 0) primary = m.to;
    Sql sql(p_.Server(server));
    const std::string who = kServers[server];
    Run(sql, who, "STOP SLAVE");
    ApplyTimes(sql, who, true);
    Run(sql, who,
        "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" +
            std::to_string(p_.ServerPort(primary)) + ", MASTER_USER='" + kSwitchUser +
            "', MASTER_PASSWORD='" + kSwitchPassword + "', MASTER_USE_GTID=" + use_gtid +
            ", MASTER_CONNECT_RETRY=1" + ReplicationTls());
    Run(sql, who, "START SLAVE");
    m.repointed.emplace_back(server, NowUs());
    s.Event(who + ": replicating from " + kServers[primary] + " (MASTER_USE_GTID=" + use_gtid +
            ")");
  }

  // Under --tls the sandbox's replication options (scripts/sandbox): TLS, the server verified
  // against the sandbox's CA (RESET SLAVE ALL forgot them).
  std::string ReplicationTls() const {
    if (!p_.tls.enabled) return "";
    return ", MASTER_SSL=1, MASTER_SSL_CA='" + p_.tls.ca_file +
           "', MASTER_SSL_VERIFY_SERVER_CERT=1";
  }

  const Paths& p_;
  Followers f_;
  int agent_;
  std::array<int64_t, kServerCount> server_ids_{};
  std::unique_ptr<MoveWatcher> watcher_;
};

// One cycle of a move scenario: Begin() moves the primary to replica1 (a switchover, or the
// primary killed: a failover) and holds replica2 back with FLUSH TABLES WITH READ LOCK on a
// connection of its own; End() releases it, lets the topology settle, (failover: brings the old
// primary back as a replica of replica1), and switches back to the sandbox's own topology. The
// read lock is released on every way out.
class MoveDisturbance : public Disturbance {
 public:
  MoveDisturbance(const Paths& p, Switcher& sw, bool failover, double settle_s)
      : p_(p), sw_(sw), failover_(failover), settle_s_(settle_s) {}
  void Begin(Scenario& s) override {
    if (failover_) {
      promoted_pos_ = sw_.Failover(s, 0, 1);
    } else {
      sw_.Switchover(s, 0, 1);
    }
    lock_ = std::make_unique<Sql>(p_.Server(2));
    if (!lock_->Exec("FLUSH TABLES WITH READ LOCK")) throw std::runtime_error(lock_->error());
    s.Event("replica2: FLUSH TABLES WITH READ LOCK (held)");
    s.moves.back().lag = "FLUSH TABLES WITH READ LOCK on replica2 right after the move";
  }
  void End(Scenario& s) override {
    if (!lock_->Exec("UNLOCK TABLES")) throw std::runtime_error(lock_->error());
    lock_.reset();
    s.Event("replica2: UNLOCK TABLES");
    sw_.WaitCaughtUp(s, 2, 1, 20);
    Pause(Ms(settle_s_));
    if (failover_) {
      sw_.Rejoin(s, 0, 1, promoted_pos_);
      Pause(Ms(settle_s_));
    }
    sw_.Switchover(s, 1, 0);
    if (failover_) sw_.Exec(s, 0, "SET GLOBAL gtid_strict_mode=1");
  }

 private:
  const Paths& p_;
  Switcher& sw_;
  bool failover_;
  double settle_s_;
  std::string promoted_pos_;
  std::unique_ptr<Sql> lock_;  // replica2's read lock, while held
};

Scenario RunMoves(const Paths& p, const Cycles& c, Switcher& sw, bool failover) {
  const std::string what =
      failover
          ? "kill -9 the primary; 1 s later replica1 promoted (once its relay log is applied) and "
            "replica2 re-pointed to it; FLUSH TABLES WITH READ LOCK on replica2 for " +
                Secs(c.hold_s) +
                " s; then the old primary restarted (writable: read_only=1 at once), rejoined as "
                "a replica of replica1 (gtid_strict_mode=0, gtid_slave_pos at the promotion) and "
                "switched back to by a planned switchover; " +
                Secs(c.gap_s) + " s to settle after each move"
          : "planned switchover primary -> replica1 (read_only=1, MASTER_GTID_WAIT, promote, "
            "re-point replica2 and the old primary); FLUSH TABLES WITH READ LOCK on replica2 "
            "for " +
                Secs(c.hold_s) + " s; then the switch back; " + Secs(c.gap_s) +
                " s to settle after each move";
  sw.CreateSwitchUser();
  MoveDisturbance d(p, sw, failover, c.gap_s);
  Scenario s{failover ? "failover" : "switchover", what, "primary"};
  s.table = "move";
  s = RunDisturbance(std::move(s), d, c);
  sw.Finish(s);
  return s;
}

int WaitChild(Child& c, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto code = c.Wait(milliseconds(100))) return *code;
    if (Interrupted()) throw InterruptedError();
    if (std::chrono::steady_clock::now() >= until) {
      throw std::runtime_error(c.name() + " did not finish in time");
    }
  }
}

std::vector<std::string> SysbenchArgs(const Paths& p, const std::string& command) {
  return {"sysbench",
          "oltp_write_only",
          "--db-driver=mysql",
          "--mysql-socket=" + p.Primary(),
          "--mysql-user=root",
          "--mysql-db=lwtest",
          "--tables=2",
          "--table-size=10000",
          command};
}

Scenario RunSysbench(const Paths& p, const Plan& plan, int rate, const std::string& log_path) {
  Progress("scenario sysbench: prepare");
  auto prep = Child::Spawn(SysbenchArgs(p, "prepare"), log_path);
  if (int rc = WaitChild(*prep, milliseconds(300'000)); rc != 0) {
    throw std::runtime_error("sysbench prepare failed (exit " + std::to_string(rc) + "); see " +
                             log_path);
  }
  WaitReplicasCaughtUp(p, 120);
  Pause(seconds(3));

  std::vector<std::string> args = SysbenchArgs(p, "run");
  args.insert(args.end() - 1, {"--threads=2", "--time=" + std::to_string(plan.sysbench_s),
                               "--rate=" + std::to_string(rate), "--report-interval=10"});
  Scenario s{"sysbench",
             "sysbench oltp_write_only on the primary, 2 threads, --rate=" + std::to_string(rate) +
                 " tps, 2 tables x 10000 rows",
             "", NowUs()};
  Progress("scenario sysbench: " + std::to_string(plan.sysbench_s) +
           " s at --rate=" + std::to_string(rate));
  s.Event(Join(args));
  const size_t log_before = ReadFile(log_path).size();
  Sql primary(p.Primary());
  const CostReading before = ReadCost(p, primary);
  auto run = Child::Spawn(args, log_path);
  const int rc = WaitChild(*run, milliseconds((plan.sysbench_s + 120) * 1000));
  const CostReading after = ReadCost(p, primary);
  s.End();
  // What the primary paid under load with everything running (every agent, every system): its
  // binary log is what each binary log stream (and each replica) carries.
  const double dt = static_cast<double>(after.t_us - before.t_us) / 1e6;
  s.notes.push_back(
      "primary under sysbench, everything running: CPU " +
      Num(100.0 * (after.cpu_s - before.cpu_s) / dt, 1) + " % of a core, binary log written " +
      Num(static_cast<double>(after.binlog_bytes - before.binlog_bytes) / dt / 1024.0, 1) +
      " KiB/s (each binary log stream carries this), sent to all clients " +
      Num(static_cast<double>(after.bytes_sent - before.bytes_sent) / dt / 1024.0, 1) + " KiB/s");
  s.Event("sysbench exited " + std::to_string(rc));
  if (rc != 0) s.notes.push_back("sysbench exited with code " + std::to_string(rc));
  // "    transactions:                        8864   (590.79 per sec.)"
  std::string out = ReadFile(log_path).substr(log_before);
  if (auto at = out.find("transactions:"); at != std::string::npos) {
    auto open = out.find('(', at);
    if (open != std::string::npos) {
      s.notes.push_back("sysbench achieved " +
                        Trim(out.substr(open + 1, out.find(')', open) - open - 1)));
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Turning recordings into reports and results

struct Recordings {
  const OracleWriter* writer;
  std::array<const OracleReader*, kReplicas> readers;
  const PtHeartbeatReader* pt;
  std::array<const ValuePoller*, kReplicas> sbm;
  std::array<const ValuePoller*, kReplicas> naive;
};

struct System {
  std::string name;
  std::array<std::vector<Report>, kReplicas> reports;
  // A lagwatch agent's Redis records per replica (its key states and bound checks); null for
  // the other systems.
  std::array<const std::vector<LagwatchRecord>*, kReplicas> lagwatch{};
  // A lagwatch agent's key for the original primary (there while it is a replica).
  std::vector<Report> primary_reports{};
  const std::vector<LagwatchRecord>* primary_records = nullptr;
};

std::vector<Report> LagwatchReports(const std::vector<LagwatchRecord>& records) {
  std::vector<Report> out;
  for (const auto& r : records) {
    Report rep;
    rep.seen_us = r.seen_us;
    if (r.missing) {  // no fresh record: routers must treat the replica as unusable
      rep.measured_us = r.seen_us;
      rep.over200 = rep.over1000 = true;
    } else {
      rep.measured_us = r.measured_us;  // the moment the bound holds at, exactly
      rep.value_ms = r.value_ms;
      rep.lower_ms = r.delay_lower_ms;
      rep.over200 = !r.healthy;
      rep.over1000 = r.delay_ms > 1000.0;
    }
    out.push_back(rep);
  }
  return out;
}

// Tools and polled queries: over a threshold when the value exceeds it or is unknown.
std::vector<Report> ToolReports(const std::vector<ToolReading>& readings) {
  std::vector<Report> out;
  for (const auto& r : readings) {
    Report rep;
    rep.measured_us = r.sent_us;
    rep.seen_us = r.recv_us;
    rep.value_ms = r.value_ms;
    rep.over200 = !r.value_ms || *r.value_ms > 200.0;
    rep.over1000 = !r.value_ms || *r.value_ms > 1000.0;
    out.push_back(rep);
  }
  return out;
}

json DetectionJson(const EpisodeMeasures& m) {
  return {{"episodes", m.episodes},
          {"detected", m.detect_ms.size()},
          {"already_over", m.already_over},
          {"missed", m.missed},
          {"latency_ms", PercentilesJson(Summarize(m.detect_ms))},
          {"recovery_ms", PercentilesJson(Summarize(m.recover_ms))},
          {"not_recovered_before_next_episode", m.not_recovered}};
}

json KeyJson(const KeyStats& k) {
  return {{"records", k.records},
          {"missing", k.missing},
          {"missing_ms", k.missing_ms},
          {"max_age_ms", k.max_age_ms},
          {"max_measured_at_stall_ms", k.max_stall_ms},
          {"measured_at_backwards", k.backwards},
          {"healthy_flips", k.flips},
          {"healthy_flips_far_from_limit", k.flips_while_far}};
}

// Evidence for the report: lagwatch records of a move scenario (up to 8) whose delay_ms is more
// than 10 ms under the truth, whose delay_lower_ms is more than 10 ms over the oracle's upper
// bound, that say healthy=1 while truth is over the limit, or healthy=1 beside delay_ms over
// max_delay_ms; times in s from the scenario's start.
json SuspectRecords(const Scenario& s, const std::vector<LagwatchRecord>& records, const Truth& t) {
  json out = json::array();
  for (const auto& r : records) {
    if (r.missing || r.seen_us < s.from_us || r.seen_us >= s.to_us) continue;
    const int64_t at = r.measured_us;
    const auto lo = t.At(at);
    const auto up = t.Upper(at);
    std::string why;
    if (lo && r.value_ms < static_cast<double>(*lo) / 1000.0 - 10.0)
      why += "delay_ms under truth; ";
    if (up && r.delay_lower_ms > static_cast<double>(*up) / 1000.0 + 10.0) {
      why += "delay_lower_ms over the upper bound; ";
    }
    if (r.healthy && lo && *lo > kTierLimitUs) why += "healthy=1 while truth over the limit; ";
    if (r.healthy && r.max_delay_ms >= 0 && r.delay_ms > r.max_delay_ms) {
      why += "healthy=1 beside delay_ms over max_delay_ms; ";
    }
    if (why.empty()) continue;
    out.push_back(
        {{"why", why},
         {"measured_s", static_cast<double>(at - s.from_us) / 1e6},
         {"seen_s", static_cast<double>(r.seen_us - s.from_us) / 1e6},
         {"delay_ms", r.delay_ms},
         {"delay_lower_ms", r.delay_lower_ms},
         {"max_delay_ms", r.max_delay_ms},
         {"healthy", r.healthy},
         {"state", r.state},
         {"truth_ms", lo ? json(static_cast<double>(*lo) / 1000.0) : json(nullptr)},
         {"truth_upper_ms", up ? json(static_cast<double>(*up) / 1000.0) : json(nullptr)}});
    if (out.size() >= 8) break;
  }
  return out;
}

// Evidence for the report: the lagwatch records of scenario `s` furthest over the truth (up to
// 8, largest first, those over it by more than 10 ms), with the state, the bounds and the truth;
// times in s from the scenario's start. Where an error p99 comes from.
json LargestOver(const Scenario& s, const std::vector<LagwatchRecord>& records, const Truth& t) {
  std::vector<std::pair<double, const LagwatchRecord*>> over;
  for (const auto& r : records) {
    if (r.missing) continue;
    const int64_t at = r.measured_us;
    if (at < s.from_us || at >= s.to_us) continue;
    const auto lo = t.At(at);
    if (!lo) continue;
    const double err = r.value_ms - static_cast<double>(*lo) / 1000.0;
    if (err > 10.0) over.emplace_back(err, &r);
  }
  std::sort(over.begin(), over.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  json out = json::array();
  for (size_t i = 0; i < over.size() && i < 8; ++i) {
    const LagwatchRecord& r = *over[i].second;
    const int64_t at = r.measured_us;
    const auto up = t.Upper(at);
    out.push_back(
        {{"error_ms", over[i].first},
         {"measured_s", static_cast<double>(at - s.from_us) / 1e6},
         {"delay_ms", r.delay_ms},
         {"bound_ms", r.value_ms},  // delay_us at measured_at_us: what error_ms compares
         {"delay_lower_ms", r.delay_lower_ms},
         {"state", r.state},
         {"truth_ms", static_cast<double>(*t.At(at)) / 1000.0},
         {"truth_upper_ms", up ? json(static_cast<double>(*up) / 1000.0) : json(nullptr)}});
  }
  return out;
}

// One system's measures for one server in scenario `s`: `records` are a lagwatch agent's (null
// for the other systems).
json ServerJson(const Scenario& s, const std::vector<Report>& reports,
                const std::vector<LagwatchRecord>* records, const Truth& t, int64_t data_end_us) {
  ErrorStats es = ComputeErrors(reports, t, s.from_us, s.to_us);
  EpisodeMeasures m200 =
      ComputeEpisodes(reports, t, false, s.from_us, s.to_us, data_end_us, kDetectGraceUs);
  EpisodeMeasures m1000 =
      ComputeEpisodes(reports, t, true, s.from_us, s.to_us, data_end_us, kDetectGraceUs);
  const size_t judged = es.error_ms.n;
  json r = {{"reports", es.reports},
            {"unknown", es.unknown},
            {"no_truth", es.no_truth},
            {"error_ms", PercentilesJson(es.error_ms)},
            {"error_over_upper_ms", PercentilesJson(es.over_upper_ms)},
            {"below_truth_by_10ms", es.below_10ms},
            {"below_truth_by_10ms_share",
             judged ? json(static_cast<double>(es.below_10ms) / judged) : json(nullptr)},
            {"detect_200ms", DetectionJson(m200)},
            {"detect_1000ms", DetectionJson(m1000)},
            {"false_exclusions_200ms", m200.false_exclusions},
            {"false_excluded_s", m200.false_excluded_s},
            {"false_exclusion_peak_truth_ms", m200.false_exclusion_peak_truth_ms},
            {"excluded_while_fine_200ms_share",
             m200.fine_samples ? json(static_cast<double>(m200.fine_but_over_samples) /
                                      static_cast<double>(m200.fine_samples))
                               : json(nullptr)},
            {"excluded_while_fine_200ms_time_share",
             m200.window_samples ? json(static_cast<double>(m200.fine_but_over_samples) /
                                        static_cast<double>(m200.window_samples))
                                 : json(nullptr)}};
  if (s.table == "move") {
    const FalselyFine f = ComputeFalselyFine(reports, t, s.from_us, s.to_us, kTierLimitUs);
    r["falsely_fine_200ms"] = {{"ms", f.ms},
                               {"runs", f.runs},
                               {"longest_ms", f.longest_ms},
                               {"peak_truth_ms", f.peak_truth_ms}};
  }
  if (records) {
    r["lower_bound_above_truth_by_10ms"] = es.lower_above;
    r["lower_bound_checked"] = es.lower_checked;
    json states = json::object();
    size_t missing = 0;
    for (const auto& lr : *records) {
      const int64_t at = lr.missing ? lr.seen_us : lr.measured_at_ms * 1000;
      if (at < s.from_us || at >= s.to_us) continue;
      if (lr.missing) {
        ++missing;
      } else {
        states[lr.state] = states.value(lr.state, 0) + 1;
      }
    }
    r["key_missing"] = missing;
    r["states"] = states;
    r["key"] = KeyJson(ComputeKeyStats(*records, t, s.from_us, s.to_us, kFarFromLimitUs));
    r["healthy_over_limit"] = CountHealthyOverLimit(*records, s.from_us, s.to_us);
    if (s.table == "move") r["suspect_records"] = SuspectRecords(s, *records, t);
    r["largest_over_truth"] = LargestOver(s, *records, t);
  }
  return r;
}

// A move of the primary: when the new primary was writable, when lagwatch's heartbeat and pointer
// followed, and for each server that replicates from the new primary, when it was truly caught
// up and when each system said so (ComputeBackFine).
json MoveJson(const Scenario& s, const Scenario::Move& m, const std::vector<System>& systems,
              const std::array<const Truth*, kServerCount>& truths) {
  auto after = [&](int64_t t) {
    return t ? json(static_cast<double>(t - m.writable_us) / 1000.0) : json(nullptr);
  };
  json j = {{"kind", m.kind},
            {"from", kServers[m.from]},
            {"to", kServers[m.to]},
            {"begin_s", static_cast<double>(m.begin_us - s.from_us) / 1e6},
            {"writable_after_begin_ms", static_cast<double>(m.writable_us - m.begin_us) / 1000.0},
            {"heartbeat_written_ms", after(m.hb_written_us)},
            {"heartbeat_seen_ms", after(m.hb_seen_us)},
            {"pointer_ms", after(m.pointer_us)},
            {"lag", m.lag.empty() ? json(nullptr) : json(m.lag)},
            {"window_s", static_cast<double>(m.end_us - m.begin_us) / 1e6}};
  for (const auto& [server, at] : m.repointed) {
    const Truth& t = *truths[static_cast<size_t>(server)];
    json r = {{"server", kServers[server]},
              {"repointed_after_writable_ms", static_cast<double>(at - m.writable_us) / 1000.0}};
    for (const System& sys : systems) {
      const std::vector<Report>* reports = nullptr;
      if (server == 0) {
        if (sys.primary_records) reports = &sys.primary_reports;
      } else {
        reports = &sys.reports[static_cast<size_t>(server - 1)];
      }
      if (!reports) continue;
      const BackFine b = ComputeBackFine(*reports, t, at, m.end_us, kTierLimitUs);
      if (b.caught_us) {
        r["caught_up_after_writable_ms"] =
            static_cast<double>(*b.caught_us - m.writable_us) / 1000.0;
      }
      const auto d = b.DelayMs();
      r["back_fine_ms"][sys.name] = d ? json(*d) : json(nullptr);
      // A lagwatch key: when the bench first saw it gone in this move's window, and the first
      // healthy=1 record seen after that (after writable).
      const std::vector<LagwatchRecord>* records =
          server == 0 ? sys.primary_records : sys.lagwatch[static_cast<size_t>(server - 1)];
      if (!records) continue;
      // A key not there when the move began (the server was the primary, or down) counts as
      // gone from then.
      bool present = false;
      for (const auto& lr : *records) {
        if (lr.seen_us < m.begin_us) present = !lr.missing;
      }
      int64_t gone = 0, healthy = 0;
      for (const auto& lr : *records) {
        if (lr.seen_us < m.begin_us || lr.seen_us >= m.end_us) continue;
        if (lr.missing && !gone) gone = lr.seen_us;
        if (!lr.missing && lr.healthy && (gone || !present) && !healthy) healthy = lr.seen_us;
      }
      r["key"][sys.name] = {{"gone_ms", after(gone)}, {"healthy_again_ms", after(healthy)}};
    }
    j["servers"].push_back(r);
  }
  return j;
}

// The stream state readings of agent `name` within the scenario: D's percentiles while the stream
// was usable, and how many readings found it not usable (and why), in the scenario's JSON and
// its notes.
void AddDeliveryBound(Scenario& s, const std::string& name,
                      const std::vector<StreamStatePoller::Reading>& readings) {
  std::vector<double> d;
  size_t unusable = 0;
  std::map<std::string, size_t> why;
  for (const StreamStatePoller::Reading& r : readings) {
    if (r.sent_us < s.from_us || r.sent_us >= s.to_us) continue;
    if (r.usable) {
      d.push_back(r.delivery_bound_ms);
    } else {
      ++unusable;
      ++why[r.why_not.empty() ? "?" : r.why_not];
    }
  }
  const Percentiles pc = Summarize(d);
  s.delivery_bound_ms[name] = {
      {"usable", PercentilesJson(pc)}, {"unusable_readings", unusable}, {"unusable_why", why}};
  if (pc.n + unusable == 0) return;
  std::string reasons;
  for (const auto& [reason, n] : why) {
    reasons += (reasons.empty() ? " (" : ", ") + reason + " " + std::to_string(n);
  }
  if (!reasons.empty()) reasons += ")";
  s.notes.push_back(name + ": the stream's delivery bound D while usable (its API every " +
                    std::to_string(kDeliveryPollPeriod.count() / 1000) + " ms, " +
                    std::to_string(pc.n) + " readings) p50 / p99 / max " + Num(pc.p50, 1) + " / " +
                    Num(pc.p99, 1) + " / " + Num(pc.max, 1) + " ms; not usable in " +
                    std::to_string(unusable) + " readings" + reasons);
}

json ScenarioJson(const Scenario& s, const std::vector<System>& systems,
                  const std::array<Truth, kReplicas>& truth, const Truth& primary_truth,
                  int64_t data_end_us) {
  json j = {
      {"name", s.name},
      {"description", s.description},
      {"affected_replica", s.affected.rfind("replica", 0) == 0 ? json(s.affected) : json(nullptr)},
      {"affected", s.affected.empty() ? json(nullptr) : json(s.affected)},
      {"table", s.table},
      {"start", IsoUtc(s.from_us)},
      {"start_unix_ms", s.from_us / 1000},
      {"duration_s", static_cast<double>(s.to_us - s.from_us) / 1e6},
      {"events", s.events},
      {"notes", s.notes},
      {"delivery_bound_ms", s.delivery_bound_ms}};
  for (int i = 0; i < kReplicas; ++i) {
    const std::string rn = "replica" + std::to_string(i + 1);
    const Truth& t = truth[static_cast<size_t>(i)];
    size_t e200 = 0, e1000 = 0;
    for (const auto& e : t.Episodes(200'000))
      e200 += e.start_us >= s.from_us && e.start_us < s.to_us;
    for (const auto& e : t.Episodes(1'000'000)) {
      e1000 += e.start_us >= s.from_us && e.start_us < s.to_us;
    }
    std::vector<double> truth_ms, bracket_ms;
    const auto& samples = t.samples();
    for (size_t k = 0; k < samples.size(); ++k) {
      if (samples[k].sent_us < s.from_us || samples[k].sent_us >= s.to_us) continue;
      auto lo = t.AtSample(k);
      if (!lo) continue;
      truth_ms.push_back(static_cast<double>(*lo) / 1000.0);
      if (auto hi = t.Upper(samples[k].sent_us)) {
        bracket_ms.push_back(static_cast<double>(*hi - *lo) / 1000.0);
      }
    }
    j["truth"][rn] = {{"episodes_over_200ms", e200},
                      {"episodes_over_1000ms", e1000},
                      {"staleness_ms", PercentilesJson(Summarize(truth_ms))},
                      {"bracket_ms", PercentilesJson(Summarize(bracket_ms))}};
  }
  j["systems"] = json::array();
  for (const System& sys : systems) {
    json sj = {{"name", sys.name}};
    for (int i = 0; i < kReplicas; ++i) {
      const auto k = static_cast<size_t>(i);
      sj["replicas"]["replica" + std::to_string(i + 1)] =
          ServerJson(s, sys.reports[k], sys.lagwatch[k], truth[k], data_end_us);
    }
    // A move scenario: the original primary's own key, while it was a replica.
    if (s.table == "move" && sys.primary_records) {
      sj["replicas"]["primary"] =
          ServerJson(s, sys.primary_reports, sys.primary_records, primary_truth, data_end_us);
    }
    j["systems"].push_back(sj);
  }
  if (s.table == "move") {
    const Truth& t = primary_truth;
    {
      std::vector<double> truth_ms;
      const auto& samples = t.samples();
      for (size_t k = 0; k < samples.size(); ++k) {
        if (samples[k].sent_us < s.from_us || samples[k].sent_us >= s.to_us) continue;
        if (auto lo = t.AtSample(k)) truth_ms.push_back(static_cast<double>(*lo) / 1000.0);
      }
      size_t e200 = 0, e1000 = 0;
      for (const auto& e : t.Episodes(200'000)) {
        e200 += e.start_us >= s.from_us && e.start_us < s.to_us;
      }
      for (const auto& e : t.Episodes(1'000'000)) {
        e1000 += e.start_us >= s.from_us && e.start_us < s.to_us;
      }
      j["truth"]["primary"] = {{"episodes_over_200ms", e200},
                               {"episodes_over_1000ms", e1000},
                               {"staleness_ms", PercentilesJson(Summarize(truth_ms))},
                               {"bracket_ms", nullptr}};
    }
    const std::array<const Truth*, kServerCount> truths = {&primary_truth, &truth[0], &truth[1]};
    j["moves"] = json::array();
    for (const auto& m : s.moves) j["moves"].push_back(MoveJson(s, m, systems, truths));
  }
  return j;
}

json OracleJson(const Recordings& rec, const std::array<Truth, kReplicas>& truth) {
  const OracleLog& log = rec.writer->log();
  std::vector<double> interval, commit;
  int64_t prev = -1;
  size_t unknown = 0;
  for (const auto& row : log.rows) {
    if (row.acked_us < 0) {
      ++unknown;
      continue;
    }
    if (prev >= 0) interval.push_back(static_cast<double>(row.sent_us - prev) / 1000.0);
    prev = row.sent_us;
    commit.push_back(static_cast<double>(row.acked_us - row.sent_us) / 1000.0);
  }
  json j = {{"rows", log.rows.size()},
            {"rows_unknown_outcome", unknown},
            {"write_errors", rec.writer->errors()},
            {"write_interval_ms", PercentilesJson(Summarize(interval))},
            {"commit_latency_ms", PercentilesJson(Summarize(commit))}};
  if (rec.writer->errors()) j["last_write_error"] = rec.writer->last_error();
  for (int i = 0; i < kReplicas; ++i) {
    const auto& samples = truth[static_cast<size_t>(i)].reads();
    std::vector<double> gaps, latency;
    for (size_t k = 0; k < samples.size(); ++k) {
      latency.push_back(static_cast<double>(samples[k].recv_us - samples[k].sent_us) / 1000.0);
      if (k)
        gaps.push_back(static_cast<double>(samples[k].sent_us - samples[k - 1].sent_us) / 1000.0);
    }
    j["readers"]["replica" + std::to_string(i + 1)] = {
        {"samples", samples.size()},
        {"errors", rec.readers[static_cast<size_t>(i)]->errors()},
        {"interval_ms", PercentilesJson(Summarize(gaps))},
        {"latency_ms", PercentilesJson(Summarize(latency))}};
  }
  return j;
}

// The heartbeat cost on the primary: nothing running, then each heartbeat alone, nothing else
// writing; the agents are lagwatch and, with --positions binlog, the binlog one (their configs
// are in `results`). Leaves every agent running.
json MeasureCosts(const Paths& p, const Plan& plan, const std::string& bin,
                  std::vector<Agent>& agents, const json& results, const std::string& logs) {
  json cost = json::array();
  cost.push_back(MeasureCost(p, "idle", plan.idle_s, "nothing running: the baseline"));
  {
    Progress("starting pt-heartbeat --update alone");
    auto pt = Child::Spawn(PtUpdateArgs(p), logs + "/pt-heartbeat-update.log");
    if (!WaitUntil([&] { return PtRowExists(p); }, milliseconds(15'000))) {
      throw std::runtime_error("pt-heartbeat --update wrote no row; see " + logs);
    }
    Pause(milliseconds(1500));
    cost.push_back(MeasureCost(p, "pt-heartbeat", plan.cost_s,
                               "--update --interval 0.5 (UPDATE + SHOW MASTER/SLAVE STATUS)"));
    pt->Stop();
  }
  // The other agents' costs are measured alone before the usual agent starts (each stops, and
  // starts again for the side-by-side part); their rows go after lagwatch's.
  std::vector<json> others;
  for (size_t i = 1; i < agents.size(); ++i) {
    others.push_back(
        MeasureAgentCost(p, bin, agents[i], results.at(agents[i].config_key), plan.cost_s));
    agents[i].child->Stop();
  }
  cost.push_back(MeasureAgentCost(p, bin, agents[0], results.at("lagwatch_config"), plan.cost_s));
  for (size_t i = 1; i < agents.size(); ++i) {
    cost.push_back(others[i - 1]);
    StartAgent(p, bin, agents[i], "again, next to lagwatch");
  }
  return cost;
}

// ---------------------------------------------------------------------------------------------

int RunBenchmark(const Options& opt) {
  const Plan plan = PlanFor(opt.quick);
  const bool binlog = opt.positions == kBinlogPositions;
  const SandboxEnv env = opt.Sandbox();
  // "REPLICATION=binlog" in DIR/env: scripts/sandbox up --replication binlog.
  const bool binlog_replication = env.Get("REPLICATION") == "binlog";
  if (binlog && !binlog_replication) {
    throw std::runtime_error(
        "--positions binlog needs a sandbox that replicates by file and "
        "position (scripts/sandbox up --replication binlog); " +
        opt.dir + "/env does not say REPLICATION=binlog");
  }
  const Paths p{opt.dir, opt.base_port, binlog_replication, SandboxRedis(env, RedisUser::kAdmin),
                env.ClientTls()};
  const std::string mode = opt.quick ? "quick" : "full";
  // A --positions binlog run keeps its logs and results apart from the default run's.
  // So does one that runs only some phases (--scenarios).
  // So does a run on a --tls sandbox.
  const std::string suffix = std::string(binlog ? "-binlog" : "") + (opt.tls ? "-tls" : "") +
                             (opt.after_commit_ms > 0 ? "-after-commit" : "") +
                             (opt.watch_writes ? "-watch-writes" : "") +
                             (opt.phases.empty() ? "" : "-partial");
  const std::string logs = opt.out_dir + "/logs-" + mode + suffix;
  std::filesystem::create_directories(logs);
  for (const auto& e : std::filesystem::directory_iterator(logs)) std::filesystem::remove(e);

  json results = {{"benchmark", "accuracy"}, {"mode", mode},           {"date", IsoUtc(StartUs())},
                  {"command", opt.command},  {"git_rev", opt.git_rev}, {"plan", plan.ToJson()}};
  if (binlog) results["positions"] = opt.positions;
  results["tls"] = opt.tls;
  if (!opt.phases.empty()) results["phases"] = opt.phases;
  utsname u{};
  uname(&u);
  results["host"] = {{"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
                     {"kernel", std::string(u.sysname) + " " + u.release}};
  results["versions"] = {
      {"lagwatch", CommandVersion({opt.lagwatch, "--version"})},
      {"mariadb", AdminQuery(p.Primary(), "SELECT VERSION()").First().value_or("?")},
      {"pt-heartbeat", CommandVersion({"pt-heartbeat", "--version"})},
      {"sysbench", CommandVersion({"sysbench", "--version"})}};
  results["lagwatch_config"] = json::parse(ReadFile(p.Config()), nullptr, true, true);
  // The agents under test: the usual one, and with --positions binlog the binlog one.
  std::vector<Agent> agents;
  agents.push_back({"lagwatch", p.Config(), kKeyPrefix, logs + "/lagwatch.log",
                    results["lagwatch_config"].value("agent_id", 1), nullptr});
  if (opt.after_commit_ms > 0 || opt.watch_writes) {
    // The sandbox's config, its own HTTP port (base + 4) and all, with probes after commits
    // and/or the other servers' writes watched.
    json changes = json::object();
    if (opt.after_commit_ms > 0) changes["probe"] = {{"after_commit_ms", opt.after_commit_ms}};
    if (opt.watch_writes) changes["binlog_stream"] = {{"watch_writes", true}};
    agents.front().config = logs + "/lagwatch.json";
    results["lagwatch_config"] =
        WriteAgentConfig(p, agents.front().config, "lagwatch", kSandboxHttpOffset, changes);
  }
  if (binlog) {
    const std::string config = logs + "/lagwatch-binlog.json";
    results["lagwatch_binlog_config"] =
        WriteAgentConfig(p, config, kBinlogSystem, kBinlogHttpOffset,
                         {{"agent_id", kBinlogAgentId},
                          {"positions", kBinlogPositions},
                          {"redis", {{"key_prefix", kBinlogKeyPrefix}}}});
    results["lagwatch_binlog_config_file"] = config;
    agents.push_back({kBinlogSystem, config, kBinlogKeyPrefix, logs + "/lagwatch-binlog.log",
                      kBinlogAgentId, nullptr, "lagwatch_binlog_config"});
  }
  {
    const std::string config = logs + "/lagwatch-sampling.json";
    json changes = {{"agent_id", kSamplingAgentId},
                    {"binlog_stream", {{"enabled", false}}},
                    {"redis", {{"key_prefix", kSamplingKeyPrefix}}}};
    if (binlog) changes["positions"] = kBinlogPositions;
    results["lagwatch_sampling_config"] =
        WriteAgentConfig(p, config, kSamplingSystem, kSamplingHttpOffset, changes);
    agents.push_back({kSamplingSystem, config, kSamplingKeyPrefix, logs + "/lagwatch-sampling.log",
                      kSamplingAgentId, nullptr, "lagwatch_sampling_config"});
  }
  results["sandbox"] = {{"primary", "127.0.0.1:" + std::to_string(p.base_port)},
                        {"replica1", "127.0.0.1:" + std::to_string(p.ReplicaPort(0))},
                        {"replica2", "127.0.0.1:" + std::to_string(p.ReplicaPort(1))}};
  results["logs"] = logs;

  Progress("preparing tables");
  PrepareTables(p);

  if (opt.Runs("cost")) {
    results["heartbeat_cost"] = MeasureCosts(p, plan, opt.lagwatch, agents, results, logs);
  } else {
    for (Agent& a : agents) StartAgent(p, opt.lagwatch, a, "(heartbeat cost not measured)");
    results["heartbeat_cost"] = json::array();
  }

  // --- Everything side by side.
  Progress("starting pt-heartbeat --update and two --monitor, oracle, pollers");
  auto pt_update = Child::Spawn(PtUpdateArgs(p), logs + "/pt-heartbeat-update.log");
  Pause(milliseconds(1500));
  std::array<std::unique_ptr<Child>, kReplicas> pt_monitor;
  for (int i = 0; i < kReplicas; ++i) {
    pt_monitor[static_cast<size_t>(i)] = Child::SpawnOnPty(PtMonitorArgs(p, i));
  }
  results["commands"] = {{"pt-heartbeat --update", Join(PtUpdateArgs(p))},
                         {"pt-heartbeat --monitor", Join(PtMonitorArgs(p, 0))}};
  for (const Agent& a : agents) results["commands"][a.name] = Join(a.Args(opt.lagwatch));

  OracleWriter writer(p.Primary());
  std::array<std::unique_ptr<OracleReader>, kReplicas> readers;
  std::array<std::unique_ptr<ValuePoller>, kReplicas> sbm, naive;
  for (int i = 0; i < kReplicas; ++i) {
    auto k = static_cast<size_t>(i);
    readers[k] = std::make_unique<OracleReader>(p.Replica(i));
    sbm[k] = std::make_unique<ValuePoller>(p.Replica(i), "SHOW SLAVE STATUS",
                                           "Seconds_Behind_Master", 1000.0);
    naive[k] = std::make_unique<ValuePoller>(
        p.Replica(i),
        "SELECT TIMESTAMPDIFF(MICROSECOND, updated_at, NOW(6)) AS lag_us FROM lwtest.naive "
        "WHERE id = 1",
        "lag_us", 0.001);
  }
  // The original primary's own reader: what it has once another server is the primary.
  OracleReader primary_reader(p.Primary());
  // The naive heartbeat's writer: its UPDATE on the primary every kNaiveWritePeriod; it follows
  // the primary when it moves (naive_mu guards naive_sql).
  std::mutex naive_mu;
  auto naive_sql = std::make_unique<Sql>(p.Primary());
  size_t naive_writes = 0, naive_write_errors = 0;
  Worker naive_writer;
  // Every agent's two keys in one pipelined HGETALL: agent a's replica i is key 2a + i.
  std::vector<std::string> keys;
  for (const Agent& a : agents) {
    for (int i = 0; i < kReplicas; ++i) keys.push_back(p.RedisKey(i, a.key_prefix));
  }
  // Then the original primary's key under each agent's prefix, there once it is a replica.
  const size_t primary_keys = keys.size();
  for (const Agent& a : agents) keys.push_back(p.ServerKey(0, a.key_prefix));
  RedisPoller redis(p.redis, keys);
  // The stream state of every agent that follows the stream, from its API (plain HTTP in the
  // sandbox).
  std::vector<std::pair<std::string, std::unique_ptr<StreamStatePoller>>> delivery;
  for (const Agent& a : agents) {
    const json& c = results[a.config_key];
    if (!c.value("binlog_stream", json::object()).value("enabled", true)) continue;
    const std::string listen = c.at("http").at("listen").get<std::string>();
    delivery.emplace_back(a.name, std::make_unique<StreamStatePoller>(
                                      std::stoi(listen.substr(listen.rfind(':') + 1))));
  }
  PtHeartbeatReader pt_reader({pt_monitor[0]->pty_fd(), pt_monitor[1]->pty_fd()},
                              logs + "/pt-heartbeat-monitor.log");

  writer.Start(kOraclePeriod);
  for (int i = 0; i < kReplicas; ++i) {
    auto k = static_cast<size_t>(i);
    readers[k]->Start(kOraclePeriod);
    sbm[k]->Start(kSqlPollPeriod);
    naive[k]->Start(kSqlPollPeriod);
  }
  primary_reader.Start(kOraclePeriod);
  StartTicking(naive_writer, kNaiveWritePeriod, [&](const std::stop_token&) {
    std::lock_guard lock(naive_mu);
    if (!naive_sql) return;
    if (naive_sql->Exec("UPDATE lwtest.naive SET updated_at = NOW(6) WHERE id = 1")) {
      ++naive_writes;
    } else {
      ++naive_write_errors;
    }
  });
  redis.Start(kRedisPeriod);
  pt_reader.Start();
  for (auto& [name, poller] : delivery) poller->Start(kDeliveryPollPeriod);

  Progress("warming up");
  if (!WaitUntil(
          [&] {
            for (size_t k = 0; k < primary_keys; ++k) {
              if (redis.count(k) <= 2) return false;
            }
            return readers[0]->count() > 10 && readers[1]->count() > 10 && pt_reader.count(0) > 2 &&
                   pt_reader.count(1) > 2;
          },
          milliseconds(20'000))) {
    throw std::runtime_error("not every system reported within 20 s of starting (see " + logs +
                             ")");
  }
  Pause(seconds(3));

  Switcher switcher(p,
                    {&writer,
                     [&](const std::string& socket) {
                       std::lock_guard lock(naive_mu);
                       naive_sql = socket.empty() ? nullptr : std::make_unique<Sql>(socket);
                     }},
                    agents[0].id);
  // Named and ordered as in kPhases (after "cost"); --scenarios runs some of them.
  const std::vector<std::pair<std::string, std::function<Scenario()>>> runs = {
      {"steady", [&] { return RunSteady(plan); }},
      {"stall", [&] { return RunStall(p, plan); }},
      {"ftwrl", [&] { return RunFtwrl(p, plan); }},
      {"sysbench", [&] { return RunSysbench(p, plan, opt.sysbench_rate, logs + "/sysbench.log"); }},
      {"primary-freeze", [&] { return RunPrimaryFreeze(p, plan); }},
      {"hung-replica", [&] { return RunHungReplica(p, plan); }},
      {"agent-kill", [&] { return RunAgentKill(p, plan, opt.lagwatch, agents[0], logs); }},
      {"switchover", [&] { return RunMoves(p, plan.switchover, switcher, false); }},
      {"failover", [&] { return RunMoves(p, plan.failover, switcher, true); }},
  };
  std::vector<Scenario> scenarios;
  for (const auto& [name, run] : runs) {
    if (!opt.Runs(name)) continue;
    if (!scenarios.empty()) Pause(seconds(3));
    scenarios.push_back(run());
  }
  Pause(seconds(1));

  // --- Stop recording, then the systems.
  Progress("stopping");
  const int64_t data_end_us = NowUs();
  pt_reader.Stop();
  redis.Stop();
  for (auto& [name, poller] : delivery) poller->Stop();
  naive_writer.Stop();
  for (int i = 0; i < kReplicas; ++i) {
    auto k = static_cast<size_t>(i);
    readers[k]->Stop();
    sbm[k]->Stop();
    naive[k]->Stop();
  }
  primary_reader.Stop();
  writer.Stop();
  json processes = json::object();
  // Keys: lagwatch_still_running, ...; the binlog agent's: lagwatch_binlog_still_running, ...
  auto key = [](const Agent& a, const std::string& what) {
    return (a.name == "lagwatch" ? "lagwatch_" : "lagwatch_binlog_") + what;
  };
  for (Agent& a : agents) processes[key(a, "still_running")] = a.child->Running();
  processes["usage"] = {{"pt-heartbeat --update", ProcUsage(pt_update->pid())},
                        {"pt-heartbeat --monitor r1", ProcUsage(pt_monitor[0]->pid())},
                        {"pt-heartbeat --monitor r2", ProcUsage(pt_monitor[1]->pid())},
                        {"bench_accuracy", ProcUsage(getpid())}};
  for (Agent& a : agents) processes["usage"][a.name] = ProcUsage(a.child->pid());
  processes["pt_heartbeat_still_running"] =
      pt_update->Running() && pt_monitor[0]->Running() && pt_monitor[1]->Running();
  for (Agent& a : agents) processes[key(a, "exit_code")] = a.child->Stop();
  for (auto& m : pt_monitor) m->Stop();
  pt_update->Stop();
  for (const Agent& a : agents) {
    const std::string lw_log = ReadFile(a.log);
    processes[key(a, "log_warn_lines")] = CountSubstr(lw_log, " WARN ");
    processes[key(a, "log_error_lines")] = CountSubstr(lw_log, " ERROR ");
  }
  processes["redis_poll_errors"] = redis.errors();
  processes["redis_polls"] = redis.polls();
  processes["pt_heartbeat_unparsed_lines"] = pt_reader.unparsed();
  for (int i = 0; i < kReplicas; ++i) {
    auto k = static_cast<size_t>(i);
    const std::string rn = "replica" + std::to_string(i + 1);
    processes["sbm_poll_errors"][rn] = sbm[k]->errors();
    processes["naive_read_errors"][rn] = naive[k]->errors();
  }
  for (const auto& [name, poller] : delivery) {
    processes["delivery_bound_poll_errors"][name] = poller->errors();
  }
  processes["naive_writes"] = naive_writes;
  processes["naive_write_errors"] = naive_write_errors;
  results["processes"] = processes;

  // --- Analysis.
  Progress("analysing");
  Recordings rec{&writer,
                 {readers[0].get(), readers[1].get()},
                 &pt_reader,
                 {sbm[0].get(), sbm[1].get()},
                 {naive[0].get(), naive[1].get()}};
  // A replica's hangs, from the scenarios that froze it.
  std::array<std::vector<Hang>, kReplicas> hangs;
  for (const Scenario& s : scenarios) {
    for (int i = 0; i < kReplicas; ++i) {
      if (s.affected != "replica" + std::to_string(i + 1)) continue;
      auto& h = hangs[static_cast<size_t>(i)];
      h.insert(h.end(), s.hangs.begin(), s.hangs.end());
    }
  }
  // Each server's apply times of the oracle's rows (its trigger's, bench/analysis.h).
  const std::vector<AppliedRow> primary_applied = ReadApplied(p.Primary());
  const std::array<std::vector<AppliedRow>, kReplicas> applied = {ReadApplied(p.Replica(0)),
                                                                  ReadApplied(p.Replica(1))};
  const Truth primary_truth(&writer.log(), primary_reader.samples(), {}, kHangStepUs,
                            primary_applied);
  std::array<Truth, kReplicas> truth = {
      Truth(&writer.log(), readers[0]->samples(), hangs[0], kHangStepUs, applied[0]),
      Truth(&writer.log(), readers[1]->samples(), hangs[1], kHangStepUs, applied[1])};
  // lagwatch (and lagwatch (binlog) right after it), pt-heartbeat, SBM, naive.
  std::vector<System> systems(agents.size() + 3);
  for (size_t a = 0; a < agents.size(); ++a) {
    systems[a].name = agents[a].name;
    for (size_t k = 0; k < static_cast<size_t>(kReplicas); ++k) {
      const auto& records = redis.records(a * static_cast<size_t>(kReplicas) + k);
      systems[a].reports[k] = LagwatchReports(records);
      systems[a].lagwatch[k] = &records;
    }
    const auto& records = redis.records(primary_keys + a);
    systems[a].primary_reports = LagwatchReports(records);
    systems[a].primary_records = &records;
  }
  System& pt_sys = systems[agents.size()];
  System& sbm_sys = systems[agents.size() + 1];
  System& naive_sys = systems[agents.size() + 2];
  pt_sys.name = "pt-heartbeat";
  sbm_sys.name = "SBM";
  naive_sys.name = "naive";
  for (int i = 0; i < kReplicas; ++i) {
    auto k = static_cast<size_t>(i);
    pt_sys.reports[k] = ToolReports(pt_reader.readings(k));
    sbm_sys.reports[k] = ToolReports(sbm[k]->readings());
    naive_sys.reports[k] = ToolReports(naive[k]->readings());
  }
  results["oracle"] = OracleJson(rec, truth);
  results["oracle"]["applied_rows"] = {{"primary", primary_applied.size()},
                                       {"replica1", applied[0].size()},
                                       {"replica2", applied[1].size()}};
  for (const auto& m : writer.moves()) {
    results["oracle"]["moves"].push_back({{"t", IsoUtc(m.t_us)},
                                          {"to", m.socket},
                                          {"max_id_there", m.max_id_there},
                                          {"rows_lost", m.lost},
                                          {"next_id", m.next_id}});
  }
  for (Scenario& s : scenarios) {
    for (const auto& [name, poller] : delivery) AddDeliveryBound(s, name, poller->readings());
  }
  results["scenarios"] = json::array();
  for (const Scenario& s : scenarios) {
    results["scenarios"].push_back(ScenarioJson(s, systems, truth, primary_truth, data_end_us));
  }

  const std::string base = opt.out_dir + "/accuracy-" + mode + suffix;
  WriteResults(base, results, RenderMarkdown, RenderText);
  return 0;
}

}  // namespace
}  // namespace lagwatch::bench

int main(int argc, char** argv) {
  using namespace lagwatch::bench;
  Options opt;
  return BenchmarkMain(argc, argv, opt,
                       {.name = "bench_accuracy",
                        .usage = kUsage,
                        .flag =
                            [&](FlagReader& flags) {
                              if (flags.flag() == "--sysbench-rate") {
                                opt.sysbench_rate = flags.Int();
                                return true;
                              }
                              if (flags.flag() == "--after-commit-ms") {
                                opt.after_commit_ms = flags.Int();
                                return true;
                              }
                              if (flags.flag() == "--watch-writes") {
                                opt.watch_writes = true;
                                return true;
                              }
                              if (flags.flag() == "--positions") {
                                opt.positions = flags.Value();
                                return true;
                              }
                              if (flags.flag() == "--scenarios") {
                                opt.phases = SplitList(flags.Value());
                                return true;
                              }
                              return false;
                            },
                        .valid =
                            [&] {
                              return opt.sysbench_rate > 0 &&
                                     (opt.after_commit_ms == 0 || opt.after_commit_ms >= 5) &&
                                     (opt.positions.empty() || opt.positions == kBinlogPositions) &&
                                     KnownPhases(opt.phases);
                            },
                        .run = [&] { return RunBenchmark(opt); }});
}
