// One replica's published record (DESIGN.md §4): what the prober produces after every probe and
// what the Redis publisher, the metrics and the API show. A value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/clock.h"

namespace lagwatch {

struct ReplicaSnapshot {
  std::string id;              // "host:port"
  int64_t delay_ms = 0;        // upper bound at the probe
  int64_t delay_lower_ms = 0;  // lower bound at the probe
  std::string state;           // StateName()
  bool healthy = false;
  std::string tier;
  int weight = 0;
  std::optional<int64_t> max_delay_ms;  // nullopt: the tier has no limit
  uint64_t seq = 0;                     // last heartbeat seq seen on the replica
  int64_t measured_at_ms = 0;           // agent wall clock, unix ms
  int64_t agent_id = 0;
  MonoTime measured_mono;  // the same moment on the monotonic clock (not published)
};

}  // namespace lagwatch

namespace lagwatch {

// The primary's published record: `lagwatch:primary:<host>:<port>` (DESIGN.md §4).
struct PrimarySnapshot {
  std::string id;             // "host:port"
  std::string state;          // "up", "degraded", "down"
  int64_t last_write_ms = 0;  // unix ms of the last acknowledged heartbeat; 0: none yet
  int consecutive_failures = 0;
  bool read_only = false;  // the primary is read-only, so the writer is paused
  MonoTime measured_mono;  // when this was decided (not published)
};

}  // namespace lagwatch
