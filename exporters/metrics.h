// Every Prometheus metric lagwatch exports (docs/metrics.md), declared in one place with its help
// text. Base units, `lagwatch_` namespace, `replica="host:port"` and `tier` labels, and on every
// series the agent's `cluster` (added by TextExposition, not by each family).
//
// Agent-wide series are prometheus-cpp metrics in registry(). Per-replica series (~70 per replica)
// are lagwatch's own lock-free ReplicaMetrics, which a scrape (TextExposition) writes straight
// from their atomics: with 1,000 replicas prometheus-cpp's Collect cost tens of ms per scrape and
// ~15 KB per replica.
//
// Thread-safe: prometheus-cpp metrics and ReplicaMetrics are updated atomically; a scrape never
// blocks a prober's update.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "base/applier_status.h"
#include "base/clock.h"
#include "base/contract.h"
#include "base/server_flavor.h"
#include "base/status.h"
#include "exporters/replica_series.h"

namespace lagwatch {

// The replica states of docs/redis.md (base/contract.h), in the order of the enum gauge's
// series, and the topology's.
using contract::kReplicaStates;
using contract::kTopologyStates;

// The rolling windows the agent keeps per replica (and for router ratios), with their labels.
inline constexpr const char* kWindowNames[] = {"1m", "5m"};
inline constexpr int64_t kWindowSpansMs[] = {60'000, 300'000};
// Percentile label values ("quantile" is reserved for summaries).
inline constexpr const char* kWindowPercentiles[] = {"50", "95", "99"};

// The reason labels Status::reason() gives for the failures a call is expected to have
// (pre-created at zero so the series exist before the first error).
inline constexpr const char* kErrorReasons[] = {"timeout",  "unavailable", "server_error",
                                                "bad_data", "invalid",     "tls"};
// Redis publisher failure reasons ("tls": a connect that failed on TLS; the named reason is in
// lagwatch_tls_errors_total).
inline constexpr const char* kRedisErrorReasons[] = {"connect", "io", "command", "readonly", "tls"};
// The binary log stream's error and fallback reasons are in base/stream_reason.h.
// What a TLS connection reached: the target label of the TLS series.
inline constexpr const char* kTlsTargets[] = {"mysql", "redis"};

// The primary's circuit states (docs/redis.md), in the order of the enum gauge's series.
using contract::kPrimaryStates;

// Every reason label of lagwatch_probe_errors_total: first kErrorReasons, whose series exist from
// the start, then the other reasons Status::reason() can give (for statuses a probe should not
// fail with, and "bad_position": a replica position that was malformed, went backwards or could
// not be compared with the primary's), whose series appear at their first error. The last,
// "unknown", also counts any reason not listed, so the number of series per replica stays bounded.
inline constexpr const char* kProbeErrorReasons[] = {"timeout",      "unavailable", "server_error",
                                                     "bad_data",     "invalid",     "tls",
                                                     "bad_position", "cancelled",   "unknown"};

// Histogram bucket upper bounds, in seconds (+Inf is implicit).
// Sub-second resolution around the 200 ms SLO (docs/metrics.md).
inline constexpr auto kLagBucketsSeconds =
    std::to_array<double>({0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30});
// Round trips: probes and Redis publishes.
inline constexpr auto kLatencyBucketsSeconds = std::to_array<double>(
    {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1});
// Scheduling jitter: the target is p99 <= 10 ms (docs/benchmarks.md).
inline constexpr auto kJitterBucketsSeconds =
    std::to_array<double>({0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1});

// The reason labels of lagwatch_router_feedback_errors_total, every series created at 0.
inline constexpr const char* kRouterFeedbackErrorReasons[] = {
    "malformed", "unknown_field", "bad_app",           "wrong_type",      "redis",
    "reset",     "too_many_apps", "too_many_replicas", "too_many_fields", "scan_truncated"};

// The router feedback reader's series (exporters/router_feedback.h), registered by Metrics:
//   lagwatch_router_reads_total{app, target="replica"|"master"}
//   lagwatch_router_replica_reads_total{app, replica="host:port"}
//   lagwatch_router_degrade_attempts_total{app}
//   lagwatch_router_degrade_successes_total{app}
//   lagwatch_router_feedback_errors_total{reason}  (reasons: kRouterFeedbackErrorReasons)
//   lagwatch_router_feedback_polls_total
// Thread-safe (prometheus-cpp's families and counters are).
struct RouterFeedbackMetrics {
  // Registers the families on `registry`, which must outlive this, with every errors_total series
  // at 0. Throws what prometheus-cpp throws for a family of the same name but another type.
  explicit RouterFeedbackMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>& reads;              // labels app, target
  prometheus::Family<prometheus::Counter>& replica_reads;      // labels app, replica
  prometheus::Family<prometheus::Counter>& degrade_attempts;   // label app
  prometheus::Family<prometheus::Counter>& degrade_successes;  // label app
  prometheus::Family<prometheus::Counter>& errors;             // label reason
  prometheus::Counter& polls;
};

// The HTTP server's refusals (exporters/http_server.h), registered by Metrics:
// lagwatch_http_auth_failures_total{reason}, its three series created at 0 (also without auth).
// Thread-safe.
struct HttpAuthMetrics {
  // Registers the family on `registry`, which must outlive this.
  explicit HttpAuthMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>& failures;  // label reason
  prometheus::Counter& missing;                       // no Authorization header
  prometheus::Counter& malformed;                     // not Basic, or not base64 user:password
  prometheus::Counter& bad_credentials;               // unknown user or wrong password
};

// HAProxy (docs/operations.md, "HAProxy"), registered by Metrics; series appear with the
// instances (the pusher creates them) and the first checks. An instance is labelled `haproxy`
// (its name): `instance` is Prometheus's own target label.
//   lagwatch_haproxy_up{haproxy}                      1 while the last exchange succeeded
//   lagwatch_haproxy_commands_total{haproxy}          state and weight commands sent
//   lagwatch_haproxy_errors_total{haproxy, reason}    failed exchanges (kErrorReasons' tokens)
//   lagwatch_haproxy_corrections_total{haproxy}       servers set again at a resync
//   lagwatch_haproxy_restarts_total{haproxy}          restarts and reloads seen
//   lagwatch_haproxy_last_sync_timestamp_seconds{haproxy}
//   lagwatch_haproxy_push_seconds{haproxy}            verdict change to HAProxy's acknowledgement
//   lagwatch_haproxy_checks_total{protocol, answer}    pull checks answered
// Thread-safe.
struct HaproxyMetrics {
  // Registers the families on `registry`, which must outlive this.
  explicit HaproxyMetrics(prometheus::Registry& registry);

