// The position sampler (DESIGN.md §3.3): reads the primary's @@gtid_binlog_pos every
// sampler.interval_ms on its own connection and appends it to a PositionHistory. Every 5 s it
// also reads the primary's connection and buffer pool figures for the alerts.
//
// Owns one thread (Start/Stop; the destructor stops). Each read has a deadline of one interval.
// Thread-safe.
#pragma once

#include <mutex>
#include <optional>

#include "agent/config.h"
#include "agent/worker.h"
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
  // Reads the primary's max_connections, Threads_connected and buffer pool counters into the
  // metrics (every few seconds, on the sampler's connection).
  void PollPrimaryStatus(class MysqlConn& conn, MonoTime deadline);

  const Config config_;
  PositionHistory* const history_;
  Metrics* const metrics_;
  // Used only by the sampler thread: the server counters' last values.
  std::optional<uint64_t> last_read_requests_;
  std::optional<uint64_t> last_reads_;
  Worker worker_;  // last: stopped before the members it uses go away
};

}  // namespace lagwatch
