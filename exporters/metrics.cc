#include "exporters/metrics.h"

#include <chrono>
#include <cmath>

namespace lagwatch {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Sub-second resolution around the 200 ms SLO (DESIGN.md §5).
const Histogram::BucketBoundaries& LagBuckets() {
  static const Histogram::BucketBoundaries b = {0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3,
                                                0.5,   0.75, 1,     2,    5,   10,  30};
  return b;
}
const Histogram::BucketBoundaries& LatencyBuckets() {
  static const Histogram::BucketBoundaries b = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                                0.05,   0.1,   0.15,  0.25,  0.5,  1};
  return b;
}
// Scheduling jitter: the target is p99 <= 10 ms (DESIGN.md §7).
const Histogram::BucketBoundaries& JitterBuckets() {
  static const Histogram::BucketBoundaries b = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1};
  return b;
}

}  // namespace

void ReplicaMetrics::SetState(const std::string& state) {
  for (size_t i = 0; i < std::size(kReplicaStates); ++i) {
    this->state[i]->Set(state == kReplicaStates[i] ? 1 : 0);
  }
}

prometheus::Counter& ReplicaMetrics::ProbeError(const std::string& reason) {
  auto l = labels;
  l["reason"] = reason;
  return probe_errors_family->Add(l);
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
      redis_publish_duration_seconds(BuildHistogram()
                                         .Name("lagwatch_redis_publish_duration_seconds")
                                         .Help("Time to write one batch of records to Redis.")
                                         .Register(*registry_)
                                         .Add({}, LatencyBuckets())),
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
                     .Register(*registry_)),
      lag_upper_(BuildGauge()
                     .Name("lagwatch_replica_lag_upper_seconds")
                     .Help("Upper bound of the replica's staleness at the last probe: its data is "
                           "at most this old (published as delay_ms).")
                     .Register(*registry_)),
      lag_lower_(BuildGauge()
                     .Name("lagwatch_replica_lag_lower_seconds")
                     .Help("Lower bound of the replica's staleness at the last probe.")
                     .Register(*registry_)),
      healthy_(BuildGauge()
                   .Name("lagwatch_replica_healthy")
                   .Help("1 if routers may read from the replica (DESIGN.md 3.5), else 0.")
                   .Register(*registry_)),
      io_running_(BuildGauge()
                      .Name("lagwatch_replica_io_thread_running")
                      .Help("1 if Slave_IO_Running is Yes at the last status poll.")
                      .Register(*registry_)),
      sql_running_(BuildGauge()
                       .Name("lagwatch_replica_sql_thread_running")
                       .Help("1 if Slave_SQL_Running is Yes at the last status poll.")
                       .Register(*registry_)),
      sbm_(BuildGauge()
               .Name("lagwatch_replica_seconds_behind_master")
               .Help("Seconds_Behind_Master as the server reports it (NaN when NULL), for "
                     "comparison.")
               .Register(*registry_)),
      relay_space_(BuildGauge()
                       .Name("lagwatch_replica_relay_log_space_bytes")
                       .Help("Relay_Log_Space at the last status poll.")
                       .Register(*registry_)),
      state_(BuildGauge()
                 .Name("lagwatch_replica_state")
                 .Help("1 for the replica's current state, 0 for the others.")
                 .Register(*registry_)),
      lag_hist_(BuildHistogram()
                    .Name("lagwatch_replica_lag_seconds")
                    .Help("Distribution of the published upper bound, one observation per probe.")
                    .Register(*registry_)),
      lag_window_(
          BuildGauge()
              .Name("lagwatch_replica_lag_window_seconds")
              .Help("Percentile (50, 95, 99) of the published upper bound over the last 1m or "
                    "5m (nearest rank over every measured probe), computed by the agent.")
              .Register(*registry_)),
      slar_window_(BuildGauge()
                       .Name("lagwatch_replica_slar_ratio")
                       .Help("SLAR over the last 1m or 5m: probes with delay_ms <= slo.delay_ms / "
                             "all probes (failed probes count as outside).")
                       .Register(*registry_)),
      probe_duration_(BuildHistogram()
                          .Name("lagwatch_probe_duration_seconds")
                          .Help("Round trip of the heartbeat/position probe.")
                          .Register(*registry_)),
      probe_start_delay_(BuildHistogram()
                             .Name("lagwatch_probe_start_delay_seconds")
                             .Help("How late a probe started after its planned moment (the "
                                   "tick, or when the bound would cross a tier limit): "
                                   "scheduling jitter.")
                             .Register(*registry_)),
      probes_(BuildCounter()
                  .Name("lagwatch_probes_total")
                  .Help("Probes attempted, successful or not.")
                  .Register(*registry_)),
      probes_within_slo_(BuildCounter()
                             .Name("lagwatch_probes_within_slo_total")
                             .Help("Successful probes whose upper bound was within slo.delay_ms "
                                   "(SLAR numerator).")
                             .Register(*registry_)),
      status_polls_(BuildCounter()
                        .Name("lagwatch_status_polls_total")
                        .Help("SHOW SLAVE STATUS polls that succeeded.")
                        .Register(*registry_)),
      probe_errors_(BuildCounter()
                        .Name("lagwatch_probe_errors_total")
                        .Help("Failed probes and status polls, by reason.")
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
  auto& slot = replicas_[replica + "\n" + tier];
  if (slot) return *slot;
  slot = std::make_unique<ReplicaMetrics>();
  ReplicaMetrics& m = *slot;
  const prometheus::Labels l = {{"replica", replica}, {"tier", tier}};
  m.labels = l;
  m.lag_upper_seconds = &lag_upper_.Add(l);
  m.lag_lower_seconds = &lag_lower_.Add(l);
  m.healthy = &healthy_.Add(l);
  m.io_thread_running = &io_running_.Add(l);
  m.sql_thread_running = &sql_running_.Add(l);
  m.seconds_behind_master = &sbm_.Add(l);
  m.seconds_behind_master->Set(std::nan(""));
  m.relay_log_space_bytes = &relay_space_.Add(l);
  for (size_t i = 0; i < std::size(kReplicaStates); ++i) {
    auto sl = l;
    sl["state"] = kReplicaStates[i];
    m.state[i] = &state_.Add(sl);
  }
  m.lag_seconds = &lag_hist_.Add(l, LagBuckets());
  for (size_t w = 0; w < std::size(kWindowNames); ++w) {
    auto wl = l;
    wl["window"] = kWindowNames[w];
    m.slar_ratio[w] = &slar_window_.Add(wl);
    m.slar_ratio[w]->Set(std::nan(""));
    for (size_t q = 0; q < std::size(kWindowPercentiles); ++q) {
      auto ql = wl;
      ql["percentile"] = kWindowPercentiles[q];
      m.lag_window_seconds[w][q] = &lag_window_.Add(ql);
      m.lag_window_seconds[w][q]->Set(std::nan(""));
    }
  }
  m.probe_duration_seconds = &probe_duration_.Add(l, LatencyBuckets());
  m.probe_start_delay_seconds = &probe_start_delay_.Add(l, JitterBuckets());
  m.probes = &probes_.Add(l);
  m.probes_within_slo = &probes_within_slo_.Add(l);
  m.status_polls = &status_polls_.Add(l);
  m.probe_errors_family = &probe_errors_;
  for (const char* reason : kErrorReasons) m.ProbeError(reason);
  return m;
}

}  // namespace lagwatch

