#include "exporters/metrics.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "exporters/exposition.h"

namespace lagwatch {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

static_assert(std::size(kProbeErrorReasons) > std::size(kErrorReasons));
constexpr bool ProbeErrorReasonsStartWithErrorReasons() {
  for (size_t i = 0; i < std::size(kErrorReasons); ++i) {
    if (std::string_view(kProbeErrorReasons[i]) != kErrorReasons[i]) return false;
  }
  return std::string_view(kProbeErrorReasons[std::size(kProbeErrorReasons) - 1]) == "unknown";
}
static_assert(ProbeErrorReasonsStartWithErrorReasons());

// A per-replica family. prometheus-cpp adds no suffix: counter names already end in `_total`.
struct FamilyInfo {
  std::string_view name;
  std::string_view type;
  std::string_view help;
};

// The per-replica families (README's metrics table), in the order a scrape writes them.
constexpr FamilyInfo kLagUpper = {
    "lagwatch_replica_lag_upper_seconds", "gauge",
    "Upper bound of the replica's staleness at the last probe: its data is at most this old "
    "(published as delay_ms)."};
constexpr FamilyInfo kLagLower = {"lagwatch_replica_lag_lower_seconds", "gauge",
                                  "Lower bound of the replica's staleness at the last probe."};
constexpr FamilyInfo kLagHistogram = {
    "lagwatch_replica_lag_seconds", "histogram",
    "Distribution of the published upper bound, one observation per probe."};
constexpr FamilyInfo kState = {"lagwatch_replica_state", "gauge",
                               "1 for the replica's current state, 0 for the others."};
constexpr FamilyInfo kHealthy = {"lagwatch_replica_healthy", "gauge",
                                 "1 if routers may read from the replica (DESIGN.md 3.5), else 0."};
constexpr FamilyInfo kIoRunning = {"lagwatch_replica_io_thread_running", "gauge",
                                   "1 if Slave_IO_Running is Yes at the last status poll."};
constexpr FamilyInfo kSqlRunning = {"lagwatch_replica_sql_thread_running", "gauge",
                                    "1 if Slave_SQL_Running is Yes at the last status poll."};
constexpr FamilyInfo kSecondsBehindMaster = {
    "lagwatch_replica_seconds_behind_master", "gauge",
    "Seconds_Behind_Master as the server reports it (NaN when NULL), for comparison."};
constexpr FamilyInfo kRelayLogSpace = {"lagwatch_replica_relay_log_space_bytes", "gauge",
                                       "Relay_Log_Space at the last status poll."};
constexpr FamilyInfo kLagWindow = {
    "lagwatch_replica_lag_window_seconds", "gauge",
    "Percentile (50, 95, 99) of the published upper bound over the last 1m or 5m (nearest rank "
    "over every measured probe), computed by the agent."};
constexpr FamilyInfo kSlarWindow = {
    "lagwatch_replica_slar_ratio", "gauge",
    "SLAR over the last 1m or 5m: probes with delay_ms <= slo.delay_ms / all probes (failed "
    "probes count as outside)."};
constexpr FamilyInfo kProbes = {"lagwatch_probes_total", "counter",
                                "Probes attempted, successful or not."};
constexpr FamilyInfo kProbesWithinSlo = {
    "lagwatch_probes_within_slo_total", "counter",
    "Successful probes whose upper bound was within slo.delay_ms (SLAR numerator)."};
constexpr FamilyInfo kProbeErrors = {"lagwatch_probe_errors_total", "counter",
                                     "Failed probes and status polls, by reason."};
constexpr FamilyInfo kProbeDuration = {"lagwatch_probe_duration_seconds", "histogram",
                                       "Round trip of the heartbeat/position probe."};
constexpr FamilyInfo kProbeStartDelay = {
    "lagwatch_probe_start_delay_seconds", "histogram",
    "How late a probe started after its planned moment (the tick, or when the bound would cross "
    "a tier limit): scheduling jitter."};
constexpr FamilyInfo kStatusPolls = {"lagwatch_status_polls_total", "counter",
                                     "SHOW SLAVE STATUS polls that succeeded."};

// Writes the per-replica families' text, every series as prometheus-cpp's registry and
// SerializeText wrote it: labels sorted by name, a histogram's `le` last.
class ReplicaTextWriter {
 public:
  ReplicaTextWriter(std::string& out, const std::vector<const ReplicaMetrics*>& replicas)
      : out_(out), replicas_(replicas) {}

  // A gauge or counter family with one series per replica.
  template <typename Series>
  void Scalars(const FamilyInfo& f, const Series ReplicaMetrics::*series) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    for (const ReplicaMetrics* m : replicas_) {
      Open(f.name);
      out_.append(m->labels);
      Close((m->*series).Value());
    }
  }

