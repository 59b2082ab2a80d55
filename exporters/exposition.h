// The Prometheus text exposition format (0.0.4) for /metrics, written straight into one string.
// A faster stand-in for prometheus::TextSerializer: no iostreams, numbers through std::to_chars,
// the output reserved once. Thread-safe: a pure function of its argument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

namespace lagwatch {

// Returns `families` in the text format, with the same lines, in the same order and with the same
// number formatting as prometheus-cpp 1.0's TextSerializer, so that every series keeps its name,
// labels (including a histogram's `le` and a summary's `quantile`) and value across the switch:
//  - per family: `# HELP` (only when the help is not empty), `# TYPE`, then each metric;
//  - counter, gauge, untyped: one line; summary: `_count`, `_sum`, one line per quantile;
//    histogram: `_count`, `_sum`, one `_bucket` line per bucket with its cumulative count, and a
//    `le="+Inf"` bucket holding the sample count unless the last bucket already is +Inf;
//  - label values escape `\`, `"` and newline; a metric's timestamp_ms follows the value unless 0;
//  - finite doubles as printf's "%.16g" does (integers as integers, "0.005", "1e-07");
//    +Inf and -Inf as such.
// It departs from TextSerializer only where that one breaks the format: NaN is written "NaN" (not
// "Nan"), and HELP text escapes `\` and newline (not written raw, which would end the line).
//
// With a `constant` label (a name that is not empty), every sample line carries it once, first
// in its braces (`{cluster="shop",reason="io"}`; a line without labels gains braces): a label the
// whole process shares, such as the agent's cluster, added at the one place every series passes
// through. Its value is escaped as any label value; REQUIRES: its name is a valid label name. A
// metric that has a label of that name already keeps its own, and the constant is not added to
// it. Without one (the default), the output is TextSerializer's, byte for byte.
//
// Throws nothing but std::bad_alloc.
std::string SerializeText(const std::vector<prometheus::MetricFamily>& families,
                          const prometheus::ClientMetric::Label& constant = {});

// The pieces SerializeText is made of, for writers that render series straight from their own
// storage (Metrics' per-replica series) and must format them exactly as SerializeText would.
// Each appends to `out` and throws nothing but std::bad_alloc.

// The `# HELP` line (unless `help` is empty; `help` is escaped) and the `# TYPE` line of a family.
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type);
// A sample value as SerializeText writes a double ("%.16g", "NaN", "+Inf", "-Inf").
void AppendSampleValue(std::string& out, double v);
// A sample value as SerializeText writes a histogram's counts.
void AppendSampleValue(std::string& out, uint64_t v);
// `value` as it goes between a label's double quotes: backslash, `"` and newline escaped.
void AppendLabelValue(std::string& out, std::string_view value);

}  // namespace lagwatch
