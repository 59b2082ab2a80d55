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

TEST_CASE("read-only sightings: what the floor will be once a round of probes has answered") {
  ReadOnlySightings s;
  s.Answered("r1", T(100), true);
  s.Answered("r2", T(100), true);
  s.Answered("r3", T(120), true);
  // A round sent at 150: once r2 and r3 answer, r1's record may take 150, not 100.
  s.Sent("r1", T(150));
  s.Sent("r2", T(150));
  s.Sent("r3", T(151));
  CHECK(s.WritableNotBefore("p", "r1", T(152)) == T(100));
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(152), T(130), T(152)) == T(150));
  // Only probes sent within the window count: r3's, sent after `by`, does not.
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(152), T(130), T(150)) == T(120));
  // Nor one sent before `since` (long on its way: not merely answering).
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(152), T(151), T(152)) == T(100));
  // r2 answers read-only: the floor rises to what r3 still has on its way.
  s.Answered("r2", T(150), true);
  CHECK(s.WritableNotBefore("p", "r1", T(153)) == T(120));
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(153), T(130), T(153)) == T(150));
  // r3's probe fails: nothing more is on its way, and its old sighting stays the floor.
  s.Unanswered("r3");
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(154), T(130), T(154)) == T(120));
  // A server not heard from yet does not count, on its way or not.
  s.Sent("r4", T(160));
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(161), T(130), T(161)) == T(120));
  // A reload forgets what it had on its way.
  s.Sent("r3", T(170));
  s.Keep({"p", "r1", "r2"});
  CHECK(s.WritableNotBeforeOnceAnswered("p", "r1", T(171), T(130), T(171)) == T(150));
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
