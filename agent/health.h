// The routing verdict for one replica (DESIGN.md §3.5): its state and whether routers may read
// from it, with hysteresis so a replica near its tier's limit does not flap.
//
// Going unhealthy is immediate (a router must stop reading stale data at once); coming back
// requires `recover_probes` consecutive probes at or under `recover_ratio` × the tier limit.
// Thread-compatible: owned by the replica's prober.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lagwatch {

enum class ReplicaState { kOk, kLagging, kStopped, kUnreachable, kPrimaryUnknown, kDisabled };

const char* StateName(ReplicaState s);

// Everything the verdict depends on, as of one probe.
struct HealthInput {
  bool reachable = false;
  bool threads_running = false;  // Slave_IO_Running and Slave_SQL_Running both Yes
  bool primary_known = true;     // heartbeats are being acknowledged
  bool tier_enabled = true;
  std::optional<int64_t> max_delay_ms;  // nullopt: the tier has no limit
  std::optional<int64_t> delay_ms;      // upper bound; nullopt: never measured
};

struct HealthPolicy {
  double recover_ratio = 0.8;
  int recover_probes = 2;
};

class HealthTracker {
 public:
  explicit HealthTracker(HealthPolicy policy = {}) : policy_(policy) {}

  struct Verdict {
    ReplicaState state = ReplicaState::kUnreachable;
    bool healthy = false;
    bool changed = false;  // state or healthy differ from the previous verdict
  };
  Verdict Update(const HealthInput& in);
  const Verdict& last() const { return last_; }

 private:
  // Whether the lag part of the verdict currently holds, with hysteresis.
  bool LagWithinLimit(const HealthInput& in);

  const HealthPolicy policy_;
  bool measured_ = false;  // a delay has been seen; before that nothing needs recovering from
  bool lag_ok_ = false;
  int good_streak_ = 0;
  Verdict last_;
  bool first_ = true;
};

}  // namespace lagwatch
