// A Clock for tests: time stands still until a test advances it or a worker waits, and a wait
// returns at once with the clock moved to its deadline, so a worker's schedule runs through
// hours of fake time in microseconds and its timing can be asserted exactly. HoldAt makes a
// worker stop at a chosen moment: a wait past it blocks until the worker is told to stop.
// Thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

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
  // A deadline past the hold (HoldAt) moves the clock to the hold and blocks until `stop`.
  bool SleepUntil(const std::stop_token& stop, MonoTime deadline) const override {
    std::unique_lock lock(mu_);
    if (stop.stop_requested()) return false;
    if (hold_ && deadline > *hold_) {
      now_ = std::max(now_, *hold_);
      ++held_;
      held_cv_.notify_all();
      std::condition_variable_any cv;
      cv.wait(lock, stop, [] { return false; });
      --held_;
      return false;
    }
    now_ = std::max(now_, deadline);
    return true;
  }
  // From now on, a wait that would end after `t` blocks until its stop is requested, so a worker
  // runs exactly up to `t` and then waits to be stopped.
  void HoldAt(MonoTime t) {
    std::lock_guard lock(mu_);
    hold_ = t;
  }
  void HoldAfter(std::chrono::nanoseconds d) { HoldAt(kStart + d); }
  // Waits (in real time, up to 10 s) until a worker is blocked at the hold.
  bool WaitUntilHeld() const {
    std::unique_lock lock(mu_);
    return held_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return held_ > 0; });
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
  std::optional<MonoTime> hold_;
  mutable int held_ = 0;
  mutable std::condition_variable held_cv_;
};

}  // namespace lagwatch
