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

// MySQL 8.0+'s applier signals (docs/api.md, "applier"): {"available", "reason", the fields of
// the channel named `judged_channel` (else the only one; all null when neither), "replica_now",
// "channels": every channel's fields}. Diagnostics beside the bound: the timestamps are the
// servers' text, never compared with the agent's clock.
nlohmann::json ApplierJson(const ApplierView& applier, const std::string& judged_channel);

// Which server it is: {"flavor", "version", "comment", "description"}.
nlohmann::json ServerJson(const ServerFlavor& flavor);

// GET /api/v1/primary; `server`: the primary's flavor, nullopt until the sampler asked.
nlohmann::json PrimaryJson(const Endpoint& primary, const PrimaryView& view,
                           int64_t heartbeat_interval_ms, int64_t last_seq,
                           std::optional<int64_t> last_sample_age_ms,
                           const std::optional<ServerFlavor>& server);

}  // namespace lagwatch
