#include "heartbeat/history.h"

#include <doctest/doctest.h>

#include <memory>

#include "base/fake_thread_counters.h"
#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::P;
using testing::T;

TEST_CASE("heartbeat log finds records by seq and forgets the oldest beyond capacity") {
  HeartbeatLog log(3);
  for (uint64_t s = 10; s < 15; ++s) log.RecordSent(s, T(static_cast<int>(s) * 100));
  log.RecordAcked(14, T(1405));
  CHECK_FALSE(log.Find(11).has_value());
  REQUIRE(log.Find(12).has_value());
  CHECK(log.Find(12)->sent == T(1200));
  CHECK_FALSE(log.Find(12)->acked.has_value());
  CHECK(log.Find(14)->acked == T(1405));
  CHECK(log.LastAck() == T(1405));
  CHECK(log.Latest()->seq == 14);
  CHECK_FALSE(log.Find(15).has_value());
}

TEST_CASE("position history compresses equal samples into runs and locates a replica") {
  PositionHistory h;
  h.Add(P("0-1-1"), T(0), T(1));
  h.Add(P("0-1-1"), T(50), T(51));
  h.Add(P("0-1-2"), T(100), T(101));
  h.Add(P("0-1-2"), T(150), T(151));
  h.Add(P("0-1-3"), T(200), T(201));

  // Caught up: fresh as of the newest sample's send time.
  auto b = h.Locate(P("0-1-3"));
  CHECK(b.fresh_at == T(200));
  CHECK_FALSE(b.missing_since.has_value());

  // Has 2 but not 3: fresh as of the last sample that still read 2, missing since 3 was seen.
  b = h.Locate(P("0-1-2"));
  CHECK(b.fresh_at == T(150));
  CHECK(b.missing_since == T(201));

  // Behind everything remembered: only a lower bound from the oldest run.
  b = h.Locate(P("0-1-0"));
  CHECK_FALSE(b.fresh_at.has_value());
  CHECK(b.missing_since == T(1));
}

