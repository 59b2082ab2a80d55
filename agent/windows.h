// Rolling-window statistics on the agent's monotonic clock: per-replica lag and SLAR quantiles
// and ratios over 1 min and 5 min, and the router's RWSR and DSR over the same windows.
//
// A window of span S evaluated at `now` holds what happened in (now - S, now]: an entry exactly S
// old has left it. Every class keeps a fixed amount of memory chosen at construction, so a burst
// of events cannot grow it; each says below what it gives up when the burst outruns it.
//
// Thread-compatible: the owner serialises access (const methods may run concurrently with each
// other, not with Add/Observe). Nothing throws; Add and Observe never allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/clock.h"

namespace lagwatch {

// Quantiles of the samples added in the last `span`, e.g. a replica's lag in milliseconds; any
// shorter window ending now can be summarised from the same samples (5m and 1m from one ring).
//
// Samples sit in a ring of `capacity` entries. When it is full, Add overwrites the oldest sample,
// so the window then covers less than `span`; truncated() tells when that has happened to a
// sample that would still be in the window. Size the ring for the expected rate with headroom:
// 5 probes/s over 300 s needs 1500, so 1536.
//
// Compact, because an agent keeps one per replica: 8 bytes a sample. Times are kept to the
// millisecond and values as float (integers exact up to 2^24, e.g. lag in ms up to 4.6 hours;
// beyond that within 1 part in 10^7).
class QuantileWindow {
 public:
  // REQUIRES: 0 < span < 2^30 ms (12 days). A capacity of 0 is raised to 1. Allocates the ring
  // once, here.
  QuantileWindow(Millis span, size_t capacity);

  // Records `value` observed at `at`. NaN values are ignored (they have no rank).
  // REQUIRES: `at` not earlier than the previous call's.
  void Add(MonoTime at, double value);

  // Quantiles by nearest rank: the q-quantile of n samples is the ceil(q × n)-th smallest
  // (1-based), always one of the samples, never an interpolation. So p99 of 1..100 is 99 and
  // p50 of 1..4 is 2.
  struct Summary {
    size_t count = 0;  // samples in the window
    double p50 = 0;    // NaN when count is 0, as are the other three
    double p95 = 0;
    double p99 = 0;
    double max = 0;
  };
  // Summarises the samples with `at` in (now - span, now], `span` defaulting to the window's
  // own (a longer one is cut to it). O(n) in the samples held; allocates a scratch copy of the
  // ones in the window.
  Summary Summarize(MonoTime now) const { return Summarize(now, span_); }
  Summary Summarize(MonoTime now, Millis span) const;

  // True if the ring has overwritten a sample that would be inside the window at `now`: the
  // summary then covers less than `span` (the newest `capacity` samples only).
  bool truncated(MonoTime now) const;

 private:
  struct Sample {
    uint32_t at_ms;  // milliseconds since base_
    float value;
  };
  int64_t MsSinceBase(MonoTime t) const;

  // Constant after construction.
  const Millis span_;
  const size_t capacity_;

  std::vector<Sample> ring_;      // sized capacity_ once; next_ is the oldest entry when full
  size_t next_ = 0;               // where Add writes next
  size_t size_ = 0;               // valid entries, <= capacity_
  std::optional<MonoTime> base_;  // the first sample's time, moved on every 2^31 ms
  std::optional<MonoTime> last_overwritten_at_;
};

// The share of good events among all events in the last `span`, e.g. SLAR from per-probe
// within-SLA verdicts.
//
// Events are counted into fixed slots of `slot` length aligned to the clock's epoch, in a ring
// of ceil(span / slot) + 1 slots, so memory does not depend on the event rate. The window's edge
// moves a whole slot at a time: a slot counts while any part of it is inside (now - span, now],
// so an event is counted for at least `span` and at most `span + slot` after it happened.
class RatioWindow {
 public:
  // REQUIRES: span > 0, slot > 0 (a slot under 1 ms is raised to 1 ms). Allocates the ring here.
  explicit RatioWindow(Millis span, Millis slot = Millis(1000));

  // Counts one event at `at`. REQUIRES: `at` not earlier than the previous call's; an event
  // whose slot's ring entry already holds a later slot is dropped.
  void Add(MonoTime at, bool good);

  // Good events / all events in the window; nullopt when there are none. `span` (at most the
  // window's own) asks about a shorter window ending now, e.g. 1m from a 5m ring.
  std::optional<double> Ratio(MonoTime now) const { return Ratio(now, span_); }
  std::optional<double> Ratio(MonoTime now, Millis span) const;
  // All events in the window.
  uint64_t Count(MonoTime now) const { return Count(now, span_); }
  uint64_t Count(MonoTime now, Millis span) const;

 private:
  struct Slot {
    int64_t index;  // which slot of the clock this entry holds: floor(time / slot)
    uint32_t good;  // a slot of 1 s would need 4 billion events to overflow
    uint32_t total;
  };
  struct Totals {
    uint64_t good = 0;
    uint64_t total = 0;
  };
  Totals Sum(MonoTime now, Millis span) const;
  int64_t SlotIndex(MonoTime t) const;

  // Constant after construction.
  const Millis span_;
  const Millis slot_;

  std::vector<Slot> ring_;  // slot i lives at i mod ring_.size()
};

// The ratio of the increases of two cumulative counters over the last `span`, e.g. RWSR = replica
// reads / all reads from the router's running totals, sampled every few seconds.
//
// Ratio is Δnumerator / Δdenominator between the oldest observation inside the window and the
// newest one. The class does not clamp: if the numerator counts a subset of the denominator's
// events the ratio is in [0, 1]; a value above 1 means the caller's counters broke that.
//
// Counter resets: if either total is below its previous observation, the source has restarted.
// Both counters are then rebased: every earlier observation is dropped and the reset observation
// becomes the new baseline, so deltas are never taken across a restart (no negative ratio, and
// no ratio above 1 from counters that reset unevenly). Events between the last observation before
// the restart and the first after it are lost; the ratio is nullopt until a second observation
// follows the reset. A restart whose totals have already regrown past the old ones is
// indistinguishable from growth and is not detected.
//
// Observations sit in a ring of `capacity` entries; when it is full the oldest is overwritten,
// so the window then covers less than `span` and truncated() says so.
class CounterRatioWindow {
 public:
  // REQUIRES: span > 0. A capacity below 2 is raised to 2. Allocates the ring once, here.
  CounterRatioWindow(Millis span, size_t capacity);

  // Records both running totals as of `at`. Observations with a NaN or infinite total are
  // ignored. REQUIRES: `at` not earlier than the previous call's.
  void Observe(MonoTime at, double numerator_total, double denominator_total);

  // Δnumerator / Δdenominator over the observations with `at` in (now - span, now]; nullopt if
  // fewer than two are in the window or the denominator did not increase between them.
  std::optional<double> Ratio(MonoTime now) const;

  // True if the ring has overwritten an observation that would be inside the window at `now`
  // (one dropped by a reset does not count).
  bool truncated(MonoTime now) const;

 private:
  struct Observation {
    MonoTime at;
    double numerator;
    double denominator;
  };
  const Observation& Oldest(size_t i) const;  // i-th oldest held observation, 0-based

  // Constant after construction.
  const Millis span_;
  const size_t capacity_;

  std::vector<Observation> ring_;  // sized capacity_ once; next_ is the oldest entry when full
  size_t next_ = 0;                // where Observe writes next
  size_t size_ = 0;                // valid entries, <= capacity_
  std::optional<MonoTime> last_overwritten_at_;
};

}  // namespace lagwatch
