#include "agent/reload.h"

namespace lagwatch {

namespace {

bool SameTier(const TierConfig& a, const TierConfig& b) {
  return a.name == b.name && a.max_delay_ms == b.max_delay_ms && a.enabled == b.enabled;
}

bool SameTiers(const std::vector<TierConfig>& a, const std::vector<TierConfig>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameTier(a[i], b[i])) return false;
  }
  return true;
}

bool SameHealth(const HealthConfig& a, const HealthConfig& b) {
  return a.keep_caught_up_when_primary_unknown == b.keep_caught_up_when_primary_unknown &&
         a.recover_ratio == b.recover_ratio && a.recover_probes == b.recover_probes;
}

}  // namespace

bool ProberSettingsChanged(const Config& a, const Config& b) {
  return !SameTiers(a.tiers, b.tiers) || !SameHealth(a.health, b.health) ||
         a.slo_delay_ms != b.slo_delay_ms;
}

std::string FirstUnreloadableChange(const Config& a, const Config& b) {
  // Every series, record and event carries it: a new name would leave the old ones behind.
  if (a.cluster != b.cluster) return "cluster";
  if (a.agent_id != b.agent_id) return "agent_id";
  if (a.positions != b.positions) return "positions";
  if (a.primary.Id() != b.primary.Id() || a.primary_defaults_file != b.primary_defaults_file) {
    return "primary";
  }
  if (a.replica_defaults_file != b.replica_defaults_file) return "replica_defaults_file";
  // The writer and the sampler keep their primary's; a replica's own `tls` reloads.
  if (a.mysql_tls != b.mysql_tls || a.primary_tls != b.primary_tls) return "tls";
  if (a.heartbeat.QualifiedName() != b.heartbeat.QualifiedName() ||
      a.heartbeat.interval_ms != b.heartbeat.interval_ms ||
      a.heartbeat.create_table != b.heartbeat.create_table) {
    return "heartbeat";
  }
  if (a.sampler_interval_ms != b.sampler_interval_ms) return "sampler";
  if (a.binlog_stream != b.binlog_stream) return "binlog_stream";
  if (a.probe.interval_ms != b.probe.interval_ms || a.probe.timeout_ms != b.probe.timeout_ms ||
      a.probe.status_interval_ms != b.probe.status_interval_ms ||
      a.probe.threads != b.probe.threads || a.probe.realtime != b.probe.realtime ||
      a.probe.after_commit_ms != b.probe.after_commit_ms) {
    return "probe";
  }
  if (a.redis != b.redis) return "redis";
  if (a.http_listen != b.http_listen || a.http != b.http) return "http";
  if (a.discovery != b.discovery) return "discovery";
  if (a.haproxy != b.haproxy) return "haproxy";
  return "";
}

}  // namespace lagwatch
