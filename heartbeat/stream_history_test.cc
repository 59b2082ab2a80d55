#include "heartbeat/stream_history.h"

#include <doctest/doctest.h>

#include "base/gtid.h"

namespace lagwatch {
namespace {

MonoTime At(int ms) { return MonoTime(Millis(ms)); }
Position Gtid(const char* text) { return Position(GtidPos::Parse(text).value()); }
Position Seq(int n) { return Gtid(("0-1-" + std::to_string(n)).c_str()); }

// A stream begun at 1,000 ms from 0-1-10, with transactions 11 and 12 arriving at 1,100 and
// 1,150 ms and a heartbeat at 1,190 ms; one sample sent at 1,140 ms read 0-1-11 (delivered
// before it was sent: lag 0).
struct Stream {
  StreamHistory h;
  uint64_t token = 0;
  Stream() {
    token = h.Begin(Seq(10), At(1000));
    h.Transaction(token, Seq(11), At(1100));
    h.Alive(token, At(1100));
    h.CheckSample(Seq(11), At(1140));
    h.Transaction(token, Seq(12), At(1150));
    h.Alive(token, At(1190));
  }
};

TEST_CASE("a replica with every transaction is fresh as of the last sign of life, less D") {
  Stream s;
  auto b = s.h.Locate(Seq(12), At(1195));
  REQUIRE(b.fresh_at);
  // D is the 1 ms floor: no sample measured more.
  CHECK(*b.fresh_at == At(1189));
  CHECK(s.h.StateAt(At(1195)).delivery_bound == Micros(1000));
}

TEST_CASE("a replica lacking a transaction is fresh until its first event's arrival, less D") {
  Stream s;
  auto b = s.h.Locate(Seq(11), At(1195));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(1149));
  // Lacking part of what arrived before the stream had caught up (the sample at 1,140): what
  // came then may have come late, so no bound from its arrival.
  b = s.h.Locate(Seq(10), At(1195));
  CHECK(!b.fresh_at);
  // Before the stream's start: nothing to say.
  b = s.h.Locate(Seq(9), At(1195));
  CHECK(!b.fresh_at);
}

TEST_CASE("a sample the stream delivered late makes D that lag, for lag_span") {
  Stream s;
  // Sent at 1,195: 0-1-13 arrives at 1,210 (15 ms later).
  s.h.CheckSample(Seq(13), At(1195));
  CHECK(s.h.StateAt(At(1200)).usable);
  s.h.Transaction(s.token, Seq(13), At(1210));
  s.h.Alive(s.token, At(1210));
  auto st = s.h.StateAt(At(1215));
  CHECK(st.usable);
  CHECK(st.delivery_bound == Micros(15000));
  auto b = s.h.Locate(Seq(13), At(1215));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(1195));
  // More than lag_span (1 s) after that sample was sent, the floor again; the transaction it
  // measured still carries it.
  s.h.Transaction(s.token, Seq(14), At(2200));
  s.h.Alive(s.token, At(2200));
  CHECK(s.h.StateAt(At(2200)).delivery_bound == Micros(1000));
  b = s.h.Locate(Seq(13), At(2200));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(2199));
  b = s.h.Locate(Seq(12), At(2200));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(1195));
}

TEST_CASE("the stream is not used while a sample waits too long, nor after, while D is too big") {
  Stream s;
  s.h.CheckSample(Seq(13), At(1195));
  s.h.Alive(s.token, At(1200));
  s.h.Alive(s.token, At(1244));
  auto st = s.h.StateAt(At(1246));
  CHECK(!st.usable);
  CHECK(std::string(st.why_not) == stream_reason::kBehind);
  CHECK(!s.h.Locate(Seq(12), At(1246)).fresh_at);
  // It catches up 80 ms late: D is 80 ms, over the 50 ms limit, until that sample was sent
  // lag_span (1 s) ago.
  s.h.Transaction(s.token, Seq(13), At(1275));
  s.h.Alive(s.token, At(1275));
  st = s.h.StateAt(At(1276));
  CHECK(std::string(st.why_not) == stream_reason::kSlow);
  s.h.Alive(s.token, At(2190));
  CHECK(std::string(s.h.StateAt(At(2194)).why_not) == stream_reason::kSlow);
  s.h.Transaction(s.token, Seq(14), At(2196));
  s.h.Alive(s.token, At(2196));
  CHECK(s.h.StateAt(At(2196)).usable);
  // A replica that lacks a transaction from within lag_span after the late sample is bounded by
  // the samples alone (D there is 80 ms); one that lacks only what came after is bounded tight.
  CHECK(!s.h.Locate(Seq(12), At(2196)).fresh_at);
  auto b = s.h.Locate(Seq(13), At(2196));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(2195));
}

