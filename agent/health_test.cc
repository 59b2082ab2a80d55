#include "agent/health.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

HealthInput Measured(int64_t delay_ms, int64_t limit = 200) {
  HealthInput in;
  in.reachable = true;
  in.threads_running = true;
  in.max_delay_ms = limit;
  in.delay_ms = delay_ms;
  return in;
}

TEST_CASE("a replica within its tier limit is ok and healthy from the first probe") {
  HealthTracker h;
  auto v = h.Update(Measured(20));
  CHECK(v.state == ReplicaState::kOk);
  CHECK(v.healthy);
  CHECK(v.changed);
  v = h.Update(Measured(40));
  CHECK_FALSE(v.changed);
}

TEST_CASE("crossing the limit is unhealthy at once, recovery needs two probes under 80 %") {
  HealthTracker h;
  h.Update(Measured(50));
  auto v = h.Update(Measured(201));
  CHECK(v.state == ReplicaState::kLagging);
  CHECK_FALSE(v.healthy);
  CHECK(v.changed);
  // At the limit but above the recovery level: stays out.
  CHECK_FALSE(h.Update(Measured(190)).healthy);
  CHECK_FALSE(h.Update(Measured(170)).healthy);
  CHECK_FALSE(h.Update(Measured(150)).healthy);  // first good one
  v = h.Update(Measured(150));                   // second good one
  CHECK(v.healthy);
  CHECK(v.changed);
}

TEST_CASE("a replica hovering at its limit does not flap") {
  HealthTracker h;
  h.Update(Measured(50));
  int flips = 0;
  bool last = true;
  for (int i = 0; i < 100; ++i) {
    bool healthy = h.Update(Measured(i % 2 ? 205 : 180)).healthy;
    flips += healthy != last;
    last = healthy;
  }
  CHECK(flips == 1);
}

TEST_CASE("states take precedence: unreachable, stopped, unverified, primary_unknown, lagging") {
  HealthTracker h;
  HealthInput in = Measured(500);
  in.reachable = false;
  in.source_verified = false;
  CHECK(h.Update(in).state == ReplicaState::kUnreachable);
  in.reachable = true;
  in.threads_running = false;
  CHECK(h.Update(in).state == ReplicaState::kStopped);
  in.threads_running = true;
  in.primary_known = false;
  CHECK(h.Update(in).state == ReplicaState::kUnverified);
  in.source_verified = true;
  CHECK(h.Update(in).state == ReplicaState::kPrimaryUnknown);
  in.primary_known = true;
  CHECK(h.Update(in).state == ReplicaState::kLagging);
  HealthTracker d;
  HealthInput off = Measured(10);
  off.tier_enabled = false;
  auto v = d.Update(off);
  CHECK(v.state == ReplicaState::kDisabled);
  CHECK_FALSE(v.healthy);
}

TEST_CASE("a tier without a limit is healthy at any measured lag, never when unmeasured") {
  HealthTracker h;
  HealthInput in = Measured(100000);
  in.max_delay_ms.reset();
  CHECK(h.Update(in).healthy);
  in.delay_ms.reset();
  CHECK_FALSE(h.Update(in).healthy);
}

TEST_CASE("after being unreachable the first measurement decides at once, as at start-up") {
  HealthTracker h;
  h.Update(Measured(10));
  HealthInput down = Measured(10);
  down.reachable = false;
  CHECK_FALSE(h.Update(down).healthy);
  CHECK(h.Update(Measured(10)).healthy);
  CHECK_FALSE(h.Update(down).healthy);
  CHECK_FALSE(h.Update(Measured(250)).healthy);
}

TEST_CASE("while the primary is unknown only caught-up replicas stay healthy, if so configured") {
  HealthInput in = Measured(900);  // the bound grows while nothing is heard from the primary
  in.primary_known = false;
  in.caught_up_with_primary = true;
  HealthTracker keep;
  auto v = keep.Update(in);
  CHECK(v.state == ReplicaState::kPrimaryUnknown);
  CHECK(v.healthy);
  in.caught_up_with_primary = false;
  CHECK_FALSE(keep.Update(in).healthy);

  HealthTracker strict(HealthPolicy{.keep_caught_up_when_primary_unknown = false});
  in.caught_up_with_primary = true;
  v = strict.Update(in);
  CHECK(v.state == ReplicaState::kPrimaryUnknown);
  CHECK_FALSE(v.healthy);
}

