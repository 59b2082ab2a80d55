// The position sampler (docs/measurement.md, "Position bounds"): reads the primary's
// @@gtid_binlog_pos every sampler.interval_ms on its own connection and appends it to a
// PositionHistory. Every 5 s it also reads the primary's connection and buffer pool figures for
// the alerts and reports them to a SamplerSink.
//
// Owns one thread (Start/Stop; the destructor stops). Each read has a deadline of one interval.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "base/clock.h"
#include "base/mysql_conn.h"
#include "base/worker.h"
#include "heartbeat/history.h"
#include "heartbeat/sink.h"

namespace lagwatch {

struct SamplerOptions {
  MysqlTarget primary;
  int interval_ms = 50;
  // False (positions "none"): no position is sampled; the primary's flavor and load still are.
  bool sample_positions = true;
};

// How much a server counter grew from `last` to `now_value` (a value that went down is a server
// restart: it counts from zero); nullopt for the first reading. Updates `last`.
std::optional<uint64_t> CounterGrowth(std::optional<uint64_t>& last, uint64_t now_value);

class PositionSampler {
 public:
  // `history`, `sink` and `clock` must outlive the sampler. `connect` defaults to a MysqlConn to
  // options.primary.
  PositionSampler(SamplerOptions options, PositionHistory* history, SamplerSink* sink,
                  const Clock& clock, SqlConnector connect = nullptr);
  ~PositionSampler() { Stop(); }

  void Start();
  void Stop();

  // How long the sampler waits after a sample: one interval, doubled for each failure in a row
  // up to a second (a dead primary gets a connection a second, not one every 50 ms).
  static Millis Backoff(Millis interval, int failures);

 private:
  void Run(std::stop_token stop);
  // Asks which server the primary is and reports it; false when the connection failed (asked
  // again next round). A server that answers but not usefully is reported as an unknown flavor.
  bool AskFlavor(SqlConnection& conn, MonoTime deadline);
  // One sample of @@gtid_binlog_pos sent at `sent`; Ok, or why no position was added.
  Status SampleOnce(SqlConnection& conn, MonoTime sent, MonoTime deadline);
  // Reads the primary's max_connections, Threads_connected and buffer pool counters into the
  // sink (every few seconds, on the sampler's connection).
  void PollPrimaryStatus(SqlConnection& conn, MonoTime deadline);

  const SamplerOptions options_;
  PositionHistory* const history_;
  SamplerSink* const sink_;
  const Clock& clock_;
  const SqlConnector connect_;
  // Used only by the sampler thread: the server counters' last values.
  std::optional<uint64_t> last_read_requests_;
  std::optional<uint64_t> last_reads_;
  std::optional<ServerFlavor> last_flavor_;
  Worker worker_;  // last: stopped before the members it uses go away
};

}  // namespace lagwatch
