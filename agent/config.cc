#include "agent/config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agent/schedule.h"
#include "base/gtid.h"
#include "base/log.h"
#include "base/strings.h"

namespace lagwatch {
namespace {

using nlohmann::json;

// Thrown only inside this file to unwind a validation; ParseConfig turns it into a Status.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Fail(const std::string& key, const std::string& what) {
  throw ConfigError(key + ": " + what);
}

// A JSON object being read: remembers which keys were consumed so leftovers are reported.
class Obj {
 public:
  Obj(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) Fail(path_.empty() ? "(top level)" : path_, "must be an object");
  }
  // Reports the first key that was never asked for. Call after reading every known key.
  void RejectUnknownKeys() const {
    for (const auto& [k, v] : j_.items()) {
      if (!seen_.count(k)) Fail(Key(k), "unknown key");
    }
  }
  std::string Key(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const json* Get(const std::string& k) {
    seen_.insert(k);
    auto it = j_.find(k);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& Require(const std::string& k) {
    const json* v = Get(k);
    if (!v) Fail(Key(k), "required key is missing");
    return *v;
  }
  int64_t Int(const std::string& k, int64_t def, int64_t lo, int64_t hi, bool required = false) {
    const json* v = required ? &Require(k) : Get(k);
    if (!v) return def;
    if (!v->is_number_integer()) Fail(Key(k), "must be an integer");
    int64_t x;
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      Fail(Key(k), "out of range");
    }
    x = v->get<int64_t>();
    if (x < lo || x > hi) {
      Fail(Key(k), "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                       std::to_string(x));
    }
    return x;
  }
  std::string Str(const std::string& k, const std::string& def, bool required = false) {
    const json* v = required ? &Require(k) : Get(k);
    if (!v) return def;
    if (!v->is_string()) Fail(Key(k), "must be a string");
    std::string s = v->get<std::string>();
    if (s.empty()) Fail(Key(k), "must not be empty");
    return s;
  }
  bool Bool(const std::string& k, bool def) {
    const json* v = Get(k);
    if (!v) return def;
    if (!v->is_boolean()) Fail(Key(k), "must be true or false");
    return v->get<bool>();
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

bool IsIdentifier(const std::string& s) { return IsToken(s, "_$", 1, 64); }

Endpoint ReadEndpoint(Obj& o) {
  Endpoint e;
  e.host = o.Str("host", "", true);
  if (!IsToken(e.host, "._:-", 1, 253)) Fail(o.Key("host"), "not a valid host name or address");
  e.port = static_cast<int>(o.Int("port", 3306, 1, 65535));
  return e;
}

// A `tls` block: the keys of TlsOptions over `base` (the defaults, or the top-level block a
// server's own overrides). `mysql`: a MySQL block (`required`, no `server_name`); else Redis's.
TlsOptions ReadTls(const json& j, const std::string& path, TlsOptions base, bool mysql) {
  Obj o(j, path);
  base.enabled = o.Bool("enabled", base.enabled);
  base.ca_file = o.Str("ca_file", base.ca_file);
  base.cert_file = o.Str("cert_file", base.cert_file);
  base.key_file = o.Str("key_file", base.key_file);
  base.verify = o.Bool("verify_server_cert", base.verify);
  if (mysql) {
    base.required = o.Bool("required", base.required);
  } else {
    base.server_name = o.Str("server_name", base.server_name);
    if (!IsToken(base.server_name, "._:-", 0, 253)) {
      Fail(o.Key("server_name"), "not a valid host name or address");
    }
  }
  if (const json* v = o.Get("min_version")) {
    if (*v == "1.2") {
      base.min_version = 12;
    } else if (*v == "1.3") {
      base.min_version = 13;
    } else {
      Fail(o.Key("min_version"), "must be \"1.2\" or \"1.3\"");
    }
  }
  o.RejectUnknownKeys();
  if (base.cert_file.empty() != base.key_file.empty()) {
    Fail(o.Key(base.cert_file.empty() ? "key_file" : "cert_file"),
         "needs " + o.Key(base.cert_file.empty() ? "cert_file" : "key_file") +
             " (a client certificate and its key go together)");
  }
  return base;
}

// One reader per section; each reports unknown keys of its own object.

void ReadPrimary(Obj& top, Config& c) {
  Obj p(top.Require("primary"), "primary");
  c.primary = ReadEndpoint(p);
  c.primary_defaults_file = p.Str("defaults_file", "", true);
  // Checked against the tiers once they are read (ReadTiers comes later).
  c.primary_tier = p.Str("tier", "");
  c.primary_weight = static_cast<int>(p.Int("weight", 1, 0, 1000));
  c.primary_tls = c.mysql_tls;
  if (const json* t = p.Get("tls")) c.primary_tls = ReadTls(*t, "primary.tls", c.mysql_tls, true);
  p.RejectUnknownKeys();
}

void ReadHeartbeat(const json& j, HeartbeatConfig& hb) {
  Obj h(j, "heartbeat");
  std::string table = h.Str("table", "heartbeat.mysql_heartbeat");
  auto dot = table.find('.');
  if (dot == std::string::npos || !IsIdentifier(table.substr(0, dot)) ||
      !IsIdentifier(table.substr(dot + 1))) {
    Fail("heartbeat.table",
         "must be \"database.table\" with each part of [A-Za-z0-9_$], 1-64 chars");
  }
  hb.database = table.substr(0, dot);
  hb.table = table.substr(dot + 1);
  hb.interval_ms = static_cast<int>(h.Int("interval_ms", 500, 50, 60000));
  hb.create_table = h.Bool("create_table", true);
  h.RejectUnknownKeys();
}

void ReadProbe(const json& j, ProbeConfig& probe) {
  Obj p(j, "probe");
  probe.interval_ms = static_cast<int>(p.Int("interval_ms", 200, 10, 60000));
  probe.timeout_ms = static_cast<int>(p.Int("timeout_ms", 150, 10, 60000));
  probe.status_interval_ms = static_cast<int>(p.Int("status_interval_ms", 1000, 10, 600000));
  probe.threads = static_cast<int>(p.Int("threads", 2, 1, 64));
  probe.realtime = p.Bool("realtime", true);
  // On by default where it fits under the interval (FollowStep keeps its probes within a budget).
  const int after_commit_default =
      probe.interval_ms > kDefaultAfterCommitMs ? kDefaultAfterCommitMs : 0;
  probe.after_commit_ms =
      static_cast<int>(p.Int("after_commit_ms", after_commit_default, 0, 60000));
  p.RejectUnknownKeys();
  if (probe.timeout_ms > probe.interval_ms) {
    Fail("probe.timeout_ms",
         "must not exceed probe.interval_ms (" + std::to_string(probe.interval_ms) + ")");
  }
  if (probe.status_interval_ms < probe.interval_ms) {
    Fail("probe.status_interval_ms",
         "must be at least probe.interval_ms (" + std::to_string(probe.interval_ms) + ")");
  }
  if (probe.after_commit_ms != 0 && (probe.after_commit_ms < kMinProbeGap.count() ||
                                     probe.after_commit_ms >= probe.interval_ms)) {
    Fail("probe.after_commit_ms",
         "must be 0 (off) or from " + std::to_string(kMinProbeGap.count()) +
             " to under probe.interval_ms (" + std::to_string(probe.interval_ms) + ")");
  }
}

std::vector<TierConfig> ReadTiers(const json* j) {
  if (!j) return {{"tier1", 200, true}, {"tier2", 1000, true}, {"tier3", std::nullopt, false}};
  if (!j->is_array() || j->empty()) Fail("tiers", "must be a non-empty array");
  std::vector<TierConfig> tiers;
  std::set<std::string> names;
  for (size_t i = 0; i < j->size(); ++i) {
    Obj t((*j)[i], "tiers[" + std::to_string(i) + "]");
    TierConfig tier;
    tier.name = t.Str("name", "", true);
    if (!IsToken(tier.name, "_-", 1, 32)) Fail(t.Key("name"), "must match [A-Za-z0-9_-]{1,32}");
    if (!names.insert(tier.name).second) {
      Fail(t.Key("name"), "duplicate tier \"" + tier.name + "\"");
    }
    const json* m = t.Get("max_delay_ms");
    if (m && !m->is_null()) tier.max_delay_ms = t.Int("max_delay_ms", 0, 1, 86'400'000);
    tier.enabled = t.Bool("enabled", true);
    t.RejectUnknownKeys();
    tiers.push_back(tier);
  }
  return tiers;
}

// REQUIRES: c.tiers and c.primary read.
void ReadReplicas(const json& r, Config& c) {
  if (!r.is_array() || r.empty()) Fail("replicas", "must be a non-empty array");
  std::set<std::string> ids;
  for (size_t i = 0; i < r.size(); ++i) {
    std::string path = "replicas[" + std::to_string(i) + "]";
    Obj o(r[i], path);
    ReplicaConfig rc;
    rc.endpoint = ReadEndpoint(o);
    rc.tier = o.Str("tier", c.tiers.front().name);
    bool known = false;
    for (const auto& t : c.tiers) known = known || t.name == rc.tier;
    if (!known) Fail(o.Key("tier"), "unknown tier \"" + rc.tier + "\"");
    rc.weight = static_cast<int>(o.Int("weight", 1, 0, 1000));
    rc.tls = c.mysql_tls;
    if (const json* t = o.Get("tls")) rc.tls = ReadTls(*t, o.Key("tls"), c.mysql_tls, true);
    o.RejectUnknownKeys();
    if (!ids.insert(rc.endpoint.Id()).second) {
      Fail(path, "duplicate replica " + rc.endpoint.Id());
    }
    if (rc.endpoint.Id() == c.primary.Id()) Fail(path, "is the primary " + rc.endpoint.Id());
    c.replicas.push_back(rc);
  }
}

void ReadHealth(const json& j, HealthConfig& health) {
  Obj o(j, "health");
  if (const json* v = o.Get("primary_unknown")) {
    if (!v->is_string() || (*v != "keep_caught_up" && *v != "unhealthy")) {
      Fail("health.primary_unknown", "must be \"keep_caught_up\" or \"unhealthy\"");
    }
    health.keep_caught_up_when_primary_unknown = *v == "keep_caught_up";
  }
  if (const json* v = o.Get("recover_ratio")) {
    if (!v->is_number() || v->get<double>() <= 0 || v->get<double>() > 1) {
      Fail("health.recover_ratio", "must be a number in (0, 1]");
    }
    health.recover_ratio = v->get<double>();
  }
  health.recover_probes = static_cast<int>(o.Int("recover_probes", 2, 1, 100));
  o.RejectUnknownKeys();
}

// "redis.sentinels", "redis.cluster": a non-empty array of distinct "host:port" strings (`name`
// the key, `example` a port for the message).
std::vector<Endpoint> ReadServers(const json& j, const std::string& name, const char* example) {
  if (!j.is_array() || j.empty()) Fail(name, "must be a non-empty array");
  std::vector<Endpoint> servers;
  std::set<std::string> ids;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string key = name + "[" + std::to_string(i) + "]";
    auto address = j[i].is_string() ? ParseListenAddress(j[i].get<std::string>()) : std::nullopt;
    if (!address || address->port == 0) {
      Fail(key, std::string("must be \"host:port\", e.g. \"10.0.0.5:") + example + "\"");
    }
    Endpoint e{address->host, address->port};
    if (!ids.insert(e.Id()).second) Fail(key, "duplicate " + e.Id());
    servers.push_back(std::move(e));
  }
  return servers;
}

// A key prefix: 1..64 of [A-Za-z0-9_.:-], and at most one hash tag "{...}" of those (Redis
// Cluster keeps every key with the same tag in one slot: docs/redis.md, "Redis Cluster").
bool IsKeyPrefix(const std::string& p) {
  if (p.empty() || p.size() > 64) return false;
  const size_t open = p.find('{');
  if (open == std::string::npos) return IsToken(p, "_.:-", 1, 64);
  const size_t close = p.find('}', open);
  if (close == std::string::npos || close == open + 1) return false;
  const std::string outside = p.substr(0, open) + p.substr(close + 1);
  const std::string tag = p.substr(open + 1, close - open - 1);
  return IsToken(tag, "_.:-", 1, 64) && (outside.empty() || IsToken(outside, "_.:-", 1, 64));
}

void ReadRedis(const json& j, RedisConfig& redis) {
  Obj o(j, "redis");
  if (const json* c = o.Get("cluster")) {
    redis.cluster = ReadServers(*c, "redis.cluster", "6379");
    // The masters are wherever the cluster's slot map says.
    for (const char* k : {"host", "port", "sentinels", "master_name", "sentinel_username",
                          "sentinel_password_file"}) {
      if (o.Get(k)) Fail(o.Key(k), "not with redis.cluster (its nodes say where the keys are)");
    }
  } else if (const json* s = o.Get("sentinels")) {
    redis.sentinels = ReadServers(*s, "redis.sentinels", "26379");
    // The master is wherever the sentinels say; an address as well would be ignored.
    for (const char* k : {"host", "port"}) {
      if (o.Get(k)) Fail(o.Key(k), "not with redis.sentinels (they name the master)");
    }
    redis.master_name = o.Str("master_name", "", true);
    if (!IsToken(redis.master_name, "_.:-", 1, 64)) {
      Fail("redis.master_name", "must match [A-Za-z0-9_.:-]{1,64}");
    }
    redis.sentinel_username = o.Str("sentinel_username", "");
    redis.sentinel_password_file = o.Str("sentinel_password_file", "");
    if (!redis.sentinel_username.empty() && redis.sentinel_password_file.empty()) {
      Fail("redis.sentinel_username", "needs redis.sentinel_password_file");
    }
  } else {
    for (const char* k : {"master_name", "sentinel_username", "sentinel_password_file"}) {
      if (o.Get(k)) Fail(o.Key(k), "needs redis.sentinels");
    }
    redis.host = o.Str("host", redis.host);
    redis.port = static_cast<int>(o.Int("port", redis.port, 1, 65535));
  }
  redis.key_prefix = o.Str("key_prefix", redis.key_prefix);
  if (!IsKeyPrefix(redis.key_prefix)) {
    Fail("redis.key_prefix",
         "must be 1..64 of [A-Za-z0-9_.:-], with at most one hash tag {...} of those");
  }
  redis.ttl_ms = static_cast<int>(o.Int("ttl_ms", redis.ttl_ms, 100, 600000));
  if (const json* t = o.Get("tls")) redis.tls = ReadTls(*t, "redis.tls", redis.tls, false);
  redis.username = o.Str("username", "");
  redis.password_file = o.Str("password_file", "");
  if (!redis.username.empty() && redis.password_file.empty()) {
    Fail("redis.username", "needs redis.password_file");
  }
  o.RejectUnknownKeys();
}

void ReadHttp(const json& j, Config& c) {
  Obj o(j, "http");
  c.http_listen = o.Str("listen", c.http_listen);
  if (!ParseListenAddress(c.http_listen)) {
    Fail("http.listen", "must be \"address:port\", e.g. \"127.0.0.1:9877\"");
  }
  c.http.max_connections = static_cast<int>(o.Int("max_connections", 4, 1, 64));
  c.http.max_request_bytes = static_cast<int>(o.Int("max_request_bytes", 16384, 1024, 1 << 20));
  c.http.request_timeout_ms = static_cast<int>(o.Int("request_timeout_ms", 5000, 100, 60000));
  c.http.web_config_file = o.Str("web_config_file", "");
  if (!c.http.web_config_file.empty()) {
    auto web = LoadWebConfig(c.http.web_config_file);
    if (!web.ok()) Fail("http.web_config_file", web.status().message());
    c.http.web = std::move(web).value();
  }
  o.RejectUnknownKeys();
}

// An object with one integer key, e.g. "sampler": {"interval_ms": 50}.
int ReadSingleInt(const json& j, const std::string& section, const std::string& key, int def,
                  int lo, int hi) {
  Obj o(j, section);
  const int v = static_cast<int>(o.Int(key, def, lo, hi));
  o.RejectUnknownKeys();
  return v;
}

void ReadStream(const json& j, StreamConfig& s) {
  Obj o(j, "binlog_stream");
  if (const json* e = o.Get("enabled")) {
    if (!e->is_boolean()) Fail("binlog_stream.enabled", "must be true or false");
    s.enabled = e->get<bool>();
  }
  s.server_id = o.Int("server_id", 0, 0, 4294967295LL);
  s.heartbeat_ms = static_cast<int>(o.Int("heartbeat_ms", s.heartbeat_ms, 1, 1000));
  s.max_lag_ms = static_cast<int>(o.Int("max_lag_ms", s.max_lag_ms, 1, 10000));
  s.min_delivery_ms = static_cast<int>(o.Int("min_delivery_ms", s.min_delivery_ms, 0, 1000));
  if (const json* w = o.Get("watch_writes")) {
    if (!w->is_boolean()) Fail("binlog_stream.watch_writes", "must be true or false");
    s.watch_writes = w->get<bool>();
  }
  o.RejectUnknownKeys();
}

void ReadDiscovery(const json& j, Config& c) {
  Obj o(j, "discovery");
  DiscoveryConfig& d = c.discovery;
  if (const json* e = o.Get("enabled")) {
    if (!e->is_boolean()) Fail("discovery.enabled", "must be true or false");
    d.enabled = e->get<bool>();
  }
  d.interval_ms = static_cast<int>(o.Int("interval_ms", d.interval_ms, 100, 3'600'000));
  d.tier = o.Str("tier", "");
  d.weight = static_cast<int>(o.Int("weight", d.weight, 0, 1000));
  d.grace_ms = static_cast<int>(o.Int("grace_ms", d.grace_ms, 0, 86'400'000));
  d.max_replicas = static_cast<int>(o.Int("max_replicas", d.max_replicas, 1, 10000));
  o.RejectUnknownKeys();
  if (d.grace_ms < d.interval_ms) {
    Fail("discovery.grace_ms",
         "must be at least discovery.interval_ms (" + std::to_string(d.interval_ms) + ")");
  }
  if (d.tier.empty()) {
    for (const auto& t : c.tiers) {
      if (t.enabled) d.tier = t.name;
    }
    if (d.tier.empty()) d.tier = c.tiers.back().name;
  } else if (std::none_of(c.tiers.begin(), c.tiers.end(),
                          [&](const TierConfig& t) { return t.name == d.tier; })) {
    Fail("discovery.tier", "unknown tier \"" + d.tier + "\"");
  }
}

// REQUIRES: c.http_listen and c.redis read.
void ReadHaproxy(const json& j, Config& c) {
  Obj o(j, "haproxy");
  HaproxyConfig& h = c.haproxy;
  h.backend = o.Str("backend", h.backend);
  if (!IsHaproxyName(h.backend, 100)) {
    Fail("haproxy.backend", "must match [A-Za-z0-9_.:-]{1,100} (a HAProxy proxy name)");
  }
  h.push.resync_ms = static_cast<int>(o.Int("resync_ms", h.push.resync_ms, 100, 600000));
  h.push.timeout_ms = static_cast<int>(o.Int("timeout_ms", h.push.timeout_ms, 10, 60000));
  if (h.push.timeout_ms > h.push.resync_ms) {
    Fail("haproxy.timeout_ms",
         "must not exceed haproxy.resync_ms (" + std::to_string(h.push.resync_ms) + ")");
  }
  if (const json* list = o.Get("instances")) {
    if (!list->is_array() || list->size() > 32) {
      Fail("haproxy.instances", "must be an array of at most 32 instances");
    }
    std::set<std::string> names;
    for (size_t i = 0; i < list->size(); ++i) {
      Obj in((*list)[i], "haproxy.instances[" + std::to_string(i) + "]");
      HaproxyInstance instance;
      instance.name = in.Str("name", "", true);
      if (!IsToken(instance.name, "_.-", 1, 64)) {
        Fail(in.Key("name"), "must match [A-Za-z0-9_.-]{1,64}");
      }
      if (!names.insert(instance.name).second) {
        Fail(in.Key("name"), "duplicate instance \"" + instance.name + "\"");
      }
      instance.socket = in.Str("socket", "", true);
      if (!ParseHaproxySocket(instance.socket)) {
        Fail(in.Key("socket"),
             "must be the stats socket's absolute path (\"/run/haproxy/admin.sock\") or "
             "\"host:port\"");
      }
      instance.backend = in.Str("backend", h.backend);
      if (!IsHaproxyName(instance.backend, 100)) {
        Fail(in.Key("backend"), "must match [A-Za-z0-9_.:-]{1,100} (a HAProxy proxy name)");
      }
      in.RejectUnknownKeys();
      h.push.instances.push_back(std::move(instance));
    }
  }
  if (const json* a = o.Get("agent_check")) {
    Obj ac(*a, "haproxy.agent_check");
    h.agent_check.listen = ac.Str("listen", "", true);
    auto address = ParseListenAddress(h.agent_check.listen);
    if (!address || address->port == 0) {
      Fail("haproxy.agent_check.listen", "must be \"address:port\", e.g. \"127.0.0.1:9878\"");
    }
    if (h.agent_check.listen == c.http_listen) {
      Fail("haproxy.agent_check.listen", "must differ from http.listen");
    }
    h.agent_check.max_connections =
        static_cast<int>(ac.Int("max_connections", h.agent_check.max_connections, 1, 4096));
    h.agent_check.timeout_ms =
        static_cast<int>(ac.Int("timeout_ms", h.agent_check.timeout_ms, 10, 60000));
    ac.RejectUnknownKeys();
  }
  o.RejectUnknownKeys();
}

// `s` in double quotes, its control bytes escaped: text from the config or the environment.
std::string Quoted(const std::string& s) { return "\"" + EscapeControl(s) + "\""; }

// REQUIRES: c.primary read.
void ReadCluster(Obj& top, const std::optional<std::string>& instance, Config& c) {
  constexpr char kRule[] = "must be 1..64 of [A-Za-z0-9_.:-]";
  if (top.Get("cluster")) {
    c.cluster = top.Str("cluster", "");
    if (!IsClusterName(c.cluster)) {
      Fail("cluster", std::string(kRule) + ", got " + Quoted(c.cluster));
    }
  } else if (instance) {
    if (!IsClusterName(*instance)) {
      Fail("cluster", std::string("not set, and the default from ") + kInstanceVariable + " (" +
                          Quoted(*instance) + ") " + kRule);
    }
    c.cluster = *instance;
  } else {
    c.cluster = c.primary.Id();
    if (!IsClusterName(c.cluster)) {
      Fail("cluster", "not set, and the default, the primary's \"" + c.cluster + "\", " +
                          "is longer than 64: set cluster");
    }
  }
}

Config Parse(const json& root, const std::optional<std::string>& instance) {
  Config c;
  Obj top(root, "");
  c.agent_id = top.Int("agent_id", 1, 1, 2147483647);
  if (std::string v = top.Str("insecure_files", "refuse"); v == "warn") {
    c.insecure_files = InsecureFiles::kWarn;
  } else if (v != "refuse") {
    Fail("insecure_files", "must be \"refuse\" or \"warn\"");
  }
  if (std::string v = top.Str("positions", "auto"); v != "auto") {
    c.positions = ParsePositionsKind(v);
    if (!c.positions) {
      Fail("positions",
           "must be \"auto\", \"mariadb_gtid\", \"mysql_gtid\", \"binlog\" or \"none\"");
    }
  }
  if (const json* j = top.Get("tls")) c.mysql_tls = ReadTls(*j, "tls", c.mysql_tls, true);
  ReadPrimary(top, c);
  ReadCluster(top, instance, c);
  c.replica_defaults_file = top.Str("replica_defaults_file", "", true);
  if (const json* j = top.Get("heartbeat")) ReadHeartbeat(*j, c.heartbeat);
  if (const json* j = top.Get("sampler")) {
    c.sampler_interval_ms = ReadSingleInt(*j, "sampler", "interval_ms", 20, 5, 10000);
  }
  if (const json* j = top.Get("binlog_stream")) ReadStream(*j, c.binlog_stream);
  if (const json* j = top.Get("probe")) ReadProbe(*j, c.probe);
  c.tiers = ReadTiers(top.Get("tiers"));
  if (c.primary_tier.empty()) {
    c.primary_tier = c.tiers.front().name;
  } else if (std::none_of(c.tiers.begin(), c.tiers.end(),
                          [&](const TierConfig& t) { return t.name == c.primary_tier; })) {
    Fail("primary.tier", "unknown tier \"" + c.primary_tier + "\"");
  }
  ReadReplicas(top.Require("replicas"), c);
  if (const json* j = top.Get("health")) ReadHealth(*j, c.health);
  if (const json* j = top.Get("redis")) ReadRedis(*j, c.redis);
  if (const json* j = top.Get("http")) ReadHttp(*j, c);
  if (const json* j = top.Get("slo")) {
    c.slo_delay_ms = ReadSingleInt(*j, "slo", "delay_ms", 200, 1, 3'600'000);
  }
  if (const json* j = top.Get("discovery")) ReadDiscovery(*j, c);
  if (const json* j = top.Get("haproxy")) ReadHaproxy(*j, c);
  c.haproxy.push.ttl_ms = c.redis.ttl_ms;
  top.RejectUnknownKeys();
  return c;
}

// The files of every TLS block: CA files and certificates readable, keys checked as secrets.
// Logs the warning every start owes a block with verification off.
Status CheckTlsFiles(const Config& c) {
  std::vector<std::pair<std::string, const TlsOptions*>> blocks = {
      {"tls", &c.mysql_tls}, {"primary.tls", &c.primary_tls}, {"redis.tls", &c.redis.tls}};
  for (size_t i = 0; i < c.replicas.size(); ++i) {
    blocks.emplace_back("replicas[" + std::to_string(i) + "].tls", &c.replicas[i].tls);
  }
  for (const auto& [key, tls] : blocks) {
    if (!tls->enabled) continue;
    for (const auto& [name, file] :
         {std::pair<const char*, const std::string*>{"ca_file", &tls->ca_file},
          {"cert_file", &tls->cert_file}}) {
      if (!file->empty() && ::access(file->c_str(), R_OK) != 0) {
        return Status::InvalidArgument(key + "." + name + ": cannot read " + *file);
      }
    }
    if (!tls->key_file.empty()) {
      Status st = CheckSecretFile(key + ".key_file", tls->key_file, c.insecure_files,
                                  ", or set insecure_files to \"warn\"");
      if (!st.ok()) return st;
    }
    if (!tls->verify && (key == "tls" || key == "redis.tls" || *tls != c.mysql_tls)) {
      Log(LogLevel::kWarn, key +
                               ".verify_server_cert is false: the server's certificate is not "
                               "checked, so anyone on the path can pose as the server");
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<ReplicaConfig> Config::Servers() const {
  std::vector<ReplicaConfig> out = {{primary, primary_tier, primary_weight, primary_tls}};
  out.insert(out.end(), replicas.begin(), replicas.end());
  return out;
}

const TlsOptions& Config::MysqlTlsFor(const Endpoint& server) const {
  if (server == primary) return primary_tls;
  for (const auto& r : replicas) {
    if (r.endpoint == server) return r.tls;
  }
  return mysql_tls;
}

const TierConfig& Config::Tier(const std::string& name) const {
  for (const auto& t : tiers) {
    if (t.name == name) return t;
  }
  return tiers.front();
}

std::optional<std::string> InstanceFromEnvironment() {
  const char* v = std::getenv(kInstanceVariable);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

bool IsClusterName(const std::string& name) { return IsToken(name, "_.:-", 1, 64); }

Result<Config> ParseConfig(const std::string& json_text) {
  return ParseConfig(json_text, InstanceFromEnvironment());
}

Result<Config> ParseConfig(const std::string& json_text,
                           const std::optional<std::string>& instance) {
  json root;
  try {
    root = json::parse(json_text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    return Status::InvalidArgument(std::string("(syntax): ") + e.what());
  }
  try {
    return Parse(root, instance);
  } catch (const ConfigError& e) {
    return Status::InvalidArgument(e.what());
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("(value): ") + e.what());
  }
}

Result<Config> ReadConfigFile(const std::string& path, const std::optional<std::string>& instance) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(path + ": cannot open config file");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(path + ": cannot read config file");
  return ParseConfig(buf.str(), instance);
}

Result<Config> LoadConfig(const std::string& path) {
  return LoadConfig(path, InstanceFromEnvironment());
}

Result<Config> LoadConfig(const std::string& path, const std::optional<std::string>& instance) {
  auto config = ReadConfigFile(path, instance);
  if (!config.ok()) return config;
  Config& c = config.value();
  const std::pair<const char*, const std::string*> secrets[] = {
      {"primary.defaults_file", &c.primary_defaults_file},
      {"replica_defaults_file", &c.replica_defaults_file},
      {"redis.password_file", &c.redis.password_file},
      {"redis.sentinel_password_file", &c.redis.sentinel_password_file}};
  for (const auto& [key, file] : secrets) {
    if (file->empty()) continue;
    Status st =
        CheckSecretFile(key, *file, c.insecure_files, ", or set insecure_files to \"warn\"");
    if (!st.ok()) return st;
  }
  if (Status st = CheckTlsFiles(c); !st.ok()) return st;
  struct Password {
    const char* key;
    const std::string& file;
    std::string& password;
  };
  for (const Password& p :
       {Password{"redis.password_file", c.redis.password_file, c.redis.password},
        Password{"redis.sentinel_password_file", c.redis.sentinel_password_file,
                 c.redis.sentinel_password}}) {
    if (p.file.empty()) continue;
    auto line = ReadSecretLine(p.key, p.file);
    if (!line.ok()) return line.status();
    p.password = std::move(line.value());
  }
  return config;
}

}  // namespace lagwatch
