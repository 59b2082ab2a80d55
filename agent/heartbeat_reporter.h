// Connects the heartbeat writer's and the position sampler's reports (heartbeat/sink.h) to the
// exporters: the primary's gauges and counters in the metrics, and its hash in Redis.
// Thread-safe (the metrics and the publisher are).
#pragma once

#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "heartbeat/sink.h"

namespace lagwatch {

class HeartbeatReporter final : public WriterSink, public SamplerSink {
 public:
  // Both must outlive the reporter.
  HeartbeatReporter(Metrics* metrics, RedisPublisher* publisher)
      : metrics_(metrics), publisher_(publisher) {}

  void HeartbeatWritten(uint64_t seq) override;
  void HeartbeatFailed(std::string_view reason) override;
  void PrimaryState(const PrimarySnapshot& primary, std::optional<Micros> since_last_ack) override;

  void PositionSampled() override;
  void SampleFailed(std::string_view reason) override;
  void PrimaryLoadRead(const PrimaryLoad& load) override;

 private:
  Metrics* const metrics_;
  RedisPublisher* const publisher_;
};

}  // namespace lagwatch
