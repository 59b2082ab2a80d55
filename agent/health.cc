#include "agent/health.h"

#include "base/contract.h"

namespace lagwatch {

// The enum follows the contract's list (base/contract.h), one to one.
static_assert(static_cast<size_t>(ReplicaState::kUnverified) + 1 == contract::kReplicaStateCount);

const char* StateName(ReplicaState s) {
  const auto i = static_cast<size_t>(s);
  return i < contract::kReplicaStateCount ? contract::kReplicaStates[i] : "unknown";
}

bool HealthTracker::LagWithinLimit(const HealthInput& in) {
  if (!in.delay_ms) {
    lag_ok_ = false;
    good_streak_ = 0;
    return false;
  }
  if (!in.max_delay_ms) {
    lag_ok_ = true;
    return true;
  }
  const int64_t limit = *in.max_delay_ms;
  if (!in.primary_known || in.bound_spans_outage) {
    if (in.delay_lower_ms && *in.delay_lower_ms > limit) {
      measured_ = true;
      lag_ok_ = false;
      good_streak_ = 0;
    }
    return lag_ok_;
  }
  const bool first_measurement = !measured_;
  measured_ = true;
  if (*in.delay_ms > limit) {
    lag_ok_ = false;
    good_streak_ = 0;
  } else if (first_measurement) {
    lag_ok_ = true;
  } else if (!lag_ok_) {
    if (*in.delay_ms <= static_cast<int64_t>(policy_.recover_ratio * static_cast<double>(limit))) {
      if (++good_streak_ >= policy_.recover_probes) lag_ok_ = true;
    } else {
      good_streak_ = 0;
    }
  }
  return lag_ok_;
}

HealthTracker::Verdict HealthTracker::Update(const HealthInput& in) {
  Verdict v;
  // The lag hysteresis runs on every measured probe so its streak is right when other conditions
  // clear.
  bool lag_ok = false;
  if (in.reachable) {
    lag_ok = LagWithinLimit(in);
  } else {
    good_streak_ = 0;
    lag_ok_ = false;
    measured_ = false;
  }
  if (!in.reachable) {
    v.state = ReplicaState::kUnreachable;
  } else if (!in.threads_running) {
    v.state = ReplicaState::kStopped;
  } else if (!in.source_verified) {
    v.state = ReplicaState::kUnverified;
  } else if (!in.primary_known) {
    v.state = ReplicaState::kPrimaryUnknown;
  } else if (!lag_ok) {
    v.state = ReplicaState::kLagging;
  } else if (!in.tier_enabled) {
    v.state = ReplicaState::kDisabled;
  } else {
    v.state = ReplicaState::kOk;
  }
  v.healthy = v.state == ReplicaState::kOk ||
              (v.state == ReplicaState::kPrimaryUnknown && in.threads_running && in.tier_enabled &&
               in.caught_up_with_primary && policy_.keep_caught_up_when_primary_unknown);
  v.changed = first_ || v.state != last_.state || v.healthy != last_.healthy;
  first_ = false;
  last_ = v;
  return v;
}

}  // namespace lagwatch
