// The JSON shapes of the HTTP API (README "HTTP API"): one function per document, from the
// agent's views. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/endpoint.h"
#include "base/snapshot.h"

namespace lagwatch {

// One replica as GET /api/v1/replicas lists it: every Redis field (docs/redis.md), its
// replication status, rolling windows, and its last error with the time it happened.
nlohmann::json ReplicaJson(const ReplicaInfo& info, const ReplicaView& view);

// Which server it is: {"flavor", "version", "comment", "description"}.
nlohmann::json ServerJson(const ServerFlavor& flavor);

// GET /api/v1/primary; `server`: the primary's flavor, nullopt until the sampler asked.
nlohmann::json PrimaryJson(const Endpoint& primary, const PrimaryView& view,
                           int64_t heartbeat_interval_ms, int64_t last_seq,
                           std::optional<int64_t> last_sample_age_ms,
                           const std::optional<ServerFlavor>& server);

}  // namespace lagwatch
