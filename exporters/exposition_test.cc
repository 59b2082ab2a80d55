#include "exporters/exposition.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

namespace lagwatch {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The registry's families with each family's metrics sorted by labels (a Family keeps them in an
// unordered_map), so expected text can be written down.
std::vector<MetricFamily> Collected(const prometheus::Registry& registry) {
  auto families = registry.Collect();
  for (auto& family : families) {
    std::sort(family.metric.begin(), family.metric.end(),
              [](const ClientMetric& a, const ClientMetric& b) { return a.label < b.label; });
  }
  return families;
}

std::string OldText(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

// A sample's identity: metric name and its labels (unescaped, by name).
using SeriesKey = std::pair<std::string, std::map<std::string, std::string>>;

// What a scraper makes of an exposition: every sample's value and timestamp, every family's TYPE
// and HELP, and whatever it could not parse.
struct Parsed {
  std::map<SeriesKey, double> values;
  std::map<SeriesKey, std::string> timestamps;
  std::map<std::string, std::string> types;
  std::map<std::string, std::string> helps;
  std::vector<std::string> errors;
};

// Unescapes `\\`, `\"` (when `quote`) and `\n` from `s` starting at `*at`, up to an unescaped `"`
// (when `quote`) or the end. Leaves `*at` on the closing quote.
bool Unescape(const std::string& s, size_t* at, bool quote, std::string* out) {
  while (*at < s.size() && !(quote && s[*at] == '"')) {
    char c = s[(*at)++];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (*at == s.size()) return false;
    c = s[(*at)++];
    if (c == 'n') {
      out->push_back('\n');
    } else if (c == '\\' || (quote && c == '"')) {
      out->push_back(c);
    } else {
      return false;
    }
  }
  return !quote || *at < s.size();
}

// A small parser for the text format, strict about what SerializeText and TextSerializer write.
Parsed Parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto fail = [&] { p.errors.push_back(line); };
    if (line.rfind("# HELP ", 0) == 0) {
      size_t sp = line.find(' ', 7);
      if (sp == std::string::npos) {
        fail();
        continue;
      }
      std::string help;
      size_t at = sp + 1;
      if (!Unescape(line, &at, false, &help)) fail();
      p.helps[line.substr(7, sp - 7)] = help;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      size_t sp = line.find(' ', 7);
      if (sp == std::string::npos) {
        fail();
        continue;
      }
      p.types[line.substr(7, sp - 7)] = line.substr(sp + 1);
      continue;
    }
    SeriesKey key;
    size_t at = line.find_first_of("{ ");
    if (at == std::string::npos || at == 0) {
      fail();
      continue;
    }
    key.first = line.substr(0, at);
    bool ok = true;
    if (line[at] == '{') {
      ++at;
      while (ok && at < line.size() && line[at] != '}') {
        size_t eq = line.find("=\"", at);
        if (eq == std::string::npos) {
          ok = false;
          break;
        }
        std::string name = line.substr(at, eq - at), value;
        at = eq + 2;
        ok = Unescape(line, &at, true, &value) && key.second.emplace(name, value).second;
        ++at;  // The closing quote.
        if (at < line.size() && line[at] == ',') ++at;
      }
      ok = ok && at < line.size() && line[at] == '}';
      ++at;
    }
    if (!ok || at >= line.size() || line[at] != ' ') {
      fail();
      continue;
    }
    std::istringstream rest(line.substr(at + 1));
    std::string value, timestamp, extra;
    rest >> value >> timestamp >> extra;
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !extra.empty() || p.values.count(key) != 0) {
      fail();
      continue;
    }
    p.values[key] = v;
    if (!timestamp.empty()) p.timestamps[key] = timestamp;
  }
  return p;
}

bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// The first line where `a` and `b` differ, for a readable failure.
std::string FirstDifference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool more_a = static_cast<bool>(std::getline(ia, la));
    bool more_b = static_cast<bool>(std::getline(ib, lb));
    if (!more_a && !more_b) return "";
    if (la != lb || more_a != more_b) {
      return "line " + std::to_string(n) + ":\n  new: " + la + "\n  old: " + lb;
    }
  }
}