TEST_CASE("a stopped replica is not kept healthy by a primary outage") {
  HealthTracker h;
  HealthInput in = Measured(10);
  in.primary_known = false;
  in.caught_up_with_primary = true;
  in.threads_running = false;
  auto v = h.Update(in);
  CHECK(v.state == ReplicaState::kStopped);
  CHECK_FALSE(v.healthy);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

// A probe while the primary is unknown: its upper bound `delay_ms` grown by the outage, its lower
// bound `lower_ms` the proof of how far behind it is.
HealthInput DuringOutage(int64_t delay_ms, int64_t lower_ms, bool caught_up) {
  HealthInput in = Measured(delay_ms);
  in.primary_known = false;
  in.caught_up_with_primary = caught_up;
  in.delay_lower_ms = lower_ms;
  return in;
}

TEST_CASE("a primary outage alone does not make a caught-up replica lagging, nor need recovery") {
  HealthTracker h;
  CHECK(h.Update(Measured(20)).healthy);
  // The primary is frozen: the bound grows past the limit with the outage, not with the replica.
  auto v = h.Update(DuringOutage(900, 0, /*caught_up=*/true));
  CHECK(v.state == ReplicaState::kPrimaryUnknown);
  CHECK(v.healthy);
  // Back: the first probe with a bound under the limit is ok and healthy, no recovery streak.
  v = h.Update(Measured(30));
  CHECK(v.state == ReplicaState::kOk);
  CHECK(v.healthy);
}

TEST_CASE("while the primary is unknown, a replica proven behind its limit is lagging after") {
  HealthTracker h;
  h.Update(Measured(20));
  // Proof: it lacks what the primary had 350 ms before the probe.
  CHECK_FALSE(h.Update(DuringOutage(900, 350, /*caught_up=*/false)).healthy);
  // Once the primary is back the replica must recover as from any lag: two probes under 80 %.
  auto v = h.Update(Measured(100));
  CHECK(v.state == ReplicaState::kLagging);
  v = h.Update(Measured(100));
  CHECK(v.state == ReplicaState::kOk);
}

TEST_CASE(
    "with primary_unknown unhealthy, a caught-up replica is healthy at the first probe after") {
  HealthTracker h(HealthPolicy{.keep_caught_up_when_primary_unknown = false});
  h.Update(Measured(20));
  CHECK_FALSE(h.Update(DuringOutage(2500, 0, /*caught_up=*/true)).healthy);
  CHECK(h.Update(Measured(10)).healthy);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("right after an outage a bound reaching back into it is judged on the lower bound") {
  HealthTracker h;
  CHECK(h.Update(Measured(20)).healthy);
  // The primary is back, and its first write after the freeze is not on the replica yet: the
  // upper bound reaches back to before the freeze, the lower bound is a few ms.
  HealthInput in = Measured(2100);
  in.bound_spans_outage = true;
  in.delay_lower_ms = 5;
  auto v = h.Update(in);
  CHECK(v.state == ReplicaState::kOk);
  CHECK(v.healthy);
  // Still stuck there (e.g. its SQL thread hangs): once the lower bound passes the limit it is
  // lagging, and recovers as from any lag.
  in.delay_lower_ms = 201;
  CHECK(h.Update(in).state == ReplicaState::kLagging);
  CHECK(h.Update(Measured(20)).state == ReplicaState::kLagging);
  CHECK(h.Update(Measured(20)).state == ReplicaState::kOk);
}

TEST_CASE("a replica whose source is in doubt is never healthy, however fresh; and after a reset") {
  HealthTracker h;
  HealthInput in = Measured(5);
  in.source_verified = false;
  auto v = h.Update(in);
  CHECK(v.state == ReplicaState::kUnverified);
  CHECK_FALSE(v.healthy);
  // Even kept by health.primary_unknown's default while the primary is unknown.
  in.primary_known = false;
  in.caught_up_with_primary = true;
  CHECK_FALSE(h.Update(in).healthy);
  // Verified again (the primary moved; Reset forgot what was judged against the old one): the
  // first measurement decides at once.
  h.Reset();
  v = h.Update(Measured(5));
  CHECK(v.state == ReplicaState::kOk);
  CHECK(v.healthy);
  CHECK(v.changed);
}

}  // namespace
}  // namespace lagwatch
