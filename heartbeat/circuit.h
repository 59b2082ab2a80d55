// The primary's circuit breaker (docs/redis.md, "The primary"): consecutive failed or slow
// heartbeat writes open it; while open the writer stops writing; after a cool-down one trial
// write is let through (half-open); a good write closes it.
// Thread-compatible: owned by the heartbeat writer; pure logic on times it is given.
#pragma once

#include <string>

#include "base/clock.h"

namespace lagwatch {

class CircuitBreaker {
 public:
  struct Options {
    int failures_to_open = 3;
    Millis slow_write{3000};  // a write slower than this counts as failed
    Millis cool_down{2000};   // open -> half-open
  };
  enum class State { kClosed, kOpen, kHalfOpen };

  CircuitBreaker() : CircuitBreaker(Options{}) {}
  explicit CircuitBreaker(Options options) : options_(options) {}

  // Whether a write may be attempted now. An open circuit turns half-open once its cool-down has
  // passed and then allows one trial.
  bool AllowAttempt(MonoTime now);
  void RecordSuccess(MonoTime now, Millis took);
  void RecordFailure(MonoTime now);

  State state() const { return state_; }
  int consecutive_failures() const { return failures_; }
  // The published word: "up" (closed, no failures), "degraded" (closed with failures, or
  // half-open), "down" (open).
  const char* PublicState() const;

 private:
  const Options options_;
  State state_ = State::kClosed;
  int failures_ = 0;
  MonoTime opened_at_{};
};

}  // namespace lagwatch