  void States(const FamilyInfo& f) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    for (const ReplicaMetrics* m : replicas_) {
      const std::string_view labels = m->labels;
      const int current = m->state.Get();
      for (int i = 0; i < static_cast<int>(std::size(kReplicaStates)); ++i) {
        Open(f.name);
        out_.append(labels.substr(0, m->tier_at));
        out_.append(",state=\"");
        out_.append(kReplicaStates[i]);
        out_.push_back('"');
        out_.append(labels.substr(m->tier_at));
        Close(i == current ? 1.0 : 0.0);
      }
    }
  }

  void LagWindows(const FamilyInfo& f) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    for (const ReplicaMetrics* m : replicas_) {
      for (size_t w = 0; w < std::size(kWindowNames); ++w) {
        for (size_t q = 0; q < std::size(kWindowPercentiles); ++q) {
          Open(f.name);
          out_.append("percentile=\"");
          out_.append(kWindowPercentiles[q]);
          out_.append("\",");
          out_.append(m->labels);
          AppendWindow(w);
          Close(m->lag_window_seconds[w][q].Value());
        }
      }
    }
  }

  void SlarWindows(const FamilyInfo& f) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    for (const ReplicaMetrics* m : replicas_) {
      for (size_t w = 0; w < std::size(kWindowNames); ++w) {
        Open(f.name);
        out_.append(m->labels);
        AppendWindow(w);
        Close(m->slar_ratio[w].Value());
      }
    }
  }

  // kErrorReasons always; the other reasons once they have counted an error.
  void ProbeErrors(const FamilyInfo& f) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    for (const ReplicaMetrics* m : replicas_) {
      for (size_t i = 0; i < std::size(kProbeErrorReasons); ++i) {
        const double v = m->probe_errors[i].Value();
        if (i >= std::size(kErrorReasons) && v == 0) continue;
        Open(f.name);
        out_.append("reason=\"");
        out_.append(kProbeErrorReasons[i]);
        out_.append("\",");
        out_.append(m->labels);
        Close(v);
      }
    }
  }

  // `_count`, `_sum`, then one `_bucket` per bound and +Inf, with cumulative counts.
  template <typename Histogram>
  void Histograms(const FamilyInfo& f, const Histogram ReplicaMetrics::*histogram) {
    AppendFamilyHeader(out_, f.name, f.help, f.type);
    std::string le[Histogram::kBuckets];
    for (size_t i = 0; i + 1 < Histogram::kBuckets; ++i) {
      AppendSampleValue(le[i], Histogram::bounds()[i]);
    }
    le[Histogram::kBuckets - 1] = "+Inf";
    for (const ReplicaMetrics* m : replicas_) {
      const Histogram& h = m->*histogram;
      const auto counts = h.CumulativeCounts();
      Open(f.name, "_count");
      out_.append(m->labels);
      Close(counts.back());
      Open(f.name, "_sum");
      out_.append(m->labels);
      Close(h.Sum());
      for (size_t i = 0; i < Histogram::kBuckets; ++i) {
        Open(f.name, "_bucket");
        out_.append(m->labels);
        out_.append(",le=\"");
        out_.append(le[i]);
        out_.push_back('"');
        Close(counts[i]);
      }
    }
  }

 private:
  // `<name><suffix>{`
  void Open(std::string_view name, std::string_view suffix = {}) {
    out_.append(name);
    out_.append(suffix);
    out_.push_back('{');
  }

  // `} <value>` and the line's end.
  template <typename Value>
  void Close(Value v) {
    out_.append("} ");
    AppendSampleValue(out_, v);
    out_.push_back('\n');
  }

  void AppendWindow(size_t w) {
    out_.append(",window=\"");
    out_.append(kWindowNames[w]);
    out_.push_back('"');
  }

  std::string& out_;
  const std::vector<const ReplicaMetrics*>& replicas_;
};

// Lines per replica (with every probe error reason) and an upper bound of a line's length
// besides the replica's labels: name and suffix, the family's own label, value and punctuation.
constexpr size_t kLinesPerReplica =
    10 + std::size(kReplicaStates) + std::size(kWindowNames) * (std::size(kWindowPercentiles) + 1) +
    std::size(kProbeErrorReasons) + 3 * 2 + ReplicaHistogram<kLagBucketsSeconds>::kBuckets +
    ReplicaHistogram<kLatencyBucketsSeconds>::kBuckets +
    ReplicaHistogram<kJitterBucketsSeconds>::kBuckets;
constexpr size_t kLineMax = 48 + 32 + 24 + 8;

// `name="value"` with the value escaped.
void AppendLabel(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append("=\"");
  AppendLabelValue(out, value);
  out.push_back('"');
}

std::string RenderLabels(std::string_view replica, std::string_view tier) {
  std::string labels;
  AppendLabel(labels, "replica", replica);
  labels.push_back(',');
  AppendLabel(labels, "tier", tier);
  return labels;
}

}  // namespace

