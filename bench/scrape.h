// lagwatch's /metrics as bench_scale reads it: per replica, the probes attempted
// (`lagwatch_probes_total`: every turn of the probe loop, also one skipped while reconnecting is
// backed off), the probes that got an answer (`lagwatch_probe_duration_seconds_count`: only
// successful probes are timed) and the probe-start-delay histogram
// (`lagwatch_probe_start_delay_seconds`, how late each probe started after its planned moment).
// Counters only mean something as differences between two scrapes of one lagwatch process.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lagwatch::bench {

// A histogram as Prometheus exposes it: cumulative counts per upper bound.
struct BucketCounts {
  std::vector<double> bounds_s;    // ascending; the last is +Inf
  std::vector<double> cumulative;  // observations <= bounds_s[i]
  double total() const { return cumulative.empty() ? 0 : cumulative.back(); }
};

struct ReplicaCounters {
  double probes = 0;
  double answered = 0;
  BucketCounts start_delay;
};

struct Scrape {
  int64_t sent_us = 0;  // NowUs() when the request went out; lagwatch collects right after
  double duration_ms = 0;
  size_t bytes = 0;
  std::map<std::string, ReplicaCounters> replicas;  // by the `replica` label, "host:port"
  // lagwatch_redis_record_delay_seconds: from a measurement to Redis having its record.
  BucketCounts record_delay;
};

// Fills `out` from a text-format exposition. Returns an error message if a family is missing or
// a histogram has no +Inf bucket; nullopt on success.
std::optional<std::string> ParseScrape(const std::string& body, Scrape* out);

// What happened between two scrapes, summed over a set of replicas.
struct ScrapeDelta {
  double seconds = 0;  // between the two requests
  double probes = 0;
  double answered = 0;
  BucketCounts start_delay;
  size_t replicas = 0;  // found in both scrapes
  size_t missing = 0;   // asked for but absent from either scrape
};
ScrapeDelta Diff(const Scrape& before, const Scrape& after,
                 const std::vector<std::string>& replicas);
// `after` − `before`, bucket by bucket (REQUIRES: the same bounds).
BucketCounts Diff(const BucketCounts& before, const BucketCounts& after);

// The q-quantile (0 < q < 1) in seconds, interpolated the way PromQL's histogram_quantile does:
// linearly inside the bucket the rank falls in, the first bucket starting at 0. A rank in the
// +Inf bucket gives the highest finite bound and sets `*beyond_last_bound` (the true value is
// larger). nullopt when there are no observations.
std::optional<double> Quantile(const BucketCounts& h, double q, bool* beyond_last_bound);

// The exact share of observations at or under `bound_s`, which must be one of the bucket bounds
// (else nullopt, as when there are no observations).
std::optional<double> ShareAtMost(const BucketCounts& h, double bound_s);

}  // namespace lagwatch::bench
