// When a replica's next probe starts (docs/measurement.md). Pure functions; thread-safe.
//
// Probes run on a fixed tick (probe.interval_ms). Between ticks the upper bound grows by itself
// (it is t - fresh_at), so the moment it would cross a tier limit is known in advance; the prober
// probes at that moment instead of waiting for the next tick. If the replica has advanced the
// bound resets; if not, the replica is reported over the limit within one round trip of the
// crossing instead of up to one interval late.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/clock.h"

namespace lagwatch {

// Probing earlier than this after the previous probe started is pointless: the bound cannot
// cross anything useful in less, and it caps the probe rate of a replica that keeps advancing a
// little at a time.
inline constexpr Millis kMinProbeGap{5};

// Returns the start time of the next probe.
//   now: after the last probe finished; previous_start: when it started;
//   next_tick: the fixed-rate schedule's next slot;
//   fresh_at: the replica's last known-fresh moment (nullopt: never measured);
//   limits_ms: the thresholds whose crossing must be seen at once (tier limits);
//   lead: how long before a crossing to probe first (PreCrossingLead; 0: at the crossing only).
// A limit is only scheduled for while the bound is still under it: crossing moments already in
// the past were reported by the probe that just ran. With a lead, a replica that keeps up is
// probed `lead` before its bound would cross, and its answer moves the bound back before the
// crossing instead of racing the crossing's verdict (CrossingVerdictAt); one that has not
// advanced is probed again just past the crossing, as without a lead.
MonoTime NextProbeAt(MonoTime now, MonoTime previous_start, MonoTime next_tick,
                     std::optional<MonoTime> fresh_at, const std::vector<int64_t>& limits_ms,
                     Millis lead = Millis(0));

// The lead for NextProbeAt: twice the median of the replica's recent round trips (`rtts`, the
// newest few), at least kMinPreCrossingLead and at most a quarter of the probe interval. Used while
// the replica's bound comes from the binary log stream: at zero lag that bound is a few ms old at
// every probe, so with the interval equal to a tier's limit (200 ms by default) every tick is a
// crossing, and one answer later than the grace excluded a replica that had no lag (one in a full
// accuracy run). The lead is for the typical answer, which then moves the bound back before the
// crossing; a slow one has the crossing's grace besides (CrossingGrace, from the slowest). Taken
// from the slowest instead, one slow answer in eight on a busy agent (1,000 replicas on 2 cores)
// set a lead of up to 50 ms for everyone, so a replica at zero lag was probed every ~150 ms
// instead of 200: a third more probes, and the CPU they cost made round trips slower still
// (docs/benchmarks/scale.md). With the position samples alone the lead stays 0: probes follow the
// samples' cadence (AlignToSamples), and one sent before a sample would be bounded by the sample
// before it, up to an interval looser.
inline constexpr Millis kMinPreCrossingLead{10};
Millis PreCrossingLead(std::span<const Micros> rtts, Millis interval);
// The longest lead PreCrossingLead gives at `interval`: a quarter of it, and never under
// kMinPreCrossingLead.
Millis PreCrossingLeadCap(Millis interval);

// The probe cadence while no one server is writable (the primary silent or read-only, or two
// writable): every sampling interval (at most half `interval`), so that what another server can
// have taken is known a round trip after each round; but at most kFastProbesPerSecond for all
// `servers` together, so a large cluster stays within the agent's means (1,000 replicas every
// 50 ms on 2 cores took more than the agent had, and keys expired: docs/benchmarks/scale.md).
inline constexpr int64_t kFastProbesPerSecond = 10'000;
Millis FastStep(Millis interval, Millis sample_interval, size_t servers);

// The first moment at or after `t` on a grid of `step` that every prober shares (the monotonic
// clock's epoch), so that probers planning by it probe together.
MonoTime OnGridAfter(MonoTime t, Millis step);

// A probe in flight when the bound crosses a limit: once the bound is past the limit the verdict
// is "over" whatever the replica will answer about the time before, so it is published at the
// crossing, not at the probe's timeout (a hung replica's answer never comes). `grace` is how long
// an answer merely on its way is waited for: at zero lag the probe that stands in for the tick is
// sent just after the crossing and answers a round trip later (CrossingGrace). A probe sent
// `sent` more than twice the grace before the crossing is not on its way (a hung replica): its
// answer is not waited for past the crossing, or only until twice the grace after it was sent.
// Returns when the verdict is due: the first of `limits_ms` (ascending) that `reported_ms` (the
// upper bound last published) is not over yet, crossed, plus `grace` or what is left of it;
// nullopt when none is left.
std::optional<MonoTime> CrossingVerdictAt(MonoTime fresh_at, const std::vector<int64_t>& limits_ms,
                                          int64_t reported_ms, Millis grace, MonoTime sent);

// With probe.after_commit_ms (`after`): when to probe so that the replica's published position
// shows the newest transaction the binary log stream delivered (its first event arrived at
// `arrival`), for routers that wait for a session's own write (read-your-writes on published
// positions): `after` past the arrival, and not sooner than `after` past the previous probe's
// start, so there is at most one such probe per `after`. nullopt when the previous probe started
// `after` past the arrival or later: it has looked already.
std::optional<MonoTime> FollowCommitAt(MonoTime arrival, MonoTime previous_start, Millis after);

// The probes that follow commits for all `servers` together stay within kFollowProbesPerSecond
// while the primary commits continuously: each replica's are `after` apart, or further apart
// when that would be more (FollowStep). Past half `interval` they would add little to the ticks,
// and there are none (nullopt): so at the defaults (10 ms, 200 ms) a few replicas per agent are
// followed every 10 ms (200 probes a second for two, against 10 on the ticks), 50 every 100 ms,
// and a fleet's agent not at all. `after` 0 is off.
inline constexpr int64_t kFollowProbesPerSecond = 500;
std::optional<Millis> FollowStep(Millis after, Millis interval, size_t servers);

// Whether the last answer proved the replica at least half the next limit behind (`lower`, its
// lower bound; the next limit is the first of `limits_ms` that `reported_ms` is not over). Such
// a replica is not at zero lag: its bound crossing that limit is not a probe a few ms late. While
// its lag also grows (ReplicaJudge::lag_growing), the verdict is published at the crossing
// itself, with or without a probe in flight, instead of at the answer of the probe sent just past
// it (a round trip and the write to Redis later, by which time an exact bound's truth has
// crossed too).
bool ProvenLagging(Micros lower, const std::vector<int64_t>& limits_ms, int64_t reported_ms);

// Twice the slowest of the replica's recent round trips (`slowest_rtt`), at least
// kMinCrossingGrace and at most `timeout`.
// The floor is what a busy host may add to a round trip (a scheduler's slice, a server's thread
// woken late) without a replica that keeps up being excluded for it; it stays under the 25 ms a
// verdict may follow the true crossing (docs/benchmarks.md), since the bound's crossing comes
// before the true one.
inline constexpr Millis kMinCrossingGrace{20};
Millis CrossingGrace(Micros slowest_rtt, Millis timeout);

// The fixed-rate schedule's slot after a probe that started at `started` and finished at `now`.
// A probe that started within `early` before the slot stands in for it: at zero lag the bound
// crosses a 200 ms limit 200 ms after the freshest sample, a few ms before the 200 ms tick, and
// probing at both would nearly double the probe rate for nothing. A slot missed while a slow
// probe ran moves to `now`: skip, never bunch up.
MonoTime NextTick(MonoTime next_tick, MonoTime started, MonoTime now, Millis interval,
                  Millis early);
// NextTick's `early`: how far before a slot a probe stands in for it. A probe comes before the
// slot by up to a sampling interval (bounded by a sample, its crossing comes before the tick the
// samples are aligned to; at most half the probe interval) or by the pre-crossing lead (bounded
// by the stream: PreCrossingLead, at most a quarter of the probe interval), whichever is longer.
// Tied to the sampling interval alone, a 20 ms one let a lead of 25 ms on a busy agent probe
// again at the tick: 7 % more probes at 1,000 replicas (docs/benchmarks/scale.md).
Millis StandInWindow(Millis interval, Millis sample_interval);

// A replica at zero lag is bounded by the age of the newest position sample it has reached, so a
// probe sent just after a sample is tight and one sent just before the next is up to a sampling
// interval loose. This moves a tick forward (by less than one sampling interval) to fall
// `after_sample` past a sample, given when the latest sample was sent and the sampler's cadence.
// Ticks stay one probe interval apart once aligned when the probe interval is a multiple of the
// sampling interval (200 ms and 50 ms by default). Samples are sent with some microseconds of
// jitter, so a tick up to kAlignTolerance past an aligned point snaps back to it instead of
// being pushed a whole sampling interval later.
inline constexpr Millis kProbeAfterSample{4};
inline constexpr Micros kAlignTolerance{2000};
MonoTime AlignToSamples(MonoTime tick, MonoTime last_sample, Millis sample_interval,
                        Millis after_sample = kProbeAfterSample);

}  // namespace lagwatch
