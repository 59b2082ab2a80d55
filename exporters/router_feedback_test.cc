#include "exporters/router_feedback.h"

#include <string>
#include <thread>

#include <doctest/doctest.h>
#include <prometheus/registry.h>

namespace lagwatch {
namespace {

using Totals = FeedbackAccumulator::Totals;

AppStats Stats(std::string app, double replica, double master, double attempts = 0,
               double successes = 0) {
  AppStats s;
  s.app = std::move(app);
  s.reads_replica = replica;
  s.reads_master = master;
  s.degrade_attempts = attempts;
  s.degrade_successes = successes;
  return s;
}

// The value of the series of `name` whose labels include all of `labels`, or -1 if none.
double Sample(prometheus::Registry& registry, const std::string& name,
              const std::map<std::string, std::string>& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      size_t matched = 0;
      for (const auto& l : metric.label) {
        auto it = labels.find(l.name);
        if (it != labels.end() && it->second == l.value) ++matched;
      }
      if (matched == labels.size()) return metric.counter.value;
    }
  }
  return -1;
}

// ---- ParseRwStats ----

TEST_CASE("a well-formed rw_stats hash parses every field of the contract") {
  auto out = ParseRwStats("shop", {{"reads_replica", "85"},
                                   {"reads_master", "15"},
                                   {"reads_replica:db1:3306", "50"},
                                   {"reads_replica:10.0.0.2:3307", "35"},
                                   {"degrade_attempts", "100"},
                                   {"degrade_successes", "98"}});
  CHECK(out.malformed == 0);
  CHECK(out.unknown_fields == 0);
  CHECK_FALSE(out.bad_app);
  CHECK(out.problems.empty());
  CHECK(out.stats.app == "shop");
  CHECK(out.stats.reads_replica == 85);
  CHECK(out.stats.reads_master == 15);
  CHECK(out.stats.degrade_attempts == 100);
  CHECK(out.stats.degrade_successes == 98);
  CHECK(out.stats.reads_by_replica ==
        std::map<std::string, double>{{"db1:3306", 50}, {"10.0.0.2:3307", 35}});
  CHECK(out.stats.unreadable.empty());
}

TEST_CASE("absent fields of the contract read as zero and are not problems") {
  auto out = ParseRwStats("shop", {{"reads_master", "7"}});
  CHECK(out.malformed == 0);
  CHECK(out.stats.reads_replica == 0);
  CHECK(out.stats.reads_master == 7);
  CHECK(out.stats.reads_by_replica.empty());
}

TEST_CASE("values that are not non-negative base-10 integers are counted and skipped") {
  for (const char* bad : {"", "abc", "-1", "99999999999999999999", "1.5", "+3", " 4", "4 ", "1e3",
                          "0x10", "\xff\xfe"}) {
    CAPTURE(bad);
    auto out = ParseRwStats("shop", {{"reads_master", bad}, {"reads_replica", "9"}});
    CHECK(out.malformed == 1);
    CHECK(out.unknown_fields == 0);
    CHECK(out.problems.size() == 1);
    CHECK(out.stats.reads_master == 0);
    CHECK(out.stats.unreadable == std::set<std::string>{"reads_master"});
    CHECK(out.stats.reads_replica == 9);  // the rest of the hash still counts
  }
}

TEST_CASE("the largest value HINCRBY can write is accepted") {
  auto out = ParseRwStats("shop", {{"reads_replica", "9223372036854775807"}});
  CHECK(out.malformed == 0);
  CHECK(out.stats.reads_replica == doctest::Approx(9.223372036854775807e18));
}

TEST_CASE("unknown fields are counted apart from malformed ones and skipped") {
  auto out =
      ParseRwStats("shop", {{"reads_slave", "3"}, {"READS_MASTER", "1"}, {"reads_master", "2"}});
  CHECK(out.unknown_fields == 2);
  CHECK(out.malformed == 0);
  CHECK(out.problems.size() == 2);
  CHECK(out.stats.reads_master == 2);
  CHECK(out.stats.unreadable.empty());
}

