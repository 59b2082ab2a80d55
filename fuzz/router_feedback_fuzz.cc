// Fuzzes the router-feedback parsers (exporters/rw_stats.h): ParseRwStats, ParseHostPort,
// AppFromKey, and FeedbackAccumulator (exporters/feedback_accumulator.h) on what they produce.
//
// Input: lines (fuzz::Lines). The first is the app; each further line is one hash field,
// "name<TAB>value" (a line without a tab is a name with an empty value), in reply order.
// Properties: the outcome's counts add up (every skipped field is one problem, up to
// kMaxProblems) and its problems are printable ASCII; counts are non-negative integers; a replica
// key is the canonical host:port of a field that was present; and the accumulator's exported
// totals never go down, whatever snapshots follow one another.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "exporters/feedback_accumulator.h"
#include "exporters/rw_stats.h"
#include "fuzz/check.h"

namespace lagwatch {
namespace {

void CheckCount(double v, const std::string& what) {
  FUZZ_CHECK(v >= 0 && v == std::floor(v) && v <= 9.3e18, what + " = " + std::to_string(v));
}

void CheckOutcome(std::string_view app, const HashFields& fields, const ParseOutcome& out) {
  FUZZ_CHECK(out.bad_app == !IsValidAppName(app), std::string(app));
  FUZZ_CHECK(out.stats.app == app, out.stats.app);
  const auto app_of_key = AppFromKey(std::string(kRwStatsPrefix) + std::string(app));
  FUZZ_CHECK(app_of_key.has_value() == !out.bad_app && (!app_of_key || *app_of_key == app), "");
  if (out.bad_app) {
    FUZZ_CHECK(out.malformed == 0 && out.unknown_fields == 0 && out.problems.size() == 1 &&
                   out.stats.reads_by_replica.empty() && out.stats.unreadable.empty(),
               "a bad app must stop parsing");
    return;
  }
  const size_t skipped = static_cast<size_t>(out.malformed) + out.unknown_fields;
  FUZZ_CHECK(out.malformed >= 0 && out.unknown_fields >= 0 && skipped <= fields.size(),
             std::to_string(skipped) + " skipped of " + std::to_string(fields.size()));
  FUZZ_CHECK(
      out.problems.size() == std::min(skipped, ParseOutcome::kMaxProblems),
      std::to_string(out.problems.size()) + " problems, " + std::to_string(skipped) + " skipped");
  for (const std::string& p : out.problems) {
    for (char c : p) FUZZ_CHECK(c >= 0x20 && c < 0x7f, "unescaped byte in problem: " + p);
  }

  std::set<std::string> names;
  for (const auto& [name, value] : fields) names.insert(name);
  const AppStats& s = out.stats;
  CheckCount(s.reads_replica, "reads_replica");
  CheckCount(s.reads_master, "reads_master");
  CheckCount(s.degrade_attempts, "degrade_attempts");
  CheckCount(s.degrade_successes, "degrade_successes");
  for (const auto& [replica, reads] : s.reads_by_replica) {
    CheckCount(reads, replica);
    FUZZ_CHECK(ParseHostPort(replica) == replica, replica);
    FUZZ_CHECK(names.count("reads_replica:" + replica), replica);
  }
  for (const std::string& u : s.unreadable) FUZZ_CHECK(names.count(u), "unreadable " + u);
}

void CheckDelta(const FeedbackAccumulator::Delta& d) {
  if (!d.accepted) return;
  CheckCount(d.reads_replica, "delta reads_replica");
  CheckCount(d.reads_master, "delta reads_master");
  CheckCount(d.degrade_attempts, "delta degrade_attempts");
  CheckCount(d.degrade_successes, "delta degrade_successes");
  for (const auto& [replica, reads] : d.reads_by_replica) CheckCount(reads, "delta " + replica);
  FUZZ_CHECK(d.replicas_refused >= 0, std::to_string(d.replicas_refused));
}

void CheckNotDecreasing(const FeedbackAccumulator::Totals& before,
                        const FeedbackAccumulator::Totals& after) {
  FUZZ_CHECK(after.reads_replica >= before.reads_replica && after.reads_all >= before.reads_all &&
                 after.degrade_attempts >= before.degrade_attempts &&
                 after.degrade_successes >= before.degrade_successes,
             "a total went down");
  FUZZ_CHECK(after.reads_all >= after.reads_replica, "reads_all < reads_replica");
}

}  // namespace
}  // namespace lagwatch

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lagwatch;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto lines = fuzz::Lines(text);
  const std::string_view app = lines[0];
  HashFields fields;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t tab = lines[i].find('\t');
    std::string_view name = lines[i].substr(0, tab);
    std::string_view value = tab == std::string_view::npos ? "" : lines[i].substr(tab + 1);
    fields.emplace_back(std::string(name), std::string(value));
    auto hp = ParseHostPort(name);
    FUZZ_CHECK(!hp || (*hp == name && ParseHostPort(*hp) == hp), std::string(name));
  }

  // The first line as a whole key, too: an app only when it has the prefix and a valid name.
  if (auto from_key = AppFromKey(app)) {
    FUZZ_CHECK(app.starts_with(kRwStatsPrefix) && IsValidAppName(*from_key) &&
                   *from_key == app.substr(kRwStatsPrefix.size()),
               *from_key);
  }

  const ParseOutcome out = ParseRwStats(app, fields);
  CheckOutcome(app, fields, out);
  if (out.bad_app) return 0;

  // The snapshot, the same again (adds nothing), an empty one (every counter reset to 0), then
  // the snapshot once more; a small replica limit so refusals happen too.
  FeedbackAccumulator acc(/*max_apps=*/1, /*max_replicas_per_app=*/4);
  AppStats empty;
  empty.app = out.stats.app;
  FeedbackAccumulator::Totals last;
  int step = 0;
  const AppStats* const snapshots[] = {&out.stats, &out.stats, &empty, &out.stats};
  for (const AppStats* snapshot : snapshots) {
    const FeedbackAccumulator::Delta d = acc.Observe(*snapshot);
    FUZZ_CHECK(d.accepted, "the only app was refused");
    CheckDelta(d);
    if (step == 1) {
      FUZZ_CHECK(d.reads_replica == 0 && d.reads_master == 0 && d.degrade_attempts == 0 &&
                     d.degrade_successes == 0 && !d.reset,
                 "an unchanged snapshot added to the totals");
      for (const auto& [replica, reads] : d.reads_by_replica) {
        FUZZ_CHECK(reads == 0, "an unchanged snapshot added to " + replica);
      }
    }
    const FeedbackAccumulator::Totals now = acc.AppTotals().at(out.stats.app);
    CheckNotDecreasing(last, now);
    last = now;
    ++step;
  }
  AppStats other;
  other.app = out.stats.app + "x";
  FUZZ_CHECK(!acc.Observe(other).accepted, "max_apps exceeded");
  return 0;
}