TEST_CASE("a primary position that goes backwards discards the history it cannot be compared to") {
  PositionHistory h;
  h.Add(P("0-1-100"), T(0), T(1));
  h.Add(P("0-1-5"), T(50), T(51));  // e.g. RESET MASTER
  auto b = h.Locate(P("0-1-3"));
  CHECK_FALSE(b.fresh_at.has_value());
  CHECK(b.missing_since == T(51));  // not T(1): the pre-reset run is gone
  CHECK(h.LastSample() == T(50));
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("samples further apart than the gap threshold leave a gap, the latest one kept") {
  PositionHistory h(4096, Millis(100));
  h.Add(P("0-1-1"), T(0), T(1));
  h.Add(P("0-1-1"), T(50), T(51));
  CHECK_FALSE(h.LastGap());
  h.Add(P("0-1-2"), T(2050), T(2051));  // the primary hung for 2 s
  REQUIRE(h.LastGap());
  CHECK(h.LastGap()->before == T(50));
  CHECK(h.LastGap()->after == T(2050));
  h.Add(P("0-1-2"), T(2100), T(2101));
  CHECK(h.LastGap()->after == T(2050));  // kept until the next gap
  h.Add(P("0-1-2"), T(2300), T(2301));
  CHECK(h.LastGap()->before == T(2100));
}

TEST_CASE("a reset history forgets the old primary and ignores what its sampler still adds") {
  PositionHistory h;
  const uint64_t old = h.generation();
  h.SetSource(PositionsKind::kMariaDbGtid, 1, old);
  h.Add(P("0-1-5"), T(0), T(1), old);
  h.RecordFailure(T(60), old);
  h.Reset();
  CHECK(h.generation() == old + 1);
  CHECK_FALSE(h.LastSample().has_value());
  CHECK_FALSE(h.LastFailure().has_value());
  CHECK_FALSE(h.kind().has_value());
  CHECK_FALSE(h.primary_server_id().has_value());
  // The old primary's sampler, not moved yet, finishes a sample and a failure: both dropped.
  h.Add(P("0-1-6"), T(100), T(101), old);
  h.RecordFailure(T(110), old);
  h.SetSource(PositionsKind::kBinlog, 1, old);
  CHECK_FALSE(h.LastSample().has_value());
  CHECK_FALSE(h.LastFailure().has_value());
  CHECK_FALSE(h.kind().has_value());
  // The new primary's are kept.
  h.SetSource(PositionsKind::kMariaDbGtid, 2, old + 1);
  h.Add(P("0-2-7"), T(200), T(201), old + 1);
  CHECK(h.LastSample() == T(200));
  CHECK(h.primary_server_id() == 2u);
}

TEST_CASE("a sample's answer is awaited for the time its sender slept, not while it was kept") {
  PositionHistory h;
  CHECK_FALSE(h.AnswerAwaited(T(0)).has_value());
  // No sender's counters: the whole time since it was sent.
  h.BeginSample(T(100));
  CHECK(h.AnswerAwaited(T(90)) == Micros(0));  // a moment before it was sent
  CHECK(h.AnswerAwaited(T(180)) == Micros(80'000));
  h.Add(P("0-1-5"), T(100), T(101));
  CHECK_FALSE(h.AnswerAwaited(T(180)).has_value());

  auto sender = std::make_shared<FakeCounters>();
  sender->busy = Millis(500);
  // Runnable from the start (the answer came, or the host holds it back from reading): none.
  sender->runnable = true;
  h.BeginSample(T(200), sender);
  CHECK(h.AnswerAwaited(T(300)) == Micros(0));
  // It ran, and waited for a CPU, 90 ms of the 120 since: 30 ms awaited.
  sender->runnable = false;
  sender->busy = Millis(590);
  CHECK(h.AnswerAwaited(T(320)) == Micros(30'000));
  h.Add(P("0-1-6"), T(200), T(321));

  // Without the kernel's busy time: the whole time.
  sender->busy.reset();
  h.BeginSample(T(400), sender);
  CHECK(h.AnswerAwaited(T(520)) == Micros(120'000));
  h.RecordFailure(T(530));
  CHECK_FALSE(h.AnswerAwaited(T(540)).has_value());

  // A resume from a stop since it was sent: the stop is not told apart from a wait.
  h.BeginSample(T(600), sender);
  sender->resumes = 1;
  CHECK(h.AnswerAwaited(T(720)) == Micros(0));
  h.RecordFailure(T(730));
  CHECK_FALSE(h.AnswerAwaited(T(740)).has_value());
}

TEST_CASE("a wait once found for a sample stays found while its sender wakes, until it ends") {
  // A frozen primary (bench/accuracy, primary-freeze): the sampler's poll wakes every 50 ms to
  // look for a stop, and a probe judged in that moment found the sender runnable, no wait, and the
  // primary known: one replica published `lagging` from the last sample 572 ms before.
  PositionHistory h;
  auto sender = std::make_shared<FakeCounters>();
  sender->busy = Millis(500);
  h.BeginSample(T(1000), sender);
  CHECK(h.AnswerAwaited(T(1100)) == Micros(100'000));  // asleep: 100 ms awaited
  sender->runnable = true;                             // a poll wakes
  CHECK(h.AnswerAwaited(T(1150)) == Micros(100'000));  // still at least as late
  sender->runnable = false;
  CHECK(h.AnswerAwaited(T(1200)) == Micros(200'000));
  sender->resumes = 1;  // nor does a resume from a stop take a wait found before it back
  CHECK(h.AnswerAwaited(T(1250)) == Micros(200'000));
  sender->resumes = 0;
  // The sample ends: the next one starts from nothing.
  h.Add(P("0-1-7"), T(1000), T(1260));
  sender->runnable = true;
  h.BeginSample(T(1300), sender);
  CHECK(h.AnswerAwaited(T(1400)) == Micros(0));
  h.RecordFailure(T(1410));
  h.BeginSample(T(1500), sender);
  sender->runnable = false;
  CHECK(h.AnswerAwaited(T(1520)) == Micros(20'000));
}

TEST_CASE("a cleared heartbeat log forgets every record and acknowledgement") {
  HeartbeatLog log;
  log.RecordSent(10, T(0));
  log.RecordAcked(10, T(2));
  log.RecordFailure(T(600));
  log.Clear();
  CHECK_FALSE(log.Find(10).has_value());
  CHECK_FALSE(log.LastAck().has_value());
  CHECK_FALSE(log.LastAckedSent().has_value());
  CHECK_FALSE(log.LastFailure().has_value());
  log.RecordSent(11, T(700));  // seqs keep growing after a clear
  CHECK(log.Latest()->seq == 11);
}

}  // namespace
}  // namespace lagwatch