TEST_CASE("a reads_replica field whose suffix is not host:port is malformed") {
  for (const char* field :
       {"reads_replica:", "reads_replica:db1", "reads_replica:db1:", "reads_replica::3306",
        "reads_replica:db1:0", "reads_replica:db1:65536", "reads_replica:db1:03306",
        "reads_replica:db1:port", "reads_replica:db 1:3306", "reads_replica:db1:3306 ",
        "reads_replica:db/1:3306"}) {
    CAPTURE(field);
    auto out = ParseRwStats("shop", {{field, "5"}});
    CHECK(out.malformed == 1);
    CHECK(out.unknown_fields == 0);
    CHECK(out.stats.reads_by_replica.empty());
  }
  auto ok = ParseRwStats("shop", {{"reads_replica:db1:1", "1"}, {"reads_replica:db2:65535", "2"}});
  CHECK(ok.malformed == 0);
  CHECK(ok.stats.reads_by_replica.size() == 2);
}

TEST_CASE("a per-replica field with a bad value is marked unreadable under its field name") {
  auto out =
      ParseRwStats("shop", {{"reads_replica:db1:3306", "x"}, {"reads_replica:db2:3306", "4"}});
  CHECK(out.malformed == 1);
  CHECK(out.stats.unreadable == std::set<std::string>{"reads_replica:db1:3306"});
  CHECK(out.stats.reads_by_replica == std::map<std::string, double>{{"db2:3306", 4}});
}

TEST_CASE("a repeated field is malformed and only its first value counts") {
  auto out = ParseRwStats("shop", {{"reads_master", "2"}, {"reads_master", "5"}});
  CHECK(out.malformed == 1);
  CHECK(out.stats.reads_master == 2);
}

TEST_CASE("app names unusable as label values are refused before any field is read") {
  for (std::string bad :
       {std::string(), std::string(65, 'a'), std::string("a b"), std::string("a/b"),
        std::string("app\"x"), std::string("a\0b", 3), std::string("caf\xc3\xa9")}) {
    CAPTURE(bad);
    CHECK_FALSE(IsValidAppName(bad));
    auto out = ParseRwStats(bad, {{"reads_master", "2"}});
    CHECK(out.bad_app);
    CHECK(out.stats.reads_master == 0);
    CHECK(out.problems.size() == 1);
  }
  CHECK(IsValidAppName(std::string(64, 'a')));
  CHECK(IsValidAppName("shop-eu.v2:canary_1"));
}

TEST_CASE("the app comes from the key suffix after rw_stats:") {
  CHECK(AppFromKey("rw_stats:shop") == "shop");
  CHECK(AppFromKey("rw_stats:a:b") == "a:b");
  CHECK_FALSE(AppFromKey("rw_stats:").has_value());
  CHECK_FALSE(AppFromKey("rw_stats:bad app").has_value());
  CHECK_FALSE(AppFromKey("rw_stat:shop").has_value());
  CHECK_FALSE(AppFromKey("slave_delay:db1:3306").has_value());
}

TEST_CASE("problems kept for the log are bounded and escape binary junk") {
  HashFields fields;
  for (int i = 0; i < 100; ++i) fields.emplace_back("junk\x01" + std::to_string(i), "1");
  auto out = ParseRwStats("shop", fields);
  CHECK(out.unknown_fields == 100);
  CHECK(out.problems.size() == ParseOutcome::kMaxProblems);
  CHECK(out.problems[0].find('\x01') == std::string::npos);
  CHECK(out.problems[0].find("\\x01") != std::string::npos);
}

// ---- FeedbackAccumulator ----

TEST_CASE("the first snapshot of an app adds its full values, later ones the increase") {
  FeedbackAccumulator acc;
  auto d = acc.Observe(Stats("shop", 10, 2, 3, 3));
  CHECK(d.accepted);
  CHECK_FALSE(d.reset);
  CHECK(d.reads_replica == 10);
  CHECK(d.reads_master == 2);
  CHECK(d.degrade_attempts == 3);

  d = acc.Observe(Stats("shop", 15, 2, 4, 3));
  CHECK(d.reads_replica == 5);
  CHECK(d.reads_master == 0);
  CHECK(d.degrade_attempts == 1);
  CHECK(d.degrade_successes == 0);
  CHECK_FALSE(d.reset);
}

