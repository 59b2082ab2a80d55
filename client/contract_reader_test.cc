#include "client/contract_reader.h"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>

#include <deque>
#include <string>

#include "base/fake_clock.h"

namespace lagwatch::client {
namespace {

// Hand-made hiredis replies: what HGETALL and SMEMBERS would return, and hostile variants.
class Replies {
 public:
  redisReply* String(const std::string& s) {
    text_.push_back(s);
    redisReply* r = New(REDIS_REPLY_STRING);
    r->str = text_.back().data();
    r->len = text_.back().size();
    return r;
  }
  redisReply* Integer(long long v) {
    redisReply* r = New(REDIS_REPLY_INTEGER);
    r->integer = v;
    return r;
  }
  redisReply* Nil() { return New(REDIS_REPLY_NIL); }
  redisReply* Error(const std::string& s) {
    redisReply* r = String(s);
    r->type = REDIS_REPLY_ERROR;
    return r;
  }
  redisReply* Array(std::vector<redisReply*> elements) {
    arrays_.push_back(std::move(elements));
    redisReply* r = New(REDIS_REPLY_ARRAY);
    r->elements = arrays_.back().size();
    r->element = arrays_.back().data();
    return r;
  }
  redisReply* Strings(const std::vector<std::string>& items) {
    std::vector<redisReply*> e;
    for (const auto& s : items) e.push_back(String(s));
    return Array(std::move(e));
  }

