// The Redis contract's vocabulary (docs/redis.md), in one place for every floor: the agent that
// writes it, the exporters that publish and read it, `lagwatch status`, and the routers' client
// library. Key shapes, record field names, replica states, the events' shape and the routers'
// rw_stats fields: a name changes here or nowhere.
// Thread-safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/snapshot.h"

namespace lagwatch::contract {

// ---- Keys ---------------------------------------------------------------------------------

inline constexpr std::string_view kDefaultPrefix = "slave_delay";
// "<prefix>:<host>:<port>": one replica's hash.
std::string ReplicaKey(std::string_view prefix, std::string_view id);
// "<prefix>:replicas": the set of replica ids ("host:port").
std::string ReplicaSetKey(std::string_view prefix);
// "<prefix>:events": the channel of verdict changes.
std::string EventsChannel(std::string_view prefix);
// "<prefix>:primary": the pointer to the current primary's hash.
std::string PrimaryPointerKey(std::string_view prefix);
// "lagwatch:primary:<host>:<port>": the primary's hash (no prefix: docs/redis.md#the-primary).
std::string PrimaryKey(std::string_view id);
// "rw_stats:": the routers' feedback hashes, "rw_stats:<app>".
inline constexpr std::string_view kRwStatsPrefix = "rw_stats:";

// ---- A replica's record (fields of its hash) --------------------------------------------------

namespace field {
inline constexpr char kDelayMs[] = "delay_ms";
inline constexpr char kDelayLowerMs[] = "delay_lower_ms";
inline constexpr char kState[] = "state";
inline constexpr char kHealthy[] = "healthy";
inline constexpr char kTier[] = "tier";
inline constexpr char kWeight[] = "weight";
inline constexpr char kMaxDelayMs[] = "max_delay_ms";
inline constexpr char kSeq[] = "seq";
inline constexpr char kMeasuredAtMs[] = "measured_at_ms";
// The same bound stated at the answer's own microsecond: delay_us at measured_at_us.
inline constexpr char kDelayUs[] = "delay_us";
inline constexpr char kMeasuredAtUs[] = "measured_at_us";
inline constexpr char kAgent[] = "agent";
inline constexpr char kPosition[] = "position";
inline constexpr char kPositionKind[] = "position_kind";
// The replication cluster the agent that wrote it watches (its `cluster`: docs/configuration.md);
// also a field of the primary's hash and pointer, and of every event.
inline constexpr char kCluster[] = "cluster";
}  // namespace field

// The replica states a record may carry, in the order of lagwatch_replica_state's series and of
// the agent's ReplicaState enum (agent/health.h).
inline constexpr const char* kReplicaStates[] = {
    "ok", "lagging", "stopped", "unreachable", "primary_unknown", "disabled", "unverified"};
inline constexpr size_t kReplicaStateCount = std::size(kReplicaStates);
// The API's and `lagwatch status`'s name for the server that is the primary (it has no record).
inline constexpr char kPrimaryViewState[] = "primary";
// Whether `s` is one of kReplicaStates.
bool IsReplicaState(std::string_view s);

// The topology's states (agent/topology.h) as the primary's hash and the metrics name them.
inline constexpr const char* kTopologyStates[] = {"ok", "unknown", "ambiguous"};
// Whether `s` is one of kTopologyStates.
bool IsTopologyState(std::string_view s);

// ---- The primary (`<prefix>:primary` and `lagwatch:primary:<host>:<port>`) -------------------

// The primary's circuit as its hash and the pointer carry it, in the order of
// lagwatch_primary_state's series ("ambiguous" only in the pointer, while the topology is).
inline constexpr const char* kPrimaryStates[] = {"up", "degraded", "down"};
inline constexpr char kPrimaryAmbiguous[] = "ambiguous";

namespace primary_field {
// The pointer's fields.
inline constexpr char kPrimary[] = "primary";  // host:port
inline constexpr char kState[] = "state";
inline constexpr char kTopology[] = "topology";
// The primary's hash adds these.
inline constexpr char kLastWriteMs[] = "last_write_ms";
inline constexpr char kConsecutiveFailures[] = "consecutive_failures";
inline constexpr char kReadOnly[] = "read_only";
// Both carry the cluster, as a replica's record does.
using field::kCluster;
}  // namespace primary_field

// ---- Events (`<prefix>:events`) ---------------------------------------------------------------

// The verdict a replica had before a change; none for its first verdict.
struct PreviousVerdict {
  std::string state;
  bool healthy = false;
};
// A replica's verdict change: {"replica", "state", "previous_state", "healthy",
// "previous_healthy", "delay_ms", "measured_at_ms", "agent", "cluster"} (previous_* null for the
// first).
std::string ReplicaEventJson(const ReplicaSnapshot& record,
                             const std::optional<PreviousVerdict>& previous);

// The primary moved, or the topology became ambiguous or stopped being so: {"event": "primary",
// "primary", "previous_primary" (null unless it moved), "topology", "agent", "cluster"} and, while
// ambiguous, "writable" (the writable servers, ", "-separated).
std::string PrimaryEventJson(std::string_view primary, const std::optional<std::string>& previous,
                             std::string_view topology, int64_t agent_id, std::string_view cluster,
                             const std::optional<std::string>& writable);

// ---- Router feedback (`rw_stats:<app>` fields) ------------------------------------------------

namespace rw_stats {
inline constexpr char kReadsReplica[] = "reads_replica";
inline constexpr char kReadsMaster[] = "reads_master";
// "reads_replica:<host>:<port>": reads served by one replica.
inline constexpr std::string_view kReplicaReadsPrefix = "reads_replica:";
inline constexpr char kDegradeAttempts[] = "degrade_attempts";
inline constexpr char kDegradeSuccesses[] = "degrade_successes";
}  // namespace rw_stats

}  // namespace lagwatch::contract
