#include "exporters/replica_series.h"

#include <array>
#include <cmath>
#include <limits>

#include <doctest/doctest.h>

namespace lagwatch {
namespace {

constexpr std::array<double, 3> kBounds = {0.1, 0.5, 1};

TEST_CASE("a replica histogram counts a value in the first bucket whose bound is >= it") {
  ReplicaHistogram<kBounds> h;
  h.Observe(0.1);  // on the bound: that bucket
  h.Observe(0.2);
  h.Observe(0.5);
  h.Observe(-3);  // below every bound: the first
  h.Observe(7);   // above every bound: +Inf
  CHECK(h.CumulativeCounts() == std::array<uint64_t, 4>{2, 4, 4, 5});
  CHECK(h.Sum() == doctest::Approx(0.1 + 0.2 + 0.5 - 3 + 7));
}

TEST_CASE("a replica histogram counts NaN in the first bucket, as prometheus-cpp 1.0.1 does") {
  ReplicaHistogram<kBounds> h;
  h.Observe(std::numeric_limits<double>::quiet_NaN());
  CHECK(h.CumulativeCounts() == std::array<uint64_t, 4>{1, 1, 1, 1});
  CHECK(std::isnan(h.Sum()));
}

TEST_CASE("a replica counter ignores negative increments") {
  ReplicaCounter c;
  c.Increment();
  c.Increment(2.5);
  c.Increment(-1);
  CHECK(c.Value() == 3.5);
}

TEST_CASE("a replica enum gauge starts with no current value") {
  ReplicaEnumGauge g;
  CHECK(g.Get() == ReplicaEnumGauge::kNone);
  g.Set(2);
  CHECK(g.Get() == 2);
}

}  // namespace
}  // namespace lagwatch
