// When what a thread read from a socket arrived, at the latest: no later than it did. A reading
// thread kept from running (a busy host, threads of a higher priority) reads what came meanwhile
// late, and a stamp taken at the read would then be late too; the stream's bounds, taken from
// the arrival less the delivery delay, would be below the truth by the lateness
// (docs/measurement.md, "A starved listener").
//
// The stamp of a read is the read's return less the time the thread ran or waited for a CPU
// since it last went to sleep for input, and never earlier than the stamp before it. Why it is
// never late:
// - a read that slept waited for input that had not all come when it went to sleep, so the
//   packet it returns arrived after that, and from its arrival to the return the thread was
//   never asleep (the kernel makes it runnable as the input comes): the return less its running
//   and waiting since then is at most the arrival;
// - a read that did not sleep returned what had come before it began, possibly before the read
//   before it returned (a buffer holds several packets): it gets the stamp before it, which is
//   no later than the packet before it arrived, itself no later than this one (a stream arrives
//   in order).
// A thread that is never starved stamps within microseconds of the read; one starved for 100 ms
// stamps what it read after that up to 100 ms earlier than it read it.
//
// Whether a read slept, and how long the thread was busy, come from the reading thread's counters
// (base/thread_times.h), read before and after each read. Without the kernel's busy time, a read
// that slept is stamped when the read before it returned: no later than the arrival, but up to a
// heartbeat period early.
//
// What the counters do not see: time the thread was stopped (SIGSTOP) is neither running nor
// waiting for a CPU, and the stop counts as a sleep; so a read after which the process is found
// resumed since the last read that slept (ThreadTimes::ResumeEpoch) keeps the stamp before it, as
// a read that did not sleep does. And a read that slept on something other than its input (a
// page fault from disk) is taken for one that waited for input.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "base/clock.h"
#include "base/thread_times.h"

namespace lagwatch {

// One stream's reads, on one thread: construct it on the thread that reads.
class ArrivalStamp {
 public:
  // `start`: a time before anything to be read was sent (the request for it). `counters`: the
  // reading thread's, read here and around every read.
  ArrivalStamp(MonoTime start, const ThreadCounters& counters)
      : counters_(counters),
        last_(start),
        returned_(start),
        busy_before_(counters.Busy()),
        resumes_(counters.ResumeEpoch()) {}

  // Just before each read.
  void BeforeRead() { sleeps_ = counters_.Sleeps(); }

  // The read returned at `read_at`; returns its stamp.
  MonoTime AfterRead(MonoTime read_at) {
    const MonoTime returned_before = std::exchange(returned_, read_at);
    if (counters_.Sleeps() == sleeps_) return last_;  // did not sleep
    // Busy from the last read that slept, which returned no later than this read began.
    const auto busy_now = counters_.Busy();
    const std::chrono::nanoseconds busy =
        busy_now && busy_before_ ? *busy_now - *busy_before_ : read_at - returned_before;
    busy_before_ = busy_now;
    if (const int64_t resumes = counters_.ResumeEpoch(); resumes != resumes_) {
      resumes_ = resumes;  // may have slept through a stop
      return last_;
    }
    last_ = std::max(last_, read_at - busy);
    return last_;
  }

 private:
  const ThreadCounters& counters_;
  MonoTime last_;      // the stamp of the read before
  MonoTime returned_;  // when the read before returned
  // The busy time and the resumes as of the last read that slept.
  std::optional<std::chrono::nanoseconds> busy_before_;
  int64_t resumes_;
  int64_t sleeps_ = 0;  // as the current read began
};

}  // namespace lagwatch
