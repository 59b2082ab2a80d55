#include "exporters/metrics.h"

#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "base/net_stream.h"
#include "base/stream_reason.h"
#include "base/strings.h"
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

// Registers the family `name` with its `help` on `r`, built by `builder` (BuildCounter, ...).
template <typename Builder>
auto& Register(Builder builder, prometheus::Registry& r, const char* name, const char* help) {
  return builder.Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Counter>& Counters(prometheus::Registry& r, const char* name,
                                                  const char* help) {
  return Register(BuildCounter(), r, name, help);
}
prometheus::Family<prometheus::Gauge>& Gauges(prometheus::Registry& r, const char* name,
                                              const char* help) {
  return Register(BuildGauge(), r, name, help);
}
prometheus::Family<prometheus::Histogram>& Histograms(prometheus::Registry& r, const char* name,
                                                      const char* help) {
  return Register(BuildHistogram(), r, name, help);
}

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
constexpr FamilyInfo kHealthy = {
    "lagwatch_replica_healthy", "gauge",
    "1 if routers may read from the replica (docs/measurement.md, Health), else 0."};
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
// MySQL 8.0+ only, and only for replicas whose applier signals were read once.
constexpr FamilyInfo kApplierWorkers = {
    "lagwatch_mysql_applier_workers", "gauge",
    "MySQL 8.0+: applier threads of the channel judged (rows of "
    "performance_schema.replication_applier_status_by_worker; 1 when single-threaded). "
    "Diagnostic only, never part of the bound."};
constexpr FamilyInfo kApplierApplying = {
    "lagwatch_mysql_applier_workers_applying", "gauge",
    "MySQL 8.0+: applier threads of the channel judged applying a transaction "
    "(APPLYING_TRANSACTION not empty); the others are idle. Diagnostic only."};
constexpr FamilyInfo kApplierOldestAge = {
    "lagwatch_mysql_applier_oldest_applying_age_seconds", "gauge",
    "MySQL 8.0+: the replica's NOW(6) minus APPLYING_TRANSACTION_START_APPLY_TIMESTAMP of the "
    "transaction applying longest, both on the replica's clock (0 while none applies, NaN when "
    "the start is unknown). Diagnostic only, never compared with lagwatch's clock."};

// Writes the per-replica families' text, every series as prometheus-cpp's registry and
// SerializeText wrote it: labels sorted by name, a histogram's `le` last.
// Every line opens with `cluster_label` (`cluster="…",`, or ""): first, so the labels stay in
// name order for every family (`cluster` sorts before all of theirs).
class ReplicaTextWriter {
 public:
  ReplicaTextWriter(std::string& out, const std::vector<const ReplicaMetrics*>& replicas,
                    std::string_view cluster_label)
      : out_(out), replicas_(replicas), cluster_label_(cluster_label) {}

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

  // A gauge family with a series for each replica whose applier signals were shown; left out
  // while there is none.
  void ApplierScalars(const FamilyInfo& f, const ReplicaGauge ReplicaMetrics::*series) {
    bool header = false;
    for (const ReplicaMetrics* m : replicas_) {
      if (!m->applier_shown()) continue;
      if (!std::exchange(header, true)) AppendFamilyHeader(out_, f.name, f.help, f.type);
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
  // `<name><suffix>{` and the cluster's label.
  void Open(std::string_view name, std::string_view suffix = {}) {
    out_.append(name);
    out_.append(suffix);
    out_.push_back('{');
    out_.append(cluster_label_);
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
  const std::string_view cluster_label_;
};

// Lines per replica (with every probe error reason) and an upper bound of a line's length
// besides the replica's labels: name and suffix, the family's own label, value and punctuation.
constexpr size_t kLinesPerReplica =
    13 + std::size(kReplicaStates) + std::size(kWindowNames) * (std::size(kWindowPercentiles) + 1) +
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

// `cluster="…",` for the start of a per-replica line, or "" without a cluster.
std::string RenderClusterLabel(std::string_view cluster) {
  if (cluster.empty()) return "";
  std::string label;
  AppendLabel(label, "cluster", cluster);
  label.push_back(',');
  return label;
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

void ReplicaMetrics::ShowApplier(double workers, double applying,
                                 double oldest_applying_age_seconds) {
  applier_workers.Set(workers);
  applier_workers_applying.Set(applying);
  applier_oldest_applying_age_seconds.Set(oldest_applying_age_seconds);
  // After the values: a scrape that sees the series shown sees them set.
  applier_shown_.store(true, std::memory_order_release);
}

RouterFeedbackMetrics::RouterFeedbackMetrics(prometheus::Registry& r)
    : reads(Counters(r, "lagwatch_router_reads_total",
                     "Reads routers sent to a replica or to the master, by app (RWSR = "
                     "target=\"replica\" / all), from rw_stats:<app>.")),
      replica_reads(Counters(r, "lagwatch_router_replica_reads_total",
                             "Reads routers sent to each replica, by app.")),
      degrade_attempts(Counters(
          r, "lagwatch_router_degrade_attempts_total",
          "Times routers tried to fall back from a stale replica, by app (DSR denominator).")),
      degrade_successes(
          Counters(r, "lagwatch_router_degrade_successes_total",
                   "Fallbacks from a stale replica that succeeded, by app (DSR numerator).")),
      errors(Counters(r, "lagwatch_router_feedback_errors_total",
                      "Problems met while reading rw_stats:* hashes, by reason; data problems are "
                      "counted on every poll that still sees them.")),
      polls(Counters(r, "lagwatch_router_feedback_polls_total",
                     "Polls of the rw_stats:* hashes that completed.")
                .Add({})) {
  for (const char* reason : kRouterFeedbackErrorReasons) errors.Add({{"reason", reason}});
}

HttpAuthMetrics::HttpAuthMetrics(prometheus::Registry& r)
    : failures(Counters(r, "lagwatch_http_auth_failures_total",
                        "HTTP requests refused with 401, by reason: missing, malformed or "
                        "bad_credentials (unknown user or wrong password)")),
      missing(failures.Add({{"reason", "missing"}})),
      malformed(failures.Add({{"reason", "malformed"}})),
      bad_credentials(failures.Add({{"reason", "bad_credentials"}})) {}

HaproxyMetrics::HaproxyMetrics(prometheus::Registry& r)
    : up(Gauges(r, "lagwatch_haproxy_up",
                "1 while the last exchange with the HAProxy instance's runtime API succeeded.")),
      commands(Counters(r, "lagwatch_haproxy_commands_total",
                        "Server state and weight commands sent to the HAProxy instance.")),
      errors(Counters(r, "lagwatch_haproxy_errors_total",
                      "Failed exchanges with the HAProxy instance's runtime API, by reason.")),
      corrections(Counters(r, "lagwatch_haproxy_corrections_total",
                           "Servers found unlike lagwatch's verdict at a resync and set again (a "
                           "restart, a reload, a change by hand).")),
      restarts(Counters(r, "lagwatch_haproxy_restarts_total",
                        "Restarts and reloads of the HAProxy instance seen (a new Pid).")),
      last_sync_seconds(Gauges(r, "lagwatch_haproxy_last_sync_timestamp_seconds",
                               "Unix time of the last resync that succeeded.")),
      push_seconds(Histograms(r, "lagwatch_haproxy_push_seconds",
                              "From a verdict change to the HAProxy instance acknowledging its "
                              "commands.")),
      checks(
          Counters(r, "lagwatch_haproxy_checks_total",
                   "HAProxy checks answered by lagwatch, by protocol (agent, http) and answer.")) {}

prometheus::Counter& HaproxyMetrics::Check(const char* protocol, const char* answer) {
  return checks.Add({{"protocol", protocol}, {"answer", answer}});
}

Metrics::Metrics(const std::string& version, std::string_view cluster, const Clock& clock)
    : registry_(std::make_shared<prometheus::Registry>()),
      cluster_(cluster),
      cluster_label_(RenderClusterLabel(cluster)),
      build_info(Gauges(*registry_, "lagwatch_build_info",
                        "Always 1; the version label says which lagwatch is running.")),
      start_time_seconds(
          Gauges(*registry_, "lagwatch_start_time_seconds", "Unix time the agent started.")
              .Add({})),
      heartbeat_writes(Counters(*registry_, "lagwatch_heartbeat_writes_total",
                                "Heartbeat writes acknowledged by the primary.")
                           .Add({})),
      heartbeat_errors(Counters(*registry_, "lagwatch_heartbeat_errors_total",
                                "Heartbeat writes that failed or timed out, by reason.")),
      heartbeat_age_seconds(Gauges(*registry_, "lagwatch_heartbeat_age_seconds",
                                   "Seconds since the primary last acknowledged a heartbeat.")
                                .Add({})),
      heartbeat_last_seq(Gauges(*registry_, "lagwatch_heartbeat_last_seq",
                                "Sequence number of the last acknowledged heartbeat.")
                             .Add({})),
      primary_state(Gauges(*registry_, "lagwatch_primary_circuit_state",
                           "The primary's circuit breaker: 1 for the current state (up, degraded, "
                           "down), 0 for the others.")),
      primary_consecutive_failures(Gauges(*registry_, "lagwatch_primary_consecutive_failures",
                                          "Heartbeat writes failed in a row.")
                                       .Add({})),
      primary_read_only(Gauges(*registry_, "lagwatch_primary_read_only",
                               "1 while the primary is read-only and heartbeats are paused.")
                            .Add({})),
      primary_info(Gauges(*registry_, "lagwatch_primary_info",
                          "1 for the server lagwatch takes for the primary (label primary).")),
      primary_changes(Counters(*registry_, "lagwatch_primary_changes_total",
                               "Times the primary moved to another server (a switchover or a "
                               "failover followed).")
                          .Add({})),
      topology_state(Gauges(*registry_, "lagwatch_topology_state",
                            "1 for the topology's state: ok (one writable server, the primary), "
                            "unknown (none), ambiguous (two or more).")),
      source_doubts(Counters(*registry_, "lagwatch_source_doubts_total",
                             "Times a replica's source went into doubt (outside the configuration, "
                             "not leading to the primary, unmatched, or none): unverified until "
                             "it replicates from the primary again.")),
      discovered_replicas(Gauges(*registry_, "lagwatch_discovery_found",
                                 "Replicas probed because the primary lists them (discovery).")
                              .Add({})),
      discovery_errors(Counters(*registry_, "lagwatch_discovery_errors_total",
                                "Failed listings of the primary's replicas (reason privilege or "
                                "query) and listed rows skipped (reason row).")),
      primary_threads_connected(Gauges(*registry_, "lagwatch_primary_threads_connected",
                                       "The primary's Threads_connected.")
                                    .Add({})),
      primary_max_connections(
          Gauges(*registry_, "lagwatch_primary_max_connections", "The primary's max_connections.")
              .Add({})),
      primary_bp_read_requests(
          Counters(*registry_, "lagwatch_primary_innodb_buffer_pool_read_requests_total",
                   "The primary's Innodb_buffer_pool_read_requests (logical reads).")
              .Add({})),
      primary_bp_reads(Counters(*registry_, "lagwatch_primary_innodb_buffer_pool_reads_total",
                                "The primary's Innodb_buffer_pool_reads (reads that missed the "
                                "buffer pool and went to disk).")
                           .Add({})),
      sampler_samples(Counters(*registry_, "lagwatch_sampler_samples_total",
                               "Primary GTID position samples taken.")
                          .Add({})),
      sampler_errors(Counters(*registry_, "lagwatch_sampler_errors_total",
                              "Primary GTID position samples that failed, by reason.")),
      stream_up(Gauges(*registry_, "lagwatch_binlog_stream_up",
                       "1 while the primary's binary log stream gives the bounds (usable), 0 while "
                       "position sampling alone does.")
                    .Add({})),
      stream_delivery_bound_seconds(
          Gauges(*registry_, "lagwatch_binlog_stream_delivery_bound_seconds",
                 "The stream's delivery bound D: its largest measured lag behind the position "
                 "samples over the last 10 s, at least binlog_stream.min_delivery_ms.")
              .Add({})),
      stream_starts(Counters(*registry_, "lagwatch_binlog_stream_starts_total",
                             "Binary log streams started on the primary.")
                        .Add({})),
      stream_errors(Counters(*registry_, "lagwatch_binlog_stream_errors_total",
                             "Binary log streams that failed or could not start, by reason.")),
      stream_fallbacks(Counters(*registry_, "lagwatch_binlog_stream_fallbacks_total",
                                "Times the stream stopped giving bounds (position sampling alone "
                                "then), by reason.")),
      stream_events(Counters(*registry_, "lagwatch_binlog_stream_events_total",
                             "Packets read from the binary log stream.")
                        .Add({})),
      stream_bytes(Counters(*registry_, "lagwatch_binlog_stream_bytes_total",
                            "Bytes read from the binary log stream.")
                       .Add({})),
      redis_publishes(Counters(*registry_, "lagwatch_redis_publishes_total",
                               "Replica records written to Redis.")
                          .Add({})),
      redis_errors(Counters(*registry_, "lagwatch_redis_errors_total",
                            "Redis connection or command failures, by reason.")),
      redis_publish_duration_seconds(
          Histograms(*registry_, "lagwatch_redis_publish_duration_seconds",
                     "Time to write one batch of records to Redis.")
              .Add({}, prometheus::Histogram::BucketBoundaries(kLatencyBucketsSeconds.begin(),
                                                               kLatencyBucketsSeconds.end()))),
      redis_record_delay_seconds(
          Histograms(*registry_, "lagwatch_redis_record_delay_seconds",
                     "Time from a replica's measurement to Redis acknowledging its record.")
              .Add({}, prometheus::Histogram::BucketBoundaries(kLatencyBucketsSeconds.begin(),
                                                               kLatencyBucketsSeconds.end()))),
      redis_connected(Gauges(*registry_, "lagwatch_redis_connected",
                             "1 while the publisher holds a working Redis connection.")
                          .Add({})),
      events_published(Counters(*registry_, "lagwatch_events_published_total",
                                "Health/state change events published on the events channel.")
                           .Add({})),
      crossing_verdicts(
          Counters(*registry_, "lagwatch_crossing_verdicts_total",
                   "Verdicts published when a replica's upper bound crossed a tier limit while "
                   "its probe was still unanswered.")
              .Add({})),
      write_watch_urges(
          Counters(*registry_, "lagwatch_write_watch_urges_total",
                   "Writes seen on a server that is not the primary (binlog_stream.watch_writes), "
                   "each of which made every server be probed at once.")
              .Add({})),
      write_watch_errors(Counters(*registry_, "lagwatch_write_watch_errors_total",
                                  "Streams watching the other servers for writes that failed or "
                                  "could not start, by reason.")),
      config_reloads(Counters(*registry_, "lagwatch_config_reloads_total",
                              "Configuration reloads (SIGHUP), by result.")),
      router_rwsr(Gauges(*registry_, "lagwatch_router_rwsr_ratio",
                         "Read/write split ratio from router feedback over the window: replica "
                         "reads / all reads (NaN without reads in the window).")),
      router_dsr(Gauges(*registry_, "lagwatch_router_dsr_ratio",
                        "Degradation success ratio from router feedback over the window: successes "
                        "/ attempts (NaN without attempts in the window).")),
      router_feedback(*registry_),
      http_auth(*registry_),
      server_info(Gauges(*registry_, "lagwatch_server_info",
                         "Always 1; the labels say which server (flavor, version) each primary "
                         "and replica is, and which positions lagwatch uses with it.")),
      tls_errors(Counters(*registry_, "lagwatch_tls_errors_total",
                          "Connections to MySQL or Redis that failed on TLS, by target and named "
                          "reason (unknown_ca, name_mismatch, expired, ...).")),
      tls_certificate_expiry(
          Gauges(*registry_, "lagwatch_tls_certificate_expiry_timestamp_seconds",
                 "When the certificate of each server reached over TLS expires (unix time).")),
      tls_certificate_soonest_expiry(
          Gauges(*registry_, "lagwatch_tls_certificate_soonest_expiry_timestamp_seconds",
                 "The soonest expiry of any certificate of a server reached over TLS (unix "
                 "time).")),
      haproxy(*registry_),
      applier_signal_errors(Counters(
          *registry_, "lagwatch_mysql_applier_signal_errors_total",
          "MySQL 8.0+ applier signals (performance_schema) a replica refused (denied: no SELECT; "
          "no_table: no such table or column; server_error) or answered unreadably (bad_data). "
          "A refusal stops the asking on that connection.")) {
  build_info.Add({{"version", version}}).Set(1);
  start_time_seconds.Set(std::chrono::duration<double>(clock.WallNow().time_since_epoch()).count());
  redis_connected.Set(0);
  for (const char* reason : kErrorReasons) {
    heartbeat_errors.Add({{"reason", reason}});
    sampler_errors.Add({{"reason", reason}});
  }
  for (const char* reason : kRedisErrorReasons) redis_errors.Add({{"reason", reason}});
  for (const char* reason : stream_error::kAll) stream_errors.Add({{"reason", reason}});
  for (const char* reason : stream_reason::kAll) stream_fallbacks.Add({{"reason", reason}});
  for (const char* target : kTlsTargets) {
    for (const char* reason : kTlsReasons) tls_errors.Add({{"target", target}, {"reason", reason}});
  }
  for (const char* reason : kApplierErrorReasons) applier_signal_errors.Add({{"reason", reason}});
  config_reloads.Add({{"result", "success"}});
  config_reloads.Add({{"result", "failure"}});
  for (const char* state : kPrimaryStates) {
    primary_state.Add({{"state", state}}).Set(std::string(state) == "down" ? 1 : 0);
  }
  for (const char* state : kTopologyStates) {
    topology_state.Add({{"state", state}}).Set(std::string(state) == "unknown" ? 1 : 0);
  }
}

ReplicaMetrics& Metrics::Replica(const std::string& replica, const std::string& tier) {
  std::lock_guard lock(mu_);
  auto& slot = replicas_[{replica, tier}];
  if (!slot) slot = std::make_unique<ReplicaMetrics>(replica, tier);
  return *slot;
}

void Metrics::CountTlsError(const char* target, const Status& st) {
  if (st.code() != Status::Code::kTls) return;
  tls_errors.Add({{"target", target}, {"reason", st.tls_reason()}}).Increment();
}

void Metrics::CountApplierError(std::string_view reason) {
  for (const char* known : kApplierErrorReasons) {
    if (reason == known) {
      applier_signal_errors.Add({{"reason", known}}).Increment();
      return;
    }
  }
  applier_signal_errors.Add({{"reason", "server_error"}}).Increment();
}

void Metrics::SetServerInfo(const std::string& server, const std::string& role,
                            const ServerFlavor& flavor, const std::string& positions) {
  std::string version = EscapeControl(flavor.version.substr(0, 64));
  std::lock_guard lock(server_info_mu_);
  auto& series = server_info_of_[server];
  if (series) server_info.Remove(series);
  series = &server_info.Add({{"server", server},
                             {"role", role},
                             {"flavor", KindName(flavor.kind)},
                             {"version", version},
                             {"positions", positions}});
  series->Set(1);
}

void Metrics::RemoveReplica(const std::string& replica) {
  {
    std::lock_guard lock(server_info_mu_);
    if (auto s = server_info_of_.find(replica); s != server_info_of_.end()) {
      server_info.Remove(s->second);
      server_info_of_.erase(s);
    }
  }
  std::lock_guard lock(mu_);
  auto it = replicas_.lower_bound({replica, std::string()});
  while (it != replicas_.end() && it->first.first == replica) it = replicas_.erase(it);
}

std::string Metrics::TextExposition() const {
  std::string out =
      SerializeText(registry_->Collect(),
                    cluster_.empty() ? prometheus::ClientMetric::Label{}
                                     : prometheus::ClientMetric::Label{"cluster", cluster_});
  std::lock_guard lock(mu_);
  if (replicas_.empty()) return out;
  std::vector<const ReplicaMetrics*> replicas;
  replicas.reserve(replicas_.size());
  size_t size = out.size();
  for (const auto& [key, m] : replicas_) {
    replicas.push_back(m.get());
    size += kLinesPerReplica * (kLineMax + cluster_label_.size() + m->labels.size());
  }
  out.reserve(size);

  ReplicaTextWriter w(out, replicas, cluster_label_);
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
  w.ApplierScalars(kApplierWorkers, &ReplicaMetrics::applier_workers);
  w.ApplierScalars(kApplierApplying, &ReplicaMetrics::applier_workers_applying);
  w.ApplierScalars(kApplierOldestAge, &ReplicaMetrics::applier_oldest_applying_age_seconds);
  return out;
}

}  // namespace lagwatch
