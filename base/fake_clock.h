// A Clock for tests: time stands still until a test advances it or a worker waits, and a wait
// returns at once with the clock moved to its deadline, so a worker's schedule runs through
// hours of fake time in microseconds and its timing can be asserted exactly.
// Thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>

#include "base/clock.h"

namespace lagwatch {

class FakeClock final : public Clock {
 public:
  // Monotonic time starts at 1,000 s; wall time at 2023-11-14T22:13:20Z and moves with it.
  FakeClock() = default;

  MonoTime Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  WallTime WallNow() const override {
    std::lock_guard lock(mu_);
    return kWallStart + std::chrono::duration_cast<WallTime::duration>(now_ - kStart);
  }
  // Moves the clock to `deadline` (never backwards) and returns; false if a stop was requested.
  bool SleepUntil(const std::stop_token& stop, MonoTime deadline) const override {
    if (stop.stop_requested()) return false;
    std::lock_guard lock(mu_);
    now_ = std::max(now_, deadline);
    return true;
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    now_ += std::chrono::duration_cast<MonoTime::duration>(d);
  }
  // Milliseconds since the clock's start: what tests compare.
  int64_t ElapsedMs(MonoTime t) const { return ToMillis(t - kStart); }

 private:
  static constexpr MonoTime kStart = MonoTime(std::chrono::seconds(1000));
  static constexpr WallTime kWallStart = WallTime(std::chrono::seconds(1'700'000'000));
  mutable std::mutex mu_;
  mutable MonoTime now_ = kStart;
};

}  // namespace lagwatch
