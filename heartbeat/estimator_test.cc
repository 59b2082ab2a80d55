#include "heartbeat/estimator.h"

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::P;
using testing::T;
int64_t Ms(Micros d) { return std::chrono::duration_cast<Millis>(d).count(); }

ProbeObservation Probe(int sent_ms, int received_ms, std::optional<uint64_t> seq,
                       std::optional<const char*> pos = std::nullopt) {
  ProbeObservation o;
  o.sent = T(sent_ms);
  o.received = T(received_ms);
  o.seq = seq;
  if (pos) o.applied_pos = P(*pos);
  return o;
}

// Heartbeats every 500 ms: seq k sent at 500k ms, acknowledged 2 ms later.
void Heartbeats(HeartbeatLog& log, int count) {
  for (int k = 1; k <= count; ++k) {
    log.RecordSent(static_cast<uint64_t>(k), T(500 * k));
    log.RecordAcked(static_cast<uint64_t>(k), T(500 * k + 2));
  }
}

TEST_CASE("heartbeat bounds: seq k read means fresh at sent(k), behind since acked(k+1)") {
  HeartbeatLog log;
  Heartbeats(log, 4);  // seqs 1..4 sent at 500..2000
  // Probe at 2100 reads seq 2: applied 2 (sent 1000), lacks 3 (acked 1502).
  LagBounds b = HeartbeatBounds(Probe(2100, 2103, 2), log);
  REQUIRE(b.fresh_at.has_value());
  CHECK(b.upper_source == BoundSource::kHeartbeat);
  CHECK(Ms(b.UpperAt(T(2103))) == 1103);
  CHECK(Ms(b.lower) == 598);  // 2100 - 1502
}

TEST_CASE("heartbeat bounds: the newest heartbeat read gives lower bound 0") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  LagBounds b = HeartbeatBounds(Probe(2100, 2101, 4), log);
  CHECK(Ms(b.UpperAt(T(2101))) == 101);
  CHECK(Ms(b.lower) == 0);
}

TEST_CASE("heartbeat bounds: k+1 acknowledged after the probe left gives no lower bound") {
  HeartbeatLog log;
  Heartbeats(log, 3);
  log.RecordSent(4, T(2000));
  log.RecordAcked(4, T(2050));
  // The probe left at 2010, before heartbeat 4 was known committed.
  LagBounds b = HeartbeatBounds(Probe(2010, 2020, 3), log);
  CHECK(Ms(b.lower) == 0);
  CHECK(Ms(b.UpperAt(T(2020))) == 520);
}

TEST_CASE("heartbeat bounds: an unacknowledged k+1 gives no lower bound") {
  HeartbeatLog log;
  Heartbeats(log, 3);
  log.RecordSent(4, T(2000));  // timed out: outcome unknown
  LagBounds b = HeartbeatBounds(Probe(2600, 2601, 3), log);
  CHECK(Ms(b.lower) == 0);
}

TEST_CASE("heartbeat bounds: a seq the agent never wrote gives nothing") {
  HeartbeatLog log;
  Heartbeats(log, 3);
  CHECK_FALSE(HeartbeatBounds(Probe(2000, 2001, 99), log).fresh_at.has_value());
  CHECK_FALSE(HeartbeatBounds(Probe(2000, 2001, std::nullopt), log).fresh_at.has_value());
}

TEST_CASE("position bounds narrow a caught-up replica to about one sampling interval") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  PositionHistory h;
  for (int t = 0; t <= 2100; t += 50) {
    // The primary's position grows with each heartbeat (every 500 ms).
    std::string pos = "0-1-" + std::to_string(t / 500);
    h.Add(P(pos.c_str()), T(t), T(t + 1));
  }
  // The replica has applied everything (0-1-4) and seq 4 (sent at 2000).
  ProbeObservation o = Probe(2120, 2122, 4, "0-1-4");
  LagBounds hb = HeartbeatBounds(o, log);
  LagBounds pos = PositionBounds(o, h);
  LagBounds est = Estimate(o, log, h);
  CHECK(Ms(hb.UpperAt(o.received)) == 122);
  CHECK(Ms(pos.UpperAt(o.received)) == 22);  // newest sample, sent at 2100
  CHECK(Ms(est.UpperAt(o.received)) == 22);
  CHECK(est.upper_source == BoundSource::kPosition);
  CHECK(Ms(est.lower) == 0);
}

