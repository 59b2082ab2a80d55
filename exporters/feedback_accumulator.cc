#include "exporters/feedback_accumulator.h"

#include "base/contract.h"

namespace lagwatch {
namespace rw = contract::rw_stats;

FeedbackAccumulator::FeedbackAccumulator(size_t max_apps, size_t max_replicas_per_app)
    : max_apps_(max_apps), max_replicas_per_app_(max_replicas_per_app) {}

bool FeedbackAccumulator::Admits(const std::string& app) const {
  std::lock_guard lock(mu_);
  return apps_.count(app) > 0 || apps_.size() < max_apps_;
}

FeedbackAccumulator::App* FeedbackAccumulator::FindOrAdmit(const std::string& name) {
  auto it = apps_.find(name);
  if (it != apps_.end()) return &it->second;
  if (apps_.size() >= max_apps_) return nullptr;
  return &apps_.emplace(name, App{}).first->second;
}

double FeedbackAccumulator::Fold(App& app, const AppStats& stats, const std::string& field,
                                 double raw, Delta& d) {
  Counter& c = app.counters[field];
  if (stats.unreadable.count(field)) return 0.0;
  double delta = raw - c.last_raw;
  if (raw < c.last_raw) {
    delta = raw;
    d.reset = true;
  }
  c.last_raw = raw;
  c.total += delta;
  return delta;
}

void FeedbackAccumulator::FoldReplicas(App& app, const AppStats& stats, Delta& d) const {
  for (const auto& [replica, raw] : stats.reads_by_replica) {
    std::string field = std::string(kReplicaFieldPrefix) + replica;
    if (!app.counters.count(field)) {
      if (app.replicas >= max_replicas_per_app_) {
        ++d.replicas_refused;
        continue;
      }
      ++app.replicas;
    }
    d.reads_by_replica[replica] = Fold(app, stats, field, raw, d);
  }
  // Tracked replicas the hash no longer has read as 0 (a reset), unless they were unreadable.
  for (auto& [field, c] : app.counters) {
    if (!field.starts_with(kReplicaFieldPrefix)) continue;
    if (stats.reads_by_replica.count(field.substr(kReplicaFieldPrefix.size()))) continue;
    Fold(app, stats, field, 0, d);
  }
}

FeedbackAccumulator::Delta FeedbackAccumulator::Observe(const AppStats& stats) {
  std::lock_guard lock(mu_);
  Delta d;
  App* app = FindOrAdmit(stats.app);
  if (!app) return d;
  d.accepted = true;
  d.reads_replica = Fold(*app, stats, rw::kReadsReplica, stats.reads_replica, d);
  d.reads_master = Fold(*app, stats, rw::kReadsMaster, stats.reads_master, d);
  d.degrade_attempts = Fold(*app, stats, rw::kDegradeAttempts, stats.degrade_attempts, d);
  d.degrade_successes = Fold(*app, stats, rw::kDegradeSuccesses, stats.degrade_successes, d);
  FoldReplicas(*app, stats, d);
  return d;
}

std::map<std::string, FeedbackAccumulator::Totals> FeedbackAccumulator::AppTotals() const {
  std::lock_guard lock(mu_);
  std::map<std::string, Totals> out;
  for (const auto& [name, app] : apps_) {
    const auto& counters = app.counters;  // clang 14 cannot capture a structured binding
    auto total = [&](const char* field) {
      auto it = counters.find(field);
      return it == counters.end() ? 0.0 : it->second.total;
    };
    Totals& t = out[name];
    t.reads_replica = total(rw::kReadsReplica);
    t.reads_all = t.reads_replica + total(rw::kReadsMaster);
    t.degrade_attempts = total(rw::kDegradeAttempts);
    t.degrade_successes = total(rw::kDegradeSuccesses);
  }
  return out;
}

}  // namespace lagwatch
