// lagwatch's configuration (docs/configuration.md): the JSON file, parsed and validated in one
// place. Values are plain data, constant after load; safe to share between threads by const
// reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/endpoint.h"
#include "base/position.h"
#include "base/redis_conn.h"
#include "base/secret_file.h"
#include "base/status.h"
#include "exporters/haproxy_agent_check.h"
#include "exporters/haproxy_runtime.h"
#include "exporters/web_config.h"
#include "heartbeat/heartbeat_sql.h"

namespace lagwatch {

struct TierConfig {
  std::string name;
  std::optional<int64_t> max_delay_ms;  // nullopt: no limit
  bool enabled = true;
};

struct ReplicaConfig {
  Endpoint endpoint;
  std::string tier;  // names one of Config::tiers
  int weight = 1;    // 0..1000, passed through to routers
  TlsOptions tls;    // the server's `tls` over the top-level one (Config::mysql_tls)
};

// Replicas found from the primary's listing (agent/discovery.h); off by default.
struct DiscoveryConfig {
  bool enabled = false;
  int interval_ms = 5000;
  std::string tier;  // the tier discovered replicas get; the last enabled tier by default
  int weight = 1;
  int grace_ms = 60000;     // unlisted this long: no longer probed
  int max_replicas = 1000;  // more listed than this are ignored (and counted)
  bool operator==(const DiscoveryConfig&) const = default;
};

inline constexpr int kDefaultAfterCommitMs = 10;

struct ProbeConfig {
  int interval_ms = 200;
  int timeout_ms = 150;
  int status_interval_ms = 1000;
  // Event-loop threads the probers share (base/event_loop.h); replicas are spread over them.
  int threads = 2;
  // Run those threads and the Redis publisher at SCHED_FIFO priority 1 when permitted.
  bool realtime = true;
  // Probe each replica this long after the binary log stream delivers a transaction, so its
  // published position shows the commit about that soon (read-your-writes on published
  // positions); at most one such probe per replica per this long, within the agent's budget for
  // them (FollowStep, agent/schedule.h). 0: off. Default kDefaultAfterCommitMs where it is under
  // interval_ms.
  int after_commit_ms = kDefaultAfterCommitMs;
};

struct HealthConfig {
  // While the primary is unknown (no heartbeat acknowledged and no position sampled lately), a
  // replica that had applied everything the primary had when last heard from stays healthy
  // (true, the default: reads keep flowing to the freshest copies there are) or turns unhealthy
  // (false).
  bool keep_caught_up_when_primary_unknown = true;
  double recover_ratio = 0.8;  // back to healthy only at or under this share of the tier limit
  int recover_probes = 2;      // ... for this many probes in a row
};

// The primary's binary log stream (docs/measurement.md, "Stream bounds"; docs/configuration.md,
// "binlog_stream").
struct StreamConfig {
  bool enabled = true;
  // The replica server id the listener registers with; 0: 4294967295 − agent_id (clear of the
  // small ids servers usually have; two agents never share one).
  int64_t server_id = 0;
  int heartbeat_ms = 10;    // MASTER_HEARTBEAT_PERIOD asked of the primary
  int max_lag_ms = 50;      // the stream is not used while it is this far behind the samples
  int min_delivery_ms = 1;  // the delivery bound is never less than this
  // Also follow every other configured server's binary log: a write made there (a new primary's
  // first) makes every server be probed at once, so a move is seen a round trip after it.
  bool watch_writes = false;
  bool operator==(const StreamConfig&) const = default;
  // The server id in use.
  uint32_t ServerId(int64_t agent_id) const {
    return static_cast<uint32_t>(server_id != 0 ? server_id : 4294967295LL - agent_id);
  }
};

// HAProxy (docs/configuration.md, "haproxy"): the instances lagwatch pushes to, the agent-check
// port, and the backend name `lagwatch haproxy-config` writes.
struct HaproxyConfig {
  std::string backend = "mysql_reads";
  HaproxyPushOptions push;  // push.ttl_ms is redis.ttl_ms
  AgentCheckOptions agent_check;
  bool operator==(const HaproxyConfig&) const = default;
};

struct Config {
  // The replication cluster's name (docs/configuration.md, "cluster"): the `cluster` label of every
  // metric, a field of every record and event, the top of the API's answers. The key's value, else
  // LAGWATCH_INSTANCE (the instance name lagwatch@<name>.service sets), else the configured
  // primary's "host:port". Always set after ParseConfig succeeds; not reloadable.
  std::string cluster;
  int64_t agent_id = 1;
  // Which positions give the tight bounds (docs/measurement.md, "Position bounds"): nullopt is
  // "auto" (the tightest the servers have: MariaDB GTID on MariaDB; on MySQL its GTID sets with
  // gtid_mode ON, else binary log coordinates); a kind insists on it (and says so when a server
  // lacks it); kNone is heartbeat bounds only.
  std::optional<PositionsKind> positions;
  InsecureFiles insecure_files = InsecureFiles::kRefuse;
  Endpoint primary;
  std::string primary_defaults_file;  // MySQL option file with [client] user/password
  // TLS to MySQL servers (docs/configuration.md, "TLS"): the top-level `tls` block, for every
  // server without its own (discovered replicas too), and the primary's (its `tls` over it).
  TlsOptions mysql_tls;
  TlsOptions primary_tls;
  // The configured primary's tier and weight for when it is a replica (after a switchover it
  // rejoins as one: docs/measurement.md, "Following the primary"); the first tier and 1 by
  // default.
  std::string primary_tier;
  int primary_weight = 1;
  std::string replica_defaults_file;
  HeartbeatConfig heartbeat;
  int sampler_interval_ms = 20;
  StreamConfig binlog_stream;
  ProbeConfig probe;
  std::vector<TierConfig>
      tiers;  // the documented defaults (docs/configuration.md) when the key is absent
  std::vector<ReplicaConfig> replicas;
  HealthConfig health;
  RedisConfig redis;
  std::string http_listen = "127.0.0.1:9877";
  HttpConfig http;
  int slo_delay_ms = 200;
  DiscoveryConfig discovery;
  HaproxyConfig haproxy;

