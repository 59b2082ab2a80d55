#include "bench/scrape.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace lagwatch::bench {
namespace {

constexpr std::string_view kProbes = "lagwatch_probes_total";
constexpr std::string_view kAnswered = "lagwatch_probe_duration_seconds_count";
constexpr std::string_view kDelayBucket = "lagwatch_probe_start_delay_seconds_bucket";
constexpr std::string_view kRecordDelayBucket = "lagwatch_redis_record_delay_seconds_bucket";

// The value of label `key` in `{a="x",b="y"}` (escapes undone), or nullopt.
std::optional<std::string> Label(std::string_view labels, std::string_view key) {
  size_t i = 0;
  while (i < labels.size()) {
    const size_t eq = labels.find("=\"", i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view name = labels.substr(i, eq - i);
    std::string value;
    size_t j = eq + 2;
    for (; j < labels.size() && labels[j] != '"'; ++j) {
      if (labels[j] == '\\' && j + 1 < labels.size()) {
        ++j;
        value += labels[j] == 'n' ? '\n' : labels[j];
      } else {
        value += labels[j];
      }
    }
    if (name == key) return value;
    i = j + 1;
    if (i < labels.size() && labels[i] == ',') ++i;
  }
  return std::nullopt;
}

double ParseValue(std::string_view s) {
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  return std::strtod(std::string(s).c_str(), nullptr);
}

}  // namespace

std::optional<std::string> ParseScrape(const std::string& body, Scrape* out) {
  out->bytes = body.size();
  out->replicas.clear();
  out->record_delay = {};
  bool saw_probes = false, saw_answered = false, saw_buckets = false;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + pos, end - pos);
    pos = end + 1;
    // Only four families matter; everything else (and every comment) is skipped cheaply.
    auto is = [&](std::string_view family) {
      return line.starts_with(family) && line.size() > family.size() && line[family.size()] == '{';
    };
    const bool probes = is(kProbes), answered = is(kAnswered), bucket = is(kDelayBucket);
    const bool record_delay = is(kRecordDelayBucket);
    if (!probes && !answered && !bucket && !record_delay) continue;
    const size_t close = line.rfind('}');
    if (close == std::string_view::npos) return "malformed line: " + std::string(line);
    const std::string_view labels = line.substr(line.find('{') + 1, close - line.find('{') - 1);
    const double value = ParseValue(line.substr(close + 2));
    if (record_delay) {
      auto le = Label(labels, "le");
      if (!le) return "bucket without le: " + std::string(line);
      out->record_delay.bounds_s.push_back(ParseValue(*le));
      out->record_delay.cumulative.push_back(value);
      continue;
    }
    auto replica = Label(labels, "replica");
    if (!replica) return "no replica label: " + std::string(line);
    ReplicaCounters& r = out->replicas[*replica];
    if (probes) {
      r.probes = value;
      saw_probes = true;
      continue;
    }
    if (answered) {
      r.answered = value;
      saw_answered = true;
      continue;
    }
    auto le = Label(labels, "le");
    if (!le) return "bucket without le: " + std::string(line);
    // prometheus-cpp writes buckets in ascending order, +Inf last.
    r.start_delay.bounds_s.push_back(ParseValue(*le));
    r.start_delay.cumulative.push_back(value);
    saw_buckets = true;
  }
  if (!saw_probes) return std::string(kProbes) + " not found";
  if (!saw_answered) return std::string(kAnswered) + " not found";
  if (!saw_buckets) return std::string(kDelayBucket) + " not found";
  if (out->record_delay.bounds_s.empty() || !std::isinf(out->record_delay.bounds_s.back())) {
    return std::string(kRecordDelayBucket) + " not found, or without a +Inf bucket";
  }
  for (const auto& [id, r] : out->replicas) {
    if (r.start_delay.bounds_s.empty() || !std::isinf(r.start_delay.bounds_s.back())) {
      return "replica " + id + ": start-delay histogram without a +Inf bucket";
    }
  }
  return std::nullopt;
}

ScrapeDelta Diff(const Scrape& before, const Scrape& after,
                 const std::vector<std::string>& replicas) {
  ScrapeDelta d;
  d.seconds = static_cast<double>(after.sent_us - before.sent_us) / 1e6;
  for (const auto& id : replicas) {
    auto a = before.replicas.find(id);
    auto b = after.replicas.find(id);
    // lagwatch uses one bucket layout for every replica; anything else is not comparable.
    if (a == before.replicas.end() || b == after.replicas.end() ||
        a->second.start_delay.bounds_s != b->second.start_delay.bounds_s ||
        (d.replicas > 0 && d.start_delay.bounds_s != b->second.start_delay.bounds_s)) {
      ++d.missing;
      continue;
    }
    const BucketCounts& ha = a->second.start_delay;
    const BucketCounts& hb = b->second.start_delay;
    if (d.replicas++ == 0) {
      d.start_delay.bounds_s = hb.bounds_s;
      d.start_delay.cumulative.assign(hb.bounds_s.size(), 0.0);
    }
    d.probes += b->second.probes - a->second.probes;
    d.answered += b->second.answered - a->second.answered;
    for (size_t i = 0; i < hb.cumulative.size(); ++i) {
      d.start_delay.cumulative[i] += hb.cumulative[i] - ha.cumulative[i];
    }
  }
  return d;
}

BucketCounts Diff(const BucketCounts& before, const BucketCounts& after) {
  BucketCounts d = after;
  for (size_t i = 0; i < d.cumulative.size() && i < before.cumulative.size(); ++i) {
    d.cumulative[i] -= before.cumulative[i];
  }
  return d;
}

std::optional<double> Quantile(const BucketCounts& h, double q, bool* beyond_last_bound) {
  *beyond_last_bound = false;
  const double total = h.total();
  if (total <= 0) return std::nullopt;
  const double rank = q * total;
  size_t i = 0;
  while (i < h.cumulative.size() && h.cumulative[i] < rank) ++i;
  if (i >= h.bounds_s.size() - 1) {  // the +Inf bucket
    *beyond_last_bound = true;
    return h.bounds_s.size() >= 2 ? h.bounds_s[h.bounds_s.size() - 2] : 0.0;
  }
  const double lower = i == 0 ? 0.0 : h.bounds_s[i - 1];
  const double below = i == 0 ? 0.0 : h.cumulative[i - 1];
  const double in_bucket = h.cumulative[i] - below;
  if (in_bucket <= 0) return h.bounds_s[i];
  return lower + (h.bounds_s[i] - lower) * (rank - below) / in_bucket;
}

std::optional<double> ShareAtMost(const BucketCounts& h, double bound_s) {
  const double total = h.total();
  if (total <= 0) return std::nullopt;
  for (size_t i = 0; i < h.bounds_s.size(); ++i) {
    // Bounds come from the text format ("0.01"): compare with a relative tolerance.
    if (std::fabs(h.bounds_s[i] - bound_s) <= 1e-9 * std::max(1.0, bound_s)) {
      return h.cumulative[i] / total;
    }
  }
  return std::nullopt;
}

}  // namespace lagwatch::bench