TEST_CASE("a counter that goes down is a reset: the new value is the delta, totals never drop") {
  FeedbackAccumulator acc;
  acc.Observe(Stats("shop", 100, 20));
  auto d = acc.Observe(Stats("shop", 7, 25));  // router restarted: reads_replica started over
  CHECK(d.reset);
  CHECK(d.reads_replica == 7);
  CHECK(d.reads_master == 5);
  auto t = acc.AppTotals().at("shop");
  CHECK(t.reads_replica == 107);
  CHECK(t.reads_all == 132);

  d = acc.Observe(Stats("shop", 9, 25));
  CHECK_FALSE(d.reset);
  CHECK(d.reads_replica == 2);
  CHECK(acc.AppTotals().at("shop").reads_replica == 109);
}

TEST_CASE("a deleted hash reads as all zeros and counting resumes from zero without a loss") {
  FeedbackAccumulator acc;
  AppStats s = Stats("shop", 50, 10);
  s.reads_by_replica["db1:3306"] = 50;
  acc.Observe(s);
  auto d = acc.Observe(Stats("shop", 0, 0));  // DEL rw_stats:shop, or FLUSHALL
  CHECK(d.reset);
  CHECK(d.reads_replica == 0);
  AppStats again = Stats("shop", 3, 1);
  again.reads_by_replica["db1:3306"] = 3;
  d = acc.Observe(again);
  CHECK_FALSE(d.reset);
  CHECK(d.reads_by_replica.at("db1:3306") == 3);
  auto t = acc.AppTotals().at("shop");
  CHECK(t.reads_replica == 53);
  CHECK(t.reads_all == 64);
}

TEST_CASE("an unreadable field keeps its previous value instead of looking like a reset") {
  FeedbackAccumulator acc;
  acc.Observe(Stats("shop", 10, 40));
  AppStats junk = Stats("shop", 12, 0);
  junk.unreadable.insert("reads_master");  // HSET rw_stats:shop reads_master abc
  auto d = acc.Observe(junk);
  CHECK_FALSE(d.reset);
  CHECK(d.reads_master == 0);
  CHECK(d.reads_replica == 2);
  // Repaired with the value it had: nothing is counted twice.
  d = acc.Observe(Stats("shop", 12, 41));
  CHECK_FALSE(d.reset);
  CHECK(d.reads_master == 1);
  CHECK(acc.AppTotals().at("shop").reads_all == 53);
}

TEST_CASE("per-replica counters accumulate separately and a vanished replica field is a reset") {
  FeedbackAccumulator acc;
  AppStats s = Stats("shop", 0, 0);
  s.reads_by_replica = {{"db1:3306", 10}, {"db2:3306", 4}};
  auto d = acc.Observe(s);
  CHECK(d.reads_by_replica == std::map<std::string, double>{{"db1:3306", 10}, {"db2:3306", 4}});

  s.reads_by_replica = {{"db1:3306", 12}};  // HDEL rw_stats:shop reads_replica:db2:3306
  d = acc.Observe(s);
  CHECK(d.reset);
  CHECK(d.reads_by_replica == std::map<std::string, double>{{"db1:3306", 2}});

  s.reads_by_replica = {{"db1:3306", 12}, {"db2:3306", 1}};
  d = acc.Observe(s);
  CHECK_FALSE(d.reset);
  CHECK(d.reads_by_replica.at("db2:3306") == 1);
}

TEST_CASE("app totals give RWSR and DSR over a window as differences of two snapshots") {
  FeedbackAccumulator acc;
  acc.Observe(Stats("shop", 1000, 500, 10, 5));
  acc.Observe(Stats("blog", 10, 0));
  auto before = acc.AppTotals();
  acc.Observe(Stats("shop", 1085, 515, 60, 54));
  auto after = acc.AppTotals();

  REQUIRE(after.size() == 2);
  const Totals& a = after.at("shop");
  const Totals& b = before.at("shop");
  double rwsr = (a.reads_replica - b.reads_replica) / (a.reads_all - b.reads_all);
  double dsr =
      (a.degrade_successes - b.degrade_successes) / (a.degrade_attempts - b.degrade_attempts);
  CHECK(rwsr == doctest::Approx(0.85));
  CHECK(dsr == doctest::Approx(0.98));
  CHECK(after.at("blog").reads_all == 10);
}

