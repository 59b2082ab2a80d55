// The agent's clocks. Every time inside an estimate comes from one monotonic clock (DESIGN.md
// §3.1); wall time is only stamped on published records. Injected so estimator and scheduler tests
// run without sleeping.
#pragma once

#include <atomic>
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

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  FakeClock() : mono_us_(1'000'000'000), wall_us_(1'700'000'000'000'000) {}
  MonoTime Now() const override { return MonoTime(Micros(mono_us_.load())); }
  WallTime WallNow() const override { return WallTime(Micros(wall_us_.load())); }
  void Advance(Micros d) {
    mono_us_ += d.count();
    wall_us_ += d.count();
  }

 private:
  std::atomic<int64_t> mono_us_;
  std::atomic<int64_t> wall_us_;
};

inline int64_t ToMillis(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<Millis>(d).count();
}
inline int64_t UnixMillis(WallTime t) {
  return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
}

}  // namespace lagwatch
