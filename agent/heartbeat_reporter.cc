#include "agent/heartbeat_reporter.h"

#include <string>

namespace lagwatch {

void HeartbeatReporter::HeartbeatWritten(uint64_t seq) {
  metrics_->heartbeat_writes.Increment();
  metrics_->heartbeat_last_seq.Set(static_cast<double>(seq));
}

void HeartbeatReporter::HeartbeatFailed(const Status& why) {
  metrics_->heartbeat_errors.Add({{"reason", why.reason()}}).Increment();
  metrics_->CountTlsError("mysql", why);
}

void HeartbeatReporter::SetTopology(const TopologyMonitor* topology) {
  std::lock_guard lock(mu_);
  topology_ = topology;
}

void HeartbeatReporter::SetPrimary(std::string primary) {
  std::lock_guard lock(mu_);
  primary_ = std::move(primary);
}

void HeartbeatReporter::PrimaryState(const PrimarySnapshot& primary,
                                     std::optional<Micros> since_last_ack) {
  for (const char* state : kPrimaryStates) {
    metrics_->primary_state.Add({{"state", state}}).Set(primary.state == state ? 1 : 0);
  }
  metrics_->primary_consecutive_failures.Set(primary.consecutive_failures);
  metrics_->primary_read_only.Set(primary.read_only ? 1 : 0);
  PrimarySnapshot published = primary;
  published.cluster = metrics_->cluster();  // the agent's, as every series carries it
  const TopologyMonitor* topology;
  {
    std::lock_guard lock(mu_);
    topology = topology_;
  }
  // Not under mu_: a move runs SetPrimary under the monitor's lock.
  if (topology) published.topology = TopologyStateName(topology->state());
  if (published.topology == "ambiguous") published.state = "ambiguous";
  publisher_->PublishPrimary(published);
  if (since_last_ack) {
    metrics_->heartbeat_age_seconds.Set(std::chrono::duration<double>(*since_last_ack).count());
  }
}

void HeartbeatReporter::PositionSampled() { metrics_->sampler_samples.Increment(); }

void HeartbeatReporter::StreamStarted(const Position&) { metrics_->stream_starts.Increment(); }

void HeartbeatReporter::StreamFailed(std::string_view reason, const Status& cause) {
  metrics_->stream_errors.Add({{"reason", std::string(reason)}}).Increment();
  metrics_->CountTlsError("mysql", cause);
}

void HeartbeatReporter::StreamRead(uint64_t events, uint64_t bytes) {
  metrics_->stream_events.Increment(static_cast<double>(events));
  metrics_->stream_bytes.Increment(static_cast<double>(bytes));
}

void HeartbeatReporter::SampleFailed(std::string_view reason, const Status& cause) {
  metrics_->sampler_errors.Add({{"reason", std::string(reason)}}).Increment();
  metrics_->CountTlsError("mysql", cause);
}

void HeartbeatReporter::PrimaryLoadRead(const PrimaryLoad& load) {
  auto set = [](prometheus::Gauge& g, std::optional<uint64_t> v) {
    if (v) g.Set(static_cast<double>(*v));
  };
  auto add = [](prometheus::Counter& c, std::optional<uint64_t> v) {
    if (v) c.Increment(static_cast<double>(*v));
  };
  set(metrics_->primary_max_connections, load.max_connections);
  set(metrics_->primary_threads_connected, load.threads_connected);
  add(metrics_->primary_bp_read_requests, load.buffer_pool_read_requests_growth);
  add(metrics_->primary_bp_reads, load.buffer_pool_reads_growth);
}

void HeartbeatReporter::PrimaryFlavorRead(const ServerFlavor& flavor, PositionsKind positions) {
  std::lock_guard lock(mu_);
  metrics_->SetServerInfo(primary_, "primary", flavor, PositionsKindName(positions));
  primary_flavor_ = flavor;
}

std::optional<ServerFlavor> HeartbeatReporter::primary_flavor() const {
  std::lock_guard lock(mu_);
  return primary_flavor_;
}

}  // namespace lagwatch
