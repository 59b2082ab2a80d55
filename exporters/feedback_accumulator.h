// Router feedback, second layer (docs/redis.md, docs/metrics.md): successive AppStats of each app
// (exporters/rw_stats.h) -> monotonically increasing exported totals, the inputs of RWSR (replica
// reads / all reads) and DSR (degrade successes / attempts). No I/O, no clock.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "exporters/rw_stats.h"

namespace lagwatch {

// Turns successive snapshots of each app's counters into monotonically increasing totals, the
// way Prometheus treats counter resets: a value that goes DOWN (router restarted, Redis flushed,
// hash deleted) is a reset, and the new value is added as the delta. A field missing from a
// snapshot counts as 0; an unreadable one keeps its previous value. The first snapshot of an app
// adds its full values.
//
// Bounded: at most `max_apps` apps and `max_replicas_per_app` replicas per app are ever tracked
// (they become label values); later newcomers are refused, the ones already tracked stay.
// Thread-safe.
class FeedbackAccumulator {
 public:
  // Cumulative exported totals of one app, for RWSR = reads_replica / reads_all and
  // DSR = degrade_successes / degrade_attempts over any window between two snapshots.
  struct Totals {
    double reads_replica = 0;
    double reads_all = 0;  // replica + master
    double degrade_attempts = 0;
    double degrade_successes = 0;
  };

  // What one Observe() added to the exported totals: every value >= 0.
  struct Delta {
    bool accepted = false;  // false: a new app beyond max_apps; nothing below is set
    double reads_replica = 0, reads_master = 0, degrade_attempts = 0, degrade_successes = 0;
    // One entry per tracked replica present in the snapshot (0 if unchanged), so its series
    // exists from its first sighting.
    std::map<std::string, double> reads_by_replica;
    bool reset = false;        // at least one counter went down
    int replicas_refused = 0;  // new replicas beyond max_replicas_per_app
  };

  explicit FeedbackAccumulator(size_t max_apps = 1000, size_t max_replicas_per_app = 64);

  // True if Observe() would accept `app` (already tracked, or room for one more).
  bool Admits(const std::string& app) const;

  // Folds in the latest snapshot of `stats.app`.
  Delta Observe(const AppStats& stats);

  // A copy of every tracked app's totals.
  std::map<std::string, Totals> AppTotals() const;

 private:
  // Per counter, keyed by hash field name ("reads_master", "reads_replica:h:p", ...).
  struct Counter {
    double last_raw = 0;  // the value seen in Redis last time
    double total = 0;     // exported: never decreases
  };
  struct App {
    std::map<std::string, Counter> counters;
    size_t replicas = 0;
  };

  // The app of `name`, created if there is room; null if it is new and max_apps_ are tracked.
  // REQUIRES: mu_ held.
  App* FindOrAdmit(const std::string& name);
  // Folds `raw`, the latest value of `field` in `stats`, into `app`'s counter; returns what it
  // added to the exported total and sets `d.reset` if the counter went down.
  static double Fold(App& app, const AppStats& stats, const std::string& field, double raw,
                     Delta& d);
  // The per-replica fields of `stats` into `app`: new replicas beyond max_replicas_per_app_ are
  // refused, tracked ones the snapshot no longer has read as 0. REQUIRES: mu_ held.
  void FoldReplicas(App& app, const AppStats& stats, Delta& d) const;

  const size_t max_apps_;
  const size_t max_replicas_per_app_;

  mutable std::mutex mu_;
  std::map<std::string, App> apps_;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
