#include "heartbeat/circuit.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::T;

TEST_CASE("three consecutive failures open the circuit, fewer only degrade it") {
  CircuitBreaker cb;
  CHECK(std::string(cb.PublicState()) == "up");
  cb.RecordFailure(T(0));
  cb.RecordFailure(T(500));
  CHECK(cb.state() == CircuitBreaker::State::kClosed);
  CHECK(std::string(cb.PublicState()) == "degraded");
  CHECK(cb.AllowAttempt(T(1000)));
  cb.RecordFailure(T(1000));
  CHECK(cb.state() == CircuitBreaker::State::kOpen);
  CHECK(std::string(cb.PublicState()) == "down");
  CHECK(cb.consecutive_failures() == 3);
}

TEST_CASE("a success in between resets the count") {
  CircuitBreaker cb;
  cb.RecordFailure(T(0));
  cb.RecordFailure(T(500));
  cb.RecordSuccess(T(1000), Millis(3));
  cb.RecordFailure(T(1500));
  CHECK(cb.state() == CircuitBreaker::State::kClosed);
  CHECK(cb.consecutive_failures() == 1);
}

TEST_CASE("writes slower than 3 s count as failures") {
  CircuitBreaker cb;
  for (int i = 0; i < 3; ++i) cb.RecordSuccess(T(i * 4000), Millis(3500));
  CHECK(cb.state() == CircuitBreaker::State::kOpen);
}

TEST_CASE("an open circuit allows one trial after the cool-down, success closes it") {
  CircuitBreaker cb;
  for (int i = 0; i < 3; ++i) cb.RecordFailure(T(0));
  CHECK_FALSE(cb.AllowAttempt(T(1999)));
  CHECK(cb.AllowAttempt(T(2000)));
  CHECK(cb.state() == CircuitBreaker::State::kHalfOpen);
  CHECK(std::string(cb.PublicState()) == "degraded");
  cb.RecordSuccess(T(2001), Millis(1));
  CHECK(cb.state() == CircuitBreaker::State::kClosed);
  CHECK(std::string(cb.PublicState()) == "up");
}

TEST_CASE("a failed trial re-opens the circuit for another cool-down") {
  CircuitBreaker cb;
  for (int i = 0; i < 3; ++i) cb.RecordFailure(T(0));
  REQUIRE(cb.AllowAttempt(T(2000)));
  cb.RecordFailure(T(2100));
  CHECK(cb.state() == CircuitBreaker::State::kOpen);
  CHECK_FALSE(cb.AllowAttempt(T(4000)));
  CHECK(cb.AllowAttempt(T(4100)));
}

}  // namespace
}  // namespace lagwatch
