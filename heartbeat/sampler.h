// The position sampler (DESIGN.md §3.3): reads the primary's @@gtid_binlog_pos every
// sampler.interval_ms on its own connection and appends it to a PositionHistory.
//
// Owns one thread (Start/Stop; the destructor stops). Each read has a deadline of one interval.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "agent/config.h"
#include "heartbeat/history.h"

namespace lagwatch {

class Metrics;

class PositionSampler {
 public:
  PositionSampler(const Config& config, PositionHistory* history, Metrics* metrics);
  ~PositionSampler() { Stop(); }

  void Start();
  void Stop();

 private:
  void Run(std::stop_token stop);

  const Config config_;
  PositionHistory* const history_;
  Metrics* const metrics_;
  std::jthread thread_;
  std::condition_variable_any cv_;
};

}  // namespace lagwatch
