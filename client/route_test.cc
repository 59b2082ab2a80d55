#include "client/route.h"

#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <string>

#include "base/fake_clock.h"

namespace lagwatch::client {
namespace {

ReplicaRecord Replica(const std::string& id, const std::string& tier, int weight,
                      std::optional<int64_t> limit, bool healthy = true) {
  ReplicaRecord r;
  r.id = id;
  r.tier = tier;
  r.weight = weight;
  r.max_delay_ms = limit;
  r.healthy = healthy;
  r.state = healthy ? ReplicaState::kOk : ReplicaState::kLagging;
  r.delay_ms = 10;
  return r;
}

Contract With(std::vector<ReplicaRecord> replicas, PrimaryCircuit circuit = PrimaryCircuit::kUp) {
  Contract c;
  for (const auto& r : replicas) c.members.push_back(r.id);
  c.replicas = std::move(replicas);
  c.primary.id = "10.0.0.1:3306";
  c.primary.circuit = circuit;
  return c;
}

const Statement kRead{.read = true};
const Statement kWrite{};

// Where `n` reads go, by replica id ("primary" for the primary).
std::map<std::string, int> Spread(const Contract& c, const Session& s, int n, uint64_t seed = 1) {
  std::map<std::string, int> out;
  RandomBelow random = SeededRandom(seed);
  for (int i = 0; i < n; ++i) {
    Decision d = Route(kRead, s, c, random);
    ++out[d.target == Target::kReplica ? d.replica : TargetName(d.target)];
  }
  return out;
}

Position Gtid(const char* s) { return ParsePosition(PositionsKind::kMariaDbGtid, s).value(); }

TEST_CASE("writes, locking reads, transactions and the caller's flag go to the primary") {
  const Contract c = With({Replica("r1:3306", "tier1", 100, 200)});
  RandomBelow random = SeededRandom(1);
  const Session s;
  CHECK(Route(kWrite, s, c, random).reason == Reason::kWrite);
  CHECK(Route({.read = true, .locking = true}, s, c, random).reason == Reason::kLockingRead);
  CHECK(Route({.read = true, .in_transaction = true}, s, c, random).reason ==
        Reason::kInTransaction);
  CHECK(Route({.read = true, .force_primary = true}, s, c, random).reason == Reason::kForced);
  for (Statement st : {kWrite, Statement{.read = true, .force_primary = true}}) {
    Decision d = Route(st, s, c, random);
    CHECK(d.target == Target::kPrimary);
    CHECK(d.primary == "10.0.0.1:3306");
    CHECK_FALSE(d.degraded);
  }
  Decision read = Route(kRead, s, c, random);
  CHECK(read.target == Target::kReplica);
  CHECK(read.replica == "r1:3306");
  CHECK(read.reason == Reason::kReplica);
}

TEST_CASE("tiers are tried in the order of their limits, no limit last, each falling through") {
  Contract c =
      With({Replica("t3:3306", "tier3", 100, std::nullopt), Replica("t2:3306", "tier2", 100, 1000),
            Replica("t1:3306", "tier1", 100, 200)});
  CHECK(Spread(c, {}, 50) == std::map<std::string, int>{{"t1:3306", 50}});
  c.replicas[2].healthy = false;  // tier1 unusable: tier2
  CHECK(Spread(c, {}, 50) == std::map<std::string, int>{{"t2:3306", 50}});
  c.replicas[1].healthy = false;  // then the tier with no limit
  CHECK(Spread(c, {}, 50) == std::map<std::string, int>{{"t3:3306", 50}});
  c.replicas[0].healthy = false;  // then the primary, as a degradation
  Decision d = Route(kRead, {}, c, SeededRandom(1));
  CHECK(d.target == Target::kPrimary);
  CHECK(d.reason == Reason::kNoUsableReplica);
  CHECK(d.degraded);
  // A missing key is simply no record: the same.
  CHECK(Route(kRead, {}, With({}), SeededRandom(1)).reason == Reason::kNoUsableReplica);
}

TEST_CASE("weights: [100, 0, 0] sends every read to the first, [1, 1] splits evenly") {
  const Contract skewed =
      With({Replica("a:3306", "tier1", 100, 200), Replica("b:3306", "tier1", 0, 200),
            Replica("c:3306", "tier1", 0, 200)});
  CHECK(Spread(skewed, {}, 10000) == std::map<std::string, int>{{"a:3306", 10000}});

  const Contract even =
      With({Replica("a:3306", "tier1", 1, 200), Replica("b:3306", "tier1", 1, 200)});
  auto spread = Spread(even, {}, 10000, 42);
  // Binomial(10000, 0.5): sd 50, so +-300 is six standard deviations.
  CHECK(spread["a:3306"] + spread["b:3306"] == 10000);
  CHECK(spread["a:3306"] > 4700);
  CHECK(spread["a:3306"] < 5300);

  const Contract three_to_one =
      With({Replica("a:3306", "tier1", 750, 200), Replica("b:3306", "tier1", 250, 200)});
  auto weighted = Spread(three_to_one, {}, 10000, 7);
  CHECK(weighted["a:3306"] > 7200);
  CHECK(weighted["a:3306"] < 7800);
}

TEST_CASE("weight 0 is never chosen, unless the primary is down and nothing else can read") {
  const Contract drained_only = With({Replica("z:3306", "tier1", 0, 200)});
  // Weight 0 in tier1 falls through to the next tier, then to the primary.
  Contract fall = drained_only;
  fall.replicas.push_back(Replica("t2:3306", "tier2", 5, 1000));
  fall.members.push_back("t2:3306");
  CHECK(Spread(fall, {}, 100) == std::map<std::string, int>{{"t2:3306", 100}});
  CHECK(Spread(drained_only, {}, 100) == std::map<std::string, int>{{"primary", 100}});

  Contract down = drained_only;
  down.primary.circuit = PrimaryCircuit::kDown;
  Decision d = Route(kRead, {}, down, SeededRandom(1));
  CHECK(d.target == Target::kReplica);
  CHECK(d.replica == "z:3306");
  CHECK(d.reason == Reason::kDrainedReplica);
  CHECK(d.degraded);
}

TEST_CASE("primary down: writes fail fast, reads keep going to healthy replicas") {
  const Contract c = With({Replica("r1:3306", "tier1", 100, 200)}, PrimaryCircuit::kDown);
  RandomBelow random = SeededRandom(1);
  Decision w = Route(kWrite, {}, c, random);
  CHECK(w.target == Target::kFailFast);
  CHECK(w.reason == Reason::kPrimaryDown);
  CHECK(Route({.read = true, .locking = true}, {}, c, random).target == Target::kFailFast);
  Decision r = Route(kRead, {}, c, random);
  CHECK(r.target == Target::kReplica);
  CHECK(r.replica == "r1:3306");

  // No usable replica either: the read fails fast too, as a degradation.
  const Contract none = With({Replica("r1:3306", "tier1", 100, 200, false)}, PrimaryCircuit::kDown);
  Decision failed = Route(kRead, {}, none, random);
  CHECK(failed.target == Target::kFailFast);
  CHECK(failed.degraded);

  // Degraded still takes statements; ambiguous takes no writes; unknown is no opinion.
  CHECK(Route(kWrite, {}, With({}, PrimaryCircuit::kDegraded), random).target == Target::kPrimary);
  Decision split = Route(kWrite, {}, With({}, PrimaryCircuit::kAmbiguous), random);
  CHECK(split.target == Target::kFailFast);
  CHECK(split.reason == Reason::kPrimaryAmbiguous);
  CHECK(Route(kRead, {}, With({}, PrimaryCircuit::kAmbiguous), random).target == Target::kPrimary);
  CHECK(Route(kWrite, {}, Contract{}, random).target == Target::kPrimary);
}

TEST_CASE("read-your-writes: only replicas whose position includes the token serve the session") {
  Contract c =
      With({Replica("behind:3306", "tier1", 100, 200), Replica("ahead:3306", "tier2", 100, 1000)});
  c.replicas[0].position = Gtid("0-1-119");
  c.replicas[1].position = Gtid("0-1-120,1-2-7");
  Session s;
  s.Wrote(Gtid("0-1-120"), MonoTime{});
  // tier1 lacks the write: the session reads from tier2, which has it.
  CHECK(Spread(c, s, 50) == std::map<std::string, int>{{"ahead:3306", 50}});

  // Nobody has it: ask a replica of the token's kind, else the primary.
  c.replicas[1].position = Gtid("0-1-100");
  Decision ask = Route(kRead, s, c, SeededRandom(1));
  CHECK(ask.target == Target::kAskReplica);
  CHECK(ask.replica == "behind:3306");  // the first tier that has one
  CHECK(ask.fallback == Target::kPrimary);
  CHECK(ask.reason == Reason::kNotCaughtUp);
  CHECK_FALSE(ask.degraded);

  // Positions of another kind, or none at all, are never asked and never proof.
  c.replicas[0].position = ParsePosition(PositionsKind::kBinlog, "bin.000009:4").value();
  c.replicas[1].position.reset();
  Decision primary = Route(kRead, s, c, SeededRandom(1));
  CHECK(primary.target == Target::kPrimary);
  CHECK(primary.reason == Reason::kNotCaughtUp);
  CHECK_FALSE(primary.degraded);

  // A session without a token reads anywhere usable.
  CHECK(Route(kRead, {}, c, SeededRandom(1)).target == Target::kReplica);
}

TEST_CASE("read-your-writes inclusion for MySQL GTID sets and binary log coordinates") {
  const std::string uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
  auto mysql = [](const std::string& s) {
    return ParsePosition(PositionsKind::kMysqlGtid, s).value();
  };
  auto coords = [](const char* s) { return ParsePosition(PositionsKind::kBinlog, s).value(); };

  Contract c = With({Replica("r:3306", "tier1", 1, 200)});
  Session s;
  s.Wrote(mysql(uuid + ":1-57"), MonoTime{});
  c.replicas[0].position = mysql(uuid + ":1-56:58");  // 57 missing: a gap is not inclusion
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kAskReplica);
  c.replicas[0].position = mysql(uuid + ":1-60");
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kReplica);

