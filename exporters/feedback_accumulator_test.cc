#include "exporters/feedback_accumulator.h"

#include <string>
#include <thread>

#include <doctest/doctest.h>

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

// Checks the exported totals of `app`: replica reads and all reads.
void CheckTotals(const FeedbackAccumulator& acc, const std::string& app, double reads_replica,
                 double reads_all) {
  const Totals t = acc.AppTotals().at(app);
  CHECK(t.reads_replica == reads_replica);
  CHECK(t.reads_all == reads_all);
}

// Observes `stats`, checking that it is not a reset; returns what it added.
FeedbackAccumulator::Delta ObserveNoReset(FeedbackAccumulator& acc, const AppStats& stats) {
  auto d = acc.Observe(stats);
  CHECK_FALSE(d.reset);
  return d;
}

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
  CheckTotals(acc, "shop", 107, 132);

  d = ObserveNoReset(acc, Stats("shop", 9, 25));
  CHECK(d.reads_replica == 2);
  CHECK(acc.AppTotals().at("shop").reads_replica == 109);
}

TEST_CASE("an unreadable field keeps its previous value instead of looking like a reset") {
  FeedbackAccumulator acc;
  acc.Observe(Stats("shop", 10, 40));
  AppStats junk = Stats("shop", 12, 0);
  junk.unreadable.insert("reads_master");  // HSET rw_stats:shop reads_master abc
  auto d = ObserveNoReset(acc, junk);
  CHECK(d.reads_master == 0);
  CHECK(d.reads_replica == 2);
  // Repaired with the value it had: nothing is counted twice.
  d = ObserveNoReset(acc, Stats("shop", 12, 41));
  CHECK(d.reads_master == 1);
  CHECK(acc.AppTotals().at("shop").reads_all == 53);
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
  d = ObserveNoReset(acc, again);
  CHECK(d.reads_by_replica.at("db1:3306") == 3);
  CheckTotals(acc, "shop", 53, 64);
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
  d = ObserveNoReset(acc, s);
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

}  // namespace
}  // namespace lagwatch