  prometheus::Family<prometheus::Gauge>& up;
  prometheus::Family<prometheus::Counter>& commands;
  prometheus::Family<prometheus::Counter>& errors;
  prometheus::Family<prometheus::Counter>& corrections;
  prometheus::Family<prometheus::Counter>& restarts;
  prometheus::Family<prometheus::Gauge>& last_sync_seconds;
  prometheus::Family<prometheus::Histogram>& push_seconds;
  prometheus::Family<prometheus::Counter>& checks;
  // The check counter of `protocol` ("agent" or "http") and `answer`: a verdict's name (up,
  // drain, down, maint) or unknown, malformed, timeout, busy.
  prometheus::Counter& Check(const char* protocol, const char* answer);
};

// One replica's series in one allocation, created by Metrics::Replica and valid until
// Metrics::RemoveReplica. Its prober updates them; a scrape reads them. Thread-safe (lock-free).
struct ReplicaMetrics {
  // Renders the labels once; every series starts at 0 except those documented as NaN until
  // measured (seconds_behind_master and the window gauges).
  ReplicaMetrics(std::string_view replica, std::string_view tier);
  ReplicaMetrics(const ReplicaMetrics&) = delete;
  ReplicaMetrics& operator=(const ReplicaMetrics&) = delete;

  ReplicaGauge lag_upper_seconds;
  ReplicaGauge lag_lower_seconds;
  ReplicaGauge healthy;
  ReplicaGauge io_thread_running;
  ReplicaGauge sql_thread_running;
  ReplicaGauge seconds_behind_master;
  ReplicaGauge relay_log_space_bytes;
  // Index into kReplicaStates; set through SetState.
  ReplicaEnumGauge state;
  ReplicaHistogram<kLagBucketsSeconds> lag_seconds;
  // Rolling windows [0] = 1m, [1] = 5m: lag quantiles p50, p95, p99 and SLAR.
  ReplicaGauge lag_window_seconds[2][3];
  ReplicaGauge slar_ratio[2];
  ReplicaHistogram<kLatencyBucketsSeconds> probe_duration_seconds;
  // How late each probe started against its plan (the tick or the tier-crossing moment).
  ReplicaHistogram<kJitterBucketsSeconds> probe_start_delay_seconds;
  ReplicaCounter probes;
  ReplicaCounter probes_within_slo;
  ReplicaCounter status_polls;
  // By kProbeErrorReasons; use ProbeError.
  ReplicaCounter probe_errors[std::size(kProbeErrorReasons)];
  // MySQL 8.0+'s applier signals of the channel judged (base/applier_status.h): worker threads,
  // those applying a transaction, and the replica's NOW(6) minus the oldest applying one's start
  // of apply (both on the replica's clock). Written to /metrics only for a replica whose signals
  // were read once (ShowApplier), and from then on never removed: NaN while unknown.
  ReplicaGauge applier_workers;
  ReplicaGauge applier_workers_applying;
  ReplicaGauge applier_oldest_applying_age_seconds;

