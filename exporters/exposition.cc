#include "exporters/exposition.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace lagwatch {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Room for any number we write: "-2.225073858507201e-308" (23), an int64 or a uint64 (20).
constexpr size_t kNumberMax = 24;
// TextSerializer's precision: std::numeric_limits<double>::max_digits10 - 1.
constexpr int kDoubleDigits = 16;
// Below this a whole double prints the same through "%.16g" and as an integer, and fits int64.
constexpr double kWholeLimit = 1e15;

void AppendUint(std::string& out, uint64_t v) {
  char buf[kNumberMax];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void AppendInt(std::string& out, int64_t v) {
  char buf[kNumberMax];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void AppendDouble(std::string& out, double v) {
  if (std::isnan(v)) {
    out.append("NaN");
  } else if (std::isinf(v)) {
    out.append(v < 0 ? "-Inf" : "+Inf");
  } else if (std::fabs(v) < kWholeLimit && v == std::trunc(v) && !(v == 0 && std::signbit(v))) {
    // Most values (0/1 gauges, counters) are whole: the integer path is several times faster.
    AppendInt(out, static_cast<int64_t>(v));
  } else {
    char buf[kNumberMax];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, kDoubleDigits);
    out.append(buf, r.ptr);
  }
}

// Appends `s` with a backslash before each backslash and newline (as `\n`), and before each `"`
// when `quote` is set.
void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  const std::string_view special = quote ? std::string_view("\\\"\n") : std::string_view("\\\n");
  size_t from = 0;
  for (size_t at = s.find_first_of(special); at != std::string_view::npos;
       at = s.find_first_of(special, from)) {
    out.append(s.substr(from, at - from));
    out.push_back('\\');
    out.push_back(s[at] == '\n' ? 'n' : s[at]);
    from = at + 1;
  }
  out.append(s.substr(from));
}

// Into an empty `out`: `name="value"` pairs of `metric`, comma-separated, without braces; first
// `constant` (a rendered pair, or ""), unless the metric has a label named `constant_name` itself.
void AppendLabels(std::string& out, const ClientMetric& metric, std::string_view constant,
                  std::string_view constant_name) {
  if (!constant.empty()) {
    bool own = false;
    for (const auto& label : metric.label) own = own || label.name == constant_name;
    if (!own) out.append(constant);
  }
  for (const auto& label : metric.label) {
    if (!out.empty()) out.push_back(',');
    out.append(label.name);
    out.append("=\"");
    AppendEscaped(out, label.value, true);
    out.push_back('"');
  }
}

// Formatted `le` values of the family's previous histogram: a family's metrics nearly always share
// their bucket bounds, so each bound is formatted once per scrape rather than once per series.
class BoundCache {
 public:
  std::string_view Get(size_t i, double bound) {
    if (i >= bits_.size()) {
      bits_.resize(i + 1);
      text_.resize(i + 1);
      valid_.resize(i + 1, false);
    }
    const auto bits = std::bit_cast<uint64_t>(bound);
    if (!valid_[i] || bits_[i] != bits) {
      text_[i].clear();
      AppendDouble(text_[i], bound);
      bits_[i] = bits;
      valid_[i] = true;
    }
    return text_[i];
  }

 private:
  std::vector<uint64_t> bits_;
  std::vector<std::string> text_;
  std::vector<bool> valid_;
};

// Writes the lines of a family's metrics, one metric at a time.
class MetricWriter {
 public:
  // `constant`: the rendered constant label (`name="value"`), or "" for none.
  MetricWriter(std::string& out, const MetricFamily& family, std::string_view constant,
               std::string_view constant_name)
      : out_(out), family_(family), constant_(constant), constant_name_(constant_name) {}

  // Starts a metric: renders its labels once for all its lines.
  void Begin(const ClientMetric& metric) {
    metric_ = &metric;
    labels_.clear();
    AppendLabels(labels_, metric, constant_, constant_name_);
  }

  // `<name><suffix>{<labels>} ` for a line without an extra label.
  void Head(std::string_view suffix) {
    out_.append(family_.name);
    out_.append(suffix);
    if (!labels_.empty()) {
      out_.push_back('{');
      out_.append(labels_);
      out_.push_back('}');
    }
    out_.push_back(' ');
  }

  // `<name><suffix>{<labels>,<extra>="<value>"} `.
  void HeadWith(std::string_view suffix, std::string_view extra, std::string_view value) {
    out_.append(family_.name);
    out_.append(suffix);
    out_.push_back('{');
    if (!labels_.empty()) {
      out_.append(labels_);
      out_.push_back(',');
    }
    out_.append(extra);
    out_.append("=\"");
    out_.append(value);
    out_.append("\"} ");
  }

  void Tail() {
    if (metric_->timestamp_ms != 0) {
      out_.push_back(' ');
      AppendInt(out_, metric_->timestamp_ms);
    }
    out_.push_back('\n');
  }

  void Value(double v) {
    AppendDouble(out_, v);
    Tail();
  }

  void Value(uint64_t v) {
    AppendUint(out_, v);
    Tail();
  }