  s.Wrote(coords("mysql-bin.000012:4567"), MonoTime{});
  c.replicas[0].position = coords("mysql-bin.000012:4566");
  // Coordinates have no zero-timeout ask: straight to the primary.
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kPrimary);
  c.replicas[0].position = coords("mysql-bin.000013:4");
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kReplica);
  c.replicas[0].position = coords("other-bin.000099:4");  // another server's log: no proof
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kPrimary);
}

TEST_CASE("without a token, a replica serves once its record proves it has the write") {
  FakeClock clock;
  const MonoTime write = clock.Now();
  Contract c = With({Replica("r:3306", "tier1", 1, 200)});
  c.replicas[0].delay_ms = 150;
  Session s;
  s.Wrote(std::nullopt, write);
  CHECK(s.untokened_write_at == write);

  // Measured (at the latest) 100 ms after the write, 150 ms stale: may lack it.
  c.replicas[0].measured_after = write + Millis(100);
  Decision d = Route(kRead, s, c, SeededRandom(1));
  CHECK(d.target == Target::kPrimary);
  CHECK(d.reason == Reason::kNotCaughtUp);
  // Measured 150 ms after the write: has everything up to the write.
  c.replicas[0].measured_after = write + Millis(150);
  CHECK(Route(kRead, s, c, SeededRandom(1)).target == Target::kReplica);

  // A tokened write replaces the untokened one.
  s.Wrote(Gtid("0-1-5"), write);
  CHECK_FALSE(s.untokened_write_at);
}

