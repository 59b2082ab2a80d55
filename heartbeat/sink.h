// What the heartbeat writer and the position sampler report as they work. heartbeat/ stands on
// base/ only, so it reports through these interfaces instead of calling the exporters; the agent
// connects them to the metrics and the Redis publisher (agent/agent.cc), and tests record them.
// Implementations must be thread-safe: the writer and the sampler call from their own threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/clock.h"
#include "base/position.h"
#include "base/server_flavor.h"
#include "base/snapshot.h"
#include "base/status.h"

namespace lagwatch {

class WriterSink {
 public:
  virtual ~WriterSink() = default;
  // The primary acknowledged the heartbeat `seq`.
  virtual void HeartbeatWritten(uint64_t seq) = 0;
  // A write failed, and why (its reason() is the metrics label: "timeout", "tls", ...).
  virtual void HeartbeatFailed(const Status& why) = 0;
  // After every round of the writer: the primary's state (for its Redis hash and gauges) and how
  // long ago the last heartbeat was acknowledged (nullopt: none yet).
  virtual void PrimaryState(const PrimarySnapshot& primary,
                            std::optional<Micros> since_last_ack) = 0;
};

// The primary's own load, read every few seconds by the sampler. Server counters are given as
// their growth since the previous reading (a server restart counts from the new value), so a
// sink can add them to monotonic counters.
struct PrimaryLoad {
  std::optional<uint64_t> max_connections;
  std::optional<uint64_t> threads_connected;
  std::optional<uint64_t> buffer_pool_read_requests_growth;
  std::optional<uint64_t> buffer_pool_reads_growth;
};

class SamplerSink {
 public:
  virtual ~SamplerSink() = default;
  // A position was sampled and added to the history.
  virtual void PositionSampled() = 0;
  // A sample (or a load reading) failed; `reason` is Status::reason() of `cause`, or one of the
  // sampler's own ("bad_data", "position_backwards": then `cause` is Ok).
  virtual void SampleFailed(std::string_view reason, const Status& cause) = 0;
  virtual void PrimaryLoadRead(const PrimaryLoad& load) = 0;
  // Which server the primary is and the positions kind sampled from it: on every new connection,
  // and when the sampler gives up a kind the server cannot give.
  virtual void PrimaryFlavorRead(const ServerFlavor& flavor, PositionsKind positions) = 0;
};

}  // namespace lagwatch