TEST_CASE("a sample waited on through a freeze is D for what arrived while it waited") {
  // The primary freezes after the sample sent at 1,195; the sampler waits on that query, so no
  // other is sent. 0-1-13, written before the freeze, arrives at 4,000 with the answer.
  Stream s;
  s.h.CheckSample(Seq(13), At(1195));
  s.h.Transaction(s.token, Seq(13), At(4000));
  s.h.Alive(s.token, At(4000));
  // The lag (2,805 ms) was sent over lag_span ago: right after the answer the stream is not
  // slow...
  CHECK(!s.h.StateAt(At(4000)).usable);
  CHECK(s.h.StateAt(At(4001)).usable);
  // ...but 0-1-13 arrived while that sample waited: no bound from its arrival.
  CHECK(!s.h.Locate(Seq(12), At(4001)).fresh_at);
  // What arrives after the answer is bounded as usual.
  s.h.Transaction(s.token, Seq(14), At(4100));
  s.h.Alive(s.token, At(4100));
  auto b = s.h.Locate(Seq(13), At(4100));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(4099));
}

TEST_CASE("a transaction older than the lags kept gives no bound") {
  StreamHistory h;
  const uint64_t token = h.Begin(Seq(10), At(1000));
  h.Alive(token, At(1010), /*heartbeat=*/true);
  h.Transaction(token, Seq(11), At(1100));
  for (int t = 1150; t <= 13000; t += 50) {
    h.Transaction(token, Seq(t), At(t));
    h.Alive(token, At(t));
    h.CheckSample(Seq(t), At(t));
  }
  REQUIRE(h.StateAt(At(13000)).usable);
  // Lacking 0-1-11, which arrived at 1,100: the lags measured around it (since 100 ms) may be
  // gone, 10 s later, so nothing bounds its delivery.
  CHECK(!h.Locate(Seq(10), At(13000)).fresh_at);
  // Lacking one that arrived at 4,000: lags since 3,000 are kept.
  auto b = h.Locate(Seq(3950), At(13000));
  REQUIRE(b.fresh_at);
  CHECK(*b.fresh_at == At(3999));
}

TEST_CASE("a stream silent for longer than alive_within, stopped or reset gives no bounds") {
  Stream s;
  CHECK(s.h.StateAt(At(1290)).usable);
  auto st = s.h.StateAt(At(1291));
  CHECK(std::string(st.why_not) == stream_reason::kSilent);
  s.h.Alive(s.token, At(1290));
  s.h.Stop(s.token);
  CHECK(std::string(s.h.StateAt(At(1291)).why_not) == stream_reason::kDown);
  // What the stopped stream's listener still sends is ignored once another began.
  const uint64_t next = s.h.Begin(Seq(20), At(2000));
  s.h.Transaction(s.token, Seq(21), At(2001));
  CHECK(s.h.StateAt(At(2002)).position == Seq(20));
  s.h.Transaction(next, Seq(21), At(2003));
  CHECK(s.h.StateAt(At(2004)).position == Seq(21));
  s.h.Reset();
  CHECK(!s.h.StateAt(At(2004)).usable);
  CHECK(!s.h.Locate(Seq(21), At(2004)).fresh_at);
}

