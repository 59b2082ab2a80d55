// A thread's counters (base/thread_times.h) as a test sets them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/thread_times.h"

namespace lagwatch {

class FakeCounters final : public ThreadCounters {
 public:
  std::optional<std::chrono::nanoseconds> Busy() const override { return busy; }
  int64_t Sleeps() const override { return sleeps; }
  int64_t ResumeEpoch() const override { return resumes; }
  std::optional<bool> Runnable() const override { return runnable; }

  std::optional<std::chrono::nanoseconds> busy = std::chrono::nanoseconds(0);
  int64_t sleeps = 0;
  int64_t resumes = 0;
  std::optional<bool> runnable = false;
};

}  // namespace lagwatch