ReplicaMetrics::ReplicaMetrics(std::string_view replica, std::string_view tier)
    // An escaped value has no bare `"`, so the last `,tier="` is the one before the tier label.
    : labels(RenderLabels(replica, tier)), tier_at(labels.rfind(",tier=\"")) {
  seconds_behind_master.Set(std::nan(""));
  for (size_t w = 0; w < std::size(kWindowNames); ++w) {
    slar_ratio[w].Set(std::nan(""));
    for (auto& g : lag_window_seconds[w]) g.Set(std::nan(""));
  }
}

void ReplicaMetrics::SetState(std::string_view state) {
  int current = ReplicaEnumGauge::kNone;
  for (size_t i = 0; i < std::size(kReplicaStates); ++i) {
    if (state == kReplicaStates[i]) current = static_cast<int>(i);
  }
  this->state.Set(current);
}

ReplicaCounter& ReplicaMetrics::ProbeError(std::string_view reason) {
  for (size_t i = 0; i + 1 < std::size(kProbeErrorReasons); ++i) {
    if (reason == kProbeErrorReasons[i]) return probe_errors[i];
  }
  return probe_errors[std::size(kProbeErrorReasons) - 1];
}

Metrics::Metrics(const std::string& version)
    : registry_(std::make_shared<prometheus::Registry>()),
      build_info(BuildGauge()
                     .Name("lagwatch_build_info")
                     .Help("Always 1; the version label says which lagwatch is running.")
                     .Register(*registry_)),
      start_time_seconds(BuildGauge()
                             .Name("lagwatch_start_time_seconds")
                             .Help("Unix time the agent started.")
                             .Register(*registry_)
                             .Add({})),
      heartbeat_writes(BuildCounter()
                           .Name("lagwatch_heartbeat_writes_total")
                           .Help("Heartbeat writes acknowledged by the primary.")
                           .Register(*registry_)
                           .Add({})),
      heartbeat_errors(BuildCounter()
                           .Name("lagwatch_heartbeat_errors_total")
                           .Help("Heartbeat writes that failed or timed out, by reason.")
                           .Register(*registry_)),
      heartbeat_age_seconds(BuildGauge()
                                .Name("lagwatch_heartbeat_age_seconds")
                                .Help("Seconds since the primary last acknowledged a heartbeat.")
                                .Register(*registry_)
                                .Add({})),
      heartbeat_last_seq(BuildGauge()
                             .Name("lagwatch_heartbeat_last_seq")
                             .Help("Sequence number of the last acknowledged heartbeat.")
                             .Register(*registry_)
                             .Add({})),
      primary_state(BuildGauge()
                        .Name("lagwatch_primary_circuit_state")
                        .Help("The primary's circuit breaker: 1 for the current state (up, "
                              "degraded, down), 0 for the others.")
                        .Register(*registry_)),
      primary_consecutive_failures(BuildGauge()
                                       .Name("lagwatch_primary_consecutive_failures")
                                       .Help("Heartbeat writes failed in a row.")
                                       .Register(*registry_)
                                       .Add({})),
      primary_read_only(BuildGauge()
                            .Name("lagwatch_primary_read_only")
                            .Help("1 while the primary is read-only and heartbeats are paused.")
                            .Register(*registry_)
                            .Add({})),
      primary_threads_connected(BuildGauge()
                                    .Name("lagwatch_primary_threads_connected")
                                    .Help("The primary's Threads_connected.")
                                    .Register(*registry_)
                                    .Add({})),
      primary_max_connections(BuildGauge()
                                  .Name("lagwatch_primary_max_connections")
                                  .Help("The primary's max_connections.")
                                  .Register(*registry_)
                                  .Add({})),
      primary_bp_read_requests(
          BuildCounter()
              .Name("lagwatch_primary_innodb_buffer_pool_read_requests_total")
              .Help("The primary's Innodb_buffer_pool_read_requests (logical reads).")
              .Register(*registry_)
              .Add({})),
      primary_bp_reads(BuildCounter()
                           .Name("lagwatch_primary_innodb_buffer_pool_reads_total")
                           .Help("The primary's Innodb_buffer_pool_reads (reads that missed the "
                                 "buffer pool and went to disk).")
                           .Register(*registry_)
                           .Add({})),
      sampler_samples(BuildCounter()
                          .Name("lagwatch_sampler_samples_total")
                          .Help("Primary GTID position samples taken.")
                          .Register(*registry_)
                          .Add({})),
      sampler_errors(BuildCounter()
                         .Name("lagwatch_sampler_errors_total")
                         .Help("Primary GTID position samples that failed, by reason.")
                         .Register(*registry_)),
      redis_publishes(BuildCounter()
                          .Name("lagwatch_redis_publishes_total")
                          .Help("Replica records written to Redis.")
                          .Register(*registry_)
                          .Add({})),
      redis_errors(BuildCounter()
                       .Name("lagwatch_redis_errors_total")
                       .Help("Redis connection or command failures, by reason.")
                       .Register(*registry_)),
      redis_publish_duration_seconds(
          BuildHistogram()
              .Name("lagwatch_redis_publish_duration_seconds")
              .Help("Time to write one batch of records to Redis.")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries(kLatencyBucketsSeconds.begin(),
                                                               kLatencyBucketsSeconds.end()))),
      redis_connected(BuildGauge()
                          .Name("lagwatch_redis_connected")
                          .Help("1 while the publisher holds a working Redis connection.")
                          .Register(*registry_)
                          .Add({})),
      events_published(BuildCounter()
                           .Name("lagwatch_events_published_total")
                           .Help("Health/state change events published on the events channel.")
                           .Register(*registry_)
                           .Add({})),
      config_reloads(BuildCounter()
                         .Name("lagwatch_config_reloads_total")
                         .Help("Configuration reloads (SIGHUP), by result.")
                         .Register(*registry_)),
      router_rwsr(BuildGauge()
                      .Name("lagwatch_router_rwsr_ratio")
                      .Help("Read/write split ratio from router feedback over the window: replica "
                            "reads / all reads (NaN without reads in the window).")
                      .Register(*registry_)),
      router_dsr(BuildGauge()
                     .Name("lagwatch_router_dsr_ratio")
                     .Help("Degradation success ratio from router feedback over the window: "
                           "successes / attempts (NaN without attempts in the window).")
                     .Register(*registry_)) {
  build_info.Add({{"version", version}}).Set(1);
  start_time_seconds.Set(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  redis_connected.Set(0);
  for (const char* reason : kErrorReasons) {
    heartbeat_errors.Add({{"reason", reason}});
    sampler_errors.Add({{"reason", reason}});
  }
  for (const char* reason : kRedisErrorReasons) redis_errors.Add({{"reason", reason}});
  config_reloads.Add({{"result", "success"}});
  config_reloads.Add({{"result", "failure"}});
  for (const char* state : kPrimaryStates) {
    primary_state.Add({{"state", state}}).Set(std::string(state) == "down" ? 1 : 0);
  }
}

ReplicaMetrics& Metrics::Replica(const std::string& replica, const std::string& tier) {
  std::lock_guard lock(mu_);
  auto& slot = replicas_[{replica, tier}];
  if (!slot) slot = std::make_unique<ReplicaMetrics>(replica, tier);
  return *slot;
}

void Metrics::RemoveReplica(const std::string& replica) {
  std::lock_guard lock(mu_);
  auto it = replicas_.lower_bound({replica, std::string()});
  while (it != replicas_.end() && it->first.first == replica) it = replicas_.erase(it);
}

std::string Metrics::TextExposition() const {
  std::string out = SerializeText(registry_->Collect());
  std::lock_guard lock(mu_);
  if (replicas_.empty()) return out;
  std::vector<const ReplicaMetrics*> replicas;
  replicas.reserve(replicas_.size());
  size_t size = out.size();
  for (const auto& [key, m] : replicas_) {
    replicas.push_back(m.get());
    size += kLinesPerReplica * (kLineMax + m->labels.size());
  }
  out.reserve(size);

  ReplicaTextWriter w(out, replicas);
  w.Scalars(kLagUpper, &ReplicaMetrics::lag_upper_seconds);
  w.Scalars(kLagLower, &ReplicaMetrics::lag_lower_seconds);
  w.Histograms(kLagHistogram, &ReplicaMetrics::lag_seconds);
  w.States(kState);
  w.Scalars(kHealthy, &ReplicaMetrics::healthy);
  w.Scalars(kIoRunning, &ReplicaMetrics::io_thread_running);
  w.Scalars(kSqlRunning, &ReplicaMetrics::sql_thread_running);
  w.Scalars(kSecondsBehindMaster, &ReplicaMetrics::seconds_behind_master);
  w.Scalars(kRelayLogSpace, &ReplicaMetrics::relay_log_space_bytes);
  w.LagWindows(kLagWindow);
  w.SlarWindows(kSlarWindow);
  w.Scalars(kProbes, &ReplicaMetrics::probes);
  w.Scalars(kProbesWithinSlo, &ReplicaMetrics::probes_within_slo);
  w.ProbeErrors(kProbeErrors);
  w.Histograms(kProbeDuration, &ReplicaMetrics::probe_duration_seconds);
  w.Histograms(kProbeStartDelay, &ReplicaMetrics::probe_start_delay_seconds);
  w.Scalars(kStatusPolls, &ReplicaMetrics::status_polls);
  return out;
}

}  // namespace lagwatch
