#include "agent/read_only_sightings.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::T;

TEST_CASE("read-only sightings: the oldest latest sighting of the servers other than the primary") {
  ReadOnlySightings s;
  CHECK(s.WritableNotBefore("p", "", T(0)) == MonoTime::max());  // none heard: nothing elsewhere
  s.Answered("p", T(100), false);                                // the primary itself: not counted
  CHECK(s.WritableNotBefore("p", "", T(100)) == MonoTime::max());
  s.Answered("r1", T(100), true);
  s.Answered("r2", T(150), true);
  CHECK(s.WritableNotBefore("p", "", T(160)) == T(100));
  s.Answered("r1", T(300), true);
  CHECK(s.WritableNotBefore("p", "", T(310)) == T(150));
  // r2 made writable (a switchover): its last read-only sighting stays the floor.
  s.Answered("r2", T(350), false);
  CHECK(s.WritableNotBefore("p", "", T(360)) == T(150));
  // Seen from r2 as the primary: r1 and the old primary count.
  s.Answered("p", T(400), true);
  CHECK(s.WritableNotBefore("r2", "", T(410)) == T(300));
  // The replica judged is left out: its own answer says what it is.
  CHECK(s.WritableNotBefore("r2", "r1", T(410)) == T(400));
}

TEST_CASE("read-only sightings: never seen read-only, gone quiet, forgotten") {
  ReadOnlySightings s;
  s.Answered("r1", T(100), false);  // writable since it was first heard (a replica left writable)
  s.Answered("r2", T(100), true);
  CHECK(s.WritableNotBefore("p", "", T(110)) == MonoTime::min());
  // r1 stops answering while r2 goes on: after kForgetAfter r1 no longer counts.
  s.Answered("r2", T(1050), true);
  CHECK(s.WritableNotBefore("p", "", T(1100)) == MonoTime::min());  // 1000 ms: still counts
  CHECK(s.WritableNotBefore("p", "", T(1101)) == T(1050));
  // A reload removes r2; r1, quiet, does not count: none does.
  s.Keep({"p", "r1"});
  CHECK(s.WritableNotBefore("p", "", T(1101)) == MonoTime::max());
  s.Answered("r1", T(1200), true);
  CHECK(s.WritableNotBefore("p", "", T(1210)) == T(1200));
}

}  // namespace
}  // namespace lagwatch
