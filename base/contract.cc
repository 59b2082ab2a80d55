#include "base/contract.h"

#include <nlohmann/json.hpp>

namespace lagwatch::contract {

std::string ReplicaKey(std::string_view prefix, std::string_view id) {
  return std::string(prefix) + ":" + std::string(id);
}

std::string ReplicaSetKey(std::string_view prefix) { return std::string(prefix) + ":replicas"; }

std::string EventsChannel(std::string_view prefix) { return std::string(prefix) + ":events"; }

std::string PrimaryPointerKey(std::string_view prefix) { return std::string(prefix) + ":primary"; }

std::string PrimaryKey(std::string_view id) { return "lagwatch:primary:" + std::string(id); }

bool IsReplicaState(std::string_view s) {
  for (const char* state : kReplicaStates) {
    if (s == state) return true;
  }
  return false;
}

bool IsTopologyState(std::string_view s) {
  for (const char* state : kTopologyStates) {
    if (s == state) return true;
  }
  return false;
}

std::string ReplicaEventJson(const ReplicaSnapshot& record,
                             const std::optional<PreviousVerdict>& previous) {
  nlohmann::json e = {{"replica", record.id},
                      {field::kState, record.state},
                      {"previous_state", nullptr},
                      {field::kHealthy, record.healthy ? 1 : 0},
                      {"previous_healthy", nullptr},
                      {field::kDelayMs, record.delay_ms},
                      {field::kMeasuredAtMs, record.measured_at_ms},
                      {field::kAgent, record.agent_id},
                      {field::kCluster, record.cluster}};
  if (previous) {
    e["previous_state"] = previous->state;
    e["previous_healthy"] = previous->healthy ? 1 : 0;
  }
  return e.dump();
}

std::string PrimaryEventJson(std::string_view primary, const std::optional<std::string>& previous,
                             std::string_view topology, int64_t agent_id, std::string_view cluster,
                             const std::optional<std::string>& writable) {
  nlohmann::json e = {{"event", "primary"},          {primary_field::kPrimary, primary},
                      {"previous_primary", nullptr}, {primary_field::kTopology, topology},
                      {field::kAgent, agent_id},     {field::kCluster, cluster}};
  if (previous) e["previous_primary"] = *previous;
  if (writable) e["writable"] = *writable;
  return e.dump();
}

}  // namespace lagwatch::contract
