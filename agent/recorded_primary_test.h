// For the agent's unit tests: times on a fixed timeline, and the primary as the agent records it.
#pragma once

#include <string>

#include "base/clock.h"
#include "base/gtid.h"
#include "base/test_values.h"
#include "heartbeat/history.h"

namespace lagwatch::testing {

// The primary as the agent recorded it: heartbeats every 500 ms (seq k sent at 500k ms,
// acknowledged 2 ms later) and a position sample every 50 ms that grows with each heartbeat.
struct RecordedPrimary {
  HeartbeatLog log;
  PositionHistory history;
  explicit RecordedPrimary(int until_ms) {
    for (int k = 1; 500 * k <= until_ms; ++k) {
      log.RecordSent(static_cast<uint64_t>(k), T(500 * k));
      log.RecordAcked(static_cast<uint64_t>(k), T(500 * k + 2));
    }
    for (int t = 0; t <= until_ms; t += 50) {
      history.Add(P("0-1-" + std::to_string(t / 500)), T(t), T(t + 1));
    }
  }
};

}  // namespace lagwatch::testing
