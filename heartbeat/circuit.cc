#include "heartbeat/circuit.h"

namespace lagwatch {

bool CircuitBreaker::AllowAttempt(MonoTime now) {
  if (state_ == State::kOpen && now - opened_at_ >= options_.cool_down) state_ = State::kHalfOpen;
  return state_ != State::kOpen;
}

void CircuitBreaker::RecordSuccess(MonoTime now, Millis took) {
  if (took > options_.slow_write) {
    RecordFailure(now);
    return;
  }
  failures_ = 0;
  state_ = State::kClosed;
}

void CircuitBreaker::RecordFailure(MonoTime now) {
  ++failures_;
  // A failed trial re-opens at once; otherwise the threshold decides.
  if (state_ == State::kHalfOpen || failures_ >= options_.failures_to_open) {
    state_ = State::kOpen;
    opened_at_ = now;
  }
}

const char* CircuitBreaker::PublicState() const {
  switch (state_) {
    case State::kOpen:
      return "down";
    case State::kHalfOpen:
      return "degraded";
    case State::kClosed:
      return failures_ > 0 ? "degraded" : "up";
  }
  return "down";
}

}  // namespace lagwatch
