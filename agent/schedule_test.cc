#include "agent/schedule.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::T;
const std::vector<int64_t> kLimits = {200, 1000};

TEST_CASE("a replica at zero lag is probed on the tick") {
  // Fresh at 1000: its bound would cross 200 ms at 1201, after the tick at 1200.
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), T(1000), kLimits) == T(1200));
}

TEST_CASE("a falling-behind replica is probed the moment its bound would cross a limit") {
  // Fresh at 900: the bound crosses 200 ms at 1100, before the next tick at 1200.
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), T(900), kLimits) == T(1101));
}

TEST_CASE("limits already crossed are not scheduled, the next one is") {
  // Fresh at 100: 200 ms was crossed at 300 (reported by the last probe); 1000 ms comes at 1100.
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), T(100), kLimits) == T(1101));
  // Both crossed: back to the tick.
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), T(-500), kLimits) == T(1200));
}

TEST_CASE("with a lead, a replica is probed before its crossing, then just past it if it stood") {
  // Fresh at 1000 (a stream bound at zero lag): 10 ms before the 200 ms crossing, before the tick.
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), T(1000), kLimits, Millis(10)) == T(1190));
  // That probe answered at 1192 and the replica had not advanced: just past the crossing.
  CHECK(NextProbeAt(T(1192), T(1190), T(1400), T(1000), kLimits, Millis(10)) == T(1201));
  // It had: fresh at 1189, the next early probe 200 ms on.
  CHECK(NextProbeAt(T(1192), T(1190), T(1400), T(1189), kLimits, Millis(10)) == T(1379));
  // An early probe that answered past the crossing: the next limit (1,000 ms), early.
  CHECK(NextProbeAt(T(1205), T(1190), T(1400), T(1000), kLimits, Millis(10)) == T(1400));
  CHECK(NextProbeAt(T(1205), T(1190), T(3000), T(1000), kLimits, Millis(10)) == T(1990));
  // No lead: at the crossing, as before.
  CHECK(NextProbeAt(T(1001), T(1000), T(1150), T(900), kLimits, Millis(0)) == T(1101));
}