TEST_CASE("estimate takes the tighter bound from each side") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  PositionHistory h;
  h.Add(P("0-1-2"), T(1000), T(1001));
  h.Add(P("0-1-2"), T(1400), T(1401));
  h.Add(P("0-1-3"), T(1600), T(1601));
  // Replica at seq 2 / pos 0-1-2, probed at 1700.
  ProbeObservation o = Probe(1700, 1702, 2, "0-1-2");
  LagBounds est = Estimate(o, log, h);
  CHECK(Ms(est.UpperAt(o.received)) == 302);  // position: 1702 - 1400 beats heartbeat 1702 - 1000
  CHECK(Ms(est.lower) == 198);                // heartbeat: 1700 - acked(3)=1502 beats 1700 - 1601
}

TEST_CASE("contradicting bounds fall back to the heartbeat alone") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  PositionHistory h;
  // A position history that claims the replica is fresh as of 2000 ...
  h.Add(P("0-1-9"), T(2000), T(2001));
  // ... while the heartbeat says it lacks seq 3, acknowledged at 1502.
  ProbeObservation o = Probe(2100, 2101, 2, "0-1-9");
  LagBounds est = Estimate(o, log, h);
  CHECK(est.inconsistent);
  CHECK(est.upper_source == BoundSource::kHeartbeat);
  CHECK(Ms(est.UpperAt(o.received)) == 1101);
  CHECK(Ms(est.lower) == 598);
}

TEST_CASE("the upper bound keeps growing from the last fresh moment") {
  HeartbeatLog log;
  Heartbeats(log, 2);
  LagBounds b = HeartbeatBounds(Probe(1100, 1101, 2), log);
  CHECK(Ms(b.UpperAt(T(1101))) == 101);
  CHECK(Ms(b.UpperAt(T(6000))) == 5000);
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

TEST_CASE("the stream's bound is left out where it contradicts the samples' lower bound") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  PositionHistory history;
  history.SetSource(PositionsKind::kMariaDbGtid, 1);
  history.Add(P("0-1-7"), T(2010), T(2011));
  history.Add(P("0-1-8"), T(2050), T(2051));  // 0-1-8 was on the primary by 2051
  // The stream delivered 0-1-8 only at 2100 (later than measured): a replica at 0-1-7 would be
  // fresh as of 2099 by it, yet the samples prove it lacked 0-1-8 since 2051.
  StreamHistory stream;
  const uint64_t token = stream.Begin(P("0-1-7"), T(1950));
  stream.Alive(token, T(1960), /*heartbeat=*/true);  // caught up
  stream.Transaction(token, P("0-1-8"), T(2100));
  stream.Alive(token, T(2100));
  LagBounds b = Estimate(Probe(2110, 2112, 4, "0-1-7"), log, history, &stream);
  CHECK(b.upper_source == BoundSource::kPosition);
  CHECK_FALSE(b.inconsistent);
  CHECK(Ms(b.UpperAt(T(2112))) == 102);  // fresh as of the 2010 sample
  CHECK(Ms(b.lower) == 59);              // 2110 - 2051
  // Counted, as a fallback of that probe's.
  const auto fell = stream.TakeFallbacks();
  REQUIRE(fell.size() == 1);
  CHECK(std::string(fell[0].first) == stream_reason::kLate);
  CHECK(fell[0].second == 1);
}