TEST_CASE("a token is dropped once every replica in the set includes it, usable or not") {
  Contract c =
      With({Replica("a:3306", "tier1", 1, 200), Replica("b:3306", "tier1", 1, 200, false)});
  c.replicas[0].position = Gtid("0-1-120");
  c.replicas[1].position = Gtid("0-1-100");  // lagging: it could come back lacking the write
  Session s;
  s.Wrote(Gtid("0-1-120"), MonoTime{});
  s.Settle(c);
  CHECK(s.token);
  c.replicas[1].position = Gtid("0-1-121");
  s.Settle(c);
  CHECK_FALSE(s.token);

  // A member without a key blocks it too.
  Contract missing = c;
  missing.members.push_back("gone:3306");
  CHECK_FALSE(TokenSettled(missing, Gtid("0-1-1")));
  CHECK_FALSE(TokenSettled(Contract{}, Gtid("0-1-1")));
}

TEST_CASE(
    "bounded staleness: a replica serves only while its bound plus the time since proves it") {
  // measured at 1,000 with an upper bound of 10 ms: within 200 ms until 1,190 (1,185 with 5 ms
  // skew).
  ReplicaRecord r1 = Replica("r1:3306", "tier1", 100, 200);
  r1.measured_at_ms = 1000;
  ReplicaRecord r2 = Replica("r2:3306", "tier1", 100, 200);
  r2.measured_at_ms = 1150;
  ReplicaRecord open = Replica("r3:3306", "tier3", 100, std::nullopt);
  open.measured_at_ms = 0;
  CHECK(FreshUntilMs(r1, 0) == 1190);
  CHECK(FreshUntilMs(r1, 5) == 1185);
  CHECK_FALSE(FreshUntilMs(open, 0).has_value());

  const Session s;
  RandomBelow random = SeededRandom(1);
  const Contract one = With({r1});
  Decision d = Route(kRead, s, one, random, Freshness{.now_unix_ms = 1100, .clock_skew_ms = 5});
  CHECK(d.target == Target::kReplica);
  CHECK(d.fresh_until_ms == 1185);
  CHECK(d.fallback == Target::kPrimary);
  // Less than min_left_ms (5) before the deadline: not worth sending.
  d = Route(kRead, s, one, random, Freshness{.now_unix_ms = 1181, .clock_skew_ms = 5});
  CHECK(d.target == Target::kPrimary);
  CHECK(d.reason == Reason::kNoUsableReplica);
  CHECK(d.degraded);
  // Without the option the same record is used, with no deadline.
  d = Route(kRead, s, one, random);
  CHECK(d.target == Target::kReplica);
  CHECK_FALSE(d.fresh_until_ms.has_value());

  // Two in the tier: only the one measured recently enough; a tier without a limit is not held
  // to a deadline.
  CHECK(Spread(With({r1, r2}), s, 50).size() == 2);
  std::map<std::string, int> spread;
  for (int i = 0; i < 50; ++i) {
    d = Route(kRead, s, With({r1, r2, open}), random, Freshness{.now_unix_ms = 1250});
    ++spread[d.replica];
  }
  CHECK(spread == std::map<std::string, int>{{"r2:3306", 50}});
  d = Route(kRead, s, With({r1, open}), random, Freshness{.now_unix_ms = 99'000});
  CHECK(d.replica == "r3:3306");
  CHECK_FALSE(d.fresh_until_ms.has_value());

  // The primary down: an answer after the deadline has nowhere else to go.
  d = Route(kRead, s, With({r2}, PrimaryCircuit::kDown), random, Freshness{.now_unix_ms = 1200});
  CHECK(d.target == Target::kReplica);
  CHECK(d.fallback == Target::kFailFast);

  // Absurd records saturate instead of overflowing.
  ReplicaRecord absurd = Replica("r4:3306", "tier1", 100, std::numeric_limits<int64_t>::max());
  absurd.measured_at_ms = std::numeric_limits<int64_t>::max();
  absurd.delay_ms = 0;
  CHECK(FreshUntilMs(absurd, std::numeric_limits<int64_t>::min()).value() > 0);
  absurd.measured_at_ms = 0;
  absurd.delay_ms = std::numeric_limits<int64_t>::max();
  absurd.max_delay_ms = 0;
  CHECK(FreshUntilMs(absurd, std::numeric_limits<int64_t>::max()).value() < 0);
}

}  // namespace
}  // namespace lagwatch::client
