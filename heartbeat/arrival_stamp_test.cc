#include "heartbeat/arrival_stamp.h"

#include <doctest/doctest.h>

#include "base/fake_thread_counters.h"

namespace lagwatch {
namespace {

using namespace std::chrono_literals;

const MonoTime kT0{std::chrono::seconds(1000)};

// One read on `stamp`: the thread slept in it (`slept`) and was busy for `busy` more since the
// last read that slept; returns at `read_at`.
MonoTime StampRead(ArrivalStamp& stamp, FakeCounters& counters, MonoTime read_at, bool slept,
                   std::chrono::nanoseconds busy = 0ns) {
  stamp.BeforeRead();
  if (slept) ++counters.sleeps;
  if (counters.busy) *counters.busy += busy;
  return stamp.AfterRead(read_at);
}

TEST_CASE("a read that slept is stamped at its return less the thread's busy time") {
  FakeCounters counters;
  ArrivalStamp stamp(kT0, counters);
  // Woken at +10 ms, read at once.
  CHECK(StampRead(stamp, counters, kT0 + 10ms, true, 20us) == kT0 + 10ms - 20us);
  // Woken at +20 ms but kept from running for 30 ms (runnable, waiting for a CPU): the read
  // returns at +50 ms and is stamped at +20 ms, not at +50.
  CHECK(StampRead(stamp, counters, kT0 + 50ms, true, 30ms + 15us) == kT0 + 20ms - 15us);
}

TEST_CASE("a read that did not sleep keeps the stamp before it") {
  FakeCounters counters;
  ArrivalStamp stamp(kT0, counters);
  // Nothing read slept yet: what was there came after the request.
  CHECK(StampRead(stamp, counters, kT0 + 5ms, false) == kT0);
  const MonoTime first = StampRead(stamp, counters, kT0 + 40ms, true, 40us);
  CHECK(first == kT0 + 40ms - 40us);
  // Packets that were buffered with the one before: no later than it, however busy the thread.
  CHECK(StampRead(stamp, counters, kT0 + 41ms, false, 1ms) == first);
  CHECK(StampRead(stamp, counters, kT0 + 90ms, false, 30ms) == first);
}

TEST_CASE("the busy time counts from the last read that slept, through the reads that did not") {
  FakeCounters counters;
  ArrivalStamp stamp(kT0, counters);
  CHECK(StampRead(stamp, counters, kT0 + 10ms, true, 1ms) == kT0 + 9ms);
  // Two reads from a buffer, 8 ms of work on what they returned, then a read that slept and
  // returned at once: stamped 8 ms before its return, where the work began at the latest.
  StampRead(stamp, counters, kT0 + 11ms, false, 1ms);
  StampRead(stamp, counters, kT0 + 12ms, false, 1ms);
  CHECK(StampRead(stamp, counters, kT0 + 30ms, true, 6ms) == kT0 + 22ms);
}

TEST_CASE("stamps never go back, though the busy time reaches behind the stamp before") {
  FakeCounters counters;
  ArrivalStamp stamp(kT0, counters);
  const MonoTime first = StampRead(stamp, counters, kT0 + 10ms, true, 1ms);
  // Busy since long before this read began: the stamp before is the tighter of the two, and
  // also no later than the arrival.
  CHECK(StampRead(stamp, counters, kT0 + 12ms, true, 8ms) == first);
  CHECK(StampRead(stamp, counters, kT0 + 30ms, true, 1ms) == kT0 + 29ms);
}

TEST_CASE(
    "without the kernel's busy time, a read that slept is stamped when the one before returned") {
  FakeCounters counters;
  counters.busy = std::nullopt;
  ArrivalStamp stamp(kT0, counters);
  // The first read: no read returned before it, so the request's time.
  CHECK(StampRead(stamp, counters, kT0 + 10ms, true) == kT0);
  CHECK(StampRead(stamp, counters, kT0 + 12ms, false) == kT0);
  CHECK(StampRead(stamp, counters, kT0 + 30ms, true) == kT0 + 12ms);
}

TEST_CASE("a read that slept through a stop of the process keeps the stamp before it") {
  FakeCounters counters;
  ArrivalStamp stamp(kT0, counters);
  const MonoTime first = StampRead(stamp, counters, kT0 + 10ms, true, 10us);
  // Stopped for 100 ms in the next read: the counters show a sleep and no busy time, as if what
  // it read had just come; a resume was counted meanwhile.
  ++counters.resumes;
  CHECK(StampRead(stamp, counters, kT0 + 115ms, true, 10us) == first);
  // The resume is counted once: the next read that slept is stamped as usual.
  CHECK(StampRead(stamp, counters, kT0 + 130ms, true, 10us) == kT0 + 130ms - 10us);
  // A resume seen by another thread before this one was constructed is not this stream's.
  counters.resumes += 3;
  ArrivalStamp later(kT0 + 200ms, counters);
  CHECK(StampRead(later, counters, kT0 + 210ms, true, 10us) == kT0 + 210ms - 10us);
}

}  // namespace
}  // namespace lagwatch
