#include "agent/schedule.h"

#include <algorithm>

namespace lagwatch {
namespace {

// The shortest step at which `servers`, each probed once per step, stay within `per_second`
// probes a second together (whole ms, rounded up).
Millis BudgetStep(size_t servers, int64_t per_second) {
  return Millis((static_cast<int64_t>(servers) * 1000 + per_second - 1) / per_second);
}

}  // namespace

MonoTime NextProbeAt(MonoTime now, MonoTime previous_start, MonoTime next_tick,
                     std::optional<MonoTime> fresh_at, const std::vector<int64_t>& limits_ms,
                     Millis lead) {
  MonoTime next = next_tick;
  if (fresh_at) {
    for (int64_t limit : limits_ms) {
      // One millisecond past the crossing, so the probe's bound is strictly over the limit.
      const MonoTime crossing = *fresh_at + Millis(limit) + Millis(1);
      if (crossing <= now) continue;
      // Before it while there is still time to be early; past it once the early probe ran.
      const MonoTime early = crossing - Millis(1) - lead;
      next = std::min(next, lead > Millis(0) && early > now ? early : crossing);
    }
  }
  return std::max(next, previous_start + kMinProbeGap);
}

std::optional<MonoTime> FollowCommitAt(MonoTime arrival, MonoTime previous_start, Millis after) {
  if (previous_start >= arrival + after) return std::nullopt;
  return std::max(arrival, previous_start) + after;
}

Millis PreCrossingLead(std::span<const Micros> rtts, Millis interval) {
  std::vector<Micros> sorted(rtts.begin(), rtts.end());
  const auto median = sorted.begin() + sorted.size() / 2;
  std::nth_element(sorted.begin(), median, sorted.end());
  const Millis twice = median == sorted.end() ? Millis(0) : std::chrono::ceil<Millis>(2 * *median);
  return std::min(std::max(twice, kMinPreCrossingLead), PreCrossingLeadCap(interval));
}

Millis PreCrossingLeadCap(Millis interval) { return std::max(interval / 4, kMinPreCrossingLead); }

Millis StandInWindow(Millis interval, Millis sample_interval) {
  return std::max(std::min(sample_interval, interval / 2), PreCrossingLeadCap(interval));
}

Millis FastStep(Millis interval, Millis sample_interval, size_t servers) {
  return std::max(std::min(interval / 2, sample_interval),
                  BudgetStep(servers, kFastProbesPerSecond));
}

std::optional<Millis> FollowStep(Millis after, Millis interval, size_t servers) {
  if (after <= Millis(0)) return std::nullopt;
  const Millis step = std::max(after, BudgetStep(servers, kFollowProbesPerSecond));
  if (step > interval / 2) return std::nullopt;
  return step;
}

MonoTime OnGridAfter(MonoTime t, Millis step) {
  if (step <= Millis(0)) return t;
  const auto since = t.time_since_epoch();
  const auto rest = since % step;
  return rest == MonoTime::duration::zero() ? t : t + (step - rest);
}

std::optional<MonoTime> CrossingVerdictAt(MonoTime fresh_at, const std::vector<int64_t>& limits_ms,
                                          int64_t reported_ms, Millis grace, MonoTime sent) {
  for (int64_t limit : limits_ms) {
    if (reported_ms > limit) continue;
    const MonoTime crossing = fresh_at + Millis(limit);
    return std::max(crossing, std::min(crossing + grace, sent + 2 * grace));
  }
  return std::nullopt;
}

bool ProvenLagging(Micros lower, const std::vector<int64_t>& limits_ms, int64_t reported_ms) {
  for (int64_t limit : limits_ms) {
    if (reported_ms > limit) continue;
    return lower >= Millis(limit) / 2;
  }
  return false;
}

Millis CrossingGrace(Micros slowest_rtt, Millis timeout) {
  const Millis twice = std::chrono::ceil<Millis>(2 * slowest_rtt);
  return std::min(std::max(twice, kMinCrossingGrace), std::max(timeout, kMinCrossingGrace));
}

MonoTime NextTick(MonoTime next_tick, MonoTime started, MonoTime now, Millis interval,
                  Millis early) {
  if (started + early < next_tick) return next_tick;  // a probe between slots
  return std::max(next_tick + interval, now);
}

MonoTime AlignToSamples(MonoTime tick, MonoTime last_sample, Millis sample_interval,
                        Millis after_sample) {
  if (sample_interval <= Millis(0)) return tick;
  const Micros period = sample_interval;
  // How far the tick is past the last aligned point (a sample plus `after_sample`).
  Micros past = std::chrono::duration_cast<Micros>(tick - (last_sample + after_sample)) % period;
  if (past < Micros(0)) past += period;
  if (past <= kAlignTolerance) return tick - past;
  return tick + (period - past);
}

}  // namespace lagwatch
