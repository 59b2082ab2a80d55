#include "exporters/haproxy_verdict.h"

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

using Verdict = HaproxyAnswer::Verdict;

const MonoTime kT0 = MonoTime() + std::chrono::hours(1);
constexpr Millis kTtl(1000);

// A replica's record measured at kT0: tier1 (200 ms), weight 50, ok and healthy at 12 ms.
ReplicaSnapshot Record(std::string state = "ok", bool healthy = true, int64_t delay_ms = 12,
                       int weight = 50) {
  ReplicaSnapshot r;
  r.id = "10.0.0.12:3306";
  r.state = std::move(state);
  r.healthy = healthy;
  r.delay_ms = delay_ms;
  r.weight = weight;
  r.tier = "tier1";
  r.max_delay_ms = 200;
  r.measured_mono = kT0;
  return r;
}

HaproxyAnswer Replica(const ReplicaSnapshot& r, MonoTime now = kT0 + Millis(100),
                      std::optional<int64_t> pool = std::nullopt) {
  return JudgeForHaproxy({false, r}, HaproxyEntry::kReplica, now, kTtl, pool);
}

TEST_CASE("server names: the id for the replica entry, id_primary for the backup entry") {
  auto n = ParseHaproxyServerName("10.0.0.12:3306");
  REQUIRE(n);
  CHECK(n->id == "10.0.0.12:3306");
  CHECK(n->entry == HaproxyEntry::kReplica);
  n = ParseHaproxyServerName("db-1.example:3306_primary");
  REQUIRE(n);
  CHECK(n->id == "db-1.example:3306");
  CHECK(n->entry == HaproxyEntry::kPrimary);
  CHECK(n->ToString() == "db-1.example:3306_primary");
  CHECK(ParseHaproxyServerName("::1:3306")->id == "::1:3306");
  // What HAProxy refuses, and what would break a command line, is no name.
  for (const char* bad : {"", "a b", "a~b", "a/b", "a;b", "a\nb", "a%b", "a\"b", "a#b"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseHaproxyServerName(bad));
  }
  CHECK_FALSE(ParseHaproxyServerName(std::string(301, 'a')));
  // The suffix alone is a name of its own, not the backup entry of nothing.
  CHECK(ParseHaproxyServerName("_primary")->entry == HaproxyEntry::kReplica);
}

TEST_CASE("a healthy replica within its tier's limit is up with its lagwatch weight") {
  const HaproxyAnswer a = Replica(Record());
  CHECK(a.verdict == Verdict::kUp);
  CHECK(a.usable());
  CHECK(a.reason == "usable");
  CHECK(a.AgentReply() == "ready up 50%\n");
  CHECK(a.HttpStatus() == 200);
  CHECK(a.HttpBody() == "usable delay_ms=12 max_delay_ms=200 state=ok\n");
  CHECK(a.RuntimeWeight() == 50);
  REQUIRE(a.usable_until);
  CHECK(*a.usable_until == kT0 + kTtl);
}

TEST_CASE("weights above HAProxy's 256 are capped for the runtime API, not for the agent") {
  const HaproxyAnswer a = Replica(Record("ok", true, 12, 1000));
  CHECK(a.AgentReply() == "ready up 1000%\n");  // 1000% of weight 100: HAProxy caps it at 256
  CHECK(a.RuntimeWeight() == 256);
}

TEST_CASE("a usable replica of weight 0 drains: no new connections, HTTP cannot say so") {
  const HaproxyAnswer a = Replica(Record("ok", true, 12, 0));
  CHECK(a.verdict == Verdict::kDrain);
  CHECK(a.usable());
  CHECK(a.AgentReply() == "drain up\n");
  CHECK(a.HttpStatus() == 503);
  CHECK(a.HttpBody() == "unusable weight_0 delay_ms=12 max_delay_ms=200 state=ok\n");
}

TEST_CASE("an unusable replica is down and says why, with its delay and limit") {
  struct Case {
    const char* state;
    bool healthy;
    int64_t delay_ms;
    const char* reason;
  };
  for (const Case& c :
       {Case{"lagging", false, 1234, "lagging"}, Case{"stopped", false, 1500, "stopped"},
        Case{"unreachable", false, 300, "unreachable"}, Case{"unverified", false, 5, "unverified"},
        Case{"primary_unknown", false, 900, "primary_unknown"},
        // Recovering: within the limit, not yet back (hysteresis).
        Case{"lagging", false, 100, "lagging"}}) {
    CAPTURE(c.state);
    const HaproxyAnswer a = Replica(Record(c.state, c.healthy, c.delay_ms));
    CHECK(a.verdict == Verdict::kDown);
    CHECK_FALSE(a.usable());
    CHECK(a.reason == c.reason);
    CHECK(a.HttpStatus() == 503);
    CHECK_FALSE(a.usable_until);
  }
  const HaproxyAnswer a = Replica(Record("lagging", false, 1234));
  CHECK(a.AgentReply() == "ready down #lagging delay_ms=1234 max_delay_ms=200\n");
  CHECK(a.HttpBody() == "unusable lagging delay_ms=1234 max_delay_ms=200 state=lagging\n");
}