  // Makes `state` (one of kReplicaStates) current: its series 1, the others 0. Any other string
  // sets all of them to 0.
  void SetState(std::string_view state);
  // The counter of probe errors for `reason` (Status::reason()); "unknown" for a reason not in
  // kProbeErrorReasons.
  ReplicaCounter& ProbeError(std::string_view reason);
  // Sets the applier gauges (NaN: unknown); the first call makes their series appear.
  void ShowApplier(double workers, double applying, double oldest_applying_age_seconds);
  // Whether ShowApplier was called: the applier series are in /metrics.
  bool applier_shown() const { return applier_shown_.load(std::memory_order_acquire); }

  // `replica="…",tier="…"` with the values escaped: the labels every series of the replica carries
  // besides the agent's `cluster` (written before them, first in every series), in prometheus-cpp's
  // order (by name). A family's own label goes before them (`percentile`, `reason`), after them
  // (`window`, `le`) or at tier_at (`state`).
  const std::string labels;
  const size_t tier_at;  // where `,tier=` starts in `labels`

 private:
  std::atomic<bool> applier_shown_{false};
};

class Metrics {
  // Declared first: the public references below are initialised from it.
  std::shared_ptr<prometheus::Registry> registry_;
  // Constant after construction.
  const std::string cluster_;
  const std::string cluster_label_;  // `cluster="<escaped>",`, or "" without a cluster

 public:
  // `cluster` is the `cluster` label of every series TextExposition writes (the agent's
  // Config::cluster), known from the start so that no series is ever written without it; ""
  // (tests) writes none. `clock` stamps lagwatch_start_time_seconds (its wall time now).
  Metrics(const std::string& version, std::string_view cluster,
          const Clock& clock = SystemClock::Get());
  explicit Metrics(const std::string& version, const Clock& clock = SystemClock::Get())
      : Metrics(version, "", clock) {}
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The agent-wide families; other components may register theirs here too. It holds none of
  // the per-replica families.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // The handles for `replica` ("host:port") in `tier`; creates its series on first use.
  ReplicaMetrics& Replica(const std::string& replica, const std::string& tier);
  // Removes every series of `replica`, in every tier (when configuration no longer lists it, or
  // its tier label changes): the next scrape no longer shows them. Handles from Replica() for it
  // become invalid.
  void RemoveReplica(const std::string& replica);

  // The /metrics body in the text format (0.0.4): registry()'s families as SerializeText writes
  // them, then the per-replica families, each with its HELP and TYPE once and its series sorted by
  // replica and tier. Every sample carries `cluster="<cluster>"` as its first label (none with the
  // cluster ""). A per-replica family is left out while there are no replicas (as
  // prometheus-cpp leaves out a family without series). Series, labels and number formatting are
  // those prometheus-cpp's serializer gave the same values.
  // Holds the replica map's mutex while it writes their series (probers' updates never take it).
  // Throws nothing but std::bad_alloc.
  std::string TextExposition() const;

