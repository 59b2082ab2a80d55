#include "heartbeat/arrival_stamp.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

using namespace std::chrono_literals;

const MonoTime kT0{std::chrono::seconds(1000)};

TEST_CASE("a read that slept is stamped at its return less the thread's busy time") {
  ArrivalStamp stamp(kT0);
  // Woken at +10 ms, read at once.
  CHECK(stamp.Read(kT0 + 10ms, 20us) == kT0 + 10ms - 20us);
  // Woken at +20 ms but kept from running for 30 ms (runnable, waiting for a CPU): the read
  // returns at +50 ms and is stamped at +20 ms, not at +50.
  CHECK(stamp.Read(kT0 + 50ms, 30ms + 15us) == kT0 + 20ms - 15us);
}

TEST_CASE("a read that did not sleep keeps the stamp before it") {
  ArrivalStamp stamp(kT0);
  // Nothing read slept yet: what was there came after the request.
  CHECK(stamp.Read(kT0 + 5ms, std::nullopt) == kT0);
  const MonoTime first = stamp.Read(kT0 + 40ms, 40us);
  CHECK(first == kT0 + 40ms - 40us);
  // Packets that were buffered with the one before: no later than it.
  CHECK(stamp.Read(kT0 + 41ms, std::nullopt) == first);
  CHECK(stamp.Read(kT0 + 90ms, std::nullopt) == first);
}

TEST_CASE("stamps never go back, though the busy time reaches behind the stamp before") {
  ArrivalStamp stamp(kT0);
  const MonoTime first = stamp.Read(kT0 + 10ms, 1ms);
  // Busy since long before this read began (counted from an older return): the stamp before
  // is the tighter of the two, and also no later than the arrival.
  CHECK(stamp.Read(kT0 + 12ms, 8ms) == first);
  CHECK(stamp.Read(kT0 + 30ms, 1ms) == kT0 + 29ms);
}

}  // namespace
}  // namespace lagwatch