TEST_CASE("SerializeText writes counters, gauges and histograms in the text format") {
  prometheus::Registry registry;
  prometheus::BuildCounter()
      .Name("t_requests_total")
      .Help("Requests served.")
      .Register(registry)
      .Add({{"code", "200"}})
      .Increment(3);
  auto& gauges = prometheus::BuildGauge()
                     .Name("t_value")
                     .Help("A value; a \\ backslash\nand a second line.")
                     .Register(registry);
  const std::vector<std::pair<std::string, double>> values = {
      {"a_nan", kNaN},      {"b_inf", kInf},       {"c_minus_inf", -kInf},
      {"d_negative", -2.5}, {"e_large", 1.5e300},  {"f_small", 2.5e-300},
      {"g_whole", 1234567}, {"h_tenth", 0.0005},   {"i_16_digits", 1.0 / 3},
      {"j_zero", 0},        {"k_big_whole", 1e16}, {"l_minus_zero", -0.0}};
  for (const auto& [name, value] : values) gauges.Add({{"v", name}}).Set(value);
  auto& histogram = prometheus::BuildHistogram()
                        .Name("t_latency_seconds")
                        .Register(registry)
                        .Add({{"replica", "a\\b\"c\nd"}, {"tier", "gold"}},
                             prometheus::Histogram::BucketBoundaries{0.0005, 0.1, 1});
  for (double v : {0.0001, 0.05, 0.05, 3.0}) histogram.Observe(v);

  CHECK(SerializeText(Collected(registry)) ==
        "# HELP t_requests_total Requests served.\n"
        "# TYPE t_requests_total counter\n"
        "t_requests_total{code=\"200\"} 3\n"
        "# HELP t_value A value; a \\\\ backslash\\nand a second line.\n"
        "# TYPE t_value gauge\n"
        "t_value{v=\"a_nan\"} NaN\n"
        "t_value{v=\"b_inf\"} +Inf\n"
        "t_value{v=\"c_minus_inf\"} -Inf\n"
        "t_value{v=\"d_negative\"} -2.5\n"
        "t_value{v=\"e_large\"} 1.5e+300\n"
        "t_value{v=\"f_small\"} 2.5e-300\n"
        "t_value{v=\"g_whole\"} 1234567\n"
        "t_value{v=\"h_tenth\"} 0.0005\n"
        "t_value{v=\"i_16_digits\"} 0.3333333333333333\n"
        "t_value{v=\"j_zero\"} 0\n"
        "t_value{v=\"k_big_whole\"} 1e+16\n"
        "t_value{v=\"l_minus_zero\"} -0\n"
        "# TYPE t_latency_seconds histogram\n"
        "t_latency_seconds_count{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\"} 4\n"
        "t_latency_seconds_sum{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\"} 3.1001\n"
        "t_latency_seconds_bucket{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\",le=\"0.0005\"} 1\n"
        "t_latency_seconds_bucket{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\",le=\"0.1\"} 3\n"
        "t_latency_seconds_bucket{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\",le=\"1\"} 3\n"
        "t_latency_seconds_bucket{replica=\"a\\\\b\\\"c\\nd\",tier=\"gold\",le=\"+Inf\"} 4\n");
}

TEST_CASE("SerializeText writes summaries, untyped values, timestamps and a closing +Inf bucket") {
  MetricFamily summary{"t_rtt_seconds", "Round trips.", MetricType::Summary, {}};
  ClientMetric s;
  s.summary.sample_count = 3;
  s.summary.sample_sum = 1.5;
  s.summary.quantile = {{0.5, 0.25}, {0.99, kNaN}};
  s.timestamp_ms = 1700000000123;
  summary.metric.push_back(s);

  MetricFamily untyped{"t_untyped", "", MetricType::Untyped, {}};
  ClientMetric u;
  u.label = {{"x", ""}};
  u.untyped.value = 7;
  u.timestamp_ms = -5;
  untyped.metric.push_back(u);

  MetricFamily histogram{"t_hist", "", MetricType::Histogram, {}};
  ClientMetric h;
  h.histogram.sample_count = 2;
  h.histogram.sample_sum = 0.25;
  h.histogram.bucket = {{1, 0.125}, {2, kInf}};
  histogram.metric.push_back(h);
  ClientMetric empty;  // No buckets at all: only the +Inf one.
  empty.label = {{"b", "none"}};
  histogram.metric.push_back(empty);

  MetricFamily no_metrics{"t_unused_total", "Nothing yet.", MetricType::Counter, {}};

  CHECK(SerializeText({summary, untyped, histogram, no_metrics}) ==
        "# HELP t_rtt_seconds Round trips.\n"
        "# TYPE t_rtt_seconds summary\n"
        "t_rtt_seconds_count 3 1700000000123\n"
        "t_rtt_seconds_sum 1.5 1700000000123\n"
        "t_rtt_seconds{quantile=\"0.5\"} 0.25 1700000000123\n"
        "t_rtt_seconds{quantile=\"0.99\"} NaN 1700000000123\n"
        "# TYPE t_untyped untyped\n"
        "t_untyped{x=\"\"} 7 -5\n"
        "# TYPE t_hist histogram\n"
        "t_hist_count 2\n"
        "t_hist_sum 0.25\n"
        "t_hist_bucket{le=\"0.125\"} 1\n"
        "t_hist_bucket{le=\"+Inf\"} 2\n"
        "t_hist_count{b=\"none\"} 0\n"
        "t_hist_sum{b=\"none\"} 0\n"
        "t_hist_bucket{b=\"none\",le=\"+Inf\"} 0\n"
        "# HELP t_unused_total Nothing yet.\n"
        "# TYPE t_unused_total counter\n");
  CHECK(SerializeText({}).empty());
}

