// lagwatch's configuration (DESIGN.md §6): the JSON file, parsed and validated in one place.
// Values are plain data, constant after load; safe to share between threads by const reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/status.h"
#include "exporters/web_config.h"

namespace lagwatch {

struct Endpoint {
  std::string host;
  int port = 3306;
  // "host:port", the replica's identity in Redis keys and metric labels.
  std::string Id() const { return host + ":" + std::to_string(port); }
};

struct TierConfig {
  std::string name;
  std::optional<int64_t> max_delay_ms;  // nullopt: no limit
  bool enabled = true;
};

struct ReplicaConfig {
  Endpoint endpoint;
  std::string tier;  // names one of Config::tiers
  int weight = 1;    // 0..1000, passed through to routers
};

struct HeartbeatConfig {
  std::string database = "heartbeat";
  std::string table = "mysql_heartbeat";
  int interval_ms = 500;
  bool create_table = true;
  // "db.table", validated: each part matches [A-Za-z0-9_$]{1,64}.
  std::string QualifiedName() const { return "`" + database + "`.`" + table + "`"; }
};

struct ProbeConfig {
  int interval_ms = 200;
  int timeout_ms = 150;
  int status_interval_ms = 1000;
  // Event-loop threads the probers share (agent/event_loop.h); replicas are spread over them.
  int threads = 2;
  // Run those threads and the Redis publisher at SCHED_FIFO priority 1 when permitted.
  bool realtime = true;
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

// http.* apart from http.listen (Config::http_listen).
struct HttpConfig {
  // Requests served at once (CivetWeb worker threads); further connections wait in a short queue.
  int max_connections = 4;
  // Request line plus headers; a larger request is answered 4xx and closed.
  int max_request_bytes = 16384;
  // Deadline to read a request's headers and, separately, to write its response; a connection
  // whose request body is left unread is closed after at most twice this.
  int request_timeout_ms = 5000;
  std::string web_config_file;  // empty: plain HTTP, no authentication
  WebConfig web;                // loaded from web_config_file by ParseConfig
  bool operator==(const HttpConfig&) const = default;
};

struct RedisConfig {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string key_prefix = "slave_delay";
  int ttl_ms = 1000;
  // AUTH: the password is the first line of password_file (read by LoadConfig); username only
  // for Redis 6 ACLs. Empty: no AUTH.
  std::string username;
  std::string password_file;
  std::string password;
};

// What to do with a secret file (MySQL option file, Redis password file) that its group or others
// may read or write.
enum class InsecureFiles { kRefuse, kWarn };

struct Config {
  int64_t agent_id = 1;
  InsecureFiles insecure_files = InsecureFiles::kRefuse;
  Endpoint primary;
  std::string primary_defaults_file;  // MySQL option file with [client] user/password
  std::string replica_defaults_file;
  HeartbeatConfig heartbeat;
  int sampler_interval_ms = 50;
  ProbeConfig probe;
  std::vector<TierConfig> tiers;  // defaults per DESIGN.md when the key is absent
  std::vector<ReplicaConfig> replicas;
  HealthConfig health;
  RedisConfig redis;
  std::string http_listen = "127.0.0.1:9877";
  HttpConfig http;
  int slo_delay_ms = 200;

  // REQUIRES: name is a tier in `tiers` (guaranteed after ParseConfig succeeds).
  const TierConfig& Tier(const std::string& name) const;
};

// Parses JSON text (comments allowed). On error returns InvalidArgument whose message starts with
// the offending key path, e.g. "replicas[1].port: must be an integer in 1..65535".
// Reads http.web_config_file (and the TLS files it names) when set: see exporters/web_config.h.
Result<Config> ParseConfig(const std::string& json_text);

// Reads and parses a file; a read failure names the path.
// Also checks the secret files it names (option files, Redis password file): each must be a
// readable regular file, and one that its group or others may read or write is refused (or
// only warned about with "insecure_files": "warn"); reads the Redis password.
Result<Config> LoadConfig(const std::string& path);

// Checks a file that holds credentials, named by `key` (a config key or a command-line flag) in
// messages: it must be a readable regular file (else InvalidArgument). One that its group or
// others may read or write is refused with InvalidArgument "KEY: PATH holds credentials but ...
// (mode 0644); chmod 600 it" + `refuse_hint`, or with kWarn logged as a warning and accepted.
Status CheckSecretFile(const std::string& key, const std::string& path, InsecureFiles policy,
                       const std::string& refuse_hint = "");

// The first line of a secret file (without its line end); InvalidArgument naming `key` when the
// file cannot be read or the line is empty.
Result<std::string> ReadSecretLine(const std::string& key, const std::string& path);

}  // namespace lagwatch
