#include "exporters/router_feedback.h"

#include <map>
#include <memory>
#include <string>

#include <doctest/doctest.h>
#include <prometheus/registry.h>

namespace lagwatch {
namespace {

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

TEST_CASE("router feedback exports one hash as counters by app, target and replica") {
  auto registry = std::make_shared<prometheus::Registry>();
  RouterFeedbackMetrics metrics(*registry);
  RouterFeedback feedback(RedisConfig{}, &metrics, SystemClock::Get());
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
  RouterFeedbackMetrics metrics(*registry);
  RouterFeedback feedback(RedisConfig{}, &metrics, SystemClock::Get());
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