TEST_CASE(
    "the lead is twice the median recent round trip, within its floor and a quarter interval") {
  using R = std::vector<Micros>;
  CHECK(PreCrossingLead(R(8, Micros(300)), Millis(200)) == kMinPreCrossingLead);
  CHECK(PreCrossingLead(R(8, Micros(7'400)), Millis(200)) == Millis(15));
  CHECK(PreCrossingLead(R(8, Micros(90'000)), Millis(200)) == Millis(50));
  // An interval too short for the floor: the floor.
  CHECK(PreCrossingLead(R(8, Micros(90'000)), Millis(20)) == kMinPreCrossingLead);
  // One or three slow answers in eight do not set it: the typical one does (a busy agent).
  CHECK(PreCrossingLead(R{Micros(6'000), Micros(45'000), Micros(5'000), Micros(7'000),
                          Micros(6'500), Micros(5'500), Micros(30'000), Micros(25'000)},
                        Millis(200)) == Millis(14));
  // Five in eight do: the round trips are slow now.
  CHECK(PreCrossingLead(R{Micros(20'000), Micros(21'000), Micros(5'000), Micros(22'000),
                          Micros(23'000), Micros(5'500), Micros(24'000), Micros(6'000)},
                        Millis(200)) == Millis(42));
  // None answered yet: the floor.
  CHECK(PreCrossingLead(R(8, Micros(0)), Millis(200)) == kMinPreCrossingLead);
  CHECK(PreCrossingLead(R{}, Millis(200)) == kMinPreCrossingLead);
}

TEST_CASE("the fast cadence: every sampling interval, within its budget of probes a second") {
  CHECK(FastStep(Millis(200), Millis(50), 3) == Millis(50));
  CHECK(FastStep(Millis(60), Millis(50), 3) == Millis(30));  // at most half the interval
  CHECK(FastStep(Millis(200), Millis(50), 500) == Millis(50));
  CHECK(FastStep(Millis(200), Millis(50), 1000) == Millis(100));  // 10,000 a second
  CHECK(FastStep(Millis(200), Millis(50), 1001) == Millis(101));
  CHECK(FastStep(Millis(200), Millis(50), 0) == Millis(50));
}

TEST_CASE("the shared grid: the first point at or after a moment") {
  CHECK(OnGridAfter(T(1000), Millis(50)) == T(1000));
  CHECK(OnGridAfter(T(1001), Millis(50)) == T(1050));
  CHECK(OnGridAfter(T(1049), Millis(50)) == T(1050));
  CHECK(OnGridAfter(T(1000) + Micros(1), Millis(50)) == T(1050));
  // Two probers that plan from different moments meet on it.
  CHECK(OnGridAfter(T(1012), Millis(50)) == OnGridAfter(T(1037), Millis(50)));
}

TEST_CASE("following commits: after the arrival, at most once per interval, not when looked at") {
  // A transaction arrived at 1050, the previous probe started at 1000: 10 ms after the arrival.
  CHECK(FollowCommitAt(T(1050), T(1000), Millis(10)) == T(1060));
  // The previous probe started 5 ms after it: 10 ms after that probe, not sooner.
  CHECK(FollowCommitAt(T(1050), T(1055), Millis(10)) == T(1065));
  // It started 10 ms or more after it: it has looked.
  CHECK(FollowCommitAt(T(1050), T(1060), Millis(10)) == std::nullopt);
  CHECK(FollowCommitAt(T(1050), T(1200), Millis(10)) == std::nullopt);
}

TEST_CASE("commits are followed within the agent's budget, and not at all past half an interval") {
  CHECK(FollowStep(Millis(0), Millis(200), 3) == std::nullopt);  // off
  CHECK(FollowStep(Millis(10), Millis(200), 3) == Millis(10));
  CHECK(FollowStep(Millis(10), Millis(200), 5) == Millis(10));    // 500 a second
  CHECK(FollowStep(Millis(10), Millis(200), 6) == Millis(12));    // 500 a second, rounded up
  CHECK(FollowStep(Millis(10), Millis(200), 50) == Millis(100));  // half the interval
  CHECK(FollowStep(Millis(10), Millis(200), 51) == std::nullopt);
  CHECK(FollowStep(Millis(10), Millis(200), 1000) == std::nullopt);
  CHECK(FollowStep(Millis(150), Millis(200), 2) == std::nullopt);
  CHECK(FollowStep(Millis(10), Millis(200), 0) == Millis(10));
}

TEST_CASE("an unmeasured replica is probed on the tick") {
  CHECK(NextProbeAt(T(1001), T(1000), T(1200), std::nullopt, kLimits) == T(1200));
}

TEST_CASE("probes never start closer together than the minimum gap") {
  // The crossing is 1 ms after the previous probe started.
  CHECK(NextProbeAt(T(1000), T(1000), T(1200), T(800), kLimits) == T(1000) + kMinProbeGap);
}

TEST_CASE("a tick missed while a slow probe ran means probing at once") {
  // The probe started at 1250 and ended at 1300, past the 1200 tick.
  CHECK(NextProbeAt(T(1300), T(1250), T(1200), T(1250), kLimits) <= T(1300));
}

TEST_CASE("a probe just before the tick stands in for it, one well before it does not") {
  // Tick due at 1200, interval 200, early 50.
  CHECK(NextTick(T(1200), T(1197), T(1199), Millis(200), Millis(50)) == T(1400));
  CHECK(NextTick(T(1200), T(1150), T(1152), Millis(200), Millis(50)) == T(1400));
  CHECK(NextTick(T(1200), T(1149), T(1151), Millis(200), Millis(50)) == T(1200));
  CHECK(NextTick(T(1200), T(1200), T(1203), Millis(200), Millis(50)) == T(1400));
  // A slow probe that overran the next slot: the schedule resumes from now.
  CHECK(NextTick(T(1200), T(1200), T(1450), Millis(200), Millis(50)) == T(1450));
}

TEST_CASE("a probe stands in for a tick within a sampling interval or the longest lead") {
  // 200 ms probes: the lead's cap, a quarter interval, covers samples up to 50 ms apart.
  CHECK(StandInWindow(Millis(200), Millis(20)) == Millis(50));
  CHECK(StandInWindow(Millis(200), Millis(50)) == Millis(50));
  // Samples further apart than that: a sampling interval, up to half the probe interval.
  CHECK(StandInWindow(Millis(200), Millis(80)) == Millis(80));
  CHECK(StandInWindow(Millis(200), Millis(500)) == Millis(100));
  // A short probe interval: the lead's floor.
  CHECK(StandInWindow(Millis(20), Millis(5)) == kMinPreCrossingLead);
}

TEST_CASE("ticks are moved to just after a position sample, backwards only by the tolerance") {
  // Samples every 50 ms, the latest sent at 1000: aligned points are 1004, 1054, 1104, ...
  CHECK(AlignToSamples(T(1200), T(1000), Millis(50)) == T(1204));
  CHECK(AlignToSamples(T(1204), T(1000), Millis(50)) == T(1204));
  CHECK(AlignToSamples(T(1207), T(1000), Millis(50)) == T(1254));
  // A sample sent a few microseconds late must not push the tick a whole interval on.
  CHECK(AlignToSamples(T(1205), T(1000), Millis(50)) == T(1204));
  CHECK(AlignToSamples(T(1204) + Micros(40), T(1000), Millis(50)) == T(1204));
  CHECK(AlignToSamples(T(1204) + Micros(2001), T(1000), Millis(50)) == T(1254));
  // A tick before the latest sample aligns the same way (the sampler's phase is what matters).
  CHECK(AlignToSamples(T(990), T(1000), Millis(50)) == T(1004));
  // Once aligned, a 200 ms cadence stays aligned with 50 ms samples.
  CHECK(AlignToSamples(T(1404), T(1000), Millis(50)) == T(1404));
}

TEST_CASE("a verdict is due at the first limit not yet reported over, after the grace") {
  // Fresh at 1000, last published bound 5 ms, the probe sent at 1195: 200 ms is crossed at 1200,
  // verdict at 1205.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 5, Millis(5), T(1195)) == T(1205));
  // Already published over 200 ms (a lagging replica): the next verdict is at 1000 ms.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 230, Millis(5), T(1995)) == T(2005));
  // Exactly at a limit is not over it.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 200, Millis(5), T(1195)) == T(1205));
  // Over every limit: nothing left to cross.
  CHECK_FALSE(CrossingVerdictAt(T(1000), kLimits, 1500, Millis(5), T(1195)).has_value());
  CHECK_FALSE(CrossingVerdictAt(T(1000), {}, 0, Millis(5), T(1195)).has_value());
}

TEST_CASE("a probe long in flight at the crossing is not waited for: the verdict is at it") {
  // Grace 20 ms. Sent 100 ms before the crossing (a hung replica): at the crossing.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 5, Millis(20), T(1100)) == T(1200));
  // Sent 30 ms before: twice the grace after it was sent, 10 ms past the crossing.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 5, Millis(20), T(1170)) == T(1210));
  // Sent at the crossing, or after: the whole grace.
  CHECK(CrossingVerdictAt(T(1000), kLimits, 5, Millis(20), T(1200)) == T(1220));
  CHECK(CrossingVerdictAt(T(1000), kLimits, 5, Millis(20), T(1210)) == T(1220));
}

TEST_CASE(
    "a replica proven half the next limit behind is lagging: its verdict is at the crossing") {
  // Last published 150 ms: the next limit is 200; proven 100 ms behind is half of it.
  CHECK(ProvenLagging(Millis(100), kLimits, 150));
  CHECK_FALSE(ProvenLagging(Micros(99'999), kLimits, 150));
  // At zero lag (a bound a few ms old at every probe) it is not.
  CHECK_FALSE(ProvenLagging(Micros(0), kLimits, 5));
  // Over 200 already: the next limit is 1,000.
  CHECK_FALSE(ProvenLagging(Millis(300), kLimits, 250));
  CHECK(ProvenLagging(Millis(500), kLimits, 600));
  // Over every limit: nothing to cross.
  CHECK_FALSE(ProvenLagging(Millis(5000), kLimits, 1500));
}

TEST_CASE("the grace is twice the slowest recent round trip, within its floor and the timeout") {
  CHECK(CrossingGrace(Micros(400), Millis(150)) == kMinCrossingGrace);
  CHECK(CrossingGrace(Micros(0), Millis(150)) == kMinCrossingGrace);
  CHECK(CrossingGrace(Micros(16200), Millis(150)) == Millis(33));
  CHECK(CrossingGrace(Micros(90'000), Millis(150)) == Millis(150));
  // A timeout under the floor still leaves the floor.
  CHECK(CrossingGrace(Micros(90'000), Millis(2)) == kMinCrossingGrace);
}

}  // namespace
}  // namespace lagwatch
