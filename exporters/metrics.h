// Every Prometheus metric lagwatch exports (DESIGN.md §5), declared in one place with its help
// text. Base units, `lagwatch_` namespace, `replica="host:port"` and `tier` labels.
//
// Thread-safe: prometheus-cpp metrics are updated atomically and a scrape (Collect) never blocks a
// prober for longer than a family's internal lock.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace lagwatch {

// The replica states of DESIGN.md §4, in the order of the enum gauge's series.
inline constexpr const char* kReplicaStates[] = {"ok",          "lagging",         "stopped",
                                                 "unreachable", "primary_unknown", "disabled"};

// The rolling windows the agent keeps per replica (and for router ratios), with their labels.
inline constexpr const char* kWindowNames[] = {"1m", "5m"};
inline constexpr int64_t kWindowSpansMs[] = {60'000, 300'000};
// Percentile label values ("quantile" is reserved for summaries).
inline constexpr const char* kWindowPercentiles[] = {"50", "95", "99"};

// Every reason label Status::reason() can produce for a failed call (pre-created at zero so the
// series exist before the first error).
inline constexpr const char* kErrorReasons[] = {"timeout", "unavailable", "server_error",
                                                "bad_data", "invalid"};
// Redis publisher failure reasons.
inline constexpr const char* kRedisErrorReasons[] = {"connect", "io", "command"};

// The primary's circuit states (DESIGN.md §4), in the order of the enum gauge's series.
inline constexpr const char* kPrimaryStates[] = {"up", "degraded", "down"};

// Handles to one replica's series; created once per replica, valid as long as the Metrics.
struct ReplicaMetrics {
  prometheus::Gauge* lag_upper_seconds;
  prometheus::Gauge* lag_lower_seconds;
  prometheus::Gauge* healthy;
  prometheus::Gauge* io_thread_running;
  prometheus::Gauge* sql_thread_running;
  prometheus::Gauge* seconds_behind_master;
  prometheus::Gauge* relay_log_space_bytes;
  prometheus::Gauge* state[std::size(kReplicaStates)];
  prometheus::Histogram* lag_seconds;
  // Rolling windows [0] = 1m, [1] = 5m: lag quantiles p50, p95, p99 and SLAR.
  prometheus::Gauge* lag_window_seconds[2][3];
  prometheus::Gauge* slar_ratio[2];
  prometheus::Histogram* probe_duration_seconds;
  // How late each probe started against its plan (the tick or the tier-crossing moment).
  prometheus::Histogram* probe_start_delay_seconds;
  prometheus::Counter* probes;
  prometheus::Counter* probes_within_slo;
  prometheus::Counter* status_polls;

  void SetState(const std::string& state);
  // Counter of probe errors for `reason` (Status::reason()).
  prometheus::Counter& ProbeError(const std::string& reason);

  prometheus::Family<prometheus::Counter>* probe_errors_family;
  std::map<std::string, std::string> labels;
};

class Metrics {
  // Declared first: the public references below are initialised from it.
  std::shared_ptr<prometheus::Registry> registry_;

 public:
  explicit Metrics(const std::string& version);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // The handles for `replica` ("host:port") in `tier`; creates its series on first use.
  ReplicaMetrics& Replica(const std::string& replica, const std::string& tier);
  // Removes every series of `replica` (when configuration no longer lists it, or its tier
  // label changes). Handles from Replica() for it become invalid.
  void RemoveReplica(const std::string& replica);

  // Agent-wide series.
  prometheus::Family<prometheus::Gauge>& build_info;  // label version
  prometheus::Gauge& start_time_seconds;
  prometheus::Counter& heartbeat_writes;
  prometheus::Family<prometheus::Counter>& heartbeat_errors;  // label reason
  prometheus::Gauge& heartbeat_age_seconds;
  prometheus::Gauge& heartbeat_last_seq;
  prometheus::Family<prometheus::Gauge>& primary_state;  // label state: 1 for the current one
  prometheus::Gauge& primary_consecutive_failures;
  prometheus::Gauge& primary_read_only;
  // The primary's own load, read by the sampler every 5 s.
  prometheus::Gauge& primary_threads_connected;
  prometheus::Gauge& primary_max_connections;
  prometheus::Counter& primary_bp_read_requests;
  prometheus::Counter& primary_bp_reads;
  prometheus::Counter& sampler_samples;
  prometheus::Family<prometheus::Counter>& sampler_errors;  // label reason
  prometheus::Counter& redis_publishes;
  prometheus::Family<prometheus::Counter>& redis_errors;  // label reason
  prometheus::Histogram& redis_publish_duration_seconds;
  prometheus::Gauge& redis_connected;
  prometheus::Counter& events_published;
  prometheus::Family<prometheus::Counter>& config_reloads;  // label result: success, failure
  // Router golden ratios over the agent's rolling windows; labels app, window.
  prometheus::Family<prometheus::Gauge>& router_rwsr;
  prometheus::Family<prometheus::Gauge>& router_dsr;

 private:
  prometheus::Family<prometheus::Gauge>& lag_upper_;
  prometheus::Family<prometheus::Gauge>& lag_lower_;
  prometheus::Family<prometheus::Gauge>& healthy_;
  prometheus::Family<prometheus::Gauge>& io_running_;
  prometheus::Family<prometheus::Gauge>& sql_running_;
  prometheus::Family<prometheus::Gauge>& sbm_;
  prometheus::Family<prometheus::Gauge>& relay_space_;
  prometheus::Family<prometheus::Gauge>& state_;
  prometheus::Family<prometheus::Histogram>& lag_hist_;
  prometheus::Family<prometheus::Gauge>& lag_window_;
  prometheus::Family<prometheus::Gauge>& slar_window_;
  prometheus::Family<prometheus::Histogram>& probe_duration_;
  prometheus::Family<prometheus::Histogram>& probe_start_delay_;
  prometheus::Family<prometheus::Counter>& probes_;
  prometheus::Family<prometheus::Counter>& probes_within_slo_;
  prometheus::Family<prometheus::Counter>& status_polls_;
  prometheus::Family<prometheus::Counter>& probe_errors_;

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ReplicaMetrics>> replicas_;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
