// The accuracy benchmark's recorders: each runs on its own thread and appends to its own
// timeline, which the main thread reads only after Stop() (the join orders the accesses).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/worker.h"
#include "bench/analysis.h"
#include "bench/bench_util.h"

namespace lagwatch::bench {

// Starts `worker` (base/worker.h) running `tick` every `period` until it is stopped or the
// process is interrupted; it waits with SystemClock (base/clock.h), and `tick` gets the stop token
// for waits of its own. A tick that overruns its period is followed immediately by the next one;
// missed ticks are not made up.
void StartTicking(Worker& worker, std::chrono::microseconds period,
                  std::function<void(const std::stop_token&)> tick);

// Commits `INSERT INTO lwtest.oracle (t_us) VALUES (…)` on the primary every `period`,
// recording each id's send and ack times.
class OracleWriter {
 public:
  explicit OracleWriter(std::string primary_socket) : sql_(std::move(primary_socket)) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const OracleLog& log() const { return log_; }
  size_t errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }

 private:
  void Tick();
  Sql sql_;
  OracleLog log_;
  bool have_first_ = false;
  size_t errors_ = 0;
  std::string last_error_;
  Worker worker_;
};

// `SELECT MAX(id) FROM lwtest.oracle` on one replica every `period`.
class OracleReader {
 public:
  explicit OracleReader(std::string replica_socket) : sql_(std::move(replica_socket)) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<ReaderSample>& samples() const { return samples_; }
  size_t errors() const { return errors_; }
  size_t count() const { return count_.load(); }

 private:
  void Tick();
  Sql sql_;
  std::vector<ReaderSample> samples_;
  std::atomic<size_t> count_{0};
  size_t errors_ = 0;
  Worker worker_;
};

// HGETALL of every replica's key, pipelined, every `period`; records each new record (a new
// measured_at_ms, or any field changed) and each appearance/disappearance of the key
// (LagwatchRecord, bench/analysis.h), and the last poll that still saw each.
class RedisPoller {
 public:
  RedisPoller(int port, std::vector<std::string> keys);
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<LagwatchRecord>& records(size_t i) const { return records_[i]; }
  size_t count(size_t i) const { return counts_[i].load(); }
  size_t errors() const { return errors_; }
  size_t polls() const { return polls_; }

 private:
  void Tick();
  Redis redis_;
  std::vector<std::string> keys_;
  std::vector<std::vector<LagwatchRecord>> records_;
  std::vector<std::atomic<size_t>> counts_;
  size_t errors_ = 0;
  size_t polls_ = 0;
  Worker worker_;
};

// A reading from an external tool's output line or a polled query.
struct ToolReading {
  int64_t sent_us = 0;  // query sent (SQL pollers) or line received (pt-heartbeat)
  int64_t recv_us = 0;
  std::optional<double> value_ms;  // nullopt: NULL / unparsable
};

// Reads the pseudo-terminals of the pt-heartbeat --monitor processes; each line's first number
// (seconds) becomes a reading stamped with the time the line arrived. Lines are also copied to
// `log_path`.
class PtHeartbeatReader {
 public:
  PtHeartbeatReader(std::vector<int> pty_fds, const std::string& log_path);
  void Start();
  void Stop() { worker_.Stop(); }
  const std::vector<ToolReading>& readings(size_t i) const { return readings_[i]; }
  size_t count(size_t i) const { return counts_[i].load(); }
  size_t unparsed() const { return unparsed_; }

 private:
  void Tick(const std::stop_token& stop);
  void Line(size_t i, const std::string& line, int64_t now);
  std::vector<int> fds_;
  std::vector<std::string> partial_;
  std::vector<std::vector<ToolReading>> readings_;
  std::vector<std::atomic<size_t>> counts_;
  std::vector<bool> closed_;
  size_t unparsed_ = 0;
  std::ofstream log_;
  Worker worker_;
};

// Runs one single-value query every `period` on one server: SHOW SLAVE STATUS's
// Seconds_Behind_Master, or the naive `NOW(6) − updated_at`. `column` names the value to read;
// `scale_to_ms` converts it to milliseconds.
class ValuePoller {
 public:
  ValuePoller(std::string socket, std::string sql, std::string column, double scale_to_ms)
      : sql_(std::move(socket)),
        query_(std::move(sql)),
        column_(std::move(column)),
        scale_(scale_to_ms) {}
  void Start(std::chrono::microseconds period);
  void Stop() { worker_.Stop(); }
  const std::vector<ToolReading>& readings() const { return readings_; }
  size_t errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }

 private:
  void Tick();
  Sql sql_;
  std::string query_;
  std::string column_;
  double scale_;
  std::vector<ToolReading> readings_;
  size_t errors_ = 0;
  std::string last_error_;
  Worker worker_;
};

}  // namespace lagwatch::bench
