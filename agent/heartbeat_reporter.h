// Connects the heartbeat writer's, the position sampler's (heartbeat/sink.h) and the binary log
// listener's (heartbeat/binlog_listener.h) reports to the exporters: the primary's gauges and
// counters in the metrics, and its hash in Redis. Thread-safe (the metrics and the publisher are).
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "agent/topology_monitor.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "heartbeat/binlog_listener.h"
#include "heartbeat/sink.h"

namespace lagwatch {

class HeartbeatReporter final : public WriterSink, public SamplerSink, public ListenerSink {
 public:
  // Both must outlive the reporter.
  // `primary` ("host:port") labels the primary's lagwatch_server_info series (SetPrimary when
  // it moves).
  HeartbeatReporter(Metrics* metrics, RedisPublisher* publisher, std::string primary)
      : metrics_(metrics), publisher_(publisher), primary_(std::move(primary)) {}

  // The topology whose state the primary's record carries; must outlive the reporter.
  void SetTopology(const TopologyMonitor* topology);
  void SetPrimary(std::string primary);

  void HeartbeatWritten(uint64_t seq) override;
  void HeartbeatFailed(const Status& why) override;
  void PrimaryState(const PrimarySnapshot& primary, std::optional<Micros> since_last_ack) override;

  void PositionSampled() override;
  void SampleFailed(std::string_view reason, const Status& cause) override;
  void PrimaryLoadRead(const PrimaryLoad& load) override;
  void PrimaryFlavorRead(const ServerFlavor& flavor, PositionsKind positions) override;

  void StreamStarted(const Position& start) override;
  void StreamFailed(std::string_view reason, const Status& cause) override;
  void StreamRead(uint64_t events, uint64_t bytes) override;

  // The primary's flavor as last read; nullopt before the sampler asked.
  std::optional<ServerFlavor> primary_flavor() const;

 private:
  Metrics* const metrics_;
  RedisPublisher* const publisher_;
  mutable std::mutex mu_;
  std::string primary_;                         // GUARDED_BY(mu_)
  const TopologyMonitor* topology_ = nullptr;   // GUARDED_BY(mu_)
  std::optional<ServerFlavor> primary_flavor_;  // GUARDED_BY(mu_)
};

}  // namespace lagwatch