// A registry of every metric type with labels needing escaping and values of every kind.
class RandomRegistry {
 public:
  explicit RandomRegistry(unsigned seed) : rng_(seed) {
    const char* names[] = {"counter", "gauge", "histogram", "summary"};
    for (int f = 0; f < 40; ++f) {
      const std::string name = std::string("t_") + names[f % 4] + "_" + std::to_string(f);
      const auto label_names = LabelNames();
      const int metrics = Uniform(0, 30);
      switch (f % 4) {
        case 0: {
          auto& family =
              prometheus::BuildCounter().Name(name).Help("Counter " + name).Register(registry);
          for (int m = 0; m < metrics; ++m) {
            family.Add(Labels(label_names)).Increment(std::fabs(Value()));
          }
          break;
        }
        case 1: {
          auto& family =
              prometheus::BuildGauge().Name(name).Help("Gauge \"" + name).Register(registry);
          for (int m = 0; m < metrics; ++m) family.Add(Labels(label_names)).Set(Value());
          break;
        }
        case 2: {
          auto& family = prometheus::BuildHistogram().Name(name).Register(registry);
          // Mostly one set of bounds per family, as lagwatch has; now and then another.
          const auto bounds = Bounds();
          for (int m = 0; m < metrics; ++m) {
            auto& h = family.Add(Labels(label_names), Uniform(0, 3) == 0 ? Bounds() : bounds);
            for (int o = Uniform(0, 20); o > 0; --o) h.Observe(Finite());
          }
          break;
        }
        case 3: {
          auto& family = prometheus::BuildSummary().Name(name).Help("S").Register(registry);
          for (int m = 0; m < metrics; ++m) {
            auto& s = family.Add(Labels(label_names),
                                 prometheus::Summary::Quantiles{{0.5, 0.05}, {0.99, 0.001}});
            for (int o = Uniform(0, 20); o > 0; --o) s.Observe(Finite());
          }
          break;
        }
      }
    }
  }