 private:
  redisReply* New(int type) {
    replies_.emplace_back();
    replies_.back().type = type;
    return &replies_.back();
  }
  std::deque<redisReply> replies_;
  std::deque<std::string> text_;
  std::deque<std::vector<redisReply*>> arrays_;
};

TEST_CASE("an HGETALL reply becomes a field map; a missing key an empty one") {
  Replies r;
  auto fields = HashFromReply(r.Strings({"delay_ms", "12", "state", "ok"}));
  REQUIRE(fields);
  CHECK(*fields == FieldMap{{"delay_ms", "12"}, {"state", "ok"}});
  auto empty = HashFromReply(r.Array({}));
  REQUIRE(empty);
  CHECK(empty->empty());
  // Binary-safe: a NUL inside a value is kept, and refused later by the record's parser.
  auto nul = HashFromReply(r.Strings({"state", std::string("ok\0x", 4)}));
  REQUIRE(nul);
  CHECK(nul->at("state").size() == 4);
}

TEST_CASE("replies that are no hash or no set are refused, never trusted") {
  Replies r;
  CHECK_FALSE(HashFromReply(nullptr));
  CHECK_FALSE(HashFromReply(r.Error("WRONGTYPE Operation against a key holding the wrong kind")));
  CHECK_FALSE(HashFromReply(r.Strings({"delay_ms"})));                 // odd
  CHECK_FALSE(HashFromReply(r.Array({r.String("a"), r.Integer(1)})));  // not a string
  CHECK_FALSE(HashFromReply(r.Array({r.String("a"), r.Nil()})));
  CHECK_FALSE(HashFromReply(r.Array({r.String("a"), r.Strings({"x", "y"})})));  // nested
  CHECK_FALSE(HashFromReply(r.Integer(3)));

  auto members = MembersFromReply(r.Strings({"10.0.0.12:3306", "10.0.0.13:3306"}));
  REQUIRE(members);
  CHECK(members->size() == 2);
  CHECK_FALSE(MembersFromReply(r.Array({r.String("a:1"), r.Integer(1)})));
  CHECK_FALSE(MembersFromReply(r.Nil()));
}

TEST_CASE("keys are spelled as the contract says") {
  CHECK(ReplicaKey("slave_delay", "10.0.0.12:3306") == "slave_delay:10.0.0.12:3306");
  CHECK(PrimaryKey("10.0.0.13:3306") == "lagwatch:primary:10.0.0.13:3306");
}

std::shared_ptr<const Contract> Fetched(MonoTime at, std::vector<MonoTime> expiries = {}) {
  auto c = std::make_shared<Contract>();
  c->fetched_at = at;
  for (MonoTime e : expiries) {
    ReplicaRecord r;
    r.expires_at = e;
    c->replicas.push_back(r);
  }
  return c;
}

TEST_CASE("the cache serves a snapshot for at most 25 ms") {
  FakeClock clock;
  SnapshotCache cache(Millis(25));
  const MonoTime t0 = clock.Now();
  CHECK_FALSE(cache.Get(t0, 0));
  cache.Put(Fetched(t0), 0);
  CHECK(cache.Get(t0, 0));
  clock.Advance(Millis(24));
  CHECK(cache.Get(clock.Now(), 0));
  clock.Advance(Millis(1));
  CHECK_FALSE(cache.Get(clock.Now(), 0));
}

TEST_CASE("the cache never serves a record past its key's expiry") {
  FakeClock clock;
  SnapshotCache cache(Millis(25));
  const MonoTime t0 = clock.Now();
  cache.Put(Fetched(t0, {t0 + Millis(500), t0 + Millis(10)}), 0);
  clock.Advance(Millis(9));
  CHECK(cache.Get(clock.Now(), 0));
  clock.Advance(Millis(1));
  CHECK_FALSE(cache.Get(clock.Now(), 0));
}

// A contract fetched at `at` (unix ms 1,000,000) with one replica, limit 200 ms, `delay_ms` behind
// when measured `age_ms` before the fetch: its bounded-staleness deadline is 200 - delay_ms -
// age_ms ms after the fetch.
std::shared_ptr<const Contract> FetchedWithRecord(MonoTime at, int64_t age_ms, bool healthy,
                                                  int64_t delay_ms = 10) {
  auto c = std::make_shared<Contract>();
  c->fetched_at = at;
  c->fetched_at_unix_ms = 1'000'000;
  ReplicaRecord r;
  r.expires_at = at + Millis(1000);
  r.healthy = healthy;
  r.max_delay_ms = 200;
  r.delay_ms = delay_ms;
  r.measured_at_ms = c->fetched_at_unix_ms - age_ms;
  c->replicas.push_back(r);
  return c;
}

TEST_CASE("with bounded staleness the cache ends when a usable record nears its deadline") {
  FakeClock clock;
  const MonoTime t0 = clock.Now();
  SnapshotCache bounded(Millis(25), ReaderOptions::BoundedStaleness{0, 5});
  // Measured 180 ms before: deadline 10 ms after the fetch, 5 ms of it needed to choose it.
  bounded.Put(FetchedWithRecord(t0, 180, true), 0);
  CHECK(bounded.Get(t0 + Millis(4), 0));
  CHECK_FALSE(bounded.Get(t0 + Millis(5), 0));
  // Without the option the same snapshot is served its 25 ms.
  SnapshotCache plain(Millis(25));
  plain.Put(FetchedWithRecord(t0, 180, true), 0);
  CHECK(plain.Get(t0 + Millis(24), 0));
  // Clock skew brings the deadline closer.
  SnapshotCache skewed(Millis(25), ReaderOptions::BoundedStaleness{3, 5});
  skewed.Put(FetchedWithRecord(t0, 180, true), 0);
  CHECK(skewed.Get(t0 + Millis(1), 0));
  CHECK_FALSE(skewed.Get(t0 + Millis(2), 0));
}

TEST_CASE("with bounded staleness an unusable or already late record does not shorten the cache") {
  FakeClock clock;
  const MonoTime t0 = clock.Now();
  SnapshotCache cache(Millis(25), ReaderOptions::BoundedStaleness{0, 5});
  cache.Put(FetchedWithRecord(t0, 180, false), 0);  // not healthy: never chosen anyway
  CHECK(cache.Get(t0 + Millis(24), 0));
  cache.Put(FetchedWithRecord(t0, 195, true), 0);  // past its deadline when fetched
  CHECK(cache.Get(t0 + Millis(24), 0));
}

TEST_CASE(
    "with bounded staleness a record measured in the router's future counts as measured now") {
  FakeClock clock;
  const MonoTime t0 = clock.Now();
  SnapshotCache cache(Millis(25), ReaderOptions::BoundedStaleness{0, 5});
  // 190 ms behind, measured 50 ms "after" the fetch: as if measured at the fetch, its deadline is
  // 10 ms away (5 to choose it), not 60.
  cache.Put(FetchedWithRecord(t0, -50, true, 190), 0);
  CHECK(cache.Get(t0 + Millis(4), 0));
  CHECK_FALSE(cache.Get(t0 + Millis(5), 0));
}

TEST_CASE("an event drops the cached snapshot at once") {
  FakeClock clock;
  SnapshotCache cache(Millis(25));
  cache.Put(Fetched(clock.Now()), 7);
  CHECK(cache.Get(clock.Now(), 7));
  CHECK_FALSE(cache.Get(clock.Now(), 8));
}

TEST_CASE("without Redis the reader serves the empty contract and retries later, not at once") {
  FakeClock clock;
  ReaderOptions options;
  options.redis.host = "127.0.0.1";
  options.redis.port = 1;  // nothing listens: refused at once
  options.subscribe = false;
  ContractReader reader(options, clock);

  auto c = reader.Snapshot();
  REQUIRE(c);
  CHECK(c->replicas.empty());
  CHECK(c->primary.circuit == PrimaryCircuit::kUnknown);
  CHECK(reader.stats().errors == 1);
  CHECK_FALSE(reader.stats().last_error.empty());

  clock.Advance(Millis(199));
  CHECK(reader.Snapshot()->replicas.empty());
  CHECK(reader.stats().errors == 1);  // within retry_after: Redis not tried
  clock.Advance(Millis(1));
  reader.Snapshot();
  CHECK(reader.stats().errors == 2);

  CHECK(reader.Send({{"HINCRBY", "rw_stats:shop", "reads_master", "1"}}).code() ==
        Status::Code::kUnavailable);
}

}  // namespace
}  // namespace lagwatch::client
