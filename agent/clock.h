// The agent's clocks. Every time inside an estimate comes from one monotonic clock (DESIGN.md
// §3.1); wall time is only stamped on published records. The agent and probers take a Clock so it
// can be replaced; the estimator and the scheduler are pure functions of the times they are given,
// so their tests need no clock and no sleeps.
#pragma once

#include <chrono>

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
};

class SystemClock final : public Clock {
 public:
  MonoTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
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

}  // namespace lagwatch