namespace lagwatch {

void Metrics::RemoveReplica(const std::string& replica) {
  std::lock_guard lock(mu_);
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    if (it->first.rfind(replica + "\n", 0) != 0) {
      ++it;
      continue;
    }
    ReplicaMetrics& m = *it->second;
    lag_upper_.Remove(m.lag_upper_seconds);
    lag_lower_.Remove(m.lag_lower_seconds);
    healthy_.Remove(m.healthy);
    io_running_.Remove(m.io_thread_running);
    sql_running_.Remove(m.sql_thread_running);
    sbm_.Remove(m.seconds_behind_master);
    relay_space_.Remove(m.relay_log_space_bytes);
    for (auto* g : m.state) state_.Remove(g);
    lag_hist_.Remove(m.lag_seconds);
    for (size_t w = 0; w < std::size(kWindowNames); ++w) {
      slar_window_.Remove(m.slar_ratio[w]);
      for (auto* g : m.lag_window_seconds[w]) lag_window_.Remove(g);
    }
    probe_duration_.Remove(m.probe_duration_seconds);
    probe_start_delay_.Remove(m.probe_start_delay_seconds);
    probes_.Remove(m.probes);
    probes_within_slo_.Remove(m.probes_within_slo);
    status_polls_.Remove(m.status_polls);
    for (const char* reason : kErrorReasons) {
      auto l = m.labels;
      l["reason"] = reason;
      if (probe_errors_.Has(l)) probe_errors_.Remove(&probe_errors_.Add(l));
    }
    it = replicas_.erase(it);
  }
}

}  // namespace lagwatch
