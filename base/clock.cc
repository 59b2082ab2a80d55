#include "base/clock.h"

#include <condition_variable>
#include <mutex>

namespace lagwatch {

bool SystemClock::SleepUntil(const std::stop_token& stop, MonoTime deadline) const {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_until(lock, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace lagwatch
