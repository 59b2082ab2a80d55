// Fuzzes ParseConfig (agent/config.h) with the input as the JSON text. Beyond not crashing (or
// throwing: an exception escaping ParseConfig aborts), a rejected text must be InvalidArgument with
// a message, and an accepted one must satisfy every limit the parser documents and enforces.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "agent/config.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

bool AllOf(std::string_view s, size_t min, size_t max, std::string_view extra) {
  if (s.size() < min || s.size() > max) return false;
  for (char c : s) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool In(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

void CheckEndpoint(const Endpoint& e, const std::string& what) {
  FUZZ_CHECK(AllOf(e.host, 1, 253, "._:-"), what + " host \"" + e.host + "\"");
  FUZZ_CHECK(In(e.port, 1, 65535), what + " port " + std::to_string(e.port));
}

void CheckLimits(const Config& c) {
  FUZZ_CHECK(In(c.agent_id, 1, 2147483647), std::to_string(c.agent_id));
  CheckEndpoint(c.primary, "primary");
  FUZZ_CHECK(!c.primary_defaults_file.empty() && !c.replica_defaults_file.empty(), "");
  FUZZ_CHECK(AllOf(c.heartbeat.database, 1, 64, "_$") && AllOf(c.heartbeat.table, 1, 64, "_$"),
             c.heartbeat.QualifiedName());
  FUZZ_CHECK(In(c.heartbeat.interval_ms, 50, 60000), std::to_string(c.heartbeat.interval_ms));
  FUZZ_CHECK(In(c.sampler_interval_ms, 5, 10000), std::to_string(c.sampler_interval_ms));

  const ProbeConfig& p = c.probe;
  FUZZ_CHECK(In(p.interval_ms, 10, 60000) && In(p.timeout_ms, 10, p.interval_ms) &&
                 In(p.status_interval_ms, p.interval_ms, 600000) && In(p.threads, 1, 64),
             std::to_string(p.interval_ms) + " " + std::to_string(p.timeout_ms) + " " +
                 std::to_string(p.status_interval_ms) + " " + std::to_string(p.threads));

  FUZZ_CHECK(!c.tiers.empty(), "no tiers");
  std::set<std::string> tiers;
  for (const TierConfig& t : c.tiers) {
    FUZZ_CHECK(AllOf(t.name, 1, 32, "_-"), t.name);
    FUZZ_CHECK(tiers.insert(t.name).second, "duplicate tier " + t.name);
    FUZZ_CHECK(!t.max_delay_ms || In(*t.max_delay_ms, 1, 86'400'000),
               std::to_string(*t.max_delay_ms));
  }

  FUZZ_CHECK(!c.replicas.empty(), "no replicas");
  std::set<std::string> ids;
  for (const ReplicaConfig& r : c.replicas) {
    CheckEndpoint(r.endpoint, "replica");
    FUZZ_CHECK(ids.insert(r.endpoint.Id()).second, "duplicate replica " + r.endpoint.Id());
    FUZZ_CHECK(r.endpoint.Id() != c.primary.Id(), "replica is the primary " + r.endpoint.Id());
    FUZZ_CHECK(tiers.count(r.tier) && c.Tier(r.tier).name == r.tier, "unknown tier " + r.tier);
    FUZZ_CHECK(In(r.weight, 0, 1000), std::to_string(r.weight));
  }

  FUZZ_CHECK(c.health.recover_ratio > 0 && c.health.recover_ratio <= 1,
             std::to_string(c.health.recover_ratio));
  FUZZ_CHECK(In(c.health.recover_probes, 1, 100), std::to_string(c.health.recover_probes));
  FUZZ_CHECK(!c.redis.host.empty() && In(c.redis.port, 1, 65535), c.redis.host);
  std::set<std::string> sentinels;
  for (const Endpoint& s : c.redis.sentinels) {
    CheckEndpoint(s, "sentinel");
    FUZZ_CHECK(sentinels.insert(s.Id()).second, "duplicate sentinel " + s.Id());
  }
  FUZZ_CHECK(c.redis.sentinels.empty() ? c.redis.master_name.empty()
                                       : AllOf(c.redis.master_name, 1, 64, "_.:-"),
             c.redis.master_name);
  FUZZ_CHECK(!c.redis.sentinels.empty() || c.redis.sentinel_password_file.empty(),
             c.redis.sentinel_password_file);
  FUZZ_CHECK(AllOf(c.redis.key_prefix, 1, 64, "_.:-"), c.redis.key_prefix);
  FUZZ_CHECK(In(c.redis.ttl_ms, 100, 600000), std::to_string(c.redis.ttl_ms));
  FUZZ_CHECK(c.http_listen.size() <= 1 + 253 + 2 + 5, c.http_listen);
  size_t colon = c.http_listen.rfind(':');
  FUZZ_CHECK(colon != std::string::npos && colon > 0 &&
                 AllOf(c.http_listen.substr(colon + 1), 1, 5, "") &&
                 std::stoi(c.http_listen.substr(colon + 1)) <= 65535,
             c.http_listen);
  FUZZ_CHECK(In(c.slo_delay_ms, 1, 3'600'000), std::to_string(c.slo_delay_ms));
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using lagwatch::Status;
  const std::string text(reinterpret_cast<const char*>(data), size);
  lagwatch::Result<lagwatch::Config> config = lagwatch::ParseConfig(text);
  if (config.ok()) {
    lagwatch::CheckLimits(*config);
  } else {
    FUZZ_CHECK(config.status().code() == Status::Code::kInvalidArgument &&
                   !config.status().message().empty(),
               config.status().ToString());
  }
  return 0;
}