  void Summary() {
    const auto& summary = metric_->summary;
    Head("_count");
    Value(summary.sample_count);
    Head("_sum");
    Value(summary.sample_sum);
    for (const auto& q : summary.quantile) {
      scratch_.clear();
      AppendDouble(scratch_, q.quantile);
      HeadWith("", "quantile", scratch_);
      Value(q.value);
    }
  }

  void Histogram() {
    const auto& histogram = metric_->histogram;
    Head("_count");
    Value(histogram.sample_count);
    Head("_sum");
    Value(histogram.sample_sum);
    double last = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < histogram.bucket.size(); ++i) {
      const auto& bucket = histogram.bucket[i];
      HeadWith("_bucket", "le", bounds_.Get(i, bucket.upper_bound));
      Value(bucket.cumulative_count);
      last = bucket.upper_bound;
    }
    if (last != std::numeric_limits<double>::infinity()) {
      HeadWith("_bucket", "le", "+Inf");
      Value(histogram.sample_count);
    }
  }

 private:
  std::string& out_;
  const MetricFamily& family_;
  const std::string_view constant_;
  const std::string_view constant_name_;
  const ClientMetric* metric_ = nullptr;
  std::string labels_;
  std::string scratch_;
  BoundCache bounds_;
};

// An upper bound on the output's size unless label values or help need escaping, so the output
// is allocated once: every number at its longest, every line with the longest suffix, and
// `constant_size` more bytes on every line for the constant label.
size_t EstimateSize(const std::vector<MetricFamily>& families, size_t constant_size) {
  constexpr size_t kSuffixMax = sizeof "_bucket" - 1;
  constexpr size_t kExtraLabelMax = sizeof ",quantile=\"\"" - 1 + kNumberMax;
  size_t total = 0;
  for (const auto& family : families) {
    total += 2 * family.name.size() + family.help.size() + 32;  // HELP and TYPE lines.
    for (const auto& metric : family.metric) {
      // `<name><suffix>{<labels>} <value>[ <timestamp>]\n`, labels as `name="value",`.
      size_t line = family.name.size() + kSuffixMax + 2 + 1 + kNumberMax + 1 + constant_size;
      for (const auto& label : metric.label) line += label.name.size() + label.value.size() + 4;
      if (metric.timestamp_ms != 0) line += 1 + kNumberMax;
      size_t lines = 1, extra_label_lines = 0;
      if (family.type == MetricType::Histogram) {
        lines = 2;
        extra_label_lines = metric.histogram.bucket.size() + 1;
      } else if (family.type == MetricType::Summary) {
        lines = 2;
        extra_label_lines = metric.summary.quantile.size();
      }
      total += (lines + extra_label_lines) * line + extra_label_lines * kExtraLabelMax;
    }
  }
  return total;
}

// The `# TYPE` word for `type`, or null for a value outside the enum.
const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Untyped:
      return "untyped";
    case MetricType::Histogram:
      return "histogram";
  }
  return nullptr;
}

void AppendHelp(std::string& out, std::string_view name, std::string_view help) {
  if (help.empty()) return;
  out.append("# HELP ");
  out.append(name);
  out.push_back(' ');
  AppendEscaped(out, help, false);
  out.push_back('\n');
}

void AppendType(std::string& out, std::string_view name, std::string_view type) {
  out.append("# TYPE ");
  out.append(name);
  out.push_back(' ');
  out.append(type);
  out.push_back('\n');
}

}  // namespace

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type) {
  AppendHelp(out, name, help);
  AppendType(out, name, type);
}

void AppendSampleValue(std::string& out, double v) { AppendDouble(out, v); }

void AppendSampleValue(std::string& out, uint64_t v) { AppendUint(out, v); }

void AppendLabelValue(std::string& out, std::string_view value) { AppendEscaped(out, value, true); }

std::string SerializeText(const std::vector<MetricFamily>& families,
                          const ClientMetric::Label& constant) {
  std::string rendered;  // `name="value"`, or "" without a constant label
  if (!constant.name.empty()) {
    rendered = constant.name + "=\"";
    AppendEscaped(rendered, constant.value, true);
    rendered.push_back('"');
  }
  std::string out;
  out.reserve(EstimateSize(families, rendered.empty() ? 0 : rendered.size() + 1));
  for (const auto& family : families) {
    AppendHelp(out, family.name, family.help);
    const char* type = TypeName(family.type);
    if (type == nullptr) continue;  // As TextSerializer: no TYPE line, no samples.
    AppendType(out, family.name, type);

    MetricWriter w(out, family, rendered, constant.name);
    for (const auto& metric : family.metric) {
      w.Begin(metric);
      switch (family.type) {
        case MetricType::Counter:
          w.Head("");
          w.Value(metric.counter.value);
          break;
        case MetricType::Gauge:
          w.Head("");
          w.Value(metric.gauge.value);
          break;
        case MetricType::Untyped:
          w.Head("");
          w.Value(metric.untyped.value);
          break;
        case MetricType::Summary:
          w.Summary();
          break;
        case MetricType::Histogram:
          w.Histogram();
          break;
      }
    }
  }
  return out;
}

}  // namespace lagwatch
