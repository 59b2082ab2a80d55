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
// What it does not see: time the thread was stopped (SIGSTOP) is neither running nor waiting for
// a CPU, so the caller passes a read during which the process was resumed (ThreadTimes::
// ResumeEpoch) as one that did not sleep; and a read that slept on something other than its
// input (a page fault from disk) is taken for one that waited for input.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/clock.h"

namespace lagwatch {

class ArrivalStamp {
 public:
  // `start`: a time before anything to be read was sent (the request for it).
  explicit ArrivalStamp(MonoTime start) : last_(start) {}

  // A read that returned at `read_at`. `busy`: set when the thread slept in that read, to the time
  // it ran or waited for a CPU from a moment no later than the read's start (the return of an
  // earlier read) to `read_at`; nullopt when the read did not sleep. Returns the read's stamp.
  MonoTime Read(MonoTime read_at, std::optional<std::chrono::nanoseconds> busy) {
    if (busy) last_ = std::max(last_, read_at - *busy);
    return last_;
  }

 private:
  MonoTime last_;
};

}  // namespace lagwatch