TEST_CASE("apps beyond the cap are refused while tracked ones keep counting") {
  FeedbackAccumulator acc(2, 64);
  CHECK(acc.Observe(Stats("a", 1, 0)).accepted);
  CHECK(acc.Observe(Stats("b", 1, 0)).accepted);
  CHECK_FALSE(acc.Admits("c"));
  auto d = acc.Observe(Stats("c", 1, 0));
  CHECK_FALSE(d.accepted);
  CHECK(d.reads_replica == 0);
  CHECK(acc.Admits("a"));
  CHECK(acc.Observe(Stats("a", 3, 0)).reads_replica == 2);
  CHECK(acc.AppTotals().count("c") == 0);
}

TEST_CASE("replicas beyond the per-app cap are refused, the first ones stay tracked") {
  FeedbackAccumulator acc(10, 2);
  AppStats s = Stats("shop", 0, 0);
  s.reads_by_replica = {{"a:1", 1}, {"b:1", 1}};
  acc.Observe(s);
  s.reads_by_replica = {{"a:1", 2}, {"b:1", 2}, {"c:1", 5}};
  auto d = acc.Observe(s);
  CHECK(d.replicas_refused == 1);
  CHECK(d.reads_by_replica == std::map<std::string, double>{{"a:1", 1}, {"b:1", 1}});
}

TEST_CASE("the accumulator can be read while another thread observes") {
  FeedbackAccumulator acc;
  std::jthread writer([&] {
    for (int i = 1; i <= 2000; ++i) acc.Observe(Stats("shop", i, i));
  });
  double last = 0;
  for (int i = 0; i < 2000; ++i) {
    auto totals = acc.AppTotals();
    if (!totals.count("shop")) continue;
    CHECK(totals.at("shop").reads_all >= last);
    last = totals.at("shop").reads_all;
  }
}

// ---- RouterFeedback export, without Redis ----

TEST_CASE("router feedback exports one hash as counters by app, target and replica") {
  auto registry = std::make_shared<prometheus::Registry>();
  RouterFeedback feedback(RedisConfig{}, registry);
  feedback.Ingest("rw_stats:shop", {{"reads_replica", "85"},
                                    {"reads_master", "15"},
                                    {"reads_replica:db1:3306", "85"},
                                    {"degrade_attempts", "50"},
                                    {"degrade_successes", "49"}});
  auto& r = *registry;
  CHECK(Sample(r, "lagwatch_router_reads_total", {{"app", "shop"}, {"target", "replica"}}) == 85);
  CHECK(Sample(r, "lagwatch_router_reads_total", {{"app", "shop"}, {"target", "master"}}) == 15);
  CHECK(Sample(r, "lagwatch_router_replica_reads_total",
               {{"app", "shop"}, {"replica", "db1:3306"}}) == 85);
  CHECK(Sample(r, "lagwatch_router_degrade_attempts_total", {{"app", "shop"}}) == 50);
  CHECK(Sample(r, "lagwatch_router_degrade_successes_total", {{"app", "shop"}}) == 49);
  CHECK(feedback.AppTotals().at("shop").reads_all == 100);
}

TEST_CASE("router feedback counts every problem by reason and keeps every reason series") {
  auto registry = std::make_shared<prometheus::Registry>();
  RouterFeedback feedback(RedisConfig{}, registry);
  for (const char* reason : RouterFeedback::kErrorReasons) {
    CHECK(Sample(*registry, "lagwatch_router_feedback_errors_total", {{"reason", reason}}) == 0);
  }
  CHECK(Sample(*registry, "lagwatch_router_feedback_polls_total", {}) == 0);

  feedback.Ingest("rw_stats:shop", {{"reads_master", "10"}});
  feedback.Ingest("rw_stats:shop",
                  {{"reads_master", "abc"}, {"reads_replica", "-2"}, {"bogus", "1"}});
  feedback.Ingest("rw_stats:shop", {{"reads_master", "4"}});
  feedback.Ingest("rw_stats:bad app", {{"reads_master", "1"}});
  auto errors = [&](const char* reason) {
    return Sample(*registry, "lagwatch_router_feedback_errors_total", {{"reason", reason}});
  };
  CHECK(errors("malformed") == 2);
  CHECK(errors("unknown_field") == 1);
  CHECK(errors("reset") == 1);
  CHECK(errors("bad_app") == 1);
  CHECK(Sample(*registry, "lagwatch_router_reads_total", {{"app", "shop"}, {"target", "master"}}) ==
        14);
}

}  // namespace
}  // namespace lagwatch
