#include "base/thread_times.h"

#include <chrono>
#include <thread>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

using namespace std::chrono_literals;

TEST_CASE("a thread's busy time grows as it runs, not as it sleeps; its sleeps are counted") {
  ThreadTimes times;
  const auto before = times.Busy();
  REQUIRE(before.has_value());  // Debian's kernels keep schedstat
  // 20 ms of spinning: busy by about that much (more if it also waited for a CPU).
  const auto spin_until = std::chrono::steady_clock::now() + 20ms;
  while (std::chrono::steady_clock::now() < spin_until) {
  }
  const auto spun = times.Busy();
  REQUIRE(spun.has_value());
  CHECK(*spun - *before >= 15ms);
  // 200 ms asleep: one sleep more, and busy by far less than 200 ms.
  const int64_t sleeps = ThreadTimes::Sleeps();
  std::this_thread::sleep_for(200ms);
  CHECK(ThreadTimes::Sleeps() > sleeps);
  const auto slept = times.Busy();
  REQUIRE(slept.has_value());
  CHECK(*slept - *spun < 100ms);
}

TEST_CASE("the counters are the calling thread's own") {
  ThreadTimes times;
  const auto before = times.Busy();
  REQUIRE(before.has_value());
  // Another thread spins for 50 ms while this one waits for it, asleep.
  std::thread([] {
    const auto until = std::chrono::steady_clock::now() + 50ms;
    while (std::chrono::steady_clock::now() < until) {
    }
  }).join();
  CHECK(*times.Busy() - *before < 25ms);
}

}  // namespace
}  // namespace lagwatch