  // Collect(), with a timestamp (possibly negative) on about one metric in five.
  std::vector<MetricFamily> Collect() {
    auto families = registry.Collect();
    for (auto& family : families) {
      for (auto& metric : family.metric) {
        if (Uniform(0, 4) == 0) metric.timestamp_ms = Uniform(-1000, 2'000'000'000) * 1000LL;
      }
    }
    return families;
  }

  prometheus::Registry registry;

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::vector<std::string> LabelNames() {
    const char* all[] = {"replica", "tier", "reason", "window", "state"};
    std::vector<std::string> names;
    for (int n = Uniform(0, 3); n > 0; --n) names.push_back(all[Uniform(0, 4)]);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  prometheus::Histogram::BucketBoundaries Bounds() {
    prometheus::Histogram::BucketBoundaries bounds;
    for (int b = Uniform(0, 14); b > 0; --b) bounds.push_back(Finite());
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    return bounds;
  }

  prometheus::Labels Labels(const std::vector<std::string>& names) {
    static const char* const alphabet[] = {"a",  "b",  ".", ":", "0", "1", "9", " ",       "\\",
                                           "\"", "\n", "{", "}", "=", ",", "#", "\xc3\xa9"};
    prometheus::Labels labels;
    for (const auto& name : names) {
      std::string value;
      for (int n = Uniform(0, 20); n > 0; --n) value += alphabet[Uniform(0, 16)];
      labels[name] = value;
    }
    return labels;
  }

  double Finite() {
    switch (Uniform(0, 4)) {
      case 0:
        return Uniform(-1'000'000, 1'000'000);
      case 1:
        return Uniform(0, 1000) / 1000.0;
      case 2:
        return std::uniform_real_distribution<double>(-1, 1)(rng_) * std::pow(10, Uniform(-20, 20));
      case 3: {
        const double odd[] = {0.1 + 0.2, 1e15,           1e16, 9007199254740993.0,  5e-324,
                              1.7e308,   -2.225074e-308, -0.0, 123456789012345678.0};
        return odd[Uniform(0, 8)];
      }
      default:
        return std::uniform_real_distribution<double>(0, 2)(rng_);
    }
  }

  double Value() {
    const double special[] = {kNaN, kInf, -kInf};
    return Uniform(0, 9) == 0 ? special[Uniform(0, 2)] : Finite();
  }

  std::mt19937 rng_;
};

TEST_CASE("SerializeText says what TextSerializer says of a large random registry") {
  for (unsigned seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    RandomRegistry random(seed);
    const auto families = random.Collect();
    const std::string text = SerializeText(families);
    const std::string old_text = OldText(families);

    // As a scraper reads them: the same series, values, timestamps, types and help.
    Parsed now = Parse(text), old = Parse(old_text);
    CHECK(now.errors.empty());
    CHECK(old.errors.empty());
    CHECK(now.values.size() > 1000);
    CHECK(now.timestamps == old.timestamps);
    CHECK(now.types == old.types);
    CHECK(now.helps == old.helps);
    REQUIRE(now.values.size() == old.values.size());
    for (auto n = now.values.begin(), o = old.values.begin(); n != now.values.end(); ++n, ++o) {
      REQUIRE(n->first == o->first);
      CAPTURE(n->first.first);
      CHECK(SameValue(n->second, o->second));
    }

    // And byte for byte, once TextSerializer's "Nan" is spelled as the format says.
    std::string expected = old_text;
    for (size_t at = 0; (at = expected.find(" Nan", at)) != std::string::npos; at += 4) {
      expected.replace(at, 4, " NaN");
    }
    INFO(FirstDifference(text, expected));
    CHECK(text == expected);
  }
}

TEST_CASE("SerializeText with a constant label: once on every sample line, first; else the same") {
  const ClientMetric::Label cluster{"cluster", "shop \"eu\"\\1"};
  const std::string rendered = R"(cluster="shop \"eu\"\\1")";
  for (unsigned seed : {1u, 2u}) {
    CAPTURE(seed);
    RandomRegistry random(seed);
    const auto families = random.Collect();
    const std::string plain = SerializeText(families);
    const std::string text = SerializeText(families, cluster);

    // Every sample line has it exactly once, as the first label; HELP and TYPE lines are untouched.
    std::istringstream in(text);
    std::string line;
    size_t samples = 0;
    while (std::getline(in, line)) {
      if (line.rfind("# ", 0) == 0) continue;
      ++samples;
      CAPTURE(line);
      const size_t open = line.find('{');
      REQUIRE(open != std::string::npos);
      CHECK(line.compare(open + 1, rendered.size(), rendered) == 0);
      CHECK(line.find("cluster=\"", open + 1 + rendered.size()) == std::string::npos);
    }
    CHECK(samples > 1000);

    // As a scraper reads it: the same series with the label added, the same values.
    Parsed with = Parse(text), without = Parse(plain);
    CHECK(with.errors.empty());
    CHECK(with.types == without.types);
    CHECK(with.helps == without.helps);
    REQUIRE(with.values.size() == without.values.size());
    for (const auto& [key, value] : without.values) {
      SeriesKey labelled = key;
      labelled.second.emplace("cluster", cluster.value);
      REQUIRE(with.values.count(labelled) == 1);
      CHECK(SameValue(with.values[labelled], value));
    }

    // Taking it out again gives the output without it, byte for byte.
    std::string stripped = text;
    for (const std::string& piece : {"{" + rendered + "}", "{" + rendered + ","}) {
      const std::string replacement = piece.back() == ',' ? "{" : "";
      for (size_t at = 0; (at = stripped.find(piece, at)) != std::string::npos;) {
        stripped.replace(at, piece.size(), replacement);
        at += replacement.size();
      }
    }
    INFO(FirstDifference(stripped, plain));
    CHECK(stripped == plain);
  }
}

TEST_CASE("SerializeText's constant label: braces for a bare series, a metric's own label kept") {
  prometheus::Registry registry;
  prometheus::BuildGauge().Name("g").Help("G").Register(registry).Add({}).Set(1);
  auto& own = prometheus::BuildCounter().Name("c_total").Help("C").Register(registry);
  own.Add({{"cluster", "other"}, {"reason", "io"}}).Increment(2);
  prometheus::BuildHistogram()
      .Name("h")
      .Help("H")
      .Register(registry)
      .Add({}, prometheus::Histogram::BucketBoundaries{0.5})
      .Observe(0.25);
  CHECK(SerializeText(Collected(registry), {"cluster", "shop"}) ==
        "# HELP c_total C\n"
        "# TYPE c_total counter\n"
        "c_total{cluster=\"other\",reason=\"io\"} 2\n"
        "# HELP g G\n"
        "# TYPE g gauge\n"
        "g{cluster=\"shop\"} 1\n"
        "# HELP h H\n"
        "# TYPE h histogram\n"
        "h_count{cluster=\"shop\"} 1\n"
        "h_sum{cluster=\"shop\"} 0.25\n"
        "h_bucket{cluster=\"shop\",le=\"0.5\"} 1\n"
        "h_bucket{cluster=\"shop\",le=\"+Inf\"} 1\n");
}

}  // namespace
}  // namespace lagwatch
