// The agent's clocks. Every time inside an estimate comes from one monotonic clock
// (docs/measurement.md, "One clock"); wall time is only stamped on published records. Every part
// that reads the time or waits takes a Clock, so tests can replace it (FakeClock in
// base/fake_clock.h); the estimator and the scheduler are pure functions of the times they are
// given, so their tests need no clock at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>

namespace lagwatch {

using MonoTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using Micros = std::chrono::microseconds;
using Millis = std::chrono::milliseconds;

// Thread-safe: implementations must be callable from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
  // Waits until Now() reaches `deadline` or a stop is requested, whichever is first; false when
  // stopping. The workers' only way to wait, so a stop is never held up by a sleep.
  virtual bool SleepUntil(const std::stop_token& stop, MonoTime deadline) const = 0;
};

class SystemClock final : public Clock {
 public:
  MonoTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  bool SleepUntil(const std::stop_token& stop, MonoTime deadline) const override;
  // A process-wide instance.
  static const Clock& Get() {
    static SystemClock clock;
    return clock;
  }
};

inline int64_t ToMillis(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<Millis>(d).count();
}
inline int64_t UnixMillis(WallTime t) {
  return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
}
inline int64_t UnixMicros(WallTime t) {
  return std::chrono::duration_cast<Micros>(t.time_since_epoch()).count();
}
// A duration in whole microseconds, rounded up.
inline int64_t CeilMicros(std::chrono::nanoseconds d) {
  return std::chrono::ceil<Micros>(d).count();
}
// A duration in whole milliseconds, rounded up: an upper bound stated in ms stays one.
inline int64_t CeilMillis(std::chrono::nanoseconds d) {
  return std::chrono::ceil<Millis>(d).count();
}
// From `t` to the next whole millisecond of wall time (zero if `t` is one). A record stated in
// whole ms (measured_at_ms) carries its upper bound forward by this much, so that the bound holds
// at the stated moment exactly, not somewhere within its millisecond.
inline std::chrono::nanoseconds ToNextWholeMs(WallTime t) {
  const auto since = t.time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::ceil<Millis>(since) -
                                                              since);
}

}  // namespace lagwatch
