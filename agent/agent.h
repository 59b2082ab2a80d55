// The agent: owns and wires every part (DESIGN.md §2). Start() brings them up in dependency
// order; Stop() (or the destructor) stops and joins them in reverse.
// Thread-safe after Start(): views can be read from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/clock.h"
#include "agent/config.h"
#include "agent/prober.h"
#include "agent/status.h"
#include "exporters/http_server.h"
#include "exporters/metrics.h"
#include "exporters/redis_publisher.h"
#include "heartbeat/history.h"
#include "heartbeat/sampler.h"
#include "heartbeat/writer.h"

namespace lagwatch {

class Agent {
 public:
  explicit Agent(Config config, const Clock& clock = SystemClock::Get());
  ~Agent() { Stop(); }

  // Starts the HTTP listener (failing fast if it cannot bind), the writer, sampler and
  // publisher, waits up to one second for the first heartbeat acknowledgement so no replica is
  // judged before the primary was heard from, then starts the probers.
  Status Start();
  void Stop();

  // One line per replica for the foreground log.
  std::string Summary() const;
  bool FirstRoundDone() const;

 private:
  const Config config_;
  const Clock& clock_;
  Metrics metrics_;
  HeartbeatLog heartbeat_log_;
  PositionHistory positions_;
  RedisPublisher publisher_;
  HeartbeatWriter writer_;
  PositionSampler sampler_;
  std::vector<std::unique_ptr<ReplicaProber>> probers_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace lagwatch