TEST_CASE("a sample of another kind makes the stream incomparable until it begins again") {
  Stream s;
  s.h.CheckSample(Position(BinlogCoords{"mysql-bin", 1, 400}), At(1160));
  CHECK(std::string(s.h.StateAt(At(1165)).why_not) == stream_reason::kIncomparable);
  const uint64_t next = s.h.Begin(Seq(20), At(2000));
  s.h.Alive(next, At(2000), /*heartbeat=*/true);
  CHECK(s.h.StateAt(At(2001)).usable);
  CHECK(s.h.Locate(Position(BinlogCoords{"mysql-bin", 1, 400}), At(2001)).incomparable);
}

TEST_CASE("a sample sent before the stream began is not a measure of it") {
  StreamHistory h;
  const uint64_t t = h.Begin(Seq(10), At(1000));
  h.CheckSample(Seq(11), At(990));
  h.Transaction(t, Seq(11), At(1200));
  h.Alive(t, At(1200));
  CHECK_FALSE(h.StateAt(At(1201)).usable);  // nor a proof that it has caught up
  h.CheckSample(Seq(11), At(1201));
  CHECK(h.StateAt(At(1202)).usable);
  CHECK(h.StateAt(At(1202)).delivery_bound == Micros(1000));
}

TEST_CASE("a stream is used once it caught up: a sample sent since it began, or a heartbeat") {
  StreamHistory h;
  const uint64_t t = h.Begin(Seq(10), At(1000));
  // The dump thread reads the binary log up to the start before it sends what follows: 0-1-11
  // arrives at 1,030, perhaps written at 1,001.
  h.Transaction(t, Seq(11), At(1030));
  h.Alive(t, At(1030));
  CHECK(std::string(h.StateAt(At(1031)).why_not) == stream_reason::kBehind);
  CHECK_FALSE(h.Locate(Seq(10), At(1031)).fresh_at);
  // A sample sent at 1,040 read 0-1-12, which arrives at 1,060: caught up, D 20 ms.
  h.CheckSample(Seq(12), At(1040));
  h.Transaction(t, Seq(12), At(1060));
  h.Alive(t, At(1060));
  const auto st = h.StateAt(At(1061));
  CHECK(st.usable);
  CHECK(st.delivery_bound == Millis(20));
  // What came by then is one run, 0-1-12: a replica that lacks part of it has no stream bound,
  // one that has it is fresh as of its arrival less D (the sample's send time, at the latest).
  CHECK_FALSE(h.Locate(Seq(11), At(1061)).fresh_at);
  CHECK(*h.Locate(Seq(12), At(1061)).fresh_at == At(1040));
  // What arrives from now on bounds as usual.
  h.Transaction(t, Seq(13), At(1080));
  h.Alive(t, At(1080));
  CHECK(*h.Locate(Seq(12), At(1085)).fresh_at == At(1060));
  CHECK(*h.Locate(Seq(13), At(1085)).fresh_at == At(1060));
  // A sample that read the start proves nothing (the dump thread may not have reached it), a
  // heartbeat event does (it is sent only at the end of the binary log).
  StreamHistory idle;
  const uint64_t i = idle.Begin(Seq(10), At(1000));
  idle.CheckSample(Seq(10), At(1005));
  CHECK_FALSE(idle.StateAt(At(1006)).usable);
  idle.Alive(i, At(1010), /*heartbeat=*/true);
  CHECK(idle.StateAt(At(1011)).usable);
  CHECK(*idle.Locate(Seq(10), At(1011)).fresh_at == At(1009));
}

TEST_CASE("MySQL's commit timestamps of the last transaction are kept as they came, per stream") {
  StreamHistory h;
  uint64_t t = h.Begin(Seq(10), At(1000));
  h.Transaction(t, Seq(11), At(1100),
                std::pair<uint64_t, uint64_t>{1764806400100000, 1764806400123456});
  h.Transaction(t, Seq(12), At(1150));  // MariaDB's say nothing: the last ones stay
  auto st = h.StateAt(At(1160));
  REQUIRE(st.commit_us);
  CHECK(st.commit_us->first == 1764806400100000u);
  CHECK(st.commit_us->second == 1764806400123456u);
  t = h.Begin(Seq(20), At(2000));
  CHECK(!h.StateAt(At(2001)).commit_us);
}

}  // namespace
}  // namespace lagwatch
