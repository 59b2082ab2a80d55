#include "base/thread_times.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <optional>
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
  const int64_t sleeps = times.Sleeps();
  std::this_thread::sleep_for(200ms);
  CHECK(times.Sleeps() > sleeps);
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

TEST_CASE("another thread's counters, read from this one: runnable while it spins, not asleep") {
  std::atomic<const ThreadTimes*> other{nullptr};
  std::atomic<int> phase{0};  // 0: it spins; 1: it sleeps; 2: it ends
  std::thread t([&] {
    const ThreadTimes times;
    other = &times;
    while (phase.load() == 0) {
    }
    while (phase.load() == 1) std::this_thread::sleep_for(5ms);
    other = nullptr;
  });
  while (other.load() == nullptr) std::this_thread::yield();
  const ThreadTimes* times = other.load();
  const auto before = times->Busy();
  REQUIRE(before.has_value());
  std::this_thread::sleep_for(30ms);  // it spins meanwhile (running, or waiting for a CPU)
  CHECK(times->Runnable() == std::optional<bool>(true));
  const auto spun = times->Busy();
  REQUIRE(spun.has_value());
  CHECK(*spun - *before >= 20ms);
  phase = 1;
  // Asleep in a 5 ms wait for all but microseconds of each: seen asleep within a few reads.
  bool seen_asleep = false;
  for (int i = 0; i < 200 && !seen_asleep; ++i) {
    seen_asleep = times->Runnable() == std::optional<bool>(false);
    std::this_thread::sleep_for(1ms);
  }
  CHECK(seen_asleep);
  phase = 2;
  while (other.load() != nullptr) std::this_thread::yield();
  t.join();
}

TEST_CASE("a resume (SIGCONT left pending) is counted once, and the signal consumed") {
  sigset_t old;
  REQUIRE(pthread_sigmask(SIG_SETMASK, nullptr, &old) == 0);
  ThreadTimes::BlockContinueSignal();
  const ThreadTimes times;
  const int64_t before = times.ResumeEpoch();
  CHECK(times.ResumeEpoch() == before);  // nothing pending, nothing counted
  // To this thread (a resume's is to the process, but this program's other threads, if any, do
  // not block it and would take it).
  REQUIRE(raise(SIGCONT) == 0);
  const int64_t after = times.ResumeEpoch();
  CHECK(after == before + 1);
  CHECK(times.ResumeEpoch() == after);  // consumed: one resume, one count
  sigset_t pending;
  REQUIRE(sigpending(&pending) == 0);
  CHECK(sigismember(&pending, SIGCONT) == 0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace lagwatch