  // The `cluster` label's value; "" when there is none.
  const std::string& cluster() const { return cluster_; }

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
  // Following the primary (agent/topology_monitor.h): which server it is (label primary, 1 for the
  // current one), how often it moved, and the topology's state (label state, one of
  // kTopologyStates: 1 for the current one).
  prometheus::Family<prometheus::Gauge>& primary_info;
  prometheus::Counter& primary_changes;
  prometheus::Family<prometheus::Gauge>& topology_state;
  // Times a replica's source went into doubt (label replica): it replicates from a server outside
  // the configuration, one that does not lead to the primary, one it names that cannot be matched,
  // or from nobody. Unverified (not healthy) until it replicates from the primary again.
  prometheus::Family<prometheus::Counter>& source_doubts;
  // Discovery (agent/discovery.h): replicas probed because the primary lists them, and failed
  // listings or skipped rows (label reason: privilege, query, row).
  prometheus::Gauge& discovered_replicas;
  prometheus::Family<prometheus::Counter>& discovery_errors;
  // The primary's own load, read by the sampler every 5 s.
  prometheus::Gauge& primary_threads_connected;
  prometheus::Gauge& primary_max_connections;
  prometheus::Counter& primary_bp_read_requests;
  prometheus::Counter& primary_bp_reads;
  prometheus::Counter& sampler_samples;
  prometheus::Family<prometheus::Counter>& sampler_errors;  // label reason
  // The primary's binary log stream (heartbeat/binlog_listener.h, heartbeat/stream_history.h):
  // 1 while its bounds are used; its delivery bound; streams started; failures (label reason:
  // refused, no_binlog, cut, bad_event, tls, server_error); times it stopped being used (label
  // reason: down, silent, behind, slow, incomparable); events and bytes read.
  prometheus::Gauge& stream_up;
  prometheus::Gauge& stream_delivery_bound_seconds;
  prometheus::Counter& stream_starts;
  prometheus::Family<prometheus::Counter>& stream_errors;
  prometheus::Family<prometheus::Counter>& stream_fallbacks;
  prometheus::Counter& stream_events;
  prometheus::Counter& stream_bytes;
  prometheus::Counter& redis_publishes;
  prometheus::Family<prometheus::Counter>& redis_errors;  // label reason
  prometheus::Histogram& redis_publish_duration_seconds;
  // From a replica's measurement to Redis acknowledging its record.
  prometheus::Histogram& redis_record_delay_seconds;
  prometheus::Gauge& redis_connected;
  prometheus::Counter& events_published;
  // Verdicts published at a limit's crossing while a probe was still in flight (agent/prober.h).
  prometheus::Counter& crossing_verdicts;
  // binlog_stream.watch_writes: writes seen on a server that is not the primary, each of which
  // made every server be probed at once; the watching streams' failures (label reason, as
  // stream_errors').
  prometheus::Counter& write_watch_urges;
  prometheus::Family<prometheus::Counter>& write_watch_errors;
  prometheus::Family<prometheus::Counter>& config_reloads;  // label result: success, failure
  // Router golden ratios over the agent's rolling windows; labels app, window.
  prometheus::Family<prometheus::Gauge>& router_rwsr;
  prometheus::Family<prometheus::Gauge>& router_dsr;
  // Registered after the agent's own families, so the counters keep the order a scrape has always
  // shown: the agent's own, then the router feedback reader's, then the HTTP server's.
  RouterFeedbackMetrics router_feedback;
  HttpAuthMetrics http_auth;
  // lagwatch_server_info{server, role, flavor, version, positions} = 1: which server each is
  // (primary and replicas), as it answered SELECT VERSION(), @@version_comment, and the positions
  // kind lagwatch uses with it ("mariadb_gtid" or "none"). Set through SetServerInfo.
  prometheus::Family<prometheus::Gauge>& server_info;

  // TLS (docs/metrics.md, "TLS"): connections that failed on TLS by target (kTlsTargets) and
  // named reason (base/net_stream.h's kTlsReasons), every series created at 0; each TLS
  // server's certificate expiry (labels target, server) and the soonest of them (no labels; no
  // series until a TLS server was inspected), both set by the agent's TLS watcher.
  prometheus::Family<prometheus::Counter>& tls_errors;
  prometheus::Family<prometheus::Gauge>& tls_certificate_expiry;
  prometheus::Family<prometheus::Gauge>& tls_certificate_soonest_expiry;
  // HAProxy's pusher and pull checks, registered last.
  HaproxyMetrics haproxy;
  // Counts `st` in tls_errors under `target` when it is a TLS failure (Status::Code::kTls).
  void CountTlsError(const char* target, const Status& st);

  // lagwatch_mysql_applier_signal_errors_total{reason}: MySQL 8.0+'s applier signals refused or
  // unreadable (base/applier_status.h: kApplierErrorReasons, every series created at 0).
  prometheus::Family<prometheus::Counter>& applier_signal_errors;
  // Counts one under `reason` (one of kApplierErrorReasons; any other counts as "server_error").
  void CountApplierError(std::string_view reason);

  // Makes `flavor` the one series of lagwatch_server_info for `server` ("host:port"), replacing
  // an older one (an upgraded or replaced server). `role`: "primary" or "replica". The version
  // label is cut at 64 bytes and its control bytes escaped: it is text from the server.
  void SetServerInfo(const std::string& server, const std::string& role, const ServerFlavor& flavor,
                     const std::string& positions);

 private:
  mutable std::mutex mu_;
  // By (replica, tier), which is also the order of a scrape.
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ReplicaMetrics>>
      replicas_;  // GUARDED_BY(mu_)
  // Its own mutex, not mu_: a prober sets its series on the probe loop, which must not wait for a
  // scrape that holds mu_ while it writes every replica's series.
  std::mutex server_info_mu_;
  std::map<std::string, prometheus::Gauge*> server_info_of_;  // GUARDED_BY(server_info_mu_)
};

}  // namespace lagwatch
