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

TEST_CASE("read-only sightings: whether the floor rises once a round of probes has answered") {
  ReadOnlySightings s;
  CHECK_FALSE(s.FloorRises("p", "r1", T(90), T(0), T(90)));  // none counts: nothing to raise
  s.Answered("r1", T(100), true);
  s.Answered("r2", T(100), true);
  s.Answered("r3", T(120), true);
  CHECK(s.Servers() == 3);
  // A round sent at 150: r2 holds r1's floor (100), and its probe is on its way.
  s.Sent("r1", T(150));
  s.Sent("r2", T(150));
  s.Sent("r3", T(151));
  CHECK(s.WritableNotBefore("p", "r1", T(152)) == T(100));
  CHECK(s.FloorRises("p", "r1", T(152), T(130), T(152)));
  // Only probes sent within the window count: not one sent before `since` (long on its way:
  // not merely answering) ...
  CHECK_FALSE(s.FloorRises("p", "r1", T(152), T(151), T(152)));
  // ... nor one sent after `by`.
  CHECK_FALSE(s.FloorRises("p", "r1", T(152), T(130), T(149)));
  // r2 answers read-only: r3 holds the floor (120), and its probe is still on its way.
  s.Answered("r2", T(150), true);
  CHECK(s.WritableNotBefore("p", "r1", T(153)) == T(120));
  CHECK(s.FloorRises("p", "r1", T(153), T(130), T(153)));
  // r3's probe fails: nothing raises the floor any more, and its old sighting stays it.
  s.Unanswered("r3");
  CHECK_FALSE(s.FloorRises("p", "r1", T(154), T(130), T(154)));
  CHECK(s.WritableNotBefore("p", "r1", T(154)) == T(120));
  // A server not heard from yet does not count, on its way or not.
  s.Sent("r4", T(160));
  CHECK_FALSE(s.FloorRises("p", "r1", T(161), T(130), T(161)));
  // Two servers at the floor (never seen read-only): both must be on their way.
  s.Answered("r5", T(170), false);
  s.Answered("r6", T(170), false);
  CHECK(s.WritableNotBefore("p", "r1", T(171)) == MonoTime::min());
  s.Sent("r5", T(180));
  CHECK_FALSE(s.FloorRises("p", "r1", T(181), T(130), T(181)));
  s.Sent("r6", T(180));
  CHECK(s.FloorRises("p", "r1", T(181), T(130), T(181)));
  // A reload forgets them, and what they had on their way; r3 holds the floor again.
  s.Keep({"p", "r1", "r2", "r3"});
  CHECK(s.Servers() == 3);
  CHECK(s.WritableNotBefore("p", "r1", T(182)) == T(120));
  CHECK_FALSE(s.FloorRises("p", "r1", T(182), T(130), T(182)));
  // The judged replica and the primary are left out of it, as of the floor: with r3 on its way,
  // r1 (100, its probe of 150 still on its way) or r3 holds the floor, but for r2 judged with r1
  // as the primary only r3 counts.
  s.Sent("r3", T(190));
  CHECK(s.FloorRises("p", "r2", T(191), T(130), T(191)));
  CHECK(s.FloorRises("r1", "r2", T(191), T(130), T(191)));
  s.Unanswered("r3");
  CHECK(s.FloorRises("p", "r2", T(192), T(130), T(192)));         // r1 holds it, on its way
  CHECK_FALSE(s.FloorRises("r1", "r2", T(192), T(130), T(192)));  // r3 holds it, not
}

TEST_CASE("read-only sightings: a silent primary urges every server once per silence") {
  ReadOnlySightings s;
  int urged = 0;
  s.OnSilence([&] { ++urged; });
  CHECK(s.PrimarySilent());  // the first to find it silent urges, and is told so
  CHECK_FALSE(s.PrimarySilent());
  CHECK_FALSE(s.PrimarySilent());
  CHECK(urged == 1);
  s.PrimaryHeard();
  s.PrimaryHeard();
  CHECK(s.PrimarySilent());  // a new silence
  CHECK(urged == 2);
}

}  // namespace
}  // namespace lagwatch