  // The TLS for `server`: the primary's or a configured replica's own, else mysql_tls.
  const TlsOptions& MysqlTlsFor(const Endpoint& server) const;
  // REQUIRES: name is a tier in `tiers` (guaranteed after ParseConfig succeeds).
  const TierConfig& Tier(const std::string& name) const;
  // Every configured server, each as a replica may be probed: the primary first (with
  // primary_tier and primary_weight), then `replicas`. Which one is the primary is for the
  // topology to say (agent/topology_monitor.h).
  std::vector<ReplicaConfig> Servers() const;
};

// The environment variable that names an instance of the unit template (lagwatch@<name>.service):
// the cluster's name when the config names none.
inline constexpr char kInstanceVariable[] = "LAGWATCH_INSTANCE";
// kInstanceVariable's value in this process's environment; nullopt when unset (an empty value
// counts as set: it is refused as a cluster name).
std::optional<std::string> InstanceFromEnvironment();

// Whether `name` is a valid cluster name: 1..64 of [A-Za-z0-9_.:-].
bool IsClusterName(const std::string& name);

// Parses JSON text (comments allowed). On error returns InvalidArgument whose message starts with
// the offending key path, e.g. "replicas[1].port: must be an integer in 1..65535".
// Reads http.web_config_file (and the TLS files it names) when set: see exporters/web_config.h.
// `instance` is what the cluster defaults to when the text has no `cluster` key
// (LAGWATCH_INSTANCE's value; nullopt: unset, the primary's "host:port" then); an invalid one is
// refused naming `cluster` and LAGWATCH_INSTANCE. The one-argument form takes it from this
// process's environment.
Result<Config> ParseConfig(const std::string& json_text,
                           const std::optional<std::string>& instance);
Result<Config> ParseConfig(const std::string& json_text);

// Reads and parses a file; a read failure names the path.
// Also checks the secret files it names (option files, Redis and sentinel password files, TLS
// keys): each must be a readable regular file, and one that its group or others may read or write
// is refused (or only warned about with "insecure_files": "warn"); reads the Redis and sentinel
// passwords; checks that the TLS blocks' CA files and certificates can be read, and logs a
// warning for each enabled block with verify_server_cert false.
// `instance` as ParseConfig's; the one-argument form takes it from this process's environment.
Result<Config> LoadConfig(const std::string& path, const std::optional<std::string>& instance);
Result<Config> LoadConfig(const std::string& path);

// Reads and parses a file without LoadConfig's checks of the files it names (only
// http.web_config_file is read): for a client of a running agent (`lagwatch status`), which needs
// its listener and its cluster, not its secrets. A read failure names the path.
Result<Config> ReadConfigFile(const std::string& path, const std::optional<std::string>& instance);

}  // namespace lagwatch
