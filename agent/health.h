// The routing verdict for one replica (docs/measurement.md, "Health"): its state and whether
// routers may read from it, with hysteresis so a replica near its tier's limit does not flap.
//
// Going unhealthy is immediate (a router must stop reading stale data at once); coming back from
// lag requires `recover_probes` consecutive probes at or under `recover_ratio` × the tier limit.
// After being unreachable, the first measurement decides at once, as at start-up. While the
// primary is unknown the upper bound grows with the outage, not with the replica, so only proof
// that the replica fell behind (its lower bound over the limit) changes the lag verdict, and so
// right after the outage while its bound still reaches back into it: a replica that kept up is
// within its limit at the first probe once the primary is back.
// Thread-compatible: owned by the replica's prober.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lagwatch {

// In the order of base/contract.h's kReplicaStates (StateName gives the contract's names).
enum class ReplicaState {
  kOk,
  kLagging,
  kStopped,
  kUnreachable,
  kPrimaryUnknown,
  kDisabled,
  kUnverified,
};

const char* StateName(ReplicaState s);

// Everything the verdict depends on, as of one probe.
struct HealthInput {
  bool reachable = false;
  bool threads_running = false;  // Slave_IO_Running and Slave_SQL_Running both Yes
  // It replicates from the current primary (directly, or through configured replicas), and the
  // topology is not ambiguous (agent/topology.h): otherwise its data is in doubt whatever its lag.
  bool source_verified = true;
  bool primary_known = true;  // the primary answered lately (heartbeat acked or position read)
  // The replica had applied everything the primary had when it was last heard from.
  bool caught_up_with_primary = false;
  bool tier_enabled = true;
  std::optional<int64_t> max_delay_ms;  // nullopt: the tier has no limit
  std::optional<int64_t> delay_ms;      // upper bound; nullopt: never measured
  // This probe's lower bound, when it measured: proof of how far behind the replica is.
  std::optional<int64_t> delay_lower_ms;
  // The upper bound is anchored in the primary's last outage: the replica had everything the
  // primary had before it, and only the outage's unknown stretch separates it from the newest
  // sample. Judged like a probe while the primary is unknown: on the lower bound.
  bool bound_spans_outage = false;
};

struct HealthPolicy {
  double recover_ratio = 0.8;
  int recover_probes = 2;
  // While the primary is unknown, a caught-up replica stays healthy (state primary_unknown).
  bool keep_caught_up_when_primary_unknown = true;
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
  // Forgets the lag verdict and its streak (the primary moved: nothing measured against the old
  // one counts), keeping the last verdict so the next one still reports a change.
  void Reset() {
    measured_ = false;
    lag_ok_ = false;
    good_streak_ = 0;
  }
  // Coming back from lag: the last probe was within the recovery ratio, but the streak is not
  // complete yet. The prober probes again at once, so recovery costs round trips, not ticks.
  bool recovering() const { return !lag_ok_ && good_streak_ > 0; }

 private:
  // Whether the lag part of the verdict currently holds, with hysteresis.
  bool LagWithinLimit(const HealthInput& in);

  const HealthPolicy policy_;
  // A delay has been seen since the replica was last reachable; a first measurement needs no
  // recovery streak (there is nothing to recover from).
  bool measured_ = false;
  bool lag_ok_ = false;
  int good_streak_ = 0;
  Verdict last_;
  bool first_ = true;
};

}  // namespace lagwatch
