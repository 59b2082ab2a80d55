// What the calling thread did with the wall time that passed: how much of it it ran or waited for
// a CPU, and how often it went to sleep. A thread that reads a socket tells from these whether
// what it read could have been there long before it got to read it (heartbeat/arrival_stamp.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace lagwatch {

// What a reading thread's kernel counters say: ThreadTimes for the calling thread, a fake in the
// tests of what is built on them (heartbeat/arrival_stamp.h).
class ThreadCounters {
 public:
  virtual ~ThreadCounters() = default;
  // The time the thread has been running plus the time it was runnable and waited for a CPU,
  // since it started; nullopt where the kernel does not keep it.
  virtual std::optional<std::chrono::nanoseconds> Busy() const = 0;
  // How many times the thread has given up its CPU to sleep.
  virtual int64_t Sleeps() const = 0;
  // How many resumes of the process after a stop (SIGSTOP, SIGTSTP) have been seen.
  virtual int64_t ResumeEpoch() const = 0;
  // Whether the thread is runnable (running, or waiting for a CPU) rather than asleep or
  // stopped; nullopt where the kernel does not say.
  virtual std::optional<bool> Runnable() const = 0;
};

// The counters of the thread that constructs it. Sleeps only on that thread; the others from
// any thread while it exists (another thread's Busy and Runnable say what that thread did: how
// long a sampler was kept from reading an answer, PositionHistory::AnswerAwaited).
class ThreadTimes final : public ThreadCounters {
 public:
  ThreadTimes();  // opens /proc/thread-self/schedstat and /proc/thread-self/stat
  ~ThreadTimes() override;
  ThreadTimes(const ThreadTimes&) = delete;
  ThreadTimes& operator=(const ThreadTimes&) = delete;

  // schedstat's first two fields: the kernel's sum_exec_runtime and run_delay; nullopt where the
  // kernel keeps no schedstat (CONFIG_SCHED_INFO off).
  std::optional<std::chrono::nanoseconds> Busy() const override;
  // getrusage(RUSAGE_THREAD)'s ru_nvcsw, the voluntary context switches (0 if it fails: then no
  // read looks as if it slept, and arrival stamps stay early, never late).
  int64_t Sleeps() const override;

  // Time stopped is neither running nor waiting for a CPU, and the stop itself counts as a
  // sleep, so the counters above take a read that slept through a stop for one that waited for
  // input. BlockContinueSignal(), called before any thread starts, blocks SIGCONT in every thread
  // that inherits the mask (the continue itself still happens), so that a resume leaves SIGCONT
  // pending, process-wide, before any thread runs again (the kernel queues it before it wakes
  // them).
  static void BlockContinueSignal();
  // Process-wide: a call that finds SIGCONT pending counts one resume, then consumes the signal
  // (in that order, so that a thread that finds it already consumed finds the count moved).
  // Stays 0 unless BlockContinueSignal() ran.
  int64_t ResumeEpoch() const override;
  // The state in /proc/thread-self/stat: R (running or runnable) is true; nullopt when it
  // cannot be read (the thread has exited).
  std::optional<bool> Runnable() const override;

 private:
  int fd_ = -1;       // schedstat
  int stat_fd_ = -1;  // stat
};

}  // namespace lagwatch