TEST_CASE("the stream's bound is published where it is tighter, and not while it is unusable") {
  HeartbeatLog log;
  Heartbeats(log, 4);  // seqs 1..4 sent at 500..2000
  PositionHistory history;
  history.SetSource(PositionsKind::kMariaDbGtid, 1);
  // Samples every 50 ms read 0-1-7 until 2050, then 0-1-8 from 2100.
  for (int t = 1900; t <= 2050; t += 50) history.Add(P("0-1-7"), T(t), T(t + 1));
  history.Add(P("0-1-8"), T(2100), T(2101));
  // The stream: 0-1-8 arrived at 2080, a heartbeat at 2108.
  StreamHistory stream;
  const uint64_t token = stream.Begin(P("0-1-7"), T(1950));
  stream.Alive(token, T(1960), /*heartbeat=*/true);  // caught up
  stream.Transaction(token, P("0-1-8"), T(2080));
  stream.Alive(token, T(2080));
  stream.Alive(token, T(2108));
  // A replica at 0-1-7: the samples prove it fresh as of 2050, the stream as of 2080 - D (1 ms).
  LagBounds b = Estimate(Probe(2110, 2112, 4, "0-1-7"), log, history, &stream);
  CHECK(b.upper_source == BoundSource::kStream);
  CHECK(Ms(b.UpperAt(T(2112))) == 33);
  // No lower bound from the stream (an event can leave before its commit is visible): the
  // samples' 2110 - 2101.
  CHECK(Ms(b.lower) == 9);
  CHECK(Ms(Estimate(Probe(2110, 2112, 4, "0-1-7"), log, history).UpperAt(T(2112))) == 62);
  // Caught up: fresh as of the heartbeat event, less D.
  b = Estimate(Probe(2110, 2112, 4, "0-1-8"), log, history, &stream);
  CHECK(b.upper_source == BoundSource::kStream);
  CHECK(Ms(b.UpperAt(T(2112))) == 5);
  // Silent for more than 100 ms: the samples' bound alone.
  history.Add(P("0-1-8"), T(2250), T(2251));
  b = Estimate(Probe(2260, 2262, 4, "0-1-8"), log, history, &stream);
  CHECK(b.upper_source == BoundSource::kPosition);
  CHECK(Ms(b.UpperAt(T(2262))) == 12);
}

TEST_CASE("relocate: a replica that stops answering is bounded from what it lacks since") {
  HeartbeatLog log;
  Heartbeats(log, 4);
  PositionHistory history;
  history.SetSource(PositionsKind::kMariaDbGtid, 1);
  for (int t = 1900; t <= 1950; t += 50) history.Add(P("0-1-7"), T(t), T(t + 1));
  StreamHistory stream;
  const uint64_t token = stream.Begin(P("0-1-7"), T(1950));
  stream.Alive(token, T(1960), /*heartbeat=*/true);  // caught up
  stream.Alive(token, T(2000));
  // The replica answered at 2002 with 0-1-7 (everything), then hung.
  LagBounds kept = Estimate(Probe(2000, 2002, 3, "0-1-7"), log, history, &stream);
  REQUIRE(kept.upper_source == BoundSource::kStream);
  CHECK(Ms(kept.UpperAt(T(2002))) == 3);  // 2002 - (2000 - D)
  for (int t = 2000; t <= 2100; t += 50) history.Add(P("0-1-7"), T(t), T(t + 1));
  // Nothing new on the primary until 2150: the stream's sign of life at 2140 and the samples up
  // to 2100 still hold everything it lacks.
  stream.Alive(token, T(2140));
  LagBounds r = Relocate(kept, P("0-1-7"), T(2142), history, &stream);
  CHECK(r.upper_source == BoundSource::kStream);
  CHECK(Ms(r.UpperAt(T(2142))) == 3);
  // 0-1-8 arrives at 2150: from then on it is what the replica lacks, whatever comes after.
  stream.Transaction(token, P("0-1-8"), T(2150));
  stream.Alive(token, T(2150));
  history.Add(P("0-1-8"), T(2150), T(2151));
  stream.Transaction(token, P("0-1-9"), T(2170));
  stream.Alive(token, T(2190));
  r = Relocate(kept, P("0-1-7"), T(2195), history, &stream);
  CHECK(Ms(r.UpperAt(T(2195))) == 46);  // 2195 - (2150 - D)
  CHECK(Ms(Relocate(r, P("0-1-7"), T(2400), history, &stream).UpperAt(T(2400))) == 251);
  // The samples alone: fresh as of the last one it includes (2100).
  r = Relocate(kept, P("0-1-7"), T(2195), history);
  CHECK(r.upper_source == BoundSource::kPosition);
  CHECK(Ms(r.UpperAt(T(2195))) == 95);
  // Never earlier than what was kept, and the lower bound is the kept one.
  kept.fresh_at = T(2160);
  kept.lower = Micros(7000);
  r = Relocate(kept, P("0-1-7"), T(2195), history, &stream);
  CHECK(*r.fresh_at == T(2160));
  CHECK(Ms(r.lower) == 7);
  // A position the histories cannot place moves nothing.
  r = Relocate(kept, P("0-2-7"), T(2195), history, &stream);
  CHECK(*r.fresh_at == T(2160));
}

}  // namespace
}  // namespace lagwatch
