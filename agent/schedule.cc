#include "agent/schedule.h"

#include <algorithm>

namespace lagwatch {

MonoTime NextProbeAt(MonoTime now, MonoTime previous_start, MonoTime next_tick,
                     std::optional<MonoTime> fresh_at, const std::vector<int64_t>& limits_ms) {
  MonoTime next = next_tick;
  if (fresh_at) {
    for (int64_t limit : limits_ms) {
      // One millisecond past the crossing, so the probe's bound is strictly over the limit.
      MonoTime crossing = *fresh_at + Millis(limit) + Millis(1);
      if (crossing > now) next = std::min(next, crossing);
    }
  }
  return std::max(next, previous_start + kMinProbeGap);
}

}  // namespace lagwatch
