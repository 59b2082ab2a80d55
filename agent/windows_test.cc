#include "agent/windows.h"

#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include "base/test_values.h"

namespace lagwatch {
namespace {

using testing::T;

// --- QuantileWindow ---

TEST_CASE("p50, p95, p99 and max of 100 samples 1..100 are 50, 95, 99 and 100") {
  QuantileWindow w(Millis(60'000), 128);
  // Values arrive scrambled (37 is coprime with 100), so selection, not arrival order, decides.
  for (int i = 0; i < 100; ++i) w.Add(T(i * 10), (i * 37) % 100 + 1);
  auto s = w.Summarize(T(1000));
  CHECK(s.count == 100);
  CHECK(s.p50 == 50);
  CHECK(s.p95 == 95);
  CHECK(s.p99 == 99);
  CHECK(s.max == 100);
}

TEST_CASE("nearest rank rounds the rank up and never interpolates") {
  QuantileWindow four(Millis(60'000), 16);
  for (int v : {4, 1, 3, 2}) four.Add(T(0), v);
  // ceil(0.5 × 4) = 2nd smallest; interpolation would give 2.5.
  CHECK(four.Summarize(T(0)).p50 == 2);

  QuantileWindow ten(Millis(60'000), 16);
  for (int v = 10; v >= 1; --v) ten.Add(T(0), v);
  auto s = ten.Summarize(T(0));
  CHECK(s.p50 == 5);
  CHECK(s.p95 == 10);  // ceil(9.5) = 10th smallest
  CHECK(s.p99 == 10);

  QuantileWindow one(Millis(60'000), 16);
  one.Add(T(0), 7.5);
  s = one.Summarize(T(0));
  CHECK(s.p50 == 7.5);
  CHECK(s.p99 == 7.5);
  CHECK(s.max == 7.5);
}

TEST_CASE("an empty quantile window has count 0 and NaN quantiles") {
  QuantileWindow w(Millis(1000), 16);
  auto s = w.Summarize(T(0));
  CHECK(s.count == 0);
  CHECK(std::isnan(s.p50));
  CHECK(std::isnan(s.p95));
  CHECK(std::isnan(s.p99));
  CHECK(std::isnan(s.max));

  w.Add(T(0), 3);
  s = w.Summarize(T(1000));  // the only sample is exactly one span old
  CHECK(s.count == 0);
  CHECK(std::isnan(s.p50));
  CHECK(std::isnan(s.max));
}

TEST_CASE("samples leave the quantile window once they are a full span old") {
  QuantileWindow w(Millis(1000), 16);
  w.Add(T(0), 100);
  w.Add(T(500), 1);
  w.Add(T(900), 2);
  auto s = w.Summarize(T(999));
  CHECK(s.count == 3);
  CHECK(s.max == 100);
  s = w.Summarize(T(1000));
  CHECK(s.count == 2);
  CHECK(s.max == 2);
  CHECK(s.p50 == 1);
  s = w.Summarize(T(1500));
  CHECK(s.count == 1);
  CHECK(s.p50 == 2);
  CHECK(w.Summarize(T(1900)).count == 0);
}

TEST_CASE("samples after now are not in the quantile window") {
  QuantileWindow w(Millis(1000), 16);
  w.Add(T(0), 1);
  w.Add(T(100), 50);
  auto s = w.Summarize(T(50));
  CHECK(s.count == 1);
  CHECK(s.max == 1);
}

TEST_CASE("NaN samples are ignored by the quantile window") {
  QuantileWindow w(Millis(1000), 16);
  w.Add(T(0), 1);
  w.Add(T(1), std::nan(""));
  w.Add(T(2), 3);
  auto s = w.Summarize(T(10));
  CHECK(s.count == 2);
  CHECK(s.max == 3);
  CHECK(s.p50 == 1);
}

TEST_CASE("over capacity the oldest samples are overwritten and truncated says so") {
  QuantileWindow w(Millis(10'000), 4);
  for (int i = 0; i < 4; ++i) w.Add(T(i * 100), i + 1);
  CHECK_FALSE(w.truncated(T(300)));
  w.Add(T(400), 5);
  w.Add(T(500), 6);  // 1 and 2 are gone
  auto s = w.Summarize(T(500));
  CHECK(s.count == 4);
  CHECK(s.p50 == 4);  // of 3, 4, 5, 6
  CHECK(s.max == 6);
  CHECK(w.truncated(T(500)));
  // Once the overwritten samples would have left the window anyway, nothing is missing.
  CHECK(w.truncated(T(10'099)));
  CHECK_FALSE(w.truncated(T(10'100)));
}

TEST_CASE("a 1536-sample window holds five minutes of probes at five per second") {
  QuantileWindow w(Millis(300'000), 1536);
  for (int i = 1; i <= 1500; ++i) w.Add(T(i * 200), i);
  auto s = w.Summarize(T(300'000));
  CHECK(s.count == 1500);
  CHECK(s.p99 == 1485);
  CHECK_FALSE(w.truncated(T(300'000)));
}

// --- RatioWindow ---

TEST_CASE("ratio window counts good and bad events in the window") {
  RatioWindow w(Millis(10'000));
  w.Add(T(100), true);
  w.Add(T(200), true);
  w.Add(T(2500), false);
  w.Add(T(9000), true);
  CHECK(w.Count(T(9000)) == 4);
  REQUIRE(w.Ratio(T(9000)).has_value());
  CHECK(*w.Ratio(T(9000)) == doctest::Approx(0.75));
}

TEST_CASE("an empty ratio window has count 0 and no ratio") {
  RatioWindow w(Millis(10'000));
  CHECK(w.Count(T(0)) == 0);
  CHECK_FALSE(w.Ratio(T(0)).has_value());
}

TEST_CASE("events leave the ratio window a whole slot at a time") {
  RatioWindow w(Millis(10'000), Millis(1000));
  w.Add(T(100), true);    // slot [0, 1000)
  w.Add(T(1500), false);  // slot [1000, 2000)
  // Slot [0, 1000) still overlaps (now - 10 s, now], so the 10.9 s old event counts.
  CHECK(w.Count(T(10'999)) == 2);
  CHECK(*w.Ratio(T(10'999)) == doctest::Approx(0.5));
  CHECK(w.Count(T(11'000)) == 1);
  CHECK(*w.Ratio(T(11'000)) == 0.0);
  CHECK(w.Count(T(11'999)) == 1);
  CHECK(w.Count(T(12'000)) == 0);
  CHECK_FALSE(w.Ratio(T(12'000)).has_value());
}

TEST_CASE("a ratio slot reused after the ring wraps starts from zero") {
  RatioWindow w(Millis(10'000), Millis(1000));  // 11 slots
  for (int i = 0; i < 5; ++i) w.Add(T(i), true);
  w.Add(T(11'000), false);  // same ring entry as slot [0, 1000)
  CHECK(w.Count(T(11'000)) == 1);
  CHECK(*w.Ratio(T(11'000)) == 0.0);
  // The old slot's events must not come back when it is back in range of `now`.
  CHECK(w.Count(T(1000)) == 0);
}

TEST_CASE("a late event whose ring entry holds a newer slot is dropped") {
  RatioWindow w(Millis(10'000), Millis(1000));
  w.Add(T(11'000), false);
  w.Add(T(0), true);
  CHECK(w.Count(T(11'000)) == 1);
  CHECK(*w.Ratio(T(11'000)) == 0.0);
}

TEST_CASE("a minute of events in 1 s slots loses its oldest slot one slot past the span") {
  RatioWindow w(Millis(60'000), Millis(1000));
  for (int ms = 0; ms < 60'000; ms += 200) w.Add(T(ms), ms % 1000 == 0);
  CHECK(w.Count(T(59'999)) == 300);
  CHECK(*w.Ratio(T(59'999)) == doctest::Approx(0.2));
  CHECK(w.Count(T(60'999)) == 300);
  CHECK(w.Count(T(61'000)) == 295);  // slot [0, 1000) has left
}

// --- CounterRatioWindow ---

TEST_CASE("counter ratio is the numerator's increase over the denominator's across the window") {
  CounterRatioWindow w(Millis(60'000), 32);
  w.Observe(T(0), 100, 1000);
  w.Observe(T(5000), 130, 1100);
  w.Observe(T(10'000), 190, 1200);
  REQUIRE(w.Ratio(T(10'000)).has_value());
  CHECK(*w.Ratio(T(10'000)) == doctest::Approx(0.45));  // 90 / 200
}

TEST_CASE("counter observations leave the window once they are a full span old") {
  CounterRatioWindow w(Millis(10'000), 32);
  w.Observe(T(0), 0, 0);
  w.Observe(T(5000), 50, 100);
  w.Observe(T(10'000), 60, 200);
  CHECK(*w.Ratio(T(9999)) == doctest::Approx(0.5));    // T(0)..T(5000): 50 / 100
  CHECK(*w.Ratio(T(10'000)) == doctest::Approx(0.1));  // T(5000)..T(10000): 10 / 100
  CHECK(*w.Ratio(T(14'999)) == doctest::Approx(0.1));
  CHECK_FALSE(w.Ratio(T(15'000)).has_value());  // only T(10000) is left
}

TEST_CASE("counter ratio needs two observations in the window") {
  CounterRatioWindow w(Millis(10'000), 32);
  CHECK_FALSE(w.Ratio(T(0)).has_value());
  w.Observe(T(0), 10, 100);
  CHECK_FALSE(w.Ratio(T(0)).has_value());
  w.Observe(T(1000), 20, 200);
  CHECK(w.Ratio(T(1000)).has_value());
  // An observation after `now` is not in the window.
  CHECK_FALSE(w.Ratio(T(500)).has_value());
}

TEST_CASE("an unchanged denominator gives no counter ratio") {
  CounterRatioWindow w(Millis(10'000), 32);
  w.Observe(T(0), 10, 100);
  w.Observe(T(1000), 10, 100);
  CHECK_FALSE(w.Ratio(T(1000)).has_value());
}

TEST_CASE("a drop in the numerator is a reset: no negative ratio, the baseline restarts") {
  CounterRatioWindow w(Millis(60'000), 32);
  w.Observe(T(0), 500, 1000);
  w.Observe(T(5000), 600, 1200);
  w.Observe(T(10'000), 10, 1300);  // naively (10 - 500) / (1300 - 1000) < 0
  CHECK_FALSE(w.Ratio(T(10'000)).has_value());
  w.Observe(T(15'000), 30, 1350);
  REQUIRE(w.Ratio(T(15'000)).has_value());
  CHECK(*w.Ratio(T(15'000)) == doctest::Approx(0.4));  // 20 / 50, from the reset on
}

TEST_CASE("a reset of both counters never yields a ratio above 1") {
  CounterRatioWindow w(Millis(60'000), 32);
  w.Observe(T(0), 1000, 1100);
  w.Observe(T(5000), 100, 1000);  // naively (100 - 1000) / (1000 - 1100) = 9
  CHECK_FALSE(w.Ratio(T(5000)).has_value());
  w.Observe(T(10'000), 150, 1100);
  REQUIRE(w.Ratio(T(10'000)).has_value());
  CHECK(*w.Ratio(T(10'000)) == doctest::Approx(0.5));
}

TEST_CASE("a drop in the denominator alone is a reset too") {
  CounterRatioWindow w(Millis(60'000), 32);
  w.Observe(T(0), 0, 1000);
  w.Observe(T(5000), 10, 20);  // naively 10 / -980
  CHECK_FALSE(w.Ratio(T(5000)).has_value());
  w.Observe(T(10'000), 20, 60);
  CHECK(*w.Ratio(T(10'000)) == doctest::Approx(0.25));
}

TEST_CASE("counter observations with a non-finite total are ignored") {
  CounterRatioWindow w(Millis(60'000), 32);
  w.Observe(T(0), 0, 0);
  w.Observe(T(1000), 20, 100);
  w.Observe(T(2000), std::nan(""), 150);
  w.Observe(T(3000), 30, std::numeric_limits<double>::infinity());
  CHECK(*w.Ratio(T(3000)) == doctest::Approx(0.2));
}

TEST_CASE("over capacity the oldest counter observations are overwritten and truncated says so") {
  CounterRatioWindow w(Millis(60'000), 3);
  w.Observe(T(0), 0, 0);
  w.Observe(T(1000), 10, 100);
  w.Observe(T(2000), 30, 200);
  CHECK_FALSE(w.truncated(T(2000)));
  CHECK(*w.Ratio(T(2000)) == doctest::Approx(0.15));  // 30 / 200 from T(0)
  w.Observe(T(3000), 50, 300);                        // overwrites T(0)
  CHECK(*w.Ratio(T(3000)) == doctest::Approx(0.2));   // 40 / 200 from T(1000)
  CHECK(w.truncated(T(3000)));
  CHECK(w.truncated(T(59'999)));
  CHECK_FALSE(w.truncated(T(60'000)));
}

TEST_CASE("a counter reset clears truncation: what was lost predates the restart") {
  CounterRatioWindow w(Millis(60'000), 2);
  w.Observe(T(0), 0, 0);
  w.Observe(T(1000), 10, 100);
  w.Observe(T(2000), 20, 200);
  CHECK(w.truncated(T(2000)));
  w.Observe(T(3000), 1, 2);
  CHECK_FALSE(w.truncated(T(3000)));
}

}  // namespace
}  // namespace lagwatch

namespace lagwatch {
namespace {

MonoTime At(int64_t ms) { return MonoTime(Millis(5'000'000 + ms)); }

TEST_CASE("a shorter window is summarised from the same samples") {
  QuantileWindow w(Millis(300'000), 4096);
  // One sample a second for 5 minutes: value = its second, so the last minute holds 241..300.
  for (int i = 1; i <= 300; ++i) w.Add(At(i * 1000), i);
  auto all = w.Summarize(At(300'000));
  CHECK(all.count == 300);
  CHECK(all.max == 300);
  auto last_minute = w.Summarize(At(300'000), Millis(60'000));
  CHECK(last_minute.count == 60);
  CHECK(last_minute.p50 == 270);
  CHECK(last_minute.max == 300);
  // A span longer than the window's own is cut to it.
  CHECK(w.Summarize(At(300'000), Millis(900'000)).count == 300);
}

TEST_CASE("sample times stay right across the 32-bit millisecond rebase (weeks of uptime)") {
  QuantileWindow w(Millis(60'000), 64);
  w.Add(At(0), 1);
  const int64_t day = 86'400'000;
  // 40 days later (past 2^31 ms): the old sample is long gone, new ones are in the window.
  w.Add(At(40 * day), 7);
  w.Add(At(40 * day + 30'000), 9);
  auto s = w.Summarize(At(40 * day + 30'000));
  CHECK(s.count == 2);
  CHECK(s.p50 == 7);
  CHECK(s.max == 9);
  // And again 30 days on.
  w.Add(At(70 * day), 3);
  CHECK(w.Summarize(At(70 * day)).count == 1);
  CHECK(w.Summarize(At(70 * day)).max == 3);
}

TEST_CASE("values are kept as float: integer milliseconds exact to 2^24") {
  QuantileWindow w(Millis(60'000), 8);
  w.Add(At(1), 16'777'216);
  w.Add(At(2), 123'457);
  auto s = w.Summarize(At(2));
  CHECK(s.max == 16'777'216);
  CHECK(s.p50 == 123'457);
}

TEST_CASE("a ratio over a shorter window counts only its slots") {
  RatioWindow w(Millis(300'000));
  // Bad for four minutes, then good for one.
  for (int i = 0; i < 300; ++i) w.Add(At(i * 1000), i >= 240);
  CHECK(w.Count(At(299'000)) == 300);
  CHECK(*w.Ratio(At(299'000)) == doctest::Approx(60.0 / 300));
  // The slot of second 239 is partly inside (239 s, 299 s]: slots count whole (see RatioWindow).
  CHECK(w.Count(At(299'000), Millis(60'000)) == 61);
  CHECK(*w.Ratio(At(299'000), Millis(60'000)) == doctest::Approx(60.0 / 61));
  CHECK(w.Count(At(299'000), Millis(30'000)) == 31);
  CHECK(*w.Ratio(At(299'000), Millis(30'000)) == 1.0);
}

}  // namespace
}  // namespace lagwatch