TEST_CASE(
    "a caught-up replica kept healthy while the primary is unknown stays in, as for routers") {
  const HaproxyAnswer a = Replica(Record("primary_unknown", true, 0));
  CHECK(a.verdict == Verdict::kUp);
}

TEST_CASE("no record yet, or a record older than the TTL, is down: a hung prober is not trusted") {
  const HaproxyAnswer none = JudgeForHaproxy({}, HaproxyEntry::kReplica, kT0, kTtl);
  CHECK(none.verdict == Verdict::kDown);
  CHECK(none.reason == "no_record");
  CHECK(none.AgentReply() == "ready down #no_record\n");
  CHECK(none.HttpBody() == "unusable no_record\n");
  CHECK(Replica(Record(), kT0 + kTtl - Millis(1)).verdict == Verdict::kUp);
  const HaproxyAnswer old = Replica(Record(), kT0 + kTtl);
  CHECK(old.verdict == Verdict::kDown);
  CHECK(old.reason == "expired");
}

TEST_CASE("a disabled tier is maintenance, whatever the pool's limit") {
  const HaproxyAnswer a = Replica(Record("disabled", false, 3));
  CHECK(a.verdict == Verdict::kMaint);
  CHECK(a.AgentReply() == "maint #disabled\n");
  CHECK(a.HttpStatus() == 503);
  CHECK(Replica(Record("disabled", false, 3), kT0, 100000).verdict == Verdict::kMaint);
}

TEST_CASE("a pool's own limit replaces the tier's, and only the lag part of the verdict") {
  // Over tier1's 200 ms, within the pool's 5000 ms.
  HaproxyAnswer a = Replica(Record("lagging", false, 1234), kT0, 5000);
  CHECK(a.verdict == Verdict::kUp);
  CHECK(a.HttpBody() == "usable delay_ms=1234 max_delay_ms=5000 state=lagging\n");
  // Healthy for tier1 but over a stricter pool's 10 ms.
  a = Replica(Record("ok", true, 12), kT0, 10);
  CHECK(a.verdict == Verdict::kDown);
  CHECK(a.reason == "lagging");
  CHECK(a.AgentReply() == "ready down #lagging delay_ms=12 max_delay_ms=10\n");
  // Within any limit, the other reasons still keep it out.
  for (const char* state : {"stopped", "unreachable", "unverified"}) {
    CAPTURE(state);
    a = Replica(Record(state, false, 5), kT0, 5000);
    CHECK(a.verdict == Verdict::kDown);
    CHECK(a.reason == state);
  }
  CHECK(Replica(Record("primary_unknown", false, 5), kT0, 5000).verdict == Verdict::kDown);
  CHECK(Replica(Record("primary_unknown", true, 0), kT0, 5000).verdict == Verdict::kUp);
  CHECK(Replica(Record(), kT0 + kTtl, 5000).reason == "expired");
}

TEST_CASE(
    "the primary's normal entry is maintenance and its backup entry is up; others' backups "
    "are maintenance") {
  HaproxyFacts primary{true, Record()};  // a record from before it was promoted is ignored
  HaproxyAnswer a = JudgeForHaproxy(primary, HaproxyEntry::kReplica, kT0, kTtl);
  CHECK(a.verdict == Verdict::kMaint);
  CHECK(a.reason == "primary");
  a = JudgeForHaproxy(primary, HaproxyEntry::kPrimary, kT0 + kTtl * 10, kTtl);
  CHECK(a.verdict == Verdict::kUp);
  CHECK(a.AgentReply() == "ready up 100%\n");
  CHECK(a.HttpStatus() == 200);
  CHECK(a.HttpBody() == "usable primary\n");
  CHECK_FALSE(a.usable_until);
  a = JudgeForHaproxy({false, Record()}, HaproxyEntry::kPrimary, kT0, kTtl);
  CHECK(a.verdict == Verdict::kMaint);
  CHECK(a.AgentReply() == "maint #not_primary\n");
  CHECK(a.HttpBody() == "unusable not_primary\n");
}

}  // namespace
}  // namespace lagwatch
